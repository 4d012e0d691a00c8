/* ONNX import: the model file, the graph (initializers, inputs, nodes in
 * topological order, outputs), the report of unsupported nodes, and the
 * model object of the public API. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* Model files up to 4 GiB (protobuf's own limit is 2 GiB). */
#define MAX_MODEL_BYTES ((size_t)1 << 32)

/* The newest IR version and default-domain operator set whose semantics
 * the converters follow (ONNX 1.17). A newer file may use what they do not
 * know (a changed attribute, a new input), so it is refused, not guessed. */
#define NEWEST_IR_VERSION 10
#define NEWEST_OPSET 22

struct plx_onnx_model {
    plx_network *net;
    void **blobs;
    size_t blob_count;
    plx_model_weights *weights; /* a reference to the store its constants borrow from */
    plx_onnx_io *inputs;
    size_t input_count;
    plx_onnx_io *outputs;
    size_t output_count;
    char *producer;
    plx_onnx_model_facts facts;
};

PLX_API void plx_onnx_options_init(plx_onnx_options *options) {
    if (options) {
        memset(options, 0, sizeof *options);
        options->struct_size = sizeof *options;
    }
}

static plx_status oom(const onnxi_ctx *c) {
    return plx_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", c->file);
}

/* Whether `info` is what the tensor proto declares (its type and dims). */
static bool proto_declares(const Onnx__TensorProto *t, const plx_tensor_info *info) {
    if (!t->has_data_type || onnxi_dtype(t->data_type) != info->dtype ||
        t->n_dims != info->rank) {
        return false;
    }
    for (size_t d = 0; d < t->n_dims; d++) {
        if (t->dims[d] != info->dims[d]) {
            return false;
        }
    }
    return true;
}

/* A main-graph initializer from the options' store (decoded by an earlier
 * import of the file), or NULL. */
static onnxi_value *shared_initializer(onnxi_ctx *c, const Onnx__GraphProto *g,
                                       const Onnx__TensorProto *t, plx_status *st) {
    plx_tensor_info info;
    const void *data = g == c->main_graph && c->weights
                           ? plx_model_weights_lookup(c->weights, c->file, t->name, &info)
                           : NULL;
    onnxi_value *v = NULL;
    if (data && proto_declares(t, &info)) {
        *st = onnxi_const_borrow(c, &info, data, &v);
    }
    return v;
}

plx_status onnxi_import_initializers(onnxi_ctx *c, const Onnx__GraphProto *g) {
    for (size_t i = 0; i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        if (!t->name || !t->name[0]) {
            return plx_status_create(PLX_INVALID_ARGUMENT, "%s: initializer %zu has no name",
                                     c->file, i);
        }
        if (g == c->main_graph && onnxi_map_get(&c->values, t->name)) {
            return plx_status_create(PLX_INVALID_ARGUMENT, "%s: initializer '%s' is defined "
                                     "twice", c->file, t->name);
        }
        plx_status shared_st = NULL;
        onnxi_value *shared = shared_initializer(c, g, t, &shared_st);
        if (shared_st || shared) {
            shared_st = shared_st ? shared_st : onnxi_bind(c, t->name, shared);
            if (shared_st) {
                return shared_st;
            }
            continue;
        }
        char *what = onnxi_asprintf("%s: initializer '%s'", c->file, t->name);
        if (!what) {
            return oom(c);
        }
        plx_tensor_info info;
        void *data;
        plx_status st = onnxi_tensor_decode(t, what, c->base_dir, &info, &data);
        free(what);
        onnxi_value *v = NULL;
        if (st && plx_status_get_code(st) == PLX_UNSUPPORTED) {
            /* Not an error unless a node reads it: its readers are
             * reported with this reason. */
            v = onnxi_value_new(c, ONNXI_POISON, NULL);
            if (!v) {
                plx_status_free(st);
                return oom(c);
            }
            v->poison_reason = onnxi_asprintf("initializer '%s': %s", t->name,
                                              strstr(plx_status_get_message(st), " has ")
                                                 ? strstr(plx_status_get_message(st), " has ") + 1
                                                 : plx_status_get_message(st));
            plx_status_free(st);
            st = v->poison_reason ? NULL : oom(c);
        } else if (!st) {
            /* Into the options' store when there is one: later imports of
             * the file borrow it. */
            const void *stored = g == c->main_graph && c->weights
                                     ? plx_model_weights_insert(c->weights, c->file, t->name,
                                                                &info, data)
                                     : NULL;
            st = stored ? onnxi_const_borrow(c, &info, stored, &v)
                        : onnxi_const_take(c, &info, data, &v);
        }
        if (!st) {
            st = onnxi_bind(c, t->name, v);
        }
        if (st) {
            return st;
        }
    }
    for (size_t i = 0; i < g->n_sparse_initializer; i++) {
        return plx_status_create(PLX_UNSUPPORTED, "%s: sparse initializers are not supported",
                                 c->file);
    }
    return NULL;
}

static bool is_default_domain(const char *d) {
    return !d || !d[0] || strcmp(d, "ai.onnx") == 0;
}

/* The opset the model imports for a node's domain (-1: none). */
static int64_t domain_opset(const onnxi_ctx *c, const char *domain) {
    if (is_default_domain(domain)) {
        return c->opset;
    }
    for (size_t i = 0; i < c->n_opsets; i++) {
        const Onnx__OperatorSetIdProto *o = c->opsets[i];
        if (o->domain && strcmp(o->domain, domain) == 0) {
            return o->has_version ? o->version : 0;
        }
    }
    return -1;
}

static plx_status add_unsupported(onnxi_ctx *c, const Onnx__NodeProto *node, const char *name,
                                  const char *reason) {
    char *line = onnxi_asprintf("node '%s' (%s%s%s, opset %lld): %s", name,
                                node->domain && node->domain[0] ? node->domain : "",
                                node->domain && node->domain[0] ? "." : "", node->op_type,
                                (long long)domain_opset(c, node->domain), reason);
    if (!line) {
        return oom(c);
    }
    if (c->unsupported_count == c->unsupported_cap) {
        size_t cap = c->unsupported_cap ? c->unsupported_cap * 2 : 16;
        char **p = realloc(c->unsupported, cap * sizeof *p);
        if (!p) {
            free(line);
            return oom(c);
        }
        c->unsupported = p;
        c->unsupported_cap = cap;
    }
    c->unsupported[c->unsupported_count++] = line;
    return NULL;
}

