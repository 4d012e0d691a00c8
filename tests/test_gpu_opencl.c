/* gpu_opencl, the OpenCL backend, end to end: availability and device
 * choice, options, fallback to cpu_ref, copies and imports between the two,
 * zero copy of caller memory, externally managed memory and concurrent
 * executions, and the program cache.
 *
 * Runs on whatever OpenCL platform the ICD loader finds (PoCL in CI). With
 * none, the tests that need a device skip with the reason, unless
 * PLEXUS_REQUIRE_OPENCL=1 is set, which makes that a failure. Runtimes see
 * only the build's gpu_opencl and cpu_ref, never the system's. Criterion
 * runs each test in its own process, so a test may set OCL_ICD_VENDORS for
 * the ICD loader, which reads it once per process. */
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <plexus/network.h>

#include "test_util.h"

#ifndef GPU_OPENCL_DIR
#error "GPU_OPENCL_DIR must be defined by the build"
#endif
#ifndef CPU_REF_DIR
#error "CPU_REF_DIR must be defined by the build"
#endif

#define N 64

/* ---- runtimes ------------------------------------------------------------ */

/* What the backends logged, for tests that read it (program cache). */
static char log_text[32768];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void capture_log(void *user_data, plx_log_level level, const char *source,
                        const char *message) {
    (void)user_data;
    pthread_mutex_lock(&log_lock);
    size_t len = strlen(log_text);
    if (len + 1 < sizeof log_text) {
        snprintf(log_text + len, sizeof log_text - len, "[%s] %s: %s\n",
                 plx_log_level_name(level), source, message);
    }
    pthread_mutex_unlock(&log_lock);
    const char *show = getenv("PLEXUS_TEST_LOG");
    if (show && *show && strcmp(show, "0") != 0) {
        fprintf(stderr, "plexus[%s] %s: %s\n", source, plx_log_level_name(level), message);
    }
}

static void clear_log(void) {
    pthread_mutex_lock(&log_lock);
    log_text[0] = '\0';
    pthread_mutex_unlock(&log_lock);
}

static bool log_has(const char *needle) {
    pthread_mutex_lock(&log_lock);
    bool found = strstr(log_text, needle) != NULL;
    pthread_mutex_unlock(&log_lock);
    return found;
}

/* A runtime over gpu_opencl and cpu_ref with options for gpu_opencl
 * ("key=value" strings). */
static plx_runtime *runtime_with_allocator(const char *const *options, size_t option_count,
                                           const plx_backend_allocator *allocator) {
    plx_runtime_options o;
    tu_options(&o);
    if (allocator) {
        o.allocators = allocator;
        o.allocator_count = 1;
    }
    o.log_fn = capture_log;
    const char *paths[] = {GPU_OPENCL_DIR, CPU_REF_DIR};
    o.search_paths = paths;
    o.search_path_count = 2;
    plx_backend_option opts[8];
    tu_option_key keys[8];
    tu_backend_options("gpu_opencl", options, option_count, opts, keys, 8);
    o.backend_options = opts;
    o.backend_option_count = option_count;
    return tu_create(&o);
}

static plx_runtime *runtime_with(const char *const *options, size_t option_count) {
    return runtime_with_allocator(options, option_count, NULL);
}

static plx_runtime *runtime_plain(void) {
    return runtime_with(NULL, 0);
}

/* gpu_opencl of a runtime created without options: available, or the test
 * skips with the backend's reason (fails with PLEXUS_REQUIRE_OPENCL=1). */
static const plx_backend_info *require_gpu(plx_runtime **rt) {
    return tu_require_backend(rt, "gpu_opencl", "PLEXUS_REQUIRE_OPENCL");
}

/* A device is there: a runtime with options must then decide by itself. */
static void require_device(void) {
    plx_runtime *rt = runtime_plain();
    require_gpu(&rt);
    plx_runtime_destroy(&rt);
}

static const char *cap_string(const plx_backend_info *b, const char *key) {
    const plx_capability *c = plx_backend_info_capability(b, key);
    cr_assert(not(zero(ptr, (void *)c)), "no capability %s", key);
    cr_assert(eq(int, c->type, PLX_VALUE_STRING), "%s is not a string", key);
    return c->string_value;
}

/* ---- networks ------------------------------------------------------------ */

static plx_tensor_info vec(void) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = PLX_DTYPE_FLOAT32;
    t.rank = 2;
    t.dims[0] = 1;
    t.dims[1] = N;
    return t;
}

static float bias[N], scale[N];

/* x -> relu -> add(bias) -> sqrt -> mul(scale) -> y, and the add's result
 * as a second output: several intermediate tensors with overlapping
 * lifetimes, two constants. */
static plx_network *chain(void) {
    for (int i = 0; i < N; i++) {
        bias[i] = 0.25f * (float)i;
        scale[i] = 1.0f + 0.01f * (float)i;
    }
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec();
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_binary_desc mul = PLX_BINARY_DESC_INIT(PLX_BINARY_MUL);
    plx_unary_desc sq = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    plx_layer_id x, r, b, a, s, c, m, y, y2;
    OK(plx_network_add_input(n, "x", 0, &t, &x));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_constant(n, "bias", &t, bias, PLX_CONSTANT_BORROW, &b));
    OK(plx_network_add_layer(n, "add", PLX_OP_BINARY, &add, 2, 1, &a));
    OK(plx_network_add_layer(n, "sqrt", PLX_OP_UNARY, &sq, 1, 1, &s));
    OK(plx_network_add_constant(n, "scale", &t, scale, PLX_CONSTANT_BORROW, &c));
    OK(plx_network_add_layer(n, "mul", PLX_OP_BINARY, &mul, 2, 1, &m));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_add_output(n, "sum", 1, &y2));
    OK(plx_network_connect(n, x, 0, r, 0));
    OK(plx_network_connect(n, r, 0, a, 0));
    OK(plx_network_connect(n, b, 0, a, 1));
    OK(plx_network_connect(n, a, 0, s, 0));
    OK(plx_network_connect(n, s, 0, m, 0));
    OK(plx_network_connect(n, c, 0, m, 1));
    OK(plx_network_connect(n, m, 0, y, 0));
    OK(plx_network_connect(n, a, 0, y2, 0));
    return n;
}

/* A scalar float32 (a quantization scale). */
static plx_tensor_info scalar(void) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = PLX_DTYPE_FLOAT32;
    return t;
}

static const float qscale = 0.0625f;

/* x -> relu -> quantize (uint8, output q) -> dequantize -> * scale -> y:
 * gpu_opencl has no quantize nor dequantize, so the middle layers fall
 * back to cpu_ref, with copies (or imports) on both sides. */
static plx_network *mixed(void) {
    for (int i = 0; i < N; i++) {
        scale[i] = 1.0f + 0.01f * (float)i;
    }
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec(), s0 = scalar();
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_quantize_desc qd = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_UINT8);
    plx_quantize_desc dqd = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_FLOAT32);
    plx_binary_desc mul = PLX_BINARY_DESC_INIT(PLX_BINARY_MUL);
    plx_layer_id x, r, qs, q, dq, c, m, y, yq;
    OK(plx_network_add_input(n, "x", 0, &t, &x));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_constant(n, "qscale", &s0, &qscale, PLX_CONSTANT_BORROW, &qs));
    OK(plx_network_add_layer(n, "quantize", PLX_OP_QUANTIZE, &qd, 2, 1, &q));
    OK(plx_network_add_layer(n, "dequantize", PLX_OP_DEQUANTIZE, &dqd, 2, 1, &dq));
    OK(plx_network_add_constant(n, "scale", &t, scale, PLX_CONSTANT_BORROW, &c));
    OK(plx_network_add_layer(n, "mul", PLX_OP_BINARY, &mul, 2, 1, &m));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_add_output(n, "q", 1, &yq));
    OK(plx_network_connect(n, x, 0, r, 0));
    OK(plx_network_connect(n, r, 0, q, 0));
    OK(plx_network_connect(n, qs, 0, q, 1));
    OK(plx_network_connect(n, q, 0, dq, 0));
    OK(plx_network_connect(n, qs, 0, dq, 1));
    OK(plx_network_connect(n, dq, 0, m, 0));
    OK(plx_network_connect(n, c, 0, m, 1));
    OK(plx_network_connect(n, m, 0, y, 0));
    OK(plx_network_connect(n, q, 0, yq, 0));
    return n;
}

