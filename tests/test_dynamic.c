/* Dynamic models (plexus/dynamic.h): specialisation per input signature,
 * the LRU cache (hits, misses, evictions, held specialisations), output
 * shapes per specialisation, fixed shapes from the options, pre-
 * specialisation, valued inputs and the probes of valued tensors, the
 * errors, no allocation on a hit, and threads sharing one model. On
 * tests/data/onnx's models (make-models.py describes them), with cpu_ref
 * alone. Built with
 * -DDYNAMIC_PLAIN, the threads scenario alone as a plain program
 * (stress_dynamic), which ThreadSanitizer builds run. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <plexus/dynamic.h>

#ifndef DYNAMIC_PLAIN
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#endif

#include "alloc_counter.h"

#define DYNAMIC_BATCH ONNX_TEST_DIR "/dynamic_batch.onnx"

/* ---- threads (also the plain program stress_dynamic, for TSan) ---------- */

enum { THREADS = 4, ITERATIONS = 50 };

typedef struct worker {
    plx_dynamic_model *m;
    int64_t batch;
    int failures;
} worker;

/* Acquires its batch size, runs it with its own working memory, releases;
 * ITERATIONS times. */
static void *work(void *arg) {
    worker *w = arg;
    size_t n = (size_t)w->batch * 4;
    float x[32], y[32];
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)i - 3.0f;
    }
    plx_model_input_shape s = {.name = "x", .dims = {w->batch, 4}, .rank = 2};
    plx_dynamic_signature sig = {&s, 1, NULL, 0};
    for (int it = 0; it < ITERATIONS; it++) {
        plx_specialization *sp = NULL;
        plx_status st = plx_dynamic_model_acquire(w->m, &sig, &sp);
        if (!st) {
            plx_loaded_network *ln = plx_specialization_network(sp);
            plx_working_memory *wm = NULL;
            st = plx_loaded_network_create_working_memory(ln, &wm);
            if (!st) {
                plx_tensor_binding in = {0, x, n * sizeof *x, 0}, out = {0, y, n * sizeof *y, 0};
                plx_execute_args a;
                plx_execute_args_init(&a);
                a.inputs = &in;
                a.input_count = 1;
                a.outputs = &out;
                a.output_count = 1;
                st = plx_loaded_network_execute_with(ln, wm, &a);
                plx_working_memory_destroy(&wm);
            }
            plx_dynamic_model_release(w->m, &sp);
        }
        if (st) {
            w->failures++;
            plx_status_free(st);
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            w->failures += y[i] != (x[i] > 0 ? x[i] : 0.0f);
        }
    }
    return NULL;
}

/* THREADS threads, batch sizes 1 to THREADS, on one model of capacity 2
 * loaded for concurrent executions; the failures of all, and the stats. */
static int threads_share_a_model(plx_runtime *rt, plx_dynamic_stats *out_stats) {
    plx_dynamic_options o;
    plx_dynamic_options_init(&o);
    o.cache_capacity = 2;
    o.load.async_execution = true;
    plx_dynamic_model *m = NULL;
    plx_status st = plx_dynamic_model_open(rt, DYNAMIC_BATCH, &o, &m);
    if (st) {
        fprintf(stderr, "open: %s\n", plx_status_get_message(st));
        plx_status_free(st);
        return 1;
    }
    pthread_t t[THREADS];
    worker w[THREADS];
    int failures = 0;
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){m, i + 1, 0};
        if (pthread_create(&t[i], NULL, work, &w[i]) != 0) {
            return 1;
        }
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        failures += w[i].failures;
    }
    plx_dynamic_model_stats(m, out_stats);
    plx_dynamic_model_destroy(&m);
    return failures;
}

/* A runtime that sees only the build's cpu_ref. */
static plx_status cpu_ref_runtime(plx_runtime **out) {
    plx_runtime_options o;
    plx_runtime_options_init(&o);
    o.ignore_environment = true;
    o.skip_default_dir = true;
    const char *paths[] = {CPU_REF_DIR};
    o.search_paths = paths;
    o.search_path_count = 1;
    return plx_runtime_create(&o, out);
}

#ifdef DYNAMIC_PLAIN
int main(void) {
    plx_runtime *rt = NULL;
    plx_status st = cpu_ref_runtime(&rt);
    if (st) {
        fprintf(stderr, "runtime: %s\n", plx_status_get_message(st));
        plx_status_free(st);
        return 1;
    }
    plx_dynamic_stats s;
    int failures = threads_share_a_model(rt, &s);
    plx_runtime_destroy(&rt);
    printf("stress_dynamic: %d failures; %llu hits, %llu misses, %llu evictions\n", failures,
           (unsigned long long)s.hits, (unsigned long long)s.misses,
           (unsigned long long)s.evictions);
    return failures || s.hits + s.misses != THREADS * ITERATIONS ? 1 : 0;
}
#else

