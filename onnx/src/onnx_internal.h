/* The ONNX importer's internals, shared by import.c (files, graphs, the
 * model object), values.c (the value table, constants, emitting and folding
 * layers), convert.c (one converter per ONNX operator) and tensor.c
 * (TensorProto decoding). Nothing here is exported from libplexus. */
#ifndef PLEXUS_ONNX_INTERNAL_H
#define PLEXUS_ONNX_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plexus/layer_eval.h>
#include <plexus/network.h>
#include <plexus/onnx.h>
#include <plexus/plexus.h>

#include "onnx.pb-c.h"

/* ---- tensor.c ------------------------------------------------------------ */

/* The largest tensor the importer holds: initializers and external data
 * (64 GiB), and constants it creates itself (ConstantOfShape, Range,
 * default inputs, folded results: 1 GiB; larger results are computed at
 * run time or refused). */
#define ONNXI_MAX_TENSOR_BYTES ((size_t)1 << 36)
#define ONNXI_MAX_CONST_BYTES ((size_t)1 << 30)

/* The Plexus dtype of an ONNX TensorProto.DataType; PLX_DTYPE_INVALID for
 * types Plexus lacks (double, string, uint16/32/64, complex, float8...). */
plx_dtype onnxi_dtype(int32_t onnx_type);
/* "FLOAT", "DOUBLE", ...: ONNX's name of a data type ("type 42" otherwise;
 * the buffer is used only then). */
const char *onnxi_dtype_name(int32_t onnx_type, char *buf, size_t size);

/* Decodes a dense tensor into a malloc'd buffer (never NULL) in host order.
 * `what` names the tensor in messages (e.g. "initializer 'w'");
 * `base_dir` NULL refuses external data. Errors: PLX_UNSUPPORTED for a
 * dtype Plexus lacks or a segmented tensor; PLX_INVALID_ARGUMENT for data
 * that does not match the shape, a bad shape; PLX_IO_ERROR or
 * PLX_INVALID_ARGUMENT for external data that cannot be read or escapes. */
plx_status onnxi_tensor_decode(const Onnx__TensorProto *t, const char *what,
                               const char *base_dir, plx_tensor_info *out_info,
                               void **out_data);

/* libprotobuf-c's allocator with a memory: its decoders return NULL both
 * for malformed bytes and when an allocation fails, and `failed` tells
 * which. Initialise with onnxi_pb_allocator_init; pass &a.base to the
 * unpack and free_unpacked calls. */
typedef struct onnxi_pb_allocator {
    ProtobufCAllocator base;
    bool failed;
} onnxi_pb_allocator;
void onnxi_pb_allocator_init(onnxi_pb_allocator *a);

/* Reads a whole file (at most `max` bytes) into a malloc'd buffer. */
plx_status onnxi_read_file(const char *path, size_t max, void **out_data, size_t *out_size);

/* ---- nesting.c ----------------------------------------------------------- */

/* The deepest nesting of messages below a ModelProto that the importer
 * decodes: Google protobuf's default recursion limit. */
#define ONNXI_MAX_NESTING 100

/* Checks, on the wire and before libprotobuf-c's recursive decoder runs,
 * that the serialized ModelProto in data[0..size) nests no message more
 * than ONNXI_MAX_NESTING deep along the fields that can nest without bound
 * (graph attributes, function and training graphs, sequence, map and
 * optional types). NULL when it does not, or when the bytes are not valid
 * protobuf (the decoder reports that); PLX_INVALID_ARGUMENT naming `name`
 * and the limit otherwise. Allocates nothing. */
plx_status onnxi_check_nesting(const void *data, size_t size, const char *name);

/* ---- values.c ------------------------------------------------------------ */

/* A malloc'd string printf formats; NULL only when out of memory. */
char *onnxi_asprintf(const char *fmt, ...) PLX_PRINTF(1, 2);
char *onnxi_vasprintf(const char *fmt, va_list ap) PLX_PRINTF(1, 0);