typedef struct load_cfg {
    const char *const *backends;
    size_t backend_count;
    bool fallback;
    bool import;
    bool async;
    bool external;
} load_cfg;

static plx_loaded_network *load(plx_runtime *rt, plx_network *n, const load_cfg *cfg,
                                char *summary, size_t summary_size) {
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = cfg->backends;
    oo.backend_count = cfg->backend_count;
    oo.allow_fallback = cfg->fallback;
    oo.import_enabled = cfg->import;
    oo.export_enabled = cfg->import;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    if (summary) {
        snprintf(summary, summary_size, "%s", plx_optimized_network_summary(on));
    }
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.async_execution = cfg->async;
    lo.externally_managed_memory = cfg->external;
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, &lo, &ln));
    return ln;
}

/* How many layers of an optimised network run on `id`, and whether one
 * named `name` does. */
static size_t layers_on(plx_runtime *rt, plx_network *n, const load_cfg *cfg, const char *id,
                        const char *name, bool *named_on) {
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = cfg->backends;
    oo.backend_count = cfg->backend_count;
    oo.allow_fallback = cfg->fallback;
    oo.import_enabled = cfg->import;
    oo.export_enabled = cfg->import;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    size_t count = 0;
    *named_on = false;
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
        if (strcmp(a->backend_id, id) == 0) {
            count++;
            *named_on = *named_on || strcmp(a->layer_name, name) == 0;
        }
    }
    plx_optimized_network_destroy(&on);
    return count;
}

static void input_for(float *x, unsigned seed) {
    for (int i = 0; i < N; i++) {
        x[i] = (float)((seed * 31u + (unsigned)i * 7u) % 97u) / 8.0f - 4.0f;
    }
}

static plx_status run2(plx_loaded_network *ln, plx_working_memory *wm, const float *x,
                       void *y, size_t y_size, void *y2, size_t y2_size) {
    plx_tensor_binding in = {0, (void *)x, N * sizeof *x, 0};
    plx_tensor_binding out[] = {{0, y, y_size, 0}, {1, y2, y2_size, 0}};
    plx_execute_args a;
    plx_execute_args_init(&a);
    a.inputs = &in;
    a.input_count = 1;
    a.outputs = out;
    a.output_count = 2;
    return plx_loaded_network_execute_with(ln, wm, &a);
}

/* The chain on cpu_ref alone: the reference. */
static void chain_reference(plx_runtime *rt, const float *x, float *y, float *sum) {
    const char *ids[] = {"cpu_ref"};
    load_cfg cfg = {ids, 1, false, false, false, false};
    plx_network *n = chain();
    plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
    plx_network_destroy(&n);
    OK(run2(ln, NULL, x, y, N * sizeof *y, sum, N * sizeof *sum));
    plx_loaded_network_unload(&ln);
}

/* float32 results of two backends: OpenCL allows sqrt a few ulp. */
static void assert_close(const float *got, const float *want, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++) {
        float d = got[i] - want[i];
        float tol = 1e-5f * (want[i] < 0 ? -want[i] : want[i]) + 1e-6f;
        cr_assert(le(flt, d < 0 ? -d : d, tol), "%s[%zu]: %g, expected %g", what, i,
                  (double)got[i], (double)want[i]);
    }
}

/* ---- availability and options ------------------------------------------- */

/* the plug-in loads, is available on the machine's
 * platform, declares its options, and reports its capabilities honestly,
 * with the devices it saw and the one it chose as vendor strings. */
Test(gpu_opencl, loads_and_reports_its_device) {
    plx_runtime *rt = runtime_plain();
    const plx_backend_info *b = require_gpu(&rt);
    cr_assert(eq(str, (char *)b->name, "OpenCL GPU backend"));
    const char *keys[] = {"platform", "device", "device_type", "cache_dir", "queued",
                          "planned_memory"};
    cr_assert(eq(sz, b->option_count, 6));
    for (size_t i = 0; i < 6; i++) {
        cr_assert(eq(str, (char *)b->options[i].key, (char *)keys[i]));
    }
    cr_assert(plx_backend_info_has_capability(b, "async_execution"));
    cr_assert(plx_backend_info_has_capability(b, "externally_managed_memory"));
    cr_assert(plx_backend_info_has_capability(b, "memory_import_malloc"));
    cr_assert(plx_backend_info_has_capability(b, "preimport_io_tensors"));
    /* planned_memory=device by default (on a device whose base
     * alignment is at most 4096 bytes, as every usable one here). */
    cr_assert(plx_backend_info_has_capability(b, "allocates_planned_memory"));
    cr_assert(eq(str, (char *)cap_string(b, "gpu_opencl.planned_memory"), "device"));
    /* queued by default, with a fence domain of its own context. */
    cr_assert(plx_backend_info_has_capability(b, "queued_execution"));
    cr_assert(not(zero(ptr, strstr(cap_string(b, "fence_domain"), "gpu_opencl:context="))));
    cr_assert(not(plx_backend_info_has_capability(b, "memory_export_malloc")));
    cr_assert(not(plx_backend_info_has_capability(b, "memory_import_dma_buf")));
    const char *device = cap_string(b, "gpu_opencl.device");
    cr_assert(gt(sz, strlen(device), 0));
    const char *devices = cap_string(b, "gpu_opencl.devices");
    cr_assert(not(zero(ptr, strstr(devices, device))), "%s lacks %s", devices, device);
    cr_assert(not(zero(ptr, strstr(devices, "[chosen]"))), "%s", devices);
    const char *choice = cap_string(b, "gpu_opencl.choice");
    cr_assert(not(zero(ptr, strstr(choice, "default"))), "%s", choice);
    /* With planned_memory=device, the device's base address alignment
     * (sub-buffer origins, R-26); with host, at most 64. */
    const plx_capability *align = plx_backend_info_capability(b, PLX_CAP_IMPORT_ALIGNMENT);
    cr_assert(not(zero(ptr, (void *)align)));
    cr_assert(le(i64, align->int_value, 4096));
    cr_assert(ge(i64, align->int_value, (int64_t)sizeof(float)));
    cr_assert(eq(str, (char *)cap_string(b, "gpu_opencl.program_cache"), "off"));
    /* The device list is logged at create, the choice with its reason. */
    cr_assert(log_has("gpu_opencl: chose device"), "%s", log_text);
    plx_runtime_destroy(&rt);
}

/* Runtimes created and destroyed on several threads at once, each with a
 * gpu_opencl instance of its own: the platform lock (ocl_backend.h) keeps
 * the OpenCL implementation's device set-up and teardown apart (without
 * it, PoCL crashed in clGetDeviceInfo within a few rounds). Each thread
 * counts what went wrong; the asserts are on the test's thread. */
#define CREATE_THREADS 4
#define CREATE_ROUNDS 6

static void *create_and_destroy_runtimes(void *arg) {
    int *failures = arg;
    for (int i = 0; i < CREATE_ROUNDS; i++) {
        plx_runtime_options o;
        tu_options(&o);
        const char *paths[] = {GPU_OPENCL_DIR};
        o.search_paths = paths;
        o.search_path_count = 1;
        plx_runtime *rt = NULL;
        plx_status st = plx_runtime_create(&o, &rt);
        if (st) {
            plx_status_free(st);
            (*failures)++;
            continue;
        }
        const plx_backend_info *b = plx_runtime_find_backend(rt, "gpu_opencl");
        if (!b || !b->available) {
            (*failures)++;
        }
        plx_runtime_destroy(&rt);
    }
    return NULL;
}