/* Binds every output of a node that cannot be converted to a poison value
 * so that its users are skipped (they are not reported: the cause is). */
static plx_status poison_outputs(onnxi_ctx *c, const Onnx__NodeProto *node) {
    for (size_t i = 0; i < node->n_output; i++) {
        if (node->output[i] && node->output[i][0]) {
            onnxi_value *v = onnxi_value_new(c, ONNXI_POISON, NULL);
            plx_status st = v ? onnxi_bind(c, node->output[i], v) : oom(c);
            if (st) {
                return st;
            }
        }
    }
    return NULL;
}

static const char *attr_type_name(Onnx__AttributeProto__AttributeType t) {
    switch (t) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: return "FLOAT";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: return "INT";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: return "STRING";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: return "TENSOR";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: return "GRAPH";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: return "FLOATS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: return "INTS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: return "STRINGS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS: return "TENSORS";
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS: return "GRAPHS";
    default: return "another";
    }
}

static plx_status import_node(onnxi_ctx *c, const Onnx__NodeProto *node) {
    c->node_count++;
    if (!node->op_type || !node->op_type[0]) {
        return plx_status_create(PLX_INVALID_ARGUMENT, "%s: node %zu has no op_type", c->file,
                                 c->node_count - 1);
    }
    /* The node's name, or one made up for an unnamed node; layers get
     * unique names when emitted. */
    char *name = node->name && node->name[0]
                     ? strdup(node->name)
                     : onnxi_asprintf("%s_%zu", node->op_type, c->anon_count++);
    if (!name) {
        return oom(c);
    }
    onnxi_node n;
    memset(&n, 0, sizeof n);
    n.proto = node;
    n.name = name;
    n.all_folded = true;
    const Onnx__AttributeProto *bad_attribute = NULL, *bad_range = NULL;
    n.bad_attribute = &bad_attribute;
    n.bad_range = &bad_range;
    plx_status st = NULL;
    bool poisoned = false, reported = false;
    const char *poison_reason = NULL;
    n.n_in = node->n_input;
    while (n.n_in > 0 && (!node->input[n.n_in - 1] || !node->input[n.n_in - 1][0])) {
        n.n_in--;
    }
    n.n_out = node->n_output;
    while (n.n_out > 0 && (!node->output[n.n_out - 1] || !node->output[n.n_out - 1][0])) {
        n.n_out--;
    }
    if (n.n_in > 16) {
        st = add_unsupported(c, node, name, "more than 16 inputs");
        poisoned = reported = true;
    }
    for (size_t i = 0; i < n.n_in && !poisoned; i++) {
        const char *in = node->input[i];
        if (!in || !in[0]) {
            continue;
        }
        onnxi_value *v = onnxi_map_get(&c->values, in);
        if (!v) {
            st = plx_status_create(PLX_INVALID_ARGUMENT,
                                   "%s: node '%s' (%s) reads '%s', which no node, input or "
                                   "initializer defines", c->file, name, node->op_type, in);
            break;
        }
        if (v->kind == ONNXI_POISON) {
            poisoned = true; /* its producer is reported */
            poison_reason = poison_reason ? poison_reason : v->poison_reason;
        }
        n.in[i] = v;
    }
    if (!st && !poisoned) {
        if (is_default_domain(node->domain) && c->opset < 0) {
            st = plx_status_create(PLX_INVALID_ARGUMENT,
                                   "%s: node '%s' (%s) is in the default ONNX domain, but the "
                                   "model imports no opset for it", c->file, name,
                                   node->op_type);
        } else if (!is_default_domain(node->domain) &&
                   !(strcmp(node->domain, "com.microsoft") == 0 &&
                     onnxi_microsoft_op_known(node->op_type))) {
            char *why = onnxi_asprintf("domain '%s' is not supported (only the default ONNX domain)",
                                       node->domain);
            st = why ? add_unsupported(c, node, name, why) : oom(c);
            free(why);
            poisoned = reported = true;
        } else {
            size_t folded_before = c->folded_count;
            st = onnxi_convert(c, &n);
            if (bad_attribute && (!st || plx_status_get_code(st) == PLX_UNSUPPORTED)) {
                /* ONNX's checker refuses it too: an attribute of another
                 * type than the operator defines. */
                plx_status_free(st);
                st = plx_status_create(PLX_INVALID_ARGUMENT, "%s: node '%s' (%s): attribute '%s' "
                                       "has type %s, which is not the type %s gives it",
                                       c->file, name, node->op_type, bad_attribute->name,
                                       attr_type_name(bad_attribute->type), node->op_type);
            }
            if (bad_range) {
                /* read as its default, so whatever the converter made of
                 * the node is void */
                plx_status_free(st);
                st = plx_status_create(PLX_INVALID_ARGUMENT, "%s: node '%s' (%s): attribute '%s' "
                                       "= %lld does not fit in 32 bits",
                                       c->file, name, node->op_type, bad_range->name,
                                       (long long)bad_range->i);
            }
            if (st && plx_status_get_code(st) == PLX_UNSUPPORTED) {
                plx_status reason = st;
                st = n.needed ? onnxi_note_value_need(c, n.needed) : NULL;
                if (!st && n.needed) {
                    st = onnxi_note_value_tensor(c, n.needed_name);
                }
                if (!st) {
                    st = add_unsupported(c, node, name, plx_status_get_message(reason));
                }
                plx_status_free(reason);
                poisoned = reported = true;
            } else if (!st && n.all_folded && c->folded_count == folded_before) {
                c->folded_count++;
            }
            /* An output frozen by the options keeps its value (the node
             * was imported for its other outputs). */
            for (size_t k = 0; !st && !poisoned && k < node->n_output; k++) {
                onnxi_value *f = node->output[k] && node->output[k][0]
                                     ? onnxi_map_get(&c->frozen, node->output[k]) : NULL;
                if (f) {
                    st = onnxi_bind(c, node->output[k], f);
                }
            }
        }
    }
    if (!st && poisoned && !reported) {
        /* Downstream of something unsupported: reported when it reads an
         * initializer Plexus cannot hold, or is unsupported itself. */
        const char *why = poison_reason
                              ? poison_reason
                              : !is_default_domain(node->domain) &&
                                        !onnxi_microsoft_op_known(node->op_type)
                                    ? "domain not supported"
                              : !onnxi_op_known(node->op_type)   ? "operator not supported"
                                                                 : NULL;
        if (why) {
            st = add_unsupported(c, node, name, why);
        }
    }
    if (!st && poisoned) {
        st = poison_outputs(c, node);
    }
    free(name);
    return st;
}