/* acquire with shapes only. */
static plx_status acquire_shapes(plx_dynamic_model *m, const plx_model_input_shape *shapes,
                                 size_t count, plx_specialization **out) {
    plx_dynamic_signature sig = {shapes, count, NULL, 0};
    return plx_dynamic_model_acquire(m, &sig, out);
}

static plx_runtime *make_runtime(void) {
    plx_runtime *rt = NULL;
    plx_status st = cpu_ref_runtime(&rt);
    cr_assert_null(st, "plx_runtime_create: %s", plx_status_get_message(st));
    return rt;
}

static plx_dynamic_model *open_model(plx_runtime *rt, const char *path, size_t capacity) {
    plx_dynamic_options o;
    plx_dynamic_options_init(&o);
    o.cache_capacity = capacity;
    plx_dynamic_model *m = NULL;
    plx_status st = plx_dynamic_model_open(rt, path, &o, &m);
    cr_assert_null(st, "open: %s", plx_status_get_message(st));
    return m;
}

static plx_specialization *acquire_batch(plx_dynamic_model *m, int64_t batch) {
    plx_model_input_shape s = {.name = "x", .dims = {batch, 4}, .rank = 2};
    plx_specialization *sp = NULL;
    plx_status st = acquire_shapes(m, &s, 1, &sp);
    cr_assert_null(st, "acquire [%lld,4]: %s", (long long)batch, plx_status_get_message(st));
    return sp;
}

/* Runs relu on `batch` rows through the specialisation and checks it. */
static void run_relu(plx_specialization *sp, int64_t batch) {
    const plx_model *model = plx_specialization_model(sp);
    const plx_model_io *in = plx_model_input(model, 0), *out = plx_model_output(model, 0);
    cr_assert(eq(i64, in->info.dims[0], batch));
    cr_assert(eq(i64, out->info.dims[0], batch), "the output shape follows the input's");
    cr_assert(eq(i64, out->info.dims[1], 4));
    size_t n = (size_t)batch * 4;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    cr_assert(x && y);
    for (size_t i = 0; i < n; i++) {
        x[i] = (float)i - (float)n / 2.0f;
    }
    plx_tensor_binding bi = {in->binding_id, x, n * sizeof *x, 0};
    plx_tensor_binding bo = {out->binding_id, y, n * sizeof *y, 0};
    plx_status st = plx_loaded_network_execute(plx_specialization_network(sp), &bi, 1, &bo, 1);
    cr_assert_null(st, "execute: %s", plx_status_get_message(st));
    for (size_t i = 0; i < n; i++) {
        cr_assert(eq(flt, y[i], x[i] > 0 ? x[i] : 0.0f), "element %zu", i);
    }
    free(x);
    free(y);
}

static plx_dynamic_stats stats_of(plx_dynamic_model *m) {
    plx_dynamic_stats s;
    plx_dynamic_model_stats(m, &s);
    return s;
}

Test(dynamic, specialises_per_signature_and_caches) {
    plx_runtime *rt = make_runtime();
    plx_dynamic_model *m = open_model(rt, DYNAMIC_BATCH, 4);
    plx_specialization *a = acquire_batch(m, 3);
    run_relu(a, 3);
    cr_assert(gt(dbl, plx_specialization_time_ms(a), 0.0));
    plx_loaded_network *first = plx_specialization_network(a);
    plx_dynamic_model_release(m, &a);
    cr_assert_null(a);

    plx_specialization *b = acquire_batch(m, 5);
    run_relu(b, 5);
    plx_dynamic_model_release(m, &b);
    a = acquire_batch(m, 3);
    cr_assert(eq(ptr, plx_specialization_network(a), first), "a hit returns the same network");
    run_relu(a, 3);
    plx_dynamic_model_release(m, &a);

    plx_dynamic_stats s = stats_of(m);
    cr_assert(eq(u64, s.hits, 1));
    cr_assert(eq(u64, s.misses, 2));
    cr_assert(eq(u64, s.failures, 0));
    cr_assert(eq(u64, s.evictions, 0));
    cr_assert(eq(sz, s.cached, 2));
    cr_assert(gt(dbl, s.specialize_ms, 0.0));
    plx_dynamic_model_destroy(&m);
    cr_assert_null(m);
    plx_runtime_destroy(&rt);
}

