/* The ONNX converters of operators imported as compositions of other
 * layers, or as constants: CenterCropPad (one pad layer, whose negative
 * pads crop), EyeLike (a constant: it reads only its input's shape),
 * MeanVarianceNormalization (reduce mean, sub, mul, reduce mean, sqrt,
 * add, div), LRN (mul, reshape, an average pool across channels,
 * reshape, mul, add, pow, mul) and AffineGrid (a constant grid of
 * normalised coordinates, matmul with theta transposed, reshape). */
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* LRN windows longer than this are refused (they would pad X past any
 * real channel count). */
#define LRN_MAX_SIZE ((int64_t)1 << 30)

/* A scalar constant of a float dtype (float32, float16, bfloat16). */
static plx_status float_scalar(onnxi_ctx *c, const onnxi_node *n, plx_dtype dt, double value,
                               onnxi_value **out) {
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = dt;
    void *data;
    plx_status st = onnxi_alloc_const(c, n, &info, &data);
    if (st) {
        return st;
    }
    if (dt == PLX_DTYPE_FLOAT32) {
        *(float *)data = (float)value;
    } else if (dt == PLX_DTYPE_FLOAT16) {
        *(uint16_t *)data = plx_float32_to_float16((float)value);
    } else {
        *(uint16_t *)data = plx_float32_to_bfloat16((float)value);
    }
    return onnxi_const_take(c, &info, data, out);
}

/* Emits the binary layer `f` of a and b. */
static plx_status binary(onnxi_ctx *c, onnxi_node *n, plx_binary_func f, onnxi_value *a,
                         onnxi_value *b, onnxi_value **out) {
    plx_binary_desc d = PLX_BINARY_DESC_INIT(f);
    onnxi_value *ins[2] = {a, b};
    return onnxi_emit(c, n, PLX_OP_BINARY, &d, ins, 2, 1, out);
}

/* ---- CenterCropPad ------------------------------------------------------ */

/* CenterCropPad (18): each named axis (all by default) cropped or padded
 * with zeros to `shape` around its centre, the odd element of a crop or a
 * pad at the end, as ONNX's reference places it: one pad layer, begin and
 * end negative where they crop. shape must be known at import. */
plx_status onnxi_conv_center_crop_pad(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    const plx_tensor_info *x = &n->in[0]->info;
    int64_t shape[PLX_MAX_RANK], axes[PLX_MAX_RANK];
    size_t ns = 0, na = 0;
    bool has_axes = false;
    if ((st = onnxi_const_ints(n, 1, "shape", shape, PLX_MAX_RANK, &ns)) ||
        (st = onnxi_attr_ints(n, "axes", axes, PLX_MAX_RANK, &na, &has_axes))) {
        return st;
    }
    if (!has_axes) {
        na = x->rank;
        for (size_t i = 0; i < na; i++) {
            axes[i] = (int64_t)i;
        }
    }
    int32_t norm[PLX_MAX_RANK];
    if ((st = onnxi_check_count(c, n, "input 1 (shape)", ns, na,
                                has_axes ? "one per axis" : "one per dim of X")) ||
        (st = onnxi_axes(c, n, "attribute 'axes'", axes, na, x->rank, norm))) {
        return st;
    }
    plx_pad_desc d = PLX_PAD_DESC_INIT(PLX_PAD_CONSTANT);
    for (size_t i = 0; i < na; i++) {
        int32_t a = norm[i];
        if (shape[i] < 0) {
            return onnxi_invalid(c, n, "shape[%zu] = %lld is negative", i, (long long)shape[i]);
        }
        int64_t diff = shape[i] - x->dims[a]; /* > 0: pad; < 0: crop */
        int64_t mag = diff < 0 ? -diff : diff, first = mag / 2, last = mag - first;
        d.pads_begin[a] = diff < 0 ? -first : first;
        d.pads_end[a] = diff < 0 ? -last : last;
    }
    return onnxi_emit1(c, n, PLX_OP_PAD, &d, n->in, 1);
}

/* ---- EyeLike ------------------------------------------------------------- */

/* EyeLike (9, 22): a constant of X's 2-D shape, 1 on the k-th diagonal
 * (j - i = k) and 0 elsewhere, of `dtype` (X's type by default): X's
 * values are never read. */
