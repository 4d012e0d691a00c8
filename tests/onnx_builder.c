/* Builds ONNX models in memory for the importer's tests (onnx_builder.h). */
#include "onnx_builder.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One arena allocation: a header, then the caller's bytes. */
typedef union ob_block {
    union ob_block *next;
    max_align_t align;
} ob_block;

struct ob_graph {
    Onnx__GraphProto proto; /* first: the graph's message */
    ob_model *m;
};

struct ob_node {
    Onnx__NodeProto proto; /* first: the node's message */
    ob_model *m;
};

struct ob_model {
    Onnx__ModelProto proto;
    ob_graph *main;
    ob_block *blocks;
};

static void *xmalloc(size_t size) {
    void *p = calloc(1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "onnx_builder: out of memory\n");
        abort();
    }
    return p;
}

void *ob_alloc(ob_model *m, size_t size) {
    ob_block *b = xmalloc(sizeof(ob_block) + size);
    b->next = m->blocks;
    m->blocks = b;
    return b + 1;
}

char *ob_strdup(ob_model *m, const char *s) {
    if (!s) {
        return NULL;
    }
    size_t len = strlen(s);
    char *d = ob_alloc(m, len + 1);
    memcpy(d, s, len + 1);
    return d;
}

static void *dup_bytes(ob_model *m, const void *data, size_t bytes) {
    void *d = ob_alloc(m, bytes);
    if (bytes) {
        memcpy(d, data, bytes);
    }
    return d;
}

/* Appends `item` to a repeated field of pointers (a fresh arena array each
 * time: the models are small). */
static void push(ob_model *m, void ***arr, size_t *n, void *item) {
    void **grown = ob_alloc(m, (*n + 1) * sizeof *grown);
    if (*n) {
        memcpy(grown, *arr, *n * sizeof *grown);
    }
    grown[*n] = item;
    *arr = grown;
    (*n)++;
}
#define PUSH(m, arr, n, item) push((m), (void ***)(void *)&(arr), &(n), (item))

/* Splits a comma list into arena strings. */
static size_t split(ob_model *m, const char *list, char ***out) {
    *out = NULL;
    if (!list || !*list) {
        return 0;
    }
    size_t n = 1;
    for (const char *p = list; *p; p++) {
        n += *p == ',';
    }
    char **items = ob_alloc(m, n * sizeof *items);
    const char *start = list;
    for (size_t i = 0; i < n; i++) {
        const char *end = strchr(start, ',');
        size_t len = end ? (size_t)(end - start) : strlen(start);
        items[i] = ob_alloc(m, len + 1);
        memcpy(items[i], start, len);
        start = end ? end + 1 : start + len;
    }
    *out = items;
    return n;
}

ob_model *ob_model_new(int64_t ir_version, int64_t opset) {
    ob_model *m = xmalloc(sizeof *m);
    Onnx__ModelProto init = ONNX__MODEL_PROTO__INIT;
    m->proto = init;
    m->proto.has_ir_version = 1;
    m->proto.ir_version = ir_version;
    m->proto.producer_name = ob_strdup(m, "onnx_builder");
    m->proto.producer_version = ob_strdup(m, "1.0");
    if (opset >= 0) {
        ob_model_opset(m, NULL, opset);
    }
    m->main = ob_graph_new(m, "main");
    m->proto.graph = &m->main->proto;
    return m;
}

void ob_model_free(ob_model *m) {
    if (!m) {
        return;
    }
    ob_block *b = m->blocks;
    while (b) {
        ob_block *next = b->next;
        free(b);
        b = next;
    }
    free(m);
}

void ob_model_opset(ob_model *m, const char *domain, int64_t version) {
    Onnx__OperatorSetIdProto *o = ob_alloc(m, sizeof *o);
    Onnx__OperatorSetIdProto init = ONNX__OPERATOR_SET_ID_PROTO__INIT;
    *o = init;
    o->domain = ob_strdup(m, domain ? domain : "");
    o->has_version = 1;
    o->version = version;
    PUSH(m, m->proto.opset_import, m->proto.n_opset_import, o);
}

Onnx__ModelProto *ob_proto(ob_model *m) {
    return &m->proto;
}

ob_graph *ob_main(ob_model *m) {
    return m->main;
}

ob_graph *ob_graph_new(ob_model *m, const char *name) {
    ob_graph *g = ob_alloc(m, sizeof *g);
    Onnx__GraphProto init = ONNX__GRAPH_PROTO__INIT;
    g->proto = init;
    g->proto.name = ob_strdup(m, name);
    g->m = m;
    return g;
}

Onnx__GraphProto *ob_graph_proto(ob_graph *g) {
    return &g->proto;
}

