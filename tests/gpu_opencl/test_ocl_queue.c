/* gpu_opencl's queued execution and profiling events driven
 * through its function table, as a host would drive it, with a host table
 * of the test's own: so that the queue, the fences, the deferred index
 * checks and the device events are checked call by call, whatever the
 * runtime's scheduler does with them (tests/test_gpu_opencl.c runs them
 * end to end through the public API).
 *
 * Without an OpenCL platform every test skips with the reason, unless
 * PLEXUS_REQUIRE_OPENCL=1 makes that a failure. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plexus/backend.h>

#include "../test_host_table.h"

#ifndef GPU_OPENCL_DIR
#error "GPU_OPENCL_DIR must be defined by the build"
#endif

/* ---- the backend -------------------------------------------------------- */

static void *lib;
static const plx_backend_functions *fn;

static void fail_or_skip(const char *why) {
    const char *req = getenv("PLEXUS_REQUIRE_OPENCL");
    if (req && strcmp(req, "1") == 0) {
        cr_fatal("PLEXUS_REQUIRE_OPENCL=1, but %s", why);
    }
    cr_skip_test("%s", why);
}

/* The plug-in's function table, or the test skips (no device). */
static void open_backend(void) {
    lib = dlopen(GPU_OPENCL_DIR "/gpu_opencl.so", RTLD_NOW | RTLD_LOCAL);
    cr_assert(not(zero(ptr, lib)), "dlopen: %s", dlerror());
    void *sym = dlsym(lib, PLX_BACKEND_ENTRY_SYMBOL);
    cr_assert(not(zero(ptr, sym)));
    /* POSIX: dlsym's pointer converts to a function pointer (memcpy keeps
     * -Wpedantic quiet, as core/src/registry.c does). */
    plx_backend_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    const plx_backend_descriptor *d = entry(th_host.abi_version, &th_host);
    cr_assert(not(zero(ptr, (void *)d)));
    fn = d->functions;
    cr_assert(ge(u32, fn->struct_size,
                 (uint32_t)PLX_STRUCT_SIZE_UPTO(plx_backend_functions, destroy_fence)));
    plx_status s = fn->check_available(&th_host);
    if (s) {
        char why[1100];
        snprintf(why, sizeof why, "gpu_opencl is unavailable: %s", s->message);
        free(s);
        fail_or_skip(why);
    }
}

/* A created instance with one option (or none); NULL with *out_status set
 * when create refuses it. */
static plx_backend *create(const char *key, const char *value, plx_status *out_status) {
    plx_option o = {key, value};
    plx_backend *b = NULL;
    *out_status = fn->create(&th_host, &o, key ? 1 : 0, &b);
    return *out_status ? NULL : b;
}

static const plx_capability *cap(plx_backend *b, const char *key) {
    const plx_capability *caps;
    size_t n;
    cr_assert(zero(ptr, fn->get_capabilities(b, &caps, &n)));
    for (size_t i = 0; i < n; i++) {
        if (strcmp(caps[i].key, key) == 0) {
            return &caps[i];
        }
    }
    return NULL;
}

#define OKS(expr)                                                                            \
    do {                                                                                     \
        plx_status s_ = (expr);                                                              \
        cr_assert(zero(ptr, s_), "%s: %s", #expr, s_ ? s_->message : "");                   \
    } while (0)

/* ---- a small network ---------------------------------------------------- */

#define N 64

static plx_tensor_info vec(plx_dtype dt, int64_t d0, int64_t d1) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.rank = 2;
    t.dims[0] = d0;
    t.dims[1] = d1;
    return t;
}

static plx_tensor_handle *handle(plx_factory *f, const plx_tensor_info *info) {
    plx_tensor_handle_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.managed = true;
    plx_tensor_handle *h = NULL;
    OKS(fn->create_tensor_handle(f, info, &p, &h));
    OKS(fn->allocate_tensor_handle(h));
    return h;
}