/* A string -> pointer hash map (keys copied). */
typedef struct onnxi_map {
    char **keys;
    void **vals;
    size_t cap;
    size_t count;
} onnxi_map;
void *onnxi_map_get(const onnxi_map *m, const char *key);
bool onnxi_map_put(onnxi_map *m, const char *key, void *val); /* false: out of memory */
void onnxi_map_remove(onnxi_map *m, const char *key);        /* absent: nothing */
void onnxi_map_free(onnxi_map *m);

typedef enum onnxi_value_kind {
    ONNXI_CONST = 0, /* known at import: data */
    ONNXI_LAYER = 1, /* an output slot of a layer of the network */
    ONNXI_POISON = 2 /* produced by an unsupported node */
} onnxi_value_kind;

/* A tensor of the graph being imported. Owned by the importer's value list.
 * A constant gets a constant layer the first time a layer reads it. */
typedef struct onnxi_value onnxi_value;
struct onnxi_value {
    onnxi_value_kind kind;
    plx_tensor_info info;
    void *data;            /* ONNXI_CONST: owned by the importer's blob list */
    bool has_layer;        /* ONNXI_LAYER always; ONNXI_CONST once materialised */
    plx_layer_id layer;
    uint32_t slot;
    char *poison_reason;   /* ONNXI_POISON from an initializer: why (owned) */
    /* Where an ONNXI_LAYER value comes from, so that a value a node needs
     * at import can be traced to the graph inputs it is computed from
     * (onnxi_note_value_need): the values its layer reads (owned array),
     * or, for a graph input, its name (the model proto's string). */
    onnxi_value **src;
    uint32_t src_count;
    const char *input_name;
    uint32_t mark;         /* onnxi_note_value_need's visit mark */
};

/* The importer's state for one import. */
typedef struct onnxi_ctx {
    const char *file;      /* for messages */
    const char *base_dir;  /* external data; NULL: refused */
    plx_network *net;
    int64_t opset;         /* of the default domain; -1: not imported */
    Onnx__OperatorSetIdProto **opsets; /* the model's, for messages */
    size_t n_opsets;
    onnxi_map values;      /* ONNX name -> onnxi_value* (the current binding) */
    onnxi_map layer_names; /* used layer names */
    onnxi_map name_suffixes; /* base name -> the next "#k" suffix to try */
    onnxi_value **owned;   /* every value, freed at the end of the import */
    size_t owned_count, owned_cap;
    void **blobs;          /* constant data; moved to the model (the network borrows it) */
    size_t blob_count, blob_cap;
    char **unsupported;    /* one line per unsupported node */
    size_t unsupported_count, unsupported_cap;
    size_t node_count;
    size_t folded_count;
    size_t anon_count;     /* for names of unnamed nodes */
    char **value_needs;    /* graph inputs whose values a node needed (owned names) */
    size_t value_need_count, value_need_cap;
    char **value_tensors;  /* main-graph tensors whose values a node needed (owned) */
    size_t value_tensor_count, value_tensor_cap;
    onnxi_map producers;   /* the main graph's node outputs (name -> node index + 1) */
    onnxi_map frozen;      /* tensors computed by nodes, frozen to constants */
    uint32_t mark;         /* the last visit mark handed out */
    size_t unrolled_nodes; /* body nodes imported by Loop and Scan, nested ones included */
    const Onnx__GraphProto *main_graph;
    plx_model_weights *weights; /* the options' store of shared initializers, or NULL */
    bool borrowed;         /* a constant borrows the store's data */
} onnxi_ctx;

/* The node being converted. */
typedef struct onnxi_node {
    const Onnx__NodeProto *proto;
    const char *name;       /* a unique layer name for it */
    onnxi_value *in[16];    /* NULL for absent optional inputs (""); past n_in: NULL */
    size_t n_in;
    size_t n_out;           /* outputs the node names (trailing "" dropped) */
    size_t emitted;         /* layers emitted so far (suffixes names) */
    bool all_folded;        /* every layer it emitted was folded */
    /* Set by onnxi_need_const: an input the node needs as a constant that
     * is computed at run time. */
    const onnxi_value *needed;
    const char *needed_name; /* its name, as the node reads it */
    /* Where the attribute readers note the first attribute of a type
     * other than the operator's (the node's import then fails). */
    const Onnx__AttributeProto **bad_attribute;
    /* Where onnxi_attr_i32 notes the first int attribute outside int32's
     * range (the node's import then fails, whatever the converter said). */
    const Onnx__AttributeProto **bad_range;
} onnxi_node;

