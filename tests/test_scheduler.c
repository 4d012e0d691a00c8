/* The execution scheduler (network.h, "Scheduling executions on worker
 * threads"): results, completions, errors, priorities, draining.
 *
 * One source, two programs. By default a Criterion suite (test_scheduler).
 * With -DSCHEDULER_PLAIN it is a plain program (stress_scheduler) running
 * the same scenarios, for ThreadSanitizer builds, where Criterion's runner
 * crashes. So every scenario is a function that checks with CHECK, keeps
 * the first failure, always cleans up (never leaves a worker blocked), and
 * returns NULL or the failure; the Criterion tests assert on that. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <plexus/network.h>

#ifndef SCHEDULER_PLAIN
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#endif

#define N 64
#define SEEDS 16

/* The first failure of the running scenario. */
static char failure[1024];
static bool failed;

static void fail_at(int line, const char *fmt, ...) {
    if (failed) {
        return;
    }
    failed = true;
    int k = snprintf(failure, sizeof failure, "line %d: ", line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(failure + k, sizeof failure - (size_t)k, fmt, ap);
    va_end(ap);
}

/* Checks a condition; on failure records the message and goes on (the
 * scenario still cleans up). */
#define CHECK(cond, ...)                                                                    \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fail_at(__LINE__, __VA_ARGS__);                                                 \
        }                                                                                   \
    } while (0)

/* A setup step that must succeed: otherwise the scenario ends here. */
#define MUST(expr)                                                                          \
    do {                                                                                    \
        plx_status must_ = (expr);                                                          \
        if (must_) {                                                                        \
            fail_at(__LINE__, "%s: %s", #expr, plx_status_get_message(must_));              \
            plx_status_free(must_);                                                         \
            return failure;                                                                 \
        }                                                                                   \
    } while (0)

static const char *result(void) {
    return failed ? failure : NULL;
}

static void begin(void) {
    failed = false;
    failure[0] = '\0';
}

static bool under_valgrind(void) {
    const char *v = getenv("PLEXUS_TEST_VALGRIND");
    return v && *v && strcmp(v, "0") != 0;
}

static void quiet(void *user, plx_log_level level, const char *source, const char *message) {
    (void)user, (void)level, (void)source, (void)message;
}

static plx_runtime *make_runtime(void) {
    plx_runtime_options o;
    plx_runtime_options_init(&o);
    const char *path = CPU_REF_DIR;
    o.search_paths = &path;
    o.search_path_count = 1;
    o.ignore_environment = true;
    o.skip_default_dir = true;
    o.log_fn = quiet;
    plx_runtime *rt = NULL;
    plx_status s = plx_runtime_create(&o, &rt);
    if (s) {
        fail_at(__LINE__, "runtime: %s", plx_status_get_message(s));
        plx_status_free(s);
        return NULL;
    }
    return rt;
}

/* x -> relu -> add(bias) -> sqrt -> mul(scale) -> y, and the add as a
 * second output: intermediate tensors in the working memory, constants
 * shared. */
static plx_status chain(plx_network **out) {
    static float bias[N], scale[N];
    for (int i = 0; i < N; i++) {
        bias[i] = 0.25f * (float)i;
        scale[i] = 1.0f + 0.01f * (float)i;
    }
    plx_network *n;
    plx_status s = plx_network_create(&n);
    if (s) {
        return s;
    }
    plx_tensor_info t = {.dtype = PLX_DTYPE_FLOAT32, .rank = 2, .dims = {1, N}};
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_binary_desc mul = PLX_BINARY_DESC_INIT(PLX_BINARY_MUL);
    plx_unary_desc sq = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    plx_layer_id x, r, b, a, q, c, m, y, y2;
    if ((s = plx_network_add_input(n, "x", 0, &t, &x)) ||
        (s = plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r)) ||
        (s = plx_network_add_constant(n, "bias", &t, bias, PLX_CONSTANT_BORROW, &b)) ||
        (s = plx_network_add_layer(n, "add", PLX_OP_BINARY, &add, 2, 1, &a)) ||
        (s = plx_network_add_layer(n, "sqrt", PLX_OP_UNARY, &sq, 1, 1, &q)) ||
        (s = plx_network_add_constant(n, "scale", &t, scale, PLX_CONSTANT_BORROW, &c)) ||
        (s = plx_network_add_layer(n, "mul", PLX_OP_BINARY, &mul, 2, 1, &m)) ||
        (s = plx_network_add_output(n, "y", 0, &y)) ||
        (s = plx_network_add_output(n, "sum", 1, &y2)) ||
        (s = plx_network_connect(n, x, 0, r, 0)) || (s = plx_network_connect(n, r, 0, a, 0)) ||
        (s = plx_network_connect(n, b, 0, a, 1)) || (s = plx_network_connect(n, a, 0, q, 0)) ||
        (s = plx_network_connect(n, q, 0, m, 0)) || (s = plx_network_connect(n, c, 0, m, 1)) ||
        (s = plx_network_connect(n, m, 0, y, 0)) || (s = plx_network_connect(n, a, 0, y2, 0))) {
        plx_network_destroy(&n);
        return s;
    }
    *out = n;
    return NULL;
}

