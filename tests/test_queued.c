/* Queued execution and backends' profiling events, through
 * the test-only backend tests/queuedev/queuedev_backend.c: its builds
 * queuedev and queuedev_b run relu and add on a worker thread per queue,
 * after a delay (option delay_us), so that a host that reads a tensor
 * before waiting for the fence reads stale bytes; cpu_ref runs the
 * synchronous layers (neg, which queuedev refuses). Layers named "...@queuedev_b"
 * go to queuedev_b. What the host does is seen through the public API only:
 * results, plx_loaded_network_wait_count, errors, the trace. */
#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <json-c/json.h>
#include <plexus/backend.h>
#include <plexus/network.h>

#include "test_util.h"

#define N 16
/* Long enough that a host that does not wait reads stale data. */
#define DELAY_US "10000"

/* Backend options for one runtime: NULL leaves an option out. */
typedef struct qd_config {
    const char *domain_a; /* queuedev's fence_domain */
    const char *domain_b; /* queuedev_b's */
    const char *delay_a;  /* queuedev's delay_us */
    const char *delay_b;  /* queuedev_b's */
} qd_config;

static plx_runtime *runtime_with(qd_config c) {
    plx_runtime_options o;
    tu_options(&o);
    const char *paths[] = {CPU_REF_DIR, QUEUEDEV_MODULE, QUEUEDEV_B_MODULE};
    o.search_paths = paths;
    o.search_path_count = 3;
    plx_backend_option opts[4];
    size_t n = 0;
    if (c.domain_a) {
        opts[n++] = (plx_backend_option){"queuedev", "domain", c.domain_a};
    }
    if (c.domain_b) {
        opts[n++] = (plx_backend_option){"queuedev_b", "domain", c.domain_b};
    }
    if (c.delay_a) {
        opts[n++] = (plx_backend_option){"queuedev", "delay_us", c.delay_a};
    }
    if (c.delay_b) {
        opts[n++] = (plx_backend_option){"queuedev_b", "delay_us", c.delay_b};
    }
    o.backend_options = opts;
    o.backend_option_count = n;
    plx_runtime *rt = tu_create(&o);
    cr_assert(not(zero(ptr, (void *)plx_runtime_find_backend(rt, "queuedev"))), "%s",
              tu_dump(rt));
    cr_assert(not(zero(ptr, (void *)plx_runtime_find_backend(rt, "queuedev_b"))), "%s",
              tu_dump(rt));
    return rt;
}

/* One layer of a chain network: each reads the previous one's output (the
 * network input for the first); the last feeds output 0. */
typedef enum step_op {
    ADD_BIAS, /* add(previous, a constant bias) */
    DOUBLE,   /* add(previous, previous) */
    RELU,
    NEG /* unary neg: cpu_ref only */
} step_op;

typedef struct step {
    const char *name;
    step_op op;
} step;

static float bias[N];

static plx_tensor_info vec(void) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = PLX_DTYPE_FLOAT32;
    t.rank = 2;
    t.dims[0] = 1;
    t.dims[1] = N;
    return t;
}

static plx_network *chain_net(const step *steps, size_t count) {
    for (int i = 0; i < N; i++) {
        bias[i] = 0.25f * (float)(i % 5) - 0.5f;
    }
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec();
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_unary_desc neg = PLX_UNARY_DESC_INIT(PLX_UNARY_NEG);
    plx_layer_id prev, l, out;
    OK(plx_network_add_input(n, "x", 0, &t, &prev));
    for (size_t i = 0; i < count; i++) {
        switch (steps[i].op) {
        case ADD_BIAS: {
            char name[80];
            snprintf(name, sizeof name, "bias_%s", steps[i].name);
            /* Constants go to their consumer's backend: keep the marker. */
            const char *at = strchr(steps[i].name, '@');
            if (at) {
                snprintf(name, sizeof name, "bias_%.*s%s", (int)(at - steps[i].name),
                         steps[i].name, at);
            }
            plx_layer_id c;
            OK(plx_network_add_constant(n, name, &t, bias, PLX_CONSTANT_BORROW, &c));
            OK(plx_network_add_layer(n, steps[i].name, PLX_OP_BINARY, &add, 2, 1, &l));
            OK(plx_network_connect(n, prev, 0, l, 0));
            OK(plx_network_connect(n, c, 0, l, 1));
            break;
        }
        case DOUBLE:
            OK(plx_network_add_layer(n, steps[i].name, PLX_OP_BINARY, &add, 2, 1, &l));
            OK(plx_network_connect(n, prev, 0, l, 0));
            OK(plx_network_connect(n, prev, 0, l, 1));
            break;
        case RELU:
            OK(plx_network_add_layer(n, steps[i].name, PLX_OP_ACTIVATION, &relu, 1, 1, &l));
            OK(plx_network_connect(n, prev, 0, l, 0));
            break;
        case NEG:
            OK(plx_network_add_layer(n, steps[i].name, PLX_OP_UNARY, &neg, 1, 1, &l));
            OK(plx_network_connect(n, prev, 0, l, 0));
            break;
        }
        prev = l;
    }
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, prev, 0, out, 0));
    return n;
}

