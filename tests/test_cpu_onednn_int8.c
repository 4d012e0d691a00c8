/* cpu_onednn's int8 layers (docs/cpu_onednn.md, "int8 layers"): conv and
 * matmul on quantized tensors, conv_integer and matmul_integer.
 *
 * - Random layers (1x1, 3x3 with padding and stride, dilated, grouped,
 *   depthwise, 1-D; per-tensor and per-channel weights; u8 and s8
 *   activations; matmuls plain, batched, 1-D, with B an input and with a B
 *   zero point) run on cpu_onednn alone and on cpu_ref alone, on the same
 *   inputs, and must agree within the tolerance below. The integer
 *   products' int32 results must be equal, also past 2^24.
 * - The tolerance: at most one quantization step (|q - q_ref| <= 1), and
 *   at least 99% of the elements equal. oneDNN adds the output zero point
 *   before its one rounding, cpu_ref after it (plexus/ops.h rounds first):
 *   they differ where the scaled value is a tie and the zero point odd, or
 *   where the float addition rounds across a half. Random scales almost
 *   never make ties (the random cases here agree on every element);
 *   ties_are_one_step_apart makes every odd accumulator one, and shows
 *   the difference is then one step, never more.
 * - Refusals: what oneDNN 2.6 has no int8 primitive for is refused with the
 *   reason (cpu_onednn alone, no fallback), and runs on cpu_ref with the
 *   refusal recorded when cpu_ref comes after it; without VNNI (oneDNN
 *   limited to AVX2) every int8 layer is refused.
 * - Max pools on int8/uint8 give cpu_ref's bytes (dilated ones are
 *   refused); quantized add and sub agree with cpu_ref as the products
 *   do, and ties are one step apart at most; a quantized mul is refused.
 * - Two int8 convs in a row, or an int8 conv, a max pool and a quantized
 *   add, run as one graph with graph=off's bytes; int8 weights are packed
 *   once for every working memory.
 * - Layers with dtypes oneDNN has no type for keep their refusal reason.
 * - tests/data/quantized-digits (qdq, qop, dyn) with cpu_onednn,cpu_ref:
 *   the int8 layers on cpu_onednn, outputs within 1e-2 of ONNX Runtime's
 *   and the same top class.
 *
 * Built only with the backend (tests/meson.build). The comparisons need a
 * CPU with VNNI, without which cpu_onednn refuses int8 layers: they skip
 * with that reason elsewhere. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <plexus/network.h>

#include "test_util.h"

#ifdef PLEXUS_HAVE_ONNX
#include <limits.h>
#include <plexus/onnx.h>

#include "npy.h"
#endif

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- runtimes ----------------------------------------------------------- */

/* A runtime over cpu_onednn and cpu_ref, with one option for cpu_onednn
 * (NULL: none) and a log function (NULL: the tests' usual sink). */
static plx_runtime *runtime_with(const plx_backend_option *option, plx_log_fn log_fn) {
    plx_runtime_options o;
    tu_options(&o);
    const char *paths[] = {CPU_ONEDNN_DIR, CPU_REF_DIR};
    o.search_paths = paths;
    o.search_path_count = 2;
    o.backend_options = option;
    o.backend_option_count = option ? 1 : 0;
    if (log_fn) {
        o.log_fn = log_fn;
    }
    return tu_create(&o);
}

static plx_runtime *runtime(void) {
    return runtime_with(NULL, NULL);
}

static const plx_backend_info *onednn(plx_runtime *rt) {
    const plx_backend_info *bi = plx_runtime_find_backend(rt, "cpu_onednn");
    cr_assert(not(zero(ptr, (void *)bi)), "cpu_onednn was not loaded: %s", tu_dump(rt));
    cr_assert(bi->available, "cpu_onednn is unavailable: %s", bi->reason);
    return bi;
}

static const char *isa_of(plx_runtime *rt) {
    const plx_capability *c = plx_backend_info_capability(onednn(rt), "cpu_onednn.isa");
    cr_assert(not(zero(ptr, (void *)c)));
    return c->string_value;
}

/* Whether oneDNN's ISA has VNNI: avx2_vnni, avx512_core_vnni and the ISAs
 * above it (bf16, amx), as onednn_backend.c decides. */
static bool has_vnni(const char *isa) {
    return strstr(isa, "vnni") || strstr(isa, "bf16") || strstr(isa, "amx");
}

/* A runtime for the comparisons, or a skip where cpu_onednn refuses int8. */
static plx_runtime *runtime_with_vnni(void) {
    plx_runtime *rt = runtime();
    const char *isa = isa_of(rt);
    if (!has_vnni(isa)) {
        char why[128];
        snprintf(why, sizeof why, "this CPU (%s) has no VNNI: cpu_onednn refuses int8 layers",
                 isa);
        plx_runtime_destroy(&rt);
        cr_skip_test("%s", why);
    }
    return rt;
}

/* ---- random int8 products ----------------------------------------------- */

static uint32_t next(uint32_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* A value in [lo, hi]. */
static int32_t uniform(uint32_t *s, int32_t lo, int32_t hi) {
    return lo + (int32_t)(next(s) % (uint32_t)(hi - lo + 1));
}

static void fill_q8(void *p, plx_dtype dt, size_t n, uint32_t *s) {
    for (size_t i = 0; i < n; i++) {
        if (dt == PLX_DTYPE_INT8) {
            ((int8_t *)p)[i] = (int8_t)uniform(s, -128, 127);
        } else {
            ((uint8_t *)p)[i] = (uint8_t)uniform(s, 0, 255);
        }
    }
}

static plx_tensor_info info(plx_dtype dt, uint32_t rank, const int64_t *dims) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.rank = rank;
    for (uint32_t i = 0; i < rank; i++) {
        t.dims[i] = dims[i];
    }
    return t;
}

static size_t elements(const plx_tensor_info *t) {
    size_t n = 0;
    cr_assert(plx_tensor_info_element_count(t, &n));
    return n;
}

static size_t bytes_of(const plx_tensor_info *t) {
    size_t n = 0;
    cr_assert(plx_tensor_info_byte_size(t, &n));
    return n;
}

#define MAX_SLOTS 4

/* One int8 product: its operator and descriptor, its inputs (X or A, W or
 * B, conv's bias or the integer products' zero points), which of them are
 * constants, and the output's dtype and quantization. */
typedef struct product {
    const char *name;
    plx_op op;
    plx_conv_desc conv;
    plx_pool_desc pool;     /* op PLX_OP_POOL */
    plx_binary_desc binary; /* op PLX_OP_BINARY */
    uint32_t input_count;
    plx_tensor_info in[MAX_SLOTS];
    bool constant[MAX_SLOTS];
    void *data[MAX_SLOTS];
    plx_dtype y_dtype;
    plx_quant_params y_quant;
    /* per-axis parameters of input 1 (pointed to by in[1].quant) */
    float w_scales[64];
    int32_t w_zps[64];
} product;

static void product_free(product *p) {
    for (uint32_t i = 0; i < p->input_count; i++) {
        free(p->data[i]);
        p->data[i] = NULL;
    }
}

static void set_input(product *p, uint32_t slot, plx_tensor_info t, bool constant, uint32_t *s) {
    p->in[slot] = t;
    p->constant[slot] = constant;
    size_t n = bytes_of(&t);
    p->data[slot] = malloc(n ? n : 1);
    cr_assert(not(zero(ptr, p->data[slot])));
    if (t.dtype == PLX_DTYPE_INT32) {
        for (size_t i = 0; i < n / 4; i++) {
            ((int32_t *)p->data[slot])[i] = uniform(s, -3000, 3000);
        }
    } else {
        fill_q8(p->data[slot], t.dtype, n, s);
    }
    if (slot + 1 > p->input_count) {
        p->input_count = slot + 1;
    }
}

/* Quantization of the weights (input 1) with `channels` output channels
 * along `axis`: per channel when `per_channel`, else per tensor; zero
 * points `zp` (channel 1's `zp1` when per channel). */
static void quantize_weights(product *p, int64_t channels, int32_t axis, bool per_channel,
                             int32_t zp, int32_t zp1) {
    plx_quant_params *q = &p->in[1].quant;
    memset(q, 0, sizeof *q);
    cr_assert(le(i64, channels, (int64_t)COUNT(p->w_scales)));
    if (!per_channel) {
        q->kind = PLX_QUANT_PER_TENSOR;
        q->scale = 0.004f;
        q->zero_point = zp;
        return;
    }
    for (int64_t j = 0; j < channels; j++) {
        p->w_scales[j] = 0.002f + 0.0007f * (float)(j % 7);
        p->w_zps[j] = j == 1 ? zp1 : zp;
    }
    q->kind = PLX_QUANT_PER_AXIS;
    q->axis = axis; /* the arrays: p's (weights_info) */
}

/* X per tensor: scale 0.02, zero point zx; Y per tensor with a scale that
 * maps the typical result (k products of ~74 x ~73, the spread of uniform
 * 8-bit values) to about +-40 steps, zero point zy. */
