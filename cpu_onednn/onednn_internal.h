/* cpu_onednn: what the backend's files share.
 *
 * onednn_backend.c holds the ABI side (entry point, options, capabilities,
 * factories, tensor handles, workloads); onednn_plan.c (helpers, dispatcher),
 * onednn_conv.c, onednn_ops.c and onednn_int8.c (the planners) turn one
 * layer view into a *plan*: the oneDNN primitive descriptors that run it and
 * how each of their arguments binds to the layer's tensors. check_layer builds a plan
 * and throws it away (so a refusal is decided by oneDNN itself, from the view
 * alone); create_workload builds the same plan and keeps it. */
#ifndef CPU_ONEDNN_INTERNAL_H
#define CPU_ONEDNN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <plexus/backend.h>

/* Most arguments one step binds: a concat's sources (at most 64, which
 * plan_concat enforces) and its destination, with room to spare. */
#define ODN_MAX_STEP_ARGS 72

/* What one memory of a plan is bound to. */
typedef enum odn_binding {
    ODN_BIND_INPUT = 0,    /* the layer's input slot `slot`, as it is (plain, row-major) */
    ODN_BIND_OUTPUT = 1,   /* the layer's output slot `slot` (plain, row-major) */
    ODN_BIND_PACKED = 2,   /* constant input slot `slot` reordered once, at workload
                            * creation, from `user_md` (its plain layout) to `md`
                            * (the layout the primitive chose) */
    ODN_BIND_INTERNAL = 3, /* a buffer of the workload, allocated at creation */
    ODN_BIND_ALIAS = 4     /* the buffer of memory `slot` of the plan (an earlier one),
                            * seen through another descriptor of the same size */
} odn_binding;

/* How an ODN_BIND_PACKED constant becomes `user_md` (plain) before the
 * reorder into `md`: read as it is (NONE), or rearranged by
 * odn_rnn_unpack (onednn_rnn.c) from ONNX's recurrent weights, bias or
 * peepholes into oneDNN's gate order and layout. */
typedef enum odn_unpack_kind {
    ODN_UNPACK_NONE = 0,
    ODN_UNPACK_RNN_WEIGHTS = 1,  /* W or R [D, G*H, K] -> ldigo [1, D, K, G, H] */
    ODN_UNPACK_RNN_BIAS = 2,     /* B [D, 2GH] (Wb, Rb) -> ldgo [1, D, G or G+1, H] */
    ODN_UNPACK_RNN_PEEPHOLE = 3  /* P [D, 3H] (Pi, Po, Pf) -> ldgo [1, D, 3, H] (i, f, o) */
} odn_unpack_kind;

typedef struct odn_unpack {
    int32_t kind; /* odn_unpack_kind */
    int32_t gates;
    int32_t perm[4]; /* oneDNN gate g is ONNX gate perm[g] */
    int32_t lbr;     /* bias: linear-before-reset GRU (gate 2 Wb of h, gate 3 Rb of h) */
    int64_t dirs, hidden, k;
} odn_unpack;

typedef struct odn_mem {
    odn_binding binding;
    unsigned slot;
    /* ODN_BIND_INPUT / _OUTPUT: true when the step wants the tensor in the
     * layout `md` (a convolution's blocked one, or the one it was at hand
     * in), which odn_graph_plan provides by reorders; false when `md` only
     * views the tensor's plain buffer (other dims, transposed strides). */
    bool layout;
    dnnl_memory_desc_t md;      /* how the primitive sees the memory */
    dnnl_memory_desc_t user_md; /* ODN_BIND_PACKED: the constant's plain layout */
    odn_unpack unpack;          /* ODN_BIND_PACKED: how it becomes user_md */
} odn_mem;

typedef struct odn_step_arg {
    int arg;      /* DNNL_ARG_* */
    unsigned mem; /* index into odn_plan.mems */
} odn_step_arg;

/* One primitive of a plan, with its arguments (the scratchpad is added by
 * the workload: every plan uses dnnl_scratchpad_mode_user). */