/* What the chain computes, after `upto` steps (all of them: count). */
static void reference(const step *steps, size_t upto, const float *x, float *y) {
    memcpy(y, x, N * sizeof *y);
    for (size_t s = 0; s < upto; s++) {
        for (int i = 0; i < N; i++) {
            switch (steps[s].op) {
            case ADD_BIAS:
                y[i] += bias[i];
                break;
            case DOUBLE:
                y[i] += y[i];
                break;
            case RELU:
                y[i] = y[i] > 0 ? y[i] : 0.0f;
                break;
            case NEG:
                y[i] = -y[i];
                break;
            }
        }
    }
}

/* Equal as floats (0 and -0 alike). */
static bool same_floats(const float *a, const float *b) {
    for (int i = 0; i < N; i++) {
        if (!(a[i] == b[i])) {
            return false;
        }
    }
    return true;
}

/* The chain optimised over queuedev, queuedev_b, cpu_ref (in that order of
 * preference), and loaded. The backend of every layer is checked against
 * `expect` (one id per step). */
static plx_loaded_network *load_chain(plx_runtime *rt, const step *steps, size_t count,
                                      const char *const *expect, bool import, bool async) {
    plx_network *n = chain_net(steps, count);
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *b[] = {"queuedev", "queuedev_b", "cpu_ref"};
    oo.backends = b;
    oo.backend_count = 3;
    oo.import_enabled = import;
    oo.export_enabled = import;
    oo.graph_rewrites = false;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    plx_network_destroy(&n);
    for (size_t s = 0; s < count; s++) {
        bool found = false;
        for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
            const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
            if (strcmp(a->layer_name, steps[s].name) == 0) {
                found = true;
                cr_assert(eq(str, (char *)a->backend_id, (char *)expect[s]), "layer %s",
                          steps[s].name);
            }
        }
        cr_assert(found, "layer %s is not in the optimised network", steps[s].name);
    }
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.async_execution = async;
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, &lo, &ln));
    return ln;
}

/* Different inputs per seed, several of each sign, so that stale outputs
 * of an earlier execution (or zeroed memory) never pass for new ones. */
static void input_for(float *x, unsigned seed) {
    for (int i = 0; i < N; i++) {
        x[i] = (float)((seed * 7u + (unsigned)i * 3u) % 23u) * 0.5f - 5.0f + (float)seed;
    }
}

static plx_status run(plx_loaded_network *ln, plx_working_memory *wm, const float *x, float *y) {
    plx_tensor_binding in = {0, (void *)x, N * sizeof *x, 0};
    plx_tensor_binding out = {0, y, N * sizeof *y, 0};
    plx_execute_args a;
    plx_execute_args_init(&a);
    a.inputs = &in;
    a.input_count = 1;
    a.outputs = &out;
    a.output_count = 1;
    return plx_loaded_network_execute_with(ln, wm, &a);
}

/* The seed of check_runs' first input. Seeds from 10 on give a positive
 * x[0] (the "fail" layers' trigger is a negative one). */
static unsigned first_seed;

/* Runs `runs` executions on seeded inputs; every output equals the
 * reference and every execution makes `waits` host waits. */
static void check_runs(plx_loaded_network *ln, const step *steps, size_t count, int runs,
                       uint64_t waits) {
    for (int r = 0; r < runs; r++) {
        float x[N], y[N], want[N];
        input_for(x, first_seed + (unsigned)r);
        reference(steps, count, x, want);
        memset(y, 0xff, sizeof y);
        uint64_t before = plx_loaded_network_wait_count(ln);
        OK(run(ln, NULL, x, y));
        for (int i = 0; i < N; i++) {
            cr_assert(eq(flt, y[i], want[i]), "run %d: y[%d] = %g, want %g", r, i, (double)y[i],
                      (double)want[i]);
        }
        cr_assert(eq(u64, plx_loaded_network_wait_count(ln) - before, waits), "run %d", r);
    }
}

/* queued work completes after enqueue_workload returned; the host
 * waits on a fence before it reads an output (copied out, or written
 * straight into the caller's memory with import and export on): one wait
 * per execution on a network of one queued backend. The constant runs
 * through execute_workload at load. */