/* One pass over the graph's edges producer -> consumer: counting them
 * (indeg set) or filling them in (edges set). */
typedef struct edge_pass {
    const onnxi_map *producer; /* name -> node index + 1 */
    size_t *edges_start;
    size_t *indeg;
    size_t *edges;
    size_t *fill;
    size_t consumer;
    size_t count;
} edge_pass;

/* Calls fn(arg, name) for every name `node` reads: its inputs and, since
 * a subgraph (If's branches, a loop's body) may read any value of the
 * enclosing graph, the inputs of the nodes of its subgraphs, as inputs of
 * the node. Subgraphs nest at most 64 deep. Stops at fn's first false,
 * and returns it. */
static bool for_each_read(const Onnx__NodeProto *node, bool (*fn)(void *arg, const char *name),
                          void *arg, int depth) {
    for (size_t k = 0; k < node->n_input; k++) {
        const char *in = node->input[k];
        if (in && in[0] && !fn(arg, in)) {
            return false;
        }
    }
    for (size_t a = 0; a < node->n_attribute && depth < 64; a++) {
        const Onnx__AttributeProto *attr = node->attribute[a];
        const Onnx__GraphProto *const *graphs =
            attr->g ? (const Onnx__GraphProto *const *)&attr->g
                    : (const Onnx__GraphProto *const *)attr->graphs;
        size_t n_graphs = attr->g ? 1 : attr->n_graphs;
        for (size_t gi = 0; gi < n_graphs; gi++) {
            for (size_t k = 0; graphs[gi] && k < graphs[gi]->n_node; k++) {
                if (!for_each_read(graphs[gi]->node[k], fn, arg, depth + 1)) {
                    return false;
                }
            }
        }
    }
    return true;
}

/* An edge producer -> e->consumer for a name the consumer reads. */
static bool visit_edge(void *arg, const char *in) {
    edge_pass *e = arg;
    void *p1 = onnxi_map_get(e->producer, in);
    if (!p1) {
        return true;
    }
    size_t p = (size_t)(uintptr_t)p1 - 1; /* p == consumer: a self-loop, a cycle */
    if (e->indeg) {
        e->edges_start[p + 1]++;
        e->indeg[e->consumer]++;
    } else {
        e->edges[e->edges_start[p] + e->fill[p]++] = e->consumer;
    }
    e->count++;
    return true;
}

/* Kahn's algorithm over the graph's nodes, keeping the file's order among
 * ready nodes; a leftover node lies on a cycle. */
plx_status onnxi_import_nodes(onnxi_ctx *c, const Onnx__GraphProto *g, const bool *keep) {
    size_t n = g->n_node;
    if (n == 0) {
        return NULL;
    }
    onnxi_map producer = {0};
    size_t *indeg = calloc(n, sizeof *indeg);
    size_t *order = calloc(n, sizeof *order);
    size_t *edges_start = calloc(n + 1, sizeof *edges_start);
    plx_status st = NULL;
    size_t *edges = NULL, *fill = NULL;
    if (!indeg || !order || !edges_start) {
        st = oom(c);
        goto out;
    }
    for (size_t i = 0; i < n && !st; i++) {
        const Onnx__NodeProto *node = g->node[i];
        for (size_t k = 0; k < node->n_output && !st; k++) {
            const char *o = node->output[k];
            if (!o || !o[0]) {
                continue;
            }
            if (onnxi_map_get(&producer, o)) {
                st = plx_status_create(PLX_INVALID_ARGUMENT,
                                       "%s: '%s' is the output of two nodes", c->file, o);
            } else if (onnxi_map_get(&c->values, o) && !onnxi_map_get(&c->frozen, o)) {
                /* Each value is defined once (ONNX's SSA rule). */
                st = plx_status_create(PLX_INVALID_ARGUMENT,
                                       "%s: node '%s' (%s) writes '%s', which is already a "
                                       "graph input or initializer", c->file,
                                       node->name && node->name[0] ? node->name : "(unnamed)",
                                       node->op_type ? node->op_type : "?", o);
            } else if (!onnxi_map_put(&producer, o, (void *)(uintptr_t)(i + 1))) {
                st = oom(c);
            }
        }
    }
    if (st) {
        goto out;
    }
    /* Edges producer -> consumer (one per input naming a node output). */
    size_t n_edges = 0;
    edge_pass count_pass = {&producer, edges_start, indeg, NULL, NULL, 0, 0};
    for (size_t i = 0; i < n; i++) {
        count_pass.consumer = i;
        for_each_read(g->node[i], visit_edge, &count_pass, 0);
    }
    n_edges = count_pass.count;
    edges = calloc(n_edges ? n_edges : 1, sizeof *edges);
    fill = calloc(n, sizeof *fill);
    if (!edges || !fill) {
        st = oom(c);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        edges_start[i + 1] += edges_start[i];
    }
    edge_pass fill_pass = {&producer, edges_start, NULL, edges, fill, 0, 0};
    for (size_t i = 0; i < n; i++) {
        fill_pass.consumer = i;
        for_each_read(g->node[i], visit_edge, &fill_pass, 0);
    }
    /* A min-ordered ready list: ready nodes are taken in file order. */
    size_t done = 0, head = 0;
    for (size_t i = 0; i < n; i++) {
        if (indeg[i] == 0) {
            order[done++] = i;
        }
    }
    while (head < done) {
        size_t i = order[head++];
        for (size_t e = edges_start[i]; e < edges_start[i + 1]; e++) {
            if (--indeg[edges[e]] == 0) {
                order[done++] = edges[e];
            }
        }
    }
    if (done < n) {
        size_t stuck = 0;
        while (indeg[stuck] == 0) {
            stuck++;
        }
        const Onnx__NodeProto *node = g->node[stuck];
        st = plx_status_create(PLX_INVALID_ARGUMENT,
                               "%s: the graph has a cycle through node '%s' (%s)", c->file,
                               node->name && node->name[0] ? node->name : "(unnamed)",
                               node->op_type ? node->op_type : "?");
        goto out;
    }
    for (size_t k = 0; k < n && !st; k++) {
        if (keep && !keep[order[k]]) {
            c->node_count++; /* in the file, not needed for the outputs */
            continue;
        }
        st = import_node(c, g->node[order[k]]);
    }
out:
    onnxi_map_free(&producer);
    free(indeg);
    free(order);
    free(edges_start);
    free(edges);
    free(fill);
    return st;
}