plx_status onnxi_conv_eye_like(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    plx_tensor_info info = n->in[0]->info;
    if (info.rank != 2) {
        return onnxi_invalid(c, n, "input has rank %u; EyeLike takes a 2-D tensor", info.rank);
    }
    if (onnxi_attr(n, "dtype")) {
        int32_t t = onnxi_attr_i32(n, "dtype", 0);
        info.dtype = onnxi_dtype(t);
        if (info.dtype == PLX_DTYPE_INVALID) {
            char buf[16];
            return ONNXI_UNSUPPORTED("dtype %s", onnxi_dtype_name(t, buf, sizeof buf));
        }
    }
    info.quant.kind = PLX_QUANT_NONE;
    int64_t k = onnxi_attr_i(n, "k", 0);
    unsigned char *data;
    if ((st = onnxi_alloc_const(c, n, &info, (void **)&data))) {
        return st;
    }
    size_t es = plx_dtype_size(info.dtype);
    unsigned char one[8] = {0};
    switch (info.dtype) {
    case PLX_DTYPE_FLOAT32: {
        float f = 1.0f;
        memcpy(one, &f, 4);
        break;
    }
    case PLX_DTYPE_FLOAT16: {
        uint16_t h = plx_float32_to_float16(1.0f);
        memcpy(one, &h, 2);
        break;
    }
    case PLX_DTYPE_BFLOAT16: {
        uint16_t h = plx_float32_to_bfloat16(1.0f);
        memcpy(one, &h, 2);
        break;
    }
    case PLX_DTYPE_FLOAT64: {
        double d = 1.0;
        memcpy(one, &d, 8);
        break;
    }
    default: {
        /* integers and bool: 1 in the low byte of a little-endian host,
         * the high one of a big-endian one */
        const uint16_t probe = 1;
        unsigned char low;
        memcpy(&low, &probe, 1);
        one[low ? 0 : es - 1] = 1;
        break;
    }
    }
    int64_t rows = info.dims[0], cols = info.dims[1];
    for (int64_t i = 0; i < rows; i++) {
        /* j = i + k within [0, cols); k is any int64, i + k must not
         * overflow: compare instead of adding when k is far out */
        if ((k >= 0 && k < cols && i < cols - k) ||
            (k < 0 && k >= -rows && i >= -k && i + k < cols)) {
            memcpy(data + (size_t)(i * cols + i + k) * es, one, es);
        }
    }
    onnxi_value *v;
    if ((st = onnxi_const_take(c, &info, data, &v))) {
        return st;
    }
    return onnxi_bind_out(c, n, 0, v);
}

/* ---- MeanVarianceNormalization ------------------------------------------ */

/* MeanVarianceNormalization (9, 13): (X - mean) / (sqrt(variance) +
 * 1e-9) over `axes` (default [0, 2, 3]), as ONNX's function body, the
 * variance taken as the mean of (X - mean)^2 (the body's E[X^2] - mean^2,
 * with no cancellation). */
plx_status onnxi_conv_mvn(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    onnxi_value *x = n->in[0];
    plx_dtype dt = x->info.dtype;
    if (dt != PLX_DTYPE_FLOAT32 && dt != PLX_DTYPE_FLOAT16 && dt != PLX_DTYPE_BFLOAT16) {
        return onnxi_invalid(c, n, "X has type %s, expected a float type", plx_dtype_name(dt));
    }
    int64_t axes[PLX_MAX_RANK] = {0, 2, 3};
    size_t na = 0;
    bool has_axes = false;
    if ((st = onnxi_attr_ints(n, "axes", axes, PLX_MAX_RANK, &na, &has_axes))) {
        return st;
    }
    if (!has_axes) {
        na = 3;
        axes[0] = 0, axes[1] = 2, axes[2] = 3;
    }
    plx_reduce_desc mean = PLX_REDUCE_DESC_INIT(PLX_REDUCE_MEAN);
    mean.axis_count = (uint32_t)na;
    if ((st = onnxi_axes(c, n, "attribute 'axes'", axes, na, x->info.rank, mean.axes))) {
        return st;
    }
    mean.keepdims = true;
    plx_unary_desc sqrt_d = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    onnxi_value *mu, *d, *sq, *var, *sd, *eps, *den;
    if ((st = onnxi_emit(c, n, PLX_OP_REDUCE, &mean, &x, 1, 1, &mu)) ||
        (st = binary(c, n, PLX_BINARY_SUB, x, mu, &d)) ||
        (st = binary(c, n, PLX_BINARY_MUL, d, d, &sq)) ||
        (st = onnxi_emit(c, n, PLX_OP_REDUCE, &mean, &sq, 1, 1, &var)) ||
        (st = onnxi_emit(c, n, PLX_OP_UNARY, &sqrt_d, &var, 1, 1, &sd)) ||
        (st = float_scalar(c, n, dt, 1e-9, &eps)) ||
        (st = binary(c, n, PLX_BINARY_ADD, sd, eps, &den))) {
        return st;
    }
    onnxi_value *ins[2] = {d, den};
    plx_binary_desc div = PLX_BINARY_DESC_INIT(PLX_BINARY_DIV);
    return onnxi_emit1(c, n, PLX_OP_BINARY, &div, ins, 2);
}

