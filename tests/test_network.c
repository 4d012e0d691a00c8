/* Networks end to end: the builder's validation, the optimiser's
 * assignment and edge layers, and the loaded network's execution rules
 * (docs/loaded-network.md). Backends: cpu_ref and the test-only testdev (see
 * tests/testdev/testdev_backend.c). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <plexus/network.h>

#include "alloc_counter.h"
#include "test_util.h"

static plx_runtime *runtime_with(const char *testdev_import) {
    plx_runtime_options o;
    tu_options(&o);
    const char *paths[] = {CPU_REF_DIR, TESTDEV_DIR, FAKE_PLUGIN_DIR "/fake_abi_1_0.so"};
    o.search_paths = paths;
    o.search_path_count = 3;
    plx_backend_option opt = {"testdev", "import", testdev_import};
    if (testdev_import) {
        o.backend_options = &opt;
        o.backend_option_count = 1;
    }
    return tu_create(&o);
}

static plx_tensor_info f32(uint32_t rank, const int64_t *dims) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = PLX_DTYPE_FLOAT32;
    t.rank = rank;
    for (uint32_t i = 0; i < rank; i++) {
        t.dims[i] = dims[i];
    }
    return t;
}

static const int64_t shape16[] = {1, 16};

/* input(0) -> act(func, name) -> output(0) */
static plx_network *unary_net(const char *layer_name, plx_op op, const void *desc) {
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = f32(2, shape16);
    plx_layer_id in, mid, out;
    OK(plx_network_add_input(n, "x", 0, &t, &in));
    OK(plx_network_add_layer(n, layer_name, op, desc, 1, 1, &mid));
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, in, 0, mid, 0));
    OK(plx_network_connect(n, mid, 0, out, 0));
    return n;
}

static plx_network *relu_net(void) {
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    return unary_net("relu", PLX_OP_ACTIVATION, &relu);
}

static plx_loaded_network *load(plx_runtime *rt, plx_network *n, const char *const *backends,
                                size_t count, bool import, bool exp) {
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = backends;
    oo.backend_count = count;
    oo.import_enabled = import;
    oo.export_enabled = exp;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    cr_assert(zero(ptr, on));
    return ln;
}

/* plx_runtime_load_network takes the optimized network also when it
 * refuses it: a network optimised for another runtime, bad options. */
Test(network, load_refuses_a_network_of_another_runtime) {
    plx_runtime *rt = runtime_with(NULL), *other = runtime_with(NULL);
    plx_network *n = relu_net();
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *b[] = {"cpu_ref"};
    oo.backends = b;
    oo.backend_count = 1;
    plx_optimized_network *on = NULL;
    plx_loaded_network *ln = NULL;
    OK(plx_optimize(other, n, &oo, &on));
    FAILS_WITH(plx_runtime_load_network(rt, &on, NULL, &ln),
               "the network was optimised for another runtime");
    cr_assert(zero(ptr, on));
    cr_assert(zero(ptr, ln));
    OK(plx_optimize(rt, n, &oo, &on));
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.struct_size = 4;
    FAILS_WITH(plx_runtime_load_network(rt, &on, &lo, &ln), "struct_size too small");
    cr_assert(zero(ptr, on));
    plx_network_destroy(&n);
    plx_runtime_destroy(&other);
    plx_runtime_destroy(&rt);
}

static void fill(float *x, size_t n, float start) {
    for (size_t i = 0; i < n; i++) {
        x[i] = start + (float)i * 0.5f;
    }
}

static void run1(plx_loaded_network *ln, float *x, float *y, size_t n) {
    plx_tensor_binding in = {0, x, n * sizeof *x, 0};
    plx_tensor_binding out = {0, y, n * sizeof *y, 0};
    OK(plx_loaded_network_execute(ln, &in, 1, &out, 1));
}

