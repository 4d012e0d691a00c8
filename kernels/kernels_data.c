/* cpu_ref's data-movement kernels: constant, mem_copy, reshape (also
 * flatten, squeeze, unsqueeze), transpose, concat, split, slice, pad,
 * gather, expand, tile, depth_to_space, space_to_depth and
 * reverse_sequence.
 *
 * All of them move whole elements of plx_dtype_size bytes, so they work for
 * every dtype (a concat on quantized tensors whose inputs' parameters are
 * not Y's maps those inputs' bytes through a table, plexus/ops.h). Most are one strided copy: the output is walked densely with
 * an N-d counter while the input offset follows per-dimension strides (zero
 * for broadcast, negative for reversed slices, permuted for transposes).
 * Every run function first calls its check function, which verifies that
 * the infos agree with each other, so no copy can leave the buffers. */
#include "kernels.h"
#include "kernels_compute.h"
#include "qmap.h"

#include <plexus/geometry.h>

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ---- helpers ------------------------------------------------------------ */

static bool byte_size(const plx_tensor_info *t, size_t *out) {
    return t->rank <= PLX_MAX_RANK && plx_tensor_info_byte_size(t, out);
}

/* Every output shares the first input's dtype (the host's validation,
 * validate.h in the core, has already checked slot counts, descriptor and
 * infos). */
static const char *same_dtype(const plx_layer_view *layer, const char *what, char *buf,
                              size_t size) {
    for (uint32_t i = 0; i < layer->output_count; i++) {
        if (layer->outputs[i].dtype != layer->inputs[0].dtype) {
            return plxk_refuse(buf, size, "%s: output %u is %s, the input %s", what, i,
                          plx_dtype_name(layer->outputs[i].dtype),
                          plx_dtype_name(layer->inputs[0].dtype));
        }
    }
    return NULL;
}

/* dst[i * dst_rs + j] = src[i + j * src_cs] for i < rows, j < cols, in
 * square tiles, so that both the reads (along i) and the writes (along j)
 * stay within a few cache lines per tile; one loop per element size, so
 * that each element is one load and one store. With one row, a strided
 * row copy. */
enum { COPY_TILE = 16 };
#define TRANSPOSE_BLOCK(type)                                                                    \
    do {                                                                                         \
        type *d_ = (type *)(void *)dst;                                                          \
        const type *s_ = (const type *)(const void *)src;                                        \
        for (int64_t i0 = 0; i0 < rows; i0 += COPY_TILE) {                                      \
            int64_t i1 = i0 + COPY_TILE < rows ? i0 + COPY_TILE : rows;                           \
            for (int64_t j0 = 0; j0 < cols; j0 += COPY_TILE) {                                  \
                int64_t j1 = j0 + COPY_TILE < cols ? j0 + COPY_TILE : cols;                       \
                for (int64_t i = i0; i < i1; i++) {                                             \
                    for (int64_t j = j0; j < j1; j++) {                                         \
                        d_[i * dst_rs + j] = s_[i + j * src_cs];                                 \
                    }                                                                            \
                }                                                                                \
            }                                                                                    \
        }                                                                                        \
    } while (0)

#if defined(__SSE2__)
/* TRANSPOSE_BLOCK of 4-byte elements, 4 x 4 at a time in registers: four
 * loads along i, the transposition, four stores along j (element by
 * element, the reads along j were scalar: a 1x64x80x80 tensor to NHWC took
 * 1.8 times ONNX Runtime's time); the edges of the tiles element by
 * element. */
static void transpose_block4(uint32_t *d_, const uint32_t *s_, int64_t rows, int64_t cols,
                             int64_t dst_rs, int64_t src_cs) {
    for (int64_t i0 = 0; i0 < rows; i0 += COPY_TILE) {
        int64_t i1 = i0 + COPY_TILE < rows ? i0 + COPY_TILE : rows;
        for (int64_t j0 = 0; j0 < cols; j0 += COPY_TILE) {
            int64_t j1 = j0 + COPY_TILE < cols ? j0 + COPY_TILE : cols;
            int64_t i4 = i0 + (i1 - i0) / 4 * 4, j4 = j0 + (j1 - j0) / 4 * 4;
            for (int64_t i = i0; i < i4; i += 4) {
                for (int64_t j = j0; j < j4; j += 4) {
                    __m128 r0 = _mm_loadu_ps((const float *)(s_ + i + j * src_cs));
                    __m128 r1 = _mm_loadu_ps((const float *)(s_ + i + (j + 1) * src_cs));
                    __m128 r2 = _mm_loadu_ps((const float *)(s_ + i + (j + 2) * src_cs));
                    __m128 r3 = _mm_loadu_ps((const float *)(s_ + i + (j + 3) * src_cs));
                    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
                    _mm_storeu_ps((float *)(d_ + i * dst_rs + j), r0);
                    _mm_storeu_ps((float *)(d_ + (i + 1) * dst_rs + j), r1);
                    _mm_storeu_ps((float *)(d_ + (i + 2) * dst_rs + j), r2);
                    _mm_storeu_ps((float *)(d_ + (i + 3) * dst_rs + j), r3);
                }
            }
            for (int64_t i = i0; i < i1; i++) {
                for (int64_t j = i < i4 ? j4 : j0; j < j1; j++) {
                    d_[i * dst_rs + j] = s_[i + j * src_cs];
                }
            }
        }
    }
}
#endif

static void transpose_block(uint8_t *dst, const uint8_t *src, size_t es, int64_t rows,
                            int64_t cols, int64_t dst_rs, int64_t src_cs) {
    switch (es) {
    case 1: TRANSPOSE_BLOCK(uint8_t); return;
    case 2: TRANSPOSE_BLOCK(uint16_t); return;
#if defined(__SSE2__)
    case 4:
        if (rows >= 4 && cols >= 4) {
            transpose_block4((uint32_t *)(void *)dst, (const uint32_t *)(const void *)src, rows,
                             cols, dst_rs, src_cs);
            return;
        }
        TRANSPOSE_BLOCK(uint32_t);
        return;
#else
    case 4: TRANSPOSE_BLOCK(uint32_t); return;
#endif
    case 8: TRANSPOSE_BLOCK(uint64_t); return;
    default: break;
    }
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < cols; j++) {
            memcpy(dst + (size_t)(i * dst_rs + j) * es, src + (size_t)(i + j * src_cs) * es, es);
        }
    }
}
#undef TRANSPOSE_BLOCK

