/* Control flow, resolved when the model is imported (for each
 * specialisation of a dynamic model, plexus/dynamic.h): `If` is replaced by
 * the branch its condition chooses, and `Loop` and `Scan` are unrolled,
 * their body imported once per iteration, so that backends see a static
 * network. What decides the control flow (If's condition, Loop's trip
 * count and condition) must therefore be known at import; when it is
 * computed from graph inputs, the importer reports those inputs
 * (onnxi_need_const), which a dynamic model then specialises on. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* At most this many iterations are unrolled for one node, and this many
 * body nodes imported in all for the model (nested loops included). */
#define MAX_ITERATIONS 4096
#define MAX_UNROLLED_NODES 65536

plx_status onnxi_conv_if(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (!st) {
        st = onnxi_need_const(n, 0, "cond");
    }
    if (st) {
        return st;
    }
    if (onnxi_elem_count(&n->in[0]->info) != 1) {
        return onnxi_invalid(c, n, "cond must have one element");
    }
    bool cond = onnxi_const_i64(n->in[0], 0) != 0;
    const Onnx__AttributeProto *a = onnxi_attr(n, cond ? "then_branch" : "else_branch");
    if (!a || !a->g) {
        return onnxi_invalid(c, n, "attribute %s is required",
                             cond ? "then_branch" : "else_branch");
    }
    const Onnx__GraphProto *g = a->g;
    if (g->n_output != n->proto->n_output) {
        return onnxi_invalid(c, n, "the branch has %zu outputs, the node %zu", g->n_output,
                             n->proto->n_output);
    }
    st = onnxi_import_initializers(c, g);
    if (!st) {
        st = onnxi_import_nodes(c, g, NULL);
    }
    for (size_t i = 0; i < g->n_output && !st; i++) {
        const char *name = g->output[i]->name;
        onnxi_value *v = name ? onnxi_map_get(&c->values, name) : NULL;
        if (!v) {
            return onnxi_invalid(c, n, "branch output '%s' is not defined", name ? name : "");
        }
        st = onnxi_bind_out(c, n, i, v);
    }
    return st;
}

/* ---- unrolling: the names a body binds ---------------------------------- */

/* Names bound while a body is imported, each with the value it had before
 * (NULL: none), so that the bindings can be undone: a body imported again
 * defines the same names. */
typedef struct scope {
    const char **names;
    onnxi_value **saved;
    size_t count, cap;
} scope;

static void scope_free(scope *s) {
    free(s->names);
    free(s->saved);
    memset(s, 0, sizeof *s);
}

static plx_status scope_add(onnxi_ctx *c, scope *s, const char *name) {
    if (!name || !name[0]) {
        return NULL;
    }
    if (s->count == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        const char **names = realloc(s->names, cap * sizeof *names);
        if (names) {
            s->names = names;
        }
        onnxi_value **saved = names ? realloc(s->saved, cap * sizeof *saved) : NULL;
        if (!saved) {
            return plx_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", c->file);
        }
        s->saved = saved;
        s->cap = cap;
    }
    s->names[s->count] = name;
    s->saved[s->count++] = onnxi_map_get(&c->values, name);
    return NULL;
}

/* Adds the outputs of g's nodes and, for the graphs nested in them (an If
 * in a loop's body), their initializers and their nodes' outputs. Nesting
 * is bounded by the importer's own limit on subgraph depth. */