Test(gpu_opencl, runtimes_created_on_several_threads_at_once) {
    /* No runtime before the threads: the first set-up of the OpenCL
     * implementation is among what they race on. Whether there is a
     * device at all is asked after them. */
    pthread_t threads[CREATE_THREADS];
    int failures[CREATE_THREADS] = {0};
    for (int t = 0; t < CREATE_THREADS; t++) {
        cr_assert(eq(int, pthread_create(&threads[t], NULL, create_and_destroy_runtimes,
                                         &failures[t]), 0));
    }
    for (int t = 0; t < CREATE_THREADS; t++) {
        pthread_join(threads[t], NULL);
    }
    require_device();
    for (int t = 0; t < CREATE_THREADS; t++) {
        cr_expect(eq(int, failures[t], 0), "thread %d: %d of %d runtimes without gpu_opencl",
                  t, failures[t], CREATE_ROUNDS);
    }
}

/* a malformed value is a rejection naming the option and the value. */
Test(gpu_opencl, bad_option_values_name_the_option) {
    require_device();
    static const struct {
        const char *option;
        const char *needle;
    } cases[] = {
        {"device_type=banana", "invalid value 'banana' for option 'device_type'"},
        {"device=", "invalid value '' for option 'device'"},
        {"platform=", "invalid value '' for option 'platform'"},
        {"cache_dir=", "invalid value '' for option 'cache_dir'"},
        {"cache_dir=/dev/null", "invalid value '/dev/null' for option 'cache_dir'"},
        /* queued is on or off. */
        {"queued=maybe", "invalid value 'maybe' for option 'queued'"},
        {"queued=", "invalid value '' for option 'queued'"},
        /* planned_memory is device or host. */
        {"planned_memory=gpu", "invalid value 'gpu' for option 'planned_memory'"},
        {"planned_memory=", "invalid value '' for option 'planned_memory'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *opt[] = {cases[i].option};
        plx_runtime *rt = runtime_with(opt, 1);
        cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "gpu_opencl")), "%s",
                  cases[i].option);
        const plx_rejection *r = tu_rejection_containing(rt, cases[i].needle);
        cr_assert(not(zero(ptr, (void *)r)), "%s: %s", cases[i].option, tu_dump(rt));
        cr_assert(not(zero(ptr, strstr(r->reason, "create failed: "))), "%s", r->reason);
        /* cpu_ref is not affected. */
        cr_assert(not(zero(ptr, (void *)plx_runtime_find_backend(rt, "cpu_ref"))));
        plx_runtime_destroy(&rt);
    }
}

/* well-formed options that find no device on this machine: create
 * fails (check_available has no options to go by) naming the option. */
Test(gpu_opencl, options_that_find_no_device) {
    require_device();
    static const struct {
        const char *option;
        const char *needle;
    } cases[] = {
        {"device=99", "option 'device': no device 99"},
        {"device=no-such-device", "option 'device': no device name contains 'no-such-device'"},
        {"platform=31", "option 'platform': no platform 31"},
        {"platform=no-such-platform", "option 'platform': no platform name contains"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *opt[] = {cases[i].option};
        plx_runtime *rt = runtime_with(opt, 1);
        cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "gpu_opencl")), "%s",
                  cases[i].option);
        cr_assert(not(zero(ptr, (void *)tu_rejection_containing(rt, cases[i].needle))), "%s: %s",
                  cases[i].option, tu_dump(rt));
        plx_runtime_destroy(&rt);
    }
}

/* A device named by index or by a case-insensitive piece of its name, and a
 * device type the machine lacks. */
Test(gpu_opencl, device_by_index_name_and_type) {
    plx_runtime *rt = runtime_plain();
    const plx_backend_info *b = require_gpu(&rt);
    char device[256], upper[256], devices[2048];
    snprintf(device, sizeof device, "%s", cap_string(b, "gpu_opencl.device"));
    snprintf(devices, sizeof devices, "%s", cap_string(b, "gpu_opencl.devices"));
    plx_runtime_destroy(&rt);
    /* A piece of the name, in upper case. */
    size_t len = strlen(device) < 6 ? strlen(device) : 6;
    for (size_t i = 0; i < len; i++) {
        char c = device[i];
        upper[i] = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
    }
    upper[len] = '\0';
    char opt_name[300];
    snprintf(opt_name, sizeof opt_name, "device=%s", upper);
    const char *by_name[] = {opt_name};
    rt = runtime_with(by_name, 1);
    b = plx_runtime_find_backend(rt, "gpu_opencl");
    cr_assert(not(zero(ptr, (void *)b)), "%s", tu_dump(rt));
    cr_assert(b->available, "%s", tu_dump(rt));
    cr_assert(not(zero(ptr, strstr(cap_string(b, "gpu_opencl.choice"), "option device="))));
    plx_runtime_destroy(&rt);

    const char *by_index[] = {"device=0", "platform=0"};
    rt = runtime_with(by_index, 2);
    b = plx_runtime_find_backend(rt, "gpu_opencl");
    cr_assert(not(zero(ptr, (void *)b)), "%s", tu_dump(rt));
    cr_assert(b->available);
    plx_runtime_destroy(&rt);

    const char *all[] = {"device_type=all"};
    rt = runtime_with(all, 1);
    b = plx_runtime_find_backend(rt, "gpu_opencl");
    cr_assert(not(zero(ptr, (void *)b)), "%s", tu_dump(rt));
    cr_assert(not(zero(ptr, strstr(cap_string(b, "gpu_opencl.choice"), "device_type=all"))));
    plx_runtime_destroy(&rt);

    /* A type with no device here (PoCL has a CPU device only). */
    const char *type = strstr(devices, ", accelerator,") ? NULL : "device_type=accelerator";
    if (type) {
        const char *opt[] = {type};
        rt = runtime_with(opt, 1);
        cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "gpu_opencl")));
        cr_assert(not(zero(ptr, (void *)tu_rejection_containing(
                                    rt, "option 'device_type': no accelerator device"))),
                  "%s", tu_dump(rt));
        plx_runtime_destroy(&rt);
    }
}

/* Compute is float32 only: the fp16 capability is never claimed, while
 * gpu_opencl.cl_khr_fp16 says what the device has; a float16 network is
 * refused with the reason (and falls back). */
Test(gpu_opencl, no_fp16_compute_is_claimed) {
    plx_runtime *rt = runtime_plain();
    const plx_backend_info *b = require_gpu(&rt);
    cr_assert(not(zero(ptr, (void *)plx_backend_info_capability(b, "gpu_opencl.cl_khr_fp16"))));
    cr_assert(not(plx_backend_info_has_capability(b, "fp16")));
    plx_runtime_destroy(&rt);
}

/* ---- no platform --------------------------------------------------------- */

static void no_vendors(void) {
    setenv("OCL_ICD_VENDORS", "/nonexistent", 1);
}

/* with no OpenCL platform the backend is listed as unavailable, with
 * the reason, never rejected; a network that prefers it runs entirely on
 * cpu_ref, and the optimiser says why gpu_opencl was left out. */