Test(queued, results_wait_for_the_fence) {
    plx_runtime *rt = runtime_with((qd_config){NULL, NULL, DELAY_US, DELAY_US});
    const step steps[] = {{"a", ADD_BIAS}, {"r", RELU}, {"d", DOUBLE}};
    const char *on[] = {"queuedev", "queuedev", "queuedev"};
    for (int import = 0; import < 2; import++) {
        plx_loaded_network *ln = load_chain(rt, steps, 3, on, import, false);
        cr_assert(eq(u64, plx_loaded_network_wait_count(ln), 0));
        check_runs(ln, steps, 3, 4, 1);
        cr_assert(eq(u64, plx_loaded_network_wait_count(ln), 4));
        plx_loaded_network_unload(&ln);
    }
    plx_runtime_destroy(&rt);
}

/* a synchronous backend's layer (cpu_ref) between queued ones: the
 * host waits before the copy (or import) into cpu_ref and at the end; no
 * wait where nothing is pending. */
Test(queued, mixed_with_a_synchronous_backend) {
    plx_runtime *rt = runtime_with((qd_config){NULL, NULL, DELAY_US, DELAY_US});
    const step steps[] = {{"a", ADD_BIAS}, {"n", NEG}, {"r", RELU}};
    const char *on[] = {"queuedev", "cpu_ref", "queuedev"};
    for (int import = 0; import < 2; import++) {
        plx_loaded_network *ln = load_chain(rt, steps, 3, on, import, false);
        check_runs(ln, steps, 3, 4, 2);
        plx_loaded_network_unload(&ln);
    }
    /* cpu_ref -> queuedev -> cpu_ref: one wait, before the last layer. */
    const step sandwich[] = {{"n1", NEG}, {"r", RELU}, {"n2", NEG}};
    const char *on2[] = {"cpu_ref", "queuedev", "cpu_ref"};
    plx_loaded_network *ln = load_chain(rt, sandwich, 3, on2, false, false);
    check_runs(ln, sandwich, 3, 3, 1);
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

/* Two independent branches: x -> A -> y (binding 0) and z -> B -> y2
 * (binding 1), A on queuedev, B on queuedev_b (ops RELU or DOUBLE). Nothing
 * crosses between the two backends, so B's layer comes right after A's
 * and the host can hand A's fence to B's enqueue without a wait. */
static plx_loaded_network *load_branches(plx_runtime *rt, step a, step b, bool async) {
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec();
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    const step *st[2] = {&a, &b};
    const char *in_names[2] = {"x", "z"}, *out_names[2] = {"y", "y2"};
    for (int k = 0; k < 2; k++) {
        plx_layer_id in, l, out;
        OK(plx_network_add_input(n, in_names[k], k, &t, &in));
        cr_assert(st[k]->op == RELU || st[k]->op == DOUBLE);
        if (st[k]->op == RELU) {
            OK(plx_network_add_layer(n, st[k]->name, PLX_OP_ACTIVATION, &relu, 1, 1, &l));
        } else {
            OK(plx_network_add_layer(n, st[k]->name, PLX_OP_BINARY, &add, 2, 1, &l));
            OK(plx_network_connect(n, in, 0, l, 1));
        }
        OK(plx_network_connect(n, in, 0, l, 0));
        OK(plx_network_add_output(n, out_names[k], k, &out));
        OK(plx_network_connect(n, l, 0, out, 0));
    }
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *be[] = {"queuedev", "queuedev_b"};
    oo.backends = be;
    oo.backend_count = 2;
    oo.graph_rewrites = false;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    plx_network_destroy(&n);
    /* The premise: A's layer, then B's, with only inputs and outputs
     * around them (no copy or import layer). */
    size_t at[2] = {SIZE_MAX, SIZE_MAX};
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        const plx_layer_assignment *l = plx_optimized_network_layer(on, i);
        cr_assert(l->op == PLX_OP_INPUT || l->op == PLX_OP_OUTPUT ||
                      strcmp(l->layer_name, a.name) == 0 || strcmp(l->layer_name, b.name) == 0,
                  "unexpected layer %s", l->layer_name);
        for (int k = 0; k < 2; k++) {
            if (strcmp(l->layer_name, st[k]->name) == 0) {
                at[k] = i;
                cr_assert(eq(str, (char *)l->backend_id, k ? "queuedev_b" : "queuedev"));
            }
        }
    }
    cr_assert(lt(sz, at[0], at[1]), "%s must come before %s", a.name, b.name);
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.async_execution = async;
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, &lo, &ln));
    return ln;
}

static plx_status run_branches(plx_loaded_network *ln, plx_working_memory *wm, const float *x,
                               const float *z, float *y, float *y2) {
    plx_tensor_binding in[] = {{0, (void *)x, N * sizeof *x, 0}, {1, (void *)z, N * sizeof *z, 0}};
    plx_tensor_binding out[] = {{0, y, N * sizeof *y, 0}, {1, y2, N * sizeof *y2, 0}};
    plx_execute_args args;
    plx_execute_args_init(&args);
    args.inputs = in;
    args.input_count = 2;
    args.outputs = out;
    args.output_count = 2;
    return plx_loaded_network_execute_with(ln, wm, &args);
}

