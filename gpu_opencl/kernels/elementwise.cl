/* Elementwise kernels: activation, unary, binary (broadcasting), compare,
 * logical, where, cast. Function codes are the values of plx_activation_func,
 * plx_unary_func and plx_binary_func (ops.h); the host refuses any other. */

float ocl_sigmoid(float x) {
    if (x >= 0.0f) {
        return 1.0f / (1.0f + exp(-x));
    }
    float e = exp(x);
    return e / (1.0f + e);
}

float ocl_softplus(float x) {
    return x > 0.0f ? x + log1p(exp(-x)) : log1p(exp(x));
}

float ocl_activate(int func, float x, float alpha, float beta) {
    switch (func) {
    case 0: /* relu */
        return x < 0.0f ? 0.0f : x;
    case 1: /* clip */
        x = x < alpha ? alpha : x;
        return x > beta ? beta : x;
    case 2: /* leaky_relu */
        return x < 0.0f ? alpha * x : x;
    case 3: /* elu */
        return x < 0.0f ? alpha * expm1(x) : x;
    case 4: /* sigmoid */
        return ocl_sigmoid(x);
    case 5: { /* hard_sigmoid */
        float y = alpha * x + beta;
        return y < 0.0f ? 0.0f : y > 1.0f ? 1.0f : y;
    }
    case 6: { /* hard_swish */
        float y = x / 6.0f + 0.5f;
        y = y < 0.0f ? 0.0f : y > 1.0f ? 1.0f : y;
        return x * y;
    }
    case 7: /* tanh */
        return tanh(x);
    case 8: /* gelu: exact, or the tanh approximation when alpha != 0; below
             * -14 the factor beside x is 0 in float, so x * 0 (-0, and NaN
             * at -inf as ONNX's formula gives), as cpu_ref */
        if (x < -14.0f) {
            return 0.0f * x;
        }
        if (alpha != 0.0f) {
            const float k = 0.79788456080286535588f;
            return 0.5f * x * (1.0f + tanh(k * (x + 0.044715f * x * x * x)));
        }
        return 0.5f * x * erfc(x * -0.70710678118654752440f);
    case 9: /* softplus */
        return ocl_softplus(x);
    case 10: /* selu */
        return beta * (x <= 0.0f ? alpha * expm1(x) : x);
    case 11: /* mish */
        return x * tanh(ocl_softplus(x));
    case 12: /* softsign */
        return x / (1.0f + fabs(x));
    case 13: /* thresholded_relu */
        return x > alpha ? x : 0.0f;
    case 14: { /* celu */
        if (isnan(x)) {
            return x;
        }
        float neg = alpha * expm1(x / alpha);
        return (x > 0.0f ? x : 0.0f) + (neg < 0.0f ? neg : 0.0f);
    }
    case 15: /* affine */
        return alpha * x + beta;
    case 16: /* scaled_tanh */
        return alpha * tanh(beta * x);
    case 17: /* shrink: alpha = lambd, beta = bias; a NaN gives 0, as cpu_ref */
        return x < -alpha ? x + beta : x > alpha ? x - beta : 0.0f;
    default:
        return x;
    }
}

kernel void activation_f32(global const float *x, global float *y, int n, int func, float alpha,
                           float beta) {
    int i = (int)get_global_id(0);
    if (i < n) {
        y[i] = ocl_activate(func, x[i], alpha, beta);
    }
}

float ocl_unary(int func, float x) {
    switch (func) {
    case 0: return fabs(x);
    case 1: return -x;
    case 2: return sqrt(x);
    case 3: return 1.0f / x;
    case 4: return exp(x);
    case 5: return log(x);
    case 6: return erf(x);
    case 7: return floor(x);
    case 8: return ceil(x);
    case 10: return sin(x);
    case 11: return cos(x);
    case 12: return tan(x);
    case 13: return asin(x);
    case 14: return acos(x);
    case 15: return atan(x);
    case 16: return sinh(x);
    case 17: return cosh(x);
    case 18: return asinh(x);
    case 19: return acosh(x);
    case 20: return atanh(x);
    case 21: return rint(x); /* halves to even */
    case 22: return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;
    default: return x;
    }
}