Test(dynamic, least_recently_used_is_evicted_unless_held) {
    plx_runtime *rt = make_runtime();
    plx_dynamic_model *m = open_model(rt, DYNAMIC_BATCH, 2);
    plx_specialization *s1 = acquire_batch(m, 1);
    plx_dynamic_model_release(m, &s1);
    plx_specialization *s2 = acquire_batch(m, 2);
    plx_dynamic_model_release(m, &s2);
    s1 = acquire_batch(m, 1); /* 1 is now the most recent */
    plx_dynamic_model_release(m, &s1);
    plx_specialization *s3 = acquire_batch(m, 3); /* evicts 2 */
    plx_dynamic_model_release(m, &s3);
    plx_dynamic_stats s = stats_of(m);
    cr_assert(eq(u64, s.evictions, 1));
    cr_assert(eq(sz, s.cached, 2));
    s1 = acquire_batch(m, 1);
    plx_dynamic_model_release(m, &s1);
    cr_assert(eq(u64, stats_of(m).hits, 2), "1 stayed cached");
    s2 = acquire_batch(m, 2);
    plx_dynamic_model_release(m, &s2);
    cr_assert(eq(u64, stats_of(m).misses, 4), "2 was evicted");

    /* Held ones stay loaded beyond the capacity, and go when released. */
    plx_specialization *held[3] = {acquire_batch(m, 6), acquire_batch(m, 7), acquire_batch(m, 8)};
    cr_assert(eq(sz, stats_of(m).cached, 3));
    for (int i = 0; i < 3; i++) {
        run_relu(held[i], 6 + i);
    }
    for (int i = 0; i < 3; i++) {
        plx_dynamic_model_release(m, &held[i]);
    }
    cr_assert(eq(sz, stats_of(m).cached, 2));
    plx_dynamic_model_destroy(&m);
    plx_runtime_destroy(&rt);
}

Test(dynamic, signature_order_does_not_matter) {
    plx_runtime *rt = make_runtime();
    plx_dynamic_model *m = open_model(rt, ONNX_TEST_DIR "/two_inputs.onnx", 4);
    /* two_inputs.onnx has static inputs: a [4,3], idx int64 [2], b [2,3]. */
    plx_specialization *sp = NULL;
    cr_assert_null(plx_dynamic_model_acquire(m, NULL, &sp));
    plx_dynamic_model_release(m, &sp);
    plx_model_input_shape ab[2] = {{.name = "a", .dims = {4, 3}, .rank = 2},
                                   {.name = "b", .dims = {2, 3}, .rank = 2}};
    plx_model_input_shape ba[2] = {ab[1], ab[0]};
    cr_assert_null(acquire_shapes(m, ab, 2, &sp));
    plx_dynamic_model_release(m, &sp);
    cr_assert_null(acquire_shapes(m, ba, 2, &sp));
    plx_dynamic_model_release(m, &sp);
    cr_assert(eq(u64, stats_of(m).hits, 1));
    cr_assert(eq(u64, stats_of(m).misses, 2));
    plx_dynamic_model_destroy(&m);
    plx_runtime_destroy(&rt);
}

static void expect_acquire_fails(plx_dynamic_model *m, const plx_model_input_shape *s,
                                 size_t count, plx_status_code code, const char *needle) {
    plx_specialization *sp = (plx_specialization *)1;
    plx_status st = acquire_shapes(m, s, count, &sp);
    cr_assert_not_null(st, "acquire succeeded; expected '%s'", needle);
    cr_expect(eq(ptr, sp, (plx_specialization *)1), "out untouched on failure");
    cr_expect(eq(int, (int)plx_status_get_code(st), (int)code), "%s",
              plx_status_get_message(st));
    cr_expect(not(zero(ptr, strstr(plx_status_get_message(st), needle))), "'%s' not in '%s'",
              needle, plx_status_get_message(st));
    plx_status_free(st);
}

Test(dynamic, errors_name_what_is_at_fault, .timeout = 60) {
    plx_runtime *rt = make_runtime();
    plx_dynamic_model *m = open_model(rt, DYNAMIC_BATCH, 2);
    /* No shape for the open dim. */
    expect_acquire_fails(m, NULL, 0, PLX_INVALID_ARGUMENT, "'N'");
    plx_model_input_shape s = {.name = "nosuch", .dims = {1, 4}, .rank = 2};
    expect_acquire_fails(m, &s, 1, PLX_INVALID_ARGUMENT, "'nosuch'");
    s = (plx_model_input_shape){.name = "x", .dims = {2, 5}, .rank = 2};
    expect_acquire_fails(m, &s, 1, PLX_INVALID_ARGUMENT, "dim 1");
    s = (plx_model_input_shape){.name = "x", .dims = {8}, .rank = 1};
    expect_acquire_fails(m, &s, 1, PLX_INVALID_ARGUMENT, "rank");
    plx_model_input_shape twice[2] = {{.name = "x", .dims = {1, 4}, .rank = 2},
                                      {.name = "x", .dims = {2, 4}, .rank = 2}};
    expect_acquire_fails(m, twice, 2, PLX_INVALID_ARGUMENT, "given twice");
    s = (plx_model_input_shape){.name = NULL, .rank = 2};
    expect_acquire_fails(m, &s, 1, PLX_INVALID_ARGUMENT, "no name");
    plx_dynamic_stats st = stats_of(m);
    cr_assert(eq(u64, st.failures, 4), "the four that reached the import");
    cr_assert(eq(sz, st.cached, 0), "failures are not cached");
    /* NULL arguments. */
    plx_specialization *sp = NULL;
    plx_status e = acquire_shapes(NULL, &s, 1, &sp);
    cr_assert_not_null(e);
    plx_status_free(e);
    plx_dynamic_model_release(m, NULL);
    plx_dynamic_model_release(NULL, &sp);
    plx_dynamic_model_destroy(&m);

    /* Open: capacity 0, a missing file, an unknown format. */
    plx_dynamic_options o;
    plx_dynamic_options_init(&o);
    o.cache_capacity = 0;
    e = plx_dynamic_model_open(rt, DYNAMIC_BATCH, &o, &m);
    cr_assert_not_null(e);
    cr_expect(not(zero(ptr, strstr(plx_status_get_message(e), "cache_capacity"))));
    plx_status_free(e);
    e = plx_dynamic_model_open(rt, ONNX_TEST_DIR "/no_such_model.onnx", NULL, &m);
    cr_assert_not_null(e);
    cr_expect(eq(int, (int)plx_status_get_code(e), (int)PLX_IO_ERROR));
    plx_status_free(e);
    /* a FIFO: refused at once, not when the first specialisation reads it */
    char fifo_dir[] = "/tmp/plexus_test_dynamic_XXXXXX", fifo[64];
    cr_assert_not_null(mkdtemp(fifo_dir));
    snprintf(fifo, sizeof fifo, "%s/model.onnx", fifo_dir);
    cr_assert(eq(int, mkfifo(fifo, 0644), 0));
    e = plx_dynamic_model_open(rt, fifo, NULL, &m);
    cr_assert_not_null(e);
    cr_expect(eq(int, (int)plx_status_get_code(e), (int)PLX_IO_ERROR));
    cr_expect(not(zero(ptr, strstr(plx_status_get_message(e), "not a regular file"))));
    plx_status_free(e);
    unlink(fifo);
    rmdir(fifo_dir);
    e = plx_dynamic_model_open(rt, ONNX_TEST_DIR "/dynamic_batch.weird", NULL, &m);
    cr_assert_not_null(e);
    cr_expect(not(zero(ptr, strstr(plx_status_get_message(e), "format"))));
    plx_status_free(e);
    cr_assert_null(m);
    plx_runtime_destroy(&rt);
}