/* Copies a dense output of `rank` dims from src, whose element for output
 * index (i0, .., ir-1) is at base + sum(i_d * strides[d]):
 * - the last dim contiguous in src (a slice of channels, a concat's part):
 *   one memcpy per row;
 * - else, when another dim a is contiguous in src (a transpose that moves
 *   the innermost dim, NCHW to NHWC), as 2-D transposes of dims a and
 *   last, tile by tile (transpose_block): element by element along the last
 *   dim, the reads were strides apart, one cache line per element, 4.4
 *   times ONNX Runtime's time on 1x64x80x80 to NHWC;
 * - else row by row along the last dim (transpose_block of one row).
 * The dims other than those the inner copy takes are counted out with an
 * odometer. */
static void strided_copy(uint8_t *dst, const uint8_t *src, size_t es, uint32_t rank,
                         const int64_t *dims, const int64_t *strides, int64_t base) {
    size_t n = 1;
    for (uint32_t d = 0; d < rank; d++) {
        n *= (size_t)dims[d];
    }
    if (n == 0) {
        return;
    }
    while (rank > 1 && dims[rank - 1] == 1) {
        rank--; /* a trailing dim of 1 moves nothing; the output stays dense */
    }
    if (rank == 0) {
        memcpy(dst, src + (size_t)base * es, es);
        return;
    }
    uint32_t last = rank - 1, a = last;
    if (strides[last] != 1 || dims[last] == 1) {
        for (uint32_t d = 0; d < last; d++) {
            if (strides[d] == 1 && dims[d] > 1 && dims[last] > 1) {
                a = d;
            }
        }
    }
    int64_t dst_stride[PLX_MAX_RANK], odo[PLX_MAX_RANK];
    dst_stride[last] = 1;
    for (uint32_t d = last; d-- > 0;) {
        dst_stride[d] = dst_stride[d + 1] * dims[d + 1];
    }
    /* the odometer's dims: all but the last, and a */
    for (uint32_t d = 0; d < rank; d++) {
        odo[d] = d == last || d == a ? 1 : dims[d];
    }
    size_t inner = (size_t)dims[last] * (a == last ? 1 : (size_t)dims[a]);
    int64_t idx[PLX_MAX_RANK] = {0};
    int64_t off = base, at = 0;
    for (size_t done = 0; done < n; done += inner) {
        if (a != last) {
            transpose_block(dst + (size_t)at * es, src + (size_t)off * es, es, dims[a],
                            dims[last], dst_stride[a], strides[last]);
        } else if (strides[last] == 1) {
            memcpy(dst + (size_t)at * es, src + (size_t)off * es, (size_t)dims[last] * es);
        } else {
            transpose_block(dst + (size_t)at * es, src + (size_t)off * es, es, 1, dims[last], 0,
                            strides[last]);
        }
        for (uint32_t d = rank; d-- > 0;) {
            if (++idx[d] < odo[d]) {
                off += strides[d];
                at += dst_stride[d];
                break;
            }
            idx[d] = 0;
            off -= strides[d] * (odo[d] - 1);
            at -= dst_stride[d] * (odo[d] - 1);
        }
    }
}

/* Runs the layer's check; on a refusal fails with it. */
#define RUN_CHECK(name, args)                                                                    \
    do {                                                                                         \
        char why_buf_[192];                                                                      \
        const char *why_ = plxk_check_##name((args)->layer, why_buf_, sizeof why_buf_);       \
        if (why_) {                                                                              \
            return plxk_fail((args), "layer '%s': %s", plxk_layer_name((args)->layer), why_);      \
        }                                                                                        \
    } while (0)

/* ---- constant, mem_copy, reshape ---------------------------------------- */

const char *plxk_check_constant(const plx_layer_view *layer, char *buf, size_t size) {
    size_t bytes = 0;
    byte_size(&layer->outputs[0], &bytes);
    if (bytes && !((const plx_constant_desc *)layer->desc)->data) {
        return plxk_refuse(buf, size, "constant: no data");
    }
    return NULL;
}

bool plxk_run_constant(const plxk_kernel_args *args) {
    RUN_CHECK(constant, args);
    size_t bytes = 0;
    byte_size(&args->layer->outputs[0], &bytes);
    if (bytes) {
        memcpy(args->outputs[0], ((const plx_constant_desc *)args->layer->desc)->data, bytes);
    }
    return true;
}

/* Same byte size in and out. */
static const char *check_byte_copy(const plx_layer_view *layer, const char *what, char *buf,
                                   size_t size) {
    const char *why = same_dtype(layer, what, buf, size);
    if (why) {
        return why;
    }
    size_t in = 0, out = 0;
    byte_size(&layer->inputs[0], &in);
    byte_size(&layer->outputs[0], &out);
    if (in != out) {
        return plxk_refuse(buf, size, "%s: input of %zu bytes, output of %zu", what, in, out);
    }
    return NULL;
}

static bool run_byte_copy(const plxk_kernel_args *args) {
    size_t bytes = 0;
    byte_size(&args->layer->outputs[0], &bytes);
    if (bytes && args->outputs[0] != args->inputs[0]) {
        memmove(args->outputs[0], args->inputs[0], bytes);
    }
    return true;
}

const char *plxk_check_mem_copy(const plx_layer_view *layer, char *buf, size_t size) {
    return check_byte_copy(layer, "mem_copy", buf, size);
}

bool plxk_run_mem_copy(const plxk_kernel_args *args) {
    RUN_CHECK(mem_copy, args);
    return run_byte_copy(args);
}

const char *plxk_check_reshape(const plx_layer_view *layer, char *buf, size_t size) {
    return check_byte_copy(layer, plx_op_name(layer->op), buf, size);
}

bool plxk_run_reshape(const plxk_kernel_args *args) {
    RUN_CHECK(reshape, args);
    return run_byte_copy(args);
}

/* ---- transpose ---------------------------------------------------------- */

/* The permutation: the descriptor's, or the reversal when perm_count is 0. */
static const char *transpose_perm(const plx_layer_view *layer, uint32_t perm[PLX_MAX_RANK],
                                  char *buf, size_t size) {
    const plx_transpose_desc *d = layer->desc;
    uint32_t rank = layer->inputs[0].rank;
    if (d->perm_count != 0 && d->perm_count != rank) {
        return plxk_refuse(buf, size, "transpose: perm has %u entries for rank %u", d->perm_count, rank);
    }
    bool seen[PLX_MAX_RANK] = {false};
    for (uint32_t i = 0; i < rank; i++) {
        perm[i] = d->perm_count ? d->perm[i] : rank - 1 - i;
        if (perm[i] >= rank || seen[perm[i]]) {
            return plxk_refuse(buf, size, "transpose: perm is not a permutation of 0..%u", rank - 1);
        }
        seen[perm[i]] = true;
    }
    return NULL;
}

