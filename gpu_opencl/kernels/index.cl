/* Indexing and scans: gather with indices read at run time, gather_elements,
 * scatter_elements, gather_nd, scatter_nd (indices int32 or int64, read
 * through ocl_index_at), trilu, one_hot, hardmax and cum_sum.
 *
 * Indices read from a tensor are range-checked here: an index out of range
 * is skipped and its element number in the indices tensor goes to *err
 * through atomic_min (the host sets *err to INT_MAX before the run and
 * turns anything else into an error naming the layer: ocl_ops.h,
 * ocl_index_check). The moves go by element size (u8 to u64), whatever the
 * dtype; the scatter reductions are float32 only. */

/* Element j of an int32 (is64 0) or int64 (is64 1) indices tensor. */
long ocl_index_at(global const uchar *p, int is64, int j) {
    return is64 ? ((global const long *)p)[j] : (long)((global const int *)p)[j];
}

/* v as a position in [0, dim) (negative counts from the end); -1 when v is
 * outside [-dim, dim). */
int ocl_index_norm(long v, int dim) {
    if (v < -(long)dim || v >= (long)dim) {
        return -1;
    }
    return (int)(v < 0 ? v + dim : v);
}

/* Gather along an axis with indices from a tensor: X viewed as
 * [outer, dim, row], ni indices; Y is [outer, ni, row]. */
#define OCL_GATHER_DYN(T, S)                                                                   \
    kernel void gather_dyn_##S(global const T *x, global const uchar *ind, int is64,          \
                               global T *y, int n, int ni, int row, int dim,                   \
                               global int *err) {                                              \
        int i = (int)get_global_id(0);                                                         \
        if (i >= n) {                                                                          \
            return;                                                                            \
        }                                                                                      \
        int r = i % row;                                                                       \
        int t = i / row;                                                                       \
        int j = t % ni;                                                                        \
        int o = t / ni;                                                                        \
        int p = ocl_index_norm(ocl_index_at(ind, is64, j), dim);                               \
        if (p < 0) {                                                                           \
            atomic_min(err, j);                                                                \
            return;                                                                            \
        }                                                                                      \
        y[i] = x[(o * dim + p) * row + r];                                                     \
    }

/* gather_elements: Y[p] = X[p with p[axis] = indices[p]]; Y and indices
 * dense of dims idims, xs X's strides, dim X's size along axis. */
#define OCL_GATHER_ELEMENTS(T, S)                                                              \
    kernel void gather_elements_##S(global const T *x, global const uchar *ind, int is64,     \
                                    global T *y, int n, int rank, int8 idims, int8 xstrides,   \
                                    int axis, int dim, global int *err) {                      \
        int i = (int)get_global_id(0);                                                         \
        if (i >= n) {                                                                          \
            return;                                                                            \
        }                                                                                      \
        int d[8], s[8], off = 0, q = i;                                                        \
        vstore8(idims, 0, d);                                                                  \
        vstore8(xstrides, 0, s);                                                               \
        for (int k = rank - 1; k >= 0; --k) {                                                  \
            int c = q % d[k];                                                                  \
            q /= d[k];                                                                         \
            off += k == axis ? 0 : c * s[k];                                                   \
        }                                                                                      \
        int p = ocl_index_norm(ocl_index_at(ind, is64, i), dim);                               \
        if (p < 0) {                                                                           \
            atomic_min(err, i);                                                                \
            return;                                                                            \
        }                                                                                      \
        y[i] = x[off + p * s[axis]];                                                           \
    }

/* scatter_elements after Y = X (a copy launch): one work-item per line of
 * indices along the axis (ldims: indices' dims with the axis' set to 1),
 * applying its updates in order; lines write disjoint lines of Y, so the
 * order matches a row-major walk (the last duplicate wins). is_: indices'
 * (and updates') strides, ys Y's. */
#define OCL_SCATTER_LINE(NAME, T, COMBINE)                                                     \
    kernel void NAME(global const uchar *ind, int is64, global const T *u, global T *y,        \
                     int lines, int rank, int8 ldims, int8 istrides, int8 ystrides, int axis,  \
                     int len, int dim, int red, global int *err) {                             \
        int t = (int)get_global_id(0);                                                         \
        if (t >= lines) {                                                                      \
            return;                                                                            \
        }                                                                                      \
        int d[8], is_[8], ys[8], io = 0, yo = 0, q = t;                                        \
        vstore8(ldims, 0, d);                                                                  \
        vstore8(istrides, 0, is_);                                                             \
        vstore8(ystrides, 0, ys);                                                              \
        for (int k = rank - 1; k >= 0; --k) {                                                  \
            int c = q % d[k];                                                                  \
            q /= d[k];                                                                         \
            io += c * is_[k];                                                                  \
            yo += c * ys[k];                                                                   \
        }                                                                                      \
        for (int a = 0; a < len; a++) {                                                        \
            int j = io + a * is_[axis];                                                        \
            int p = ocl_index_norm(ocl_index_at(ind, is64, j), dim);                           \
            if (p < 0) {                                                                       \
                atomic_min(err, j);                                                            \
                continue;                                                                      \
            }                                                                                  \
            global T *dst = y + yo + p * ys[axis];                                             \
            COMBINE;                                                                           \
        }                                                                                      \
    }