Test(dynamic, fixed_shapes_and_prepare) {
    plx_runtime *rt = make_runtime();
    plx_dynamic_options o;
    plx_dynamic_options_init(&o);
    plx_model_input_shape fixed = {.name = "x", .dims = {2, 4}, .rank = 2};
    o.model.shapes = &fixed;
    o.model.shape_count = 1;
    const char *backends[] = {"cpu_ref"};
    o.optimize.backends = backends;
    o.optimize.backend_count = 1;
    plx_dynamic_model *m = NULL;
    cr_assert_null(plx_dynamic_model_open(rt, DYNAMIC_BATCH, &o, &m));
    fixed.dims[0] = 99; /* copied at open */
    plx_specialization *sp = NULL;
    cr_assert_null(plx_dynamic_model_acquire(m, NULL, &sp));
    run_relu(sp, 2);
    plx_dynamic_model_release(m, &sp);
    /* The same shape named again is the same input; another contradicts. */
    plx_model_input_shape same = {.name = "x", .dims = {2, 4}, .rank = 2};
    cr_assert_null(acquire_shapes(m, &same, 1, &sp));
    plx_dynamic_model_release(m, &sp);
    same.dims[0] = 3;
    expect_acquire_fails(m, &same, 1, PLX_INVALID_ARGUMENT, "fix");
    plx_dynamic_model_destroy(&m);

    /* Pre-specialised batch sizes: executions then only hit. */
    m = open_model(rt, DYNAMIC_BATCH, 8);
    plx_model_input_shape b[4];
    plx_dynamic_signature sigs[4];
    for (int i = 0; i < 4; i++) {
        b[i] = (plx_model_input_shape){.name = "x", .dims = {(int64_t)1 << i, 4}, .rank = 2};
        sigs[i] = (plx_dynamic_signature){&b[i], 1, NULL, 0};
    }
    cr_assert_null(plx_dynamic_model_prepare(m, sigs, 4));
    cr_assert(eq(u64, stats_of(m).misses, 4));
    for (int i = 0; i < 4; i++) {
        plx_specialization *p = acquire_batch(m, (int64_t)1 << i);
        run_relu(p, (int64_t)1 << i);
        plx_dynamic_model_release(m, &p);
    }
    cr_assert(eq(u64, stats_of(m).hits, 4));
    plx_dynamic_model_destroy(&m);
    plx_runtime_destroy(&rt);
}

/* Values in the signature: reshape_by_input.onnx reshapes x [2, 3] to
 * the value of its input `shape`, which must be known at import. Each value
 * is its own specialisation, without `shape` among its inputs. */
