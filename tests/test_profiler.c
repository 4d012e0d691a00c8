/* The profiler (network.h, "Profiling and counters"): counters, trace
 * events of loads and executions, the Chrome trace-event file. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <json-c/json.h>
#include <plexus/network.h>

#include "alloc_counter.h"
#include "test_util.h"

#define N 16

static plx_runtime *make_runtime(void) {
    plx_runtime_options o;
    tu_options(&o);
    const char *paths[] = {CPU_REF_DIR, TESTDEV_DIR};
    o.search_paths = paths;
    o.search_path_count = 2;
    return tu_create(&o);
}

static plx_tensor_info vec(void) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = PLX_DTYPE_FLOAT32;
    t.rank = 2;
    t.dims[0] = 1;
    t.dims[1] = N;
    return t;
}

static plx_loaded_network *load(plx_runtime *rt, plx_network *n, const char *const *backends,
                                size_t backend_count, bool import, bool async) {
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = backends;
    oo.backend_count = backend_count;
    oo.import_enabled = import;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    plx_network_destroy(&n);
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.async_execution = async;
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, &lo, &ln));
    return ln;
}

/* x -> fail_relu (testdev) -> sqrt (cpu_ref) -> y: a copy layer between
 * the two (testdev exports nothing). fail_relu fails on a negative x[0]. */
static plx_loaded_network *load_copy_net(plx_runtime *rt) {
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec();
    plx_activation_desc rd = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_unary_desc ud = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    plx_layer_id in, relu, sq, out;
    OK(plx_network_add_input(n, "x", 0, &t, &in));
    OK(plx_network_add_layer(n, "fail_relu", PLX_OP_ACTIVATION, &rd, 1, 1, &relu));
    OK(plx_network_add_layer(n, "sqrt", PLX_OP_UNARY, &ud, 1, 1, &sq));
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, in, 0, relu, 0));
    OK(plx_network_connect(n, relu, 0, sq, 0));
    OK(plx_network_connect(n, sq, 0, out, 0));
    const char *b[] = {"testdev", "cpu_ref"};
    return load(rt, n, b, 2, false, false);
}

/* x -> sqrt (cpu_ref) -> relu (testdev) -> y with import enabled: an
 * import layer binds testdev's handle to cpu_ref's memory. */
static plx_loaded_network *load_import_net(plx_runtime *rt) {
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec();
    plx_activation_desc rd = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_unary_desc ud = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    plx_layer_id in, sq, relu, out;
    OK(plx_network_add_input(n, "x", 0, &t, &in));
    OK(plx_network_add_layer(n, "sqrt", PLX_OP_UNARY, &ud, 1, 1, &sq));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &rd, 1, 1, &relu));
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, in, 0, sq, 0));
    OK(plx_network_connect(n, sq, 0, relu, 0));
    OK(plx_network_connect(n, relu, 0, out, 0));
    const char *b[] = {"testdev", "cpu_ref"};
    return load(rt, n, b, 2, true, false);
}

/* x -> relu -> add(bias) -> sqrt -> mul(scale) -> y on cpu_ref: four
 * workloads per execution. */
static plx_loaded_network *load_chain(plx_runtime *rt, bool async) {
    static float bias[N], scale[N];
    for (int i = 0; i < N; i++) {
        bias[i] = 0.5f * (float)i;
        scale[i] = 2.0f;
    }
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec();
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_binary_desc mul = PLX_BINARY_DESC_INIT(PLX_BINARY_MUL);
    plx_unary_desc sq = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    plx_layer_id x, r, b, a, s, c, m, y;
    OK(plx_network_add_input(n, "x", 0, &t, &x));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_constant(n, "bias", &t, bias, PLX_CONSTANT_BORROW, &b));
    OK(plx_network_add_layer(n, "add", PLX_OP_BINARY, &add, 2, 1, &a));
    OK(plx_network_add_layer(n, "sqrt", PLX_OP_UNARY, &sq, 1, 1, &s));
    OK(plx_network_add_constant(n, "scale", &t, scale, PLX_CONSTANT_BORROW, &c));
    OK(plx_network_add_layer(n, "mul", PLX_OP_BINARY, &mul, 2, 1, &m));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, r, 0));
    OK(plx_network_connect(n, r, 0, a, 0));
    OK(plx_network_connect(n, b, 0, a, 1));
    OK(plx_network_connect(n, a, 0, s, 0));
    OK(plx_network_connect(n, s, 0, m, 0));
    OK(plx_network_connect(n, c, 0, m, 1));
    OK(plx_network_connect(n, m, 0, y, 0));
    const char *be[] = {"cpu_ref"};
    return load(rt, n, be, 1, false, async);
}