/* The tensor info of a graph input, its unknown dims from the options. */
static plx_status input_info(onnxi_ctx *c, const Onnx__ValueInfoProto *vi,
                             const plx_onnx_options *opts,
                             plx_tensor_info *out) {
    const char *name = vi->name;
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type) {
        return plx_status_create(PLX_UNSUPPORTED, "%s: input '%s' is not a tensor (sequences, "
                                 "maps and optionals are not supported)", c->file, name);
    }
    const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
    char tbuf[32];
    int32_t et = tt->has_elem_type ? tt->elem_type : 0;
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = onnxi_dtype(et);
    if (info.dtype == PLX_DTYPE_INVALID) {
        return plx_status_create(PLX_UNSUPPORTED, "%s: input '%s' has element type %s, which "
                                 "Plexus does not have", c->file, name,
                                 onnxi_dtype_name(et, tbuf, sizeof tbuf));
    }
    const plx_onnx_input_shape *given = NULL;
    for (size_t i = 0; opts && i < opts->shape_count; i++) {
        if (opts->shapes[i].name && strcmp(opts->shapes[i].name, name) == 0) {
            given = &opts->shapes[i];
        }
    }
    /* The caller's data shape fills dims the model and `shapes` leave open
     * (plexus/model.h, data_shapes); one of another rank is not this
     * input's and is left to the caller's own check. */
    const plx_onnx_input_shape *data = NULL;
    for (size_t i = 0; !given && opts && i < opts->data_shape_count; i++) {
        const plx_onnx_input_shape *h = &opts->data_shapes[i];
        if (strcmp(h->name, name) == 0 && h->rank <= PLX_MAX_RANK &&
            (!tt->shape || h->rank == tt->shape->n_dim)) {
            data = h;
        }
    }
    if (!tt->shape && !given && !data) {
        return plx_status_create(PLX_INVALID_ARGUMENT, "%s: input '%s' has no shape: give one "
                                 "(--shape %s=DIMS)", c->file, name, name);
    }
    if (!tt->shape && !given) {
        given = data; /* nothing declared: the data's shape is the shape */
        data = NULL;
    }
    size_t rank = tt->shape ? tt->shape->n_dim : given->rank;
    if (rank > PLX_MAX_RANK || (given && given->rank > PLX_MAX_RANK)) {
        return plx_status_create(PLX_UNSUPPORTED, "%s: input '%s' has rank %zu; Plexus allows "
                                 "at most %d", c->file, name, rank, PLX_MAX_RANK);
    }
    if (given && tt->shape && given->rank != rank) {
        return plx_status_create(PLX_INVALID_ARGUMENT, "%s: input '%s' has rank %zu, the shape "
                                 "given has %u dims", c->file, name, rank, given->rank);
    }
    info.rank = (uint32_t)rank;
    for (size_t d = 0; d < rank; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape ? tt->shape->dim[d] : NULL;
        /* A negative dim_value (-1, as some exporters write) is not a size:
         * the dim is open, as ONNX Runtime reads it. */
        bool known = dim &&
                     dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                     dim->dim_value >= 0;
        if (given) {
            if (given->dims[d] < 0) {
                return plx_status_create(PLX_INVALID_ARGUMENT,
                                         "%s: input '%s' dim %zu: the shape given says %lld, "
                                         "a size must be >= 0", c->file, name, d,
                                         (long long)given->dims[d]);
            }
            if (known && given->dims[d] != dim->dim_value) {
                return plx_status_create(PLX_INVALID_ARGUMENT,
                                         "%s: input '%s' dim %zu: the model says %lld, the "
                                         "shape given says %lld", c->file, name, d,
                                         (long long)dim->dim_value, (long long)given->dims[d]);
            }
            info.dims[d] = given->dims[d];
        } else if (known) {
            info.dims[d] = dim->dim_value;
        } else if (data && data->dims[d] >= 0) {
            info.dims[d] = data->dims[d];
        } else {
            const char *param =
                dim && dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                    ? dim->dim_param : NULL;
            return plx_status_create(PLX_INVALID_ARGUMENT,
                                     "%s: input '%s' dim %zu%s%s%s has no size: give the "
                                     "input's shape (--shape %s=DIMS)", c->file, name, d,
                                     param ? " ('" : "", param ? param : "", param ? "')" : "",
                                     name);
        }
    }
    size_t bytes;
    if (!plx_tensor_info_byte_size(&info, &bytes)) {
        return plx_status_create(PLX_INVALID_ARGUMENT, "%s: input '%s': its size overflows",
                                 c->file, name);
    }
    *out = info;
    return NULL;
}

/* A graph input frozen to the caller's value: checked against the
 * declared type and shape, then a constant. */
