/* Every operator of ops.h end to end on one backend: a one-operator network
 * is built through the public API (weights, biases, scales and the like as
 * constant layers, as a model would have them), optimised for that backend
 * alone with fallback off, loaded, executed once, and its outputs compared
 * with values derived here: by hand for small cases, or by plain reference
 * loops written from ONNX's definitions (not from any backend's code).
 *
 * The backend is PLEXUS_TEST_OPS_BACKEND (default cpu_ref; tests/meson.build
 * registers the suite once per first-party backend). On cpu_ref, the
 * reference backend, a refusal (or a disagreement between the core's shape
 * inference and cpu_ref's own shape checks) fails the test with cpu_ref's
 * reason. Another backend may refuse an operator or type it does not cover:
 * the test is then skipped with the backend's reason, and what it accepts
 * must agree with the same references within the same tolerances. Without
 * the backend (gpu_opencl on a machine with no OpenCL platform, gpu_cuda
 * without a CUDA device) every test skips with the reason, or fails when
 * PLEXUS_REQUIRE_OPENCL=1 (PLEXUS_REQUIRE_CUDA=1 for gpu_cuda).
 *
 * input, output, mem_copy and mem_import are exercised by every network
 * (the last two only when the optimiser inserts them; here it must not). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <plexus/network.h>

#include "rnn_reference.h"
#include "test_util.h"

/* test_util.h's OK, keeping the status reachable for the leak checkers. */
#undef OK
#define OK(expr)                                                                       \
    do {                                                                               \
        plx_status ok_status_ = (expr);                                                \
        live.st = ok_status_; /* reachable if the assertion ends the test */           \
        cr_assert(zero(ptr, ok_status_), "%s: %s", #expr, plx_status_get_message(ok_status_)); \
    } while (0)

#define F32 PLX_DTYPE_FLOAT32
#define F16 PLX_DTYPE_FLOAT16
#define I8 PLX_DTYPE_INT8
#define U8 PLX_DTYPE_UINT8
#define I32 PLX_DTYPE_INT32
#define I64 PLX_DTYPE_INT64
#define BOOL PLX_DTYPE_BOOL

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Relative tolerance (absolute below 1) for float results. */
#define TOL 1e-5f
#define TOL_LOOSE 1e-4f

/* ------------------------------------------------------------------------ */
/* The one-operator network                                                   */
/* ------------------------------------------------------------------------ */

/* One input of the operator: a network input (bound at execution) or a
 * constant layer (copied into the network). */
typedef struct targ {
    plx_dtype dtype;
    const int64_t *dims;
    uint32_t rank;
    const void *data;
    bool constant;
} targ;

/* DIMS(2, 3) expands to the two fields dims and rank; SCALAR to rank 0. */
#define DIMS(...)                                                                       \
    (const int64_t[]){__VA_ARGS__},                                                     \
        (uint32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define SCALAR NULL, 0u
#define IN(dt, dims, data) ((targ){(dt), dims, (data), false})
#define CONST(dt, dims, data) ((targ){(dt), dims, (data), true})

/* One output: its info as the loaded network reports it, and its data. */
typedef struct tout {
    plx_tensor_info info;
    void *data;
    size_t bytes;
} tout;

/* What a test allocates stays reachable from here, so that a failing
 * assertion, which ends the test without its cleanup, adds no
 * LeakSanitizer reports to the real failure. Entries go stale once freed. */
static struct {
    plx_runtime *rt;
    plx_network *net;
    plx_optimized_network *on;
    plx_loaded_network *ln;
    plx_status st;
    void *mem[1024];
    size_t mem_count;
} live;

static void *track(void *p) {
    cr_assert(not(zero(ptr, p)), "out of memory");
    live.mem[live.mem_count++ % COUNT(live.mem)] = p;
    return p;
}

static plx_tensor_info make_info(plx_dtype dtype, const int64_t *dims, uint32_t rank) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.rank = rank;
    for (uint32_t i = 0; i < rank; i++) {
        t.dims[i] = dims[i];
    }
    return t;
}

static const char *shape_str(char *buf, size_t size, const int64_t *dims, uint32_t rank) {
    size_t len = (size_t)snprintf(buf, size, "[");
    for (uint32_t i = 0; i < rank && len < size; i++) {
        len += (size_t)snprintf(buf + len, size - len, "%s%lld", i ? "," : "", (long long)dims[i]);
    }
    if (len < size) {
        snprintf(buf + len, size - len, "]");
    }
    return buf;
}
#define SHAPE(dims, rank) shape_str((char[160]){0}, 160, (dims), (rank))

/* The backend under test (see the top of the file). */
static const char *test_backend(void) {
    const char *b = getenv("PLEXUS_TEST_OPS_BACKEND");
    return b && *b ? b : "cpu_ref";
}

/* Builds inputs -> layer `op` -> one network output per output slot, with
 * every non-constant input a network input (binding ids 0, 1, ... in slot
 * order), optimises it for the backend under test without fallback, checks
 * that every layer went to it without a refusal or an inserted layer, loads
 * it, runs it once and returns the outputs (free them with free_outs). */
static void run_op(plx_op op, const void *desc, const targ *ins, uint32_t n_in, tout *outs,
                   uint32_t n_out) {
    cr_assert(le(u32, n_in, 8));
    cr_assert(le(u32, n_out, 8));
    plx_runtime_options o;
    tu_options(&o);
    /* gpu_opencl's directory only when it is the backend under test: on
     * cpu_ref the suite also runs under valgrind, which an OpenCL driver
     * does not survive (tests/meson.build). */
    const char *backend = test_backend();
    const char *paths[2] = {CPU_REF_DIR, NULL};
    o.search_path_count = 1;
#ifdef GPU_OPENCL_DIR
    if (strcmp(backend, "gpu_opencl") == 0) {
        paths[o.search_path_count++] = GPU_OPENCL_DIR;
    }
#endif
#ifdef GPU_CUDA_DIR
    if (strcmp(backend, "gpu_cuda") == 0) {
        paths[o.search_path_count++] = GPU_CUDA_DIR;
    }
#endif
#ifdef CPU_ONEDNN_DIR
    /* cpu_onednn's planners are tested whatever implementation oneDNN
     * picks: reference=on (its refusal of reference implementations is
     * test_cpu_onednn's). */
    plx_backend_option reference = {"cpu_onednn", "reference", "on"};
    if (strcmp(backend, "cpu_onednn") == 0) {
        paths[o.search_path_count++] = CPU_ONEDNN_DIR;
        o.backend_options = &reference;
        o.backend_option_count = 1;
    }
#endif
    o.search_paths = paths;
    plx_runtime *rt = tu_create(&o);
    live.rt = rt;
    const plx_backend_info *bi = plx_runtime_find_backend(rt, backend);
    cr_assert(not(zero(ptr, (void *)bi)), "backend %s was not loaded: %s", backend, tu_dump(rt));
    if (!bi->available) {
        char reason[1024];
        snprintf(reason, sizeof reason, "%s", bi->reason ? bi->reason : "(no reason)");
        plx_runtime_destroy(&rt);
        live.rt = NULL;
        /* The GPU backends' variables make a missing device a failure. */
        const char *var = strcmp(backend, "gpu_opencl") == 0 ? "PLEXUS_REQUIRE_OPENCL"
                          : strcmp(backend, "gpu_cuda") == 0 ? "PLEXUS_REQUIRE_CUDA"
                                                             : NULL;
        const char *req = var ? getenv(var) : NULL;
        cr_assert(not(req && strcmp(req, "1") == 0), "%s=1, but %s is unavailable: %s", var,
                  backend, reason);
        cr_skip_test("%s is unavailable: %s", backend, reason);
    }

    plx_network *n;
    OK(plx_network_create(&n));
    live.net = n;
    plx_layer_id layer;
    OK(plx_network_add_layer(n, "op", op, desc, n_in, n_out, &layer));
    plx_tensor_binding bind_in[8] = {{0, NULL, 0, 0}};
    size_t nb = 0;
    for (uint32_t i = 0; i < n_in; i++) {
        plx_tensor_info t = make_info(ins[i].dtype, ins[i].dims, ins[i].rank);
        char name[16];
        plx_layer_id id;
        if (ins[i].constant) {
            snprintf(name, sizeof name, "const%u", i);
            OK(plx_network_add_constant(n, name, &t, ins[i].data, PLX_CONSTANT_COPY, &id));
        } else {
            snprintf(name, sizeof name, "in%u", i);
            size_t bytes = 0;
            cr_assert(plx_tensor_info_byte_size(&t, &bytes));
            int32_t binding = (int32_t)nb;
            OK(plx_network_add_input(n, name, binding, &t, &id));
            bind_in[nb].binding_id = binding;
            bind_in[nb].data = (void *)ins[i].data;
            bind_in[nb].size = bytes;
            nb++;
        }
        OK(plx_network_connect(n, id, 0, layer, i));
    }
    cr_assert(gt(sz, nb, 0), "the network needs at least one network input");
    for (uint32_t j = 0; j < n_out; j++) {
        char name[16];
        snprintf(name, sizeof name, "out%u", j);
        plx_layer_id id;
        OK(plx_network_add_output(n, name, (int32_t)j, &id));
        OK(plx_network_connect(n, layer, j, id, 0));
    }

    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *backends[] = {backend};
    oo.backends = backends;
    oo.backend_count = 1;
    oo.allow_fallback = false;
    plx_optimized_network *on = NULL;
    plx_status st = plx_optimize(rt, n, &oo, &on);
    live.st = st;
    live.on = on;
    if (st && plx_status_get_code(st) == PLX_UNSUPPORTED && strcmp(backend, "cpu_ref") != 0) {
        /* The message has one line per refused layer; a skip reason must be
         * one line, or the TAP reader takes the rest for garbage. */
        char why[1024];
        snprintf(why, sizeof why, "%s", plx_status_get_message(st));
        for (char *c = why; *c; c++) {
            if (*c == '\n') {
                *c = ' ';
            }
        }
        cr_skip_test("%s refuses it: %s", backend, why);
    }
    cr_assert(zero(ptr, st), "plx_optimize (%s): %s", plx_op_name(op), plx_status_get_message(st));

    /* Every layer on the backend, none refused, nothing inserted. */
    size_t count = plx_optimized_network_layer_count(on);
    cr_assert(eq(sz, count, (size_t)n_in + n_out + 1), "%s", plx_optimized_network_summary(on));
    for (size_t i = 0; i < count; i++) {
        const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
        cr_assert(not(zero(ptr, (void *)a)));
        cr_assert(eq(str, (char *)a->backend_id, (char *)backend), "layer '%s'", a->layer_name);
        cr_assert(eq(sz, a->refusal_count, 0), "layer '%s' was refused: %s", a->layer_name,
                  a->refusal_count ? a->refusals[0].reason : "");
        cr_assert(not(a->inserted), "layer '%s' (%s) was inserted", a->layer_name,
                  plx_op_name(a->op));
    }

    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    live.on = NULL;
    live.ln = ln;
    plx_tensor_binding bind_out[8] = {{0, NULL, 0, 0}};
    for (uint32_t j = 0; j < n_out; j++) {
        OK(plx_loaded_network_output_info(ln, (int32_t)j, &outs[j].info));
        size_t bytes = 0;
        cr_assert(plx_tensor_info_byte_size(&outs[j].info, &bytes));
        outs[j].bytes = bytes;
        /* A pattern that no expected value has, so unwritten elements show. */
        outs[j].data = track(malloc(bytes ? bytes : 1));
        memset(outs[j].data, 0x7d, bytes);
        bind_out[j].binding_id = (int32_t)j;
        bind_out[j].data = outs[j].data;
        bind_out[j].size = bytes;
    }
    st = plx_loaded_network_execute(ln, bind_in, nb, bind_out, n_out);
    live.st = st;
    cr_assert(zero(ptr, st), "execute (%s): %s", plx_op_name(op), plx_status_get_message(st));
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
    live.ln = NULL;
    live.net = NULL;
    live.rt = NULL;
}

#define RUN(op, desc, ins, outs, n_out) run_op((op), (desc), (ins), (uint32_t)COUNT(ins), (outs), (n_out))

static void free_outs(tout *outs, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        free(outs[i].data);
        outs[i].data = NULL;
    }
}

/* ------------------------------------------------------------------------ */
/* Checks                                                                     */
/* ------------------------------------------------------------------------ */

static size_t numel(const int64_t *dims, uint32_t rank) {
    size_t n = 1;
    for (uint32_t i = 0; i < rank; i++) {
        n *= (size_t)dims[i];
    }
    return n;
}

static void expect_shape_(const tout *o, plx_dtype dtype, const int64_t *dims, uint32_t rank) {
    cr_assert(eq(str, (char *)plx_dtype_name(o->info.dtype), (char *)plx_dtype_name(dtype)),
              "output dtype");
    char got[160], want[160];
    shape_str(got, sizeof got, o->info.dims, o->info.rank);
    shape_str(want, sizeof want, dims, rank);
    cr_assert(eq(str, got, want), "output shape: got %s, want %s", got, want);
}
#define EXPECT_SHAPE(o, dtype, dims) expect_shape_((o), (dtype), dims)

static size_t out_count(const tout *o) {
    return numel(o->info.dims, o->info.rank);
}

static void expect_f32(const tout *o, const float *want, size_t n, float tol) {
    cr_assert(eq(sz, out_count(o), n), "element count");
    const float *got = o->data;
    for (size_t i = 0; i < n; i++) {
        if (got[i] == want[i]) {
            continue;
        }
        float diff = fabsf(got[i] - want[i]);
        float limit = tol * fmaxf(1.0f, fabsf(want[i]));
        cr_assert(le(flt, diff, limit), "element %zu: got %.9g, want %.9g", i, (double)got[i],
                  (double)want[i]);
    }
}

static void expect_i32(const tout *o, const int32_t *want, size_t n) {
    cr_assert(eq(sz, out_count(o), n), "element count");
    const int32_t *got = o->data;
    for (size_t i = 0; i < n; i++) {
        cr_assert(eq(i32, got[i], want[i]), "element %zu", i);
    }
}

static void expect_i64(const tout *o, const int64_t *want, size_t n) {
    cr_assert(eq(sz, out_count(o), n), "element count");
    const int64_t *got = o->data;
    for (size_t i = 0; i < n; i++) {
        cr_assert(eq(i64, got[i], want[i]), "element %zu", i);
    }
}

/* uint8 and bool */
static void expect_u8(const tout *o, const uint8_t *want, size_t n) {
    cr_assert(eq(sz, out_count(o), n), "element count");
    const uint8_t *got = o->data;
    for (size_t i = 0; i < n; i++) {
        cr_assert(eq(u8, got[i], want[i]), "element %zu", i);
    }
}

static void expect_i8(const tout *o, const int8_t *want, size_t n) {
    cr_assert(eq(sz, out_count(o), n), "element count");
    const int8_t *got = o->data;
    for (size_t i = 0; i < n; i++) {
        cr_assert(eq(i8, got[i], want[i]), "element %zu", i);
    }
}

static void expect_u16(const tout *o, const uint16_t *want, size_t n) {
    cr_assert(eq(sz, out_count(o), n), "element count");
    const uint16_t *got = o->data;
    for (size_t i = 0; i < n; i++) {
        cr_assert(eq(u16, got[i], want[i]), "element %zu: got 0x%04x, want 0x%04x", i,
                  (unsigned)got[i], (unsigned)want[i]);
    }
}

/* ------------------------------------------------------------------------ */
/* Data and reference helpers                                                 */
/* ------------------------------------------------------------------------ */

/* x[i] = start + i * step */
static void seq(float *x, size_t n, float start, float step) {
    for (size_t i = 0; i < n; i++) {
        x[i] = start + (float)i * step;
    }
}

/* Irregular values in [-2.25, 2.25], multiples of 0.25 (exact sums). */
static void gen(float *x, size_t n, int seed) {
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)((int)((i * 7 + (size_t)seed * 13 + (i * i) % 5) % 19) - 9) / 4.0f;
    }
}

static float *falloc(size_t n) {
    return track(calloc(n ? n : 1, sizeof(float)));
}

/* Offset, in a tensor of shape dims (rank r), of the element that
 * broadcasts (numpy) to flat index i of shape out (rank ro). */
static size_t bcast_off(size_t i, const int64_t *out, uint32_t ro, const int64_t *dims, uint32_t r) {
    size_t off = 0, stride = 1;
    for (uint32_t k = ro; k-- > 0;) {
        size_t idx = i % (size_t)out[k];
        i /= (size_t)out[k];
        if (k >= ro - r) {
            int64_t d = dims[k - (ro - r)];
            if (d != 1) {
                off += idx * stride;
            }
            stride *= (size_t)d;
        }
    }
    return off;
}

/* One sliding-window dim as ONNX defines it: output size and the pads
 * actually applied (auto_pad resolved). */
typedef struct win {
    int64_t out, pb, pe;
} win;

static win onnx_window(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe,
                       plx_auto_pad ap, bool ceil_mode) {
    win w = {0, pb, pe};
    int64_t ek = (k - 1) * d + 1;
    if (ap == PLX_AUTO_PAD_SAME_UPPER || ap == PLX_AUTO_PAD_SAME_LOWER) {
        w.out = (in + s - 1) / s;
        int64_t total = (w.out - 1) * s + ek - in;
        total = total < 0 ? 0 : total;
        /* SAME_UPPER puts the odd pad at the end, SAME_LOWER at the start. */
        w.pb = ap == PLX_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
        w.pe = total - w.pb;
    } else if (ap == PLX_AUTO_PAD_VALID) {
        w.pb = w.pe = 0;
        w.out = (in - ek) / s + 1;
    } else {
        int64_t span = in + pb + pe - ek;
        w.out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
        /* A window that would start in the right padding is dropped. */
        if (ceil_mode && (w.out - 1) * s >= in + pb) {
            w.out--;
        }
    }
    return w;
}

/* Spatial geometry with two slots; a 1-D operator uses slot 1 and a
 * trivial slot 0 (size 1, kernel 1). */
typedef struct sp {
    int64_t in[2], k[2], s[2], d[2], pb[2], pe[2], out[2];
} sp;

static sp window_geom(uint32_t ns, const int64_t *in, const int64_t *k, const int64_t *s,
                      const int64_t *d, const int64_t *pb, const int64_t *pe, plx_auto_pad ap,
                      bool ceil_mode) {
    sp g;
    for (int slot = 0; slot < 2; slot++) {
        g.in[slot] = g.k[slot] = g.s[slot] = g.d[slot] = g.out[slot] = 1;
        g.pb[slot] = g.pe[slot] = 0;
    }
    for (uint32_t i = 0; i < ns; i++) {
        uint32_t slot = 2 - ns + i;
        win w = onnx_window(in[i], k[i], s[i], d[i], pb[i], pe[i], ap, ceil_mode);
        g.in[slot] = in[i];
        g.k[slot] = k[i];
        g.s[slot] = s[i];
        g.d[slot] = d[i];
        g.pb[slot] = w.pb;
        g.pe[slot] = w.pe;
        g.out[slot] = w.out;
    }
    return g;
}

/* ONNX Conv: Y[n,m] = B[m] + sum over the group's channels and the kernel. */
static void ref_conv(const float *x, const float *w, const float *b, float *y, int64_t N,
                     int64_t C, int64_t M, int64_t group, const sp *g) {
    int64_t cg = C / group, mg = M / group;
    for (int64_t n = 0; n < N; n++) {
        for (int64_t m = 0; m < M; m++) {
            int64_t gi = m / mg;
            for (int64_t oh = 0; oh < g->out[0]; oh++) {
                for (int64_t ow = 0; ow < g->out[1]; ow++) {
                    double acc = b ? b[m] : 0.0;
                    for (int64_t c = 0; c < cg; c++) {
                        for (int64_t kh = 0; kh < g->k[0]; kh++) {
                            for (int64_t kw = 0; kw < g->k[1]; kw++) {
                                int64_t ih = oh * g->s[0] - g->pb[0] + kh * g->d[0];
                                int64_t iw = ow * g->s[1] - g->pb[1] + kw * g->d[1];
                                if (ih < 0 || ih >= g->in[0] || iw < 0 || iw >= g->in[1]) {
                                    continue;
                                }
                                acc += (double)x[((n * C + gi * cg + c) * g->in[0] + ih) * g->in[1] + iw] *
                                       w[((m * cg + c) * g->k[0] + kh) * g->k[1] + kw];
                            }
                        }
                    }
                    y[((n * M + m) * g->out[0] + oh) * g->out[1] + ow] = (float)acc;
                }
            }
        }
    }
}

/* ONNX ConvTranspose: every input element scatters X * W[c, m] to
 * o = i * stride + k * dilation - pads_begin. W is [C, M/group, k...]. */
static void ref_conv_transpose(const float *x, const float *w, const float *b, float *y,
                               int64_t N, int64_t C, int64_t mg, int64_t group, const sp *g) {
    int64_t cg = C / group, M = mg * group;
    size_t ny = (size_t)(N * M * g->out[0] * g->out[1]);
    for (size_t i = 0; i < ny; i++) {
        y[i] = b ? b[(i / (size_t)(g->out[0] * g->out[1])) % (size_t)M] : 0.0f;
    }
    for (int64_t n = 0; n < N; n++) {
        for (int64_t c = 0; c < C; c++) {
            int64_t gi = c / cg;
            for (int64_t ih = 0; ih < g->in[0]; ih++) {
                for (int64_t iw = 0; iw < g->in[1]; iw++) {
                    float xv = x[((n * C + c) * g->in[0] + ih) * g->in[1] + iw];
                    for (int64_t m = 0; m < mg; m++) {
                        for (int64_t kh = 0; kh < g->k[0]; kh++) {
                            for (int64_t kw = 0; kw < g->k[1]; kw++) {
                                int64_t oh = ih * g->s[0] + kh * g->d[0] - g->pb[0];
                                int64_t ow = iw * g->s[1] + kw * g->d[1] - g->pb[1];
                                if (oh < 0 || oh >= g->out[0] || ow < 0 || ow >= g->out[1]) {
                                    continue;
                                }
                                y[((n * M + gi * mg + m) * g->out[0] + oh) * g->out[1] + ow] +=
                                    xv * w[((c * mg + m) * g->k[0] + kh) * g->k[1] + kw];
                            }
                        }
                    }
                }
            }
        }
    }
}

/* ONNX MaxPool / AveragePool. Average divides by the taps inside X, or
 * (count_include_pad) inside X plus its pads; taps beyond the pads, which
 * ceil_mode creates, never count (ONNX reference, PyTorch, ONNX Runtime). */
static void ref_pool(const float *x, float *y, int64_t NC, const sp *g, bool is_max,
                     bool count_include_pad) {
    for (int64_t nc = 0; nc < NC; nc++) {
        for (int64_t oh = 0; oh < g->out[0]; oh++) {
            for (int64_t ow = 0; ow < g->out[1]; ow++) {
                double best = -INFINITY, sum = 0.0;
                int64_t real = 0, padded = 0;
                for (int64_t kh = 0; kh < g->k[0]; kh++) {
                    for (int64_t kw = 0; kw < g->k[1]; kw++) {
                        int64_t ih = oh * g->s[0] - g->pb[0] + kh * g->d[0];
                        int64_t iw = ow * g->s[1] - g->pb[1] + kw * g->d[1];
                        if (ih >= -g->pb[0] && ih < g->in[0] + g->pe[0] && iw >= -g->pb[1] &&
                            iw < g->in[1] + g->pe[1]) {
                            padded++;
                        }
                        if (ih < 0 || ih >= g->in[0] || iw < 0 || iw >= g->in[1]) {
                            continue;
                        }
                        double v = x[(nc * g->in[0] + ih) * g->in[1] + iw];
                        best = v > best ? v : best;
                        sum += v;
                        real++;
                    }
                }
                y[(nc * g->out[0] + oh) * g->out[1] + ow] =
                    (float)(is_max ? best : sum / (double)(count_include_pad ? padded : real));
            }
        }
    }
}

/* ------------------------------------------------------------------------ */
/* conv                                                                       */
/* ------------------------------------------------------------------------ */

Test(conv, conv2d_bias_by_hand) {
    float x[16], w[18] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0};
    float b[2] = {0.5f, -1.0f};
    seq(x, 16, 0.0f, 1.0f);
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    targ ins[] = {IN(F32, DIMS(1, 1, 4, 4), x), CONST(F32, DIMS(2, 1, 3, 3), w),
                  CONST(F32, DIMS(2), b)};
    tout y;
    RUN(PLX_OP_CONV, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 2, 2, 2));
    const float want[] = {45.5f, 54.5f, 81.5f, 90.5f, 4, 5, 8, 9};
    expect_f32(&y, want, COUNT(want), TOL);
    free_outs(&y, 1);
}

