/* plexus-bench-async: what concurrency and zero copy buy.
 *
 * (a) Scheduler throughput. A small CNN on cpu_ref, input [1,16,56,56] ->
 *     conv 3x3 16->16 pad 1 -> relu -> conv 3x3 16->16 pad 1 -> relu ->
 *     global average pool -> output, weights seeded constants, loaded with
 *     async_execution. Each repetition creates a scheduler with 1 or 2
 *     workers, warms it up (every working memory allocated), then times
 *     `--requests` submissions until the last completion. Repetitions
 *     alternate 1 and 2 workers; the figures are medians. The ratio
 *     2-worker/1-worker says how well two executions share the machine.
 * (b) Zero copy against copy. input -> relu -> output on a 16 MiB float32
 *     tensor, optimised once with import and export enabled (the caller's
 *     input is imported, relu writes into the caller's output) and once
 *     without (copy in, relu, copy out); synchronous executions, alternating
 *     between the two networks; medians per execution.
 *
 * usage: plexus-bench-async [--json] [--backend-path DIR] [--requests N]
 *                           [--reps N] [--copy-reps N] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <plexus/network.h>

#define CH 16
#define HW 56
#define BIG_ROWS 1024
#define BIG_COLS 4096 /* 1024 x 4096 float32 = 16 MiB */

static const char *prog = "plexus-bench-async";

static void die(plx_status s, const char *what) {
    fprintf(stderr, "%s: %s: %s\n", prog, what, plx_status_get_message(s));
    plx_status_free(s);
    exit(1);
}

#define TRY(expr, what)                                                                     \
    do {                                                                                    \
        plx_status try_ = (expr);                                                           \
        if (try_) {                                                                         \
            die(try_, what);                                                                \
        }                                                                                   \
    } while (0)

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
    qsort(v, n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint32_t rng = 12345u;
static float next_float(void) { /* a seeded LCG in [-0.5, 0.5) */
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / 16777216.0f - 0.5f;
}

static plx_runtime *make_runtime(const char *path) {
    plx_runtime_options ro;
    plx_runtime_options_init(&ro);
    ro.search_paths = &path;
    ro.search_path_count = 1;
    ro.ignore_environment = true;
    ro.skip_default_dir = true;
    plx_runtime *rt;
    TRY(plx_runtime_create(&ro, &rt), "runtime");
    return rt;
}

static plx_loaded_network *optimize_and_load(plx_runtime *rt, plx_network *net, bool import,
                                             bool async) {
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *backends[] = {"cpu_ref"};
    oo.backends = backends;
    oo.backend_count = 1;
    oo.import_enabled = import;
    oo.export_enabled = import;
    plx_optimized_network *on;
    TRY(plx_optimize(rt, net, &oo, &on), "optimize");
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.async_execution = async;
    plx_loaded_network *ln;
    TRY(plx_runtime_load_network(rt, &on, &lo, &ln), "load");
    return ln;
}

/* ------------------------------------------------------------------------ */
/* (a) scheduler throughput                                                   */
/* ------------------------------------------------------------------------ */

static float conv_w[2][CH * CH * 9], conv_b[2][CH];

static plx_network *cnn(void) {
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < CH * CH * 9; i++) {
            conv_w[k][i] = next_float() / 6.0f;
        }
        for (size_t i = 0; i < CH; i++) {
            conv_b[k][i] = next_float() / 10.0f;
        }
    }
    plx_network *n;
    TRY(plx_network_create(&n), "network");
    plx_tensor_info x = {.dtype = PLX_DTYPE_FLOAT32, .rank = 4, .dims = {1, CH, HW, HW}};
    plx_tensor_info w = {.dtype = PLX_DTYPE_FLOAT32, .rank = 4, .dims = {CH, CH, 3, 3}};
    plx_tensor_info b = {.dtype = PLX_DTYPE_FLOAT32, .rank = 1, .dims = {CH}};
    plx_conv_desc conv = PLX_CONV_DESC_INIT;
    conv.pads_begin[0] = conv.pads_begin[1] = conv.pads_end[0] = conv.pads_end[1] = 1;
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_global_pool_desc gap = PLX_GLOBAL_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    plx_layer_id in, w0, b0, c0, r0, w1, b1, c1, r1, g, out;
    TRY(plx_network_add_input(n, "x", 0, &x, &in), "input");
    TRY(plx_network_add_constant(n, "w0", &w, conv_w[0], PLX_CONSTANT_BORROW, &w0), "w0");
    TRY(plx_network_add_constant(n, "b0", &b, conv_b[0], PLX_CONSTANT_BORROW, &b0), "b0");
    TRY(plx_network_add_layer(n, "conv0", PLX_OP_CONV, &conv, 3, 1, &c0), "conv0");
    TRY(plx_network_add_layer(n, "relu0", PLX_OP_ACTIVATION, &relu, 1, 1, &r0), "relu0");
    TRY(plx_network_add_constant(n, "w1", &w, conv_w[1], PLX_CONSTANT_BORROW, &w1), "w1");
    TRY(plx_network_add_constant(n, "b1", &b, conv_b[1], PLX_CONSTANT_BORROW, &b1), "b1");
    TRY(plx_network_add_layer(n, "conv1", PLX_OP_CONV, &conv, 3, 1, &c1), "conv1");
    TRY(plx_network_add_layer(n, "relu1", PLX_OP_ACTIVATION, &relu, 1, 1, &r1), "relu1");
    TRY(plx_network_add_layer(n, "gap", PLX_OP_GLOBAL_POOL, &gap, 1, 1, &g), "gap");
    TRY(plx_network_add_output(n, "y", 0, &out), "output");
    const plx_layer_id edges[][3] = {{in, c0, 0}, {w0, c0, 1}, {b0, c0, 2}, {c0, r0, 0},
                                     {r0, c1, 0}, {w1, c1, 1}, {b1, c1, 2}, {c1, r1, 0},
                                     {r1, g, 0},  {g, out, 0}};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        TRY(plx_network_connect(n, edges[i][0], 0, edges[i][1], edges[i][2]), "connect");
    }
    return n;
}

