/* The ONNX importer (onnx/include/plexus/onnx.h) through its public API.
 *
 * Models are built in memory with the protobuf-c code generated from
 * onnx.proto (onnx_builder.h), serialised, and imported with
 * plx_onnx_import_memory, or written to a scratch directory and imported
 * with plx_onnx_import_file where a file is needed (external data). Models
 * that import are optimised for cpu_ref alone with fallback off (never a
 * system plug-in: the runtime searches only the build's cpu_ref), loaded,
 * run, and their outputs compared with references computed here from the
 * ONNX operator definitions. Every failure is checked for its status code
 * and for a message that names what is at fault.
 *
 * Paths come from meson: CPU_REF_DIR (the cpu_ref module's directory) and
 * DIGITS_DIR (onnx/models/digits). PLEXUS_TEST_LOG=1 prints the runtime's
 * log and every expected failure's message (run the program directly: under
 * --tap=- Criterion hides what workers print). */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <plexus/network.h>
#include <plexus/onnx.h>
#include <plexus/plexus.h>

#include "npy.h"
#include "alloc_counter.h"
#include "onnx_builder.h"
#include "rnn_reference.h"

#ifndef CPU_REF_DIR
#error "CPU_REF_DIR must be defined by the build"
#endif
#ifndef DIGITS_DIR
#error "DIGITS_DIR must be defined by the build"
#endif

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define FILE_NAME "test.onnx"
#define IR 7
#define OPSET 13

/* ------------------------------------------------------------------------ */
/* Keeping allocations reachable                                              */
/* ------------------------------------------------------------------------ */

/* What a test allocates stays reachable from here, so that a failing
 * assertion (which ends the test without its cleanup) adds no leak reports
 * to the real failure. Each test runs in its own process. */
static struct {
    ob_model *ob;
    uint8_t *buf;
    plx_onnx_model *model;
    plx_status st;
    plx_runtime *rt;
    plx_optimized_network *on;
    plx_loaded_network *ln;
    void *mem[64];
    size_t mem_count;
} live;

static void *track(void *p) {
    cr_assert(not(zero(ptr, p)), "out of memory");
    live.mem[live.mem_count++ % COUNT(live.mem)] = p;
    return p;
}

static ob_model *new_model(int64_t ir, int64_t opset) {
    ob_model *m = ob_model_new(ir, opset);
    live.ob = m;
    return m;
}

static void free_model(ob_model *m) {
    ob_model_free(m);
    if (live.ob == m) {
        live.ob = NULL;
    }
}

/* ------------------------------------------------------------------------ */
/* Importing                                                                  */
/* ------------------------------------------------------------------------ */

static plx_status import_mem(ob_model *m, const plx_onnx_options *o, plx_onnx_model **out) {
    size_t size;
    uint8_t *buf = ob_pack(m, &size);
    live.buf = buf;
    plx_status st = plx_onnx_import_memory(buf, size, FILE_NAME, NULL, o, out);
    free(buf);
    live.buf = NULL;
    live.st = st;
    return st;
}

/* Imports `m` (then freed) and asserts that it succeeded. */
static plx_onnx_model *import_ok(ob_model *m, const plx_onnx_options *o) {
    plx_onnx_model *model = NULL;
    plx_status st = import_mem(m, o, &model);
    cr_assert(zero(ptr, st), "import failed: %s", plx_status_get_message(st));
    cr_assert(not(zero(ptr, model)));
    live.model = model;
    free_model(m);
    return model;
}

static void destroy_model(plx_onnx_model **model) {
    plx_onnx_model_destroy(model);
    live.model = NULL;
}

/* Asserts that `st` is a failure with `code` whose message contains every
 * needle (a NULL-terminated list). Returns st (kept reachable). */
static plx_status check_fail(plx_status st, plx_status_code code, const char *const *needles) {
    live.st = st;
    cr_assert(not(zero(ptr, st)), "the call succeeded; expected %s", plx_status_code_name(code));
    const char *msg = plx_status_get_message(st);
    cr_assert(not(zero(ptr, (void *)msg)));
    const char *show = getenv("PLEXUS_TEST_LOG");
    if (show && *show && strcmp(show, "0") != 0) {
        fprintf(stderr, "[%s] %s\n", plx_status_code_name(plx_status_get_code(st)), msg);
    }
    int got = (int)plx_status_get_code(st);
    int want = (int)code;
    cr_assert(eq(int, got, want), "status %s, expected %s: '%s'",
              plx_status_code_name(plx_status_get_code(st)), plx_status_code_name(code), msg);
    for (size_t i = 0; needles[i]; i++) {
        cr_assert(not(zero(ptr, strstr(msg, needles[i]))), "message '%s' lacks '%s'", msg,
                  needles[i]);
    }
    return st;
}

static void free_status(plx_status st) {
    plx_status_free(st);
    if (live.st == st) {
        live.st = NULL;
    }
}

/* Imports `m` (then freed) and asserts the failure (see check_fail). */
static plx_status import_fail_(ob_model *m, const plx_onnx_options *o, plx_status_code code,
                               const char *const *needles) {
    plx_onnx_model *model = NULL;
    plx_status st = import_mem(m, o, &model);
    live.model = model; /* reachable if it wrongly succeeded */
    free_model(m);
    return check_fail(st, code, needles);
}

/* NEEDLES("a", "b"): a NULL-terminated list of strings the message must hold. */
#define NEEDLES(...) ((const char *const[]){__VA_ARGS__, NULL})
#define IMPORT_FAILS(m, o, code, ...) free_status(import_fail_((m), (o), (code), NEEDLES(__VA_ARGS__)))
#define CALL_FAILS(expr, code, ...) free_status(check_fail((expr), (code), NEEDLES(__VA_ARGS__)))

/* ------------------------------------------------------------------------ */
/* Running on cpu_ref                                                         */
/* ------------------------------------------------------------------------ */

static void quiet_log(void *user_data, plx_log_level level, const char *source,
                      const char *message) {
    (void)user_data;
    const char *show = getenv("PLEXUS_TEST_LOG");
    if (show && *show && strcmp(show, "0") != 0) {
        fprintf(stderr, "plexus[%s] %s: %s\n", source, plx_log_level_name(level), message);
    }
}

/* Options of a runtime that sees only the build's cpu_ref, logging
 * nothing. */
static void cpu_ref_options(plx_runtime_options *o) {
    static const char *const paths[] = {CPU_REF_DIR};
    plx_runtime_options_init(o);
    o->ignore_environment = true;
    o->skip_default_dir = true;
    o->log_fn = quiet_log;
    o->search_paths = paths;
    o->search_path_count = 1;
}

/* A runtime that sees only the build's cpu_ref. */
static plx_runtime *make_runtime(void) {
    plx_runtime_options o;
    cpu_ref_options(&o);
    o.log_level = PLX_LOG_DEBUG;
    plx_runtime *rt = NULL;
    plx_status st = plx_runtime_create(&o, &rt);
    live.st = st;
    cr_assert(zero(ptr, st), "plx_runtime_create: %s", plx_status_get_message(st));
    live.rt = rt;
    const plx_backend_info *b = plx_runtime_find_backend(rt, "cpu_ref");
    cr_assert(not(zero(ptr, (void *)b)), "cpu_ref was not found in %s", CPU_REF_DIR);
    cr_assert(b->available, "cpu_ref is unavailable: %s", b->reason ? b->reason : "");
    return rt;
}

/* Optimises the model's network for cpu_ref alone, fallback off, and loads
 * it. */
static plx_loaded_network *load_model(plx_runtime *rt, plx_onnx_model *model) {
    plx_network *net = plx_onnx_model_network(model);
    cr_assert(not(zero(ptr, net)));
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *backends[] = {"cpu_ref"};
    oo.backends = backends;
    oo.backend_count = 1;
    oo.allow_fallback = false;
    plx_optimized_network *on = NULL;
    plx_status st = plx_optimize(rt, net, &oo, &on);
    live.st = st;
    live.on = on;
    cr_assert(zero(ptr, st), "plx_optimize: %s", plx_status_get_message(st));
    size_t count = plx_optimized_network_layer_count(on);
    for (size_t i = 0; i < count; i++) {
        const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
        cr_assert(eq(str, (char *)a->backend_id, "cpu_ref"), "layer '%s'", a->layer_name);
        cr_assert(not(a->inserted), "layer '%s' was inserted", a->layer_name);
    }
    plx_loaded_network *ln = NULL;
    st = plx_runtime_load_network(rt, &on, NULL, &ln);
    live.on = NULL;
    live.st = st;
    cr_assert(zero(ptr, st), "plx_runtime_load_network: %s", plx_status_get_message(st));
    live.ln = ln;
    return ln;
}

static size_t info_bytes(const plx_tensor_info *info) {
    size_t bytes = 0;
    cr_assert(plx_tensor_info_byte_size(info, &bytes));
    return bytes;
}

/* Runs the loaded network once: inputs[i] and outputs[i] are the data of
 * the model's input / output i, bound by the binding ids the model reports
 * and sized from its tensor infos (which must match the loaded network's). */
static void run_loaded(plx_loaded_network *ln, const plx_onnx_model *model,
                       const void *const *inputs, void *const *outputs) {
    plx_tensor_binding in[8], out[8];
    size_t ni = plx_onnx_model_input_count(model), no = plx_onnx_model_output_count(model);
    cr_assert(le(sz, ni, COUNT(in)));
    cr_assert(le(sz, no, COUNT(out)));
    for (size_t i = 0; i < ni; i++) {
        const plx_onnx_io *io = plx_onnx_model_input(model, i);
        plx_tensor_info info;
        plx_status st = plx_loaded_network_input_info(ln, io->binding_id, &info);
        live.st = st;
        cr_assert(zero(ptr, st), "input info of '%s': %s", io->name, plx_status_get_message(st));
        cr_assert(eq(u32, info.rank, io->info.rank), "input '%s' rank", io->name);
        memset(&in[i], 0, sizeof in[i]);
        in[i].binding_id = io->binding_id;
        in[i].data = (void *)inputs[i];
        in[i].size = info_bytes(&io->info);
    }
    for (size_t i = 0; i < no; i++) {
        const plx_onnx_io *io = plx_onnx_model_output(model, i);
        plx_tensor_info info;
        plx_status st = plx_loaded_network_output_info(ln, io->binding_id, &info);
        live.st = st;
        cr_assert(zero(ptr, st), "output info of '%s': %s", io->name, plx_status_get_message(st));
        cr_assert(eq(u32, info.rank, io->info.rank), "output '%s' rank", io->name);
        for (uint32_t d = 0; d < info.rank; d++) {
            cr_assert(eq(i64, info.dims[d], io->info.dims[d]), "output '%s' dim %u", io->name, d);
        }
        memset(&out[i], 0, sizeof out[i]);
        out[i].binding_id = io->binding_id;
        out[i].data = outputs[i];
        out[i].size = info_bytes(&io->info);
        memset(outputs[i], 0x7d, out[i].size); /* unwritten elements show */
    }
    plx_execute_args args;
    plx_execute_args_init(&args);
    args.inputs = in;
    args.input_count = ni;
    args.outputs = out;
    args.output_count = no;
    plx_status st = plx_loaded_network_execute_with(ln, NULL, &args);
    live.st = st;
    cr_assert(zero(ptr, st), "execute: %s", plx_status_get_message(st));
}

/* Loads the model on a fresh runtime, runs it once, unloads. */
static void run_once(plx_onnx_model *model, const void *const *inputs, void *const *outputs) {
    plx_runtime *rt = make_runtime();
    plx_loaded_network *ln = load_model(rt, model);
    run_loaded(ln, model, inputs, outputs);
    plx_loaded_network_unload(&ln);
    live.ln = NULL;
    plx_runtime_destroy(&rt);
    live.rt = NULL;
}

static void expect_close(const float *got, const float *want, size_t n, float tol) {
    for (size_t i = 0; i < n; i++) {
        float diff = fabsf(got[i] - want[i]);
        float limit = tol * fmaxf(1.0f, fabsf(want[i]));
        cr_assert(le(flt, diff, limit), "element %zu: got %.9g, want %.9g", i, (double)got[i],
                  (double)want[i]);
    }
}

static void expect_dims(const plx_tensor_info *info, const int64_t *dims, size_t rank,
                        const char *what) {
    cr_assert(eq(u32, info->rank, (uint32_t)rank), "%s: rank", what);
    for (size_t i = 0; i < rank; i++) {
        cr_assert(eq(i64, info->dims[i], dims[i]), "%s: dim %zu", what, i);
    }
}
#define EXPECT_DIMS(info, what, ...) expect_dims((info), OB_DIMS(__VA_ARGS__), (what))

/* Deterministic values in [-1, 1). */
static void fill_values(float *v, size_t n, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = (float)((double)(s >> 8) / (double)(1u << 24)) * 2.0f - 1.0f;
    }
}

/* ------------------------------------------------------------------------ */
/* Scratch directories                                                        */
/* ------------------------------------------------------------------------ */

static char scratch[PATH_MAX];

/* dir/name into buf (PATH_MAX bytes). */
static char *join(char *buf, const char *dir, const char *name) {
    size_t n = (size_t)snprintf(buf, PATH_MAX, "%s/%s", dir, name);
    cr_assert(lt(sz, n, (size_t)PATH_MAX), "path too long: %s/%s", dir, name);
    return buf;
}

static const char *make_scratch(void) {
    char tmpl[] = "/tmp/plexus-onnx-XXXXXX";
    cr_assert(not(zero(ptr, mkdtemp(tmpl))), "mkdtemp: %s", strerror(errno));
    cr_assert(not(zero(ptr, realpath(tmpl, scratch))));
    return scratch;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_scratch(void) {
    if (scratch[0]) {
        nftw(scratch, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        scratch[0] = '\0';
    }
}

static void write_file(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    cr_assert(not(zero(ptr, f)), "%s: %s", path, strerror(errno));
    size_t wrote = size ? fwrite(data, 1, size, f) : 0;
    int closed = fclose(f);
    cr_assert(eq(sz, wrote, size), "%s: short write", path);
    cr_assert(eq(int, closed, 0), "%s: close failed", path);
}

/* Writes the model (then freed) to path. */
static void write_model(ob_model *m, const char *path) {
    size_t size;
    uint8_t *buf = ob_pack(m, &size);
    live.buf = buf;
    write_file(path, buf, size);
    free(buf);
    live.buf = NULL;
    free_model(m);
}

/* ------------------------------------------------------------------------ */
/* A small conv net                                                           */
/* ------------------------------------------------------------------------ */

/* x [1,1,6,6] -> Conv(2 filters 3x3, pads 1) -> Relu -> MaxPool 2x2/2 ->
 * Flatten -> Gemm(4, transB) -> Softmax; outputs prob [1,4] and flat
 * [1,18]. */
enum { CN_H = 6, CN_C = 2, CN_P = 3, CN_F = CN_C * CN_P * CN_P, CN_K = 4 };

typedef struct conv_net_params {
    float w1[CN_C * 9];
    float b1[CN_C];
    float w2[CN_K * CN_F];
    float b2[CN_K];
} conv_net_params;

static void conv_net_params_fill(conv_net_params *p) {
    fill_values(p->w1, COUNT(p->w1), 1);
    fill_values(p->b1, COUNT(p->b1), 2);
    fill_values(p->w2, COUNT(p->w2), 3);
    fill_values(p->b2, COUNT(p->b2), 4);
}

static ob_model *conv_net_model(const conv_net_params *p) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,1,6,6");
    ob_output(g, "prob", OB_FLOAT, "1,4");
    ob_output(g, "flat", OB_FLOAT, "1,18");
    /* Both encodings of float initializers. */
    ob_init_f32(g, "w1", OB_DIMS(CN_C, 1, 3, 3), p->w1, true);
    ob_init_f32(g, "b1", OB_DIMS(CN_C), p->b1, false);
    ob_init_f32(g, "w2", OB_DIMS(CN_K, CN_F), p->w2, false);
    ob_init_f32(g, "b2", OB_DIMS(CN_K), p->b2, true);
    ob_node *n = ob_node_add(g, "Conv", "conv", "x,w1,b1", "c");
    ob_attr_ints(n, "kernel_shape", OB_DIMS(3, 3));
    ob_attr_ints(n, "pads", OB_DIMS(1, 1, 1, 1));
    ob_attr_ints(n, "strides", OB_DIMS(1, 1));
    ob_node_add(g, "Relu", "relu", "c", "r");
    n = ob_node_add(g, "MaxPool", "pool", "r", "p");
    ob_attr_ints(n, "kernel_shape", OB_DIMS(2, 2));
    ob_attr_ints(n, "strides", OB_DIMS(2, 2));
    n = ob_node_add(g, "Flatten", "flatten", "p", "flat");
    ob_attr_i(n, "axis", 1);
    n = ob_node_add(g, "Gemm", "fc", "flat,w2,b2", "logits");
    ob_attr_i(n, "transB", 1);
    ob_attr_f(n, "alpha", 1.0f);
    ob_attr_f(n, "beta", 1.0f);
    n = ob_node_add(g, "Softmax", "softmax", "logits", "prob");
    ob_attr_i(n, "axis", 1);
    return m;
}

/* The same network by the ONNX definitions. */
static void conv_net_reference(const conv_net_params *p, const float *x, float *prob,
                               float *flat) {
    float conv[CN_C][CN_H][CN_H];
    for (int c = 0; c < CN_C; c++) {
        for (int i = 0; i < CN_H; i++) {
            for (int j = 0; j < CN_H; j++) {
                float s = p->b1[c];
                for (int ki = 0; ki < 3; ki++) {
                    for (int kj = 0; kj < 3; kj++) {
                        int yi = i + ki - 1, xj = j + kj - 1;
                        if (yi >= 0 && yi < CN_H && xj >= 0 && xj < CN_H) {
                            s += p->w1[c * 9 + ki * 3 + kj] * x[yi * CN_H + xj];
                        }
                    }
                }
                conv[c][i][j] = s > 0 ? s : 0; /* Relu */
            }
        }
    }
    for (int c = 0; c < CN_C; c++) {
        for (int i = 0; i < CN_P; i++) {
            for (int j = 0; j < CN_P; j++) {
                float mx = conv[c][2 * i][2 * j];
                mx = fmaxf(mx, conv[c][2 * i][2 * j + 1]);
                mx = fmaxf(mx, conv[c][2 * i + 1][2 * j]);
                mx = fmaxf(mx, conv[c][2 * i + 1][2 * j + 1]);
                flat[(c * CN_P + i) * CN_P + j] = mx;
            }
        }
    }
    float logits[CN_K], mx = -INFINITY;
    for (int k = 0; k < CN_K; k++) {
        float s = p->b2[k];
        for (int f = 0; f < CN_F; f++) {
            s += flat[f] * p->w2[k * CN_F + f];
        }
        logits[k] = s;
        mx = fmaxf(mx, s);
    }
    float sum = 0;
    for (int k = 0; k < CN_K; k++) {
        prob[k] = expf(logits[k] - mx);
        sum += prob[k];
    }
    for (int k = 0; k < CN_K; k++) {
        prob[k] /= sum;
    }
}

Test(onnx_import, conv_net_imports_and_runs) {
    conv_net_params p;
    conv_net_params_fill(&p);
    plx_onnx_model *model = import_ok(conv_net_model(&p), NULL);

    cr_assert(eq(sz, plx_onnx_model_input_count(model), 1));
    const plx_onnx_io *in = plx_onnx_model_input(model, 0);
    cr_assert(not(zero(ptr, (void *)in)));
    cr_assert(eq(str, (char *)in->name, "x"));
    cr_assert(eq(i32, in->binding_id, 0));
    cr_assert(eq(int, (int)in->info.dtype, (int)PLX_DTYPE_FLOAT32));
    EXPECT_DIMS(&in->info, "input x", 1, 1, 6, 6);
    cr_assert(zero(ptr, (void *)plx_onnx_model_input(model, 1)));

    cr_assert(eq(sz, plx_onnx_model_output_count(model), 2));
    const plx_onnx_io *out0 = plx_onnx_model_output(model, 0);
    const plx_onnx_io *out1 = plx_onnx_model_output(model, 1);
    cr_assert(eq(str, (char *)out0->name, "prob"));
    cr_assert(eq(i32, out0->binding_id, 0));
    cr_assert(eq(int, (int)out0->info.dtype, (int)PLX_DTYPE_FLOAT32));
    EXPECT_DIMS(&out0->info, "output prob", 1, 4);
    cr_assert(eq(str, (char *)out1->name, "flat"));
    cr_assert(eq(i32, out1->binding_id, 1));
    EXPECT_DIMS(&out1->info, "output flat", 1, 18);
    cr_assert(zero(ptr, (void *)plx_onnx_model_output(model, 2)));

    plx_onnx_model_facts facts;
    plx_onnx_model_get_facts(model, &facts);
    cr_assert(eq(str, (char *)facts.producer, "onnx_builder 1.0"));
    cr_assert(eq(i64, facts.ir_version, IR));
    cr_assert(eq(i64, facts.opset, OPSET));
    cr_assert(eq(sz, facts.node_count, 6));
    cr_assert(eq(sz, facts.folded_count, 0));
    /* input, 2 constants + conv, relu, pool, flatten, 2 constants + gemm,
     * softmax, 2 outputs. */
    size_t layers = plx_network_layer_count(plx_onnx_model_network(model));
    cr_assert(eq(sz, layers, 13));

    float x[CN_H * CN_H], prob[CN_K], flat[CN_F], want_prob[CN_K], want_flat[CN_F];
    fill_values(x, COUNT(x), 5);
    conv_net_reference(&p, x, want_prob, want_flat);
    const void *ins[] = {x};
    void *outs[] = {prob, flat};
    run_once(model, ins, outs);
    expect_close(flat, want_flat, CN_F, 1e-5f);
    expect_close(prob, want_prob, CN_K, 1e-5f);
    destroy_model(&model);
}

Test(onnx_import, same_model_from_file) {
    conv_net_params p;
    conv_net_params_fill(&p);
    char path[PATH_MAX];
    join(path, make_scratch(), "net.onnx");
    write_model(conv_net_model(&p), path);
    plx_onnx_model *model = NULL;
    plx_status st = plx_onnx_import_file(path, NULL, &model);
    live.st = st;
    cr_assert(zero(ptr, st), "%s", plx_status_get_message(st));
    live.model = model;
    float x[CN_H * CN_H], prob[CN_K], flat[CN_F], want_prob[CN_K], want_flat[CN_F];
    fill_values(x, COUNT(x), 6);
    conv_net_reference(&p, x, want_prob, want_flat);
    const void *ins[] = {x};
    void *outs[] = {prob, flat};
    run_once(model, ins, outs);
    expect_close(prob, want_prob, CN_K, 1e-5f);
    destroy_model(&model);
    remove_scratch();
}

Test(onnx_import, missing_file_is_io_error) {
    plx_onnx_model *model = NULL;
    CALL_FAILS(plx_onnx_import_file("/nonexistent/dir/model.onnx", NULL, &model), PLX_IO_ERROR,
               "/nonexistent/dir/model.onnx");
    cr_assert(zero(ptr, model));
}

Test(onnx_import, bad_arguments) {
    plx_onnx_model *model = NULL;
    CALL_FAILS(plx_onnx_import_memory(NULL, 4, FILE_NAME, NULL, NULL, &model),
               PLX_INVALID_ARGUMENT, "plx_onnx_import_memory");
    CALL_FAILS(plx_onnx_import_file(NULL, NULL, &model), PLX_INVALID_ARGUMENT,
               "plx_onnx_import_file");
    plx_onnx_options o;
    plx_onnx_options_init(&o);
    o.struct_size = 4;
    ob_model *m = new_model(IR, OPSET);
    IMPORT_FAILS(m, &o, PLX_INVALID_ARGUMENT, "struct_size");
    /* A shape without a name. */
    plx_onnx_input_shape shape;
    memset(&shape, 0, sizeof shape);
    plx_onnx_options_init(&o);
    o.shapes = &shape;
    o.shape_count = 1;
    m = new_model(IR, OPSET);
    IMPORT_FAILS(m, &o, PLX_INVALID_ARGUMENT, "shapes[0]");
    /* The accessors take NULL. */
    cr_assert(zero(ptr, plx_onnx_model_network(NULL)));
    cr_assert(eq(sz, plx_onnx_model_input_count(NULL), 0));
    cr_assert(eq(sz, plx_onnx_model_output_count(NULL), 0));
    plx_onnx_model_destroy(NULL);
    plx_onnx_model_destroy(&model);
}

/* ------------------------------------------------------------------------ */
/* Constant folding, aliases, If                                              */
/* ------------------------------------------------------------------------ */

Test(onnx_import, shape_chain_folds_into_reshape) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,3,4");
    ob_output(g, "y", OB_FLOAT, NULL);
    int64_t zero = 0, axes0 = 0, minus1 = -1;
    ob_init_i64(g, "idx0", OB_SCALAR, &zero, false);
    ob_init_i64(g, "axes", OB_DIMS(1), &axes0, true);
    ob_init_i64(g, "rest", OB_DIMS(1), &minus1, false);
    ob_node_add(g, "Shape", "shape", "x", "s");
    ob_node_add(g, "Gather", "gather", "s,idx0", "d0");
    ob_node_add(g, "Unsqueeze", "unsqueeze", "d0,axes", "d0v");
    ob_attr_i(ob_node_add(g, "Concat", "concat", "d0v,rest", "newshape"), "axis", 0);
    ob_node_add(g, "Reshape", "reshape", "x,newshape", "y");
    plx_onnx_model *model = import_ok(m, NULL);

    plx_onnx_model_facts facts;
    plx_onnx_model_get_facts(model, &facts);
    cr_assert(eq(sz, facts.node_count, 5));
    cr_assert(eq(sz, facts.folded_count, 4));
    /* input, reshape, output: the shape is the reshape's own. */
    size_t layers = plx_network_layer_count(plx_onnx_model_network(model));
    cr_assert(eq(sz, layers, 3));
    EXPECT_DIMS(&plx_onnx_model_output(model, 0)->info, "output y", 2, 12);

    float x[24], y[24];
    fill_values(x, 24, 7);
    const void *ins[] = {x};
    void *outs[] = {y};
    run_once(model, ins, outs);
    cr_assert(eq(int, memcmp(x, y, sizeof x), 0), "reshape changed the data");
    destroy_model(&model);
}

/* Constant, ConstantOfShape, Range and Cast of constants fold; only the
 * values reach the network as constants. y = (x + float(range(0, 4))) *
 * constant_of_shape([1, 4], 3) + k. */
Test(onnx_import, constants_fold) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,4");
    ob_output(g, "y", OB_FLOAT, "1,4");
    int64_t start = 0, limit = 4, delta = 1;
    ob_init_i64(g, "start", OB_SCALAR, &start, false);
    ob_init_i64(g, "limit", OB_SCALAR, &limit, true);
    ob_init_i64(g, "delta", OB_SCALAR, &delta, false);
    ob_node_add(g, "Range", "range", "start,limit,delta", "r64");
    ob_attr_i(ob_node_add(g, "Cast", "cast", "r64", "rf"), "to", OB_FLOAT);
    /* The shape from a Constant with an int64 tensor. */
    Onnx__TensorProto *shape = ob_tensor(m, NULL, OB_INT64, OB_DIMS(2));
    ob_tensor_int64s(m, shape, (const int64_t[]){1, 4}, 2);
    ob_attr_t(ob_node_add(g, "Constant", "shape_const", "", "shp"), "value", shape);
    Onnx__TensorProto *three = ob_tensor(m, NULL, OB_FLOAT, OB_DIMS(1));
    ob_tensor_floats(m, three, (const float[]){3.0f}, 1);
    ob_attr_t(ob_node_add(g, "ConstantOfShape", "cos", "shp", "threes"), "value", three);
    ob_attr_f(ob_node_add(g, "Constant", "k_const", "", "k"), "value_float", 0.5f);
    ob_node_add(g, "Add", "add", "x,rf", "a");
    ob_node_add(g, "Mul", "mul", "a,threes", "b");
    ob_node_add(g, "Add", "add_k", "b,k", "y");
    plx_onnx_model *model = import_ok(m, NULL);

    plx_onnx_model_facts facts;
    plx_onnx_model_get_facts(model, &facts);
    cr_assert(eq(sz, facts.node_count, 8));
    cr_assert(eq(sz, facts.folded_count, 5), "folded %zu", facts.folded_count);
    /* input; 3 constants and add, mul, add_k; output. */
    size_t layers = plx_network_layer_count(plx_onnx_model_network(model));
    cr_assert(eq(sz, layers, 8));

    float x[4] = {1.0f, -2.0f, 0.25f, 10.0f}, y[4], want[4];
    for (int i = 0; i < 4; i++) {
        want[i] = (x[i] + (float)i) * 3.0f + 0.5f;
    }
    const void *ins[] = {x};
    void *outs[] = {y};
    run_once(model, ins, outs);
    expect_close(y, want, 4, 1e-6f);
    destroy_model(&model);
}

/* An output computed entirely at import is a constant layer. */
Test(onnx_import, folded_output) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,5");
    ob_output(g, "y", OB_FLOAT, "2,5");
    ob_output(g, "n", OB_INT64, "2");
    ob_node_add(g, "Shape", "shape", "x", "n");
    ob_node_add(g, "Identity", "id", "x", "y");
    plx_onnx_model *model = import_ok(m, NULL);
    const plx_onnx_io *n_io = plx_onnx_model_output(model, 1);
    cr_assert(eq(int, (int)n_io->info.dtype, (int)PLX_DTYPE_INT64));
    EXPECT_DIMS(&n_io->info, "output n", 2);
    float x[10], y[10];
    int64_t n[2];
    fill_values(x, 10, 8);
    const void *ins[] = {x};
    void *outs[] = {y, n};
    run_once(model, ins, outs);
    cr_assert(eq(i64, n[0], 2));
    cr_assert(eq(i64, n[1], 5));
    cr_assert(eq(int, memcmp(x, y, sizeof x), 0));
    destroy_model(&model);
}

Test(onnx_import, identity_and_dropout_are_aliases) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_output(g, "y", OB_FLOAT, "3");
    ob_node_add(g, "Identity", "id1", "x", "x1");
    ob_node_add(g, "Relu", "relu", "x1", "r");
    ob_node_add(g, "Dropout", "drop", "r", "d");
    ob_node_add(g, "Identity", "id2", "d", "y");
    plx_onnx_model *model = import_ok(m, NULL);
    size_t layers = plx_network_layer_count(plx_onnx_model_network(model));
    cr_assert(eq(sz, layers, 3), "input, relu, output: got %zu layers", layers);
    float x[3] = {-1.0f, 0.0f, 2.5f}, y[3], want[3] = {0.0f, 0.0f, 2.5f};
    const void *ins[] = {x};
    void *outs[] = {y};
    run_once(model, ins, outs);
    expect_close(y, want, 3, 0.0f);
    destroy_model(&model);
}

/* x [2,3]; If(cond) then y = x + 1 (a main-graph initializer), else
 * y = x * 2 (the branch's own initializer). `cond_from_shape` computes the
 * condition as Shape(x)[0] == 2 (true); otherwise it is a bool initializer
 * with value `cond`. */
static ob_model *if_model(bool cond_from_shape, bool cond) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,3");
    ob_output(g, "y", OB_FLOAT, "2,3");
    ob_init_f32(g, "one", OB_SCALAR, (const float[]){1.0f}, false);
    if (cond_from_shape) {
        int64_t zero = 0, two = 2;
        ob_init_i64(g, "i0", OB_SCALAR, &zero, false);
        ob_init_i64(g, "two_i", OB_SCALAR, &two, true);
        ob_node_add(g, "Shape", "shape", "x", "s");
        ob_node_add(g, "Gather", "gather", "s,i0", "d0");
        ob_node_add(g, "Equal", "equal", "d0,two_i", "cond");
    } else {
        Onnx__TensorProto *c = ob_tensor(m, "cond", OB_BOOL, OB_SCALAR);
        ob_tensor_int32s(m, c, (const int32_t[]){cond ? 1 : 0}, 1);
        ob_initializer(g, c);
    }
    ob_graph *then_g = ob_graph_new(m, "then");
    ob_node_add(then_g, "Add", "then_add", "x,one", "t_out");
    ob_output(then_g, "t_out", OB_FLOAT, NULL);
    ob_graph *else_g = ob_graph_new(m, "else");
    ob_init_f32(else_g, "two", OB_SCALAR, (const float[]){2.0f}, true);
    ob_node_add(else_g, "Mul", "else_mul", "x,two", "e_out");
    ob_output(else_g, "e_out", OB_FLOAT, NULL);
    ob_node *n = ob_node_add(g, "If", "if", "cond", "y");
    ob_attr_g(n, "then_branch", then_g);
    ob_attr_g(n, "else_branch", else_g);
    return m;
}

static void check_if(plx_onnx_model *model, bool then_taken) {
    /* input, constant, add or mul, output. */
    size_t layers = plx_network_layer_count(plx_onnx_model_network(model));
    cr_assert(eq(sz, layers, 4), "got %zu layers", layers);
    float x[6], y[6], want[6];
    fill_values(x, 6, 9);
    for (int i = 0; i < 6; i++) {
        want[i] = then_taken ? x[i] + 1.0f : x[i] * 2.0f;
    }
    const void *ins[] = {x};
    void *outs[] = {y};
    run_once(model, ins, outs);
    expect_close(y, want, 6, 1e-6f);
}

Test(onnx_import, if_constant_true_inlines_then) {
    plx_onnx_model *model = import_ok(if_model(false, true), NULL);
    check_if(model, true);
    destroy_model(&model);
}

Test(onnx_import, if_constant_false_inlines_else) {
    plx_onnx_model *model = import_ok(if_model(false, false), NULL);
    check_if(model, false);
    destroy_model(&model);
}

/* y = Clip(x float [6], lo) with lo a graph input of `lo_type` and
 * `lo_shape`. */
static ob_model *clip_by_input_model(int32_t lo_type, const char *lo_shape) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "6");
    ob_input(g, "lo", lo_type, lo_shape);
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Clip", "clip", "x,lo", "y");
    return m;
}