static Onnx__ValueInfoProto *value_info(ob_graph *g, const char *name, int32_t elem_type,
                                        const char *shape) {
    ob_model *m = g->m;
    Onnx__ValueInfoProto *vi = ob_alloc(m, sizeof *vi);
    Onnx__ValueInfoProto vi_init = ONNX__VALUE_INFO_PROTO__INIT;
    *vi = vi_init;
    vi->name = ob_strdup(m, name);
    Onnx__TypeProto *tp = ob_alloc(m, sizeof *tp);
    Onnx__TypeProto tp_init = ONNX__TYPE_PROTO__INIT;
    *tp = tp_init;
    Onnx__TypeProto__Tensor *tt = ob_alloc(m, sizeof *tt);
    Onnx__TypeProto__Tensor tt_init = ONNX__TYPE_PROTO__TENSOR__INIT;
    *tt = tt_init;
    tt->has_elem_type = 1;
    tt->elem_type = elem_type;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    if (shape) {
        Onnx__TensorShapeProto *sp = ob_alloc(m, sizeof *sp);
        Onnx__TensorShapeProto sp_init = ONNX__TENSOR_SHAPE_PROTO__INIT;
        *sp = sp_init;
        char **items;
        size_t n = split(m, shape, &items);
        for (size_t i = 0; i < n; i++) {
            Onnx__TensorShapeProto__Dimension *d = ob_alloc(m, sizeof *d);
            Onnx__TensorShapeProto__Dimension d_init = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT;
            *d = d_init;
            const char *s = items[i];
            if (strcmp(s, "?") == 0) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE__NOT_SET;
            } else if ((s[0] >= '0' && s[0] <= '9') || s[0] == '-') {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = strtoll(s, NULL, 10);
            } else {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = items[i];
            }
            PUSH(m, sp->dim, sp->n_dim, d);
        }
        tt->shape = sp;
    }
    return vi;
}

Onnx__ValueInfoProto *ob_input(ob_graph *g, const char *name, int32_t elem_type,
                               const char *shape) {
    Onnx__ValueInfoProto *vi = value_info(g, name, elem_type, shape);
    PUSH(g->m, g->proto.input, g->proto.n_input, vi);
    return vi;
}

Onnx__ValueInfoProto *ob_output(ob_graph *g, const char *name, int32_t elem_type,
                                const char *shape) {
    Onnx__ValueInfoProto *vi = value_info(g, name, elem_type, shape);
    PUSH(g->m, g->proto.output, g->proto.n_output, vi);
    return vi;
}

Onnx__TensorProto *ob_tensor(ob_model *m, const char *name, int32_t data_type,
                             const int64_t *dims, size_t rank) {
    Onnx__TensorProto *t = ob_alloc(m, sizeof *t);
    Onnx__TensorProto init = ONNX__TENSOR_PROTO__INIT;
    *t = init;
    t->name = ob_strdup(m, name);
    t->has_data_type = 1;
    t->data_type = data_type;
    t->n_dims = rank;
    t->dims = dup_bytes(m, dims, rank * sizeof *dims);
    return t;
}

void ob_tensor_raw(ob_model *m, Onnx__TensorProto *t, const void *data, size_t bytes) {
    t->has_raw_data = 1;
    t->raw_data.len = bytes;
    t->raw_data.data = dup_bytes(m, data, bytes);
}

void ob_tensor_floats(ob_model *m, Onnx__TensorProto *t, const float *v, size_t n) {
    t->n_float_data = n;
    t->float_data = dup_bytes(m, v, n * sizeof *v);
}

void ob_tensor_int64s(ob_model *m, Onnx__TensorProto *t, const int64_t *v, size_t n) {
    t->n_int64_data = n;
    t->int64_data = dup_bytes(m, v, n * sizeof *v);
}

void ob_tensor_int32s(ob_model *m, Onnx__TensorProto *t, const int32_t *v, size_t n) {
    t->n_int32_data = n;
    t->int32_data = dup_bytes(m, v, n * sizeof *v);
}

void ob_tensor_doubles(ob_model *m, Onnx__TensorProto *t, const double *v, size_t n) {
    t->n_double_data = n;
    t->double_data = dup_bytes(m, v, n * sizeof *v);
}

void ob_tensor_uint64s(ob_model *m, Onnx__TensorProto *t, const uint64_t *v, size_t n) {
    t->n_uint64_data = n;
    t->uint64_data = dup_bytes(m, v, n * sizeof *v);
}

static void add_entry(ob_model *m, Onnx__TensorProto *t, const char *key, const char *value) {
    Onnx__StringStringEntryProto *e = ob_alloc(m, sizeof *e);
    Onnx__StringStringEntryProto init = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
    *e = init;
    e->key = ob_strdup(m, key);
    e->value = ob_strdup(m, value);
    PUSH(m, t->external_data, t->n_external_data, e);
}

void ob_tensor_external(ob_model *m, Onnx__TensorProto *t, const char *location, int64_t offset,
                        int64_t length) {
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    add_entry(m, t, "location", location);
    char buf[32];
    if (offset >= 0) {
        snprintf(buf, sizeof buf, "%lld", (long long)offset);
        add_entry(m, t, "offset", buf);
    }
    if (length >= 0) {
        snprintf(buf, sizeof buf, "%lld", (long long)length);
        add_entry(m, t, "length", buf);
    }
}

void ob_initializer(ob_graph *g, Onnx__TensorProto *t) {
    PUSH(g->m, g->proto.initializer, g->proto.n_initializer, t);
}