Test(gpu_opencl, no_platform_is_unavailable_and_falls_back, .init = no_vendors) {
    plx_runtime *rt = runtime_plain();
    const plx_backend_info *b = plx_runtime_find_backend(rt, "gpu_opencl");
    cr_assert(not(zero(ptr, (void *)b)), "%s", tu_dump(rt));
    cr_assert(not(b->available));
    cr_assert(not(zero(ptr, strstr(b->reason, "no OpenCL platform"))), "%s", b->reason);
    cr_assert(not(zero(ptr, strstr(b->reason, "OCL_ICD_VENDORS=/nonexistent"))), "%s",
              b->reason);
    cr_assert(eq(sz, plx_runtime_rejection_count(rt), 0), "%s", tu_dump(rt));

    const char *ids[] = {"gpu_opencl", "cpu_ref"};
    load_cfg cfg = {ids, 2, true, false, false, false};
    plx_network *n = chain();
    bool named;
    cr_assert(eq(sz, layers_on(rt, n, &cfg, "gpu_opencl", "relu", &named), 0));
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = ids;
    oo.backend_count = 2;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    bool noted = false;
    for (size_t i = 0; i < plx_optimized_network_note_count(on); i++) {
        noted = noted || strstr(plx_optimized_network_note(on, i), "gpu_opencl");
    }
    cr_assert(noted, "no note about gpu_opencl");
    plx_optimized_network_destroy(&on);

    float x[N], y[N], s[N], y0[N], s0[N];
    input_for(x, 3);
    plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
    OK(run2(ln, NULL, x, y, sizeof y, s, sizeof s));
    plx_loaded_network_unload(&ln);
    chain_reference(rt, x, y0, s0);
    cr_assert(eq(int, memcmp(y, y0, sizeof y), 0));
    cr_assert(eq(int, memcmp(s, s0, sizeof s), 0));
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* ---- running networks ---------------------------------------------------- */

/* the chain entirely on gpu_opencl (constants included)
 * gives cpu_ref's results, again and again, and after a release. */
Test(gpu_opencl, chain_runs_on_the_device) {
    plx_runtime *rt = runtime_plain();
    require_gpu(&rt);
    const char *ids[] = {"gpu_opencl"};
    load_cfg cfg = {ids, 1, false, false, false, false};
    plx_network *n = chain();
    bool named;
    cr_assert(eq(sz, layers_on(rt, n, &cfg, "gpu_opencl", "bias", &named), 9));
    cr_assert(named, "the constant is not on gpu_opencl");
    plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
    plx_network_destroy(&n);
    for (unsigned round = 0; round < 3; round++) {
        float x[N], y[N], s[N], y0[N], s0[N];
        input_for(x, round);
        OK(run2(ln, NULL, x, y, sizeof y, s, sizeof s));
        chain_reference(rt, x, y0, s0);
        assert_close(y, y0, N, "y");
        assert_close(s, s0, N, "sum");
        if (round == 1) {
            plx_loaded_network_release_working_memory(ln);
        }
    }
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

/* Indices read at run time (docs/gpu_opencl.md): gather_elements runs on
 * gpu_opencl with its indices a network input; an index out of range fails
 * the execution with an error naming the layer, the index and its element,
 * and the next run with good indices succeeds again. */
static void index_out_of_range(bool queued) {
    require_device();
    const char *opt[] = {queued ? "queued=on" : "queued=off"};
    plx_runtime *rt = runtime_with(opt, 1);
    require_gpu(&rt);
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info xi = vec(), ii;
    xi.dims[0] = 4;
    xi.dims[1] = 3;
    memset(&ii, 0, sizeof ii);
    ii.dtype = PLX_DTYPE_INT64;
    ii.rank = 2;
    ii.dims[0] = 2;
    ii.dims[1] = 3;
    plx_axis_desc ad = PLX_AXIS_DESC_INIT(0);
    plx_layer_id x, ind, g, y;
    OK(plx_network_add_input(n, "x", 0, &xi, &x));
    OK(plx_network_add_input(n, "ind", 1, &ii, &ind));
    OK(plx_network_add_layer(n, "ge", PLX_OP_GATHER_ELEMENTS, &ad, 2, 1, &g));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, g, 0));
    OK(plx_network_connect(n, ind, 0, g, 1));
    OK(plx_network_connect(n, g, 0, y, 0));
    const char *ids[] = {"gpu_opencl"};
    load_cfg cfg = {ids, 1, false, false, false, false};
    bool named;
    cr_assert(eq(sz, layers_on(rt, n, &cfg, "gpu_opencl", "ge", &named), 4));
    cr_assert(named, "gather_elements is not on gpu_opencl");
    plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
    plx_network_destroy(&n);
    float xv[12], yv[6];
    for (int i = 0; i < 12; i++) {
        xv[i] = (float)i;
    }
    int64_t good[6] = {3, 0, -1, 1, 2, -4}, bad[6] = {3, 0, -1, 1, 7, -4};
    for (int round = 0; round < 3; round++) {
        plx_tensor_binding in[] = {{0, xv, sizeof xv, 0},
                                   {1, round == 1 ? bad : good, sizeof good, 0}};
        plx_tensor_binding out = {0, yv, sizeof yv, 0};
        plx_execute_args a;
        plx_execute_args_init(&a);
        a.inputs = in;
        a.input_count = 2;
        a.outputs = &out;
        a.output_count = 1;
        plx_status st = plx_loaded_network_execute_with(ln, NULL, &a);
        if (round == 1) {
            cr_assert(not(zero(ptr, (void *)st)), "an index out of range was not reported");
            const char *msg = plx_status_get_message(st);
            cr_assert(eq(int, plx_status_get_code(st), PLX_INVALID_ARGUMENT), "%s", msg);
            cr_assert(strstr(msg, "layer 'ge' (gather_elements): index 7 (indices element 4) "
                                  "is out of range") != NULL, "%s", msg);
            /* queued, the check is read at the host's wait, and the
             * backend names the layer itself. */
            cr_assert(eq(int, strstr(msg, "layer 'ge': gpu_opencl: ") != NULL, queued), "%s",
                      msg);
            plx_status_free(st);
            continue;
        }
        cr_assert(zero(ptr, (void *)st), "%s", st ? plx_status_get_message(st) : "");
        /* y[i][j] = x[good[i][j] mod 4][j] */
        const float want[6] = {9, 1, 11, 3, 7, 2};
        for (int i = 0; i < 6; i++) {
            cr_assert(eq(flt, yv[i], want[i]), "y[%d] = %g, expected %g", i, (double)yv[i],
                      (double)want[i]);
        }
    }
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

/* The same with the option queued=off (every layer waits for its kernels)
 * and queued=on (R-24: the host waits once, at the end). */
Test(gpu_opencl, index_out_of_range_is_an_execution_error) {
    index_out_of_range(false);
}

Test(gpu_opencl, index_out_of_range_is_reported_at_the_wait) {
    index_out_of_range(true);
}

/* The chain (or the mixed network, with cpu_ref between gpu_opencl's
 * layers) run `rounds` times by a runtime with gpu_opencl's option
 * queued=on or off: the outputs of the last round, and the host's waits. */
static uint64_t run_queued(bool queued, bool mixed_net, unsigned rounds, float *y, void *y2,
                           size_t y2_size) {
    const char *opt[] = {queued ? "queued=on" : "queued=off"};
    plx_runtime *rt = runtime_with(opt, 1);
    require_gpu(&rt);
    const char *ids[] = {"gpu_opencl", "cpu_ref"};
    load_cfg cfg = {ids, mixed_net ? 2 : 1, mixed_net, false, false, false};
    plx_network *n = mixed_net ? mixed() : chain();
    plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
    plx_network_destroy(&n);
    for (unsigned round = 0; round < rounds; round++) {
        float x[N];
        input_for(x, round);
        OK(run2(ln, NULL, x, y, N * sizeof *y, y2, y2_size));
    }
    uint64_t waits = plx_loaded_network_wait_count(ln);
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
    return waits;
}

/* queued (the default) and queued=off give identical results on a
 * multi-layer network, alone on gpu_opencl and with cpu_ref layers between
 * (copies); queued, the host waits once where results leave the device,
 * not once per layer: at the end for the chain, and also before the copy
 * to cpu_ref for the mixed network. */
Test(gpu_opencl, queued_on_and_off_give_identical_results) {
    require_device();
    float y_on[N], y_off[N], s_on[N], s_off[N];
    cr_assert(eq(u64, run_queued(true, false, 3, y_on, s_on, sizeof s_on), 3));
    cr_assert(eq(u64, run_queued(false, false, 3, y_off, s_off, sizeof s_off), 0));
    cr_assert(eq(int, memcmp(y_on, y_off, sizeof y_on), 0));
    cr_assert(eq(int, memcmp(s_on, s_off, sizeof s_on), 0));
    uint8_t q_on[N], q_off[N];
    uint64_t waits = run_queued(true, true, 2, y_on, q_on, sizeof q_on);
    cr_assert(eq(u64, waits, 4), "%llu waits in 2 executions", (unsigned long long)waits);
    cr_assert(eq(u64, run_queued(false, true, 2, y_off, q_off, sizeof q_off), 0));
    cr_assert(eq(int, memcmp(y_on, y_off, sizeof y_on), 0));
    cr_assert(eq(int, memcmp(q_on, q_off, sizeof q_on), 0));
}

/* with profiling on, queued, each kernel's device time is in the
 * trace, category "kernel", on gpu_opencl's device track with its layer's
 * name, beside the host's wait; queued=off records no device events. */
Test(gpu_opencl, profiling_traces_kernels_with_their_layers) {
    require_device();
    static char text[1 << 20];
    for (int queued = 1; queued >= 0; queued--) {
        const char *opt[] = {queued ? "queued=on" : "queued=off"};
        plx_runtime *rt = runtime_with(opt, 1);
        require_gpu(&rt);
        const char *ids[] = {"gpu_opencl"};
        load_cfg cfg = {ids, 1, false, false, false, false};
        plx_network *n = chain();
        plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
        plx_network_destroy(&n);
        float x[N], y[N], s[N];
        input_for(x, 1);
        OK(run2(ln, NULL, x, y, sizeof y, s, sizeof s)); /* unprofiled: no events */
        OK(plx_runtime_enable_profiling(rt, true));
        OK(run2(ln, NULL, x, y, sizeof y, s, sizeof s));
        OK(plx_runtime_enable_profiling(rt, false));
        tu_trace_text(rt, text, sizeof text);
        const char *layers[] = {"relu", "add", "sqrt", "mul"};
        for (size_t i = 0; i < 4; i++) {
            char needle[96];
            snprintf(needle, sizeof needle, "\"args\":{\"layer\":\"%s\",\"backend\":\"gpu_opencl\"",
                     layers[i]);
            cr_assert(eq(int, strstr(text, needle) != NULL, queued), "queued=%d, %s:\n%.4000s",
                      queued, needle, text);
        }
        cr_assert(eq(int, strstr(text, "\"cat\":\"kernel\"") != NULL, queued), "%.4000s", text);
        cr_assert(eq(int, strstr(text, "\"cat\":\"wait\"") != NULL, queued), "%.4000s", text);
        plx_loaded_network_unload(&ln);
        plx_runtime_destroy(&rt);
    }
}

/* R-18 (1), R-19 (3): a layer gpu_opencl refuses (quantize) falls back to
 * cpu_ref with the refusal kept, copies (or, with import, an import layer
 * into gpu_opencl) are inserted, and the result is cpu_ref's. */
Test(gpu_opencl, mixed_network_falls_back_per_layer) {
    plx_runtime *rt = runtime_plain();
    require_gpu(&rt);
    /* Aligned for import: gpu_opencl's import_alignment is 64 or less. */
    _Alignas(64) float x[N];
    _Alignas(64) float y[N];
    _Alignas(64) uint8_t idx[N];
    float want_y[N];
    uint8_t want_i[N];
    input_for(x, 5);
    {
        const char *ids[] = {"cpu_ref"};
        load_cfg cfg = {ids, 1, false, false, false, false};
        plx_network *n = mixed();
        plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
        plx_network_destroy(&n);
        OK(run2(ln, NULL, x, want_y, sizeof want_y, want_i, sizeof want_i));
        plx_loaded_network_unload(&ln);
    }
    for (int import = 0; import < 2; import++) {
        const char *ids[] = {"gpu_opencl", "cpu_ref"};
        load_cfg cfg = {ids, 2, true, import != 0, false, false};
        plx_network *n = mixed();
        bool named;
        layers_on(rt, n, &cfg, "gpu_opencl", "relu", &named);
        cr_assert(named, "relu is not on gpu_opencl");
        layers_on(rt, n, &cfg, "cpu_ref", "quantize", &named);
        cr_assert(named, "quantize is not on cpu_ref");
        layers_on(rt, n, &cfg, "gpu_opencl", "mul", &named);
        cr_assert(named, "mul is not on gpu_opencl");

        plx_optimize_options oo;
        plx_optimize_options_init(&oo);
        oo.backends = ids;
        oo.backend_count = 2;
        oo.import_enabled = import != 0;
        plx_optimized_network *on;
        OK(plx_optimize(rt, n, &oo, &on));
        const char *summary = plx_optimized_network_summary(on);
        cr_assert(not(zero(ptr, strstr(summary, "inserted"))), "%s", summary);
        bool refused = false;
        for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
            const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
            if (strcmp(a->layer_name, "quantize") == 0) {
                cr_assert(eq(sz, a->refusal_count, 1));
                cr_assert(eq(str, (char *)a->refusals[0].backend_id, "gpu_opencl"));
                cr_assert(gt(sz, strlen(a->refusals[0].reason), 0));
                refused = true;
            }
        }
        cr_assert(refused);
        plx_optimized_network_destroy(&on);

        plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
        plx_network_destroy(&n);
        for (int round = 0; round < 2; round++) {
            memset(y, 0, sizeof y);
            memset(idx, 0, sizeof idx);
            OK(run2(ln, NULL, x, y, sizeof y, idx, sizeof idx));
            assert_close(y, want_y, N, "y");
            cr_assert(eq(int, memcmp(idx, want_i, sizeof idx), 0));
        }
        plx_loaded_network_unload(&ln);
    }
    plx_runtime_destroy(&rt);
}

