/* plexus-bench-backends: gpu_opencl against cpu_ref, in one process.
 *
 * For each model, and for each of the two first-party backends alone
 * (allow_fallback false; when gpu_opencl refuses a layer it is optimised
 * again with {gpu_opencl, cpu_ref} and fallback allowed, and the compute
 * layers that fell back are counted), measures:
 *   - load time, cold and warm, each in a fresh runtime: optimise + load
 *     (plx_optimize + plx_runtime_load_network), and the first execution
 *     apart ("first run": working memory is allocated there, and an OpenCL
 *     driver may compile kernels there; PoCL does, for a program built from
 *     source). gpu_opencl gets cache_dir=<a new empty mkdtemp directory>
 *     per model: cold is the first runtime (no cache file: the OpenCL
 *     program is built from source in the load, then its binary written to
 *     the cache), warm a second fresh runtime on the same directory (the
 *     binary is read back). The backend's log says which happened and how
 *     long the program took, and its lines' times how long the cache write
 *     took (on PoCL, asking for a program's binary compiles every kernel):
 *     both are reported. Runtime creation is timed apart and is not part of
 *     the load; ONNX import is timed apart too. POCL_KERNEL_CACHE is set to
 *     0 at the start of main, before any runtime (and so PoCL) exists, so
 *     that PoCL's own kernel cache cannot make "cold" warm; the OpenCL
 *     platform is initialised once, by a first probing runtime, before
 *     anything is timed.
 *   - latency: the warm runtimes of both backends stay loaded; after 3
 *     warm-up runs each, --iterations rounds run one execution on each
 *     (plx_loaded_network_execute: copies in and out included),
 *     alternating which goes first, so that the machine's noise hits both;
 *     min, median and p90 (nearest rank) per backend, and the ratio of the
 *     medians gpu_opencl/cpu_ref.
 *   - queued execution: a third warm runtime runs gpu_opencl with
 *     its option queued=off (every layer ends with a clFinish, as before
 *     ABI 1.4), in the same rotation as the two others (each round rotates
 *     which of the three goes first), with the queued run's assignment;
 *     reported: both medians, their ratio, and the host waits per
 *     execution: queued, plx_loaded_network_wait_count's growth over the
 *     timed runs divided by their number; queued=off, the gpu_opencl
 *     compute layers (one clFinish each). The outputs of the two agree
 *     (max |a - b| reported; the kernels are the same, so 0 is expected).
 *   - planned memory: two more warm gpu_opencl runtimes load
 *     with plx_load_options.externally_managed_memory, one with the option
 *     planned_memory=device (the default: the plan's buffers are cl_mem
 *     buffers of the backend's, planned tensors sub-buffers of them), one
 *     with planned_memory=host (host memory from the host, wrapped with
 *     CL_MEM_USE_HOST_PTR), queued, with the queued run's assignment, in
 *     the same rotation; reported: min, median and p90 of both, the ratio
 *     of the medians device/host, and max |a - b| of their outputs (0
 *     expected: the same kernels).
 *   - agreement of the outputs of the last execution: max |a - b| with a
 *     gpu_opencl's and b cpu_ref's, and the check |a - b| <= 1e-4 +
 *     1e-3 * |b| on every element; the argmax of the first output.
 *
 * Models: "convnet", built through the API: float32 [1,3,128,128] -> conv
 * 3x3 pad 1 16ch + bias -> relu -> conv 3x3 stride 2 pad 1 32ch -> relu ->
 * conv 3x3 stride 2 pad 1 64ch -> relu -> depthwise conv 3x3 pad 1 (group
 * 64) -> relu -> conv 1x1 64ch -> relu -> global average pool -> flatten
 * -> fully connected to 10 -> softmax, weights from a seeded LCG (He
 * uniform, +-sqrt(6/fan_in), so activations keep their scale); "digits",
 * the trained onnx/models/digits/digits.onnx on the real image
 * inputs/digit-7.npy; and each --model PATH.onnx, on seeded random inputs
 * in [0,1) (a model whose inputs are not all float32 with static shapes is
 * reported and skipped).
 *
 * Exit status: 0; 1 when something fails (the message names the model and
 * the backend) or gpu_opencl is unavailable (with its reason); 2 on bad
 * usage.
 *
 * usage: plexus-bench-backends [--json] [--iterations N] [--backend-path DIR]...
 *                              [--model PATH.onnx]... */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <plexus/network.h>
#include <plexus/onnx.h>

#include "npy.h"

#define WARMUP 3
#define MAX_PATHS 16
#define MAX_MODELS 64

static const char *prog = "plexus-bench-backends";
static const char *const backend_ids[2] = {"gpu_opencl", "cpu_ref"};
/* SYNC: gpu_opencl with queued=off; PDEV and PHOST: gpu_opencl with
 * externally managed memory and planned_memory=device or host. */
enum { GPU = 0, CPU = 1, SYNC = 2, PDEV = 3, PHOST = 4 };
#define RUNS 5

/* ------------------------------------------------------------------------ */
/* Errors, memory, time                                                       */
/* ------------------------------------------------------------------------ */

/* The cache directory in use, removed at exit whatever happens. */
static char cache_dir[64];

static void remove_cache_dir(void) {
    if (!cache_dir[0]) {
        return;
    }
    DIR *d = opendir(cache_dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
                continue;
            }
            char path[sizeof cache_dir + 256 + 2];
            snprintf(path, sizeof path, "%s/%s", cache_dir, e->d_name);
            if (unlink(path) != 0) {
                fprintf(stderr, "%s: cannot remove %s\n", prog, path);
            }
        }
        closedir(d);
    }
    if (rmdir(cache_dir) != 0) {
        fprintf(stderr, "%s: cannot remove the directory %s\n", prog, cache_dir);
    }
    cache_dir[0] = '\0';
}

/* "model/backend: what: message", then exit 1. */
static void die(plx_status s, const char *model, const char *backend, const char *what) {
    fprintf(stderr, "%s: %s%s%s: %s: %s\n", prog, model, backend ? "/" : "",
            backend ? backend : "", what, plx_status_get_message(s));
    plx_status_free(s);
    exit(1);
}

#define TRY(expr, model, backend, what)                                                     \
    do {                                                                                    \
        plx_status try_ = (expr);                                                           \
        if (try_) {                                                                         \
            die(try_, (model), (backend), (what));                                          \
        }                                                                                   \
    } while (0)

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "%s: out of memory (%zu bytes)\n", prog, n);
        exit(1);
    }
    return p;
}

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);
    memcpy(p, s, n);
    return p;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint32_t lcg_next(uint32_t *state) {
    *state = *state * 1664525u + 1013904223u;
    return *state;
}

/* Uniform in [0, 1). */
static float lcg_unit(uint32_t *state) {
    return (float)(lcg_next(state) >> 8) / 16777216.0f;
}