/* float32 reductions: 1 add, 2 mul, 3 max, 4 min (NaN wins), else none. */
float ocl_scatter_combine(int red, float x, float v) {
    switch (red) {
    case 1: return x + v;
    case 2: return x * v;
    case 3: return ocl_max_nan(x, v);
    case 4: return ocl_min_nan(x, v);
    default: return v;
    }
}

/* gather_nd: Y is [tuples, slice]; tuple t (of k indices, batch t / per)
 * names the slice at bi * bstride + sum of index c times xs[c]. */
#define OCL_GATHER_ND(T, S)                                                                    \
    kernel void gather_nd_##S(global const T *x, global const uchar *ind, int is64,           \
                              global T *y, int n, int k, int per, int slice, int bstride,      \
                              int8 xdims, int8 xstrides, global int *err) {                    \
        int i = (int)get_global_id(0);                                                         \
        if (i >= n) {                                                                          \
            return;                                                                            \
        }                                                                                      \
        int d[8], s[8];                                                                        \
        vstore8(xdims, 0, d);                                                                  \
        vstore8(xstrides, 0, s);                                                               \
        int t = i / slice, e = i - t * slice;                                                  \
        int off = (t / per) * bstride;                                                         \
        for (int c = 0; c < k; c++) {                                                          \
            int p = ocl_index_norm(ocl_index_at(ind, is64, t * k + c), d[c]);                  \
            if (p < 0) {                                                                       \
                atomic_min(err, t * k + c);                                                    \
                return;                                                                        \
            }                                                                                  \
            off += p * s[c];                                                                   \
        }                                                                                      \
        y[i] = x[off + e];                                                                     \
    }

/* scatter_nd after Y = X: one work-item per element e of a slice, walking
 * every tuple in order (so duplicates apply in order, the last one
 * winning with reduction none). */
#define OCL_SCATTER_ND(NAME, T, COMBINE)                                                       \
    kernel void NAME(global const uchar *ind, int is64, global const T *u, global T *y,        \
                     int slice, int tuples, int k, int8 xdims, int8 xstrides, int red,         \
                     global int *err) {                                                        \
        int e = (int)get_global_id(0);                                                         \
        if (e >= slice) {                                                                      \
            return;                                                                            \
        }                                                                                      \
        int d[8], s[8];                                                                        \
        vstore8(xdims, 0, d);                                                                  \
        vstore8(xstrides, 0, s);                                                               \
        for (int t = 0; t < tuples; t++) {                                                     \
            int off = 0, c = 0;                                                                \
            for (; c < k; c++) {                                                               \
                int p = ocl_index_norm(ocl_index_at(ind, is64, t * k + c), d[c]);              \
                if (p < 0) {                                                                   \
                    atomic_min(err, t * k + c);                                                \
                    break;                                                                     \
                }                                                                              \
                off += p * s[c];                                                               \
            }                                                                                  \
            if (c < k) {                                                                       \
                continue;                                                                      \
            }                                                                                  \
            int j = t * slice + e;                                                             \
            global T *dst = y + off + e;                                                       \
            COMBINE;                                                                           \
        }                                                                                      \
    }

/* Trilu: element (r, c) of each rows x cols matrix kept when c - r >= k
 * (upper) or c - r <= k (lower), else zero bytes. */
#define OCL_TRILU(T, S)                                                                        \
    kernel void trilu_##S(global const T *x, global T *y, int n, int rows, int cols, int k,   \
                          int upper) {                                                         \
        int i = (int)get_global_id(0);                                                         \
        if (i >= n) {                                                                          \
            return;                                                                            \
        }                                                                                      \
        int c = i % cols;                                                                      \
        int r = (i / cols) % rows;                                                             \
        int diff = c - r;                                                                      \
        y[i] = (upper ? diff >= k : diff <= k) ? x[i] : (T)0;                                  \
    }

/* One_hot: Y as [outer, depth, inner], indices as [outer, inner] of type
 * itype (0 int32, 1 int64, 2 float32, truncated toward zero); vals holds
 * [off, on]. An index outside [-depth, depth) gives a line of off. */
#define OCL_ONE_HOT(T, S)                                                                      \
    kernel void one_hot_##S(global const uchar *ind, int itype, global const T *vals,         \
                            global T *y, int n, int depth, int inner) {                        \
        int i = (int)get_global_id(0);                                                         \
        if (i >= n) {                                                                          \
            return;                                                                            \
        }                                                                                      \
        int in = i % inner;                                                                    \
        int t = i / inner;                                                                     \
        int d = t % depth;                                                                     \
        int o = t / depth;                                                                     \
        int j = o * inner + in;                                                                \
        long v;                                                                                \
        if (itype == 2) {                                                                      \
            float f = ((global const float *)ind)[j];                                          \
            v = fabs(f) < 4.611686e18f ? (long)f : (long)depth; /* NaN: out of range */        \
        } else {                                                                               \
            v = ocl_index_at(ind, itype, j);                                                   \
        }                                                                                      \
        y[i] = ocl_index_norm(v, depth) == d ? vals[1] : vals[0];                              \
    }