static plx_status load_chain(plx_runtime *rt, bool async, bool import, plx_loaded_network **out) {
    plx_network *n = NULL;
    plx_status s = chain(&n);
    if (s) {
        return s;
    }
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *b[] = {"cpu_ref"};
    oo.backends = b;
    oo.backend_count = 1;
    oo.import_enabled = import;
    oo.export_enabled = import;
    plx_optimized_network *on = NULL;
    s = plx_optimize(rt, n, &oo, &on);
    plx_network_destroy(&n);
    if (s) {
        return s;
    }
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.async_execution = async;
    return plx_runtime_load_network(rt, &on, &lo, out);
}

static void input_for(float *x, unsigned seed) {
    for (int i = 0; i < N; i++) {
        x[i] = (float)((seed * 31u + (unsigned)i * 7u) % 97u) / 8.0f - 4.0f;
    }
}

static float expected_y[SEEDS][N], expected_s[SEEDS][N];

/* The reference: synchronous executions of a network loaded without
 * async_execution, backend-managed memory, no import. */
static plx_status references(plx_runtime *rt) {
    plx_loaded_network *ln = NULL;
    plx_status s = load_chain(rt, false, false, &ln);
    for (unsigned seed = 0; !s && seed < SEEDS; seed++) {
        float x[N];
        input_for(x, seed);
        plx_tensor_binding in = {.binding_id = 0, .data = x, .size = sizeof x};
        plx_tensor_binding out[] = {{.binding_id = 0, .data = expected_y[seed], .size = N * 4},
                                    {.binding_id = 1, .data = expected_s[seed], .size = N * 4}};
        s = plx_loaded_network_execute(ln, &in, 1, out, 2);
    }
    plx_loaded_network_unload(&ln);
    return s;
}

/* Blocks the worker that runs a request, inside its completion callback,
 * until the test opens it. */
typedef struct gate {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool entered;
    bool open;
} gate;

static void gate_init(gate *g) {
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->changed, NULL);
    g->entered = false;
    g->open = false;
}

static void gate_fini(gate *g) {
    pthread_cond_destroy(&g->changed);
    pthread_mutex_destroy(&g->lock);
}

static void gate_wait_entered(gate *g) {
    pthread_mutex_lock(&g->lock);
    while (!g->entered) {
        pthread_cond_wait(&g->changed, &g->lock);
    }
    pthread_mutex_unlock(&g->lock);
}

static void gate_open(gate *g) {
    pthread_mutex_lock(&g->lock);
    g->open = true;
    pthread_cond_broadcast(&g->changed);
    pthread_mutex_unlock(&g->lock);
}

/* The order in which completions arrive (with one worker, the order in
 * which requests were taken). */
typedef struct service_log {
    pthread_mutex_t lock;
    pthread_cond_t grew;
    char tags[512];
    int indices[512];
    int count;
} service_log;

/* Waits until the log holds `count` entries, or 60 s; false on timeout. */
static bool log_wait(service_log *l, int count) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 60;
    bool ok = true;
    pthread_mutex_lock(&l->lock);
    while (ok && l->count < count) {
        ok = pthread_cond_timedwait(&l->grew, &l->lock, &deadline) == 0 || l->count >= count;
    }
    pthread_mutex_unlock(&l->lock);
    return ok;
}

struct job;

/* High requests whose completions submit further highs, so that the high
 * queue never runs dry. */
typedef struct flood {
    plx_scheduler *scheduler;
    struct job *highs;
    int limit;
    atomic_int submitted;
    atomic_int refused;
} flood;

/* Extra requests a gate's callback submits until the scheduler refuses. */
typedef struct poller {
    plx_scheduler *scheduler;
    struct job *extras;
    int capacity;
    int submitted; /* written by the callback, read after destroy */
    char refusal[256];
} poller;