/* x feeds quantize first (so x is cpu_ref's, zero copy with import) and
 * relu, on gpu_opencl through an import layer that reads x in place. */
static plx_network *fork_network(void) {
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec(), s0 = scalar();
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_quantize_desc qd = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_UINT8);
    plx_layer_id x, qs, k, r, y, yi;
    OK(plx_network_add_input(n, "x", 0, &t, &x));
    OK(plx_network_add_constant(n, "qscale", &s0, &qscale, PLX_CONSTANT_BORROW, &qs));
    OK(plx_network_add_layer(n, "quantize", PLX_OP_QUANTIZE, &qd, 2, 1, &k));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_add_output(n, "q", 1, &yi));
    OK(plx_network_connect(n, x, 0, k, 0));
    OK(plx_network_connect(n, qs, 0, k, 1));
    OK(plx_network_connect(n, x, 0, r, 0));
    OK(plx_network_connect(n, r, 0, y, 0));
    OK(plx_network_connect(n, k, 0, yi, 0));
    return n;
}

/* R-10 import_alignment: an import layer whose producer's memory misses
 * gpu_opencl's alignment (a caller buffer cpu_ref imported in place, at an
 * odd offset) reads a staged copy, counted, with the right result. */
Test(gpu_opencl, import_layer_stages_misaligned_producer) {
    plx_runtime *rt = runtime_plain();
    const plx_backend_info *b = require_gpu(&rt);
    size_t align = plx_backend_info_import_alignment(b);
    if (align <= sizeof(float)) {
        plx_runtime_destroy(&rt);
        cr_skip_test("gpu_opencl imports any float-aligned memory here");
    }
    unsigned char *raw = aligned_alloc(64, 64 + N * sizeof(float));
    cr_assert(not(zero(ptr, raw)));
    float *x = (float *)(raw + sizeof(float));
    input_for(x, 9);
    /* Exported from relu: aligned, not staged. */
    float *y = aligned_alloc(align > 64 ? align : 64, (align > 64 ? align : 64) * 4);
    cr_assert(not(zero(ptr, y)));
    uint8_t idx[N], want_idx[N];
    const char *ids[] = {"gpu_opencl", "cpu_ref"};
    for (int import = 0; import < 2; import++) {
        load_cfg cfg = {ids, 2, true, import != 0, false, false};
        plx_network *n = fork_network();
        bool named;
        layers_on(rt, n, &cfg, "gpu_opencl", "relu", &named);
        cr_assert(named, "relu is not on gpu_opencl");
        plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
        plx_network_destroy(&n);
        OK(run2(ln, NULL, x, y, N * sizeof *y, import ? idx : want_idx, sizeof idx));
        for (int i = 0; i < N; i++) {
            cr_assert(eq(flt, y[i], x[i] > 0 ? x[i] : 0.0f), "y[%d]", i);
        }
        cr_assert(eq(u64, plx_loaded_network_staged_copy_count(ln), (uint64_t)import),
                  "import %d", import);
        plx_loaded_network_unload(&ln);
    }
    cr_assert(eq(int, memcmp(idx, want_idx, sizeof idx), 0));
    free(y);
    free(raw);
    plx_runtime_destroy(&rt);
}