static void put(plx_tensor_handle *h, const void *data, size_t bytes) {
    void *p;
    OKS(fn->map_tensor_handle(h, &p));
    memcpy(p, data, bytes);
    fn->unmap_tensor_handle(h);
}

static void get(plx_tensor_handle *h, void *data, size_t bytes) {
    void *p;
    OKS(fn->map_tensor_handle(h, &p));
    memcpy(data, p, bytes);
    fn->unmap_tensor_handle(h);
}

static plx_workload *workload(plx_backend *b, plx_factory *f, const char *name, plx_op op,
                              const void *desc, const plx_tensor_info *in, uint32_t nin,
                              plx_tensor_handle *const *hin, const plx_tensor_info *out,
                              plx_tensor_handle *hout) {
    plx_layer_view v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.name = name;
    v.op = op;
    v.desc = desc;
    v.inputs = in;
    v.input_count = nin;
    v.outputs = out;
    v.output_count = 1;
    OKS(fn->check_layer(b, &v));
    plx_workload *w = NULL;
    OKS(fn->create_workload(f, &v, hin, &hout, &w));
    return w;
}

/* relu(x) -> a; sqrt(a) -> s; s * a -> y: three layers, each reading the
 * one before. */
typedef struct chain3 {
    plx_factory *f;
    plx_tensor_handle *x, *a, *s, *y;
    plx_workload *w[3];
    const char *names[3];
} chain3;

static void chain_create(plx_backend *b, chain3 *c) {
    plx_factory_params fp = {sizeof fp, 0, 0, 7};
    OKS(fn->create_factory(b, &fp, &c->f));
    plx_tensor_info t = vec(PLX_DTYPE_FLOAT32, 1, N);
    c->x = handle(c->f, &t);
    c->a = handle(c->f, &t);
    c->s = handle(c->f, &t);
    c->y = handle(c->f, &t);
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_unary_desc sq = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    plx_binary_desc mul = PLX_BINARY_DESC_INIT(PLX_BINARY_MUL);
    plx_tensor_info two[2] = {t, t};
    c->names[0] = "relu";
    c->names[1] = "sqrt";
    c->names[2] = "mul";
    c->w[0] = workload(b, c->f, "relu", PLX_OP_ACTIVATION, &relu, &t, 1, &c->x, &t, c->a);
    c->w[1] = workload(b, c->f, "sqrt", PLX_OP_UNARY, &sq, &t, 1, &c->a, &t, c->s);
    plx_tensor_handle *mi[2] = {c->s, c->a};
    c->w[2] = workload(b, c->f, "mul", PLX_OP_BINARY, &mul, two, 2, mi, &t, c->y);
}

static void chain_destroy(chain3 *c) {
    for (int i = 0; i < 3; i++) {
        fn->destroy_workload(c->w[i]);
    }
    fn->destroy_tensor_handle(c->x);
    fn->destroy_tensor_handle(c->a);
    fn->destroy_tensor_handle(c->s);
    fn->destroy_tensor_handle(c->y);
    fn->destroy_factory(c->f);
}

static plx_status enqueue(plx_queue *q, plx_workload *w, const char *name, bool profile,
                          plx_fence *const *waits, uint32_t wait_count) {
    plx_enqueue_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = PLX_STRUCT_SIZE_UPTO(plx_enqueue_params, profile);
    p.workload = w;
    p.wait_fences = waits;
    p.wait_fence_count = wait_count;
    p.layer_name = name;
    p.profile = profile;
    return fn->enqueue_workload(q, &p);
}

/* Signals, waits and destroys the fence: the wait's verdict. */
static plx_status wait_all(plx_queue *q) {
    plx_fence *f = NULL;
    OKS(fn->queue_signal(q, &f));
    plx_status s = fn->fence_wait(f);
    bool done = false;
    OKS(fn->fence_query(f, &done));
    cr_assert(done, "a waited fence is not signalled");
    fn->destroy_fence(f);
    return s;
}