/* ------------------------------------------------------------------------ */
/* Runtimes                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct settings {
    bool json;
    long iterations;
    const char *paths[MAX_PATHS];
    size_t path_count;
    const char *models[MAX_MODELS];
    size_t model_count;
} settings;

/* What gpu_opencl's log says about its program: built from source or read
 * from the cache file, and in how long (its own figure); and when the
 * binary was written to the cache, which follows the build (the log lines'
 * times apart: on PoCL, asking for the binary compiles every kernel). */
typedef struct log_capture {
    const char *program; /* "built", "cached" or NULL (not seen) */
    double program_ms;
    double built_at, written_at; /* now_ms() of the log lines; < 0: not seen */
} log_capture;

static double ms_after_last_in(const char *message) {
    const char *p = NULL;
    for (const char *q = strstr(message, " in "); q; q = strstr(q + 1, " in ")) {
        p = q;
    }
    return p ? strtod(p + 4, NULL) : -1.0;
}

/* Warnings and errors go to stderr as the default sink writes them; info
 * lines are only read for the program's fate. Load-time only: the runtime
 * logs nothing at info level while executing. */
static void log_sink(void *user_data, plx_log_level level, const char *source,
                     const char *message) {
    log_capture *c = user_data;
    if (c && strstr(message, "program built from source")) {
        c->program = "built";
        c->program_ms = ms_after_last_in(message);
        c->built_at = now_ms();
    } else if (c && strstr(message, "program cache: wrote")) {
        c->written_at = now_ms();
    } else if (c && strstr(message, "program loaded from the cache file")) {
        c->program = "cached";
        c->program_ms = ms_after_last_in(message);
    }
    if (level <= PLX_LOG_WARN) {
        fprintf(stderr, "plexus[%s] %s: %s\n", source, plx_log_level_name(level), message);
    }
}

/* A fresh runtime on the search paths; gpu_opencl gets cache_dir=dir when
 * dir is not NULL. */
static plx_runtime *make_runtime(const settings *set, const char *dir, bool queued_off,
                                 const char *planned, log_capture *cap, const char *model,
                                 const char *backend) {
    plx_runtime_options ro;
    plx_runtime_options_init(&ro);
    ro.search_paths = set->paths;
    ro.search_path_count = set->path_count;
    ro.ignore_environment = true;
    ro.skip_default_dir = true;
    ro.log_level = PLX_LOG_INFO;
    ro.log_fn = log_sink;
    ro.log_user_data = cap;
    plx_backend_option opts[3];
    size_t n = 0;
    if (dir) {
        opts[n++] = (plx_backend_option){"gpu_opencl", "cache_dir", dir};
    }
    if (queued_off) {
        opts[n++] = (plx_backend_option){"gpu_opencl", "queued", "off"};
    }
    if (planned) {
        opts[n++] = (plx_backend_option){"gpu_opencl", "planned_memory", planned};
    }
    ro.backend_options = opts;
    ro.backend_option_count = n;
    plx_runtime *rt;
    TRY(plx_runtime_create(&ro, &rt), model, backend, "runtime");
    return rt;
}

/* The backend `id` of rt, available; else its reason (or the rejections
 * that name it) and exit 1. */
static const plx_backend_info *require_backend(plx_runtime **rt, const char *id) {
    const plx_backend_info *b = plx_runtime_find_backend(*rt, id);
    if (b && b->available) {
        return b;
    }
    if (b) {
        fprintf(stderr, "%s: %s is unavailable: %s\n", prog, id,
                b->reason ? b->reason : "(no reason given)");
    } else {
        fprintf(stderr, "%s: %s was not found in the backend paths (--backend-path):", prog, id);
        for (size_t i = 0; i < plx_runtime_search_path_count(*rt); i++) {
            const plx_search_entry *e = plx_runtime_search_path(*rt, i);
            fprintf(stderr, " %s%s%s%s", e->path, e->problem[0] ? " (" : "", e->problem,
                    e->problem[0] ? ")" : "");
        }
        fprintf(stderr, "\n");
        for (size_t i = 0; i < plx_runtime_rejection_count(*rt); i++) {
            const plx_rejection *r = plx_runtime_rejection(*rt, i);
            fprintf(stderr, "  rejected %s%s%s: %s\n", r->path ? r->path : "(static)",
                    r->id ? " " : "", r->id ? r->id : "", r->reason);
        }
    }
    plx_runtime_destroy(rt);
    exit(1);
}

static const char *capability_string(const plx_backend_info *b, const char *key) {
    const plx_capability *c = plx_backend_info_capability(b, key);
    return c && c->type == PLX_VALUE_STRING ? c->string_value : "?";
}

/* ------------------------------------------------------------------------ */
/* Models                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct model {
    const char *name;   /* "convnet", "digits", or the file's base name */
    const char *source; /* "api" or the ONNX file */
    plx_network *own_network;
    plx_onnx_model *onnx;
    double import_ms;   /* < 0: built through the API */
    const char *input_note;
    size_t input_count;
    int32_t *input_ids;
    void **inputs;
    plx_tensor_info *input_infos;
    size_t *input_sizes;
} model;

static plx_network *model_network(model *m) {
    return m->onnx ? plx_onnx_model_network(m->onnx) : m->own_network;
}

static void model_free(model *m) {
    for (size_t i = 0; i < m->input_count; i++) {
        free(m->inputs[i]);
    }
    free(m->inputs);
    free(m->input_ids);
    free(m->input_infos);
    free(m->input_sizes);
    plx_network_destroy(&m->own_network);
    plx_onnx_model_destroy(&m->onnx);
}

static void model_alloc_inputs(model *m, size_t count) {
    m->input_count = count;
    m->input_ids = xmalloc(count * sizeof *m->input_ids);
    m->inputs = xmalloc(count * sizeof *m->inputs);
    m->input_infos = xmalloc(count * sizeof *m->input_infos);
    m->input_sizes = xmalloc(count * sizeof *m->input_sizes);
    for (size_t i = 0; i < count; i++) {
        m->inputs[i] = NULL;
    }
}

/* Input i of m: float32 `info`, seeded random values in [0, 1). */
static void model_random_input(model *m, size_t i, int32_t id, const plx_tensor_info *info,
                               uint32_t *seed) {
    size_t n = 0, bytes = 0;
    if (!plx_tensor_info_element_count(info, &n) || !plx_tensor_info_byte_size(info, &bytes)) {
        fprintf(stderr, "%s: %s: input %zu: its size overflows\n", prog, m->name, i);
        exit(1);
    }
    float *data = xmalloc(bytes);
    for (size_t k = 0; k < n; k++) {
        data[k] = lcg_unit(seed);
    }
    m->input_ids[i] = id;
    m->inputs[i] = data;
    m->input_infos[i] = *info;
    m->input_sizes[i] = bytes;
}