typedef struct conv_case {
    uint32_t ns;   /* spatial dims: 1 or 2 */
    int64_t n, c, m;
    int64_t in[2], k[2];
    bool bias;
    int64_t want[2]; /* output spatial dims, derived by hand */
} conv_case;

static void check_conv(const plx_conv_desc *d, const conv_case *cc) {
    uint32_t r = 2 + cc->ns;
    int64_t xd[4] = {cc->n, cc->c, cc->in[0], cc->in[1]};
    int64_t wd[4] = {cc->m, cc->c / d->group, cc->k[0], cc->k[1]};
    int64_t bd[1] = {cc->m};
    int64_t yd[4] = {cc->n, cc->m, cc->want[0], cc->want[1]};
    size_t nx = numel(xd, r), nw = numel(wd, r), ny = numel(yd, r);
    float *x = falloc(nx), *w = falloc(nw), *b = falloc((size_t)cc->m), *ref = falloc(ny);
    gen(x, nx, 1);
    gen(w, nw, 2);
    gen(b, (size_t)cc->m, 3);
    sp g = window_geom(cc->ns, cc->in, cc->k, d->strides, d->dilations, d->pads_begin,
                       d->pads_end, d->auto_pad, false);
    for (uint32_t i = 0; i < cc->ns; i++) {
        cr_assert(eq(i64, g.out[2 - cc->ns + i], cc->want[i]), "reference geometry, dim %u", i);
    }
    targ ins[3] = {{F32, xd, r, x, false}, {F32, wd, r, w, true}, {F32, bd, 1, b, true}};
    tout y;
    run_op(PLX_OP_CONV, d, ins, cc->bias ? 3 : 2, &y, 1);
    expect_shape_(&y, F32, yd, r);
    ref_conv(x, w, cc->bias ? b : NULL, ref, cc->n, cc->c, cc->m, d->group, &g);
    expect_f32(&y, ref, ny, TOL);
    free_outs(&y, 1);
    free(x);
    free(w);
    free(b);
    free(ref);
}

Test(conv, conv2d_strides_dilations_asymmetric_pads) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    d.strides[0] = 2;
    d.dilations[1] = 2;
    d.pads_begin[0] = 1;
    d.pads_end[1] = 2;
    /* H: (5 + 1 + 0 - 2) / 2 + 1 = 3; W: (6 + 0 + 2 - 5) / 1 + 1 = 4 */
    conv_case cc = {2, 1, 2, 3, {5, 6}, {2, 3}, true, {3, 4}};
    check_conv(&d, &cc);
}

Test(conv, conv2d_group_2_stride_and_pads) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    d.group = 2;
    d.strides[0] = 2;
    d.pads_begin[0] = d.pads_begin[1] = d.pads_end[0] = d.pads_end[1] = 1;
    /* H: (4 + 2 - 2) / 2 + 1 = 3; W: (4 + 2 - 2) + 1 = 5 */
    conv_case cc = {2, 2, 4, 4, {4, 4}, {2, 2}, false, {3, 5}};
    check_conv(&d, &cc);
}

/* Depthwise with a channel multiplier of 2; stride 2 and kernel 2 over 5
 * leave one pad: SAME_UPPER puts it at the end, SAME_LOWER at the start. */
Test(conv, depthwise_same_upper) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    d.group = 3;
    d.strides[0] = d.strides[1] = 2;
    d.auto_pad = PLX_AUTO_PAD_SAME_UPPER;
    conv_case cc = {2, 1, 3, 6, {5, 5}, {2, 2}, true, {3, 3}};
    check_conv(&d, &cc);
}

Test(conv, depthwise_same_lower) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    d.group = 3;
    d.strides[0] = d.strides[1] = 2;
    d.auto_pad = PLX_AUTO_PAD_SAME_LOWER;
    conv_case cc = {2, 1, 3, 6, {5, 5}, {2, 2}, true, {3, 3}};
    check_conv(&d, &cc);
}

Test(conv, same_lower_by_hand) {
    /* X [1,1,1,3] = 1 2 3, kernel [1,2] = 10 1, SAME_LOWER: one pad at the
     * start: 0*10+1*1, 1*10+2*1, 2*10+3*1. SAME_UPPER: pad at the end. */
    float x[3] = {1, 2, 3}, w[2] = {10, 1};
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    d.auto_pad = PLX_AUTO_PAD_SAME_LOWER;
    targ ins[] = {IN(F32, DIMS(1, 1, 1, 3), x), CONST(F32, DIMS(1, 1, 1, 2), w)};
    tout y;
    RUN(PLX_OP_CONV, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 1, 1, 3));
    const float lower[] = {1, 12, 23};
    expect_f32(&y, lower, 3, TOL);
    free_outs(&y, 1);
    d.auto_pad = PLX_AUTO_PAD_SAME_UPPER;
    RUN(PLX_OP_CONV, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 1, 1, 3));
    const float upper[] = {12, 23, 30};
    expect_f32(&y, upper, 3, TOL);
    free_outs(&y, 1);
}

Test(conv, conv1d_group_strides_dilations_pads) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    d.group = 2;
    d.strides[0] = 2;
    d.dilations[0] = 2;
    d.pads_begin[0] = 1;
    d.pads_end[0] = 2;
    /* (7 + 3 - 5) / 2 + 1 = 3 */
    conv_case cc = {1, 2, 4, 2, {7}, {3}, true, {3}};
    check_conv(&d, &cc);
}

Test(conv, conv1d_same_lower_dilated) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    d.strides[0] = 2;
    d.dilations[0] = 3;
    d.auto_pad = PLX_AUTO_PAD_SAME_LOWER;
    /* ceil(5 / 2) = 3; pads total (3-1)*2 + 4 - 5 = 3: 2 before, 1 after */
    conv_case cc = {1, 1, 1, 1, {5}, {2}, false, {3}};
    check_conv(&d, &cc);
}

Test(conv, valid_ignores_pads) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    d.strides[0] = d.strides[1] = 2;
    d.auto_pad = PLX_AUTO_PAD_VALID;
    d.pads_begin[0] = d.pads_begin[1] = d.pads_end[0] = d.pads_end[1] = 1; /* not used */
    /* (5 - 2) / 2 + 1 = 2 */
    conv_case cc = {2, 1, 2, 1, {5, 5}, {2, 2}, true, {2, 2}};
    check_conv(&d, &cc);
}

/* ------------------------------------------------------------------------ */
/* conv_transpose                                                             */
/* ------------------------------------------------------------------------ */

typedef struct convt_case {
    uint32_t ns;
    int64_t n, c, mg;
    int64_t in[2], k[2];
    bool bias;
    int64_t want[2];
} convt_case;

static void check_conv_transpose(const plx_conv_transpose_desc *d, const convt_case *cc) {
    uint32_t r = 2 + cc->ns;
    int64_t m = cc->mg * d->group;
    int64_t xd[4] = {cc->n, cc->c, cc->in[0], cc->in[1]};
    int64_t wd[4] = {cc->c, cc->mg, cc->k[0], cc->k[1]};
    int64_t bd[1] = {m};
    int64_t yd[4] = {cc->n, m, cc->want[0], cc->want[1]};
    size_t nx = numel(xd, r), nw = numel(wd, r), ny = numel(yd, r);
    float *x = falloc(nx), *w = falloc(nw), *b = falloc((size_t)m), *ref = falloc(ny);
    gen(x, nx, 4);
    gen(w, nw, 5);
    gen(b, (size_t)m, 6);
    /* Output size and pads (ONNX ConvTranspose). */
    sp g;
    for (int slot = 0; slot < 2; slot++) {
        g.in[slot] = g.k[slot] = g.s[slot] = g.d[slot] = g.out[slot] = 1;
        g.pb[slot] = g.pe[slot] = 0;
    }
    for (uint32_t i = 0; i < cc->ns; i++) {
        uint32_t slot = 2 - cc->ns + i;
        int64_t ek = (cc->k[i] - 1) * d->dilations[i] + 1;
        int64_t full = d->strides[i] * (cc->in[i] - 1) + d->output_padding[i] + ek;
        int64_t pb = d->pads_begin[i], pe = d->pads_end[i], out;
        if (d->auto_pad == PLX_AUTO_PAD_SAME_UPPER || d->auto_pad == PLX_AUTO_PAD_SAME_LOWER) {
            out = cc->in[i] * d->strides[i];
            int64_t total = full - out;
            pb = d->auto_pad == PLX_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            pe = total - pb;
        } else if (d->auto_pad == PLX_AUTO_PAD_VALID) {
            pb = pe = 0;
            out = full;
        } else {
            out = full - pb - pe;
        }
        g.in[slot] = cc->in[i];
        g.k[slot] = cc->k[i];
        g.s[slot] = d->strides[i];
        g.d[slot] = d->dilations[i];
        g.pb[slot] = pb;
        g.pe[slot] = pe;
        g.out[slot] = out;
        cr_assert(eq(i64, out, cc->want[i]), "reference geometry, dim %u", i);
    }
    targ ins[3] = {{F32, xd, r, x, false}, {F32, wd, r, w, true}, {F32, bd, 1, b, true}};
    tout y;
    run_op(PLX_OP_CONV_TRANSPOSE, d, ins, cc->bias ? 3 : 2, &y, 1);
    expect_shape_(&y, F32, yd, r);
    ref_conv_transpose(x, w, cc->bias ? b : NULL, ref, cc->n, cc->c, cc->mg, d->group, &g);
    expect_f32(&y, ref, ny, TOL);
    free_outs(&y, 1);
    free(x);
    free(w);
    free(b);
    free(ref);
}

Test(conv_transpose, by_hand_stride_2) {
    /* X [1,1,1,2] = 1 2, W [1,1,1,2] = 1 10, stride 2: each input writes two
     * outputs: 1 10 2 20; bias 0.5. */
    float x[2] = {1, 2}, w[2] = {1, 10}, b[1] = {0.5f};
    plx_conv_transpose_desc d = PLX_CONV_TRANSPOSE_DESC_INIT;
    d.strides[1] = 2;
    targ ins[] = {IN(F32, DIMS(1, 1, 1, 2), x), CONST(F32, DIMS(1, 1, 1, 2), w),
                  CONST(F32, DIMS(1), b)};
    tout y;
    RUN(PLX_OP_CONV_TRANSPOSE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 1, 1, 4));
    const float want[] = {1.5f, 10.5f, 2.5f, 20.5f};
    expect_f32(&y, want, 4, TOL);
    free_outs(&y, 1);
}

Test(conv_transpose, conv2d_strides_pads_output_padding) {
    plx_conv_transpose_desc d = PLX_CONV_TRANSPOSE_DESC_INIT;
    d.strides[0] = d.strides[1] = 2;
    d.pads_begin[0] = 1;
    d.pads_end[1] = 1;
    d.output_padding[0] = 1;
    /* H: 2*2 + 1 + 3 - 1 - 0 = 7; W: 2*2 + 0 + 3 - 0 - 1 = 6 */
    convt_case cc = {2, 1, 2, 3, {3, 3}, {3, 3}, true, {7, 6}};
    check_conv_transpose(&d, &cc);
}

Test(conv_transpose, conv1d_group_dilation_output_padding) {
    plx_conv_transpose_desc d = PLX_CONV_TRANSPOSE_DESC_INIT;
    d.group = 2;
    d.strides[0] = 3;
    d.dilations[0] = 2;
    d.pads_begin[0] = d.pads_end[0] = 1;
    d.output_padding[0] = 1;
    /* 3*2 + 1 + 3 - 2 = 8 */
    convt_case cc = {1, 1, 4, 1, {3}, {2}, true, {8}};
    check_conv_transpose(&d, &cc);
}

Test(conv_transpose, conv2d_group_dilations_batch) {
    plx_conv_transpose_desc d = PLX_CONV_TRANSPOSE_DESC_INIT;
    d.group = 2;
    d.strides[1] = 2;
    d.dilations[0] = 2;
    /* H: 1*1 + 3 = 4; W: 2*2 + 2 = 6 */
    convt_case cc = {2, 2, 4, 2, {2, 3}, {2, 2}, false, {4, 6}};
    check_conv_transpose(&d, &cc);
}

/* output_shape given: the pads come from it (ONNX ConvTranspose-11:
 * total = stride*(in-1) + output_padding + ek - output_shape; SAME_UPPER
 * puts total/2 at the start, anything else total - total/2). Values as in
 * ONNX Runtime's test "ConvTranspose output_shape with even strides odd
 * kernel autopad NOTSET" (checked by hand: y[0][1] = 1 + x01 * w10 = 5). */
Test(conv_transpose, output_shape_notset_derives_pads) {
    float x[4] = {0, 1, 2, 3}, w[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, b[1] = {1};
    plx_conv_transpose_desc d = PLX_CONV_TRANSPOSE_DESC_INIT;
    d.strides[0] = d.strides[1] = 2;
    d.output_shape[0] = d.output_shape[1] = 4;
    targ ins[] = {IN(F32, DIMS(1, 1, 2, 2), x), CONST(F32, DIMS(1, 1, 3, 3), w),
                  CONST(F32, DIMS(1), b)};
    tout y;
    RUN(PLX_OP_CONV_TRANSPOSE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 1, 4, 4));
    const float want[] = {1, 5, 6, 7, 5, 17, 15, 19, 11, 25, 16, 19, 17, 40, 25, 28};
    expect_f32(&y, want, 16, TOL);
    free_outs(&y, 1);
}

Test(conv_transpose, output_shape_with_same_upper) {
    float x[4] = {0, 1, 2, 3}, w[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, b[1] = {1};
    plx_conv_transpose_desc d = PLX_CONV_TRANSPOSE_DESC_INIT;
    d.strides[0] = d.strides[1] = 2;
    d.output_shape[0] = d.output_shape[1] = 4;
    d.auto_pad = PLX_AUTO_PAD_SAME_UPPER;
    targ ins[] = {IN(F32, DIMS(1, 1, 2, 2), x), CONST(F32, DIMS(1, 1, 3, 3), w),
                  CONST(F32, DIMS(1), b)};
    tout y;
    /* total pad 2*1 + 3 - 4 = 1: SAME_UPPER puts it at the end */
    sp g = {{2, 2}, {3, 3}, {2, 2}, {1, 1}, {0, 0}, {1, 1}, {4, 4}};
    float ref[16];
    ref_conv_transpose(x, w, b, ref, 1, 1, 1, 1, &g);
    RUN(PLX_OP_CONV_TRANSPOSE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 1, 4, 4));
    expect_f32(&y, ref, 16, TOL);
    free_outs(&y, 1);
}

Test(conv_transpose, valid_ignores_pads) {
    plx_conv_transpose_desc d = PLX_CONV_TRANSPOSE_DESC_INIT;
    d.strides[0] = d.strides[1] = 2;
    d.output_padding[1] = 1;
    d.pads_begin[0] = d.pads_end[1] = 1; /* not used */
    d.auto_pad = PLX_AUTO_PAD_VALID;
    /* the full size: H 2*1 + 2 = 4; W 2*2 + 1 + 2 = 7 */
    convt_case cc = {2, 1, 2, 2, {2, 3}, {2, 2}, true, {4, 7}};
    check_conv_transpose(&d, &cc);
}

Test(conv_transpose, same_upper_and_lower) {
    plx_conv_transpose_desc d = PLX_CONV_TRANSPOSE_DESC_INIT;
    d.strides[0] = d.strides[1] = 2;
    d.auto_pad = PLX_AUTO_PAD_SAME_UPPER;
    /* out = in * stride = 6; total pad 2*2 + 3 - 6 = 1 */
    convt_case cc = {2, 1, 1, 1, {3, 3}, {3, 3}, false, {6, 6}};
    check_conv_transpose(&d, &cc);
    d.auto_pad = PLX_AUTO_PAD_SAME_LOWER;
    check_conv_transpose(&d, &cc);
}

/* ------------------------------------------------------------------------ */
/* fully_connected, matmul, gemm                                              */
/* ------------------------------------------------------------------------ */

/* X [rows, K] times W' [K, M] plus B. */
static void ref_fc(const float *x, const float *w, bool wt, const float *b, float *y, int64_t rows,
                   int64_t k, int64_t m) {
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < m; j++) {
            double acc = b ? b[j] : 0.0;
            for (int64_t i = 0; i < k; i++) {
                acc += (double)x[r * k + i] * (wt ? w[j * k + i] : w[i * m + j]);
            }
            y[r * m + j] = (float)acc;
        }
    }
}

Test(fully_connected, weights_k_by_m_with_bias) {
    float x[6], w[12], b[4], ref[8];
    gen(x, 6, 1);
    gen(w, 12, 2);
    gen(b, 4, 3);
    plx_fully_connected_desc d = PLX_FULLY_CONNECTED_DESC_INIT;
    targ ins[] = {IN(F32, DIMS(2, 3), x), CONST(F32, DIMS(3, 4), w), CONST(F32, DIMS(4), b)};
    tout y;
    RUN(PLX_OP_FULLY_CONNECTED, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 4));
    ref_fc(x, w, false, b, ref, 2, 3, 4);
    expect_f32(&y, ref, 8, TOL);
    free_outs(&y, 1);
}

Test(fully_connected, weights_transposed_m_by_k) {
    float x[6], w[12], b[4], ref[8];
    gen(x, 6, 4);
    gen(w, 12, 5);
    gen(b, 4, 6);
    plx_fully_connected_desc d = PLX_FULLY_CONNECTED_DESC_INIT;
    d.weights_transposed = true;
    targ ins[] = {IN(F32, DIMS(2, 3), x), CONST(F32, DIMS(4, 3), w), CONST(F32, DIMS(4), b)};
    tout y;
    RUN(PLX_OP_FULLY_CONNECTED, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 4));
    ref_fc(x, w, true, b, ref, 2, 3, 4);
    expect_f32(&y, ref, 8, TOL);
    free_outs(&y, 1);
}

Test(fully_connected, rank3_input_keeps_leading_dims) {
    float x[12], w[15], ref[20];
    gen(x, 12, 7);
    gen(w, 15, 8);
    plx_fully_connected_desc d = PLX_FULLY_CONNECTED_DESC_INIT;
    d.weights_transposed = true;
    targ ins[] = {IN(F32, DIMS(2, 2, 3), x), CONST(F32, DIMS(5, 3), w)};
    tout y;
    RUN(PLX_OP_FULLY_CONNECTED, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 2, 5));
    ref_fc(x, w, true, NULL, ref, 4, 3, 5);
    expect_f32(&y, ref, 20, TOL);
    free_outs(&y, 1);
}

Test(matmul, vector_times_matrix) {
    float a[3] = {1, 2, 3}, b[6] = {1, 2, 3, 4, 5, 6};
    targ ins[] = {IN(F32, DIMS(3), a), CONST(F32, DIMS(3, 2), b)};
    tout y;
    RUN(PLX_OP_MATMUL, NULL, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2));
    const float want[] = {1 + 6 + 15, 2 + 8 + 18};
    expect_f32(&y, want, 2, TOL);
    free_outs(&y, 1);
}

Test(matmul, matrix_times_vector) {
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {1, 0, -1};
    targ ins[] = {IN(F32, DIMS(2, 3), a), CONST(F32, DIMS(3), b)};
    tout y;
    RUN(PLX_OP_MATMUL, NULL, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2));
    const float want[] = {-2, -2};
    expect_f32(&y, want, 2, TOL);
    free_outs(&y, 1);
}

Test(matmul, vector_dot_vector_is_a_scalar) {
    float a[3] = {1, 2, 3}, b[3] = {4, 5, 6};
    targ ins[] = {IN(F32, DIMS(3), a), IN(F32, DIMS(3), b)};
    tout y;
    RUN(PLX_OP_MATMUL, NULL, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, SCALAR);
    const float want[] = {32};
    expect_f32(&y, want, 1, TOL);
    free_outs(&y, 1);
}

Test(matmul, batched_broadcast) {
    /* A [2,1,2,3] x B [3,3,2] -> [2,3,2,2]: A's batch dim 1 meets B's 3. */
    float a[12], b[18], ref[24];
    gen(a, 12, 1);
    gen(b, 18, 2);
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 3; j++) {
            for (int r = 0; r < 2; r++) {
                for (int c = 0; c < 2; c++) {
                    double acc = 0;
                    for (int k = 0; k < 3; k++) {
                        acc += (double)a[(i * 2 + r) * 3 + k] * b[(j * 3 + k) * 2 + c];
                    }
                    ref[((i * 3 + j) * 2 + r) * 2 + c] = (float)acc;
                }
            }
        }
    }
    targ ins[] = {IN(F32, DIMS(2, 1, 2, 3), a), CONST(F32, DIMS(3, 3, 2), b)};
    tout y;
    RUN(PLX_OP_MATMUL, NULL, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3, 2, 2));
    expect_f32(&y, ref, 24, TOL);
    free_outs(&y, 1);
}

/* numpy's rules where one side is 1-D or has no batch dims. */
Test(matmul, batch_from_one_side) {
    float a[6], b[24], v[3], ref[16];
    gen(a, 6, 3);
    gen(b, 24, 4);
    gen(v, 3, 5);
    tout y;
    /* A [2,3] x B [2,3,4] -> [2,2,4] */
    for (int n = 0; n < 2; n++) {
        for (int i = 0; i < 2; i++) {
            for (int j = 0; j < 4; j++) {
                double acc = 0;
                for (int k = 0; k < 3; k++) {
                    acc += (double)a[i * 3 + k] * b[(n * 3 + k) * 4 + j];
                }
                ref[(n * 2 + i) * 4 + j] = (float)acc;
            }
        }
    }
    targ ab[] = {IN(F32, DIMS(2, 3), a), CONST(F32, DIMS(2, 3, 4), b)};
    RUN(PLX_OP_MATMUL, NULL, ab, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 2, 4));
    expect_f32(&y, ref, 16, TOL);
    free_outs(&y, 1);

    /* A [3] x B [2,3,4] -> [2,4] */
    for (int n = 0; n < 2; n++) {
        for (int j = 0; j < 4; j++) {
            double acc = 0;
            for (int k = 0; k < 3; k++) {
                acc += (double)v[k] * b[(n * 3 + k) * 4 + j];
            }
            ref[n * 4 + j] = (float)acc;
        }
    }
    targ vb[] = {IN(F32, DIMS(3), v), CONST(F32, DIMS(2, 3, 4), b)};
    RUN(PLX_OP_MATMUL, NULL, vb, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 4));
    expect_f32(&y, ref, 8, TOL);
    free_outs(&y, 1);

    /* A [2,1,3] (b reused as data) x B [3] -> [2,1] */
    for (int n = 0; n < 2; n++) {
        double acc = 0;
        for (int k = 0; k < 3; k++) {
            acc += (double)b[n * 3 + k] * v[k];
        }
        ref[n] = (float)acc;
    }
    targ av[] = {IN(F32, DIMS(2, 1, 3), b), CONST(F32, DIMS(3), v)};
    RUN(PLX_OP_MATMUL, NULL, av, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 1));
    expect_f32(&y, ref, 2, TOL);
    free_outs(&y, 1);
}

Test(matmul, int32) {
    int32_t a[4] = {1, -2, 3, 4}, b[6] = {5, 6, 7, -8, 9, 10};
    targ ins[] = {IN(I32, DIMS(2, 2), a), CONST(I32, DIMS(2, 3), b)};
    tout y;
    RUN(PLX_OP_MATMUL, NULL, ins, &y, 1);
    EXPECT_SHAPE(&y, I32, DIMS(2, 3));
    const int32_t want[] = {5 + 16, 6 - 18, 7 - 20, 15 - 32, 18 + 36, 21 + 40};
    expect_i32(&y, want, 6);
    free_outs(&y, 1);
}

/* Y = alpha * A' B' + beta * C, with A [M,K] or [K,M] (trans_a). */
static void ref_gemm(const float *a, const float *b, const float *c, const int64_t *cdims,
                     uint32_t crank, float *y, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                     float alpha, float beta) {
    const int64_t out[2] = {m, n};
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double acc = 0.0;
            for (int64_t p = 0; p < k; p++) {
                acc += (double)(ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
            }
            double cv = c ? c[bcast_off((size_t)(i * n + j), out, 2, cdims, crank)] : 0.0;
            y[i * n + j] = (float)(alpha * acc + beta * cv);
        }
    }
}