static plx_status scope_collect(onnxi_ctx *c, scope *s, const Onnx__GraphProto *g,
                                bool initializers, int depth) {
    plx_status st = NULL;
    for (size_t i = 0; initializers && i < g->n_initializer && !st; i++) {
        st = scope_add(c, s, g->initializer[i]->name);
    }
    for (size_t k = 0; k < g->n_node && !st; k++) {
        const Onnx__NodeProto *node = g->node[k];
        for (size_t o = 0; o < node->n_output && !st; o++) {
            st = scope_add(c, s, node->output[o]);
        }
        for (size_t a = 0; a < node->n_attribute && !st && depth < 64; a++) {
            const Onnx__AttributeProto *attr = node->attribute[a];
            if (attr->g) {
                st = scope_collect(c, s, attr->g, true, depth + 1);
            }
            for (size_t j = 0; j < attr->n_graphs && !st; j++) {
                st = scope_collect(c, s, attr->graphs[j], true, depth + 1);
            }
        }
    }
    return st;
}

/* Puts back what each name was bound to before. */
static plx_status scope_restore(onnxi_ctx *c, scope *s) {
    for (size_t i = s->count; i-- > 0;) {
        if (s->saved[i]) {
            if (!onnxi_map_put(&c->values, s->names[i], s->saved[i])) {
                return plx_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", c->file);
            }
        } else {
            onnxi_map_remove(&c->values, s->names[i]);
        }
    }
    return NULL;
}

/* One unrolled node: its body, and the bindings of the body's inputs and
 * initializers (undone at the end) and of its nodes (undone after each
 * iteration). */
typedef struct unroll {
    const Onnx__GraphProto *body;
    scope outer, inner;
    size_t node_count_after_first; /* c->node_count after the first iteration */
} unroll;

static plx_status unroll_begin(onnxi_ctx *c, onnxi_node *n, const char *attr, unroll *u) {
    memset(u, 0, sizeof *u);
    const Onnx__AttributeProto *a = onnxi_attr(n, attr);
    if (!a || !a->g) {
        return onnxi_invalid(c, n, "attribute %s is required", attr);
    }
    u->body = a->g;
    plx_status st = NULL;
    for (size_t i = 0; i < u->body->n_input && !st; i++) {
        st = scope_add(c, &u->outer, u->body->input[i]->name);
    }
    for (size_t i = 0; i < u->body->n_initializer && !st; i++) {
        st = scope_add(c, &u->outer, u->body->initializer[i]->name);
    }
    if (!st) {
        st = scope_collect(c, &u->inner, u->body, false, 0);
    }
    if (!st) {
        st = onnxi_import_initializers(c, u->body);
    }
    return st;
}

/* Undoes every binding the unrolling made; the file's node count counts
 * the body once. */
static plx_status unroll_end(onnxi_ctx *c, unroll *u, plx_status st) {
    plx_status back = scope_restore(c, &u->inner);
    if (!back) {
        back = scope_restore(c, &u->outer);
    }
    if (u->node_count_after_first) {
        c->node_count = u->node_count_after_first;
    }
    scope_free(&u->inner);
    scope_free(&u->outer);
    if (st) {
        plx_status_free(back);
        return st;
    }
    return back;
}

/* Imports the body once with its inputs bound to `in` (one per body
 * input) and reads its outputs into `out` (one per body output).
 * *out_poison: a body output that a node the importer does not support
 * made unusable (that node is already reported). */
static plx_status run_body(onnxi_ctx *c, onnxi_node *n, unroll *u, onnxi_value *const *in,
                           onnxi_value **out, onnxi_value **out_poison) {
    const Onnx__GraphProto *g = u->body;
    *out_poison = NULL;
    c->unrolled_nodes += g->n_node;
    if (c->unrolled_nodes > MAX_UNROLLED_NODES) {
        return ONNXI_UNSUPPORTED("unrolling it would import more than %d nodes of loop bodies "
                                 "in the model", MAX_UNROLLED_NODES);
    }
    plx_status st = NULL;
    for (size_t i = 0; i < g->n_input && !st; i++) {
        if (!g->input[i]->name || !g->input[i]->name[0]) {
            return onnxi_invalid(c, n, "body input %zu has no name", i);
        }
        st = onnxi_bind(c, g->input[i]->name, in[i]);
    }
    if (!st) {
        st = onnxi_import_nodes(c, g, NULL);
    }
    if (!u->node_count_after_first) {
        u->node_count_after_first = c->node_count;
    }
    for (size_t i = 0; i < g->n_output && !st; i++) {
        const char *name = g->output[i]->name;
        out[i] = name ? onnxi_map_get(&c->values, name) : NULL;
        if (!out[i]) {
            return onnxi_invalid(c, n, "body output '%s' is not defined", name ? name : "");
        }
        if (out[i]->kind == ONNXI_POISON && !*out_poison) {
            *out_poison = out[i];
        }
    }
    if (!st) {
        st = scope_restore(c, &u->inner);
    }
    return st;
}