typedef struct builder {
    plx_network *net;
    uint32_t seed;
    int counter;
} builder;

#define CONVNET "convnet"

static plx_layer_id add_layer(builder *b, plx_op op, const void *desc, const plx_layer_id *inputs,
                              uint32_t count) {
    char name[32];
    snprintf(name, sizeof name, "%s%d", plx_op_name(op), b->counter++);
    plx_layer_id id;
    TRY(plx_network_add_layer(b->net, name, op, desc, count, 1, &id), CONVNET, NULL, name);
    for (uint32_t i = 0; i < count; i++) {
        TRY(plx_network_connect(b->net, inputs[i], 0, id, i), CONVNET, NULL, name);
    }
    return id;
}

/* A float32 constant of uniform values in [-limit, limit), copied into the
 * network. */
static plx_layer_id add_constant(builder *b, uint32_t rank, const int64_t *dims, float limit) {
    plx_tensor_info t = {.dtype = PLX_DTYPE_FLOAT32, .rank = rank};
    size_t n = 1;
    for (uint32_t i = 0; i < rank; i++) {
        t.dims[i] = dims[i];
        n *= (size_t)dims[i];
    }
    float *w = xmalloc(n * sizeof *w);
    for (size_t i = 0; i < n; i++) {
        w[i] = (2.0f * lcg_unit(&b->seed) - 1.0f) * limit;
    }
    char name[32];
    snprintf(name, sizeof name, "w%d", b->counter++);
    plx_layer_id id;
    plx_status s = plx_network_add_constant(b->net, name, &t, w, PLX_CONSTANT_COPY, &id);
    free(w);
    if (s) {
        die(s, CONVNET, NULL, name);
    }
    return id;
}

/* conv k x k (stride, groups, pads k/2) + bias, then relu. He uniform. */
static plx_layer_id conv_relu(builder *b, plx_layer_id x, int64_t cin, int64_t cout, int64_t k,
                              int64_t stride, int64_t groups) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    d.strides[0] = d.strides[1] = stride;
    d.pads_begin[0] = d.pads_begin[1] = d.pads_end[0] = d.pads_end[1] = k / 2;
    d.group = groups;
    const int64_t wd[] = {cout, cin / groups, k, k}, bd[] = {cout};
    float fan_in = (float)(cin / groups * k * k);
    plx_layer_id w = add_constant(b, 4, wd, sqrtf(6.0f / fan_in));
    plx_layer_id bias = add_constant(b, 1, bd, 0.1f);
    plx_layer_id in[] = {x, w, bias};
    plx_layer_id y = add_layer(b, PLX_OP_CONV, &d, in, 3);
    plx_activation_desc r = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    return add_layer(b, PLX_OP_ACTIVATION, &r, &y, 1);
}

static void convnet(model *m) {
    builder b = {NULL, 20240601u, 0};
    TRY(plx_network_create(&b.net), CONVNET, NULL, "network");
    m->own_network = b.net;
    plx_tensor_info t = {.dtype = PLX_DTYPE_FLOAT32, .rank = 4, .dims = {1, 3, 128, 128}};
    plx_layer_id x, out;
    TRY(plx_network_add_input(b.net, "image", 0, &t, &x), CONVNET, NULL, "input");
    x = conv_relu(&b, x, 3, 16, 3, 1, 1);
    x = conv_relu(&b, x, 16, 32, 3, 2, 1);
    x = conv_relu(&b, x, 32, 64, 3, 2, 1);
    x = conv_relu(&b, x, 64, 64, 3, 1, 64);
    x = conv_relu(&b, x, 64, 64, 1, 1, 1);
    plx_global_pool_desc gp = PLX_GLOBAL_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    x = add_layer(&b, PLX_OP_GLOBAL_POOL, &gp, &x, 1);
    plx_axis_desc fl = PLX_AXIS_DESC_INIT(1);
    x = add_layer(&b, PLX_OP_FLATTEN, &fl, &x, 1);
    plx_fully_connected_desc fc = PLX_FULLY_CONNECTED_DESC_INIT;
    fc.weights_transposed = true;
    const int64_t wd[] = {10, 64}, bd[] = {10};
    plx_layer_id w = add_constant(&b, 2, wd, sqrtf(6.0f / 64.0f));
    plx_layer_id bias = add_constant(&b, 1, bd, 0.1f);
    plx_layer_id in[] = {x, w, bias};
    x = add_layer(&b, PLX_OP_FULLY_CONNECTED, &fc, in, 3);
    plx_softmax_desc sm = PLX_SOFTMAX_DESC_INIT;
    x = add_layer(&b, PLX_OP_SOFTMAX, &sm, &x, 1);
    TRY(plx_network_add_output(b.net, "probabilities", 0, &out), CONVNET, NULL, "output");
    TRY(plx_network_connect(b.net, x, 0, out, 0), CONVNET, NULL, "output");
    TRY(plx_network_validate(b.net), CONVNET, NULL, "validate");
    m->name = CONVNET;
    m->source = "api";
    m->import_ms = -1.0;
    m->input_note = "seeded random in [0,1)";
    model_alloc_inputs(m, 1);
    uint32_t seed = 7u;
    model_random_input(m, 0, 0, &t, &seed);
}

static const char *base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Imports an ONNX model. false (the reason in why) when the model is to be
 * skipped: inputs not all float32 with static shapes. Other failures exit. */
static bool onnx_model(model *m, const char *path, const char *name, char *why,
                       size_t why_size) {
    m->name = name;
    m->source = path;
    double t0 = now_ms();
    plx_status s = plx_onnx_import_file(path, NULL, &m->onnx);
    m->import_ms = now_ms() - t0;
    if (s && plx_status_get_code(s) == PLX_INVALID_ARGUMENT &&
        strstr(plx_status_get_message(s), "has no size")) {
        snprintf(why, why_size, "an input without a static shape: %s",
                 plx_status_get_message(s));
        plx_status_free(s);
        return false;
    }
    if (s) {
        die(s, name, NULL, "ONNX import");
    }
    size_t count = plx_onnx_model_input_count(m->onnx);
    for (size_t i = 0; i < count; i++) {
        const plx_onnx_io *io = plx_onnx_model_input(m->onnx, i);
        size_t n;
        if (io->info.dtype != PLX_DTYPE_FLOAT32) {
            snprintf(why, why_size, "input '%s' is %s, not float32", io->name,
                     plx_dtype_name(io->info.dtype));
            plx_onnx_model_destroy(&m->onnx);
            return false;
        }
        if (!plx_tensor_info_element_count(&io->info, &n)) {
            snprintf(why, why_size, "input '%s' has no static shape", io->name);
            plx_onnx_model_destroy(&m->onnx);
            return false;
        }
    }
    model_alloc_inputs(m, count);
    uint32_t seed = 11u;
    for (size_t i = 0; i < count; i++) {
        const plx_onnx_io *io = plx_onnx_model_input(m->onnx, i);
        model_random_input(m, i, io->binding_id, &io->info, &seed);
    }
    m->input_note = "seeded random in [0,1)";
    return true;
}