const char *plxk_check_transpose(const plx_layer_view *layer, char *buf, size_t size) {
    const char *why = same_dtype(layer, "transpose", buf, size);
    if (why) {
        return why;
    }
    uint32_t perm[PLX_MAX_RANK];
    if ((why = transpose_perm(layer, perm, buf, size))) {
        return why;
    }
    const plx_tensor_info *x = &layer->inputs[0], *y = &layer->outputs[0];
    if (y->rank != x->rank) {
        return plxk_refuse(buf, size, "transpose: output rank %u, input rank %u", y->rank, x->rank);
    }
    for (uint32_t i = 0; i < x->rank; i++) {
        if (y->dims[i] != x->dims[perm[i]]) {
            return plxk_refuse(buf, size, "transpose: output dim %u is not input dim %u", i, perm[i]);
        }
    }
    return NULL;
}

bool plxk_run_transpose(const plxk_kernel_args *args) {
    RUN_CHECK(transpose, args);
    const plx_tensor_info *x = &args->layer->inputs[0], *y = &args->layer->outputs[0];
    uint32_t perm[PLX_MAX_RANK];
    char buf[8];
    transpose_perm(args->layer, perm, buf, sizeof buf);
    int64_t xs[PLX_MAX_RANK], strides[PLX_MAX_RANK];
    plx_tensor_info_strides(x, xs);
    for (uint32_t i = 0; i < x->rank; i++) {
        strides[i] = xs[perm[i]];
    }
    strided_copy(args->outputs[0], args->inputs[0], plx_dtype_size(x->dtype), y->rank, y->dims,
                 strides, 0);
    return true;
}

/* ---- concat / split ----------------------------------------------------- */

/* `whole` is the tensor cut along `axis` into `parts`: same rank, the
 * other dims equal, the axis sizes summing up. */
static const char *check_parts(const char *what, const plx_tensor_info *whole,
                               const plx_tensor_info *parts, uint32_t count, int32_t axis_in,
                               uint32_t *out_axis, char *buf, size_t size) {
    uint32_t axis = 0;
    if (!plx_axis_normalize(axis_in, whole->rank, false, &axis)) {
        return plxk_refuse(buf, size, "%s: axis %d is out of range for rank %u", what, (int)axis_in,
                      whole->rank);
    }
    int64_t sum = 0;
    for (uint32_t k = 0; k < count; k++) {
        if (parts[k].rank != whole->rank) {
            return plxk_refuse(buf, size, "%s: part %u has rank %u, expected %u", what, k,
                          parts[k].rank, whole->rank);
        }
        for (uint32_t d = 0; d < whole->rank; d++) {
            if (d != axis && parts[k].dims[d] != whole->dims[d]) {
                return plxk_refuse(buf, size, "%s: part %u differs in dim %u", what, k, d);
            }
        }
        sum += parts[k].dims[axis];
    }
    if (sum != whole->dims[axis]) {
        return plxk_refuse(buf, size, "%s: the parts sum to %lld along axis %u, not %lld", what,
                      (long long)sum, axis, (long long)whole->dims[axis]);
    }
    *out_axis = axis;
    return NULL;
}

/* Bytes of one "row" along and after the axis, and the number of rows. */
static void split_layout(const plx_tensor_info *t, uint32_t axis, size_t *outer, size_t *inner) {
    size_t o = 1, in = plx_dtype_size(t->dtype);
    for (uint32_t d = 0; d < t->rank; d++) {
        if (d < axis) {
            o *= (size_t)t->dims[d];
        } else if (d > axis) {
            in *= (size_t)t->dims[d];
        }
    }
    *outer = o;
    *inner = in;
}

static bool is_q8_per_tensor(const plx_tensor_info *t) {
    return (t->dtype == PLX_DTYPE_INT8 || t->dtype == PLX_DTYPE_UINT8) &&
           t->quant.kind == PLX_QUANT_PER_TENSOR;
}

/* Whether input k of a concat on quantized tensors is requantized (its
 * dtype or parameters are not Y's) rather than copied. */
static bool concat_requantizes_input(const plx_layer_view *l, uint32_t k) {
    const plx_tensor_info *x = &l->inputs[k], *y = &l->outputs[0];
    return x->dtype != y->dtype || x->quant.scale != y->quant.scale ||
           x->quant.zero_point != y->quant.zero_point;
}

/* A concat on quantized tensors (plexus/ops.h): every input and Y 8-bit
 * with per-tensor parameters, and some input's not Y's. */
static bool concat_requantizes(const plx_layer_view *l) {
    bool any = false;
    if (!is_q8_per_tensor(&l->outputs[0])) {
        return false;
    }
    for (uint32_t k = 0; k < l->input_count; k++) {
        if (!is_q8_per_tensor(&l->inputs[k])) {
            return false;
        }
        any = any || concat_requantizes_input(l, k);
    }
    return any;
}

const char *plxk_check_concat(const plx_layer_view *layer, char *buf, size_t size) {
    if (concat_requantizes(layer)) {
        uint32_t axis = 0;
        return check_parts("concat", &layer->outputs[0], layer->inputs, layer->input_count,
                           ((const plx_axis_desc *)layer->desc)->axis, &axis, buf, size);
    }
    const char *why = same_dtype(layer, "concat", buf, size);
    if (why) {
        return why;
    }
    for (uint32_t k = 0; k < layer->input_count; k++) {
        if (layer->inputs[k].dtype != layer->outputs[0].dtype) {
            return plxk_refuse(buf, size, "concat: input %u is %s, the output %s", k,
                          plx_dtype_name(layer->inputs[k].dtype),
                          plx_dtype_name(layer->outputs[0].dtype));
        }
    }
    uint32_t axis = 0;
    return check_parts("concat", &layer->outputs[0], layer->inputs, layer->input_count,
                       ((const plx_axis_desc *)layer->desc)->axis, &axis, buf, size);
}

