/* What the dense-math kernels (kernels_conv.c, kernels_matmul.c,
 * kernels_pool.c, kernels_norm.c, kernels_reduce.c, kernels_resize.c)
 * share: the dtype and output-shape checks, element counts, integer loads and
 * stores, window indexing, and the GEMM with its workspace and fused
 * activation. Internal to the library: the small helpers are static inline
 * here so that the loops calling them still inline them; the others live in
 * kernels_common.c. */
#ifndef PLXK_KERNELS_COMPUTE_H
#define PLXK_KERNELS_COMPUTE_H

#include "kernels.h"
#include "vecmath.h"

#include <stdint.h>

#include <plexus/window.h>

/* Window geometry values (sizes, pads, strides, dilations, window extents)
 * above this are refused so that index arithmetic in int64_t cannot
 * overflow whatever the descriptor holds. */
#define PLXK_ATTR_LIMIT ((int64_t)1 << 30)

/* Element count of an info of a validated view (its byte size fits). */
static inline int64_t plxk_numel(const plx_tensor_info *t) {
    int64_t n = 1;
    for (uint32_t i = 0; i < t->rank; i++) {
        n *= t->dims[i];
    }
    return n;
}

/* Product of dims[from..to-1]. */
static inline int64_t plxk_dim_product(const plx_tensor_info *t, uint32_t from, uint32_t to) {
    int64_t n = 1;
    for (uint32_t i = from; i < to; i++) {
        n *= t->dims[i];
    }
    return n;
}