static void quantize_io(product *p, int32_t zx, plx_dtype y_dtype, int32_t zy, int64_t k) {
    p->in[0].quant.kind = PLX_QUANT_PER_TENSOR;
    p->in[0].quant.scale = 0.02f;
    p->in[0].quant.zero_point = zx;
    p->y_dtype = y_dtype;
    memset(&p->y_quant, 0, sizeof p->y_quant);
    p->y_quant.kind = PLX_QUANT_PER_TENSOR;
    p->y_quant.scale = 0.02f * 0.004f * sqrtf((float)k) * 74.0f * 73.0f / 40.0f;
    p->y_quant.zero_point = zy;
}

typedef struct conv_shape {
    int64_t n, c, h, w, m, kh, kw, stride, pad, dilation, group;
    bool one_d;
} conv_shape;

/* A quantized conv (X `x_dtype` with zero point zx, W int8, bias when
 * `bias`, Y `y_dtype` with zero point zy). */
static product quantized_conv(const char *name, conv_shape sh, plx_dtype x_dtype, int32_t zx,
                              bool per_channel, bool bias, plx_dtype y_dtype, int32_t zy,
                              uint32_t seed) {
    product p;
    memset(&p, 0, sizeof p);
    p.name = name;
    p.op = PLX_OP_CONV;
    p.conv = (plx_conv_desc)PLX_CONV_DESC_INIT;
    uint32_t s = seed;
    int sp = sh.one_d ? 1 : 2;
    for (int i = 0; i < sp; i++) {
        p.conv.strides[i] = sh.stride;
        p.conv.dilations[i] = sh.dilation > 0 ? sh.dilation : 1;
        p.conv.pads_begin[i] = p.conv.pads_end[i] = sh.pad;
    }
    p.conv.group = sh.group;
    uint32_t rank = sh.one_d ? 3 : 4;
    int64_t xd[4] = {sh.n, sh.c, sh.h, sh.w}, wd[4] = {sh.m, sh.c / sh.group, sh.kh, sh.kw};
    if (sh.one_d) {
        xd[2] = sh.w;
        wd[2] = sh.kw;
    }
    set_input(&p, 0, info(x_dtype, rank, xd), false, &s);
    set_input(&p, 1, info(PLX_DTYPE_INT8, rank, wd), true, &s);
    for (size_t i = 0; i < elements(&p.in[1]); i++) {
        int8_t *w = p.data[1];
        if (w[i] == -128) {
            w[i] = -127; /* symmetric, as quantizers make int8 weights */
        }
    }
    if (bias) {
        set_input(&p, 2, info(PLX_DTYPE_INT32, 1, (int64_t[]){sh.m}), true, &s);
    }
    quantize_weights(&p, sh.m, 0, per_channel, 0, 0);
    quantize_io(&p, zx, y_dtype, zy, sh.c / sh.group * sh.kh * (sh.one_d ? 1 : sh.kw));
    return p;
}

/* A quantized matmul A [batch..., m, k] x B [k, n] (or [batch, k, n]). */
static product quantized_matmul(const char *name, uint32_t a_rank, const int64_t *a_dims,
                                uint32_t b_rank, const int64_t *b_dims, plx_dtype a_dtype,
                                int32_t za, bool b_constant, bool per_channel, int32_t zb,
                                int32_t zb1, plx_dtype y_dtype, int32_t zy, uint32_t seed) {
    product p;
    memset(&p, 0, sizeof p);
    p.name = name;
    p.op = PLX_OP_MATMUL;
    uint32_t s = seed;
    set_input(&p, 0, info(a_dtype, a_rank, a_dims), false, &s);
    set_input(&p, 1, info(PLX_DTYPE_INT8, b_rank, b_dims), b_constant, &s);
    quantize_weights(&p, b_dims[b_rank - 1], (int32_t)b_rank - 1, per_channel, zb, zb1);
    quantize_io(&p, za, y_dtype, zy, a_dims[a_rank - 1]);
    return p;
}

/* Input 1's info, its per-axis arrays p's (p may have been copied since
 * quantize_weights). */
static plx_tensor_info weights_info(const product *p) {
    plx_tensor_info t = p->in[1];
    if (t.quant.kind == PLX_QUANT_PER_AXIS) {
        t.quant.scales = p->w_scales;
        t.quant.zero_points = p->w_zps;
    }
    return t;
}

/* The network x.. -> product -> y: non-constant inputs are network inputs
 * with binding ids 0, 1, ... in slot order. */
static plx_network *product_network(const product *p, plx_tensor_info *y_info) {
    plx_network *n;
    OK(plx_network_create(&n));
    plx_layer_id ids[MAX_SLOTS], l, out;
    int32_t binding = 0;
    for (uint32_t i = 0; i < p->input_count; i++) {
        char name[16];
        snprintf(name, sizeof name, "in%u", i);
        plx_tensor_info t = i == 1 ? weights_info(p) : p->in[i];
        if (p->constant[i]) {
            OK(plx_network_add_constant(n, name, &t, p->data[i], PLX_CONSTANT_COPY, &ids[i]));
        } else {
            OK(plx_network_add_input(n, name, binding++, &t, &ids[i]));
        }
    }
    bool conv = p->op == PLX_OP_CONV || p->op == PLX_OP_CONV_INTEGER;
    const void *desc = conv                     ? (const void *)&p->conv
                       : p->op == PLX_OP_POOL   ? (const void *)&p->pool
                       : p->op == PLX_OP_BINARY ? (const void *)&p->binary
                                                : NULL;
    OK(plx_network_add_layer(n, "L", p->op, desc, p->input_count, 1, &l));
    for (uint32_t i = 0; i < p->input_count; i++) {
        OK(plx_network_connect(n, ids[i], 0, l, i));
    }
    if (p->op == PLX_OP_CONV || p->op == PLX_OP_MATMUL || p->op == PLX_OP_BINARY) {
        /* the output's dtype and quantization are the builder's
         * (plexus/ops.h), with the dims inference gives */
        plx_tensor_info y;
        memset(&y, 0, sizeof y);
        y.dtype = p->y_dtype;
        y.quant = p->y_quant;
        y.rank = p->in[0].rank;
        if (p->op == PLX_OP_BINARY) {
            memcpy(y.dims, p->in[0].dims, sizeof y.dims); /* B broadcasts to A's shape */
        } else if (conv) {
            y.dims[0] = p->in[0].dims[0];
            y.dims[1] = p->in[1].dims[0];
            for (uint32_t d = 2; d < p->in[0].rank; d++) {
                int64_t k = (p->in[1].dims[d] - 1) * p->conv.dilations[d - 2] + 1;
                y.dims[d] = (p->in[0].dims[d] + p->conv.pads_begin[d - 2] +
                             p->conv.pads_end[d - 2] - k) / p->conv.strides[d - 2] + 1;
            }
        } else {
            /* numpy: the batch dims broadcast, then A's rows (unless A is
             * 1-D) and B's columns (unless B is 1-D) */
            const plx_tensor_info *a = &p->in[0], *b = &p->in[1];
            uint32_t ba = a->rank > 2 ? a->rank - 2 : 0, bb = b->rank > 2 ? b->rank - 2 : 0;
            uint32_t r = ba > bb ? ba : bb;
            for (uint32_t d = 0; d < r; d++) {
                int64_t da = d + ba >= r ? a->dims[d + ba - r] : 1;
                int64_t db = d + bb >= r ? b->dims[d + bb - r] : 1;
                y.dims[d] = da > db ? da : db;
            }
            if (a->rank >= 2) {
                y.dims[r++] = a->dims[a->rank - 2];
            }
            if (b->rank >= 2) {
                y.dims[r++] = b->dims[b->rank - 1];
            }
            y.rank = r;
        }
        OK(plx_network_set_output_info(n, l, 0, &y));
    }
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, l, 0, out, 0));
    OK(plx_network_validate(n));
    OK(plx_network_output_info(n, l, 0, y_info));
    return n;
}

/* Optimises `n` for `backend` alone, no fallback; NULL and *why (the
 * status, the caller frees it) when the backend refuses a layer. */
static plx_optimized_network *optimize_alone(plx_runtime *rt, plx_network *n,
                                             const char *backend, plx_status *why) {
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *backends[] = {backend};
    oo.backends = backends;
    oo.backend_count = 1;
    oo.allow_fallback = false;
    plx_optimized_network *on = NULL;
    *why = plx_optimize(rt, n, &oo, &on);
    return *why ? NULL : on;
}

/* Runs the product on `backend` alone into y (the output's bytes). */
static void run_on(plx_runtime *rt, const product *p, plx_network *n, const char *backend,
                   void *y, size_t y_bytes) {
    plx_status why = NULL;
    plx_optimized_network *on = optimize_alone(rt, n, backend, &why);
    cr_assert(zero(ptr, why), "%s on %s: %s", p->name, backend, plx_status_get_message(why));
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
        if (strcmp(a->layer_name, "L") == 0) {
            cr_assert(eq(str, (char *)a->backend_id, (char *)backend));
        }
    }
    plx_loaded_network *ln = NULL;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    plx_tensor_binding in[MAX_SLOTS];
    size_t count = 0;
    for (uint32_t i = 0; i < p->input_count; i++) {
        if (!p->constant[i]) {
            in[count] = (plx_tensor_binding){(int32_t)count, p->data[i], bytes_of(&p->in[i]), 0};
            count++;
        }
    }
    memset(y, 0x5a, y_bytes);
    plx_tensor_binding out = {0, y, y_bytes, 0};
    OK(plx_loaded_network_execute(ln, in, count, &out, 1));
    plx_loaded_network_unload(&ln);
}