typedef struct job {
    float x[N], y[N], s[N];
    plx_tensor_binding in;
    plx_tensor_binding out[2];
    plx_execute_args args;
    unsigned seed;
    atomic_int calls;
    bool ok;
    char message[256];
    plx_execution_timing timing;
    char tag;
    int index;
    service_log *log;
    gate *gate;
    flood *flood;
    poller *poller;
} job;

static void job_init(job *j, unsigned seed) {
    memset(j, 0, sizeof *j);
    j->seed = seed % SEEDS;
    input_for(j->x, j->seed);
    memset(j->y, 0xff, sizeof j->y);
    memset(j->s, 0xff, sizeof j->s);
    j->in = (plx_tensor_binding){.binding_id = 0, .data = j->x, .size = sizeof j->x};
    j->out[0] = (plx_tensor_binding){.binding_id = 0, .data = j->y, .size = sizeof j->y};
    j->out[1] = (plx_tensor_binding){.binding_id = 1, .data = j->s, .size = sizeof j->s};
    plx_execute_args_init(&j->args);
    j->args.inputs = &j->in;
    j->args.input_count = 1;
    j->args.outputs = j->out;
    j->args.output_count = 2;
    atomic_init(&j->calls, 0);
}

static void job_done(void *user, plx_status status, const plx_execution_timing *timing) {
    job *j = user;
    atomic_fetch_add(&j->calls, 1);
    j->ok = status == NULL;
    snprintf(j->message, sizeof j->message, "%s", status ? plx_status_get_message(status) : "");
    j->timing = *timing;
    if (j->log) {
        service_log *l = j->log;
        pthread_mutex_lock(&l->lock);
        if (l->count < (int)sizeof l->tags - 1) {
            l->tags[l->count] = j->tag;
            l->indices[l->count] = j->index;
            l->count++;
        }
        pthread_cond_broadcast(&l->grew);
        pthread_mutex_unlock(&l->lock);
    }
    if (j->flood) {
        flood *f = j->flood;
        int k = atomic_fetch_add(&f->submitted, 1);
        if (k < f->limit) {
            plx_status s = plx_scheduler_submit(f->scheduler, &f->highs[k].args,
                                                PLX_PRIORITY_HIGH, job_done, &f->highs[k]);
            if (s) {
                atomic_fetch_add(&f->refused, 1);
                plx_status_free(s);
            }
        }
    }
    if (j->gate) {
        gate *g = j->gate;
        pthread_mutex_lock(&g->lock);
        g->entered = true;
        pthread_cond_broadcast(&g->changed);
        while (!g->open) {
            pthread_cond_wait(&g->changed, &g->lock);
        }
        pthread_mutex_unlock(&g->lock);
    }
    if (j->poller) {
        /* Submits until destroy has begun and submit says so. */
        poller *p = j->poller;
        while (p->submitted < p->capacity) {
            job *e = &p->extras[p->submitted];
            plx_status s = plx_scheduler_submit(p->scheduler, &e->args, PLX_PRIORITY_LOW,
                                                job_done, e);
            if (s) {
                snprintf(p->refusal, sizeof p->refusal, "%s", plx_status_get_message(s));
                plx_status_free(s);
                break;
            }
            p->submitted++;
            nanosleep(&(struct timespec){0, 1000000}, NULL);
        }
    }
}

/* A finished job: called once, succeeded, bytes as the reference, timings
 * non-negative. */
static void check_job(const job *j, const char *what, int i) {
    int calls = atomic_load(&j->calls);
    CHECK(calls == 1, "%s %d: completion called %d times", what, i, calls);
    CHECK(j->ok, "%s %d: %s", what, i, j->message);
    CHECK(memcmp(j->y, expected_y[j->seed], sizeof j->y) == 0 &&
              memcmp(j->s, expected_s[j->seed], sizeof j->s) == 0,
          "%s %d: result differs from the synchronous execution", what, i);
    CHECK(j->timing.queued_ms >= 0 && j->timing.run_ms >= 0, "%s %d: timing %f %f", what, i,
          j->timing.queued_ms, j->timing.run_ms);
}

/* ------------------------------------------------------------------------ */
/* Scenarios                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct submitter {
    plx_scheduler *scheduler;
    job *jobs;
    int count;
    int errors;
} submitter;

static void *submit_all(void *arg) {
    submitter *t = arg;
    for (int i = 0; i < t->count; i++) {
        plx_status s = plx_scheduler_submit(t->scheduler, &t->jobs[i].args,
                                            (plx_priority)(i % 3), job_done, &t->jobs[i]);
        if (s) {
            t->errors++;
            plx_status_free(s);
        }
    }
    return NULL;
}

/* Several threads submit many requests at every priority to `workers`
 * workers; every result equals the synchronous one. */