Test(dynamic, values_join_the_key) {
    plx_runtime *rt = make_runtime();
    plx_dynamic_model *m = open_model(rt, ONNX_TEST_DIR "/reshape_by_input.onnx", 4);
    /* Without the value the import cannot fold the reshape. */
    expect_acquire_fails(m, NULL, 0, PLX_INVALID_ARGUMENT, "input 'shape' needs a value");
    cr_assert(eq(sz, plx_dynamic_model_valued_inputs(m, NULL, 0), 0), "nothing offered");
    static const int64_t to_3x2[2] = {3, 2}, to_6x1[2] = {6, 1}, again_3x2[2] = {3, 2};
    plx_model_constant_input v = {.name = "shape", .info = {.dtype = PLX_DTYPE_INT64, .rank = 1,
                                                           .dims = {2}}, .data = to_3x2};
    plx_dynamic_signature sig = {NULL, 0, &v, 1};
    plx_specialization *a = NULL, *b = NULL;
    cr_assert_null(plx_dynamic_model_acquire(m, &sig, &a));
    const plx_model *ma = plx_specialization_model(a);
    cr_assert(eq(sz, plx_model_input_count(ma), 1), "the valued input is not an input");
    const plx_tensor_info *y = &plx_model_output(ma, 0)->info;
    cr_assert(eq(u32, y->rank, 2));
    cr_assert(eq(i64, y->dims[0], 3));
    float x[6] = {1, 2, 3, 4, 5, 6}, out[6] = {0};
    plx_tensor_binding bi = {0, x, sizeof x, 0}, bo = {0, out, sizeof out, 0};
    cr_assert_null(plx_loaded_network_execute(plx_specialization_network(a), &bi, 1, &bo, 1));
    cr_assert(eq(flt, out[5], 6.0f));
    v.data = to_6x1;
    cr_assert_null(plx_dynamic_model_acquire(m, &sig, &b));
    cr_assert(eq(i64, plx_model_output(plx_specialization_model(b), 0)->info.dims[0], 6));
    plx_dynamic_model_release(m, &b);
    plx_dynamic_model_release(m, &a);
    /* The same value from another buffer is a hit. */
    v.data = again_3x2;
    cr_assert_null(plx_dynamic_model_acquire(m, &sig, &a));
    plx_dynamic_model_release(m, &a);
    plx_dynamic_stats st = stats_of(m);
    cr_assert(eq(u64, st.hits, 1));
    cr_assert(eq(u64, st.misses, 3), "the failed one, [3,2] and [6,1]");
    const char *valued[2] = {NULL, NULL};
    cr_assert(eq(sz, plx_dynamic_model_valued_inputs(m, valued, 2), 1));
    cr_assert(eq(str, (char *)valued[0], "shape"));
    /* A value and a shape for one input; a value without data. */
    plx_model_input_shape sh = {.name = "shape", .dims = {2}, .rank = 1};
    sig = (plx_dynamic_signature){&sh, 1, &v, 1};
    plx_status e = plx_dynamic_model_acquire(m, &sig, &a);
    cr_assert_not_null(e);
    cr_expect(not(zero(ptr, strstr(plx_status_get_message(e), "given twice"))));
    plx_status_free(e);
    v.data = NULL;
    sig = (plx_dynamic_signature){NULL, 0, &v, 1};
    e = plx_dynamic_model_acquire(m, &sig, &a);
    cr_assert_not_null(e);
    cr_expect(not(zero(ptr, strstr(plx_status_get_message(e), "no data"))));
    plx_status_free(e);
    plx_dynamic_model_destroy(&m);
    plx_runtime_destroy(&rt);
}

/* Acquires branch_on_rate.onnx (y = sr == 16000 ? relu(x) : -x, x [N])
 * offering the values of both inputs, and runs it on x. */
static void run_branch(plx_dynamic_model *m, const float *x, int64_t n, int64_t rate, float *y) {
    plx_model_constant_input v[2] = {
        {.name = "x", .info = {.dtype = PLX_DTYPE_FLOAT32, .rank = 1, .dims = {n}}, .data = x},
        {.name = "sr", .info = {.dtype = PLX_DTYPE_INT64, .rank = 0}, .data = &rate}};
    plx_dynamic_signature sig = {NULL, 0, v, 2};
    plx_specialization *sp = NULL;
    plx_status st = plx_dynamic_model_acquire(m, &sig, &sp);
    cr_assert_null(st, "%s", plx_status_get_message(st));
    const plx_model *sm = plx_specialization_model(sp);
    cr_assert(eq(sz, plx_model_input_count(sm), 1), "sr is frozen, x stays an input");
    cr_assert(eq(str, (char *)plx_model_input(sm, 0)->name, "x"));
    size_t bytes = (size_t)n * sizeof *x;
    plx_tensor_binding in = {0, (void *)x, bytes, 0}, out = {0, y, bytes, 0};
    st = plx_loaded_network_execute(plx_specialization_network(sp), &in, 1, &out, 1);
    cr_assert_null(st, "%s", plx_status_get_message(st));
    plx_dynamic_model_release(m, &sp);
}

/* The model finds the inputs it must specialise on: offered every input's
 * value, it freezes sr (which an If tests) and keys on its value, while x
 * stays an input whose value does not matter to the cache. An input too
 * big to specialise on is refused, naming it. */
