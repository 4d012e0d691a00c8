/* `plexus conformance`: the checks that build networks (conformance.h).
 *
 * Every case is one layer (an operator, its descriptor, its inputs: network
 * inputs or constant layers, as a model would have them), built through the
 * public API (plexus/network.h) for each element type the host's
 * validation allows among float32, float16, int8 and int32, optimised for
 * the backend alone (no fallback, no graph rewrites, so that the backend
 * sees exactly that layer), loaded, run on inputs generated from a fixed
 * seed, and compared with the reference kernels (plx_fold_layer,
 * plexus/layer_eval.h, the kernels constant folding uses). A refused layer
 * is "n/a" with the backend's reason. The accepted ones are then run again
 * as the backend's capabilities allow: in several working memories on
 * threads (async_execution), in host-planned memory
 * (externally_managed_memory), zero copy through malloc and dma-buf (memfd)
 * imports, queued, with pre-imported inputs and outputs
 * (preimport_io_tensors), and in planned memory of the backend's, released
 * and allocated again (allocates_planned_memory); with profiling on, the
 * backend's own trace events checked against the host's; and, followed by
 * a relu, where the backend's optimize_subgraph replaces layers.
 * docs/conformance.md lists the cases and the tolerances. */
#include "conformance.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <plexus/layer_eval.h>
#include <plexus/network.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_INPUTS 5
/* Executions per thread, and threads, of the concurrency check. */
#define ASYNC_THREADS 3
#define ASYNC_ITERATIONS 40
/* Executions after the first whose host allocations are counted. */
#define STEADY_EXECUTIONS 3
/* Accepted cases rerun by the capability checks. */
#define CAPABILITY_CASES 8
/* Caller buffers are aligned to this, above any import alignment a backend
 * may report (R-10: at most 4096), so that zero copy is never staged. */
#define CALLER_ALIGNMENT 4096

/* ------------------------------------------------------------------------ */
/* The cases                                                                  */
/* ------------------------------------------------------------------------ */

/* How an input's values are drawn. */
typedef enum fill_kind {
    FILL_ANY = 0, /* floats in [-2, 2]; int8 in [-9, 9]; int32 in [-99, 99] */
    FILL_NONZERO, /* as FILL_ANY, at least 0.5 (1 for integers) away from 0 */
    FILL_POSITIVE,    /* (0.5, 2] */
    FILL_SCALE,       /* a quantization scale in [0.02, 0.05] */
    FILL_ZERO_POINT,  /* an integer in [-3, 3] */
} fill_kind;

typedef struct tspec {
    bool case_dtype; /* the case's dtype; else `dtype` */
    plx_dtype dtype;
    uint32_t rank;
    int64_t dims[4];
    bool constant;
    fill_kind fill;
} tspec;

typedef union conf_desc {
    plx_activation_desc activation;
    plx_binary_desc binary;
    plx_gemm_desc gemm;
    plx_conv_desc conv;
    plx_pool_desc pool;
    plx_softmax_desc softmax;
    plx_axis_desc axis;
    plx_reshape_desc reshape;
    plx_transpose_desc transpose;
    plx_reduce_desc reduce;
    plx_batch_norm_desc batch_norm;
    plx_quantize_desc quantize;
} conf_desc;

typedef struct op_case {
    char name[64];
    plx_op op;
    conf_desc desc;
    bool has_desc;
    uint32_t input_count;
    tspec in[MAX_INPUTS];
} op_case;

/* Element types tried for each case (those the host's validation refuses
 * for the operator are left out). */
static const plx_dtype case_dtypes[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT16, PLX_DTYPE_INT8,
                                        PLX_DTYPE_INT32};

#define T(rank_, ...) ((tspec){true, PLX_DTYPE_FLOAT32, (rank_), {__VA_ARGS__}, false, FILL_ANY})
#define TC(rank_, ...) ((tspec){true, PLX_DTYPE_FLOAT32, (rank_), {__VA_ARGS__}, true, FILL_ANY})
#define TCF(fill_, rank_, ...) \
    ((tspec){true, PLX_DTYPE_FLOAT32, (rank_), {__VA_ARGS__}, true, (fill_)})

static op_case *add_case(op_case *cases, size_t *n, plx_op op, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static op_case *add_case(op_case *cases, size_t *n, plx_op op, const char *fmt, ...) {
    op_case *c = &cases[(*n)++];
    memset(c, 0, sizeof *c);
    c->op = op;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->name, sizeof c->name, fmt, ap);
    va_end(ap);
    return c;
}