/* A concat's copies, shared by the pool: every input's block of every outer
 * index, cut into pieces of at most CONCAT_PIECE bytes, is a task (at two
 * threads, four 1x64x40x40 inputs took 0.128 ms on the calling thread
 * alone, ONNX Runtime 0.084). */
#define CONCAT_PIECE ((size_t)64 * 1024)

typedef struct concat_job {
    const plxk_kernel_args *args;
    uint32_t axis;
    size_t outer, row, y_block; /* row, y_block in bytes */
    bool requantize;            /* concat_requantizes */
} concat_job;

/* The requantization of input k's 256 raw bytes into Y's parameters
 * (table[b] for byte b): dequantize's and quantize's own loops (qmap.h),
 * so that the values are exactly what dequantize, a float concat and
 * quantize give, and what ONNX Runtime's QLinearConcat gives (its lookup
 * table is built with the same float32 arithmetic, ties to even). A table
 * per input rather than a requantize layer per input: the bytes are
 * touched once, and the fold stays one layer. */
static void concat_table(const plx_layer_view *l, uint32_t k, plxk_isa isa, uint8_t table[256]) {
    const plx_tensor_info *x = &l->inputs[k], *y = &l->outputs[0];
    uint8_t bytes[256];
    float real[256];
    for (int b = 0; b < 256; b++) {
        bytes[b] = (uint8_t)b;
    }
    (void)plxk_dequantize8(isa, x->dtype == PLX_DTYPE_UINT8, bytes, real, 256, x->quant.scale,
                           x->quant.zero_point);
    (void)plxk_quantize8(isa, y->dtype == PLX_DTYPE_UINT8, real, table, 256, y->quant.scale,
                         y->quant.zero_point);
}

/* len bytes of an input to dst: copied, or mapped through its table. */
static void concat_part(const uint8_t *table, uint8_t *dst, const uint8_t *src, size_t len) {
    if (!table) {
        memcpy(dst, src, len);
        return;
    }
    for (size_t i = 0; i < len; i++) {
        dst[i] = table[src[i]];
    }
}

/* Pieces per outer index of input k's block (0 for an empty input). */
static size_t concat_pieces(const concat_job *j, uint32_t k, size_t *block) {
    *block = j->row * (size_t)j->args->layer->inputs[k].dims[j->axis];
    return (*block + CONCAT_PIECE - 1) / CONCAT_PIECE;
}

static void concat_task(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const concat_job *j = ctx;
    size_t at = 0;
    for (uint32_t k = 0; k < j->args->layer->input_count; k++) {
        size_t block, pieces = concat_pieces(j, k, &block), here = j->outer * pieces;
        if (task < here) {
            size_t o = task / pieces, p = task % pieces * CONCAT_PIECE;
            size_t len = block - p < CONCAT_PIECE ? block - p : CONCAT_PIECE;
            uint8_t table[256];
            bool map = j->requantize && concat_requantizes_input(j->args->layer, k);
            if (map) {
                concat_table(j->args->layer, k, plxk_isa_of(j->args->compute), table);
            }
            concat_part(map ? table : NULL, (uint8_t *)j->args->outputs[0] + o * j->y_block + at + p,
                        (const uint8_t *)j->args->inputs[k] + o * block + p, len);
            return;
        }
        task -= here;
        at += block;
    }
}

bool plxk_run_concat(const plxk_kernel_args *args) {
    RUN_CHECK(concat, args);
    const plx_layer_view *layer = args->layer;
    const plx_tensor_info *y = &layer->outputs[0];
    concat_job j = {args, 0, 0, 0, 0, concat_requantizes(layer)};
    plxk_isa isa;
    if (j.requantize && !plxk_require_isa(args, "concat", &isa)) {
        return false;
    }
    plx_axis_normalize(((const plx_axis_desc *)layer->desc)->axis, y->rank, false, &j.axis);
    split_layout(y, j.axis, &j.outer, &j.row);
    j.y_block = j.row * (size_t)y->dims[j.axis];
    size_t tasks = 0, block;
    for (uint32_t k = 0; k < layer->input_count; k++) {
        tasks += j.outer * concat_pieces(&j, k, &block);
    }
    size_t bytes = j.outer * j.y_block;
    if (tasks && bytes / tasks >= 4096) {
        /* about 10 GB/s on one thread */
        plxk_pool_run(args->compute ? args->compute->pool : NULL, tasks, (double)bytes / 10.0,
                      concat_task, &j);
        return true;
    }
    size_t at = 0; /* small pieces: one loop, no tasks */
    for (uint32_t k = 0; k < layer->input_count; k++) {
        size_t bl = j.row * (size_t)layer->inputs[k].dims[j.axis];
        const uint8_t *src = args->inputs[k];
        uint8_t *dst = args->outputs[0], table[256];
        bool map = j.requantize && concat_requantizes_input(layer, k);
        if (map && bl) {
            concat_table(layer, k, isa, table);
        }
        for (size_t o = 0; o < j.outer && bl; o++) {
            concat_part(map ? table : NULL, dst + o * j.y_block + at, src + o * bl, bl);
        }
        at += bl;
    }
    return true;
}

const char *plxk_check_split(const plx_layer_view *layer, char *buf, size_t size) {
    const char *why = same_dtype(layer, "split", buf, size);
    if (why) {
        return why;
    }
    const plx_split_desc *d = layer->desc;
    const plx_tensor_info *x = &layer->inputs[0];
    uint32_t axis = 0;
    if ((why = check_parts("split", x, layer->outputs, layer->output_count, d->axis, &axis, buf,
                           size))) {
        return why;
    }
    /* the parts must be the ones the descriptor asks for */
    int64_t dim = x->dims[axis], n = layer->output_count;
    int64_t chunk = (dim + n - 1) / n; /* ONNX 18: ceil, the last part smaller */
    for (uint32_t k = 0; k < layer->output_count; k++) {
        int64_t want;
        if (d->sizes) {
            want = d->sizes[k];
        } else {
            want = dim - (int64_t)k * chunk;
            want = want < 0 ? 0 : want > chunk ? chunk : want;
        }
        if (layer->outputs[k].dims[axis] != want) {
            return plxk_refuse(buf, size, "split: output %u has %lld along axis %u, expected %lld", k,
                          (long long)layer->outputs[k].dims[axis], axis, (long long)want);
        }
    }
    return NULL;
}