typedef struct odn_step {
    dnnl_primitive_desc_t pd;
    odn_step_arg args[ODN_MAX_STEP_ARGS];
    unsigned arg_count;
} odn_step;

/* Post-operations a fused producer (convolution, inner product, matmul)
 * applies to its result: the eltwise steps of the activation a precompiled
 * layer fused (odn_fused), appended to the primitive's attributes. */
typedef enum odn_post_op_kind {
    ODN_POST_ELTWISE = 0, /* alg, alpha, beta */
    ODN_POST_SUM = 1,     /* dst += scale * (what the output held): a residual add */
    ODN_POST_BINARY = 2,  /* dst = alg(dst, src1): src1_md describes the operand */
    ODN_POST_DW = 3       /* a depthwise 3x3 convolution, padding 1, stride `stride`, of
                           * the result; its weights are input slot `slot` (constant,
                           * [C, 1, 3, 3]), its bias slot + 1 when `bias` */
} odn_post_op_kind;

typedef struct odn_post_op {
    odn_post_op_kind kind;
    dnnl_alg_kind_t alg;
    float alpha, beta, scale;
    dnnl_memory_desc_t src1_md;
    unsigned stride, slot; /* ODN_POST_DW */
    bool bias;
} odn_post_op;

typedef struct odn_post_ops {
    const odn_post_op *ops;
    unsigned count;
} odn_post_ops;

/* The payload of cpu_onednn's precompiled layers: a convolution,
 * deconvolution, inner product or matmul with the activation that alone
 * read it, as eltwise post-ops of the one primitive. Inside a graph, a 1x1
 * convolution may also carry the depthwise 3x3 convolution that alone reads
 * it (and that one's activation) as a depthwise post-op: the precompiled
 * layer's inputs are then the 1x1's, followed by the depthwise weights and
 * bias (from slot dw_slot); `pw_output` is the 1x1's own output. */
#define ODN_FUSED_MAGIC 0x314e444fu /* "ODN1" */
typedef struct odn_fused {
    uint32_t magic;
    plx_op op;
    union {
        plx_conv_desc conv;
        plx_conv_transpose_desc conv_transpose;
        plx_fully_connected_desc fc;
    } desc;
    bool has_activation;
    plx_activation_desc activation;
    bool has_dw;
    plx_conv_desc dw;
    uint32_t dw_slot;
    bool dw_bias;
    bool dw_has_activation;
    plx_activation_desc dw_activation;
    plx_tensor_info pw_output;
} odn_fused;

/* The steps run in order; mems and steps grow from the host's allocator. */
typedef struct odn_plan {
    odn_step *steps;
    unsigned step_count;
    unsigned step_capacity;
    odn_mem *mems;
    unsigned mem_count;
    unsigned mem_capacity;
} odn_plan;

/* Everything a planner needs from the backend: the engine, and the host for
 * memory and statuses. */
typedef struct odn_context {
    const plx_host *host;
    dnnl_engine_t engine;
    /* Option `reference`: when false, a primitive for which oneDNN has
     * only its reference implementation ("ref:..." in
     * dnnl_query_impl_info_str; plain C loops, often slower than cpu_ref)
     * is refused, so that the layer goes to the next backend. */
    bool reference;
    /* Option `exact_nan`: when true, the float layers whose oneDNN 2.6
     * kernels use the processor's max and min instructions (which return
     * the other operand when one is NaN) are refused: relu, clip and hard
     * sigmoid (alone, or as a product's post-op), max pooling, reduce max
     * and min, binary max and min, softmax and log-softmax. */
    bool exact_nan;
    /* Whether the CPU has VNNI (dnnl_get_effective_cpu_isa, `isa` its
     * name): the int8 planners (onednn_int8.c) refuse without it. */
    bool vnni;
    const char *isa;
    /* Set by odn_plan_build for its planners: its input_mds. */
    const dnnl_memory_desc_t *const *input_mds;
} odn_context;