/* One execution of the branches on seed `seed`; "" when the outputs are
 * right, else what is wrong (a static buffer). */
static const char *branches_once(plx_loaded_network *ln, plx_working_memory *wm, step a, step b,
                                 unsigned seed) {
    static _Thread_local char why[200];
    float x[N], z[N], y[N], y2[N], want[N], want2[N];
    input_for(x, seed);
    input_for(z, seed + 5);
    reference(&a, 1, x, want);
    reference(&b, 1, z, want2);
    memset(y, 0xff, sizeof y);
    memset(y2, 0xff, sizeof y2);
    plx_status s = run_branches(ln, wm, x, z, y, y2);
    if (s) {
        snprintf(why, sizeof why, "seed %u: %s", seed, plx_status_get_message(s));
        plx_status_free(s);
        return why;
    }
    if (!same_floats(y, want) || !same_floats(y2, want2)) {
        snprintf(why, sizeof why, "seed %u: y[0] %g (want %g), y2[0] %g (want %g)", seed,
                 (double)y[0], (double)want[0], (double)y2[0], (double)want2[0]);
        return why;
    }
    return "";
}

/* layers of two queued backends of one fence domain, one after the
 * other: the host hands queuedev's fence to queuedev_b's enqueue and waits
 * once, on queuedev_b, at the end. queuedev is slow (20 ms per workload)
 * and queuedev_b fast, so queuedev's output is right only because
 * queuedev_b's work waited for the fence before signalling its own. Of
 * different domains (or none): the host waits for queuedev first, two
 * waits. */
Test(queued, same_domain_hands_fences_over_between_branches) {
    const struct {
        qd_config config;
        uint64_t waits;
    } cases[] = {{{"plexus.test", "plexus.test", "20000", "0"}, 1},
                 {{"plexus.one", "plexus.two", "20000", "0"}, 2},
                 {{NULL, NULL, "20000", "0"}, 2}};
    const step a = {"a", DOUBLE}, b = {"b@queuedev_b", RELU};
    for (size_t c = 0; c < 3; c++) {
        plx_runtime *rt = runtime_with(cases[c].config);
        plx_loaded_network *ln = load_branches(rt, a, b, false);
        for (unsigned r = 0; r < 4; r++) {
            uint64_t before = plx_loaded_network_wait_count(ln);
            const char *why = branches_once(ln, NULL, a, b, r);
            cr_assert(eq(str, (char *)why, ""), "case %zu: %s", c, why);
            cr_assert(eq(u64, plx_loaded_network_wait_count(ln) - before, cases[c].waits),
                      "case %zu, run %u", c, r);
        }
        plx_loaded_network_unload(&ln);
        plx_runtime_destroy(&rt);
    }
}

/* a tensor that crosses between two backends goes through a copy
 * layer (the host reads the data) or an import layer (the host maps the
 * producer's handle for its pointer), so even within one fence domain the
 * host waits before each: three waits, with import on and off. Fences are
 * handed over only between layers that do not feed each other (the
 * branches below). */
Test(queued, same_domain_copies_and_imports_wait) {
    plx_runtime *rt = runtime_with((qd_config){"plexus.test", "plexus.test", DELAY_US, DELAY_US});
    const step steps[] = {{"a", ADD_BIAS}, {"b@queuedev_b", DOUBLE}, {"r", RELU}};
    const char *on[] = {"queuedev", "queuedev_b", "queuedev"};
    for (int import = 0; import < 2; import++) {
        plx_loaded_network *ln = load_chain(rt, steps, 3, on, import, false);
        check_runs(ln, steps, 3, import ? 4 : 3, 3);
        plx_loaded_network_unload(&ln);
    }
    plx_runtime_destroy(&rt);
}

/* queued backends of different fence domains, or without one, never
 * get each other's fences: the host waits at each crossing and at the end
 * (queuedev refuses a fence of another domain, so a handed-over fence
 * would fail the execution). */
Test(queued, different_domains_wait_at_each_crossing) {
    const qd_config configs[] = {{"plexus.one", "plexus.two", DELAY_US, DELAY_US},
                                 {NULL, NULL, DELAY_US, DELAY_US},
                                 {"plexus.test", NULL, DELAY_US, DELAY_US}};
    const step steps[] = {{"a", ADD_BIAS}, {"b@queuedev_b", DOUBLE}, {"r", RELU}};
    const char *on[] = {"queuedev", "queuedev_b", "queuedev"};
    for (size_t c = 0; c < 3; c++) {
        plx_runtime *rt = runtime_with(configs[c]);
        plx_loaded_network *ln = load_chain(rt, steps, 3, on, true, false);
        check_runs(ln, steps, 3, 3, 3);
        plx_loaded_network_unload(&ln);
        plx_runtime_destroy(&rt);
    }
}