bool plxk_run_split(const plxk_kernel_args *args) {
    RUN_CHECK(split, args);
    const plx_layer_view *layer = args->layer;
    const plx_tensor_info *x = &layer->inputs[0];
    uint32_t axis = 0;
    plx_axis_normalize(((const plx_split_desc *)layer->desc)->axis, x->rank, false, &axis);
    size_t outer = 0, row = 0;
    split_layout(x, axis, &outer, &row);
    size_t x_block = row * (size_t)x->dims[axis], at = 0;
    for (uint32_t k = 0; k < layer->output_count; k++) {
        size_t block = row * (size_t)layer->outputs[k].dims[axis];
        const uint8_t *src = args->inputs[0];
        uint8_t *dst = args->outputs[k];
        for (size_t o = 0; o < outer && block; o++) {
            memcpy(dst + o * block, src + o * x_block + at, block);
        }
        at += block;
    }
    return true;
}

/* ---- slice -------------------------------------------------------------- */

/* ONNX Slice's output dims, and the strides and offset with which it
 * reads X: plexus/geometry.h's plan, refused in cpu_ref's words. */
static const char *slice_plan(const plx_layer_view *layer, int64_t dims[PLX_MAX_RANK],
                              int64_t strides[PLX_MAX_RANK], int64_t *offset, char *buf,
                              size_t size) {
    const plx_slice_desc *d = layer->desc;
    uint32_t i = 0;
    plx_geom_status s = plx_slice_plan(&layer->inputs[0], d, dims, strides, offset, &i);
    if (s == PLX_GEOM_BAD_COUNT) {
        return plxk_refuse(buf, size, "slice: %u entries for rank %u", d->count,
                        layer->inputs[0].rank);
    }
    if (s != PLX_GEOM_OK) {
        return plxk_refuse(buf, size, "slice: %s on axis %lld", plx_geom_status_text(s),
                        (long long)d->axes[i]);
    }
    return NULL;
}

const char *plxk_check_slice(const plx_layer_view *layer, char *buf, size_t size) {
    const char *why = same_dtype(layer, "slice", buf, size);
    if (why) {
        return why;
    }
    int64_t dims[PLX_MAX_RANK], strides[PLX_MAX_RANK], offset = 0;
    if ((why = slice_plan(layer, dims, strides, &offset, buf, size))) {
        return why;
    }
    const plx_tensor_info *x = &layer->inputs[0], *y = &layer->outputs[0];
    if (y->rank != x->rank) {
        return plxk_refuse(buf, size, "slice: output rank %u, input rank %u", y->rank, x->rank);
    }
    for (uint32_t i = 0; i < x->rank; i++) {
        if (y->dims[i] != dims[i]) {
            return plxk_refuse(buf, size, "slice: output dim %u is %lld, expected %lld", i,
                          (long long)y->dims[i], (long long)dims[i]);
        }
    }
    return NULL;
}

bool plxk_run_slice(const plxk_kernel_args *args) {
    RUN_CHECK(slice, args);
    const plx_tensor_info *x = &args->layer->inputs[0], *y = &args->layer->outputs[0];
    int64_t dims[PLX_MAX_RANK], strides[PLX_MAX_RANK], offset = 0;
    char buf[8];
    slice_plan(args->layer, dims, strides, &offset, buf, sizeof buf);
    if (plxk_element_count(y) == 0) {
        return true;
    }
    strided_copy(args->outputs[0], args->inputs[0], plx_dtype_size(x->dtype), y->rank, y->dims,
                 strides, offset);
    return true;
}

/* ---- pad ---------------------------------------------------------------- */

const char *plxk_check_pad(const plx_layer_view *layer, char *buf, size_t size) {
    const char *why = same_dtype(layer, "pad", buf, size);
    if (why) {
        return why;
    }
    const plx_pad_desc *d = layer->desc;
    const plx_tensor_info *x = &layer->inputs[0], *y = &layer->outputs[0];
    if (d->mode != PLX_PAD_CONSTANT && d->mode != PLX_PAD_REFLECT && d->mode != PLX_PAD_EDGE &&
        d->mode != PLX_PAD_WRAP) {
        return plxk_refuse(buf, size, "pad: unknown mode %d", (int)d->mode);
    }
    if (y->rank != x->rank) {
        return plxk_refuse(buf, size, "pad: output rank %u, input rank %u", y->rank, x->rank);
    }
    for (uint32_t i = 0; i < x->rank; i++) {
        int64_t pb = d->pads_begin[i], pe = d->pads_end[i];
        if (pb < -x->dims[i] || pe < -x->dims[i] || pb > INT32_MAX || pe > INT32_MAX ||
            y->dims[i] != x->dims[i] + pb + pe) {
            return plxk_refuse(buf, size, "pad: output dim %u is %lld, input %lld padded by %lld, %lld",
                          i, (long long)y->dims[i], (long long)x->dims[i], (long long)pb,
                          (long long)pe);
        }
        if (d->mode != PLX_PAD_CONSTANT && x->dims[i] == 0 && y->dims[i] > 0) {
            return plxk_refuse(buf, size, "pad: %s mode cannot pad the empty dim %u",
                          d->mode == PLX_PAD_REFLECT ? "reflect"
                          : d->mode == PLX_PAD_EDGE  ? "edge"
                                                     : "wrap", i);
        }
        if (d->mode == PLX_PAD_WRAP && (pb < 0 || pe < 0)) {
            return plxk_refuse(buf, size, "pad: wrap pads of dim %u must be >= 0", i);
        }
    }
    return NULL;
}

/* The input coordinate read for coordinate c (possibly outside [0, n)) of
 * a padded dim; -1 for the constant. Reflect mirrors without repeating the
 * edge (numpy "reflect"), as often as the pad needs; wrap repeats the dim
 * (c modulo n). */
static int64_t pad_source(plx_pad_mode mode, int64_t c, int64_t n) {
    if (c >= 0 && c < n) {
        return c;
    }
    if (mode == PLX_PAD_CONSTANT) {
        return -1;
    }
    if (mode == PLX_PAD_WRAP) {
        int64_t m = c % n;
        return m < 0 ? m + n : m;
    }
    if (mode == PLX_PAD_EDGE || n == 1) {
        return c < 0 ? 0 : n - 1;
    }
    int64_t period = 2 * (n - 1);
    int64_t m = c % period;
    m = m < 0 ? m + period : m;
    return m < n ? m : period - m;
}