Test(dynamic, valued_inputs_found_by_the_import) {
    plx_runtime *rt = make_runtime();
    plx_dynamic_model *m = open_model(rt, ONNX_TEST_DIR "/branch_on_rate.onnx", 4);
    float x[4] = {-1, 2, -3, 4}, y[4];
    run_branch(m, x, 4, 16000, y);
    cr_expect(eq(flt, y[0], 0.0f));
    cr_expect(eq(flt, y[1], 2.0f));
    x[1] = 5; /* other data, same shape: a hit */
    run_branch(m, x, 4, 16000, y);
    cr_expect(eq(flt, y[1], 5.0f));
    run_branch(m, x, 4, 8000, y);
    cr_expect(eq(flt, y[0], 1.0f), "the else branch");
    cr_expect(eq(flt, y[1], -5.0f));
    run_branch(m, x, 2, 8000, y);
    plx_dynamic_stats st = stats_of(m);
    cr_expect(eq(u64, st.hits, 1));
    cr_expect(eq(u64, st.misses, 3), "sr 16000, sr 8000, and N 2");
    const char *valued[1] = {NULL};
    cr_assert(eq(sz, plx_dynamic_model_valued_inputs(m, valued, 1), 1));
    cr_expect(eq(str, (char *)valued[0], "sr"));
    /* sr's shape alone is not enough now. */
    plx_model_input_shape shapes[2] = {{.name = "x", .dims = {4}, .rank = 1},
                                       {.name = "sr", .rank = 0}};
    expect_acquire_fails(m, shapes, 2, PLX_INVALID_ARGUMENT, "input 'sr' needs a value");
    plx_dynamic_model_destroy(&m);
    plx_runtime_destroy(&rt);
}

static void expect_dims(const plx_tensor_info *info, int64_t d0, int64_t d1) {
    cr_assert(eq(u32, info->rank, 2));
    cr_expect(eq(i64, info->dims[0], d0));
    cr_expect(eq(i64, info->dims[1], d1));
}

/* Acquires `m` offering the value of `name` ([n] of `dt`) and, when
 * `extra`, one more value. */
static plx_specialization *acquire_values(plx_dynamic_model *m, const char *name,
                                          const void *data, plx_dtype dt, int64_t n,
                                          const plx_model_constant_input *extra) {
    plx_model_constant_input v[2] = {
        {.name = name, .info = {.dtype = dt, .rank = 1, .dims = {n}}, .data = data}};
    if (extra) {
        v[1] = *extra;
    }
    plx_dynamic_signature sig = {NULL, 0, v, extra ? 2 : 1};
    plx_specialization *sp = NULL;
    plx_status st = plx_dynamic_model_acquire(m, &sig, &sp);
    cr_assert_null(st, "%s", plx_status_get_message(st));
    return sp;
}

/* A value needed at import computed from an input too big to specialise
 * on: a probe computes it for each signature. In slice_of_big.onnx the
 * reshape's target is the first two values of `big` (600 int64); in
 * branch_on_energy.onnx an If tests whether x (2048 floats) is loud. */