/* the debug callback sees finished outputs: the host waits before
 * each call (one wait per queued workload). */
typedef struct seen {
    const step *steps;
    const float *x;
    int calls;
    int wrong;
    char first_wrong[160];
} seen;

static void debug_check(void *user, const char *layer, plx_op op, const char *backend,
                        uint32_t slot, const plx_tensor_info *info, const void *data) {
    (void)op;
    (void)backend;
    (void)slot;
    (void)info;
    seen *s = user;
    for (size_t k = 0; k < 3; k++) {
        if (strcmp(layer, s->steps[k].name) == 0) {
            float want[N];
            reference(s->steps, k + 1, s->x, want);
            s->calls++;
            if (!same_floats(want, data) && !s->wrong++) {
                snprintf(s->first_wrong, sizeof s->first_wrong, "layer %s: %g, want %g", layer,
                         (double)((const float *)data)[0], (double)want[0]);
            }
        }
    }
}

Test(queued, debug_callback_sees_finished_outputs) {
    plx_runtime *rt = runtime_with((qd_config){NULL, NULL, DELAY_US, DELAY_US});
    const step steps[] = {{"a", ADD_BIAS}, {"r", RELU}, {"d", DOUBLE}};
    const char *on[] = {"queuedev", "queuedev", "queuedev"};
    plx_loaded_network *ln = load_chain(rt, steps, 3, on, false, false);
    float x[N], y[N];
    input_for(x, 3);
    seen s = {steps, x, 0, 0, {0}};
    plx_loaded_network_set_debug_callback(ln, debug_check, &s);
    uint64_t before = plx_loaded_network_wait_count(ln);
    OK(run(ln, NULL, x, y));
    cr_assert(eq(int, s.calls, 3));
    cr_assert(eq(int, s.wrong, 0), "%s", s.first_wrong);
    cr_assert(eq(u64, plx_loaded_network_wait_count(ln) - before, 3));
    plx_loaded_network_set_debug_callback(ln, NULL, NULL);
    check_runs(ln, steps, 3, 2, 1);
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

/* a workload that fails while running is reported by fence_wait:
 * the execution fails with the backend's message, which names the layer,
 * and its code; the network stays usable. Also when the failing work's
 * fence was handed to queuedev_b (independent branches, one domain) and
 * the host waited on queuedev_b's only: the failure travels with the
 * fence. */
Test(queued, failure_at_the_wait_names_the_layer) {
    plx_runtime *rt =
        runtime_with((qd_config){"plexus.test", "plexus.test", DELAY_US, DELAY_US});
    const step steps[] = {{"fail1", RELU}, {"d", DOUBLE}};
    const char *on[] = {"queuedev", "queuedev"};
    const step a = {"fail1", RELU}, b = {"d@queuedev_b", DOUBLE};
    for (int variant = 0; variant < 2; variant++) {
        plx_loaded_network *ln = variant == 0 ? load_chain(rt, steps, 2, on, false, false)
                                              : load_branches(rt, a, b, false);
        for (int round = 0; round < 2; round++) {
            float x[N], y[N], y2[N];
            input_for(x, 1);
            x[0] = -1.0f;
            uint64_t before = plx_loaded_network_wait_count(ln);
            plx_status s = variant == 0 ? run(ln, NULL, x, y) : run_branches(ln, NULL, x, x, y, y2);
            cr_assert(not(zero(ptr, s)), "variant %d: a negative input must fail", variant);
            cr_assert(not(zero(ptr, strstr(plx_status_get_message(s),
                                           "layer 'fail1': negative input"))),
                      "variant %d: %s", variant, plx_status_get_message(s));
            cr_assert(eq(int, plx_status_get_code(s), PLX_INVALID_ARGUMENT), "%s",
                      plx_status_get_message(s));
            plx_status_free(s);
            cr_assert(eq(u64, plx_loaded_network_wait_count(ln) - before, 1), "variant %d",
                      variant);
            /* Positive inputs run as usual afterwards. */
            if (variant == 0) {
                first_seed = 10;
                check_runs(ln, steps, 2, 2, 1);
            } else {
                for (unsigned r = 10; r < 12; r++) {
                    before = plx_loaded_network_wait_count(ln);
                    const char *why = branches_once(ln, NULL, a, b, r);
                    cr_assert(eq(str, (char *)why, ""), "%s", why);
                    cr_assert(eq(u64, plx_loaded_network_wait_count(ln) - before, 1));
                }
            }
        }
        plx_loaded_network_unload(&ln);
    }
    plx_runtime_destroy(&rt);
}

/* a status from enqueue_workload fails the execution naming the
 * layer, after the host waited for the work enqueued before it (one wait);
 * the network stays usable: the next execution fails the same way, and
 * unloading destroys the queue with nothing pending. */
Test(queued, enqueue_failure_names_the_layer) {
    plx_runtime *rt = runtime_with((qd_config){NULL, NULL, DELAY_US, DELAY_US});
    const step steps[] = {{"a", ADD_BIAS}, {"noenq1", RELU}};
    const char *on[] = {"queuedev", "queuedev"};
    plx_loaded_network *ln = load_chain(rt, steps, 2, on, false, false);
    for (int round = 0; round < 2; round++) {
        float x[N], y[N];
        input_for(x, 2);
        uint64_t before = plx_loaded_network_wait_count(ln);
        plx_status s = run(ln, NULL, x, y);
        cr_assert(not(zero(ptr, s)));
        const char *m = plx_status_get_message(s);
        cr_assert(not(zero(ptr, strstr(m, "noenq1"))), "%s", m);
        cr_assert(not(zero(ptr, strstr(m, "refuses to be enqueued"))), "%s", m);
        cr_assert(eq(int, plx_status_get_code(s), PLX_UNAVAILABLE), "%s", m);
        plx_status_free(s);
        cr_assert(eq(u64, plx_loaded_network_wait_count(ln) - before, 1), "round %d", round);
    }
    plx_loaded_network_unload(&ln);
    /* The runtime's other networks on queuedev are unaffected. */
    const step fine[] = {{"a", ADD_BIAS}, {"r", RELU}};
    ln = load_chain(rt, fine, 2, on, false, false);
    check_runs(ln, fine, 2, 2, 1);
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

/* A runtime over one queuedev build (by path) with an optional domain. */
static plx_runtime *runtime_of(const char *module, const char *id, const char *domain) {
    plx_backend_option opt = {id, "domain", domain};
    return tu_runtime_with(module, &opt, domain ? 1 : 0);
}

/* a backend reporting queued_execution without one of the seven
 * functions of the group is rejected, the reason naming the function. */
Test(queued, missing_function_is_rejected) {
    const struct {
        const char *fn;
        const char *module;
    } cases[] = {
        {"create_queue", QUEUEDEV_NO_CREATE_QUEUE},
        {"destroy_queue", QUEUEDEV_NO_DESTROY_QUEUE},
        {"enqueue_workload", QUEUEDEV_NO_ENQUEUE_WORKLOAD},
        {"queue_signal", QUEUEDEV_NO_QUEUE_SIGNAL},
        {"fence_wait", QUEUEDEV_NO_FENCE_WAIT},
        {"fence_query", QUEUEDEV_NO_FENCE_QUERY},
        {"destroy_fence", QUEUEDEV_NO_DESTROY_FENCE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char id[64];
        snprintf(id, sizeof id, "qd_no_%s", cases[i].fn);
        plx_runtime *rt = runtime_of(cases[i].module, id, NULL);
        cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, id)), "%s loaded: %s", id,
                  tu_dump(rt));
        const plx_rejection *r = tu_rejection_containing(rt, cases[i].fn);
        cr_assert(not(zero(ptr, (void *)r)), "no rejection names %s: %s", cases[i].fn,
                  tu_dump(rt));
        plx_runtime_destroy(&rt);
    }
    /* The complete build loads. */
    plx_runtime *rt = runtime_of(QUEUEDEV_MODULE, "queuedev", NULL);
    cr_assert(not(zero(ptr, (void *)plx_runtime_find_backend(rt, "queuedev"))), "%s",
              tu_dump(rt));
    cr_assert(eq(sz, plx_runtime_rejection_count(rt), 0), "%s", tu_dump(rt));
    plx_runtime_destroy(&rt);
}