static int64_t element(const void *p, plx_dtype dt, size_t i) {
    switch (dt) {
    case PLX_DTYPE_INT8: return ((const int8_t *)p)[i];
    case PLX_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    default: return ((const int32_t *)p)[i];
    }
}

/* How cpu_onednn's result of a product compares with cpu_ref's. */
typedef struct comparison {
    size_t count, equal, saturated; /* elements; equal to cpu_ref's; cpu_ref's at a bound */
    int64_t lo, hi;                 /* the range of cpu_ref's */
} comparison;

/* Runs `p` on cpu_onednn and on cpu_ref and compares: int8/uint8 outputs
 * at most one step apart, int32 ones equal. Frees p's data. */
static comparison compare_with_cpu_ref(plx_runtime *rt, product *p) {
    plx_tensor_info yi;
    plx_network *n = product_network(p, &yi);
    size_t bytes = bytes_of(&yi);
    comparison c = {elements(&yi), 0, 0, INT64_MAX, INT64_MIN};
    void *got = malloc(bytes), *want = malloc(bytes);
    cr_assert(not(zero(ptr, got)));
    cr_assert(not(zero(ptr, want)));
    run_on(rt, p, n, "cpu_onednn", got, bytes);
    run_on(rt, p, n, "cpu_ref", want, bytes);
    int64_t min = yi.dtype == PLX_DTYPE_INT8 ? -128 : 0, max = yi.dtype == PLX_DTYPE_INT8 ? 127
                                                                                        : 255;
    for (size_t i = 0; i < c.count; i++) {
        int64_t g = element(got, yi.dtype, i), w = element(want, yi.dtype, i);
        c.equal += g == w;
        c.saturated += yi.dtype != PLX_DTYPE_INT32 && (w == min || w == max);
        c.lo = w < c.lo ? w : c.lo;
        c.hi = w > c.hi ? w : c.hi;
        if (yi.dtype == PLX_DTYPE_INT32) {
            cr_assert(eq(i64, g, w), "%s: element %zu: %lld, cpu_ref %lld", p->name, i,
                      (long long)g, (long long)w);
        } else {
            cr_assert(le(i64, llabs(g - w), 1), "%s: element %zu: %lld, cpu_ref %lld (more than "
                      "one step)", p->name, i, (long long)g, (long long)w);
        }
    }
    cr_log_info("%s: %zu of %zu elements equal to cpu_ref's (its range %lld .. %lld, %zu at a "
                "bound)", p->name, c.equal, c.count, (long long)c.lo, (long long)c.hi,
                c.saturated);
    free(got);
    free(want);
    plx_network_destroy(&n);
    product_free(p);
    return c;
}

/* compare_with_cpu_ref, and at least 99% of the elements equal; the
 * results spread over the range, few saturated, so that the rounding is
 * what is compared. */
static void expect_matches_cpu_ref(plx_runtime *rt, product *p) {
    const char *name = p->name;
    comparison c = compare_with_cpu_ref(rt, p);
    cr_assert(ge(sz, c.equal * 100, c.count * 99), "%s: only %zu of %zu elements equal", name,
              c.equal, c.count);
    cr_assert(gt(i64, c.hi - c.lo, 20), "%s: cpu_ref's results span only %lld .. %lld", name,
              (long long)c.lo, (long long)c.hi);
    cr_assert(le(sz, c.saturated * 100, c.count * 15), "%s: %zu of %zu results saturated",
              name, c.saturated, c.count);
}

static conv_shape shape(int64_t c, int64_t m, int64_t k, int64_t stride, int64_t pad,
                        int64_t group) {
    return (conv_shape){2, c, 11, 10, m, k, k, stride, pad, 1, group, false};
}

Test(cpu_onednn_int8, quantized_convs_match_cpu_ref) {
    plx_runtime *rt = runtime_with_vnni();
    const plx_dtype U8 = PLX_DTYPE_UINT8, S8 = PLX_DTYPE_INT8;
    conv_shape dilated = shape(8, 16, 3, 1, 2, 1);
    dilated.dilation = 2;
    conv_shape one_d = shape(6, 12, 3, 2, 1, 1);
    one_d.one_d = true;
    conv_shape odd = shape(3, 5, 3, 1, 1, 1);
    odd.n = 1;
    product cases[] = {
        quantized_conv("1x1 u8 per-tensor", shape(16, 24, 1, 1, 0, 1), U8, 128, false, true,
                       U8, 128, 1),
        quantized_conv("1x1 s8 per-channel", shape(16, 24, 1, 1, 0, 1), S8, -3, true, true, S8,
                       5, 2),
        quantized_conv("3x3 pad 1 u8 per-channel", shape(8, 16, 3, 1, 1, 1), U8, 117, true,
                       true, U8, 131, 3),
        quantized_conv("3x3 pad 1 stride 2 s8 per-tensor", shape(8, 16, 3, 2, 1, 1), S8, 7,
                       false, true, S8, -9, 4),
        quantized_conv("3x3 pad 1 stride 2 u8 no bias, s8 out", shape(8, 16, 3, 2, 1, 1), U8,
                       0, true, false, S8, 0, 5),
        quantized_conv("3x3 dilation 2 pad 2 u8", dilated, U8, 100, true, true, U8, 120, 6),
        quantized_conv("grouped 3x3 (4 groups) u8 per-channel", shape(16, 16, 3, 1, 1, 4), U8,
                       90, true, true, U8, 128, 7),
        quantized_conv("grouped 3x3 (2 groups) s8 per-tensor", shape(8, 12, 3, 1, 1, 2), S8,
                       -1, false, true, S8, 2, 8),
        quantized_conv("depthwise 3x3 u8 per-channel", shape(16, 16, 3, 1, 1, 16), U8, 128,
                       true, true, U8, 128, 9),
        quantized_conv("depthwise 3x3 stride 2 s8 per-tensor", shape(16, 16, 3, 2, 1, 16), S8,
                       4, false, true, S8, -4, 10),
        quantized_conv("1-D k3 stride 2 pad 1 u8", one_d, U8, 128, true, true, U8, 100, 11),
        quantized_conv("3x3 3 -> 5 channels u8", odd, U8, 140, true, true, U8, 128, 12),
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        expect_matches_cpu_ref(rt, &cases[i]);
    }
    plx_runtime_destroy(&rt);
}

Test(cpu_onednn_int8, quantized_matmuls_match_cpu_ref) {
    plx_runtime *rt = runtime_with_vnni();
    const plx_dtype U8 = PLX_DTYPE_UINT8, S8 = PLX_DTYPE_INT8;
    int64_t a2[] = {9, 40}, b2[] = {40, 24}, a3[] = {3, 7, 33}, b3[] = {33, 17},
            bb[] = {3, 33, 17}, a1[] = {40};
    product cases[] = {
        quantized_matmul("u8 x s8 per-tensor", 2, a2, 2, b2, U8, 128, true, false, 0, 0, U8,
                         128, 21),
        quantized_matmul("s8 x s8 per-column", 2, a2, 2, b2, S8, -2, true, true, 0, 0, S8, 3,
                         22),
        quantized_matmul("u8 batched A, constant B", 3, a3, 2, b3, U8, 120, true, true, 0, 0,
                         U8, 130, 23),
        quantized_matmul("u8 batched A and B, B an input", 3, a3, 3, bb, U8, 128, false, false,
                         0, 0, S8, 0, 24),
        quantized_matmul("u8 x s8, B zero point 3", 2, a2, 2, b2, U8, 128, true, false, 3, 3,
                         U8, 128, 25),
        quantized_matmul("s8 x s8, per-column B zero points all -2", 2, a2, 2, b2, S8, 1, true,
                         true, -2, -2, S8, -1, 26),
        quantized_matmul("1-D A", 1, a1, 2, b2, U8, 128, true, true, 0, 0, U8, 128, 27),
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        expect_matches_cpu_ref(rt, &cases[i]);
    }
    plx_runtime_destroy(&rt);
}

/* Refills input `slot` of `p` with values in [lo, hi]. */
static void refill(product *p, uint32_t slot, int32_t lo, int32_t hi, uint32_t seed) {
    uint32_t s = seed;
    for (size_t i = 0; i < elements(&p->in[slot]); i++) {
        int32_t v = uniform(&s, lo, hi);
        if (p->in[slot].dtype == PLX_DTYPE_INT8) {
            ((int8_t *)p->data[slot])[i] = (int8_t)v;
        } else {
            ((uint8_t *)p->data[slot])[i] = (uint8_t)v;
        }
    }
}

/* conv_integer / matmul_integer: X, W, then the zero points (constant, or
 * network inputs given at execution). */