/* digits.onnx, on the real image digit-7.npy. */
static void digits(model *m) {
    static const char path[] = BENCH_DIGITS_DIR "/digits.onnx";
    static const char image[] = BENCH_DIGITS_DIR "/inputs/digit-7.npy";
    char why[512];
    if (!onnx_model(m, path, "digits", why, sizeof why)) {
        fprintf(stderr, "%s: digits: %s: %s\n", prog, path, why);
        exit(1);
    }
    npy_array a;
    if (!npy_read(image, &a, why, sizeof why)) {
        fprintf(stderr, "%s: digits: %s\n", prog, why);
        exit(1);
    }
    if (m->input_count != 1 || a.dtype != PLX_DTYPE_FLOAT32 || a.bytes != m->input_sizes[0]) {
        fprintf(stderr, "%s: digits: %s does not fit the model's input (%zu bytes of float32 "
                        "wanted, %zu of %s)\n", prog, image,
                m->input_count ? m->input_sizes[0] : 0, a.bytes, plx_dtype_name(a.dtype));
        npy_free(&a);
        exit(1);
    }
    memcpy(m->inputs[0], a.data, a.bytes);
    npy_free(&a);
    m->input_note = "inputs/digit-7.npy";
}

/* ------------------------------------------------------------------------ */
/* One backend on one model                                                   */
/* ------------------------------------------------------------------------ */

typedef struct load_times {
    double create_ms;   /* plx_runtime_create, not part of the load */
    double optimize_ms;
    double load_ms;     /* plx_runtime_load_network */
    double first_run_ms;
    const char *program; /* gpu_opencl: "built", "cached"; NULL: not seen */
    double program_ms;
    double cache_write_ms; /* from the build's end to the cache file written; < 0: none */
} load_times;

typedef struct backend_run {
    const char *id;
    bool queued_off;      /* gpu_opencl with the option queued=off */
    /* gpu_opencl loaded with externally managed memory and this
     * planned_memory ("device", "host"); NULL: backend-managed memory. */
    const char *planned;
    bool fallback;        /* optimised with {gpu_opencl, cpu_ref}, fallback allowed */
    char *refusal;        /* the strict optimisation's error, when fallback was needed */
    char *summary;        /* plx_optimized_network_summary */
    size_t layers, fell_back, inserted; /* compute layers (no constants), copies */
    load_times cold, warm;
    plx_runtime *rt;      /* the warm runtime, kept for the latency runs */
    plx_loaded_network *ln;
    size_t output_count;
    plx_tensor_binding *outputs;
    plx_tensor_info *output_infos;
    double *latency;
    double min, median, p90;
    /* Host waits per timed execution: plx_loaded_network_wait_count's
     * growth over the timed runs (queued backends), or, for gpu_opencl
     * with queued=off, its compute layers (each ends with a clFinish). */
    double waits_per_run;
} backend_run;

static plx_tensor_binding *input_bindings(const model *m) {
    plx_tensor_binding *ib = xmalloc(m->input_count * sizeof *ib);
    for (size_t i = 0; i < m->input_count; i++) {
        ib[i] = (plx_tensor_binding){m->input_ids[i], m->inputs[i], m->input_sizes[i], 0};
    }
    return ib;
}

/* Output buffers for r->ln, sized by the loaded network. */
static void make_outputs(const model *m, backend_run *r) {
    size_t n = plx_loaded_network_output_count(r->ln);
    r->output_count = n;
    r->outputs = xmalloc(n * sizeof *r->outputs);
    r->output_infos = xmalloc(n * sizeof *r->output_infos);
    for (size_t i = 0; i < n; i++) {
        int32_t id = plx_loaded_network_output_binding(r->ln, i);
        TRY(plx_loaded_network_output_info(r->ln, id, &r->output_infos[i]), m->name, r->id,
            "output info");
        size_t bytes;
        if (!plx_tensor_info_byte_size(&r->output_infos[i], &bytes)) {
            fprintf(stderr, "%s: %s/%s: output %d: its size overflows\n", prog, m->name, r->id,
                    id);
            exit(1);
        }
        r->outputs[i] = (plx_tensor_binding){id, xmalloc(bytes), bytes, 0};
        memset(r->outputs[i].data, 0, bytes);
    }
}

static void free_outputs(backend_run *r) {
    for (size_t i = 0; i < r->output_count; i++) {
        free(r->outputs[i].data);
    }
    free(r->outputs);
    free(r->output_infos);
    r->outputs = NULL;
    r->output_infos = NULL;
    r->output_count = 0;
}

static void execute(const model *m, backend_run *r, const plx_tensor_binding *ib,
                    const char *what) {
    TRY(plx_loaded_network_execute(r->ln, ib, m->input_count, r->outputs, r->output_count),
        m->name, r->id, what);
}

/* Counts where the layers of `on` run. */
static void count_assignments(backend_run *r, const plx_optimized_network *on) {
    r->layers = r->fell_back = r->inserted = 0;
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
        if (a->inserted) {
            r->inserted++;
            continue;
        }
        if (a->op == PLX_OP_INPUT || a->op == PLX_OP_OUTPUT || a->op == PLX_OP_CONSTANT) {
            continue; /* constants follow their consumer */
        }
        r->layers++;
        if (strcmp(a->backend_id, r->id) != 0) {
            r->fell_back++;
        }
    }
    free(r->summary);
    r->summary = xstrdup(plx_optimized_network_summary(on));
}

/* Optimises m for r in rt: r->id alone without fallback; for gpu_opencl a
 * refusal (PLX_UNSUPPORTED) then decides {gpu_opencl, cpu_ref} with
 * fallback, for this load and the next. Only the optimisation that is kept
 * is timed. */
static plx_optimized_network *optimize(plx_runtime *rt, model *m, backend_run *r, bool decide,
                                       double *out_ms) {
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *with_fallback[] = {"gpu_opencl", "cpu_ref"};
    const char *alone[] = {r->id};
    plx_optimized_network *on = NULL;
    double t0 = now_ms();
    if (!r->fallback) {
        oo.backends = alone;
        oo.backend_count = 1;
        oo.allow_fallback = false;
        plx_status s = plx_optimize(rt, model_network(m), &oo, &on);
        if (s && decide && strcmp(r->id, "gpu_opencl") == 0 &&
            plx_status_get_code(s) == PLX_UNSUPPORTED) {
            r->refusal = xstrdup(plx_status_get_message(s));
            r->fallback = true;
            plx_status_free(s);
        } else if (s) {
            die(s, m->name, r->id, "optimize");
        }
    }
    if (r->fallback) {
        oo.backends = with_fallback;
        oo.backend_count = 2;
        oo.allow_fallback = true;
        t0 = now_ms();
        TRY(plx_optimize(rt, model_network(m), &oo, &on), m->name, r->id,
            "optimize with fallback to cpu_ref");
    }
    *out_ms = now_ms() - t0;
    return on;
}