/* ---- LRN ----------------------------------------------------------------- */

/* LRN (1, 13): Y = X * (bias + alpha / size * square_sum)^-beta, the sum
 * of X^2 over the channels c - floor((size - 1) / 2) .. c + ceil((size -
 * 1) / 2) within [0, C): X^2 seen as [N, 1, C, D1 x ..] average-pooled
 * along C by a window of `size` whose padding counts (the window's sum
 * over size). float32 X (the average pool's type). */
plx_status onnxi_conv_lrn(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    onnxi_value *x = n->in[0];
    const plx_tensor_info *xi = &x->info;
    if (xi->dtype != PLX_DTYPE_FLOAT32) {
        return ONNXI_UNSUPPORTED("X of type %s (LRN is imported for float32 only)",
                                 plx_dtype_name(xi->dtype));
    }
    if (xi->rank < 2) {
        return onnxi_invalid(c, n, "X has rank %u; LRN takes [N, C, ...]", xi->rank);
    }
    int64_t size = onnxi_attr_i(n, "size", 0);
    float alpha = onnxi_attr_f(n, "alpha", 1e-4f), beta = onnxi_attr_f(n, "beta", 0.75f);
    float bias = onnxi_attr_f(n, "bias", 1.0f);
    if (size < 1 || size > LRN_MAX_SIZE) {
        return onnxi_invalid(c, n, "size = %lld must be in [1, %lld]", (long long)size,
                             (long long)LRN_MAX_SIZE);
    }
    int64_t spatial = 1;
    for (uint32_t i = 2; i < xi->rank; i++) {
        if (xi->dims[i] != 0 && spatial > INT64_MAX / xi->dims[i]) {
            return onnxi_invalid(c, n, "the size of X overflows");
        }
        spatial *= xi->dims[i];
    }
    plx_tensor_info planes = *xi;
    planes.rank = 4;
    planes.dims[0] = xi->dims[0];
    planes.dims[1] = 1;
    planes.dims[2] = xi->dims[1];
    planes.dims[3] = spatial;
    for (uint32_t i = 4; i < PLX_MAX_RANK; i++) {
        planes.dims[i] = 0;
    }
    plx_pool_desc pool = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    pool.kernel[0] = size;
    pool.kernel[1] = 1;
    pool.pads_begin[0] = (size - 1) / 2;
    pool.pads_end[0] = size - 1 - (size - 1) / 2;
    pool.count_include_pad = true;
    onnxi_value *sq, *sq4, *avg4, *avg, *a, *ab, *neg_beta, *p, *scaled, *bias_v, *alpha_v;
    if ((st = binary(c, n, PLX_BINARY_MUL, x, x, &sq)) ||
        (st = onnxi_reshape_to(c, n, sq, &planes, &sq4)) ||
        (st = onnxi_emit(c, n, PLX_OP_POOL, &pool, &sq4, 1, 1, &avg4)) ||
        (st = onnxi_reshape_to(c, n, avg4, xi, &avg)) ||
        (st = float_scalar(c, n, PLX_DTYPE_FLOAT32, alpha, &alpha_v)) ||
        (st = binary(c, n, PLX_BINARY_MUL, avg, alpha_v, &a)) ||
        (st = float_scalar(c, n, PLX_DTYPE_FLOAT32, bias, &bias_v)) ||
        (st = binary(c, n, PLX_BINARY_ADD, a, bias_v, &ab)) ||
        (st = float_scalar(c, n, PLX_DTYPE_FLOAT32, -(double)beta, &neg_beta)) ||
        (st = binary(c, n, PLX_BINARY_POW, ab, neg_beta, &p)) ||
        (st = binary(c, n, PLX_BINARY_MUL, x, p, &scaled))) {
        return st;
    }
    return onnxi_bind_out(c, n, 0, scaled);
}

/* The most points an AffineGrid's constant base grid may hold. */
#define AFFINE_GRID_MAX_POINTS ((int64_t)1 << 24)

/* AffineGrid (opset 20): theta [N, r, r + 1] (r = 2 or 3) and size [N, C,
 * (D,) H, W], known at import -> grid [N, (D,) H, W, r]. Each point's
 * normalised coordinates (x along W first, then y, then z), with a 1
 * appended, make a row of a constant base [P, r + 1] (P points, row-major
 * over (D,) H, W); the grid is base @ theta^T per batch: matmul of the
 * base with theta transposed to [N, r + 1, r], reshaped. Coordinate i of
 * a dim of size S is -1 + (2 i + 1) / S, or with align_corners
 * -1 + 2 i / (S - 1) (-1 when S is 1), as ONNX's reference computes it.
 * theta must be float32 or float64 (the base's dtype). */