/* Clip's bounds computed from the graph's inputs (opset 11 on): max then
 * min layers at run time, as ONNX defines them, min > max giving max. */
Test(onnx_import, clip_bounds_computed_at_run_time) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "6");
    ob_input(g, "lo", OB_FLOAT, "");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_f32(g, "hi", OB_SCALAR, (const float[]){2.5f}, false);
    /* The lower bound is computed: lo - 1. */
    ob_init_f32(g, "one", OB_SCALAR, (const float[]){1.0f}, false);
    ob_node_add(g, "Sub", "lo_minus_one", "lo,one", "lo1");
    ob_node_add(g, "Clip", "clip", "x,lo1,hi", "y");
    plx_onnx_model *model = import_ok(m, NULL);
    cr_assert(eq(sz, plx_onnx_model_input_count(model), 2));
    float x[6] = {-3, -1, 0, 1, 2, 4}, y[6];
    float lo = 0.5f; /* bound -0.5 */
    const void *ins[] = {x, &lo};
    void *outs[] = {y};
    run_once(model, ins, outs);
    const float want[6] = {-0.5f, -0.5f, 0, 1, 2, 2.5f};
    expect_close(y, want, 6, 0);
    /* A lower bound above the upper one: every value is the upper bound. */
    lo = 10.0f;
    run_once(model, ins, outs);
    const float all_hi[6] = {2.5f, 2.5f, 2.5f, 2.5f, 2.5f, 2.5f};
    expect_close(y, all_hi, 6, 0);
    destroy_model(&model);

    /* A bound that is not a scalar, or not of the input's type. */
    IMPORT_FAILS(clip_by_input_model(OB_FLOAT, "2"), NULL, PLX_INVALID_ARGUMENT, "node 'clip'",
                 "scalar");
    IMPORT_FAILS(clip_by_input_model(OB_INT64, ""), NULL, PLX_INVALID_ARGUMENT, "node 'clip'",
                 "int64");
}

/* Pad's constant_value computed at run time (opset 11 on): a runtime
 * input of Where, not a value the import needs. */
Test(onnx_import, pad_value_at_run_time) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,2");
    ob_input(g, "v", OB_FLOAT, "");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "pads", OB_DIMS(4), (const int64_t[]){0, 1, 1, 0}, false);
    ob_node_add(g, "Pad", "pad", "x,pads,v", "y");
    plx_onnx_model *model = import_ok(m, NULL);
    cr_assert(eq(sz, plx_onnx_model_input_count(model), 2), "v stays an input");
    expect_dims(&plx_onnx_model_output(model, 0)->info, (const int64_t[]){3, 3}, 2, "y");
    float x[4] = {1, 2, 3, 4}, v = -7.0f, y[9];
    const void *ins[] = {x, &v};
    void *outs[] = {y};
    run_once(model, ins, outs);
    expect_close(y, (const float[]){-7, 1, 2, -7, 3, 4, -7, -7, -7}, 9, 0);
    v = 0.5f;
    run_once(model, ins, outs);
    expect_close(y, (const float[]){0.5f, 1, 2, 0.5f, 3, 4, 0.5f, 0.5f, 0.5f}, 9, 0);
    destroy_model(&model);
}

Test(onnx_import, if_condition_folded_from_shape) {
    plx_onnx_model *model = import_ok(if_model(true, true), NULL);
    check_if(model, true);
    destroy_model(&model);
}

Test(onnx_import, if_with_runtime_condition_is_unsupported) {
    ob_model *m = if_model(false, true);
    /* cond becomes a graph input: not known at import. */
    Onnx__GraphProto *gp = ob_graph_proto(ob_main(m));
    gp->n_initializer = 1; /* keep "one", drop "cond" */
    ob_input(ob_main(m), "cond", OB_BOOL, "");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "'if'", "(If, opset 13)", "cond",
                 "known at import");
}

/* ------------------------------------------------------------------------ */
/* Loop and Scan, unrolled at import                                          */
/* ------------------------------------------------------------------------ */

/* Loop over x [3]: acc (from zeros) += x each iteration; scan outputs the
 * running acc and the iteration number as float. `trip` is M (an
 * initializer) or, NULL, a graph input "M"; `cond_mode` 0: no cond (a for
 * loop); 1: cond true and the body continues while i < 2; 2: the body
 * continues while sum(x) > 0, computed from data. */
static ob_model *loop_model(const int64_t *trip, int cond_mode) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    if (!trip) {
        ob_input(g, "M", OB_INT64, "");
    } else {
        ob_init_i64(g, "M", OB_SCALAR, trip, false);
    }
    ob_init_f32(g, "zeros", OB_DIMS(3), (const float[]){0, 0, 0}, false);
    ob_output(g, "acc", OB_FLOAT, NULL);
    ob_output(g, "running", OB_FLOAT, NULL);
    ob_output(g, "iters", OB_FLOAT, NULL);
    if (cond_mode) {
        Onnx__TensorProto *c = ob_tensor(m, "go", OB_BOOL, OB_SCALAR);
        ob_tensor_int32s(m, c, (const int32_t[]){1}, 1);
        ob_initializer(g, c);
    }
    ob_graph *body = ob_graph_new(m, "body");
    ob_input(body, "i", OB_INT64, "");
    ob_input(body, "c_in", OB_BOOL, "");
    ob_input(body, "a_in", OB_FLOAT, "3");
    ob_init_i64(body, "two", OB_SCALAR, (const int64_t[]){2}, false);
    ob_node_add(body, "Add", "accumulate", "a_in,x", "a_out");
    ob_node_add(body, "Identity", "running_copy", "a_out", "run_out");
    ob_node *cast = ob_node_add(body, "Cast", "iter_float", "i", "i_f");
    ob_attr_i(cast, "to", OB_FLOAT);
    if (cond_mode == 2) {
        ob_init_f32(body, "fzero", OB_SCALAR, (const float[]){0}, false);
        ob_node *r = ob_node_add(body, "ReduceSum", "sum", "x", "sx");
        ob_attr_i(r, "keepdims", 0);
        ob_node_add(body, "Greater", "positive", "sx,fzero", "c_out");
    } else if (cond_mode == 1) {
        ob_node_add(body, "Less", "below_two", "i,two", "c_out");
    } else {
        ob_node_add(body, "Identity", "keep_going", "c_in", "c_out");
    }
    ob_output(body, "c_out", OB_BOOL, "");
    ob_output(body, "a_out", OB_FLOAT, "3");
    ob_output(body, "run_out", OB_FLOAT, "3");
    ob_output(body, "i_f", OB_FLOAT, "");
    ob_node *n = ob_node_add(g, "Loop", "loop", cond_mode ? "M,go,zeros" : "M,,zeros",
                             "acc,running,iters");
    ob_attr_g(n, "body", body);
    return m;
}

/* Runs loop_model's network on x = {1, 2, 3} and checks `iterations`. */
static void check_loop(plx_onnx_model *model, int iterations) {
    float x[3] = {1, 2, 3}, acc[3], running[3 * 8], iters[8];
    expect_dims(&plx_onnx_model_output(model, 1)->info, (const int64_t[]){iterations, 3}, 2,
                "running");
    const void *ins[] = {x};
    void *outs[] = {acc, running, iters};
    run_once(model, ins, outs);
    for (int k = 0; k < iterations; k++) {
        float want[3] = {x[0] * (k + 1), x[1] * (k + 1), x[2] * (k + 1)};
        expect_close(&running[3 * k], want, 3, 0);
        cr_expect(eq(flt, iters[k], (float)k));
    }
    float want[3] = {x[0] * iterations, x[1] * iterations, x[2] * iterations};
    expect_close(acc, want, 3, 0);
}

Test(onnx_import, loop_unrolled_with_carried_values_and_scan_outputs) {
    plx_onnx_model *model = import_ok(loop_model((const int64_t[]){4}, 0), NULL);
    check_loop(model, 4);
    plx_onnx_model_facts f;
    plx_onnx_model_get_facts(model, &f);
    cr_expect(eq(sz, f.node_count, 5), "the loop and its body's 4 nodes, counted once");
    destroy_model(&model);
    /* The body's condition ends it: i = 0, 1, 2 run (cond true, M large). */
    model = import_ok(loop_model((const int64_t[]){100}, 1), NULL);
    check_loop(model, 3);
    destroy_model(&model);
}

/* What decides the iterations must be known at import: a trip count from a
 * graph input is reported (and can be frozen), a condition computed from
 * data cannot be unrolled. Too many iterations are refused. */
Test(onnx_import, loop_needs_its_control_at_import) {
    plx_onnx_import_report report = {0};
    plx_onnx_options o;
    plx_onnx_options_init(&o);
    o.report = &report;
    IMPORT_FAILS(loop_model(NULL, 0), &o, PLX_UNSUPPORTED, "node 'loop' (Loop", "M",
                 "must be known at import");
    cr_assert(eq(sz, report.value_input_count, 1));
    cr_expect(eq(str, report.value_inputs[0], "M"));
    const int64_t two = 2;
    plx_onnx_constant_input k = {.name = "M", .info = {.dtype = PLX_DTYPE_INT64}, .data = &two};
    o.constants = &k;
    o.constant_count = 1;
    plx_onnx_model *model = import_ok(loop_model(NULL, 0), &o);
    check_loop(model, 2);
    destroy_model(&model);
    o.constant_count = 0;

    IMPORT_FAILS(loop_model((const int64_t[]){4}, 2), &o, PLX_UNSUPPORTED, "node 'loop'",
                 "the condition its body computes must be known at import");
    cr_assert(eq(sz, report.value_input_count, 1));
    cr_expect(eq(str, report.value_inputs[0], "x"));
    IMPORT_FAILS(loop_model((const int64_t[]){5000}, 0), NULL, PLX_UNSUPPORTED, "node 'loop'",
                 "more than 4096 iterations");
    plx_model_import_report_clear(&report);
}

/* NonZero and Compress: their output's shape depends on values, which
 * the import needs (reported), and with them frozen the output is exact. */
Test(onnx_import, outputs_shaped_by_values) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,3");
    ob_input(g, "keep", OB_BOOL, "3");
    ob_output(g, "nz", OB_INT64, NULL);
    ob_output(g, "kept", OB_FLOAT, NULL);
    ob_node_add(g, "NonZero", "nonzero", "x", "nz");
    ob_node *cn = ob_node_add(g, "Compress", "compress", "x,keep", "kept");
    ob_attr_i(cn, "axis", -1);
    uint8_t *buf = NULL;
    size_t size = 0;
    buf = ob_pack(m, &size);
    free_model(m);
    plx_onnx_import_report report = {0};
    plx_onnx_options o;
    plx_onnx_options_init(&o);
    o.report = &report;
    plx_onnx_model *model = NULL;
    plx_status st = plx_onnx_import_memory(buf, size, "values.onnx", NULL, &o, &model);
    cr_assert_not_null(st);
    cr_expect(not(zero(ptr, strstr(plx_status_get_message(st), "node 'nonzero' (NonZero"))));
    cr_expect(not(zero(ptr, strstr(plx_status_get_message(st), "node 'compress' (Compress"))));
    plx_status_free(st);
    cr_assert(eq(sz, report.value_input_count, 2));

    /* x frozen: NonZero folds; keep stays needed. Both frozen: exact. */
    const float x[6] = {0, 1.5f, 0, -2, 0, 3};
    const uint8_t keep[3] = {1, 0, 1};
    plx_onnx_constant_input k[2] = {
        {.name = "x", .info = {.dtype = PLX_DTYPE_FLOAT32, .rank = 2, .dims = {2, 3}}, .data = x},
        {.name = "keep", .info = {.dtype = PLX_DTYPE_BOOL, .rank = 1, .dims = {3}},
         .data = keep}};
    o.constants = k;
    o.constant_count = 2;
    st = plx_onnx_import_memory(buf, size, "values.onnx", NULL, &o, &model);
    cr_assert_null(st, "%s", plx_status_get_message(st));
    const plx_onnx_io *nz = plx_onnx_model_output(model, 0), *kept = plx_onnx_model_output(model, 1);
    expect_dims(&nz->info, (const int64_t[]){2, 3}, 2, "nz");
    expect_dims(&kept->info, (const int64_t[]){2, 2}, 2, "kept");
    int64_t got_nz[6];
    float got_kept[4];
    void *outs[] = {got_nz, got_kept};
    run_once(model, NULL, outs);
    const int64_t want_nz[6] = {0, 1, 1, 1, 0, 2}; /* rows, then columns */
    for (int i = 0; i < 6; i++) {
        cr_expect(eq(i64, got_nz[i], want_nz[i]), "nz[%d]", i);
    }
    expect_close(got_kept, (const float[]){0, 0, -2, 3}, 4, 0);
    destroy_model(&model);
    plx_model_import_report_clear(&report);
    free(buf);
}

/* Unique of a value known at import (here a constant), sorted and in
 * order of first occurrence: values, first indices, inverse, counts. */
static void check_unique(bool sorted, const float *y, const int64_t *idx, const int64_t *inv,
                         const int64_t *counts) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_init_f32(g, "x", OB_DIMS(5), (const float[]){2, 1, 2, 3, 1}, false);
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_output(g, "idx", OB_INT64, NULL);
    ob_output(g, "inv", OB_INT64, NULL);
    ob_output(g, "counts", OB_INT64, NULL);
    ob_node *n = ob_node_add(g, "Unique", "unique", "x", "y,idx,inv,counts");
    ob_attr_i(n, "sorted", sorted);
    plx_onnx_model *model = import_ok(m, NULL);
    float gy[3];
    int64_t gidx[3], ginv[5], gcounts[3];
    void *outs[] = {gy, gidx, ginv, gcounts};
    run_once(model, NULL, outs);
    expect_close(gy, y, 3, 0);
    for (int i = 0; i < 5; i++) {
        cr_expect(eq(i64, ginv[i], inv[i]), "inverse %d", i);
    }
    for (int i = 0; i < 3; i++) {
        cr_expect(eq(i64, gidx[i], idx[i]), "index %d", i);
        cr_expect(eq(i64, gcounts[i], counts[i]), "count %d", i);
    }
    destroy_model(&model);
}

Test(onnx_import, unique_of_known_values) {
    check_unique(true, (const float[]){1, 2, 3}, (const int64_t[]){1, 0, 3},
                 (const int64_t[]){1, 0, 1, 2, 0}, (const int64_t[]){2, 2, 1});
    check_unique(false, (const float[]){2, 1, 3}, (const int64_t[]){0, 1, 3},
                 (const int64_t[]){0, 1, 0, 2, 1}, (const int64_t[]){2, 2, 1});
}

/* NonMaxSuppression of values known at import (here constants): per class
 * the best boxes first (a tie to the lower index), a box overlapping a kept
 * one by IoU above the threshold dropped (flipped corners, a box without
 * area never suppressing), scores at or below score_threshold left out,
 * at most max_output_boxes_per_class; and centre-size boxes. Boxes from a
 * graph input are needed at import (reported). */
static void check_nms(bool centers, const float *boxes, int64_t nb, const float *scores,
                      int64_t nc, const char *ins, const int64_t *want, int64_t rows) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_init_f32(g, "b", OB_DIMS(1, nb, 4), boxes, false);
    ob_init_f32(g, "s", OB_DIMS(1, nc, nb), scores, false);
    ob_init_i64(g, "m", OB_DIMS(1), (const int64_t[]){centers ? 10 : 3}, false);
    ob_init_f32(g, "i", OB_DIMS(1), (const float[]){centers ? 0.4f : 0.5f}, false);
    ob_init_f32(g, "t", OB_DIMS(1), (const float[]){0.15f}, false);
    ob_output(g, "y", OB_INT64, NULL);
    ob_node *n = ob_node_add(g, "NonMaxSuppression", "nms", ins, "y");
    ob_attr_i(n, "center_point_box", centers);
    plx_onnx_model *model = import_ok(m, NULL);
    const plx_onnx_io *y = plx_onnx_model_output(model, 0);
    expect_dims(&y->info, (const int64_t[]){rows, 3}, 2, "y");
    int64_t got[30];
    void *outs[] = {got};
    run_once(model, NULL, outs);
    for (int64_t i = 0; i < 3 * rows; i++) {
        cr_expect(eq(i64, got[i], want[i]), "y element %lld", (long long)i);
    }
    destroy_model(&model);
}

Test(onnx_import, nms_of_known_values) {
    const float boxes[] = {0, 0, 1, 1,     0.1f, 0.1f, 1.1f, 1.1f, 1, 1, 0, 0.05f,
                           2, 2, 3, 3,     2.2f, 2, 3.2f, 3,       0, 0, 0, 0};
    const float scores[] = {0.9f, 0.8f, 0.9f, 0.7f, 0.75f, 0.95f,
                            0.1f, 0.6f, 0.3f, 0.2f, 0.6f, 0.05f};
    /* as ONNX's reference implementation gives it */
    check_nms(false, boxes, 6, scores, 2, "b,s,m,i,t",
              (const int64_t[]){0, 0, 5, 0, 0, 0, 0, 0, 4, 0, 1, 1, 0, 1, 4}, 5);
    const float centers[] = {0.5f, 0.5f, 1, 1, 0.6f, 0.6f, 1, 1, 2.5f, 2.5f, 1, 1};
    check_nms(true, centers, 3, (const float[]){0.9f, 0.95f, 0.5f}, 1, "b,s,m,i",
              (const int64_t[]){0, 0, 1, 0, 0, 2}, 2);
    /* without max_output_boxes_per_class nothing is selected */
    check_nms(false, boxes, 6, scores, 2, "b,s", (const int64_t[]){0}, 0);

    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "boxes", OB_FLOAT, "1,2,4");
    ob_init_f32(g, "s", OB_DIMS(1, 1, 2), (const float[]){0.5f, 0.6f}, false);
    ob_init_i64(g, "m", OB_DIMS(1), (const int64_t[]){1}, false);
    ob_output(g, "y", OB_INT64, NULL);
    ob_node_add(g, "NonMaxSuppression", "nms", "boxes,s,m", "y");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "node 'nms' (NonMaxSuppression",
                 "input 0 (boxes, whose values decide the output's shape) must be known at "
                 "import");
}

/* A loop in a loop: the cap on unrolled body nodes counts the inner
 * loop's iterations of every outer one (300 x 300 > 65,536). */
Test(onnx_import, nested_loops_share_the_unroll_cap) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "M", OB_SCALAR, (const int64_t[]){300}, false);
    ob_graph *inner = ob_graph_new(m, "inner");
    ob_input(inner, "j", OB_INT64, "");
    ob_input(inner, "c2", OB_BOOL, "");
    ob_input(inner, "b", OB_FLOAT, "3");
    ob_node_add(inner, "Neg", "flip", "b", "b2");
    ob_node_add(inner, "Identity", "c2_copy", "c2", "c2o");
    ob_output(inner, "c2o", OB_BOOL, "");
    ob_output(inner, "b2", OB_FLOAT, "3");
    ob_graph *outer = ob_graph_new(m, "outer");
    ob_input(outer, "i", OB_INT64, "");
    ob_input(outer, "c1", OB_BOOL, "");
    ob_input(outer, "a", OB_FLOAT, "3");
    ob_node *in_loop = ob_node_add(outer, "Loop", "inner_loop", "M,,a", "a2");
    ob_attr_g(in_loop, "body", inner);
    ob_node_add(outer, "Identity", "c1_copy", "c1", "c1o");
    ob_output(outer, "c1o", OB_BOOL, "");
    ob_output(outer, "a2", OB_FLOAT, "3");
    ob_node *n = ob_node_add(g, "Loop", "outer_loop", "M,,x", "y");
    ob_attr_g(n, "body", outer);
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "more than 65536 nodes of loop bodies");
}

/* Scan over x [4,2] from the end: the state sums the rows, the scan
 * output (stacked in reverse) is the sum of each row and those after it. */
Test(onnx_import, scan_unrolled_in_reverse) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "4,2");
    ob_init_f32(g, "s0", OB_DIMS(2), (const float[]){0, 0}, false);
    ob_output(g, "total", OB_FLOAT, NULL);
    ob_output(g, "suffix", OB_FLOAT, NULL);
    ob_graph *body = ob_graph_new(m, "body");
    ob_input(body, "s_in", OB_FLOAT, "2");
    ob_input(body, "row", OB_FLOAT, "2");
    ob_node_add(body, "Add", "add", "s_in,row", "s_out");
    ob_node_add(body, "Identity", "copy", "s_out", "y");
    ob_output(body, "s_out", OB_FLOAT, "2");
    ob_output(body, "y", OB_FLOAT, "2");
    ob_node *n = ob_node_add(g, "Scan", "scan", "s0,x", "total,suffix");
    ob_attr_g(n, "body", body);
    ob_attr_i(n, "num_scan_inputs", 1);
    ob_attr_ints(n, "scan_input_directions", OB_DIMS(1));
    ob_attr_ints(n, "scan_output_directions", OB_DIMS(1));
    plx_onnx_model *model = import_ok(m, NULL);
    expect_dims(&plx_onnx_model_output(model, 1)->info, (const int64_t[]){4, 2}, 2, "suffix");
    float x[8] = {1, 10, 2, 20, 3, 30, 4, 40}, total[2], suffix[8];
    const void *ins[] = {x};
    void *outs[] = {total, suffix};
    run_once(model, ins, outs);
    expect_close(total, (const float[]){10, 100}, 2, 0);
    expect_close(suffix, (const float[]){10, 100, 9, 90, 7, 70, 4, 40}, 8, 0);
    destroy_model(&model);
}

/* ------------------------------------------------------------------------ */
/* Dynamic dims                                                               */
/* ------------------------------------------------------------------------ */

/* x [N,3] + b [3] -> y. */
static ob_model *dynamic_model(const char *x_shape) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, x_shape);
    ob_input(g, "b", OB_FLOAT, "3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Add", "add", "x,b", "y");
    return m;
}

Test(onnx_import, dim_param_without_shape_fails) {
    IMPORT_FAILS(dynamic_model("N,3"), NULL, PLX_INVALID_ARGUMENT, FILE_NAME, "input 'x'",
                 "dim 0", "'N'");
    /* A dimension with neither a value nor a name. */
    IMPORT_FAILS(dynamic_model("2,?"), NULL, PLX_INVALID_ARGUMENT, "input 'x'", "dim 1",
                 "no size");
    /* No shape at all. */
    IMPORT_FAILS(dynamic_model(NULL), NULL, PLX_INVALID_ARGUMENT, "input 'x'", "no shape");
}

Test(onnx_import, dim_param_with_shape_imports) {
    plx_onnx_input_shape shape = {.name = "x", .dims = {5, 3}, .rank = 2};
    plx_onnx_options o;
    plx_onnx_options_init(&o);
    o.shapes = &shape;
    o.shape_count = 1;
    plx_onnx_model *model = import_ok(dynamic_model("N,3"), &o);
    cr_assert(eq(sz, plx_onnx_model_input_count(model), 2));
    const plx_onnx_io *x = plx_onnx_model_input(model, 0);
    const plx_onnx_io *b = plx_onnx_model_input(model, 1);
    cr_assert(eq(str, (char *)x->name, "x"));
    cr_assert(eq(i32, x->binding_id, 0));
    EXPECT_DIMS(&x->info, "input x", 5, 3);
    cr_assert(eq(str, (char *)b->name, "b"));
    cr_assert(eq(i32, b->binding_id, 1));
    EXPECT_DIMS(&b->info, "input b", 3);
    EXPECT_DIMS(&plx_onnx_model_output(model, 0)->info, "output y", 5, 3);
    float xv[15], bv[3] = {1.0f, 2.0f, 3.0f}, y[15], want[15];
    fill_values(xv, 15, 10);
    for (int i = 0; i < 15; i++) {
        want[i] = xv[i] + bv[i % 3];
    }
    const void *ins[] = {xv, bv};
    void *outs[] = {y};
    run_once(model, ins, outs);
    expect_close(y, want, 15, 1e-6f);
    destroy_model(&model);

    /* A shape may be given for an input without one. */
    model = import_ok(dynamic_model(NULL), &o);
    EXPECT_DIMS(&plx_onnx_model_input(model, 0)->info, "input x", 5, 3);
    destroy_model(&model);
}

/* Data shapes (the shapes of what the caller will bind) fill only the
 * dims the model leaves open; one for another name or rank is ignored. */
Test(onnx_import, data_shapes_fill_open_dims) {
    plx_onnx_input_shape data[3] = {{.name = "x", .dims = {7, 3}, .rank = 2},
                                    {.name = "b", .dims = {9, 9}, .rank = 2},
                                    {.name = "zz_not_there", .dims = {1}, .rank = 1}};
    plx_onnx_options o;
    plx_onnx_options_init(&o);
    o.data_shapes = data;
    o.data_shape_count = 3;
    plx_onnx_model *model = import_ok(dynamic_model("N,3"), &o);
    EXPECT_DIMS(&plx_onnx_model_input(model, 0)->info, "input x", 7, 3);
    EXPECT_DIMS(&plx_onnx_model_input(model, 1)->info, "input b", 3);
    EXPECT_DIMS(&plx_onnx_model_output(model, 0)->info, "output y", 7, 3);
    destroy_model(&model);

    /* A size the model gives is kept: the caller's check finds the data's
     * [7,4] wrong, not the import. */
    data[0] = (plx_onnx_input_shape){.name = "x", .dims = {7, 4}, .rank = 2};
    model = import_ok(dynamic_model("N,3"), &o);
    EXPECT_DIMS(&plx_onnx_model_input(model, 0)->info, "input x", 7, 3);
    destroy_model(&model);

    /* `shapes` comes first. */
    plx_onnx_input_shape shape = {.name = "x", .dims = {2, 3}, .rank = 2};
    o.shapes = &shape;
    o.shape_count = 1;
    model = import_ok(dynamic_model("N,3"), &o);
    EXPECT_DIMS(&plx_onnx_model_input(model, 0)->info, "input x", 2, 3);
    destroy_model(&model);
    o.shapes = NULL;
    o.shape_count = 0;

    /* An input declared without a shape takes the data's. */
    data[0] = (plx_onnx_input_shape){.name = "x", .dims = {4, 3}, .rank = 2};
    model = import_ok(dynamic_model(NULL), &o);
    EXPECT_DIMS(&plx_onnx_model_input(model, 0)->info, "input x", 4, 3);
    destroy_model(&model);

    /* Another rank gives nothing: the open dim is still an error. */
    data[0] = (plx_onnx_input_shape){.name = "x", .dims = {21}, .rank = 1};
    IMPORT_FAILS(dynamic_model("N,3"), &o, PLX_INVALID_ARGUMENT, "input 'x'", "dim 0", "'N'");

    /* A data shape without a name is the caller's error. */
    data[0].name = NULL;
    IMPORT_FAILS(dynamic_model("N,3"), &o, PLX_INVALID_ARGUMENT, "data_shapes[0]");
}

Test(onnx_import, shape_for_unknown_input_fails) {
    plx_onnx_input_shape shapes[2] = {{.name = "x", .dims = {5, 3}, .rank = 2},
                                      {.name = "zz_not_there", .dims = {1}, .rank = 1}};
    plx_onnx_options o;
    plx_onnx_options_init(&o);
    o.shapes = shapes;
    o.shape_count = 2;
    IMPORT_FAILS(dynamic_model("N,3"), &o, PLX_INVALID_ARGUMENT, "'zz_not_there'",
                 "not an input");
}

Test(onnx_import, shape_contradicting_model_fails) {
    plx_onnx_input_shape shape = {.name = "x", .dims = {5, 4}, .rank = 2};
    plx_onnx_options o;
    plx_onnx_options_init(&o);
    o.shapes = &shape;
    o.shape_count = 1;
    IMPORT_FAILS(dynamic_model("N,3"), &o, PLX_INVALID_ARGUMENT, "input 'x'", "dim 1", "3",
                 "4");
    /* Another rank. */
    shape = (plx_onnx_input_shape){.name = "x", .dims = {15}, .rank = 1};
    IMPORT_FAILS(dynamic_model("N,3"), &o, PLX_INVALID_ARGUMENT, "input 'x'", "rank");
    /* A negative size. */
    shape = (plx_onnx_input_shape){.name = "x", .dims = {-1, 3}, .rank = 2};
    IMPORT_FAILS(dynamic_model("N,3"), &o, PLX_INVALID_ARGUMENT, "input 'x'", "dim 0");
}

/* ------------------------------------------------------------------------ */
/* Unsupported nodes                                                          */
/* ------------------------------------------------------------------------ */

Test(onnx_import, every_unsupported_node_is_reported) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,2");
    ob_output(g, "y1", OB_FLOAT, NULL);
    ob_output(g, "y2", OB_FLOAT, NULL);
    ob_output(g, "y3", OB_INT64, NULL);
    ob_output(g, "y4", OB_FLOAT, NULL);
    ob_node_add(g, "RandomUniformLike", "rnd", "x", "e");
    ob_node_add(g, "StringNormalizer", "norm", "x", "d");
    ob_node_add(g, "NonZero", "nz", "x", "y3");
    /* Users of unsupported nodes' outputs are not reported themselves. */
    ob_node_add(g, "Relu", "relu_of_random", "e", "y1");
    ob_node_add(g, "Neg", "neg_of_det", "d", "dn");
    ob_node_add(g, "Abs", "abs_of_neg", "dn", "y2");
    ob_node_add(g, "Relu", "fine", "x", "y4");
    plx_status st = import_fail_(m, NULL, PLX_UNSUPPORTED,
                                 NEEDLES(FILE_NAME, "3 unsupported nodes",
                                         "node 'rnd' (RandomUniformLike, opset 13)",
                                         "node 'norm' (StringNormalizer, opset 13)",
                                         "node 'nz' (NonZero, opset 13)"));
    const char *msg = plx_status_get_message(st);
    cr_assert(zero(ptr, strstr(msg, "relu_of_random")), "%s", msg);
    cr_assert(zero(ptr, strstr(msg, "neg_of_det")), "%s", msg);
    cr_assert(zero(ptr, strstr(msg, "abs_of_neg")), "%s", msg);
    cr_assert(zero(ptr, strstr(msg, "'fine'")), "%s", msg);
    free_status(st);
}

Test(onnx_import, custom_domain_node_is_reported) {
    ob_model *m = new_model(IR, OPSET);
    ob_model_opset(m, "com.example", 1);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "4");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Relu", "relu", "x", "r");
    ob_node_domain(ob_node_add(g, "Fancy", "fancy", "r", "f"), "com.example");
    ob_node_add(g, "Relu", "after", "f", "y");
    plx_status st = import_fail_(m, NULL, PLX_UNSUPPORTED,
                                 NEEDLES("1 unsupported node", "'fancy'", "com.example.Fancy",
                                         "domain 'com.example'"));
    cr_assert(zero(ptr, strstr(plx_status_get_message(st), "'after'")));
    free_status(st);
}

Test(onnx_import, unnamed_unsupported_node_gets_a_name) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,2");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "StringNormalizer", NULL, "x", "y");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "1 unsupported node", "StringNormalizer_0",
                 "(StringNormalizer, opset 13)");
}

Test(onnx_import, operator_newer_than_opset_is_unsupported) {
    ob_model *m = new_model(IR, 11);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,2");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Gelu", "gelu", "x", "y"); /* opset 20 */
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "'gelu' (Gelu, opset 11)", "opset 11");
}

/* An initializer of a type Plexus lacks (COMPLEX64) makes its users
 * unsupported: the import must say so (PLX_UNSUPPORTED naming the
 * initializer or the node that reads it). */
Test(onnx_import, initializer_of_unsupported_type_is_reported) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2");
    ob_output(g, "y", OB_FLOAT, NULL);
    Onnx__TensorProto *t = ob_tensor(m, "cplx", OB_COMPLEX64, OB_DIMS(2));
    float c[4] = {1.0f, 0.0f, 2.0f, 0.0f};
    ob_tensor_raw(m, t, c, sizeof c);
    ob_initializer(g, t);
    ob_attr_i(ob_node_add(g, "Cast", "to_float", "cplx", "f"), "to", OB_FLOAT);
    ob_node_add(g, "Add", "add", "x,f", "y");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "'cplx'", "COMPLEX64");
}

/* ------------------------------------------------------------------------ */
/* Malformed models                                                           */
/* ------------------------------------------------------------------------ */

/* A small valid model: x [2,3] + w -> Relu -> y. */
static ob_model *small_model(void) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,3");
    ob_output(g, "y", OB_FLOAT, "2,3");
    ob_init_f32(g, "w", OB_DIMS(2, 3), (const float[]){1, 2, 3, 4, 5, 6}, true);
    ob_node_add(g, "Add", "add", "x,w", "s");
    ob_node_add(g, "Relu", "relu", "s", "y");
    return m;
}

Test(onnx_import, small_model_imports) {
    plx_onnx_model *model = import_ok(small_model(), NULL);
    float x[6] = {-5, -5, -5, 0, 0, 0}, y[6], want[6] = {0, 0, 0, 4, 5, 6};
    const void *ins[] = {x};
    void *outs[] = {y};
    run_once(model, ins, outs);
    expect_close(y, want, 6, 0.0f);
    destroy_model(&model);
}

/* Every proper prefix of a valid model is refused, none crashes. */
Test(onnx_import, every_truncation_fails) {
    size_t size;
    ob_model *m = small_model();
    uint8_t *full = ob_pack(m, &size);
    live.buf = full;
    free_model(m);
    cr_assert(gt(sz, size, 50));
    for (size_t len = 0; len < size; len++) {
        /* A copy of exactly len bytes, so that reading past it shows. */
        uint8_t *cut = track(malloc(len ? len : 1));
        memcpy(cut, full, len);
        plx_onnx_model *model = NULL;
        plx_status st = plx_onnx_import_memory(cut, len, FILE_NAME, NULL, NULL, &model);
        live.st = st;
        live.model = model;
        cr_assert(not(zero(ptr, st)), "the first %zu of %zu bytes imported", len, size);
        const char *msg = plx_status_get_message(st);
        int code = (int)plx_status_get_code(st);
        cr_assert(eq(int, code, (int)PLX_INVALID_ARGUMENT), "%zu bytes: %s: %s", len,
                  plx_status_code_name(plx_status_get_code(st)), msg);
        cr_assert(not(zero(ptr, strstr(msg, FILE_NAME))), "%zu bytes: '%s'", len, msg);
        free_status(st);
        free(cut);
        live.mem_count--;
    }
    plx_onnx_model *model = NULL;
    plx_status st = plx_onnx_import_memory(full, size, FILE_NAME, NULL, NULL, &model);
    live.st = st;
    cr_assert(zero(ptr, st), "the whole model: %s", plx_status_get_message(st));
    plx_onnx_model_destroy(&model);
    free(full);
    live.buf = NULL;
}