Test(network, relu_on_cpu_ref) {
    plx_runtime *rt = runtime_with(NULL);
    plx_network *n = relu_net();
    const char *b[] = {"cpu_ref"};
    plx_loaded_network *ln = load(rt, n, b, 1, false, false);
    float x[16], y[16];
    fill(x, 16, -4.0f);
    run1(ln, x, y, 16);
    for (int i = 0; i < 16; i++) {
        cr_assert(eq(flt, y[i], x[i] > 0 ? x[i] : 0.0f), "y[%d]", i);
    }
    plx_tensor_info info;
    OK(plx_loaded_network_input_info(ln, 0, &info));
    cr_assert(eq(u32, info.rank, 2));
    cr_assert(eq(i64, info.dims[1], 16));
    FAILS_WITH(plx_loaded_network_output_info(ln, 7, &info), "output binding id 7");
    plx_loaded_network_unload(&ln);
    cr_assert(zero(ptr, ln));
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

Test(network, builder_rejects_bad_graphs) {
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = f32(2, shape16);
    plx_layer_id in, r1, out, out2;
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    OK(plx_network_add_input(n, "x", 0, &t, &in));
    FAILS_WITH(plx_network_add_input(n, "x", 1, &t, NULL), "layer 'x': the name is already used");
    OK(plx_network_add_layer(n, "r1", PLX_OP_ACTIVATION, &relu, 1, 1, &r1));
    FAILS_WITH(plx_network_add_layer(n, "r2", PLX_OP_ACTIVATION, &relu, 2, 1, NULL),
               "layer 'r2' (activation): takes 1 to 1 inputs, got 2");
    FAILS_WITH(plx_network_add_layer(n, "r3", PLX_OP_ACTIVATION, NULL, 1, 1, NULL),
               "layer 'r3' (activation): descriptor is NULL");
    FAILS_WITH(plx_network_connect(n, in, 1, r1, 0), "layer 'x' (input) has 1 outputs");
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, in, 0, r1, 0));
    FAILS_WITH(plx_network_connect(n, in, 0, r1, 0), "input 0 is already connected to 'x'");
    /* Unconnected input slot. */
    FAILS_WITH(plx_network_validate(n), "layer 'y' (output): input 0 is not connected");
    OK(plx_network_connect(n, r1, 0, out, 0));
    OK(plx_network_validate(n));
    /* Duplicate binding id among outputs. */
    OK(plx_network_add_output(n, "y2", 0, &out2));
    OK(plx_network_connect(n, r1, 0, out2, 0));
    FAILS_WITH(plx_network_validate(n), "binding id 0 is already used by 'y'");
    plx_network_destroy(&n);

    /* A cycle: a -> b -> a. */
    OK(plx_network_create(&n));
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_layer_id a, b2;
    OK(plx_network_add_input(n, "x", 0, &t, &in));
    OK(plx_network_add_layer(n, "a", PLX_OP_BINARY, &add, 2, 1, &a));
    OK(plx_network_add_layer(n, "b", PLX_OP_ACTIVATION, &relu, 1, 1, &b2));
    OK(plx_network_connect(n, in, 0, a, 0));
    OK(plx_network_connect(n, b2, 0, a, 1));
    OK(plx_network_connect(n, a, 0, b2, 0));
    FAILS_WITH(plx_network_validate(n), "is on a cycle");
    plx_network_destroy(&n);

    /* An output info that contradicts inference. */
    n = relu_net();
    const int64_t wrong[] = {1, 8};
    plx_tensor_info w = f32(2, wrong);
    OK(plx_network_set_output_info(n, 1, 0, &w));
    FAILS_WITH(plx_network_validate(n),
               "layer 'relu' (activation): output 0 is set to float32 [1,8] but inference gives "
               "float32 [1,16]");
    plx_network_destroy(&n);

    /* A shape whose byte size overflows. */
    OK(plx_network_create(&n));
    const int64_t huge[] = {INT64_MAX / 2, 4};
    plx_tensor_info h = f32(2, huge);
    FAILS_WITH(plx_network_add_input(n, "big", 0, &h, NULL), "overflows");
    plx_network_destroy(&n);
}

/* Preference order, fallback with its reason, and the copy layer between
 * testdev (exports nothing) and cpu_ref. */
Test(network, fallback_is_visible_and_copies_are_inserted) {
    plx_runtime *rt = runtime_with(NULL);
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = f32(2, shape16);
    plx_layer_id in, relu, sq, out;
    plx_activation_desc rd = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_unary_desc ud = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    OK(plx_network_add_input(n, "x", 0, &t, &in));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &rd, 1, 1, &relu));
    OK(plx_network_add_layer(n, "sqrt", PLX_OP_UNARY, &ud, 1, 1, &sq));
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, in, 0, relu, 0));
    OK(plx_network_connect(n, relu, 0, sq, 0));
    OK(plx_network_connect(n, sq, 0, out, 0));

    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *b[] = {"testdev", "nosuch", "fake_abi_1_0", "cpu_ref"};
    oo.backends = b;
    oo.backend_count = 4;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    size_t count = plx_optimized_network_layer_count(on);
    cr_assert(eq(sz, count, 5), "input, relu, copy, sqrt, output");
    const char *expect_layer[] = {"x", "relu", NULL, "sqrt", "y"};
    const char *expect_backend[] = {"testdev", "testdev", "cpu_ref", "cpu_ref", "cpu_ref"};
    for (size_t i = 0; i < count; i++) {
        const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
        cr_assert(eq(str, (char *)a->backend_id, (char *)expect_backend[i]), "layer %zu", i);
        if (expect_layer[i]) {
            cr_assert(eq(str, (char *)a->layer_name, (char *)expect_layer[i]));
            cr_assert(not(a->inserted));
        } else {
            cr_assert(a->inserted);
            cr_assert(eq(int, a->op, PLX_OP_MEM_COPY));
        }
    }
    const plx_layer_assignment *sqa = plx_optimized_network_layer(on, 3);
    cr_assert(eq(sz, sqa->refusal_count, 1));
    cr_assert(eq(str, (char *)sqa->refusals[0].backend_id, "testdev"));
    /* testdev's reason begins "testdev runs only": the host drops the id,
     * which it shows before every reason (R-18 (1)). */
    cr_assert(eq(str, (char *)sqa->refusals[0].reason,
                 "runs only float32 relu, add of equal shapes and constants, not unary"));
    const char *summary = plx_optimized_network_summary(on);
    cr_assert(not(zero(ptr, strstr(summary, "'sqrt' (unary) fell back from testdev to cpu_ref"))),
              "%s", summary);
    cr_assert(not(zero(ptr, strstr(summary, "2 layers on testdev"))), "%s", summary);
    /* The ids that could not be used are noted with why. */
    cr_assert(eq(sz, plx_optimized_network_note_count(on), 2));
    cr_assert(eq(str, (char *)plx_optimized_network_note(on, 0), "backend 'nosuch' is not loaded"));
    cr_assert(not(zero(ptr, strstr(plx_optimized_network_note(on, 1), "'fake_abi_1_0' runs no layers"))));

    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    float x[16], y[16];
    fill(x, 16, -3.0f);
    run1(ln, x, y, 16);
    for (int i = 0; i < 16; i++) {
        cr_assert(eq(flt, y[i], sqrtf(x[i] > 0 ? x[i] : 0.0f)), "y[%d]", i);
    }
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* input -> sqrt (cpu_ref) -> relu (testdev) -> output: the cpu_ref ->
 * testdev edge is an import when import is enabled and testdev imports
 * malloc (what cpu_ref exports), a copy otherwise. */