static plx_status freeze_input(onnxi_ctx *c, const Onnx__ValueInfoProto *vi,
                               const plx_onnx_constant_input *k) {
    const char *name = vi->name;
    const Onnx__TypeProto__Tensor *tt =
        vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE
            ? vi->type->tensor_type : NULL;
    if (!tt) {
        return plx_status_create(PLX_UNSUPPORTED, "%s: input '%s' is not a tensor", c->file,
                                 name);
    }
    plx_dtype dt = onnxi_dtype(tt->has_elem_type ? tt->elem_type : 0);
    if (dt != k->info.dtype) {
        char tbuf[32];
        return plx_status_create(PLX_INVALID_ARGUMENT, "%s: input '%s' has element type %s, "
                                 "the constant given is %s", c->file, name,
                                 onnxi_dtype_name(tt->elem_type, tbuf, sizeof tbuf),
                                 plx_dtype_name(k->info.dtype));
    }
    if (tt->shape) {
        bool ok = tt->shape->n_dim == k->info.rank;
        for (size_t d = 0; ok && d < tt->shape->n_dim; d++) {
            const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
            ok = dim->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
                 dim->dim_value == k->info.dims[d];
        }
        if (!ok) {
            return plx_status_create(PLX_INVALID_ARGUMENT, "%s: input '%s': the constant "
                                     "given does not have the input's shape", c->file, name);
        }
    }
    if (!k->data && onnxi_elem_count(&k->info) > 0) {
        return plx_status_create(PLX_INVALID_ARGUMENT, "%s: input '%s': the constant given has "
                                 "no data", c->file, name);
    }
    plx_tensor_info info = k->info;
    info.quant.kind = PLX_QUANT_NONE;
    onnxi_value *v;
    plx_status st = onnxi_const_copy(c, &info, k->data ? k->data : "", &v);
    return st ? st : onnxi_bind(c, name, v);
}

static plx_status format_unsupported(const onnxi_ctx *c) {
    size_t len = 0;
    for (size_t i = 0; i < c->unsupported_count; i++) {
        len += strlen(c->unsupported[i]) + 4;
    }
    char *text = malloc(len + 1);
    if (!text) {
        return oom(c);
    }
    text[0] = '\0';
    char *p = text;
    for (size_t i = 0; i < c->unsupported_count; i++) {
        p += sprintf(p, "\n  %s", c->unsupported[i]);
    }
    plx_status st = plx_status_create(PLX_UNSUPPORTED, "%s: %zu unsupported node%s:%s", c->file,
                                      c->unsupported_count,
                                      c->unsupported_count == 1 ? "" : "s", text);
    free(text);
    return st;
}

static void free_strings(char **v, size_t count) {
    for (size_t i = 0; i < count; i++) {
        free(v[i]);
    }
    free(v);
}

static void ctx_free(onnxi_ctx *c) {
    onnxi_map_free(&c->values);
    onnxi_map_free(&c->layer_names);
    onnxi_map_free(&c->name_suffixes);
    for (size_t i = 0; i < c->owned_count; i++) {
        free(c->owned[i]->poison_reason);
        free(c->owned[i]->src);
        free(c->owned[i]);
    }
    free(c->owned);
    for (size_t i = 0; i < c->blob_count; i++) {
        free(c->blobs[i]);
    }
    free(c->blobs);
    free_strings(c->unsupported, c->unsupported_count);
    free_strings(c->value_needs, c->value_need_count);
    free_strings(c->value_tensors, c->value_tensor_count);
    onnxi_map_free(&c->producers);
    onnxi_map_free(&c->frozen);
    plx_network_destroy(&c->net);
}

PLX_API void plx_onnx_model_destroy(plx_onnx_model **model) {
    if (!model || !*model) {
        return;
    }
    plx_onnx_model *m = *model;
    plx_network_destroy(&m->net);
    for (size_t i = 0; i < m->blob_count; i++) {
        free(m->blobs[i]);
    }
    free(m->blobs);
    plx_model_weights_release(&m->weights);
    for (size_t i = 0; i < m->input_count; i++) {
        free((char *)m->inputs[i].name);
    }
    for (size_t i = 0; i < m->output_count; i++) {
        free((char *)m->outputs[i].name);
    }
    free(m->inputs);
    free(m->outputs);
    free(m->producer);
    free(m);
    *model = NULL;
}

/* Whether `name` is a graph input that no initializer gives a value (one
 * the caller may size or freeze). Before the inputs are bound. */
static bool is_graph_input(onnxi_ctx *c, const Onnx__GraphProto *g, const char *name) {
    for (size_t i = 0; i < g->n_input; i++) {
        if (g->input[i]->name && strcmp(g->input[i]->name, name) == 0) {
            return onnxi_map_get(&c->values, name) == NULL;
        }
    }
    return false;
}

/* Adds `name` to `names` (a set). */
static bool add_name(onnxi_map *names, const char *name) {
    return onnxi_map_get(names, name) || onnxi_map_put(names, name, names);
}

/* The walk of mark_needed: the names read so far, and the nodes kept,
 * with a stack of those whose reads are still to visit. */
typedef struct need_walk {
    onnxi_ctx *c;
    onnxi_map *reads;
    bool *keep;
    size_t *stack, top;
} need_walk;

/* A name read on the way: noted, and the main-graph node that computes
 * it (unless frozen) kept and pushed. */
static bool need_name(void *arg, const char *name) {
    need_walk *w = arg;
    if (!add_name(w->reads, name)) {
        return false;
    }
    void *p = onnxi_map_get(&w->c->frozen, name) ? NULL : onnxi_map_get(&w->c->producers, name);
    if (p && !w->keep[(uintptr_t)p - 1]) {
        w->keep[(uintptr_t)p - 1] = true;
        w->stack[w->top++] = (uintptr_t)p - 1;
    }
    return true;
}

/* keep[i] for the nodes of g that the `targets` need, back through the
 * nodes' inputs and stopping at frozen tensors; `reads` gets every name
 * read on the way (and the targets). */
static plx_status mark_needed(onnxi_ctx *c, const Onnx__GraphProto *g,
                              const char *const *targets, size_t n_targets, bool *keep,
                              onnxi_map *reads) {
    need_walk w = {c, reads, keep, malloc((g->n_node + 1) * sizeof *w.stack), 0};
    bool ok = w.stack != NULL;
    for (size_t t = 0; ok && t < n_targets; t++) {
        ok = need_name(&w, targets[t]);
    }
    while (ok && w.top) {
        ok = for_each_read(g->node[w.stack[--w.top]], need_name, &w, 0);
    }
    free(w.stack);
    return ok ? NULL : oom(c);
}