/* Fills `cases` (room for 64); returns the count. */
static size_t make_cases(op_case *cases) {
    size_t n = 0;
    op_case *c;
    static const struct {
        plx_activation_func f;
        const char *name;
    } acts[] = {{PLX_ACT_RELU, "relu"},
                {PLX_ACT_SIGMOID, "sigmoid"},
                {PLX_ACT_TANH, "tanh"}};
    for (size_t i = 0; i < COUNT(acts); i++) {
        c = add_case(cases, &n, PLX_OP_ACTIVATION, "%s [2,3,4,5]", acts[i].name);
        c->desc.activation = (plx_activation_desc)PLX_ACTIVATION_DESC_INIT(acts[i].f);
        c->has_desc = true;
        c->input_count = 1;
        c->in[0] = T(4, 2, 3, 4, 5);
        c = add_case(cases, &n, PLX_OP_ACTIVATION, "%s [17]", acts[i].name);
        c->desc.activation = (plx_activation_desc)PLX_ACTIVATION_DESC_INIT(acts[i].f);
        c->has_desc = true;
        c->input_count = 1;
        c->in[0] = T(1, 17);
    }
    static const struct {
        plx_binary_func f;
        const char *name;
    } bins[] = {{PLX_BINARY_ADD, "add"},
                {PLX_BINARY_SUB, "sub"},
                {PLX_BINARY_MUL, "mul"},
                {PLX_BINARY_DIV, "div"}};
    for (size_t i = 0; i < COUNT(bins); i++) {
        fill_kind second = bins[i].f == PLX_BINARY_DIV ? FILL_NONZERO : FILL_ANY;
        c = add_case(cases, &n, PLX_OP_BINARY, "%s [2,3,4] [2,3,4]", bins[i].name);
        c->desc.binary = (plx_binary_desc)PLX_BINARY_DESC_INIT(bins[i].f);
        c->has_desc = true;
        c->input_count = 2;
        c->in[0] = T(3, 2, 3, 4);
        c->in[1] = T(3, 2, 3, 4);
        c->in[1].fill = second;
        c = add_case(cases, &n, PLX_OP_BINARY, "%s [2,3,4] [3,1] broadcast", bins[i].name);
        c->desc.binary = (plx_binary_desc)PLX_BINARY_DESC_INIT(bins[i].f);
        c->has_desc = true;
        c->input_count = 2;
        c->in[0] = T(3, 2, 3, 4);
        c->in[1] = T(2, 3, 1);
        c->in[1].fill = second;
        c = add_case(cases, &n, PLX_OP_BINARY, "%s [2,1,4] [1,3,1] broadcast", bins[i].name);
        c->desc.binary = (plx_binary_desc)PLX_BINARY_DESC_INIT(bins[i].f);
        c->has_desc = true;
        c->input_count = 2;
        c->in[0] = T(3, 2, 1, 4);
        c->in[1] = T(3, 1, 3, 1);
        c->in[1].fill = second;
    }
    c = add_case(cases, &n, PLX_OP_MATMUL, "matmul [3,4] [4,5]");
    c->input_count = 2;
    c->in[0] = T(2, 3, 4);
    c->in[1] = T(2, 4, 5);
    c = add_case(cases, &n, PLX_OP_MATMUL, "matmul [2,3,4] const [4,5]");
    c->input_count = 2;
    c->in[0] = T(3, 2, 3, 4);
    c->in[1] = TC(2, 4, 5);
    c = add_case(cases, &n, PLX_OP_GEMM, "gemm [3,4] const [4,5] [5]");
    c->desc.gemm = (plx_gemm_desc)PLX_GEMM_DESC_INIT;
    c->has_desc = true;
    c->input_count = 3;
    c->in[0] = T(2, 3, 4);
    c->in[1] = TC(2, 4, 5);
    c->in[2] = TC(1, 5);
    c = add_case(cases, &n, PLX_OP_GEMM, "gemm trans_b [3,4] const [5,4] [5]");
    c->desc.gemm = (plx_gemm_desc)PLX_GEMM_DESC_INIT;
    c->desc.gemm.trans_b = true;
    c->has_desc = true;
    c->input_count = 3;
    c->in[0] = T(2, 3, 4);
    c->in[1] = TC(2, 5, 4);
    c->in[2] = TC(1, 5);
    static const struct {
        int64_t stride, pad, group, cin, cout;
    } convs[] = {{1, 1, 1, 3, 4}, {2, 0, 1, 3, 4}, {1, 1, 2, 4, 4}, {2, 1, 4, 4, 4}};
    for (size_t i = 0; i < COUNT(convs); i++) {
        c = add_case(cases, &n, PLX_OP_CONV, "conv 3x3 stride %" PRId64 " pad %" PRId64
                     " group %" PRId64, convs[i].stride, convs[i].pad, convs[i].group);
        c->desc.conv = (plx_conv_desc)PLX_CONV_DESC_INIT;
        for (int d = 0; d < 2; d++) {
            c->desc.conv.strides[d] = convs[i].stride;
            c->desc.conv.pads_begin[d] = c->desc.conv.pads_end[d] = convs[i].pad;
        }
        c->desc.conv.group = convs[i].group;
        c->has_desc = true;
        c->input_count = 3;
        c->in[0] = T(4, 1, convs[i].cin, 7, 7);
        c->in[1] = TC(4, convs[i].cout, convs[i].cin / convs[i].group, 3, 3);
        c->in[2] = TC(1, convs[i].cout);
    }
    c = add_case(cases, &n, PLX_OP_POOL, "max pool 2x2 stride 2");
    c->desc.pool = (plx_pool_desc)PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    c->desc.pool.kernel[0] = c->desc.pool.kernel[1] = 2;
    c->desc.pool.strides[0] = c->desc.pool.strides[1] = 2;
    c->has_desc = true;
    c->input_count = 1;
    c->in[0] = T(4, 1, 3, 8, 8);
    c = add_case(cases, &n, PLX_OP_POOL, "average pool 3x3 pad 1");
    c->desc.pool = (plx_pool_desc)PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    c->desc.pool.kernel[0] = c->desc.pool.kernel[1] = 3;
    c->desc.pool.pads_begin[0] = c->desc.pool.pads_begin[1] = 1;
    c->desc.pool.pads_end[0] = c->desc.pool.pads_end[1] = 1;
    c->has_desc = true;
    c->input_count = 1;
    c->in[0] = T(4, 1, 3, 6, 6);
    c = add_case(cases, &n, PLX_OP_SOFTMAX, "softmax [2,3,5] axis -1");
    c->desc.softmax = (plx_softmax_desc)PLX_SOFTMAX_DESC_INIT;
    c->has_desc = true;
    c->input_count = 1;
    c->in[0] = T(3, 2, 3, 5);
    c = add_case(cases, &n, PLX_OP_SOFTMAX, "softmax [2,3,5] axis 1");
    c->desc.softmax = (plx_softmax_desc)PLX_SOFTMAX_DESC_INIT;
    c->desc.softmax.axis = 1;
    c->has_desc = true;
    c->input_count = 1;
    c->in[0] = T(3, 2, 3, 5);
    c = add_case(cases, &n, PLX_OP_CONCAT, "concat [2,3,4] [2,2,4] axis 1");
    c->desc.axis = (plx_axis_desc)PLX_AXIS_DESC_INIT(1);
    c->has_desc = true;
    c->input_count = 2;
    c->in[0] = T(3, 2, 3, 4);
    c->in[1] = T(3, 2, 2, 4);
    c = add_case(cases, &n, PLX_OP_RESHAPE, "reshape [2,3,4] to [6,4]");
    c->desc.reshape = (plx_reshape_desc)PLX_RESHAPE_DESC_INIT;
    c->desc.reshape.rank = 2;
    c->desc.reshape.dims[0] = 6;
    c->desc.reshape.dims[1] = 4;
    c->has_desc = true;
    c->input_count = 1;
    c->in[0] = T(3, 2, 3, 4);
    c = add_case(cases, &n, PLX_OP_TRANSPOSE, "transpose [2,3,4] perm 2,0,1");
    c->desc.transpose = (plx_transpose_desc)PLX_TRANSPOSE_DESC_INIT;
    c->desc.transpose.perm_count = 3;
    c->desc.transpose.perm[0] = 2;
    c->desc.transpose.perm[1] = 0;
    c->desc.transpose.perm[2] = 1;
    c->has_desc = true;
    c->input_count = 1;
    c->in[0] = T(3, 2, 3, 4);
    c = add_case(cases, &n, PLX_OP_REDUCE, "reduce mean [2,3,4] axes 1 keepdims");
    c->desc.reduce = (plx_reduce_desc)PLX_REDUCE_DESC_INIT(PLX_REDUCE_MEAN);
    c->desc.reduce.axis_count = 1;
    c->desc.reduce.axes[0] = 1;
    c->has_desc = true;
    c->input_count = 1;
    c->in[0] = T(3, 2, 3, 4);
    c = add_case(cases, &n, PLX_OP_REDUCE, "reduce mean [2,3,4] axes 0,2");
    c->desc.reduce = (plx_reduce_desc)PLX_REDUCE_DESC_INIT(PLX_REDUCE_MEAN);
    c->desc.reduce.axis_count = 2;
    c->desc.reduce.axes[0] = 0;
    c->desc.reduce.axes[1] = 2;
    c->desc.reduce.keepdims = false;
    c->has_desc = true;
    c->input_count = 1;
    c->in[0] = T(3, 2, 3, 4);
    c = add_case(cases, &n, PLX_OP_BATCH_NORM, "batch norm [2,3,4,4]");
    c->desc.batch_norm = (plx_batch_norm_desc)PLX_BATCH_NORM_DESC_INIT;
    c->has_desc = true;
    c->input_count = 5;
    c->in[0] = T(4, 2, 3, 4, 4);
    c->in[1] = TC(1, 3);
    c->in[2] = TC(1, 3);
    c->in[3] = TC(1, 3);
    c->in[4] = TCF(FILL_POSITIVE, 1, 3);
    /* Quantize and dequantize, per tensor: their dtypes are fixed, so they
     * run once (as the float32 case). */
    c = add_case(cases, &n, PLX_OP_QUANTIZE, "quantize [2,3,4] to int8");
    c->desc.quantize = (plx_quantize_desc)PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_INT8);
    c->has_desc = true;
    c->input_count = 3;
    c->in[0] = T(3, 2, 3, 4);
    c->in[1] = (tspec){false, PLX_DTYPE_FLOAT32, 0, {0}, true, FILL_SCALE};
    c->in[2] = (tspec){false, PLX_DTYPE_INT8, 0, {0}, true, FILL_ZERO_POINT};
    c = add_case(cases, &n, PLX_OP_DEQUANTIZE, "dequantize int8 [2,3,4]");
    c->desc.quantize = (plx_quantize_desc)PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_FLOAT32);
    c->has_desc = true;
    c->input_count = 3;
    c->in[0] = (tspec){false, PLX_DTYPE_INT8, 3, {2, 3, 4}, false, FILL_ANY};
    c->in[1] = (tspec){false, PLX_DTYPE_FLOAT32, 0, {0}, true, FILL_SCALE};
    c->in[2] = (tspec){false, PLX_DTYPE_INT8, 0, {0}, true, FILL_ZERO_POINT};
    return n;
}