static const char *many_from_threads(size_t workers, bool import) {
    begin();
    plx_runtime *rt = make_runtime();
    if (!rt) {
        return result();
    }
    MUST(references(rt));
    plx_loaded_network *ln = NULL;
    MUST(load_chain(rt, true, import, &ln));
    plx_scheduler *sch = NULL;
    MUST(plx_scheduler_create(ln, workers, &sch));
    enum { THREADS = 4 };
    int per_thread = under_valgrind() ? 20 : 250;
    job *jobs = calloc((size_t)(THREADS * per_thread), sizeof *jobs);
    CHECK(jobs != NULL, "out of memory");
    submitter t[THREADS];
    pthread_t th[THREADS];
    for (int k = 0; jobs && k < THREADS; k++) {
        for (int i = 0; i < per_thread; i++) {
            job_init(&jobs[k * per_thread + i], (unsigned)(k * 5 + i));
        }
        t[k] = (submitter){sch, jobs + k * per_thread, per_thread, 0};
        pthread_create(&th[k], NULL, submit_all, &t[k]);
    }
    for (int k = 0; jobs && k < THREADS; k++) {
        pthread_join(th[k], NULL);
        CHECK(t[k].errors == 0, "thread %d: %d submissions refused", k, t[k].errors);
    }
    plx_scheduler_destroy(&sch);
    CHECK(sch == NULL, "destroy left the pointer set");
    for (int i = 0; jobs && i < THREADS * per_thread; i++) {
        check_job(&jobs[i], "request", i);
    }
    free(jobs);
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
    return result();
}

/* Execution errors come through the callback with the execution's own
 * message; argument errors of submit come back at once, and nothing is
 * queued. */
static const char *errors(void) {
    begin();
    plx_runtime *rt = make_runtime();
    if (!rt) {
        return result();
    }
    MUST(references(rt));
    plx_loaded_network *ln = NULL;
    MUST(load_chain(rt, true, false, &ln));
    plx_scheduler *sch = NULL;
    MUST(plx_scheduler_create(ln, 2, &sch));

    static job bad_id, bad_size, good;
    job_init(&bad_id, 1);
    bad_id.in.binding_id = 7;
    job_init(&bad_size, 2);
    bad_size.out[1].size = 3;
    job_init(&good, 3);
    /* What the execution itself says (the network's own working memory). */
    char want_id[256], want_size[256];
    plx_status s = plx_loaded_network_execute_with(ln, NULL, &bad_id.args);
    CHECK(s != NULL, "the wrong binding id ran");
    snprintf(want_id, sizeof want_id, "%s", plx_status_get_message(s));
    plx_status_free(s);
    s = plx_loaded_network_execute_with(ln, NULL, &bad_size.args);
    CHECK(s != NULL, "the wrong size ran");
    snprintf(want_size, sizeof want_size, "%s", plx_status_get_message(s));
    plx_status_free(s);
    CHECK(strstr(want_id, "input binding id 7 is not one of the network's inputs") != NULL,
          "unexpected message '%s'", want_id);

    s = plx_scheduler_submit(sch, &bad_id.args, PLX_PRIORITY_HIGH, job_done, &bad_id);
    CHECK(s == NULL, "submit: %s", plx_status_get_message(s));
    plx_status_free(s);
    s = plx_scheduler_submit(sch, &bad_size.args, PLX_PRIORITY_LOW, job_done, &bad_size);
    CHECK(s == NULL, "submit: %s", plx_status_get_message(s));
    plx_status_free(s);
    s = plx_scheduler_submit(sch, &good.args, PLX_PRIORITY_MEDIUM, job_done, &good);
    CHECK(s == NULL, "submit: %s", plx_status_get_message(s));
    plx_status_free(s);

    /* Refused at submit. */
    static job unused;
    job_init(&unused, 4);
    struct {
        plx_scheduler *sch;
        const plx_execute_args *args;
        int priority;
        const char *needle;
    } refusals[] = {
        {NULL, &unused.args, PLX_PRIORITY_HIGH, "scheduler is NULL"},
        {sch, NULL, PLX_PRIORITY_HIGH, "execute args are NULL or too small"},
        {sch, &unused.args, 3, "priority 3 is not a plx_priority"},
        {sch, &unused.args, -1, "priority -1 is not a plx_priority"},
    };
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        s = plx_scheduler_submit(refusals[i].sch, refusals[i].args,
                                 (plx_priority)refusals[i].priority, job_done, &unused);
        CHECK(s != NULL && strstr(plx_status_get_message(s), refusals[i].needle),
              "refusal %zu: got '%s', expected '%s'", i, plx_status_get_message(s),
              refusals[i].needle);
        CHECK(plx_status_get_code(s) == PLX_INVALID_ARGUMENT, "refusal %zu: code %d", i,
              (int)plx_status_get_code(s));
        plx_status_free(s);
    }
    plx_execute_args small = unused.args;
    small.struct_size = 8;
    s = plx_scheduler_submit(sch, &small, PLX_PRIORITY_LOW, job_done, &unused);
    CHECK(s != NULL && strstr(plx_status_get_message(s), "too small"), "small args: '%s'",
          plx_status_get_message(s));
    plx_status_free(s);
    plx_execute_args null_array = unused.args;
    null_array.outputs = NULL;
    s = plx_scheduler_submit(sch, &null_array, PLX_PRIORITY_LOW, job_done, &unused);
    CHECK(s != NULL && strstr(plx_status_get_message(s), "outputs NULL with a count of 2"),
          "NULL outputs: '%s'", plx_status_get_message(s));
    plx_status_free(s);

    plx_scheduler_destroy(&sch);
    plx_scheduler_destroy(&sch); /* NULL: ignored */
    plx_scheduler_destroy(NULL);
    CHECK(atomic_load(&bad_id.calls) == 1 && !bad_id.ok, "bad id: %d calls, ok %d",
          atomic_load(&bad_id.calls), bad_id.ok);
    CHECK(strcmp(bad_id.message, want_id) == 0, "bad id: '%s' instead of '%s'", bad_id.message,
          want_id);
    CHECK(atomic_load(&bad_size.calls) == 1 && !bad_size.ok, "bad size: %d calls",
          atomic_load(&bad_size.calls));
    CHECK(strcmp(bad_size.message, want_size) == 0, "bad size: '%s' instead of '%s'",
          bad_size.message, want_size);
    CHECK(bad_id.timing.queued_ms >= 0 && bad_id.timing.run_ms >= 0, "timing of a failure");
    check_job(&good, "good request after failures", 0);
    CHECK(atomic_load(&unused.calls) == 0, "a refused request was called back");
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
    return result();
}