/* Builds the plan for `layer` (a view the host validated, R-19 (2)) into
 * `*plan`, which the caller zeroes first. `input_mds` (may be NULL; then
 * every entry is NULL) gives per input slot the layout in which the tensor
 * is at hand, NULL meaning plain: planners that can read it so (eltwise,
 * binary, pooling) bind that layout, the others bind the plain one and the
 * caller reorders (odn_graph_plan). A planner may choose its output's layout
 * (a convolution's blocked one); ODN_BIND_INPUT and ODN_BIND_OUTPUT mems
 * say which layouts the plan reads and writes. Returns NULL on success;
 * otherwise a PLX_UNSUPPORTED status whose message is the refusal reason
 * (an operator, attribute or shape cpu_onednn or oneDNN cannot run), or
 * PLX_OUT_OF_MEMORY. On failure *plan may hold parts: the caller always
 * frees it with odn_plan_free. Thread-safe: uses only its arguments and
 * oneDNN's thread-safe descriptor creation. `post_ops` (may be NULL) is
 * appended to a product's primitive; PLX_OP_PRECOMPILED layers bring
 * their own (odn_fused). */
plx_status odn_plan_build(const odn_context *ctx, const plx_layer_view *layer,
                          const odn_post_ops *post_ops,
                          const dnnl_memory_desc_t *const *input_mds, odn_plan *plan);

/* Appends a memory to `plan`; returns its index, or -1 when out of memory. */
int odn_plan_add_mem(const odn_context *ctx, odn_plan *plan, odn_binding binding,
                     unsigned slot, const dnnl_memory_desc_t *md);

/* Appends a copy of `step` (the plan then owns its primitive descriptor).
 * NULL or PLX_OUT_OF_MEMORY. */
plx_status odn_plan_push_step(const odn_context *ctx, odn_plan *plan, const odn_step *step);

/* Appends a reorder step from memory `from` to memory `to` of `plan` (same
 * dims). NULL, or the refusal / PLX_OUT_OF_MEMORY. */
plx_status odn_plan_reorder(const odn_context *ctx, odn_plan *plan, int from, int to);

/* Whether `md` is the dense row-major layout of its dims. */
bool odn_md_is_plain(const dnnl_memory_desc_t *md);

/* The plain row-major float32 descriptor of `dims` (rank 0: one element). */
dnnl_status_t odn_plain_md(dnnl_memory_desc_t *md, const int64_t *dims, unsigned rank);

/* The same of data type `dt` (dnnl_data_type_undef: dnnl_invalid_arguments). */
dnnl_status_t odn_plain_md_as(dnnl_memory_desc_t *md, const int64_t *dims, unsigned rank,
                              dnnl_data_type_t dt);

/* Under option exact_nan (odn_context), the refusal of float layer `l`
 * whose oneDNN kernel, `what`, drops NaN; else NULL. */
plx_status odn_refuse_nan(const odn_context *ctx, const plx_layer_view *l, const char *what);

/* oneDNN's data type for `dtype`: f32, s8, u8, s32; undef for the others. */
dnnl_data_type_t odn_dtype(plx_dtype dtype);

/* ---- planning helpers (onednn_plan.c), shared by the planners ----------- */

/* A refusal: PLX_UNSUPPORTED with a printf message (shown to users as is,
 * R-18 (1)). */