kernel void unary_f32(global const float *x, global float *y, int n, int func) {
    int i = (int)get_global_id(0);
    if (i < n) {
        y[i] = ocl_unary(func, x[i]);
    }
}

/* is_nan (23), is_inf (24), is_pos_inf (25), is_neg_inf (26) of float32,
 * on the bits (whatever the build's float options): bool 0 or 1. */
kernel void unary_test_f32(global const float *x, global uchar *y, int n, int func) {
    int i = (int)get_global_id(0);
    if (i >= n) {
        return;
    }
    uint v = as_uint(x[i]), mag = v & 0x7fffffffu;
    bool r = func == 23   ? mag > 0x7f800000u
             : func == 24 ? mag == 0x7f800000u
             : func == 25 ? v == 0x7f800000u
                          : v == 0xff800000u;
    y[i] = r ? 1 : 0;
}

/* bool not: 0 -> 1, anything else -> 0 */
kernel void not_bool(global const uchar *x, global uchar *y, int n) {
    int i = (int)get_global_id(0);
    if (i < n) {
        y[i] = x[i] == 0 ? 1 : 0;
    }
}

float ocl_binary(int func, float a, float b) {
    switch (func) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return pow(a, b);
    case 5: return ocl_max_nan(a, b);
    case 6: return ocl_min_nan(a, b);
    case 10: return a < 0.0f ? b * a : a; /* prelu */
    case 16: return fmod(a, b);
    default: return 0.0f;
    }
}

/* Y = A op B, A and B read with broadcast strides over Y's dims. */
kernel void binary_f32(global const float *a, global const float *b, global float *y, int n,
                       int func, int rank, int8 dims, int8 sa, int8 sb) {
    int i = (int)get_global_id(0);
    if (i >= n) {
        return;
    }
    int d[8], s0[8], s1[8], ia, ib;
    vstore8(dims, 0, d);
    vstore8(sa, 0, s0);
    vstore8(sb, 0, s1);
    ocl_offset2(i, rank, d, s0, s1, &ia, &ib);
    y[i] = ocl_binary(func, a[ia], b[ib]);
}

/* Comparisons (equal 7, less 8, greater 9, greater_equal 14, less_equal 15)
 * into bool; ordered comparisons with NaN are false. */
kernel void compare_f32(global const float *a, global const float *b, global uchar *y, int n,
                        int func, int rank, int8 dims, int8 sa, int8 sb) {
    int i = (int)get_global_id(0);
    if (i >= n) {
        return;
    }
    int d[8], s0[8], s1[8], ia, ib;
    vstore8(dims, 0, d);
    vstore8(sa, 0, s0);
    vstore8(sb, 0, s1);
    ocl_offset2(i, rank, d, s0, s1, &ia, &ib);
    float va = a[ia], vb = b[ib];
    bool r;
    switch (func) {
    case 7: r = va == vb; break;
    case 8: r = va < vb; break;
    case 9: r = va > vb; break;
    case 14: r = va >= vb; break;
    default: r = va <= vb; break;
    }
    y[i] = r ? 1 : 0;
}

/* and 11, or 12, xor 13, equal 7 on bool (any non-zero byte is true). */
kernel void logical_bool(global const uchar *a, global const uchar *b, global uchar *y, int n,
                         int func, int rank, int8 dims, int8 sa, int8 sb) {
    int i = (int)get_global_id(0);
    if (i >= n) {
        return;
    }
    int d[8], s0[8], s1[8], ia, ib;
    vstore8(dims, 0, d);
    vstore8(sa, 0, s0);
    vstore8(sb, 0, s1);
    ocl_offset2(i, rank, d, s0, s1, &ia, &ib);
    bool va = a[ia] != 0, vb = b[ib] != 0;
    bool r;
    switch (func) {
    case 11: r = va && vb; break;
    case 12: r = va || vb; break;
    case 13: r = va != vb; break;
    default: r = va == vb; break;
    }
    y[i] = r ? 1 : 0;
}