bool plxk_run_pad(const plxk_kernel_args *args) {
    RUN_CHECK(pad, args);
    const plx_pad_desc *d = args->layer->desc;
    const plx_tensor_info *x = &args->layer->inputs[0], *y = &args->layer->outputs[0];
    size_t es = plx_dtype_size(x->dtype), n = plxk_element_count(y);
    uint8_t value[8];
    plx_dtype_bytes_from_double(d->value, x->dtype, value); /* as cast converts */
    int64_t xs[PLX_MAX_RANK], idx[PLX_MAX_RANK] = {0};
    plx_tensor_info_strides(x, xs);
    const uint8_t *src = args->inputs[0];
    uint8_t *dst = args->outputs[0];
    for (size_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (uint32_t k = 0; k < y->rank && off >= 0; k++) {
            int64_t c = pad_source(d->mode, idx[k] - d->pads_begin[k], x->dims[k]);
            off = c < 0 ? -1 : off + c * xs[k];
        }
        memcpy(dst + i * es, off < 0 ? value : src + (size_t)off * es, es);
        for (uint32_t k = y->rank; k-- > 0;) {
            if (++idx[k] < y->dims[k]) {
                break;
            }
            idx[k] = 0;
        }
    }
    return true;
}

/* ---- gather ------------------------------------------------------------- */

const char *plxk_check_gather(const plx_layer_view *layer, char *buf, size_t size) {
    const plx_tensor_info *x = &layer->inputs[0], *ind = &layer->inputs[1], *y = &layer->outputs[0];
    if (ind->dtype != PLX_DTYPE_INT32 && ind->dtype != PLX_DTYPE_INT64 &&
        ind->dtype != PLX_DTYPE_INT8 && ind->dtype != PLX_DTYPE_UINT8) {
        return plxk_refuse(buf, size, "gather: indices dtype %s is not supported (int32, int64, "
                           "int8 or uint8)", plx_dtype_name(ind->dtype));
    }
    if (y->dtype != x->dtype) {
        return plxk_refuse(buf, size, "gather: output is %s, data %s", plx_dtype_name(y->dtype),
                      plx_dtype_name(x->dtype));
    }
    uint32_t axis = 0;
    int32_t a = ((const plx_axis_desc *)layer->desc)->axis;
    if (!plx_axis_normalize(a, x->rank, false, &axis)) {
        return plxk_refuse(buf, size, "gather: axis %d is out of range for rank %u", (int)a, x->rank);
    }
    if (y->rank != x->rank - 1 + ind->rank) {
        return plxk_refuse(buf, size, "gather: output rank %u, expected %u", y->rank,
                      x->rank - 1 + ind->rank);
    }
    for (uint32_t i = 0; i < y->rank; i++) {
        int64_t want = i < axis ? x->dims[i]
                       : i < axis + ind->rank ? ind->dims[i - axis]
                                               : x->dims[i - ind->rank + 1];
        if (y->dims[i] != want) {
            return plxk_refuse(buf, size, "gather: output dim %u is %lld, expected %lld", i,
                          (long long)y->dims[i], (long long)want);
        }
    }
    return NULL;
}

static int64_t gather_index(plx_dtype t, const void *p, size_t j) {
    switch (t) {
    case PLX_DTYPE_INT32: return ((const int32_t *)p)[j];
    case PLX_DTYPE_INT8: return ((const int8_t *)p)[j];
    case PLX_DTYPE_UINT8: return ((const uint8_t *)p)[j];
    default: return ((const int64_t *)p)[j];
    }
}

/* A byte table's lookups in chunks of TABLE_CHUNK values, a task each on
 * the pool (plxk_table8, qmap.h). */
enum { TABLE_CHUNK = 64 * 1024 };

typedef struct table_job {
    const uint8_t *table, *x;
    uint8_t *y;
    size_t n;
    plxk_isa isa;
} table_job;

static void table_chunk(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const table_job *j = ctx;
    size_t at = task * TABLE_CHUNK, len = j->n - at < TABLE_CHUNK ? j->n - at : TABLE_CHUNK;
    (void)plxk_table8(j->isa, j->table, j->x + at, j->y + at, len); /* the variant was checked */
}

bool plxk_run_gather(const plxk_kernel_args *args) {
    RUN_CHECK(gather, args);
    const plx_layer_view *layer = args->layer;
    const plx_tensor_info *x = &layer->inputs[0], *ind = &layer->inputs[1];
    uint32_t axis = 0;
    plx_axis_normalize(((const plx_axis_desc *)layer->desc)->axis, x->rank, false, &axis);
    size_t outer = 0, row = 0, ni = plxk_element_count(ind);
    split_layout(x, axis, &outer, &row);
    int64_t dim = x->dims[axis];
    bool bytes = ind->dtype == PLX_DTYPE_INT8 || ind->dtype == PLX_DTYPE_UINT8;
    if (bytes && dim == 256 && outer == 1 && row == 1) {
        /* a table of 256 bytes looked up by 8-bit values: every index is
         * in range, and an int8's raw byte is its index from the end */
        table_job job = {args->inputs[0], args->inputs[1], args->outputs[0], ni,
                         PLXK_ISA_PORTABLE};
        if (!plxk_require_isa(args, "gather", &job.isa)) {
            return false;
        }
        plxk_pool_run(plxk_pool_of(args->compute), (ni + TABLE_CHUNK - 1) / TABLE_CHUNK,
                      (double)ni / 8.0, table_chunk, &job);
        return true;
    }
    /* validate every index before writing anything */
    for (size_t j = 0; j < ni; j++) {
        int64_t v = gather_index(ind->dtype, args->inputs[1], j);
        if (v < -dim || v >= dim) {
            return plxk_fail(args,
                                "layer '%s' (gather): index %lld (indices element %zu) is out of "
                                "range for axis %u of size %lld",
                                plxk_layer_name(layer), (long long)v, j, axis, (long long)dim);
        }
    }
    const uint8_t *src = args->inputs[0];
    uint8_t *dst = args->outputs[0];
    size_t x_block = row * (size_t)dim;
    for (size_t o = 0; o < outer; o++) {
        for (size_t j = 0; j < ni; j++) {
            int64_t v = gather_index(ind->dtype, args->inputs[1], j);
            v = v < 0 ? v + dim : v;
            memcpy(dst + (o * ni + j) * row, src + o * x_block + (size_t)v * row, row);
        }
    }
    return true;
}

/* ---- expand ------------------------------------------------------------- */