static product integer_product(const char *name, plx_op op, conv_shape sh, plx_dtype x_dtype,
                               int x_zp, int w_zp, uint32_t seed) {
    product p;
    memset(&p, 0, sizeof p);
    p.name = name;
    p.op = op;
    p.conv = (plx_conv_desc)PLX_CONV_DESC_INIT;
    uint32_t s = seed;
    if (op == PLX_OP_CONV_INTEGER) {
        for (int i = 0; i < 2; i++) {
            p.conv.strides[i] = sh.stride;
            p.conv.pads_begin[i] = p.conv.pads_end[i] = sh.pad;
        }
        p.conv.group = sh.group;
        set_input(&p, 0, info(x_dtype, 4, (int64_t[]){sh.n, sh.c, sh.h, sh.w}), false, &s);
        set_input(&p, 1, info(PLX_DTYPE_INT8, 4, (int64_t[]){sh.m, sh.c / sh.group, sh.kh,
                                                             sh.kw}), true, &s);
    } else {
        set_input(&p, 0, info(x_dtype, 2, (int64_t[]){sh.h, sh.c}), false, &s);
        set_input(&p, 1, info(PLX_DTYPE_INT8, 2, (int64_t[]){sh.c, sh.m}), true, &s);
    }
    /* x_zp / w_zp: 0 none, 1 a network input, 2 a constant (w: 0 for a
     * conv, 5 for a matmul) */
    if (x_zp || w_zp) {
        set_input(&p, 2, info(x_dtype, 0, NULL), x_zp != 1, &s);
        if (x_zp == 0) {
            memset(p.data[2], 0, 1);
        }
    }
    if (w_zp) {
        set_input(&p, 3, info(PLX_DTYPE_INT8, 0, NULL), w_zp == 2, &s);
        if (w_zp == 2) {
            *(int8_t *)p.data[3] = op == PLX_OP_CONV_INTEGER ? 0 : 5;
        }
    }
    return p;
}

Test(cpu_onednn_int8, integer_products_match_cpu_ref_exactly) {
    plx_runtime *rt = runtime_with_vnni();
    const plx_dtype U8 = PLX_DTYPE_UINT8, S8 = PLX_DTYPE_INT8;
    conv_shape mm = {1, 48, 13, 1, 20, 1, 1, 1, 0, 1, 1, false}; /* A [13, 48], B [48, 20] */
    product cases[] = {
        integer_product("conv_integer u8, x zero point an input, w zero point 0",
                        PLX_OP_CONV_INTEGER, shape(8, 16, 3, 1, 1, 1), U8, 1, 2, 31),
        integer_product("conv_integer s8 stride 2, constant x zero point",
                        PLX_OP_CONV_INTEGER, shape(8, 16, 3, 2, 1, 1), S8, 2, 0, 32),
        integer_product("conv_integer depthwise, no zero points", PLX_OP_CONV_INTEGER,
                        shape(8, 8, 3, 1, 1, 8), U8, 0, 0, 33),
        integer_product("matmul_integer u8, both zero points inputs", PLX_OP_MATMUL_INTEGER,
                        mm, U8, 1, 1, 34),
        integer_product("matmul_integer s8, constant b zero point 5", PLX_OP_MATMUL_INTEGER,
                        mm, S8, 1, 2, 35),
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        expect_matches_cpu_ref(rt, &cases[i]);
    }
    /* sums past 2^24, where a float32 stage would round */
    conv_shape big = {1, 2048, 8, 1, 16, 1, 1, 1, 0, 1, 1, false};
    product p = integer_product("matmul_integer with sums past 2^24", PLX_OP_MATMUL_INTEGER, big,
                                U8, 0, 0, 36);
    refill(&p, 0, 200, 255, 37);
    refill(&p, 1, 100, 127, 38);
    comparison c = compare_with_cpu_ref(rt, &p);
    cr_assert(gt(i64, c.lo, 1 << 25));
    conv_shape bigc = shape(256, 8, 3, 1, 1, 1);
    p = integer_product("conv_integer with sums past 2^24", PLX_OP_CONV_INTEGER, bigc, U8, 0, 0,
                        39);
    refill(&p, 0, 240, 255, 40);
    refill(&p, 1, 120, 127, 41);
    c = compare_with_cpu_ref(rt, &p);
    cr_assert(gt(i64, c.hi, 1 << 25));
    plx_runtime_destroy(&rt);
}

/* Where the tolerance comes from: with sx * sw / sy = 0.5 exactly, every
 * odd accumulator is a tie. cpu_ref rounds it to even, then adds the odd
 * zero point 101 (plexus/ops.h); oneDNN adds 101 first and rounds the sum
 * to even: one step apart, at every odd accumulator (about half of them),
 * never more. */
Test(cpu_onednn_int8, ties_are_one_step_apart) {
    plx_runtime *rt = runtime_with_vnni();
    product p = quantized_conv("ties", shape(4, 8, 1, 1, 0, 1), PLX_DTYPE_UINT8, 128, false,
                               false, PLX_DTYPE_UINT8, 101, 71);
    p.in[0].quant.scale = 0.25f;
    p.in[1].quant.scale = 0.5f;
    p.y_quant.scale = 0.25f;
    refill(&p, 0, 118, 138, 72); /* |acc| <= 4 * 10 * 3: no saturation */
    refill(&p, 1, -3, 3, 73);
    comparison c = compare_with_cpu_ref(rt, &p);
    cr_assert(lt(sz, c.equal, c.count * 3 / 4), "%zu of %zu equal: the ties did not differ",
              c.equal, c.count);
    cr_assert(gt(sz, c.equal, c.count / 4), "%zu of %zu equal", c.equal, c.count);
    cr_assert(eq(sz, c.saturated, 0));
    plx_runtime_destroy(&rt);
}

static int packings;

static void count_packings(void *user_data, plx_log_level level, const char *source,
                           const char *message) {
    (void)user_data;
    (void)level;
    if (strcmp(source, "cpu_onednn") == 0 && strstr(message, "cpu_onednn: packed ")) {
        __atomic_fetch_add(&packings, 1, __ATOMIC_RELAXED);
    }
}

/* As the float weights: an int8 conv's constant weights are reordered
 * (with their compensations) once, at load, and every working memory
 * shares them; with option threads=1 the results are those of the
 * default threads. */
Test(cpu_onednn_int8, weights_packed_once_for_every_working_memory) {
    plx_runtime *probe = runtime_with_vnni();
    plx_runtime_destroy(&probe);
    plx_backend_option one = {"cpu_onednn", "threads", "1"};
    plx_runtime *rt = runtime_with(&one, count_packings);
    product p = quantized_conv("packed", shape(8, 16, 3, 1, 1, 1), PLX_DTYPE_UINT8, 128, true,
                               true, PLX_DTYPE_UINT8, 128, 81);
    plx_tensor_info yi;
    plx_network *n = product_network(&p, &yi);
    size_t bytes = bytes_of(&yi);
    uint8_t *want = malloc(bytes), *y = malloc(bytes);
    run_on(rt, &p, n, "cpu_ref", want, bytes);
    plx_status why = NULL;
    plx_optimized_network *on = optimize_alone(rt, n, "cpu_onednn", &why);
    cr_assert(zero(ptr, why), "%s", plx_status_get_message(why));
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.async_execution = true;
    packings = 0;
    plx_loaded_network *ln = NULL;
    OK(plx_runtime_load_network(rt, &on, &lo, &ln));
    int at_load = packings;
    cr_assert(eq(int, at_load, 1), "%d packings at load", at_load);
    plx_working_memory *wm = NULL;
    OK(plx_loaded_network_create_working_memory(ln, &wm));
    plx_tensor_binding in = {0, p.data[0], bytes_of(&p.in[0]), 0};
    plx_tensor_binding out = {0, y, bytes, 0};
    plx_execute_args a;
    plx_execute_args_init(&a);
    a.inputs = &in;
    a.input_count = 1;
    a.outputs = &out;
    a.output_count = 1;
    for (int k = 0; k < 2; k++) {
        memset(y, 0x5a, bytes);
        OK(plx_loaded_network_execute_with(ln, k == 0 ? wm : NULL, &a));
        for (size_t i = 0; i < bytes; i++) {
            cr_assert(le(int, abs((int)y[i] - (int)want[i]), 1), "working memory %d, element "
                      "%zu: %d, cpu_ref %d", k, i, (int)y[i], (int)want[i]);
        }
    }
    cr_assert(eq(int, packings, at_load), "a working memory packed the weights again");
    plx_working_memory_destroy(&wm);
    plx_loaded_network_unload(&ln);
    free(want);
    free(y);
    plx_network_destroy(&n);
    product_free(&p);
    plx_runtime_destroy(&rt);
}

/* ---- refusals ------------------------------------------------------------ */

/* `p` alone on cpu_onednn is refused with `needle` in the reason; with
 * cpu_ref after it, it runs there, the refusal recorded (when
 * `cpu_ref_runs_it`). Frees p's data. */