static void edge_case(const char *testdev_import, bool import, plx_op expected) {
    plx_runtime *rt = runtime_with(testdev_import);
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = f32(2, shape16);
    plx_layer_id in, sq, relu, out;
    plx_activation_desc rd = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_unary_desc ud = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    OK(plx_network_add_input(n, "x", 0, &t, &in));
    OK(plx_network_add_layer(n, "sqrt", PLX_OP_UNARY, &ud, 1, 1, &sq));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &rd, 1, 1, &relu));
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, in, 0, sq, 0));
    OK(plx_network_connect(n, sq, 0, relu, 0));
    OK(plx_network_connect(n, relu, 0, out, 0));
    const char *b[] = {"testdev", "cpu_ref"};
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = b;
    oo.backend_count = 2;
    oo.import_enabled = import;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    bool found = false;
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
        if (a->inserted) {
            cr_assert(eq(int, a->op, expected), "%s", a->layer_name);
            cr_assert(eq(str, (char *)a->backend_id, "testdev"));
            found = true;
        }
    }
    cr_assert(found);
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    float x[16], y[16];
    fill(x, 16, 0.0f);
    for (int rep = 0; rep < 2; rep++) {
        run1(ln, x, y, 16);
        for (int i = 0; i < 16; i++) {
            cr_assert(eq(flt, y[i], sqrtf(x[i])), "y[%d]", i);
        }
    }
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

Test(network, import_layer_when_sources_match) {
    edge_case("malloc", true, PLX_OP_MEM_IMPORT);
}

Test(network, copy_layer_when_import_disabled) {
    edge_case("malloc", false, PLX_OP_MEM_COPY);
}

Test(network, copy_layer_when_sources_differ) {
    edge_case("dma_buf", true, PLX_OP_MEM_COPY);
}

/* How many mappings of testdev's memfds the process holds (testdev names
 * them "testdev"; /proc/self/maps shows "/memfd:testdev (deleted)"). */
static int testdev_memfd_mappings(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    cr_assert(not(zero(ptr, f)));
    char line[512];
    int count = 0;
    while (fgets(line, sizeof line, f)) {
        count += strstr(line, "/memfd:testdev") != NULL;
    }
    fclose(f);
    return count;
}

typedef struct lend_probe {
    int mappings_in_abs; /* memfd mappings while cpu_ref's abs runs: -1 not seen */
} lend_probe;

static void count_mappings(void *user, const char *layer, plx_op op, const char *backend,
                           uint32_t slot, const plx_tensor_info *info, const void *data) {
    (void)op;
    (void)backend;
    (void)slot;
    (void)info;
    (void)data;
    if (strcmp(layer, "abs") == 0) {
        ((lend_probe *)user)->mappings_in_abs = testdev_memfd_mappings();
    }
}

/* x -> sum = x + x (testdev) -> abs (cpu_ref) -> y, testdev with the given
 * export option (NULL: none) and importing nothing, so that the testdev ->
 * cpu_ref edge is an import layer only when testdev lends dma-bufs
 * that cpu_ref imports. `memory`: testdev's memory option, NULL for
 * its own allocations. */
static plx_loaded_network *lend_case(plx_runtime **out_rt, const char *exports,
                                     const char *memory, plx_op expected,
                                     plx_network **out_network) {
    plx_runtime_options ro;
    tu_options(&ro);
    const char *paths[] = {CPU_REF_DIR, TESTDEV_DIR};
    ro.search_paths = paths;
    ro.search_path_count = 2;
    plx_backend_option opts[3] = {{"testdev", "import", "none"}};
    size_t count = 1;
    if (exports) {
        opts[count++] = (plx_backend_option){"testdev", "export", exports};
    }
    if (memory) {
        opts[count++] = (plx_backend_option){"testdev", "memory", memory};
    }
    ro.backend_options = opts;
    ro.backend_option_count = count;
    plx_runtime *rt = tu_create(&ro);
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = f32(2, shape16);
    plx_layer_id in, sum, abs_, out;
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_unary_desc ud = PLX_UNARY_DESC_INIT(PLX_UNARY_ABS);
    OK(plx_network_add_input(n, "x", 0, &t, &in));
    OK(plx_network_add_layer(n, "sum", PLX_OP_BINARY, &add, 2, 1, &sum));
    OK(plx_network_add_layer(n, "abs", PLX_OP_UNARY, &ud, 1, 1, &abs_));
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, in, 0, sum, 0));
    OK(plx_network_connect(n, in, 0, sum, 1));
    OK(plx_network_connect(n, sum, 0, abs_, 0));
    OK(plx_network_connect(n, abs_, 0, out, 0));
    const char *b[] = {"testdev", "cpu_ref"};
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = b;
    oo.backend_count = 2;
    oo.import_enabled = true;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    size_t inserted = 0;
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        const plx_layer_assignment *a = plx_optimized_network_layer(on, i);
        if (a->inserted) {
            inserted++;
            cr_assert(eq(int, a->op, expected), "%s", a->layer_name);
            cr_assert(eq(str, (char *)a->backend_id, "cpu_ref"));
            cr_assert(eq(str, (char *)a->layer_name,
                         expected == PLX_OP_MEM_IMPORT ? "sum:0 -> cpu_ref (import, dma_buf)"
                                                       : "sum:0 -> cpu_ref (copy)"));
        }
    }
    cr_assert(eq(sz, inserted, 1), "%s", plx_optimized_network_summary(on));
    const char *lent = strstr(plx_optimized_network_summary(on),
                              "import layer 'sum:0 -> cpu_ref (import, dma_buf)' reads testdev's "
                              "memory in place on cpu_ref, lent as dma_buf");
    cr_assert(eq(int, lent != NULL, expected == PLX_OP_MEM_IMPORT), "%s",
              plx_optimized_network_summary(on));
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.externally_managed_memory = memory != NULL;
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, &lo, &ln));
    *out_rt = rt;
    *out_network = n;
    return ln;
}