Test(gemm, transposes_alpha_beta_row_bias) {
    float a[6], b[12], c[4], ref[8];
    gen(a, 6, 1);
    gen(b, 12, 2);
    gen(c, 4, 3);
    plx_gemm_desc d = PLX_GEMM_DESC_INIT;
    d.trans_a = d.trans_b = true;
    d.alpha = 0.5f;
    d.beta = 2.0f;
    /* A [3,2] transposed is [2,3]; B [4,3] transposed is [3,4]; C [4]. */
    targ ins[] = {IN(F32, DIMS(3, 2), a), CONST(F32, DIMS(4, 3), b), CONST(F32, DIMS(4), c)};
    tout y;
    RUN(PLX_OP_GEMM, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 4));
    ref_gemm(a, b, c, DIMS(4), ref, 2, 4, 3, true, true, 0.5f, 2.0f);
    expect_f32(&y, ref, 8, TOL);
    free_outs(&y, 1);
}

Test(gemm, column_bias_trans_a_only) {
    float a[6], b[8], c[2], ref[8];
    gen(a, 6, 4);
    gen(b, 8, 5);
    gen(c, 2, 6);
    plx_gemm_desc d = PLX_GEMM_DESC_INIT;
    d.trans_a = true;
    /* A [2,2] transposed x B [2,4] plus C [2,1] along the rows. */
    targ ins[] = {IN(F32, DIMS(2, 2), a), CONST(F32, DIMS(2, 4), b), CONST(F32, DIMS(2, 1), c)};
    tout y;
    RUN(PLX_OP_GEMM, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 4));
    ref_gemm(a, b, c, DIMS(2, 1), ref, 2, 4, 2, true, false, 1.0f, 1.0f);
    expect_f32(&y, ref, 8, TOL);
    free_outs(&y, 1);
}

Test(gemm, scalar_c_and_trans_b) {
    float a[6], b[6], c[1] = {3.0f}, ref[4];
    gen(a, 6, 7);
    gen(b, 6, 8);
    plx_gemm_desc d = PLX_GEMM_DESC_INIT;
    d.trans_b = true;
    d.beta = -1.0f;
    targ ins[] = {IN(F32, DIMS(2, 3), a), CONST(F32, DIMS(2, 3), b), CONST(F32, SCALAR, c)};
    tout y;
    RUN(PLX_OP_GEMM, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 2));
    ref_gemm(a, b, c, NULL, 0, ref, 2, 2, 3, false, true, 1.0f, -1.0f);
    expect_f32(&y, ref, 4, TOL);
    free_outs(&y, 1);
}

Test(gemm, without_c) {
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1};
    plx_gemm_desc d = PLX_GEMM_DESC_INIT;
    d.alpha = 2.0f;
    targ ins[] = {IN(F32, DIMS(2, 3), a), IN(F32, DIMS(3, 2), b)};
    tout y;
    RUN(PLX_OP_GEMM, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 2));
    const float want[] = {2 * 4, 2 * 5, 2 * 10, 2 * 11};
    expect_f32(&y, want, 4, TOL);
    free_outs(&y, 1);
}

/* Products whose constant weights the GEMM reads packed (cpu_ref packs them
 * once, when the workload is created: kernels/kernels_matmul.c): more rows
 * than the matrix-vector paths take, K over two KC passes (256) and N past
 * a whole number of NR panels, for each operator and layout of B. */
#define PK_ROWS 20
#define PK_K 300
#define PK_N 70

static float *packed_case_buffer(size_t n, int seed) {
    float *x = malloc(n * sizeof *x);
    cr_assert(not(zero(ptr, x)));
    gen(x, n, seed);
    for (size_t i = 0; i < n; i++) {
        x[i] *= 0.125f; /* sums of 300 products within TOL_LOOSE */
    }
    return x;
}

Test(fully_connected, packed_weights_both_layouts) {
    float *x = packed_case_buffer(PK_ROWS * PK_K, 21), *w = packed_case_buffer(PK_K * PK_N, 22);
    float *b = packed_case_buffer(PK_N, 23), *ref = packed_case_buffer(PK_ROWS * PK_N, 0);
    for (int t = 0; t < 2; t++) {
        plx_fully_connected_desc d = PLX_FULLY_CONNECTED_DESC_INIT;
        d.weights_transposed = t == 1;
        targ ins[] = {IN(F32, DIMS(PK_ROWS, PK_K), x),
                      t ? CONST(F32, DIMS(PK_N, PK_K), w) : CONST(F32, DIMS(PK_K, PK_N), w),
                      CONST(F32, DIMS(PK_N), b)};
        tout y;
        RUN(PLX_OP_FULLY_CONNECTED, &d, ins, &y, 1);
        EXPECT_SHAPE(&y, F32, DIMS(PK_ROWS, PK_N));
        ref_fc(x, w, t == 1, b, ref, PK_ROWS, PK_K, PK_N);
        expect_f32(&y, ref, PK_ROWS * PK_N, TOL_LOOSE);
        free_outs(&y, 1);
    }
    free(x);
    free(w);
    free(b);
    free(ref);
}

/* A [2, 10, K] against one B [K, N]: the batches fold into 20 rows. */
Test(matmul, packed_weights_shared_by_batches) {
    float *a = packed_case_buffer(PK_ROWS * PK_K, 24), *b = packed_case_buffer(PK_K * PK_N, 25);
    float *ref = packed_case_buffer(PK_ROWS * PK_N, 0);
    targ ins[] = {IN(F32, DIMS(2, PK_ROWS / 2, PK_K), a), CONST(F32, DIMS(PK_K, PK_N), b)};
    tout y;
    RUN(PLX_OP_MATMUL, NULL, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, PK_ROWS / 2, PK_N));
    ref_fc(a, b, false, NULL, ref, PK_ROWS, PK_K, PK_N);
    expect_f32(&y, ref, PK_ROWS * PK_N, TOL_LOOSE);
    free_outs(&y, 1);
    free(a);
    free(b);
    free(ref);
}

Test(gemm, packed_weights_both_layouts) {
    float *a = packed_case_buffer(PK_ROWS * PK_K, 26), *b = packed_case_buffer(PK_K * PK_N, 27);
    float *c = packed_case_buffer(PK_N, 28), *ref = packed_case_buffer(PK_ROWS * PK_N, 0);
    for (int t = 0; t < 2; t++) {
        plx_gemm_desc d = PLX_GEMM_DESC_INIT;
        d.trans_b = t == 1;
        d.alpha = 0.5f;
        targ ins[] = {IN(F32, DIMS(PK_ROWS, PK_K), a),
                      t ? CONST(F32, DIMS(PK_N, PK_K), b) : CONST(F32, DIMS(PK_K, PK_N), b),
                      CONST(F32, DIMS(PK_N), c)};
        tout y;
        RUN(PLX_OP_GEMM, &d, ins, &y, 1);
        EXPECT_SHAPE(&y, F32, DIMS(PK_ROWS, PK_N));
        ref_gemm(a, b, c, DIMS(PK_N), ref, PK_ROWS, PK_N, PK_K, false, t == 1, 0.5f, 1.0f);
        expect_f32(&y, ref, PK_ROWS * PK_N, TOL_LOOSE);
        free_outs(&y, 1);
    }
    free(a);
    free(b);
    free(c);
    free(ref);
}

/* ------------------------------------------------------------------------ */
/* pool, global_pool                                                          */
/* ------------------------------------------------------------------------ */

typedef struct pool_case {
    uint32_t ns;
    int64_t n, c;
    int64_t in[2];
    int64_t want[2];
} pool_case;

static void check_pool(const plx_pool_desc *d, const pool_case *pc) {
    uint32_t r = 2 + pc->ns;
    int64_t xd[4] = {pc->n, pc->c, pc->in[0], pc->in[1]};
    int64_t yd[4] = {pc->n, pc->c, pc->want[0], pc->want[1]};
    size_t nx = numel(xd, r), ny = numel(yd, r);
    float *x = falloc(nx), *ref = falloc(ny);
    gen(x, nx, 9);
    sp g = window_geom(pc->ns, pc->in, d->kernel, d->strides, d->dilations, d->pads_begin,
                       d->pads_end, d->auto_pad, d->ceil_mode);
    for (uint32_t i = 0; i < pc->ns; i++) {
        cr_assert(eq(i64, g.out[2 - pc->ns + i], pc->want[i]), "reference geometry, dim %u", i);
    }
    targ ins[1] = {{F32, xd, r, x, false}};
    tout y;
    RUN(PLX_OP_POOL, d, ins, &y, 1);
    expect_shape_(&y, F32, yd, r);
    ref_pool(x, ref, pc->n * pc->c, &g, d->kind == PLX_POOL_MAX, d->count_include_pad);
    expect_f32(&y, ref, ny, TOL);
    free_outs(&y, 1);
    free(x);
    free(ref);
}

Test(pool, max_ceil_mode_partial_windows) {
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    d.kernel[0] = d.kernel[1] = 2;
    d.strides[0] = d.strides[1] = 2;
    d.ceil_mode = true;
    /* ceil((5 - 2) / 2) + 1 = 3 */
    pool_case pc = {2, 1, 2, {5, 5}, {3, 3}};
    check_pool(&d, &pc);
}

Test(pool, max_ceil_mode_by_hand) {
    /* 1 x 5: windows [0,1], [2,3], [4] */
    float x[5] = {1, 5, -2, -3, 7};
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    d.kernel[0] = 2;
    d.strides[0] = 2;
    d.ceil_mode = true;
    targ ins[] = {IN(F32, DIMS(1, 1, 5), x)};
    tout y;
    RUN(PLX_OP_POOL, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 1, 3));
    const float want[] = {5, -2, 7};
    expect_f32(&y, want, 3, TOL);
    free_outs(&y, 1);
}

/* ceil_mode adds a window only when it starts inside the input or its left
 * padding (ONNX: "sliding windows that would start in the right padded
 * region are ignored"). */
Test(pool, ceil_mode_drops_window_starting_in_right_padding) {
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    d.kernel[0] = d.kernel[1] = 2;
    d.strides[0] = d.strides[1] = 3;
    d.pads_end[0] = d.pads_end[1] = 1;
    d.ceil_mode = true;
    /* ceil((5 + 1 - 2) / 3) + 1 = 3, but window 2 would start at 6 >= 5: 2 */
    pool_case pc = {2, 1, 1, {5, 5}, {2, 2}};
    check_pool(&d, &pc);
}

Test(pool, ceil_mode_1d_left_pad_counts) {
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    d.kernel[0] = 2;
    d.strides[0] = 2;
    d.pads_begin[0] = d.pads_end[0] = 1;
    d.ceil_mode = true;
    /* in 5: ceil((7 - 2) / 2) + 1 = 4, window 3 starts at 3*2 - 1 = 5 = in:
     * in the right padding, dropped: 3 */
    pool_case a = {1, 1, 2, {5}, {3}};
    check_pool(&d, &a);
    /* in 6, kernel 3: ceil((8 - 3) / 2) + 1 = 4, window 3 starts at 5 < 6: kept */
    d.kernel[0] = 3;
    pool_case b = {1, 1, 2, {6}, {4}};
    check_pool(&d, &b);
}

Test(pool, average_ceil_mode_exclude_pad) {
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    d.kernel[0] = d.kernel[1] = 3;
    d.strides[0] = d.strides[1] = 2;
    d.pads_begin[0] = d.pads_begin[1] = d.pads_end[0] = d.pads_end[1] = 1;
    d.ceil_mode = true;
    /* ceil((4 + 2 - 3) / 2) + 1 = 3 */
    pool_case pc = {2, 1, 2, {4, 4}, {3, 3}};
    check_pool(&d, &pc);
}

Test(pool, average_ceil_mode_include_pad) {
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    d.kernel[0] = d.kernel[1] = 3;
    d.strides[0] = d.strides[1] = 2;
    d.pads_begin[0] = d.pads_begin[1] = d.pads_end[0] = d.pads_end[1] = 1;
    d.ceil_mode = true;
    d.count_include_pad = true;
    pool_case pc = {2, 1, 2, {4, 4}, {3, 3}};
    check_pool(&d, &pc);
}

Test(pool, average_by_hand_include_and_exclude_pad) {
    /* 1 x 3 = 3 6 9, kernel 2, pads 1/1, stride 2: windows {pad,3}, {6,9}. */
    float x[3] = {3, 6, 9};
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    d.kernel[0] = 2;
    d.strides[0] = 2;
    d.pads_begin[0] = d.pads_end[0] = 1;
    targ ins[] = {IN(F32, DIMS(1, 1, 3), x)};
    tout y;
    RUN(PLX_OP_POOL, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 1, 2));
    const float excl[] = {3, 7.5f};
    expect_f32(&y, excl, 2, TOL);
    free_outs(&y, 1);
    d.count_include_pad = true;
    RUN(PLX_OP_POOL, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 1, 2));
    const float incl[] = {1.5f, 7.5f};
    expect_f32(&y, incl, 2, TOL);
    free_outs(&y, 1);
}

Test(pool, average_include_pad_asymmetric) {
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    d.kernel[0] = d.kernel[1] = 3;
    d.strides[0] = 2;
    d.pads_begin[0] = 1;
    d.pads_begin[1] = 2;
    d.pads_end[0] = 1;
    d.count_include_pad = true;
    /* H: (4 + 2 - 3) / 2 + 1 = 2; W: (4 + 2 - 3) + 1 = 4 */
    pool_case pc = {2, 2, 1, {4, 4}, {2, 4}};
    check_pool(&d, &pc);
}

Test(pool, max_same_lower) {
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    d.kernel[0] = 2;
    d.kernel[1] = 3;
    d.strides[0] = d.strides[1] = 2;
    d.auto_pad = PLX_AUTO_PAD_SAME_LOWER;
    /* ceil(5 / 2) = 3; pads H 1 (at the start), W 2 (1 + 1) */
    pool_case pc = {2, 1, 2, {5, 5}, {3, 3}};
    check_pool(&d, &pc);
}

Test(pool, max_same_upper_by_hand) {
    /* 1 x 4 = 1 4 2 3, kernel 2 stride 1 SAME_UPPER: pad at the end. */
    float x[4] = {1, 4, 2, 3};
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    d.kernel[0] = 2;
    d.auto_pad = PLX_AUTO_PAD_SAME_UPPER;
    targ ins[] = {IN(F32, DIMS(1, 1, 4), x)};
    tout y;
    RUN(PLX_OP_POOL, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 1, 4));
    const float upper[] = {4, 4, 3, 3};
    expect_f32(&y, upper, 4, TOL);
    free_outs(&y, 1);
    d.auto_pad = PLX_AUTO_PAD_SAME_LOWER;
    RUN(PLX_OP_POOL, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 1, 4));
    const float lower[] = {1, 4, 4, 3};
    expect_f32(&y, lower, 4, TOL);
    free_outs(&y, 1);
}

Test(pool, average_same_upper_both_pad_counts) {
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    d.kernel[0] = d.kernel[1] = 3;
    d.strides[0] = d.strides[1] = 2;
    d.auto_pad = PLX_AUTO_PAD_SAME_UPPER;
    /* H: ceil(4/2) = 2, pads 0/1; W: ceil(5/2) = 3, pads 1/1 */
    pool_case pc = {2, 1, 2, {4, 5}, {2, 3}};
    check_pool(&d, &pc);
    d.count_include_pad = true;
    check_pool(&d, &pc);
}

Test(pool, max_valid_dilated) {
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    d.kernel[0] = d.kernel[1] = 2;
    d.strides[0] = d.strides[1] = 2;
    d.dilations[0] = d.dilations[1] = 2;
    d.auto_pad = PLX_AUTO_PAD_VALID;
    /* (6 - 3) / 2 + 1 = 2 */
    pool_case pc = {2, 1, 2, {6, 6}, {2, 2}};
    check_pool(&d, &pc);
}

/* With auto_pad, ceil_mode changes nothing: VALID gives
 * ceil((in - ek + 1) / stride) = floor((in - ek) / stride) + 1. */
Test(pool, valid_ignores_ceil_mode) {
    const float x[5] = {1, 9, 3, 4, 8};
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    d.kernel[0] = 2;
    d.strides[0] = 2;
    d.auto_pad = PLX_AUTO_PAD_VALID;
    d.ceil_mode = true;
    targ ins[] = {IN(F32, DIMS(1, 1, 5), x)};
    tout y;
    RUN(PLX_OP_POOL, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 1, 2));
    const float want[] = {9, 4};
    expect_f32(&y, want, 2, 0.0f);
    free_outs(&y, 1);
}

Test(pool, max_1d_dilated_pads) {
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    d.kernel[0] = 3;
    d.dilations[0] = 2;
    d.pads_begin[0] = 2;
    d.pads_end[0] = 1;
    /* (7 + 3 - 5) + 1 = 6 */
    pool_case pc = {1, 2, 2, {7}, {6}};
    check_pool(&d, &pc);
}

Test(pool, max_uint8) {
    uint8_t x[8] = {1, 200, 3, 4, 250, 0, 7, 8};
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    d.kernel[0] = d.kernel[1] = 2;
    d.strides[0] = d.strides[1] = 2;
    targ ins[] = {IN(U8, DIMS(1, 1, 2, 4), x)};
    tout y;
    RUN(PLX_OP_POOL, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, U8, DIMS(1, 1, 1, 2));
    const uint8_t want[] = {250, 8};
    expect_u8(&y, want, 2);
    free_outs(&y, 1);
}

Test(global_pool, max_and_average_2d) {
    float x[36];
    gen(x, 36, 10);
    float mx[6], avg[6];
    for (int i = 0; i < 6; i++) {
        double best = -INFINITY, sum = 0;
        for (int j = 0; j < 6; j++) {
            best = fmax(best, x[i * 6 + j]);
            sum += x[i * 6 + j];
        }
        mx[i] = (float)best;
        avg[i] = (float)(sum / 6);
    }
    targ ins[] = {IN(F32, DIMS(2, 3, 2, 3), x)};
    tout y;
    plx_global_pool_desc d = PLX_GLOBAL_POOL_DESC_INIT(PLX_POOL_MAX);
    RUN(PLX_OP_GLOBAL_POOL, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3, 1, 1));
    expect_f32(&y, mx, 6, TOL);
    free_outs(&y, 1);
    d.kind = PLX_POOL_AVERAGE;
    RUN(PLX_OP_GLOBAL_POOL, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3, 1, 1));
    expect_f32(&y, avg, 6, TOL);
    free_outs(&y, 1);
}

Test(global_pool, average_1d) {
    float x[8] = {1, 2, 3, 4, -1, -2, -3, 10};
    plx_global_pool_desc d = PLX_GLOBAL_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    targ ins[] = {IN(F32, DIMS(1, 2, 4), x)};
    tout y;
    RUN(PLX_OP_GLOBAL_POOL, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 2, 1));
    const float want[] = {2.5f, 1.0f};
    expect_f32(&y, want, 2, TOL);
    free_outs(&y, 1);
}

/* ------------------------------------------------------------------------ */
/* activation                                                                 */
/* ------------------------------------------------------------------------ */

static const float act_x[10] = {-6.0f, -3.0f, -1.5f, -0.5f, 0.0f, 0.25f, 1.0f, 2.5f, 4.0f, 7.0f};

static double ref_act(const plx_activation_desc *d, double x) {
    double a = d->alpha, b = d->beta;
    switch (d->func) {
    case PLX_ACT_RELU: return x > 0 ? x : 0;
    case PLX_ACT_CLIP: return x < a ? a : x > b ? b : x;
    case PLX_ACT_LEAKY_RELU: return x < 0 ? a * x : x;
    case PLX_ACT_ELU: return x < 0 ? a * (exp(x) - 1) : x;
    case PLX_ACT_SIGMOID: return 1 / (1 + exp(-x));
    case PLX_ACT_HARD_SIGMOID: return fmax(0, fmin(1, a * x + b));
    case PLX_ACT_HARD_SWISH: return x * fmax(0, fmin(1, x / 6 + 0.5));
    case PLX_ACT_TANH: return tanh(x);
    case PLX_ACT_GELU:
        if (a != 0) {
            return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        }
        return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case PLX_ACT_SOFTPLUS: return log1p(exp(x));
    case PLX_ACT_SELU: return x <= 0 ? b * a * expm1(x) : b * x;
    case PLX_ACT_MISH: return x * tanh(log1p(exp(x)));
    case PLX_ACT_SOFTSIGN: return x / (1 + fabs(x));
    case PLX_ACT_THRESHOLDED_RELU: return x > a ? x : 0;
    case PLX_ACT_CELU: return (x > 0 ? x : 0) + fmin(0, a * expm1(x / a));
    case PLX_ACT_AFFINE: return a * x + b;
    case PLX_ACT_SCALED_TANH: return a * tanh(b * x);
    default: break; /* shrink: its own case below */
    }
    return NAN;
}

static void check_act(const plx_activation_desc *d) {
    float ref[10];
    for (int i = 0; i < 10; i++) {
        ref[i] = (float)ref_act(d, act_x[i]);
    }
    targ ins[] = {IN(F32, DIMS(2, 5), act_x)};
    tout y;
    RUN(PLX_OP_ACTIVATION, d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 5));
    expect_f32(&y, ref, 10, TOL_LOOSE);
    free_outs(&y, 1);
}

Test(activation, relu) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    check_act(&d);
}

Test(activation, clip_defaults_and_bounds) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_CLIP);
    check_act(&d); /* -inf, +inf: identity */
    d.alpha = -1.0f;
    d.beta = 2.0f;
    check_act(&d);
}

Test(activation, leaky_relu) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_LEAKY_RELU);
    check_act(&d); /* 0.01 */
    d.alpha = 0.2f;
    check_act(&d);
}

Test(activation, elu) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_ELU);
    check_act(&d);
    d.alpha = 0.5f;
    check_act(&d);
}

Test(activation, sigmoid) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SIGMOID);
    check_act(&d);
}

Test(activation, hard_sigmoid) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_HARD_SIGMOID);
    check_act(&d); /* 0.2, 0.5 */
    d.alpha = 0.5f;
    d.beta = 0.25f;
    check_act(&d);
}

Test(activation, hard_swish) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_HARD_SWISH);
    check_act(&d);
}

Test(activation, tanh) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_TANH);
    check_act(&d);
}

Test(activation, gelu_exact_and_tanh) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_GELU);
    check_act(&d);
    d.alpha = 1.0f; /* tanh approximation */
    check_act(&d);
}

Test(activation, softplus) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SOFTPLUS);
    check_act(&d);
}

Test(activation, selu_defaults_and_custom) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SELU);
    check_act(&d); /* 1.6733, 1.0507 */
    d.alpha = 2.0f;
    d.beta = 0.5f;
    check_act(&d);
}

Test(activation, mish_and_softsign) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_MISH);
    check_act(&d);
    d = (plx_activation_desc)PLX_ACTIVATION_DESC_INIT(PLX_ACT_SOFTSIGN);
    check_act(&d);
}

Test(activation, thresholded_relu) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_THRESHOLDED_RELU);
    check_act(&d); /* alpha 1: act_x has 1.0 itself, which gives 0 */
    d.alpha = -0.5f; /* -0.5 itself gives 0 */
    check_act(&d);
}

Test(activation, celu) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_CELU);
    check_act(&d);
    d.alpha = 2.5f;
    check_act(&d);
}

Test(activation, affine_and_scaled_tanh) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_AFFINE);
    check_act(&d); /* 1, 0: the identity */
    d.alpha = -0.5f;
    d.beta = 2.0f;
    check_act(&d);
    d = (plx_activation_desc)PLX_ACTIVATION_DESC_INIT(PLX_ACT_SCALED_TANH);
    check_act(&d);
    d.alpha = 1.7159f;
    d.beta = 0.6667f;
    check_act(&d);
}

Test(activation, relu_and_clip_int32) {
    int32_t x[6] = {-5, -1, 0, 1, 3, 100};
    targ ins[] = {IN(I32, DIMS(6), x)};
    tout y;
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    RUN(PLX_OP_ACTIVATION, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I32, DIMS(6));
    const int32_t relu[] = {0, 0, 0, 1, 3, 100};
    expect_i32(&y, relu, 6);
    free_outs(&y, 1);
    plx_activation_desc c = PLX_ACTIVATION_DESC_INIT(PLX_ACT_CLIP);
    c.alpha = -2.0f;
    c.beta = 3.0f;
    RUN(PLX_OP_ACTIVATION, &c, ins, &y, 1);
    EXPECT_SHAPE(&y, I32, DIMS(6));
    const int32_t clip[] = {-2, -1, 0, 1, 3, 3};
    expect_i32(&y, clip, 6);
    free_outs(&y, 1);
}