/* a backend that reports import_memory_kinds must have
 * import_external_memory, through which the host hands it such memory. */
Test(queued, memory_kinds_without_import_external_memory_are_rejected) {
    plx_backend_option opt = {"queuedev", "kinds", "queuedev.buffer"};
    plx_runtime *rt = tu_runtime_with(QUEUEDEV_MODULE, &opt, 1);
    cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "queuedev")), "%s", tu_dump(rt));
    cr_assert(not(zero(ptr, (void *)tu_rejection_containing(
                  rt, "required function 'import_external_memory' is NULL (the backend "
                      "reports import_memory_kinds; ABI 1.4 or later)"))),
              "%s", tu_dump(rt));
    plx_runtime_destroy(&rt);
}

/* fence_domain is a non-empty string of at most 127 bytes. */
Test(queued, bad_fence_domain_is_rejected) {
    char longest[128], too_long[129];
    memset(longest, 'd', 127);
    longest[127] = '\0';
    memset(too_long, 'd', 128);
    too_long[128] = '\0';
    const char *bad[] = {"", too_long};
    for (size_t i = 0; i < 2; i++) {
        plx_runtime *rt = runtime_of(QUEUEDEV_MODULE, "queuedev", bad[i]);
        cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "queuedev")), "%s", tu_dump(rt));
        cr_assert(not(zero(ptr, (void *)tu_rejection_containing(rt, "fence_domain"))), "%s",
                  tu_dump(rt));
        plx_runtime_destroy(&rt);
    }
    plx_runtime *rt = runtime_of(QUEUEDEV_MODULE, "queuedev", longest);
    const plx_backend_info *b = plx_runtime_find_backend(rt, "queuedev");
    cr_assert(not(zero(ptr, (void *)b)), "%s", tu_dump(rt));
    const plx_capability *c = plx_backend_info_capability(b, PLX_CAP_FENCE_DOMAIN);
    cr_assert(not(zero(ptr, (void *)c)));
    cr_assert(eq(str, (char *)c->string_value, longest));
    cr_assert(plx_backend_info_has_capability(b, PLX_CAP_QUEUED_EXECUTION));
    plx_runtime_destroy(&rt);
}