static size_t product(const int64_t *dims, size_t rank) {
    size_t n = 1;
    for (size_t i = 0; i < rank; i++) {
        n *= (size_t)dims[i];
    }
    return n;
}

Onnx__TensorProto *ob_init_f32(ob_graph *g, const char *name, const int64_t *dims, size_t rank,
                               const float *data, bool raw) {
    Onnx__TensorProto *t = ob_tensor(g->m, name, OB_FLOAT, dims, rank);
    size_t n = product(dims, rank);
    if (raw) {
        ob_tensor_raw(g->m, t, data, n * sizeof *data);
    } else {
        ob_tensor_floats(g->m, t, data, n);
    }
    ob_initializer(g, t);
    return t;
}

Onnx__TensorProto *ob_init_i64(ob_graph *g, const char *name, const int64_t *dims, size_t rank,
                               const int64_t *data, bool raw) {
    Onnx__TensorProto *t = ob_tensor(g->m, name, OB_INT64, dims, rank);
    size_t n = product(dims, rank);
    if (raw) {
        ob_tensor_raw(g->m, t, data, n * sizeof *data);
    } else {
        ob_tensor_int64s(g->m, t, data, n);
    }
    ob_initializer(g, t);
    return t;
}

ob_node *ob_node_add(ob_graph *g, const char *op_type, const char *name, const char *inputs,
                     const char *outputs) {
    ob_model *m = g->m;
    ob_node *n = ob_alloc(m, sizeof *n);
    Onnx__NodeProto init = ONNX__NODE_PROTO__INIT;
    n->proto = init;
    n->m = m;
    n->proto.op_type = ob_strdup(m, op_type);
    n->proto.name = ob_strdup(m, name);
    n->proto.n_input = split(m, inputs, &n->proto.input);
    n->proto.n_output = split(m, outputs, &n->proto.output);
    PUSH(m, g->proto.node, g->proto.n_node, &n->proto);
    return n;
}

Onnx__NodeProto *ob_node_proto(ob_node *n) {
    return &n->proto;
}

void ob_node_domain(ob_node *n, const char *domain) {
    n->proto.domain = ob_strdup(n->m, domain);
}

static Onnx__AttributeProto *new_attr(ob_node *n, const char *name,
                                      Onnx__AttributeProto__AttributeType type) {
    Onnx__AttributeProto *a = ob_alloc(n->m, sizeof *a);
    Onnx__AttributeProto init = ONNX__ATTRIBUTE_PROTO__INIT;
    *a = init;
    a->name = ob_strdup(n->m, name);
    a->has_type = 1;
    a->type = type;
    PUSH(n->m, n->proto.attribute, n->proto.n_attribute, a);
    return a;
}

void ob_attr_i(ob_node *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = new_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

void ob_attr_f(ob_node *n, const char *name, float v) {
    Onnx__AttributeProto *a = new_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

void ob_attr_s(ob_node *n, const char *name, const char *v) {
    Onnx__AttributeProto *a = new_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(v);
    a->s.data = dup_bytes(n->m, v, a->s.len);
}

void ob_attr_ints(ob_node *n, const char *name, const int64_t *v, size_t count) {
    Onnx__AttributeProto *a = new_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = count;
    a->ints = dup_bytes(n->m, v, count * sizeof *v);
}

void ob_attr_strings(ob_node *n, const char *name, const char *const *v, size_t count) {
    Onnx__AttributeProto *a = new_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    ProtobufCBinaryData none = {0, NULL};
    ProtobufCBinaryData *strings = dup_bytes(n->m, &none, sizeof none); /* count 0: unused */
    if (count) {
        ProtobufCBinaryData tmp[16];
        for (size_t i = 0; i < count && i < 16; i++) {
            tmp[i].len = strlen(v[i]);
            tmp[i].data = dup_bytes(n->m, v[i], tmp[i].len);
        }
        strings = dup_bytes(n->m, tmp, (count < 16 ? count : 16) * sizeof tmp[0]);
    }
    a->n_strings = count < 16 ? count : 16;
    a->strings = strings;
}

void ob_attr_floats(ob_node *n, const char *name, const float *v, size_t count) {
    Onnx__AttributeProto *a = new_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = count;
    a->floats = dup_bytes(n->m, v, count * sizeof *v);
}

void ob_attr_t(ob_node *n, const char *name, Onnx__TensorProto *t) {
    Onnx__AttributeProto *a = new_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = t;
}

void ob_attr_g(ob_node *n, const char *name, ob_graph *g) {
    Onnx__AttributeProto *a = new_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = &g->proto;
}

uint8_t *ob_pack(ob_model *m, size_t *size) {
    size_t n = onnx__model_proto__get_packed_size(&m->proto);
    uint8_t *buf = xmalloc(n);
    *size = onnx__model_proto__pack(&m->proto, buf);
    return buf;
}

uint8_t *ob_pack_tensor(const Onnx__TensorProto *t, size_t *size) {
    size_t n = onnx__tensor_proto__get_packed_size(t);
    uint8_t *buf = xmalloc(n);
    *size = onnx__tensor_proto__pack(t, buf);
    return buf;
}