/* One fresh runtime: create, optimise, load, first run. Cold: the runtime is
 * destroyed again; warm: it stays in r for the latency runs. */
static void load_once(const settings *set, model *m, backend_run *r, bool warm,
                      const plx_tensor_binding *ib) {
    log_capture cap = {NULL, -1.0, -1.0, -1.0};
    load_times *t = warm ? &r->warm : &r->cold;
    bool gpu = strcmp(r->id, "gpu_opencl") == 0;
    double t0 = now_ms();
    plx_runtime *rt = make_runtime(set, gpu ? cache_dir : NULL, r->queued_off, r->planned, &cap,
                                   m->name, r->id);
    t->create_ms = now_ms() - t0;
    require_backend(&rt, r->id);
    if (gpu) {
        require_backend(&rt, "cpu_ref"); /* where refused layers fall back */
    }
    plx_optimized_network *on = optimize(rt, m, r, !warm, &t->optimize_ms);
    count_assignments(r, on);
    t0 = now_ms();
    plx_loaded_network *ln;
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.externally_managed_memory = r->planned != NULL;
    TRY(plx_runtime_load_network(rt, &on, &lo, &ln), m->name, r->id, "load");
    t->load_ms = now_ms() - t0;
    r->rt = rt;
    r->ln = ln;
    make_outputs(m, r);
    t0 = now_ms();
    execute(m, r, ib, "first execution");
    t->first_run_ms = now_ms() - t0;
    t->program = cap.program;
    t->program_ms = cap.program_ms;
    t->cache_write_ms =
        cap.built_at >= 0 && cap.written_at >= 0 ? cap.written_at - cap.built_at : -1.0;
    if (!warm) {
        free_outputs(r);
        plx_loaded_network_unload(&r->ln);
        plx_runtime_destroy(&r->rt);
    }
}

static void stats(backend_run *r, long n) {
    double *v = xmalloc((size_t)n * sizeof *v);
    memcpy(v, r->latency, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    r->min = v[0];
    r->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    long rank = (9 * n + 9) / 10; /* ceil(0.9 n), nearest rank */
    r->p90 = v[rank - 1];
    free(v);
}

/* ------------------------------------------------------------------------ */
/* Agreement                                                                  */
/* ------------------------------------------------------------------------ */

static double element(const void *data, plx_dtype dtype, size_t i) {
    switch (dtype) {
    case PLX_DTYPE_FLOAT32:
        return ((const float *)data)[i];
    case PLX_DTYPE_FLOAT16:
        return plx_float16_to_float32(((const uint16_t *)data)[i]);
    case PLX_DTYPE_BFLOAT16:
        return plx_bfloat16_to_float32(((const uint16_t *)data)[i]);
    case PLX_DTYPE_INT8:
    case PLX_DTYPE_INT4:
        return ((const int8_t *)data)[i];
    case PLX_DTYPE_UINT4:
        return ((const uint8_t *)data)[i];
    case PLX_DTYPE_UINT8:
    case PLX_DTYPE_BOOL:
        return ((const uint8_t *)data)[i];
    case PLX_DTYPE_INT16:
        return ((const int16_t *)data)[i];
    case PLX_DTYPE_INT32:
        return ((const int32_t *)data)[i];
    case PLX_DTYPE_INT64:
        return (double)((const int64_t *)data)[i];
    case PLX_DTYPE_FLOAT64:
        return ((const double *)data)[i];
    case PLX_DTYPE_UINT16:
        return ((const uint16_t *)data)[i];
    case PLX_DTYPE_UINT32:
        return ((const uint32_t *)data)[i];
    case PLX_DTYPE_UINT64:
        return (double)((const uint64_t *)data)[i];
    case PLX_DTYPE_FLOAT8E4M3FN:
    case PLX_DTYPE_FLOAT8E4M3FNUZ:
    case PLX_DTYPE_FLOAT8E5M2:
    case PLX_DTYPE_FLOAT8E5M2FNUZ:
        return plx_float8_to_float32(((const uint8_t *)data)[i], dtype);
    case PLX_DTYPE_INVALID:
        break;
    }
    return NAN;
}

typedef struct agreement {
    size_t elements;
    size_t outside;   /* elements failing |a-b| <= 1e-4 + 1e-3*|b| (NaN against a number too) */
    double max_abs;   /* over pairs of numbers (equal infinities and NaN pairs count 0) */
    long argmax[2];   /* of the first output, per backend; -1 when not a float32 vector */
} agreement;

static long argmax(const plx_tensor_binding *b, const plx_tensor_info *info) {
    size_t n;
    if (info->dtype != PLX_DTYPE_FLOAT32 || !plx_tensor_info_element_count(info, &n) || n < 2) {
        return -1;
    }
    const float *v = b->data;
    size_t best = 0;
    for (size_t i = 1; i < n; i++) {
        if (v[i] > v[best]) {
            best = i;
        }
    }
    return (long)best;
}

static agreement compare(const model *m, const backend_run *g, const backend_run *c) {
    agreement a = {0, 0, 0.0, {-1, -1}};
    if (g->output_count != c->output_count) {
        fprintf(stderr, "%s: %s: gpu_opencl has %zu outputs, cpu_ref %zu\n", prog, m->name,
                g->output_count, c->output_count);
        exit(1);
    }
    for (size_t o = 0; o < g->output_count; o++) {
        const plx_tensor_info *gi = &g->output_infos[o], *ci = &c->output_infos[o];
        size_t n;
        if (g->outputs[o].binding_id != c->outputs[o].binding_id || gi->dtype != ci->dtype ||
            !plx_tensor_info_same_shape(gi, ci) || !plx_tensor_info_element_count(gi, &n)) {
            fprintf(stderr, "%s: %s: output %zu differs in binding, dtype or shape between "
                            "gpu_opencl and cpu_ref\n", prog, m->name, o);
            exit(1);
        }
        for (size_t i = 0; i < n; i++) {
            double x = element(g->outputs[o].data, gi->dtype, i);
            double y = element(c->outputs[o].data, ci->dtype, i);
            a.elements++;
            if (isnan(x) || isnan(y)) {
                a.outside += !(isnan(x) && isnan(y));
                continue;
            }
            if (x == y) {
                continue; /* equal infinities too */
            }
            double d = fabs(x - y);
            if (d > a.max_abs || isnan(d)) {
                a.max_abs = d;
            }
            if (!(d <= 1e-4 + 1e-3 * fabs(y))) {
                a.outside++;
            }
        }
    }
    if (g->output_count) {
        a.argmax[GPU] = argmax(&g->outputs[0], &g->output_infos[0]);
        a.argmax[CPU] = argmax(&c->outputs[0], &c->output_infos[0]);
    }
    return a;
}

/* ------------------------------------------------------------------------ */
/* One model, both backends                                                   */
/* ------------------------------------------------------------------------ */

typedef struct result {
    const model *m;
    backend_run runs[RUNS]; /* GPU, CPU, SYNC, PDEV, PHOST */
    agreement agree;
    agreement sync_agree; /* queued=off (a) against queued (b) */
    agreement planned_agree; /* planned_memory=device (a) against host (b) */
    double ratio;
} result;

static void bench_model(const settings *set, model *m, result *res) {
    memset(res, 0, sizeof *res);
    res->m = m;
    snprintf(cache_dir, sizeof cache_dir, "/tmp/plexus-bench-backends-XXXXXX");
    if (!mkdtemp(cache_dir)) {
        fprintf(stderr, "%s: %s: mkdtemp(%s) failed\n", prog, m->name, cache_dir);
        cache_dir[0] = '\0';
        exit(1);
    }
    plx_tensor_binding *ib = input_bindings(m);
    for (int b = 0; b < 2; b++) {
        backend_run *r = &res->runs[b];
        r->id = backend_ids[b];
        load_once(set, m, r, false, ib);
        load_once(set, m, r, true, ib);
    }
    /* gpu_opencl again with queued=off, on the warm cache, with the
     * queued run's assignment (the same fallback). */
    backend_run *sync = &res->runs[SYNC];
    sync->id = "gpu_opencl";
    sync->queued_off = true;
    sync->fallback = res->runs[GPU].fallback;
    load_once(set, m, sync, true, ib);
    /* And with externally managed memory, planned on the device and in
     * host memory, queued, with the same assignment. */
    for (int b = PDEV; b <= PHOST; b++) {
        backend_run *p = &res->runs[b];
        p->id = "gpu_opencl";
        p->planned = b == PDEV ? "device" : "host";
        p->fallback = res->runs[GPU].fallback;
        load_once(set, m, p, true, ib);
    }
    uint64_t waits0[RUNS];
    for (int b = 0; b < RUNS; b++) {
        for (int i = 0; i < WARMUP; i++) {
            execute(m, &res->runs[b], ib, "warm-up execution");
        }
        res->runs[b].latency = xmalloc((size_t)set->iterations * sizeof(double));
        waits0[b] = plx_loaded_network_wait_count(res->runs[b].ln);
    }
    for (long i = 0; i < set->iterations; i++) {
        for (int k = 0; k < RUNS; k++) {
            int b = (int)((i + k) % RUNS); /* rotate which run goes first */
            backend_run *r = &res->runs[b];
            double t0 = now_ms();
            execute(m, r, ib, "execution");
            r->latency[i] = now_ms() - t0;
        }
    }
    for (int b = 0; b < RUNS; b++) {
        backend_run *r = &res->runs[b];
        stats(r, set->iterations);
        r->waits_per_run = (double)(plx_loaded_network_wait_count(r->ln) - waits0[b]) /
                           (double)set->iterations;
    }
    sync->waits_per_run = (double)(sync->layers - sync->fell_back);
    res->ratio = res->runs[GPU].median / res->runs[CPU].median;
    res->agree = compare(m, &res->runs[GPU], &res->runs[CPU]);
    res->sync_agree = compare(m, &res->runs[SYNC], &res->runs[GPU]);
    res->planned_agree = compare(m, &res->runs[PDEV], &res->runs[PHOST]);
    for (int b = 0; b < RUNS; b++) {
        backend_run *r = &res->runs[b];
        free_outputs(r);
        plx_loaded_network_unload(&r->ln);
        plx_runtime_destroy(&r->rt);
    }
    free(ib);
    remove_cache_dir();
}

static void result_free(result *res) {
    for (int b = 0; b < RUNS; b++) {
        free(res->runs[b].refusal);
        free(res->runs[b].summary);
        free(res->runs[b].latency);
    }
}

/* ------------------------------------------------------------------------ */
/* Output                                                                     */
/* ------------------------------------------------------------------------ */

static void json_string(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            printf("\\%c", *p);
        } else if (*p == '\n') {
            printf("\\n");
        } else if (*p < 0x20) {
            printf("\\u%04x", *p);
        } else {
            putchar(*p);
        }
    }
    putchar('"');
}