/* Registers a value with the context (freed with it). NULL: out of memory. */
onnxi_value *onnxi_value_new(onnxi_ctx *c, onnxi_value_kind kind, const plx_tensor_info *info);
/* A constant value holding `data` (taken: freed with the model even on
 * failure). */
plx_status onnxi_const_take(onnxi_ctx *c, const plx_tensor_info *info, void *data,
                            onnxi_value **out);
/* A constant value holding `data`, which outlives the model (a store's). */
plx_status onnxi_const_borrow(onnxi_ctx *c, const plx_tensor_info *info, const void *data,
                              onnxi_value **out);
/* A constant value holding a copy of `data`. */
plx_status onnxi_const_copy(onnxi_ctx *c, const plx_tensor_info *info, const void *data,
                            onnxi_value **out);
/* Binds an ONNX name to a value (replacing any earlier binding). */
plx_status onnxi_bind(onnxi_ctx *c, const char *name, onnxi_value *v);
/* A unique layer name based on `base`, malloc'd. */
char *onnxi_unique_name(onnxi_ctx *c, const char *base);

/* Adds one Plexus layer for node `n` (folded to constants when every input
 * is a constant and the reference kernels can run it). `inputs` has
 * `n_in` values (none NULL); `outs` receives `n_out` new values. Shapes
 * are inferred now; an inconsistency is PLX_INVALID_ARGUMENT naming the
 * node. */
plx_status onnxi_emit(onnxi_ctx *c, onnxi_node *n, plx_op op, const void *desc,
                      onnxi_value *const *inputs, uint32_t n_in, uint32_t n_out,
                      onnxi_value **outs);
/* Adds the graph inputs that `v` is computed from to c->value_needs: `v`
 * is an input a node needs at import. */
plx_status onnxi_note_value_need(onnxi_ctx *c, const onnxi_value *v);
/* Adds `name` to c->value_tensors when a node of the main graph computes it. */
plx_status onnxi_note_value_tensor(onnxi_ctx *c, const char *name);
/* Ensures a value has a layer output (materialising a constant). */
plx_status onnxi_materialise(onnxi_ctx *c, onnxi_value *v, const char *hint);

/* Reads integer or float constant data element `i` of a value as int64 /
 * double (for attributes given as inputs). As int64, floats are truncated
 * toward zero and saturated (NaN gives 0) and uint64 values past INT64_MAX
 * saturate; as double, int64 and uint64 values past 2^53 round. */
int64_t onnxi_const_i64(const onnxi_value *v, size_t i);
double onnxi_const_f64(const onnxi_value *v, size_t i);
size_t onnxi_elem_count(const plx_tensor_info *info);
/* float32, float16, bfloat16 or float64. */
bool onnxi_dtype_is_float(plx_dtype dt);

/* ---- convert.c ----------------------------------------------------------- */

/* Converts one node (inputs resolved in n->in). Binds the node's outputs.
 * PLX_UNSUPPORTED statuses carry the reason only; the caller formats the
 * report line with the node's name, op type and opset. */
plx_status onnxi_convert(onnxi_ctx *c, onnxi_node *n);
/* Whether the importer has a converter for a default-domain op type. */
bool onnxi_op_known(const char *op);

/* ---- convert_*.c: the operator converters --------------------------------- */

#define ONNXI_UNSUPPORTED(...) plx_status_create(PLX_UNSUPPORTED, __VA_ARGS__)

/* convert_util.c */
plx_status onnxi_invalid(const onnxi_ctx *c, const onnxi_node *n, const char *fmt, ...)
    PLX_PRINTF(3, 4);
