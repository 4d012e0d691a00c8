/* gpu_cuda's operators: what the backend runs (gpu_cuda_op_check), and the
 * workloads that run it (cuda_backend.h). The layers here (pointwise,
 * binary, softmax, reduce, the products) are float32 in and out; the
 * data-movement, pooling and normalisation layers are cuda_ops.c's, to
 * which this file dispatches. What neither runs is refused with the
 * reason, so that the optimiser gives it to the next backend (cpu_ref).
 *
 * A workload owns a non-blocking stream, on which execute_workload
 * enqueues its kernels or its cuBLASLt product, and then waits for it: the
 * host runs the layers of one working memory one after another, and those
 * of different working memories concurrently, each on its own workloads'
 * streams. Queued (R-24, cuda_queue.c), the same launches go on the
 * working memory's stream instead, and nothing waits. The plan
 * (broadcast strides, reduction geometry, the cuBLASLt algorithm) is made
 * once at create_workload, so a run allocates nothing.
 *
 * Fusion (R-23, gpu_cuda_optimize_subgraph): a gemm, fully_connected,
 * matmul, conv or conv_transpose whose only reader is an activation
 * becomes one precompiled layer ("gemm+relu", "conv+relu") whose payload
 * is a cuda_fused; so does a conv or conv_transpose whose only reader adds
 * a tensor of its shape (a residual) that only an activation reads
 * ("conv+add+relu", the residual being the layer's last input); and so
 * does a gemm, fully_connected or matmul without a bias of its own whose
 * only reader adds a bias of N elements, with the activation that alone
 * reads the sum or without ("matmul+add", "matmul+add+relu": a linear
 * layer as ONNX exporters write it, the bias being the last input). The
 * bias is cuBLASLt's BIAS epilogue, relu its RELU epilogue (RELU_BIAS with
 * a bias); a convolution's residual
 * add and activation are pointwise operations of its cuDNN graph where
 * cuDNN runs them there (cuda_conv.c); any other activation runs as the
 * pointwise kernel on the layer's output, in place, on the same stream, so
 * the layer is one wait instead of two. Last, pointwise chains: a binary,
 * unary or activation layer and up to CK_CHAIN_MAX unary or activation
 * layers after it, each the sole reader of the one before, become one
 * precompiled layer ("add+relu+sigmoid") run as one kernel that applies
 * the steps to each element in registers (ck_chain): one pass over memory
 * instead of one per layer, which neither cuBLASLt nor cuDNN can do for
 * layers that are not theirs. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>

#include "cuda_workload.h"

/* The payload of a precompiled layer of gpu_cuda's (see the top). */
#define GPU_CUDA_FUSED_MAGIC 0x31414347u /* "GCA1" */
typedef struct cuda_fused {
    uint32_t magic;
    plx_op op; /* gemm, fully_connected, matmul, conv or conv_transpose */
    union {
        plx_fully_connected_desc fc;
        plx_gemm_desc gemm;
        plx_conv_desc conv;
        plx_conv_transpose_desc conv_transpose;
        plx_binary_desc binary;
        plx_unary_desc unary;
        plx_activation_desc head; /* an activation heading a chain */
    } desc;
    plx_activation_desc activation;
    bool has_activation; /* false: the layer ends before `activation` */
    /* A conv or conv_transpose, then the add of a tensor of its output's
     * shape (a residual: the layer's last input), then the activation. */
    bool residual;
    /* A product without a bias of its own, then the add of a bias of N
     * elements (the layer's last input): cuBLASLt's bias epilogue. */
    bool bias_add;
    /* A binary, unary or activation layer (op, desc), then unary or
     * activation layers that each alone read the one before: one kernel
     * (ck_chain), the layer's output the last step's. */
    uint32_t step_count;
    struct cuda_fused_step {
        plx_op op; /* unary or activation */
        union {
            plx_unary_desc unary;
            plx_activation_desc activation;
        } d;
    } steps[CK_CHAIN_MAX];
} cuda_fused;

static bool fusable_base(plx_op op) {
    return op == PLX_OP_GEMM || op == PLX_OP_FULLY_CONNECTED || op == PLX_OP_MATMUL ||
           op == PLX_OP_CONV || op == PLX_OP_CONV_TRANSPOSE;
}

/* The layers that head a chain of pointwise steps. */
static bool chain_head(plx_op op) {
    return op == PLX_OP_BINARY || op == PLX_OP_UNARY || op == PLX_OP_ACTIVATION;
}

/* The payload of a precompiled layer, or NULL when it is not gpu_cuda's. */
static const cuda_fused *fused_payload(const plx_layer_view *l) {
    const plx_precompiled_desc *d = l->desc;
    if (!d || d->size != sizeof(cuda_fused) || !d->data) {
        return NULL;
    }
    const cuda_fused *f = d->data;
    bool known = fusable_base(f->op) ||
                 (chain_head(f->op) && f->step_count > 0 && f->step_count <= CK_CHAIN_MAX);
    return f->magic == GPU_CUDA_FUSED_MAGIC && known && l->output_count == 1 ? f : NULL;
}

/* The product's own view of a fused layer: the same tensors, the base op
 * and its descriptor (in the payload, valid while the network lives). */
static void base_view(const plx_layer_view *l, const cuda_fused *f, plx_layer_view *base) {
    *base = *l;
    if ((f->residual || f->bias_add) && base->input_count > 0) {
        base->input_count--; /* the residual or bias is not the product's */
    }
    base->op = f->op;
    base->desc = f->op == PLX_OP_MATMUL ? NULL : (const void *)&f->desc;
}

/* ------------------------------------------------------------------------ */
/* What runs                                                                  */
/* ------------------------------------------------------------------------ */

static int64_t element_count(const plx_tensor_info *t) {
    int64_t n = 1;
    for (uint32_t i = 0; i < t->rank; i++) {
        n *= t->dims[i];
    }
    return n;
}

static bool same_dims(const plx_tensor_info *a, const plx_tensor_info *b) {
    if (a->rank != b->rank) {
        return false;
    }
    for (uint32_t i = 0; i < a->rank; i++) {
        if (a->dims[i] != b->dims[i]) {
            return false;
        }
    }
    return true;
}