static void expect_refused_by(plx_runtime *rt, product *p, const char *needle,
                              bool cpu_ref_runs_it) {
    plx_tensor_info yi;
    plx_network *n = product_network(p, &yi);
    plx_status why = NULL;
    plx_optimized_network *on = optimize_alone(rt, n, "cpu_onednn", &why);
    cr_assert(zero(ptr, on), "%s: cpu_onednn accepted it", p->name);
    cr_assert(eq(int, plx_status_get_code(why), PLX_UNSUPPORTED), "%s: %s", p->name,
              plx_status_get_message(why));
    cr_assert(not(zero(ptr, strstr(plx_status_get_message(why), needle))),
              "%s: '%s' lacks '%s'", p->name, plx_status_get_message(why), needle);
    plx_status_free(why);
    if (!cpu_ref_runs_it) {
        plx_network_destroy(&n);
        product_free(p);
        return;
    }

    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *both[] = {"cpu_onednn", "cpu_ref"};
    oo.backends = both;
    oo.backend_count = 2;
    oo.allow_fallback = true;
    OK(plx_optimize(rt, n, &oo, &on));
    bool found = false;
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
        if (strcmp(a->layer_name, "L") != 0) {
            continue;
        }
        found = true;
        cr_assert(eq(str, (char *)a->backend_id, "cpu_ref"), "%s", p->name);
        cr_assert(eq(sz, a->refusal_count, 1));
        cr_assert(eq(str, (char *)a->refusals[0].backend_id, "cpu_onednn"));
        cr_assert(not(zero(ptr, strstr(a->refusals[0].reason, needle))), "%s: '%s'", p->name,
                  a->refusals[0].reason);
    }
    cr_assert(found);
    plx_optimized_network_destroy(&on);
    plx_network_destroy(&n);
    product_free(p);
}

static void expect_refused(plx_runtime *rt, product *p, const char *needle) {
    expect_refused_by(rt, p, needle, true);
}

Test(cpu_onednn_int8, what_onednn_has_no_int8_primitive_for_is_refused) {
    plx_runtime *rt = runtime_with_vnni();
    const plx_dtype U8 = PLX_DTYPE_UINT8, S8 = PLX_DTYPE_INT8;
    conv_shape c = shape(8, 16, 3, 1, 1, 1);

    product p = quantized_conv("uint8 weights", c, U8, 128, false, true, U8, 128, 41);
    p.in[1].dtype = PLX_DTYPE_UINT8;
    expect_refused(rt, &p, "oneDNN 2.6's int8 convolution takes int8 weights only, not uint8");

    p = quantized_conv("weights zero point 1", c, U8, 128, false, true, U8, 128, 42);
    p.in[1].quant.zero_point = 1;
    expect_refused(rt, &p, "oneDNN 2.6's int8 convolution has no weights zero point: W's zero "
                           "point is 1 (output channel 0)");

    p = quantized_conv("channel 1's weights zero point -2", c, S8, 0, true, true, S8, 0, 43);
    p.w_zps[1] = -2;
    expect_refused(rt, &p, "W's zero point is -2 (output channel 1)");

    p = quantized_conv("weights an input", c, U8, 128, false, true, U8, 128, 44);
    p.constant[1] = false;
    expect_refused(rt, &p, "runs conv with constant weights only");

    int64_t a2[] = {9, 40}, b2[] = {40, 24};
    p = quantized_matmul("per-column B zero points", 2, a2, 2, b2, U8, 128, true, true, 0, 4, U8,
                         128, 46);
    expect_refused(rt, &p, "oneDNN 2.6's int8 matmul takes one zero point for B, not one per "
                           "column (columns 0 and 1: 0 and 4)");

    p = quantized_matmul("uint8 B", 2, a2, 2, b2, U8, 128, true, false, 0, 0, U8, 128, 47);
    p.in[1].dtype = PLX_DTYPE_UINT8;
    expect_refused(rt, &p, "oneDNN 2.6's int8 matmul takes int8 weights only, not uint8");

    conv_shape mm = {1, 48, 13, 1, 20, 1, 1, 1, 0, 1, 1, false};
    p = integer_product("per-row a zero point", PLX_OP_MATMUL_INTEGER, mm, U8, 1, 0, 48);
    free(p.data[2]);
    p.in[2] = info(U8, 1, (int64_t[]){13});
    p.data[2] = calloc(1, 13);
    /* (cpu_ref takes one zero point for A too) */
    expect_refused_by(rt, &p, "oneDNN 2.6's int8 matmul takes one zero point for A, not one "
                              "per row", false);

    p = integer_product("conv_integer w zero point 3", PLX_OP_CONV_INTEGER, c, U8, 1, 2, 49);
    *(int8_t *)p.data[3] = 3;
    expect_refused(rt, &p, "w_zero_point is 3 (output channel 0), not 0");

    p = integer_product("conv_integer w zero point an input", PLX_OP_CONV_INTEGER, c, U8, 1, 1,
                        50);
    expect_refused(rt, &p, "runs conv_integer with a constant w_zero_point of zeros "
                           "only");
    plx_runtime_destroy(&rt);
}

/* x (`dt`) -> one layer `op` (`desc`; binary: x twice) -> y, on cpu_onednn
 * alone: refused with `needle` in the reason. */
static void expect_dtype_refused(plx_runtime *rt, plx_dtype dt, plx_op op, const void *desc,
                                 const char *needle) {
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info xi = info(dt, 2, (int64_t[]){3, 4});
    plx_layer_id x, l, out;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    uint32_t inputs = op == PLX_OP_BINARY ? 2 : 1;
    OK(plx_network_add_layer(n, "L", op, desc, inputs, 1, &l));
    for (uint32_t i = 0; i < inputs; i++) {
        OK(plx_network_connect(n, x, 0, l, i));
    }
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, l, 0, out, 0));
    plx_status why = NULL;
    plx_optimized_network *on = optimize_alone(rt, n, "cpu_onednn", &why);
    cr_assert(zero(ptr, on), "cpu_onednn accepted %s", needle);
    cr_assert(eq(int, plx_status_get_code(why), PLX_UNSUPPORTED), "%s",
              plx_status_get_message(why));
    cr_assert(not(zero(ptr, strstr(plx_status_get_message(why), needle))), "'%s' lacks '%s'",
              plx_status_get_message(why), needle);
    plx_status_free(why);
    plx_network_destroy(&n);
}

/* Tensors of the dtypes oneDNN has no type for (int64, bool) are still
 * refused by the dtype check with its reason, before any memory
 * descriptor of theirs is made (descriptors now follow the tensor's
 * dtype). */
Test(cpu_onednn_int8, other_dtypes_keep_their_reasons) {
    plx_runtime *rt = runtime();
    onednn(rt);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    expect_dtype_refused(rt, PLX_DTYPE_INT64, PLX_OP_BINARY, &add,
                         "cpu_onednn: runs binary in float32 only, not int64 (input 0)");
    plx_binary_desc less = PLX_BINARY_DESC_INIT(PLX_BINARY_LESS);
    expect_dtype_refused(rt, PLX_DTYPE_FLOAT32, PLX_OP_BINARY, &less,
                         "cpu_onednn: runs binary in float32 only, not bool (output 0)");
    plx_unary_desc nan = PLX_UNARY_DESC_INIT(PLX_UNARY_IS_NAN);
    expect_dtype_refused(rt, PLX_DTYPE_FLOAT32, PLX_OP_UNARY, &nan,
                         "cpu_onednn: runs unary in float32 only, not bool (output 0)");
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    expect_dtype_refused(rt, PLX_DTYPE_INT64, PLX_OP_ACTIVATION, &relu,
                         "cpu_onednn: runs activation in float32 only, not int64 (input 0)");
    plx_runtime_destroy(&rt);
}

/* On a CPU without VNNI (oneDNN told so by DNNL_MAX_CPU_ISA, which it
 * reads when the backend first asks for the ISA: Criterion runs each test
 * in its own process) every int8 layer is refused with the reason. */
Test(cpu_onednn_int8, refused_without_vnni) {
    setenv("DNNL_MAX_CPU_ISA", "AVX2", 1);
    plx_runtime *rt = runtime();
    char isa[32], why[160];
    snprintf(isa, sizeof isa, "%s", isa_of(rt));
    if (has_vnni(isa)) {
        snprintf(why, sizeof why, "oneDNN did not take DNNL_MAX_CPU_ISA=AVX2 (ISA %s)", isa);
        plx_runtime_destroy(&rt);
        unsetenv("DNNL_MAX_CPU_ISA");
        cr_skip_test("%s", why);
    }
    product p = quantized_conv("conv without VNNI", shape(8, 16, 3, 1, 1, 1), PLX_DTYPE_UINT8,
                               128, true, true, PLX_DTYPE_UINT8, 128, 51);
    snprintf(why, sizeof why, "runs int8 layers only on CPUs with VNNI, not on this "
             "one (%s)", isa);
    expect_refused(rt, &p, why);
    int64_t a2[] = {9, 40}, b2[] = {40, 24};
    p = quantized_matmul("matmul without VNNI", 2, a2, 2, b2, PLX_DTYPE_INT8, 0, true, false, 0,
                         0, PLX_DTYPE_INT8, 0, 52);
    expect_refused(rt, &p, why);
    plx_runtime_destroy(&rt);
    unsetenv("DNNL_MAX_CPU_ISA");
}

/* A max pool on x [dims] (`dt`, quantized per tensor when `quantized`;
 * its parameters pass through), kernel k, stride st, padding pb/pe on
 * every spatial dimension. */