/* Random bytes, and a valid model with random bytes flipped: a status or a
 * model, never a crash; a failure always has a message. */
Test(onnx_import, random_bytes_never_crash) {
    size_t size;
    ob_model *m = small_model();
    uint8_t *valid = ob_pack(m, &size);
    live.buf = valid;
    free_model(m);
    uint32_t s = 12345;
    uint8_t *buf = track(malloc(size > 600 ? size : 600));
    int rounds = getenv("PLEXUS_TEST_VALGRIND") ? 60 : 600;
    for (int round = 0; round < rounds; round++) {
        size_t len;
        if (round % 2 == 0) {
            s = s * 1664525u + 1013904223u;
            len = 1 + (s >> 8) % 600;
            for (size_t i = 0; i < len; i++) {
                s = s * 1664525u + 1013904223u;
                buf[i] = (uint8_t)(s >> 24);
            }
        } else {
            len = size;
            memcpy(buf, valid, size);
            for (int k = 0; k < 1 + round % 4; k++) {
                s = s * 1664525u + 1013904223u;
                size_t at = (s >> 8) % size;
                s = s * 1664525u + 1013904223u;
                buf[at] = (uint8_t)(s >> 24);
            }
        }
        plx_onnx_model *model = NULL;
        plx_status st = plx_onnx_import_memory(buf, len, FILE_NAME, NULL, NULL, &model);
        live.st = st;
        live.model = model;
        if (st) {
            const char *msg = plx_status_get_message(st);
            cr_assert(not(zero(ptr, (void *)msg)));
            cr_assert(gt(sz, strlen(msg), 0), "round %d: empty message", round);
            cr_assert(zero(ptr, model));
            free_status(st);
        } else {
            destroy_model(&model);
        }
    }
    free(valid);
    live.buf = NULL;
}

Test(onnx_import, wrong_wire_types_fail) {
    /* ir_version 7, then field 7 (graph) as a varint instead of a message. */
    static const uint8_t graph_as_varint[] = {0x08, 0x07, 0x38, 0x01};
    plx_onnx_model *model = NULL;
    CALL_FAILS(plx_onnx_import_memory(graph_as_varint, sizeof graph_as_varint, FILE_NAME, NULL,
                                      NULL, &model),
               PLX_INVALID_ARGUMENT, FILE_NAME);
    /* ir_version (field 1) as a length-delimited field. */
    static const uint8_t ir_as_bytes[] = {0x0a, 0x01, 0x07};
    CALL_FAILS(plx_onnx_import_memory(ir_as_bytes, sizeof ir_as_bytes, FILE_NAME, NULL, NULL,
                                      &model),
               PLX_INVALID_ARGUMENT, FILE_NAME);
    /* A length running past the end. */
    static const uint8_t long_length[] = {0x08, 0x07, 0x3a, 0x7f, 0x0a};
    CALL_FAILS(plx_onnx_import_memory(long_length, sizeof long_length, FILE_NAME, NULL, NULL,
                                      &model),
               PLX_INVALID_ARGUMENT, FILE_NAME, "protobuf");
    cr_assert(zero(ptr, model));
}

Test(onnx_import, empty_input_has_no_graph) {
    plx_onnx_model *model = NULL;
    /* 0 bytes are a valid empty ModelProto: without a graph. */
    CALL_FAILS(plx_onnx_import_memory("", 0, FILE_NAME, NULL, NULL, &model),
               PLX_INVALID_ARGUMENT, FILE_NAME, "no graph");
    CALL_FAILS(plx_onnx_import_memory(NULL, 0, FILE_NAME, NULL, NULL, &model),
               PLX_INVALID_ARGUMENT, FILE_NAME, "no graph");
    cr_assert(zero(ptr, model));
    /* An empty file too. */
    char path[PATH_MAX];
    join(path, make_scratch(), "empty.onnx");
    write_file(path, "", 0);
    CALL_FAILS(plx_onnx_import_file(path, NULL, &model), PLX_INVALID_ARGUMENT, path,
               "no graph");
    remove_scratch();
}

Test(onnx_import, model_without_graph_fails) {
    ob_model *m = new_model(IR, OPSET);
    ob_proto(m)->graph = NULL;
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, FILE_NAME, "no graph");
}

Test(onnx_import, undefined_value_fails) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Relu", "relu", "x", "r");
    ob_node_add(g, "MatMul", "mm", "r,missing_weight", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, FILE_NAME, "node 'mm'", "'missing_weight'");
}

Test(onnx_import, undefined_graph_output_fails) {
    ob_model *m = small_model();
    ob_output(ob_main(m), "nowhere", OB_FLOAT, NULL);
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, FILE_NAME, "'nowhere'");
}

Test(onnx_import, cycle_fails) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Add", "loop_a", "x,b", "a");
    ob_node_add(g, "Relu", "loop_b", "a", "b");
    ob_node_add(g, "Relu", "out", "a", "y");
    plx_status st = import_fail_(m, NULL, PLX_INVALID_ARGUMENT, NEEDLES(FILE_NAME, "cycle"));
    const char *msg = plx_status_get_message(st);
    cr_assert(strstr(msg, "'loop_a'") || strstr(msg, "'loop_b'"), "'%s' names no node of the cycle",
              msg);
    free_status(st);
}

Test(onnx_import, self_loop_fails) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Add", "selfish", "x,y", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "cycle", "'selfish'");
}

/* A model whose one initializer `t` (added by the caller) feeds y = x + t. */
static ob_model *init_model(ob_model *m, const char *x_shape) {
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, x_shape);
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Add", "add", "x,t", "y");
    return m;
}

Test(onnx_import, raw_data_length_mismatch_fails) {
    ob_model *m = new_model(IR, OPSET);
    Onnx__TensorProto *t = ob_tensor(m, "t", OB_FLOAT, OB_DIMS(2, 3));
    float v[5] = {0};
    ob_tensor_raw(m, t, v, 20);
    ob_initializer(ob_main(m), t);
    IMPORT_FAILS(init_model(m, "2,3"), NULL, PLX_INVALID_ARGUMENT, FILE_NAME,
                 "initializer 't'", "raw_data has 20 bytes", "24");
}

Test(onnx_import, float_data_count_mismatch_fails) {
    ob_model *m = new_model(IR, OPSET);
    Onnx__TensorProto *t = ob_tensor(m, "t", OB_FLOAT, OB_DIMS(2, 3));
    ob_tensor_floats(m, t, (const float[]){1, 2, 3, 4, 5, 6, 7}, 7);
    ob_initializer(ob_main(m), t);
    IMPORT_FAILS(init_model(m, "2,3"), NULL, PLX_INVALID_ARGUMENT, "initializer 't'",
                 "float_data has 7 values", "6");
    /* int64_data too. */
    m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,3");
    ob_output(g, "y", OB_FLOAT, NULL);
    Onnx__TensorProto *s = ob_tensor(m, "shape", OB_INT64, OB_DIMS(2));
    ob_tensor_int64s(m, s, (const int64_t[]){3}, 1);
    ob_initializer(g, s);
    ob_node_add(g, "Reshape", "reshape", "x,shape", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "initializer 'shape'", "int64_data has 1 value");
}

Test(onnx_import, initializer_without_data_type_fails) {
    ob_model *m = new_model(IR, OPSET);
    Onnx__TensorProto *t = ob_tensor(m, "t", OB_FLOAT, OB_DIMS(1));
    t->has_data_type = 0;
    ob_tensor_floats(m, t, (const float[]){1}, 1);
    ob_initializer(ob_main(m), t);
    IMPORT_FAILS(init_model(m, "1"), NULL, PLX_INVALID_ARGUMENT, "initializer 't'",
                 "UNDEFINED");
}

Test(onnx_import, overflowing_dims_fail) {
    ob_model *m = new_model(IR, OPSET);
    Onnx__TensorProto *t = ob_tensor(m, "huge", OB_FLOAT, OB_DIMS(1LL << 40, 1LL << 40));
    ob_tensor_raw(m, t, "", 0);
    ob_initializer(ob_main(m), t);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Add", "add", "x,huge", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "initializer 'huge'", "overflow");
    /* A graph input too. */
    m = new_model(IR, OPSET);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1099511627776,1099511627776");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Relu", "relu", "x", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "input 'x'", "overflow");
}

/* A large shape whose data is missing is refused for its data, without
 * first allocating the shape's size (here 64 GiB, the most an initializer
 * may hold: a few bytes of model must not make the importer allocate that
 * much). */
Test(onnx_import, large_shape_with_short_data_fails_cheaply) {
    ob_model *m = new_model(IR, OPSET);
    Onnx__TensorProto *t = ob_tensor(m, "t", OB_FLOAT, OB_DIMS(1LL << 34));
    ob_tensor_raw(m, t, "abcd", 4);
    ob_initializer(ob_main(m), t);
    IMPORT_FAILS(init_model(m, "1"), NULL, PLX_INVALID_ARGUMENT, "initializer 't'",
                 "raw_data has 4 bytes");
    m = new_model(IR, OPSET);
    t = ob_tensor(m, "t", OB_FLOAT, OB_DIMS(1LL << 34));
    ob_tensor_floats(m, t, (const float[]){1, 2}, 2);
    ob_initializer(ob_main(m), t);
    IMPORT_FAILS(init_model(m, "1"), NULL, PLX_INVALID_ARGUMENT, "initializer 't'",
                 "float_data has 2 values");
    /* Past the limit: refused whatever the data. */
    m = new_model(IR, OPSET);
    t = ob_tensor(m, "t", OB_FLOAT, OB_DIMS(1LL << 38));
    ob_tensor_raw(m, t, "abcd", 4);
    ob_initializer(ob_main(m), t);
    IMPORT_FAILS(init_model(m, "1"), NULL, PLX_INVALID_ARGUMENT, "initializer 't'");
}

Test(onnx_import, negative_dim_fails) {
    ob_model *m = new_model(IR, OPSET);
    Onnx__TensorProto *t = ob_tensor(m, "t", OB_FLOAT, OB_DIMS(2, -3));
    ob_tensor_raw(m, t, "", 0);
    ob_initializer(ob_main(m), t);
    IMPORT_FAILS(init_model(m, "1"), NULL, PLX_INVALID_ARGUMENT, "initializer 't'",
                 "dims[1] = -3");
    /* A graph input's negative dim (-1, as some exporters write) is an
     * open dim, sized as any other. */
    IMPORT_FAILS(dynamic_model("-1,3"), NULL, PLX_INVALID_ARGUMENT, "input 'x'", "dim 0",
                 "no size");
    plx_onnx_input_shape data = {.name = "x", .dims = {6, 3}, .rank = 2};
    plx_onnx_options o;
    plx_onnx_options_init(&o);
    o.data_shapes = &data;
    o.data_shape_count = 1;
    plx_onnx_model *model = import_ok(dynamic_model("-2,3"), &o);
    EXPECT_DIMS(&plx_onnx_model_input(model, 0)->info, "input x", 6, 3);
    destroy_model(&model);
}

Test(onnx_import, rank_over_eight_is_refused) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,1,1,1,1,1,1,1,1");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Relu", "relu", "x", "y");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "input 'x'", "rank 9");
}

/* An initializer of rank 9 that a node reads: the import must fail as
 * unsupported, naming the initializer (or its reader), not an internal
 * error. */
Test(onnx_import, initializer_rank_over_eight_is_reported) {
    ob_model *m = new_model(IR, OPSET);
    Onnx__TensorProto *t = ob_tensor(m, "t", OB_FLOAT, OB_DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1));
    ob_tensor_floats(m, t, (const float[]){1}, 1);
    ob_initializer(ob_main(m), t);
    IMPORT_FAILS(init_model(m, "1"), NULL, PLX_UNSUPPORTED, "'t'", "rank 9");
}

Test(onnx_import, inconsistent_shapes_fail) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "a", OB_FLOAT, "2,3");
    ob_input(g, "b", OB_FLOAT, "4,5");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Add", "bad_add", "a,b", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, FILE_NAME, "node 'bad_add'", "(Add)");
    /* The same with both operands constant (folding must not hide it). */
    m = new_model(IR, OPSET);
    g = ob_main(m);
    float z[20] = {0};
    ob_init_f32(g, "a", OB_DIMS(2, 3), z, true);
    ob_init_f32(g, "b", OB_DIMS(4, 5), z, false);
    ob_input(g, "x", OB_FLOAT, "1");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Add", "bad_const_add", "a,b", "s");
    ob_node_add(g, "Add", "add", "x,s", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "node 'bad_const_add'");
}

Test(onnx_import, two_producers_of_one_value_fail) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Relu", "first", "x", "dup");
    ob_node_add(g, "Neg", "second", "x", "dup");
    ob_node_add(g, "Abs", "abs", "dup", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, FILE_NAME, "'dup'", "two nodes");
}

Test(onnx_import, old_ir_version_is_unsupported) {
    ob_model *m = small_model();
    ob_proto(m)->ir_version = 2;
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, FILE_NAME, "IR version 2");
    m = small_model();
    ob_proto(m)->has_ir_version = 0;
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, FILE_NAME, "IR version");
}

Test(onnx_import, old_opset_is_unsupported) {
    ob_model *m = small_model();
    ob_proto(m)->opset_import[0]->version = 6;
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, FILE_NAME, "opset 6");
    /* The "ai.onnx" spelling of the default domain counts too. */
    m = new_model(IR, -1);
    ob_model_opset(m, "ai.onnx", 6);
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "opset 6");
}

Test(onnx_import, newer_ir_version_and_opset_are_unsupported) {
    ob_model *m = small_model();
    ob_proto(m)->ir_version = 11;
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, FILE_NAME, "IR version 11", "newer");
    m = small_model();
    ob_proto(m)->opset_import[0]->version = 23;
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, FILE_NAME, "opset 23", "newer", "7 to 22");
    m = new_model(IR, -1);
    ob_model_opset(m, "ai.onnx", 99);
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "opset 99");
    /* The newest known opset and IR version import. */
    m = small_model();
    ob_proto(m)->ir_version = 10;
    ob_proto(m)->opset_import[0]->version = 22;
    plx_onnx_model *model = import_ok(m, NULL);
    destroy_model(&model);
}

Test(onnx_import, graph_without_outputs_fails) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_node_add(g, "Relu", "relu", "x", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, FILE_NAME, "no outputs");
}

/* Int attributes that a descriptor holds in 32 bits are range-checked, not
 * truncated: a Concat axis of INT64_MIN or 2^32 + 1 read as 0 or 1 and the
 * model ran. */
Test(onnx_import, int_attributes_out_of_range_are_refused) {
    const int64_t bad[] = {INT64_MIN, ((int64_t)1 << 32) + 1, (int64_t)INT32_MAX + 1};
    const char *want[] = {"attribute 'axis' = -9223372036854775808 does not fit in 32 bits",
                          "attribute 'axis' = 4294967297 does not fit in 32 bits",
                          "attribute 'axis' = 2147483648 does not fit in 32 bits"};
    for (size_t i = 0; i < 3; i++) {
        ob_model *m = new_model(IR, OPSET);
        ob_graph *g = ob_main(m);
        ob_input(g, "a", OB_FLOAT, "2,3");
        ob_input(g, "b", OB_FLOAT, "2,3");
        ob_output(g, "y", OB_FLOAT, "4,3");
        ob_attr_i(ob_node_add(g, "Concat", "concat", "a,b", "y"), "axis", bad[i]);
        IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, FILE_NAME, "node 'concat' (Concat)", want[i]);
    }
    /* the last int32 axis is in range, and then out of the rank's */
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "a", OB_FLOAT, "2,3");
    ob_output(g, "y", OB_FLOAT, "2,3");
    ob_attr_i(ob_node_add(g, "Softmax", "softmax", "a", "y"), "axis", INT32_MAX);
    plx_onnx_model *model = NULL;
    plx_status st = import_mem(m, NULL, &model);
    live.model = model;
    free_model(m);
    cr_assert(not(zero(ptr, st)));
    cr_assert(zero(ptr, strstr(plx_status_get_message(st), "32 bits")), "%s",
              plx_status_get_message(st));
    cr_assert(not(zero(ptr, strstr(plx_status_get_message(st), "2147483647"))), "%s",
              plx_status_get_message(st));
    free_status(st);
}

/* NaN goes through a fused activation as through an unfused one (ONNX's
 * Relu is max(x, 0), which keeps NaN): a pointwise conv + Relu, a
 * depthwise conv + Clip(0, 6) and a Gemm + Relu on cpu_ref, each fused by
 * the optimiser, against the input's NaN, infinities and negatives. */
Test(onnx_import, fused_activations_keep_nan) {
    /* weights that mix no two inputs (NaN * 0 is NaN) */
    static const float ones[2] = {1, 1}, pm[2] = {1, -1}, zero2[2] = {0, 0}, six = 6.0f;
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,1,2,4");
    ob_input(g, "xd", OB_FLOAT, "1,2,2,2");
    ob_input(g, "v", OB_FLOAT, "3,1");
    ob_output(g, "y1", OB_FLOAT, "1,2,2,4");
    ob_output(g, "y2", OB_FLOAT, "1,2,2,2");
    ob_output(g, "y3", OB_FLOAT, "3,2");
    ob_init_f32(g, "wp", OB_DIMS(2, 1, 1, 1), ones, false);
    ob_init_f32(g, "wd", OB_DIMS(2, 1, 1, 1), ones, false);
    ob_init_f32(g, "wg", OB_DIMS(1, 2), pm, false);
    ob_init_f32(g, "bg", OB_DIMS(2), zero2, false);
    ob_init_f32(g, "lo", NULL, 0, zero2, false);
    ob_init_f32(g, "hi", NULL, 0, &six, false);
    ob_node_add(g, "Conv", "pw", "x,wp", "c1");
    ob_node_add(g, "Relu", "relu1", "c1", "y1");
    ob_attr_i(ob_node_add(g, "Conv", "dw", "xd,wd", "c2"), "group", 2);
    ob_node_add(g, "Clip", "clip", "c2,lo,hi", "y2");
    ob_node_add(g, "Gemm", "fc", "v,wg,bg", "c3");
    ob_node_add(g, "Relu", "relu3", "c3", "y3");
    plx_onnx_model *model = import_ok(m, NULL);
    const float x[8] = {NAN, -1.0f, INFINITY, -INFINITY, 2.0f, NAN, -0.5f, 7.0f};
    const float v[3] = {NAN, -3.0f, INFINITY};
    float y1[16], y2[8], y3[6];
    run_once(model, (const void *const[]){x, x, v}, (void *const[]){y1, y2, y3});
    for (size_t i = 0; i < 16; i++) {
        float xi = x[i % 8], relu = isnan(xi) ? xi : xi < 0 ? 0.0f : xi;
        cr_assert(isnan(relu) ? isnan(y1[i]) : y1[i] == relu, "relu(%g) = %g", (double)xi,
                  (double)y1[i]);
    }
    for (size_t i = 0; i < 8; i++) {
        float clip = isnan(x[i]) ? x[i] : x[i] < 0 ? 0.0f : x[i] > 6 ? 6.0f : x[i];
        cr_assert(isnan(clip) ? isnan(y2[i]) : y2[i] == clip, "clip(%g) = %g", (double)x[i],
                  (double)y2[i]);
    }
    /* rows v * [1, -1], then relu */
    cr_assert(isnan(y3[0]) && isnan(y3[1]), "%g %g", (double)y3[0], (double)y3[1]);
    cr_assert(y3[2] == 0.0f && y3[3] == 3.0f, "%g %g", (double)y3[2], (double)y3[3]);
    cr_assert(y3[4] == INFINITY && y3[5] == 0.0f, "%g %g", (double)y3[4], (double)y3[5]);
    destroy_model(&model);
}

/* A model of one `op` node reading x [xdims] and W [2, 1, 3, 3] (input
 * w_index; QLinearConv's other inputs are scalar initializers), with
 * kernel_shape `kernel` (count values). */
static ob_model *kernel_shape_model(const char *op, const char *xdims, size_t w_index,
                                    const int64_t *kernel, size_t count) {
    static const float w[2 * 1 * 3 * 3] = {0};
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    bool quant = w_index != 1;
    ob_input(g, "x", quant ? OB_UINT8 : OB_FLOAT, xdims);
    ob_output(g, "y", quant ? OB_UINT8 : OB_FLOAT, NULL);
    if (quant) {
        static const uint8_t wq[18] = {0}, zero = 0;
        static const float one = 1.0f;
        Onnx__TensorProto *t = ob_tensor(m, "w", OB_UINT8, OB_DIMS(2, 1, 3, 3));
        ob_tensor_raw(m, t, wq, sizeof wq);
        ob_initializer(g, t);
        ob_init_f32(g, "s", NULL, 0, &one, false);
        t = ob_tensor(m, "z", OB_UINT8, NULL, 0);
        ob_tensor_raw(m, t, &zero, 1);
        ob_initializer(g, t);
    } else {
        ob_init_f32(g, "w", OB_DIMS(2, 1, 3, 3), w, false);
    }
    ob_attr_ints(ob_node_add(g, op, "conv", quant ? "x,s,z,w,s,z,s,z" : "x,w", "y"),
                 "kernel_shape", kernel, count);
    return m;
}

/* Conv's kernel_shape must be W's spatial dims, for Conv, ConvTranspose and
 * QLinearConv (whose W is input 3). */
Test(onnx_import, kernel_shape_must_match_the_weights) {
    IMPORT_FAILS(kernel_shape_model("Conv", "1,1,6,6", 1, OB_DIMS(3, 5)), NULL,
                 PLX_INVALID_ARGUMENT, "node 'conv'", "kernel_shape[1] = 5 is not W's dim 3 (3)");
    IMPORT_FAILS(kernel_shape_model("ConvTranspose", "1,2,4,4", 1, OB_DIMS(2, 3)), NULL,
                 PLX_INVALID_ARGUMENT, "node 'conv'", "kernel_shape[0] = 2 is not W's dim 2 (3)");
    IMPORT_FAILS(kernel_shape_model("QLinearConv", "1,1,6,6", 3, OB_DIMS(3, 4)), NULL,
                 PLX_INVALID_ARGUMENT, "node 'conv'", "kernel_shape[1] = 4 is not W's dim 3 (3)");
    IMPORT_FAILS(kernel_shape_model("Conv", "1,1,6,6", 1, OB_DIMS(3, 3, 3)), NULL,
                 PLX_INVALID_ARGUMENT, "attribute 'kernel_shape' has 3 values; it needs 2");
    /* the weights' own kernel_shape imports */
    plx_onnx_model *model = import_ok(kernel_shape_model("QLinearConv", "1,1,6,6", 3,
                                                         OB_DIMS(3, 3)), NULL);
    destroy_model(&model);
}

/* ------------------------------------------------------------------------ */
/* Attributes against the tensors they describe                              */
/* ------------------------------------------------------------------------ */

/* HV(1, 2): the values and count of an ints attribute or int64 constant;
 * HI(3): an int attribute. */
#define HV(...) {__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)
#define HI(v) {(v)}, 0

typedef struct hostile_ints {
    const char *name; /* NULL: none */
    int64_t v[8];
    size_t n;         /* 0: an int attribute of v[0] */
} hostile_ints;

/* One node named "n" of a hostile model (hostile_model) and what its
 * refusal must say besides "node 'n' (<op>)". */
typedef struct hostile_case {
    const char *op;
    int64_t opset;        /* 0: OPSET */
    const char *x;        /* graph input x, float32 of this shape */
    const char *i;        /* graph input i, int64 of this shape (NULL: none) */
    const char *f[4];     /* initializers f0..f3, float32 zeros of these shapes */
    struct {
        int64_t v[8];
        size_t n;         /* 0: none */
    } k[4];               /* initializers k0..k3, int64 [n] */
    const char *inputs;   /* the node's inputs */
    size_t outputs;       /* 0: 1 */
    hostile_ints attr[2];
    const char *s_name, *s_value; /* a string attribute */
    const char *want;
} hostile_case;