static void json_number(double v) {
    if (isfinite(v)) {
        printf("%.6g", v);
    } else {
        printf("null");
    }
}

static void json_times(const char *key, const load_times *t) {
    printf("\"%s\": {\"runtime_create_ms\": ", key);
    json_number(t->create_ms);
    printf(", \"optimize_ms\": ");
    json_number(t->optimize_ms);
    printf(", \"load_ms\": ");
    json_number(t->load_ms);
    printf(", \"optimize_load_ms\": ");
    json_number(t->optimize_ms + t->load_ms);
    printf(", \"first_run_ms\": ");
    json_number(t->first_run_ms);
    printf(", \"program\": ");
    if (t->program) {
        json_string(t->program);
        printf(", \"program_ms\": ");
        json_number(t->program_ms);
    } else {
        printf("null, \"program_ms\": null");
    }
    printf(", \"cache_write_ms\": ");
    if (t->cache_write_ms >= 0) {
        json_number(t->cache_write_ms);
    } else {
        printf("null");
    }
    printf("}");
}

typedef struct skipped {
    const char *path;
    char reason[512];
} skipped;

typedef struct device_facts {
    double probe_ms;
    const char *device, *platform, *driver;
} device_facts;

static void print_json(const settings *set, const device_facts *dev, const result *res,
                       size_t count, const skipped *skips, size_t skip_count) {
    printf("{\"iterations\": %ld, \"warmup\": %d, \"pocl_kernel_cache\": \"0\", ",
           set->iterations, WARMUP);
    printf("\"gpu_opencl\": {\"device\": ");
    json_string(dev->device);
    printf(", \"platform\": ");
    json_string(dev->platform);
    printf(", \"driver_version\": ");
    json_string(dev->driver);
    printf("}, \"probe_runtime_create_ms\": ");
    json_number(dev->probe_ms);
    printf(", \"models\": [");
    for (size_t i = 0; i < count; i++) {
        const result *r = &res[i];
        printf("%s{\"name\": ", i ? ", " : "");
        json_string(r->m->name);
        printf(", \"source\": ");
        json_string(r->m->source);
        printf(", \"import_ms\": ");
        if (r->m->import_ms < 0) {
            printf("null");
        } else {
            json_number(r->m->import_ms);
        }
        printf(", \"inputs\": ");
        json_string(r->m->input_note);
        printf(", \"backends\": {");
        for (int b = 0; b < 2; b++) {
            const backend_run *br = &r->runs[b];
            printf("%s\"%s\": {\"fallback\": %s, \"compute_layers\": %zu, "
                   "\"fell_back_layers\": %zu, \"inserted_layers\": %zu, \"summary\": ",
                   b ? ", " : "", br->id, br->fallback ? "true" : "false", br->layers,
                   br->fell_back, br->inserted);
            json_string(br->summary ? br->summary : "");
            printf(", \"refusal\": ");
            if (br->refusal) {
                json_string(br->refusal);
            } else {
                printf("null");
            }
            printf(", ");
            json_times("cold", &br->cold);
            printf(", ");
            json_times("warm", &br->warm);
            printf(", \"latency_ms\": {\"min\": ");
            json_number(br->min);
            printf(", \"median\": ");
            json_number(br->median);
            printf(", \"p90\": ");
            json_number(br->p90);
            printf("}}");
        }
        const backend_run *q = &r->runs[GPU], *o = &r->runs[SYNC];
        printf("}, \"gpu_opencl_queued\": {\"on\": {\"median_ms\": ");
        json_number(q->median);
        printf(", \"host_waits_per_execution\": ");
        json_number(q->waits_per_run);
        printf("}, \"off\": {\"median_ms\": ");
        json_number(o->median);
        printf(", \"min_ms\": ");
        json_number(o->min);
        printf(", \"p90_ms\": ");
        json_number(o->p90);
        printf(", \"host_waits_per_execution\": ");
        json_number(o->waits_per_run);
        printf(", \"waits\": \"one clFinish per gpu_opencl layer\"}, \"median_ratio_on_over_off\": ");
        json_number(q->median / o->median);
        printf(", \"max_abs_diff_off_vs_on\": ");
        json_number(r->sync_agree.max_abs);
        printf("}");
        printf(", \"gpu_opencl_planned_memory\": {");
        for (int b = PDEV; b <= PHOST; b++) {
            const backend_run *p = &r->runs[b];
            printf("%s\"%s\": {\"min_ms\": ", b == PDEV ? "" : ", ", p->planned);
            json_number(p->min);
            printf(", \"median_ms\": ");
            json_number(p->median);
            printf(", \"p90_ms\": ");
            json_number(p->p90);
            printf(", \"host_waits_per_execution\": ");
            json_number(p->waits_per_run);
            printf("}");
        }
        printf(", \"median_ratio_device_over_host\": ");
        json_number(r->runs[PDEV].median / r->runs[PHOST].median);
        printf(", \"max_abs_diff_device_vs_host\": ");
        json_number(r->planned_agree.max_abs);
        printf("}");
        printf(", \"median_ratio_gpu_opencl_over_cpu_ref\": ");
        json_number(r->ratio);
        printf(", \"agreement\": {\"elements\": %zu, \"max_abs_diff\": ", r->agree.elements);
        json_number(r->agree.max_abs);
        printf(", \"tolerance\": \"|a-b| <= 1e-4 + 1e-3*|b|, a gpu_opencl, b cpu_ref\", "
               "\"outside_tolerance\": %zu, \"ok\": %s, \"argmax\": {\"gpu_opencl\": %ld, "
               "\"cpu_ref\": %ld}}}",
               r->agree.outside, r->agree.outside ? "false" : "true", r->agree.argmax[GPU],
               r->agree.argmax[CPU]);
    }
    printf("], \"skipped\": [");
    for (size_t i = 0; i < skip_count; i++) {
        printf("%s{\"model\": ", i ? ", " : "");
        json_string(skips[i].path);
        printf(", \"reason\": ");
        json_string(skips[i].reason);
        printf("}");
    }
    printf("]}\n");
}