/* ------------------------------------------------------------------------ */
/* binary                                                                     */
/* ------------------------------------------------------------------------ */

static double ref_binary_f(plx_binary_func f, double a, double b) {
    switch (f) {
    case PLX_BINARY_ADD: return a + b;
    case PLX_BINARY_SUB: return a - b;
    case PLX_BINARY_MUL: return a * b;
    case PLX_BINARY_DIV: return a / b;
    case PLX_BINARY_POW: return pow(a, b);
    case PLX_BINARY_MAX: return a > b ? a : b;
    case PLX_BINARY_MIN: return a < b ? a : b;
    case PLX_BINARY_EQUAL: return a == b;
    case PLX_BINARY_LESS: return a < b;
    case PLX_BINARY_GREATER: return a > b;
    case PLX_BINARY_PRELU: return a < 0 ? b * a : a;
    case PLX_BINARY_AND: return a != 0 && b != 0;
    case PLX_BINARY_OR: return a != 0 || b != 0;
    case PLX_BINARY_XOR: return (a != 0) != (b != 0);
    case PLX_BINARY_GREATER_EQUAL: return a >= b;
    case PLX_BINARY_LESS_EQUAL: return a <= b;
    case PLX_BINARY_MOD: return a - b * trunc(a / b); /* fmod: the dividend's sign */
    default: break; /* the bitwise functions: their own case below */
    }
    return NAN;
}

/* A [2,3,1] (input) op B [1,4] (constant) -> [2,3,4], every func. */
Test(binary, float32_every_func_broadcast) {
    const float a[6] = {1.5f, 2.0f, 0.5f, 3.0f, 4.0f, 0.25f};
    const float b[4] = {2.0f, -1.0f, 0.5f, 3.0f};
    const int64_t od[3] = {2, 3, 4}, ad[3] = {2, 3, 1}, bd[2] = {1, 4};
    for (int f = PLX_BINARY_ADD; f <= PLX_BINARY_GREATER; f++) {
        plx_binary_desc d = PLX_BINARY_DESC_INIT((plx_binary_func)f);
        targ ins[] = {IN(F32, DIMS(2, 3, 1), a), CONST(F32, DIMS(1, 4), b)};
        tout y;
        RUN(PLX_OP_BINARY, &d, ins, &y, 1);
        float ref[24];
        uint8_t refb[24];
        for (size_t i = 0; i < 24; i++) {
            double v = ref_binary_f((plx_binary_func)f, a[bcast_off(i, od, 3, ad, 3)],
                                    b[bcast_off(i, od, 3, bd, 2)]);
            ref[i] = (float)v;
            refb[i] = plx_binary_func_is_compare((plx_binary_func)f) ? (uint8_t)(v != 0) : 0;
        }
        if (plx_binary_func_is_compare((plx_binary_func)f)) {
            EXPECT_SHAPE(&y, BOOL, DIMS(2, 3, 4));
            expect_u8(&y, refb, 24);
        } else {
            EXPECT_SHAPE(&y, F32, DIMS(2, 3, 4));
            expect_f32(&y, ref, 24, TOL);
        }
        free_outs(&y, 1);
    }
}

/* Both sides broadcast: A [2,1,3] and B [4,1] (two network inputs). */
Test(binary, float32_two_sided_broadcast) {
    float a[6], b[4];
    gen(a, 6, 11);
    gen(b, 4, 12);
    const int64_t od[3] = {2, 4, 3}, ad[3] = {2, 1, 3}, bd[2] = {4, 1};
    plx_binary_desc d = PLX_BINARY_DESC_INIT(PLX_BINARY_SUB);
    targ ins[] = {IN(F32, DIMS(2, 1, 3), a), IN(F32, DIMS(4, 1), b)};
    tout y;
    RUN(PLX_OP_BINARY, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 4, 3));
    float ref[24];
    for (size_t i = 0; i < 24; i++) {
        ref[i] = a[bcast_off(i, od, 3, ad, 3)] - b[bcast_off(i, od, 3, bd, 2)];
    }
    expect_f32(&y, ref, 24, TOL);
    free_outs(&y, 1);
}

/* A [2,3] op B [3]: integer division truncates toward zero. */
Test(binary, int32_every_func_broadcast) {
    const int32_t a[6] = {7, -7, 9, -9, 2, 5};
    const int32_t b[3] = {2, 2, -4};
    const int32_t e[3] = {2, 3, 0}; /* exponents for pow */
    const int32_t want[7][6] = {
        {9, -5, 5, -7, 4, 1},          /* add */
        {5, -9, 13, -11, 0, 9},        /* sub */
        {14, -14, -36, -18, 4, -20},   /* mul */
        {3, -3, -2, -4, 1, -1},        /* div */
        {49, -343, 1, 81, 8, 1},       /* pow with e */
        {7, 2, 9, 2, 2, 5},            /* max */
        {2, -7, -4, -9, 2, -4},        /* min */
    };
    const uint8_t wantb[3][6] = {
        {0, 0, 0, 0, 1, 0}, /* equal */
        {0, 1, 0, 1, 0, 0}, /* less */
        {1, 0, 1, 0, 0, 1}, /* greater */
    };
    for (int f = PLX_BINARY_ADD; f <= PLX_BINARY_GREATER; f++) {
        plx_binary_desc d = PLX_BINARY_DESC_INIT((plx_binary_func)f);
        targ ins[] = {IN(I32, DIMS(2, 3), a), CONST(I32, DIMS(3), f == PLX_BINARY_POW ? e : b)};
        tout y;
        RUN(PLX_OP_BINARY, &d, ins, &y, 1);
        if (plx_binary_func_is_compare((plx_binary_func)f)) {
            EXPECT_SHAPE(&y, BOOL, DIMS(2, 3));
            expect_u8(&y, wantb[f - PLX_BINARY_EQUAL], 6);
        } else {
            EXPECT_SHAPE(&y, I32, DIMS(2, 3));
            expect_i32(&y, want[f], 6);
        }
        free_outs(&y, 1);
    }
}

Test(binary, int32_equal_with_scalar) {
    const int32_t a[4] = {3, -3, 3, 0}, b[1] = {3};
    plx_binary_desc d = PLX_BINARY_DESC_INIT(PLX_BINARY_EQUAL);
    targ ins[] = {IN(I32, DIMS(2, 2), a), CONST(I32, SCALAR, b)};
    tout y;
    RUN(PLX_OP_BINARY, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, BOOL, DIMS(2, 2));
    const uint8_t want[] = {1, 0, 1, 0};
    expect_u8(&y, want, 4);
    free_outs(&y, 1);
}

Test(binary, int64_mul_and_bool_equal) {
    const int64_t a[3] = {INT64_C(3000000000), -2, 5}, b[1] = {3};
    plx_binary_desc d = PLX_BINARY_DESC_INIT(PLX_BINARY_MUL);
    targ ins[] = {IN(I64, DIMS(3), a), CONST(I64, DIMS(1), b)};
    tout y;
    RUN(PLX_OP_BINARY, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I64, DIMS(3));
    const int64_t want[] = {INT64_C(9000000000), -6, 15};
    expect_i64(&y, want, 3);
    free_outs(&y, 1);

    const uint8_t p[4] = {0, 1, 0, 1}, q[2] = {0, 1};
    plx_binary_desc e = PLX_BINARY_DESC_INIT(PLX_BINARY_EQUAL);
    targ bins[] = {IN(BOOL, DIMS(2, 2), p), IN(BOOL, DIMS(2, 1), q)};
    RUN(PLX_OP_BINARY, &e, bins, &y, 1);
    EXPECT_SHAPE(&y, BOOL, DIMS(2, 2));
    const uint8_t wantb[] = {1, 0, 0, 1};
    expect_u8(&y, wantb, 4);
    free_outs(&y, 1);
}

/* PRelu: X [N,C,H,W] (input) with the slope [C,1,1] (constant), as a
 * model's per-channel slope; and a scalar slope on int32. */
Test(binary, prelu_per_channel_slope) {
    float x[2 * 3 * 2 * 2];
    gen(x, 24, 30);
    const float slope[3] = {0.25f, -1.5f, 2.0f};
    plx_binary_desc d = PLX_BINARY_DESC_INIT(PLX_BINARY_PRELU);
    targ ins[] = {IN(F32, DIMS(2, 3, 2, 2), x), CONST(F32, DIMS(3, 1, 1), slope)};
    tout y;
    RUN(PLX_OP_BINARY, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3, 2, 2));
    float ref[24];
    for (size_t i = 0; i < 24; i++) {
        float s = slope[(i / 4) % 3];
        ref[i] = x[i] < 0 ? s * x[i] : x[i];
    }
    expect_f32(&y, ref, 24, TOL);
    free_outs(&y, 1);

    const int32_t xi[4] = {-3, 5, 0, -7}, si[1] = {4};
    targ iins[] = {IN(I32, DIMS(4), xi), CONST(I32, SCALAR, si)};
    RUN(PLX_OP_BINARY, &d, iins, &y, 1);
    EXPECT_SHAPE(&y, I32, DIMS(4));
    const int32_t want[] = {-12, 5, 0, -28};
    expect_i32(&y, want, 4);
    free_outs(&y, 1);
}

/* and, or, xor: bool [2,1] op bool [1,2] -> [2,2], the truth tables. */
Test(binary, bool_and_or_xor) {
    const uint8_t a[2] = {0, 1}, b[2] = {0, 1};
    const uint8_t want[3][4] = {{0, 0, 0, 1}, {0, 1, 1, 1}, {0, 1, 1, 0}};
    for (int f = PLX_BINARY_AND; f <= PLX_BINARY_XOR; f++) {
        plx_binary_desc d = PLX_BINARY_DESC_INIT((plx_binary_func)f);
        targ ins[] = {IN(BOOL, DIMS(2, 1), a), IN(BOOL, DIMS(1, 2), b)};
        tout y;
        RUN(PLX_OP_BINARY, &d, ins, &y, 1);
        EXPECT_SHAPE(&y, BOOL, DIMS(2, 2));
        expect_u8(&y, want[f - PLX_BINARY_AND], 4);
        free_outs(&y, 1);
    }
}

/* greater_equal, less_equal on float32 and int32 (bool out); mod on both. */
Test(binary, greater_equal_less_equal_and_mod) {
    const float a[6] = {1.5f, -2.0f, 0.5f, 3.0f, -4.0f, 0.25f};
    const float b[3] = {1.5f, -3.0f, 0.75f};
    const int64_t od[2] = {2, 3}, bd[1] = {3};
    for (int f = PLX_BINARY_GREATER_EQUAL; f <= PLX_BINARY_MOD; f++) {
        plx_binary_desc d = PLX_BINARY_DESC_INIT((plx_binary_func)f);
        targ ins[] = {IN(F32, DIMS(2, 3), a), CONST(F32, DIMS(3), b)};
        tout y;
        RUN(PLX_OP_BINARY, &d, ins, &y, 1);
        float ref[6];
        uint8_t refb[6];
        for (size_t i = 0; i < 6; i++) {
            double v = ref_binary_f((plx_binary_func)f, a[i], b[bcast_off(i, od, 2, bd, 1)]);
            ref[i] = (float)v;
            refb[i] = (uint8_t)(v != 0);
        }
        if (plx_binary_func_is_compare((plx_binary_func)f)) {
            EXPECT_SHAPE(&y, BOOL, DIMS(2, 3));
            expect_u8(&y, refb, 6);
        } else {
            EXPECT_SHAPE(&y, F32, DIMS(2, 3));
            expect_f32(&y, ref, 6, TOL);
        }
        free_outs(&y, 1);
    }
    /* int32 mod: the sign of the divisor (Python's %) */
    const int32_t ia[6] = {-7, 7, -7, 7, 0, 9}, ib[6] = {3, -3, -3, 3, 5, 9};
    plx_binary_desc d = PLX_BINARY_DESC_INIT(PLX_BINARY_MOD);
    targ ins[] = {IN(I32, DIMS(6), ia), IN(I32, DIMS(6), ib)};
    tout y;
    RUN(PLX_OP_BINARY, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I32, DIMS(6));
    const int32_t mod_want[6] = {2, -2, -1, 1, 0, 0};
    expect_i32(&y, mod_want, 6);
    free_outs(&y, 1);
    d.func = PLX_BINARY_LESS_EQUAL;
    RUN(PLX_OP_BINARY, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, BOOL, DIMS(6));
    const uint8_t le_want[6] = {1, 0, 1, 0, 1, 1};
    expect_u8(&y, le_want, 6);
    free_outs(&y, 1);
}

/* ------------------------------------------------------------------------ */
/* unary                                                                      */
/* ------------------------------------------------------------------------ */

Test(unary, float32_every_func) {
    const float x[8] = {-2.5f, -1.0f, -0.25f, 0.0f, 0.5f, 1.0f, 1.5f, 3.75f};
    const float pos[8] = {0.25f, 0.5f, 1.0f, 2.0f, 4.0f, 9.0f, 10.0f, 100.0f};
    const float unit[8] = {-0.95f, -0.5f, -0.25f, 0.0f, 0.125f, 0.5f, 0.75f, 0.95f};
    const float ge1[8] = {1.0f, 1.25f, 1.5f, 2.0f, 3.0f, 4.5f, 10.0f, 100.0f};
    for (int f = PLX_UNARY_ABS; f <= PLX_UNARY_SIGN; f++) {
        if (f == PLX_UNARY_NOT) {
            continue; /* bool: below */
        }
        bool positive = f == PLX_UNARY_SQRT || f == PLX_UNARY_LOG || f == PLX_UNARY_RECIPROCAL;
        bool in_unit = f == PLX_UNARY_ASIN || f == PLX_UNARY_ACOS || f == PLX_UNARY_ATANH;
        const float *in = positive ? pos : in_unit ? unit : f == PLX_UNARY_ACOSH ? ge1 : x;
        float ref[8];
        for (int i = 0; i < 8; i++) {
            double v = in[i];
            switch ((plx_unary_func)f) {
            case PLX_UNARY_ABS: v = fabs(v); break;
            case PLX_UNARY_NEG: v = -v; break;
            case PLX_UNARY_SQRT: v = sqrt(v); break;
            case PLX_UNARY_RECIPROCAL: v = 1 / v; break;
            case PLX_UNARY_EXP: v = exp(v); break;
            case PLX_UNARY_LOG: v = log(v); break;
            case PLX_UNARY_ERF: v = erf(v); break;
            case PLX_UNARY_FLOOR: v = floor(v); break;
            case PLX_UNARY_CEIL: v = ceil(v); break;
            case PLX_UNARY_NOT: break;
            case PLX_UNARY_SIN: v = sin(v); break;
            case PLX_UNARY_COS: v = cos(v); break;
            case PLX_UNARY_TAN: v = sin(v) / cos(v); break;
            case PLX_UNARY_ASIN: v = asin(v); break;
            case PLX_UNARY_ACOS: v = acos(v); break;
            case PLX_UNARY_ATAN: v = atan(v); break;
            case PLX_UNARY_SINH: v = (exp(v) - exp(-v)) / 2; break;
            case PLX_UNARY_COSH: v = (exp(v) + exp(-v)) / 2; break;
            case PLX_UNARY_ASINH: v = asinh(v); break;
            case PLX_UNARY_ACOSH: v = acosh(v); break;
            case PLX_UNARY_ATANH: v = atanh(v); break;
            /* halves to even: x minus the IEEE remainder by 1 */
            case PLX_UNARY_ROUND: v = v - remainder(v, 1.0); break;
            case PLX_UNARY_SIGN: v = (v > 0) - (v < 0); break;
            default: break; /* the tests and bitwise_not: their own case below */
            }
            ref[i] = (float)v;
        }
        plx_unary_desc d = PLX_UNARY_DESC_INIT((plx_unary_func)f);
        targ ins[] = {IN(F32, DIMS(2, 4), in)};
        tout y;
        RUN(PLX_OP_UNARY, &d, ins, &y, 1);
        EXPECT_SHAPE(&y, F32, DIMS(2, 4));
        expect_f32(&y, ref, 8, TOL);
        free_outs(&y, 1);
    }
}

/* round: ties to even, through the network: -2.5, -1.5, -0.5, 0.5, 1.5, 2.5 */
Test(unary, round_halves_to_even) {
    const float x[8] = {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 2.4999f, -3.75f};
    plx_unary_desc d = PLX_UNARY_DESC_INIT(PLX_UNARY_ROUND);
    targ ins[] = {IN(F32, DIMS(8), x)};
    tout y;
    RUN(PLX_OP_UNARY, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(8));
    const float want[8] = {-2, -2, 0, 0, 2, 2, 2, -4};
    expect_f32(&y, want, 8, 0.0f);
    free_outs(&y, 1);
}

Test(unary, int32_sign) {
    const int32_t x[5] = {-7, 0, 5, INT32_MIN, INT32_MAX};
    plx_unary_desc d = PLX_UNARY_DESC_INIT(PLX_UNARY_SIGN);
    targ ins[] = {IN(I32, DIMS(5), x)};
    tout y;
    RUN(PLX_OP_UNARY, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I32, DIMS(5));
    const int32_t want[5] = {-1, 0, 1, -1, 1};
    expect_i32(&y, want, 5);
    free_outs(&y, 1);
}

Test(unary, int32_abs_neg_and_bool_not) {
    const int32_t x[4] = {-7, 0, 5, -1};
    targ ins[] = {IN(I32, DIMS(4), x)};
    tout y;
    plx_unary_desc d = PLX_UNARY_DESC_INIT(PLX_UNARY_ABS);
    RUN(PLX_OP_UNARY, &d, ins, &y, 1);
    const int32_t abs_want[] = {7, 0, 5, 1};
    EXPECT_SHAPE(&y, I32, DIMS(4));
    expect_i32(&y, abs_want, 4);
    free_outs(&y, 1);
    d.func = PLX_UNARY_NEG;
    RUN(PLX_OP_UNARY, &d, ins, &y, 1);
    const int32_t neg_want[] = {7, 0, -5, 1};
    expect_i32(&y, neg_want, 4);
    free_outs(&y, 1);

    const uint8_t b[3] = {1, 0, 1};
    d.func = PLX_UNARY_NOT;
    targ bins[] = {IN(BOOL, DIMS(1, 3), b)};
    RUN(PLX_OP_UNARY, &d, bins, &y, 1);
    EXPECT_SHAPE(&y, BOOL, DIMS(1, 3));
    const uint8_t not_want[] = {0, 1, 0};
    expect_u8(&y, not_want, 3);
    free_outs(&y, 1);
}

/* ------------------------------------------------------------------------ */
/* batch_norm, layer_norm, softmax                                            */
/* ------------------------------------------------------------------------ */

static void check_batch_norm(const int64_t *xd, uint32_t rank) {
    size_t n = numel(xd, rank);
    int64_t c = xd[1];
    size_t inner = numel(xd + 2, rank - 2);
    float *x = falloc(n), *ref = falloc(n);
    float scale[3], bias[3], mean[3], var[3];
    gen(x, n, 13);
    gen(scale, 3, 14);
    gen(bias, 3, 15);
    gen(mean, 3, 16);
    const float vars[3] = {0.5f, 2.0f, 0.0f};
    memcpy(var, vars, sizeof var);
    plx_batch_norm_desc d = PLX_BATCH_NORM_DESC_INIT;
    d.epsilon = 1e-3f;
    for (size_t i = 0; i < n; i++) {
        size_t ch = (i / inner) % (size_t)c;
        ref[i] = (float)(((double)x[i] - mean[ch]) / sqrt((double)var[ch] + d.epsilon) * scale[ch] +
                         bias[ch]);
    }
    const int64_t cd[1] = {c};
    targ ins[] = {{F32, xd, rank, x, false}, {F32, cd, 1, scale, true}, {F32, cd, 1, bias, true},
                  {F32, cd, 1, mean, true}, {F32, cd, 1, var, true}};
    tout y;
    RUN(PLX_OP_BATCH_NORM, &d, ins, &y, 1);
    expect_shape_(&y, F32, xd, rank);
    expect_f32(&y, ref, n, TOL_LOOSE);
    free_outs(&y, 1);
    free(x);
    free(ref);
}

Test(batch_norm, ranks_4_2_and_3) {
    const int64_t d4[4] = {2, 3, 2, 2};
    check_batch_norm(d4, 4);
    const int64_t d2[2] = {2, 3};
    check_batch_norm(d2, 2);
    const int64_t d3[3] = {1, 3, 5};
    check_batch_norm(d3, 3);
}

/* X [2,3,4] normalised over its last `norm_rank` dims. */
static void ref_layer_norm(const float *x, const float *scale, const int64_t *sd, uint32_t sr,
                           const float *bias, const int64_t *bd, uint32_t br, float *y,
                           uint32_t norm_rank, float eps) {
    const int64_t xd[3] = {2, 3, 4};
    const int64_t *nd = xd + 3 - norm_rank;
    size_t group = numel(nd, norm_rank), groups = 24 / group;
    for (size_t g = 0; g < groups; g++) {
        double mean = 0, var = 0;
        for (size_t i = 0; i < group; i++) {
            mean += x[g * group + i];
        }
        mean /= (double)group;
        for (size_t i = 0; i < group; i++) {
            double dv = x[g * group + i] - mean;
            var += dv * dv;
        }
        var /= (double)group;
        for (size_t i = 0; i < group; i++) {
            double v = (x[g * group + i] - mean) / sqrt(var + eps);
            v *= scale[bcast_off(i, nd, norm_rank, sd, sr)];
            if (bias) {
                v += bias[bcast_off(i, nd, norm_rank, bd, br)];
            }
            y[g * group + i] = (float)v;
        }
    }
}

Test(layer_norm, negative_axis_two_dims_broadcast_bias) {
    float x[24], scale[12], bias[4], ref[24];
    gen(x, 24, 17);
    gen(scale, 12, 18);
    gen(bias, 4, 19);
    plx_layer_norm_desc d = PLX_LAYER_NORM_DESC_INIT;
    d.axis = -2;
    targ ins[] = {IN(F32, DIMS(2, 3, 4), x), CONST(F32, DIMS(3, 4), scale),
                  CONST(F32, DIMS(4), bias)};
    tout y;
    RUN(PLX_OP_LAYER_NORM, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3, 4));
    ref_layer_norm(x, scale, DIMS(3, 4), bias, DIMS(4), ref, 2, d.epsilon);
    expect_f32(&y, ref, 24, TOL_LOOSE);
    free_outs(&y, 1);
}

Test(layer_norm, last_axis_without_bias) {
    float x[24], scale[4], ref[24];
    gen(x, 24, 20);
    gen(scale, 4, 21);
    plx_layer_norm_desc d = PLX_LAYER_NORM_DESC_INIT;
    d.epsilon = 0.01f;
    targ ins[] = {IN(F32, DIMS(2, 3, 4), x), CONST(F32, DIMS(4), scale)};
    tout y;
    RUN(PLX_OP_LAYER_NORM, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3, 4));
    ref_layer_norm(x, scale, DIMS(4), NULL, NULL, 0, ref, 1, d.epsilon);
    expect_f32(&y, ref, 24, TOL_LOOSE);
    free_outs(&y, 1);
}

Test(layer_norm, every_axis) {
    float x[24], scale[24], bias[1] = {0.5f}, ref[24];
    gen(x, 24, 29);
    gen(scale, 24, 30);
    plx_layer_norm_desc d = PLX_LAYER_NORM_DESC_INIT;
    d.axis = 0;
    targ ins[] = {IN(F32, DIMS(2, 3, 4), x), CONST(F32, DIMS(2, 3, 4), scale),
                  CONST(F32, DIMS(1), bias)};
    tout y;
    RUN(PLX_OP_LAYER_NORM, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3, 4));
    ref_layer_norm(x, scale, DIMS(2, 3, 4), bias, DIMS(1), ref, 3, d.epsilon);
    expect_f32(&y, ref, 24, TOL_LOOSE);
    free_outs(&y, 1);
}