/* Completions of one batch. */
typedef struct batch {
    pthread_mutex_t lock;
    pthread_cond_t done_cv;
    long done;
    long target;
    long errors;
    char first_error[256];
} batch;

static void on_done(void *user, plx_status status, const plx_execution_timing *timing) {
    (void)timing;
    batch *b = user;
    pthread_mutex_lock(&b->lock);
    if (status && b->errors++ == 0) {
        snprintf(b->first_error, sizeof b->first_error, "%s", plx_status_get_message(status));
    }
    if (++b->done >= b->target) {
        pthread_cond_signal(&b->done_cv);
    }
    pthread_mutex_unlock(&b->lock);
}

/* Submits `count` requests (request i writes outputs[i]) and waits for the
 * last completion; returns the milliseconds from first submit to then. */
static double run_batch(plx_scheduler *s, batch *b, const float *x, float *outputs, long count) {
    pthread_mutex_lock(&b->lock);
    b->done = 0;
    b->target = count;
    pthread_mutex_unlock(&b->lock);
    double t0 = now_ms();
    for (long i = 0; i < count; i++) {
        plx_tensor_binding in = {.binding_id = 0, .data = (void *)x,
                                 .size = CH * HW * HW * sizeof(float)};
        plx_tensor_binding out = {.binding_id = 0, .data = outputs + i * CH,
                                  .size = CH * sizeof(float)};
        plx_execute_args a;
        plx_execute_args_init(&a);
        a.inputs = &in;
        a.input_count = 1;
        a.outputs = &out;
        a.output_count = 1;
        TRY(plx_scheduler_submit(s, &a, PLX_PRIORITY_MEDIUM, on_done, b), "submit");
    }
    pthread_mutex_lock(&b->lock);
    while (b->done < b->target) {
        pthread_cond_wait(&b->done_cv, &b->lock);
    }
    pthread_mutex_unlock(&b->lock);
    double ms = now_ms() - t0;
    if (b->errors) {
        fprintf(stderr, "%s: %ld executions failed, first: %s\n", prog, b->errors,
                b->first_error);
        exit(1);
    }
    return ms;
}