/* ---- Profiling (R-25) ---------------------------------------------------- */

static const char *field(json_object *e, const char *key) {
    json_object *v = NULL;
    return json_object_object_get_ex(e, key, &v) ? json_object_get_string(v) : NULL;
}

static double number(json_object *e, const char *key) {
    json_object *v = NULL;
    cr_assert(json_object_object_get_ex(e, key, &v), "an event lacks %s", key);
    return json_object_get_double(v);
}

static const char *arg(json_object *e, const char *key) {
    json_object *args = NULL;
    return json_object_object_get_ex(e, "args", &args) ? field(args, key) : NULL;
}

static bool is(const char *a, const char *b) {
    return a && strcmp(a, b) == 0;
}

/* with profiling on, the trace holds queuedev's "kernel" events, one
 * per queued workload, with the layer's name, placed by the host on its
 * own clock (queuedev's clock is 1000 s ahead: an event left on it would
 * lie far outside the execution), inside the time the host's events of
 * that execution span; and one "wait" event per host wait. Profiling off:
 * no backend events. */
Test(queued, profiling_records_backend_events) {
    plx_runtime *rt = runtime_with((qd_config){NULL, NULL, "2000", "2000"});
    const step steps[] = {{"a", ADD_BIAS}, {"n", NEG}, {"r", RELU}};
    const char *on[] = {"queuedev", "cpu_ref", "queuedev"};
    plx_loaded_network *ln = load_chain(rt, steps, 3, on, false, false);
    float x[N], y[N];
    input_for(x, 4);
    OK(plx_runtime_enable_profiling(rt, true));
    uint64_t before = plx_loaded_network_wait_count(ln);
    OK(run(ln, NULL, x, y));
    uint64_t waits = plx_loaded_network_wait_count(ln) - before;
    cr_assert(eq(u64, waits, 2));
    json_object *doc = NULL;
    {
        char dir[PATH_MAX], path[PATH_MAX];
        tu_mkdtemp(dir);
        tu_join(path, dir, "trace.json");
        OK(plx_runtime_write_trace(rt, path));
        doc = json_object_from_file(path);
        tu_rmtree(dir);
        cr_assert(not(zero(ptr, doc)), "the trace does not parse as JSON");
    }
    json_object *events = NULL;
    cr_assert(json_object_object_get_ex(doc, "traceEvents", &events));
    double host_start = 1e300, host_end = -1e300;
    size_t kernels = 0, wait_events = 0;
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        json_object *e = json_object_array_get_idx(events, i);
        if (!is(field(e, "ph"), "X") || is(field(e, "cat"), "kernel")) {
            continue;
        }
        double ts = number(e, "ts"), dur = number(e, "dur");
        host_start = ts < host_start ? ts : host_start;
        host_end = ts + dur > host_end ? ts + dur : host_end;
        wait_events += is(field(e, "cat"), "wait");
    }
    cr_assert(eq(sz, wait_events, (size_t)waits));
    bool saw_a = false, saw_r = false;
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        json_object *e = json_object_array_get_idx(events, i);
        if (!is(field(e, "ph"), "X") || !is(field(e, "cat"), "kernel")) {
            continue;
        }
        kernels++;
        const char *name = field(e, "name"), *layer = arg(e, "layer");
        cr_assert(not(zero(ptr, (void *)layer)), "kernel event %s has no args.layer",
                  name ? name : "?");
        if (is(layer, "a")) {
            cr_assert(eq(str, (char *)name, "qd_add"));
            saw_a = true;
        } else {
            cr_assert(eq(str, (char *)layer, "r"));
            cr_assert(eq(str, (char *)name, "qd_relu"));
            saw_r = true;
        }
        double ts = number(e, "ts"), dur = number(e, "dur");
        /* 1 us of slack for the microsecond rounding of both. */
        cr_assert(ge(dbl, ts, host_start - 1.0), "kernel %s at %f, execution from %f", layer, ts,
                  host_start);
        cr_assert(le(dbl, ts + dur, host_end + 1.0), "kernel %s ends at %f, execution at %f",
                  layer, ts + dur, host_end);
    }
    cr_assert(eq(sz, kernels, 2));
    cr_assert(saw_a && saw_r);
    json_object_put(doc);

    /* Off: nothing recorded, the backend's events included. */
    OK(plx_runtime_enable_profiling(rt, false));
    plx_runtime_clear_trace(rt);
    OK(run(ln, NULL, x, y));
    cr_assert(eq(sz, plx_runtime_trace_event_count(rt), 0));
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}