Test(dynamic, probes_compute_values_from_big_inputs) {
    plx_runtime *rt = make_runtime();
    plx_dynamic_model *m = open_model(rt, ONNX_TEST_DIR "/slice_of_big.onnx", 8);
    static int64_t big[600] = {3, 2};
    float x[6] = {1, 2, 3, 4, 5, 6};
    plx_model_constant_input xv = {.name = "x", .info = {.dtype = PLX_DTYPE_FLOAT32, .rank = 1,
                                                         .dims = {6}}, .data = x};
    plx_specialization *sp = acquire_values(m, "big", big, PLX_DTYPE_INT64, 600, &xv);
    const plx_model *sm = plx_specialization_model(sp);
    cr_assert(eq(sz, plx_model_input_count(sm), 1), "only x: big fed the target alone");
    expect_dims(&plx_model_output(sm, 0)->info, 3, 2);
    plx_dynamic_model_release(m, &sp);
    const char *names[2] = {NULL, NULL};
    cr_assert(eq(sz, plx_dynamic_model_valued_tensors(m, names, 2), 1));
    cr_expect(eq(str, (char *)names[0], "target"));
    cr_expect(eq(sz, plx_dynamic_model_valued_inputs(m, NULL, 0), 0), "big is too big");
    big[0] = 2;
    big[1] = 3;
    sp = acquire_values(m, "big", big, PLX_DTYPE_INT64, 600, &xv);
    expect_dims(&plx_model_output(plx_specialization_model(sp), 0)->info, 2, 3);
    plx_dynamic_model_release(m, &sp);
    big[599] = 7; /* not part of the target: the same specialisation */
    sp = acquire_values(m, "big", big, PLX_DTYPE_INT64, 600, &xv);
    plx_dynamic_model_release(m, &sp);
    plx_dynamic_stats st = stats_of(m);
    cr_expect(eq(u64, st.hits, 1));
    cr_expect(eq(u64, st.misses, 3), "one probe, targets [3,2] and [2,3]");
    /* The probe needs big's value. */
    plx_model_input_shape shapes[2] = {{.name = "big", .dims = {600}, .rank = 1},
                                       {.name = "x", .dims = {6}, .rank = 1}};
    expect_acquire_fails(m, shapes, 2, PLX_INVALID_ARGUMENT, "input 'big' needs a value");
    plx_dynamic_model_destroy(&m);

    /* The whole of big as the target: too big a value to specialise on. */
    m = open_model(rt, ONNX_TEST_DIR "/all_of_big.onnx", 4);
    plx_model_constant_input bv = {.name = "big", .info = {.dtype = PLX_DTYPE_INT64, .rank = 1,
                                                           .dims = {600}}, .data = big};
    plx_dynamic_signature sig = {NULL, 0, &bv, 1};
    plx_status e = plx_dynamic_model_acquire(m, &sig, &sp);
    cr_assert_not_null(e);
    cr_expect(eq(int, (int)plx_status_get_code(e), (int)PLX_UNSUPPORTED));
    cr_expect(not(zero(ptr, strstr(plx_status_get_message(e), "tensor 'target' (4800 bytes)"))),
              "%s", plx_status_get_message(e));
    plx_status_free(e);
    plx_dynamic_model_destroy(&m);

    /* The host evaluates the If's condition; the branch it picks runs. */
    m = open_model(rt, ONNX_TEST_DIR "/branch_on_energy.onnx", 4);
    static float loud[2048], quiet[2048];
    for (int i = 0; i < 2048; i++) {
        loud[i] = i % 2 ? 0.5f : -0.5f;
        quiet[i] = i % 2 ? 0.001f : -0.001f;
    }
    float y[2048];
    for (int round = 0; round < 2; round++) {
        for (int q = 0; q < 2; q++) {
            const float *in = q ? quiet : loud;
            sp = acquire_values(m, "x", in, PLX_DTYPE_FLOAT32, 2048, NULL);
            plx_tensor_binding bi = {0, (void *)in, sizeof loud, 0}, bo = {0, y, sizeof y, 0};
            plx_status rs = plx_loaded_network_execute(plx_specialization_network(sp), &bi, 1,
                                                       &bo, 1);
            cr_assert_null(rs, "%s", plx_status_get_message(rs));
            plx_dynamic_model_release(m, &sp);
            cr_expect(eq(flt, y[0], q ? 0.001f : 0.0f), "quiet: -x; loud: relu(x)");
            cr_expect(eq(flt, y[1], q ? -0.001f : 0.5f));
        }
    }
    st = stats_of(m);
    cr_expect(eq(u64, st.misses, 3), "the probe, the loud branch and the quiet one");
    cr_expect(eq(u64, st.hits, 2), "the second round");
    cr_expect(eq(sz, plx_dynamic_model_valued_tensors(m, names, 2), 1));
    cr_expect(eq(str, (char *)names[0], "loud"));
    plx_dynamic_model_destroy(&m);
    plx_runtime_destroy(&rt);
}

/* Runs the digits example (image [1,1,8,8] -> probabilities [1,10]) of
 * `m` on a fixed image. */
static void run_digits(plx_runtime *rt, plx_model *m, float *probs) {
    plx_optimized_network *opt = NULL;
    plx_loaded_network *ln = NULL;
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *backends[] = {"cpu_ref"};
    oo.backends = backends;
    oo.backend_count = 1;
    plx_status st = plx_optimize(rt, plx_model_network(m), &oo, &opt);
    if (!st) {
        st = plx_runtime_load_network(rt, &opt, NULL, &ln);
    }
    cr_assert_null(st, "%s", plx_status_get_message(st));
    float image[64];
    for (int i = 0; i < 64; i++) {
        image[i] = (float)((i * 7) % 16) / 16.0f;
    }
    plx_tensor_binding in = {0, image, sizeof image, 0}, out = {0, probs, 10 * sizeof *probs, 0};
    st = plx_loaded_network_execute(ln, &in, 1, &out, 1);
    cr_assert_null(st, "%s", plx_status_get_message(st));
    plx_loaded_network_unload(&ln);
}

/* Imports of one file given one plx_model_weights decode its initializers
 * once: the second adds nothing to the store, and its constants borrow
 * the first one's data, which outlives both the first model and the
 * store's own reference. A file other than the store's decodes as usual. */