/* One repetition: requests per second with `workers` workers. */
static double throughput(plx_loaded_network *ln, size_t workers, const float *x, float *outputs,
                         long requests) {
    plx_scheduler *s;
    TRY(plx_scheduler_create(ln, workers, &s), "scheduler");
    batch b;
    memset(&b, 0, sizeof b);
    pthread_mutex_init(&b.lock, NULL);
    pthread_cond_init(&b.done_cv, NULL);
    /* Warm-up: enough requests that every worker allocates its memory. */
    run_batch(s, &b, x, outputs, (long)workers * 4);
    double ms = run_batch(s, &b, x, outputs, requests);
    plx_scheduler_destroy(&s);
    pthread_cond_destroy(&b.done_cv);
    pthread_mutex_destroy(&b.lock);
    return (double)requests / (ms / 1e3);
}

/* ------------------------------------------------------------------------ */
/* (b) zero copy against copy                                                 */
/* ------------------------------------------------------------------------ */

static plx_network *big_relu(void) {
    plx_network *n;
    TRY(plx_network_create(&n), "network");
    plx_tensor_info t = {.dtype = PLX_DTYPE_FLOAT32, .rank = 2, .dims = {BIG_ROWS, BIG_COLS}};
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id in, r, out;
    TRY(plx_network_add_input(n, "x", 0, &t, &in), "input");
    TRY(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r), "relu");
    TRY(plx_network_add_output(n, "y", 0, &out), "output");
    TRY(plx_network_connect(n, in, 0, r, 0), "connect");
    TRY(plx_network_connect(n, r, 0, out, 0), "connect");
    return n;
}

static double execute_ms(plx_loaded_network *ln, float *x, float *y, size_t bytes) {
    plx_tensor_binding in = {.binding_id = 0, .data = x, .size = bytes};
    plx_tensor_binding out = {.binding_id = 0, .data = y, .size = bytes};
    double t0 = now_ms();
    TRY(plx_loaded_network_execute(ln, &in, 1, &out, 1), "execute");
    return now_ms() - t0;
}