/* ---- Concurrency --------------------------------------------------------- */

typedef struct worker {
    plx_loaded_network *ln;
    plx_working_memory *wm;
    const step *steps; /* a chain of `count` steps; NULL: the branches a, b */
    size_t count;
    step a, b;
    unsigned seed;
    int runs;
    int failures;
    char first_failure[200];
} worker;

static void *work(void *arg) {
    worker *w = arg;
    for (int i = 0; i < w->runs; i++) {
        const char *why = "";
        char buf[200];
        if (w->steps) {
            float x[N], y[N], want[N];
            input_for(x, w->seed + (unsigned)i);
            reference(w->steps, w->count, x, want);
            plx_status st = run(w->ln, w->wm, x, y);
            if (st || !same_floats(y, want)) {
                snprintf(buf, sizeof buf, "%s", st ? plx_status_get_message(st) : "wrong result");
                why = buf;
            }
            plx_status_free(st);
        } else {
            why = branches_once(w->ln, w->wm, w->a, w->b, w->seed + (unsigned)i);
        }
        if (why[0] && !w->failures++) {
            snprintf(w->first_failure, sizeof w->first_failure, "run %d: %.180s", i, why);
        }
    }
    return NULL;
}

/* Runs `runs` executions on each of two new working memories at once. */
static void run_two_threads(worker proto, int runs) {
    worker w[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        w[i] = proto;
        w[i].seed = (unsigned)i * 11u;
        w[i].runs = runs;
        OK(plx_loaded_network_create_working_memory(proto.ln, &w[i].wm));
    }
    for (int i = 0; i < 2; i++) {
        cr_assert(eq(int, pthread_create(&t[i], NULL, work, &w[i]), 0));
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
    }
    for (int i = 0; i < 2; i++) {
        cr_assert(eq(int, w[i].failures, 0), "thread %d: %d failures, first: %s", i,
                  w[i].failures, w[i].first_failure);
        plx_working_memory_destroy(&w[i].wm);
    }
}

/* two working memories of a network loaded for asynchronous
 * execution, each with its own queues, executing at the same time: a chain
 * over queuedev, queuedev_b and cpu_ref, and the two branches whose fence
 * is handed over. Every result is right, and every execution waits as
 * often as a lone one. */
Test(queued, concurrent_working_memories, .timeout = 120) {
    plx_runtime *rt = runtime_with((qd_config){"plexus.test", "plexus.test", "200", "100"});
    int runs = tu_under_valgrind() ? 5 : 40;
    const step steps[] = {{"a", ADD_BIAS}, {"b@queuedev_b", DOUBLE}, {"n", NEG}, {"r", RELU}};
    const char *on[] = {"queuedev", "queuedev_b", "cpu_ref", "queuedev"};
    plx_loaded_network *ln = load_chain(rt, steps, 4, on, true, true);
    float x[N], y[N], want[N];
    input_for(x, 20);
    reference(steps, 4, x, want);
    OK(run(ln, NULL, x, y));
    cr_assert(same_floats(y, want));
    uint64_t lone = plx_loaded_network_wait_count(ln);
    cr_assert(ge(u64, lone, 2), "at least at the crossing to cpu_ref and at the end");
    run_two_threads((worker){ln, NULL, steps, 4, {0}, {0}, 0, 0, 0, {0}}, runs);
    cr_assert(eq(u64, plx_loaded_network_wait_count(ln), lone * (uint64_t)(1 + 2 * runs)));
    plx_loaded_network_unload(&ln);

    const step a = {"a", DOUBLE}, b = {"b@queuedev_b", RELU};
    ln = load_branches(rt, a, b, true);
    run_two_threads((worker){ln, NULL, NULL, 0, a, b, 0, 0, 0, {0}}, runs);
    cr_assert(eq(u64, plx_loaded_network_wait_count(ln), (uint64_t)(2 * runs)));
    plx_loaded_network_unload(&ln);
    plx_runtime_destroy(&rt);
}