static void input(float *x, unsigned seed) {
    for (int i = 0; i < N; i++) {
        x[i] = (float)((seed * 31u + (unsigned)i * 7u) % 97u) / 8.0f - 4.0f;
    }
}

/* ---- tests -------------------------------------------------------------- */

/* queued_execution and a fence_domain of this context unless
 * queued=off; a bad value names the option. */
Test(ocl_queue, capabilities_and_the_queued_option) {
    open_backend();
    plx_status s;
    plx_backend *on = create(NULL, NULL, &s);
    cr_assert(zero(ptr, s), "%s", s ? s->message : "");
    const plx_capability *q = cap(on, PLX_CAP_QUEUED_EXECUTION);
    cr_assert(not(zero(ptr, (void *)q)));
    cr_assert(q->type == PLX_VALUE_BOOL && q->bool_value);
    const plx_capability *d = cap(on, PLX_CAP_FENCE_DOMAIN);
    cr_assert(not(zero(ptr, (void *)d)));
    cr_assert(eq(int, d->type, PLX_VALUE_STRING));
    cr_assert(eq(int, strncmp(d->string_value, "gpu_opencl:context=", 19), 0), "%s",
              d->string_value);
    cr_assert(lt(sz, strlen(d->string_value), 128));
    /* Another instance has another context, so another domain. */
    plx_backend *on2 = create("queued", "on", &s);
    cr_assert(zero(ptr, s), "%s", s ? s->message : "");
    cr_assert(not(eq(str, (char *)cap(on2, PLX_CAP_FENCE_DOMAIN)->string_value,
                     (char *)d->string_value)));
    plx_backend *off = create("queued", "off", &s);
    cr_assert(zero(ptr, s), "%s", s ? s->message : "");
    cr_assert(zero(ptr, (void *)cap(off, PLX_CAP_QUEUED_EXECUTION)));
    cr_assert(zero(ptr, (void *)cap(off, PLX_CAP_FENCE_DOMAIN)));
    cr_assert(zero(ptr, create("queued", "sometimes", &s)));
    cr_assert(eq(int, s->code, PLX_INVALID_ARGUMENT));
    cr_assert(not(zero(ptr, strstr(s->message, "invalid value 'sometimes' for option 'queued'"))),
              "%s", s->message);
    free(s);
    fn->destroy(on);
    fn->destroy(on2);
    fn->destroy(off);
}

/* The backend with default options and the chain3 network on it (relu,
 * sqrt, mul), the start of the tests below. */
static plx_backend *chain_backend(chain3 *c) {
    open_backend();
    plx_status s;
    plx_backend *b = create(NULL, NULL, &s);
    cr_assert(zero(ptr, s), "%s", s ? s->message : "");
    chain_create(b, c);
    return b;
}

/* three layers enqueued on one queue, waited on once, give what
 * execute_workload gives layer by layer, exactly, round after round; with
 * profile switched on and off between layers the order holds. */
Test(ocl_queue, queued_results_equal_synchronous) {
    chain3 c;
    plx_backend *b = chain_backend(&c);
    plx_queue_params qp = {sizeof qp, 7};
    plx_queue *q = NULL;
    OKS(fn->create_queue(c.f, &qp, &q));
    for (unsigned round = 0; round < 4; round++) {
        float x[N], sync_y[N], queued_y[N];
        input(x, round);
        put(c.x, x, sizeof x);
        for (int i = 0; i < 3; i++) {
            OKS(fn->execute_workload(c.w[i]));
        }
        get(c.y, sync_y, sizeof sync_y);
        memset(queued_y, 0, sizeof queued_y);
        put(c.y, queued_y, sizeof queued_y);
        for (int i = 0; i < 3; i++) {
            /* rounds 2 and 3 move between the plain and the profiling queue */
            bool profile = round >= 2 && (i + (int)round) % 2 == 0;
            OKS(enqueue(q, c.w[i], c.names[i], profile, NULL, 0));
        }
        OKS(wait_all(q));
        get(c.y, queued_y, sizeof queued_y);
        cr_assert(eq(int, memcmp(sync_y, queued_y, sizeof x), 0), "round %u differs", round);
    }
    fn->destroy_queue(q);
    chain_destroy(&c);
    fn->destroy(b);
}