/* With one worker held by a request, lows, mediums and highs queue; once
 * released, they are taken by the weighted round-robin (4 high, 2 medium,
 * 1 low, empty turns skipped), FIFO within a priority. */
static const char *priority_order(void) {
    begin();
    plx_runtime *rt = make_runtime();
    if (!rt) {
        return result();
    }
    MUST(references(rt));
    plx_loaded_network *ln = NULL;
    MUST(load_chain(rt, true, true, &ln));
    plx_scheduler *sch = NULL;
    MUST(plx_scheduler_create(ln, 1, &sch));
    static gate g;
    gate_init(&g);
    static service_log log;
    memset(&log, 0, sizeof log);
    pthread_mutex_init(&log.lock, NULL);
    pthread_cond_init(&log.grew, NULL);
    static job blocker, jobs[16];
    job_init(&blocker, 0);
    blocker.gate = &g;
    plx_status s = plx_scheduler_submit(sch, &blocker.args, PLX_PRIORITY_LOW, job_done, &blocker);
    CHECK(s == NULL, "blocker: %s", plx_status_get_message(s));
    plx_status_free(s);
    if (!s) {
        gate_wait_entered(&g);
    }
    /* Submitted lows first, then mediums, then highs. */
    const char *submitted = "LLLMMMHHHHHHHHHH";
    int counts[3] = {0, 0, 0};
    for (int i = 0; i < 16; i++) {
        char tag = submitted[i];
        int p = tag == 'H' ? 0 : tag == 'M' ? 1 : 2;
        job_init(&jobs[i], (unsigned)i);
        jobs[i].tag = tag;
        jobs[i].index = counts[p]++;
        jobs[i].log = &log;
        s = plx_scheduler_submit(sch, &jobs[i].args, (plx_priority)p, job_done, &jobs[i]);
        CHECK(s == NULL, "submit %d: %s", i, plx_status_get_message(s));
        plx_status_free(s);
    }
    gate_open(&g);
    plx_scheduler_destroy(&sch);
    log.tags[log.count] = '\0';
    /* HHHH MM L | HHHH M (M empty) L | HH (H, H, M, M empty) L */
    CHECK(strcmp(log.tags, "HHHHMMLHHHHMLHHL") == 0, "service order %s", log.tags);
    int next[128] = {0};
    for (int i = 0; i < log.count; i++) {
        unsigned char t = (unsigned char)log.tags[i];
        CHECK(log.indices[i] == next[t], "not FIFO within %c: %d served before %d", t,
              log.indices[i], next[t]);
        next[t] = log.indices[i] + 1;
    }
    check_job(&blocker, "blocker", 0);
    for (int i = 0; i < 16; i++) {
        check_job(&jobs[i], "queued", i);
        CHECK(jobs[i].timing.queued_ms >= 0, "queued_ms");
    }
    pthread_cond_destroy(&log.grew);
    pthread_mutex_destroy(&log.lock);
    gate_fini(&g);
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
    return result();
}