static plx_status run_once(plx_loaded_network *ln, plx_working_memory *wm, float first) {
    float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
    }
    x[0] = first;
    plx_tensor_binding in = {0, x, sizeof x, 0};
    plx_tensor_binding out = {0, y, sizeof y, 0};
    plx_execute_args a;
    plx_execute_args_init(&a);
    a.inputs = &in;
    a.input_count = 1;
    a.outputs = &out;
    a.output_count = 1;
    return plx_loaded_network_execute_with(ln, wm, &a);
}

/* Writes the trace to a scratch file and parses it; asserts the document's
 * shape (traceEvents array, displayTimeUnit, the process name). */
static json_object *trace_of(plx_runtime *rt) {
    char dir[PATH_MAX], path[PATH_MAX];
    tu_mkdtemp(dir);
    tu_join(path, dir, "trace.json");
    OK(plx_runtime_write_trace(rt, path));
    json_object *doc = json_object_from_file(path);
    tu_rmtree(dir);
    cr_assert(not(zero(ptr, doc)), "the trace does not parse as JSON");
    json_object *events = NULL, *unit = NULL;
    cr_assert(json_object_object_get_ex(doc, "traceEvents", &events));
    cr_assert(json_object_is_type(events, json_type_array));
    cr_assert(json_object_object_get_ex(doc, "displayTimeUnit", &unit));
    cr_assert(eq(str, (char *)json_object_get_string(unit), "ms"));
    bool process_named = false;
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        json_object *e = json_object_array_get_idx(events, i), *v = NULL, *args = NULL;
        cr_assert(json_object_object_get_ex(e, "ph", &v));
        const char *ph = json_object_get_string(v);
        cr_assert(json_object_object_get_ex(e, "pid", &v));
        cr_assert(eq(int, json_object_get_int(v), 1));
        cr_assert(json_object_object_get_ex(e, "tid", &v));
        cr_assert(json_object_object_get_ex(e, "name", &v));
        cr_assert(json_object_object_get_ex(e, "args", &args));
        if (strcmp(ph, "M") == 0) {
            json_object *name = NULL;
            cr_assert(json_object_object_get_ex(args, "name", &name));
            if (strcmp(json_object_get_string(v), "process_name") == 0) {
                cr_assert(eq(str, (char *)json_object_get_string(name), "plexus"));
                process_named = true;
            }
            continue;
        }
        cr_assert(eq(str, (char *)ph, "X"));
        const char *keys[] = {"cat", "ts", "dur"};
        for (size_t k = 0; k < 3; k++) {
            cr_assert(json_object_object_get_ex(e, keys[k], &v), "event %zu lacks %s", i,
                      keys[k]);
        }
        cr_assert(json_object_object_get_ex(e, "dur", &v));
        cr_assert(ge(dbl, json_object_get_double(v), 0.0));
        const char *arg_keys[] = {"op", "backend", "network"};
        for (size_t k = 0; k < 3; k++) {
            cr_assert(json_object_object_get_ex(args, arg_keys[k], &v), "event %zu lacks args.%s",
                      i, arg_keys[k]);
        }
    }
    cr_assert(process_named);
    return doc;
}

static const char *field(json_object *e, const char *key) {
    json_object *v = NULL;
    return json_object_object_get_ex(e, key, &v) ? json_object_get_string(v) : NULL;
}

static const char *arg(json_object *e, const char *key) {
    json_object *args = NULL;
    return json_object_object_get_ex(e, "args", &args) ? field(args, key) : NULL;
}

static bool same(const char *a, const char *b) {
    return !b || (a && strcmp(a, b) == 0);
}