/* a fence of one queue in the wait list of another's enqueue orders
 * the second after the first, without a host wait between them. */
Test(ocl_queue, wait_fences_order_two_queues) {
    chain3 c;
    plx_backend *b = chain_backend(&c);
    plx_queue_params qp = {sizeof qp, 7};
    plx_queue *q1 = NULL, *q2 = NULL;
    OKS(fn->create_queue(c.f, &qp, &q1));
    OKS(fn->create_queue(c.f, &qp, &q2));
    float x[N], want[N], got[N];
    input(x, 3);
    put(c.x, x, sizeof x);
    for (int i = 0; i < 3; i++) {
        OKS(fn->execute_workload(c.w[i]));
    }
    get(c.y, want, sizeof want);
    memset(got, 0, sizeof got);
    put(c.y, got, sizeof got);
    put(c.s, got, sizeof got);
    OKS(enqueue(q1, c.w[0], "relu", false, NULL, 0));
    OKS(enqueue(q1, c.w[1], "sqrt", false, NULL, 0));
    plx_fence *f1 = NULL;
    OKS(fn->queue_signal(q1, &f1));
    OKS(enqueue(q2, c.w[2], "mul", true, &f1, 1));
    fn->destroy_fence(f1); /* the host may, once the enqueue returned */
    OKS(wait_all(q2));
    get(c.y, got, sizeof got);
    cr_assert(eq(int, memcmp(want, got, sizeof got), 0));
    cr_assert(zero(ptr, wait_all(q1)));
    /* A fence that is not this instance's is refused, naming the domain. */
    plx_status s;
    plx_backend *other = create(NULL, NULL, &s);
    cr_assert(zero(ptr, s));
    chain3 c2;
    chain_create(other, &c2);
    plx_queue *q3 = NULL;
    OKS(fn->create_queue(c2.f, &qp, &q3));
    plx_fence *f3 = NULL;
    OKS(fn->queue_signal(q3, &f3));
    s = enqueue(q1, c.w[0], "relu", false, &f3, 1);
    cr_assert(not(zero(ptr, s)));
    cr_assert(not(zero(ptr, strstr(s->message, "fence_domain"))), "%s", s->message);
    free(s);
    cr_assert(zero(ptr, fn->fence_wait(f3)));
    fn->destroy_fence(f3);
    fn->destroy_queue(q3);
    chain_destroy(&c2);
    fn->destroy(other);
    fn->destroy_queue(q1);
    fn->destroy_queue(q2);
    chain_destroy(&c);
    fn->destroy(b);
}

/* an index out of range is found at the wait, named with the layer
 * (the synchronous path's message behind "layer 'NAME': "); waiting again
 * gives the same verdict; the queue then runs good indices as usual. */