/* Highs keep coming (each high's completion submits another), yet the two
 * lows are served after 4 highs each, not after the flood. */
static const char *no_starvation(void) {
    begin();
    plx_runtime *rt = make_runtime();
    if (!rt) {
        return result();
    }
    MUST(references(rt));
    plx_loaded_network *ln = NULL;
    MUST(load_chain(rt, true, false, &ln));
    plx_scheduler *sch = NULL;
    MUST(plx_scheduler_create(ln, 1, &sch));
    enum { HIGHS = 60 };
    static gate g;
    gate_init(&g);
    static service_log log;
    memset(&log, 0, sizeof log);
    pthread_mutex_init(&log.lock, NULL);
    pthread_cond_init(&log.grew, NULL);
    static job blocker, highs[HIGHS], lows[2];
    static flood f;
    f.scheduler = sch;
    f.highs = highs;
    f.limit = HIGHS;
    atomic_init(&f.submitted, 4);
    atomic_init(&f.refused, 0);
    for (int i = 0; i < HIGHS; i++) {
        job_init(&highs[i], (unsigned)i);
        highs[i].tag = 'H';
        highs[i].index = i;
        highs[i].log = &log;
        highs[i].flood = &f;
    }
    job_init(&blocker, 0);
    blocker.gate = &g;
    plx_status s = plx_scheduler_submit(sch, &blocker.args, PLX_PRIORITY_HIGH, job_done,
                                        &blocker);
    CHECK(s == NULL, "blocker: %s", plx_status_get_message(s));
    plx_status_free(s);
    if (!s) {
        gate_wait_entered(&g);
    }
    for (int i = 0; i < 4; i++) {
        s = plx_scheduler_submit(sch, &highs[i].args, PLX_PRIORITY_HIGH, job_done, &highs[i]);
        CHECK(s == NULL, "high %d: %s", i, plx_status_get_message(s));
        plx_status_free(s);
    }
    for (int i = 0; i < 2; i++) {
        job_init(&lows[i], (unsigned)(100 + i));
        lows[i].tag = 'L';
        lows[i].index = i;
        lows[i].log = &log;
        s = plx_scheduler_submit(sch, &lows[i].args, PLX_PRIORITY_LOW, job_done, &lows[i]);
        CHECK(s == NULL, "low %d: %s", i, plx_status_get_message(s));
        plx_status_free(s);
    }
    gate_open(&g);
    /* Destroy refuses the callbacks' submissions: wait for the flood first. */
    CHECK(log_wait(&log, HIGHS + 2), "the flood did not finish in 60 s");
    plx_scheduler_destroy(&sch);
    log.tags[log.count] = '\0';
    char want[HIGHS + 3];
    memset(want, 'H', sizeof want);
    want[4] = 'L';
    want[9] = 'L';
    want[HIGHS + 2] = '\0';
    CHECK(strcmp(log.tags, want) == 0, "service order %s", log.tags);
    CHECK(atomic_load(&f.refused) == 0, "%d resubmissions refused", atomic_load(&f.refused));
    for (int i = 0; i < HIGHS; i++) {
        check_job(&highs[i], "high", i);
    }
    check_job(&lows[0], "low", 0);
    check_job(&lows[1], "low", 1);
    pthread_cond_destroy(&log.grew);
    pthread_mutex_destroy(&log.lock);
    gate_fini(&g);
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
    return result();
}

/* Destroy runs everything queued before it returns; submissions made while
 * it drains (from a callback) are refused. */