static bool unary_func(plx_unary_func f, ck_pointwise *out) {
    static const struct {
        plx_unary_func plx;
        ck_pointwise ck;
    } map[] = {
        {PLX_UNARY_ABS, CK_ABS},     {PLX_UNARY_NEG, CK_NEG},     {PLX_UNARY_SQRT, CK_SQRT},
        {PLX_UNARY_RECIPROCAL, CK_RECIPROCAL}, {PLX_UNARY_EXP, CK_EXP}, {PLX_UNARY_LOG, CK_LOG},
        {PLX_UNARY_ERF, CK_ERF},     {PLX_UNARY_FLOOR, CK_FLOOR}, {PLX_UNARY_CEIL, CK_CEIL},
        {PLX_UNARY_SIN, CK_SIN},     {PLX_UNARY_COS, CK_COS},     {PLX_UNARY_TAN, CK_TAN},
        {PLX_UNARY_ASIN, CK_ASIN},   {PLX_UNARY_ACOS, CK_ACOS},   {PLX_UNARY_ATAN, CK_ATAN},
        {PLX_UNARY_SINH, CK_SINH},   {PLX_UNARY_COSH, CK_COSH},   {PLX_UNARY_ASINH, CK_ASINH},
        {PLX_UNARY_ACOSH, CK_ACOSH}, {PLX_UNARY_ATANH, CK_ATANH}, {PLX_UNARY_ROUND, CK_ROUND},
        {PLX_UNARY_SIGN, CK_SIGN},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (map[i].plx == f) {
            *out = map[i].ck;
            return true;
        }
    }
    return false;
}

static bool activation_func(const plx_activation_desc *d, ck_pointwise *out) {
    switch (d->func) {
    case PLX_ACT_RELU: *out = CK_RELU; return true;
    case PLX_ACT_CLIP: *out = CK_CLIP; return true;
    case PLX_ACT_LEAKY_RELU: *out = CK_LEAKY_RELU; return true;
    case PLX_ACT_ELU: *out = CK_ELU; return true;
    case PLX_ACT_SIGMOID: *out = CK_SIGMOID; return true;
    case PLX_ACT_HARD_SIGMOID: *out = CK_HARD_SIGMOID; return true;
    case PLX_ACT_HARD_SWISH: *out = CK_HARD_SWISH; return true;
    case PLX_ACT_TANH: *out = CK_TANH; return true;
    case PLX_ACT_GELU: *out = d->alpha != 0.0f ? CK_GELU_TANH : CK_GELU; return true;
    case PLX_ACT_SOFTPLUS: *out = CK_SOFTPLUS; return true;
    case PLX_ACT_SELU: *out = CK_SELU; return true;
    case PLX_ACT_MISH: *out = CK_MISH; return true;
    case PLX_ACT_SOFTSIGN: *out = CK_SOFTSIGN; return true;
    case PLX_ACT_THRESHOLDED_RELU: *out = CK_THRESHOLDED_RELU; return true;
    case PLX_ACT_CELU: *out = CK_CELU; return true;
    case PLX_ACT_AFFINE: *out = CK_AFFINE; return true;
    case PLX_ACT_SCALED_TANH: *out = CK_SCALED_TANH; return true;
    case PLX_ACT_SHRINK: *out = CK_SHRINK; return true;
    }
    return false;
}

static bool binary_func(plx_binary_func f, ck_binary *out) {
    switch (f) {
    case PLX_BINARY_ADD: *out = CK_ADD; return true;
    case PLX_BINARY_SUB: *out = CK_SUB; return true;
    case PLX_BINARY_MUL: *out = CK_MUL; return true;
    case PLX_BINARY_DIV: *out = CK_DIV; return true;
    case PLX_BINARY_POW: *out = CK_POW; return true;
    case PLX_BINARY_MAX: *out = CK_MAX; return true;
    case PLX_BINARY_MIN: *out = CK_MIN; return true;
    case PLX_BINARY_PRELU: *out = CK_PRELU; return true;
    case PLX_BINARY_MOD: *out = CK_MOD; return true;
    default: return false;
    }
}

/* A chain's step as a pointwise function with its parameters; false when
 * gpu_cuda has no kernel for it. */
static bool step_func(const struct cuda_fused_step *st, ck_pointwise *f, float *alpha,
                      float *beta) {
    *alpha = 0.0f;
    *beta = 0.0f;
    if (st->op == PLX_OP_UNARY) {
        return unary_func(st->d.unary.func, f);
    }
    if (st->op == PLX_OP_ACTIVATION && activation_func(&st->d.activation, f)) {
        *alpha = st->d.activation.alpha;
        *beta = st->d.activation.beta;
        return true;
    }
    return false;
}

/* The strides (in elements) with which input `x` is read along each of the
 * output's dims (numpy broadcasting); false when x does not broadcast to y. */
static bool broadcast_strides(const plx_tensor_info *x, const plx_tensor_info *y,
                              int64_t *strides) {
    if (x->rank > y->rank) {
        return false;
    }
    uint32_t lead = y->rank - x->rank;
    int64_t stride = 1;
    for (uint32_t d = y->rank; d-- > 0;) {
        if (d < lead) {
            strides[d] = 0;
            continue;
        }
        int64_t dim = x->dims[d - lead];
        if (dim != y->dims[d] && dim != 1) {
            return false;
        }
        strides[d] = dim == 1 ? 0 : stride;
        stride *= dim;
    }
    return true;
}

/* The reduction's geometry from the input's shape and the descriptor;
 * NULL, or why not (into buf). */
static const char *reduce_geometry(const plx_reduce_desc *d, const plx_tensor_info *x,
                                   ck_reduce_geometry *g, char *buf, size_t size) {
    bool reduced[PLX_MAX_RANK] = {false};
    if (d->axis_count > PLX_MAX_RANK) {
        snprintf(buf, size, "reduce with %u axes", d->axis_count);
        return buf;
    }
    for (uint32_t i = 0; i < d->axis_count; i++) {
        int32_t a = d->axes[i] < 0 ? d->axes[i] + (int32_t)x->rank : d->axes[i];
        if (a < 0 || a >= (int32_t)x->rank) {
            snprintf(buf, size, "reduce axis %d is out of range for rank %u", d->axes[i],
                     x->rank);
            return buf;
        }
        reduced[a] = true;
    }
    memset(g, 0, sizeof *g);
    int64_t strides[PLX_MAX_RANK];
    int64_t stride = 1;
    for (uint32_t i = x->rank; i-- > 0;) {
        strides[i] = stride;
        stride *= x->dims[i];
    }
    g->outputs = 1;
    g->reduced = 1;
    for (uint32_t i = 0; i < x->rank; i++) {
        if (reduced[i] || d->axis_count == 0) {
            g->red_dims[g->red_rank] = x->dims[i];
            g->red_strides[g->red_rank++] = strides[i];
            g->reduced *= x->dims[i];
        } else {
            g->kept_dims[g->kept_rank] = x->dims[i];
            g->kept_strides[g->kept_rank++] = strides[i];
            g->outputs *= x->dims[i];
        }
    }
    if (g->reduced == 0 && g->outputs > 0) {
        snprintf(buf, size, "runs no reduction over an empty set of elements");
        return buf;
    }
    return NULL;
}