/* Softmax of X [2,3,4] along axis 1. */
/* InstanceNormalization: each (n, c) plane by its own mean and variance. */
static void check_instance_norm(const int64_t *xd, uint32_t rank, float eps, int seed) {
    size_t n = numel(xd, rank), plane = numel(xd + 2, rank - 2);
    int64_t c = xd[1];
    float *x = falloc(n), *ref = falloc(n), scale[4], bias[4];
    gen(x, n, seed);
    gen(scale, (size_t)c, seed + 1);
    gen(bias, (size_t)c, seed + 2);
    for (size_t p = 0; p < n / plane; p++) {
        double mean = 0, var = 0;
        for (size_t i = 0; i < plane; i++) {
            mean += x[p * plane + i];
        }
        mean /= (double)plane;
        for (size_t i = 0; i < plane; i++) {
            var += (x[p * plane + i] - mean) * (x[p * plane + i] - mean);
        }
        var /= (double)plane;
        size_t ch = p % (size_t)c;
        for (size_t i = 0; i < plane; i++) {
            ref[p * plane + i] =
                (float)((x[p * plane + i] - mean) / sqrt(var + eps) * scale[ch] + bias[ch]);
        }
    }
    plx_instance_norm_desc d = PLX_INSTANCE_NORM_DESC_INIT;
    d.epsilon = eps;
    const int64_t cd[1] = {c};
    targ ins[] = {{F32, xd, rank, x, false}, {F32, cd, 1, scale, true}, {F32, cd, 1, bias, true}};
    tout y;
    RUN(PLX_OP_INSTANCE_NORM, &d, ins, &y, 1);
    expect_shape_(&y, F32, xd, rank);
    expect_f32(&y, ref, n, TOL_LOOSE);
    free_outs(&y, 1);
    free(x);
    free(ref);
}

Test(instance_norm, rank_3_and_4) {
    const int64_t d3[3] = {2, 3, 5};
    check_instance_norm(d3, 3, 1e-5f, 40);
    const int64_t d4[4] = {2, 4, 3, 3};
    check_instance_norm(d4, 4, 1e-3f, 41);
}

static void ref_softmax_axis1(const float *x, float *y, bool log_) {
    for (int n = 0; n < 2; n++) {
        for (int k = 0; k < 4; k++) {
            double mx = -INFINITY, sum = 0;
            for (int c = 0; c < 3; c++) {
                mx = fmax(mx, x[(n * 3 + c) * 4 + k]);
            }
            for (int c = 0; c < 3; c++) {
                sum += exp(x[(n * 3 + c) * 4 + k] - mx);
            }
            for (int c = 0; c < 3; c++) {
                double v = x[(n * 3 + c) * 4 + k] - mx;
                y[(n * 3 + c) * 4 + k] = (float)(log_ ? v - log(sum) : exp(v) / sum);
            }
        }
    }
}

Test(softmax, middle_axis) {
    float x[24], ref[24];
    gen(x, 24, 22);
    x[5] = 40.0f; /* large values must not overflow */
    ref_softmax_axis1(x, ref, false);
    plx_softmax_desc d = PLX_SOFTMAX_DESC_INIT;
    d.axis = 1;
    targ ins[] = {IN(F32, DIMS(2, 3, 4), x)};
    tout y;
    RUN(PLX_OP_SOFTMAX, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3, 4));
    expect_f32(&y, ref, 24, TOL);
    free_outs(&y, 1);
}

Test(softmax, log_softmax_negative_middle_axis) {
    float x[24], ref[24];
    gen(x, 24, 23);
    ref_softmax_axis1(x, ref, true);
    plx_softmax_desc d = PLX_SOFTMAX_DESC_INIT;
    d.axis = -2;
    d.log = true;
    targ ins[] = {IN(F32, DIMS(2, 3, 4), x)};
    tout y;
    RUN(PLX_OP_SOFTMAX, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3, 4));
    expect_f32(&y, ref, 24, TOL);
    free_outs(&y, 1);
}

/* ------------------------------------------------------------------------ */
/* reduce                                                                     */
/* ------------------------------------------------------------------------ */

/* Reduces X [2,3,4] over the axes set in `mask` (bit i: axis i); the result
 * in the dense order of the kept axes. */
static size_t ref_reduce(const float *x, unsigned mask, plx_reduce_func f, float *y) {
    const int64_t xd[3] = {2, 3, 4};
    int64_t od[3];
    for (int i = 0; i < 3; i++) {
        od[i] = (mask >> i) & 1u ? 1 : xd[i];
    }
    size_t no = numel(od, 3);
    double acc[24];
    size_t cnt[24] = {0};
    for (size_t o = 0; o < no; o++) {
        acc[o] = f == PLX_REDUCE_MAX ? -INFINITY : f == PLX_REDUCE_MIN ? INFINITY : 0.0;
    }
    for (int64_t a = 0; a < 2; a++) {
        for (int64_t b = 0; b < 3; b++) {
            for (int64_t c = 0; c < 4; c++) {
                int64_t ia = mask & 1u ? 0 : a, ib = mask & 2u ? 0 : b, ic = mask & 4u ? 0 : c;
                size_t o = (size_t)((ia * od[1] + ib) * od[2] + ic);
                double v = x[(a * 3 + b) * 4 + c];
                acc[o] = f == PLX_REDUCE_MAX ? fmax(acc[o], v)
                       : f == PLX_REDUCE_MIN ? fmin(acc[o], v)
                                             : acc[o] + v;
                cnt[o]++;
            }
        }
    }
    for (size_t o = 0; o < no; o++) {
        y[o] = (float)(f == PLX_REDUCE_MEAN ? acc[o] / (double)cnt[o] : acc[o]);
    }
    return no;
}

Test(reduce, every_func_axes_keepdims_both_ways) {
    float x[24];
    gen(x, 24, 24);
    for (int f = PLX_REDUCE_MEAN; f <= PLX_REDUCE_SUM; f++) {
        float ref[24];
        size_t n;
        tout y;
        targ ins[] = {IN(F32, DIMS(2, 3, 4), x)};

        /* axes {0, 2}, keepdims: [1,3,1] */
        plx_reduce_desc d = PLX_REDUCE_DESC_INIT((plx_reduce_func)f);
        d.axes[0] = 0;
        d.axes[1] = 2;
        d.axis_count = 2;
        n = ref_reduce(x, 5u, (plx_reduce_func)f, ref);
        RUN(PLX_OP_REDUCE, &d, ins, &y, 1);
        EXPECT_SHAPE(&y, F32, DIMS(1, 3, 1));
        expect_f32(&y, ref, n, TOL);
        free_outs(&y, 1);

        /* axes {-1, -3} (the same), no keepdims: [3] */
        d.axes[0] = -1;
        d.axes[1] = -3;
        d.keepdims = false;
        RUN(PLX_OP_REDUCE, &d, ins, &y, 1);
        EXPECT_SHAPE(&y, F32, DIMS(3));
        expect_f32(&y, ref, n, TOL);
        free_outs(&y, 1);

        /* axes {1}, no keepdims: [2,4] */
        d.axes[0] = 1;
        d.axis_count = 1;
        n = ref_reduce(x, 2u, (plx_reduce_func)f, ref);
        RUN(PLX_OP_REDUCE, &d, ins, &y, 1);
        EXPECT_SHAPE(&y, F32, DIMS(2, 4));
        expect_f32(&y, ref, n, TOL);
        free_outs(&y, 1);

        /* no axes: every axis; keepdims [1,1,1], else a scalar */
        d.axis_count = 0;
        d.keepdims = true;
        n = ref_reduce(x, 7u, (plx_reduce_func)f, ref);
        RUN(PLX_OP_REDUCE, &d, ins, &y, 1);
        EXPECT_SHAPE(&y, F32, DIMS(1, 1, 1));
        expect_f32(&y, ref, n, TOL);
        free_outs(&y, 1);
        d.keepdims = false;
        RUN(PLX_OP_REDUCE, &d, ins, &y, 1);
        EXPECT_SHAPE(&y, F32, SCALAR);
        expect_f32(&y, ref, n, TOL);
        free_outs(&y, 1);
    }
}

Test(reduce, noop_with_empty_axes_is_identity) {
    float x[24];
    gen(x, 24, 25);
    plx_reduce_desc d = PLX_REDUCE_DESC_INIT(PLX_REDUCE_SUM);
    d.noop_with_empty_axes = true;
    targ ins[] = {IN(F32, DIMS(2, 3, 4), x)};
    tout y;
    RUN(PLX_OP_REDUCE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3, 4));
    expect_f32(&y, x, 24, 0.0f);
    free_outs(&y, 1);
}

Test(reduce, int32_sum_and_max) {
    const int32_t x[6] = {1, -2, 3, 40, 5, -60};
    plx_reduce_desc d = PLX_REDUCE_DESC_INIT(PLX_REDUCE_SUM);
    d.axes[0] = -1;
    d.axis_count = 1;
    d.keepdims = false;
    targ ins[] = {IN(I32, DIMS(2, 3), x)};
    tout y;
    RUN(PLX_OP_REDUCE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I32, DIMS(2));
    const int32_t sum[] = {2, -15};
    expect_i32(&y, sum, 2);
    free_outs(&y, 1);
    d.func = PLX_REDUCE_MAX;
    d.axes[0] = 0;
    d.keepdims = true;
    RUN(PLX_OP_REDUCE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I32, DIMS(1, 3));
    const int32_t mx[] = {40, 5, 3};
    expect_i32(&y, mx, 3);
    free_outs(&y, 1);
}

/* prod .. log_sum_exp over X [2,3,4] (bit i of mask: axis i), each output
 * from the list of its elements. */
static size_t ref_reduce_more(const float *x, unsigned mask, plx_reduce_func f, float *y) {
    const int64_t xd[3] = {2, 3, 4};
    int64_t od[3];
    for (int i = 0; i < 3; i++) {
        od[i] = (mask >> i) & 1u ? 1 : xd[i];
    }
    size_t no = numel(od, 3);
    for (size_t o = 0; o < no; o++) {
        double vals[24];
        size_t n = 0;
        for (int64_t i = 0; i < 24; i++) {
            int64_t a = i / 12, b = (i / 4) % 3, c = i % 4;
            int64_t ia = mask & 1u ? 0 : a, ib = mask & 2u ? 0 : b, ic = mask & 4u ? 0 : c;
            if ((size_t)((ia * od[1] + ib) * od[2] + ic) == o) {
                vals[n++] = x[i];
            }
        }
        double r = f == PLX_REDUCE_PROD ? 1.0 : 0.0;
        for (size_t k = 0; k < n; k++) {
            double v = vals[k];
            r = f == PLX_REDUCE_PROD          ? r * v
                : f == PLX_REDUCE_L1          ? r + fabs(v)
                : f == PLX_REDUCE_LOG_SUM_EXP ? r + exp(v)
                : f == PLX_REDUCE_LOG_SUM     ? r + v
                                              : r + v * v;
        }
        y[o] = (float)(f == PLX_REDUCE_L2                                          ? sqrt(r)
                       : f == PLX_REDUCE_LOG_SUM || f == PLX_REDUCE_LOG_SUM_EXP ? log(r)
                                                                                 : r);
    }
    return no;
}

Test(reduce, prod_l1_l2_sum_square_log_sum_log_sum_exp) {
    float x[24], pos[24];
    gen(x, 24, 26);
    for (int i = 0; i < 24; i++) {
        pos[i] = x[i] + 2.5f; /* log_sum: a positive sum */
    }
    for (int f = PLX_REDUCE_PROD; f <= PLX_REDUCE_LOG_SUM_EXP; f++) {
        const float *in = f == PLX_REDUCE_LOG_SUM ? pos : x;
        targ ins[] = {IN(F32, DIMS(2, 3, 4), in)};
        float ref[24];
        tout y;
        plx_reduce_desc d = PLX_REDUCE_DESC_INIT((plx_reduce_func)f);
        d.axes[0] = 0;
        d.axes[1] = -1;
        d.axis_count = 2;
        size_t n = ref_reduce_more(in, 5u, (plx_reduce_func)f, ref);
        RUN(PLX_OP_REDUCE, &d, ins, &y, 1);
        EXPECT_SHAPE(&y, F32, DIMS(1, 3, 1));
        expect_f32(&y, ref, n, TOL);
        free_outs(&y, 1);
        d.axis_count = 0;
        d.keepdims = false;
        n = ref_reduce_more(in, 7u, (plx_reduce_func)f, ref);
        RUN(PLX_OP_REDUCE, &d, ins, &y, 1);
        EXPECT_SHAPE(&y, F32, SCALAR);
        expect_f32(&y, ref, n, TOL);
        free_outs(&y, 1);
    }
}

/* log_sum_exp of values whose exp overflows float32 and double. */
Test(reduce, log_sum_exp_large_values) {
    const float x[6] = {1000.0f, 999.5f, 1000.0f, -1000.0f, -1000.0f, -999.0f};
    plx_reduce_desc d = PLX_REDUCE_DESC_INIT(PLX_REDUCE_LOG_SUM_EXP);
    d.axes[0] = 1;
    d.axis_count = 1;
    d.keepdims = false;
    targ ins[] = {IN(F32, DIMS(2, 3), x)};
    tout y;
    RUN(PLX_OP_REDUCE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2));
    const float want[2] = {(float)(1000.0 + log(2.0 + exp(-0.5))),
                           (float)(-999.0 + log(1.0 + 2.0 * exp(-1.0)))};
    expect_f32(&y, want, 2, TOL);
    free_outs(&y, 1);
}

Test(reduce, int32_prod_l1_sum_square) {
    const int32_t x[6] = {2, -3, 4, -1, 0, 5};
    const plx_reduce_func fs[3] = {PLX_REDUCE_PROD, PLX_REDUCE_L1, PLX_REDUCE_SUM_SQUARE};
    const int32_t want[3][2] = {{-24, 0}, {9, 6}, {29, 26}};
    for (int f = 0; f < 3; f++) {
        plx_reduce_desc d = PLX_REDUCE_DESC_INIT(fs[f]);
        d.axes[0] = 1;
        d.axis_count = 1;
        targ ins[] = {IN(I32, DIMS(2, 3), x)};
        tout y;
        RUN(PLX_OP_REDUCE, &d, ins, &y, 1);
        EXPECT_SHAPE(&y, I32, DIMS(2, 1));
        expect_i32(&y, want[f], 2);
        free_outs(&y, 1);
    }
}

/* ------------------------------------------------------------------------ */
/* arg_reduce, topk                                                           */
/* ------------------------------------------------------------------------ */

/* Index of the max (min) along `axis` of X [2,3,4], by coordinates; ties:
 * the first, or the last with `last`. */
static void ref_arg(const float *x, int axis, bool min, bool last, int64_t *y) {
    const int64_t xd[3] = {2, 3, 4};
    size_t k = 0;
    for (int64_t a = 0; a < (axis == 0 ? 1 : 2); a++) {
        for (int64_t b = 0; b < (axis == 1 ? 1 : 3); b++) {
            for (int64_t c = 0; c < (axis == 2 ? 1 : 4); c++) {
                int64_t best = 0;
                float bv = 0;
                for (int64_t j = 0; j < xd[axis]; j++) {
                    int64_t co[3] = {a, b, c};
                    co[axis] = j;
                    float v = x[(co[0] * 3 + co[1]) * 4 + co[2]];
                    if (j == 0 || (min ? v < bv : v > bv) || (last && v == bv)) {
                        best = j;
                        bv = v;
                    }
                }
                y[k++] = best;
            }
        }
    }
}

Test(arg_reduce, argmax_argmin_keepdims_last_index_negative_axis) {
    float x[24];
    for (int i = 0; i < 24; i++) {
        x[i] = (float)((i * 5 + i / 7) % 4); /* many ties */
    }
    targ ins[] = {IN(F32, DIMS(2, 3, 4), x)};
    int64_t ref[12];
    tout y;
    /* argmax along 1, keepdims: [2,1,4] */
    plx_arg_reduce_desc d = PLX_ARG_REDUCE_DESC_INIT(false);
    d.axis = 1;
    RUN(PLX_OP_ARG_REDUCE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I64, DIMS(2, 1, 4));
    ref_arg(x, 1, false, false, ref);
    expect_i64(&y, ref, 8);
    free_outs(&y, 1);
    /* argmin along -1 with the last index, no keepdims: [2,3] */
    d.select_min = true;
    d.select_last_index = true;
    d.axis = -1;
    d.keepdims = false;
    RUN(PLX_OP_ARG_REDUCE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I64, DIMS(2, 3));
    ref_arg(x, 2, true, true, ref);
    expect_i64(&y, ref, 6);
    free_outs(&y, 1);
    /* argmax along 0 with the last index, keepdims: [1,3,4] */
    d.select_min = false;
    d.axis = 0;
    d.keepdims = true;
    RUN(PLX_OP_ARG_REDUCE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I64, DIMS(1, 3, 4));
    ref_arg(x, 0, false, true, ref);
    expect_i64(&y, ref, 12);
    free_outs(&y, 1);
}

Test(arg_reduce, int32_and_uint8) {
    const int32_t x[6] = {5, -9, 5, INT32_MIN, INT32_MAX, 0};
    plx_arg_reduce_desc d = PLX_ARG_REDUCE_DESC_INIT(true);
    d.axis = 1;
    d.keepdims = false;
    targ ins[] = {IN(I32, DIMS(2, 3), x)};
    tout y;
    RUN(PLX_OP_ARG_REDUCE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I64, DIMS(2));
    const int64_t want[2] = {1, 0};
    expect_i64(&y, want, 2);
    free_outs(&y, 1);
    const uint8_t u[4] = {3, 250, 250, 1};
    d.select_min = false;
    d.axis = 0;
    targ uins[] = {IN(U8, DIMS(4), u)};
    RUN(PLX_OP_ARG_REDUCE, &d, uins, &y, 1);
    EXPECT_SHAPE(&y, I64, SCALAR);
    const int64_t uwant[1] = {1};
    expect_i64(&y, uwant, 1);
    free_outs(&y, 1);
}

/* The first k of a stable sort of each line along `axis` of X [rows, cols]
 * (largest or smallest first; equal values keep their order). */
static void ref_topk(const float *x, int64_t rows, int64_t cols, int axis, int64_t k, bool largest,
                     float *v, int64_t *ix) {
    int64_t lines = axis == 1 ? rows : cols, len = axis == 1 ? cols : rows;
    for (int64_t l = 0; l < lines; l++) {
        int64_t order[16];
        for (int64_t j = 0; j < len; j++) {
            order[j] = j;
        }
        for (int64_t j = 1; j < len; j++) {
            for (int64_t p = j; p > 0; p--) {
                float a = axis == 1 ? x[l * cols + order[p]] : x[order[p] * cols + l];
                float b = axis == 1 ? x[l * cols + order[p - 1]] : x[order[p - 1] * cols + l];
                if (!(largest ? a > b : a < b)) {
                    break;
                }
                int64_t t = order[p];
                order[p] = order[p - 1];
                order[p - 1] = t;
            }
        }
        for (int64_t t = 0; t < k; t++) {
            size_t o = (size_t)(axis == 1 ? l * k + t : t * cols + l);
            v[o] = axis == 1 ? x[l * cols + order[t]] : x[order[t] * cols + l];
            ix[o] = order[t];
        }
    }
}

Test(topk, largest_and_smallest_both_axes_with_ties) {
    float x[20];
    for (int i = 0; i < 20; i++) {
        x[i] = (float)((i * 7) % 5) - 2.0f; /* each value four times */
    }
    float rv[20];
    int64_t ri[20];
    tout y[2];
    targ ins[] = {IN(F32, DIMS(4, 5), x)};
    /* largest 3 along -1: [4,3] */
    plx_topk_desc d = PLX_TOPK_DESC_INIT(3);
    RUN(PLX_OP_TOPK, &d, ins, y, 2);
    EXPECT_SHAPE(&y[0], F32, DIMS(4, 3));
    EXPECT_SHAPE(&y[1], I64, DIMS(4, 3));
    ref_topk(x, 4, 5, 1, 3, true, rv, ri);
    expect_f32(&y[0], rv, 12, 0.0f);
    expect_i64(&y[1], ri, 12);
    free_outs(y, 2);
    /* smallest 2 along 0: [2,5] */
    d.k = 2;
    d.axis = 0;
    d.largest = false;
    RUN(PLX_OP_TOPK, &d, ins, y, 2);
    EXPECT_SHAPE(&y[0], F32, DIMS(2, 5));
    EXPECT_SHAPE(&y[1], I64, DIMS(2, 5));
    ref_topk(x, 4, 5, 0, 2, false, rv, ri);
    expect_f32(&y[0], rv, 10, 0.0f);
    expect_i64(&y[1], ri, 10);
    free_outs(y, 2);
    /* k = n: the whole line sorted, unsorted flag or not */
    d.k = 5;
    d.axis = 1;
    d.largest = true;
    d.sorted = false;
    RUN(PLX_OP_TOPK, &d, ins, y, 2);
    EXPECT_SHAPE(&y[0], F32, DIMS(4, 5));
    ref_topk(x, 4, 5, 1, 5, true, rv, ri);
    expect_f32(&y[0], rv, 20, 0.0f);
    expect_i64(&y[1], ri, 20);
    free_outs(y, 2);
}

Test(topk, int32_values_and_indices) {
    const int32_t x[6] = {7, -1, 7, INT32_MIN, 3, INT32_MAX};
    plx_topk_desc d = PLX_TOPK_DESC_INIT(4);
    targ ins[] = {IN(I32, DIMS(6), x)};
    tout y[2];
    RUN(PLX_OP_TOPK, &d, ins, y, 2);
    EXPECT_SHAPE(&y[0], I32, DIMS(4));
    EXPECT_SHAPE(&y[1], I64, DIMS(4));
    const int32_t vw[4] = {INT32_MAX, 7, 7, 3};
    const int64_t iw[4] = {5, 0, 2, 4};
    expect_i32(&y[0], vw, 4);
    expect_i64(&y[1], iw, 4);
    free_outs(y, 2);
}

/* ------------------------------------------------------------------------ */
/* reshape, flatten, transpose, squeeze, unsqueeze                            */
/* ------------------------------------------------------------------------ */

/* Ops that keep the data in order: the output equals the input. */
static void check_same_data(plx_op op, const void *desc, const int64_t *xd, uint32_t xr,
                            const int64_t *yd, uint32_t yr) {
    size_t n = numel(xd, xr);
    float *x = falloc(n);
    seq(x, n, 0.0f, 1.0f);
    targ ins[] = {{F32, xd, xr, x, false}};
    tout y;
    RUN(op, desc, ins, &y, 1);
    expect_shape_(&y, F32, yd, yr);
    expect_f32(&y, x, n, 0.0f);
    free_outs(&y, 1);
    free(x);
}

Test(reshape, zero_copies_and_minus_one_infers) {
    plx_reshape_desc d = PLX_RESHAPE_DESC_INIT;
    d.rank = 2;
    d.dims[0] = 0;
    d.dims[1] = -1;
    check_same_data(PLX_OP_RESHAPE, &d, DIMS(2, 3, 4), DIMS(2, 12));
    d.rank = 3;
    d.dims[0] = 4;
    d.dims[1] = 0; /* copies X's dim 1: 3 */
    d.dims[2] = -1;
    check_same_data(PLX_OP_RESHAPE, &d, DIMS(2, 3, 4), DIMS(4, 3, 2));
    d.rank = 4;
    d.dims[0] = -1;
    d.dims[1] = 1;
    d.dims[2] = 2;
    d.dims[3] = 1;
    check_same_data(PLX_OP_RESHAPE, &d, DIMS(2, 3, 4), DIMS(12, 1, 2, 1));
}

Test(flatten, axes) {
    plx_axis_desc d = PLX_AXIS_DESC_INIT(2);
    check_same_data(PLX_OP_FLATTEN, &d, DIMS(2, 3, 4), DIMS(6, 4));
    d.axis = 0;
    check_same_data(PLX_OP_FLATTEN, &d, DIMS(2, 3, 4), DIMS(1, 24));
    d.axis = -2;
    check_same_data(PLX_OP_FLATTEN, &d, DIMS(2, 3, 4), DIMS(2, 12));
    d.axis = 3;
    check_same_data(PLX_OP_FLATTEN, &d, DIMS(2, 3, 4), DIMS(24, 1));
}

Test(squeeze, all_ones_and_given_axes) {
    plx_axes_desc d = PLX_AXES_DESC_INIT;
    check_same_data(PLX_OP_SQUEEZE, &d, DIMS(1, 3, 1, 2), DIMS(3, 2));
    d.axes[0] = -2;
    d.axis_count = 1;
    check_same_data(PLX_OP_SQUEEZE, &d, DIMS(1, 3, 1, 2), DIMS(1, 3, 2));
}

Test(unsqueeze, axes_of_the_output) {
    plx_axes_desc d = PLX_AXES_DESC_INIT;
    d.axes[0] = 0;
    d.axes[1] = -1;
    d.axis_count = 2;
    check_same_data(PLX_OP_UNSQUEEZE, &d, DIMS(3, 2), DIMS(1, 3, 2, 1));
    d.axes[0] = 1;
    d.axis_count = 1;
    check_same_data(PLX_OP_UNSQUEEZE, &d, DIMS(3, 2), DIMS(3, 1, 2));
}

