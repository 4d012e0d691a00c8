/* backends optimise the subgraphs assigned to them. testdev's option
 * `subgraph` makes it fuse add+relu, refuse its fusion, give relus back,
 * return bad substitutions, replace a non-convex set, or fail; cpu_ref is
 * the fallback. Every network must still compute relu(x + c) (or its
 * variant), and the notes and assignment must say what happened. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <plexus/network.h>

#include "test_util.h"

#define N 8

static plx_runtime *runtime_with(const char *mode) {
    plx_runtime_options o;
    tu_options(&o);
    const char *paths[] = {TESTDEV_DIR, CPU_REF_DIR};
    o.search_paths = paths;
    o.search_path_count = 2;
    plx_backend_option opt = {"testdev", "subgraph", mode};
    o.backend_options = &opt;
    o.backend_option_count = 1;
    return tu_create(&o);
}

static plx_tensor_info vec(void) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = PLX_DTYPE_FLOAT32;
    t.rank = 1;
    t.dims[0] = N;
    return t;
}

static float c_data[N];

/* x -> add(x, c) -> relu -> y. */
static plx_network *add_relu(void) {
    for (int i = 0; i < N; i++) {
        c_data[i] = (float)(i % 3) - 1.0f;
    }
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec();
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id x, c, a, r, y;
    OK(plx_network_add_input(n, "x", 0, &t, &x));
    OK(plx_network_add_constant(n, "c", &t, c_data, PLX_CONSTANT_BORROW, &c));
    OK(plx_network_add_layer(n, "add", PLX_OP_BINARY, &add, 2, 1, &a));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, a, 0));
    OK(plx_network_connect(n, c, 0, a, 1));
    OK(plx_network_connect(n, a, 0, r, 0));
    OK(plx_network_connect(n, r, 0, y, 0));
    return n;
}

static plx_optimized_network *optimize(plx_runtime *rt, plx_network *n, bool fallback) {
    const char *ids[] = {"testdev", "cpu_ref"};
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = ids;
    oo.backend_count = 2;
    oo.allow_fallback = fallback;
    plx_optimized_network *on = NULL;
    OK(plx_optimize(rt, n, &oo, &on));
    return on;
}

static const char *notes(const plx_optimized_network *on) {
    static char text[4096];
    text[0] = '\0';
    for (size_t i = 0; i < plx_optimized_network_note_count(on); i++) {
        strncat(text, plx_optimized_network_note(on, i), sizeof text - strlen(text) - 2);
        strcat(text, "\n");
    }
    return text;
}

static const plx_layer_assignment *layer(const plx_optimized_network *on, const char *name) {
    for (size_t i = 0; i < plx_optimized_network_layer_count(on); i++) {
        if (strcmp(plx_optimized_network_layer(on, i)->layer_name, name) == 0) {
            return plx_optimized_network_layer(on, i);
        }
    }
    return NULL;
}

/* Loads `on` (consumed) and checks y = relu(x + c). */
static void check_runs(plx_runtime *rt, plx_optimized_network **on) {
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, on, NULL, &ln));
    float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = 0.75f * (float)i - 2.5f;
    }
    plx_tensor_binding in = {0, x, sizeof x, 0}, out = {0, y, sizeof y, 0};
    OK(plx_loaded_network_execute(ln, &in, 1, &out, 1));
    for (int i = 0; i < N; i++) {
        float want = x[i] + c_data[i];
        cr_assert(eq(flt, y[i], want > 0 ? want : 0.0f), "y[%d]", i);
    }
    plx_loaded_network_unload(&ln);
}

/* The backend's substitution replaces add and relu by one precompiled
 * layer on testdev, named after both, which computes the same. */