/* The product of the leading (batch) dims of a rank >= 2 tensor, and
 * whether they equal the output's batch dims (right-aligned, missing dims
 * counting as 1). */
static int64_t batch_of(const plx_tensor_info *x, const plx_tensor_info *y, bool *matches) {
    int64_t b = 1;
    *matches = true;
    uint32_t yb = y->rank - 2, xb = x->rank - 2;
    for (uint32_t i = 0; i < yb; i++) {
        int64_t xd = i + xb >= yb ? x->dims[i + xb - yb] : 1;
        if (xd != y->dims[i]) {
            *matches = false;
        }
    }
    for (uint32_t i = 0; i < xb; i++) {
        b *= x->dims[i];
    }
    return b;
}

/* The product a layer asks for, as a cuBLASLt shape; NULL, or why not. */
static const char *gemm_shape(const plx_layer_view *l, cuda_gemm_shape *s, int *c_slot,
                              int *bias_slot, char *buf, size_t size) {
    const plx_tensor_info *a = &l->inputs[0], *b = &l->inputs[1], *y = &l->outputs[0];
    memset(s, 0, sizeof *s);
    s->batch = 1;
    s->alpha = 1.0f;
    *c_slot = -1;
    *bias_slot = -1;
    if (l->op == PLX_OP_GEMM) {
        const plx_gemm_desc *d = l->desc;
        if (a->rank != 2 || b->rank != 2 || y->rank != 2) {
            snprintf(buf, size, "runs gemm on rank-2 A, B and Y only");
            return buf;
        }
        s->trans_a = d->trans_a;
        s->trans_b = d->trans_b;
        s->m = d->trans_a ? a->dims[1] : a->dims[0];
        s->k = d->trans_a ? a->dims[0] : a->dims[1];
        s->n = d->trans_b ? b->dims[0] : b->dims[1];
        if ((d->trans_b ? b->dims[1] : b->dims[0]) != s->k) {
            snprintf(buf, size, "gemm's A and B do not agree on K");
            return buf;
        }
        s->alpha = d->alpha;
        s->beta = d->beta;
        if (l->input_count > 2) {
            const plx_tensor_info *c = &l->inputs[2];
            if (c->rank == 2 && c->dims[0] == s->m && c->dims[1] == s->n) {
                s->has_c = true;
                *c_slot = 2;
            } else if (((c->rank == 1 && c->dims[0] == s->n) ||
                        (c->rank == 2 && c->dims[0] == 1 && c->dims[1] == s->n)) &&
                       d->beta == 1.0f) {
                s->has_bias = true;
                *bias_slot = 2;
            } else {
                snprintf(buf, size,
                         "runs gemm with C of shape [M, N], or [N] or [1, N] with beta 1 "
                         "(a bias), not C of rank %u with beta %g",
                         c->rank, (double)d->beta);
                return buf;
            }
        }
    } else if (l->op == PLX_OP_FULLY_CONNECTED) {
        const plx_fully_connected_desc *d = l->desc;
        if (a->rank < 2 || b->rank != 2 || y->rank != a->rank) {
            snprintf(buf, size, "runs fully_connected on X of rank 2 or more and W of rank 2");
            return buf;
        }
        s->m = 1;
        for (uint32_t i = 0; i + 1 < a->rank; i++) {
            s->m *= a->dims[i];
            if (a->dims[i] != y->dims[i]) {
                snprintf(buf, size, "fully_connected's Y does not keep X's leading dims");
                return buf;
            }
        }
        s->k = a->dims[a->rank - 1];
        s->trans_b = d->weights_transposed;
        s->n = d->weights_transposed ? b->dims[0] : b->dims[1];
        if ((d->weights_transposed ? b->dims[1] : b->dims[0]) != s->k) {
            snprintf(buf, size, "fully_connected's X and W do not agree on K");
            return buf;
        }
        if (l->input_count > 2) {
            const plx_tensor_info *bias = &l->inputs[2];
            if (element_count(bias) != s->n || bias->rank < 1 ||
                bias->dims[bias->rank - 1] != s->n) {
                snprintf(buf, size, "runs fully_connected with a bias of [M] only");
                return buf;
            }
            s->has_bias = true;
            *bias_slot = 2;
        }
        if (y->dims[y->rank - 1] != s->n) {
            snprintf(buf, size, "fully_connected's Y is not [..., M]");
            return buf;
        }
    } else { /* matmul */
        if (a->rank < 2 || b->rank < 2 || y->rank < 2) {
            snprintf(buf, size, "runs matmul on operands of rank 2 or more only, not rank %u x "
                     "rank %u", a->rank, b->rank);
            return buf;
        }
        s->m = a->dims[a->rank - 2];
        s->k = a->dims[a->rank - 1];
        s->n = b->dims[b->rank - 1];
        if (b->dims[b->rank - 2] != s->k) {
            snprintf(buf, size, "matmul's A and B do not agree on K");
            return buf;
        }
        bool a_matches, b_matches;
        int64_t ba = batch_of(a, y, &a_matches), bb = batch_of(b, y, &b_matches);
        for (uint32_t i = 0; i + 2 < y->rank; i++) {
            s->batch *= y->dims[i];
        }
        if (!(a_matches || ba == 1) || !(b_matches || bb == 1) || a->rank > y->rank ||
            b->rank > y->rank) {
            snprintf(buf, size, "runs matmul when each operand's batch dims equal the output's "
                     "or hold one matrix, not a broadcast within them");
            return buf;
        }
        s->stride_a = ba == 1 ? 0 : s->m * s->k;
        s->stride_b = bb == 1 ? 0 : s->k * s->n;
        s->stride_y = s->m * s->n;
        if (s->batch > 1 && bb == 1 && ba == s->batch) {
            /* One B for every matrix of A (a linear layer over a sequence):
             * A's rows, contiguous across its batch, are one [batch * m, k]
             * matrix, and Y one [batch * m, n]: a single product, which
             * cuBLASLt tiles better than a batch of thin ones. */
            s->m *= s->batch;
            s->batch = 1;
            s->stride_a = s->stride_b = s->stride_y = 0;
        }
    }
    if (l->op != PLX_OP_FULLY_CONNECTED &&
        (y->dims[y->rank - 2] != s->m || y->dims[y->rank - 1] != s->n)) {
        snprintf(buf, size, "%s's output is not [M, N]", plx_op_name(l->op));
        return buf;
    }
    /* cuBLASLt takes no matrix with a dim of 0; an empty K would need the
     * output filled with the bias alone. */
    if (s->m == 0 || s->n == 0 || s->k == 0 || s->batch == 0) {
        snprintf(buf, size, "runs no %s with an empty dim (M %lld, N %lld, K %lld, batch %lld)",
                 plx_op_name(l->op), (long long)s->m, (long long)s->n, (long long)s->k,
                 (long long)s->batch);
        return buf;
    }
    if (s->m > INT32_MAX || s->n > INT32_MAX || s->k > INT32_MAX || s->batch > INT32_MAX) {
        snprintf(buf, size, "runs products with dims up to 2^31 - 1 only");
        return buf;
    }
    return NULL;
}