/* R-17 (3), (6), R-10 import_alignment: with import and export, an aligned
 * caller buffer is used in place (and can be pre-imported); a misaligned one
 * is copied through the host's staging buffer, correctly, and the copy is
 * reported (summary at load, warning, count, trace), never silent; a
 * misaligned pre-import is refused. With import disabled the host copies. */
Test(gpu_opencl, zero_copy_aligned_and_staged_misaligned) {
    plx_runtime *rt = runtime_plain();
    const plx_backend_info *b = require_gpu(&rt);
    size_t align = plx_backend_info_import_alignment(b);
    /* At most 64: sub-buffer origins ask for planned_alignment instead
     * so caller memory aligned to 64 stays zero copy. */
    cr_assert(le(sz, align, 64));
    cr_assert(ge(sz, align, sizeof(float)));
    float x[N], y0[N], s0[N];
    input_for(x, 7);
    chain_reference(rt, x, y0, s0);
    OK(plx_runtime_enable_profiling(rt, true));

    /* Room for aligned and misaligned copies of x, y and sum, each in a
     * slot of `room` bytes aligned to it. */
    size_t room = align > 1024 ? align : 1024;
    unsigned char *raw = aligned_alloc(room, 3 * room);
    cr_assert(not(zero(ptr, raw)));
    const char *ids[] = {"gpu_opencl"};
    for (int misaligned = 0; misaligned < 2; misaligned++) {
        /* sizeof(float) apart from the import alignment: element-aligned. */
        size_t off = misaligned ? align / 2 : 0;
        bool staged = off % align != 0;
        float *ax = (float *)(raw + off);
        float *ay = (float *)(raw + room + off);
        float *as = (float *)(raw + 2 * room + off);
        memcpy(ax, x, sizeof x);
        for (int import = 1; import >= 0; import--) {
            load_cfg cfg = {ids, 1, false, import != 0, false, false};
            plx_network *n = chain();
            char summary[1024];
            plx_loaded_network *ln = load(rt, n, &cfg, summary, sizeof summary);
            plx_network_destroy(&n);
            char said[160];
            snprintf(said, sizeof said,
                     "input 'x' is zero copy on gpu_opencl when its memory is %zu-byte "
                     "aligned; otherwise it is copied through a staging buffer", align);
            cr_assert(eq(int, import && align > 1, strstr(summary, said) != NULL), "%s",
                      summary);
            for (int round = 0; round < 2; round++) {
                memset(ay, 0, N * sizeof *ay);
                memset(as, 0, N * sizeof *as);
                OK(run2(ln, NULL, ax, ay, N * sizeof *ay, as, N * sizeof *as));
                assert_close(ay, y0, N, "y");
                assert_close(as, s0, N, "sum");
            }
            /* x and the exported y (sum has two consumers: copied out), twice. */
            uint64_t want = import && staged ? 4 : 0;
            cr_assert(eq(u64, plx_loaded_network_staged_copy_count(ln), want));
            if (import) {
                /* Pre-import is zero copy or nothing. */
                plx_tensor_binding in = {0, ax, N * sizeof(float), 0};
                uint32_t id;
                plx_status st = plx_loaded_network_import_inputs(ln, &in, 1, &id);
                if (staged) {
                    cr_assert(not(zero(ptr, st)), "a misaligned pre-import succeeded");
                    cr_assert(not(zero(ptr, strstr(plx_status_get_message(st),
                                                   "a pre-import is never a copy"))),
                              "%s", plx_status_get_message(st));
                    plx_status_free(st);
                } else {
                    OK(st);
                    plx_tensor_binding out[] = {{0, ay, N * sizeof(float), 0},
                                                {1, as, N * sizeof(float), 0}};
                    plx_execute_args a;
                    plx_execute_args_init(&a);
                    a.preimported_inputs = &id;
                    a.preimported_input_count = 1;
                    a.outputs = out;
                    a.output_count = 2;
                    memset(ay, 0, N * sizeof *ay);
                    OK(plx_loaded_network_execute_with(ln, NULL, &a));
                    assert_close(ay, y0, N, "y (pre-imported input)");
                    OK(plx_loaded_network_clear_imported_inputs(ln, &id, 1));
                }
            }
            plx_loaded_network_unload(&ln);
        }
    }
    cr_assert(log_has("copied through a staging buffer"), "%s", log_text);
    /* Each staged copy is a trace event. */
    char dir[PATH_MAX], path[PATH_MAX];
    tu_mkdtemp(dir);
    OK(plx_runtime_write_trace(rt, tu_join(path, dir, "trace.json")));
    FILE *f = fopen(path, "r");
    cr_assert(not(zero(ptr, f)));
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = '\0';
    fclose(f);
    tu_rmtree(dir);
    cr_assert(not(zero(ptr, strstr(text, "\"input binding id 0 (staged)\""))));
    cr_assert(not(zero(ptr, strstr(text, "\"output binding id 0 (staged)\""))));
    free(raw);
    plx_runtime_destroy(&rt);
}

/* A tensor with no elements: OpenCL has no empty buffers. */
Test(gpu_opencl, empty_tensors) {
    plx_runtime *rt = runtime_plain();
    require_gpu(&rt);
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec();
    t.dims[0] = 0;
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id x, r, y;
    OK(plx_network_add_input(n, "x", 0, &t, &x));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, r, 0));
    OK(plx_network_connect(n, r, 0, y, 0));
    const char *ids[] = {"gpu_opencl"};
    for (int import = 0; import < 2; import++) {
        load_cfg cfg = {ids, 1, false, import != 0, false, false};
        plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
        _Alignas(64) float dummy[1] = {0};
        plx_tensor_binding in = {0, dummy, 0, 0}, out = {0, dummy, 0, 0};
        OK(plx_loaded_network_execute(ln, &in, 1, &out, 1));
        plx_loaded_network_unload(&ln);
    }
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* ---- externally managed memory, concurrent executions -------------------- */

typedef struct worker {
    plx_loaded_network *ln;
    plx_working_memory *wm;
    unsigned seed;
    int rounds;
    float y[N], s[N];
    int failures;
    char error[512];
} worker;

static void *work(void *arg) {
    worker *w = arg;
    _Alignas(64) float x[N]; /* imported when import is enabled */
    input_for(x, w->seed);
    for (int i = 0; i < w->rounds; i++) {
        _Alignas(64) float y[N];
        _Alignas(64) float s[N];
        plx_status st = run2(w->ln, w->wm, x, y, sizeof y, s, sizeof s);
        if (st) {
            snprintf(w->error, sizeof w->error, "%s", plx_status_get_message(st));
            plx_status_free(st);
            w->failures++;
            continue;
        }
        if (i == 0) {
            memcpy(w->y, y, sizeof y);
            memcpy(w->s, s, sizeof s);
        } else if (memcmp(w->y, y, sizeof y) != 0 || memcmp(w->s, s, sizeof s) != 0) {
            snprintf(w->error, sizeof w->error, "round %d differs from round 0", i);
            w->failures++;
        }
    }
    return NULL;
}