static const char *destroy_drains(void) {
    begin();
    plx_runtime *rt = make_runtime();
    if (!rt) {
        return result();
    }
    MUST(references(rt));
    plx_loaded_network *ln = NULL;
    MUST(load_chain(rt, true, false, &ln));
    plx_scheduler *sch = NULL;
    MUST(plx_scheduler_create(ln, 1, &sch));
    enum { QUEUED = 50, EXTRAS = 2000 };
    static gate g;
    gate_init(&g);
    static job blocker, jobs[QUEUED];
    job *extras = calloc(EXTRAS, sizeof *extras);
    CHECK(extras != NULL, "out of memory");
    static poller p;
    memset(&p, 0, sizeof p);
    p.scheduler = sch;
    p.extras = extras;
    p.capacity = extras ? EXTRAS : 0;
    for (int i = 0; i < p.capacity; i++) {
        job_init(&extras[i], (unsigned)i);
    }
    job_init(&blocker, 0);
    blocker.gate = &g;
    blocker.poller = &p;
    plx_status s = plx_scheduler_submit(sch, &blocker.args, PLX_PRIORITY_MEDIUM, job_done,
                                        &blocker);
    CHECK(s == NULL, "blocker: %s", plx_status_get_message(s));
    plx_status_free(s);
    if (!s) {
        gate_wait_entered(&g);
    }
    for (int i = 0; i < QUEUED; i++) {
        job_init(&jobs[i], (unsigned)i);
        s = plx_scheduler_submit(sch, &jobs[i].args, (plx_priority)(i % 3), job_done, &jobs[i]);
        CHECK(s == NULL, "submit %d: %s", i, plx_status_get_message(s));
        plx_status_free(s);
    }
    gate_open(&g);
    plx_scheduler_destroy(&sch);
    /* Everything queued ran, before destroy returned. */
    check_job(&blocker, "blocker", 0);
    for (int i = 0; i < QUEUED; i++) {
        check_job(&jobs[i], "queued", i);
    }
    for (int i = 0; i < p.submitted; i++) {
        check_job(&extras[i], "submitted before destroy", i);
    }
    for (int i = p.submitted; i < p.capacity; i++) {
        CHECK(atomic_load(&extras[i].calls) == 0, "a refused request ran");
    }
    CHECK(strstr(p.refusal, "shut down") != NULL, "no refusal while draining: '%s' after %d",
          p.refusal, p.submitted);
    free(extras);
    gate_fini(&g);
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
    return result();
}

/* Pre-imported inputs through the scheduler: the ids array is copied. */
static const char *preimported(void) {
    begin();
    plx_runtime *rt = make_runtime();
    if (!rt) {
        return result();
    }
    MUST(references(rt));
    plx_loaded_network *ln = NULL;
    MUST(load_chain(rt, true, true, &ln));
    plx_scheduler *sch = NULL;
    MUST(plx_scheduler_create(ln, 2, &sch));
    static job jobs[8];
    uint32_t ids[8], scratch[8];
    for (int i = 0; i < 8; i++) {
        job_init(&jobs[i], (unsigned)(i + 3));
        plx_status s = plx_loaded_network_import_inputs(ln, &jobs[i].in, 1, &ids[i]);
        CHECK(s == NULL, "import %d: %s", i, plx_status_get_message(s));
        plx_status_free(s);
        scratch[i] = ids[i]; /* the scheduler must copy it: overwritten below */
        jobs[i].args.inputs = NULL;
        jobs[i].args.input_count = 0;
        jobs[i].args.preimported_inputs = &scratch[i];
        jobs[i].args.preimported_input_count = 1;
        s = plx_scheduler_submit(sch, &jobs[i].args, PLX_PRIORITY_MEDIUM, job_done, &jobs[i]);
        CHECK(s == NULL, "submit %d: %s", i, plx_status_get_message(s));
        plx_status_free(s);
        scratch[i] = UINT32_MAX;
    }
    plx_scheduler_destroy(&sch);
    for (int i = 0; i < 8; i++) {
        check_job(&jobs[i], "pre-imported", i);
    }
    plx_status s = plx_loaded_network_clear_imported_inputs(ln, ids, 8);
    CHECK(s == NULL, "clear: %s", plx_status_get_message(s));
    plx_status_free(s);
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
    return result();
}

/* A network loaded without async_execution has no working memories to
 * give: create fails, naming the option. Bad arguments fail too. */