const char *gpu_cuda_op_check(const plx_layer_view *l, char *buf, size_t size) {
    if (l->op == PLX_OP_PRECOMPILED) {
        const cuda_fused *f = fused_payload(l);
        ck_pointwise pw;
        if (!f) {
            snprintf(buf, size, "runs only its own precompiled layers");
            return buf;
        }
        if (f->has_activation && !activation_func(&f->activation, &pw)) {
            snprintf(buf, size, "runs no activation function %d", (int)f->activation.func);
            return buf;
        }
        for (uint32_t k = 0; k < f->step_count; k++) {
            float alpha, beta;
            if (!step_func(&f->steps[k], &pw, &alpha, &beta)) {
                snprintf(buf, size, "runs no pointwise step %u of that kind in a chain", k);
                return buf;
            }
        }
        if (f->step_count > 0 && f->op != PLX_OP_BINARY && f->step_count >= CK_CHAIN_MAX) {
            snprintf(buf, size, "runs chains of at most %d pointwise functions", CK_CHAIN_MAX);
            return buf;
        }
        if (f->bias_add) {
            const plx_tensor_info *bias = &l->inputs[l->input_count - 1];
            const plx_tensor_info *y = &l->outputs[0];
            if (f->residual || (f->op != PLX_OP_MATMUL && f->op != PLX_OP_GEMM &&
                                f->op != PLX_OP_FULLY_CONNECTED) ||
                l->input_count != 3 || bias->dtype != PLX_DTYPE_FLOAT32 || y->rank < 1 ||
                bias->rank < 1 || element_count(bias) != y->dims[y->rank - 1] ||
                bias->dims[bias->rank - 1] != y->dims[y->rank - 1]) {
                snprintf(buf, size, "runs a bias add after a product without a bias only, of "
                         "a float32 bias of the output's last dim");
                return buf;
            }
        }
        if (f->residual) {
            const plx_tensor_info *z = l->input_count >= 3 ? &l->inputs[l->input_count - 1] : NULL;
            if ((f->op != PLX_OP_CONV && f->op != PLX_OP_CONV_TRANSPOSE) || !z ||
                l->output_count != 1 || z->dtype != PLX_DTYPE_FLOAT32 ||
                !same_dims(z, &l->outputs[0])) {
                snprintf(buf, size, "runs a residual add after a conv or conv_transpose only, "
                         "of a float32 tensor of the output's shape");
                return buf;
            }
        }
        plx_layer_view base;
        base_view(l, f, &base);
        return gpu_cuda_op_check(&base, buf, size);
    }
    if (gpu_cuda_ops_runs(l->op)) {
        return gpu_cuda_ops_check(l, buf, size);
    }
    switch (l->op) {
    case PLX_OP_UNARY:
    case PLX_OP_ACTIVATION:
    case PLX_OP_BINARY:
    case PLX_OP_SOFTMAX:
    case PLX_OP_REDUCE:
    case PLX_OP_MATMUL:
    case PLX_OP_GEMM:
    case PLX_OP_FULLY_CONNECTED:
        break;
    case PLX_OP_CONV:
    case PLX_OP_CONV_TRANSPOSE: {
        cuda_conv_geom g;
        return cuda_conv_geometry(l, &g, buf, size);
    }
    default:
        snprintf(buf, size, "runs no %s yet (docs/gpu_cuda.md)", plx_op_name(l->op));
        return buf;
    }
    for (uint32_t i = 0; i < l->input_count; i++) {
        if (l->inputs[i].dtype != PLX_DTYPE_FLOAT32) {
            snprintf(buf, size, "runs %s in float32 only, not input %u of %s", plx_op_name(l->op),
                     i, plx_dtype_name(l->inputs[i].dtype));
            return buf;
        }
    }
    if (l->output_count != 1 || l->outputs[0].dtype != PLX_DTYPE_FLOAT32) {
        snprintf(buf, size, "runs %s with one float32 output only", plx_op_name(l->op));
        return buf;
    }
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    ck_pointwise pw;
    switch (l->op) {
    case PLX_OP_UNARY: {
        const plx_unary_desc *d = l->desc;
        if (!unary_func(d->func, &pw)) {
            const char *name = plx_unary_func_name(d->func);
            snprintf(buf, size, "runs no unary %s on float32", name ? name : "(unknown)");
            return buf;
        }
        break;
    }
    case PLX_OP_ACTIVATION:
        if (!activation_func(l->desc, &pw)) {
            snprintf(buf, size, "runs no activation function %d", (int)((const plx_activation_desc *)l->desc)->func);
            return buf;
        }
        break;
    case PLX_OP_BINARY: {
        const plx_binary_desc *d = l->desc;
        ck_binary f;
        int64_t strides[PLX_MAX_RANK];
        if (!binary_func(d->func, &f)) {
            const char *name = plx_binary_func_name(d->func);
            snprintf(buf, size, "runs no binary %s on float32", name ? name : "(unknown)");
            return buf;
        }
        if (l->input_count != 2 || !broadcast_strides(&l->inputs[0], y, strides) ||
            !broadcast_strides(&l->inputs[1], y, strides)) {
            snprintf(buf, size, "binary's inputs do not broadcast to its output");
            return buf;
        }
        return NULL;
    }
    case PLX_OP_SOFTMAX: {
        const plx_softmax_desc *d = l->desc;
        int32_t axis = d->axis < 0 ? d->axis + (int32_t)x->rank : d->axis;
        if (x->rank == 0 || axis < 0 || axis >= (int32_t)x->rank) {
            snprintf(buf, size, "softmax axis %d is out of range for rank %u", d->axis, x->rank);
            return buf;
        }
        break;
    }
    case PLX_OP_REDUCE: {
        const plx_reduce_desc *d = l->desc;
        if ((unsigned)d->func > PLX_REDUCE_LOG_SUM_EXP) {
            snprintf(buf, size, "runs no reduce function %d", (int)d->func);
            return buf;
        }
        if (d->axis_count == 0 && d->noop_with_empty_axes) {
            break;
        }
        ck_reduce_geometry g;
        const char *why = reduce_geometry(d, x, &g, buf, size);
        if (why) {
            return why;
        }
        if (g.outputs != element_count(y)) {
            snprintf(buf, size, "reduce's output does not hold one element per kept index");
            return buf;
        }
        return NULL;
    }
    default: { /* the products */
        cuda_gemm_shape s;
        int c_slot, bias_slot;
        return gemm_shape(l, &s, &c_slot, &bias_slot, buf, size);
    }
    }
    /* The pointwise operators, softmax and reduce's identity: Y is X's shape. */
    if (!same_dims(x, y)) {
        snprintf(buf, size, "%s's output does not have its input's shape", plx_op_name(l->op));
        return buf;
    }
    return NULL;
}