/* text, each line after the first indented by `indent`. */
static void print_indented(const char *text, const char *indent) {
    for (const char *p = text; *p; p++) {
        putchar(*p);
        if (*p == '\n' && p[1]) {
            fputs(indent, stdout);
        }
    }
}

/* "built 812.3" / "cached 4.1" / "-". */
static void program_text(const load_times *t, char *buf, size_t size) {
    if (t->program) {
        snprintf(buf, size, "%s %.1f", t->program, t->program_ms);
    } else {
        snprintf(buf, size, "-");
    }
}

static void print_text(const settings *set, const device_facts *dev, const result *res,
                       size_t count, const skipped *skips, size_t skip_count) {
    printf("gpu_opencl on '%s' (%s; driver %s); POCL_KERNEL_CACHE=0\n", dev->device,
           dev->platform, dev->driver);
    printf("latency: %ld timed runs per backend (gpu_opencl queued, cpu_ref, gpu_opencl "
           "queued=off, gpu_opencl with externally managed memory planned_memory=device and "
           "host), rotating which goes first, after %d warm-up runs; all times in ms\n",
           set->iterations, WARMUP);
    printf("load = optimize + load_network in a fresh runtime (runtime creation apart); "
           "cold: empty cache_dir, warm: the same cache_dir again\n\n");
    printf("%-12s %-10s %7s | %9s %9s %-14s | %9s %9s %-14s | %8s %8s %8s\n", "model",
           "backend", "create", "cold load", "1st run", "program", "warm load", "1st run",
           "program", "min", "median", "p90");
    for (size_t i = 0; i < count; i++) {
        const result *r = &res[i];
        for (int b = 0; b < 2; b++) {
            const backend_run *br = &r->runs[b];
            char pc[32], pw[32];
            program_text(&br->cold, pc, sizeof pc);
            program_text(&br->warm, pw, sizeof pw);
            printf("%-12.12s %-10s %7.1f | %9.2f %9.2f %-14s | %9.2f %9.2f %-14s | %8.3f %8.3f "
                   "%8.3f\n",
                   b ? "" : r->m->name, br->id, br->cold.create_ms,
                   br->cold.optimize_ms + br->cold.load_ms, br->cold.first_run_ms, pc,
                   br->warm.optimize_ms + br->warm.load_ms, br->warm.first_run_ms, pw, br->min,
                   br->median, br->p90);
        }
        const agreement *a = &r->agree;
        printf("  %s: median gpu_opencl/cpu_ref %.2f; outputs: %zu values, max |a-b| %.3g, "
               "|a-b| <= 1e-4 + 1e-3*|b|: %s",
               r->m->name, r->ratio, a->elements, a->max_abs, a->outside ? "FAILED" : "ok");
        if (a->outside) {
            printf(" (%zu outside)", a->outside);
        }
        if (a->argmax[GPU] >= 0) {
            printf("; argmax %ld / %ld", a->argmax[GPU], a->argmax[CPU]);
        }
        const backend_run *q = &r->runs[GPU], *o = &r->runs[SYNC];
        printf("\n  %s: gpu_opencl queued=on median %.3f ms, %.2f host waits per execution; "
               "queued=off median %.3f ms (min %.3f, p90 %.3f), %.0f waits (a clFinish per "
               "gpu_opencl layer); on/off %.2f; outputs off vs on: max |a-b| %.3g",
               r->m->name, q->median, q->waits_per_run, o->median, o->min, o->p90,
               o->waits_per_run, q->median / o->median, r->sync_agree.max_abs);
        const backend_run *pd = &r->runs[PDEV], *ph = &r->runs[PHOST];
        printf("\n  %s: gpu_opencl externally managed memory: planned_memory=device median "
               "%.3f ms (min %.3f, p90 %.3f); planned_memory=host median %.3f ms (min %.3f, "
               "p90 %.3f); device/host %.2f; outputs device vs host: max |a-b| %.3g",
               r->m->name, pd->median, pd->min, pd->p90, ph->median, ph->min, ph->p90,
               pd->median / ph->median, r->planned_agree.max_abs);
        printf("\n  %s: inputs %s", r->m->name, r->m->input_note);
        if (r->m->import_ms >= 0) {
            printf("; ONNX import %.2f ms (%s)", r->m->import_ms, r->m->source);
        }
        printf("\n");
        const backend_run *g = &r->runs[GPU];
        if (g->cold.program) {
            printf("  %s: gpu_opencl program, cold: %s in %.1f ms", r->m->name, g->cold.program,
                   g->cold.program_ms);
            if (g->cold.cache_write_ms >= 0) {
                printf(", then %.1f ms until its binary was in the cache", g->cold.cache_write_ms);
            }
            if (g->warm.program) {
                printf("; warm: %s in %.1f ms", g->warm.program, g->warm.program_ms);
            }
            printf("\n");
        }
        if (g->fallback) {
            printf("  %s: gpu_opencl refused layers; with fallback to cpu_ref %zu of %zu "
                   "compute layers fell back (%zu copies inserted)\n    refused: ",
                   r->m->name, g->fell_back, g->layers, g->inserted);
            print_indented(g->refusal, "    ");
            printf("\n    assignment: ");
            print_indented(g->summary, "    ");
            printf("\n");
        } else {
            printf("  %s: all %zu compute layers on gpu_opencl, none fell back\n", r->m->name,
                   g->layers);
        }
        if (g->warm.program && strcmp(g->warm.program, "cached") != 0) {
            printf("  %s: warning: the warm gpu_opencl runtime did not read the program "
                   "from the cache\n", r->m->name);
        }
    }
    for (size_t i = 0; i < skip_count; i++) {
        printf("skipped %s: %s\n", skips[i].path, skips[i].reason);
    }
}