/* Whether the node names output k. */
static bool has_out(const onnxi_node *n, size_t k) {
    return k < n->proto->n_output && n->proto->output[k] && n->proto->output[k][0];
}

/* Binds every output of the node to `poison`: its body holds a node that
 * is reported unsupported, and what reads the outputs is skipped. */
static plx_status bind_poison(onnxi_ctx *c, onnxi_node *n, onnxi_value *poison) {
    plx_status st = NULL;
    for (size_t i = 0; i < n->proto->n_output && !st; i++) {
        st = onnxi_bind_out(c, n, i, poison);
    }
    return st;
}

/* The values of one scan output, one per iteration, stacked along `axis`
 * of the result (the slices' rank + 1 dims; negative counts from the end):
 * each unsqueezed, then concatenated, 16 at a time. `vals` is reused. */
static plx_status stack(onnxi_ctx *c, onnxi_node *n, onnxi_value **vals, size_t count,
                        int64_t axis, onnxi_value **out) {
    if (count == 0) {
        return ONNXI_UNSUPPORTED("no iterations: the shapes of the scan outputs are unknown");
    }
    int64_t rank = (int64_t)vals[0]->info.rank + 1;
    if (axis < -rank || axis >= rank) {
        return onnxi_invalid(c, n, "scan output axis %lld is out of range for rank %lld",
                             (long long)axis, (long long)rank);
    }
    if (axis < 0) {
        axis += rank;
    }
    plx_axes_desc u = PLX_AXES_DESC_INIT;
    u.axes[0] = (int32_t)axis;
    u.axis_count = 1;
    plx_status st = NULL;
    for (size_t i = 0; i < count && !st; i++) {
        st = onnxi_emit(c, n, PLX_OP_UNSQUEEZE, &u, &vals[i], 1, 1, &vals[i]);
    }
    plx_axis_desc cat = PLX_AXIS_DESC_INIT((int32_t)axis);
    while (count > 1 && !st) {
        size_t next = 0;
        for (size_t i = 0; i < count && !st; i += 16) {
            size_t group = count - i < 16 ? count - i : 16;
            if (group == 1) {
                vals[next++] = vals[i];
            } else {
                st = onnxi_emit(c, n, PLX_OP_CONCAT, &cat, &vals[i], (uint32_t)group, 1,
                                &vals[next++]);
            }
        }
        count = next;
    }
    if (!st) {
        *out = vals[0];
    }
    return st;
}

/* ---- Loop --------------------------------------------------------------- */

/* Loop(M, cond, v_initial...) with body (iteration_num, cond, v...) ->
 * (cond, v..., scan...): outputs the final v... and each scan output
 * stacked along a new first axis. The trip count M and the condition, when
 * given, must be known at import, and so must the condition the body
 * computes (it decides whether another iteration is imported). */