/* Rank 0 in and out of the data-movement ops. */
Test(squeeze, scalars_in_and_out) {
    plx_axes_desc sq = PLX_AXES_DESC_INIT;
    check_same_data(PLX_OP_SQUEEZE, &sq, DIMS(1, 1), SCALAR);
    plx_axes_desc un = PLX_AXES_DESC_INIT;
    un.axes[0] = -1;
    un.axis_count = 1;
    check_same_data(PLX_OP_UNSQUEEZE, &un, SCALAR, DIMS(1));
    plx_reshape_desc rs = PLX_RESHAPE_DESC_INIT;
    check_same_data(PLX_OP_RESHAPE, &rs, DIMS(1, 1, 1), SCALAR);

    const float v[1] = {2.5f};
    plx_shape_desc ex = PLX_SHAPE_DESC_INIT;
    ex.rank = 2;
    ex.dims[0] = 2;
    ex.dims[1] = 3;
    targ ins[] = {IN(F32, SCALAR, v)};
    tout y;
    RUN(PLX_OP_EXPAND, &ex, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3));
    const float want[] = {2.5f, 2.5f, 2.5f, 2.5f, 2.5f, 2.5f};
    expect_f32(&y, want, 6, 0.0f);
    free_outs(&y, 1);

    const float data[4] = {10, 11, 12, 13};
    const int32_t idx[1] = {-1};
    plx_axis_desc g = PLX_AXIS_DESC_INIT(0);
    targ gins[] = {IN(F32, DIMS(4), data), CONST(I32, SCALAR, idx)};
    RUN(PLX_OP_GATHER, &g, gins, &y, 1);
    EXPECT_SHAPE(&y, F32, SCALAR);
    const float gwant[] = {13};
    expect_f32(&y, gwant, 1, 0.0f);
    free_outs(&y, 1);
}

Test(transpose, perm_and_default_reverse) {
    float x[24], ref[24];
    seq(x, 24, 0.0f, 1.0f);
    targ ins[] = {IN(F32, DIMS(2, 3, 4), x)};
    tout y;
    plx_transpose_desc d = PLX_TRANSPOSE_DESC_INIT;
    d.perm[0] = 2;
    d.perm[1] = 0;
    d.perm[2] = 1;
    d.perm_count = 3;
    RUN(PLX_OP_TRANSPOSE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(4, 2, 3));
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < 2; i++) {
            for (int j = 0; j < 3; j++) {
                ref[(k * 2 + i) * 3 + j] = x[(i * 3 + j) * 4 + k];
            }
        }
    }
    expect_f32(&y, ref, 24, 0.0f);
    free_outs(&y, 1);
    d.perm_count = 0;
    RUN(PLX_OP_TRANSPOSE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(4, 3, 2));
    for (int k = 0; k < 4; k++) {
        for (int j = 0; j < 3; j++) {
            for (int i = 0; i < 2; i++) {
                ref[(k * 3 + j) * 2 + i] = x[(i * 3 + j) * 4 + k];
            }
        }
    }
    expect_f32(&y, ref, 24, 0.0f);
    free_outs(&y, 1);
}

/* ------------------------------------------------------------------------ */
/* concat, split                                                              */
/* ------------------------------------------------------------------------ */

Test(concat, three_inputs_negative_axis) {
    float a[6], b[12], c[18], ref[36];
    seq(a, 6, 0.0f, 1.0f);
    seq(b, 12, 100.0f, 1.0f);
    seq(c, 18, 200.0f, 1.0f);
    plx_axis_desc d = PLX_AXIS_DESC_INIT(-2);
    targ ins[] = {IN(F32, DIMS(2, 1, 3), a), CONST(F32, DIMS(2, 2, 3), b), IN(F32, DIMS(2, 3, 3), c)};
    tout y;
    RUN(PLX_OP_CONCAT, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 6, 3));
    for (int n = 0; n < 2; n++) {
        for (int r = 0; r < 6; r++) {
            for (int k = 0; k < 3; k++) {
                float v = r < 1   ? a[(n * 1 + r) * 3 + k]
                        : r < 3 ? b[(n * 2 + r - 1) * 3 + k]
                                : c[(n * 3 + r - 3) * 3 + k];
                ref[(n * 6 + r) * 3 + k] = v;
            }
        }
    }
    expect_f32(&y, ref, 36, 0.0f);
    free_outs(&y, 1);
}

Test(concat, int32_axis0) {
    const int32_t a[2] = {1, 2}, b[4] = {3, 4, 5, 6}, c[2] = {7, 8};
    plx_axis_desc d = PLX_AXIS_DESC_INIT(0);
    targ ins[] = {IN(I32, DIMS(1, 2), a), IN(I32, DIMS(2, 2), b), CONST(I32, DIMS(1, 2), c)};
    tout y;
    RUN(PLX_OP_CONCAT, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I32, DIMS(4, 2));
    const int32_t want[] = {1, 2, 3, 4, 5, 6, 7, 8};
    expect_i32(&y, want, 8);
    free_outs(&y, 1);
}

/* Splits X [rows, cols] (values 0, 1, ...) along `axis` into parts of `sizes`. */
static void check_split(const plx_split_desc *d, int64_t rows, int64_t cols, int axis,
                        const int64_t *sizes, uint32_t parts) {
    float x[64];
    seq(x, (size_t)(rows * cols), 0.0f, 1.0f);
    int64_t xd[2] = {rows, cols};
    targ ins[] = {{F32, xd, 2, x, false}};
    tout y[4];
    run_op(PLX_OP_SPLIT, d, ins, 1, y, parts);
    int64_t offset = 0;
    for (uint32_t p = 0; p < parts; p++) {
        int64_t yd[2] = {axis == 0 ? sizes[p] : rows, axis == 1 ? sizes[p] : cols};
        expect_shape_(&y[p], F32, yd, 2);
        float ref[64];
        for (int64_t r = 0; r < yd[0]; r++) {
            for (int64_t c = 0; c < yd[1]; c++) {
                int64_t xr = axis == 0 ? r + offset : r, xc = axis == 1 ? c + offset : c;
                ref[r * yd[1] + c] = x[xr * cols + xc];
            }
        }
        expect_f32(&y[p], ref, (size_t)(yd[0] * yd[1]), 0.0f);
        offset += sizes[p];
    }
    free_outs(y, parts);
}

Test(split, equal_parts) {
    plx_split_desc d = PLX_SPLIT_DESC_INIT(1);
    const int64_t sizes[3] = {2, 2, 2};
    check_split(&d, 2, 6, 1, sizes, 3);
}

Test(split, equal_parts_last_smaller) {
    /* 5 into 3: ceil(5/3) = 2, 2, 1 (ONNX opset 18 num_outputs) */
    plx_split_desc d = PLX_SPLIT_DESC_INIT(1);
    const int64_t sizes[3] = {2, 2, 1};
    check_split(&d, 2, 5, 1, sizes, 3);
}

/* Along the outermost axis every part is one contiguous range of X, so the
 * loaded network runs the split in place (sub-tensors, no workload); the
 * parts feed network outputs and must still reach the caller's buffers. */
Test(split, outermost_axis_parts_reach_network_outputs) {
    plx_split_desc d = PLX_SPLIT_DESC_INIT(0);
    const int64_t equal[2] = {2, 2};
    check_split(&d, 4, 2, 0, equal, 2);
    const int64_t uneven[3] = {2, 2, 1};
    check_split(&d, 5, 2, 0, uneven, 3);
}

Test(split, explicit_sizes_negative_axis) {
    const int64_t sizes[3] = {1, 3, 2};
    plx_split_desc d = PLX_SPLIT_DESC_INIT(-1);
    d.sizes = sizes;
    check_split(&d, 2, 6, 1, sizes, 3);
}

/* ------------------------------------------------------------------------ */
/* slice, pad                                                                 */
/* ------------------------------------------------------------------------ */

Test(slice, negative_step_and_clamping) {
    float x[15];
    seq(x, 15, 0.0f, 1.0f); /* [3,5]: x[r][c] = 5r + c */
    plx_slice_desc d = PLX_SLICE_DESC_INIT;
    d.count = 2;
    d.axes[0] = 0; /* rows 0, 2: end 10 clamps to 3 */
    d.starts[0] = 0;
    d.ends[0] = 10;
    d.steps[0] = 2;
    d.axes[1] = -1; /* columns 4, 2, 0: end -100 clamps to before 0 */
    d.starts[1] = -1;
    d.ends[1] = -100;
    d.steps[1] = -2;
    targ ins[] = {IN(F32, DIMS(3, 5), x)};
    tout y;
    RUN(PLX_OP_SLICE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3));
    const float want[] = {4, 2, 0, 14, 12, 10};
    expect_f32(&y, want, 6, 0.0f);
    free_outs(&y, 1);

    /* start past the end with a negative step clamps to the last index */
    plx_slice_desc e = PLX_SLICE_DESC_INIT;
    e.count = 1;
    e.axes[0] = 1;
    e.starts[0] = 100;
    e.ends[0] = 1;
    e.steps[0] = -1;
    RUN(PLX_OP_SLICE, &e, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(3, 3));
    const float want2[] = {4, 3, 2, 9, 8, 7, 14, 13, 12};
    expect_f32(&y, want2, 9, 0.0f);
    free_outs(&y, 1);

    /* a negative step of -3 from -2 to 0 (exclusive) on rows: row 1 only */
    plx_slice_desc f = PLX_SLICE_DESC_INIT;
    f.count = 1;
    f.axes[0] = 0;
    f.starts[0] = -2;
    f.ends[0] = 0;
    f.steps[0] = -3;
    RUN(PLX_OP_SLICE, &f, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 5));
    const float want3[] = {5, 6, 7, 8, 9};
    expect_f32(&y, want3, 5, 0.0f);
    free_outs(&y, 1);
}

/* Exporters write INT64_MAX ("to the end") and INT64_MIN ("past the
 * start" for negative steps). */
Test(slice, int64_extremes) {
    float x[15];
    seq(x, 15, 0.0f, 1.0f);
    plx_slice_desc d = PLX_SLICE_DESC_INIT;
    d.count = 2;
    d.axes[0] = 1;
    d.starts[0] = 2;
    d.ends[0] = INT64_MAX;
    d.axes[1] = 0;
    d.starts[1] = INT64_MAX;
    d.ends[1] = INT64_MIN;
    d.steps[1] = -1;
    targ ins[] = {IN(F32, DIMS(3, 5), x)};
    tout y;
    RUN(PLX_OP_SLICE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(3, 3));
    const float want[] = {12, 13, 14, 7, 8, 9, 2, 3, 4};
    expect_f32(&y, want, 9, 0.0f);
    free_outs(&y, 1);
}

Test(slice, positive_step_middle_of_3d) {
    float x[24];
    seq(x, 24, 0.0f, 1.0f);
    plx_slice_desc d = PLX_SLICE_DESC_INIT;
    d.count = 1;
    d.axes[0] = 2;
    d.starts[0] = 1;
    d.ends[0] = -1;
    targ ins[] = {IN(F32, DIMS(2, 3, 4), x)};
    tout y;
    RUN(PLX_OP_SLICE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3, 2));
    float ref[12];
    for (int i = 0; i < 6; i++) {
        ref[i * 2] = x[i * 4 + 1];
        ref[i * 2 + 1] = x[i * 4 + 2];
    }
    expect_f32(&y, ref, 12, 0.0f);
    free_outs(&y, 1);
}

static int64_t pad_index(plx_pad_mode mode, int64_t i, int64_t n) {
    if (i >= 0 && i < n) {
        return i;
    }
    if (mode == PLX_PAD_EDGE) {
        return i < 0 ? 0 : n - 1;
    }
    if (mode == PLX_PAD_REFLECT) {
        return i < 0 ? -i : 2 * (n - 1) - i;
    }
    return -1;
}

/* Pads X [r, c] (values 1, 2, ...) and compares with the reference. */
static void check_pad(const plx_pad_desc *d, int64_t r, int64_t c, int64_t want_r, int64_t want_c) {
    float x[32], ref[128];
    seq(x, (size_t)(r * c), 1.0f, 1.0f);
    int64_t xd[2] = {r, c};
    targ ins[] = {{F32, xd, 2, x, false}};
    tout y;
    RUN(PLX_OP_PAD, d, ins, &y, 1);
    int64_t yd[2] = {want_r, want_c};
    expect_shape_(&y, F32, yd, 2);
    for (int64_t i = 0; i < want_r; i++) {
        for (int64_t j = 0; j < want_c; j++) {
            int64_t si = pad_index(d->mode, i - d->pads_begin[0], r);
            int64_t sj = pad_index(d->mode, j - d->pads_begin[1], c);
            ref[i * want_c + j] = si < 0 || sj < 0 ? (float)d->value : x[si * c + sj];
        }
    }
    expect_f32(&y, ref, (size_t)(want_r * want_c), 0.0f);
    free_outs(&y, 1);
}

Test(pad, constant) {
    plx_pad_desc d = PLX_PAD_DESC_INIT(PLX_PAD_CONSTANT);
    d.pads_begin[0] = 1;
    d.pads_end[1] = 2;
    d.value = 9.5;
    check_pad(&d, 2, 3, 3, 5);
}

Test(pad, constant_negative_pads_crop) {
    plx_pad_desc d = PLX_PAD_DESC_INIT(PLX_PAD_CONSTANT);
    d.pads_begin[1] = -1;
    d.pads_end[0] = 1;
    d.value = -2.0;
    /* [2,3] -> [3,2]: column 0 cropped, a row of -2 appended */
    float x[6] = {1, 2, 3, 4, 5, 6};
    targ ins[] = {IN(F32, DIMS(2, 3), x)};
    tout y;
    RUN(PLX_OP_PAD, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(3, 2));
    const float want[] = {2, 3, 5, 6, -2, -2};
    expect_f32(&y, want, 6, 0.0f);
    free_outs(&y, 1);
}

Test(pad, reflect) {
    plx_pad_desc d = PLX_PAD_DESC_INIT(PLX_PAD_REFLECT);
    d.pads_begin[0] = 1;
    d.pads_begin[1] = 2;
    d.pads_end[0] = 2;
    d.pads_end[1] = 1;
    check_pad(&d, 3, 4, 6, 7);
}

Test(pad, reflect_by_hand) {
    /* 1 2 3 with pads 2, 2 in reflect mode: 3 2 1 2 3 2 1 */
    float x[3] = {1, 2, 3};
    plx_pad_desc d = PLX_PAD_DESC_INIT(PLX_PAD_REFLECT);
    d.pads_begin[0] = 2;
    d.pads_end[0] = 2;
    targ ins[] = {IN(F32, DIMS(3), x)};
    tout y;
    RUN(PLX_OP_PAD, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(7));
    const float want[] = {3, 2, 1, 2, 3, 2, 1};
    expect_f32(&y, want, 7, 0.0f);
    free_outs(&y, 1);
}

Test(pad, edge) {
    plx_pad_desc d = PLX_PAD_DESC_INIT(PLX_PAD_EDGE);
    d.pads_begin[0] = 2;
    d.pads_begin[1] = 1;
    d.pads_end[1] = 3;
    check_pad(&d, 2, 3, 4, 7);
}

Test(pad, int32_constant) {
    const int32_t x[2] = {5, 6};
    plx_pad_desc d = PLX_PAD_DESC_INIT(PLX_PAD_CONSTANT);
    d.pads_begin[0] = 1;
    d.pads_end[0] = 2;
    d.value = -7.0;
    targ ins[] = {IN(I32, DIMS(2), x)};
    tout y;
    RUN(PLX_OP_PAD, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I32, DIMS(5));
    const int32_t want[] = {-7, 5, 6, -7, -7};
    expect_i32(&y, want, 5);
    free_outs(&y, 1);
}

/* ------------------------------------------------------------------------ */
/* gather, expand, where                                                      */
/* ------------------------------------------------------------------------ */

Test(gather, int64_2d_indices_negative_axis0) {
    float x[12];
    seq(x, 12, 0.0f, 1.0f); /* [3,4] */
    const int64_t idx[4] = {0, -1, 2, 1};
    plx_axis_desc d = PLX_AXIS_DESC_INIT(0);
    targ ins[] = {IN(F32, DIMS(3, 4), x), CONST(I64, DIMS(2, 2), idx)};
    tout y;
    RUN(PLX_OP_GATHER, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 2, 4));
    const float want[] = {0, 1, 2, 3, 8, 9, 10, 11, 8, 9, 10, 11, 4, 5, 6, 7};
    expect_f32(&y, want, 16, 0.0f);
    free_outs(&y, 1);
}

Test(gather, int32_1d_indices_axis1) {
    float x[12];
    seq(x, 12, 0.0f, 1.0f);
    const int32_t idx[3] = {3, -4, 1};
    plx_axis_desc d = PLX_AXIS_DESC_INIT(-1);
    targ ins[] = {IN(F32, DIMS(3, 4), x), CONST(I32, DIMS(3), idx)};
    tout y;
    RUN(PLX_OP_GATHER, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(3, 3));
    const float want[] = {3, 0, 1, 7, 4, 5, 11, 8, 9};
    expect_f32(&y, want, 9, 0.0f);
    free_outs(&y, 1);
}

Test(gather, scalar_index_drops_the_axis) {
    float x[12];
    seq(x, 12, 0.0f, 1.0f);
    const int64_t idx[1] = {-2};
    plx_axis_desc d = PLX_AXIS_DESC_INIT(1);
    targ ins[] = {IN(F32, DIMS(3, 4), x), IN(I64, SCALAR, idx)};
    tout y;
    RUN(PLX_OP_GATHER, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(3));
    const float want[] = {2, 6, 10};
    expect_f32(&y, want, 3, 0.0f);
    free_outs(&y, 1);
}

Test(expand, bidirectional_broadcast) {
    /* [3,1] to shape [2,1,4]: the 1 of the shape keeps X's 3. */
    const float x[3] = {1, 2, 3};
    plx_shape_desc d = PLX_SHAPE_DESC_INIT;
    d.rank = 3;
    d.dims[0] = 2;
    d.dims[1] = 1;
    d.dims[2] = 4;
    targ ins[] = {IN(F32, DIMS(3, 1), x)};
    tout y;
    RUN(PLX_OP_EXPAND, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3, 4));
    float ref[24];
    for (int i = 0; i < 24; i++) {
        ref[i] = x[(i / 4) % 3];
    }
    expect_f32(&y, ref, 24, 0.0f);
    free_outs(&y, 1);
}

Test(expand, lower_rank_shape) {
    const int32_t x[6] = {1, 2, 3, 4, 5, 6};
    plx_shape_desc d = PLX_SHAPE_DESC_INIT;
    d.rank = 1;
    d.dims[0] = 1;
    targ ins[] = {IN(I32, DIMS(2, 1, 3), x)};
    tout y;
    RUN(PLX_OP_EXPAND, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I32, DIMS(2, 1, 3));
    expect_i32(&y, x, 6);
    free_outs(&y, 1);
}

Test(tile, int32_2d_and_float32_rank3) {
    /* [[1,2,3],[4,5,6]] x (2,2) -> [4,6] */
    const int32_t x[6] = {1, 2, 3, 4, 5, 6};
    plx_tile_desc d = PLX_TILE_DESC_INIT;
    d.repeats[0] = 2;
    d.repeats[1] = 2;
    targ ins[] = {IN(I32, DIMS(2, 3), x)};
    tout y;
    RUN(PLX_OP_TILE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I32, DIMS(4, 6));
    const int32_t want[24] = {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6,
                              1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6};
    expect_i32(&y, want, 24);
    free_outs(&y, 1);
    /* [2,1,3] x (1,3,2) -> [2,3,6]: y[a][b][c] = x[a][0][c % 3] */
    float xf[6];
    gen(xf, 6, 50);
    plx_tile_desc d3 = PLX_TILE_DESC_INIT;
    d3.repeats[1] = 3;
    d3.repeats[2] = 2;
    targ fins[] = {IN(F32, DIMS(2, 1, 3), xf)};
    RUN(PLX_OP_TILE, &d3, fins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3, 6));
    float ref[36];
    for (int a = 0; a < 2; a++) {
        for (int b = 0; b < 3; b++) {
            for (int c = 0; c < 6; c++) {
                ref[(a * 3 + b) * 6 + c] = xf[a * 3 + c % 3];
            }
        }
    }
    expect_f32(&y, ref, 36, 0.0f);
    free_outs(&y, 1);
}

Test(where, three_way_broadcast) {
    const uint8_t cond[3] = {1, 0, 1};
    const float x[2] = {10, 20}, yv[1] = {-1};
    targ ins[] = {IN(BOOL, DIMS(1, 3), cond), CONST(F32, DIMS(2, 1), x), CONST(F32, SCALAR, yv)};
    tout z;
    RUN(PLX_OP_WHERE, NULL, ins, &z, 1);
    EXPECT_SHAPE(&z, F32, DIMS(2, 3));
    const float want[] = {10, -1, 10, 20, -1, 20};
    expect_f32(&z, want, 6, 0.0f);
    free_outs(&z, 1);
}

Test(where, int32) {
    const uint8_t cond[4] = {0, 1, 1, 0};
    const int32_t x[2] = {1, 2}, yv[4] = {-1, -2, -3, -4};
    targ ins[] = {IN(BOOL, DIMS(2, 2), cond), IN(I32, DIMS(2), x), IN(I32, DIMS(2, 2), yv)};
    tout z;
    RUN(PLX_OP_WHERE, NULL, ins, &z, 1);
    EXPECT_SHAPE(&z, I32, DIMS(2, 2));
    const int32_t want[] = {-1, 2, 1, -4};
    expect_i32(&z, want, 4);
    free_outs(&z, 1);
}

/* ------------------------------------------------------------------------ */
/* cast                                                                       */
/* ------------------------------------------------------------------------ */

Test(cast, float32_to_int32_truncates) {
    const float x[8] = {-2.7f, -0.5f, 0.0f, 0.5f, 2.7f, 100.9f, -100.9f, 7.0f};
    plx_cast_desc d = PLX_CAST_DESC_INIT(I32);
    targ ins[] = {IN(F32, DIMS(2, 4), x)};
    tout y;
    RUN(PLX_OP_CAST, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I32, DIMS(2, 4));
    const int32_t want[] = {-2, 0, 0, 0, 2, 100, -100, 7};
    expect_i32(&y, want, 8);
    free_outs(&y, 1);
}

Test(cast, to_bool_and_back) {
    const int32_t x[5] = {0, -3, 5, 0, 1};
    plx_cast_desc d = PLX_CAST_DESC_INIT(BOOL);
    targ ins[] = {IN(I32, DIMS(5), x)};
    tout y;
    RUN(PLX_OP_CAST, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, BOOL, DIMS(5));
    const uint8_t want[] = {0, 1, 1, 0, 1};
    expect_u8(&y, want, 5);
    free_outs(&y, 1);

    const float f[4] = {0.0f, -0.0f, 0.1f, -3.0f};
    targ fins[] = {IN(F32, DIMS(4), f)};
    RUN(PLX_OP_CAST, &d, fins, &y, 1);
    EXPECT_SHAPE(&y, BOOL, DIMS(4));
    const uint8_t wantf[] = {0, 0, 1, 1};
    expect_u8(&y, wantf, 4);
    free_outs(&y, 1);

    const uint8_t b[3] = {1, 0, 1};
    plx_cast_desc back = PLX_CAST_DESC_INIT(F32);
    targ bins[] = {IN(BOOL, DIMS(3), b)};
    RUN(PLX_OP_CAST, &back, bins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(3));
    const float wantb[] = {1, 0, 1};
    expect_f32(&y, wantb, 3, 0.0f);
    free_outs(&y, 1);
}

Test(cast, float32_to_float16_and_back) {
    /* IEEE binary16 with round to nearest even. */
    const float x[10] = {1.0f, 0.5f, -2.0f, 65504.0f, 0.1f, 1.0f / 3.0f, 0.0f, -0.0f, 1e-7f, 1e5f};
    const uint16_t bits[10] = {0x3C00, 0x3800, 0xC000, 0x7BFF, 0x2E66,
                               0x3555, 0x0000, 0x8000, 0x0002, 0x7C00};
    plx_cast_desc d = PLX_CAST_DESC_INIT(F16);
    targ ins[] = {IN(F32, DIMS(10), x)};
    tout y;
    RUN(PLX_OP_CAST, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F16, DIMS(10));
    expect_u16(&y, bits, 10);
    free_outs(&y, 1);

    const uint16_t h[6] = {0x3C00, 0xC000, 0x3555, 0x0001, 0x7C00, 0x7BFF};
    const float want[6] = {1.0f, -2.0f, 0.333251953125f, 5.9604644775390625e-8f, INFINITY, 65504.0f};
    plx_cast_desc back = PLX_CAST_DESC_INIT(F32);
    targ hins[] = {IN(F16, DIMS(2, 3), h)};
    RUN(PLX_OP_CAST, &back, hins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3));
    expect_f32(&y, want, 6, 0.0f);
    free_outs(&y, 1);
}