Test(ocl_queue, index_error_names_the_layer_at_the_wait) {
    open_backend();
    plx_status s;
    plx_backend *b = create(NULL, NULL, &s);
    cr_assert(zero(ptr, s), "%s", s ? s->message : "");
    plx_factory_params fp = {sizeof fp, 0, 0, 3};
    plx_factory *f = NULL;
    OKS(fn->create_factory(b, &fp, &f));
    plx_tensor_info xi = vec(PLX_DTYPE_FLOAT32, 4, 3), ii = vec(PLX_DTYPE_INT64, 2, 3),
                    yi = vec(PLX_DTYPE_FLOAT32, 2, 3);
    plx_tensor_handle *hx = handle(f, &xi), *hi = handle(f, &ii), *hy = handle(f, &yi),
                      *hz = handle(f, &yi);
    plx_axis_desc ad = PLX_AXIS_DESC_INIT(0);
    plx_tensor_info gin[2] = {xi, ii};
    plx_tensor_handle *gh[2] = {hx, hi};
    plx_workload *ge = workload(b, f, "ge", PLX_OP_GATHER_ELEMENTS, &ad, gin, 2, gh, &yi, hy);
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_workload *r = workload(b, f, "after", PLX_OP_ACTIVATION, &relu, &yi, 1, &hy, &yi, hz);
    plx_queue *q = NULL;
    plx_queue_params qp = {sizeof qp, 3};
    OKS(fn->create_queue(f, &qp, &q));
    float xv[12], yv[6];
    for (int i = 0; i < 12; i++) {
        xv[i] = (float)i;
    }
    put(hx, xv, sizeof xv);
    int64_t good[6] = {3, 0, -1, 1, 2, -4}, bad[6] = {3, 0, -1, 1, 7, -4};
    for (int round = 0; round < 3; round++) {
        put(hi, round == 1 ? bad : good, sizeof good);
        OKS(enqueue(q, ge, "ge", false, NULL, 0));
        OKS(enqueue(q, r, "after", false, NULL, 0));
        plx_fence *fe = NULL;
        OKS(fn->queue_signal(q, &fe));
        for (int again = 0; again < 2; again++) {
            s = fn->fence_wait(fe);
            if (round != 1) {
                cr_assert(zero(ptr, s), "%s", s ? s->message : "");
                continue;
            }
            cr_assert(not(zero(ptr, s)), "an index out of range was not reported");
            cr_assert(eq(int, s->code, PLX_INVALID_ARGUMENT), "%s", s->message);
            cr_assert(eq(str, s->message,
                         "layer 'ge': gpu_opencl: layer 'ge' (gather_elements): index 7 "
                         "(indices element 4) is out of range"));
            free(s);
        }
        fn->destroy_fence(fe);
        if (round != 1) {
            get(hz, yv, sizeof yv);
            const float want[6] = {9, 1, 11, 3, 7, 2};
            for (int i = 0; i < 6; i++) {
                cr_assert(eq(flt, yv[i], want[i]), "y[%d] = %g", i, (double)yv[i]);
            }
        }
    }
    /* Handed on: the error of work on q, covered by a fence that the work
     * on q2 waits for, is q2's wait's verdict (the host waits on the last
     * queue only), and q's next wait does not report it again. */
    plx_queue *q2 = NULL;
    OKS(fn->create_queue(f, &qp, &q2));
    put(hi, bad, sizeof bad);
    OKS(enqueue(q, ge, "ge", false, NULL, 0));
    plx_fence *handoff = NULL;
    OKS(fn->queue_signal(q, &handoff));
    OKS(enqueue(q2, r, "after", false, &handoff, 1));
    fn->destroy_fence(handoff);
    s = wait_all(q2);
    cr_assert(not(zero(ptr, s)), "the handed-on index error was not reported");
    cr_assert(not(zero(ptr, strstr(s->message, "layer 'ge': "))), "%s", s->message);
    free(s);
    cr_assert(zero(ptr, wait_all(q)));
    fn->destroy_queue(q2);
    /* The synchronous path says the same without the prefix. */
    put(hi, bad, sizeof bad);
    s = fn->execute_workload(ge);
    cr_assert(not(zero(ptr, s)));
    cr_assert(eq(str, s->message,
                 "gpu_opencl: layer 'ge' (gather_elements): index 7 (indices element 4) is out "
                 "of range"));
    free(s);
    fn->destroy_queue(q);
    fn->destroy_workload(r);
    fn->destroy_workload(ge);
    fn->destroy_tensor_handle(hx);
    fn->destroy_tensor_handle(hi);
    fn->destroy_tensor_handle(hy);
    fn->destroy_tensor_handle(hz);
    fn->destroy_factory(f);
    fn->destroy(b);
}