plx_status onnxi_conv_loop(onnxi_ctx *c, onnxi_node *n) {
    size_t n_in = n->proto->n_input;
    if (n_in < 2) {
        return onnxi_invalid(c, n, "needs the inputs M and cond (each may be empty)");
    }
    size_t carried = n_in - 2;
    if (carried > 16) {
        return ONNXI_UNSUPPORTED("more than 16 loop-carried values");
    }
    for (size_t i = 0; i < carried; i++) {
        if (!onnxi_has_in(n, 2 + i)) {
            return onnxi_invalid(c, n, "loop-carried input %zu is empty", i);
        }
    }
    plx_status st = NULL;
    int64_t trip = -1; /* none */
    bool cond = true, has_cond = onnxi_has_in(n, 1);
    if (onnxi_has_in(n, 0)) {
        size_t cnt = 0;
        st = onnxi_const_ints(n, 0, "M", &trip, 1, &cnt);
        if (!st && cnt != 1) {
            return onnxi_invalid(c, n, "M must have one element");
        }
    }
    if (!st && has_cond) {
        st = onnxi_need_const(n, 1, "cond");
        if (!st && onnxi_elem_count(&n->in[1]->info) != 1) {
            return onnxi_invalid(c, n, "cond must have one element");
        }
        if (!st) {
            cond = onnxi_const_i64(n->in[1], 0) != 0;
        }
    }
    if (st) {
        return st;
    }
    unroll u;
    st = unroll_begin(c, n, "body", &u);
    const Onnx__GraphProto *g = u.body;
    if (!st && g->n_input != carried + 2) {
        st = onnxi_invalid(c, n, "the body has %zu inputs; the node gives %zu loop-carried "
                           "values, so it needs %zu", g->n_input, carried, carried + 2);
    }
    if (!st && (g->n_output < carried + 1 || g->n_output - 1 - carried > 16)) {
        st = g->n_output < carried + 1
                 ? onnxi_invalid(c, n, "the body has %zu outputs; it needs at least %zu",
                                 g->n_output, carried + 1)
                 : ONNXI_UNSUPPORTED("more than 16 scan outputs");
    }
    size_t scans = st ? 0 : g->n_output - 1 - carried;
    if (!st && n->proto->n_output > carried + scans) {
        st = onnxi_invalid(c, n, "%zu outputs; the body gives %zu", n->proto->n_output,
                           carried + scans);
    }
    onnxi_value *state[18], *outs[34];
    onnxi_value **scanned[16] = {NULL};
    for (size_t i = 0; i < carried; i++) {
        state[2 + i] = n->in[2 + i];
    }
    size_t it = 0;
    onnxi_value *poison = NULL;
    for (; !st && cond && (trip < 0 || (int64_t)it < trip); it++) {
        if (it == MAX_ITERATIONS) {
            st = ONNXI_UNSUPPORTED("it runs more than %d iterations, more than Plexus unrolls",
                                   MAX_ITERATIONS);
            break;
        }
        st = onnxi_scalar_const(c, PLX_DTYPE_INT64, (double)it, &state[0]);
        if (!st) {
            st = onnxi_scalar_const(c, PLX_DTYPE_BOOL, 1.0, &state[1]);
        }
        if (!st) {
            st = run_body(c, n, &u, state, outs, &poison);
        }
        if (st || poison) {
            break;
        }
        for (size_t i = 0; i < carried; i++) {
            state[2 + i] = outs[1 + i];
        }
        for (size_t k = 0; k < scans && !st; k++) {
            onnxi_value **grown = realloc(scanned[k], (it + 1) * sizeof *grown);
            if (!grown) {
                st = plx_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", c->file);
                break;
            }
            scanned[k] = grown;
            scanned[k][it] = outs[1 + carried + k];
        }
        if (!st && has_cond) {
            /* The body's condition decides whether there is another
             * iteration (ignored without a cond input: a for loop). */
            if (outs[0]->kind != ONNXI_CONST) {
                n->needed = outs[0];
                st = ONNXI_UNSUPPORTED("the condition its body computes must be known at "
                                       "import (Plexus unrolls loops), but it is computed "
                                       "from the graph's inputs");
            } else if (onnxi_elem_count(&outs[0]->info) != 1) {
                st = onnxi_invalid(c, n, "the body's condition must have one element");
            } else {
                cond = onnxi_const_i64(outs[0], 0) != 0;
            }
        }
    }
    st = unroll_end(c, &u, st);
    if (!st && poison) {
        st = bind_poison(c, n, poison);
    } else if (!st) {
        for (size_t i = 0; i < carried && !st; i++) {
            st = onnxi_bind_out(c, n, i, state[2 + i]);
        }
        for (size_t k = 0; k < scans && !st; k++) {
            if (has_out(n, carried + k)) {
                onnxi_value *v = NULL;
                st = stack(c, n, scanned[k], it, 0, &v);
                if (!st) {
                    st = onnxi_bind_out(c, n, carried + k, v);
                }
            }
        }
    }
    for (size_t k = 0; k < 16; k++) {
        free(scanned[k]);
    }
    return st;
}