/* "X" events matching every non-NULL criterion. */
static size_t count_events(json_object *doc, const char *cat, const char *name, const char *op,
                           const char *backend) {
    json_object *events = NULL;
    json_object_object_get_ex(doc, "traceEvents", &events);
    size_t n = 0;
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        json_object *e = json_object_array_get_idx(events, i);
        n += same(field(e, "ph"), "X") && same(field(e, "cat"), cat) &&
             same(field(e, "name"), name) && same(arg(e, "op"), op) &&
             same(arg(e, "backend"), backend);
    }
    return n;
}

Test(profiler, counters_count_loads_and_runs) {
    plx_runtime *rt = make_runtime();
    plx_counters c;
    plx_runtime_counters(rt, &c);
    cr_assert(eq(u64, c.networks_loaded, 0));
    cr_assert(eq(u64, c.inferences_run, 0));
    cr_assert(eq(u64, c.inferences_failed, 0));
    plx_loaded_network *a = load_copy_net(rt);
    plx_loaded_network *b = load_chain(rt, false);
    for (int i = 0; i < 3; i++) {
        OK(run_once(a, NULL, 1.0f));
        OK(run_once(b, NULL, 1.0f));
    }
    FAILS_WITH(run_once(a, NULL, -1.0f), "fails on purpose");
    FAILS_WITH(plx_loaded_network_execute_with(a, NULL, NULL), "execute args");
    plx_runtime_counters(rt, &c);
    cr_assert(eq(u64, c.networks_loaded, 2));
    cr_assert(eq(u64, c.inferences_run, 6));
    cr_assert(eq(u64, c.inferences_failed, 2));
    /* Unloading does not change what was loaded; profiling is off. */
    plx_loaded_network_unload(&a);
    plx_runtime_counters(rt, &c);
    cr_assert(eq(u64, c.networks_loaded, 2));
    cr_assert(eq(sz, plx_runtime_trace_event_count(rt), 0));
    plx_runtime_counters(NULL, &c);
    cr_assert(eq(u64, c.networks_loaded, 0));
    plx_loaded_network_unload(&b);
    plx_runtime_destroy(&rt);
}