#define OCL_INDEX_KERNELS(T, S)                                                                \
    OCL_GATHER_DYN(T, S)                                                                       \
    OCL_GATHER_ELEMENTS(T, S)                                                                  \
    OCL_SCATTER_LINE(scatter_elements_##S, T, *dst = u[j])                                     \
    OCL_GATHER_ND(T, S)                                                                        \
    OCL_SCATTER_ND(scatter_nd_##S, T, *dst = u[j])                                             \
    OCL_TRILU(T, S)                                                                            \
    OCL_ONE_HOT(T, S)

OCL_INDEX_KERNELS(uchar, u8)
OCL_INDEX_KERNELS(ushort, u16)
OCL_INDEX_KERNELS(uint, u32)
OCL_INDEX_KERNELS(ulong, u64)

OCL_SCATTER_LINE(scatter_elements_reduce_f32, float, *dst = ocl_scatter_combine(red, *dst, u[j]))
OCL_SCATTER_ND(scatter_nd_reduce_f32, float, *dst = ocl_scatter_combine(red, *dst, u[j]))

/* Hardmax: per line of len elements inner apart, 1 at the first maximum
 * (the first NaN wins over every number), 0 elsewhere. */
kernel void hardmax_f32(global const float *x, global float *y, int lines, int len, int inner) {
    int t = (int)get_global_id(0);
    if (t >= lines) {
        return;
    }
    int o = t / inner, in = t - o * inner;
    int base = o * len * inner + in;
    int best = 0;
    float bv = x[base];
    for (int j = 1; j < len && !isnan(bv); j++) {
        float v = x[base + j * inner];
        if (v > bv || isnan(v)) {
            best = j;
            bv = v;
        }
    }
    for (int j = 0; j < len; j++) {
        y[base + j * inner] = j == best ? 1.0f : 0.0f;
    }
}

/* Cum_sum: per line, in the sum's order (backwards when reverse); the
 * running sum is the previous output plus the current element (the
 * previous one when exclusive), as cpu_ref adds. Integers add as unsigned
 * of their width (wrapping). */
#define OCL_CUM_SUM(T, S)                                                                      \
    kernel void cum_sum_##S(global const T *x, global T *y, int lines, int len, int inner,    \
                            int exclusive, int reverse) {                                      \
        int t = (int)get_global_id(0);                                                         \
        if (t >= lines) {                                                                      \
            return;                                                                            \
        }                                                                                      \
        int o = t / inner, in = t - o * inner;                                                 \
        int step = reverse ? -inner : inner;                                                   \
        int at = o * len * inner + in + (reverse ? (len - 1) * inner : 0);                     \
        T acc = exclusive ? (T)0 : x[at];                                                      \
        y[at] = acc;                                                                           \
        for (int j = 1; j < len; j++) {                                                        \
            int cur = at + step;                                                               \
            acc = acc + x[exclusive ? at : cur];                                               \
            y[cur] = acc;                                                                      \
            at = cur;                                                                          \
        }                                                                                      \
    }

OCL_CUM_SUM(float, f32)
OCL_CUM_SUM(uint, u32)
OCL_CUM_SUM(ulong, u64)

/* TopK (float32): one work-item per element j of a line of len elements
 * inner apart; its rank is the count of elements that come before it
 * (larger first, or smaller first when !largest; a NaN counts as larger
 * than every number and equal to a NaN; equal values by position), and
 * an element ranked below k is written at its rank. The order is total,
 * so every output is written once. */
int ocl_topk_compare(float a, float b) {
    if (isnan(a) || isnan(b)) {
        return (isnan(a) ? 1 : 0) - (isnan(b) ? 1 : 0);
    }
    return (a > b ? 1 : 0) - (a < b ? 1 : 0);
}

kernel void topk_f32(global const float *x, global float *values, global long *indices,
                     int n, int len, int inner, int k, int largest) {
    int i = (int)get_global_id(0);
    if (i >= n) {
        return;
    }
    int in = i % inner;
    int t = i / inner;
    int j = t % len;
    int o = t / len;
    int base = o * len * inner + in;
    float v = x[base + j * inner];
    int rank = 0;
    for (int a = 0; a < len && rank < k; a++) {
        int c = ocl_topk_compare(x[base + a * inner], v);
        c = largest ? c : -c;
        rank += c > 0 || (c == 0 && a < j) ? 1 : 0;
    }
    if (rank < k) {
        int at = (o * k + rank) * inner + in;
        values[at] = v;
        indices[at] = j;
    }
}