Test(cast, int32_to_float32_and_int64) {
    const int32_t x[3] = {-5, 0, 16777216};
    plx_cast_desc d = PLX_CAST_DESC_INIT(F32);
    targ ins[] = {IN(I32, DIMS(3), x)};
    tout y;
    RUN(PLX_OP_CAST, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(3));
    const float want[] = {-5.0f, 0.0f, 16777216.0f};
    expect_f32(&y, want, 3, 0.0f);
    free_outs(&y, 1);
    plx_cast_desc e = PLX_CAST_DESC_INIT(I64);
    RUN(PLX_OP_CAST, &e, ins, &y, 1);
    EXPECT_SHAPE(&y, I64, DIMS(3));
    const int64_t want64[] = {-5, 0, 16777216};
    expect_i64(&y, want64, 3);
    free_outs(&y, 1);
}

/* ------------------------------------------------------------------------ */
/* resize                                                                     */
/* ------------------------------------------------------------------------ */

/* The input coordinate of output index o (ONNX coordinate_transformation_mode). */
static double resize_coord(plx_resize_coord cm, int64_t o, double scale, int64_t in, int64_t out) {
    switch (cm) {
    case PLX_RESIZE_COORD_HALF_PIXEL: return (o + 0.5) / scale - 0.5;
    case PLX_RESIZE_COORD_ASYMMETRIC: return o / scale;
    case PLX_RESIZE_COORD_ALIGN_CORNERS: return out == 1 ? 0.0 : o * (double)(in - 1) / (double)(out - 1);
    case PLX_RESIZE_COORD_PYTORCH_HALF_PIXEL: return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
    case PLX_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN: return (o + 0.5) / scale;
    default: return NAN; /* the 1.3 modes: tests/kernels/test_kernels_sample.c */
    }
}

static int64_t resize_nearest_index(plx_resize_nearest nm, double x, int64_t in) {
    double f = floor(x);
    int64_t i;
    switch (nm) {
    case PLX_RESIZE_NEAREST_ROUND_PREFER_FLOOR: i = (int64_t)(x - f == 0.5 ? f : floor(x + 0.5)); break;
    case PLX_RESIZE_NEAREST_ROUND_PREFER_CEIL: i = (int64_t)(x - f == 0.5 ? f + 1 : floor(x + 0.5)); break;
    case PLX_RESIZE_NEAREST_FLOOR: i = (int64_t)f; break;
    default: i = (int64_t)ceil(x); break;
    }
    return i < 0 ? 0 : i >= in ? in - 1 : i;
}

/* Resizes X [1, C, h, w] to [1, C, oh, ow]; scale = the given scale, or
 * out / in when sizes are given. */
static void ref_resize(const plx_resize_desc *d, const float *x, int64_t c, int64_t h, int64_t w,
                       int64_t oh, int64_t ow, float *y) {
    const int64_t in[2] = {h, w}, out[2] = {oh, ow};
    double scale[2];
    for (int i = 0; i < 2; i++) {
        scale[i] = d->sizes[i] ? (double)out[i] / (double)in[i] : (double)d->scales[i];
    }
    for (int64_t ch = 0; ch < c; ch++) {
        const float *xc = x + ch * h * w;
        for (int64_t i = 0; i < oh; i++) {
            for (int64_t j = 0; j < ow; j++) {
                double cy = resize_coord(d->coord, i, scale[0], h, oh);
                double cx = resize_coord(d->coord, j, scale[1], w, ow);
                double v;
                if (d->mode == PLX_RESIZE_NEAREST) {
                    v = xc[resize_nearest_index(d->nearest, cy, h) * w +
                           resize_nearest_index(d->nearest, cx, w)];
                } else {
                    cy = cy < 0 ? 0 : cy > (double)(h - 1) ? (double)(h - 1) : cy;
                    cx = cx < 0 ? 0 : cx > (double)(w - 1) ? (double)(w - 1) : cx;
                    int64_t y0 = (int64_t)floor(cy), x0 = (int64_t)floor(cx);
                    int64_t y1 = y0 + 1 < h ? y0 + 1 : h - 1, x1 = x0 + 1 < w ? x0 + 1 : w - 1;
                    double ly = cy - (double)y0, lx = cx - (double)x0;
                    v = (1 - ly) * ((1 - lx) * xc[y0 * w + x0] + lx * xc[y0 * w + x1]) +
                        ly * ((1 - lx) * xc[y1 * w + x0] + lx * xc[y1 * w + x1]);
                }
                y[(ch * oh + i) * ow + j] = (float)v;
            }
        }
    }
}

static void check_resize(const plx_resize_desc *d, int64_t c, int64_t h, int64_t w, int64_t oh,
                         int64_t ow) {
    float x[64], ref[256];
    gen(x, (size_t)(c * h * w), 26);
    int64_t xd[4] = {1, c, h, w}, yd[4] = {1, c, oh, ow};
    targ ins[] = {{F32, xd, 4, x, false}};
    tout y;
    RUN(PLX_OP_RESIZE, d, ins, &y, 1);
    expect_shape_(&y, F32, yd, 4);
    ref_resize(d, x, c, h, w, oh, ow, ref);
    expect_f32(&y, ref, (size_t)(c * oh * ow), TOL);
    free_outs(&y, 1);
}

Test(resize, nearest_by_hand_half_pixel_ties) {
    /* [1,1,1,2] = 1 2 with scale 1.5 along W: out floor(2*1.5) = 3; half
     * pixel coordinates -1/6, 0.5, 7/6: the tie at 0.5 goes down with
     * round_prefer_floor (1 1 2) and up with round_prefer_ceil (1 2 2). */
    const float x[2] = {1, 2};
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_NEAREST);
    d.scales[0] = 1.0f;
    d.scales[1] = 1.5f;
    targ ins[] = {IN(F32, DIMS(1, 1, 1, 2), x)};
    tout y;
    RUN(PLX_OP_RESIZE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 1, 1, 3));
    const float floor_want[] = {1, 1, 2};
    expect_f32(&y, floor_want, 3, 0.0f);
    free_outs(&y, 1);
    d.nearest = PLX_RESIZE_NEAREST_ROUND_PREFER_CEIL;
    RUN(PLX_OP_RESIZE, &d, ins, &y, 1);
    const float ceil_want[] = {1, 2, 2};
    expect_f32(&y, ceil_want, 3, 0.0f);
    free_outs(&y, 1);
}

Test(resize, nearest_scales_floor_output_size) {
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_NEAREST);
    d.scales[0] = 2.0f;
    d.scales[1] = 1.7f; /* floor(3 * 1.7) = 5 */
    check_resize(&d, 2, 2, 3, 4, 5);
}

Test(resize, nearest_asymmetric_floor_sizes) {
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_NEAREST);
    d.coord = PLX_RESIZE_COORD_ASYMMETRIC;
    d.nearest = PLX_RESIZE_NEAREST_FLOOR;
    d.sizes[0] = 5;
    d.sizes[1] = 2;
    check_resize(&d, 1, 2, 4, 5, 2);
}

Test(resize, nearest_tf_half_pixel_ceil) {
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_NEAREST);
    d.coord = PLX_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN;
    d.nearest = PLX_RESIZE_NEAREST_CEIL;
    d.sizes[0] = 3;
    d.sizes[1] = 7;
    check_resize(&d, 1, 2, 3, 3, 7);
}

Test(resize, linear_half_pixel_sizes) {
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_LINEAR);
    d.sizes[0] = 3;
    d.sizes[1] = 5;
    check_resize(&d, 2, 2, 2, 3, 5);
}

Test(resize, linear_align_corners) {
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_LINEAR);
    d.coord = PLX_RESIZE_COORD_ALIGN_CORNERS;
    d.sizes[0] = 4;
    d.sizes[1] = 3;
    check_resize(&d, 1, 3, 2, 4, 3);
}

Test(resize, linear_align_corners_by_hand) {
    /* 0 3 along W to 4 points: 0 1 2 3 */
    const float x[2] = {0, 3};
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_LINEAR);
    d.coord = PLX_RESIZE_COORD_ALIGN_CORNERS;
    d.sizes[0] = 1;
    d.sizes[1] = 4;
    targ ins[] = {IN(F32, DIMS(1, 1, 1, 2), x)};
    tout y;
    RUN(PLX_OP_RESIZE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 1, 1, 4));
    const float want[] = {0, 1, 2, 3};
    expect_f32(&y, want, 4, TOL);
    free_outs(&y, 1);
}

Test(resize, linear_asymmetric_scales_downsample) {
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_LINEAR);
    d.coord = PLX_RESIZE_COORD_ASYMMETRIC;
    d.scales[0] = 0.5f;
    d.scales[1] = 0.75f; /* floor(4 * 0.75) = 3 */
    check_resize(&d, 1, 4, 4, 2, 3);
}

Test(resize, linear_pytorch_half_pixel_to_one) {
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_LINEAR);
    d.coord = PLX_RESIZE_COORD_PYTORCH_HALF_PIXEL;
    d.sizes[0] = 1; /* a single output row takes coordinate 0 */
    d.sizes[1] = 6;
    check_resize(&d, 1, 3, 4, 1, 6);
}

/* ------------------------------------------------------------------------ */
/* depth_to_space, space_to_depth                                             */
/* ------------------------------------------------------------------------ */

Test(depth_to_space, dcr_and_crd) {
    /* X [1,8,2,2] = 0..31, block 2 -> [1,2,4,4]. DCR: y[c][h*b+i][w*b+j] =
     * x[(i*b + j)*C' + c][h][w]; CRD: x[c*b*b + i*b + j][h][w]. */
    float x[32], dcr[32], crd[32];
    seq(x, 32, 0.0f, 1.0f);
    const int b = 2, cp = 2;
    for (int c = 0; c < cp; c++) {
        for (int h = 0; h < 2; h++) {
            for (int w = 0; w < 2; w++) {
                for (int i = 0; i < b; i++) {
                    for (int j = 0; j < b; j++) {
                        int o = (c * 4 + h * b + i) * 4 + w * b + j;
                        dcr[o] = x[(((i * b + j) * cp + c) * 2 + h) * 2 + w];
                        crd[o] = x[((c * b * b + i * b + j) * 2 + h) * 2 + w];
                    }
                }
            }
        }
    }
    plx_depth_space_desc d = PLX_DEPTH_SPACE_DESC_INIT(2);
    targ ins[] = {IN(F32, DIMS(1, 8, 2, 2), x)};
    tout y;
    RUN(PLX_OP_DEPTH_TO_SPACE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 2, 4, 4));
    expect_f32(&y, dcr, 32, 0.0f);
    free_outs(&y, 1);
    d.mode = PLX_DEPTH_SPACE_CRD;
    RUN(PLX_OP_DEPTH_TO_SPACE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 2, 4, 4));
    expect_f32(&y, crd, 32, 0.0f);
    free_outs(&y, 1);
}

Test(space_to_depth, block_2) {
    /* X [1,2,4,6] -> [1,8,2,3]: y[(i*b + j)*C + c][h][w] = x[c][h*b+i][w*b+j] */
    float x[48], ref[48];
    seq(x, 48, 0.0f, 1.0f);
    const int b = 2, C = 2;
    for (int c = 0; c < C; c++) {
        for (int h = 0; h < 2; h++) {
            for (int w = 0; w < 3; w++) {
                for (int i = 0; i < b; i++) {
                    for (int j = 0; j < b; j++) {
                        ref[((((i * b + j) * C + c) * 2) + h) * 3 + w] =
                            x[(c * 4 + h * b + i) * 6 + w * b + j];
                    }
                }
            }
        }
    }
    plx_depth_space_desc d = PLX_DEPTH_SPACE_DESC_INIT(2);
    targ ins[] = {IN(F32, DIMS(1, 2, 4, 6), x)};
    tout y;
    RUN(PLX_OP_SPACE_TO_DEPTH, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 8, 2, 3));
    expect_f32(&y, ref, 48, 0.0f);
    free_outs(&y, 1);
}

/* ------------------------------------------------------------------------ */
/* quantize, dequantize                                                       */
/* ------------------------------------------------------------------------ */

static double round_half_even(double v) {
    double r = floor(v), f = v - r;
    if (f > 0.5 || (f == 0.5 && fmod(r, 2.0) != 0.0)) {
        r += 1.0;
    }
    return r;
}

static int64_t ref_quantize(float x, float scale, int64_t zp, int64_t lo, int64_t hi) {
    double v = round_half_even((double)(x / scale)) + (double)zp;
    return v < (double)lo ? lo : v > (double)hi ? hi : (int64_t)v;
}

Test(quantize, per_tensor_uint8_ties_to_even_and_saturation) {
    const float x[8] = {0.0f, 0.25f, 0.75f, 1.25f, -0.25f, 200.0f, -100.0f, 63.5f};
    const float scale[1] = {0.5f};
    const uint8_t zp[1] = {128};
    /* x / 0.5 = 0, 0.5, 1.5, 2.5, -0.5, 400, -200, 127 */
    const uint8_t want[8] = {128, 128, 130, 130, 128, 255, 0, 255};
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(U8);
    targ ins[] = {IN(F32, DIMS(2, 4), x), CONST(F32, SCALAR, scale), CONST(U8, SCALAR, zp)};
    tout y;
    RUN(PLX_OP_QUANTIZE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, U8, DIMS(2, 4));
    expect_u8(&y, want, 8);
    free_outs(&y, 1);
}

Test(quantize, per_tensor_int8_and_no_zero_point) {
    float x[8];
    gen(x, 8, 27);
    x[0] = 100.0f;
    x[1] = -100.0f;
    const float scale[1] = {0.25f};
    const int8_t zp[1] = {-3};
    int8_t want[8];
    uint8_t want_u[8];
    for (int i = 0; i < 8; i++) {
        want[i] = (int8_t)ref_quantize(x[i], 0.25f, -3, -128, 127);
        want_u[i] = (uint8_t)ref_quantize(x[i], 0.25f, 0, 0, 255);
    }
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(I8);
    targ ins[] = {IN(F32, DIMS(8), x), CONST(F32, SCALAR, scale), CONST(I8, SCALAR, zp)};
    tout y;
    RUN(PLX_OP_QUANTIZE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I8, DIMS(8));
    expect_i8(&y, want, 8);
    free_outs(&y, 1);
    /* without a zero point: uint8, zero point 0 */
    plx_quantize_desc du = PLX_QUANTIZE_DESC_INIT(U8);
    targ uins[] = {IN(F32, DIMS(8), x), CONST(F32, SCALAR, scale)};
    RUN(PLX_OP_QUANTIZE, &du, uins, &y, 1);
    EXPECT_SHAPE(&y, U8, DIMS(8));
    expect_u8(&y, want_u, 8);
    free_outs(&y, 1);
}

Test(quantize, per_axis_int8_positive_and_negative_axis) {
    float x[12];
    gen(x, 12, 28);
    const float scale[3] = {0.5f, 1.0f, 0.25f};
    const int8_t zp[3] = {0, -10, 5};
    int8_t want[12];
    for (int i = 0; i < 12; i++) {
        int c = (i / 2) % 3; /* X [2,3,2], axis 1 */
        want[i] = (int8_t)ref_quantize(x[i], scale[c], zp[c], -128, 127);
    }
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(I8);
    targ ins[] = {IN(F32, DIMS(2, 3, 2), x), CONST(F32, DIMS(3), scale), CONST(I8, DIMS(3), zp)};
    tout y;
    RUN(PLX_OP_QUANTIZE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I8, DIMS(2, 3, 2));
    expect_i8(&y, want, 12);
    free_outs(&y, 1);
    d.axis = -2;
    RUN(PLX_OP_QUANTIZE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I8, DIMS(2, 3, 2));
    expect_i8(&y, want, 12);
    free_outs(&y, 1);
}

Test(dequantize, per_tensor_int8_uint8_int32) {
    const int8_t x[5] = {-128, -1, 0, 1, 127};
    const float scale[1] = {0.1f};
    const int8_t zp[1] = {-1};
    float want[5];
    for (int i = 0; i < 5; i++) {
        want[i] = (float)(x[i] - zp[0]) * 0.1f;
    }
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(F32);
    targ ins[] = {IN(I8, DIMS(5), x), CONST(F32, SCALAR, scale), CONST(I8, SCALAR, zp)};
    tout y;
    RUN(PLX_OP_DEQUANTIZE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(5));
    expect_f32(&y, want, 5, TOL);
    free_outs(&y, 1);

    const uint8_t xu[3] = {0, 128, 255};
    const uint8_t zpu[1] = {128};
    const float wantu[3] = {-12.8f, 0.0f, 12.7f};
    targ uins[] = {IN(U8, DIMS(3), xu), CONST(F32, SCALAR, scale), CONST(U8, SCALAR, zpu)};
    RUN(PLX_OP_DEQUANTIZE, &d, uins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(3));
    expect_f32(&y, wantu, 3, TOL);
    free_outs(&y, 1);

    const int32_t xi[3] = {-1000, 0, 7};
    const float half[1] = {0.5f};
    const float wanti[3] = {-500.0f, 0.0f, 3.5f};
    targ iins[] = {IN(I32, DIMS(3), xi), CONST(F32, SCALAR, half)};
    RUN(PLX_OP_DEQUANTIZE, &d, iins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(3));
    expect_f32(&y, wanti, 3, TOL);
    free_outs(&y, 1);
}

Test(dequantize, per_axis_uint8_axis0) {
    const uint8_t x[6] = {0, 10, 20, 100, 200, 255};
    const float scale[2] = {0.5f, 2.0f};
    const uint8_t zp[2] = {10, 100};
    const float want[6] = {-5.0f, 0.0f, 5.0f, 0.0f, 200.0f, 310.0f};
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(F32);
    d.axis = 0;
    targ ins[] = {IN(U8, DIMS(2, 3), x), CONST(F32, DIMS(2), scale), CONST(U8, DIMS(2), zp)};
    tout y;
    RUN(PLX_OP_DEQUANTIZE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3));
    expect_f32(&y, want, 6, TOL);
    free_outs(&y, 1);
}

/* ------------------------------------------------------------------------ */
/* lstm, gru                                                                  */
/* ------------------------------------------------------------------------ */

/* The inputs of a recurrent layer, as gen() values scaled to [-0.45, 0.45]
 * (X to [-1.125, 1.125]), every length seq; In is input_size. */
typedef struct rnn_data {
    int64_t S, B, In, H, D;
    float *x, *w, *r, *b, *h0, *c0, *p;
    int32_t lens[8];
} rnn_data;

static float *rnn_gen(size_t n, int seed, float scale) {
    float *a = falloc(n);
    gen(a, n, seed);
    for (size_t i = 0; i < n; i++) {
        a[i] *= scale;
    }
    return a;
}

static void rnn_data_init(rnn_data *r, bool lstm, int64_t S, int64_t B, int64_t In, int64_t H,
                          int64_t D) {
    int64_t G = lstm ? 4 : 3;
    cr_assert(le(i64, B, 8));
    *r = (rnn_data){S, B, In, H, D, NULL, NULL, NULL, NULL, NULL, NULL, NULL, {0}};
    r->x = rnn_gen((size_t)(S * B * In), 1, 0.5f);
    r->w = rnn_gen((size_t)(D * G * H * In), 2, 0.2f);
    r->r = rnn_gen((size_t)(D * G * H * H), 3, 0.2f);
    r->b = rnn_gen((size_t)(D * 2 * G * H), 4, 0.2f);
    r->h0 = rnn_gen((size_t)(D * B * H), 5, 0.2f);
    r->c0 = rnn_gen((size_t)(D * B * H), 6, 0.2f);
    r->p = rnn_gen((size_t)(D * 3 * H), 7, 0.2f);
    for (int64_t i = 0; i < B; i++) {
        r->lens[i] = (int32_t)S;
    }
}

static void rnn_data_free(rnn_data *r) {
    float *all[] = {r->x, r->w, r->r, r->b, r->h0, r->c0, r->p};
    for (size_t i = 0; i < COUNT(all); i++) {
        free(all[i]);
    }
}

/* X and initial_h are network inputs, the rest constants. */
static void check_lstm(const plx_lstm_desc *d, const rnn_data *r) {
    int64_t S = r->S, B = r->B, In = r->In, H = r->H, D = r->D;
    targ ins[8] = {IN(F32, DIMS(S, B, In), r->x),
                   CONST(F32, DIMS(D, 4 * H, In), r->w),
                   CONST(F32, DIMS(D, 4 * H, H), r->r),
                   CONST(F32, DIMS(D, 8 * H), r->b),
                   CONST(I32, DIMS(B), r->lens),
                   IN(F32, DIMS(D, B, H), r->h0),
                   CONST(F32, DIMS(D, B, H), r->c0),
                   CONST(F32, DIMS(D, 3 * H), r->p)};
    tout y[3];
    run_op(PLX_OP_LSTM, d, ins, 8, y, 3);
    EXPECT_SHAPE(&y[0], F32, DIMS(S, D, B, H));
    EXPECT_SHAPE(&y[1], F32, DIMS(D, B, H));
    EXPECT_SHAPE(&y[2], F32, DIMS(D, B, H));
    size_t ny = (size_t)(S * D * B * H), ns = (size_t)(D * B * H);
    float *ry = falloc(ny), *rh = falloc(ns), *rc = falloc(ns);
    rnnref_lstm(d, S, B, In, r->x, r->w, r->r, r->b, r->lens, r->h0, r->c0, r->p, ry, rh, rc);
    expect_f32(&y[0], ry, ny, TOL_LOOSE);
    expect_f32(&y[1], rh, ns, TOL_LOOSE);
    expect_f32(&y[2], rc, ns, TOL_LOOSE);
    free_outs(y, 3);
    free(ry);
    free(rh);
    free(rc);
}

/* X is a network input, the rest constants. */
static void check_gru(const plx_gru_desc *d, const rnn_data *r) {
    int64_t S = r->S, B = r->B, In = r->In, H = r->H, D = r->D;
    targ ins[6] = {IN(F32, DIMS(S, B, In), r->x),
                   CONST(F32, DIMS(D, 3 * H, In), r->w),
                   CONST(F32, DIMS(D, 3 * H, H), r->r),
                   CONST(F32, DIMS(D, 6 * H), r->b),
                   CONST(I32, DIMS(B), r->lens),
                   CONST(F32, DIMS(D, B, H), r->h0)};
    tout y[2];
    run_op(PLX_OP_GRU, d, ins, 6, y, 2);
    EXPECT_SHAPE(&y[0], F32, DIMS(S, D, B, H));
    EXPECT_SHAPE(&y[1], F32, DIMS(D, B, H));
    size_t ny = (size_t)(S * D * B * H), ns = (size_t)(D * B * H);
    float *ry = falloc(ny), *rh = falloc(ns);
    rnnref_gru(d, S, B, In, r->x, r->w, r->r, r->b, r->lens, r->h0, ry, rh);
    expect_f32(&y[0], ry, ny, TOL_LOOSE);
    expect_f32(&y[1], rh, ns, TOL_LOOSE);
    free_outs(y, 2);
    free(ry);
    free(rh);
}

/* ONNX's test_lstm_defaults (onnx/backend/test/case/node/lstm.py): W and R
 * all 0.1; Y_h as that file's LSTM_Helper computes it (numpy, float32). */
Test(lstm, onnx_defaults_by_value) {
    const float x[6] = {1, 2, 3, 4, 5, 6};
    float w[24], r[36], b[24] = {0}, h0[3] = {0}, c0[3] = {0}, p[9] = {0};
    for (int i = 0; i < 24; i++) {
        w[i] = 0.1f;
    }
    for (int i = 0; i < 36; i++) {
        r[i] = 0.1f;
    }
    const int32_t lens[1] = {3};
    plx_lstm_desc d = {sizeof d, PLX_RNN_FORWARD, 3, {{{0}}}, 0.0f, false};
    plx_rnn_default_activations(&d.activations[0][0], 3);
    targ ins[] = {IN(F32, DIMS(3, 1, 2), x),  CONST(F32, DIMS(1, 12, 2), w),
                  CONST(F32, DIMS(1, 12, 3), r), CONST(F32, DIMS(1, 24), b),
                  CONST(I32, DIMS(1), lens),   CONST(F32, DIMS(1, 1, 3), h0),
                  CONST(F32, DIMS(1, 1, 3), c0), CONST(F32, DIMS(1, 9), p)};
    tout y[3];
    RUN(PLX_OP_LSTM, &d, ins, y, 3);
    const float want[3] = {0.600429893f, 0.600429893f, 0.600429893f};
    EXPECT_SHAPE(&y[1], F32, DIMS(1, 1, 3));
    expect_f32(&y[1], want, 3, TOL);
    cr_assert(eq(int, memcmp((float *)y[0].data + 6, y[1].data, sizeof want), 0),
              "Y[2] differs from Y_h");
    free_outs(y, 3);
}