/* Binds a tensor a node computes to the constant the options give. */
static plx_status freeze_tensor(onnxi_ctx *c, const plx_onnx_constant_input *k) {
    if (!k->data && onnxi_elem_count(&k->info) > 0) {
        return plx_status_create(PLX_INVALID_ARGUMENT, "%s: tensor '%s': the constant given "
                                 "has no data", c->file, k->name);
    }
    plx_tensor_info info = k->info;
    info.quant.kind = PLX_QUANT_NONE;
    onnxi_value *v;
    plx_status st = onnxi_const_copy(c, &info, k->data ? k->data : "", &v);
    if (!st) {
        st = onnxi_bind(c, k->name, v);
    }
    if (!st && !onnxi_map_put(&c->frozen, k->name, v)) {
        st = oom(c);
    }
    return st;
}

static plx_status import_graph(onnxi_ctx *c, const Onnx__ModelProto *mp,
                               const plx_onnx_options *opts, plx_onnx_model *m) {
    const Onnx__GraphProto *g = mp->graph;
    plx_status st = onnxi_import_initializers(c, g);
    if (st) {
        return st;
    }
    /* The main graph's node outputs (the first producer of each). */
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *node = g->node[i];
        for (size_t k = 0; k < node->n_output; k++) {
            const char *o = node->output[k];
            if (o && o[0] && !onnxi_map_get(&c->producers, o) &&
                !onnxi_map_put(&c->producers, o, (void *)(uintptr_t)(i + 1))) {
                return oom(c);
            }
        }
    }
    /* Every shape the caller gives names a graph input that no initializer
     * gives a value, and every constant such an input or a tensor a node
     * computes; checked first, so that a wrong name is what the message
     * names, not an open dim of another input. */
    bool prune = opts && opts->output_count;
    for (size_t i = 0; opts && i < opts->shape_count + opts->constant_count; i++) {
        bool is_shape = i < opts->shape_count;
        const char *name = is_shape ? opts->shapes[i].name
                                    : opts->constants[i - opts->shape_count].name;
        if (is_graph_input(c, g, name)) {
            continue;
        }
        if (!is_shape && onnxi_map_get(&c->producers, name)) {
            prune = true; /* a computed tensor: what only it needed is not imported */
            continue;
        }
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "%s: a %s is given for '%s', which is not an input of the "
                                 "model%s", c->file, is_shape ? "shape" : "constant", name,
                                 is_shape ? "" : " nor a tensor a node computes");
    }
    /* The tensors to output: the graph's, or those the options name. */
    size_t n_targets = opts && opts->output_count ? opts->output_count : g->n_output;
    const char **targets = calloc(n_targets + 1, sizeof *targets);
    bool *keep = prune ? calloc(g->n_node + 1, sizeof *keep) : NULL;
    onnxi_map reads = {0};
    m->inputs = calloc(g->n_input ? g->n_input : 1, sizeof *m->inputs);
    m->outputs = calloc(n_targets + 1, sizeof *m->outputs);
    if (!targets || (prune && !keep) || !m->inputs || !m->outputs) {
        st = oom(c);
        goto out;
    }
    for (size_t i = 0; i < n_targets && !st; i++) {
        targets[i] = opts && opts->output_count ? opts->outputs[i] : g->output[i]->name;
        if (!opts || !opts->output_count) {
            continue;
        }
        if (!targets[i]) {
            st = plx_status_create(PLX_INVALID_ARGUMENT, "%s: outputs[%zu] has no name", c->file,
                                   i);
        } else if (!onnxi_map_get(&c->producers, targets[i]) && !is_graph_input(c, g, targets[i])) {
            st = plx_status_create(PLX_INVALID_ARGUMENT, "%s: an output is asked for '%s', which "
                                   "no node of the main graph computes", c->file, targets[i]);
        }
        for (size_t k = 0; k < i && !st; k++) {
            if (strcmp(targets[k], targets[i]) == 0) {
                st = plx_status_create(PLX_INVALID_ARGUMENT, "%s: output '%s' is asked for "
                                       "twice", c->file, targets[i]);
            }
        }
    }
    for (size_t i = 0; opts && i < opts->constant_count && !st; i++) {
        if (!is_graph_input(c, g, opts->constants[i].name)) {
            st = freeze_tensor(c, &opts->constants[i]);
        }
    }
    if (!st && prune) {
        st = mark_needed(c, g, targets, n_targets, keep, &reads);
    }
    for (size_t i = 0; i < g->n_input && !st; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        if (!vi->name || !vi->name[0]) {
            st = plx_status_create(PLX_INVALID_ARGUMENT, "%s: graph input %zu has no name",
                                   c->file, i);
            break;
        }
        if (prune && !onnxi_map_get(&reads, vi->name)) {
            continue; /* not needed for the outputs */
        }
        onnxi_value *known = onnxi_map_get(&c->values, vi->name);
        if (known && known->kind == ONNXI_LAYER) {
            st = plx_status_create(PLX_INVALID_ARGUMENT, "%s: graph input '%s' is declared "
                                   "twice", c->file, vi->name);
            break;
        }
        if (known) {
            continue; /* an initializer gives it a value (IR < 4 style) */
        }
        const plx_onnx_constant_input *frozen = NULL;
        for (size_t k = 0; opts && k < opts->constant_count; k++) {
            if (strcmp(opts->constants[k].name, vi->name) == 0) {
                frozen = &opts->constants[k];
            }
        }
        if (frozen) {
            st = freeze_input(c, vi, frozen);
            continue;
        }
        plx_tensor_info info;
        st = input_info(c, vi, opts, &info);
        if (st) {
            break;
        }
        plx_onnx_io *io = &m->inputs[m->input_count];
        io->name = strdup(vi->name);
        io->binding_id = (int32_t)m->input_count;
        io->info = info;
        if (!io->name) {
            st = oom(c);
            break;
        }
        m->input_count++;
        onnxi_value *v = onnxi_value_new(c, ONNXI_LAYER, &info);
        char *lname = onnxi_unique_name(c, vi->name);
        if (!v || !lname) {
            free(lname);
            st = oom(c);
            break;
        }
        v->has_layer = true;
        v->input_name = vi->name;
        st = plx_network_add_input(c->net, lname, io->binding_id, &info, &v->layer);
        free(lname);
        if (!st) {
            st = onnxi_bind(c, vi->name, v);
        }
    }
    if (!st) {
        st = onnxi_import_nodes(c, g, keep);
    }
    if (!st && c->unsupported_count) {
        st = format_unsupported(c);
    }
    for (size_t i = 0; i < n_targets && !st; i++) {
        const char *name = targets[i];
        onnxi_value *v = name ? onnxi_map_get(&c->values, name) : NULL;
        if (!v) {
            st = plx_status_create(PLX_INVALID_ARGUMENT,
                                   "%s: graph output '%s' is not produced by any node",
                                   c->file, name ? name : "(unnamed)");
            break;
        }
        if (v->kind == ONNXI_POISON) {
            st = plx_status_create(PLX_UNSUPPORTED, "%s: graph output '%s': %s", c->file, name,
                                   v->poison_reason ? v->poison_reason : "unsupported");
            break;
        }
        st = onnxi_materialise(c, v, name);
        char *base = onnxi_asprintf("%s.output", name);
        char *lname = base ? onnxi_unique_name(c, base) : NULL;
        free(base);
        plx_onnx_io *io = &m->outputs[m->output_count++]; /* freed with the model */
        io->name = strdup(name);
        io->binding_id = (int32_t)i;
        io->info = v->info;
        if (!st && (!lname || !io->name)) {
            st = oom(c);
        }
        plx_layer_id out_id;
        if (!st) {
            st = plx_network_add_output(c->net, lname, io->binding_id, &out_id);
        }
        if (!st) {
            st = plx_network_connect(c->net, v->layer, v->slot, out_id, 0);
        }
        free(lname);
    }
    if (!st) {
        st = plx_network_validate(c->net);
    }
    for (size_t i = 0; !st && i < m->output_count; i++) {
        m->outputs[i].info.quant.kind = PLX_QUANT_NONE;
    }