static product max_pool(const char *name, plx_dtype dt, bool quantized, uint32_t rank,
                        const int64_t *dims, int64_t k, int64_t st, int64_t pb, int64_t pe,
                        int64_t dilation, bool ceil_mode, uint32_t seed) {
    product p;
    memset(&p, 0, sizeof p);
    p.name = name;
    p.op = PLX_OP_POOL;
    p.pool = (plx_pool_desc)PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    for (uint32_t i = 0; i + 2 < rank; i++) {
        p.pool.kernel[i] = k;
        p.pool.strides[i] = st;
        p.pool.dilations[i] = dilation;
        p.pool.pads_begin[i] = pb;
        p.pool.pads_end[i] = pe;
    }
    p.pool.ceil_mode = ceil_mode;
    uint32_t s = seed;
    set_input(&p, 0, info(dt, rank, dims), false, &s);
    if (quantized) {
        p.in[0].quant.kind = PLX_QUANT_PER_TENSOR;
        p.in[0].quant.scale = 0.05f;
        p.in[0].quant.zero_point = dt == PLX_DTYPE_UINT8 ? 131 : -3;
    }
    return p;
}

/* Max pools on 8-bit tensors, quantized or not (plexus/ops.h: X's
 * parameters pass through), run on cpu_onednn on any ISA (a plain source
 * is read in channels-last, where oneDNN's int8 pooling is not its
 * reference one) and give cpu_ref's bytes: 1 to 3 spatial dimensions,
 * padding, ceil mode, dilation. */
Test(cpu_onednn_int8, eight_bit_max_pools_give_cpu_refs_bytes) {
    plx_runtime *rt = runtime();
    onednn(rt);
    const plx_dtype U8 = PLX_DTYPE_UINT8, S8 = PLX_DTYPE_INT8;
    product cases[] = {
        max_pool("stem 3x3/2 pad 1", U8, true, 4, (const int64_t[]){2, 16, 23, 20}, 3, 2, 1, 1,
                 1, false, 81),
        max_pool("int8 2x2/2 ceil", S8, false, 4, (const int64_t[]){1, 9, 7, 9}, 2, 2, 0, 0, 1,
                 true, 82),
        max_pool("3x3 pad 2/1", S8, true, 4, (const int64_t[]){1, 5, 12, 11}, 3, 1, 2, 1, 1,
                 false, 83),
        max_pool("1-D 3/2 pad 1", U8, false, 3, (const int64_t[]){2, 8, 13}, 3, 2, 1, 1, 1,
                 false, 84),
        max_pool("3-D 2/2 ceil", U8, true, 5, (const int64_t[]){1, 4, 5, 6, 7}, 2, 2, 0, 0, 1,
                 true, 85),
    };
    for (size_t c = 0; c < COUNT(cases); c++) {
        product *p = &cases[c];
        plx_tensor_info yi;
        plx_network *n = product_network(p, &yi);
        cr_assert(eq(int, (int)yi.quant.kind, (int)p->in[0].quant.kind), "%s", p->name);
        size_t bytes = bytes_of(&yi);
        uint8_t *got = malloc(bytes), *want = malloc(bytes);
        cr_assert(not(zero(ptr, got)));
        cr_assert(not(zero(ptr, want)));
        run_on(rt, p, n, "cpu_onednn", got, bytes);
        run_on(rt, p, n, "cpu_ref", want, bytes);
        cr_assert(eq(int, memcmp(got, want, bytes), 0), "%s: cpu_onednn's bytes differ", p->name);
        free(got);
        free(want);
        plx_network_destroy(&n);
        product_free(p);
    }
    /* oneDNN's int8 pooling has no dilations but in its reference
     * implementation, which cpu_onednn leaves to cpu_ref */
    product d = max_pool("dilated", S8, true, 4, (const int64_t[]){1, 5, 12, 11}, 3, 1, 2, 1, 2,
                         false, 86);
    expect_refused(rt, &d, "oneDNN offers only its reference implementation");
    plx_runtime_destroy(&rt);
}

/* A quantized binary layer A `func` B: A [2, 16, 9, 7], B A's shape or
 * [1, 16, 1, 1] (`broadcast`), of one dtype, each with its scale and zero
 * point; Y of that dtype (scale about 0.03, zero point 117 or -11); scales as
 * quantizers make them, not round decimals, whose sums fall on ties. */
static product quantized_binary(const char *name, plx_binary_func func, plx_dtype a_dtype,
                                float sa, int32_t za, plx_dtype b_dtype, float sb, int32_t zb,
                                bool broadcast, uint32_t seed) {
    product p;
    memset(&p, 0, sizeof p);
    p.name = name;
    p.op = PLX_OP_BINARY;
    p.binary = (plx_binary_desc)PLX_BINARY_DESC_INIT(func);
    uint32_t s = seed;
    const int64_t a[] = {2, 16, 9, 7}, b[] = {1, 16, 1, 1};
    set_input(&p, 0, info(a_dtype, 4, a), false, &s);
    set_input(&p, 1, info(b_dtype, 4, broadcast ? b : a), false, &s);
    const float scales[] = {sa, sb};
    const int32_t zps[] = {za, zb};
    for (int i = 0; i < 2; i++) {
        p.in[i].quant.kind = PLX_QUANT_PER_TENSOR;
        p.in[i].quant.scale = scales[i];
        p.in[i].quant.zero_point = zps[i];
    }
    p.y_dtype = a_dtype;
    p.y_quant.kind = PLX_QUANT_PER_TENSOR;
    p.y_quant.scale = 0.0307413f;
    p.y_quant.zero_point = a_dtype == PLX_DTYPE_UINT8 ? 117 : -11;
    return p;
}

/* Quantized add and sub (a ResNet's residual adds) run on cpu_onednn:
 * oneDNN's binary with source scales and the zero points folded into a
 * linear post-op, within one step of cpu_ref (the rounding of
 * plexus/ops.h, docs/cpu_onednn.md) and mostly equal; int8 and uint8, B
 * broadcast per channel. A quantized mul is refused with the reason. */
Test(cpu_onednn_int8, quantized_adds_and_subs_match_cpu_ref) {
    plx_runtime *rt = runtime();
    onednn(rt);
    const plx_dtype U8 = PLX_DTYPE_UINT8, S8 = PLX_DTYPE_INT8;
    product cases[] = {
        quantized_binary("add u8", PLX_BINARY_ADD, U8, 0.0213117f, 131, U8, 0.0171943f, 120, false, 91),
        quantized_binary("add s8", PLX_BINARY_ADD, S8, 0.0130827f, -5, S8, 0.0291366f, 7, false,
                         92),
        quantized_binary("sub u8", PLX_BINARY_SUB, U8, 0.0112291f, 100, U8, 0.0093381f, 140, false, 93),
        quantized_binary("add per channel", PLX_BINARY_ADD, U8, 0.0204411f, 128, U8, 0.0198179f, 131, true,
                         94),
        quantized_binary("sub per channel", PLX_BINARY_SUB, S8, 0.0251732f, 0, S8, 0.0103649f, 60, true,
                         95),
    };
    for (size_t c = 0; c < COUNT(cases); c++) {
        expect_matches_cpu_ref(rt, &cases[c]);
    }
    /* Round decimal scales put many sums on a tie (0.021 * 75 + 0.017 *
     * 30 = 0.03 * 69.5): oneDNN's float result falls on either side of
     * it, one step from cpu_ref's at most (about 1.5% of these differ) */
    product ties = quantized_binary("ties", PLX_BINARY_ADD, U8, 0.021f, 131, U8, 0.017f, 120,
                                    false, 91);
    ties.y_quant.scale = 0.03f;
    compare_with_cpu_ref(rt, &ties);
    product mul = quantized_binary("mul", PLX_BINARY_MUL, U8, 0.02f, 128, U8, 0.02f, 128, false,
                                   96);
    expect_refused(rt, &mul, "runs binary mul on quantized tensors only for add and "
                             "sub");
    plx_runtime_destroy(&rt);
}

/* An int8 conv, the max pool after it (a ResNet stem) and a quantized
 * add of the pool's output to itself run as one graph on cpu_onednn, the
 * pool and the add reading channels-last tensors, with the bytes of
 * graph=off. */