Test(lstm, bidirectional_peepholes_lengths_activations) {
    rnn_data r;
    rnn_data_init(&r, true, 4, 3, 3, 5, 2);
    r.lens[1] = 2;
    r.lens[2] = 1;
    plx_lstm_desc d = {sizeof d, PLX_RNN_BIDIRECTIONAL, 5, {{{0}}}, 0.0f, false};
    plx_rnn_default_activations(&d.activations[0][0], 3);
    d.activations[1][0] = (plx_rnn_activation){PLX_ACT_HARD_SIGMOID, 0.3f, 0.4f};
    d.activations[1][1] = (plx_rnn_activation){PLX_ACT_SOFTSIGN, 0.0f, 0.0f};
    d.activations[1][2] = (plx_rnn_activation){PLX_ACT_SCALED_TANH, 1.5f, 0.7f};
    check_lstm(&d, &r);
    rnn_data_free(&r);
}

Test(lstm, reverse_input_forget_clip) {
    rnn_data r;
    rnn_data_init(&r, true, 5, 2, 4, 3, 1);
    r.lens[0] = 3;
    plx_lstm_desc d = {sizeof d, PLX_RNN_REVERSE, 3, {{{0}}}, 0.0f, false};
    plx_rnn_default_activations(&d.activations[0][0], 3);
    d.input_forget = true;
    d.clip = 0.25f;
    check_lstm(&d, &r);
    rnn_data_free(&r);
}

Test(gru, forward_linear_before_reset_lengths) {
    rnn_data r;
    rnn_data_init(&r, false, 4, 3, 3, 4, 1);
    r.lens[0] = 2;
    plx_gru_desc d = {sizeof d, PLX_RNN_FORWARD, 4, {{{0}}}, 0.0f, true};
    plx_rnn_default_activations(&d.activations[0][0], 2);
    check_gru(&d, &r);
    rnn_data_free(&r);
}

Test(gru, bidirectional_default_reset_clip_activations) {
    rnn_data r;
    rnn_data_init(&r, false, 3, 2, 2, 6, 2);
    r.lens[1] = 2;
    plx_gru_desc d = {sizeof d, PLX_RNN_BIDIRECTIONAL, 6, {{{0}}}, 0.0f, false};
    plx_rnn_default_activations(&d.activations[0][0], 2);
    d.activations[1][1] = (plx_rnn_activation){PLX_ACT_LEAKY_RELU, 0.1f, 0.0f};
    d.clip = 0.5f;
    check_gru(&d, &r);
    rnn_data_free(&r);
}

/* ------------------------------------------------------------------------ */
/* gather_elements, scatter_elements, scatter_nd, gather_nd                   */
/* ------------------------------------------------------------------------ */

/* Top-k postprocessing: scores [2,4] and the positions a topk chose
 * ([2,2], int64, a network input) pick each row's values:
 * y[i][j] = x[i][idx[i][j]]. */
Test(gather_elements, topk_positions_axis1) {
    float x[8];
    seq(x, 8, 0.0f, 1.0f); /* [[0,1,2,3],[4,5,6,7]] */
    const int64_t idx[4] = {3, -3, 0, 2};
    plx_axis_desc d = PLX_AXIS_DESC_INIT(1);
    targ ins[] = {IN(F32, DIMS(2, 4), x), IN(I64, DIMS(2, 2), idx)};
    tout y;
    RUN(PLX_OP_GATHER_ELEMENTS, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 2));
    const float want[] = {3, 1, 4, 6};
    expect_f32(&y, want, 4, 0.0f);
    free_outs(&y, 1);
}

/* int32 data, constant int32 indices, reduction add with duplicates:
 * data [[1,2,3],[4,5,6]], indices [[1,-1,0],[1,0,0]], updates
 * [[10,20,30],[1,2,3]] on axis 0: column 0 gets rows 1, 1 (4+10+1),
 * column 1 rows 1, 0 (5+20, 2+2), column 2 rows 0, 0 (3+30+3) ->
 * [[1,4,36],[15,25,6]]. */
Test(scatter_elements, add_with_duplicates_axis0) {
    const int32_t x[6] = {1, 2, 3, 4, 5, 6}, idx[6] = {1, -1, 0, 1, 0, 0};
    const int32_t upd[6] = {10, 20, 30, 1, 2, 3};
    plx_scatter_desc d = PLX_SCATTER_DESC_INIT;
    d.reduction = PLX_SCATTER_ADD;
    targ ins[] = {IN(I32, DIMS(2, 3), x), CONST(I32, DIMS(2, 3), idx), IN(I32, DIMS(2, 3), upd)};
    tout y;
    RUN(PLX_OP_SCATTER_ELEMENTS, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I32, DIMS(2, 3));
    const int32_t want[] = {1, 4, 36, 15, 25, 6};
    expect_i32(&y, want, 6);
    free_outs(&y, 1);
}

/* A KV-cache write: cache [1,2,4,2] ([b,h,t,d]) gets the step's [1,2,1,2]
 * at t = 2 through indices [[[[0,0,2]],[[0,1,2]]]]. */
Test(scatter_nd, kv_cache_step) {
    float cache[16], step[4] = {-1, -2, -3, -4};
    seq(cache, 16, 0.0f, 1.0f);
    const int64_t idx[6] = {0, 0, 2, 0, 1, 2};
    plx_scatter_desc d = PLX_SCATTER_DESC_INIT;
    targ ins[] = {IN(F32, DIMS(1, 2, 4, 2), cache), IN(I64, DIMS(1, 2, 1, 3), idx),
                  IN(F32, DIMS(1, 2, 1, 2), step)};
    tout y;
    RUN(PLX_OP_SCATTER_ND, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 2, 4, 2));
    const float want[] = {0, 1, 2, 3, -1, -2, 6, 7, 8, 9, 10, 11, -3, -4, 14, 15};
    expect_f32(&y, want, 16, 0.0f);
    free_outs(&y, 1);
}

/* batch_dims 1: data [2,3,2], indices [2,1] -> batch 0's row 2, batch 1's
 * row 0: [[4,5],[6,7]]. */
Test(gather_nd, batch_dims_1) {
    int64_t x[12];
    for (int i = 0; i < 12; i++) x[i] = i;
    const int32_t idx[2] = {2, -3};
    plx_gather_nd_desc d = PLX_GATHER_ND_DESC_INIT;
    d.batch_dims = 1;
    targ ins[] = {IN(I64, DIMS(2, 3, 2), x), IN(I32, DIMS(2, 1), idx)};
    tout y;
    RUN(PLX_OP_GATHER_ND, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I64, DIMS(2, 2));
    const int64_t want[] = {4, 5, 6, 7};
    expect_i64(&y, want, 4);
    free_outs(&y, 1);
}

/* An index out of range at run time fails the execution on cpu_ref with
 * a message naming the layer, the index and its position. */
Test(gather_nd, index_out_of_range_fails_execution) {
    if (strcmp(test_backend(), "cpu_ref") != 0) {
        cr_skip_test("a cpu_ref test: %s refuses gather_nd", test_backend());
    }
    plx_runtime_options o;
    tu_options(&o);
    const char *paths[1] = {CPU_REF_DIR};
    o.search_paths = paths;
    o.search_path_count = 1;
    plx_runtime *rt = tu_create(&o);
    live.rt = rt;
    plx_network *n;
    OK(plx_network_create(&n));
    live.net = n;
    plx_tensor_info tx = make_info(F32, (const int64_t[]){2, 3}, 2);
    plx_tensor_info ti = make_info(I64, (const int64_t[]){2, 2}, 2);
    plx_gather_nd_desc d = PLX_GATHER_ND_DESC_INIT;
    plx_layer_id x, i, g, y;
    OK(plx_network_add_input(n, "x", 0, &tx, &x));
    OK(plx_network_add_input(n, "i", 1, &ti, &i));
    OK(plx_network_add_layer(n, "pick", PLX_OP_GATHER_ND, &d, 2, 1, &g));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, g, 0));
    OK(plx_network_connect(n, i, 0, g, 1));
    OK(plx_network_connect(n, g, 0, y, 0));
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *backends[] = {"cpu_ref"};
    oo.backends = backends;
    oo.backend_count = 1;
    plx_optimized_network *on = NULL;
    OK(plx_optimize(rt, n, &oo, &on));
    live.on = on;
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    live.on = NULL;
    live.ln = ln;
    float xv[6] = {0}, yv[2];
    int64_t iv[4] = {1, 2, 0, 3};
    plx_tensor_binding bin[2] = {{0, xv, sizeof xv, 0}, {1, iv, sizeof iv, 0}};
    plx_tensor_binding bout[1] = {{0, yv, sizeof yv, 0}};
    plx_status st = plx_loaded_network_execute(ln, bin, 2, bout, 1);
    live.st = st;
    cr_assert(not(zero(ptr, st)), "an index out of range executed");
    const char *m = plx_status_get_message(st);
    cr_assert(not(zero(ptr, strstr(m, "layer 'pick' (gather_nd): index 3 (indices element 3) is "
                                      "out of range for data dim 1 of size 3"))),
              "%s", m);
    plx_status_free(st);
    live.st = NULL;
    /* the same network runs once the indices are in range */
    iv[3] = -1;
    OK(plx_loaded_network_execute(ln, bin, 2, bout, 1));
    plx_loaded_network_unload(&ln);
    live.ln = NULL;
    plx_network_destroy(&n);
    live.net = NULL;
    plx_runtime_destroy(&rt);
    live.rt = NULL;
}

/* ------------------------------------------------------------------------ */
/* trilu, one_hot, hardmax, cum_sum                                           */
/* ------------------------------------------------------------------------ */

Test(trilu, upper_and_lower_batched_with_k) {
    /* two 3x3 matrices 1..9 and 10..18 */
    int64_t x[18];
    for (int i = 0; i < 18; i++) {
        x[i] = i + 1;
    }
    targ ins[] = {IN(I64, DIMS(2, 3, 3), x)};
    tout y;
    /* upper, k=1: j >= i + 1 */
    plx_trilu_desc d = PLX_TRILU_DESC_INIT;
    d.k = 1;
    RUN(PLX_OP_TRILU, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, I64, DIMS(2, 3, 3));
    const int64_t up[18] = {0, 2, 3, 0, 0, 6, 0, 0, 0, 0, 11, 12, 0, 0, 15, 0, 0, 0};
    expect_i64(&y, up, 18);
    free_outs(&y, 1);
    /* lower, k=0: j <= i */
    d.upper = false;
    d.k = 0;
    RUN(PLX_OP_TRILU, &d, ins, &y, 1);
    const int64_t lo[18] = {1, 0, 0, 4, 5, 0, 7, 8, 9, 10, 0, 0, 13, 14, 0, 16, 17, 18};
    expect_i64(&y, lo, 18);
    free_outs(&y, 1);
}

Test(one_hot, float_indices_axis_0_and_constant_values) {
    /* indices [[1, -1], [7, 0.9]] (float: -1 -> depth-1 = 2, 7 out of
     * range, 0.9 -> 0), depth 3, values [0, 5] as a constant; axis 0:
     * Y [3,2,2], Y[p, i, j] = p == index[i, j] ? 5 : 0 */
    const float ind[4] = {1.0f, -1.0f, 7.0f, 0.9f}, vals[2] = {0.0f, 5.0f};
    targ ins[] = {IN(F32, DIMS(2, 2), ind), CONST(F32, DIMS(2), vals)};
    plx_one_hot_desc d = PLX_ONE_HOT_DESC_INIT(3);
    d.axis = 0;
    tout y;
    RUN(PLX_OP_ONE_HOT, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(3, 2, 2));
    const float want[12] = {0, 0, 0, 5, 5, 0, 0, 0, 0, 5, 0, 0};
    expect_f32(&y, want, 12, 0.0f);
    free_outs(&y, 1);
    /* int64 indices, int32 values, axis -1: Y [3,4] */
    const int64_t ii[3] = {3, -4, -5};
    const int32_t iv[2] = {-1, 1};
    targ ins2[] = {IN(I64, DIMS(3), ii), IN(I32, DIMS(2), iv)};
    d.axis = -1;
    d.depth = 4;
    RUN(PLX_OP_ONE_HOT, &d, ins2, &y, 1);
    EXPECT_SHAPE(&y, I32, DIMS(3, 4));
    const int32_t iwant[12] = {-1, -1, -1, 1, 1, -1, -1, -1, -1, -1, -1, -1};
    expect_i32(&y, iwant, 12);
    free_outs(&y, 1);
}

Test(hardmax, each_axis_first_maximum) {
    /* X [2,3]: [[1, 4, 4], [4, 2, 0]] */
    const float x[6] = {1, 4, 4, 4, 2, 0};
    targ ins[] = {IN(F32, DIMS(2, 3), x)};
    plx_axis_desc d = PLX_AXIS_DESC_INIT(-1);
    tout y;
    RUN(PLX_OP_HARDMAX, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3));
    const float rows[6] = {0, 1, 0, 1, 0, 0};
    expect_f32(&y, rows, 6, 0.0f);
    free_outs(&y, 1);
    d.axis = 0; /* columns [1,4], [4,2], [4,0] */
    RUN(PLX_OP_HARDMAX, &d, ins, &y, 1);
    const float cols[6] = {0, 1, 1, 1, 0, 0};
    expect_f32(&y, cols, 6, 0.0f);
    free_outs(&y, 1);
}

Test(cum_sum, axis_exclusive_reverse_float_and_int) {
    /* X [2,3]: [[1,2,3],[4,5,6]] */
    const float x[6] = {1, 2, 3, 4, 5, 6};
    targ ins[] = {IN(F32, DIMS(2, 3), x)};
    plx_cum_sum_desc d = PLX_CUM_SUM_DESC_INIT(1);
    tout y;
    RUN(PLX_OP_CUM_SUM, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(2, 3));
    const float plain[6] = {1, 3, 6, 4, 9, 15};
    expect_f32(&y, plain, 6, 0.0f);
    free_outs(&y, 1);
    d.axis = 0;
    d.exclusive = true;
    d.reverse = true;
    RUN(PLX_OP_CUM_SUM, &d, ins, &y, 1);
    const float rev_excl[6] = {4, 5, 6, 0, 0, 0};
    expect_f32(&y, rev_excl, 6, 0.0f);
    free_outs(&y, 1);
    const int32_t xi[4] = {INT32_MAX, 1, 5, -7};
    targ iins[] = {IN(I32, DIMS(4), xi)};
    d.axis = -1;
    d.exclusive = false;
    d.reverse = false;
    RUN(PLX_OP_CUM_SUM, &d, iins, &y, 1);
    /* int32 wraps: INT32_MAX + 1 = INT32_MIN, ... + 5 - 7 wraps back */
    const int32_t wrap[4] = {INT32_MAX, INT32_MIN, INT32_MIN + 5, INT32_MAX - 1};
    expect_i32(&y, wrap, 4);
    free_outs(&y, 1);
}

/* ------------------------------------------------------------------------ */
/* is_nan and the is_inf tests, bitwise functions, shrink, lp pools           */
/* ------------------------------------------------------------------------ */

Test(unary, float_tests_and_bitwise_not) {
    const float x[6] = {0.0f, -1.5f, INFINITY, -INFINITY, NAN, 3.0e38f};
    static const uint8_t want[4][6] = {
        {0, 0, 0, 0, 1, 0}, /* is_nan */
        {0, 0, 1, 1, 0, 0}, /* is_inf */
        {0, 0, 1, 0, 0, 0}, /* is_pos_inf */
        {0, 0, 0, 1, 0, 0}, /* is_neg_inf */
    };
    for (int f = PLX_UNARY_IS_NAN; f <= PLX_UNARY_IS_NEG_INF; f++) {
        plx_unary_desc d = PLX_UNARY_DESC_INIT((plx_unary_func)f);
        targ ins[] = {IN(F32, DIMS(2, 3), x)};
        tout y[1];
        RUN(PLX_OP_UNARY, &d, ins, y, 1);
        EXPECT_SHAPE(&y[0], BOOL, DIMS(2, 3));
        expect_u8(&y[0], want[f - PLX_UNARY_IS_NAN], 6);
        free_outs(y, 1);
    }
    const int32_t xi[4] = {0, -1, 5, INT32_MIN};
    const int32_t ni[4] = {-1, 0, -6, INT32_MAX};
    plx_unary_desc d = PLX_UNARY_DESC_INIT(PLX_UNARY_BITWISE_NOT);
    targ ins[] = {IN(I32, DIMS(4), xi)};
    tout y[1];
    RUN(PLX_OP_UNARY, &d, ins, y, 1);
    EXPECT_SHAPE(&y[0], I32, DIMS(4));
    expect_i32(&y[0], ni, 4);
    free_outs(y, 1);
}

/* A [2,3] (input) op B [3] (constant), broadcast along the rows. */
Test(binary, bitwise_and_shifts) {
    const int32_t a[6] = {0x0f, -1, 12, 7, 0, -8};
    const int32_t b[3] = {0x3c, 0x100, -1};
    static const struct {
        plx_binary_func f;
        int32_t want[6];
    } cases[] = {
        {PLX_BINARY_BITWISE_AND, {0x0c, 0x100, 12, 4, 0, -8}},
        {PLX_BINARY_BITWISE_OR, {0x3f, -1, -1, 0x3f, 0x100, -1}},
        {PLX_BINARY_BITWISE_XOR, {0x33, -0x101, -13, 0x3b, 0x100, 7}},
    };
    for (size_t k = 0; k < COUNT(cases); k++) {
        plx_binary_desc d = PLX_BINARY_DESC_INIT(cases[k].f);
        targ ins[] = {IN(I32, DIMS(2, 3), a), CONST(I32, DIMS(3), b)};
        tout y[1];
        RUN(PLX_OP_BINARY, &d, ins, y, 1);
        EXPECT_SHAPE(&y[0], I32, DIMS(2, 3));
        expect_i32(&y[0], cases[k].want, 6);
        free_outs(y, 1);
    }
    /* uint8 shifts by 0, 3 and 9 (past the width: 0) */
    const uint8_t xs[6] = {1, 0x81, 255, 16, 200, 7};
    const uint8_t s[3] = {0, 3, 9};
    const uint8_t left[6] = {1, 0x08, 0, 16, 0x40, 0};
    const uint8_t right[6] = {1, 0x10, 0, 16, 25, 0};
    for (int k = 0; k < 2; k++) {
        plx_binary_desc d = PLX_BINARY_DESC_INIT(k ? PLX_BINARY_SHIFT_RIGHT : PLX_BINARY_SHIFT_LEFT);
        targ ins[] = {IN(U8, DIMS(2, 3), xs), CONST(U8, DIMS(3), s)};
        tout y[1];
        RUN(PLX_OP_BINARY, &d, ins, y, 1);
        EXPECT_SHAPE(&y[0], U8, DIMS(2, 3));
        expect_u8(&y[0], k ? right : left, 6);
        free_outs(y, 1);
    }
}

Test(activation, shrink) {
    const float x[6] = {-2.0f, -1.0f, -0.25f, 0.25f, 1.0f, 2.0f};
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SHRINK);
    d.alpha = 0.5f; /* lambd */
    d.beta = 0.25f; /* bias */
    const float want[6] = {-1.75f, -0.75f, 0.0f, 0.0f, 0.75f, 1.75f};
    targ ins[] = {IN(F32, DIMS(6), x)};
    tout y[1];
    RUN(PLX_OP_ACTIVATION, &d, ins, y, 1);
    EXPECT_SHAPE(&y[0], F32, DIMS(6));
    expect_f32(&y[0], want, 6, TOL);
    free_outs(y, 1);
}

/* LpPool over [1,2,4,4] with kernel 3, stride 2, pads 1 (p 2 and 3), and
 * GlobalLpPool (p 1), against plain loops. */
Test(pool, lp_and_global_lp) {
    float x[32];
    gen(x, 32, 7);
    for (int64_t p = 2; p <= 3; p++) {
        plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_LP);
        d.p = p;
        d.kernel[0] = d.kernel[1] = 3;
        d.strides[0] = d.strides[1] = 2;
        d.pads_begin[0] = d.pads_begin[1] = d.pads_end[0] = d.pads_end[1] = 1;
        float want[8];
        for (int c = 0; c < 2; c++) {
            for (int oh = 0; oh < 2; oh++) {
                for (int ow = 0; ow < 2; ow++) {
                    double s = 0;
                    for (int kh = 0; kh < 3; kh++) {
                        for (int kw = 0; kw < 3; kw++) {
                            int ih = oh * 2 - 1 + kh, iw = ow * 2 - 1 + kw;
                            if (ih >= 0 && ih < 4 && iw >= 0 && iw < 4) {
                                s += pow(fabs((double)x[(c * 4 + ih) * 4 + iw]), (double)p);
                            }
                        }
                    }
                    want[(c * 2 + oh) * 2 + ow] = (float)pow(s, 1.0 / (double)p);
                }
            }
        }
        targ ins[] = {IN(F32, DIMS(1, 2, 4, 4), x)};
        tout y[1];
        RUN(PLX_OP_POOL, &d, ins, y, 1);
        EXPECT_SHAPE(&y[0], F32, DIMS(1, 2, 2, 2));
        expect_f32(&y[0], want, 8, TOL);
        free_outs(y, 1);
    }
    plx_global_pool_desc g = PLX_GLOBAL_POOL_DESC_INIT(PLX_POOL_LP);
    g.p = 1;
    float want[2] = {0, 0};
    for (int i = 0; i < 32; i++) {
        want[i / 16] += fabsf(x[i]);
    }
    targ ins[] = {IN(F32, DIMS(1, 2, 4, 4), x)};
    tout y[1];
    RUN(PLX_OP_GLOBAL_POOL, &g, ins, y, 1);
    EXPECT_SHAPE(&y[0], F32, DIMS(1, 2, 1, 1));
    expect_f32(&y[0], want, 2, TOL);
    free_outs(y, 1);
}

/* ------------------------------------------------------------------------ */
/* grid_sample                                                                */
/* ------------------------------------------------------------------------ */

Test(grid_sample, bilinear_from_a_constant_grid_and_volumetric_nearest) {
    /* X [1,2,2,2]: [[1,2],[3,4]] and [[10,20],[30,40]]; grid (a constant
     * layer) at the centre and the top right corner with align_corners:
     * the mean 2.5 (25) and X[0][1] 2 (20) */
    const float x[8] = {1, 2, 3, 4, 10, 20, 30, 40}, g[4] = {0, 0, 1, -1};
    targ ins[] = {IN(F32, DIMS(1, 2, 2, 2), x), CONST(F32, DIMS(1, 1, 2, 2), g)};
    plx_grid_sample_desc d = PLX_GRID_SAMPLE_DESC_INIT;
    d.align_corners = true;
    tout y;
    RUN(PLX_OP_GRID_SAMPLE, &d, ins, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 2, 1, 2));
    expect_f32(&y, (const float[]){2.5f, 2, 25, 20}, 4, 1e-6f);
    free_outs(&y, 1);
    /* X [1,1,2,2,2] = 0..7 (d, h, w); nearest at (x, y, z) = (1, -1, 1)
     * and (-1, 1, -1) with align_corners: (d, h, w) = (1, 0, 1) -> 5 and
     * (0, 1, 0) -> 2 */
    const float v[8] = {0, 1, 2, 3, 4, 5, 6, 7}, gv[6] = {1, -1, 1, -1, 1, -1};
    targ ins3[] = {IN(F32, DIMS(1, 1, 2, 2, 2), v), IN(F32, DIMS(1, 1, 1, 2, 3), gv)};
    d.mode = PLX_GRID_SAMPLE_NEAREST;
    RUN(PLX_OP_GRID_SAMPLE, &d, ins3, &y, 1);
    EXPECT_SHAPE(&y, F32, DIMS(1, 1, 1, 1, 2));
    expect_f32(&y, (const float[]){5, 2}, 2, 0.0f);
    free_outs(&y, 1);
}