const char *gpu_cuda_device_check(plx_backend *b, const plx_layer_view *l, char *buf,
                                  size_t size) {
    plx_layer_view base = *l;
    const cuda_fused *f = l->op == PLX_OP_PRECOMPILED ? fused_payload(l) : NULL;
    if (f) {
        base_view(l, f, &base);
    }
    if (base.op != PLX_OP_CONV && base.op != PLX_OP_CONV_TRANSPOSE) {
        return NULL;
    }
    return cuda_conv_probe(b, &base, buf, size);
}

/* ------------------------------------------------------------------------ */
/* Workloads                                                                  */
/* ------------------------------------------------------------------------ */

void gpu_cuda_destroy_workload(plx_workload *w) {
    if (!w) {
        return;
    }
    cudaSetDevice(w->factory->device);
    if (w->kind == WK_GEMM) {
        cuda_gemm_plan_destroy(&w->gemm);
    }
    if (w->kind == WK_CONV) {
        cuda_conv_plan_destroy(w->conv, w->factory->host);
    }
    if (w->bad) {
        cudaFree(w->bad);
    }
    if (w->taps) {
        cudaFree(w->taps);
    }
    if (w->stream) {
        cudaStreamDestroy(w->stream);
    }
    w->factory->host->free(w->factory->host, w);
}