int main(int argc, char **argv) {
    bool json = false;
    const char *path = BENCH_CPU_REF_DIR;
    long requests = 200, reps = 7, copy_reps = 21;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--backend-path") == 0 && i + 1 < argc) {
            path = argv[++i];
        } else if (strcmp(argv[i], "--requests") == 0 && i + 1 < argc) {
            requests = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--copy-reps") == 0 && i + 1 < argc) {
            copy_reps = strtol(argv[++i], NULL, 10);
        } else {
            fprintf(stderr, "usage: %s [--json] [--backend-path DIR] [--requests N] [--reps N] "
                            "[--copy-reps N]\n", prog);
            return 2;
        }
    }
    if (requests < 1 || reps < 1 || copy_reps < 1) {
        fprintf(stderr, "%s: --requests, --reps and --copy-reps must be >= 1\n", prog);
        return 2;
    }
    plx_runtime *rt = make_runtime(path);

    /* (a) */
    plx_network *net = cnn();
    plx_loaded_network *ln = optimize_and_load(rt, net, false, true);
    plx_network_destroy(&net);
    float *x = malloc(CH * HW * HW * sizeof *x);
    float *outputs = malloc((size_t)(requests > 8 ? requests : 8) * CH * sizeof *outputs);
    double *rps1 = malloc((size_t)reps * sizeof *rps1);
    double *rps2 = malloc((size_t)reps * sizeof *rps2);
    double *ratios = malloc((size_t)reps * sizeof *ratios);
    if (!x || !outputs || !rps1 || !rps2 || !ratios) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return 1;
    }
    for (size_t i = 0; i < CH * HW * HW; i++) {
        x[i] = next_float();
    }
    for (long r = 0; r < reps; r++) {
        /* Alternate which goes first, so that drift favours neither. */
        if (r % 2 == 0) {
            rps1[r] = throughput(ln, 1, x, outputs, requests);
            rps2[r] = throughput(ln, 2, x, outputs, requests);
        } else {
            rps2[r] = throughput(ln, 2, x, outputs, requests);
            rps1[r] = throughput(ln, 1, x, outputs, requests);
        }
        ratios[r] = rps2[r] / rps1[r];
    }
    double ratio_median = median(ratios, (size_t)reps);
    double med1 = median(rps1, (size_t)reps), med2 = median(rps2, (size_t)reps);
    plx_loaded_network_unload(&ln);

    /* (b) */
    const size_t bytes = (size_t)BIG_ROWS * BIG_COLS * sizeof(float);
    net = big_relu();
    plx_loaded_network *zc = optimize_and_load(rt, net, true, false);
    plx_loaded_network *cp = optimize_and_load(rt, net, false, false);
    plx_network_destroy(&net);
    float *bx = NULL, *by = NULL;
    if (posix_memalign((void **)&bx, 64, bytes) || posix_memalign((void **)&by, 64, bytes)) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return 1;
    }
    for (size_t i = 0; i < bytes / sizeof *bx; i++) {
        bx[i] = (float)((int)(i % 17) - 8);
    }
    memset(by, 0, bytes);
    execute_ms(zc, bx, by, bytes); /* first executions allocate */
    execute_ms(cp, bx, by, bytes);
    double *zc_ms = malloc((size_t)copy_reps * sizeof *zc_ms);
    double *cp_ms = malloc((size_t)copy_reps * sizeof *cp_ms);
    double *speedups = malloc((size_t)copy_reps * sizeof *speedups);
    if (!zc_ms || !cp_ms || !speedups) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return 1;
    }
    for (long r = 0; r < copy_reps; r++) {
        if (r % 2 == 0) {
            zc_ms[r] = execute_ms(zc, bx, by, bytes);
            cp_ms[r] = execute_ms(cp, bx, by, bytes);
        } else {
            cp_ms[r] = execute_ms(cp, bx, by, bytes);
            zc_ms[r] = execute_ms(zc, bx, by, bytes);
        }
        speedups[r] = cp_ms[r] / zc_ms[r];
    }
    double speedup = median(speedups, (size_t)copy_reps);
    double zc_med = median(zc_ms, (size_t)copy_reps), cp_med = median(cp_ms, (size_t)copy_reps);
    plx_loaded_network_unload(&zc);
    plx_loaded_network_unload(&cp);

    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (json) {
        printf("{\"cpus\": %ld, \"requests\": %ld, \"reps\": %ld, "
               "\"rps_1_worker\": %.2f, \"rps_2_workers\": %.2f, "
               "\"ratio_2_over_1\": %.3f, "
               "\"tensor_bytes\": %zu, \"copy_reps\": %ld, "
               "\"zero_copy_ms\": %.3f, \"copy_ms\": %.3f, \"copy_over_zero_copy\": %.3f}\n",
               cpus, requests, reps, med1, med2, ratio_median, bytes, copy_reps, zc_med, cp_med,
               speedup);
    } else {
        printf("scheduler throughput, conv network [1,%d,%d,%d] on cpu_ref, %ld requests, "
               "median of %ld alternating repetitions, %ld cpus:\n",
               CH, HW, HW, requests, reps, cpus);
        printf("  1 worker:  %.2f requests/s\n", med1);
        printf("  2 workers: %.2f requests/s\n", med2);
        printf("  ratio 2/1: %.3f (median of the per-repetition ratios)\n", ratio_median);
        printf("zero copy against copy, input -> relu -> output, %zu bytes float32, median of "
               "%ld alternating executions:\n", bytes, copy_reps);
        printf("  import/export enabled:  %.3f ms per execution\n", zc_med);
        printf("  import/export disabled: %.3f ms per execution\n", cp_med);
        printf("  copy / zero copy: %.3f (median of the per-pair ratios)\n", speedup);
    }
    free(x);
    free(outputs);
    free(rps1);
    free(rps2);
    free(ratios);
    free(bx);
    free(by);
    free(zc_ms);
    free(cp_ms);
    free(speedups);
    plx_runtime_destroy(&rt);
    return 0;
}