const char *plxk_check_expand(const plx_layer_view *layer, char *buf, size_t size) {
    const char *why = same_dtype(layer, "expand", buf, size);
    if (why) {
        return why;
    }
    const plx_shape_desc *d = layer->desc;
    const plx_tensor_info *x = &layer->inputs[0], *y = &layer->outputs[0];
    uint32_t rank = x->rank > d->rank ? x->rank : d->rank;
    if (d->rank > PLX_MAX_RANK || y->rank != rank) {
        return plxk_refuse(buf, size, "expand: output rank %u, expected %u", y->rank, rank);
    }
    /* the output is the broadcast of the input's shape and the descriptor's */
    int64_t dims[PLX_MAX_RANK];
    uint32_t i = 0;
    if (plx_broadcast_dims(x->dims, x->rank, d->dims, d->rank, dims, &rank, &i) != PLX_GEOM_OK) {
        /* neither dim is 1, so both are there */
        return plxk_refuse(buf, size, "expand: dim %u of the input (%lld) and the shape (%lld) "
                      "do not broadcast", i, (long long)x->dims[i + x->rank - rank],
                      (long long)d->dims[i + d->rank - rank]);
    }
    for (i = 0; i < rank; i++) {
        if (y->dims[i] != dims[i]) {
            return plxk_refuse(buf, size, "expand: output dim %u is %lld, expected %lld", i,
                          (long long)y->dims[i], (long long)dims[i]);
        }
    }
    return NULL;
}

bool plxk_run_expand(const plxk_kernel_args *args) {
    RUN_CHECK(expand, args);
    const plx_tensor_info *x = &args->layer->inputs[0], *y = &args->layer->outputs[0];
    int64_t xs[PLX_MAX_RANK], strides[PLX_MAX_RANK];
    plx_tensor_info_strides(x, xs);
    uint32_t lead = y->rank - x->rank;
    for (uint32_t i = 0; i < y->rank; i++) {
        strides[i] = i < lead || x->dims[i - lead] == 1 ? 0 : xs[i - lead];
    }
    strided_copy(args->outputs[0], args->inputs[0], plx_dtype_size(x->dtype), y->rank, y->dims,
                 strides, 0);
    return true;
}

/* ---- tile --------------------------------------------------------------- */

const char *plxk_check_tile(const plx_layer_view *layer, char *buf, size_t size) {
    const char *why = same_dtype(layer, "tile", buf, size);
    if (why) {
        return why;
    }
    const plx_tile_desc *d = layer->desc;
    const plx_tensor_info *x = &layer->inputs[0], *y = &layer->outputs[0];
    if (y->rank != x->rank) {
        return plxk_refuse(buf, size, "tile: output rank %u, expected %u", y->rank, x->rank);
    }
    for (uint32_t i = 0; i < x->rank; i++) {
        int64_t r = d->repeats[i];
        if (r < 0 || (r > 0 && x->dims[i] > INT64_MAX / r) || y->dims[i] != x->dims[i] * r) {
            return plxk_refuse(buf, size, "tile: output dim %u is %lld, X's %lld times repeats %lld",
                          i, (long long)y->dims[i], (long long)x->dims[i], (long long)r);
        }
    }
    return NULL;
}

/* The output walked densely; the input coordinate along each dim is the
 * output's modulo X's dim, kept incrementally beside the counter. */
bool plxk_run_tile(const plxk_kernel_args *args) {
    RUN_CHECK(tile, args);
    const plx_tensor_info *x = &args->layer->inputs[0], *y = &args->layer->outputs[0];
    size_t n = plxk_element_count(y), es = plx_dtype_size(x->dtype);
    if (n == 0) {
        return true; /* else every dim of X is >= 1 */
    }
    int64_t st[PLX_MAX_RANK], idx[PLX_MAX_RANK] = {0}, in_idx[PLX_MAX_RANK] = {0}, off = 0;
    plx_tensor_info_strides(x, st);
    const uint8_t *src = args->inputs[0];
    uint8_t *dst = args->outputs[0];
    for (size_t i = 0; i < n; i++) {
        memcpy(dst + i * es, src + (size_t)off * es, es);
        for (uint32_t d = y->rank; d-- > 0;) {
            if (++idx[d] < y->dims[d]) {
                if (++in_idx[d] == x->dims[d]) {
                    off -= st[d] * (x->dims[d] - 1);
                    in_idx[d] = 0;
                } else {
                    off += st[d];
                }
                break;
            }
            off -= st[d] * in_idx[d];
            idx[d] = in_idx[d] = 0;
        }
    }
    return true;
}

/* ---- depth_to_space / space_to_depth ------------------------------------ */

static const char *check_depth_space(const plx_layer_view *layer, bool to_space, char *buf,
                                     size_t size) {
    const char *what = to_space ? "depth_to_space" : "space_to_depth";
    const char *why = same_dtype(layer, what, buf, size);
    if (why) {
        return why;
    }
    const plx_depth_space_desc *d = layer->desc;
    const plx_tensor_info *x = &layer->inputs[0], *y = &layer->outputs[0];
    int64_t b = d->block_size;
    if (d->mode != PLX_DEPTH_SPACE_DCR && (d->mode != PLX_DEPTH_SPACE_CRD || !to_space)) {
        return plxk_refuse(buf, size, "%s: mode %d is not supported", what, (int)d->mode);
    }
    if (x->rank != 4 || y->rank != 4 || b < 1 || b > INT32_MAX) {
        return plxk_refuse(buf, size, "%s: needs rank 4 tensors and a block size >= 1", what);
    }
    int64_t want[4];
    if (to_space) {
        if (x->dims[1] % (b * b)) {
            return plxk_refuse(buf, size, "%s: %lld channels are not divisible by %lld", what,
                          (long long)x->dims[1], (long long)(b * b));
        }
        want[0] = x->dims[0], want[1] = x->dims[1] / (b * b);
        want[2] = x->dims[2] * b, want[3] = x->dims[3] * b;
    } else {
        if (x->dims[2] % b || x->dims[3] % b) {
            return plxk_refuse(buf, size, "%s: H %lld and W %lld must be divisible by %lld", what,
                          (long long)x->dims[2], (long long)x->dims[3], (long long)b);
        }
        want[0] = x->dims[0], want[1] = x->dims[1] * b * b;
        want[2] = x->dims[2] / b, want[3] = x->dims[3] / b;
    }
    for (uint32_t i = 0; i < 4; i++) {
        if (y->dims[i] != want[i]) {
            return plxk_refuse(buf, size, "%s: output dim %u is %lld, expected %lld", what, i,
                          (long long)y->dims[i], (long long)want[i]);
        }
    }
    return NULL;
}