/* "2,3" -> dims and rank (at most 8 dims; "" is rank 0). */
static size_t parse_dims(const char *s, int64_t *dims) {
    size_t r = 0;
    while (*s && r < 8) {
        char *end;
        dims[r++] = strtoll(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
    }
    return r;
}

static ob_model *hostile_model(const hostile_case *t) {
    static const float zeros[128] = {0};
    ob_model *m = new_model(IR, t->opset ? t->opset : OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, t->x);
    if (t->i) {
        ob_input(g, "i", OB_INT64, t->i);
    }
    for (size_t j = 0; j < 4; j++) {
        char name[4] = {'f', (char)('0' + j), 0};
        int64_t dims[8];
        if (t->f[j]) {
            size_t rank = parse_dims(t->f[j], dims), count = 1;
            for (size_t d = 0; d < rank; d++) {
                count *= (size_t)dims[d];
            }
            cr_assert(le(sz, count, COUNT(zeros)), "f%zu [%s] is too large", j, t->f[j]);
            ob_init_f32(g, name, dims, rank, zeros, false);
        }
        if (t->k[j].n) {
            name[0] = 'k';
            ob_init_i64(g, name, OB_DIMS((int64_t)t->k[j].n), t->k[j].v, false);
        }
    }
    ob_node *n = ob_node_add(g, t->op, "n", t->inputs, t->outputs > 1 ? "y0,y1" : "y0");
    ob_output(g, "y0", OB_FLOAT, NULL);
    if (t->outputs > 1) {
        ob_output(g, "y1", OB_FLOAT, NULL);
    }
    for (size_t j = 0; j < 2 && t->attr[j].name; j++) {
        if (t->attr[j].n) {
            ob_attr_ints(n, t->attr[j].name, t->attr[j].v, t->attr[j].n);
        } else {
            ob_attr_i(n, t->attr[j].name, t->attr[j].v[0]);
        }
    }
    if (t->s_name) {
        ob_attr_s(n, t->s_name, t->s_value);
    }
    return m;
}

#define CONV_2D .x = "1,1,6,6", .f = {"2,1,3,3"}, .inputs = "x,f0"
#define CONVT_2D .x = "1,2,4,4", .f = {"2,1,3,3"}, .inputs = "x,f0"
#define POOL_2D .x = "1,1,6,6", .inputs = "x"
#define UNPOOL_2D .x = "1,1,2,2", .i = "1,1,2,2"
#define COL2IM .opset = 18, .x = "1,4,9"
#define DEFORM .opset = 19, .x = "1,1,4,4", .f = {"1,1,2,2", "1,8,3,3"}, .inputs = "x,f0,f1"

/* A malformed model is refused at import naming the node and the attribute
 * (or the constant input acting as one) that contradicts its tensors;
 * docs/onnx-import.md lists the checks. */
static const hostile_case hostile_cases[] = {
    /* Conv: one value per spatial dim, two for pads; strides, dilations >=
     * 1; pads >= 0; group dividing the channels and matching W */
    {"Conv", CONV_2D, .attr = {{"pads", HV(1, 1, 1)}},
     .want = "attribute 'pads' has 3 values; it needs 4 (two per spatial dim of X)"},
    {"Conv", CONV_2D, .attr = {{"pads", HV(1, 1, 1, 1, 1, 1, 1)}},
     .want = "attribute 'pads' has 7 values; it needs 4"},
    {"Conv", CONV_2D, .attr = {{"strides", HV(1)}},
     .want = "attribute 'strides' has 1 values; it needs 2 (one per spatial dim of X)"},
    {"Conv", CONV_2D, .attr = {{"dilations", HV(1, 1, 1)}},
     .want = "attribute 'dilations' has 3 values; it needs 2"},
    {"Conv", CONV_2D, .attr = {{"strides", HV(0, 1)}}, .want = "strides[0] = 0 must be >= 1"},
    {"Conv", CONV_2D, .attr = {{"dilations", HV(1, 0)}}, .want = "dilations[1] = 0 must be >= 1"},
    {"Conv", CONV_2D, .attr = {{"pads", HV(-1, 0, 0, 0)}},
     .want = "pads_begin[0] = -1 must be >= 0"},
    {"Conv", CONV_2D, .attr = {{"group", HI(0)}}, .want = "group 0 must be >= 1"},
    {"Conv", CONV_2D, .attr = {{"group", HI(2)}}, .want = "not divisible by group 2"},
    {"Conv", CONV_2D, .attr = {{"group", HI((int64_t)1 << 33)}},
     .want = "not divisible by group 8589934592"},
    {"Conv", .x = "1,4,6,6", .f = {"2,4,3,3"}, .inputs = "x,f0", .attr = {{"group", HI(2)}},
     .want = "W has 4 input channels per group, X has 4 channels and group 2"},
    {"Conv", .x = "1,2,6,6", .f = {"3,1,3,3"}, .inputs = "x,f0", .attr = {{"group", HI(2)}},
     .want = "3 output channels, not divisible by group 2"},
    {"Conv", CONV_2D, .attr = {{"kernel_shape", HV(0, 3)}},
     .want = "kernel_shape[0] = 0 is not W's dim 2 (3)"},
    /* ConvTranspose: output_padding and output_shape too */
    {"ConvTranspose", CONVT_2D, .attr = {{"output_padding", HV(0, 0, 0)}},
     .want = "attribute 'output_padding' has 3 values; it needs 2"},
    {"ConvTranspose", CONVT_2D, .attr = {{"output_padding", HV(1)}},
     .want = "attribute 'output_padding' has 1 values; it needs 2"},
    {"ConvTranspose", CONVT_2D, .attr = {{"output_padding", HV(-1, 0)}},
     .want = "output_padding[0] = -1 must be >= 0"},
    {"ConvTranspose", CONVT_2D, .attr = {{"output_shape", HV(5, 5, 5)}},
     .want = "attribute 'output_shape' has 3 values"},
    {"ConvTranspose", CONVT_2D, .attr = {{"strides", HV(1, 0)}},
     .want = "strides[1] = 0 must be >= 1"},
    {"ConvTranspose", CONVT_2D, .attr = {{"group", HI(3)}}, .want = "not divisible by group 3"},
    {"ConvTranspose", CONVT_2D, .attr = {{"pads", HV(0, 0)}},
     .want = "attribute 'pads' has 2 values; it needs 4"},
    /* the pools */
    {"MaxPool", POOL_2D, .want = "attribute 'kernel_shape' is required"},
    {"MaxPool", POOL_2D, .attr = {{"kernel_shape", HV(0, 2)}}, .want = "kernel[0] = 0 must be >= 1"},
    {"MaxPool", POOL_2D, .attr = {{"kernel_shape", HV(2, 2, 2)}},
     .want = "attribute 'kernel_shape' has 3 values; it needs 2"},
    {"MaxPool", POOL_2D, .attr = {{"kernel_shape", HV(2, 2)}, {"pads", HV(0, 0)}},
     .want = "attribute 'pads' has 2 values; it needs 4"},
    {"AveragePool", POOL_2D, .attr = {{"kernel_shape", HV(2, 2)}, {"strides", HV(0, 1)}},
     .want = "strides[0] = 0 must be >= 1"},
    {"AveragePool", POOL_2D, .attr = {{"kernel_shape", HV(2, 2)}, {"pads", HV(2, 0, 2, 0)}},
     .want = "pads 2 + 2 along spatial dim 0 must be smaller than the dilated kernel 2"},
    {"LpPool", POOL_2D, .attr = {{"kernel_shape", HV(2, 2)}, {"p", HI(0)}},
     .want = "p = 0 must be at least 1"},
    {"MaxUnpool", UNPOOL_2D, .inputs = "x,i", .want = "attribute 'kernel_shape' is required"},
    {"MaxUnpool", UNPOOL_2D, .inputs = "x,i", .attr = {{"kernel_shape", HV(2)}},
     .want = "attribute 'kernel_shape' has 1 values; it needs 2"},
    {"MaxUnpool", UNPOOL_2D, .inputs = "x,i",
     .attr = {{"kernel_shape", HV(2, 2)}, {"strides", HV(2, 2, 2)}},
     .want = "attribute 'strides' has 3 values; it needs 2"},
    {"MaxUnpool", UNPOOL_2D, .inputs = "x,i",
     .attr = {{"kernel_shape", HV(2, 2)}, {"pads", HV(0, 0)}},
     .want = "attribute 'pads' has 2 values; it needs 4"},
    {"MaxUnpool", UNPOOL_2D, .inputs = "x,i", .attr = {{"kernel_shape", HV(0, 2)}},
     .want = "kernel[0] = 0 must be >= 1"},
    {"MaxUnpool", UNPOOL_2D, .inputs = "x,i,k0", .k = {{HV(1, 1, 4)}},
     .attr = {{"kernel_shape", HV(2, 2)}},
     .want = "input 2 (output_shape) has 3 values; it needs 4"},
    {"Col2Im", COL2IM, .k = {{HV(4, 4)}, {HV(2, 2)}}, .inputs = "x,k0,k1",
     .attr = {{"strides", HV(1)}}, .want = "attribute 'strides' has 1 values; it needs 2"},
    {"Col2Im", COL2IM, .k = {{HV(4, 4)}, {HV(2, 2)}}, .inputs = "x,k0,k1",
     .attr = {{"pads", HV(0, 0, 0)}}, .want = "attribute 'pads' has 3 values; it needs 4"},
    {"Col2Im", COL2IM, .k = {{HV(4, 4)}, {HV(2, 2)}}, .inputs = "x,k0,k1",
     .attr = {{"dilations", HV(0, 1)}}, .want = "dilations[0] = 0 must be >= 1"},
    {"Col2Im", COL2IM, .k = {{HV(4, 4)}, {HV(0, 2)}}, .inputs = "x,k0,k1",
     .want = "block_shape[0] = 0 must be >= 1"},
    {"Col2Im", COL2IM, .k = {{HV(4, 4, 4)}, {HV(2, 2)}}, .inputs = "x,k0,k1",
     .want = "input 2 (block_shape) has 2 values; it needs 3"},
    {"DeformConv", DEFORM, .attr = {{"strides", HV(1, 1, 1)}},
     .want = "attribute 'strides' has 3 values; it needs 2"},
    {"DeformConv", DEFORM, .attr = {{"pads", HV(0, 0)}},
     .want = "attribute 'pads' has 2 values; it needs 4"},
    {"DeformConv", DEFORM, .attr = {{"group", HI(0)}}, .want = "group 0 and offset_group 1"},
    {"DeformConv", DEFORM, .attr = {{"offset_group", HI(2)}},
     .want = "not divisible by offset_group 2"},
    /* Transpose: a permutation of 0..rank-1 */
    {"Transpose", .x = "2,3,4", .inputs = "x", .attr = {{"perm", HV(0, 1)}},
     .want = "perm has 2 entries, X [2,3,4] has rank 3"},
    {"Transpose", .x = "2,3,4", .inputs = "x", .attr = {{"perm", HV(0, 0, 1)}},
     .want = "perm[1] = 0: perm must be a permutation of 0..2"},
    {"Transpose", .x = "2,3,4", .inputs = "x", .attr = {{"perm", HV(0, 1, 9)}},
     .want = "perm[2] = 9 is out of range"},
    {"Transpose", .x = "2,3,4", .inputs = "x", .attr = {{"perm", HV(0, 1, -1)}},
     .want = "perm[2] = -1 is out of range"},
    /* axes: in range of the rank, no repeats, never truncated to 32 bits */
    {"Squeeze", .opset = 11, .x = "1,3,1", .inputs = "x", .attr = {{"axes", HV(5)}},
     .want = "attribute 'axes' entry 0 = 5 is out of range [-3, 2] for rank 3"},
    {"Squeeze", .opset = 11, .x = "1,3,1", .inputs = "x", .attr = {{"axes", HV(0, 0)}},
     .want = "attribute 'axes' entry 1 = 0 repeats axis 0"},
    {"Squeeze", .opset = 11, .x = "1,3,1", .inputs = "x", .attr = {{"axes", HV((int64_t)1 << 32)}},
     .want = "attribute 'axes' entry 0 = 4294967296 is out of range"},
    {"Squeeze", .x = "1,3,1", .inputs = "x,k0", .k = {{HV(((int64_t)1 << 32) + 2)}},
     .want = "input 1 (axes) entry 0 = 4294967298 is out of range"},
    {"Squeeze", .x = "1,3,1", .inputs = "x,k0", .k = {{HV(1)}},
     .want = "axis 1 of X [1,3,1] has size 3, not 1"},
    {"Unsqueeze", .x = "2,3", .inputs = "x,k0", .k = {{HV(3)}},
     .want = "input 1 (axes) entry 0 = 3 is out of range [-3, 2] for rank 3"},
    {"Unsqueeze", .x = "2,3", .inputs = "x,k0", .k = {{HV(0, -4)}},
     .want = "input 1 (axes) entry 1 = -4 repeats axis 0"},
    {"Unsqueeze", .x = "2,3", .inputs = "x,k0", .k = {{HV((int64_t)1 << 32)}},
     .want = "input 1 (axes) entry 0 = 4294967296 is out of range"},
    {"Unsqueeze", .opset = 11, .x = "2,3", .inputs = "x", .attr = {{"axes", HV(-4)}},
     .want = "attribute 'axes' entry 0 = -4 is out of range [-3, 2]"},
    {"ReduceSum", .x = "2,3", .inputs = "x,k0", .k = {{HV(2)}},
     .want = "input 1 (axes) entry 0 = 2 is out of range [-2, 1] for rank 2"},
    {"ReduceSum", .x = "2,3", .inputs = "x,k0", .k = {{HV((int64_t)1 << 32)}},
     .want = "input 1 (axes) entry 0 = 4294967296 is out of range"},
    {"ReduceSum", .x = "2,3", .inputs = "x,k0", .k = {{HV(0, -2)}},
     .want = "input 1 (axes) entry 1 = -2 repeats axis 0"},
    {"ReduceMean", .x = "2,3", .inputs = "x", .attr = {{"axes", HV(1, 1)}},
     .want = "attribute 'axes' entry 1 = 1 repeats axis 1"},
    {"ReduceMax", .opset = 18, .x = "2,3", .inputs = "x,k0", .k = {{HV(7)}},
     .want = "input 1 (axes) entry 0 = 7 is out of range"},
    {"MeanVarianceNormalization", .x = "1,2,2,2", .inputs = "x",
     .attr = {{"axes", HV((int64_t)1 << 32)}},
     .want = "attribute 'axes' entry 0 = 4294967296 is out of range"},
    {"MeanVarianceNormalization", .x = "1,2,2,2", .inputs = "x", .attr = {{"axes", HV(0, 0)}},
     .want = "attribute 'axes' entry 1 = 0 repeats axis 0"},
    /* Slice */
    {"Slice", .x = "2,3", .inputs = "x,k0,k1,k2", .k = {{HV(0)}, {HV(1)}, {HV((int64_t)1 << 32)}},
     .want = "input 3 (axes) entry 0 = 4294967296 is out of range"},
    {"Slice", .x = "2,3", .inputs = "x,k0,k1,k2", .k = {{HV(0, 0)}, {HV(1, 1)}, {HV(0, 0)}},
     .want = "input 3 (axes) entry 1 = 0 repeats axis 0"},
    {"Slice", .x = "2,3", .inputs = "x,k0,k1,k2,k3",
     .k = {{HV(0)}, {HV(1)}, {HV(0)}, {HV(0)}}, .want = "steps[0] is 0"},
    {"Slice", .x = "2,3", .inputs = "x,k0,k1", .k = {{HV(0, 0)}, {HV(1)}},
     .want = "input 2 (ends) has 1 values; it needs 2 (one per value of starts)"},
    {"Slice", .opset = 9, .x = "2,3", .inputs = "x",
     .attr = {{"starts", HV(0)}, {"ends", HV(1, 1)}},
     .want = "attribute 'ends' has 2 values; it needs 1 (one per value of starts)"},
    /* Split */
    {"Split", .opset = 11, .x = "3,2", .inputs = "x", .outputs = 2, .attr = {{"split", HV(1, 1)}},
     .want = "sizes sum to 2, but axis 0 of X [3,2] has size 3"},
    {"Split", .opset = 11, .x = "3,2", .inputs = "x", .outputs = 2, .attr = {{"split", HV(3)}},
     .want = "attribute 'split' has 1 values; it needs 2 (one per output)"},
    {"Split", .opset = 11, .x = "3,2", .inputs = "x", .outputs = 2,
     .attr = {{"split", HV(-1, 4)}}, .want = "sizes[0] = -1 must be >= 0"},
    {"Split", .x = "3,2", .inputs = "x", .outputs = 2, .attr = {{"axis", HI(2)}},
     .want = "axis 2 is out of range"},
    {"Split", .x = "3,2", .inputs = "x,k0", .outputs = 2, .k = {{HV(1, 1, 1)}},
     .want = "input 1 (split) has 3 values; it needs 2 (one per output)"},
    /* a single axis */
    {"Gather", .x = "2,3", .i = "2", .inputs = "x,i", .attr = {{"axis", HI(2)}},
     .want = "axis 2 is out of range [-2, 2)"},
    {"GatherElements", .x = "2,3", .i = "2,3", .inputs = "x,i", .attr = {{"axis", HI(-3)}},
     .want = "axis -3 is out of range [-2, 2)"},
    {"Concat", .x = "2,3", .inputs = "x,x", .attr = {{"axis", HI(2)}},
     .want = "axis 2 is out of range [-2, 2)"},
    {"Softmax", .x = "2,3", .inputs = "x", .attr = {{"axis", HI(2)}},
     .want = "axis 2 is out of range [-2, 2)"},
    {"Softmax", .opset = 11, .x = "2,3", .inputs = "x", .attr = {{"axis", HI(3)}},
     .want = "axis 3 is out of range for rank 2"},
    {"Flatten", .x = "2,3", .inputs = "x", .attr = {{"axis", HI(3)}},
     .want = "axis 3 is out of range [-2, 2]"},
    {"ArgMax", .x = "2,3", .inputs = "x", .attr = {{"axis", HI(2)}},
     .want = "axis 2 is out of range [-2, 2)"},
    {"Hardmax", .x = "2,3", .inputs = "x", .attr = {{"axis", HI(-3)}},
     .want = "axis -3 is out of range [-2, 2)"},
    {"CumSum", .x = "2,3", .inputs = "x,k0", .k = {{HV(2)}},
     .want = "axis 2 is out of range [-2, 2) for rank 2"},
    {"LayerNormalization", .opset = 17, .x = "2,3", .f = {"3"}, .inputs = "x,f0",
     .attr = {{"axis", HI(2)}}, .want = "axis 2 is out of range [-2, 2)"},
    {"DFT", .opset = 17, .x = "1,4,1", .inputs = "x", .attr = {{"axis", HI((int64_t)1 << 32)}},
     .want = "axis 4294967296 is out of range"},
    {"TopK", .x = "2,3", .inputs = "x,k0", .outputs = 2, .k = {{HV(1)}}, .attr = {{"axis", HI(2)}},
     .want = "axis 2 is out of range [-2, 2)"},
    {"ScatterElements", .x = "2,3", .i = "2,3", .f = {"2,3"}, .inputs = "x,i,f0",
     .attr = {{"axis", HI(2)}}, .want = "axis 2 is out of range [-2, 2)"},
    {"GatherND", .x = "2,3", .i = "2,1", .inputs = "x,i", .attr = {{"batch_dims", HI(2)}},
     .want = "batch_dims 2 is out of range"},
    {"RoiAlign", .opset = 16, .x = "1,1,4,4", .f = {"1,4"}, .i = "1", .inputs = "x,f0,i",
     .attr = {{"output_height", HI(0)}}, .want = "output_height 0 and output_width 1 must be >= 1"},
    /* per-channel tensors */
    {"LayerNormalization", .opset = 17, .x = "2,3", .f = {"4"}, .inputs = "x,f0",
     .want = "scale [4] does not broadcast to the normalised dims [3]"},
    {"BatchNormalization", .x = "1,3,2,2", .f = {"2", "3", "3", "3"}, .inputs = "x,f0,f1,f2,f3",
     .want = "scale [2] must be [3], one value per channel"},
    {"InstanceNormalization", .x = "1,3,2,2", .f = {"3", "2"}, .inputs = "x,f0,f1",
     .want = "bias [2] must be [3], one value per channel"},
    {"GroupNormalization", .opset = 18, .x = "1,3,2,2", .f = {"2", "2"}, .inputs = "x,f0,f1",
     .attr = {{"num_groups", HI(2)}}, .want = "num_groups = 2 must be >= 1 and divide the 3"},
    {"LRN", .x = "1,3,2,2", .inputs = "x", .attr = {{"size", HI(0)}}, .want = "size = 0 must be"},
    /* block sizes */
    {"DepthToSpace", .x = "1,8,2,2", .inputs = "x", .attr = {{"blocksize", HI(0)}},
     .want = "block_size 0 must be >= 1"},
    {"DepthToSpace", .x = "1,8,2,2", .inputs = "x", .attr = {{"blocksize", HI(3)}},
     .want = "8 channels, not divisible by block_size^2 = 9"},
    {"SpaceToDepth", .x = "1,1,6,6", .inputs = "x", .attr = {{"blocksize", HI(4)}},
     .want = "H and W not divisible by block_size 4"},
    {"SpaceToDepth", .x = "1,1,6,6", .inputs = "x", .want = "block_size 0 must be >= 1"},
    /* Pad */
    {"Pad", .x = "2,3", .inputs = "x,k0", .k = {{HV(1, 1, 1)}},
     .want = "input 1 (pads) has 3 values; it needs 4 (two per dim of X)"},
    {"Pad", .opset = 7, .x = "2,3", .inputs = "x", .attr = {{"pads", HV(1, 1)}},
     .want = "attribute 'pads' has 2 values; it needs 4 (two per dim of X)"},
    {"Pad", .opset = 18, .x = "2,3", .inputs = "x,k0,,k1", .k = {{HV(1, 1)}, {HV(2)}},
     .want = "input 3 (axes) entry 0 = 2 is out of range [-2, 1]"},
    {"Pad", .opset = 18, .x = "2,3", .inputs = "x,k0,,k1", .k = {{HV(1, 1, 1, 1)}, {HV(0, -2)}},
     .want = "input 3 (axes) entry 1 = -2 repeats axis 0"},
    {"Pad", .opset = 18, .x = "2,3", .inputs = "x,k0,,k1", .k = {{HV(1, 1, 1)}, {HV(0)}},
     .want = "input 1 (pads) has 3 values; it needs 2 (two per axis)"},
    /* Tile, Expand, Reshape, TopK's K */
    {"Tile", .x = "2,3", .inputs = "x,k0", .k = {{HV(1, 1, 1)}},
     .want = "input 1 (repeats) has 3 values; it needs 2 (one per dim of X)"},
    {"Tile", .x = "2,3", .inputs = "x,k0", .k = {{HV(-1, 1)}},
     .want = "repeats[0] = -1 must be >= 0"},
    {"Expand", .x = "2,3", .inputs = "x,k0", .k = {{HV(-1, 3)}},
     .want = "dims[0] = -1 must be >= 0"},
    {"Reshape", .x = "2,3", .inputs = "x,k0", .k = {{HV(-1, -1)}}, .want = "more than one -1"},
    {"Reshape", .x = "2,3", .inputs = "x,k0", .k = {{HV(-2, -3)}},
     .want = "dims[0] = -2 must be >= -1"},
    {"Reshape", .x = "2,3", .inputs = "x,k0", .k = {{HV(0, -1)}}, .attr = {{"allowzero", HI(1)}},
     .want = "has both -1 and 0 with allow_zero"},
    {"Reshape", .x = "2,3", .inputs = "x,k0", .k = {{HV(4, 2)}},
     .want = "X [2,3] has 6 elements, dims [4,2]"},
    {"TopK", .x = "2,3", .inputs = "x,k0", .outputs = 2, .k = {{HV(4)}},
     .want = "k 4 is larger than axis 1 of X [2,3] (size 3)"},
    {"TopK", .x = "2,3", .inputs = "x,k0", .outputs = 2, .k = {{HV(-1)}},
     .want = "k -1 must be >= 0"},
    {"TopK", .x = "2,3", .inputs = "x,k0", .outputs = 2, .k = {{HV(1, 1)}},
     .want = "input 1 (K) has 2 values; it needs 1"},
    /* Gemm's inner dims after transA / transB */
    {"Gemm", .x = "2,3", .f = {"3,4"}, .inputs = "x,f0", .attr = {{"transA", HI(1)}},
     .want = "inner dimensions differ: A [2,3] (transposed) and B [3,4]"},
    {"Gemm", .x = "2,3", .f = {"3,4"}, .inputs = "x,f0", .attr = {{"transB", HI(1)}},
     .want = "inner dimensions differ: A [2,3] and B [3,4] (transposed)"},
    /* dtypes named by int attributes */
    {"EyeLike", .x = "2,3", .inputs = "x", .attr = {{"dtype", HI(((int64_t)1 << 32) + 1)}},
     .want = "attribute 'dtype' = 4294967297 does not fit in 32 bits"},
    {"QuantizeLinear", .opset = 21, .x = "2,3", .f = {""}, .inputs = "x,f0",
     .attr = {{"output_dtype", HI(((int64_t)1 << 32) + 2)}},
     .want = "attribute 'output_dtype' = 4294967298 does not fit in 32 bits"},
    /* Resize and CenterCropPad axes, Einsum's equation */
    {"Resize", .opset = 18, .x = "1,1,2,2", .inputs = "x,,,k0", .k = {{HV(4, 4)}},
     .attr = {{"axes", HV(2, -2)}}, .want = "attribute 'axes' entry 1 = -2 repeats axis 2"},
    {"Resize", .opset = 18, .x = "1,1,2,2", .inputs = "x,,,k0", .k = {{HV(1, 1, 4)}},
     .want = "input 3 (sizes) has 3 values; it needs 4 (one per axis)"},
    {"CenterCropPad", .opset = 18, .x = "2,3", .inputs = "x,k0", .k = {{HV(2)}},
     .attr = {{"axes", HV(5)}}, .want = "attribute 'axes' entry 0 = 5 is out of range"},
    {"Einsum", .opset = 12, .x = "2,3,4", .f = {"4,5"}, .inputs = "x,f0", .s_name = "equation",
     .s_value = "ij,jk->ik", .want = "equation: subscript 0 has 2 labels for an input of rank 3"},
    /* recurrent layers: hidden_size against W and R */
    {"LSTM", .x = "2,1,3", .f = {"1,8,3", "1,8,2"}, .inputs = "x,f0,f1", .outputs = 2,
     .attr = {{"hidden_size", HI(5)}}, .want = "W [1,8,3] must be [1,20,3]"},
    {"GRU", .x = "2,1,3", .f = {"1,6,3", "1,6,2"}, .inputs = "x,f0,f1", .outputs = 2,
     .attr = {{"hidden_size", HI(3)}}, .want = "W [1,6,3] must be [1,9,3]"},
    {"RNN", .x = "2,1,3", .f = {"1,2,3", "1,2,2"}, .inputs = "x,f0,f1", .outputs = 2,
     .attr = {{"hidden_size", HI(4)}}, .want = "W [1,2,3] must be [1,4,3]"},
    {"LSTM", .x = "2,1,3", .f = {"1,8,4", "1,8,2"}, .inputs = "x,f0,f1", .outputs = 2,
     .attr = {{"hidden_size", HI(2)}}, .want = "W [1,8,4] must be [1,8,3]"},
    /* sampling grids */
    {"GridSample", .opset = 16, .x = "1,1,4,4", .f = {"1,2,2,3"}, .inputs = "x,f0",
     .want = "grid [1,2,2,3] must be [N, O1, .., O2, 2]"},
    {"AffineGrid", .opset = 20, .x = "1,2,3", .inputs = "x,k0", .k = {{HV(1, 1, 4)}},
     .want = "size has 3 values and theta is rank 3"},
    /* axes of other operators */
    {"Flatten", .x = "2,3", .inputs = "x", .attr = {{"axis", HI(3)}},
     .want = "axis 3 is out of range [-2, 2]"},
    {"Hardmax", .x = "2,3", .inputs = "x", .attr = {{"axis", HI(-3)}},
     .want = "axis -3 is out of range [-2, 2)"},
    {"ReverseSequence", .x = "2,3", .i = "3", .inputs = "x,i", .attr = {{"time_axis", HI(2)}},
     .want = "batch_axis 1 and time_axis 2 must be 0 and 1"},
    {"OneHot", .x = "2,3", .f = {"2"}, .k = {{HV(4)}}, .inputs = "x,k0,f0",
     .attr = {{"axis", HI(3)}}, .want = "axis 3 is out of range [-3, 2]"},
    {"QuantizeLinear", .opset = 13, .x = "2,3", .f = {"4"}, .inputs = "x,f0",
     .attr = {{"axis", HI(1)}}, .want = "scale [4] must have one entry per index of axis 1"},
    {"QuantizeLinear", .opset = 13, .x = "2,3", .f = {"3"}, .inputs = "x,f0",
     .attr = {{"axis", HI(2)}}, .want = "axis 2 is out of range [-2, 2)"},
    {"GlobalLpPool", .x = "1,1,2,2", .inputs = "x", .attr = {{"p", HI(0)}},
     .want = "p = 0 must be at least 1"},
    {"STFT", .opset = 17, .x = "1,16,1", .k = {{HV(0)}}, .inputs = "x,k0",
     .want = "frame_step 0 must be a whole number from 1"},
};

Test(onnx_import, attributes_must_agree_with_their_tensors) {
    size_t bad = 0;
    for (size_t i = 0; i < COUNT(hostile_cases); i++) {
        const hostile_case *t = &hostile_cases[i];
        ob_model *m = hostile_model(t);
        plx_onnx_model *model = NULL;
        plx_status st = import_mem(m, NULL, &model);
        live.model = model;
        free_model(m);
        char node[64];
        snprintf(node, sizeof node, "node 'n' (%s)", t->op);
        const char *msg = st ? plx_status_get_message(st) : "imported";
        const char *show = getenv("PLEXUS_TEST_LOG");
        if (show && *show && strcmp(show, "0") != 0) {
            fprintf(stderr, "case %zu: %s\n", i, msg);
        }
        bool ok = st && plx_status_get_code(st) == PLX_INVALID_ARGUMENT && strstr(msg, node) &&
                  t->want && strstr(msg, t->want);
        cr_expect(ok, "case %zu (%s): [%s] %s\n  expected: %s", i, t->op,
                  st ? plx_status_code_name(plx_status_get_code(st)) : "OK", msg,
                  t->want ? t->want : "?");
        bad += !ok;
        free_status(st);
        destroy_model(&model);
    }
    cr_assert(eq(sz, bad, 0), "%zu of %zu hostile models were not refused as expected", bad,
              COUNT(hostile_cases));
}

/* What ONNX's checker refuses: an attribute of another type than the
 * operator gives it, an initializer defined twice, a domain's opset
 * imported twice. */
Test(onnx_import, checker_rejections) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node *n = ob_node_add(g, "LeakyRelu", "leaky", "x", "y");
    ob_attr_i(n, "alpha", 2); /* a FLOAT attribute */
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "node 'leaky' (LeakyRelu)", "attribute 'alpha'",
                 "type INT");
    m = new_model(IR, OPSET);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_output(g, "y", OB_FLOAT, NULL);
    n = ob_node_add(g, "Flatten", "flat", "x", "y");
    ob_attr_f(n, "axis", 1.0f); /* an INT attribute */
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "node 'flat' (Flatten)", "attribute 'axis'",
                 "type FLOAT");
    m = small_model();
    ob_init_f32(ob_main(m), "w", OB_DIMS(2, 3), (const float[]){1, 2, 3, 4, 5, 6}, true);
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "initializer 'w' is defined twice");
    m = small_model();
    ob_model_opset(m, "ai.onnx", OPSET);
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "domain 'ai.onnx' twice");
    m = small_model();
    ob_model_opset(m, "com.example", 1);
    ob_model_opset(m, "com.example", 2);
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "domain 'com.example' twice");
}

Test(onnx_import, missing_opset_import_fails) {
    ob_model *m = small_model();
    ob_proto(m)->n_opset_import = 0;
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "node 'add'", "opset");
}

/* ------------------------------------------------------------------------ */
/* External data                                                              */
/* ------------------------------------------------------------------------ */

static const float ext_w[6] = {0.5f, -1.0f, 2.0f, 8.0f, -3.5f, 0.125f};

/* y = x + w [2,3], w external at `location` (offset 16, length 24). */
static ob_model *external_model(const char *location) {
    ob_model *m = new_model(IR, OPSET);
    Onnx__TensorProto *t = ob_tensor(m, "t", OB_FLOAT, OB_DIMS(2, 3));
    ob_tensor_external(m, t, location, 16, 24);
    ob_initializer(ob_main(m), t);
    return init_model(m, "2,3");
}

/* Writes w.bin: 16 bytes of padding then ext_w. */
static void write_weights(const char *dir, const char *name) {
    unsigned char buf[16 + sizeof ext_w];
    memset(buf, 0xee, 16);
    memcpy(buf + 16, ext_w, sizeof ext_w);
    char path[PATH_MAX];
    join(path, dir, name);
    write_file(path, buf, sizeof buf);
}

static void check_external_run(plx_onnx_model *model) {
    float x[6] = {1, 2, 3, 4, 5, 6}, y[6], want[6];
    for (int i = 0; i < 6; i++) {
        want[i] = x[i] + ext_w[i];
    }
    const void *ins[] = {x};
    void *outs[] = {y};
    run_once(model, ins, outs);
    expect_close(y, want, 6, 0.0f);
}

Test(onnx_import, external_data_is_read) {
    const char *dir = make_scratch();
    write_weights(dir, "w.bin");
    char path[PATH_MAX];
    join(path, dir, "model.onnx");
    write_model(external_model("w.bin"), path);
    plx_onnx_model *model = NULL;
    plx_status st = plx_onnx_import_file(path, NULL, &model);
    live.st = st;
    cr_assert(zero(ptr, st), "%s", plx_status_get_message(st));
    live.model = model;
    check_external_run(model);
    destroy_model(&model);

    /* In a subdirectory, through "./", and from memory with base_dir. */
    char sub[PATH_MAX];
    join(sub, dir, "weights");
    cr_assert(eq(int, mkdir(sub, 0755), 0));
    write_weights(sub, "w.bin");
    join(path, dir, "model2.onnx");
    write_model(external_model("./weights/w.bin"), path);
    st = plx_onnx_import_file(path, NULL, &model);
    live.st = st;
    cr_assert(zero(ptr, st), "%s", plx_status_get_message(st));
    live.model = model;
    check_external_run(model);
    destroy_model(&model);

    size_t size;
    ob_model *m = external_model("w.bin");
    uint8_t *buf = ob_pack(m, &size);
    live.buf = buf;
    free_model(m);
    st = plx_onnx_import_memory(buf, size, FILE_NAME, dir, NULL, &model);
    live.st = st;
    cr_assert(zero(ptr, st), "%s", plx_status_get_message(st));
    live.model = model;
    free(buf);
    live.buf = NULL;
    check_external_run(model);
    destroy_model(&model);
    remove_scratch();
}

/* Imports the external model referring to `location` from dir/model.onnx
 * and checks the failure. */
static void external_fails_(const char *dir, const char *location, plx_status_code code,
                            const char *const *needles) {
    char path[PATH_MAX];
    join(path, dir, "model.onnx");
    write_model(external_model(location), path);
    plx_onnx_model *model = NULL;
    plx_status st = plx_onnx_import_file(path, NULL, &model);
    live.model = model;
    free_status(check_fail(st, code, needles));
}
#define EXTERNAL_FAILS(dir, location, code, ...)                                         \
    external_fails_((dir), (location), (code), NEEDLES(__VA_ARGS__))

Test(onnx_import, external_data_escaping_the_directory_is_refused) {
    const char *root = make_scratch();
    /* root/outside.bin exists; the model lives in root/model. */
    write_weights(root, "outside.bin");
    char dir[PATH_MAX];
    join(dir, root, "model");
    cr_assert(eq(int, mkdir(dir, 0755), 0));
    write_weights(dir, "w.bin");

    EXTERNAL_FAILS(dir, "../outside.bin", PLX_INVALID_ARGUMENT, "initializer 't'",
                   "'../outside.bin'");
    char sub[PATH_MAX];
    cr_assert(eq(int, mkdir(join(sub, dir, "sub"), 0755), 0));
    EXTERNAL_FAILS(dir, "sub/../../outside.bin", PLX_INVALID_ARGUMENT,
                   "'sub/../../outside.bin'");
    /* Absolute, even to a file inside the directory. */
    char abs[PATH_MAX];
    join(abs, dir, "w.bin");
    char want[PATH_MAX + 8];
    snprintf(want, sizeof want, "'%s'", abs);
    EXTERNAL_FAILS(dir, abs, PLX_INVALID_ARGUMENT, "initializer 't'", want);
    /* A symbolic link inside the directory to a file outside. */
    char link[PATH_MAX], target[PATH_MAX];
    join(link, dir, "link.bin");
    join(target, root, "outside.bin");
    cr_assert(eq(int, symlink(target, link), 0), "symlink: %s", strerror(errno));
    EXTERNAL_FAILS(dir, "link.bin", PLX_INVALID_ARGUMENT, "initializer 't'", "'link.bin'");
    /* A link to a directory outside, then a file in it. */
    join(link, dir, "up");
    cr_assert(eq(int, symlink(root, link), 0), "symlink: %s", strerror(errno));
    EXTERNAL_FAILS(dir, "up/outside.bin", PLX_INVALID_ARGUMENT, "'up/outside.bin'");
    remove_scratch();
}

Test(onnx_import, external_data_problems_fail, .timeout = 30) {
    const char *dir = make_scratch();
    /* Too short: 20 bytes, the tensor needs 24 at offset 16. */
    char path[PATH_MAX];
    join(path, dir, "short.bin");
    write_file(path, ext_w, 20);
    EXTERNAL_FAILS(dir, "short.bin", PLX_INVALID_ARGUMENT, "initializer 't'", "short.bin",
                   "too short");
    /* Missing. */
    EXTERNAL_FAILS(dir, "absent.bin", PLX_IO_ERROR, "initializer 't'", "absent.bin");
    /* A FIFO: refused at once, where open() waited for a writer forever. */
    cr_assert(eq(int, mkfifo(join(path, dir, "fifo.bin"), 0644), 0));
    EXTERNAL_FAILS(dir, "fifo.bin", PLX_INVALID_ARGUMENT, "initializer 't'", "fifo.bin",
                   "is not a regular file");
    /* A length that does not match the shape. */
    write_weights(dir, "w.bin");
    join(path, dir, "model.onnx");
    ob_model *m = new_model(IR, OPSET);
    Onnx__TensorProto *t = ob_tensor(m, "t", OB_FLOAT, OB_DIMS(2, 3));
    ob_tensor_external(m, t, "w.bin", 0, 20);
    ob_initializer(ob_main(m), t);
    write_model(init_model(m, "2,3"), path);
    plx_onnx_model *model = NULL;
    CALL_FAILS(plx_onnx_import_file(path, NULL, &model), PLX_INVALID_ARGUMENT,
               "initializer 't'", "length 20");
    /* No location. */
    m = new_model(IR, OPSET);
    t = ob_tensor(m, "t", OB_FLOAT, OB_DIMS(2, 3));
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    ob_initializer(ob_main(m), t);
    write_model(init_model(m, "2,3"), path);
    CALL_FAILS(plx_onnx_import_file(path, NULL, &model), PLX_INVALID_ARGUMENT,
               "initializer 't'", "location");
    remove_scratch();
}

/* ---- messages nested without bound, written on the wire by hand ---------- */

typedef struct wire {
    uint8_t *b;
    size_t n, cap;
} wire;

static void wire_bytes(wire *w, const void *p, size_t n) {
    if (n == 0) { /* p may be NULL: an empty message */
        return;
    }
    if (w->n + n > w->cap) {
        w->cap = (w->n + n) * 2 + 64;
        w->b = realloc(w->b, w->cap);
        cr_assert(not(zero(ptr, w->b)));
    }
    memcpy(w->b + w->n, p, n);
    w->n += n;
}