/* Runs the lending network on x (x[i] = (i - 5) * scale) and checks y = |2x|. */
static void run_lend(plx_loaded_network *ln, float scale) {
    float x[16], y[16];
    for (int i = 0; i < 16; i++) {
        x[i] = (float)(i - 5) * scale;
    }
    x[0] = scale;
    run1(ln, x, y, 16);
    for (int i = 0; i < 16; i++) {
        cr_assert(eq(flt, y[i], fabsf(2 * x[i])), "y[%d]", i);
    }
}

/* testdev lends the tensor it computes as a dma-buf (a memfd
 * standing in for one); cpu_ref imports the descriptor and reads testdev's
 * memory in place, over several executions: while cpu_ref's layer runs,
 * the process holds two mappings of testdev's memfd (testdev's own and
 * cpu_ref's import), and one after the execution (cpu_ref unmapped it at
 * unimport). Also with testdev's memory planned by the host in buffers
 * testdev allocates (memory=device, R-26; host buffers would need malloc
 * import): the lent tensor then lives in testdev's own memfd, not in a
 * planned buffer. */
Test(network, import_layer_lends_dma_buf) {
    static const char *const memories[] = {NULL, "device"};
    for (size_t m = 0; m < 2; m++) {
        plx_runtime *rt;
        plx_network *n;
        plx_loaded_network *ln = lend_case(&rt, "dma_buf", memories[m], PLX_OP_MEM_IMPORT, &n);
        lend_probe probe = {-1};
        plx_loaded_network_set_debug_callback(ln, count_mappings, &probe);
        for (int rep = 1; rep <= 3; rep++) {
            probe.mappings_in_abs = -1;
            run_lend(ln, (float)rep);
            cr_assert(eq(int, probe.mappings_in_abs, 2), "execution %d", rep);
            cr_assert(eq(int, testdev_memfd_mappings(), 1));
        }
        plx_loaded_network_unload(&ln);
        cr_assert(eq(int, testdev_memfd_mappings(), 0));
        plx_network_destroy(&n);
        plx_runtime_destroy(&rt);
    }
}

/* Without testdev's export option the same edge is a copy layer, and
 * nothing is a memfd. */