Test(dynamic, initializers_shared_between_imports) {
    plx_runtime *rt = make_runtime();
    const char *path = DIGITS_DIR "/digits.onnx";
    plx_model *plain = NULL, *a = NULL, *b = NULL, *other = NULL;
    cr_assert_null(plx_model_open(path, NULL, &plain));
    plx_model_weights *w = NULL;
    cr_assert_null(plx_model_weights_create(&w));
    plx_model_options o;
    plx_model_options_init(&o);
    o.weights = w;
    cr_assert_null(plx_model_open(path, &o, &a));
    size_t bytes = plx_model_weights_bytes(w);
    cr_assert(gt(sz, bytes, 1000), "the digits model's weights: %zu bytes", bytes);
    cr_assert_null(plx_model_open(path, &o, &b));
    cr_expect(eq(sz, plx_model_weights_bytes(w), bytes), "nothing decoded twice");
    /* branch_on_energy.onnx has an initializer ("one"); x sized, the If's
     * condition frozen. */
    plx_model_input_shape x = {.name = "x", .dims = {4}, .rank = 1};
    static const uint8_t yes = 1;
    plx_model_constant_input loud = {.name = "loud", .info = {.dtype = PLX_DTYPE_BOOL},
                                     .data = &yes};
    plx_model_options other_o = o;
    other_o.shapes = &x;
    other_o.shape_count = 1;
    other_o.constants = &loud;
    other_o.constant_count = 1;
    plx_status st = plx_model_open(ONNX_TEST_DIR "/branch_on_energy.onnx", &other_o, &other);
    cr_assert_null(st, "%s", plx_status_get_message(st));
    cr_expect(eq(sz, plx_model_weights_bytes(w), bytes), "another file is not the store's");
    plx_model_destroy(&other);
    plx_model_destroy(&a);
    plx_model_weights_release(&w);
    cr_assert_null(w);
    float want[10], got[10];
    run_digits(rt, plain, want);
    run_digits(rt, b, got);
    for (int i = 0; i < 10; i++) {
        cr_expect(eq(flt, got[i], want[i]), "probability %d", i);
    }
    plx_model_destroy(&b);
    plx_model_destroy(&plain);
    plx_runtime_destroy(&rt);
}

/* A hit, an execution and a release allocate nothing (docs/loaded-network.md:
 * no heap allocation per execution in steady state). */
Test(dynamic, hit_allocates_nothing) {
    if (!alloc_counter_available()) {
        cr_skip_test("the allocator is replaced by a sanitizer or valgrind");
    }
    plx_runtime *rt = make_runtime();
    plx_dynamic_model *m = open_model(rt, DYNAMIC_BATCH, 2);
    plx_specialization *sp = acquire_batch(m, 4);
    run_relu(sp, 4); /* the first execution allocates working memory */
    plx_dynamic_model_release(m, &sp);
    float x[16] = {0}, y[16];
    plx_model_input_shape s = {.name = "x", .dims = {4, 4}, .rank = 2};
    alloc_counter_start();
    for (int i = 0; i < 100; i++) {
        plx_status st = acquire_shapes(m, &s, 1, &sp);
        if (st) {
            break;
        }
        plx_tensor_binding in = {0, x, sizeof x, 0}, out = {0, y, sizeof y, 0};
        st = plx_loaded_network_execute(plx_specialization_network(sp), &in, 1, &out, 1);
        plx_dynamic_model_release(m, &sp);
        if (st) {
            break;
        }
    }
    size_t allocs = alloc_counter_stop();
    cr_assert(eq(sz, allocs, 0));
    cr_assert(eq(u64, stats_of(m).hits, 100));
    plx_dynamic_model_destroy(&m);

    /* With a probe (branch_on_energy.onnx): it runs on every acquire, and
     * allocates nothing either. */
    m = open_model(rt, ONNX_TEST_DIR "/branch_on_energy.onnx", 4);
    static float loud[2048], z[2048];
    for (int i = 0; i < 2048; i++) {
        loud[i] = (float)(i % 3);
    }
    plx_model_constant_input v = {.name = "x", .info = {.dtype = PLX_DTYPE_FLOAT32, .rank = 1,
                                                        .dims = {2048}}, .data = loud};
    plx_dynamic_signature sig = {NULL, 0, &v, 1};
    for (int i = 0; i < 101; i++) {
        if (i == 1) {
            alloc_counter_start(); /* after the first: probe, branch, working memory */
        }
        plx_status st = plx_dynamic_model_acquire(m, &sig, &sp);
        if (st) {
            break;
        }
        plx_tensor_binding in = {0, loud, sizeof loud, 0}, out = {0, z, sizeof z, 0};
        st = plx_loaded_network_execute(plx_specialization_network(sp), &in, 1, &out, 1);
        plx_dynamic_model_release(m, &sp);
        if (st) {
            break;
        }
    }
    allocs = alloc_counter_stop();
    cr_assert(eq(sz, allocs, 0));
    cr_assert(eq(u64, stats_of(m).hits, 100));
    cr_assert(eq(flt, z[2], 2.0f));
    plx_dynamic_model_destroy(&m);
    plx_runtime_destroy(&rt);
}

/* Threads with different batch sizes share one model whose capacity is
 * smaller than their count: specialisations are made, evicted and made
 * again while others are held. */
Test(dynamic, threads_share_a_model) {
    plx_runtime *rt = make_runtime();
    plx_dynamic_stats s;
    int failures = threads_share_a_model(rt, &s);
    cr_assert(eq(int, failures, 0));
    cr_assert(eq(u64, s.hits + s.misses, THREADS * ITERATIONS));
    cr_assert(le(sz, s.cached, 2));
    plx_runtime_destroy(&rt);
}

#endif /* DYNAMIC_PLAIN */