/* planned memory imported into gpu_opencl's handles; two
 * working memories executing at the same time from two threads give, bit
 * for bit, what one synchronous execution gives. */
Test(gpu_opencl, external_memory_and_two_threads) {
    plx_runtime *rt = runtime_plain();
    require_gpu(&rt);
    const char *ids[] = {"gpu_opencl"};
    /* The synchronous, backend-managed results. */
    float want[2][N], want_s[2][N];
    {
        load_cfg cfg = {ids, 1, false, false, false, false};
        plx_network *n = chain();
        plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
        plx_network_destroy(&n);
        for (unsigned k = 0; k < 2; k++) {
            float x[N];
            input_for(x, 100 + k);
            OK(run2(ln, NULL, x, want[k], sizeof want[k], want_s[k], sizeof want_s[k]));
        }
        plx_loaded_network_unload(&ln);
    }
    /* Externally managed memory, synchronous. */
    {
        load_cfg cfg = {ids, 1, false, false, false, true};
        plx_network *n = chain();
        plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
        plx_network_destroy(&n);
        cr_assert(eq(sz, plx_loaded_network_memory_report_count(ln), 1));
        cr_assert(eq(str, (char *)plx_loaded_network_memory_report(ln, 0)->backend_id,
                     "gpu_opencl"));
        float x[N], y[N], s[N];
        input_for(x, 100);
        OK(run2(ln, NULL, x, y, sizeof y, s, sizeof s));
        cr_assert(eq(int, memcmp(y, want[0], sizeof y), 0));
        cr_assert(eq(int, memcmp(s, want_s[0], sizeof s), 0));
        plx_loaded_network_unload(&ln);
    }
    /* Two working memories, two threads, with and without import. */
    for (int import = 0; import < 2; import++) {
        load_cfg cfg = {ids, 1, false, import != 0, true, true};
        plx_network *n = chain();
        plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
        plx_network_destroy(&n);
        worker w[2];
        pthread_t th[2];
        memset(w, 0, sizeof w);
        for (int k = 0; k < 2; k++) {
            w[k].ln = ln;
            w[k].seed = 100u + (unsigned)k;
            w[k].rounds = 20;
            OK(plx_loaded_network_create_working_memory(ln, &w[k].wm));
        }
        for (int k = 0; k < 2; k++) {
            cr_assert(eq(int, pthread_create(&th[k], NULL, work, &w[k]), 0));
        }
        for (int k = 0; k < 2; k++) {
            pthread_join(th[k], NULL);
        }
        for (int k = 0; k < 2; k++) {
            cr_assert(eq(int, w[k].failures, 0), "worker %d: %s", k, w[k].error);
            cr_assert(eq(int, memcmp(w[k].y, want[k], sizeof w[k].y), 0), "worker %d", k);
            cr_assert(eq(int, memcmp(w[k].s, want_s[k], sizeof w[k].s), 0), "worker %d", k);
            plx_working_memory_destroy(&w[k].wm);
        }
        plx_loaded_network_unload(&ln);
    }
    plx_runtime_destroy(&rt);
}

/* ---- planned device memory (R-26) ---------------------------------------- */

/* What the chain (y, sum) and the mixed network (y, q) give. */
typedef struct planned_result {
    float y[N], s[N];
    float my[N];
    uint8_t mq[N];
} planned_result;

/* The references: both networks on cpu_ref alone. */
static void planned_reference(const float *x, planned_result *r) {
    plx_runtime *rt = runtime_plain();
    require_gpu(&rt);
    chain_reference(rt, x, r->y, r->s);
    const char *ids[] = {"cpu_ref"};
    load_cfg cfg = {ids, 1, false, false, false, false};
    plx_network *n = mixed();
    plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
    plx_network_destroy(&n);
    OK(run2(ln, NULL, x, r->my, sizeof r->my, r->mq, sizeof r->mq));
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

/* Executes `ln` twice, the working memory released between the two (so
 * its planned buffers are freed and allocated again, R-21 (4), R-26 (3)),
 * checking each result against the reference; writes the second. */
static void twice_with_release(plx_loaded_network *ln, const float *x, void *y, void *y2,
                               size_t y2_size, const void *want_y, const void *want_y2,
                               bool exact, const char *what) {
    for (int round = 0; round < 2; round++) {
        memset(y, 0, N * sizeof(float));
        memset(y2, 0, y2_size);
        OK(run2(ln, NULL, x, y, N * sizeof(float), y2, y2_size));
        if (exact) {
            cr_assert(eq(int, memcmp(y, want_y, N * sizeof(float)), 0), "%s y, round %d", what,
                      round);
        } else {
            assert_close(y, want_y, N, what);
        }
        if (y2_size == N * sizeof(float) && !exact) {
            assert_close(y2, want_y2, N, what);
        } else {
            cr_assert(eq(int, memcmp(y2, want_y2, y2_size), 0), "%s second output, round %d",
                      what, round);
        }
        if (round == 0) {
            plx_loaded_network_release_working_memory(ln);
        }
    }
}

/* Both networks, loaded with externally managed memory (and async or not)
 * on a runtime with planned_memory=`mode`, against the reference. */
static void planned_runs(const char *mode, bool async, const float *x,
                         const planned_result *want, planned_result *got) {
    char opt[64];
    snprintf(opt, sizeof opt, "planned_memory=%s", mode);
    const char *opts[] = {opt};
    plx_runtime *rt = runtime_with(opts, 1);
    const plx_backend_info *b = require_gpu(&rt);
    bool device = strcmp(mode, "device") == 0;
    cr_assert(eq(int, plx_backend_info_has_capability(b, "allocates_planned_memory"), device),
              "%s", mode);
    cr_assert(eq(str, (char *)cap_string(b, "gpu_opencl.planned_memory"), (char *)mode));
    /* In both modes caller memory aligned to 64 is imported; device mode
     * asks planned places at sub-buffer origins (R-26, planned_alignment). */
    cr_assert(le(sz, plx_backend_info_import_alignment(b), 64));
    const plx_capability *pa = plx_backend_info_capability(b, "planned_alignment");
    cr_assert(eq(int, pa != NULL, device), "%s", mode);
    const char *ids[] = {"gpu_opencl"};
    load_cfg cfg = {ids, 1, false, false, async, true};
    plx_network *n = chain();
    plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
    plx_network_destroy(&n);
    cr_assert(eq(sz, plx_loaded_network_memory_report_count(ln), 1));
    const plx_memory_report *mr = plx_loaded_network_memory_report(ln, 0);
    cr_assert(eq(str, (char *)mr->backend_id, "gpu_opencl"));
    cr_assert(gt(sz, mr->tensor_count, 1));
    cr_assert(ge(sz, mr->bytes, mr->lower_bound));
    twice_with_release(ln, x, got->y, got->s, sizeof got->s, want->y, want->s, false, mode);
    plx_loaded_network_unload(&ln);

    /* Copies (or, with import, an import layer into gpu_opencl) between
     * gpu_opencl and cpu_ref: the host maps planned handles to copy. */
    const char *ids2[] = {"gpu_opencl", "cpu_ref"};
    for (int import = 0; import < 2; import++) {
        load_cfg cfg2 = {ids2, 2, true, import != 0, async, true};
        n = mixed();
        bool named;
        layers_on(rt, n, &cfg2, "gpu_opencl", "relu", &named);
        cr_assert(named, "relu is not on gpu_opencl");
        ln = load(rt, n, &cfg2, NULL, 0);
        plx_network_destroy(&n);
        twice_with_release(ln, x, got->my, got->mq, sizeof got->mq, want->my, want->mq, false,
                           mode);
        plx_loaded_network_unload(&ln);
    }
    plx_runtime_destroy(&rt);
}

/* with planned_memory=device (the default) the planned
 * intermediate tensors are sub-buffers of cl_mem buffers gpu_opencl
 * allocates; the results equal cpu_ref's, and, bit for bit, those of
 * planned_memory=host (host memory wrapped with CL_MEM_USE_HOST_PTR), over
 * two executions with the working memory released between them, for
 * synchronous and asynchronous loads, on one backend and mixed with
 * cpu_ref. */
Test(gpu_opencl, planned_device_memory_matches_host_and_cpu_ref) {
    require_device();
    float x[N];
    input_for(x, 11);
    planned_result want, dev, host;
    planned_reference(x, &want);
    for (int async = 0; async < 2; async++) {
        memset(&dev, 0, sizeof dev);
        memset(&host, 0, sizeof host);
        planned_runs("device", async != 0, x, &want, &dev);
        planned_runs("host", async != 0, x, &want, &host);
        cr_assert(eq(int, memcmp(dev.y, host.y, sizeof dev.y), 0), "async %d", async);
        cr_assert(eq(int, memcmp(dev.s, host.s, sizeof dev.s), 0), "async %d", async);
        cr_assert(eq(int, memcmp(dev.my, host.my, sizeof dev.my), 0), "async %d", async);
        cr_assert(eq(int, memcmp(dev.mq, host.mq, sizeof dev.mq), 0), "async %d", async);
    }
}

typedef struct counting_allocator {
    pthread_mutex_t lock;
    size_t allocations, frees, smallest_alignment;
} counting_allocator;

static void *counting_allocate(void *user_data, size_t size, size_t alignment) {
    counting_allocator *c = user_data;
    size_t rounded = (size + alignment - 1) / alignment * alignment;
    void *p = aligned_alloc(alignment, rounded ? rounded : alignment);
    if (p) {
        pthread_mutex_lock(&c->lock);
        c->allocations++;
        if (!c->smallest_alignment || alignment < c->smallest_alignment) {
            c->smallest_alignment = alignment;
        }
        pthread_mutex_unlock(&c->lock);
    }
    return p;
}

static void counting_free(void *user_data, void *p) {
    counting_allocator *c = user_data;
    pthread_mutex_lock(&c->lock);
    c->frees++;
    pthread_mutex_unlock(&c->lock);
    free(p);
}

/* R-26 (5): an application allocator given for gpu_opencl wins over its
 * planned device buffers: the plan is host memory from the allocator,
 * aligned to gpu_opencl's import alignment and imported as malloc memory,
 * with the results of device planning; every buffer is freed. */
Test(gpu_opencl, application_allocator_wins_over_planned_device_memory) {
    require_device();
    float x[N];
    input_for(x, 12);
    planned_result want;
    planned_reference(x, &want);
    counting_allocator c = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};
    plx_backend_allocator a = {"gpu_opencl",
                               {&c, counting_allocate, counting_free, PLX_MEMORY_SOURCE_MALLOC}};
    plx_runtime *rt = runtime_with_allocator(NULL, 0, &a);
    const plx_backend_info *b = require_gpu(&rt);
    cr_assert(plx_backend_info_has_capability(b, "allocates_planned_memory"));
    size_t align = plx_backend_info_import_alignment(b);
    const char *ids[] = {"gpu_opencl"};
    load_cfg cfg = {ids, 1, false, false, true, true};
    plx_network *n = chain();
    plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
    plx_network_destroy(&n);
    float y[N], s[N];
    twice_with_release(ln, x, y, s, sizeof s, want.y, want.s, false, "allocator");
    plx_loaded_network_unload(&ln);
    cr_assert(gt(sz, c.allocations, 1), "the application's allocator was not used");
    cr_assert(eq(sz, c.allocations, c.frees));
    cr_assert(ge(sz, c.smallest_alignment, align));
    cr_assert(ge(sz, c.smallest_alignment, 64));
    plx_runtime_destroy(&rt);
}