plx_status onnxi_alloc_const(const onnxi_ctx *c, const onnxi_node *n,
                             const plx_tensor_info *info, void **out);
const Onnx__AttributeProto *onnxi_attr(const onnxi_node *n, const char *name);
int64_t onnxi_attr_i(const onnxi_node *n, const char *name, int64_t def);
/* An int attribute that a descriptor holds as int32_t (an axis, a dtype):
 * one outside int32's range is noted in n->bad_range and reads as `def`. */
int32_t onnxi_attr_i32(const onnxi_node *n, const char *name, int32_t def);
float onnxi_attr_f(const onnxi_node *n, const char *name, float def);
const char *onnxi_attr_s(const onnxi_node *n, const char *name, const char *def, char *buf,
                         size_t size);
plx_status onnxi_attr_ints(const onnxi_node *n, const char *name, int64_t *out, size_t max,
                           size_t *count, bool *present);
/* Checks of attributes (and of constant inputs acting as attributes)
 * against the tensors they describe, refused as PLX_INVALID_ARGUMENT
 * naming the node and `what` ("attribute 'pads'", "input 1 (axes)"):
 * onnxi_check_count: `count` values where the tensors need `want`, `per`
 * saying why ("two per spatial dim of X");
 * onnxi_attr_ints_n: the ints attribute `name`, checked so when present,
 * into out (room for `want`);
 * onnxi_axes: axes each in [-rank, rank - 1], none repeated, written to
 * out normalised (>= 0). */
plx_status onnxi_check_count(const onnxi_ctx *c, const onnxi_node *n, const char *what,
                             size_t count, size_t want, const char *per);
plx_status onnxi_attr_ints_n(const onnxi_ctx *c, const onnxi_node *n, const char *name,
                             int64_t *out, size_t want, const char *per, bool *present);
plx_status onnxi_axes(const onnxi_ctx *c, const onnxi_node *n, const char *what,
                      const int64_t *axes, size_t count, uint32_t rank, int32_t *out);
plx_status onnxi_need_const(onnxi_node *n, size_t i, const char *role);
plx_status onnxi_const_ints(onnxi_node *n, size_t i, const char *role, int64_t *out,
                            size_t max, size_t *count);
bool onnxi_has_in(const onnxi_node *n, size_t i);
plx_status onnxi_need_inputs(const onnxi_ctx *c, const onnxi_node *n, size_t min);
plx_status onnxi_bind_out(onnxi_ctx *c, onnxi_node *n, size_t k, onnxi_value *v);
plx_status onnxi_emit1(onnxi_ctx *c, onnxi_node *n, plx_op op, const void *desc,
                       onnxi_value *const *inputs, uint32_t n_in);
plx_status onnxi_single_output(const onnxi_node *n, const char *what);
/* A rank-0 constant of any dtype holding value, converted as a cast
 * converts a float (plx_dtype_bytes_from_double, plexus/tensor.h). */
plx_status onnxi_scalar_const(onnxi_ctx *c, plx_dtype dt, double value, onnxi_value **out);
plx_status onnxi_reshape_to(onnxi_ctx *c, onnxi_node *n, onnxi_value *x,
                            const plx_tensor_info *shape, onnxi_value **out);
plx_status onnxi_zeros(onnxi_ctx *c, const onnxi_node *n, plx_dtype dt, uint32_t rank,
                       const int64_t *dims, onnxi_value **out);