static const char *create_errors(void) {
    begin();
    plx_runtime *rt = make_runtime();
    if (!rt) {
        return result();
    }
    plx_loaded_network *ln = NULL;
    MUST(load_chain(rt, false, false, &ln));
    static char dummy;
    plx_scheduler *const sentinel = (plx_scheduler *)(void *)&dummy;
    plx_scheduler *sch = sentinel; /* untouched on failure */
    plx_status s = plx_scheduler_create(ln, 2, &sch);
    CHECK(s != NULL && strstr(plx_status_get_message(s), "async_execution") &&
              strstr(plx_status_get_message(s), "was not loaded for asynchronous execution"),
          "create on a synchronous network: '%s'", plx_status_get_message(s));
    CHECK(plx_status_get_code(s) == PLX_FAILED_PRECONDITION, "code %d",
          (int)plx_status_get_code(s));
    CHECK(sch == sentinel, "out_scheduler written on failure");
    plx_status_free(s);
    plx_loaded_network_unload(&ln);
    MUST(load_chain(rt, true, false, &ln));
    s = plx_scheduler_create(ln, 0, &sch);
    CHECK(s != NULL && strstr(plx_status_get_message(s), "worker_count 0"), "0 workers: '%s'",
          plx_status_get_message(s));
    plx_status_free(s);
    s = plx_scheduler_create(NULL, 1, &sch);
    CHECK(s != NULL && strstr(plx_status_get_message(s), "loaded network is NULL"),
          "NULL network: '%s'", plx_status_get_message(s));
    plx_status_free(s);
    s = plx_scheduler_create(ln, 1, NULL);
    CHECK(s != NULL, "NULL out accepted");
    plx_status_free(s);
    /* Created and destroyed with nothing submitted. */
    sch = NULL;
    s = plx_scheduler_create(ln, 3, &sch);
    CHECK(s == NULL && sch != NULL, "create: %s", plx_status_get_message(s));
    plx_status_free(s);
    plx_scheduler_destroy(&sch);
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
    return result();
}

/* ------------------------------------------------------------------------ */
/* The two programs                                                           */
/* ------------------------------------------------------------------------ */

#ifdef SCHEDULER_PLAIN

int main(void) {
    struct {
        const char *name;
        const char *(*fn)(void);
    } plain[] = {
        {"errors", errors},
        {"priority_order", priority_order},
        {"no_starvation", no_starvation},
        {"destroy_drains", destroy_drains},
        {"preimported", preimported},
        {"create_errors", create_errors},
    };
    int bad = 0;
    for (int import = 0; import < 2; import++) {
        for (size_t workers = 1; workers <= 3; workers += 2) {
            const char *f = many_from_threads(workers, import);
            printf("%s many_from_threads(workers %zu, import %d)%s%s\n", f ? "FAIL" : "ok",
                   workers, import, f ? ": " : "", f ? f : "");
            bad += f != NULL;
        }
    }
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        const char *f = plain[i].fn();
        printf("%s %s%s%s\n", f ? "FAIL" : "ok", plain[i].name, f ? ": " : "", f ? f : "");
        bad += f != NULL;
    }
    return bad ? 1 : 0;
}

#else

#define SCENARIO(call)                                                                      \
    do {                                                                                    \
        const char *f_ = (call);                                                            \
        cr_assert(zero(ptr, (void *)f_), "%s", f_ ? f_ : "");                               \
    } while (0)

Test(scheduler, results_match_sync_one_worker, .timeout = 120) {
    SCENARIO(many_from_threads(1, false));
}

Test(scheduler, results_match_sync_two_workers, .timeout = 120) {
    SCENARIO(many_from_threads(2, false));
}

Test(scheduler, results_match_sync_three_workers_zero_copy, .timeout = 120) {
    SCENARIO(many_from_threads(3, true));
}

Test(scheduler, errors_come_through_the_callback) {
    SCENARIO(errors());
}

Test(scheduler, priority_order_is_weighted_round_robin) {
    SCENARIO(priority_order());
}

Test(scheduler, lows_are_not_starved_by_highs) {
    SCENARIO(no_starvation());
}

Test(scheduler, destroy_drains_the_queue, .timeout = 60) {
    SCENARIO(destroy_drains());
}

Test(scheduler, preimported_inputs) {
    SCENARIO(preimported());
}

Test(scheduler, create_needs_async_execution) {
    SCENARIO(create_errors());
}

/* The public enum's values are the documented ones. */
Test(scheduler, priority_values) {
    cr_assert(eq(int, PLX_PRIORITY_HIGH, 0));
    cr_assert(eq(int, PLX_PRIORITY_MEDIUM, 1));
    cr_assert(eq(int, PLX_PRIORITY_LOW, 2));
}

#endif