Test(cpu_onednn_int8, conv_max_pool_and_add_run_as_one_graph) {
    plx_runtime *rt = runtime_with_vnni();
    plx_backend_option off = {"cpu_onednn", "graph", "off"};
    plx_runtime *rt_off = runtime_with(&off, NULL);
    conv_shape sh = {1, 3, 20, 18, 16, 3, 3, 2, 1, 1, 1, false};
    product a = quantized_conv("stem", sh, PLX_DTYPE_UINT8, 128, true, true, PLX_DTYPE_UINT8,
                               128, 63);
    plx_pool_desc pd = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    pd.kernel[0] = pd.kernel[1] = 3;
    pd.strides[0] = pd.strides[1] = 2;
    pd.pads_begin[0] = pd.pads_begin[1] = pd.pads_end[0] = pd.pads_end[1] = 1;
    plx_network *n;
    OK(plx_network_create(&n));
    plx_layer_id x, w, b, conv, pool, add, out;
    plx_binary_desc bd = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_tensor_info wi = weights_info(&a), y = a.in[0];
    OK(plx_network_add_input(n, "x", 0, &a.in[0], &x));
    OK(plx_network_add_constant(n, "w", &wi, a.data[1], PLX_CONSTANT_COPY, &w));
    OK(plx_network_add_constant(n, "b", &a.in[2], a.data[2], PLX_CONSTANT_COPY, &b));
    OK(plx_network_add_layer(n, "conv", PLX_OP_CONV, &a.conv, 3, 1, &conv));
    OK(plx_network_add_layer(n, "pool", PLX_OP_POOL, &pd, 1, 1, &pool));
    OK(plx_network_add_layer(n, "add", PLX_OP_BINARY, &bd, 2, 1, &add));
    y.dims[1] = sh.m;
    y.dims[2] = 10;
    y.dims[3] = 9;
    y.quant = a.y_quant;
    OK(plx_network_set_output_info(n, conv, 0, &y));
    y.dims[2] = 5;
    y.dims[3] = 5;
    y.quant.scale *= 1.7f;
    y.quant.zero_point = 90;
    OK(plx_network_set_output_info(n, add, 0, &y));
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, x, 0, conv, 0));
    OK(plx_network_connect(n, w, 0, conv, 1));
    OK(plx_network_connect(n, b, 0, conv, 2));
    OK(plx_network_connect(n, conv, 0, pool, 0));
    OK(plx_network_connect(n, pool, 0, add, 0));
    OK(plx_network_connect(n, pool, 0, add, 1));
    OK(plx_network_connect(n, add, 0, out, 0));
    OK(plx_network_validate(n));
    size_t bytes = bytes_of(&y);
    uint8_t *got[2] = {malloc(bytes), malloc(bytes)};
    for (int k = 0; k < 2; k++) {
        plx_status why = NULL;
        plx_optimized_network *on = optimize_alone(k ? rt_off : rt, n, "cpu_onednn", &why);
        cr_assert(zero(ptr, why), "%s", plx_status_get_message(why));
        size_t graphs = 0, alone = 0, layers = plx_optimized_network_layer_count(on);
        for (size_t i = 0; i < layers; i++) {
            plx_op op = plx_optimized_network_layer(on, i)->op;
            graphs += op == PLX_OP_PRECOMPILED;
            alone += op == PLX_OP_CONV || op == PLX_OP_POOL || op == PLX_OP_BINARY;
        }
        cr_assert(eq(sz, graphs, k ? 0 : 1), "%s", plx_optimized_network_summary(on));
        cr_assert(eq(sz, alone, k ? 3 : 0), "%s", plx_optimized_network_summary(on));
        plx_loaded_network *ln = NULL;
        OK(plx_runtime_load_network(k ? rt_off : rt, &on, NULL, &ln));
        plx_tensor_binding in = {0, a.data[0], bytes_of(&a.in[0]), 0};
        plx_tensor_binding o = {0, got[k], bytes, 0};
        OK(plx_loaded_network_execute(ln, &in, 1, &o, 1));
        plx_loaded_network_unload(&ln);
    }
    cr_assert(eq(int, memcmp(got[0], got[1], bytes), 0), "the graph's bytes differ from "
              "graph=off's");
    free(got[0]);
    free(got[1]);
    plx_network_destroy(&n);
    product_free(&a);
    plx_runtime_destroy(&rt);
    plx_runtime_destroy(&rt_off);
}

/* Two int8 convs in a row on cpu_onednn run as one graph (the activation
 * between them stays in oneDNN's channels-last layout), with the bytes of
 * graph=off (two layers, each reordering from and to the plain layout),
 * and the result is mostly cpu_ref's. */
Test(cpu_onednn_int8, int8_convs_in_a_row_run_as_one_graph) {
    plx_runtime *rt = runtime_with_vnni();
    plx_backend_option off = {"cpu_onednn", "graph", "off"};
    plx_runtime *rt_off = runtime_with(&off, NULL);
    conv_shape sh = shape(8, 8, 3, 1, 1, 1);
    product a = quantized_conv("a", sh, PLX_DTYPE_UINT8, 128, true, true, PLX_DTYPE_UINT8, 128,
                               61);
    product b = quantized_conv("b", sh, PLX_DTYPE_UINT8, 128, false, true, PLX_DTYPE_UINT8, 128,
                               62);
    plx_network *n;
    OK(plx_network_create(&n));
    plx_layer_id x, wa, ba, wb, bb, ca, cb, out;
    OK(plx_network_add_input(n, "x", 0, &a.in[0], &x));
    plx_tensor_info wai = weights_info(&a), wbi = weights_info(&b);
    OK(plx_network_add_constant(n, "wa", &wai, a.data[1], PLX_CONSTANT_COPY, &wa));
    OK(plx_network_add_constant(n, "ba", &a.in[2], a.data[2], PLX_CONSTANT_COPY, &ba));
    OK(plx_network_add_constant(n, "wb", &wbi, b.data[1], PLX_CONSTANT_COPY, &wb));
    OK(plx_network_add_constant(n, "bb", &b.in[2], b.data[2], PLX_CONSTANT_COPY, &bb));
    OK(plx_network_add_layer(n, "conv_a", PLX_OP_CONV, &a.conv, 3, 1, &ca));
    OK(plx_network_add_layer(n, "conv_b", PLX_OP_CONV, &b.conv, 3, 1, &cb));
    plx_tensor_info y = a.in[0];
    y.quant = a.y_quant;
    OK(plx_network_set_output_info(n, ca, 0, &y));
    y.quant = b.y_quant;
    OK(plx_network_set_output_info(n, cb, 0, &y));
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, x, 0, ca, 0));
    OK(plx_network_connect(n, wa, 0, ca, 1));
    OK(plx_network_connect(n, ba, 0, ca, 2));
    /* b reads a's output, requantized with a's output parameters */
    OK(plx_network_connect(n, ca, 0, cb, 0));
    OK(plx_network_connect(n, wb, 0, cb, 1));
    OK(plx_network_connect(n, bb, 0, cb, 2));
    OK(plx_network_connect(n, cb, 0, out, 0));
    OK(plx_network_validate(n));
    plx_status why = NULL;
    plx_optimized_network *on = optimize_alone(rt, n, "cpu_onednn", &why);
    cr_assert(zero(ptr, why), "%s", plx_status_get_message(why));
    size_t convs = 0, graphs = 0;
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        const plx_layer_assignment *l = plx_optimized_network_layer(on, i);
        convs += l->op == PLX_OP_CONV;
        graphs += l->op == PLX_OP_PRECOMPILED;
    }
    cr_assert(eq(sz, convs, 0), "%s", plx_optimized_network_summary(on));
    cr_assert(eq(sz, graphs, 1), "%s", plx_optimized_network_summary(on));
    plx_optimized_network_destroy(&on);
    size_t bytes = bytes_of(&y);
    uint8_t *got = malloc(bytes), *want = malloc(bytes), *alone = malloc(bytes);
    const char *backends[] = {"cpu_onednn", "cpu_ref", "cpu_onednn"};
    for (int k = 0; k < 3; k++) {
        on = optimize_alone(k == 2 ? rt_off : rt, n, backends[k], &why);
        cr_assert(zero(ptr, why));
        if (k == 2) {
            size_t layers = 0;
            for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
                layers += plx_optimized_network_layer(on, i)->op == PLX_OP_CONV;
            }
            cr_assert(eq(sz, layers, 2), "graph=off: %s", plx_optimized_network_summary(on));
        }
        plx_loaded_network *ln = NULL;
        OK(plx_runtime_load_network(k == 2 ? rt_off : rt, &on, NULL, &ln));
        plx_tensor_binding in = {0, a.data[0], bytes_of(&a.in[0]), 0};
        plx_tensor_binding o = {0, k == 0 ? got : k == 1 ? want : alone, bytes, 0};
        OK(plx_loaded_network_execute(ln, &in, 1, &o, 1));
        plx_loaded_network_unload(&ln);
    }
    cr_assert(eq(int, memcmp(got, alone, bytes), 0), "the graph's bytes differ from graph=off's");
    /* a's one-step differences can move b's result by more than a step:
     * b's input differs. Most elements must still be equal. */
    size_t equal = 0;
    for (size_t i = 0; i < bytes; i++) {
        equal += got[i] == want[i];
    }
    cr_assert(ge(sz, equal * 100, bytes * 95), "%zu of %zu equal", equal, bytes);
    free(got);
    free(want);
    free(alone);
    plx_network_destroy(&n);
    product_free(&a);
    product_free(&b);
    plx_runtime_destroy(&rt);
    plx_runtime_destroy(&rt_off);
}

/* ---- the quantized digits ------------------------------------------------ */

#ifdef PLEXUS_HAVE_ONNX

/* An int8 layer a digits file must run on cpu_onednn. */
typedef struct int8_layer {
    const char *name;
    plx_op op;
} int8_layer;

static void run_digits_on(plx_runtime *rt, const char *format, const int8_layer *int8,
                          size_t count, bool noted);