/* A case whose every input has a fixed dtype runs once. */
static bool case_has_dtype(const op_case *c) {
    for (uint32_t i = 0; i < c->input_count; i++) {
        if (c->in[i].case_dtype) {
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------------ */
/* Data                                                                       */
/* ------------------------------------------------------------------------ */

/* splitmix64: deterministic across platforms. */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1), on a grid of 1/4096 so that every value is exact in
 * float16's range used here. */
static double unit(uint64_t *state) {
    return (double)(next_random(state) >> 52) / 4096.0;
}

static double draw(fill_kind fill, bool integer, plx_dtype dtype, uint64_t *state) {
    double range = !integer ? 2.0 : dtype == PLX_DTYPE_INT8 ? 9.0 : 99.0;
    double v;
    switch (fill) {
    case FILL_NONZERO:
        v = (integer ? 1.0 : 0.5) + unit(state) * (range - (integer ? 1.0 : 0.5));
        return unit(state) < 0.5 ? -v : v;
    case FILL_POSITIVE:
        return 0.5 + unit(state) * 1.5 + 1.0 / 4096;
    case FILL_SCALE:
        return 0.02 + unit(state) * 0.03;
    case FILL_ZERO_POINT:
        return floor(unit(state) * 7.0) - 3.0;
    case FILL_ANY:
    default:
        v = (unit(state) * 2.0 - 1.0) * range;
        return integer ? floor(v + 0.5) : v;
    }
}

static bool dtype_is_integer(plx_dtype d) {
    return d == PLX_DTYPE_INT8 || d == PLX_DTYPE_INT32;
}

/* A tensor's values, generated from `seed`; malloc'd (freed by the caller),
 * aligned for zero copy. NULL when memory runs out. */
static void *make_data(const plx_tensor_info *info, fill_kind fill, uint64_t seed,
                       size_t *out_bytes) {
    size_t count = 0, bytes = 0;
    if (!plx_tensor_info_element_count(info, &count) ||
        !plx_tensor_info_byte_size(info, &bytes)) {
        return NULL;
    }
    size_t alloc = (bytes + CALLER_ALIGNMENT - 1) / CALLER_ALIGNMENT * CALLER_ALIGNMENT;
    uint8_t *p = aligned_alloc(CALLER_ALIGNMENT, alloc ? alloc : CALLER_ALIGNMENT);
    if (!p) {
        return NULL;
    }
    memset(p, 0, alloc ? alloc : CALLER_ALIGNMENT);
    size_t es = plx_dtype_size(info->dtype);
    uint64_t state = seed;
    for (size_t i = 0; i < count; i++) {
        uint8_t b[8];
        double v = draw(fill, dtype_is_integer(info->dtype), info->dtype, &state);
        plx_dtype_bytes_from_double(v, info->dtype, b);
        memcpy(p + i * es, b, es);
    }
    *out_bytes = bytes;
    return p;
}

static double value_at(plx_dtype d, const void *data, size_t i) {
    switch (d) {
    case PLX_DTYPE_FLOAT32:
        return ((const float *)data)[i];
    case PLX_DTYPE_FLOAT16:
        return plx_float16_to_float32(((const uint16_t *)data)[i]);
    case PLX_DTYPE_INT8:
        return ((const int8_t *)data)[i];
    case PLX_DTYPE_INT32:
        return ((const int32_t *)data)[i];
    default:
        return NAN;
    }
}

/* The tolerance per dtype (docs/conformance.md): floats match when
 * |got - want| <= atol + rtol * |want|; integers exactly. */
static void tolerance(plx_dtype d, double scale, double *atol, double *rtol) {
    if (d == PLX_DTYPE_FLOAT32) {
        *atol = 1e-4 * scale;
        *rtol = 1e-3 * scale;
    } else if (d == PLX_DTYPE_FLOAT16) {
        *atol = 1e-2 * scale;
        *rtol = 1e-2 * scale;
    } else {
        *atol = *rtol = 0;
    }
}

/* NULL when `got` matches `want`, else a message (malloc'd) naming the
 * first mismatching element and how many differ. */
static char *compare(const plx_tensor_info *info, const void *got, const void *want,
                     double scale) {
    size_t count = 0;
    if (!plx_tensor_info_element_count(info, &count)) {
        return strdup("the output has no element count");
    }
    double atol, rtol;
    tolerance(info->dtype, scale, &atol, &rtol);
    size_t bad = 0, first = 0;
    double first_got = 0, first_want = 0;
    for (size_t i = 0; i < count; i++) {
        double g = value_at(info->dtype, got, i), w = value_at(info->dtype, want, i);
        bool ok = (isnan(g) && isnan(w)) || fabs(g - w) <= atol + rtol * fabs(w);
        if (!ok) {
            if (bad++ == 0) {
                first = i;
                first_got = g;
                first_want = w;
            }
        }
    }
    if (!bad) {
        return NULL;
    }
    char *msg = NULL;
    if (asprintf(&msg, "element %zu: got %.7g, expected %.7g (%zu of %zu elements differ; "
                 "atol %g, rtol %g)", first, first_got, first_want, bad, count, atol, rtol) < 0) {
        return NULL;
    }
    return msg;
}

/* ------------------------------------------------------------------------ */
/* One case: network, reference, run                                         */
/* ------------------------------------------------------------------------ */

/* A case instantiated for one dtype: infos, data (one seed per variant of
 * the non-constant inputs), network. */
typedef struct instance {
    const op_case *c;
    plx_dtype dtype;
    char label[96]; /* "add [2,3,4] [2,3,4] float32" */
    plx_tensor_info in_info[MAX_INPUTS];
    void *in_data[MAX_INPUTS];
    size_t in_bytes[MAX_INPUTS];
    plx_tensor_info out_info;
    size_t out_bytes;
    void *want; /* the reference's output for in_data */
    plx_network *net;
    /* A relu layer "relu" after the case's layer (the R-23 check): the
     * network's output is its output. */
    bool relu_after;
} instance;

static void instance_free(instance *x) {
    for (uint32_t i = 0; i < MAX_INPUTS; i++) {
        free(x->in_data[i]);
        x->in_data[i] = NULL;
    }
    free(x->want);
    x->want = NULL;
    plx_network_destroy(&x->net);
}

static plx_tensor_info spec_info(const tspec *s, plx_dtype case_dtype) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = s->case_dtype ? case_dtype : s->dtype;
    t.rank = s->rank;
    for (uint32_t i = 0; i < s->rank; i++) {
        t.dims[i] = s->dims[i];
    }
    return t;
}

/* Generates the non-constant inputs of `x` from `seed` (constants keep the
 * seed of the case), and the reference output for them. Returns NULL, or
 * why there is no reference (malloc'd). */
static char *generate(instance *x, uint64_t seed) {
    for (uint32_t i = 0; i < x->c->input_count; i++) {
        const tspec *s = &x->c->in[i];
        if (s->constant && x->in_data[i]) {
            continue;
        }
        free(x->in_data[i]);
        uint64_t sd = (s->constant ? 0x5EEDull : seed) * 131 + i;
        x->in_data[i] = make_data(&x->in_info[i], s->fill, sd, &x->in_bytes[i]);
        if (!x->in_data[i]) {
            return strdup("out of memory");
        }
    }
    const void *constants[MAX_INPUTS];
    for (uint32_t i = 0; i < x->c->input_count; i++) {
        constants[i] = x->in_data[i];
    }
    plx_layer_view view = {sizeof view,        "layer",  x->c->op,
                           x->c->has_desc ? (const void *)&x->c->desc : NULL,
                           x->in_info,         x->c->input_count, &x->out_info, 1, constants};
    free(x->want);
    x->want = NULL;
    void *out[1] = {NULL};
    char err[256] = "";
    plx_fold_result fr = plx_fold_layer(&view, SIZE_MAX, out, err, sizeof err);
    if (fr != PLX_FOLDED) {
        char *msg = NULL;
        if (asprintf(&msg, "the reference kernels cannot evaluate it%s%s",
                     fr == PLX_FOLD_FAILED ? ": " : "", fr == PLX_FOLD_FAILED ? err : "") < 0) {
            msg = NULL;
        }
        return msg;
    }
    x->want = out[0];
    if (x->relu_after) {
        plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
        const void *in[1] = {x->want};
        plx_layer_view rv = {sizeof rv, "relu", PLX_OP_ACTIVATION, &relu, &x->out_info, 1,
                             &x->out_info, 1, in};
        out[0] = NULL;
        fr = plx_fold_layer(&rv, SIZE_MAX, out, err, sizeof err);
        free(x->want);
        x->want = fr == PLX_FOLDED ? out[0] : NULL;
        if (!x->want) {
            return strdup("the reference kernels cannot evaluate the relu after it");
        }
    }
    return NULL;
}

/* Builds the network of case `c` for `dtype`, with a relu after its layer
 * when `relu_after`. false when the host refuses the layer for that dtype
 * (not an element type the operator allows). */
static bool instance_build_chain(instance *x, const op_case *c, plx_dtype dtype,
                                 bool relu_after) {
    memset(x, 0, sizeof *x);
    x->c = c;
    x->dtype = dtype;
    x->relu_after = relu_after;
    if (case_has_dtype(c)) {
        snprintf(x->label, sizeof x->label, "%s %s%s", c->name, plx_dtype_name(dtype),
                 relu_after ? " then relu" : "");
    } else {
        snprintf(x->label, sizeof x->label, "%s%s", c->name, relu_after ? " then relu" : "");
    }
    for (uint32_t i = 0; i < c->input_count; i++) {
        x->in_info[i] = spec_info(&c->in[i], dtype);
    }
    plx_status s = plx_infer_layer("layer", c->op, c->has_desc ? &c->desc : NULL, x->in_info,
                                   c->input_count, &x->out_info, 1);
    if (s) {
        plx_status_free(s);
        return false;
    }
    if (!plx_tensor_info_byte_size(&x->out_info, &x->out_bytes)) {
        return false;
    }
    char *why = generate(x, 1);
    if (why) {
        free(why);
        instance_free(x);
        return false;
    }
    plx_layer_id ids[MAX_INPUTS], layer, relu = 0, out;
    s = plx_network_create(&x->net);
    for (uint32_t i = 0; !s && i < c->input_count; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%u", i);
        s = c->in[i].constant ? plx_network_add_constant(x->net, name, &x->in_info[i],
                                                         x->in_data[i], PLX_CONSTANT_COPY,
                                                         &ids[i])
                              : plx_network_add_input(x->net, name, (int32_t)i, &x->in_info[i],
                                                      &ids[i]);
    }
    if (!s) {
        s = plx_network_add_layer(x->net, "layer", c->op, c->has_desc ? &c->desc : NULL,
                                  c->input_count, 1, &layer);
    }
    for (uint32_t i = 0; !s && i < c->input_count; i++) {
        s = plx_network_connect(x->net, ids[i], 0, layer, i);
    }
    if (!s && relu_after) {
        plx_activation_desc rd = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
        s = plx_network_add_layer(x->net, "relu", PLX_OP_ACTIVATION, &rd, 1, 1, &relu);
        if (!s) {
            s = plx_network_connect(x->net, layer, 0, relu, 0);
        }
    }
    if (!s) {
        s = plx_network_add_output(x->net, "y", 100, &out);
    }
    if (!s) {
        s = plx_network_connect(x->net, relu_after ? relu : layer, 0, out, 0);
    }
    if (!s) {
        s = plx_network_validate(x->net);
    }
    if (s) {
        plx_status_free(s);
        instance_free(x);
        return false;
    }
    return true;
}

static bool instance_build(instance *x, const op_case *c, plx_dtype dtype) {
    return instance_build_chain(x, c, dtype, false);
}

typedef enum opt_result { OPT_ACCEPTED, OPT_REFUSED, OPT_ERROR } opt_result;

/* The backend's reason for refusing layer `layer` in the optimiser's
 * error, whose lines are "  layer 'NAME' (op): ID: REASON"
 * (core/src/optimizer.c); NULL when the layer is not listed. malloc'd. */
static char *refusal_of(const char *msg, const char *layer, const char *id) {
    char head[160];
    snprintf(head, sizeof head, "\n  layer '%s' (", layer);
    const char *p = strstr(msg, head);
    if (!p) {
        return NULL;
    }
    p = strstr(p + strlen(head), "): ");
    if (!p) {
        return NULL;
    }
    p += 3;
    size_t idn = strlen(id);
    if (strncmp(p, id, idn) == 0 && p[idn] == ':' && p[idn + 1] == ' ') {
        p += idn + 2;
    }
    size_t n = strcspn(p, "\n");
    return strndup(p, n);
}

/* Optimises `x` for the backend alone. On OPT_REFUSED *reason is the
 * backend's reason for the first layer it refused (the layer itself, or a
 * constant feeding it, named), on OPT_ERROR the error; malloc'd. */
static opt_result optimize(const conf_target *t, instance *x, bool zero_copy,
                           plx_optimized_network **out, char **reason) {
    *out = NULL;
    *reason = NULL;
    plx_optimize_options o;
    plx_optimize_options_init(&o);
    const char *ids[1] = {t->info->id};
    o.backends = ids;
    o.backend_count = 1;
    o.allow_fallback = false;
    o.graph_rewrites = false;
    o.import_enabled = zero_copy;
    o.export_enabled = zero_copy;
    plx_status s = plx_optimize(t->rt, x->net, &o, out);
    if (!s) {
        return OPT_ACCEPTED;
    }
    const char *msg = plx_status_get_message(s);
    opt_result res = OPT_ERROR;
    if (plx_status_get_code(s) == PLX_UNSUPPORTED) {
        *reason = refusal_of(msg, "layer", t->info->id);
        for (uint32_t i = 0; !*reason && i < x->c->input_count; i++) {
            char name[16];
            snprintf(name, sizeof name, "x%u", i);
            char *r = refusal_of(msg, name, t->info->id);
            if (r) {
                if (asprintf(reason, "constant '%s': %s", name, r) < 0) {
                    *reason = NULL;
                }
                free(r);
            }
        }
        res = *reason ? OPT_REFUSED : OPT_ERROR;
    }
    if (!*reason) {
        *reason = strdup(msg);
    }
    plx_status_free(s);
    return res;
}

/* Where the caller's tensors live for one execution. */
typedef enum bind_mode { BIND_MALLOC, BIND_DMA_BUF } bind_mode;

/* A memfd of `bytes` holding `data` (NULL: zeros), standing in for a
 * dma-buf as tests/test_async.c does; -1 on failure. */
static int memfd_with(const void *data, size_t bytes) {
    int fd = memfd_create("plexus-conformance", MFD_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    if (ftruncate(fd, (off_t)(bytes ? bytes : 1)) != 0 ||
        (data && bytes && pwrite(fd, data, bytes, 0) != (ssize_t)bytes)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Runs `ln` once on x's inputs into `got` (x->out_bytes, caller memory), in
 * working memory `wm` (NULL: the network's own). */
static plx_status execute(plx_loaded_network *ln, plx_working_memory *wm, const instance *x,
                          void *const *in_data, void *got, bind_mode mode) {
    plx_tensor_binding in[MAX_INPUTS], out;
    int fds[MAX_INPUTS + 1];
    size_t n = 0;
    for (size_t i = 0; i < COUNT(fds); i++) {
        fds[i] = -1;
    }
    plx_status s = NULL;
    for (uint32_t i = 0; i < x->c->input_count; i++) {
        if (x->c->in[i].constant) {
            continue;
        }
        in[n] = (plx_tensor_binding){(int32_t)i, in_data[i], x->in_bytes[i],
                                     PLX_MEMORY_SOURCE_MALLOC};
        if (mode == BIND_DMA_BUF) {
            fds[i] = memfd_with(in_data[i], x->in_bytes[i]);
            if (fds[i] < 0) {
                s = plx_status_create(PLX_IO_ERROR, "cannot create a memfd");
            }
            in[n].data = &fds[i];
            in[n].source = PLX_MEMORY_SOURCE_DMA_BUF;
        }
        n++;
    }
    out = (plx_tensor_binding){100, got, x->out_bytes, PLX_MEMORY_SOURCE_MALLOC};
    if (mode == BIND_DMA_BUF && !s) {
        fds[MAX_INPUTS] = memfd_with(NULL, x->out_bytes);
        if (fds[MAX_INPUTS] < 0) {
            s = plx_status_create(PLX_IO_ERROR, "cannot create a memfd");
        }
        out.data = &fds[MAX_INPUTS];
        out.source = PLX_MEMORY_SOURCE_DMA_BUF;
    }
    if (!s) {
        plx_execute_args args;
        plx_execute_args_init(&args);
        args.inputs = in;
        args.input_count = n;
        args.outputs = &out;
        args.output_count = 1;
        s = plx_loaded_network_execute_with(ln, wm, &args);
    }
    if (!s && mode == BIND_DMA_BUF &&
        pread(fds[MAX_INPUTS], got, x->out_bytes, 0) != (ssize_t)x->out_bytes) {
        s = plx_status_create(PLX_IO_ERROR, "cannot read the output memfd back");
    }
    for (size_t i = 0; i < COUNT(fds); i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
    return s;
}

static void *alloc_output(size_t bytes) {
    size_t alloc = (bytes + CALLER_ALIGNMENT - 1) / CALLER_ALIGNMENT * CALLER_ALIGNMENT;
    void *p = aligned_alloc(CALLER_ALIGNMENT, alloc ? alloc : CALLER_ALIGNMENT);
    if (p) {
        memset(p, 0xA5, alloc ? alloc : CALLER_ALIGNMENT); /* not a valid result */
    }
    return p;
}

/* Loads `x` with `lo` (and zero copy when asked), runs it `runs` times
 * in the network's own working memory on x's data, and compares every
 * result. NULL on success, else what went wrong (malloc'd). */
static char *load_and_run(const conf_target *t, instance *x, const plx_load_options *lo,
                          bool zero_copy, bind_mode mode, int runs, uint64_t *out_waits) {
    plx_optimized_network *on = NULL;
    char *reason = NULL;
    if (optimize(t, x, zero_copy, &on, &reason) != OPT_ACCEPTED) {
        char *msg = NULL;
        if (asprintf(&msg, "%s: refused where the plain run was accepted: %s", x->label,
                     reason ? reason : "") < 0) {
            msg = NULL;
        }
        free(reason);
        plx_optimized_network_destroy(&on);
        return msg;
    }
    plx_loaded_network *ln = NULL;
    plx_status s = plx_runtime_load_network(t->rt, &on, lo, &ln);
    char *msg = NULL;
    void *got = alloc_output(x->out_bytes);
    for (int r = 0; !s && got && r < runs && !msg; r++) {
        s = execute(ln, NULL, x, x->in_data, got, mode);
        if (!s) {
            char *diff = compare(&x->out_info, got, x->want, t->tolerance_scale);
            if (diff) {
                if (asprintf(&msg, "%s: %s", x->label, diff) < 0) {
                    msg = NULL;
                }
                free(diff);
            }
        }
    }
    if (s) {
        if (asprintf(&msg, "%s: %s", x->label, plx_status_get_message(s)) < 0) {
            msg = NULL;
        }
        plx_status_free(s);
    } else if (!got && !msg) {
        msg = strdup("out of memory");
    }
    if (out_waits && ln) {
        *out_waits = plx_loaded_network_wait_count(ln);
    }
    plx_loaded_network_unload(&ln);
    free(got);
    return msg;
}

/* ------------------------------------------------------------------------ */
/* Pre-imported inputs and outputs (R-17 (6), (7))                           */
/* ------------------------------------------------------------------------ */

/* Loads `x` zero copy, pre-imports its inputs and output once from buffers
 * of its own (plx_loaded_network_import_inputs, _outputs), runs it with the
 * ids, then writes other inputs (seed 2) into the same buffers and runs it
 * again: both results must match the reference (docs/backend-abi.md,
 * "Pre-imported inputs and outputs": importing the same memory again gives
 * the same result as a fresh import). NULL on success, else what went
 * wrong (malloc'd). */
static char *run_preimported(const conf_target *t, instance *x) {
    plx_optimized_network *on = NULL;
    char *reason = NULL;
    char *msg = NULL;
    if (optimize(t, x, true, &on, &reason) != OPT_ACCEPTED) {
        if (asprintf(&msg, "%s: refused where the plain run was accepted: %s", x->label,
                     reason ? reason : "") < 0) {
            msg = NULL;
        }
        free(reason);
        plx_optimized_network_destroy(&on);
        return msg;
    }
    plx_loaded_network *ln = NULL;
    plx_status s = plx_runtime_load_network(t->rt, &on, NULL, &ln);
    void *buf[MAX_INPUTS] = {NULL};
    plx_tensor_binding in[MAX_INPUTS], out;
    uint32_t in_ids[MAX_INPUTS], out_id = 0;
    size_t n = 0;
    void *got = alloc_output(x->out_bytes);
    bool oom = !got;
    for (uint32_t i = 0; !s && !oom && i < x->c->input_count; i++) {
        if (x->c->in[i].constant) {
            continue;
        }
        buf[i] = alloc_output(x->in_bytes[i]);
        oom = !buf[i];
        if (buf[i]) {
            memcpy(buf[i], x->in_data[i], x->in_bytes[i]);
            in[n++] = (plx_tensor_binding){(int32_t)i, buf[i], x->in_bytes[i],
                                           PLX_MEMORY_SOURCE_MALLOC};
        }
    }
    const char *phase = "load";
    if (!s && !oom) {
        phase = "pre-import of the inputs";
        s = plx_loaded_network_import_inputs(ln, in, n, in_ids);
    }
    if (!s && !oom) {
        phase = "pre-import of the output";
        out = (plx_tensor_binding){100, got, x->out_bytes, PLX_MEMORY_SOURCE_MALLOC};
        s = plx_loaded_network_import_outputs(ln, &out, 1, &out_id);
    }
    for (int round = 0; round < 2 && !s && !oom && !msg; round++) {
        if (round == 1) {
            /* Other values in the same memory, the ids unchanged. */
            msg = generate(x, 2);
            for (uint32_t i = 0; !msg && i < x->c->input_count; i++) {
                if (buf[i]) {
                    memcpy(buf[i], x->in_data[i], x->in_bytes[i]);
                }
            }
            memset(got, 0xA5, x->out_bytes);
            if (msg) {
                break;
            }
        }
        phase = round == 0 ? "first execution" : "second execution";
        plx_execute_args args;
        plx_execute_args_init(&args);
        args.preimported_inputs = in_ids;
        args.preimported_input_count = n;
        args.preimported_outputs = &out_id;
        args.preimported_output_count = 1;
        s = plx_loaded_network_execute_with(ln, NULL, &args);
        char *diff = s ? NULL : compare(&x->out_info, got, x->want, t->tolerance_scale);
        if (diff) {
            if (asprintf(&msg, "%s: %s: %s", x->label,
                         round == 0 ? "first execution"
                                    : "second execution, other inputs written into the same "
                                      "pre-imported memory",
                         diff) < 0) {
                msg = NULL;
            }
            free(diff);
        }
    }
    if (s) {
        if (asprintf(&msg, "%s: %s: %s", x->label, phase, plx_status_get_message(s)) < 0) {
            msg = NULL;
        }
        plx_status_free(s);
    } else if (oom && !msg) {
        msg = strdup("out of memory");
    }
    /* Unloading forgets the ids; the memory stays valid until then. */
    plx_loaded_network_unload(&ln);
    for (uint32_t i = 0; i < MAX_INPUTS; i++) {
        free(buf[i]);
    }
    free(got);
    return msg;
}

/* ------------------------------------------------------------------------ */
/* Backend-allocated planned memory, released (R-26 (3))                     */
/* ------------------------------------------------------------------------ */

/* Release cycles of the R-26 check: executions, each after a release but
 * the first. */
#define RELEASE_RUNS 3

/* Loads `x` with externally managed memory (a backend that reports
 * allocates_planned_memory then allocates the plan's buffers), runs it,
 * releases the working memory (plx_loaded_network_release_working_memory:
 * free_planned_buffer for each buffer) and runs it again on other inputs,
 * RELEASE_RUNS times, every result matching the reference. The host
 * allocations left after the second release must be no more than after the
 * first: buffers the backend takes through host->alloc go back at each
 * release (what it takes from a driver is not counted). NULL on success,
 * else what went wrong (malloc'd). */
static char *run_released(const conf_target *t, instance *x) {
    plx_optimized_network *on = NULL;
    char *reason = NULL;
    char *msg = NULL;
    if (optimize(t, x, false, &on, &reason) != OPT_ACCEPTED) {
        if (asprintf(&msg, "%s: refused where the plain run was accepted: %s", x->label,
                     reason ? reason : "") < 0) {
            msg = NULL;
        }
        free(reason);
        plx_optimized_network_destroy(&on);
        return msg;
    }
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.externally_managed_memory = true;
    plx_loaded_network *ln = NULL;
    plx_status s = plx_runtime_load_network(t->rt, &on, &lo, &ln);
    void *got = alloc_output(x->out_bytes);
    size_t live_released[RELEASE_RUNS] = {0};
    for (int k = 0; !s && got && !msg && k < RELEASE_RUNS; k++) {
        if (k > 0) {
            plx_loaded_network_release_working_memory(ln);
            live_released[k] = conf_alloc_live(t->counter);
            msg = generate(x, 1 + (uint64_t)k);
            if (msg) {
                break;
            }
        }
        s = execute(ln, NULL, x, x->in_data, got, BIND_MALLOC);
        char *diff = s ? NULL : compare(&x->out_info, got, x->want, t->tolerance_scale);
        if (diff) {
            if (asprintf(&msg, "%s: execution %d of %d (%s): %s", x->label, k + 1, RELEASE_RUNS,
                         k == 0 ? "the first" : "after a release, on other inputs", diff) < 0) {
                msg = NULL;
            }
            free(diff);
        } else if (s) {
            if (asprintf(&msg, "%s: execution %d of %d%s: %s", x->label, k + 1, RELEASE_RUNS,
                         k == 0 ? "" : " (after a release)", plx_status_get_message(s)) < 0) {
                msg = NULL;
            }
            plx_status_free(s);
            s = NULL;
        }
    }
    if (!s && !msg && got && live_released[RELEASE_RUNS - 1] > live_released[1]) {
        if (asprintf(&msg, "%s: %zu more host allocations live after the second release of "
                     "the working memory than after the first (a release gives the planned "
                     "buffers back through free_planned_buffer)", x->label,
                     live_released[RELEASE_RUNS - 1] - live_released[1]) < 0) {
            msg = NULL;
        }
    }
    if (s) {
        if (asprintf(&msg, "%s: %s", x->label, plx_status_get_message(s)) < 0) {
            msg = NULL;
        }
        plx_status_free(s);
    } else if (!got && !msg) {
        msg = strdup("out of memory");
    }
    plx_loaded_network_unload(&ln);
    free(got);
    return msg;
}

/* ------------------------------------------------------------------------ */
/* Backend profiling events                                           */
/* ------------------------------------------------------------------------ */

/* A case and dtype the backend accepted. */
typedef struct accepted {
    const op_case *c;
    plx_dtype dtype;
} accepted;


/* How far (microseconds) a backend's event may lie outside the host's
 * events of its network: clock mappings taken from a driver are not exact,
 * but an unmapped clock is off by far more. */
#define EVENT_SLACK_US 5000.0
#define TRACE_TEXT 80

/* One event line of a trace written by plx_runtime_write_trace: the
 * format plexus/network.h gives, one event a line. */
typedef struct trace_event {
    bool device; /* a backend's own event (args "layer"), else the host's ("op") */
    char name[TRACE_TEXT], cat[TRACE_TEXT], layer[TRACE_TEXT];
    double ts, dur;
    uint32_t network;
} trace_event;

/* Reads the JSON string at `p` (its opening quote) into `out`, escapes
 * resolved as far as comparing names needs; returns the character after
 * its closing quote, or NULL. */
static const char *read_string(const char *p, char *out, size_t cap) {
    if (*p != '"') {
        return NULL;
    }
    size_t n = 0;
    for (p++; *p && *p != '"'; p++) {
        if (*p == '\\' && p[1]) {
            p++;
        }
        if (n + 1 < cap) {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    return *p == '"' ? p + 1 : NULL;
}

static const char *expect(const char *p, const char *text) {
    size_t n = strlen(text);
    return p && strncmp(p, text, n) == 0 ? p + n : NULL;
}

/* false for a line that is no complete event (the header, metadata). */
static bool parse_event(const char *line, trace_event *e) {
    char backend[TRACE_TEXT];
    char *end;
    const char *p = expect(line, "{\"name\":");
    p = p ? read_string(p, e->name, sizeof e->name) : NULL;
    p = expect(p, ",\"cat\":");
    p = p ? read_string(p, e->cat, sizeof e->cat) : NULL;
    p = expect(p, ",\"ph\":\"X\",\"ts\":");
    if (!p) {
        return false;
    }
    e->ts = strtod(p, &end);
    p = expect(end, ",\"dur\":");
    if (!p) {
        return false;
    }
    e->dur = strtod(p, &end);
    p = strstr(end, ",\"args\":{");
    if (!p) {
        return false;
    }
    p += strlen(",\"args\":{");
    e->device = strncmp(p, "\"layer\":", 8) == 0;
    p = expect(p, e->device ? "\"layer\":" : "\"op\":");
    p = p ? read_string(p, e->layer, sizeof e->layer) : NULL;
    p = expect(p, ",\"backend\":");
    p = p ? read_string(p, backend, sizeof backend) : NULL;
    p = expect(p, ",\"network\":");
    if (!p) {
        return false;
    }
    e->network = (uint32_t)strtoul(p, &end, 10);
    return end != p;
}

/* The host's events of one network: when they begin and end, and the
 * layers it executed or enqueued (each name once; the first few kept,
 * enough for the one-layer networks here and their constants). */
typedef struct net_window {
    uint32_t id;
    double begin, end;
    char layers[MAX_INPUTS + 1][TRACE_TEXT];
    size_t layer_count;
} net_window;

/* Checks the backend's events in the trace at `path` against the host's
 * (R-25 (3), (4)): each on a network that ran (or none, 0), within that
 * network's host events give or take EVENT_SLACK_US (its clock mapped to
 * the host's), and naming one of its layers or none. Counts them in
 * *out_events. NULL when all are well formed, else the first fault. */
static char *check_trace(const char *path, size_t *out_events) {
    *out_events = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        return strdup("cannot read the trace back");
    }
    net_window nets[CAPABILITY_CASES * 2];
    size_t net_count = 0;
    double all_begin = INFINITY, all_end = -INFINITY;
    char *line = NULL, *msg = NULL;
    size_t cap = 0;
    trace_event e;
    for (int pass = 0; pass < 2 && !msg; pass++) {
        rewind(f);
        while (!msg && getline(&line, &cap, f) > 0) {
            if (!parse_event(line, &e) || e.device != (pass == 1)) {
                continue;
            }
            if (pass == 0) {
                all_begin = fmin(all_begin, e.ts);
                all_end = fmax(all_end, e.ts + e.dur);
                size_t k = 0;
                while (k < net_count && nets[k].id != e.network) {
                    k++;
                }
                if (k == net_count) {
                    if (net_count == COUNT(nets)) {
                        continue;
                    }
                    nets[net_count++] = (net_window){e.network, e.ts, e.ts + e.dur, {{0}}, 0};
                }
                nets[k].begin = fmin(nets[k].begin, e.ts);
                nets[k].end = fmax(nets[k].end, e.ts + e.dur);
                /* a layer run ("execute") or queued ("enqueue", R-24) */
                bool layer = strcmp(e.cat, "execute") == 0 || strcmp(e.cat, "enqueue") == 0;
                for (size_t q = 0; layer && q < nets[k].layer_count; q++) {
                    layer = strcmp(nets[k].layers[q], e.name) != 0;
                }
                if (layer && nets[k].layer_count < COUNT(nets[k].layers)) {
                    memcpy(nets[k].layers[nets[k].layer_count++], e.name, sizeof e.name);
                }
                continue;
            }
            (*out_events)++;
            const net_window *w = NULL;
            for (size_t k = 0; k < net_count; k++) {
                w = nets[k].id == e.network ? &nets[k] : w;
            }
            double begin = w ? w->begin : all_begin, end = w ? w->end : all_end;
            bool layer_known = !e.layer[0] || !w;
            for (size_t k = 0; w && k < w->layer_count; k++) {
                layer_known |= strcmp(w->layers[k], e.layer) == 0;
            }
            int n = 0;
            if (e.network && !w) {
                n = asprintf(&msg, "event '%s' names network %" PRIu32 ", which ran nothing "
                             "(plx_factory_params.network_id is the one to give)", e.name,
                             e.network);
            } else if (e.ts < begin - EVENT_SLACK_US || e.ts + e.dur > end + EVENT_SLACK_US) {
                n = asprintf(&msg, "event '%s' placed at %.3f us for %.3f us, outside its "
                             "network's host events (%.3f to %.3f us): its clock is not mapped "
                             "to the host's (clock_sync_backend_ns, clock_sync_host_ns)",
                             e.name, e.ts, e.dur, begin, end);
            } else if (!layer_known) {
                n = asprintf(&msg, "event '%s' names layer '%s', which network %" PRIu32
                             " did not execute", e.name, e.layer, e.network);
            }
            if (n < 0) {
                msg = strdup("out of memory");
            }
        }
    }
    free(line);
    fclose(f);
    return msg;
}

/* With profiling on, runs the picked cases (results compared) and checks
 * the backend's events in the trace (check_trace). */
static void check_profiling(const conf_target *t, const accepted *pick, size_t picked,
                            conf_report *r) {
    const char *name = "profiling events";
    if (picked == 0) {
        conf_add(r, 25, name, CONF_NA, "the backend accepted no layer of the generated set");
        return;
    }
    plx_runtime_clear_trace(t->rt);
    plx_status s = plx_runtime_enable_profiling(t->rt, true);
    if (s) {
        conf_add(r, 25, name, CONF_FAIL, "cannot enable profiling: %s",
                 plx_status_get_message(s));
        plx_status_free(s);
        return;
    }
    char *msg = NULL;
    plx_load_options lo;
    plx_load_options_init(&lo);
    for (size_t i = 0; i < picked && !msg; i++) {
        instance x;
        if (!instance_build(&x, pick[i].c, pick[i].dtype)) {
            msg = strdup("cannot build the network again");
            break;
        }
        msg = load_and_run(t, &x, &lo, false, BIND_MALLOC, 2, NULL);
        instance_free(&x);
    }
    s = plx_runtime_enable_profiling(t->rt, false);
    plx_status_free(s);
    char path[] = "/tmp/plexus-conformance-trace-XXXXXX";
    int fd = msg ? -1 : mkstemp(path);
    size_t events = 0;
    if (!msg && fd < 0) {
        msg = strdup("cannot create a temporary file for the trace");
    }
    if (fd >= 0) {
        close(fd);
        s = plx_runtime_write_trace(t->rt, path);
        if (s) {
            if (asprintf(&msg, "cannot write the trace: %s", plx_status_get_message(s)) < 0) {
                msg = NULL;
            }
            plx_status_free(s);
        } else {
            msg = check_trace(path, &events);
        }
        unlink(path);
    }
    plx_runtime_clear_trace(t->rt);
    if (msg) {
        conf_add(r, 25, name, CONF_FAIL, "%s", msg);
    } else if (events == 0) {
        conf_add(r, 25, name, CONF_NA, "the backend recorded no events (%zu networks run "
                 "twice with profiling on)", picked);
    } else {
        conf_add(r, 25, name, CONF_PASS, "%zu events of the backend's in %zu networks run "
                 "twice with profiling on, each on its network's layers and within its host "
                 "events (the clock mapped to the host's)", events, picked);
    }
    free(msg);
}

/* ------------------------------------------------------------------------ */
/* Concurrent executions                                               */
/* ------------------------------------------------------------------------ */

typedef struct async_worker {
    const conf_target *t;
    plx_loaded_network *ln;
    plx_working_memory *wm;
    instance x; /* this thread's inputs and reference (its own seed) */
    char *error;
    pthread_t thread;
} async_worker;

static void *async_main(void *arg) {
    async_worker *w = arg;
    void *got = alloc_output(w->x.out_bytes);
    if (!got) {
        w->error = strdup("out of memory");
        return NULL;
    }
    for (int i = 0; i < ASYNC_ITERATIONS && !w->error; i++) {
        plx_status s = execute(w->ln, w->wm, &w->x, w->x.in_data, got, BIND_MALLOC);
        if (s) {
            if (asprintf(&w->error, "execution %d: %s", i, plx_status_get_message(s)) < 0) {
                w->error = NULL;
            }
            plx_status_free(s);
            break;
        }
        char *diff = compare(&w->x.out_info, got, w->x.want, w->t->tolerance_scale);
        if (diff) {
            if (asprintf(&w->error, "execution %d: %s", i, diff) < 0) {
                w->error = NULL;
            }
            free(diff);
        }
    }
    free(got);
    return NULL;
}

/* Runs ASYNC_THREADS working memories of `x` at once, each on its own
 * inputs. NULL when every result matched. */
static char *run_async(const conf_target *t, const op_case *c, plx_dtype dtype) {
    async_worker w[ASYNC_THREADS];
    memset(w, 0, sizeof w);
    instance base;
    if (!instance_build(&base, c, dtype)) {
        return strdup("cannot build the network again");
    }
    char *msg = NULL;
    for (int k = 0; k < ASYNC_THREADS && !msg; k++) {
        w[k].t = t;
        if (!instance_build(&w[k].x, c, dtype)) {
            msg = strdup("cannot build the network again");
            break;
        }
        msg = generate(&w[k].x, 1000 + (uint64_t)k);
    }
    plx_optimized_network *on = NULL;
    plx_loaded_network *ln = NULL;
    char *reason = NULL;
    if (!msg && optimize(t, &base, false, &on, &reason) != OPT_ACCEPTED) {
        if (asprintf(&msg, "refused where the plain run was accepted: %s", reason) < 0) {
            msg = NULL;
        }
    }
    free(reason);
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.async_execution = true;
    plx_status s = msg ? NULL : plx_runtime_load_network(t->rt, &on, &lo, &ln);
    for (int k = 0; !s && !msg && k < ASYNC_THREADS; k++) {
        w[k].ln = ln;
        s = plx_loaded_network_create_working_memory(ln, &w[k].wm);
    }
    int started = 0;
    for (int k = 0; !s && !msg && k < ASYNC_THREADS; k++) {
        if (pthread_create(&w[k].thread, NULL, async_main, &w[k]) != 0) {
            msg = strdup("cannot start a thread");
            break;
        }
        started++;
    }
    for (int k = 0; k < started; k++) {
        pthread_join(w[k].thread, NULL);
        if (w[k].error && !msg) {
            if (asprintf(&msg, "working memory %d of %d: %s", k + 1, ASYNC_THREADS,
                         w[k].error) < 0) {
                msg = NULL;
            }
        }
        free(w[k].error);
    }
    if (s && !msg) {
        if (asprintf(&msg, "%s", plx_status_get_message(s)) < 0) {
            msg = NULL;
        }
    }
    plx_status_free(s);
    for (int k = 0; k < ASYNC_THREADS; k++) {
        plx_working_memory_destroy(&w[k].wm);
        instance_free(&w[k].x);
    }
    plx_optimized_network_destroy(&on);
    plx_loaded_network_unload(&ln);
    instance_free(&base);
    return msg;
}

/* ------------------------------------------------------------------------ */
/* The checks                                                                 */
/* ------------------------------------------------------------------------ */

/* True when `reason` names backend `id` as a word (not inside a longer
 * identifier). */
static bool names_id(const char *reason, const char *id) {
    size_t n = strlen(id);
    for (const char *p = strstr(reason, id); p; p = strstr(p + 1, id)) {
        bool before = p == reason || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
                                       (p[-1] >= '0' && p[-1] <= '9'));
        char a = p[n];
        bool after = !(a == '_' || (a >= 'a' && a <= 'z') || (a >= '0' && a <= '9'));
        if (before && after) {
            return true;
        }
    }
    return false;
}

static bool blank(const char *s) {
    for (; s && *s; s++) {
        if (*s != ' ' && *s != '\t' && *s != '\n') {
            return false;
        }
    }
    return true;
}

/* The first failure kept for a line that sums many cases. */
typedef struct tally {
    size_t ok, failed;
    char *first;
} tally;

static void tally_fail(tally *t, char *msg) {
    t->failed++;
    if (!t->first) {
        t->first = msg ? msg : strdup("out of memory");
    } else {
        free(msg);
    }
}

/* `pass_what` follows the count in the pass line: "%zu <pass_what>". */
static void tally_report(conf_report *r, int req, const char *name, tally *t, size_t tried,
                         const char *na_reason, const char *pass_what) {
    if (tried == 0) {
        conf_add(r, req, name, CONF_NA, "%s", na_reason);
    } else if (t->failed) {
        conf_add(r, req, name, CONF_FAIL, "%zu of %zu failed; first: %s", t->failed, tried,
                 t->first ? t->first : "");
    } else {
        conf_add(r, req, name, CONF_PASS, "%zu %s", tried, pass_what);
    }
    free(t->first);
    t->first = NULL;
}

/* Whether case `c` is a new operator among the first `n` accepted. */
static bool new_op(const accepted *acc, size_t n, const op_case *c) {
    for (size_t i = 0; i < n; i++) {
        if (strncmp(acc[i].c->name, c->name, strcspn(c->name, " ")) == 0) {
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------------------ */
/* Substitutions of optimize_subgraph                                 */
/* ------------------------------------------------------------------------ */

/* Each picked case followed by a relu (the fusion backends make most,
 * a product or an elementwise layer with its activation), optimised for
 * the backend alone: where its optimize_subgraph replaced layers (the
 * optimised network has a layer fused from others, graph rewrites being
 * off), the network is loaded and run, and its results must match the
 * reference of the two layers. Networks it leaves alone, or refuses, are
 * only counted. */
static void check_substitutions(const conf_target *t, const accepted *pick, size_t picked,
                                conf_report *r) {
    const char *name = "substitutions";
    if (!t->optimizes_subgraphs) {
        conf_add(r, 23, name, CONF_NA, "the backend does not set optimize_subgraph");
        return;
    }
    tally tl = {0};
    size_t substituted = 0, tried = 0;
    plx_load_options lo;
    plx_load_options_init(&lo);
    for (size_t i = 0; i < picked; i++) {
        instance x;
        if (!instance_build_chain(&x, pick[i].c, pick[i].dtype, true)) {
            continue; /* no relu of this dtype */
        }
        tried++;
        plx_optimized_network *on = NULL;
        char *reason = NULL;
        const char *fused = NULL;
        if (optimize(t, &x, false, &on, &reason) == OPT_ACCEPTED) {
            for (size_t k = 0; k < plx_optimized_network_layer_count(on) && !fused; k++) {
                if (plx_optimized_network_layer_fused_count(on, k) > 0) {
                    fused = plx_optimized_network_layer(on, k)->layer_name;
                }
            }
        }
        free(reason);
        if (fused) {
            substituted++;
            char *msg = load_and_run(t, &x, &lo, false, BIND_MALLOC, 2, NULL);
            if (msg) {
                char *m = NULL;
                tally_fail(&tl, asprintf(&m, "layers replaced by '%s': %s", fused, msg) < 0
                                    ? NULL : m);
                free(msg);
            } else {
                tl.ok++;
            }
        }
        plx_optimized_network_destroy(&on);
        instance_free(&x);
    }
    char na[160];
    snprintf(na, sizeof na, "the backend replaced no layer in %zu networks of an accepted layer "
             "and a relu", tried);
    char pass[200];
    snprintf(pass, sizeof pass, "networks of a layer and a relu in which optimize_subgraph "
             "replaced layers, results matching the reference (%zu more left as they were or "
             "refused)", tried - substituted);
    tally_report(r, 23, name, &tl, substituted, na, pass);
}

void conf_run_network_checks(const conf_target *t, conf_report *r) {
    const char *id = t->info->id;
    if (!t->runs_layers) {
        const char *why = "the backend runs no layers (no check_layer within its function "
                          "table, or ABI 1.0)";
        conf_add(r, 18, "refusal reasons", CONF_NA, "%s", why);
        conf_add(r, 18, "refusal is stable", CONF_NA, "%s", why);
        conf_add(r, 19, "results", CONF_NA, "%s", why);
        conf_add(r, 18, "no host allocation in steady state", CONF_NA, "%s", why);
        conf_add(r, 13, "host memory freed at unload", CONF_NA, "%s", why);
        conf_add(r, 20, "concurrent executions", CONF_NA, "%s", why);
        conf_add(r, 21, "planned memory", CONF_NA, "%s", why);
        conf_add(r, 22, "import malloc", CONF_NA, "%s", why);
        conf_add(r, 22, "import dma_buf", CONF_NA, "%s", why);
        conf_add(r, 24, "queued execution", CONF_NA, "%s", why);
        conf_add(r, 17, "pre-imported inputs and outputs", CONF_NA, "%s", why);
        conf_add(r, 26, "backend-allocated planned memory", CONF_NA, "%s", why);
        conf_add(r, 25, "profiling events", CONF_NA, "%s", why);
        conf_add(r, 23, "substitutions", CONF_NA, "%s", why);
        return;
    }
    op_case cases[64];
    size_t case_count = make_cases(cases);
    accepted acc[64 * COUNT(case_dtypes)];
    size_t acc_count = 0, refusals = 0;
    tally reasons = {0}, stable = {0}, steady = {0}, leaks = {0};
    size_t result_lines = 0;

    for (size_t ci = 0; ci < case_count; ci++) {
        const op_case *c = &cases[ci];
        size_t dtypes = case_has_dtype(c) ? COUNT(case_dtypes) : 1;
        for (size_t di = 0; di < dtypes; di++) {
            instance x;
            if (!instance_build(&x, c, case_dtypes[di])) {
                continue; /* the operator does not take this dtype */
            }
            if (t->verbose) {
                fprintf(stderr, "conformance: %s\n", x.label);
            }
            result_lines++;
            char line[128];
            snprintf(line, sizeof line, "results %s", x.label);
            plx_optimized_network *on = NULL;
            char *reason = NULL;
            opt_result res = optimize(t, &x, false, &on, &reason);
            if (res == OPT_ERROR) {
                conf_add(r, 19, line, CONF_FAIL, "cannot optimise: %s", reason);
                free(reason);
                instance_free(&x);
                continue;
            }
            if (res == OPT_REFUSED) {
                refusals++;
                conf_add(r, 19, line, CONF_NA, "refused: %s", reason);
                char *m = NULL;
                if (blank(reason)) {
                    tally_fail(&reasons, asprintf(&m, "%s: the reason is empty", x.label) < 0
                                             ? NULL : m);
                } else if (names_id(reason, id)) {
                    tally_fail(&reasons,
                               asprintf(&m, "%s: the reason repeats the backend id (the host "
                                        "names the backend already): \"%s\"", x.label,
                                        reason) < 0 ? NULL : m);
                } else {
                    reasons.ok++;
                }
                /* R-18 (1): the same answer for the same view. */
                plx_optimized_network *again = NULL;
                char *reason2 = NULL;
                opt_result res2 = optimize(t, &x, false, &again, &reason2);
                if (res2 != OPT_REFUSED || strcmp(reason, reason2 ? reason2 : "") != 0) {
                    tally_fail(&stable,
                               asprintf(&m, "%s: refused with \"%s\", then %s%s%s", x.label,
                                        reason, res2 == OPT_ACCEPTED ? "accepted" : "\"",
                                        res2 == OPT_ACCEPTED ? "" : (reason2 ? reason2 : ""),
                                        res2 == OPT_ACCEPTED ? "" : "\"") < 0 ? NULL : m);
                } else {
                    stable.ok++;
                }
                plx_optimized_network_destroy(&again);
                free(reason2);
                free(reason);
                instance_free(&x);
                continue;
            }
            free(reason);
            /* Accepted: load, run, compare; then count the host allocations
             * of later executions and what unloading leaves. */
            size_t live_before = conf_alloc_live(t->counter);
            plx_loaded_network *ln = NULL;
            plx_status s = plx_runtime_load_network(t->rt, &on, NULL, &ln);
            void *got = alloc_output(x.out_bytes);
            char *diff = NULL;
            if (!s && got) {
                s = execute(ln, NULL, &x, x.in_data, got, BIND_MALLOC);
            }
            if (!s && got) {
                diff = compare(&x.out_info, got, x.want, t->tolerance_scale);
            }
            if (s) {
                conf_add(r, 19, line, CONF_FAIL, "%s", plx_status_get_message(s));
                plx_status_free(s);
                s = NULL;
            } else if (!got) {
                conf_add(r, 19, line, CONF_FAIL, "out of memory");
            } else if (diff) {
                conf_add(r, 19, line, CONF_FAIL, "%s", diff);
            } else {
                conf_add(r, 19, line, CONF_PASS, "matches the reference kernels");
                acc[acc_count++] = (accepted){c, case_dtypes[di]};
                size_t before = atomic_load(&t->counter->allocs);
                for (int k = 0; k < STEADY_EXECUTIONS && !s; k++) {
                    s = execute(ln, NULL, &x, x.in_data, got, BIND_MALLOC);
                }
                size_t allocated = atomic_load(&t->counter->allocs) - before;
                char *m = NULL;
                if (s) {
                    tally_fail(&steady, asprintf(&m, "%s: a later execution failed: %s",
                                                 x.label, plx_status_get_message(s)) < 0
                                            ? NULL : m);
                    plx_status_free(s);
                } else if (allocated) {
                    tally_fail(&steady,
                               asprintf(&m, "%s: %zu host->alloc calls in %d executions after "
                                        "the first", x.label, allocated,
                                        STEADY_EXECUTIONS) < 0 ? NULL : m);
                } else {
                    steady.ok++;
                }
            }
            free(diff);
            free(got);
            plx_loaded_network_unload(&ln);
            plx_optimized_network_destroy(&on);
            size_t live_after = conf_alloc_live(t->counter);
            if (live_after > live_before) {
                /* A backend may keep state it builds at its first use of
                 * something (a compiled kernel): what a second load and
                 * unload of the same network leaves is the leak. */
                live_before = live_after;
                plx_optimized_network *on2 = NULL;
                char *why = NULL;
                plx_loaded_network *ln2 = NULL;
                if (optimize(t, &x, false, &on2, &why) == OPT_ACCEPTED) {
                    plx_status s2 = plx_runtime_load_network(t->rt, &on2, NULL, &ln2);
                    plx_status_free(s2);
                }
                free(why);
                plx_loaded_network_unload(&ln2);
                plx_optimized_network_destroy(&on2);
                live_after = conf_alloc_live(t->counter);
            }
            if (live_after > live_before) {
                char *m = NULL;
                tally_fail(&leaks, asprintf(&m, "%s: %zu host allocations left after the "
                                            "network was unloaded", x.label,
                                            live_after - live_before) < 0 ? NULL : m);
            } else {
                leaks.ok++;
            }
            instance_free(&x);
        }
    }
    if (result_lines == 0) {
        conf_add(r, 19, "results", CONF_NA, "no case could be built");
    }
    tally_report(r, 18, "refusal reasons", &reasons, refusals,
                 "the backend refused no layer of the generated set",
                 "refusals, each with a reason that does not repeat the backend id");
    tally_report(r, 18, "refusal is stable", &stable, refusals,
                 "the backend refused no layer of the generated set",
                 "refusals, each the same when asked again");
    tally_report(r, 18, "no host allocation in steady state", &steady, acc_count,
                 "the backend accepted no layer of the generated set",
                 "networks allocated nothing through the host after their first execution");
    tally_report(r, 13, "host memory freed at unload", &leaks, acc_count,
                 "the backend accepted no layer of the generated set",
                 "networks left no host allocation after unloading");

    /* The capability checks rerun a few accepted cases of different
     * operators. */
    accepted pick[CAPABILITY_CASES];
    size_t picked = 0;
    for (size_t i = 0; i < acc_count && picked < CAPABILITY_CASES; i++) {
        if (new_op(pick, picked, acc[i].c)) {
            pick[picked++] = acc[i];
        }
    }
    const plx_backend_info *b = t->info;
    plx_load_options plain;
    plx_load_options_init(&plain);

    /* */
    tally conc = {0};
    size_t tried = 0;
    if (plx_backend_info_has_capability(b, PLX_CAP_ASYNC_EXECUTION)) {
        for (size_t i = 0; i < picked; i++, tried++) {
            char *msg = run_async(t, pick[i].c, pick[i].dtype);
            if (msg) {
                char *m = NULL;
                tally_fail(&conc, asprintf(&m, "%s %s: %s", pick[i].c->name,
                                           plx_dtype_name(pick[i].dtype), msg) < 0 ? NULL : m);
                free(msg);
            } else {
                conc.ok++;
            }
        }
    }
    tally_report(r, 20, "concurrent executions", &conc, tried,
                 plx_backend_info_has_capability(b, PLX_CAP_ASYNC_EXECUTION)
                     ? "no accepted layer to run"
                     : "the backend does not report async_execution",
                 "networks, 3 working memories on threads each, every result matching the reference");

    /* one rerun each. */
    struct {
        int req;
        const char *name;
        const char *cap;
        bool zero_copy, planned;
        bind_mode mode;
    } reruns[] = {
        {21, "planned memory", PLX_CAP_EXTERNALLY_MANAGED_MEMORY, false, true, BIND_MALLOC},
        {22, "import malloc", PLX_CAP_IMPORT_MALLOC, true, false, BIND_MALLOC},
        {22, "import dma_buf", PLX_CAP_IMPORT_DMA_BUF, true, false, BIND_DMA_BUF},
        {24, "queued execution", PLX_CAP_QUEUED_EXECUTION, false, false, BIND_MALLOC},
    };
    for (size_t k = 0; k < COUNT(reruns); k++) {
        tally tl = {0};
        size_t n = 0;
        bool claimed = plx_backend_info_has_capability(b, reruns[k].cap);
        /* dma-buf zero copy needs malloc import too (the Zero copy rules of
         * docs/backend-abi.md); without it the host copies. */
        if (reruns[k].mode == BIND_DMA_BUF &&
            !plx_backend_info_has_capability(b, PLX_CAP_IMPORT_MALLOC)) {
            claimed = false;
        }
        for (size_t i = 0; claimed && i < picked; i++, n++) {
            instance x;
            if (!instance_build(&x, pick[i].c, pick[i].dtype)) {
                tally_fail(&tl, strdup("cannot build the network again"));
                continue;
            }
            plx_load_options lo = plain;
            lo.externally_managed_memory = reruns[k].planned;
            uint64_t waits = 0;
            int runs = 3;
            char *msg = load_and_run(t, &x, &lo, reruns[k].zero_copy, reruns[k].mode, runs,
                                     &waits);
            if (!msg && reruns[k].req == 24 && waits != (uint64_t)runs) {
                if (asprintf(&msg, "%s: %" PRIu64 " host waits in %d executions of one "
                             "queued layer (one each expected)", x.label, waits, runs) < 0) {
                    msg = NULL;
                }
            }
            if (msg) {
                tally_fail(&tl, msg);
            } else {
                tl.ok++;
            }
            instance_free(&x);
        }
        char na[160];
        if (!plx_backend_info_has_capability(b, reruns[k].cap)) {
            snprintf(na, sizeof na, "the backend does not report %s", reruns[k].cap);
        } else if (!claimed) {
            snprintf(na, sizeof na, "the backend does not report %s (dma-bufs are then "
                     "copied by the host)", PLX_CAP_IMPORT_MALLOC);
        } else {
            snprintf(na, sizeof na, "the backend accepted no layer of the generated set");
        }
        const char *pass = reruns[k].req == 21 ? "networks in host-planned memory, results "
                                                 "unchanged"
                           : reruns[k].req == 24 ? "networks queued, one host wait per "
                                                   "execution, results unchanged"
                                                 : "networks with zero-copy inputs and "
                                                   "output, results unchanged";
        tally_report(r, reruns[k].req, reruns[k].name, &tl, n, na, pass);
    }

    /* R-26 (3): the backend's planned buffers, released and allocated
     * again. */
    bool allocates = plx_backend_info_has_capability(b, PLX_CAP_ALLOCATES_PLANNED_MEMORY);
    tally rel = {0};
    size_t rel_tried = 0;
    for (size_t i = 0; allocates && i < picked; i++, rel_tried++) {
        instance x;
        if (!instance_build(&x, pick[i].c, pick[i].dtype)) {
            tally_fail(&rel, strdup("cannot build the network again"));
            continue;
        }
        char *msg = run_released(t, &x);
        if (msg) {
            tally_fail(&rel, msg);
        } else {
            rel.ok++;
        }
        instance_free(&x);
    }
    tally_report(r, 26, "backend-allocated planned memory", &rel, rel_tried,
                 allocates ? "the backend accepted no layer of the generated set"
                           : "the backend does not report " PLX_CAP_ALLOCATES_PLANNED_MEMORY,
                 "networks in planned memory of the backend's, released and run again twice "
                 "on other inputs, results matching, nothing kept through host->alloc");

    /* */
    check_profiling(t, pick, picked, r);

    /* */
    check_substitutions(t, pick, picked, r);

    /* R-17 (6), (7): pre-imported inputs and outputs. They are zero copy,
     * which needs malloc import. */
    bool preimports = plx_backend_info_has_capability(b, PLX_CAP_PREIMPORT_IO_TENSORS);
    bool malloc_import = plx_backend_info_has_capability(b, PLX_CAP_IMPORT_MALLOC);
    tally pre = {0};
    size_t pre_tried = 0;
    for (size_t i = 0; preimports && malloc_import && i < picked; i++, pre_tried++) {
        instance x;
        if (!instance_build(&x, pick[i].c, pick[i].dtype)) {
            tally_fail(&pre, strdup("cannot build the network again"));
            continue;
        }
        char *msg = run_preimported(t, &x);
        if (msg) {
            tally_fail(&pre, msg);
        } else {
            pre.ok++;
        }
        instance_free(&x);
    }
    char na[160];
    if (!preimports) {
        snprintf(na, sizeof na, "the backend does not report %s", PLX_CAP_PREIMPORT_IO_TENSORS);
    } else if (!malloc_import) {
        snprintf(na, sizeof na, "the backend does not report %s, so no input or output is "
                 "zero copy", PLX_CAP_IMPORT_MALLOC);
    } else {
        snprintf(na, sizeof na, "the backend accepted no layer of the generated set");
    }
    tally_report(r, 17, "pre-imported inputs and outputs", &pre, pre_tried, na,
                 "networks run twice with pre-imported inputs and output, other inputs "
                 "written into the same memory the second time, results matching");
}