out:
    free(targets);
    free(keep);
    onnxi_map_free(&reads);
    return st;
}

static plx_status import_model(const void *data, size_t size, const char *name,
                               const char *base_dir, const plx_onnx_options *opts,
                               plx_onnx_model **out_model) {
    /* Callers built before data_shapes, or before report, pass the struct
     * that ended at constant_count or data_shape_count: the fields they
     * lack read as zero. */
    plx_onnx_options given;
    plx_onnx_options_init(&given);
    if (opts) {
        if (opts->struct_size != offsetof(plx_onnx_options, data_shapes) &&
            opts->struct_size != offsetof(plx_onnx_options, report) &&
            opts->struct_size < sizeof given) {
            return plx_status_create(PLX_INVALID_ARGUMENT,
                                     "plx_onnx_options.struct_size %u is not the size of any "
                                     "version of the struct: call plx_onnx_options_init",
                                     (unsigned)opts->struct_size);
        }
        memcpy(&given, opts, opts->struct_size < sizeof given ? opts->struct_size
                                                              : sizeof given);
        given.struct_size = sizeof given;
        opts = &given;
        plx_model_import_report_clear(opts->report);
    }
    for (size_t i = 0; opts && i < opts->data_shape_count; i++) {
        if (!opts->data_shapes || !opts->data_shapes[i].name) {
            return plx_status_create(PLX_INVALID_ARGUMENT, "plx_onnx_options.data_shapes[%zu] "
                                     "has no name", i);
        }
    }
    for (size_t i = 0; opts && i < opts->shape_count; i++) {
        if (!opts->shapes || !opts->shapes[i].name) {
            return plx_status_create(PLX_INVALID_ARGUMENT, "plx_onnx_options.shapes[%zu] has "
                                     "no name", i);
        }
    }
    for (size_t i = 0; opts && i < opts->constant_count; i++) {
        size_t bytes;
        if (!opts->constants || !opts->constants[i].name) {
            return plx_status_create(PLX_INVALID_ARGUMENT, "plx_onnx_options.constants[%zu] "
                                     "has no name", i);
        }
        if (!plx_tensor_info_byte_size(&opts->constants[i].info, &bytes)) {
            return plx_status_create(PLX_INVALID_ARGUMENT, "plx_onnx_options.constants[%zu] "
                                     "('%s') has an invalid tensor info", i,
                                     opts->constants[i].name);
        }
        for (size_t j = 0; j < opts->shape_count; j++) {
            if (strcmp(opts->shapes[j].name, opts->constants[i].name) == 0) {
                return plx_status_create(PLX_INVALID_ARGUMENT, "input '%s' is given both a "
                                         "shape and a constant", opts->constants[i].name);
            }
        }
    }
    plx_status deep = onnxi_check_nesting(data, size, name);
    if (deep) {
        return deep;
    }
    onnxi_pb_allocator pa;
    onnxi_pb_allocator_init(&pa);
    Onnx__ModelProto *mp = onnx__model_proto__unpack(&pa.base, size, (const uint8_t *)data);
    if (!mp && pa.failed) {
        return plx_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory while decoding the "
                                 "model (%zu bytes)", name, size);
    }
    if (!mp) {
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "%s: not an ONNX model: protobuf decoding failed (truncated "
                                 "file or wrong wire types)", name);
    }
    plx_status st = NULL;
    onnxi_ctx c;
    memset(&c, 0, sizeof c);
    c.file = name;
    c.base_dir = base_dir;
    c.opset = -1;
    c.opsets = mp->opset_import;
    c.n_opsets = mp->n_opset_import;
    c.main_graph = mp->graph;
    c.weights = opts ? opts->weights : NULL;
    const char *twice = NULL; /* a domain whose opset is imported twice */
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        if (is_default_domain(o->domain)) {
            twice = c.opset >= 0 ? "ai.onnx" : twice;
            c.opset = o->has_version ? o->version : 0;
        }
        for (size_t k = 0; k < i && !twice; k++) {
            const char *a = o->domain ? o->domain : "", *b = mp->opset_import[k]->domain;
            twice = !is_default_domain(a) && b && strcmp(a, b) == 0 ? a : NULL;
        }
    }
    if (!mp->graph) {
        st = plx_status_create(PLX_INVALID_ARGUMENT, "%s: the model has no graph", name);
    } else if (twice) {
        st = plx_status_create(PLX_INVALID_ARGUMENT, "%s: the model imports an opset of "
                               "domain '%s' twice", name, twice);
    } else if (!mp->has_ir_version || mp->ir_version < 3) {
        st = plx_status_create(PLX_UNSUPPORTED, "%s: IR version %lld; Plexus reads IR version "
                               "3 and newer", name, (long long)mp->ir_version);
    } else if (mp->ir_version > NEWEST_IR_VERSION) {
        st = plx_status_create(PLX_UNSUPPORTED, "%s: IR version %lld is newer than Plexus "
                               "knows (IR versions 3 to %d)", name, (long long)mp->ir_version,
                               NEWEST_IR_VERSION);
    } else if (c.opset >= 0 && c.opset < 7) {
        st = plx_status_create(PLX_UNSUPPORTED, "%s: opset %lld; Plexus imports opset 7 and "
                               "newer", name, (long long)c.opset);
    } else if (c.opset > NEWEST_OPSET) {
        st = plx_status_create(PLX_UNSUPPORTED, "%s: opset %lld is newer than Plexus knows "
                               "(opsets 7 to %d of the default domain)", name,
                               (long long)c.opset, NEWEST_OPSET);
    } else if (mp->graph->n_output == 0) {
        st = plx_status_create(PLX_INVALID_ARGUMENT, "%s: the graph has no outputs: there is "
                               "nothing to compute", name);
    }
    plx_onnx_model *m = NULL;
    if (!st) {
        st = plx_network_create(&c.net);
    }
    if (!st) {
        m = calloc(1, sizeof *m);
        if (!m) {
            st = oom(&c);
        }
    }
    if (!st) {
        st = import_graph(&c, mp, opts, m);
    }
    if (!st) {
        const char *pn = mp->producer_name ? mp->producer_name : "";
        const char *pv = mp->producer_version ? mp->producer_version : "";
        m->producer = onnxi_asprintf("%s%s%s", pn, pn[0] && pv[0] ? " " : "", pv);
        if (!m->producer) {
            st = oom(&c);
        }
    }
    if (st) {
        if (opts && opts->report) {
            opts->report->value_inputs = c.value_needs;
            opts->report->value_input_count = c.value_need_count;
            opts->report->value_tensors = c.value_tensors;
            opts->report->value_tensor_count = c.value_tensor_count;
            c.value_needs = NULL;
            c.value_need_count = 0;
            c.value_tensors = NULL;
            c.value_tensor_count = 0;
        }
        plx_onnx_model_destroy(&m);
        ctx_free(&c);
        onnx__model_proto__free_unpacked(mp, &pa.base);
        return st;
    }
    m->net = c.net;
    c.net = NULL;
    m->weights = c.borrowed ? plx_model_weights_retain(c.weights) : NULL;
    m->blobs = c.blobs;
    m->blob_count = c.blob_count;
    c.blobs = NULL;
    c.blob_count = 0;
    m->facts.producer = m->producer;
    m->facts.ir_version = mp->ir_version;
    m->facts.opset = c.opset;
    m->facts.node_count = c.node_count;
    m->facts.folded_count = c.folded_count;
    ctx_free(&c);
    onnx__model_proto__free_unpacked(mp, &pa.base);
    *out_model = m;
    return NULL;
}