const char *plxk_check_depth_to_space(const plx_layer_view *layer, char *buf, size_t size) {
    return check_depth_space(layer, true, buf, size);
}

bool plxk_run_depth_to_space(const plxk_kernel_args *args) {
    RUN_CHECK(depth_to_space, args);
    const plx_depth_space_desc *d = args->layer->desc;
    const plx_tensor_info *x = &args->layer->inputs[0];
    int64_t b = d->block_size, N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t c = C / (b * b), hw = H * W;
    /* The output viewed as [N, c, H, b1, W, b2] reads input channel
     * b1*b*c + b2*c + ch (DCR) or ch*b*b + b1*b + b2 (CRD). */
    int64_t dims[6] = {N, c, H, b, W, b};
    int64_t strides[6];
    strides[0] = C * hw;
    strides[2] = W;
    strides[4] = 1;
    if (d->mode == PLX_DEPTH_SPACE_DCR) {
        strides[1] = hw;
        strides[3] = b * c * hw;
        strides[5] = c * hw;
    } else {
        strides[1] = b * b * hw;
        strides[3] = b * hw;
        strides[5] = hw;
    }
    if (plxk_element_count(x)) {
        strided_copy(args->outputs[0], args->inputs[0], plx_dtype_size(x->dtype), 6, dims, strides, 0);
    }
    return true;
}

const char *plxk_check_space_to_depth(const plx_layer_view *layer, char *buf, size_t size) {
    return check_depth_space(layer, false, buf, size);
}

bool plxk_run_space_to_depth(const plxk_kernel_args *args) {
    RUN_CHECK(space_to_depth, args);
    const plx_depth_space_desc *d = args->layer->desc;
    const plx_tensor_info *x = &args->layer->inputs[0];
    int64_t b = d->block_size, N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    /* The output viewed as [N, b1, b2, C, H/b, W/b]: channel (b1*b + b2)*C + ch
     * reads input (n, ch, h*b + b1, w*b + b2). */
    int64_t dims[6] = {N, b, b, C, H / b, W / b};
    int64_t strides[6] = {C * H * W, W, 1, H * W, b * W, b};
    if (plxk_element_count(x)) {
        strided_copy(args->outputs[0], args->inputs[0], plx_dtype_size(x->dtype), 6, dims, strides, 0);
    }
    return true;
}

/* ---- reverse_sequence ---------------------------------------------------- */

/* X [B, T, ..] or [T, B, ..] moved as rows of `inner` elements: row (b, t)
 * of Y is row (b, len - 1 - t) of X for t < len = sequence_lens[b], else
 * row (b, t). */
const char *plxk_check_reverse_sequence(const plx_layer_view *layer, char *buf, size_t size) {
    const plx_reverse_sequence_desc *d = layer->desc;
    const plx_tensor_info *x = &layer->inputs[0], *len = &layer->inputs[1], *y = &layer->outputs[0];
    if (!((d->batch_axis == 0 && d->time_axis == 1) || (d->batch_axis == 1 && d->time_axis == 0)) ||
        x->rank < 2 || !plxk_same_dims(x, y) || y->dtype != x->dtype ||
        plx_dtype_size(x->dtype) == 0 ||
        (len->dtype != PLX_DTYPE_INT32 && len->dtype != PLX_DTYPE_INT64) || len->rank != 1 ||
        len->dims[0] != x->dims[d->batch_axis]) {
        return plxk_refuse(buf, size, "reverse_sequence: X [B, T, ..] or [T, B, ..], "
                           "sequence_lens [B] (int32 or int64) and Y of X's tensor expected");
    }
    return NULL;
}

bool plxk_run_reverse_sequence(const plxk_kernel_args *args) {
    char why[256];
    const plx_layer_view *l = args->layer;
    if (plxk_check_reverse_sequence(l, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_reverse_sequence_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *len = &l->inputs[1];
    const int64_t batch = x->dims[d->batch_axis], time = x->dims[d->time_axis];
    int64_t inner = 1;
    for (uint32_t i = 2; i < x->rank; i++) {
        inner *= x->dims[i];
    }
    const size_t row = (size_t)inner * plx_dtype_size(x->dtype);
    const unsigned char *src = args->inputs[0];
    unsigned char *dst = args->outputs[0];
    for (int64_t b = 0; b < batch; b++) {
        const int64_t n = len->dtype == PLX_DTYPE_INT32
                              ? (int64_t)((const int32_t *)args->inputs[1])[b]
                              : ((const int64_t *)args->inputs[1])[b];
        if (n < 0 || n > time) {
            return plxk_fail(args, "layer '%s' (reverse_sequence): sequence_lens[%" PRId64
                             "] = %" PRId64 " is outside [0, %" PRId64 "]",
                             plxk_layer_name(l), b, n, time);
        }
        for (int64_t t = 0; t < time; t++) {
            const int64_t from = t < n ? n - 1 - t : t;
            const int64_t yo = d->batch_axis == 0 ? b * time + t : t * batch + b;
            const int64_t xo = d->batch_axis == 0 ? b * time + from : from * batch + b;
            if (row) {
                memcpy(dst + (size_t)yo * row, src + (size_t)xo * row, row);
            }
        }
    }
    return true;
}

/* The kernel table's rows (kernels.h, PLXK_ROW). */
PLXK_ROW(CONSTANT, constant);
PLXK_ROW(MEM_COPY, mem_copy);
PLXK_ROW(RESHAPE, reshape);
/* flatten, squeeze and unsqueeze only change dims: reshape's byte copy */
PLXK_ROW(FLATTEN, reshape);
PLXK_ROW(SQUEEZE, reshape);
PLXK_ROW(UNSQUEEZE, reshape);
PLXK_ROW(TRANSPOSE, transpose);
PLXK_ROW(CONCAT, concat);
PLXK_ROW(SPLIT, split);
PLXK_ROW(SLICE, slice);
PLXK_ROW(PAD, pad);
PLXK_ROW(GATHER, gather);
PLXK_ROW(EXPAND, expand);
PLXK_ROW(TILE, tile);
PLXK_ROW(DEPTH_TO_SPACE, depth_to_space);
PLXK_ROW(SPACE_TO_DEPTH, space_to_depth);
PLXK_ROW(REVERSE_SEQUENCE, reverse_sequence);