Test(subgraph, fusion_replaces_layers) {
    plx_runtime *rt = runtime_with("fuse");
    plx_network *n = add_relu();
    plx_optimized_network *on = optimize(rt, n, true);
    const plx_layer_assignment *f = layer(on, "add+relu");
    cr_assert(not(zero(ptr, (void *)f)), "no fused layer:\n%s", notes(on));
    cr_assert(eq(int, f->op, PLX_OP_PRECOMPILED));
    cr_assert(eq(str, (char *)f->backend_id, "testdev"));
    cr_assert(zero(ptr, (void *)layer(on, "add")));
    cr_assert(zero(ptr, (void *)layer(on, "relu")));
    cr_assert(not(zero(ptr, strstr(notes(on), "backend 'testdev' replaced 2 layers by "
                                               "'add+relu' (add+relu)"))),
              "%s", notes(on));
    check_runs(rt, &on);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* Without the option nothing changes. */
Test(subgraph, no_hook_no_change) {
    plx_runtime *rt = runtime_with("none");
    plx_network *n = add_relu();
    plx_optimized_network *on = optimize(rt, n, true);
    cr_assert(not(zero(ptr, (void *)layer(on, "add"))));
    cr_assert(not(zero(ptr, (void *)layer(on, "relu"))));
    cr_assert(eq(sz, plx_optimized_network_note_count(on), 0), "%s", notes(on));
    check_runs(rt, &on);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* A precompiled layer its own check_layer refuses is rejected, noted. */
Test(subgraph, refused_substitution_is_dropped) {
    plx_runtime *rt = runtime_with("refuse_fused");
    plx_network *n = add_relu();
    plx_optimized_network *on = optimize(rt, n, true);
    cr_assert(not(zero(ptr, (void *)layer(on, "add"))));
    cr_assert(not(zero(ptr, (void *)layer(on, "relu"))));
    cr_assert(not(zero(ptr, strstr(notes(on), "backend 'testdev': substitution 'add+relu' "
                                               "rejected: its check_layer refused it: "
                                               "refuses its own fusions"))),
              "%s", notes(on));
    check_runs(rt, &on);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* A layer given back goes to the next backend, the reason kept as the
 * refusal; without fallback it has nowhere to go: an error naming it. */
Test(subgraph, given_back_layer_falls_back) {
    plx_runtime *rt = runtime_with("give_back");
    plx_network *n = add_relu();
    plx_optimized_network *on = optimize(rt, n, true);
    const plx_layer_assignment *r = layer(on, "relu");
    cr_assert(eq(str, (char *)r->backend_id, "cpu_ref"));
    cr_assert(eq(sz, r->refusal_count, 1));
    cr_assert(eq(str, (char *)r->refusals[0].backend_id, "testdev"));
    cr_assert(eq(str, (char *)r->refusals[0].reason, "given back: gives relus back"));
    cr_assert(eq(str, (char *)layer(on, "add")->backend_id, "testdev"));
    cr_assert(not(zero(ptr, strstr(notes(on), "backend 'testdev' gave back layer 'relu': "
                                               "gives relus back"))));
    check_runs(rt, &on);

    const char *ids[] = {"testdev", "cpu_ref"};
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = ids;
    oo.backend_count = 2;
    oo.allow_fallback = false;
    plx_optimized_network *none = NULL;
    plx_status s = plx_optimize(rt, n, &oo, &none);
    cr_assert(not(zero(ptr, s)));
    const char *msg = plx_status_get_message(s);
    cr_assert(not(zero(ptr, strstr(msg, "layer 'relu' (activation): testdev: given back: "
                                        "gives relus back"))),
              "%s", msg);
    plx_status_free(s);
    cr_assert(zero(ptr, none));
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* Bad substitutions are refused by the editor with what is wrong; testdev
 * returns that status, and the call's changes are discarded. */
Test(subgraph, bad_substitutions_are_refused) {
    static const struct {
        const char *mode, *why;
    } cases[] = {
        {"bad_output", "output 0 of layer 'relu' is read outside the replaced layers but is not "
                       "an output"},
        {"bad_input", "input 1 (layer 0, slot 0) is not a tensor the replaced layers read from "
                      "outside, or is given twice"},
        {"fail", "testdev fails optimize_subgraph (subgraph=fail)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        plx_runtime *rt = runtime_with(cases[i].mode);
        plx_network *n = add_relu();
        plx_optimized_network *on = optimize(rt, n, true);
        const char *text = notes(on);
        cr_assert(not(zero(ptr, strstr(text, "backend 'testdev': optimize_subgraph failed, its "
                                             "2 layers stay as assigned: "))),
                  "%s: %s", cases[i].mode, text);
        cr_assert(not(zero(ptr, strstr(text, cases[i].why))), "%s: %s", cases[i].mode, text);
        cr_assert(not(zero(ptr, (void *)layer(on, "add"))));
        cr_assert(not(zero(ptr, (void *)layer(on, "relu"))));
        check_runs(rt, &on);
        plx_network_destroy(&n);
        plx_runtime_destroy(&rt);
    }
}

/* x -> a = add(x, x) -> s = sigmoid(a) on cpu_ref -> a2 = add(a, s) ->
 * relu -> y: {a, a2, relu} is testdev's subgraph, but replacing it whole
 * is not convex (a -> s -> a2 leaves it). */
Test(subgraph, non_convex_substitution_is_refused) {
    plx_runtime *rt = runtime_with("whole");
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec();
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_activation_desc sig = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SIGMOID);
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id x, a, s, a2, r, y;
    OK(plx_network_add_input(n, "x", 0, &t, &x));
    OK(plx_network_add_layer(n, "a", PLX_OP_BINARY, &add, 2, 1, &a));
    OK(plx_network_add_layer(n, "s", PLX_OP_ACTIVATION, &sig, 1, 1, &s));
    OK(plx_network_add_layer(n, "a2", PLX_OP_BINARY, &add, 2, 1, &a2));
    OK(plx_network_add_layer(n, "relu", PLX_OP_ACTIVATION, &relu, 1, 1, &r));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, a, 0));
    OK(plx_network_connect(n, x, 0, a, 1));
    OK(plx_network_connect(n, a, 0, s, 0));
    OK(plx_network_connect(n, a, 0, a2, 0));
    OK(plx_network_connect(n, s, 0, a2, 1));
    OK(plx_network_connect(n, a2, 0, r, 0));
    OK(plx_network_connect(n, r, 0, y, 0));
    plx_optimized_network *on = optimize(rt, n, true);
    cr_assert(eq(str, (char *)layer(on, "s")->backend_id, "cpu_ref"));
    cr_assert(not(zero(ptr, strstr(notes(on), "the replaced layers are not convex"))), "%s",
              notes(on));
    cr_assert(not(zero(ptr, (void *)layer(on, "a2"))));
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    float xv[N], yv[N];
    for (int i = 0; i < N; i++) {
        xv[i] = 0.5f * (float)i - 2.0f;
    }
    plx_tensor_binding in = {0, xv, sizeof xv, 0}, out = {0, yv, sizeof yv, 0};
    OK(plx_loaded_network_execute(ln, &in, 1, &out, 1));
    for (int i = 0; i < N; i++) {
        float av = 2 * xv[i], v = av + 1.0f / (1.0f + expf(-av));
        cr_assert(le(flt, fabsf(yv[i] - (v > 0 ? v : 0.0f)), 1e-6f), "y[%d]", i);
    }
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}

/* Applications cannot add precompiled layers. */
Test(subgraph, applications_cannot_add_precompiled_layers) {
    plx_network *n;
    OK(plx_network_create(&n));
    plx_precompiled_desc d = {sizeof d, "x", NULL, 0};
    plx_layer_id id;
    plx_status s = plx_network_add_layer(n, "p", PLX_OP_PRECOMPILED, &d, 1, 1, &id);
    cr_assert(not(zero(ptr, s)));
    cr_assert(not(zero(ptr, strstr(plx_status_get_message(s), "not an operator applications "
                                                               "add"))));
    plx_status_free(s);
    plx_network_destroy(&n);
}

/* Two fusions in a chain: the second's input is the first's output, which
 * the first substitution moved to its new layer. */
Test(subgraph, chained_fusions) {
    plx_runtime *rt = runtime_with("fuse");
    for (int i = 0; i < N; i++) {
        c_data[i] = (float)(i % 3) - 1.0f;
    }
    plx_network *n;
    OK(plx_network_create(&n));
    plx_tensor_info t = vec();
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_layer_id x, c, a1, r1, a2, r2, y;
    OK(plx_network_add_input(n, "x", 0, &t, &x));
    OK(plx_network_add_constant(n, "c", &t, c_data, PLX_CONSTANT_BORROW, &c));
    OK(plx_network_add_layer(n, "a1", PLX_OP_BINARY, &add, 2, 1, &a1));
    OK(plx_network_add_layer(n, "r1", PLX_OP_ACTIVATION, &relu, 1, 1, &r1));
    OK(plx_network_add_layer(n, "a2", PLX_OP_BINARY, &add, 2, 1, &a2));
    OK(plx_network_add_layer(n, "r2", PLX_OP_ACTIVATION, &relu, 1, 1, &r2));
    OK(plx_network_add_output(n, "y", 0, &y));
    OK(plx_network_connect(n, x, 0, a1, 0));
    OK(plx_network_connect(n, c, 0, a1, 1));
    OK(plx_network_connect(n, a1, 0, r1, 0));
    OK(plx_network_connect(n, r1, 0, a2, 0));
    OK(plx_network_connect(n, c, 0, a2, 1));
    OK(plx_network_connect(n, a2, 0, r2, 0));
    OK(plx_network_connect(n, r2, 0, y, 0));
    plx_optimized_network *on = optimize(rt, n, true);
    cr_assert(not(zero(ptr, (void *)layer(on, "a1+r1"))), "%s", notes(on));
    cr_assert(not(zero(ptr, (void *)layer(on, "a2+r2"))), "%s", notes(on));
    plx_loaded_network *ln;
    OK(plx_runtime_load_network(rt, &on, NULL, &ln));
    float xv[N], yv[N];
    for (int i = 0; i < N; i++) {
        xv[i] = 0.75f * (float)i - 2.5f;
    }
    plx_tensor_binding in = {0, xv, sizeof xv, 0}, out = {0, yv, sizeof yv, 0};
    OK(plx_loaded_network_execute(ln, &in, 1, &out, 1));
    for (int i = 0; i < N; i++) {
        float v = xv[i] + c_data[i];
        v = (v > 0 ? v : 0.0f) + c_data[i];
        cr_assert(eq(flt, yv[i], v > 0 ? v : 0.0f), "y[%d]", i);
    }
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&n);
    plx_runtime_destroy(&rt);
}