/* convert_elementwise.c */
plx_status onnxi_conv_activation(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_clip(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_unary(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_binary(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_variadic(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_where(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_cast(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_batch_norm(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_instance_norm(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_group_norm(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_layer_norm(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_softmax(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_reduce(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_arg_reduce(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_topk(onnxi_ctx *c, onnxi_node *n);

/* convert_shape.c */
plx_status onnxi_conv_identity(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_reverse_sequence(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_constant(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_constant_of_shape(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_shape(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_size(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_range(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_reshape(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_flatten(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_transpose(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_concat(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_split(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_slice(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_pad(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_squeeze(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_gather(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_expand(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_tile(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_depth_space(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_resize(onnxi_ctx *c, onnxi_node *n);

/* convert_dense.c */
plx_status onnxi_conv_conv(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_pool(onnxi_ctx *c, onnxi_node *n);
/* The pool descriptor of an ONNX pooling node of `kind` from its
 * attributes (kernel_shape, strides, pads, auto_pad, dilations, ceil_mode,
 * count_include_pad; LpPool's p) and input 0's rank. */
plx_status onnxi_read_pool_desc(onnxi_ctx *c, onnxi_node *n, plx_pool_kind kind,
                                plx_pool_desc *out);
plx_status onnxi_conv_global_pool(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_matmul(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_gemm(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_col2im(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_det(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_max_unpool(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_deform_conv(onnxi_ctx *c, onnxi_node *n);

/* convert_misc.c */
plx_status onnxi_conv_quantize(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_rnn(onnxi_ctx *c, onnxi_node *n);

/* convert_select.c */
plx_status onnxi_conv_nonzero(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_nms(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_compress(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_unique(onnxi_ctx *c, onnxi_node *n);

/* convert_index.c */
plx_status onnxi_conv_gather_elements(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_scatter_elements(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_scatter_nd(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_gather_nd(onnxi_ctx *c, onnxi_node *n);
/* convert_bitwise.c */
plx_status onnxi_conv_isinf(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_bitshift(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_lp_p(const onnxi_ctx *c, const onnxi_node *n, int64_t *p);

/* convert_control.c */
plx_status onnxi_conv_if(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_loop(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_scan(onnxi_ctx *c, onnxi_node *n);

/* convert_mask_scan.c */
plx_status onnxi_conv_trilu(onnxi_ctx *c, onnxi_node *n);
/* convert_quant.c: QLinearConv, QLinearMatMul, MatMulInteger, ConvInteger,
 * DynamicQuantizeLinear; and the com.microsoft operators it knows. */
plx_status onnxi_conv_quant_default(onnxi_ctx *c, onnxi_node *n);
bool onnxi_microsoft_op_known(const char *op);
plx_status onnxi_convert_microsoft(onnxi_ctx *c, onnxi_node *n);
/* convert_signal.c: DFT and STFT (dft and stft layers), and HannWindow,
 * HammingWindow, BlackmanWindow and MelWeightMatrix, constants made at
 * import. */
plx_status onnxi_conv_dft(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_stft(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_window(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_mel_weight_matrix(onnxi_ctx *c, onnxi_node *n);
/* convert_dense.c: Conv's descriptor from the node's attributes (X is
 * input 0); kernel_shape, when given, checked against the weights' spatial
 * dims, W being input w_index (1; 3 for QLinearConv). */
plx_status onnxi_read_conv_desc(const onnxi_ctx *c, const onnxi_node *n, size_t w_index,
                                plx_conv_desc *d);
plx_status onnxi_conv_one_hot(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_hardmax(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_cum_sum(onnxi_ctx *c, onnxi_node *n);

/* convert_sample.c */
plx_status onnxi_conv_grid_sample(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_roi_align(onnxi_ctx *c, onnxi_node *n);

/* convert_compose.c */
plx_status onnxi_conv_affine_grid(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_center_crop_pad(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_eye_like(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_mvn(onnxi_ctx *c, onnxi_node *n);
plx_status onnxi_conv_lrn(onnxi_ctx *c, onnxi_node *n);

/* convert_einsum.c */
plx_status onnxi_conv_einsum(onnxi_ctx *c, onnxi_node *n);

/* ---- import.c ------------------------------------------------------------ */

/* Imports the nodes of a graph (sorted topologically; used for the main
 * graph, inlined If branches and unrolled Loop and Scan bodies); `keep`
 * NULL: every node, else only node i where keep[i]. */
plx_status onnxi_import_nodes(onnxi_ctx *c, const Onnx__GraphProto *g, const bool *keep);
/* Adds a graph's initializers as constants. */
plx_status onnxi_import_initializers(onnxi_ctx *c, const Onnx__GraphProto *g);

#endif /* PLEXUS_ONNX_INTERNAL_H */