/* Z = cond ? X : Y, all three broadcast to Z; one kernel per element size. */
#define OCL_WHERE(T, S)                                                                        \
    kernel void where_##S(global const uchar *c, global const T *x, global const T *yv,        \
                          global T *z, int n, int rank, int8 dims, int8 sc, int8 sx, int8 sy) { \
        int i = (int)get_global_id(0);                                                         \
        if (i >= n) {                                                                          \
            return;                                                                            \
        }                                                                                      \
        int d[8], s0[8], s1[8], s2[8], ic, ix;                                                 \
        vstore8(dims, 0, d);                                                                   \
        vstore8(sc, 0, s0);                                                                    \
        vstore8(sx, 0, s1);                                                                    \
        vstore8(sy, 0, s2);                                                                    \
        ocl_offset2(i, rank, d, s0, s1, &ic, &ix);                                             \
        z[i] = c[ic] ? x[ix] : yv[ocl_offset(i, rank, d, s2)];                                 \
    }
OCL_WHERE(uchar, u8)
OCL_WHERE(ushort, u16)
OCL_WHERE(uint, u32)
OCL_WHERE(ulong, u64)

/* Cast between float32 (code 1), float16 (2), int8 (4), uint8 (5), int32
 * (7), int64 (8) and bool (9), the plx_dtype values. Float to integer
 * truncates toward zero and saturates (NaN gives 0); integers wrap; anything
 * to bool is x != 0. float16 goes through float32 (vload_half and
 * vstore_half_rte, core OpenCL 1.2: no cl_khr_fp16 needed); an integer
 * rounds to float32 first, which gives the correctly rounded float16 (any
 * integer float32 cannot hold exactly is past float16's range); a NaN keeps
 * its sign and top payload bits and stays quiet. */
kernel void cast_any(global const uchar *x, global uchar *y, int n, int from, int to) {
    int i = (int)get_global_id(0);
    if (i >= n) {
        return;
    }
    float f = 0.0f;
    long v = 0;
    bool is_float = from == 1 || from == 2;
    switch (from) {
    case 1: f = ((global const float *)x)[i]; break;
    case 2: f = vload_half(i, (global const half *)x); break;
    case 4: v = ((global const char *)x)[i]; break;
    case 5: v = x[i]; break;
    case 7: v = ((global const int *)x)[i]; break;
    case 8: v = ((global const long *)x)[i]; break;
    default: v = x[i] != 0; break; /* bool */
    }
    float g = isnan(f) ? 0.0f : f; /* NaN to an integer: 0 */
    switch (to) {
    case 1:
        ((global float *)y)[i] = is_float ? f : convert_float(v);
        break;
    case 2: {
        float h = is_float ? f : convert_float(v);
        if (isnan(h)) {
            uint u = as_uint(h);
            ((global ushort *)y)[i] =
                (ushort)(((u >> 16) & 0x8000u) | 0x7e00u | (((u & 0x7fffffffu) >> 13) & 0x3ffu));
        } else {
            vstore_half_rte(h, i, (global half *)y);
        }
        break;
    }
    case 4:
        ((global char *)y)[i] = is_float ? convert_char_sat_rtz(g) : as_char((uchar)(ulong)v);
        break;
    case 5:
        y[i] = is_float ? convert_uchar_sat_rtz(g) : (uchar)(ulong)v;
        break;
    case 7:
        ((global int *)y)[i] = is_float ? convert_int_sat_rtz(g) : as_int((uint)(ulong)v);
        break;
    case 8:
        ((global long *)y)[i] = is_float ? convert_long_sat_rtz(g) : v;
        break;
    default:
        y[i] = (is_float ? f != 0.0f : v != 0) ? 1 : 0;
        break;
    }
}
