/* cpu_onednn: what the backend's two files share.
 *
 * onednn_backend.c holds the ABI side (entry point, options, capabilities,
 * factories, tensor handles, workloads); onednn_ops.c turns one layer view
 * into a *plan*: the oneDNN primitive descriptors that run it and how each
 * of their arguments binds to the layer's tensors. check_layer builds a plan
 * and throws it away (so a refusal is decided by oneDNN itself, from the view
 * alone); create_workload builds the same plan and keeps it. */
#ifndef CPU_ONEDNN_INTERNAL_H
#define CPU_ONEDNN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <oneapi/dnnl/dnnl.h>
#include <plexus/backend.h>

/* Most primitives one layer needs (scaled_tanh: three eltwise steps; a
 * convolution with reorders at its edges would take three as well). */
#define ODN_MAX_STEPS 4
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
    ODN_BIND_INTERNAL = 3  /* a buffer of the workload, allocated at creation */
} odn_binding;

typedef struct odn_mem {
    odn_binding binding;
    unsigned slot;
    dnnl_memory_desc_t md;      /* how the primitive sees the memory */
    dnnl_memory_desc_t user_md; /* ODN_BIND_PACKED: the constant's plain layout */
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
    ODN_POST_BINARY = 2   /* dst = alg(dst, src1): src1_md describes the operand */
} odn_post_op_kind;

typedef struct odn_post_op {
    odn_post_op_kind kind;
    dnnl_alg_kind_t alg;
    float alpha, beta, scale;
    dnnl_memory_desc_t src1_md;
} odn_post_op;

typedef struct odn_post_ops {
    const odn_post_op *ops;
    unsigned count;
} odn_post_ops;

/* The payload of cpu_onednn's precompiled layers: a convolution,
 * deconvolution, inner product or matmul with the activation that alone
 * read it, as eltwise post-ops of the one primitive. */
#define ODN_FUSED_MAGIC 0x314e444fu /* "ODN1" */
typedef struct odn_fused {
    uint32_t magic;
    plx_op op;
    union {
        plx_conv_desc conv;
        plx_conv_transpose_desc conv_transpose;
        plx_fully_connected_desc fc;
    } desc;
    plx_activation_desc activation;
} odn_fused;

typedef struct odn_plan {
    odn_step steps[ODN_MAX_STEPS];
    unsigned step_count;
    odn_mem *mems; /* mem_count entries, from odn_plan_build's allocator */
    unsigned mem_count;
    unsigned mem_capacity;
} odn_plan;

/* Everything a planner needs from the backend: the engine, the host for
 * memory and statuses, the backend's own name for messages. */
typedef struct odn_context {
    const plx_host *host;
    dnnl_engine_t engine;
} odn_context;

/* Builds the plan for `layer` (a view the host validated, R-19 (2)) into
 * `*plan`, which the caller zeroes first. Returns NULL on success;
 * otherwise a PLX_UNSUPPORTED status whose message is the refusal reason
 * (an operator, attribute or shape cpu_onednn or oneDNN cannot run), or
 * PLX_OUT_OF_MEMORY. On failure *plan may hold parts: the caller always
 * frees it with odn_plan_free. Thread-safe: uses only its arguments and
 * oneDNN's thread-safe descriptor creation. `post_ops` (may be NULL) is
 * appended to a product's primitive; PLX_OP_PRECOMPILED layers bring
 * their own (odn_fused). */
plx_status odn_plan_build(const odn_context *ctx, const plx_layer_view *layer,
                          const odn_post_ops *post_ops, odn_plan *plan);

/* Releases what odn_plan_build put into `plan` (primitive descriptors and
 * the memory list); the plan is zeroed. Safe on a zeroed plan. */
void odn_plan_free(const odn_context *ctx, odn_plan *plan);

/* A status for a failed oneDNN call: "cpu_onednn: <call> failed: <status
 * name>" with the given code. Never NULL (R-12 (2)). */
plx_status odn_status(const plx_host *host, plx_status_code code, const char *call,
                      dnnl_status_t st);

#endif /* CPU_ONEDNN_INTERNAL_H */