plx_status gpu_cuda_create_workload(plx_factory *f, const plx_layer_view *l,
                                    plx_tensor_handle *const *inputs,
                                    plx_tensor_handle *const *outputs,
                                    plx_workload **out_workload) {
    const plx_host *host = f->host;
    char buf[256];
    if (l->op != PLX_OP_CONSTANT) {
        const char *why = gpu_cuda_op_check(l, buf, sizeof buf);
        if (why) {
            return host->status_create(host, PLX_UNSUPPORTED, "%s", why);
        }
    }
    if (l->output_count < 1) {
        return host->status_create(host, PLX_UNSUPPORTED, "%s without an output",
                                   plx_op_name(l->op));
    }
    /* The struct, then the views, the input and the output handles. */
    uint32_t views = gpu_cuda_ops_runs(l->op) ? gpu_cuda_ops_view_count(l) : 0;
    size_t bytes = sizeof(plx_workload) + views * sizeof(ck_view) +
                   (l->input_count + l->output_count) * sizeof(plx_tensor_handle *);
    plx_workload *w = host->alloc(host, bytes, 0);
    if (!w) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    memset(w, 0, bytes);
    w->factory = f;
    w->views = views ? (ck_view *)(void *)(w + 1) : NULL;
    w->view_count = views;
    w->inputs = (plx_tensor_handle **)(void *)((char *)(w + 1) + views * sizeof(ck_view));
    w->input_count = l->input_count;
    w->outputs = w->inputs + l->input_count;
    w->output_count = l->output_count;
    for (uint32_t i = 0; i < l->input_count; i++) {
        w->inputs[i] = inputs[i];
    }
    for (uint32_t j = 0; j < l->output_count; j++) {
        w->outputs[j] = outputs[j];
    }
    w->count = element_count(&l->outputs[0]);
    snprintf(w->layer_name, sizeof w->layer_name, "%s", l->name ? l->name : "");
    w->c_slot = -1;
    w->bias_slot = -1;
    cudaError_t rc = cudaSetDevice(f->device);
    if (rc == cudaSuccess) {
        rc = cudaStreamCreateWithFlags(&w->stream, cudaStreamNonBlocking);
    }
    if (rc != cudaSuccess) {
        w->stream = NULL;
        gpu_cuda_destroy_workload(w);
        return gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaStreamCreateWithFlags");
    }
    const plx_tensor_info *x = l->input_count ? &l->inputs[0] : NULL;
    if (gpu_cuda_ops_runs(l->op)) {
        plx_status st = gpu_cuda_ops_create(w, l);
        if (st) {
            gpu_cuda_destroy_workload(w);
            return st;
        }
        *out_workload = w;
        return NULL;
    }
    /* A fused chain: its head's workload, then its steps. */
    const cuda_fused *chain = l->op == PLX_OP_PRECOMPILED ? fused_payload(l) : NULL;
    plx_layer_view head;
    if (chain && chain->step_count > 0) {
        base_view(l, chain, &head);
        l = &head;
    } else {
        chain = NULL;
    }
    switch (l->op) {
    case PLX_OP_CONSTANT:
        w->kind = WK_CONSTANT;
        w->constant_data = ((const plx_constant_desc *)l->desc)->data;
        break;
    case PLX_OP_UNARY:
        w->kind = WK_POINTWISE;
        unary_func(((const plx_unary_desc *)l->desc)->func, &w->pointwise);
        break;
    case PLX_OP_ACTIVATION: {
        const plx_activation_desc *d = l->desc;
        w->kind = WK_POINTWISE;
        activation_func(d, &w->pointwise);
        w->alpha = d->alpha;
        w->beta = d->beta;
        break;
    }
    case PLX_OP_BINARY: {
        const plx_tensor_info *y = &l->outputs[0];
        w->kind = WK_BINARY;
        binary_func(((const plx_binary_desc *)l->desc)->func, &w->binary);
        if (same_dims(&l->inputs[0], y) && same_dims(&l->inputs[1], y)) {
            /* No broadcast: one flat dim. */
            w->broadcast.rank = 1;
            w->broadcast.dims[0] = w->count;
            w->broadcast.a_strides[0] = 1;
            w->broadcast.b_strides[0] = 1;
        } else {
            w->broadcast.rank = (int)y->rank;
            for (uint32_t i = 0; i < y->rank; i++) {
                w->broadcast.dims[i] = y->dims[i];
            }
            broadcast_strides(&l->inputs[0], y, w->broadcast.a_strides);
            broadcast_strides(&l->inputs[1], y, w->broadcast.b_strides);
        }
        break;
    }
    case PLX_OP_SOFTMAX: {
        const plx_softmax_desc *d = l->desc;
        uint32_t axis = (uint32_t)(d->axis < 0 ? d->axis + (int32_t)x->rank : d->axis);
        w->kind = WK_SOFTMAX;
        w->outer = 1;
        w->inner = 1;
        for (uint32_t i = 0; i < axis; i++) {
            w->outer *= x->dims[i];
        }
        for (uint32_t i = axis + 1; i < x->rank; i++) {
            w->inner *= x->dims[i];
        }
        w->axis_n = x->dims[axis];
        w->log = d->log;
        break;
    }
    case PLX_OP_REDUCE: {
        const plx_reduce_desc *d = l->desc;
        if (d->axis_count == 0 && d->noop_with_empty_axes) {
            w->kind = WK_COPY;
        } else {
            w->kind = WK_REDUCE;
            w->reduce = (ck_reduce)d->func;
            reduce_geometry(d, x, &w->reduce_geometry, buf, sizeof buf);
        }
        break;
    }
    default: { /* the products and convolutions, fused with an activation or not */
        const cuda_fused *fused = l->op == PLX_OP_PRECOMPILED ? fused_payload(l) : NULL;
        plx_layer_view base = *l;
        const plx_activation_desc *act = fused && fused->has_activation ? &fused->activation
                                                                        : NULL;
        if (fused) {
            base_view(l, fused, &base);
        }
        if (act) {
            activation_func(act, &w->pointwise);
            w->alpha = act->alpha;
            w->beta = act->beta;
        }
        if (base.op == PLX_OP_CONV || base.op == PLX_OP_CONV_TRANSPOSE) {
            bool act_in_graph = false;
            w->residual = fused && fused->residual;
            plx_status st = cuda_conv_plan_create(f, &base, act, w->residual, &act_in_graph,
                                                  &w->conv);
            if (st) {
                gpu_cuda_destroy_workload(w);
                return st;
            }
            w->kind = WK_CONV;
            w->post_activation = act && !act_in_graph;
            break;
        }
        cuda_gemm_shape s;
        gemm_shape(&base, &s, &w->c_slot, &w->bias_slot, buf, sizeof buf);
        if (fused && fused->bias_add) {
            s.has_bias = true;
            w->bias_slot = (int)l->input_count - 1;
        }
        if (act) {
            s.relu = act->func == PLX_ACT_RELU;
            w->post_activation = !s.relu;
        }
        w->kind = WK_GEMM;
        plx_status st = cuda_gemm_plan_create(f, &s, &w->gemm);
        if (st) {
            w->kind = WK_COPY; /* nothing of the plan to destroy */
            gpu_cuda_destroy_workload(w);
            return st;
        }
        break;
    }
    }
    if (w->kind == WK_POINTWISE) {
        w->chain.count = 1;
        w->chain.f[0] = w->pointwise;
        w->chain.alpha[0] = w->alpha;
        w->chain.beta[0] = w->beta;
    }
    for (uint32_t k = 0; chain && k < chain->step_count; k++) {
        int at = w->chain.count++;
        step_func(&chain->steps[k], &w->chain.f[at], &w->chain.alpha[at], &w->chain.beta[at]);
    }
    *out_workload = w;
    return NULL;
}

/* The device pointer of a handle; false when it holds no memory though it
 * has bytes. */
static bool device_ptr(const plx_tensor_handle *h, const void **out) {
    *out = h->dev;
    return h->dev || h->bytes == 0;
}

plx_status gpu_cuda_workload_enqueue(plx_workload *w, cudaStream_t stream) {
    plx_factory *f = w->factory;
    const plx_host *host = f->host;
    const void *in[4] = {NULL, NULL, NULL, NULL}; /* the first four, for the kinds here */
    const void *p;
    for (uint32_t i = 0; i < w->input_count; i++) {
        if (!device_ptr(w->inputs[i], &p)) {
            return host->status_create(host, PLX_INTERNAL, "input %u has no memory", i);
        }
        if (i < 4) {
            in[i] = p;
        }
    }
    size_t out_bytes = 0;
    for (uint32_t j = 0; j < w->output_count; j++) {
        if (!device_ptr(w->outputs[j], &p)) {
            return host->status_create(host, PLX_INTERNAL, "output %u has no memory", j);
        }
        out_bytes += w->outputs[j]->bytes;
    }
    if (out_bytes == 0) {
        return NULL; /* nothing to compute */
    }
    float *out = w->outputs[0]->dev;
    cudaError_t rc = cudaSetDevice(f->device);
    if (rc != cudaSuccess) {
        return gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaSetDevice(%d)", f->device);
    }
    const char *what = "launch";
    switch (w->kind) {
    case WK_CONSTANT:
        what = "cudaMemcpyAsync (constant to device)";
        rc = cudaMemcpyAsync(out, w->constant_data, w->outputs[0]->bytes,
                             cudaMemcpyHostToDevice, stream);
        break;
    case WK_COPY:
        /* Nothing to copy when the output is the input's memory. */
        what = "cudaMemcpyAsync (device to device)";
        rc = (const void *)out == in[0] ? cudaSuccess
                                        : cudaMemcpyAsync(out, in[0], w->outputs[0]->bytes,
                                                          cudaMemcpyDeviceToDevice, stream);
        break;
    case WK_POINTWISE:
        rc = ck_chain_launch(stream, &w->chain, in[0], out, w->count);
        break;
    case WK_BINARY:
        rc = ck_binary_chain_launch(stream, w->binary, in[0], in[1], out, w->count,
                                    &w->broadcast, &w->chain);
        break;
    case WK_SOFTMAX:
        rc = ck_softmax_launch(stream, in[0], out, w->outer, w->axis_n, w->inner, w->log);
        break;
    case WK_REDUCE:
        rc = ck_reduce_launch(stream, w->reduce, in[0], out, &w->reduce_geometry);
        break;
    case WK_GEMM: {
        plx_status s = cuda_gemm_run(f, &w->gemm, stream, in[0], in[1],
                                     w->c_slot >= 0 ? in[w->c_slot] : NULL,
                                     w->bias_slot >= 0 ? in[w->bias_slot] : NULL, out);
        if (s) {
            return s;
        }
        break;
    }
    case WK_CONV: {
        uint32_t own = w->input_count - (w->residual ? 1 : 0); /* X, W, [B] */
        plx_status s = cuda_conv_run(f, w->conv, stream, in[0], in[1], own > 2 ? in[2] : NULL,
                                     w->residual ? in[own] : NULL, out);
        if (s) {
            return s;
        }
        break;
    }
    default:
        rc = gpu_cuda_ops_enqueue(w, stream, &what);
        break;
    }
    /* A fused activation cuBLASLt or cuDNN did not run: in place on Y. */
    if (rc == cudaSuccess && w->post_activation) {
        rc = ck_pointwise_launch(stream, w->pointwise, w->alpha, w->beta, out, out, w->count);
    }
    return rc == cudaSuccess ? NULL : gpu_cuda_failure(host, rc, PLX_INTERNAL, "%s", what);
}