/* with profile on, every kernel's device time reaches record_event
 * at the wait, named by the kernel, of category "kernel", with the layer's
 * name and the queue's network id, placed by the clock mapping inside the
 * host's interval around the execution; with profile off, none. */
Test(ocl_queue, profiling_records_kernel_events) {
    chain3 c;
    plx_backend *b = chain_backend(&c);
    plx_queue_params qp = {sizeof qp, 42};
    plx_queue *q = NULL;
    OKS(fn->create_queue(c.f, &qp, &q));
    float x[N];
    input(x, 1);
    put(c.x, x, sizeof x);
    th_event_count = 0;
    for (int i = 0; i < 3; i++) {
        OKS(enqueue(q, c.w[i], c.names[i], false, NULL, 0));
    }
    OKS(wait_all(q));
    cr_assert(eq(sz, th_event_count, 0), "events without profile");
    for (int round = 0; round < 2; round++) {
        th_event_count = 0;
        uint64_t t0 = th_host.now_ns(&th_host);
        for (int i = 0; i < 3; i++) {
            OKS(enqueue(q, c.w[i], c.names[i], true, NULL, 0));
        }
        OKS(wait_all(q));
        uint64_t t1 = th_host.now_ns(&th_host);
        cr_assert(ge(sz, th_event_count, 3), "%zu events", th_event_count);
        size_t next_layer = 0; /* the layers' events come in enqueue order */
        for (size_t e = 0; e < th_event_count; e++) {
            const th_event *g = &th_events[e];
            cr_assert(eq(str, (char *)g->category, "kernel"));
            cr_assert(not(zero(u64, g->clock_sync_backend_ns)), "no clock mapping");
            while (next_layer < 3 && strcmp(g->layer, c.names[next_layer]) != 0) {
                next_layer++;
            }
            cr_assert(lt(sz, next_layer, 3), "event %zu of layer '%s'", e, g->layer);
            cr_assert(eq(u32, g->network_id, 42));
            cr_assert(gt(sz, strlen(g->name), 0));
            cr_assert(not(eq(str, (char *)g->name, "?")));
            /* A clock mapping is good to a fraction of a millisecond here;
             * 2 ms of slack keeps a loaded machine from failing it. */
            cr_assert(ge(u64, g->host_start_ns + 2000000u, t0), "event %zu starts before", e);
            cr_assert(le(u64, g->host_start_ns + g->duration_ns, t1 + 2000000u),
                      "event %zu ends after", e);
        }
    }
    fn->destroy_queue(q);
    chain_destroy(&c);
    fn->destroy(b);
}

/* a fence outlives its queue (destroy_fence after destroy_queue), and
 * a queue is destroyed with fences unwaited and profiled events pending. */
Test(ocl_queue, fences_and_queues_in_any_order) {
    chain3 c;
    plx_backend *b = chain_backend(&c);
    plx_queue_params qp = {sizeof qp, 1};
    plx_queue *q = NULL;
    OKS(fn->create_queue(c.f, &qp, &q));
    OKS(enqueue(q, c.w[0], "relu", true, NULL, 0));
    plx_fence *f1 = NULL, *f2 = NULL;
    OKS(fn->queue_signal(q, &f1));
    OKS(enqueue(q, c.w[1], "sqrt", true, NULL, 0));
    OKS(fn->queue_signal(q, &f2));
    cr_assert(zero(ptr, fn->fence_wait(f1)));
    fn->destroy_queue(q);
    bool done = false;
    OKS(fn->fence_query(f2, &done));
    cr_assert(done);
    cr_assert(zero(ptr, fn->fence_wait(f2)));
    fn->destroy_fence(f2);
    fn->destroy_fence(f1);
    chain_destroy(&c);
    fn->destroy(b);
}