static void wire_varint(wire *w, uint64_t v) {
    uint8_t t[10];
    size_t n = 0;
    do {
        t[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    wire_bytes(w, t, n);
}

/* Field `field` of wire type 2 holding `inner` (freed); returns the new
 * message as a wire. */
static wire wire_wrap(wire inner, unsigned field, const wire *prefix) {
    wire w = {0};
    if (prefix) {
        wire_bytes(&w, prefix->b, prefix->n);
    }
    wire_varint(&w, (uint64_t)field << 3 | 2);
    wire_varint(&w, inner.n);
    wire_bytes(&w, inner.b, inner.n);
    free(inner.b);
    return w;
}

/* A ModelProto (ir_version 8, opset 17) around graph bytes `g` (freed). */
static wire wire_model(wire g) {
    wire head = {0}, opset = {0};
    wire_varint(&head, 1 << 3); /* ir_version */
    wire_varint(&head, 8);
    wire_varint(&opset, 2 << 3); /* OperatorSetIdProto.version */
    wire_varint(&opset, 17);
    wire m = wire_wrap(g, 7, &head);
    free(head.b);
    wire o = wire_wrap(opset, 8, NULL);
    wire_bytes(&m, o.b, o.n);
    free(o.b);
    return m;
}

/* `levels` If nodes, each holding the next graph in its attribute. */
static wire nested_graphs(size_t levels) {
    wire g = {0};
    for (size_t i = 0; i < levels; i++) {
        wire a = wire_wrap(g, 6, NULL); /* AttributeProto.g */
        wire n = wire_wrap(a, 5, NULL); /* NodeProto.attribute */
        g = wire_wrap(n, 1, NULL);      /* GraphProto.node */
    }
    return wire_model(g);
}

/* A graph whose one node has a type attribute: Sequence of Sequence of
 * ... `levels` deep. The deepest message then sits 4 + 2 levels below the
 * model: Graph 1, Node 2, Attribute 3, TypeProto 4, then a Sequence and a
 * TypeProto per level. */
static wire nested_types(size_t levels) {
    wire t = {0};
    for (size_t i = 0; i < levels; i++) {
        wire seq = wire_wrap(t, 1, NULL); /* Sequence.elem_type */
        t = wire_wrap(seq, 4, NULL);      /* TypeProto.sequence_type */
    }
    wire a = wire_wrap(t, 14, NULL); /* AttributeProto.tp */
    wire n = wire_wrap(a, 5, NULL);
    return wire_model(wire_wrap(n, 1, NULL));
}

static plx_status import_wire(wire w) {
    plx_onnx_model *model = NULL;
    plx_status st = plx_onnx_import_memory(w.b, w.n, "nested.onnx", NULL, NULL, &model);
    plx_onnx_model_destroy(&model);
    free(w.b);
    return st;
}

/* 3,000 nested graph attributes or types (a few kilobytes) overflowed the
 * stack in libprotobuf-c's recursive decoder: they are refused from the
 * wire, at protobuf's own limit of 100 nested messages, and a file at the
 * limit still goes on to the decoder. */
Test(onnx_import, nesting_is_bounded_before_decoding, .timeout = 60) {
    CALL_FAILS(import_wire(nested_graphs(3000)), PLX_INVALID_ARGUMENT, "nested.onnx",
               "messages nested more than 100 deep");
    CALL_FAILS(import_wire(nested_types(3000)), PLX_INVALID_ARGUMENT, "nested.onnx",
               "messages nested more than 100 deep");
    /* 4 + 2 * 49 = 102 levels: refused; 4 + 2 * 48 = 100: decoded (and
     * then refused for what it is, a graph of one node without an op) */
    CALL_FAILS(import_wire(nested_types(49)), PLX_INVALID_ARGUMENT, "nested more than 100");
    plx_status st = import_wire(nested_types(48));
    cr_assert(not(zero(ptr, st)));
    cr_assert(zero(ptr, strstr(plx_status_get_message(st), "nested more than")), "%s",
              plx_status_get_message(st));
    plx_status_free(st);
    /* graphs: the innermost of L levels is 1 + 3 L below the model */
    CALL_FAILS(import_wire(nested_graphs(34)), PLX_INVALID_ARGUMENT, "nested more than 100");
    st = import_wire(nested_graphs(33));
    cr_assert(st == NULL || !strstr(plx_status_get_message(st), "nested more than"), "%s",
              plx_status_get_message(st));
    plx_status_free(st);
}

/* A model file that is a FIFO is refused at once (no writer ever comes). */
Test(onnx_import, model_file_fifo_is_refused, .timeout = 30) {
    const char *dir = make_scratch();
    char path[PATH_MAX];
    cr_assert(eq(int, mkfifo(join(path, dir, "model.onnx"), 0644), 0));
    plx_onnx_model *model = NULL;
    CALL_FAILS(plx_onnx_import_file(path, NULL, &model), PLX_IO_ERROR, "model.onnx",
               "not a regular file");
    remove_scratch();
}

Test(onnx_import, external_data_from_memory_needs_base_dir) {
    size_t size;
    ob_model *m = external_model("w.bin");
    uint8_t *buf = ob_pack(m, &size);
    live.buf = buf;
    free_model(m);
    plx_onnx_model *model = NULL;
    CALL_FAILS(plx_onnx_import_memory(buf, size, FILE_NAME, NULL, NULL, &model),
               PLX_INVALID_ARGUMENT, FILE_NAME, "initializer 't'", "'w.bin'");
    cr_assert(zero(ptr, model));
    free(buf);
    live.buf = NULL;
}

/* ------------------------------------------------------------------------ */
/* TensorProto files                                                          */
/* ------------------------------------------------------------------------ */

static void write_tensor(const char *path, const Onnx__TensorProto *t, size_t keep) {
    size_t size;
    uint8_t *buf = ob_pack_tensor(t, &size);
    live.buf = buf;
    write_file(path, buf, keep < size ? keep : size);
    free(buf);
    live.buf = NULL;
}

Test(onnx_import, tensor_file_round_trip) {
    const char *dir = make_scratch();
    char path[PATH_MAX];
    join(path, dir, "input_0.pb");
    ob_model *m = new_model(IR, OPSET);
    const int64_t v[6] = {1, -2, 3, 1LL << 40, 5, -6};
    Onnx__TensorProto *t = ob_tensor(m, "input_0", OB_INT64, OB_DIMS(2, 3));
    ob_tensor_int64s(m, t, v, 6);
    write_tensor(path, t, SIZE_MAX);

    plx_tensor_info info;
    void *data = NULL;
    char *name = NULL;
    plx_status st = plx_onnx_read_tensor_file(path, &info, &data, &name);
    live.st = st;
    cr_assert(zero(ptr, st), "%s", plx_status_get_message(st));
    track(data);
    track(name);
    cr_assert(eq(int, (int)info.dtype, (int)PLX_DTYPE_INT64));
    EXPECT_DIMS(&info, "tensor", 2, 3);
    cr_assert(eq(int, memcmp(data, v, sizeof v), 0));
    cr_assert(eq(str, name, "input_0"));
    free(data);
    free(name);
    live.mem_count = 0;

    /* Float, raw, unnamed, rank 0. */
    t = ob_tensor(m, NULL, OB_FLOAT, OB_SCALAR);
    float f = 3.25f;
    ob_tensor_raw(m, t, &f, sizeof f);
    write_tensor(path, t, SIZE_MAX);
    st = plx_onnx_read_tensor_file(path, &info, &data, &name);
    live.st = st;
    cr_assert(zero(ptr, st), "%s", plx_status_get_message(st));
    track(data);
    track(name);
    cr_assert(eq(int, (int)info.dtype, (int)PLX_DTYPE_FLOAT32));
    cr_assert(eq(u32, info.rank, 0));
    cr_assert(eq(flt, *(float *)data, 3.25f));
    cr_assert(eq(str, name, ""));
    free(data);
    free(name);
    live.mem_count = 0;

    /* Empty: [0, 4] int32, data never NULL. */
    t = ob_tensor(m, "empty", OB_INT32, OB_DIMS(0, 4));
    write_tensor(path, t, SIZE_MAX);
    st = plx_onnx_read_tensor_file(path, &info, &data, &name);
    live.st = st;
    cr_assert(zero(ptr, st), "%s", plx_status_get_message(st));
    track(data);
    track(name);
    EXPECT_DIMS(&info, "empty tensor", 0, 4);
    cr_assert(not(zero(ptr, data)));
    free(data);
    free(name);
    live.mem_count = 0;
    free_model(m);
    remove_scratch();
}

/* float64, uint16, uint32 and uint64 tensors from each field ONNX keeps
 * them in: double_data, uint64_data (uint32 and uint64), int32_data
 * (uint16), and raw_data. */
Test(onnx_import, tensor_file_float64_and_unsigned) {
    const char *dir = make_scratch();
    char path[PATH_MAX];
    join(path, dir, "t.pb");
    ob_model *m = new_model(IR, OPSET);
    const double d[3] = {0.1, -1e300, 2.5};
    const uint64_t u64[3] = {0, UINT64_MAX, 1ULL << 63};
    const uint32_t u32[3] = {0, UINT32_MAX, 7};
    const uint16_t u16[3] = {0, UINT16_MAX, 300};
    struct {
        int32_t type;
        int field; /* 0 raw, 1 double_data, 2 uint64_data, 3 int32_data */
        plx_dtype dtype;
        const void *want;
        size_t bytes;
    } cases[] = {
        {OB_DOUBLE, 1, PLX_DTYPE_FLOAT64, d, sizeof d},
        {OB_DOUBLE, 0, PLX_DTYPE_FLOAT64, d, sizeof d},
        {OB_UINT64, 2, PLX_DTYPE_UINT64, u64, sizeof u64},
        {OB_UINT64, 0, PLX_DTYPE_UINT64, u64, sizeof u64},
        {OB_UINT32, 2, PLX_DTYPE_UINT32, u32, sizeof u32},
        {OB_UINT32, 0, PLX_DTYPE_UINT32, u32, sizeof u32},
        {OB_UINT16, 3, PLX_DTYPE_UINT16, u16, sizeof u16},
        {OB_UINT16, 0, PLX_DTYPE_UINT16, u16, sizeof u16},
    };
    for (size_t k = 0; k < COUNT(cases); k++) {
        Onnx__TensorProto *t = ob_tensor(m, "v", cases[k].type, OB_DIMS(3));
        uint64_t wide[3];
        int32_t narrow[3];
        for (size_t i = 0; i < 3; i++) {
            wide[i] = cases[k].type == OB_UINT32 ? u32[i] : u64[i];
            narrow[i] = u16[i];
        }
        switch (cases[k].field) {
        case 0: ob_tensor_raw(m, t, cases[k].want, cases[k].bytes); break;
        case 1: ob_tensor_doubles(m, t, d, 3); break;
        case 2: ob_tensor_uint64s(m, t, wide, 3); break;
        default: ob_tensor_int32s(m, t, narrow, 3); break;
        }
        write_tensor(path, t, SIZE_MAX);
        plx_tensor_info info;
        void *data = NULL;
        char *name = NULL;
        plx_status st = plx_onnx_read_tensor_file(path, &info, &data, &name);
        live.st = st;
        cr_assert(zero(ptr, st), "case %zu: %s", k, plx_status_get_message(st));
        track(data);
        track(name);
        cr_assert(eq(int, (int)info.dtype, (int)cases[k].dtype), "case %zu", k);
        EXPECT_DIMS(&info, "tensor", 3);
        cr_assert(eq(int, memcmp(data, cases[k].want, cases[k].bytes), 0), "case %zu", k);
        free(data);
        free(name);
        live.mem_count = 0;
    }
    free_model(m);
    remove_scratch();
}

Test(onnx_import, tensor_file_errors) {
    const char *dir = make_scratch();
    char path[PATH_MAX];
    join(path, dir, "t.pb");
    ob_model *m = new_model(IR, OPSET);
    plx_tensor_info info;
    void *data = NULL;
    char *name = NULL;

    /* Truncated inside the float data. */
    float v[16];
    fill_values(v, 16, 11);
    Onnx__TensorProto *t = ob_tensor(m, "trunc", OB_FLOAT, OB_DIMS(4, 4));
    ob_tensor_raw(m, t, v, sizeof v);
    write_tensor(path, t, 30);
    CALL_FAILS(plx_onnx_read_tensor_file(path, &info, &data, &name), PLX_INVALID_ARGUMENT, path,
               "TensorProto");
    cr_assert(zero(ptr, data));
    cr_assert(zero(ptr, name));

    /* COMPLEX64: a type Plexus lacks. */
    t = ob_tensor(m, "cplx", OB_COMPLEX64, OB_DIMS(2));
    float c[4] = {1, 0, 2, 0};
    ob_tensor_raw(m, t, c, sizeof c);
    write_tensor(path, t, SIZE_MAX);
    CALL_FAILS(plx_onnx_read_tensor_file(path, &info, &data, &name), PLX_UNSUPPORTED, path,
               "'cplx'", "COMPLEX64");

    /* uint64_data short of the shape (the field of uint32 and uint64). */
    t = ob_tensor(m, "u32", OB_UINT32, OB_DIMS(3));
    ob_tensor_uint64s(m, t, (const uint64_t[]){1, 2}, 2);
    write_tensor(path, t, SIZE_MAX);
    CALL_FAILS(plx_onnx_read_tensor_file(path, &info, &data, &name), PLX_INVALID_ARGUMENT,
               "'u32'", "uint64_data has 2 values");

    /* Data not matching the shape. */
    t = ob_tensor(m, "short", OB_FLOAT, OB_DIMS(3));
    ob_tensor_floats(m, t, v, 2);
    write_tensor(path, t, SIZE_MAX);
    CALL_FAILS(plx_onnx_read_tensor_file(path, &info, &data, &name), PLX_INVALID_ARGUMENT,
               "'short'", "float_data has 2 values");

    /* External data is refused here. */
    write_weights(dir, "w.bin");
    t = ob_tensor(m, "ext", OB_FLOAT, OB_DIMS(6));
    ob_tensor_external(m, t, "w.bin", 16, 24);
    write_tensor(path, t, SIZE_MAX);
    CALL_FAILS(plx_onnx_read_tensor_file(path, &info, &data, &name), PLX_INVALID_ARGUMENT,
               "'ext'", "w.bin");

    /* Missing file; NULL arguments. */
    join(path, dir, "absent.pb");
    CALL_FAILS(plx_onnx_read_tensor_file(path, &info, &data, &name), PLX_IO_ERROR, path);
    CALL_FAILS(plx_onnx_read_tensor_file(path, NULL, &data, &name), PLX_INVALID_ARGUMENT,
               "plx_onnx_read_tensor_file");
    free_model(m);
    remove_scratch();
}

/* ------------------------------------------------------------------------ */
/* The digits example model                                                   */
/* ------------------------------------------------------------------------ */

static void read_npy(const char *path, npy_array *a) {
    char err[512];
    cr_assert(npy_read(path, a, err, sizeof err), "%s", err);
    live.mem[live.mem_count++ % COUNT(live.mem)] = a->data;
}

Test(onnx_import, digits_model_matches_reference, .timeout = 120) {
    plx_onnx_model *model = NULL;
    plx_status st = plx_onnx_import_file(DIGITS_DIR "/digits.onnx", NULL, &model);
    live.st = st;
    cr_assert(zero(ptr, st), "%s", plx_status_get_message(st));
    live.model = model;

    cr_assert(eq(sz, plx_onnx_model_input_count(model), 1));
    const plx_onnx_io *in = plx_onnx_model_input(model, 0);
    cr_assert(eq(str, (char *)in->name, "image"));
    cr_assert(eq(i32, in->binding_id, 0));
    cr_assert(eq(int, (int)in->info.dtype, (int)PLX_DTYPE_FLOAT32));
    EXPECT_DIMS(&in->info, "input image", 1, 1, 8, 8);
    cr_assert(eq(sz, plx_onnx_model_output_count(model), 1));
    const plx_onnx_io *out = plx_onnx_model_output(model, 0);
    cr_assert(eq(str, (char *)out->name, "probabilities"));
    cr_assert(eq(i32, out->binding_id, 0));
    cr_assert(eq(int, (int)out->info.dtype, (int)PLX_DTYPE_FLOAT32));
    EXPECT_DIMS(&out->info, "output probabilities", 1, 10);
    plx_onnx_model_facts facts;
    plx_onnx_model_get_facts(model, &facts);
    cr_assert(eq(i64, facts.opset, 13));
    cr_assert(eq(i64, facts.ir_version, 7));
    cr_assert(eq(sz, facts.node_count, 9));

    plx_runtime *rt = make_runtime();
    plx_loaded_network *ln = load_model(rt, model);
    for (int k = 0; k < 10; k++) {
        char path[PATH_MAX];
        npy_array x, want;
        snprintf(path, sizeof path, "%s/inputs/digit-%d.npy", DIGITS_DIR, k);
        read_npy(path, &x);
        snprintf(path, sizeof path, "%s/expected/digit-%d.npy", DIGITS_DIR, k);
        read_npy(path, &want);
        cr_assert(eq(int, (int)x.dtype, (int)PLX_DTYPE_FLOAT32));
        cr_assert(eq(sz, x.bytes, 64 * sizeof(float)));
        cr_assert(eq(sz, want.bytes, 10 * sizeof(float)));
        float probs[10];
        const void *ins[] = {x.data};
        void *outs[] = {probs};
        run_loaded(ln, model, ins, outs);
        const float *w = want.data;
        int best = 0;
        for (int i = 0; i < 10; i++) {
            float diff = fabsf(probs[i] - w[i]);
            cr_assert(le(flt, diff, 1e-5f), "digit %d, class %d: got %.9g, want %.9g", k, i,
                      (double)probs[i], (double)w[i]);
            best = probs[i] > probs[best] ? i : best;
        }
        cr_assert(eq(int, best, k), "digit %d predicted as %d", k, best);
        npy_free(&x);
        npy_free(&want);
        live.mem_count -= 2;
    }
    plx_loaded_network_unload(&ln);
    live.ln = NULL;
    plx_runtime_destroy(&rt);
    live.rt = NULL;
    destroy_model(&model);
}

/* ------------------------------------------------------------------------ */
/* More graph shapes                                                          */
/* ------------------------------------------------------------------------ */

/* Nodes in reverse order: the importer sorts them. */
Test(onnx_import, unsorted_nodes_are_sorted) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "4");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Neg", "third", "b", "y");
    ob_node_add(g, "Abs", "second", "a", "b");
    ob_node_add(g, "Relu", "first", "x", "a");
    plx_onnx_model *model = import_ok(m, NULL);
    float x[4] = {-2, -1, 1, 2}, y[4], want[4] = {-0.0f, -0.0f, -1, -2};
    const void *ins[] = {x};
    void *outs[] = {y};
    run_once(model, ins, outs);
    expect_close(y, want, 4, 0.0f);
    destroy_model(&model);
}

/* A graph input that is an output too, and one value as two outputs. */
Test(onnx_import, inputs_as_outputs) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_output(g, "x", OB_FLOAT, "3");
    ob_output(g, "r1", OB_FLOAT, "3");
    ob_output(g, "r2", OB_FLOAT, "3");
    ob_node_add(g, "Relu", "relu", "x", "r1");
    ob_node_add(g, "Identity", "id", "r1", "r2");
    plx_onnx_model *model = import_ok(m, NULL);
    cr_assert(eq(sz, plx_onnx_model_output_count(model), 3));
    for (size_t i = 0; i < 3; i++) {
        int32_t id = plx_onnx_model_output(model, i)->binding_id;
        cr_assert(eq(i32, id, (int32_t)i));
    }
    float x[3] = {-1, 0.5f, 3}, o0[3], o1[3], o2[3], relu[3] = {0, 0.5f, 3};
    const void *ins[] = {x};
    void *outs[] = {o0, o1, o2};
    run_once(model, ins, outs);
    expect_close(o0, x, 3, 0.0f);
    expect_close(o1, relu, 3, 0.0f);
    expect_close(o2, relu, 3, 0.0f);
    destroy_model(&model);
}

/* IR 3 style: initializers listed among the graph inputs are not inputs;
 * the real inputs are numbered 0, 1, ... */
Test(onnx_import, initializers_listed_as_inputs) {
    ob_model *m = new_model(3, 8);
    ob_graph *g = ob_main(m);
    ob_input(g, "w", OB_FLOAT, "3");
    ob_input(g, "x", OB_FLOAT, "3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_f32(g, "w", OB_DIMS(3), (const float[]){1, 2, 3}, false);
    ob_node_add(g, "Add", "add", "x,w", "y");
    plx_onnx_model *model = import_ok(m, NULL);
    cr_assert(eq(sz, plx_onnx_model_input_count(model), 1));
    const plx_onnx_io *in = plx_onnx_model_input(model, 0);
    cr_assert(eq(str, (char *)in->name, "x"));
    cr_assert(eq(i32, in->binding_id, 0));
    float x[3] = {10, 20, 30}, y[3], want[3] = {11, 22, 33};
    const void *ins[] = {x};
    void *outs[] = {y};
    run_once(model, ins, outs);
    expect_close(y, want, 3, 0.0f);
    destroy_model(&model);
}

/* Softmax before opset 13 coerces the input to 2-D at `axis`: over
 * [2, 3, 4] with axis 1, each row of 12 sums to 1. */
Test(onnx_import, legacy_softmax_coerces_to_2d) {
    ob_model *m = new_model(IR, 11);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,3,4");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_attr_i(ob_node_add(g, "Softmax", "sm", "x", "y"), "axis", 1);
    plx_onnx_model *model = import_ok(m, NULL);
    EXPECT_DIMS(&plx_onnx_model_output(model, 0)->info, "output y", 2, 3, 4);
    float x[24], y[24], want[24];
    fill_values(x, 24, 12);
    for (int b = 0; b < 2; b++) {
        float mx = -INFINITY, sum = 0;
        for (int i = 0; i < 12; i++) {
            mx = fmaxf(mx, x[b * 12 + i]);
        }
        for (int i = 0; i < 12; i++) {
            want[b * 12 + i] = expf(x[b * 12 + i] - mx);
            sum += want[b * 12 + i];
        }
        for (int i = 0; i < 12; i++) {
            want[b * 12 + i] /= sum;
        }
    }
    const void *ins[] = {x};
    void *outs[] = {y};
    run_once(model, ins, outs);
    expect_close(y, want, 24, 1e-5f);
    destroy_model(&model);
}

/* An If inside an If branch, both conditions constant. */
Test(onnx_import, nested_if_inlines) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2");
    ob_output(g, "y", OB_FLOAT, NULL);
    Onnx__TensorProto *t = ob_tensor(m, "yes", OB_BOOL, OB_SCALAR);
    ob_tensor_int32s(m, t, (const int32_t[]){1}, 1);
    ob_initializer(g, t);
    t = ob_tensor(m, "no", OB_BOOL, OB_DIMS(1));
    ob_tensor_raw(m, t, "\0", 1);
    ob_initializer(g, t);
    ob_graph *inner_then = ob_graph_new(m, "inner_then");
    ob_node_add(inner_then, "Neg", "wrong", "x", "it");
    ob_output(inner_then, "it", OB_FLOAT, NULL);
    ob_graph *inner_else = ob_graph_new(m, "inner_else");
    ob_node_add(inner_else, "Abs", "right", "x", "ie");
    ob_output(inner_else, "ie", OB_FLOAT, NULL);
    ob_graph *outer_then = ob_graph_new(m, "outer_then");
    ob_node *inner = ob_node_add(outer_then, "If", "inner_if", "no", "ot");
    ob_attr_g(inner, "then_branch", inner_then);
    ob_attr_g(inner, "else_branch", inner_else);
    ob_output(outer_then, "ot", OB_FLOAT, NULL);
    ob_graph *outer_else = ob_graph_new(m, "outer_else");
    ob_node_add(outer_else, "Neg", "also_wrong", "x", "oe");
    ob_output(outer_else, "oe", OB_FLOAT, NULL);
    ob_node *outer = ob_node_add(g, "If", "outer_if", "yes", "y");
    ob_attr_g(outer, "then_branch", outer_then);
    ob_attr_g(outer, "else_branch", outer_else);
    plx_onnx_model *model = import_ok(m, NULL);
    size_t layers = plx_network_layer_count(plx_onnx_model_network(model));
    cr_assert(eq(sz, layers, 3), "input, abs, output: got %zu", layers);
    float x[2] = {-3, 4}, y[2], want[2] = {3, 4};
    const void *ins[] = {x};
    void *outs[] = {y};
    run_once(model, ins, outs);
    expect_close(y, want, 2, 0.0f);
    destroy_model(&model);
}

Test(onnx_import, if_branch_problems_fail) {
    /* The taken branch has two outputs, the node one. */
    ob_model *m = if_model(false, true);
    Onnx__GraphProto *then_g = ob_graph_proto(ob_main(m))->node[0]->attribute[0]->g;
    Onnx__ValueInfoProto *extra = ob_graph_proto(ob_main(m))->output[0];
    Onnx__ValueInfoProto **outs = ob_alloc(m, 2 * sizeof *outs);
    outs[0] = then_g->output[0];
    outs[1] = extra;
    then_g->output = outs;
    then_g->n_output = 2;
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "node 'if'", "(If)");
    /* The taken branch is missing. */
    m = if_model(false, false);
    ob_graph_proto(ob_main(m))->node[0]->n_attribute = 1; /* then_branch only */
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "node 'if'", "else_branch");
    /* A branch reading an undefined value. */
    m = if_model(false, true);
    Onnx__NodeProto *add = ob_graph_proto(ob_main(m))->node[0]->attribute[0]->g->node[0];
    add->input[1] = ob_strdup(m, "nothing_here");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "node 'then_add'", "'nothing_here'");
}

/* ------------------------------------------------------------------------ */
/* Sizes and messages                                                         */
/* ------------------------------------------------------------------------ */

/* Constants the importer makes itself are bounded: ConstantOfShape and
 * Range asked for terabytes fail naming the node, allocating nothing of
 * that size. */
Test(onnx_import, huge_made_constants_are_refused) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "shape", OB_DIMS(2), (const int64_t[]){1 << 20, 1 << 20}, false);
    ob_node_add(g, "ConstantOfShape", "big_fill", "shape", "f");
    ob_node_add(g, "Add", "add", "x,f", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "node 'big_fill'", "ConstantOfShape");

    m = new_model(IR, OPSET);
    g = ob_main(m);
    ob_input(g, "x", OB_INT64, "1");
    ob_output(g, "y", OB_INT64, NULL);
    int64_t start = 0, limit = 900000000, delta = 1;
    ob_init_i64(g, "start", OB_SCALAR, &start, false);
    ob_init_i64(g, "limit", OB_SCALAR, &limit, false);
    ob_init_i64(g, "delta", OB_SCALAR, &delta, false);
    ob_node_add(g, "Range", "big_range", "start,limit,delta", "r");
    ob_node_add(g, "Add", "add", "x,r", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "node 'big_range'", "Range");
}

/* A gather index out of range in a folded chain is an error at import
 * naming the node (not a failure at run time). */
Test(onnx_import, folded_gather_out_of_range_fails) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,3");
    ob_output(g, "y", OB_FLOAT, NULL);
    int64_t five = 5, minus1 = -1;
    ob_init_i64(g, "i5", OB_DIMS(1), &five, false);
    ob_init_i64(g, "rest", OB_DIMS(1), &minus1, false);
    ob_node_add(g, "Shape", "shape", "x", "s");
    ob_node_add(g, "Gather", "bad_gather", "s,i5", "d");
    ob_attr_i(ob_node_add(g, "Concat", "concat", "d,rest", "newshape"), "axis", 0);
    ob_node_add(g, "Reshape", "reshape", "x,newshape", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "node 'bad_gather'");
}

/* A value defined twice (a node output shadowing a graph input or an
 * initializer) is malformed, like two nodes writing one value. */
Test(onnx_import, node_output_shadowing_an_input_fails) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_input(g, "z", OB_FLOAT, "3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Neg", "shadow_x", "z", "x");
    ob_node_add(g, "Add", "add", "x,z", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'x'");
}

Test(onnx_import, node_output_shadowing_an_initializer_fails) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_f32(g, "w", OB_DIMS(3), (const float[]){1, 2, 3}, false);
    ob_node_add(g, "Neg", "shadow_w", "x", "w");
    ob_node_add(g, "Add", "add", "x,w", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'w'");
}

/* A given negative size is reported as such, not as what the model says. */
Test(onnx_import, negative_given_dim_message) {
    plx_onnx_input_shape shape = {.name = "x", .dims = {-1, 3}, .rank = 2};
    plx_onnx_options o;
    plx_onnx_options_init(&o);
    o.shapes = &shape;
    o.shape_count = 1;
    plx_status st = import_fail_(dynamic_model("N,3"), &o, PLX_INVALID_ARGUMENT,
                                 NEEDLES("input 'x'", "dim 0", "-1"));
    const char *msg = plx_status_get_message(st);
    cr_assert(zero(ptr, strstr(msg, "the model says -1")),
              "the model says 'N', not -1: '%s'", msg);
    free_status(st);
}

/* A node of another domain is reported with that domain's opset (1 here),
 * not the default domain's. */
Test(onnx_import, custom_domain_node_reports_its_opset) {
    ob_model *m = new_model(IR, OPSET);
    ob_model_opset(m, "com.example", 1);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "4");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_domain(ob_node_add(g, "Fancy", "fancy", "x", "y"), "com.example");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "'fancy'", "com.example.Fancy, opset 1)");
}

/* A tensor over the importer's size limit (1 TiB of float32, which fits
 * size_t) is refused for its size, not said to overflow. */
Test(onnx_import, tensor_over_the_limit_message) {
    ob_model *m = new_model(IR, OPSET);
    Onnx__TensorProto *t = ob_tensor(m, "t", OB_FLOAT, OB_DIMS(1LL << 38));
    ob_tensor_raw(m, t, "abcd", 4);
    ob_initializer(ob_main(m), t);
    plx_status st = import_fail_(init_model(m, "1"), NULL, PLX_INVALID_ARGUMENT,
                                 NEEDLES("initializer 't'"));
    const char *msg = plx_status_get_message(st);
    cr_assert(zero(ptr, strstr(msg, "overflow")), "1 TiB does not overflow: '%s'", msg);
    free_status(st);
}

/* A branch may read values of the enclosing graph that nodes listed after
 * the If produce: those are dependencies of the If. */
Test(onnx_import, if_branch_reading_a_later_node) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2");
    ob_output(g, "y", OB_FLOAT, NULL);
    Onnx__TensorProto *c = ob_tensor(m, "cond", OB_BOOL, OB_SCALAR);
    ob_tensor_int32s(m, c, (const int32_t[]){1}, 1);
    ob_initializer(g, c);
    ob_graph *then_g = ob_graph_new(m, "then");
    ob_node_add(then_g, "Mul", "then_mul", "x,k", "t");
    ob_output(then_g, "t", OB_FLOAT, NULL);
    ob_graph *else_g = ob_graph_new(m, "else");
    ob_node_add(else_g, "Neg", "else_neg", "x", "e");
    ob_output(else_g, "e", OB_FLOAT, NULL);
    ob_node *n = ob_node_add(g, "If", "if", "cond", "y");
    ob_attr_g(n, "then_branch", then_g);
    ob_attr_g(n, "else_branch", else_g);
    ob_attr_f(ob_node_add(g, "Constant", "k_const", "", "k"), "value_float", 3.0f);
    plx_onnx_model *model = import_ok(m, NULL);
    float x[2] = {1, -2}, y[2], want[2] = {3, -6};
    const void *ins[] = {x};
    void *outs[] = {y};
    run_once(model, ins, outs);
    expect_close(y, want, 2, 0.0f);
    destroy_model(&model);
}

/* A cycle through a branch: the If's branch reads a value computed from
 * the If's own output. */
Test(onnx_import, cycle_through_a_branch_fails) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2");
    ob_output(g, "r", OB_FLOAT, NULL);
    Onnx__TensorProto *c = ob_tensor(m, "cond", OB_BOOL, OB_SCALAR);
    ob_tensor_int32s(m, c, (const int32_t[]){1}, 1);
    ob_initializer(g, c);
    ob_graph *then_g = ob_graph_new(m, "then");
    ob_node_add(then_g, "Add", "then_add", "x,r", "t");
    ob_output(then_g, "t", OB_FLOAT, NULL);
    ob_graph *else_g = ob_graph_new(m, "else");
    ob_node_add(else_g, "Neg", "else_neg", "x", "e");
    ob_output(else_g, "e", OB_FLOAT, NULL);
    ob_node *n = ob_node_add(g, "If", "loop_if", "cond", "y");
    ob_attr_g(n, "then_branch", then_g);
    ob_attr_g(n, "else_branch", else_g);
    ob_node_add(g, "Relu", "loop_relu", "y", "r");
    plx_status st = import_fail_(m, NULL, PLX_INVALID_ARGUMENT, NEEDLES("cycle"));
    const char *msg = plx_status_get_message(st);
    cr_assert(strstr(msg, "'loop_if'") || strstr(msg, "'loop_relu'"), "'%s'", msg);
    free_status(st);
}

Test(onnx_import, unsupported_input_types) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "cplx_in", OB_COMPLEX64, "2");
    ob_output(g, "y", OB_COMPLEX64, NULL);
    ob_node_add(g, "Identity", "id", "cplx_in", "y");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "input 'cplx_in'", "COMPLEX64");
    /* A sequence input. */
    m = new_model(IR, OPSET);
    g = ob_main(m);
    Onnx__ValueInfoProto *vi = ob_input(g, "seq_in", OB_FLOAT, NULL);
    vi->type->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    Onnx__TypeProto__Sequence *sq = ob_alloc(m, sizeof *sq);
    Onnx__TypeProto__Sequence sq_init = ONNX__TYPE_PROTO__SEQUENCE__INIT;
    *sq = sq_init;
    vi->type->sequence_type = sq;
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Identity", "id", "seq_in", "y");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "input 'seq_in'", "not a tensor");
}

/* Node names need not be unique, nor differ from value names: layers get
 * unique names. */
Test(onnx_import, clashing_node_names_import) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Relu", "same", "x", "a");
    ob_node_add(g, "Neg", "same", "a", "b");
    ob_node_add(g, "Abs", "x", "b", "c");
    ob_node_add(g, "Neg", "y.output", "c", "y");
    plx_onnx_model *model = import_ok(m, NULL);
    float x[3] = {-1, 2, -3}, y[3], want[3] = {0, -2, 0};
    const void *ins[] = {x};
    void *outs[] = {y};
    run_once(model, ins, outs);
    expect_close(y, want, 3, 0.0f);
    destroy_model(&model);
}

/* Two graph inputs with one name are malformed. */
Test(onnx_import, duplicate_graph_inputs_fail) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_input(g, "x", OB_FLOAT, "4");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Relu", "relu", "x", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'x'");
}

Test(onnx_import, directory_is_not_a_model) {
    plx_onnx_model *model = NULL;
    const char *dir = make_scratch();
    CALL_FAILS(plx_onnx_import_file(dir, NULL, &model), PLX_IO_ERROR, dir);
    remove_scratch();
}

/* ------------------------------------------------------------------------ */
/* Graph inputs frozen to constants (plx_onnx_options.constants)              */
/* ------------------------------------------------------------------------ */

/* x [2,3] float and shape [2] int64 (a graph input) -> Reshape -> y. */
static ob_model *reshape_by_input_model(void) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,3");
    ob_input(g, "shape", OB_INT64, "2");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Reshape", "reshape", "x,shape", "y");
    return m;
}

static plx_onnx_constant_input shape_constant(const int64_t *dims) {
    plx_onnx_constant_input k;
    memset(&k, 0, sizeof k);
    k.name = "shape";
    k.info.dtype = PLX_DTYPE_INT64;
    k.info.rank = 1;
    k.info.dims[0] = 2;
    k.data = dims;
    return k;
}

Test(onnx_import, input_acting_as_attribute_is_unsupported_until_frozen) {
    IMPORT_FAILS(reshape_by_input_model(), NULL, PLX_UNSUPPORTED, "node 'reshape'",
                 "Reshape", "must be known at import");

    static const int64_t dims[2] = {3, 2};
    plx_onnx_constant_input k = shape_constant(dims);
    plx_onnx_options o;
    plx_onnx_options_init(&o);
    o.constants = &k;
    o.constant_count = 1;
    plx_onnx_model *model = import_ok(reshape_by_input_model(), &o);
    /* The frozen input is no longer an input of the model. */
    cr_assert(eq(sz, plx_onnx_model_input_count(model), 1));
    cr_assert(eq(str, (char *)plx_onnx_model_input(model, 0)->name, "x"));
    expect_dims(&plx_onnx_model_output(model, 0)->info, dims, 2, "y");
    float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {0};
    const void *ins[1] = {x};
    void *outs[1] = {y};
    run_once(model, ins, outs);
    expect_close(y, x, 6, 0.0f);
    destroy_model(&model);
}

