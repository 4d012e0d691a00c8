/* Builds ONNX models in memory for the importer's tests, with the protobuf-c
 * code generated from onnx.proto (onnx.pb-c.h), and serialises them.
 *
 * Everything a model holds (messages, strings, arrays) is allocated from
 * the model's arena and released at once by ob_model_free, so tests may
 * also edit the protobuf-c structs directly (ob_proto, the returned
 * messages) and set fields to arena memory (ob_alloc, ob_strdup).
 *
 * Lists of names are comma-separated strings: "x,w,b"; an empty element is
 * an absent optional input ("x,,b"). Shapes are strings too: "1,3,8,8"
 * gives dim_value entries, an identifier ("N") a dim_param, "?" a dimension
 * with neither; "" is rank 0 (a shape with no dims); NULL means no shape. */
#ifndef PLEXUS_TESTS_ONNX_BUILDER_H
#define PLEXUS_TESTS_ONNX_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnx.pb-c.h"

/* TensorProto.DataType values, shorter. */
enum {
    OB_FLOAT = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
    OB_UINT8 = ONNX__TENSOR_PROTO__DATA_TYPE__UINT8,
    OB_INT8 = ONNX__TENSOR_PROTO__DATA_TYPE__INT8,
    OB_INT32 = ONNX__TENSOR_PROTO__DATA_TYPE__INT32,
    OB_INT64 = ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
    OB_BOOL = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL,
    OB_DOUBLE = ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE,
    OB_UINT16 = ONNX__TENSOR_PROTO__DATA_TYPE__UINT16,
    OB_UINT32 = ONNX__TENSOR_PROTO__DATA_TYPE__UINT32,
    OB_UINT64 = ONNX__TENSOR_PROTO__DATA_TYPE__UINT64,
    OB_COMPLEX64 = ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64,
    /* onnx.proto's float8 values (the proto compiled here predates them;
     * data_type is an int32, so any value travels) */
    OB_FLOAT8E4M3FN = 17,
    OB_FLOAT8E4M3FNUZ = 18,
    OB_FLOAT8E5M2 = 19,
    OB_FLOAT8E5M2FNUZ = 20,
    OB_UINT4 = 21,
    OB_INT4 = 22
};

/* OB_DIMS(2, 3) expands to the two arguments dims and rank; OB_SCALAR to a
 * rank-0 shape. */
#define OB_DIMS(...)                                                                    \
    (const int64_t[]){__VA_ARGS__},                                                     \
        (size_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define OB_SCALAR NULL, (size_t)0

typedef struct ob_model ob_model;
typedef struct ob_graph ob_graph;
typedef struct ob_node ob_node;

/* A model with `ir_version` and, when opset >= 0, an import of the default
 * domain's opset `opset`; its main graph is named "main". Never NULL
 * (aborts when out of memory). */
ob_model *ob_model_new(int64_t ir_version, int64_t opset);
/* Frees the model and everything allocated for it; NULL is ignored. */
void ob_model_free(ob_model *m);
/* Adds an opset import (`domain` NULL or "" for the default domain). */
void ob_model_opset(ob_model *m, const char *domain, int64_t version);
/* The model's message, to edit directly. */
Onnx__ModelProto *ob_proto(ob_model *m);
/* The main graph (attached to the model). */
ob_graph *ob_main(ob_model *m);
/* A new graph (for If branches), not attached to anything. */
ob_graph *ob_graph_new(ob_model *m, const char *name);
Onnx__GraphProto *ob_graph_proto(ob_graph *g);

/* Arena memory of the model (zeroed) and strings copied into it. */
void *ob_alloc(ob_model *m, size_t size);
char *ob_strdup(ob_model *m, const char *s);

/* Graph inputs and outputs: element type and shape (see the header
 * comment; NULL for no shape). */
Onnx__ValueInfoProto *ob_input(ob_graph *g, const char *name, int32_t elem_type,
                               const char *shape);
Onnx__ValueInfoProto *ob_output(ob_graph *g, const char *name, int32_t elem_type,
                                const char *shape);

/* A tensor (not attached to anything) with name (NULL: none), data type
 * and dims; fill it with one of the ob_tensor_* data setters below. */
Onnx__TensorProto *ob_tensor(ob_model *m, const char *name, int32_t data_type,
                             const int64_t *dims, size_t rank);
void ob_tensor_raw(ob_model *m, Onnx__TensorProto *t, const void *data, size_t bytes);
void ob_tensor_floats(ob_model *m, Onnx__TensorProto *t, const float *v, size_t n);
void ob_tensor_int64s(ob_model *m, Onnx__TensorProto *t, const int64_t *v, size_t n);
void ob_tensor_int32s(ob_model *m, Onnx__TensorProto *t, const int32_t *v, size_t n);
void ob_tensor_doubles(ob_model *m, Onnx__TensorProto *t, const double *v, size_t n);
void ob_tensor_uint64s(ob_model *m, Onnx__TensorProto *t, const uint64_t *v, size_t n);
/* Marks the data external: location, and offset / length when >= 0. */
void ob_tensor_external(ob_model *m, Onnx__TensorProto *t, const char *location, int64_t offset,
                        int64_t length);

/* Adds a tensor to the graph's initializers. */
void ob_initializer(ob_graph *g, Onnx__TensorProto *t);
/* Float32 / int64 initializers: the data in raw_data (raw) or in the typed
 * field (float_data, int64_data); the count is the dims' product. */
Onnx__TensorProto *ob_init_f32(ob_graph *g, const char *name, const int64_t *dims, size_t rank,
                               const float *data, bool raw);
Onnx__TensorProto *ob_init_i64(ob_graph *g, const char *name, const int64_t *dims, size_t rank,
                               const int64_t *data, bool raw);

/* A node: op type, name (NULL: unnamed), inputs and outputs (comma lists). */
ob_node *ob_node_add(ob_graph *g, const char *op_type, const char *name, const char *inputs,
                     const char *outputs);
Onnx__NodeProto *ob_node_proto(ob_node *n);
void ob_node_domain(ob_node *n, const char *domain);
/* Attributes. */
void ob_attr_i(ob_node *n, const char *name, int64_t v);
void ob_attr_f(ob_node *n, const char *name, float v);
void ob_attr_s(ob_node *n, const char *name, const char *v);
void ob_attr_ints(ob_node *n, const char *name, const int64_t *v, size_t count);
void ob_attr_floats(ob_node *n, const char *name, const float *v, size_t count);
/* At most 16 strings. */
void ob_attr_strings(ob_node *n, const char *name, const char *const *v, size_t count);
void ob_attr_t(ob_node *n, const char *name, Onnx__TensorProto *t);
void ob_attr_g(ob_node *n, const char *name, ob_graph *g);

/* Serialises the model (or a tensor) into a malloc'd buffer (free it);
 * *size gets its length. Never NULL. */
uint8_t *ob_pack(ob_model *m, size_t *size);
uint8_t *ob_pack_tensor(const Onnx__TensorProto *t, size_t *size);

#endif /* PLEXUS_TESTS_ONNX_BUILDER_H */