/* ---- the program cache --------------------------------------------------- */

/* PoCL keeps a kernel cache of its own; without it the cold build is what a
 * first run on a machine costs. */
static void no_driver_cache(void) {
    setenv("POCL_KERNEL_CACHE", "0", 1);
}

/* The cache files in dir: how many, and the path of the last. */
static size_t cache_files(const char *dir, char *path) {
    DIR *d = opendir(dir);
    cr_assert(not(zero(ptr, d)));
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "gpu_opencl-", 11) == 0 && strstr(e->d_name, ".bin")) {
            n++;
            tu_join(path, dir, e->d_name);
        }
    }
    closedir(d);
    return n;
}

/* Loads the chain once in a fresh runtime with cache_dir and checks its
 * results; returns the load time in ms. */
static double load_with_cache(const char *dir) {
    char opt[PATH_MAX + 16];
    snprintf(opt, sizeof opt, "cache_dir=%s", dir);
    const char *opts[] = {opt};
    plx_runtime *rt = runtime_with(opts, 1);
    const plx_backend_info *b = plx_runtime_find_backend(rt, "gpu_opencl");
    cr_assert(not(zero(ptr, (void *)b)), "%s", tu_dump(rt));
    cr_assert(eq(str, (char *)cap_string(b, "gpu_opencl.program_cache"), (char *)dir));
    const char *ids[] = {"gpu_opencl"};
    load_cfg cfg = {ids, 1, false, false, false, false};
    plx_network *n = chain();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    plx_loaded_network *ln = load(rt, n, &cfg, NULL, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    plx_network_destroy(&n);
    float x[N], y[N], s[N], y0[N], s0[N];
    input_for(x, 11);
    OK(run2(ln, NULL, x, y, sizeof y, s, sizeof s));
    plx_loaded_network_unload(&ln);
    chain_reference(rt, x, y0, s0);
    assert_close(y, y0, N, "y");
    plx_runtime_destroy(&rt);
    return (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
}

/* Program binaries are kept in cache_dir: the first load builds from source
 * and writes the file, the second loads it; a damaged file is logged,
 * rebuilt and rewritten, never a failure. */
Test(gpu_opencl, program_cache, .init = no_driver_cache, .timeout = 240) {
    require_device();
    char dir[PATH_MAX], sub[PATH_MAX], path[PATH_MAX];
    tu_mkdtemp(dir);
    tu_join(sub, dir, "cache/nested"); /* created when missing */

    clear_log();
    double cold = load_with_cache(sub);
    cr_assert(log_has("program built from source"), "%s", log_text);
    cr_assert(log_has("program cache: wrote"), "%s", log_text);
    cr_assert(eq(sz, cache_files(sub, path), 1));

    clear_log();
    double warm = load_with_cache(sub);
    cr_assert(log_has("program loaded from the cache file"), "%s", log_text);
    cr_assert(not(log_has("program built from source")), "%s", log_text);
    cr_log_info("gpu_opencl program: cold load %.1f ms, warm (cache) load %.1f ms", cold, warm);

    /* Damaged: garbage of the same length, then a truncated file. */
    FILE *f = fopen(path, "r+b");
    cr_assert(not(zero(ptr, f)));
    fseek(f, 40, SEEK_SET);
    fputs("this is not a program binary", f);
    fclose(f);
    clear_log();
    load_with_cache(sub);
    cr_assert(log_has("checksum mismatch"), "%s", log_text);
    cr_assert(log_has("program built from source"), "%s", log_text);
    cr_assert(log_has("program cache: wrote"), "%s", log_text);

    cr_assert(eq(int, truncate(path, 10), 0));
    clear_log();
    load_with_cache(sub);
    cr_assert(log_has("program built from source"), "%s", log_text);
    cr_assert(eq(sz, cache_files(sub, path), 1));

    /* Rewritten whole: the next load uses it again. */
    clear_log();
    load_with_cache(sub);
    cr_assert(log_has("program loaded from the cache file"), "%s", log_text);
    tu_rmtree(dir);
}