static inline int64_t plxk_clamp_i64(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

/* ---- the 8-bit products (kernels_quant.c) ------------------------------ */

/* round_half_even(v) for |v| < 2^22 in float32 arithmetic the vectoriser
 * keeps (nearbyintf is a library call on the baseline ISA): adding and
 * removing 1.5 * 2^23 rounds in the default rounding mode, as nearbyintf
 * does. Requantizing loops clamp v to a few thousand first. */
static inline float plxk_round_even_small(float v) {
    const float magic = 12582912.0f;
    return (v + magic) - magic;
}


/* conv, matmul and gemm on quantized tensors: their rows (kernels_conv.c,
 * kernels_matmul.c) hand a layer whose first input is int8 or uint8 to
 * these. */
static inline bool plxk_is_quantized_product(const plx_layer_view *l) {
    return l->input_count > 0 &&
           (l->inputs[0].dtype == PLX_DTYPE_INT8 || l->inputs[0].dtype == PLX_DTYPE_UINT8);
}
const char *plxk_check_qconv(const plx_layer_view *layer, char *buf, size_t size);
bool plxk_run_qconv(const plxk_kernel_args *args);
size_t plxk_workspace_qconv(const plx_layer_view *layer, const plxk_compute *compute);
size_t plxk_prepare_qconv(const plx_layer_view *layer, const plxk_compute *compute, void *out,
                          size_t size);
const char *plxk_check_qmatmul(const plx_layer_view *layer, char *buf, size_t size);
bool plxk_run_qmatmul(const plxk_kernel_args *args);
size_t plxk_workspace_qmatmul(const plx_layer_view *layer, const plxk_compute *compute);
size_t plxk_prepare_qmatmul(const plx_layer_view *layer, const plxk_compute *compute, void *out,
                            size_t size);
const char *plxk_check_qgemm(const plx_layer_view *layer, char *buf, size_t size);
bool plxk_run_qgemm(const plxk_kernel_args *args);
size_t plxk_workspace_qgemm(const plx_layer_view *layer, const plxk_compute *compute);
size_t plxk_prepare_qgemm(const plx_layer_view *layer, const plxk_compute *compute, void *out,
                          size_t size);

/* ---- the GEMM, its workspace and the fused activation ---------------- */

#define PLXK_WS_ALIGN 64

static inline size_t plxk_round_ws(size_t n) {
    return (n + PLXK_WS_ALIGN - 1) / PLXK_WS_ALIGN * PLXK_WS_ALIGN;
}

static inline plxk_isa plxk_isa_of(const plxk_compute *c) {
    return c ? c->isa : plxk_isa_best();
}

static inline plxk_pool *plxk_pool_of(const plxk_compute *c) {
    return c ? c->pool : NULL;
}

/* Workspace of an M x N x K product, saturating. */
size_t plxk_gemm_ws(const plxk_compute *c, int64_t m, int64_t n, int64_t k);

/* The workspace past its first `used` bytes (64-byte aligned). */
void *plxk_ws_at(const plxk_kernel_args *a, size_t used, size_t *left);

/* The fused activation (relu, clip or leaky_relu; others run after the
 * product) as the GEMM's epilogue (and the depthwise kernel's, which takes
 * the same fields). */
void plxk_set_epilogue(const plx_activation_desc *act, plxk_gemm_args *g);

/* Runs g on the GEMM with a's fused activation; fails a when it cannot. */
bool plxk_product(const plxk_kernel_args *a, plxk_gemm_args *g, void *ws, size_t left,
                  const char *op);

/* The sum of (x[i] - shift), or of its squares, over n contiguous floats:
 * 16 float partial sums (vector registers) per block of 1024 values, each
 * block's total added to a double, which keeps long runs accurate. */
double plxk_sum_floats(const float *x, size_t n, float shift, bool square);

/* A function over a run of floats, y[0 .. n) from x[0 .. n), with its
 * parameters in ctx; y may be x. */
typedef void (*plxk_float_map)(const void *ctx, const float *x, float *y, size_t n);

/* fn over x[0 .. n) into y, in chunks of 16K elements spread over the
 * pool (NULL: the calling thread), costing about ns_per_element each. */
void plxk_map_pooled(plxk_pool *pool, plxk_float_map fn, const void *ctx, const float *x,
                     float *y, size_t n, double ns_per_element);

/* *isa = the layer's instruction-set variant (plxk_isa_of); fails args
 * naming `op` when that variant does not run on this CPU. */
bool plxk_require_isa(const plxk_kernel_args *args, const char *op, plxk_isa *isa);

/* y[i] = f(x[i]) for i < n (plxk_vmap in the layer's instruction-set
 * variant), through plxk_map_pooled; fails args naming `op` when that
 * variant does not run on this CPU. */
bool plxk_vmap_pooled(const plxk_kernel_args *args, plxk_vfunc f, const float *x, float *y,
                      size_t n, const char *op);

/* The run of a binary broadcast over an output of `rank` dims: the
 * trailing dims over which each of the two operands (element strides
 * st[k], 0 where it broadcasts) is either dense or broadcast throughout,
 * merged into one run of the returned length. *dense[k] says whether
 * operand k steps along the run; *outer is the number of leading dims left
 * to count out run by run. */
int64_t plxk_broadcast_run(uint32_t rank, const int64_t *dims, const int64_t st[][PLX_MAX_RANK],
                           bool dense[2], uint32_t *outer);

/* ---- layer checks ------------------------------------------------------ */

/* The views the kernels get keep the host's contract (docs/backend-abi.md,
 * "What the host guarantees about a layer view"): the op's arity and
 * descriptor, non-NULL slot arrays, and infos with a known dtype and a byte
 * size of at most INT64_MAX / 8. The checks here and in each kernel's
 * prepare function cover only what the kernel itself supports. */

/* Refuses any input or output whose dtype is not float32. */
const char *plxk_require_float32(const plx_layer_view *l, const char *op, char *buf,
                                 size_t size);

/* Refuses a layer whose output's shape differs from `dims`. */
const char *plxk_require_output_shape(const plx_layer_view *l, const char *op, uint32_t rank,
                                      const int64_t *dims, char *buf, size_t size);

/* ---- int32/int64 values ------------------------------------------------ */

static inline bool plxk_is_int_dtype(plx_dtype dt) {
    return dt == PLX_DTYPE_INT32 || dt == PLX_DTYPE_INT64;
}

/* Integer loads and stores for int32/int64 kernels. Sums wrap (two's
 * complement, through uint64_t) instead of overflowing, which would be UB. */
static inline int64_t plxk_load_int(const void *p, plx_dtype dt, int64_t i) {
    return dt == PLX_DTYPE_INT32 ? (int64_t)((const int32_t *)p)[i] : ((const int64_t *)p)[i];
}

static inline void plxk_store_int(void *p, plx_dtype dt, int64_t i, int64_t v) {
    if (dt == PLX_DTYPE_INT32) {
        ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v;
    } else {
        ((int64_t *)p)[i] = v;
    }
}

static inline int64_t plxk_wrap_add(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

static inline int64_t plxk_wrap_mul(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a * (uint64_t)b);
}

/* ---- spatial windows (conv, conv_transpose, pool) ---------------------- */

/* The geometry of a 1-D or 2-D windowed operator is the SDK's
 * (plx_window_geom, plexus/window.h): a 1-D operator uses slot 1 and
 * leaves slot 0 of size 1, so that one pair of loops serves both. Its
 * checks run within PLXK_ATTR_LIMIT; its reasons get cpu_ref's prefix. */
const char *plxk_window_refusal(const char *why, char *buf, size_t size);

/* A window layer's spatial sizes over its three slots (plexus/window.h;
 * slot 2, the depth, is 1 but in a 3-D layer): the kernel's taps, and the
 * elements of one input and one output channel plane. */
static inline int64_t plxk_geom_taps(const plx_window_geom *g) {
    return g->k[2] * g->k[0] * g->k[1];
}

static inline int64_t plxk_geom_in_plane(const plx_window_geom *g) {
    return g->in[2] * g->in[0] * g->in[1];
}

static inline int64_t plxk_geom_out_plane(const plx_window_geom *g) {
    return g->out[2] * g->out[0] * g->out[1];
}

/* X's and Y's element at image n, channel c (m), depth d, row h, column w. */
static inline int64_t plxk_geom_x_index3(const plx_window_geom *g, int64_t n, int64_t c,
                                         int64_t d, int64_t h, int64_t w) {
    return (((n * g->c + c) * g->in[2] + d) * g->in[0] + h) * g->in[1] + w;
}

static inline int64_t plxk_geom_y_index3(const plx_window_geom *g, int64_t n, int64_t m,
                                         int64_t d, int64_t h, int64_t w) {
    return (((n * g->m + m) * g->out[2] + d) * g->out[0] + h) * g->out[1] + w;
}

static inline int64_t plxk_geom_x_index(const plx_window_geom *g, int64_t n, int64_t c,
                                        int64_t h, int64_t w) {
    return plxk_geom_x_index3(g, n, c, 0, h, w);
}

static inline int64_t plxk_geom_y_index(const plx_window_geom *g, int64_t n, int64_t m,
                                        int64_t h, int64_t w) {
    return plxk_geom_y_index3(g, n, m, 0, h, w);
}

#endif