/* ---- Scan --------------------------------------------------------------- */

/* Element `index` of x along `axis`, without that axis. */
static plx_status take(onnxi_ctx *c, onnxi_node *n, onnxi_value *x, int32_t axis,
                       int64_t index, onnxi_value **out) {
    plx_slice_desc s = PLX_SLICE_DESC_INIT;
    s.starts[0] = index;
    s.ends[0] = index + 1;
    s.axes[0] = axis;
    s.steps[0] = 1;
    s.count = 1;
    onnxi_value *one = NULL;
    plx_status st = onnxi_emit(c, n, PLX_OP_SLICE, &s, &x, 1, 1, &one);
    plx_axes_desc q = PLX_AXES_DESC_INIT;
    q.axes[0] = axis;
    q.axis_count = 1;
    return st ? st : onnxi_emit(c, n, PLX_OP_SQUEEZE, &q, &one, 1, 1, out);
}

/* Reads an ints attribute of `count` entries (default `def` each). */
static plx_status scan_attr(onnxi_ctx *c, onnxi_node *n, const char *name, size_t count,
                            int64_t def, int64_t *out) {
    size_t got = 0;
    bool present = false;
    plx_status st = onnxi_attr_ints(n, name, out, 16, &got, &present);
    if (st) {
        return st;
    }
    if (present && got != count) {
        return onnxi_invalid(c, n, "attribute %s has %zu values; %zu are needed", name, got,
                             count);
    }
    for (size_t i = 0; !present && i < count; i++) {
        out[i] = def;
    }
    return NULL;
}

/* Scan (opset 9 and later): N states and M scan inputs; the body maps
 * (states, one slice of each scan input) to (states, one slice of each of
 * K scan outputs). The number of iterations is the scan inputs' length
 * along their axis, known from their shapes. */