PLX_API plx_status plx_onnx_import_memory(const void *data, size_t size, const char *name,
                                          const char *base_dir, const plx_onnx_options *options,
                                          plx_onnx_model **out_model) {
    if ((!data && size) || !out_model) {
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "plx_onnx_import_memory: data and out_model are required");
    }
    return import_model(data ? data : "", size, name ? name : "(memory)", base_dir, options,
                        out_model);
}

PLX_API plx_status plx_onnx_import_file(const char *path, const plx_onnx_options *options,
                                        plx_onnx_model **out_model) {
    if (!path || !out_model) {
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "plx_onnx_import_file: path and out_model are required");
    }
    void *data;
    size_t size;
    plx_status st = onnxi_read_file(path, MAX_MODEL_BYTES, &data, &size);
    if (st) {
        if (options && options->struct_size >= sizeof *options) {
            plx_model_import_report_clear(options->report); /* as import_model would */
        }
        return st;
    }
    char *dir = strdup(path);
    if (!dir) {
        free(data);
        return plx_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    char *slash = strrchr(dir, '/');
    if (!slash) {
        strcpy(dir, ".");
    } else if (slash == dir) {
        dir[1] = '\0';
    } else {
        *slash = '\0';
    }
    st = import_model(data, size, path, dir, options, out_model);
    free(dir);
    free(data);
    return st;
}

PLX_API plx_network *plx_onnx_model_network(plx_onnx_model *model) {
    return model ? model->net : NULL;
}

PLX_API size_t plx_onnx_model_input_count(const plx_onnx_model *model) {
    return model ? model->input_count : 0;
}

PLX_API const plx_onnx_io *plx_onnx_model_input(const plx_onnx_model *model, size_t index) {
    return model && index < model->input_count ? &model->inputs[index] : NULL;
}

PLX_API size_t plx_onnx_model_output_count(const plx_onnx_model *model) {
    return model ? model->output_count : 0;
}

PLX_API const plx_onnx_io *plx_onnx_model_output(const plx_onnx_model *model, size_t index) {
    return model && index < model->output_count ? &model->outputs[index] : NULL;
}

PLX_API void plx_onnx_model_get_facts(const plx_onnx_model *model,
                                      plx_onnx_model_facts *out_facts) {
    if (!out_facts) {
        return;
    }
    memset(out_facts, 0, sizeof *out_facts);
    if (model) {
        *out_facts = model->facts;
    }
}