Test(onnx_import, frozen_input_errors) {
    static const int64_t dims[2] = {3, 2};
    plx_onnx_options o;
    plx_onnx_options_init(&o);
    plx_onnx_constant_input k = shape_constant(dims);
    o.constants = &k;
    o.constant_count = 1;

    k.name = "nope";
    IMPORT_FAILS(reshape_by_input_model(), &o, PLX_INVALID_ARGUMENT, "'nope'",
                 "not an input");
    k = shape_constant(dims);
    k.info.dtype = PLX_DTYPE_INT32;
    IMPORT_FAILS(reshape_by_input_model(), &o, PLX_INVALID_ARGUMENT, "input 'shape'", "INT64",
                 "int32");
    k = shape_constant(dims);
    k.info.dims[0] = 3;
    IMPORT_FAILS(reshape_by_input_model(), &o, PLX_INVALID_ARGUMENT, "input 'shape'",
                 "shape");
    k = shape_constant(dims);
    k.data = NULL;
    IMPORT_FAILS(reshape_by_input_model(), &o, PLX_INVALID_ARGUMENT, "input 'shape'", "no data");
    k = shape_constant(dims);
    plx_onnx_input_shape s = {.name = "shape", .dims = {2}, .rank = 1};
    o.shapes = &s;
    o.shape_count = 1;
    IMPORT_FAILS(reshape_by_input_model(), &o, PLX_INVALID_ARGUMENT, "'shape'",
                 "both a shape and a constant");
}

/* Found by the fuzzer: a value written twice where the second writer also
 * reads it (a cycle) reports the first error and leaks nothing (ASan and
 * valgrind check the leak). */
Test(onnx_import, two_producers_and_a_cycle_report_once) {
    ob_model *m = new_model(IR, OPSET);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Relu", "first", "x", "dup");
    ob_node_add(g, "Neg", "second", "dup", "dup");
    ob_node_add(g, "Abs", "abs", "dup", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, FILE_NAME, "'dup'", "two nodes");
}

/* ScatterElements with reduction max (opset 18) of a graph input by a
 * constant index: the layer runs on cpu_ref; indices [[0,2]] with updates
 * [[5,-5]] on axis 1 of [[1,2,3]] -> [[5,2,3]]. */
Test(onnx_import, scatter_elements_reduction_max_runs) {
    ob_model *m = new_model(IR, 18);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "i", OB_DIMS(1, 2), (const int64_t[]){0, 2}, false);
    ob_init_f32(g, "u", OB_DIMS(1, 2), (const float[]){5, -5}, false);
    ob_node *n = ob_node_add(g, "ScatterElements", "scatter", "x,i,u", "y");
    ob_attr_i(n, "axis", 1);
    ob_attr_s(n, "reduction", "max");
    plx_onnx_model *model = import_ok(m, NULL);
    float x[3] = {1, 2, 3}, y[3];
    run_once(model, (const void *const[]){x}, (void *const[]){y});
    expect_close(y, (const float[]){5, 2, 3}, 3, 0.0f);
    destroy_model(&model);
}

/* reduction values an opset does not have are refused, naming them: max
 * before opset 18, any reduction on the deprecated Scatter. */
Test(onnx_import, scatter_reduction_outside_its_opset_fails) {
    ob_model *m = new_model(IR, 16);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "4");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "i", OB_DIMS(1, 1), (const int64_t[]){1}, false);
    ob_init_f32(g, "u", OB_DIMS(1), (const float[]){5}, false);
    ob_attr_s(ob_node_add(g, "ScatterND", "snd", "x,i,u", "y"), "reduction", "max");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "node 'snd'", "reduction='max' does not exist in opset 16");
    m = new_model(IR, 10);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "4");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "i", OB_DIMS(1), (const int64_t[]){1}, false);
    ob_init_f32(g, "u", OB_DIMS(1), (const float[]){5}, false);
    ob_attr_s(ob_node_add(g, "Scatter", "old", "x,i,u", "y"), "reduction", "add");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "node 'old'", "reduction='add'");
    m = new_model(IR, 10);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "4");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "i", OB_DIMS(1), (const int64_t[]){1}, false);
    ob_node_add(g, "GatherND", "gnd", "x,i", "y");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "node 'gnd'", "does not exist in opset 10");
}

/* ------------------------------------------------------------------------ */
/* Trilu, OneHot, Hardmax, CumSum: inputs read at import, Hardmax's 2-D      */
/* coercion before opset 13                                                   */
/* ------------------------------------------------------------------------ */

/* CumSum's axis is an input whose value the import needs: an initializer
 * (int32 here) goes into the layer; one computed at run time is reported
 * as a value the import needs; float16 sums in float32. */
Test(onnx_import, cumsum_axis_initializer_exclusive_reverse) {
    ob_model *m = new_model(8, 14);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,3");
    ob_output(g, "y", OB_FLOAT, NULL);
    Onnx__TensorProto *axis = ob_tensor(m, "axis", OB_INT32, OB_SCALAR);
    ob_tensor_int32s(m, axis, (const int32_t[]){-1}, 1);
    ob_initializer(g, axis);
    ob_node *n = ob_node_add(g, "CumSum", "cs", "x,axis", "y");
    ob_attr_i(n, "exclusive", 1);
    ob_attr_i(n, "reverse", 1);
    plx_onnx_model *model = import_ok(m, NULL);
    cr_assert(eq(sz, plx_onnx_model_input_count(model), 1), "axis is not an input");
    float x[6] = {1, 2, 3, 4, 5, 6}, y[6];
    const void *ins[] = {x};
    void *outs[] = {y};
    run_once(model, ins, outs);
    /* along the rows, from the end, excluding the element itself */
    expect_close(y, (const float[]){5, 3, 0, 11, 6, 0}, 6, 0);
    destroy_model(&model);

    /* float16: 2048 + 1 + 1 is 2050 only when summed in float32 */
    m = new_model(8, 14);
    g = ob_main(m);
    ob_input(g, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, "3");
    ob_output(g, "y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, NULL);
    ob_init_i64(g, "axis", OB_SCALAR, (const int64_t[]){0}, false);
    ob_node_add(g, "CumSum", "cs", "x,axis", "y");
    model = import_ok(m, NULL);
    uint16_t hx[3] = {plx_float32_to_float16(2048.0f), plx_float32_to_float16(1.0f),
                      plx_float32_to_float16(1.0f)},
             hy[3];
    const void *hins[] = {hx};
    void *houts[] = {hy};
    run_once(model, hins, houts);
    cr_assert(eq(flt, plx_float16_to_float32(hy[0]), 2048.0f));
    cr_assert(eq(flt, plx_float16_to_float32(hy[2]), 2050.0f));
    destroy_model(&model);

    /* an axis computed from the graph's inputs cannot be known at import */
    m = new_model(8, 14);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,3");
    ob_input(g, "a", OB_INT64, "");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "CumSum", "cs", "x,a", "y");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "'cs'", "axis", "known at import");
    /* out of range, or of a type ONNX does not allow */
    m = new_model(8, 14);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "axis", OB_SCALAR, (const int64_t[]){2}, false);
    ob_node_add(g, "CumSum", "cs", "x,axis", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'cs'", "axis 2 is out of range [-2, 2)");
    m = new_model(8, 14);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_f32(g, "axis", OB_SCALAR, (const float[]){0}, false);
    ob_node_add(g, "CumSum", "cs", "x,axis", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'cs'", "axis has type float32");
}

/* Before opset 13 Hardmax sees its input as 2-D [prod(dims[0..axis)),
 * prod(dims[axis..])]: one maximum over every trailing dim; from 13, along
 * the axis alone. */
Test(onnx_import, hardmax_coerced_to_2d_before_opset_13) {
    /* X [2,2,3]: batch 0 has its maximum 9 at (1, 2) of its 2x3 block;
     * batch 1 has 7 at (0, 1) and (1, 0): the first wins */
    float x[12] = {1, 2, 3, 4, 5, 9, 0, 7, 1, 7, 2, 3}, y[12];
    for (int opset = 11; opset <= 13; opset += 2) {
        ob_model *m = new_model(IR, opset);
        ob_graph *g = ob_main(m);
        ob_input(g, "x", OB_FLOAT, "2,2,3");
        ob_output(g, "y", OB_FLOAT, NULL);
        ob_node *n = ob_node_add(g, "Hardmax", "hm", "x", "y");
        ob_attr_i(n, "axis", 1);
        plx_onnx_model *model = import_ok(m, NULL);
        expect_dims(&plx_onnx_model_output(model, 0)->info, (const int64_t[]){2, 2, 3}, 3, "y");
        const void *ins[] = {x};
        void *outs[] = {y};
        run_once(model, ins, outs);
        if (opset == 11) {
            expect_close(y, (const float[]){0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0}, 12, 0);
        } else {
            /* along axis 1 (pairs): (1,4) (2,5) (3,9) | (0,7) (7,2) (1,3) */
            expect_close(y, (const float[]){0, 0, 0, 1, 1, 1, 0, 1, 0, 1, 0, 1}, 12, 0);
        }
        destroy_model(&model);
    }
}

/* OneHot's depth (a float here, cast to int64 as ONNX says) goes into the
 * layer; indices and values stay its inputs. */
Test(onnx_import, onehot_depth_initializer) {
    ob_model *m = new_model(IR, 11);
    ob_graph *g = ob_main(m);
    ob_input(g, "ind", OB_INT64, "3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_f32(g, "depth", OB_SCALAR, (const float[]){4.0f}, false);
    ob_init_f32(g, "vals", OB_DIMS(2), (const float[]){-1.0f, 2.0f}, false);
    ob_node *n = ob_node_add(g, "OneHot", "oh", "ind,depth,vals", "y");
    ob_attr_i(n, "axis", 0);
    plx_onnx_model *model = import_ok(m, NULL);
    expect_dims(&plx_onnx_model_output(model, 0)->info, (const int64_t[]){4, 3}, 2, "y");
    int64_t ind[3] = {3, -4, 4}; /* 4 is out of range: an all-off column */
    float y[12];
    const void *ins[] = {ind};
    void *outs[] = {y};
    run_once(model, ins, outs);
    expect_close(y, (const float[]){-1, 2, -1, -1, -1, -1, -1, -1, -1, 2, -1, -1}, 12, 0);
    destroy_model(&model);

    m = new_model(IR, 11);
    g = ob_main(m);
    ob_input(g, "ind", OB_INT64, "3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "depth", OB_SCALAR, (const int64_t[]){0}, false);
    ob_init_f32(g, "vals", OB_DIMS(2), (const float[]){0.0f, 1.0f}, false);
    ob_node_add(g, "OneHot", "oh", "ind,depth,vals", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'oh'", "depth 0 must be >= 1");
}

/* Models computing in float64 and the unsigned types on cpu_ref, their
 * constants from the typed fields: an add whose sum float32 would make
 * infinite; a bitwise and of values past INT64_MAX; unsigned maximum and
 * modulo (fmod=1 and fmod=0 agree on unsigned operands); OneHot's depth
 * and Range's bounds read at import from float64 and uint64 constants. */
/* The float8 types (ABI 1.3): initializers from int32_data (one element
 * per int32) and raw_data, Cast with saturate=0, DequantizeLinear and
 * QuantizeLinear. */
Test(onnx_import, float8_models_run) {
    ob_model *m = new_model(IR, 19);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_output(g, "y", OB_FLOAT8E4M3FN, NULL);
    ob_output(g, "d", OB_FLOAT, NULL);
    ob_output(g, "z", OB_FLOAT, NULL);
    ob_output(g, "q", OB_FLOAT8E5M2FNUZ, NULL);
    /* e5m2: 0x3c = 1, 0xc0 = -2, 0x7c = inf */
    Onnx__TensorProto *t = ob_tensor(m, "q8", OB_FLOAT8E5M2, OB_DIMS(3));
    ob_tensor_int32s(m, t, (const int32_t[]){0x3c, 0xc0, 0x7c}, 3);
    ob_initializer(g, t);
    t = ob_tensor(m, "s", OB_FLOAT, OB_SCALAR);
    ob_tensor_floats(m, t, (const float[]){2.0f}, 1);
    ob_initializer(g, t);
    /* e4m3fn raw: 0x38 = 1, 0x7e = 448, 0xb0 = -0.5 */
    t = ob_tensor(m, "r8", OB_FLOAT8E4M3FN, OB_DIMS(3));
    ob_tensor_raw(m, t, (const uint8_t[]){0x38, 0x7e, 0xb0}, 3);
    ob_initializer(g, t);
    ob_node *cast = ob_node_add(g, "Cast", "c", "x", "y");
    ob_attr_i(cast, "to", OB_FLOAT8E4M3FN);
    ob_attr_i(cast, "saturate", 0);
    ob_node_add(g, "DequantizeLinear", "dq", "q8,s", "d");
    ob_attr_i(ob_node_add(g, "Cast", "c2", "r8", "z"), "to", OB_FLOAT);
    t = ob_tensor(m, "zp", OB_FLOAT8E5M2FNUZ, OB_DIMS(1));
    ob_tensor_int32s(m, t, (const int32_t[]){0}, 1);
    ob_initializer(g, t);
    ob_node_add(g, "QuantizeLinear", "ql", "x,s,zp", "q");
    plx_onnx_model *model = import_ok(m, NULL);
    cr_assert(eq(int, (int)plx_onnx_model_output(model, 0)->info.dtype,
                 (int)PLX_DTYPE_FLOAT8E4M3FN));
    cr_assert(eq(int, (int)plx_onnx_model_output(model, 3)->info.dtype,
                 (int)PLX_DTYPE_FLOAT8E5M2FNUZ));
    float x[3] = {1.0f, 1000.0f, -0.0f}, d[3], z[3];
    uint8_t y[3], q[3];
    run_once(model, (const void *const[]){x}, (void *const[]){y, d, z, q});
    cr_assert(eq(u8, y[0], 0x38));
    cr_assert(eq(u8, y[1], 0x7f), "1000 is NaN without saturation");
    cr_assert(eq(u8, y[2], 0x80), "-0 stays -0 in e4m3fn");
    cr_assert(eq(flt, d[0], 2.0f));
    cr_assert(eq(flt, d[1], -4.0f));
    cr_assert(isinf(d[2]) != 0 && d[2] > 0);
    cr_assert(eq(flt, z[0], 1.0f));
    cr_assert(eq(flt, z[1], 448.0f));
    cr_assert(eq(flt, z[2], -0.5f));
    /* x / 2 in e5m2fnuz: 0.5; 500 -> 512 (the values there step by 64:
     * 448, 512); -0 -> +0 (no -0) */
    cr_assert(eq(flt, plx_float8_to_float32(q[0], PLX_DTYPE_FLOAT8E5M2FNUZ), 0.5f));
    cr_assert(eq(flt, plx_float8_to_float32(q[1], PLX_DTYPE_FLOAT8E5M2FNUZ), 512.0f));
    cr_assert(eq(u8, q[2], 0x00));
    destroy_model(&model);
}

/* int4 and uint4 (ABI 1.3): ONNX packs two to a byte, low nibble first,
 * in raw_data and in int32_data (one packed byte per int32); Plexus holds
 * one element per byte, int4 sign-extended. */
Test(onnx_import, int4_models_run) {
    ob_model *m = new_model(IR, 21);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_output(g, "a", OB_FLOAT, NULL);
    ob_output(g, "b", OB_INT32, NULL);
    ob_output(g, "q", OB_INT4, NULL);
    /* 3 int4 in 2 bytes: 0x9f = -1 (low), -7 (high); 0x07 = 7 */
    Onnx__TensorProto *t = ob_tensor(m, "i4", OB_INT4, OB_DIMS(3));
    ob_tensor_raw(m, t, (const uint8_t[]){0x9f, 0x07}, 2);
    ob_initializer(g, t);
    /* 5 uint4 in 3 int32s: 1, 2, 3, 4, 5 */
    t = ob_tensor(m, "u4", OB_UINT4, OB_DIMS(5));
    ob_tensor_int32s(m, t, (const int32_t[]){0x21, 0x43, 0x05}, 3);
    ob_initializer(g, t);
    t = ob_tensor(m, "s", OB_FLOAT, OB_SCALAR);
    ob_tensor_floats(m, t, (const float[]){1.0f}, 1);
    ob_initializer(g, t);
    t = ob_tensor(m, "zp", OB_INT4, OB_SCALAR);
    ob_tensor_int32s(m, t, (const int32_t[]){0x0e}, 1); /* -2 */
    ob_initializer(g, t);
    ob_node *cast = ob_node_add(g, "Cast", "ca", "i4", "a");
    ob_attr_i(cast, "to", OB_FLOAT);
    cast = ob_node_add(g, "Cast", "cb", "u4", "b");
    ob_attr_i(cast, "to", OB_INT32);
    ob_node_add(g, "QuantizeLinear", "ql", "x,s,zp", "q");
    plx_onnx_model *model = import_ok(m, NULL);
    cr_assert(eq(int, (int)plx_onnx_model_output(model, 2)->info.dtype, (int)PLX_DTYPE_INT4));
    float x[3] = {1.0f, 20.0f, -2.5f}, a[3];
    int32_t b[5];
    int8_t q[3];
    run_once(model, (const void *const[]){x}, (void *const[]){a, b, q});
    cr_assert(eq(flt, a[0], -1.0f));
    cr_assert(eq(flt, a[1], -7.0f));
    cr_assert(eq(flt, a[2], 7.0f));
    for (int i = 0; i < 5; i++) cr_assert(eq(i32, b[i], i + 1));
    /* 1 - 2 = -1; 20 - 2 = 18 -> 7; -2.5 -> -2 (even) - 2 = -4 */
    cr_assert(eq(i8, q[0], -1));
    cr_assert(eq(i8, q[1], 7));
    cr_assert(eq(i8, q[2], -4));
    destroy_model(&model);

    /* raw_data of one byte per element is the wrong size */
    m = new_model(IR, 21);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3");
    ob_output(g, "a", OB_FLOAT, NULL);
    t = ob_tensor(m, "i4", OB_INT4, OB_DIMS(3));
    ob_tensor_raw(m, t, (const uint8_t[]){1, 2, 3}, 3);
    ob_initializer(g, t);
    cast = ob_node_add(g, "Cast", "ca", "i4", "a0");
    ob_attr_i(cast, "to", OB_FLOAT);
    ob_node_add(g, "Add", "add", "x,a0", "a");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "raw_data has 3 bytes, the shape needs 2");
}

Test(onnx_import, float64_and_unsigned_models_run) {
    ob_model *m = new_model(IR, 18);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_DOUBLE, "3");
    ob_output(g, "y", OB_DOUBLE, NULL);
    Onnx__TensorProto *t = ob_tensor(m, "c", OB_DOUBLE, OB_DIMS(3));
    ob_tensor_doubles(m, t, (const double[]){0.5, 1e300, -2.25}, 3);
    ob_initializer(g, t);
    ob_node_add(g, "Add", "add", "x,c", "y");
    plx_onnx_model *model = import_ok(m, NULL);
    cr_assert(eq(int, (int)plx_onnx_model_output(model, 0)->info.dtype, (int)PLX_DTYPE_FLOAT64));
    double x[3] = {1.0, 1e300, 0.25}, y[3];
    run_once(model, (const void *const[]){x}, (void *const[]){y});
    cr_assert(eq(dbl, y[0], 1.5));
    cr_assert(eq(dbl, y[1], 2e300));
    cr_assert(eq(dbl, y[2], -2.0));
    destroy_model(&model);

    m = new_model(IR, 18);
    g = ob_main(m);
    ob_input(g, "a", OB_UINT64, "3");
    ob_output(g, "y", OB_UINT64, NULL);
    t = ob_tensor(m, "mask", OB_UINT64, OB_DIMS(3));
    ob_tensor_uint64s(m, t, (const uint64_t[]){UINT64_MAX, 1ULL << 63, 0xf0}, 3);
    ob_initializer(g, t);
    ob_node_add(g, "BitwiseAnd", "and", "a,mask", "y");
    model = import_ok(m, NULL);
    uint64_t a[3] = {0x8000000000000001ULL, UINT64_MAX, 0xff}, u[3];
    run_once(model, (const void *const[]){a}, (void *const[]){u});
    cr_assert(eq(u64, u[0], 0x8000000000000001ULL));
    cr_assert(eq(u64, u[1], 1ULL << 63));
    cr_assert(eq(u64, u[2], 0xf0));
    destroy_model(&model);

    for (int fmod = 0; fmod <= 1; fmod++) {
        m = new_model(IR, 13);
        g = ob_main(m);
        ob_input(g, "a", OB_UINT32, "3");
        ob_output(g, "y", OB_UINT32, NULL);
        t = ob_tensor(m, "b", OB_UINT32, OB_DIMS(3));
        ob_tensor_uint64s(m, t, (const uint64_t[]){UINT32_MAX, 3, 10}, 3);
        ob_initializer(g, t);
        ob_node_add(g, "Max", "max", "a,b", "mx");
        ob_attr_i(ob_node_add(g, "Mod", "mod", "mx,b", "y"), "fmod", fmod);
        model = import_ok(m, NULL);
        uint32_t ua[3] = {5, UINT32_MAX, 25}, uy[3];
        run_once(model, (const void *const[]){ua}, (void *const[]){uy});
        /* max: UINT32_MAX, UINT32_MAX, 25; mod b: 0, UINT32_MAX % 3 = 0, 5 */
        cr_assert(eq(u32, uy[0], 0));
        cr_assert(eq(u32, uy[1], 0));
        cr_assert(eq(u32, uy[2], 5));
        destroy_model(&model);
    }

    /* depth 3 as float64 and as uint64; values and indices uint16 */
    for (int as_u64 = 0; as_u64 <= 1; as_u64++) {
        m = new_model(IR, 11);
        g = ob_main(m);
        ob_input(g, "ind", OB_UINT16, "2");
        ob_output(g, "y", OB_UINT16, NULL);
        t = ob_tensor(m, "depth", as_u64 ? OB_UINT64 : OB_DOUBLE, OB_SCALAR);
        if (as_u64) {
            ob_tensor_uint64s(m, t, (const uint64_t[]){3}, 1);
        } else {
            ob_tensor_doubles(m, t, (const double[]){3.0}, 1);
        }
        ob_initializer(g, t);
        t = ob_tensor(m, "vals", OB_UINT16, OB_DIMS(2));
        ob_tensor_int32s(m, t, (const int32_t[]){1, 65535}, 2);
        ob_initializer(g, t);
        ob_node_add(g, "OneHot", "oh", "ind,depth,vals", "y");
        model = import_ok(m, NULL);
        expect_dims(&plx_onnx_model_output(model, 0)->info, (const int64_t[]){2, 3}, 2, "y");
        uint16_t ind[2] = {2, 0}, oh[6];
        run_once(model, (const void *const[]){ind}, (void *const[]){oh});
        const uint16_t want[6] = {1, 1, 65535, 65535, 1, 1};
        cr_assert(eq(int, memcmp(oh, want, sizeof want), 0));
        destroy_model(&model);
    }

    /* Range in float64: 0.5, 0.75, 1.0 (below the limit 1.1) */
    m = new_model(IR, 11);
    g = ob_main(m);
    ob_input(g, "x", OB_DOUBLE, "3");
    ob_output(g, "y", OB_DOUBLE, NULL);
    const char *names[3] = {"start", "limit", "delta"};
    const double bounds[3] = {0.5, 1.1, 0.25};
    for (int i = 0; i < 3; i++) {
        t = ob_tensor(m, names[i], OB_DOUBLE, OB_SCALAR);
        ob_tensor_doubles(m, t, &bounds[i], 1);
        ob_initializer(g, t);
    }
    ob_node_add(g, "Range", "range", "start,limit,delta", "r");
    ob_node_add(g, "Add", "add", "x,r", "y");
    model = import_ok(m, NULL);
    double rx[3] = {0, 0, 1}, ry[3];
    run_once(model, (const void *const[]){rx}, (void *const[]){ry});
    cr_assert(eq(dbl, ry[0], 0.5));
    cr_assert(eq(dbl, ry[1], 0.75));
    cr_assert(eq(dbl, ry[2], 2.0));
    destroy_model(&model);
}

/* Trilu's optional k input: absent (0) or an initializer. */
Test(onnx_import, trilu_k_initializer_and_default) {
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, y[9];
    for (int with_k = 0; with_k < 2; with_k++) {
        ob_model *m = new_model(8, 14);
        ob_graph *g = ob_main(m);
        ob_input(g, "x", OB_FLOAT, "3,3");
        ob_output(g, "y", OB_FLOAT, NULL);
        if (with_k) {
            ob_init_i64(g, "k", OB_SCALAR, (const int64_t[]){-1}, false);
        }
        ob_node *n = ob_node_add(g, "Trilu", "tri", with_k ? "x,k" : "x", "y");
        ob_attr_i(n, "upper", 0);
        plx_onnx_model *model = import_ok(m, NULL);
        cr_assert(eq(sz, plx_onnx_model_input_count(model), 1));
        const void *ins[] = {x};
        void *outs[] = {y};
        run_once(model, ins, outs);
        if (with_k) {
            expect_close(y, (const float[]){0, 0, 0, 4, 0, 0, 7, 8, 0}, 9, 0);
        } else {
            expect_close(y, (const float[]){1, 0, 0, 4, 5, 0, 7, 8, 9}, 9, 0);
        }
        destroy_model(&model);
    }
    /* Trilu is opset 14 */
    ob_model *m = new_model(IR, 13);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3,3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Trilu", "tri", "x", "y");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "'tri'", "does not exist in opset 13");
}

/* ------------------------------------------------------------------------ */
/* GridSample: the modes' two spellings, opset 16's 4-D limit                 */
/* ------------------------------------------------------------------------ */

/* X = [[1, 2], [3, 4]] at the centre and the top right corner, with
 * align_corners: bilinear (opset 16's name) gives the mean 2.5 and 2;
 * nearest at the centre (0.5, 0.5) rounds half to even, to X[0][0]. */
Test(onnx_import, gridsample_modes_and_opsets) {
    float x[4] = {1, 2, 3, 4}, g[4] = {0, 0, 1, -1}, y[2];
    const char *modes[] = {"bilinear", "linear", "nearest", "bicubic"};
    const float want[][2] = {{2.5f, 2}, {2.5f, 2}, {1, 2}, {2.5f, 2}};
    for (int i = 0; i < 4; i++) {
        ob_model *m = new_model(8, i == 1 ? 20 : 16);
        ob_graph *gr = ob_main(m);
        ob_input(gr, "x", OB_FLOAT, "1,1,2,2");
        ob_input(gr, "g", OB_FLOAT, "1,1,2,2");
        ob_output(gr, "y", OB_FLOAT, NULL);
        ob_node *n = ob_node_add(gr, "GridSample", "gs", "x,g", "y");
        ob_attr_s(n, "mode", modes[i]);
        ob_attr_i(n, "align_corners", 1);
        if (i == 3) {
            ob_attr_s(n, "padding_mode", "border");
        }
        plx_onnx_model *model = import_ok(m, NULL);
        expect_dims(&plx_onnx_model_output(model, 0)->info, (const int64_t[]){1, 1, 1, 2}, 4,
                    "y");
        const void *ins[] = {x, g};
        void *outs[] = {y};
        run_once(model, ins, outs);
        /* bicubic with border padding at (0.5, 0.5): 0.5 of each row and
         * column (the outer taps fold onto the edges) */
        expect_close(y, want[i], 2, 1e-6f);
        destroy_model(&model);
    }
    /* opset 20: a volumetric X; opset 16 takes 4-D X only */
    for (int opset = 16; opset <= 20; opset += 4) {
        ob_model *m = new_model(8, opset);
        ob_graph *gr = ob_main(m);
        ob_input(gr, "x", OB_FLOAT, "1,1,2,2,2");
        ob_input(gr, "g", OB_FLOAT, "1,1,1,3,3");
        ob_output(gr, "y", OB_FLOAT, NULL);
        ob_node_add(gr, "GridSample", "gs", "x,g", "y");
        if (opset == 16) {
            IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'gs'",
                         "GridSample before opset 20 takes 4-D X");
            continue;
        }
        plx_onnx_model *model = import_ok(m, NULL);
        expect_dims(&plx_onnx_model_output(model, 0)->info, (const int64_t[]){1, 1, 1, 1, 3}, 5,
                    "y");
        destroy_model(&model);
    }
    /* GridSample is opset 16; an unknown mode or padding; integer X */
    ob_model *m = new_model(8, 15);
    ob_graph *gr = ob_main(m);
    ob_input(gr, "x", OB_FLOAT, "1,1,2,2");
    ob_input(gr, "g", OB_FLOAT, "1,1,2,2");
    ob_output(gr, "y", OB_FLOAT, NULL);
    ob_node_add(gr, "GridSample", "gs", "x,g", "y");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "'gs'", "does not exist in opset 15");
    m = new_model(8, 20);
    gr = ob_main(m);
    ob_input(gr, "x", OB_FLOAT, "1,1,2,2");
    ob_input(gr, "g", OB_FLOAT, "1,1,2,2");
    ob_output(gr, "y", OB_FLOAT, NULL);
    ob_attr_s(ob_node_add(gr, "GridSample", "gs", "x,g", "y"), "mode", "area");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'gs'", "mode 'area' is not linear, nearest or cubic");
    m = new_model(8, 20);
    gr = ob_main(m);
    ob_input(gr, "x", OB_FLOAT, "1,1,2,2");
    ob_input(gr, "g", OB_FLOAT, "1,1,2,2");
    ob_output(gr, "y", OB_FLOAT, NULL);
    ob_attr_s(ob_node_add(gr, "GridSample", "gs", "x,g", "y"), "padding_mode", "wrap");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'gs'",
                 "padding_mode 'wrap' is not zeros, border or reflection");
    m = new_model(8, 20);
    gr = ob_main(m);
    ob_input(gr, "x", OB_INT32, "1,1,2,2");
    ob_input(gr, "g", OB_FLOAT, "1,1,2,2");
    ob_output(gr, "y", OB_INT32, NULL);
    ob_node_add(gr, "GridSample", "gs", "x,g", "y");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "GridSample", "X of type int32");
}

/* ------------------------------------------------------------------------ */
/* Resize: axes, keep_aspect_ratio_policy, antialias, cubic, tf_crop_and_resize */
/* ------------------------------------------------------------------------ */

/* A Resize-19 of x [1,1,2,4] = 1..8 with the given inputs (roi, scales,
 * sizes: initializers when their count is not 0, else absent) and
 * attributes set by the caller on the returned node. */
static ob_model *resize_model(const float *roi, size_t nr, const float *scales, size_t ns,
                              const int64_t *sizes, size_t nz, ob_node **node) {
    ob_model *m = new_model(8, 19);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,1,2,4");
    ob_output(g, "y", OB_FLOAT, NULL);
    if (nr) {
        ob_init_f32(g, "roi", OB_DIMS((int64_t)nr), roi, false);
    }
    if (ns) {
        ob_init_f32(g, "scales", OB_DIMS((int64_t)ns), scales, false);
    }
    if (nz) {
        ob_init_i64(g, "sizes", OB_DIMS((int64_t)nz), sizes, false);
    }
    char ins[32];
    snprintf(ins, sizeof ins, "x,%s,%s%s", nr ? "roi" : "", ns ? "scales" : "",
             nz ? ",sizes" : "");
    *node = ob_node_add(g, "Resize", "rs", ins, "y");
    return m;
}

static void resize_expect(ob_model *m, const int64_t *dims, const float *want, size_t n) {
    plx_onnx_model *model = import_ok(m, NULL);
    expect_dims(&plx_onnx_model_output(model, 0)->info, dims, 4, "y");
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[64];
    const void *ins[] = {x};
    void *outs[] = {y};
    run_once(model, ins, outs);
    expect_close(y, want, n, 1e-5f);
    destroy_model(&model);
}

/* axes name the dims that scales and sizes give, in their order; the
 * policies turn sizes into one scale (ONNX's examples: [1..8] as 2x4 to
 * 1x3 is 0.5 (not_larger, 1x2) or 0.75 (not_smaller, 2x3)). */
Test(onnx_import, resize_axes_and_keep_aspect_ratio) {
    ob_node *n;
    /* W doubled, H kept, given as axes [3, 2] */
    ob_model *m = resize_model(NULL, 0, (const float[]){2, 1}, 2, NULL, 0, &n);
    ob_attr_ints(n, "axes", (const int64_t[]){3, -2}, 2);
    resize_expect(m, (const int64_t[]){1, 1, 2, 8},
                  (const float[]){1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8}, 16);
    m = resize_model(NULL, 0, NULL, 0, (const int64_t[]){1, 3}, 2, &n);
    ob_attr_ints(n, "axes", (const int64_t[]){2, 3}, 2);
    ob_attr_s(n, "keep_aspect_ratio_policy", "not_larger");
    /* scale 0.5: H at 0.5 (half down: 0), W at 0.5, 2.5: 0, 2 */
    resize_expect(m, (const int64_t[]){1, 1, 1, 2}, (const float[]){1, 3}, 2);
    m = resize_model(NULL, 0, NULL, 0, (const int64_t[]){1, 3}, 2, &n);
    ob_attr_ints(n, "axes", (const int64_t[]){2, 3}, 2);
    ob_attr_s(n, "keep_aspect_ratio_policy", "not_smaller");
    resize_expect(m, (const int64_t[]){1, 1, 2, 3}, (const float[]){1, 2, 4, 5, 6, 8}, 6);
    /* a repeated axis, a policy ONNX does not have, a count that does
     * not match the axes */
    m = resize_model(NULL, 0, (const float[]){2, 2}, 2, NULL, 0, &n);
    ob_attr_ints(n, "axes", (const int64_t[]){3, -1}, 2);
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'rs'",
                 "attribute 'axes' entry 1 = -1 repeats axis 3");
    m = resize_model(NULL, 0, NULL, 0, (const int64_t[]){1, 3}, 2, &n);
    ob_attr_ints(n, "axes", (const int64_t[]){2, 3}, 2);
    ob_attr_s(n, "keep_aspect_ratio_policy", "fit");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "keep_aspect_ratio_policy='fit'");
    m = resize_model(NULL, 0, (const float[]){1, 1, 2, 2}, 4, NULL, 0, &n);
    ob_attr_ints(n, "axes", (const int64_t[]){2, 3}, 2);
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'rs'",
                 "input 2 (scales) has 4 values; it needs 2 (one per axis)");
    /* N and C stay */
    m = resize_model(NULL, 0, (const float[]){2}, 1, NULL, 0, &n);
    ob_attr_ints(n, "axes", (const int64_t[]){1}, 1);
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "Resize", "a scale of 2 on dim 1");
}

/* cubic (with its coefficient and exclude_outside), antialias and
 * tf_crop_and_resize reach the layer; tf_crop_and_resize needs sizes. */