plx_status onnxi_conv_scan(onnxi_ctx *c, onnxi_node *n) {
    if (c->opset < 9) {
        return ONNXI_UNSUPPORTED("Scan before opset 9 (a batch axis and sequence_lens)");
    }
    const Onnx__AttributeProto *a = onnxi_attr(n, "num_scan_inputs");
    if (!a || !a->has_i) {
        return onnxi_invalid(c, n, "attribute num_scan_inputs is required");
    }
    size_t n_in = n->proto->n_input;
    if (a->i < 1 || (uint64_t)a->i > n_in) {
        return onnxi_invalid(c, n, "num_scan_inputs %lld: the node has %zu inputs",
                             (long long)a->i, n_in);
    }
    size_t m = (size_t)a->i, states = n_in - m;
    if (m > 16 || states > 16) {
        return ONNXI_UNSUPPORTED("more than 16 states or scan inputs");
    }
    plx_status st = onnxi_need_inputs(c, n, n_in);
    int64_t in_axes[16], in_dirs[16], out_axes[16], out_dirs[16];
    if (!st) {
        st = scan_attr(c, n, "scan_input_axes", m, 0, in_axes);
    }
    if (!st) {
        st = scan_attr(c, n, "scan_input_directions", m, 0, in_dirs);
    }
    if (st) {
        return st;
    }
    int64_t length = -1;
    for (size_t j = 0; j < m; j++) {
        const plx_tensor_info *x = &n->in[states + j]->info;
        int64_t r = (int64_t)x->rank;
        if (in_axes[j] < -r || in_axes[j] >= r) {
            return onnxi_invalid(c, n, "scan_input_axes[%zu] = %lld is out of range for rank "
                                 "%lld", j, (long long)in_axes[j], (long long)r);
        }
        if (in_axes[j] < 0) {
            in_axes[j] += r;
        }
        int64_t len = x->dims[in_axes[j]];
        if (length >= 0 && len != length) {
            return onnxi_invalid(c, n, "the scan inputs have lengths %lld and %lld",
                                 (long long)length, (long long)len);
        }
        length = len;
    }
    unroll u;
    st = unroll_begin(c, n, "body", &u);
    const Onnx__GraphProto *g = u.body;
    if (!st && g->n_input != states + m) {
        st = onnxi_invalid(c, n, "the body has %zu inputs; %zu are needed", g->n_input,
                           states + m);
    }
    if (!st && (g->n_output < states || g->n_output - states > 16)) {
        st = g->n_output < states
                 ? onnxi_invalid(c, n, "the body has %zu outputs; it needs at least %zu",
                                 g->n_output, states)
                 : ONNXI_UNSUPPORTED("more than 16 scan outputs");
    }
    size_t k_out = st ? 0 : g->n_output - states;
    if (!st) {
        st = scan_attr(c, n, "scan_output_axes", k_out, 0, out_axes);
    }
    if (!st) {
        st = scan_attr(c, n, "scan_output_directions", k_out, 0, out_dirs);
    }
    if (!st && length > MAX_ITERATIONS) {
        st = ONNXI_UNSUPPORTED("it runs %lld iterations, more than Plexus unrolls (%d)",
                               (long long)length, MAX_ITERATIONS);
    }
    onnxi_value *in[32], *outs[32];
    onnxi_value **scanned[16] = {NULL};
    for (size_t i = 0; i < states; i++) {
        in[i] = n->in[i];
    }
    for (size_t k = 0; k < k_out && !st; k++) {
        scanned[k] = calloc(length > 0 ? (size_t)length : 1, sizeof *scanned[k]);
        if (!scanned[k]) {
            st = plx_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", c->file);
        }
    }
    onnxi_value *poison = NULL;
    for (int64_t t = 0; t < length && !st; t++) {
        for (size_t j = 0; j < m && !st; j++) {
            int64_t index = in_dirs[j] ? length - 1 - t : t;
            st = take(c, n, n->in[states + j], (int32_t)in_axes[j], index, &in[states + j]);
        }
        if (!st) {
            st = run_body(c, n, &u, in, outs, &poison);
        }
        if (st || poison) {
            break;
        }
        for (size_t i = 0; i < states; i++) {
            in[i] = outs[i];
        }
        for (size_t k = 0; k < k_out; k++) {
            /* A reversed output is stacked last iteration first. */
            scanned[k][out_dirs[k] ? length - 1 - t : t] = outs[states + k];
        }
    }
    st = unroll_end(c, &u, st);
    if (!st && poison) {
        st = bind_poison(c, n, poison);
    } else if (!st) {
        for (size_t i = 0; i < states && !st; i++) {
            st = onnxi_bind_out(c, n, i, in[i]);
        }
        for (size_t k = 0; k < k_out && !st; k++) {
            if (has_out(n, states + k)) {
                onnxi_value *v = NULL;
                st = stack(c, n, scanned[k], (size_t)length, out_axes[k], &v);
                if (!st) {
                    st = onnxi_bind_out(c, n, states + k, v);
                }
            }
        }
    }
    for (size_t k = 0; k < 16; k++) {
        free(scanned[k]);
    }
    return st;
}