Test(profiler, off_records_nothing) {
    plx_runtime *rt = make_runtime();
    OK(plx_runtime_enable_profiling(rt, false));
    plx_loaded_network *ln = load_copy_net(rt);
    OK(run_once(ln, NULL, 1.0f));
    cr_assert(eq(sz, plx_runtime_trace_event_count(rt), 0));
    json_object *doc = trace_of(rt);
    cr_assert(eq(sz, count_events(doc, NULL, NULL, NULL, NULL), 0));
    json_object_put(doc);
    /* Enabled then disabled: nothing more is recorded. */
    OK(plx_runtime_enable_profiling(rt, true));
    OK(run_once(ln, NULL, 1.0f));
    size_t recorded = plx_runtime_trace_event_count(rt);
    cr_assert(eq(sz, recorded, 3), "fail_relu, copy, sqrt");
    OK(plx_runtime_enable_profiling(rt, false));
    OK(run_once(ln, NULL, 1.0f));
    cr_assert(eq(sz, plx_runtime_trace_event_count(rt), recorded));
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

Test(profiler, off_allocates_nothing_per_execution) {
    if (!alloc_counter_available()) {
        cr_skip_test("the allocator is replaced (sanitizer or valgrind)");
    }
    plx_runtime *rt = make_runtime();
    plx_loaded_network *ln = load_chain(rt, false);
    OK(run_once(ln, NULL, 1.0f)); /* allocates the working memory */
    alloc_counter_start();
    for (int i = 0; i < 10; i++) {
        plx_status s = run_once(ln, NULL, 1.0f);
        if (s) {
            alloc_counter_stop();
            OK(s);
        }
    }
    size_t allocs = alloc_counter_stop();
    cr_assert(eq(sz, allocs, 0));
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

Test(profiler, events_per_workload_per_iteration) {
    plx_runtime *rt = make_runtime();
    OK(plx_runtime_enable_profiling(rt, true));
    plx_loaded_network *ln = load_copy_net(rt);
    const int iterations = 5;
    for (int i = 0; i < iterations; i++) {
        OK(run_once(ln, NULL, 1.0f));
    }
    json_object *doc = trace_of(rt);
    size_t it = (size_t)iterations;
    cr_assert(eq(sz, count_events(doc, "execute", "fail_relu", "activation", "testdev"), it));
    cr_assert(eq(sz, count_events(doc, "execute", "sqrt", "unary", "cpu_ref"), it));
    cr_assert(eq(sz, count_events(doc, "execute", NULL, NULL, NULL), 2 * it));
    cr_assert(eq(sz, count_events(doc, "copy", NULL, plx_op_name(PLX_OP_MEM_COPY), "cpu_ref"), it));
    const char *phases[] = {"create factories", "check capabilities", "constants", "memory plan",
                            "working memory", "load"};
    for (size_t i = 0; i < 6; i++) {
        cr_assert(eq(sz, count_events(doc, "load", phases[i], "", ""), 1), "%s", phases[i]);
    }
    cr_assert(eq(sz, count_events(doc, NULL, NULL, NULL, NULL), 3 * it + 6));
    cr_assert(eq(sz, plx_runtime_trace_event_count(rt), 3 * it + 6));
    /* Every event names the network. */
    json_object *events = NULL;
    json_object_object_get_ex(doc, "traceEvents", &events);
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        json_object *e = json_object_array_get_idx(events, i), *args, *v;
        if (strcmp(field(e, "ph"), "X") == 0) {
            json_object_object_get_ex(e, "args", &args);
            json_object_object_get_ex(args, "network", &v);
            cr_assert(eq(u32, (uint32_t)json_object_get_int(v), plx_loaded_network_id(ln)));
        }
    }
    json_object_put(doc);
    /* A failing workload is recorded too, then the execution stops. */
    plx_runtime_clear_trace(rt);
    cr_assert(eq(sz, plx_runtime_trace_event_count(rt), 0));
    FAILS_WITH(run_once(ln, NULL, -1.0f), "fail_relu");
    doc = trace_of(rt);
    cr_assert(eq(sz, count_events(doc, "execute", "fail_relu", NULL, NULL), 1));
    cr_assert(eq(sz, count_events(doc, NULL, NULL, NULL, NULL), 1));
    json_object_put(doc);
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

Test(profiler, import_events) {
    plx_runtime *rt = make_runtime();
    OK(plx_runtime_enable_profiling(rt, true));
    plx_loaded_network *ln = load_import_net(rt);
    OK(run_once(ln, NULL, 1.0f));
    OK(run_once(ln, NULL, 1.0f));
    json_object *doc = trace_of(rt);
    cr_assert(eq(sz, count_events(doc, "import", NULL, plx_op_name(PLX_OP_MEM_IMPORT), "testdev"),
                 2));
    cr_assert(eq(sz, count_events(doc, "execute", "relu", "activation", "testdev"), 2));
    cr_assert(eq(sz, count_events(doc, "copy", NULL, NULL, NULL), 0));
    json_object_put(doc);
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

Test(profiler, names_are_escaped) {
    plx_runtime *rt = make_runtime();
    OK(plx_runtime_enable_profiling(rt, true));
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec();
    plx_activation_desc rd = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id in, relu, out;
    /* Quotes, a backslash, a control character and a long UTF-8 name. */
    const char *odd = "a\"b\\c\td \xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                      "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                      "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                      "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
    OK(plx_network_add_input(n, "x", 0, &t, &in));
    OK(plx_network_add_layer(n, odd, PLX_OP_ACTIVATION, &rd, 1, 1, &relu));
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, in, 0, relu, 0));
    OK(plx_network_connect(n, relu, 0, out, 0));
    const char *b[] = {"cpu_ref"};
    plx_loaded_network *ln = load(rt, n, b, 1, false, false);
    OK(run_once(ln, NULL, 1.0f));
    json_object *doc = trace_of(rt);
    json_object *events = NULL;
    json_object_object_get_ex(doc, "traceEvents", &events);
    const char *name = NULL;
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        json_object *e = json_object_array_get_idx(events, i);
        if (same(field(e, "cat"), "execute")) {
            name = field(e, "name");
        }
    }
    cr_assert(not(zero(ptr, (void *)name)));
    /* Truncated to at most 63 bytes at a character boundary (8 ASCII bytes,
     * then 2-byte characters). */
    cr_assert(eq(sz, strlen(name), 62));
    cr_assert(eq(int, strncmp(name, odd, strlen(name)), 0));
    cr_assert(eq(int, (strlen(name) - 8) % 2, 0), "'%s' ends inside a character", name);
    json_object_put(doc);
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

Test(profiler, write_errors_name_the_path) {
    plx_runtime *rt = make_runtime();
    OK(plx_runtime_enable_profiling(rt, true));
    FAILS_WITH(plx_runtime_write_trace(rt, "/nonexistent-plexus-dir/sub/trace.json"),
               "/nonexistent-plexus-dir/sub/trace.json");
    plx_status s = plx_runtime_write_trace(rt, "/nonexistent-plexus-dir/sub/trace.json");
    cr_assert(eq(int, plx_status_get_code(s), PLX_IO_ERROR));
    cr_assert(not(zero(ptr, strstr(plx_status_get_message(s), "No such file"))), "%s",
              plx_status_get_message(s));
    plx_status_free(s);
    FAILS_WITH(plx_runtime_write_trace(rt, NULL), "path");
    FAILS_WITH(plx_runtime_write_trace(NULL, "/tmp/x.json"), "runtime");
    FAILS_WITH(plx_runtime_enable_profiling(NULL, true), "runtime");
    cr_assert(eq(sz, plx_runtime_trace_event_count(NULL), 0));
    plx_runtime_clear_trace(NULL);
    plx_runtime_destroy(&rt);
}

#define THREADS 4
#define RUNS 50

typedef struct worker {
    plx_loaded_network *ln;
    plx_working_memory *wm;
    int failures;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    for (int i = 0; i < RUNS; i++) {
        plx_status s = run_once(w->ln, w->wm, 1.0f);
        if (s) {
            w->failures++;
            plx_status_free(s);
        }
    }
    return NULL;
}

Test(profiler, concurrent_executions_lose_no_event) {
    plx_runtime *rt = make_runtime();
    OK(plx_runtime_enable_profiling(rt, true));
    plx_loaded_network *ln = load_chain(rt, true);
    plx_runtime_clear_trace(rt);
    worker w[THREADS];
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i].ln = ln;
        w[i].failures = 0;
        OK(plx_loaded_network_create_working_memory(ln, &w[i].wm));
    }
    for (int i = 0; i < THREADS; i++) {
        cr_assert(eq(int, pthread_create(&threads[i], NULL, work, &w[i]), 0));
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        cr_assert(eq(int, w[i].failures, 0));
    }
    size_t expected = (size_t)THREADS * RUNS * 4; /* relu, add, sqrt, mul */
    cr_assert(eq(sz, plx_runtime_trace_event_count(rt), expected));
    json_object *doc = trace_of(rt);
    cr_assert(eq(sz, count_events(doc, "execute", NULL, NULL, "cpu_ref"), expected));
    const char *names[] = {"relu", "add", "sqrt", "mul"};
    for (size_t i = 0; i < 4; i++) {
        cr_assert(eq(sz, count_events(doc, "execute", names[i], NULL, NULL),
                     (size_t)THREADS * RUNS));
    }
    /* Events from THREADS distinct threads, each with RUNS * 4 events. */
    json_object *events = NULL;
    json_object_object_get_ex(doc, "traceEvents", &events);
    int64_t tids[THREADS + 1];
    size_t per_tid[THREADS + 1];
    size_t tid_count = 0;
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        json_object *e = json_object_array_get_idx(events, i), *v;
        if (!same(field(e, "ph"), "X")) {
            continue;
        }
        json_object_object_get_ex(e, "tid", &v);
        int64_t tid = json_object_get_int64(v);
        size_t k = 0;
        while (k < tid_count && tids[k] != tid) {
            k++;
        }
        cr_assert(lt(sz, k, (size_t)THREADS + 1), "more threads than workers");
        if (k == tid_count) {
            tids[tid_count] = tid;
            per_tid[tid_count++] = 0;
        }
        per_tid[k]++;
    }
    cr_assert(eq(sz, tid_count, THREADS));
    for (size_t k = 0; k < tid_count; k++) {
        cr_assert(eq(sz, per_tid[k], (size_t)RUNS * 4));
    }
    json_object_put(doc);
    plx_counters c;
    plx_runtime_counters(rt, &c);
    cr_assert(eq(u64, c.inferences_run, (uint64_t)THREADS * RUNS));
    for (int i = 0; i < THREADS; i++) {
        plx_working_memory_destroy(&w[i].wm);
    }
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}