uint32_t gpu_cuda_workload_pointers(const plx_workload *w, const void **out, uint32_t cap) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < w->input_count; i++, n++) {
        if (n < cap) {
            out[n] = w->inputs[i]->dev;
        }
    }
    for (uint32_t j = 0; j < w->output_count; j++, n++) {
        if (n < cap) {
            out[n] = w->outputs[j]->dev;
        }
    }
    return n;
}

const char *gpu_cuda_workload_name(const plx_workload *w) {
    switch (w->kind) {
    case WK_CONSTANT: return "constant (copy to device)";
    case WK_COPY: return "copy (device to device)";
    case WK_POINTWISE: return w->chain.count > 1 ? "pointwise chain" : "pointwise";
    case WK_BINARY: return w->chain.count > 0 ? "binary + pointwise chain" : "binary";
    case WK_SOFTMAX: return "softmax";
    case WK_REDUCE: return "reduce";
    case WK_GEMM: return w->post_activation ? "gemm (cuBLASLt) + activation" : "gemm (cuBLASLt)";
    case WK_CONV: return w->post_activation ? "conv (cuDNN) + activation" : "conv (cuDNN graph)";
    case WK_VIEWS: return "strided copy";
    case WK_PAD: return "pad";
    case WK_GATHER: return "gather";
    case WK_WHERE: return "where";
    case WK_CAST: return "cast";
    case WK_POOL: return "pool";
    case WK_RESIZE: return "resize";
    case WK_NORM: return "normalisation";
    case WK_BATCH_NORM: return "batch_norm";
    }
    return "kernel";
}

bool gpu_cuda_workload_has_check(const plx_workload *w) {
    return w->bad != NULL;
}

plx_status gpu_cuda_workload_check(plx_workload *w) {
    return gpu_cuda_ops_after_wait(w);
}

plx_status gpu_cuda_execute_workload(plx_workload *w) {
    plx_status s = gpu_cuda_workload_enqueue(w, w->stream);
    if (s) {
        return s;
    }
    cudaError_t rc = cudaStreamSynchronize(w->stream);
    if (rc != cudaSuccess) {
        return gpu_cuda_failure(w->factory->host, rc, PLX_INTERNAL, "cudaStreamSynchronize");
    }
    if (w->kind == WK_CONSTANT) {
        w->outputs[0]->constant = true;
    }
    return gpu_cuda_workload_check(w);
}

/* ------------------------------------------------------------------------ */
/* Fusion                                                              */
/* ------------------------------------------------------------------------ */

/* Whether layer r, which reads product a's output in input slot `slot`,
 * adds to it a float32 bias of the output's last dim (N elements, as [N]
 * or [1, ..., 1, N]), and a has no bias or C of its own. */
static bool bias_add(const plx_subgraph_view *g, uint32_t a, uint32_t r, uint32_t slot) {
    const plx_layer_view *base = &g->layers[a].view, *add = &g->layers[r].view;
    if ((base->op != PLX_OP_MATMUL && base->op != PLX_OP_GEMM &&
         base->op != PLX_OP_FULLY_CONNECTED) ||
        base->input_count != 2 || add->op != PLX_OP_BINARY || add->input_count != 2 ||
        add->output_count != 1 || ((const plx_binary_desc *)add->desc)->func != PLX_BINARY_ADD ||
        slot > 1) {
        return false;
    }
    const plx_tensor_info *y = &base->outputs[0], *bias = &add->inputs[1 - slot];
    return bias->dtype == PLX_DTYPE_FLOAT32 && y->rank >= 1 && bias->rank >= 1 &&
           element_count(bias) == y->dims[y->rank - 1] &&
           bias->dims[bias->rank - 1] == y->dims[y->rank - 1] &&
           same_dims(&add->outputs[0], y);
}

/* Whether layer r, which reads conv-like layer a's output in input slot
 * `slot`, adds to it a float32 tensor of its shape (a residual). */
static bool residual_add(const plx_subgraph_view *g, uint32_t a, uint32_t r, uint32_t slot) {
    const plx_layer_view *base = &g->layers[a].view, *add = &g->layers[r].view;
    if ((base->op != PLX_OP_CONV && base->op != PLX_OP_CONV_TRANSPOSE) ||
        add->op != PLX_OP_BINARY || add->input_count != 2 || add->output_count != 1 ||
        ((const plx_binary_desc *)add->desc)->func != PLX_BINARY_ADD || slot > 1) {
        return false;
    }
    const plx_tensor_info *z = &add->inputs[1 - slot];
    return z->dtype == PLX_DTYPE_FLOAT32 && same_dims(z, &base->outputs[0]) &&
           same_dims(&add->outputs[0], &base->outputs[0]);
}