plx_status onnxi_conv_affine_grid(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    const plx_tensor_info *ti = &n->in[0]->info;
    int64_t size[5];
    size_t k;
    if ((st = onnxi_const_ints(n, 1, "size", size, 5, &k))) {
        return st;
    }
    if (ti->dtype != PLX_DTYPE_FLOAT32 && ti->dtype != PLX_DTYPE_FLOAT64) {
        return ONNXI_UNSUPPORTED("theta of type %s (AffineGrid takes float32 or float64 here)",
                                 plx_dtype_name(ti->dtype));
    }
    const uint32_t r = (uint32_t)k - 2;
    if ((k != 4 && k != 5) || ti->rank != 3 || ti->dims[0] != size[0] ||
        ti->dims[1] != (int64_t)r || ti->dims[2] != (int64_t)r + 1) {
        return onnxi_invalid(c, n, "size has %zu values and theta is rank %u; they must be "
                             "[N, C, H, W] and [N, 2, 3], or [N, C, D, H, W] and [N, 3, 4]",
                             k, ti->rank);
    }
    int64_t points = 1;
    for (uint32_t d = 0; d < r; d++) {
        if (size[2 + d] < 1 || size[2 + d] > AFFINE_GRID_MAX_POINTS ||
            points * size[2 + d] > AFFINE_GRID_MAX_POINTS) {
            return onnxi_invalid(c, n, "size's spatial dims must be 1 or more, with at most "
                                 "%lld points", (long long)AFFINE_GRID_MAX_POINTS);
        }
        points *= size[2 + d];
    }
    const bool align = onnxi_attr_i(n, "align_corners", 0) != 0;
    const bool f64 = ti->dtype == PLX_DTYPE_FLOAT64;
    const size_t elem = f64 ? sizeof(double) : sizeof(float);
    void *base = malloc((size_t)points * (r + 1) * elem);
    if (!base) {
        return plx_status_create(PLX_OUT_OF_MEMORY, "out of memory");
    }
    for (int64_t p = 0; p < points; p++) {
        int64_t rest = p;
        /* the dims from the last (W, coordinate x) to the first */
        for (uint32_t j = 0; j < r; j++) {
            const int64_t s = size[2 + r - 1 - j], i = rest % s;
            rest /= s;
            double v;
            if (align) {
                v = s == 1 ? -1.0 : -1.0 + (double)i * (2.0 / (double)(s - 1));
            } else {
                v = -1.0 + 1.0 / (double)s + (double)i * (2.0 / (double)s);
            }
            if (f64) {
                ((double *)base)[p * (r + 1) + j] = v;
            } else {
                ((float *)base)[p * (r + 1) + j] = (float)v;
            }
        }
        if (f64) {
            ((double *)base)[p * (r + 1) + r] = 1.0;
        } else {
            ((float *)base)[p * (r + 1) + r] = 1.0f;
        }
    }
    plx_tensor_info bi;
    memset(&bi, 0, sizeof bi);
    bi.dtype = ti->dtype;
    bi.rank = 2;
    bi.dims[0] = points;
    bi.dims[1] = r + 1;
    plx_transpose_desc tr = PLX_TRANSPOSE_DESC_INIT;
    tr.perm[0] = 0;
    tr.perm[1] = 2;
    tr.perm[2] = 1;
    tr.perm_count = 3;
    plx_tensor_info gi;
    memset(&gi, 0, sizeof gi);
    gi.dtype = ti->dtype;
    gi.rank = r + 2;
    gi.dims[0] = size[0];
    for (uint32_t d = 0; d < r; d++) {
        gi.dims[1 + d] = size[2 + d];
    }
    gi.dims[r + 1] = r;
    onnxi_value *bv, *tt, *ins[2], *flat, *grid;
    if ((st = onnxi_const_take(c, &bi, base, &bv)) ||
        (st = onnxi_emit(c, n, PLX_OP_TRANSPOSE, &tr, n->in, 1, 1, &tt))) {
        return st;
    }
    ins[0] = bv;
    ins[1] = tt;
    if ((st = onnxi_emit(c, n, PLX_OP_MATMUL, NULL, ins, 2, 1, &flat)) ||
        (st = onnxi_reshape_to(c, n, flat, &gi, &grid))) {
        return st;
    }
    return onnxi_bind_out(c, n, 0, grid);
}