Test(network, copy_layer_without_dma_buf_export) {
    plx_runtime *rt;
    plx_network *n;
    plx_loaded_network *ln = lend_case(&rt, NULL, NULL, PLX_OP_MEM_COPY, &n);
    lend_probe probe = {-1};
    plx_loaded_network_set_debug_callback(ln, count_mappings, &probe);
    run_lend(ln, 1.0f);
    cr_assert(eq(int, probe.mappings_in_abs, 0));
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* a producer whose export_external_memory fails fails the execution,
 * naming the import layer and the producer's backend; the network stays
 * usable. */
Test(network, failed_dma_buf_export_names_the_layer) {
    plx_runtime *rt;
    plx_network *n;
    plx_loaded_network *ln = lend_case(&rt, "dma_buf_fail", NULL, PLX_OP_MEM_IMPORT, &n);
    run_lend(ln, 1.0f);
    float x[16], y[16];
    fill(x, 16, -1.0f);
    x[0] = -2.0f;
    plx_tensor_binding ib = {0, x, sizeof x, 0}, ob = {0, y, sizeof y, 0};
    plx_status s = plx_loaded_network_execute(ln, &ib, 1, &ob, 1);
    cr_assert(not(zero(ptr, s)));
    const char *msg = plx_status_get_message(s);
    cr_assert(not(zero(ptr, strstr(msg, "layer 'sum:0 -> cpu_ref (import, dma_buf)'"))), "%s",
              msg);
    cr_assert(not(zero(ptr, strstr(msg, "testdev cannot export the producer's memory as a "
                                        "dma-buf"))), "%s", msg);
    cr_assert(not(zero(ptr, strstr(msg, "fails on purpose (export=dma_buf_fail)"))), "%s", msg);
    plx_status_free(s);
    run_lend(ln, 2.0f);
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

Test(network, no_fallback_lists_every_refusal) {
    plx_runtime *rt = runtime_with(NULL);
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = f32(2, shape16);
    plx_layer_id in, s1, s2, out;
    plx_unary_desc ud = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    OK(plx_network_add_input(n, "x", 0, &t, &in));
    OK(plx_network_add_layer(n, "s1", PLX_OP_UNARY, &ud, 1, 1, &s1));
    OK(plx_network_add_layer(n, "s2", PLX_OP_UNARY, &ud, 1, 1, &s2));
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, in, 0, s1, 0));
    OK(plx_network_connect(n, s1, 0, s2, 0));
    OK(plx_network_connect(n, s2, 0, out, 0));
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *b[] = {"testdev", "cpu_ref"};
    oo.backends = b;
    oo.backend_count = 2;
    oo.allow_fallback = false;
    plx_optimized_network *on = NULL;
    plx_status s = plx_optimize(rt, n, &oo, &on);
    cr_assert(not(zero(ptr, s)));
    const char *m = plx_status_get_message(s);
    cr_assert(not(zero(ptr, strstr(m, "2 layers cannot be assigned (fallback is disabled)"))), "%s", m);
    cr_assert(not(zero(ptr, strstr(m, "layer 's1' (unary): testdev: runs only"))), "%s", m);
    cr_assert(not(zero(ptr, strstr(m, "layer 's2' (unary): testdev:"))), "%s", m);
    cr_assert(zero(ptr, on));
    plx_status_free(s);

    const char *none[] = {"nosuch", "fake_abi_1_0"};
    oo.backends = none;
    oo.allow_fallback = true;
    FAILS_WITH(plx_optimize(rt, n, &oo, &on),
               "none of the requested backends can run layers (asked for: nosuch, fake_abi_1_0; "
               "available: cpu_ref, testdev");
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* An imported input is read in place: the probe layer reports the address
 * it read from. Without import, the backend reads its own copy. */
Test(network, input_import_is_zero_copy) {
    plx_runtime *rt = runtime_with(NULL);
    for (int import = 0; import < 2; import++) {
        plx_network *n;
        OK(plx_network_create(&n));
        const int64_t one[] = {1};
        plx_tensor_info t = f32(1, one);
        plx_layer_id in, probe, out;
        plx_cast_desc cd = PLX_CAST_DESC_INIT(PLX_DTYPE_INT64);
        OK(plx_network_add_input(n, "x", 0, &t, &in));
        OK(plx_network_add_layer(n, "probe", PLX_OP_CAST, &cd, 1, 1, &probe));
        OK(plx_network_add_output(n, "y", 0, &out));
        OK(plx_network_connect(n, in, 0, probe, 0));
        OK(plx_network_connect(n, probe, 0, out, 0));
        const char *b[] = {"testdev"};
        plx_loaded_network *ln = load(rt, n, b, 1, import, false);
        float x = 1.0f;
        int64_t address = 0;
        plx_tensor_binding ib = {0, &x, sizeof x, 0}, ob = {0, &address, sizeof address, 0};
        OK(plx_loaded_network_execute(ln, &ib, 1, &ob, 1));
        if (import) {
            cr_assert(eq(i64, address, (int64_t)(uintptr_t)&x));
        } else {
            cr_assert(ne(i64, address, (int64_t)(uintptr_t)&x));
        }
        /* A buffer that misses the element alignment is not handed to the
         * backend: the host stages it (a reported copy, not a failure). */
        if (import) {
            _Alignas(8) char raw[16];
            memcpy(raw + 1, &x, sizeof x);
            plx_tensor_binding odd = {0, raw + 1, sizeof x, 0};
            OK(plx_loaded_network_execute(ln, &odd, 1, &ob, 1));
            cr_assert(ne(i64, address, (int64_t)(uintptr_t)(raw + 1)));
            cr_assert(eq(u64, plx_loaded_network_staged_copy_count(ln), 1));
        }
        cr_assert(eq(u64, plx_loaded_network_staged_copy_count(ln), (uint64_t)import));
        plx_loaded_network_unload(&ln);
        plx_network_destroy(&n);
    }
    plx_runtime_destroy(&rt);
}

typedef struct seen_outputs {
    const void *data[8];
    const char *layer[8];
    size_t count;
} seen_outputs;

static void record(void *user, const char *layer, plx_op op, const char *backend, uint32_t slot,
                   const plx_tensor_info *info, const void *data) {
    (void)op;
    (void)backend;
    (void)slot;
    (void)info;
    seen_outputs *s = user;
    if (s->count < 8) {
        s->layer[s->count] = layer;
        s->data[s->count] = data;
    }
    s->count++;
}

/* An exported output is written in place by the producing workload. */
Test(network, output_export_is_zero_copy) {
    plx_runtime *rt = runtime_with(NULL);
    for (int exp = 0; exp < 2; exp++) {
        plx_network *n = relu_net();
        const char *b[] = {"cpu_ref"};
        plx_loaded_network *ln = load(rt, n, b, 1, false, exp);
        seen_outputs seen = {0};
        plx_loaded_network_set_debug_callback(ln, record, &seen);
        float x[16], y[16];
        fill(x, 16, -1.0f);
        run1(ln, x, y, 16);
        cr_assert(eq(sz, seen.count, 1));
        cr_assert(eq(str, (char *)seen.layer[0], "relu"));
        if (exp) {
            cr_assert(eq(ptr, (void *)seen.data[0], y));
        } else {
            cr_assert(ne(ptr, (void *)seen.data[0], y));
        }
        for (int i = 0; i < 16; i++) {
            cr_assert(eq(flt, y[i], x[i] > 0 ? x[i] : 0.0f));
        }
        plx_loaded_network_unload(&ln);
        plx_network_destroy(&n);
    }
    plx_runtime_destroy(&rt);
}

Test(network, execute_validates_bindings) {
    plx_runtime *rt = runtime_with(NULL);
    plx_network *n = relu_net();
    const char *b[] = {"cpu_ref"};
    plx_loaded_network *ln = load(rt, n, b, 1, false, false);
    float x[16], y[16];
    plx_tensor_binding in = {0, x, sizeof x, 0}, out = {0, y, sizeof y, 0};
    plx_tensor_binding two[] = {in, in};
    plx_tensor_binding unknown = {5, x, sizeof x, 0};
    plx_tensor_binding small = {0, x, 8, 0};
    plx_tensor_binding null_data = {0, NULL, sizeof x, 0};
    FAILS_WITH(plx_loaded_network_execute(ln, NULL, 0, &out, 1),
               "the network has 1 inputs, the call gives 0");
    FAILS_WITH(plx_loaded_network_execute(ln, &in, 1, &out, 0),
               "the network has 1 outputs, the call gives 0");
    FAILS_WITH(plx_loaded_network_execute(ln, &unknown, 1, &out, 1),
               "input binding id 5 is not one of the network's inputs");
    FAILS_WITH(plx_loaded_network_execute(ln, two, 2, &out, 1),
               "the network has 1 inputs, the call gives 2");
    FAILS_WITH(plx_loaded_network_execute(ln, &small, 1, &out, 1),
               "input binding id 0 ('x'): 8 bytes given, the tensor needs 64");
    FAILS_WITH(plx_loaded_network_execute(ln, &null_data, 1, &out, 1),
               "input binding id 0: data is NULL");
    /* Still usable. */
    fill(x, 16, -2.0f);
    OK(plx_loaded_network_execute(ln, &in, 1, &out, 1));
    cr_assert(eq(flt, y[15], x[15]));
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* Two inputs with the same id given twice is an error naming it. */
Test(network, duplicate_binding_in_call) {
    plx_runtime *rt = runtime_with(NULL);
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = f32(2, shape16);
    plx_layer_id a, b, add, out;
    plx_binary_desc ad = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    OK(plx_network_add_input(n, "a", 0, &t, &a));
    OK(plx_network_add_input(n, "b", 1, &t, &b));
    OK(plx_network_add_layer(n, "add", PLX_OP_BINARY, &ad, 2, 1, &add));
    OK(plx_network_add_output(n, "y", 0, &out));
    OK(plx_network_connect(n, a, 0, add, 0));
    OK(plx_network_connect(n, b, 0, add, 1));
    OK(plx_network_connect(n, add, 0, out, 0));
    const char *be[] = {"cpu_ref"};
    plx_loaded_network *ln = load(rt, n, be, 1, true, true);
    float x[16], z[16], y[16];
    fill(x, 16, 1.0f);
    fill(z, 16, 2.0f);
    plx_tensor_binding dup[] = {{0, x, sizeof x, 0}, {0, z, sizeof z, 0}};
    plx_tensor_binding ok[] = {{1, z, sizeof z, 0}, {0, x, sizeof x, 0}};
    plx_tensor_binding ob = {0, y, sizeof y, 0};
    FAILS_WITH(plx_loaded_network_execute(ln, dup, 2, &ob, 1),
               "input binding id 0 is given more than once");
    OK(plx_loaded_network_execute(ln, ok, 2, &ob, 1));
    for (int i = 0; i < 16; i++) {
        cr_assert(eq(flt, y[i], x[i] + z[i]));
    }
    cr_assert(eq(sz, plx_loaded_network_input_count(ln), 2));
    cr_assert(eq(i32, plx_loaded_network_input_binding(ln, 1), 1));
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

Test(network, failing_workload_leaves_network_usable) {
    plx_runtime *rt = runtime_with(NULL);
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_network *n = unary_net("fail_relu", PLX_OP_ACTIVATION, &relu);
    const char *b[] = {"testdev"};
    plx_loaded_network *ln = load(rt, n, b, 1, false, false);
    float x[16], y[16];
    fill(x, 16, -1.0f);
    plx_tensor_binding in = {0, x, sizeof x, 0}, out = {0, y, sizeof y, 0};
    FAILS_WITH(plx_loaded_network_execute(ln, &in, 1, &out, 1),
               "layer 'fail_relu' (activation) on testdev: execution failed: testdev: workload "
               "'fail_relu' fails on purpose");
    fill(x, 16, 1.0f);
    OK(plx_loaded_network_execute(ln, &in, 1, &out, 1));
    cr_assert(eq(flt, y[3], x[3]));
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* Constants are computed at load and feed every execution. */
Test(network, constants_and_several_networks) {
    plx_runtime *rt = runtime_with(NULL);
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = f32(2, shape16);
    float bias[16];
    fill(bias, 16, 10.0f);
    plx_layer_id in, c, add, out;
    plx_binary_desc ad = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    OK(plx_network_add_input(n, "x", 0, &t, &in));
    OK(plx_network_add_constant(n, "bias", &t, bias, PLX_CONSTANT_COPY, &c));
    OK(plx_network_add_layer(n, "add", PLX_OP_BINARY, &ad, 2, 1, &add));
    OK(plx_network_add_output(n, "y", 3, &out));
    OK(plx_network_connect(n, in, 0, add, 0));
    OK(plx_network_connect(n, c, 0, add, 1));
    OK(plx_network_connect(n, add, 0, out, 0));
    const char *b[] = {"cpu_ref"};
    plx_loaded_network *l1 = load(rt, n, b, 1, false, false);
    bias[0] = -1000.0f; /* copied: no effect */
    plx_network *r = relu_net();
    plx_loaded_network *l2 = load(rt, r, b, 1, false, false);
    cr_assert(ne(u32, plx_loaded_network_id(l1), plx_loaded_network_id(l2)));
    plx_network_destroy(&n);
    plx_network_destroy(&r);

    float x[16], y[16];
    fill(x, 16, 0.0f);
    for (int rep = 0; rep < 3; rep++) {
        plx_tensor_binding in1 = {0, x, sizeof x, 0}, out1 = {3, y, sizeof y, 0};
        OK(plx_loaded_network_execute(l1, &in1, 1, &out1, 1));
        cr_assert(eq(flt, y[0], 10.0f));
        cr_assert(eq(flt, y[15], 0.5f * 15 + 10.0f + 0.5f * 15));
        run1(l2, x, y, 16);
        cr_assert(eq(flt, y[2], 1.0f));
        /* Working memory can go and come back. */
        plx_loaded_network_release_working_memory(l1);
    }
    plx_loaded_network_unload(&l2);
    /* l1 stays loaded: destroying the runtime unloads it. */
    plx_runtime_destroy(&rt);
}

/* docs/loaded-network.md, Executing 5: no heap allocation per execution in
 * steady state. */
Test(network, execute_allocates_nothing) {
    if (!alloc_counter_available()) {
        cr_skip_test("the allocator is replaced by a sanitizer or valgrind");
    }
    plx_runtime *rt = runtime_with(NULL);
    plx_network *n = relu_net();
    const char *b[] = {"cpu_ref"};
    plx_loaded_network *ln = load(rt, n, b, 1, true, true);
    float x[16], y[16];
    fill(x, 16, -1.0f);
    run1(ln, x, y, 16); /* first execution allocates working memory */
    alloc_counter_start();
    for (int i = 0; i < 100; i++) {
        plx_tensor_binding in = {0, x, sizeof x, 0}, out = {0, y, sizeof y, 0};
        plx_status s = plx_loaded_network_execute(ln, &in, 1, &out, 1);
        if (s) {
            alloc_counter_stop();
            cr_assert(zero(ptr, s), "execute: %s", plx_status_get_message(s));
        }
    }
    size_t allocs = alloc_counter_stop();
    cr_assert(eq(sz, allocs, 0), "%zu allocations in 100 executions", allocs);
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* A zero-copy input whose memory another backend imports: the import layer
 * is bound to the caller's buffer at every execution. */
Test(network, imported_input_feeds_an_import_layer) {
    plx_runtime *rt = runtime_with("malloc");
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = f32(2, shape16);
    plx_layer_id in, sq, relu, y0, y1;
    plx_activation_desc rd = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_unary_desc ud = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    OK(plx_network_add_input(n, "x", 0, &t, &in));
    OK(plx_network_add_layer(n, "sqrt", PLX_OP_UNARY, &ud, 1, 1, &sq));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &rd, 1, 1, &relu));
    OK(plx_network_add_output(n, "y0", 0, &y0));
    OK(plx_network_add_output(n, "y1", 1, &y1));
    OK(plx_network_connect(n, in, 0, sq, 0));
    OK(plx_network_connect(n, in, 0, relu, 0));
    OK(plx_network_connect(n, sq, 0, y0, 0));
    OK(plx_network_connect(n, relu, 0, y1, 0));
    const char *b[] = {"testdev", "cpu_ref"};
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = b;
    oo.backend_count = 2;
    oo.import_enabled = true;
    oo.export_enabled = true;
    plx_optimized_network *on;
    OK(plx_optimize(rt, n, &oo, &on));
    size_t imports = 0;
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        imports += plx_optimized_network_layer(on, i)->op == PLX_OP_MEM_IMPORT;
    }
    cr_assert(eq(sz, imports, 1), "%s", plx_optimized_network_summary(on));
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    for (int rep = 0; rep < 3; rep++) {
        /* A different caller buffer every time. */
        float *x = malloc(16 * sizeof *x), q[16], r[16];
        fill(x, 16, (float)rep);
        plx_tensor_binding ib = {0, x, 16 * sizeof *x, 0};
        plx_tensor_binding ob[] = {{0, q, sizeof q, 0}, {1, r, sizeof r, 0}};
        OK(plx_loaded_network_execute(ln, &ib, 1, ob, 2));
        for (int i = 0; i < 16; i++) {
            cr_assert(eq(flt, q[i], sqrtf(x[i])));
            cr_assert(eq(flt, r[i], x[i]));
        }
        free(x);
        plx_loaded_network_release_working_memory(ln);
    }
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

typedef struct seen_by_name {
    const char *names[8];
    const void *data[8];
    size_t count;
} seen_by_name;

static void record_named(void *user, const char *layer, plx_op op, const char *backend,
                         uint32_t slot, const plx_tensor_info *info, const void *data) {
    (void)op;
    (void)backend;
    (void)info;
    seen_by_name *s = user;
    if (s->count < 8 && slot == 0) {
        s->names[s->count] = layer;
        s->data[s->count++] = data;
    }
}

static const void *seen_data(const seen_by_name *s, const char *name) {
    for (size_t i = 0; i < s->count; i++) {
        if (strcmp(s->names[i], name) == 0) {
            return s->data[i];
        }
    }
    cr_assert(zero(ptr, (void *)name), "no debug output for layer %s", name);
    return NULL;
}

/* relu(a), relu(b) -> concat(axis) -> split(axis, 2) -> relu each -> outputs.
 * With rows == 1 the parts are contiguous: concat and split run in place
 * (cpu_ref has sub-tensors), which the debug callback shows as the parts'
 * memory lying inside the whole's. With rows == 2 they run as kernels. */
static void concat_split_case(int64_t rows) {
    plx_runtime *rt = runtime_with(NULL);
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t dims[] = {rows, 4};
    plx_tensor_info t = f32(2, dims);
    plx_activation_desc rd = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_axis_desc cd = PLX_AXIS_DESC_INIT(1);
    plx_split_desc sd = PLX_SPLIT_DESC_INIT(1);
    plx_layer_id a, b, ra, rb, cat, split, sa, sb, ya, yb;
    OK(plx_network_add_input(n, "a", 0, &t, &a));
    OK(plx_network_add_input(n, "b", 1, &t, &b));
    OK(plx_network_add_layer(n, "ra", PLX_OP_ACTIVATION, &rd, 1, 1, &ra));
    OK(plx_network_add_layer(n, "rb", PLX_OP_ACTIVATION, &rd, 1, 1, &rb));
    OK(plx_network_add_layer(n, "cat", PLX_OP_CONCAT, &cd, 2, 1, &cat));
    OK(plx_network_add_layer(n, "split", PLX_OP_SPLIT, &sd, 1, 2, &split));
    OK(plx_network_add_layer(n, "sa", PLX_OP_ACTIVATION, &rd, 1, 1, &sa));
    OK(plx_network_add_layer(n, "sb", PLX_OP_ACTIVATION, &rd, 1, 1, &sb));
    OK(plx_network_add_output(n, "ya", 0, &ya));
    OK(plx_network_add_output(n, "yb", 1, &yb));
    OK(plx_network_connect(n, a, 0, ra, 0));
    OK(plx_network_connect(n, b, 0, rb, 0));
    OK(plx_network_connect(n, ra, 0, cat, 0));
    OK(plx_network_connect(n, rb, 0, cat, 1));
    OK(plx_network_connect(n, cat, 0, split, 0));
    OK(plx_network_connect(n, split, 0, sa, 0));
    OK(plx_network_connect(n, split, 1, sb, 0));
    OK(plx_network_connect(n, sa, 0, ya, 0));
    OK(plx_network_connect(n, sb, 0, yb, 0));
    const char *be[] = {"cpu_ref"};
    plx_loaded_network *ln = load(rt, n, be, 1, false, false);
    seen_by_name seen = {0};
    plx_loaded_network_set_debug_callback(ln, record_named, &seen);
    float x0[8], x1[8], y0[8], y1[8];
    fill(x0, 8, -1.0f);
    fill(x1, 8, -2.0f);
    size_t bytes = (size_t)rows * 4 * sizeof(float);
    plx_tensor_binding in[] = {{0, x0, bytes, 0}, {1, x1, bytes, 0}};
    plx_tensor_binding out[] = {{0, y0, bytes, 0}, {1, y1, bytes, 0}};
    OK(plx_loaded_network_execute(ln, in, 2, out, 2));
    for (size_t i = 0; i < (size_t)rows * 4; i++) {
        cr_assert(eq(flt, y0[i], x0[i] > 0 ? x0[i] : 0.0f), "y0[%zu]", i);
        cr_assert(eq(flt, y1[i], x1[i] > 0 ? x1[i] : 0.0f), "y1[%zu]", i);
    }
    const char *whole = seen_data(&seen, "cat");
    bool in_place = seen_data(&seen, "ra") == whole && seen_data(&seen, "rb") == whole + bytes &&
                    seen_data(&seen, "split") == whole;
    if (rows == 1) {
        cr_assert(in_place, "concat and split should run in place");
    } else {
        cr_assert(not(in_place));
        cr_assert(ne(ptr, (void *)seen_data(&seen, "ra"), (void *)whole));
    }
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

Test(network, contiguous_concat_and_split_run_in_place) {
    concat_split_case(1);
}

Test(network, strided_concat_and_split_run_as_kernels) {
    concat_split_case(2);
}

/* Validation infers from what the builder set, not from an earlier
 * validation's result: a concat of int8 inputs sharing parameters gets
 * them; once one input's change, its output has none again (an earlier
 * result read as the builder's would have made it a requantizing concat,
 * plexus/ops.h). */
Test(network, validation_forgets_an_earlier_inference) {
    plx_network *n;
    OK(plx_network_create(&n));
    const int64_t dims[] = {1, 4};
    plx_tensor_info q = f32(2, dims);
    q.dtype = PLX_DTYPE_INT8;
    q.quant.kind = PLX_QUANT_PER_TENSOR;
    q.quant.scale = 0.5f;
    q.quant.zero_point = 1;
    plx_axis_desc d = PLX_AXIS_DESC_INIT(1);
    plx_layer_id a, b, cat, y;
    OK(plx_network_add_input(n, "a", 0, &q, &a));
    OK(plx_network_add_input(n, "b", 1, &q, &b));
    OK(plx_network_add_layer(n, "cat", PLX_OP_CONCAT, &d, 2, 1, &cat));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, a, 0, cat, 0));
    OK(plx_network_connect(n, b, 0, cat, 1));
    OK(plx_network_connect(n, cat, 0, y, 0));
    OK(plx_network_validate(n));
    plx_tensor_info got;
    OK(plx_network_output_info(n, cat, 0, &got));
    cr_assert(eq(int, got.quant.kind, PLX_QUANT_PER_TENSOR));
    cr_assert(eq(flt, got.quant.scale, 0.5f));
    q.quant.scale = 0.25f;
    OK(plx_network_set_output_info(n, b, 0, &q));
    OK(plx_network_validate(n));
    OK(plx_network_output_info(n, cat, 0, &got));
    cr_assert(eq(int, got.dtype, PLX_DTYPE_INT8));
    cr_assert(eq(int, got.quant.kind, PLX_QUANT_NONE));
    plx_network_destroy(&n);
}