plx_status odn_refuse(const odn_context *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A oneDNN call made while planning: a failure means oneDNN cannot express
 * or run the layer, which is a refusal naming the call and its status. */
#define ODN_PLAN_CALL(call)                                                               \
    do {                                                                                  \
        dnnl_status_t plan_st_ = (call);                                                  \
        if (plan_st_ != dnnl_success) {                                                   \
            return odn_refuse(ctx, "oneDNN cannot run this layer: %s: %s", #call,         \
                              dnnl_status2str(plan_st_));                                 \
        }                                                                                 \
    } while (0)

/* Declares `var`, the index of a new memory of `plan` (odn_plan_add_mem);
 * out of memory, returns from the calling planner. */
#define ODN_ADD_MEM(var, binding, slot, md)                                                   \
    int var = odn_plan_add_mem(ctx, plan, (binding), (slot), (md));                           \
    if (var < 0) {                                                                            \
        return odn_out_of_memory(ctx);                                                        \
    }

/* The plain row-major descriptor of tensor info `t`, of its dtype. */
dnnl_status_t odn_info_md(dnnl_memory_desc_t *md, const plx_tensor_info *t);

/* The layout input `slot` of `l` is at hand in (odn_plan_build's
 * input_mds) when it has the input's dims, else the plain one. */
dnnl_status_t odn_input_md(const odn_context *ctx, const plx_layer_view *l, unsigned slot,
                           dnnl_memory_desc_t *md);

/* The "any" descriptor (oneDNN picks the layout) of `like`'s dims and data
 * type. */
dnnl_status_t odn_any_md(dnnl_memory_desc_t *md, const dnnl_memory_desc_t *like);

/* The PLX_OUT_OF_MEMORY status of a failed allocation while planning. */
plx_status odn_out_of_memory(const odn_context *ctx);

/* Creates the primitive descriptor of one step (user scratchpad, and
 * `post_ops` when given) and appends the step; its arguments are added with
 * odn_step_set_arg. */
plx_status odn_add_step(const odn_context *ctx, odn_plan *plan, const_dnnl_op_desc_t desc,
                        const odn_post_ops *post_ops);

/* The quantization attributes of an int8 product's primitive
 * (onednn_int8.c): output scales and zero points. A zero point is set when
 * it is not 0, or when it is given at execution (`runtime_*`: the step then
 * binds DNNL_ARG_ATTR_ZERO_POINTS | the argument to an s32 memory). */
typedef struct odn_quant_attr {
    const float *scales; /* scale_count output scales (copied by oneDNN) */
    int64_t scale_count; /* 0: none (1.0) */
    int scale_mask;      /* 0: one scale; 1 << d: one per index of output dim d */
    int32_t src_zp, wei_zp, dst_zp;
    bool runtime_src_zp, runtime_wei_zp;
    const float *src_scales; /* binary: the scales of SRC_0 and SRC_1, or NULL */
} odn_quant_attr;

/* odn_add_step with the quantization attributes `quant` (may be NULL). */
plx_status odn_add_step_quant(const odn_context *ctx, odn_plan *plan,
                              const_dnnl_op_desc_t desc, const odn_post_ops *post_ops,
                              const odn_quant_attr *quant);

/* Appends argument `arg`, memory `mem` of the plan, to the last step. */
void odn_step_set_arg(odn_plan *plan, int arg, int mem);

/* The memory descriptor the last step's primitive chose for `arg`. */
const dnnl_memory_desc_t *odn_step_md(odn_plan *plan, int arg);

/* Adds a memory (`binding`, `slot`, described by `md`) and binds it as
 * argument `arg` of the last step. NULL, or PLX_OUT_OF_MEMORY. */
plx_status odn_bind(const odn_context *ctx, odn_plan *plan, int arg, odn_binding binding,
                    unsigned slot, const dnnl_memory_desc_t *md);

/* Marks the plan's last `n` memories as wanting their layout (odn_mem). */
void odn_want_layouts(odn_plan *plan, unsigned n);

/* Binds the layer's input 0 as the last step's DNNL_ARG_SRC (described by
 * `src`), then its output 0 as DNNL_ARG_DST (`dst`). */
plx_status odn_bind_src_dst(const odn_context *ctx, odn_plan *plan,
                            const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst);

/* Appends the step of `desc` (with `post_ops`, may be NULL) reading input 0
 * as `src` and writing output 0 as `dst`; further arguments are the
 * caller's. */
plx_status odn_src_dst_step(const odn_context *ctx, odn_plan *plan, const_dnnl_op_desc_t desc,
                            const odn_post_ops *post_ops, const dnnl_memory_desc_t *src,
                            const dnnl_memory_desc_t *dst);

/* Binds, after the last step's source and destination, its weights (input
 * 1, see bind_weights) and, when `bias` is given, its bias (input 2). */
plx_status odn_bind_weights_bias(const odn_context *ctx, odn_plan *plan,
                                 const dnnl_memory_desc_t *wu, bool pack,
                                 const dnnl_memory_desc_t *bias);

/* Appends the step of product `desc` (convolution, deconvolution, inner
 * product, matmul; `post_ops` appended) and binds input 0 (`src`), output 0
 * (`dst`), the weights (input 1, packed when `pack`) and the bias (input 2,
 * when `bias` is given). */
plx_status odn_product_step(const odn_context *ctx, odn_plan *plan, const_dnnl_op_desc_t desc,
                            const odn_post_ops *post_ops, const dnnl_memory_desc_t *src,
                            const dnnl_memory_desc_t *wu, bool pack,
                            const dnnl_memory_desc_t *bias, const dnnl_memory_desc_t *dst);

/* Whether input `slot` of `l` is a constant (its data given at planning). */
bool odn_is_const(const plx_layer_view *l, unsigned slot);

/* `axis` of a tensor of rank `rank` (negative: from the end) as an index
 * below `rank` (plexus/geometry.h's plx_axis_normalize) into *out; refuses
 * an axis out of range, naming the operator `op`. */
plx_status odn_axis(const odn_context *ctx, const char *op, int64_t axis, unsigned rank, int *out);

/* Appends, without arguments, a step whose descriptor oneDNN creates
 * directly (user scratchpad): the concat of srcs[0..n) along `axis` into
 * `dst` when `concat`, else the reorder from srcs[0] to `dst`. A failure is
 * the refusal "oneDNN cannot <what> (<the creating call>: <status>)". */
plx_status odn_push_direct(const odn_context *ctx, odn_plan *plan, bool concat,
                           const dnnl_memory_desc_t *srcs, int n, int axis,
                           const dnnl_memory_desc_t *dst, const char *what);

/* A convolution's geometry as oneDNN takes it: strides, dilations (minus
 * one), begin and end padding per spatial dimension, and the weights' dims
 * (with a leading group dimension when group > 1: wnd of them). */
typedef struct odn_conv_geom {
    dnnl_dims_t strides, dil, pl, pr, wd;
    int wnd;
} odn_conv_geom;

/* The geometry of conv or conv_integer `l` (plx_conv_desc), or the refusal
 * (not 1 to 3 spatial dimensions, a window that does not give the output). */
plx_status odn_conv_geometry(const odn_context *ctx, const plx_layer_view *l,
                             odn_conv_geom *out);

/* The dims of matmul or matmul_integer `l` as oneDNN's matmul takes them:
 * A, B and the result padded to one rank *rank (numpy: a 1-D A is [1, K],
 * a 1-D B [K, 1], batch dims of 1 in front), each array PLX_MAX_RANK + 1
 * entries; or the refusal (a scalar operand). */
plx_status odn_matmul_dims(const odn_context *ctx, const plx_layer_view *l, int64_t *pa,
                           int64_t *pb, int64_t *pd, unsigned *rank);

/* ---- the planners, one per operator (onednn_conv.c, onednn_ops.c) -------
 * Each reads layer view `l` (validated by the host, output infos inferred)
 * and appends to `plan` the steps that compute it, or refuses. Products
 * take `po`, the post-ops to append to their primitive (may be NULL). */

typedef plx_status (*odn_fused_planner_fn)(const odn_context *ctx, const plx_layer_view *l,
                                           const odn_post_ops *po, odn_plan *plan);

plx_status odn_plan_conv(const odn_context *ctx, const plx_layer_view *l,
                         const odn_post_ops *po, odn_plan *plan);
plx_status odn_plan_conv_transpose(const odn_context *ctx, const plx_layer_view *l,
                                   const odn_post_ops *po, odn_plan *plan);
plx_status odn_plan_fully_connected(const odn_context *ctx, const plx_layer_view *l,
                                    const odn_post_ops *po, odn_plan *plan);
plx_status odn_plan_gemm(const odn_context *ctx, const plx_layer_view *l,
                         const odn_post_ops *po_in, odn_plan *plan);
plx_status odn_plan_matmul(const odn_context *ctx, const plx_layer_view *l,
                           const odn_post_ops *po, odn_plan *plan);
plx_status odn_plan_pool(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan);
plx_status odn_plan_global_pool(const odn_context *ctx, const plx_layer_view *l,
                                odn_plan *plan);
plx_status odn_plan_activation(const odn_context *ctx, const plx_layer_view *l,
                               odn_plan *plan);
plx_status odn_plan_unary(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan);
plx_status odn_plan_binary(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan);
plx_status odn_plan_precompiled(const odn_context *ctx, const plx_layer_view *l,
                                odn_plan *plan);
plx_status odn_plan_softmax(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan);
plx_status odn_plan_batch_norm(const odn_context *ctx, const plx_layer_view *l,
                               odn_plan *plan);
plx_status odn_plan_layer_norm(const odn_context *ctx, const plx_layer_view *l,
                               odn_plan *plan);
plx_status odn_plan_concat(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan);
plx_status odn_plan_reduce(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan);
plx_status odn_plan_resize(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan);
plx_status odn_plan_copy(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan);

/* lstm, gru and rnn on oneDNN's RNN primitives (onednn_rnn.c): several
 * outputs and an int32 sequence_lens, so the planner checks the dtypes
 * itself. */
plx_status odn_plan_rnn(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan);

/* Rearranges constant `in` as `u` says into `out` (the plain layout of the
 * packed memory's user_md, dnnl_memory_desc_get_size bytes). */
void odn_rnn_unpack(const odn_unpack *u, const float *in, float *out);

/* The int8 products (onednn_int8.c): conv and matmul on quantized tensors,
 * conv_integer and matmul_integer. They take no post-ops. */
plx_status odn_plan_int8(const odn_context *ctx, const plx_layer_view *l,
                         const odn_post_ops *po, odn_plan *plan);

/* Whether every input and output of `l` is float32: the layers a fusion
 * may carry (a graph carries these, the int8 products and 8-bit max
 * pools). */
bool odn_view_is_float(const plx_layer_view *l);

/* Whether `l` is a max pool on int8 or uint8 (its output X's dtype, and
 * X's quantization, if any: plexus/ops.h): oneDNN's pooling of s8/u8
 * gives the exact bytes, so it runs here and in graphs on any ISA. */
bool odn_is_8bit_max_pool(const plx_layer_view *l);

/* Whether `l` is a binary layer on quantized tensors (A, B and Y int8 or
 * uint8 with per-tensor parameters: plexus/ops.h); odn_plan_binary runs
 * add and sub (onednn_ops.c), also in graphs. */
bool odn_is_quantized_binary(const plx_layer_view *l);

/* ---- graphs: a whole subgraph as one precompiled layer ------------------ */

/* cpu_onednn substitutes each maximal subgraph it was assigned (two layers
 * or more) by one precompiled layer whose payload lists the layers
 * (odn_graph_payload); its workload runs all their primitives with the
 * activations between them in the layouts the primitives chose (blocked),
 * reordering only where a layer needs another layout and at the graph's
 * outputs. The payload is plain data: the host copies it. */
#define ODN_GRAPH_MAGIC 0x324e444fu /* "ODN2" */
#define ODN_GRAPH_NAME_MAX 64

/* The descriptors of the operators a graph may hold (none has pointers). */
typedef union odn_any_desc {
    plx_conv_desc conv;
    plx_conv_transpose_desc conv_transpose;
    plx_fully_connected_desc fc;
    plx_gemm_desc gemm;
    plx_pool_desc pool;
    plx_global_pool_desc global_pool;
    plx_activation_desc activation;
    plx_unary_desc unary;
    plx_binary_desc binary;
    plx_softmax_desc softmax;
    plx_batch_norm_desc batch_norm;
    plx_layer_norm_desc layer_norm;
    plx_axis_desc axis;
    plx_reduce_desc reduce;
    plx_resize_desc resize;
    plx_reshape_desc reshape;
    plx_transpose_desc transpose;
    plx_axes_desc axes;
} odn_any_desc;

/* One layer of a graph. Its inputs are tensors: 0 .. input_count-1 of the
 * precompiled layer are its inputs in order, input_count + k is the output
 * of layer k. op PLX_OP_PRECOMPILED: `fused` holds a product with its
 * activation. */
typedef struct odn_graph_layer {
    char name[ODN_GRAPH_NAME_MAX];
    plx_op op;
    bool has_desc;
    odn_any_desc desc;
    odn_fused fused;
    plx_tensor_info output;
    uint32_t first_input; /* index into the payload's tensor references */
    uint32_t input_count;
} odn_graph_layer;

/* Header of the payload; then layer_count odn_graph_layer, then ref_count
 * uint32_t tensor references, then output_count uint32_t: the tensors that
 * are the precompiled layer's outputs, in order. */
typedef struct odn_graph_payload {
    uint32_t magic;
    uint32_t layer_size; /* sizeof(odn_graph_layer) */
    uint32_t layer_count;
    uint32_t input_count; /* the precompiled layer's */
    uint32_t ref_count;
    uint32_t output_count; /* the precompiled layer's */
} odn_graph_payload;

static inline const odn_graph_layer *odn_graph_layers(const odn_graph_payload *p) {
    return (const odn_graph_layer *)(const void *)(p + 1);
}

static inline const uint32_t *odn_graph_refs(const odn_graph_payload *p) {
    return (const uint32_t *)(const void *)(odn_graph_layers(p) + p->layer_count);
}

/* The precompiled graph in `layer`'s descriptor, or NULL when the layer is
 * not one (or its payload is inconsistent). */
const odn_graph_payload *odn_graph_payload_of(const plx_layer_view *layer);

/* Builds into `*plan` (zeroed by the caller) the whole plan of `layer`: a
 * graph's layers (odn_graph_payload_of), or the layer alone. The plan's
 * ODN_BIND_INPUT / _OUTPUT / _PACKED slots are `layer`'s; its outputs are
 * written plain. Errors as odn_plan_build, naming the graph layer at fault. */
plx_status odn_graph_plan(const odn_context *ctx, const plx_layer_view *layer, odn_plan *plan);

/* The activation (a subgraph layer index) that alone reads the output of
 * layer `a` of `g` when `a` is a float32 product cpu_onednn fuses it into
 * (convolution, deconvolution, inner product, matmul), else UINT32_MAX. */
uint32_t odn_fusable_activation(const plx_subgraph_view *g, uint32_t a);

/* The payload of layer `a` of `g` fused with activation `r`. */
void odn_fused_init(odn_fused *f, const plx_subgraph_view *g, uint32_t a, uint32_t r);

/* Replaces `g` by graph layers: each convex run of two or more layers that
 * a graph can carry becomes one, with products and their activations
 * fused when oneDNN plans it (else without the fusions). Sets used[i]
 * (g->layer_count entries, false on entry) for each layer replaced, and
 * returns how many; the others stay as they were, for the per-layer
 * fusions. */
uint32_t odn_graph_substitute(const odn_context *ctx, const plx_subgraph_view *g,
                              const plx_subgraph_editor *editor, bool *used);

/* Releases what odn_plan_build put into `plan` (primitive descriptors and
 * the memory list); the plan is zeroed. Safe on a zeroed plan. */
void odn_plan_free(const odn_context *ctx, odn_plan *plan);

/* A status for a failed oneDNN call: "cpu_onednn: <call> failed: <status
 * name>" with the given code. Never NULL (R-12 (2)). */
plx_status odn_status(const plx_host *host, plx_status_code code, const char *call,
                      dnnl_status_t st);

#endif /* CPU_ONEDNN_INTERNAL_H */