Test(onnx_import, resize_cubic_antialias_tf_crop) {
    ob_node *n;
    /* cubic at whole coordinates (W doubled, asymmetric: even outputs
     * read x itself) */
    ob_model *m = resize_model(NULL, 0, (const float[]){1, 1, 1, 2}, 4, NULL, 0, &n);
    ob_attr_s(n, "mode", "cubic");
    ob_attr_s(n, "coordinate_transformation_mode", "asymmetric");
    ob_attr_f(n, "cubic_coeff_a", -0.5f);
    ob_attr_i(n, "exclude_outside", 1);
    plx_onnx_model *model = import_ok(m, NULL);
    expect_dims(&plx_onnx_model_output(model, 0)->info, (const int64_t[]){1, 1, 2, 8}, 4, "y");
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[16];
    const void *ins[] = {x};
    void *outs[] = {y};
    run_once(model, ins, outs);
    for (int i = 0; i < 8; i += 2) {
        cr_assert(le(flt, fabsf(y[i] - x[i / 2]), 1e-5f), "y[%d] = %g", i, (double)y[i]);
    }
    /* a = -0.5 reproduces the line 1..4: 2.5 at 1.5 (its taps 0..3 are
     * all inside, exclude_outside changes nothing there) */
    cr_assert(le(flt, fabsf(y[3] - 2.5f), 1e-5f), "y[3] = %g", (double)y[3]);
    destroy_model(&model);
    /* linear antialias halving W: [1, 2, 3, 4] -> 1.625, 3.375 */
    m = resize_model(NULL, 0, (const float[]){1, 1, 1, 0.5f}, 4, NULL, 0, &n);
    ob_attr_s(n, "mode", "linear");
    ob_attr_i(n, "antialias", 1);
    resize_expect(m, (const int64_t[]){1, 1, 2, 2}, (const float[]){1.625f, 3.375f, 5.625f, 7.375f},
                  4);
    /* antialias has no effect on nearest */
    m = resize_model(NULL, 0, (const float[]){1, 1, 1, 0.5f}, 4, NULL, 0, &n);
    ob_attr_i(n, "antialias", 1);
    resize_expect(m, (const int64_t[]){1, 1, 2, 2}, (const float[]){1, 3, 5, 7}, 4);
    /* tf_crop_and_resize: W cropped to [0.25, 1.25] of 0..3 (x_in 0.75,
     * 2.25, 3.75 past the end: extrapolation 9), H to [0, 1] */
    m = resize_model((const float[]){0, 0, 0, 0.25f, 1, 1, 1, 1.25f}, 8, NULL, 0,
                     (const int64_t[]){1, 1, 2, 3}, 4, &n);
    ob_attr_s(n, "mode", "linear");
    ob_attr_s(n, "coordinate_transformation_mode", "tf_crop_and_resize");
    ob_attr_f(n, "extrapolation_value", 9.0f);
    resize_expect(m, (const int64_t[]){1, 1, 2, 3},
                  (const float[]){1.75f, 3.25f, 9, 5.75f, 7.25f, 9}, 6);
    m = resize_model((const float[]){0, 0, 0, 0, 1, 1, 1, 1}, 8,
                     (const float[]){1, 1, 2, 2}, 4, NULL, 0, &n);
    ob_attr_s(n, "coordinate_transformation_mode", "tf_crop_and_resize");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "tf_crop_and_resize with scales");
    /* a roi on N or C (of 1 point: every roi reads it) is fine; nearest,
     * W at 0, 1.5, 3 (half down): 0, 1, 3 */
    m = resize_model((const float[]){0.5f, 0, 0, 0, 1, 1, 1, 1}, 8, NULL, 0,
                     (const int64_t[]){1, 1, 2, 3}, 4, &n);
    ob_attr_s(n, "coordinate_transformation_mode", "tf_crop_and_resize");
    resize_expect(m, (const int64_t[]){1, 1, 2, 3}, (const float[]){1, 2, 4, 5, 6, 8}, 6);
}

/* ------------------------------------------------------------------------ */
/* CenterCropPad, EyeLike, MeanVarianceNormalization, LRN: compositions       */
/* ------------------------------------------------------------------------ */

/* X [4,3] = 0..11 to [2,5]: H cropped by 2 (rows 1 and 2), W padded by 2
 * (a zero either side); the last axis alone to 2: W cropped by 1, the
 * odd column off the end. */
Test(onnx_import, center_crop_pad_one_pad_layer) {
    float x[12], y[10];
    for (int i = 0; i < 12; i++) {
        x[i] = (float)i;
    }
    for (int with_axes = 0; with_axes < 2; with_axes++) {
        ob_model *m = new_model(8, 18);
        ob_graph *g = ob_main(m);
        ob_input(g, "x", OB_FLOAT, "4,3");
        ob_output(g, "y", OB_FLOAT, NULL);
        if (with_axes) {
            ob_init_i64(g, "shape", OB_DIMS(1), (const int64_t[]){2}, false);
        } else {
            ob_init_i64(g, "shape", OB_DIMS(2), (const int64_t[]){2, 5}, false);
        }
        ob_node *n = ob_node_add(g, "CenterCropPad", "ccp", "x,shape", "y");
        if (with_axes) {
            ob_attr_ints(n, "axes", (const int64_t[]){-1}, 1);
        }
        plx_onnx_model *model = import_ok(m, NULL);
        const void *ins[] = {x};
        void *outs[] = {y};
        run_once(model, ins, outs);
        if (with_axes) {
            expect_dims(&plx_onnx_model_output(model, 0)->info, (const int64_t[]){4, 2}, 2, "y");
            expect_close(y, (const float[]){0, 1, 3, 4, 6, 7, 9, 10}, 8, 0);
        } else {
            expect_dims(&plx_onnx_model_output(model, 0)->info, (const int64_t[]){2, 5}, 2, "y");
            expect_close(y, (const float[]){0, 3, 4, 5, 0, 0, 6, 7, 8, 0}, 10, 0);
        }
        destroy_model(&model);
    }
    ob_model *m = new_model(8, 18);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "4,3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "shape", OB_DIMS(3), (const int64_t[]){2, 5, 1}, false);
    ob_node_add(g, "CenterCropPad", "ccp", "x,shape", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'ccp'",
                 "input 1 (shape) has 3 values; it needs 2 (one per dim of X)");
    m = new_model(8, 17);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "4,3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "shape", OB_DIMS(2), (const int64_t[]){2, 5}, false);
    ob_node_add(g, "CenterCropPad", "ccp", "x,shape", "y");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "'ccp'", "does not exist in opset 17");
}

/* EyeLike is a constant of its input's shape: float 1s on the diagonal
 * above the main one (k = 1) of a [3,4] int32 input; the input's type by
 * default; none when k is past the matrix. */
Test(onnx_import, eye_like_constant) {
    for (int variant = 0; variant < 3; variant++) {
        ob_model *m = new_model(8, 22);
        ob_graph *g = ob_main(m);
        ob_input(g, "x", variant == 1 ? OB_INT64 : OB_INT32, "3,4");
        ob_output(g, "y", variant == 1 ? OB_INT64 : OB_FLOAT, NULL);
        ob_node *n = ob_node_add(g, "EyeLike", "eye", "x", "y");
        if (variant != 1) {
            ob_attr_i(n, "dtype", OB_FLOAT);
            ob_attr_i(n, "k", variant == 0 ? 1 : INT64_MIN);
        }
        plx_onnx_model *model = import_ok(m, NULL);
        expect_dims(&plx_onnx_model_output(model, 0)->info, (const int64_t[]){3, 4}, 2, "y");
        int32_t xi[12] = {0};
        int64_t xl[12] = {0}, yl[12];
        float yf[12];
        const void *ins[] = {variant == 1 ? (const void *)xl : (const void *)xi};
        void *outs[] = {variant == 1 ? (void *)yl : (void *)yf};
        run_once(model, ins, outs);
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 4; j++) {
                double want = variant == 0 ? (j - i == 1) : variant == 1 ? (i == j) : 0;
                double got = variant == 1 ? (double)yl[i * 4 + j] : (double)yf[i * 4 + j];
                cr_assert(eq(dbl, got, want), "variant %d [%d][%d]", variant, i, j);
            }
        }
        destroy_model(&model);
    }
    ob_model *m = new_model(8, 22);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,3,4");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "EyeLike", "eye", "x", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'eye'", "EyeLike takes a 2-D tensor");
    m = new_model(8, 22);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,3");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_attr_i(ob_node_add(g, "EyeLike", "eye", "x", "y"), "dtype",
              ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64);
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "EyeLike", "dtype COMPLEX64");
}

/* MeanVarianceNormalization over N, H and W (the default axes): channel 0
 * [1, 3] has mean 2 and deviation 1, channel 1 [10, 14] mean 12 and
 * deviation 2: both become [-1, 1]. Over W alone (axes [3]) too. */
Test(onnx_import, mvn_composition) {
    float x[4] = {1, 3, 10, 14}, y[4];
    for (int with_axes = 0; with_axes < 2; with_axes++) {
        ob_model *m = new_model(8, 13);
        ob_graph *g = ob_main(m);
        ob_input(g, "x", OB_FLOAT, "1,2,1,2");
        ob_output(g, "y", OB_FLOAT, NULL);
        ob_node *n = ob_node_add(g, "MeanVarianceNormalization", "mvn", "x", "y");
        if (with_axes) {
            ob_attr_ints(n, "axes", (const int64_t[]){3}, 1);
        }
        plx_onnx_model *model = import_ok(m, NULL);
        const void *ins[] = {x};
        void *outs[] = {y};
        run_once(model, ins, outs);
        expect_close(y, (const float[]){-1, 1, -1, 1}, 4, 1e-6f);
        destroy_model(&model);
    }
}

/* LRN over 3 channels [1, 2, 3] with size 2 (each channel and the next),
 * alpha 3, beta 1, bias 1: squared sums 5, 13 and 9 (the last has no
 * next), Y = x / (1 + 3 / 2 * sum): 1 / 8.5, 2 / 20.5, 3 / 14.5. float16
 * X is not imported. */
Test(onnx_import, lrn_composition) {
    ob_model *m = new_model(8, 13);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,3,1,1");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node *n = ob_node_add(g, "LRN", "lrn", "x", "y");
    ob_attr_i(n, "size", 2);
    ob_attr_f(n, "alpha", 3.0f);
    ob_attr_f(n, "beta", 1.0f);
    ob_attr_f(n, "bias", 1.0f);
    plx_onnx_model *model = import_ok(m, NULL);
    float x[3] = {1, 2, 3}, y[3];
    const void *ins[] = {x};
    void *outs[] = {y};
    run_once(model, ins, outs);
    expect_close(y, (const float[]){1 / 8.5f, 2 / 20.5f, 3 / 14.5f}, 3, 1e-6f);
    destroy_model(&model);
    m = new_model(8, 13);
    g = ob_main(m);
    ob_input(g, "x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, "1,3,1,1");
    ob_output(g, "y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, NULL);
    ob_attr_i(ob_node_add(g, "LRN", "lrn", "x", "y"), "size", 3);
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "LRN", "X of type float16");
    m = new_model(8, 13);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,3,1,1");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "LRN", "lrn", "x", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'lrn'", "size = 0 must be in [1, ");
}

/* ------------------------------------------------------------------------ */
/* IsInf's detect flags, BitShift's direction, LpPool's p                     */
/* ------------------------------------------------------------------------ */

static ob_model *isinf_model(int pos, int neg) {
    ob_model *m = new_model(IR, 20);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "5");
    ob_output(g, "y", OB_BOOL, NULL);
    ob_node *n = ob_node_add(g, "IsInf", "isinf", "x", "y");
    if (pos >= 0) {
        ob_attr_i(n, "detect_positive", pos);
    }
    if (neg >= 0) {
        ob_attr_i(n, "detect_negative", neg);
    }
    return m;
}

/* Each combination of the flags; both 0 detects nothing (all false). */
Test(onnx_import, isinf_detect_flags) {
    const float x[5] = {1.0f, INFINITY, -INFINITY, NAN, -0.0f};
    static const struct {
        int pos, neg;
        uint8_t want[5];
    } cases[] = {
        {-1, -1, {0, 1, 1, 0, 0}},
        {1, 0, {0, 1, 0, 0, 0}},
        {0, 1, {0, 0, 1, 0, 0}},
        {0, 0, {0, 0, 0, 0, 0}},
    };
    for (size_t k = 0; k < COUNT(cases); k++) {
        plx_onnx_model *model = import_ok(isinf_model(cases[k].pos, cases[k].neg), NULL);
        uint8_t y[5];
        const void *ins[] = {x};
        void *outs[] = {y};
        run_once(model, ins, outs);
        for (int i = 0; i < 5; i++) {
            cr_assert(eq(u8, y[i], cases[k].want[i]), "case %zu element %d", k, i);
        }
        destroy_model(&model);
    }
}

static ob_model *bitshift_model(const char *direction) {
    ob_model *m = new_model(IR, 11);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_UINT8, "4");
    ob_input(g, "s", OB_UINT8, "4");
    ob_output(g, "y", OB_UINT8, NULL);
    ob_node *n = ob_node_add(g, "BitShift", "shift", "x,s", "y");
    if (direction) {
        ob_attr_s(n, "direction", direction);
    }
    return m;
}

Test(onnx_import, bitshift_direction) {
    const uint8_t x[4] = {16, 4, 1, 255}, s[4] = {1, 2, 3, 8};
    const uint8_t right[4] = {8, 1, 0, 0}, left[4] = {32, 16, 8, 0};
    for (int k = 0; k < 2; k++) {
        plx_onnx_model *model = import_ok(bitshift_model(k ? "LEFT" : "RIGHT"), NULL);
        uint8_t y[4];
        const void *ins[] = {x, s};
        void *outs[] = {y};
        run_once(model, ins, outs);
        cr_assert(eq(int, memcmp(y, k ? left : right, 4), 0), "%s: %u %u %u %u",
                  k ? "LEFT" : "RIGHT", y[0], y[1], y[2], y[3]);
        destroy_model(&model);
    }
    IMPORT_FAILS(bitshift_model(NULL), NULL, PLX_INVALID_ARGUMENT, "node 'shift'", "direction");
    IMPORT_FAILS(bitshift_model("UP"), NULL, PLX_INVALID_ARGUMENT, "node 'shift'",
                 "direction 'UP' is neither LEFT nor RIGHT");
}

/* LpPool at opsets 11 and 18, GlobalLpPool; p < 1 is invalid and a float
 * p (LpPool-1's, before the opsets Plexus imports) a bad attribute.
 * X [1,1,2,2] = 1, -2, 3, -4, kernel 2: p 1 gives 10, p 2 sqrt(30), p 3
 * cbrt(100). */
static ob_model *lppool_model(int64_t opset, bool global, int64_t p, bool float_p) {
    ob_model *m = new_model(IR, opset);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,1,2,2");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node *n = ob_node_add(g, global ? "GlobalLpPool" : "LpPool", "lp", "x", "y");
    if (!global) {
        ob_attr_ints(n, "kernel_shape", (const int64_t[]){2, 2}, 2);
    }
    if (float_p) {
        ob_attr_f(n, "p", (float)p);
    } else if (p) {
        ob_attr_i(n, "p", p);
    }
    return m;
}

Test(onnx_import, lppool_p) {
    const float x[4] = {1, -2, 3, -4};
    static const struct {
        int64_t opset;
        bool global;
        int64_t p;
        float want;
    } cases[] = {
        {11, false, 3, 4.641588834f},
        {11, false, 1, 10.0f},
        {18, false, 0, 5.477225575f}, /* default 2 */
        {13, true, 1, 10.0f},
        {13, true, 3, 4.641588834f},
    };
    for (size_t k = 0; k < COUNT(cases); k++) {
        plx_onnx_model *model =
            import_ok(lppool_model(cases[k].opset, cases[k].global, cases[k].p, false), NULL);
        float y[1];
        const void *ins[] = {x};
        void *outs[] = {y};
        run_once(model, ins, outs);
        expect_close(y, &cases[k].want, 1, 1e-6f);
        destroy_model(&model);
    }
    IMPORT_FAILS(lppool_model(11, false, -1, false), NULL, PLX_INVALID_ARGUMENT, "node 'lp'",
                 "p = -1 must be at least 1");
    IMPORT_FAILS(lppool_model(11, false, 2, true), NULL, PLX_INVALID_ARGUMENT, "node 'lp'", "'p'");
}

/* ------------------------------------------------------------------------ */
/* GroupNormalization: instance_norm over [N, G, C/G x spatial]              */
/* ------------------------------------------------------------------------ */

static ob_model *group_norm_model(int opset, int64_t groups, int64_t params,
                                  const float *scale, const float *bias) {
    ob_model *m = new_model(IR, opset);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,4,2");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_f32(g, "s", OB_DIMS(params), scale, false);
    ob_init_f32(g, "b", OB_DIMS(params), bias, false);
    ob_attr_i(ob_node_add(g, "GroupNormalization", "gn", "x,s,b", "y"), "num_groups", groups);
    return m;
}

/* Two groups of two channels of [1, 4, 2]: each group normalised over its
 * four values; opset 18 scales and shifts per group, opset 21 per
 * channel. The reference is computed here from the definition. */
Test(onnx_import, group_normalization_per_group_and_per_channel) {
    const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    /* both groups hold four consecutive values: mean m + 2.5, variance 1.25 */
    float inv = 1.0f / sqrtf(1.25f + 1e-5f), norm[8];
    for (int i = 0; i < 8; i++) {
        norm[i] = ((float)(i % 4) - 1.5f) * inv;
    }
    float y[8], want[8];
    const float gs[2] = {1, 2}, gb[2] = {0, 1};
    plx_onnx_model *model = import_ok(group_norm_model(18, 2, 2, gs, gb), NULL);
    run_once(model, (const void *const[]){x}, (void *const[]){y});
    for (int i = 0; i < 8; i++) {
        want[i] = norm[i] * gs[i / 4] + gb[i / 4];
    }
    expect_close(y, want, 8, 1e-5f);
    destroy_model(&model);

    const float cs[4] = {1, 2, 3, 4}, cb[4] = {0, 0, 0, 10};
    model = import_ok(group_norm_model(21, 2, 4, cs, cb), NULL);
    run_once(model, (const void *const[]){x}, (void *const[]){y});
    for (int i = 0; i < 8; i++) {
        want[i] = norm[i] * cs[i / 2] + cb[i / 2];
    }
    expect_close(y, want, 8, 1e-5f);
    destroy_model(&model);

    /* groups that do not divide the channels; per-group parameters at 21 */
    IMPORT_FAILS(group_norm_model(21, 3, 4, cs, cb), NULL, PLX_INVALID_ARGUMENT, "node 'gn'",
                 "num_groups = 3 must be >= 1 and divide the 4 channels");
    IMPORT_FAILS(group_norm_model(21, 2, 2, gs, gb), NULL, PLX_INVALID_ARGUMENT, "node 'gn'",
                 "scale must be [4] (one value per channel)");
}

/* ------------------------------------------------------------------------ */
/* The com.microsoft QOperator forms: dequantize, float layer, quantize      */
/* ------------------------------------------------------------------------ */

/* A uint8 initializer (raw bytes). */
static void init_u8(ob_model *m, ob_graph *g, const char *name, const int64_t *dims,
                    size_t rank, const uint8_t *v, size_t n) {
    Onnx__TensorProto *t = ob_tensor(m, name, OB_UINT8, dims, rank);
    ob_tensor_raw(m, t, v, n);
    ob_initializer(g, t);
}

/* x (uint8 [1,2,2,2], scale 0.5, zero point 10) through one com.microsoft
 * operator to y (uint8, scale 0.25, zero point 20). */
static ob_model *microsoft_model(const char *op, const char *inputs, bool domain) {
    ob_model *m = new_model(IR, 13);
    if (domain) {
        ob_model_opset(m, "com.microsoft", 1);
    }
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_UINT8, "1,2,2,2");
    ob_output(g, "y", OB_UINT8, NULL);
    ob_init_f32(g, "xs", OB_SCALAR, (const float[]){0.5f}, false);
    init_u8(m, g, "xz", OB_SCALAR, (const uint8_t[]){10}, 1);
    ob_init_f32(g, "ys", OB_SCALAR, (const float[]){0.25f}, false);
    init_u8(m, g, "yz", OB_SCALAR, (const uint8_t[]){20}, 1);
    init_u8(m, g, "c", OB_DIMS(1, 2, 1, 1), (const uint8_t[]){12, 8}, 2);
    ob_node *n = ob_node_add(g, op, "q", inputs, "y");
    ob_node_domain(n, "com.microsoft");
    if (strcmp(op, "QLinearLeakyRelu") == 0) {
        ob_attr_f(n, "alpha", 0.5f);
    }
    if (strcmp(op, "QLinearConcat") == 0) {
        ob_attr_i(n, "axis", 1);
    }
    if (strcmp(op, "QLinearAveragePool") == 0) {
        ob_attr_ints(n, "kernel_shape", (const int64_t[]){2, 1}, 2);
    }
    return m;
}

static uint8_t requantize_u8(float real) {
    float v = nearbyintf(real / 0.25f) + 20.0f;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

Test(onnx_import, microsoft_qlinear_operators) {
    const uint8_t x[8] = {10, 12, 8, 30, 0, 255, 14, 6};
    float real[8];
    for (int i = 0; i < 8; i++) {
        real[i] = ((float)x[i] - 10.0f) * 0.5f;
    }
    /* c: [1,2,1,1] = 12, 8 with x's parameters: 1 and -1 */
    const float c_real[2] = {1.0f, -1.0f};
    uint8_t y[8], want[8];
    struct {
        const char *op, *inputs;
        int kind; /* 0 add, 1 mul, 2 sigmoid, 3 leaky relu */
    } cases[] = {{"QLinearAdd", "x,xs,xz,c,xs,xz,ys,yz", 0},
                 {"QLinearMul", "x,xs,xz,c,xs,xz,ys,yz", 1},
                 {"QLinearSigmoid", "x,xs,xz,ys,yz", 2},
                 {"QLinearLeakyRelu", "x,xs,xz,ys,yz", 3}};
    for (size_t k = 0; k < COUNT(cases); k++) {
        plx_onnx_model *model = import_ok(microsoft_model(cases[k].op, cases[k].inputs, true), NULL);
        run_once(model, (const void *const[]){x}, (void *const[]){y});
        for (int i = 0; i < 8; i++) {
            float r = real[i], c = c_real[i / 4];
            float v = cases[k].kind == 0   ? r + c
                      : cases[k].kind == 1 ? r * c
                      : cases[k].kind == 2 ? 1.0f / (1.0f + expf(-r))
                                           : (r < 0 ? 0.5f * r : r);
            want[i] = requantize_u8(v);
            cr_assert(le(int, abs((int)y[i] - (int)want[i]), cases[k].kind == 2 ? 1 : 0),
                      "%s element %d: got %d, want %d", cases[k].op, i, y[i], want[i]);
        }
        destroy_model(&model);
    }
    /* global average pool: channel means 21.5 / 4 and -3.5 / 4 (reals) */
    plx_onnx_model *model = import_ok(microsoft_model("QLinearGlobalAveragePool",
                                                      "x,xs,xz,ys,yz", true), NULL);
    run_once(model, (const void *const[]){x}, (void *const[]){y});
    cr_assert(eq(u8, y[0], requantize_u8((real[0] + real[1] + real[2] + real[3]) / 4)));
    cr_assert(eq(u8, y[1], requantize_u8((real[4] + real[5] + real[6] + real[7]) / 4)));
    destroy_model(&model);
    /* average pool 2x1: the means of each column's two rows */
    model = import_ok(microsoft_model("QLinearAveragePool", "x,xs,xz,ys,yz", true), NULL);
    run_once(model, (const void *const[]){x}, (void *const[]){y});
    for (int i = 0; i < 4; i++) {
        int c = i / 2, w = i % 2;
        cr_assert(eq(u8, y[i], requantize_u8((real[c * 4 + w] + real[c * 4 + 2 + w]) / 2)),
                  "average pool element %d", i);
    }
    destroy_model(&model);
    /* concat along channels of x and c (broadcast-free: c is [1,2,1,1], so
     * concat x with itself here) */
    model = import_ok(microsoft_model("QLinearConcat", "ys,yz,x,xs,xz,x,xs,xz", true), NULL);
    uint8_t y2[16];
    run_once(model, (const void *const[]){x}, (void *const[]){y2});
    for (int i = 0; i < 16; i++) {
        cr_assert(eq(u8, y2[i], requantize_u8(real[i % 8])), "concat element %d", i);
    }
    destroy_model(&model);
}

Test(onnx_import, microsoft_operators_need_their_domain_and_a_known_op) {
    /* an unknown com.microsoft operator is named with its domain */
    IMPORT_FAILS(microsoft_model("QAttention", "x", true), NULL, PLX_UNSUPPORTED,
                 "node 'q' (com.microsoft.QAttention", "domain");
}

/* ------------------------------------------------------------------------ */
/* The digits example quantized by onnxruntime.quantization                  */
/* ------------------------------------------------------------------------ */

#ifndef QUANTIZED_DIGITS_DIR
#error "QUANTIZED_DIGITS_DIR must be defined by the build"
#endif

/* tests/data/quantized-digits: the QDQ, QOperator and dynamic files run on
 * cpu_ref and give ONNX Runtime's outputs on the ten example images: the
 * static ones exactly (their int8 layers compute what ONNX Runtime's do),
 * the dynamic one to float rounding. */
Test(onnx_import, quantized_digits_match_onnx_runtime) {
    const char *formats[] = {"qdq", "qop", "dyn"};
    for (size_t f = 0; f < COUNT(formats); f++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s.onnx", QUANTIZED_DIGITS_DIR, formats[f]);
        plx_onnx_model *model = NULL;
        plx_status st = plx_onnx_import_file(path, NULL, &model);
        live.st = st;
        cr_assert(zero(ptr, st), "%s: %s", path, plx_status_get_message(st));
        live.model = model;
        plx_runtime *rt = make_runtime();
        plx_loaded_network *ln = load_model(rt, model);
        for (int label = 0; label <= 9; label++) {
            char in_path[PATH_MAX], want_path[PATH_MAX], err[256];
            snprintf(in_path, sizeof in_path, "%s/inputs/digit-%d.npy", DIGITS_DIR, label);
            snprintf(want_path, sizeof want_path, "%s/expected-%s/digit-%d.npy",
                     QUANTIZED_DIGITS_DIR, formats[f], label);
            npy_array x, want;
            cr_assert(npy_read(in_path, &x, err, sizeof err), "%s", err);
            cr_assert(npy_read(want_path, &want, err, sizeof err), "%s", err);
            float y[10];
            cr_assert(eq(sz, want.bytes, sizeof y));
            run_loaded(ln, model, (const void *const[]){x.data}, (void *const[]){y});
            const float *w = want.data;
            double tol = f < 2 ? 0.0 : 1e-6;
            for (int i = 0; i < 10; i++) {
                cr_assert(le(dbl, fabs((double)y[i] - w[i]), tol), "%s, digit %d, class %d: %.9g vs %.9g",
                          formats[f], label, i, (double)y[i], (double)w[i]);
            }
            npy_free(&x);
            npy_free(&want);
        }
        plx_loaded_network_unload(&ln);
        live.ln = NULL;
        plx_runtime_destroy(&rt);
        live.rt = NULL;
        destroy_model(&model);
    }
}

/* ------------------------------------------------------------------------ */
/* Window functions and the mel matrix: constants made at import             */
/* ------------------------------------------------------------------------ */

static ob_model *window_model(const char *op, int64_t size, bool periodic) {
    ob_model *m = new_model(IR, 17);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "5");
    ob_output(g, "y", OB_FLOAT, NULL);
    Onnx__TensorProto *t = ob_tensor(m, "size", OB_INT64, NULL, 0);
    ob_tensor_int64s(m, t, &size, 1);
    ob_initializer(g, t);
    ob_attr_i(ob_node_add(g, op, "w", "size", "win"), "periodic", periodic);
    ob_node_add(g, "Mul", "mul", "x,win", "y");
    return m;
}

Test(onnx_import, window_functions) {
    const float x[5] = {1, 1, 1, 1, 2};
    float y[5];
    const double pi = 3.14159265358979323846;
    const char *ops[] = {"HannWindow", "HammingWindow", "BlackmanWindow"};
    for (int k = 0; k < 3; k++) {
        for (int periodic = 0; periodic < 2; periodic++) {
            plx_onnx_model *model = import_ok(window_model(ops[k], 5, periodic), NULL);
            run_once(model, (const void *const[]){x}, (void *const[]){y});
            double period = periodic ? 5.0 : 4.0;
            for (int i = 0; i < 5; i++) {
                double a = 2.0 * pi * i / period;
                double w = k == 0   ? 0.5 - 0.5 * cos(a)
                           : k == 1 ? 25.0 / 46.0 - 21.0 / 46.0 * cos(a)
                                    : 0.42 - 0.5 * cos(a) + 0.08 * cos(2.0 * a);
                cr_assert(le(dbl, fabs((double)y[i] - x[i] * w), 1e-6), "%s periodic %d [%d]: %g vs %g",
                          ops[k], periodic, i, (double)y[i], x[i] * w);
            }
            destroy_model(&model);
        }
    }
    IMPORT_FAILS(window_model("HannWindow", -1, true), NULL, PLX_INVALID_ARGUMENT, "node 'w'",
                 "size -1 must be 0 to");
}

/* ------------------------------------------------------------------------ */
/* DFT and STFT: lengths, steps and axes read at import                      */
/* ------------------------------------------------------------------------ */

/* DFT of [1, 2, 3, 4] (kernels test: [10, -2+2i, -2, -2-2i]): at opset 17
 * with axis an attribute and dft_length an initializer, at opset 20 with
 * axis an initializer input and onesided (3 bins). */
Test(onnx_import, dft_opsets_axis_and_length) {
    const float x[4] = {1, 2, 3, 4};
    const float want[8] = {10, 0, -2, 2, -2, 0, -2, -2};
    float y[8];
    ob_model *m = new_model(8, 17);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,4,1");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "len", OB_SCALAR, (const int64_t[]){4}, false);
    ob_node *n = ob_node_add(g, "DFT", "f", "x,len", "y");
    ob_attr_i(n, "axis", 1);
    plx_onnx_model *model = import_ok(m, NULL);
    run_once(model, (const void *const[]){x}, (void *const[]){y});
    expect_close(y, want, 8, 1e-6f);
    destroy_model(&model);

    m = new_model(8, 20);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,4,1");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "axis", OB_SCALAR, (const int64_t[]){-2}, false);
    n = ob_node_add(g, "DFT", "f", "x,,axis", "y");
    ob_attr_i(n, "onesided", 1);
    model = import_ok(m, NULL);
    cr_assert(eq(sz, plx_onnx_model_input_count(model), 1), "axis is not an input");
    run_once(model, (const void *const[]){x}, (void *const[]){y});
    expect_close(y, want, 6, 1e-6f);
    destroy_model(&model);

    /* an inverse onesided transform is refused; a length computed from
     * the graph's inputs cannot be known at import */
    m = new_model(8, 20);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,4,2");
    ob_output(g, "y", OB_FLOAT, NULL);
    n = ob_node_add(g, "DFT", "f", "x", "y");
    ob_attr_i(n, "onesided", 1);
    ob_attr_i(n, "inverse", 1);
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "'f'", "inverse onesided");
    m = new_model(8, 20);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,4,1");
    ob_input(g, "len", OB_INT64, "");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "DFT", "f", "x,len", "y");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "'f'", "dft_length", "known at import");
    m = new_model(8, 20);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,4,1");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "len", OB_SCALAR, (const int64_t[]){0}, false);
    ob_node_add(g, "DFT", "f", "x,len", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'f'", "dft_length 0 must be a whole number");
}

/* STFT of [1, 2, 3, 4, 5] in frames of 2 every 2 (kernels test): the
 * window a graph input, the frame length its size; or no window and
 * frame_length an initializer. */
Test(onnx_import, stft_window_and_frame_length) {
    const float x[5] = {1, 2, 3, 4, 5}, w[2] = {1, 0.5f};
    float y[8];
    ob_model *m = new_model(8, 17);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,5,1");
    ob_input(g, "w", OB_FLOAT, "2");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "step", OB_SCALAR, (const int64_t[]){2}, false);
    ob_node_add(g, "STFT", "s", "x,step,w", "y");
    plx_onnx_model *model = import_ok(m, NULL);
    run_once(model, (const void *const[]){x, w}, (void *const[]){y});
    expect_close(y, (const float[]){2, 0, 0, 0, 5, 0, 1, 0}, 8, 1e-6f);
    destroy_model(&model);

    m = new_model(8, 17);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,5,1");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "step", OB_SCALAR, (const int64_t[]){2}, false);
    ob_init_i64(g, "fl", OB_SCALAR, (const int64_t[]){2}, false);
    ob_node_add(g, "STFT", "s", "x,step,,fl", "y");
    model = import_ok(m, NULL);
    run_once(model, (const void *const[]){x}, (void *const[]){y});
    expect_close(y, (const float[]){3, 0, -1, 0, 7, 0, -1, 0}, 8, 1e-6f);
    destroy_model(&model);

    m = new_model(8, 17);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,5,1");
    ob_input(g, "step", OB_INT64, "");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "STFT", "s", "x,step", "y");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "'s'", "frame_step", "known at import");
}

/* Col2Im: image_shape and block_shape initializers, pads as begins then
 * ends. Image 3 x 3, blocks 2 x 2 every 2 over the image padded by 1: the
 * 4 blocks cover each pixel once, so X [1, 4, 4] of block b, block l
 * = 10 b + l puts at pixel (i, j) the value of the block l holding it at
 * offset b. Pixel (0, 0) is offset (1, 1) (b 3) of block 0: 30; pixel
 * (1, 1) offset (0, 0) of block 3: 3; pixel (2, 2) offset (1, 1) of block
 * 3: 33. */