/* ------------------------------------------------------------------------ */
/* main                                                                       */
/* ------------------------------------------------------------------------ */

static int usage(void) {
    fprintf(stderr, "usage: %s [--json] [--iterations N] [--backend-path DIR]... "
                    "[--model PATH.onnx]...\n", prog);
    return 2;
}

int main(int argc, char **argv) {
    /* Before anything loads PoCL: its kernel cache would make cold warm. */
    if (setenv("POCL_KERNEL_CACHE", "0", 1) != 0) {
        fprintf(stderr, "%s: setenv(POCL_KERNEL_CACHE) failed\n", prog);
        return 1;
    }
    settings set = {.json = false, .iterations = 50};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            set.json = true;
        } else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
            char *end;
            set.iterations = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || set.iterations < 1 || set.iterations > 100000000) {
                fprintf(stderr, "%s: --iterations wants a number from 1 to 100000000\n", prog);
                return 2;
            }
        } else if (strcmp(argv[i], "--backend-path") == 0 && i + 1 < argc) {
            if (set.path_count == MAX_PATHS) {
                fprintf(stderr, "%s: at most %d --backend-path\n", prog, MAX_PATHS);
                return 2;
            }
            set.paths[set.path_count++] = argv[++i];
        } else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
            if (set.model_count == MAX_MODELS) {
                fprintf(stderr, "%s: at most %d --model\n", prog, MAX_MODELS);
                return 2;
            }
            set.models[set.model_count++] = argv[++i];
        } else {
            return usage();
        }
    }
    if (set.path_count == 0) {
        set.paths[set.path_count++] = BENCH_GPU_OPENCL_DIR;
        set.paths[set.path_count++] = BENCH_CPU_REF_DIR;
    }
    if (atexit(remove_cache_dir) != 0) {
        fprintf(stderr, "%s: atexit failed\n", prog);
        return 1;
    }

    /* A first runtime: both backends there, and the OpenCL platform
     * initialised once (the ICD loader and PoCL stay mapped, -z nodelete)
     * before anything is timed. */
    device_facts dev;
    double t0 = now_ms();
    plx_runtime *rt = make_runtime(&set, NULL, false, NULL, NULL, "probe", NULL);
    dev.probe_ms = now_ms() - t0;
    require_backend(&rt, "cpu_ref");
    const plx_backend_info *gpu = require_backend(&rt, "gpu_opencl");
    char device[256], platform[256], driver[128];
    snprintf(device, sizeof device, "%s", capability_string(gpu, "gpu_opencl.device"));
    snprintf(platform, sizeof platform, "%s", capability_string(gpu, "gpu_opencl.platform"));
    snprintf(driver, sizeof driver, "%s", capability_string(gpu, "gpu_opencl.driver_version"));
    dev.device = device;
    dev.platform = platform;
    dev.driver = driver;
    plx_runtime_destroy(&rt);

    size_t total = 2 + set.model_count;
    model *models = xmalloc(total * sizeof *models);
    result *results = xmalloc(total * sizeof *results);
    skipped *skips = xmalloc((set.model_count ? set.model_count : 1) * sizeof *skips);
    size_t count = 0, skip_count = 0;
    memset(models, 0, total * sizeof *models);
    convnet(&models[0]);
    digits(&models[1]);
    size_t model_count = 2;
    for (size_t i = 0; i < set.model_count; i++) {
        model *m = &models[model_count];
        skipped *sk = &skips[skip_count];
        if (onnx_model(m, set.models[i], base_name(set.models[i]), sk->reason,
                       sizeof sk->reason)) {
            model_count++;
        } else {
            sk->path = set.models[i];
            skip_count++;
            fprintf(stderr, "%s: skipping %s: %s\n", prog, sk->path, sk->reason);
            memset(m, 0, sizeof *m);
        }
    }
    for (size_t i = 0; i < model_count; i++) {
        bench_model(&set, &models[i], &results[count++]);
    }
    if (set.json) {
        print_json(&set, &dev, results, count, skips, skip_count);
    } else {
        print_text(&set, &dev, results, count, skips, skip_count);
    }
    for (size_t i = 0; i < count; i++) {
        result_free(&results[i]);
    }
    for (size_t i = 0; i < model_count; i++) {
        model_free(&models[i]);
    }
    free(results);
    free(models);
    free(skips);
    return 0;
}