plx_status gpu_cuda_optimize_subgraph(plx_backend *b, const plx_subgraph_view *g,
                                      const plx_subgraph_editor *editor) {
    const plx_host *host = b->host;
    for (uint32_t a = 0; a < g->layer_count; a++) {
        const plx_subgraph_layer *base = &g->layers[a];
        if (!fusable_base(base->view.op) || base->view.output_count != 1) {
            continue;
        }
        uint32_t add_input = 0;
        uint32_t r = plx_subgraph_sole_reader(g, a, &add_input);
        /* The add the base's output goes to alone: a conv's residual (a
         * tensor of its output's shape; fused only with the activation that
         * alone reads the sum) or a product's bias (N elements; fused with
         * or without such an activation). */
        uint32_t add = UINT32_MAX;
        plx_subgraph_source inputs[4];
        uint32_t input_count = base->view.input_count;
        memcpy(inputs, base->inputs, input_count * sizeof inputs[0]);
        bool residual = false, bias = false;
        if (r != UINT32_MAX && input_count < 4 &&
            ((residual = residual_add(g, a, r, add_input)) ||
             (bias = bias_add(g, a, r, add_input)))) {
            add = r;
            inputs[input_count++] = g->layers[add].inputs[1 - add_input];
            r = plx_subgraph_sole_reader(g, add, NULL);
        }
        bool activation = r != UINT32_MAX && g->layers[r].view.op == PLX_OP_ACTIVATION &&
                          g->layers[r].view.input_count == 1;
        if (!activation && !bias) {
            continue;
        }
        cuda_fused f;
        memset(&f, 0, sizeof f);
        f.residual = residual;
        f.bias_add = bias;
        f.has_activation = activation;
        f.magic = GPU_CUDA_FUSED_MAGIC;
        f.op = base->view.op;
        if (f.op == PLX_OP_GEMM) {
            f.desc.gemm = *(const plx_gemm_desc *)base->view.desc;
        } else if (f.op == PLX_OP_FULLY_CONNECTED) {
            f.desc.fc = *(const plx_fully_connected_desc *)base->view.desc;
        } else if (f.op == PLX_OP_CONV) {
            f.desc.conv = *(const plx_conv_desc *)base->view.desc;
        } else if (f.op == PLX_OP_CONV_TRANSPOSE) {
            f.desc.conv_transpose = *(const plx_conv_transpose_desc *)base->view.desc;
        }
        const char *act = NULL;
        if (activation) {
            f.activation = *(const plx_activation_desc *)g->layers[r].view.desc;
            act = plx_activation_func_name(f.activation.func);
        }
        char kind[64];
        snprintf(kind, sizeof kind, "%s%s%s%s", plx_op_name(f.op), add != UINT32_MAX ? "+add" : "",
                 activation ? "+" : "", activation ? (act ? act : "activation") : "");
        uint32_t set[3], set_count = 0;
        set[set_count++] = a;
        if (add != UINT32_MAX) {
            set[set_count++] = add;
        }
        if (activation) {
            set[set_count++] = r;
        }
        plx_subgraph_source out = {set[set_count - 1], 0};
        plx_substitution sub = {(uint32_t)sizeof sub, set, set_count, inputs,
                                input_count, &out, 1, kind, &f, sizeof f};
        /* The host checks the new layer with check_layer (float32, shapes,
         * the activation) and keeps the two layers when it is refused; a
         * substitution it rejects outright leaves the others to fuse. */
        plx_status s = editor->substitute(editor, &sub);
        if (s) {
            host->status_free(host, s);
        }
    }
    /* Pointwise chains: a binary, unary or activation layer, then the unary
     * and activation layers that each alone read the one before, as one
     * kernel (one pass over memory instead of one per layer). What the
     * loop above fused is not taken again (the editor refuses a layer
     * twice). */
    for (uint32_t a = 0; a < g->layer_count; a++) {
        const plx_subgraph_layer *first = &g->layers[a];
        char why[256];
        if (!chain_head(first->view.op) || first->view.output_count != 1 ||
            gpu_cuda_op_check(&first->view, why, sizeof why)) {
            continue;
        }
        cuda_fused f;
        memset(&f, 0, sizeof f);
        f.magic = GPU_CUDA_FUSED_MAGIC;
        f.op = first->view.op;
        if (f.op == PLX_OP_BINARY) {
            f.desc.binary = *(const plx_binary_desc *)first->view.desc;
        } else if (f.op == PLX_OP_UNARY) {
            f.desc.unary = *(const plx_unary_desc *)first->view.desc;
        } else {
            f.desc.head = *(const plx_activation_desc *)first->view.desc;
        }
        uint32_t most = f.op == PLX_OP_BINARY ? CK_CHAIN_MAX : CK_CHAIN_MAX - 1;
        uint32_t set[CK_CHAIN_MAX + 1];
        uint32_t set_count = 0;
        set[set_count++] = a;
        char kind[96];
        const char *name = f.op == PLX_OP_BINARY  ? plx_binary_func_name(f.desc.binary.func)
                           : f.op == PLX_OP_UNARY ? plx_unary_func_name(f.desc.unary.func)
                                                  : plx_activation_func_name(f.desc.head.func);
        snprintf(kind, sizeof kind, "%s", name ? name : plx_op_name(f.op));
        for (uint32_t last = a; f.step_count < most;) {
            uint32_t r = plx_subgraph_sole_reader(g, last, NULL);
            if (r == UINT32_MAX) {
                break;
            }
            const plx_layer_view *v = &g->layers[r].view;
            struct cuda_fused_step *st = &f.steps[f.step_count];
            if (v->input_count != 1 || v->output_count != 1 ||
                (v->op != PLX_OP_UNARY && v->op != PLX_OP_ACTIVATION)) {
                break;
            }
            st->op = v->op;
            if (v->op == PLX_OP_UNARY) {
                st->d.unary = *(const plx_unary_desc *)v->desc;
            } else {
                st->d.activation = *(const plx_activation_desc *)v->desc;
            }
            ck_pointwise pw;
            float alpha, beta;
            if (!step_func(st, &pw, &alpha, &beta) || gpu_cuda_op_check(v, why, sizeof why)) {
                break;
            }
            name = v->op == PLX_OP_UNARY ? plx_unary_func_name(st->d.unary.func)
                                         : plx_activation_func_name(st->d.activation.func);
            size_t len = strlen(kind);
            snprintf(kind + len, sizeof kind - len, "+%s", name ? name : plx_op_name(v->op));
            f.step_count++;
            set[set_count++] = r;
            last = r;
        }
        if (f.step_count == 0) {
            continue;
        }
        plx_subgraph_source out = {set[set_count - 1], 0};
        plx_substitution sub = {(uint32_t)sizeof sub, set, set_count, first->inputs,
                                first->view.input_count, &out, 1, kind, &f, sizeof f};
        plx_status s = editor->substitute(editor, &sub);
        if (s) {
            host->status_free(host, s);
        }
    }
    return NULL;
}