Test(onnx_import, col2im_pads_strides) {
    ob_model *m = new_model(8, 18);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,4,4");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "img", (const int64_t[]){2}, 1, (const int64_t[]){3, 3}, false);
    ob_init_i64(g, "blk", (const int64_t[]){2}, 1, (const int64_t[]){2, 2}, true);
    ob_node *n = ob_node_add(g, "Col2Im", "c", "x,img,blk", "y");
    ob_attr_ints(n, "strides", (const int64_t[]){2, 2}, 2);
    ob_attr_ints(n, "pads", (const int64_t[]){1, 1, 1, 1}, 4);
    plx_onnx_model *model = import_ok(m, NULL);
    float x[16], y[9];
    for (int b = 0; b < 4; b++) {
        for (int l = 0; l < 4; l++) {
            x[b * 4 + l] = (float)(10 * b + l);
        }
    }
    run_once(model, (const void *const[]){x}, (void *const[]){y});
    cr_assert(eq(flt, y[0], 30.0f));
    cr_assert(eq(flt, y[4], 3.0f));
    cr_assert(eq(flt, y[8], 33.0f));
    destroy_model(&model);

    m = new_model(8, 18);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,4,4");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "img", (const int64_t[]){2}, 1, (const int64_t[]){3, 3}, false);
    ob_init_i64(g, "blk", (const int64_t[]){1}, 1, (const int64_t[]){2}, false);
    ob_node_add(g, "Col2Im", "c", "x,img,blk", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'c'",
                 "input 2 (block_shape) has 1 values; it needs 2 (one per value of image_shape)");
}

/* AffineGrid: theta [1, 2, 3] = [[1, 0, 0.25], [0, 2, 0]] over size
 * [1, 1, 2, 3]. With align_corners the coordinates are x in {-1, 0, 1}
 * (W) and y in {-1, 1} (H), each point (x + 0.25, 2 y); without, x in
 * {-2/3, 0, 2/3} and y in {-1/2, 1/2}. 3-D: size [1, 1, 1, 1, 2] has x
 * in {-1/2, 1/2} and y = z = 0 (a dim of 1 is its centre, 0); theta the
 * identity moved by 1 along z gives (x, 0, 1). */
Test(onnx_import, affine_grid_2d_3d_align_corners) {
    const float theta[6] = {1, 0, 0.25f, 0, 2, 0};
    float grid[12];
    for (int align = 0; align < 2; align++) {
        ob_model *m = new_model(8, 20);
        ob_graph *g = ob_main(m);
        ob_input(g, "theta", OB_FLOAT, "1,2,3");
        ob_output(g, "grid", OB_FLOAT, NULL);
        ob_init_i64(g, "size", (const int64_t[]){4}, 1, (const int64_t[]){1, 1, 2, 3}, false);
        ob_node *n = ob_node_add(g, "AffineGrid", "a", "theta,size", "grid");
        ob_attr_i(n, "align_corners", align);
        plx_onnx_model *model = import_ok(m, NULL);
        run_once(model, (const void *const[]){theta}, (void *const[]){grid});
        const float xs[3] = {align ? -1.0f : -2.0f / 3, 0, align ? 1.0f : 2.0f / 3};
        const float ys[2] = {align ? -1.0f : -0.5f, align ? 1.0f : 0.5f};
        float want[12];
        for (int h = 0; h < 2; h++) {
            for (int w = 0; w < 3; w++) {
                want[(h * 3 + w) * 2] = xs[w] + 0.25f;
                want[(h * 3 + w) * 2 + 1] = 2 * ys[h];
            }
        }
        expect_close(grid, want, 12, 1e-6f);
        destroy_model(&model);
    }

    ob_model *m = new_model(8, 20);
    ob_graph *g = ob_main(m);
    ob_input(g, "theta", OB_FLOAT, "1,3,4");
    ob_output(g, "grid", OB_FLOAT, NULL);
    ob_init_i64(g, "size", (const int64_t[]){5}, 1, (const int64_t[]){1, 1, 1, 1, 2}, false);
    ob_node_add(g, "AffineGrid", "a", "theta,size", "grid");
    plx_onnx_model *model = import_ok(m, NULL);
    const float t3[12] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1};
    float g3[6];
    run_once(model, (const void *const[]){t3}, (void *const[]){g3});
    expect_close(g3, (const float[]){-0.5f, 0, 1, 0.5f, 0, 1}, 6, 1e-6f);
    destroy_model(&model);

    /* size must be known at import and match theta */
    m = new_model(8, 20);
    g = ob_main(m);
    ob_input(g, "theta", OB_FLOAT, "1,2,3");
    ob_input(g, "size", OB_INT64, "4");
    ob_output(g, "grid", OB_FLOAT, NULL);
    ob_node_add(g, "AffineGrid", "a", "theta,size", "grid");
    IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "'a'", "size", "known at import");
    m = new_model(8, 20);
    g = ob_main(m);
    ob_input(g, "theta", OB_FLOAT, "1,2,3");
    ob_output(g, "grid", OB_FLOAT, NULL);
    ob_init_i64(g, "size", (const int64_t[]){5}, 1, (const int64_t[]){1, 1, 2, 2, 2}, false);
    ob_node_add(g, "AffineGrid", "a", "theta,size", "grid");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'a'", "size has 5 values");
}

/* Det, ReverseSequence, MaxUnpool: one layer each; MaxUnpool's
 * output_shape known at import (its N and C X's). */
Test(onnx_import, det_reverse_sequence_max_unpool) {
    ob_model *m = new_model(8, 11);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,2,2");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "Det", "d", "x", "y");
    plx_onnx_model *model = import_ok(m, NULL);
    float dx[8] = {1, 2, 3, 4, 0, 1, 1, 0}, dy[2];
    run_once(model, (const void *const[]){dx}, (void *const[]){dy});
    expect_close(dy, (const float[]){-2, -1}, 2, 1e-6f);
    destroy_model(&model);

    /* X [3, 2] (time, batch), lens {2, 3}: column 0 (0 2 4) -> 2 0 4,
     * column 1 (1 3 5) -> 5 3 1 */
    m = new_model(8, 10);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3,2");
    ob_input(g, "lens", OB_INT64, "2");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "ReverseSequence", "r", "x,lens", "y");
    model = import_ok(m, NULL);
    const float rx[6] = {0, 1, 2, 3, 4, 5};
    const int64_t lens[2] = {2, 3};
    float ry[6];
    run_once(model, (const void *const[]){rx, lens}, (void *const[]){ry});
    expect_close(ry, (const float[]){2, 5, 0, 3, 4, 1}, 6, 0);
    destroy_model(&model);
    m = new_model(8, 10);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "3,2");
    ob_input(g, "lens", OB_INT64, "2");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node *n = ob_node_add(g, "ReverseSequence", "r", "x,lens", "y");
    ob_attr_i(n, "time_axis", 1);
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'r'", "batch_axis 1 and time_axis 1");

    /* the kernels test's 2 x 2 pool: indices 5 7 13 15 of 4 x 4, unpooled
     * into 5 x 5 at the same coordinates */
    m = new_model(8, 11);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,1,2,2");
    ob_input(g, "i", OB_INT64, "1,1,2,2");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "shape", (const int64_t[]){4}, 1, (const int64_t[]){1, 1, 5, 5}, false);
    n = ob_node_add(g, "MaxUnpool", "u", "x,i,shape", "y");
    ob_attr_ints(n, "kernel_shape", (const int64_t[]){2, 2}, 2);
    ob_attr_ints(n, "strides", (const int64_t[]){2, 2}, 2);
    model = import_ok(m, NULL);
    const float ux[4] = {5, 6, 7, 8};
    const int64_t ui[4] = {5, 7, 13, 15};
    float uy[25];
    run_once(model, (const void *const[]){ux, ui}, (void *const[]){uy});
    for (int k = 0; k < 25; k++) {
        const float want = k == 6 ? 5 : k == 8 ? 6 : k == 16 ? 7 : k == 18 ? 8 : 0;
        cr_assert(eq(flt, uy[k], want), "element %d", k);
    }
    destroy_model(&model);
    m = new_model(8, 11);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,1,2,2");
    ob_input(g, "i", OB_INT64, "1,1,2,2");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_init_i64(g, "shape", (const int64_t[]){4}, 1, (const int64_t[]){1, 2, 5, 5}, false);
    n = ob_node_add(g, "MaxUnpool", "u", "x,i,shape", "y");
    ob_attr_ints(n, "kernel_shape", (const int64_t[]){2, 2}, 2);
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'u'",
                 "input 2 (output_shape) must be [N, C, O1..O2]");
    m = new_model(8, 11);
    g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "1,1,2,2");
    ob_input(g, "i", OB_INT64, "1,1,2,2");
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_node_add(g, "MaxUnpool", "u", "x,i", "y");
    IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'u'",
                 "attribute 'kernel_shape' is required");
}

/* ------------------------------------------------------------------------ */
/* Einsum (convert_einsum.c)                                                  */
/* ------------------------------------------------------------------------ */

/* A plain einsum over letter subscripts ("ij,jk->ik", explicit output):
 * every combination of the labels' indices adds the operands' product to
 * the output element it names. Labels are lower-case letters. */
static void einsum_reference(const char *eq, const float *const *ops, const int64_t *const *dims,
                             size_t n_ops, float *y, size_t y_count) {
    int64_t size[26] = {0};
    const char *sub[8];
    size_t sub_len[8];
    const char *p = eq;
    for (size_t k = 0; k < n_ops; k++) {
        sub[k] = p;
        sub_len[k] = strcspn(p, ",-");
        for (size_t j = 0; j < sub_len[k]; j++) {
            size[p[j] - 'a'] = dims[k][j];
        }
        p += sub_len[k] + 1;
    }
    const char *out = strstr(eq, "->") + 2;
    size_t out_len = strlen(out);
    int labels[26], nl = 0;
    for (int l = 0; l < 26; l++) {
        if (size[l] > 0) {
            labels[nl++] = l;
        }
    }
    memset(y, 0, y_count * sizeof *y);
    int64_t idx[26] = {0};
    for (;;) {
        float prod = 1.0f;
        for (size_t k = 0; k < n_ops; k++) {
            int64_t off = 0;
            for (size_t j = 0; j < sub_len[k]; j++) {
                off = off * dims[k][j] + idx[sub[k][j] - 'a'];
            }
            prod *= ops[k][off];
        }
        int64_t yo = 0;
        for (size_t j = 0; j < out_len; j++) {
            yo = yo * size[out[j] - 'a'] + idx[out[j] - 'a'];
        }
        y[yo] += prod;
        int d = nl - 1;
        while (d >= 0 && ++idx[labels[d]] == size[labels[d]]) {
            idx[labels[d--]] = 0;
        }
        if (d < 0) {
            break;
        }
    }
}

/* Imports Einsum(eq) over float32 inputs of the given shapes ("2,3"),
 * runs it on fill_values data and compares with einsum_reference over
 * `ref_eq`, the same product written with letters and an explicit output
 * (`ref_dims` the inputs' dims as the reference reads them). */
static void einsum_case(const char *eq, const char *const *shapes, size_t n_ops,
                        const char *ref_eq, const int64_t *const *ref_dims, const char *y_shape,
                        size_t y_count) {
    ob_model *m = new_model(8, 13);
    ob_graph *g = ob_main(m);
    static const char *const names[] = {"a", "b", "c"};
    char in_list[16] = "";
    float *ops[3];
    size_t counts[3];
    for (size_t k = 0; k < n_ops; k++) {
        ob_input(g, names[k], OB_FLOAT, shapes[k]);
        strcat(in_list, k ? "," : "");
        strcat(in_list, names[k]);
        size_t cnt = 1;
        for (const char *s = shapes[k]; *s;) {
            char *end;
            cnt *= (size_t)strtoll(s, &end, 10);
            s = *end ? end + 1 : end;
        }
        counts[k] = cnt;
        ops[k] = malloc(cnt * sizeof(float));
        fill_values(ops[k], cnt, (uint32_t)(7 + k));
    }
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_attr_s(ob_node_add(g, "Einsum", "ein", in_list, "y"), "equation", eq);
    plx_onnx_model *model = import_ok(m, NULL);
    const plx_tensor_info *yi = &plx_onnx_model_output(model, 0)->info;
    char got_shape[64] = "";
    for (uint32_t i = 0; i < yi->rank; i++) {
        char part[24];
        snprintf(part, sizeof part, "%s%lld", i ? "," : "", (long long)yi->dims[i]);
        strcat(got_shape, part);
    }
    cr_assert(eq(str, got_shape, (char *)y_shape), "%s: output shape", eq);
    float *y = malloc(y_count * sizeof(float)), *want = malloc(y_count * sizeof(float));
    const void *ins[3] = {ops[0], n_ops > 1 ? ops[1] : NULL, n_ops > 2 ? ops[2] : NULL};
    void *outs[] = {y};
    run_once(model, ins, outs);
    einsum_reference(ref_eq, (const float *const *)ops, ref_dims, n_ops, want, y_count);
    expect_close(y, want, y_count, 1e-5f);
    (void)counts;
    for (size_t k = 0; k < n_ops; k++) {
        free(ops[k]);
    }
    free(y);
    free(want);
    destroy_model(&model);
}

#define EIN_DIMS(...) (const int64_t[]){__VA_ARGS__}

/* The forms real models use (attention's "bhid,bhjd->bhij", a batched
 * matmul written with an ellipsis that broadcasts, aligned right), an
 * implicit output (the labels read once, sorted), three operands, a
 * diagonal of labels that are not adjacent, and a label summed away. */
Test(onnx_import, einsum_forms) {
    einsum_case("bhid,bhjd->bhij", (const char *const[]){"2,3,4,5", "2,3,6,5"}, 2,
                "bhid,bhjd->bhij", (const int64_t *const[]){EIN_DIMS(2, 3, 4, 5),
                                                            EIN_DIMS(2, 3, 6, 5)},
                "2,3,4,6", 2 * 3 * 4 * 6);
    einsum_case("...ij,...jk->...ik", (const char *const[]){"2,3,3,4", "3,4,5"}, 2,
                "abij,bjk->abik", (const int64_t *const[]){EIN_DIMS(2, 3, 3, 4),
                                                           EIN_DIMS(3, 4, 5)},
                "2,3,3,5", 2 * 3 * 3 * 5);
    einsum_case("kj, ji", (const char *const[]){"3,4", "4,2"}, 2, "kj,ji->ik",
                (const int64_t *const[]){EIN_DIMS(3, 4), EIN_DIMS(4, 2)}, "2,3", 6);
    einsum_case("ij,jk,kl->il", (const char *const[]){"2,3", "3,4", "4,5"}, 3, "ij,jk,kl->il",
                (const int64_t *const[]){EIN_DIMS(2, 3), EIN_DIMS(3, 4), EIN_DIMS(4, 5)}, "2,5",
                10);
    einsum_case("iji->j", (const char *const[]){"3,4,3"}, 1, "iji->j",
                (const int64_t *const[]){EIN_DIMS(3, 4, 3)}, "4", 4);
    einsum_case("bij,bkj->b", (const char *const[]){"2,3,4", "2,5,4"}, 2, "bij,bkj->b",
                (const int64_t *const[]){EIN_DIMS(2, 3, 4), EIN_DIMS(2, 5, 4)}, "2", 2);
}

/* Equations that do not fit their inputs are refused naming the node. */
Test(onnx_import, einsum_bad_equations) {
    static const struct {
        const char *eq, *needle;
    } cases[] = {
        {"ij,jk->ix", "an output label is repeated, not read"},
        {"ijk,jk->ik", "subscript 0 has 3 labels for an input of rank 2"},
        {"ij,jk,k->ik", "more subscripts than the 2 inputs"},
        {"ij->ij", "1 subscripts for 2 inputs"},
        {"i.j,jk->ik", "a '.' that is not one '...'"},
        {"i1,jk->ik", "'1' is not a letter"},
        {"ij,kj->ik", "a label has dims 2 and 3"},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        ob_model *m = new_model(8, 13);
        ob_graph *g = ob_main(m);
        ob_input(g, "a", OB_FLOAT, "2,2");
        ob_input(g, "b", OB_FLOAT, "2,3");
        ob_output(g, "y", OB_FLOAT, NULL);
        ob_attr_s(ob_node_add(g, "Einsum", "ein", "a,b", "y"), "equation", cases[i].eq);
        IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'ein'", cases[i].needle);
    }
}

/* ------------------------------------------------------------------------ */
/* RNN, and layout 1 (batch first) as transposes around the layer            */
/* ------------------------------------------------------------------------ */

/* A bidirectional RNN with batch-first X [B, S, I], initial_h [B, D, H],
 * no sequence_lens (every length S) and Relu forward, Tanh backward: Y
 * [B, S, D, H] and Y_h [B, D, H] against rnnref_rnn over the transposed
 * data. */
Test(onnx_import, rnn_batch_first_bidirectional) {
    enum { S = 3, B = 2, IN = 2, H = 3, D = 2 };
    float x[B * S * IN], w[D * H * IN], r[D * H * H], bias[D * 2 * H], h0[B * D * H];
    fill_values(x, COUNT(x), 1);
    fill_values(w, COUNT(w), 2);
    fill_values(r, COUNT(r), 3);
    fill_values(bias, COUNT(bias), 4);
    fill_values(h0, COUNT(h0), 5);
    ob_model *m = new_model(8, 14);
    ob_graph *g = ob_main(m);
    ob_input(g, "x", OB_FLOAT, "2,3,2");
    ob_input(g, "h0", OB_FLOAT, "2,2,3");
    ob_init_f32(g, "w", OB_DIMS(D, H, IN), w, true);
    ob_init_f32(g, "r", OB_DIMS(D, H, H), r, false);
    ob_init_f32(g, "b", OB_DIMS(D, 2 * H), bias, true);
    ob_output(g, "y", OB_FLOAT, NULL);
    ob_output(g, "yh", OB_FLOAT, NULL);
    ob_node *n = ob_node_add(g, "RNN", "rnn", "x,w,r,b,,h0", "y,yh");
    ob_attr_i(n, "hidden_size", H);
    ob_attr_i(n, "layout", 1);
    ob_attr_s(n, "direction", "bidirectional");
    ob_attr_strings(n, "activations", (const char *const[]){"Relu", "Tanh"}, 2);
    plx_onnx_model *model = import_ok(m, NULL);
    EXPECT_DIMS(&plx_onnx_model_output(model, 0)->info, "Y", B, S, D, H);
    EXPECT_DIMS(&plx_onnx_model_output(model, 1)->info, "Y_h", B, D, H);
    float y[B * S * D * H], yh[B * D * H];
    const void *ins[] = {x, h0};
    void *outs[] = {y, yh};
    run_once(model, ins, outs);
    destroy_model(&model);

    float xs[S * B * IN], hs[D * B * H], ry[S * D * B * H], ryh[D * B * H];
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < S; t++) {
            memcpy(&xs[(t * B + b) * IN], &x[(b * S + t) * IN], IN * sizeof(float));
        }
        for (int d = 0; d < D; d++) {
            memcpy(&hs[(d * B + b) * H], &h0[(b * D + d) * H], H * sizeof(float));
        }
    }
    plx_rnn_desc d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.direction = PLX_RNN_BIDIRECTIONAL;
    d.hidden_size = H;
    d.activations[0][0] = (plx_rnn_activation){PLX_ACT_RELU, 0, 0};
    d.activations[1][0] = (plx_rnn_activation){PLX_ACT_TANH, 0, 0};
    const int32_t lens[B] = {S, S};
    rnnref_rnn(&d, S, B, IN, xs, w, r, bias, lens, hs, ry, ryh);
    float want_y[B * S * D * H], want_yh[B * D * H];
    for (int t = 0; t < S; t++) {
        for (int dd = 0; dd < D; dd++) {
            for (int b = 0; b < B; b++) {
                memcpy(&want_y[((b * S + t) * D + dd) * H], &ry[((t * D + dd) * B + b) * H],
                       H * sizeof(float));
                if (t == 0) {
                    memcpy(&want_yh[(b * D + dd) * H], &ryh[(dd * B + b) * H], H * sizeof(float));
                }
            }
        }
    }
    expect_close(y, want_y, COUNT(want_y), 1e-5f);
    expect_close(yh, want_yh, COUNT(want_yh), 1e-5f);
}

/* ------------------------------------------------------------------------ */
/* RoiAlign                                                                   */
/* ------------------------------------------------------------------------ */

/* X [1, 1, 4, 4] = 4 y + x, one roi (0.5, 0.5, 2.5, 2.5) sampled 2 x 2:
 * opset 16's default half_pixel moves it to (0, 0, 2, 2), mean 5; opset
 * 10 has no offset (output_half_pixel): samples at 1 and 2, mean 7.5. A
 * mode other than avg and max is refused. */
Test(onnx_import, roi_align_coordinate_modes) {
    float x[16], y[1];
    for (int i = 0; i < 16; i++) {
        x[i] = (float)i;
    }
    const float roi[4] = {0.5f, 0.5f, 2.5f, 2.5f};
    const int64_t zero_index[1] = {0};
    const int64_t opsets[2] = {16, 10};
    const float want[2] = {5.0f, 7.5f};
    for (int k = 0; k < 3; k++) {
        ob_model *m = new_model(8, opsets[k % 2]);
        ob_graph *g = ob_main(m);
        ob_input(g, "x", OB_FLOAT, "1,1,4,4");
        ob_init_f32(g, "rois", OB_DIMS(1, 4), roi, true);
        ob_init_i64(g, "bi", OB_DIMS(1), zero_index, false);
        ob_output(g, "y", OB_FLOAT, NULL);
        ob_node *n = ob_node_add(g, "RoiAlign", "ra", "x,rois,bi", "y");
        ob_attr_i(n, "sampling_ratio", 2);
        if (k == 2) {
            ob_attr_s(n, "mode", "median");
            IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'ra'", "mode 'median' is not avg or max");
            continue;
        }
        plx_onnx_model *model = import_ok(m, NULL);
        EXPECT_DIMS(&plx_onnx_model_output(model, 0)->info, "Y", 1, 1, 1, 1);
        const void *ins[] = {x};
        void *outs[] = {y};
        run_once(model, ins, outs);
        expect_close(y, &want[k], 1, 1e-6f);
        destroy_model(&model);
    }
}

/* ------------------------------------------------------------------------ */
/* DeformConv                                                                 */
/* ------------------------------------------------------------------------ */

/* X [1, 1, 3, 3] = 1..9, W [1, 1, 2, 2] of ones, zero offsets and a mask
 * of 0.5 without B (its slot left empty, so zeros): half the plain
 * convolution, 6, 8, 12, 14. kernel_shape other than W's, and 3-D X, are
 * refused. */
Test(onnx_import, deform_conv_mask_without_bias) {
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, off[32] = {0}, mask[16], y[4];
    const float w[4] = {1, 1, 1, 1};
    for (int i = 0; i < 16; i++) {
        mask[i] = 0.5f;
    }
    for (int k = 0; k < 3; k++) {
        ob_model *m = new_model(8, 19);
        ob_graph *g = ob_main(m);
        ob_input(g, "x", OB_FLOAT, k == 2 ? "1,1,3,3,1" : "1,1,3,3");
        ob_init_f32(g, "w", OB_DIMS(1, 1, 2, 2), w, true);
        ob_input(g, "off", OB_FLOAT, "1,8,2,2");
        ob_input(g, "mask", OB_FLOAT, "1,4,2,2");
        ob_output(g, "y", OB_FLOAT, NULL);
        ob_node *n = ob_node_add(g, "DeformConv", "dc", "x,w,off,,mask", "y");
        if (k == 1) {
            ob_attr_ints(n, "kernel_shape", (const int64_t[]){3, 3}, 2);
            IMPORT_FAILS(m, NULL, PLX_INVALID_ARGUMENT, "'dc'", "kernel_shape [3, 3] is not W's [2, 2]");
            continue;
        }
        if (k == 2) {
            IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "'dc'", "X rank 5 and W rank 4 (2-D only)");
            continue;
        }
        plx_onnx_model *model = import_ok(m, NULL);
        const void *ins[] = {x, off, mask};
        void *outs[] = {y};
        run_once(model, ins, outs);
        expect_close(y, (const float[]){6, 8, 12, 14}, 4, 1e-6f);
        destroy_model(&model);
    }
}

/* Mod on signed integers: fmod=1 is C's remainder (the dividend's sign),
 * imported as A - trunc(A / B) * B, B broadcast; fmod=0 Python's (the
 * divisor's). INT64_MIN fmod -1 is 0. */
Test(onnx_import, mod_signed_fmod_modes) {
    const int64_t a[5] = {-7, 7, -7, 7, INT64_MIN};
    const int64_t b[5] = {2, -2, -2, 2, -1};
    const int64_t want[2][5] = {{1, -1, -1, 1, 0}, {-1, 1, -1, 1, 0}};
    for (int fmod = 0; fmod <= 1; fmod++) {
        ob_model *m = new_model(IR, 13);
        ob_graph *g = ob_main(m);
        ob_input(g, "a", OB_INT64, "5");
        ob_input(g, "b", OB_INT64, "5");
        ob_output(g, "y", OB_INT64, NULL);
        ob_attr_i(ob_node_add(g, "Mod", "mod", "a,b", "y"), "fmod", fmod);
        plx_onnx_model *model = import_ok(m, NULL);
        int64_t y[5];
        run_once(model, (const void *const[]){a, b}, (void *const[]){y});
        for (int i = 0; i < 5; i++) {
            cr_assert(eq(i64, y[i], want[fmod][i]), "fmod=%d element %d", fmod, i);
        }
        destroy_model(&model);
    }
    /* a scalar divisor broadcast: -9 fmod 4 = -1, 9 fmod 4 = 1 */
    ob_model *m = new_model(IR, 13);
    ob_graph *g = ob_main(m);
    ob_input(g, "a", OB_INT64, "2");
    ob_init_i64(g, "four", NULL, 0, (const int64_t[]){4}, false);
    ob_output(g, "y", OB_INT64, NULL);
    ob_attr_i(ob_node_add(g, "Mod", "mod", "a,four", "y"), "fmod", 1);
    plx_onnx_model *model = import_ok(m, NULL);
    int64_t x[2] = {-9, 9}, y[2];
    run_once(model, (const void *const[]){x}, (void *const[]){y});
    cr_assert(eq(i64, y[0], -1));
    cr_assert(eq(i64, y[1], 1));
    destroy_model(&model);
}

/* Dropout with training_mode true: ratio 0 drops nothing (Y is X, the
 * mask all true); another ratio is random and refused, naming it. */
Test(onnx_import, training_dropout_zero_ratio) {
    for (int k = 0; k < 2; k++) {
        ob_model *m = new_model(IR, 13);
        ob_graph *g = ob_main(m);
        ob_input(g, "x", OB_FLOAT, "3");
        ob_init_f32(g, "r", NULL, 0, (const float[]){k ? 0.25f : 0.0f}, false);
        Onnx__TensorProto *t = ob_tensor(m, "t", OB_BOOL, NULL, 0);
        ob_tensor_raw(m, t, (const uint8_t[]){1}, 1);
        ob_initializer(g, t);
        ob_output(g, "y", OB_FLOAT, NULL);
        ob_output(g, "mask", OB_BOOL, NULL);
        ob_node_add(g, "Dropout", "drop", "x,r,t", "y,mask");
        if (k) {
            IMPORT_FAILS(m, NULL, PLX_UNSUPPORTED, "'drop'", "training_mode is true with ratio 0.25");
            continue;
        }
        plx_onnx_model *model = import_ok(m, NULL);
        float x[3] = {1.5f, -2.0f, 0.0f}, y[3];
        uint8_t mask[3];
        run_once(model, (const void *const[]){x}, (void *const[]){y, mask});
        for (int i = 0; i < 3; i++) {
            cr_assert(eq(flt, y[i], x[i]));
            cr_assert(eq(u8, mask[i], 1));
        }
        destroy_model(&model);
    }
}

/* A whole file into a malloc'd buffer; asserts. */
static void *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    cr_assert(not(zero(ptr, f)), "%s", path);
    cr_assert(eq(int, fseek(f, 0, SEEK_END), 0));
    long n = ftell(f);
    cr_assert(gt(long, n, 0));
    rewind(f);
    void *b = malloc((size_t)n);
    cr_assert(not(zero(ptr, b)));
    cr_assert(eq(sz, fread(b, 1, (size_t)n, f), (size_t)n));
    fclose(f);
    *size = (size_t)n;
    return b;
}

/* Every allocation of an import failed in turn (the digits model, from
 * memory): each gives PLX_OUT_OF_MEMORY, or the model when the importer
 * can do without that allocation; never a crash, a leak (under the
 * sanitizers' leak check, where the counter is off, the sweep is skipped)
 * or another error. */
Test(onnx_import, every_allocation_failure_is_out_of_memory, .timeout = 300) {
    if (!alloc_counter_available()) {
        cr_skip_test("the allocator is not interposable in this build");
    }
    size_t size;
    void *data = read_file(DIGITS_DIR "/digits.onnx", &size);
    plx_onnx_model *model = NULL;
    alloc_counter_start();
    plx_status st = plx_onnx_import_memory(data, size, "digits.onnx", NULL, NULL, &model);
    size_t total = alloc_counter_stop();
    cr_assert(zero(ptr, st), "%s", plx_status_get_message(st));
    size_t layers = plx_network_layer_count(plx_onnx_model_network(model));
    plx_onnx_model_destroy(&model);
    cr_assert(gt(sz, total, 10));
    size_t failed = 0;
    for (size_t k = 1; k <= total; k++) {
        alloc_counter_fail_at(k);
        st = plx_onnx_import_memory(data, size, "digits.onnx", NULL, NULL, &model);
        alloc_counter_stop();
        if (!st) { /* done without it: the same network */
            cr_assert(not(zero(ptr, model)));
            cr_assert(eq(sz, plx_network_layer_count(plx_onnx_model_network(model)), layers),
                      "allocation %zu", k);
            plx_onnx_model_destroy(&model);
            continue;
        }
        failed++;
        cr_assert(zero(ptr, model));
        cr_assert(eq(int, (int)plx_status_get_code(st), (int)PLX_OUT_OF_MEMORY),
                  "allocation %zu of %zu: %s: %s", k, total,
                  plx_status_code_name(plx_status_get_code(st)), plx_status_get_message(st));
        plx_status_free(st);
    }
    cr_assert(gt(sz, failed, 0));
    fprintf(stderr, "onnx_import.every_allocation_failure: %zu of %zu allocations failed the "
                    "import with PLX_OUT_OF_MEMORY, the others were done without\n",
            failed, total);
    free(data);
}

/* The whole path of `plexus run` on cpu_ref, every allocation failed in
 * turn: runtime (discovery, dlopen, create), import, optimise, load,
 * execute. Each gives PLX_OUT_OF_MEMORY at the step that ran out, or the
 * right digit. */
Test(onnx_import, cpu_ref_path_allocation_failures, .timeout = 600) {
    if (!alloc_counter_available()) {
        cr_skip_test("the allocator is not interposable in this build");
    }
    size_t size;
    void *data = read_file(DIGITS_DIR "/digits.onnx", &size);
    float image[64]; /* the digits model's 1x1x8x8 */
    for (size_t i = 0; i < 64; i++) {
        image[i] = (float)(i % 7) * 16.0f / 7.0f;
    }
    float want[10] = {0};
    size_t total = 0, failed = 0, done_without = 0;
    for (size_t k = 0;; k++) {
        if (k == 0) {
            alloc_counter_start();
        } else {
            alloc_counter_fail_at(k);
        }
        const char *step = "runtime";
        plx_runtime *rt = NULL;
        plx_onnx_model *model = NULL;
        plx_optimized_network *on = NULL;
        plx_loaded_network *ln = NULL;
        float out[10] = {0};
        plx_runtime_options o;
        cpu_ref_options(&o);
        plx_status st = plx_runtime_create(&o, &rt);
        if (!st) {
            step = "import";
            st = plx_onnx_import_memory(data, size, "digits.onnx", NULL, NULL, &model);
        }
        if (!st) {
            step = "optimize";
            plx_optimize_options oo;
            plx_optimize_options_init(&oo);
            const char *backends[] = {"cpu_ref"};
            oo.backends = backends;
            oo.backend_count = 1;
            oo.allow_fallback = false;
            st = plx_optimize(rt, plx_onnx_model_network(model), &oo, &on);
        }
        if (!st) {
            step = "load";
            st = plx_runtime_load_network(rt, &on, NULL, &ln);
        }
        if (!st) {
            step = "execute";
            const plx_onnx_io *in = plx_onnx_model_input(model, 0);
            const plx_onnx_io *res = plx_onnx_model_output(model, 0);
            plx_tensor_binding bi = {.binding_id = in->binding_id, .data = image,
                                     .size = sizeof image};
            plx_tensor_binding bo = {.binding_id = res->binding_id, .data = out,
                                     .size = sizeof out};
            plx_execute_args args;
            plx_execute_args_init(&args);
            args.inputs = &bi;
            args.input_count = 1;
            args.outputs = &bo;
            args.output_count = 1;
            st = plx_loaded_network_execute_with(ln, NULL, &args);
        }
        size_t seen = alloc_counter_stop();
        plx_loaded_network_unload(&ln);
        plx_optimized_network_destroy(&on);
        plx_onnx_model_destroy(&model);
        plx_runtime_destroy(&rt);
        if (k == 0) {
            cr_assert(zero(ptr, st), "%s: %s", step, plx_status_get_message(st));
            memcpy(want, out, sizeof want);
            total = seen;
            cr_assert(gt(sz, total, 10));
            continue;
        }
        if (!st) {
            done_without++;
            cr_assert(eq(int, memcmp(out, want, sizeof out), 0), "allocation %zu: other outputs",
                      k);
        } else {
            failed++;
            cr_assert(eq(int, (int)plx_status_get_code(st), (int)PLX_OUT_OF_MEMORY),
                      "allocation %zu of %zu, %s: %s: %s", k, total, step,
                      plx_status_code_name(plx_status_get_code(st)), plx_status_get_message(st));
            plx_status_free(st);
        }
        if (k == total) {
            break;
        }
    }
    fprintf(stderr, "onnx_import.cpu_ref_path: %zu allocations; %zu failures gave "
                    "PLX_OUT_OF_MEMORY, %zu were done without\n", total, failed, done_without);
    free(data);
}