/* Runs `format`.onnx of tests/data/quantized-digits with cpu_onednn,
 * cpu_ref on the ten example images, with cpu_onednn's graphs and with
 * graph=off; `int8` (`count`) are the layers that must be on cpu_onednn
 * (checked with graph=off: graphs absorb them), and `noted` says whether
 * the optimiser must have noted each as a folded int8 layer. */
static void run_digits(const char *format, const int8_layer *int8, size_t count, bool noted) {
    plx_runtime *probe = runtime_with_vnni(); /* skips without VNNI */
    plx_runtime_destroy(&probe);
    plx_backend_option off = {"cpu_onednn", "graph", "off"};
    for (int graph = 0; graph < 2; graph++) {
        run_digits_on(graph ? runtime() : runtime_with(&off, NULL), format, int8,
                      graph ? 0 : count, noted);
    }
}

static void run_digits_on(plx_runtime *rt, const char *format, const int8_layer *int8,
                          size_t count, bool noted) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s.onnx", QUANTIZED_DIGITS_DIR, format);
    plx_onnx_model *model = NULL;
    OK(plx_onnx_import_file(path, NULL, &model));
    plx_network *net = plx_onnx_model_network(model);
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *backends[] = {"cpu_onednn", "cpu_ref"};
    oo.backends = backends;
    oo.backend_count = 2;
    oo.allow_fallback = true;
    plx_optimized_network *on = NULL;
    OK(plx_optimize(rt, net, &oo, &on));
    for (size_t k = 0; k < count; k++) {
        bool found = false;
        for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
            const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
            if (strcmp(a->layer_name, int8[k].name) == 0) {
                found = true;
                cr_assert(eq(int, a->op, int8[k].op), "%s: '%s' is %s", format, int8[k].name,
                          plx_op_name(a->op));
                cr_assert(eq(str, (char *)a->backend_id, "cpu_onednn"), "%s: '%s': %s",
                          format, int8[k].name, plx_optimized_network_summary(on));
            }
        }
        cr_assert(found, "%s: no layer '%s': %s", format, int8[k].name,
                  plx_optimized_network_summary(on));
        if (noted) {
            char note[256];
            snprintf(note, sizeof note, "quantized conv '%s': dequantize, conv and quantize",
                     int8[k].name);
            cr_assert(tu_noted(on, note), "%s: no note \"%s\": %s", format, note,
                      plx_optimized_network_summary(on));
        }
    }
    plx_loaded_network *ln = NULL;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    cr_assert(eq(sz, plx_onnx_model_input_count(model), 1));
    cr_assert(eq(sz, plx_onnx_model_output_count(model), 1));
    const plx_onnx_io *in_io = plx_onnx_model_input(model, 0);
    const plx_onnx_io *out_io = plx_onnx_model_output(model, 0);
    double worst = 0.0;
    for (int label = 0; label <= 9; label++) {
        char in_path[PATH_MAX], want_path[PATH_MAX], err[256];
        snprintf(in_path, sizeof in_path, "%s/inputs/digit-%d.npy", DIGITS_DIR, label);
        snprintf(want_path, sizeof want_path, "%s/expected-%s/digit-%d.npy",
                 QUANTIZED_DIGITS_DIR, format, label);
        npy_array x, want;
        cr_assert(npy_read(in_path, &x, err, sizeof err), "%s", err);
        cr_assert(npy_read(want_path, &want, err, sizeof err), "%s", err);
        float y[10];
        cr_assert(eq(sz, want.bytes, sizeof y));
        plx_tensor_binding in = {in_io->binding_id, x.data, x.bytes, 0};
        plx_tensor_binding out = {out_io->binding_id, y, sizeof y, 0};
        OK(plx_loaded_network_execute(ln, &in, 1, &out, 1));
        const float *w = want.data;
        int top = 0, want_top = 0;
        for (int i = 0; i < 10; i++) {
            double d = fabs((double)y[i] - w[i]);
            worst = d > worst ? d : worst;
            cr_assert(le(dbl, d, 1e-2), "%s, digit %d, class %d: %.9g, ONNX Runtime %.9g",
                      format, label, i, (double)y[i], (double)w[i]);
            top = y[i] > y[top] ? i : top;
            want_top = w[i] > w[want_top] ? i : want_top;
        }
        cr_assert(eq(int, top, want_top), "%s, digit %d: top class %d, ONNX Runtime's %d",
                  format, label, top, want_top);
        npy_free(&x);
        npy_free(&want);
    }
    cr_log_info("%s on cpu_onednn,cpu_ref: largest difference from ONNX Runtime %.3g", format,
                worst);
    plx_loaded_network_unload(&ln);
    plx_onnx_model_destroy(&model);
    plx_runtime_destroy(&rt);
}

Test(cpu_onednn_int8, quantized_digits_qdq) {
    const int8_layer l[] = {{"conv1", PLX_OP_CONV}, {"conv2", PLX_OP_CONV}};
    run_digits("qdq", l, COUNT(l), true);
}

Test(cpu_onednn_int8, quantized_digits_qop) {
    const int8_layer l[] = {{"conv1_quant/3", PLX_OP_CONV}, {"conv2_quant/3", PLX_OP_CONV}};
    run_digits("qop", l, COUNT(l), true);
}

Test(cpu_onednn_int8, quantized_digits_dyn) {
    const int8_layer l[] = {{"conv1_quant", PLX_OP_CONV_INTEGER},
                            {"conv2_quant", PLX_OP_CONV_INTEGER},
                            {"fc_MatMul_quant", PLX_OP_MATMUL_INTEGER}};
    run_digits("dyn", l, COUNT(l), false);
}

#else

Test(cpu_onednn_int8, quantized_digits) {
    cr_skip_test("built without the ONNX importer");
}

#endif

/* A 3-D convolution on quantized tensors (uint8 X with a zero point, int8
 * W per output channel, an int32 bias), which cpu_ref's int8 kernel does
 * not run: cpu_onednn's output against the definition computed here, the
 * exact integer sums rescaled in double and rounded half to even; at most
 * one step apart (the scale's float rounding at a tie), most exact. */
Test(cpu_onednn_int8, quantized_conv_in_3d) {
    plx_runtime *rt = runtime_with_vnni();
    onednn(rt);
    product p;
    memset(&p, 0, sizeof p);
    p.name = "conv3d";
    p.op = PLX_OP_CONV;
    p.conv = (plx_conv_desc)PLX_CONV_DESC_INIT;
    p.conv.strides[1] = 2;
    p.conv.pads_begin[0] = p.conv.pads_end[0] = 1;
    p.conv.pads_begin[2] = 1;
    uint32_t s = 77;
    enum { N = 1, C = 3, D = 4, H = 6, W = 5, M = 4, K = 3 };
    set_input(&p, 0, info(PLX_DTYPE_UINT8, 5, (const int64_t[]){N, C, D, H, W}), false, &s);
    set_input(&p, 1, info(PLX_DTYPE_INT8, 5, (const int64_t[]){M, C, K, K, K}), true, &s);
    set_input(&p, 2, info(PLX_DTYPE_INT32, 1, (const int64_t[]){M}), true, &s);
    quantize_weights(&p, M, 0, true, 0, 0);
    quantize_io(&p, 120, PLX_DTYPE_UINT8, 128, C * K * K * K);
    plx_tensor_info yi;
    plx_network *n = product_network(&p, &yi);
    enum { OD = 4, OH = 2, OW = 4 }; /* D: (4 + 2 - 3) + 1; H: (6 - 3) / 2 + 1; W: 5 + 1 - 3 + 1 */
    cr_assert(eq(i64, yi.dims[2] * yi.dims[3] * yi.dims[4], (int64_t)OD * OH * OW));
    uint8_t y[N * M * OD * OH * OW];
    run_on(rt, &p, n, "cpu_onednn", y, sizeof y);
    const uint8_t *x = p.data[0];
    const int8_t *w = p.data[1];
    const int32_t *b = p.data[2];
    int exact = 0;
    for (int m = 0; m < M; m++) {
        for (int o = 0; o < OD * OH * OW; o++) {
            int od = o / (OH * OW), oh = o / OW % OH, ow = o % OW;
            int64_t acc = b[m];
            for (int c = 0; c < C; c++) {
                for (int t = 0; t < K * K * K; t++) {
                    int id = od - 1 + t / 9, ih = oh * 2 + t / 3 % 3, iw = ow - 1 + t % 3;
                    if (id < 0 || id >= D || ih >= H || iw < 0 || iw >= W) {
                        continue;
                    }
                    acc += ((int64_t)x[((c * D + id) * H + ih) * W + iw] - 120) *
                           w[(m * C + c) * K * K * K + t];
                }
            }
            double r = nearbyint((double)acc * 0.02 * (double)p.w_scales[m] /
                                 (double)p.y_quant.scale) + 128.0;
            r = r < 0.0 ? 0.0 : r > 255.0 ? 255.0 : r;
            int got = y[m * OD * OH * OW + o];
            cr_assert(le(int, abs(got - (int)r), 1), "channel %d output %d: got %d, want %d", m, o,
                      got, (int)r);
            exact += got == (int)r;
        }
    }
    cr_assert(ge(int, exact, M * OD * OH * OW * 9 / 10), "only %d exact", exact);
    plx_network_destroy(&n);
    product_free(&p);
    plx_runtime_destroy(&rt);
}
