/* The ONNX converters for elementwise operators: activations, Clip, unary
 * and binary maths, the variadic Max/Min/Sum/Mean, Where and Cast; the
 * normalisations (BatchNormalization, InstanceNormalization,
 * LayerNormalization) and Softmax; and the reductions (Reduce*, ArgMax/Min,
 * TopK). One family per file keeps each converter file short. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* ---- elementwise -------------------------------------------------------- */

typedef struct act_entry {
    const char *op;
    plx_activation_func func;
    const char *alpha_attr;
    const char *beta_attr;
} act_entry;

static const act_entry act_table[] = {
    {"Relu", PLX_ACT_RELU, NULL, NULL},
    {"LeakyRelu", PLX_ACT_LEAKY_RELU, "alpha", NULL},
    {"Elu", PLX_ACT_ELU, "alpha", NULL},
    {"Sigmoid", PLX_ACT_SIGMOID, NULL, NULL},
    {"HardSigmoid", PLX_ACT_HARD_SIGMOID, "alpha", "beta"},
    {"HardSwish", PLX_ACT_HARD_SWISH, NULL, NULL},
    {"Tanh", PLX_ACT_TANH, NULL, NULL},
    {"Softplus", PLX_ACT_SOFTPLUS, NULL, NULL},
    {"Softsign", PLX_ACT_SOFTSIGN, NULL, NULL},
    {"Selu", PLX_ACT_SELU, "alpha", "gamma"},
    {"Mish", PLX_ACT_MISH, NULL, NULL},
    {"ThresholdedRelu", PLX_ACT_THRESHOLDED_RELU, "alpha", NULL},
    {"Celu", PLX_ACT_CELU, "alpha", NULL},
    {"Gelu", PLX_ACT_GELU, NULL, NULL},
    {"Shrink", PLX_ACT_SHRINK, "lambd", "bias"},
};

plx_status onnxi_conv_activation(onnxi_ctx *c, onnxi_node *n) {
    const char *op = n->proto->op_type;
    const act_entry *e = NULL;
    for (size_t i = 0; i < sizeof act_table / sizeof act_table[0]; i++) {
        if (strcmp(act_table[i].op, op) == 0) {
            e = &act_table[i];
        }
    }
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st || !e) {
        return st ? st : ONNXI_UNSUPPORTED("operator not supported");
    }
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(e->func);
    if (e->alpha_attr) {
        d.alpha = onnxi_attr_f(n, e->alpha_attr, d.alpha);
    }
    if (e->beta_attr) {
        d.beta = onnxi_attr_f(n, e->beta_attr, d.beta);
    }
    if (e->func == PLX_ACT_GELU) {
        char buf[16];
        const char *approx = onnxi_attr_s(n, "approximate", "none", buf, sizeof buf);
        if (strcmp(approx, "tanh") == 0) {
            d.alpha = 1.0f;
        } else if (strcmp(approx, "none") != 0) {
            return ONNXI_UNSUPPORTED("approximate='%s'", approx);
        }
    }
    return onnxi_emit1(c, n, PLX_OP_ACTIVATION, &d, n->in, 1);
}

/* Clip. Float bounds known at import make one clip activation; bounds
 * computed at run time (from 11, where they are inputs), and every integer
 * clip, become max(x, min) then min(., max): binary layers that take the
 * bounds as scalar tensors, whichever way they are known. */
plx_status onnxi_conv_clip(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    plx_dtype dt = n->in[0]->info.dtype;
    /* float64 takes the max/min path: the activation's bounds are float32 */
    bool is_float = dt == PLX_DTYPE_FLOAT32 || dt == PLX_DTYPE_FLOAT16 || dt == PLX_DTYPE_BFLOAT16;
    double lo = -INFINITY, hi = INFINITY;
    bool bounds_known = true;
    if (c->opset < 11) {
        lo = onnxi_attr_f(n, "min", -INFINITY);
        hi = onnxi_attr_f(n, "max", INFINITY);
    } else {
        for (size_t i = 1; i <= 2; i++) {
            if (!onnxi_has_in(n, i)) {
                continue;
            }
            if (onnxi_elem_count(&n->in[i]->info) != 1) {
                return onnxi_invalid(c, n, "input %zu must be a scalar", i);
            }
            if (n->in[i]->info.dtype != dt) {
                return onnxi_invalid(c, n, "input %zu (%s) is %s, the input is %s", i,
                                     i == 1 ? "min" : "max",
                                     plx_dtype_name(n->in[i]->info.dtype), plx_dtype_name(dt));
            }
            if (n->in[i]->kind != ONNXI_CONST) {
                bounds_known = false;
            } else {
                *(i == 1 ? &lo : &hi) = onnxi_const_f64(n->in[i], 0);
            }
        }
    }
    if (is_float && bounds_known) {
        plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_CLIP);
        d.alpha = (float)lo;
        d.beta = (float)hi;
        return onnxi_emit1(c, n, PLX_OP_ACTIVATION, &d, n->in, 1);
    }
    onnxi_value *x = n->in[0];
    for (size_t i = 1; i <= 2; i++) {
        if (!onnxi_has_in(n, i)) {
            continue;
        }
        plx_binary_desc d = PLX_BINARY_DESC_INIT(i == 1 ? PLX_BINARY_MAX : PLX_BINARY_MIN);
        onnxi_value *ins[2] = {x, n->in[i]};
        st = onnxi_emit(c, n, PLX_OP_BINARY, &d, ins, 2, 1, &x);
        if (st) {
            return st;
        }
    }
    return onnxi_bind_out(c, n, 0, x);
}

typedef struct unary_entry {
    const char *op;
    plx_unary_func func;
} unary_entry;

static const unary_entry unary_table[] = {
    {"Abs", PLX_UNARY_ABS}, {"Neg", PLX_UNARY_NEG}, {"Sqrt", PLX_UNARY_SQRT},
    {"Reciprocal", PLX_UNARY_RECIPROCAL}, {"Exp", PLX_UNARY_EXP}, {"Log", PLX_UNARY_LOG},
    {"Erf", PLX_UNARY_ERF}, {"Floor", PLX_UNARY_FLOOR}, {"Ceil", PLX_UNARY_CEIL},
    {"Not", PLX_UNARY_NOT}, {"Sin", PLX_UNARY_SIN}, {"Cos", PLX_UNARY_COS},
    {"Tan", PLX_UNARY_TAN}, {"Asin", PLX_UNARY_ASIN}, {"Acos", PLX_UNARY_ACOS},
    {"Atan", PLX_UNARY_ATAN}, {"Sinh", PLX_UNARY_SINH}, {"Cosh", PLX_UNARY_COSH},
    {"Asinh", PLX_UNARY_ASINH}, {"Acosh", PLX_UNARY_ACOSH}, {"Atanh", PLX_UNARY_ATANH},
    {"Round", PLX_UNARY_ROUND}, {"Sign", PLX_UNARY_SIGN},
    {"IsNaN", PLX_UNARY_IS_NAN}, {"BitwiseNot", PLX_UNARY_BITWISE_NOT},
};

plx_status onnxi_conv_unary(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    for (size_t i = 0; i < sizeof unary_table / sizeof unary_table[0]; i++) {
        if (strcmp(unary_table[i].op, n->proto->op_type) == 0) {
            plx_unary_desc d = PLX_UNARY_DESC_INIT(unary_table[i].func);
            return onnxi_emit1(c, n, PLX_OP_UNARY, &d, n->in, 1);
        }
    }
    return ONNXI_UNSUPPORTED("operator not supported");
}

typedef struct binary_entry {
    const char *op;
    plx_binary_func func;
} binary_entry;

static const binary_entry binary_table[] = {
    {"Add", PLX_BINARY_ADD}, {"Sub", PLX_BINARY_SUB}, {"Mul", PLX_BINARY_MUL},
    {"Div", PLX_BINARY_DIV}, {"Pow", PLX_BINARY_POW}, {"Equal", PLX_BINARY_EQUAL},
    {"Less", PLX_BINARY_LESS}, {"Greater", PLX_BINARY_GREATER},
    {"GreaterOrEqual", PLX_BINARY_GREATER_EQUAL}, {"LessOrEqual", PLX_BINARY_LESS_EQUAL},
    {"And", PLX_BINARY_AND}, {"Or", PLX_BINARY_OR}, {"Xor", PLX_BINARY_XOR},
    {"PRelu", PLX_BINARY_PRELU}, {"Mod", PLX_BINARY_MOD},
    {"BitwiseAnd", PLX_BINARY_BITWISE_AND}, {"BitwiseOr", PLX_BINARY_BITWISE_OR},
    {"BitwiseXor", PLX_BINARY_BITWISE_XOR},
};

plx_status onnxi_conv_binary(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    const binary_entry *e = NULL;
    for (size_t i = 0; i < sizeof binary_table / sizeof binary_table[0]; i++) {
        if (strcmp(binary_table[i].op, n->proto->op_type) == 0) {
            e = &binary_table[i];
        }
    }
    if (!e) {
        return ONNXI_UNSUPPORTED("operator not supported");
    }
    if (e->func == PLX_BINARY_MOD) {
        int64_t fmod_attr = onnxi_attr_i(n, "fmod", 0);
        plx_dtype dt = n->in[0]->info.dtype;
        bool fl = onnxi_dtype_is_float(dt);
        /* unsigned operands have no sign to follow: both modes agree */
        bool uns = dt == PLX_DTYPE_UINT8 || dt == PLX_DTYPE_UINT16 || dt == PLX_DTYPE_UINT32 ||
                   dt == PLX_DTYPE_UINT64;
        if (!uns && !fl && fmod_attr == 1) {
            /* C's remainder, the sign of the dividend: A - trunc(A / B) * B,
             * integer division truncating (a zero divisor is the division's
             * execution error) */
            plx_binary_desc div = PLX_BINARY_DESC_INIT(PLX_BINARY_DIV);
            plx_binary_desc mul = PLX_BINARY_DESC_INIT(PLX_BINARY_MUL);
            plx_binary_desc sub = PLX_BINARY_DESC_INIT(PLX_BINARY_SUB);
            onnxi_value *q, *qb;
            onnxi_value *ab[2] = {n->in[0], n->in[1]};
            if ((st = onnxi_emit(c, n, PLX_OP_BINARY, &div, ab, 2, 1, &q))) {
                return st;
            }
            onnxi_value *qbi[2] = {q, n->in[1]};
            if ((st = onnxi_emit(c, n, PLX_OP_BINARY, &mul, qbi, 2, 1, &qb))) {
                return st;
            }
            onnxi_value *aq[2] = {n->in[0], qb};
            return onnxi_emit1(c, n, PLX_OP_BINARY, &sub, aq, 2);
        }
        if (!uns && fl != (fmod_attr == 1)) {
            return ONNXI_UNSUPPORTED("fmod=%lld with %s inputs", (long long)fmod_attr,
                                     plx_dtype_name(n->in[0]->info.dtype));
        }
    }
    onnxi_value *ins[2] = {n->in[0], n->in[1]};
    if (e->func == PLX_BINARY_POW && ins[1]->info.dtype != ins[0]->info.dtype) {
        /* Pow's exponent may have another type (opset 12): cast it. */
        plx_cast_desc cd = PLX_CAST_DESC_INIT(ins[0]->info.dtype);
        st = onnxi_emit(c, n, PLX_OP_CAST, &cd, &n->in[1], 1, 1, &ins[1]);
        if (st) {
            return st;
        }
    }
    plx_binary_desc d = PLX_BINARY_DESC_INIT(e->func);
    return onnxi_emit1(c, n, PLX_OP_BINARY, &d, ins, 2);
}

/* Max, Min, Sum, Mean: variadic, folded pairwise. */
plx_status onnxi_conv_variadic(onnxi_ctx *c, onnxi_node *n) {
    const char *op = n->proto->op_type;
    plx_binary_func f = strcmp(op, "Max") == 0   ? PLX_BINARY_MAX
                        : strcmp(op, "Min") == 0 ? PLX_BINARY_MIN
                                                 : PLX_BINARY_ADD;
    if (n->n_in == 0) {
        return onnxi_invalid(c, n, "needs at least one input");
    }
    plx_status st = onnxi_need_inputs(c, n, n->n_in);
    if (st) {
        return st;
    }
    onnxi_value *acc = n->in[0];
    plx_binary_desc d = PLX_BINARY_DESC_INIT(f);
    for (size_t i = 1; i < n->n_in; i++) {
        onnxi_value *ins[2] = {acc, n->in[i]};
        st = onnxi_emit(c, n, PLX_OP_BINARY, &d, ins, 2, 1, &acc);
        if (st) {
            return st;
        }
    }
    if (strcmp(op, "Mean") == 0 && n->n_in > 1) {
        onnxi_value *count;
        st = onnxi_scalar_const(c, acc->info.dtype, (double)n->n_in, &count);
        if (st) {
            return st;
        }
        plx_binary_desc dd = PLX_BINARY_DESC_INIT(PLX_BINARY_DIV);
        onnxi_value *ins[2] = {acc, count};
        st = onnxi_emit(c, n, PLX_OP_BINARY, &dd, ins, 2, 1, &acc);
        if (st) {
            return st;
        }
    }
    return onnxi_bind_out(c, n, 0, acc);
}

plx_status onnxi_conv_where(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 3);
    return st ? st : onnxi_emit1(c, n, PLX_OP_WHERE, NULL, n->in, 3);
}

plx_status onnxi_conv_cast(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    int32_t to;
    if (strcmp(n->proto->op_type, "CastLike") == 0) {
        st = onnxi_need_inputs(c, n, 2);
        if (st) {
            return st;
        }
        plx_cast_desc d = PLX_CAST_DESC_INIT(n->in[1]->info.dtype);
        d.saturate = onnxi_attr_i(n, "saturate", 1) != 0; /* opset 19: float8 targets */
        return onnxi_emit1(c, n, PLX_OP_CAST, &d, n->in, 1);
    }
    to = onnxi_attr_i32(n, "to", 0);
    plx_dtype dt = onnxi_dtype(to);
    if (dt == PLX_DTYPE_INVALID) {
        char buf[32];
        return ONNXI_UNSUPPORTED("cast to %s, which Plexus does not have",
                                 onnxi_dtype_name(to, buf, sizeof buf));
    }
    plx_cast_desc d = PLX_CAST_DESC_INIT(dt);
    d.saturate = onnxi_attr_i(n, "saturate", 1) != 0; /* opset 19: float8 targets */
    return onnxi_emit1(c, n, PLX_OP_CAST, &d, n->in, 1);
}
/* ---- normalisation ------------------------------------------------------ */

plx_status onnxi_conv_batch_norm(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 5);
    if (st) {
        return st;
    }
    if (onnxi_attr_i(n, "training_mode", 0) != 0) {
        return ONNXI_UNSUPPORTED("training_mode=1");
    }
    if (c->opset < 9 && onnxi_attr_i(n, "spatial", 1) != 1) {
        return ONNXI_UNSUPPORTED("spatial=0");
    }
    st = onnxi_single_output(n, "training statistics");
    if (st) {
        return st;
    }
    plx_batch_norm_desc d = PLX_BATCH_NORM_DESC_INIT;
    d.epsilon = onnxi_attr_f(n, "epsilon", 1e-5f);
    return onnxi_emit1(c, n, PLX_OP_BATCH_NORM, &d, n->in, 5);
}

plx_status onnxi_conv_instance_norm(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 3);
    if (st) {
        return st;
    }
    plx_instance_norm_desc d = PLX_INSTANCE_NORM_DESC_INIT;
    d.epsilon = onnxi_attr_f(n, "epsilon", 1e-5f);
    return onnxi_emit1(c, n, PLX_OP_INSTANCE_NORM, &d, n->in, 3);
}

/* GroupNormalization (opset 18: scale and bias per group; 21: per
 * channel): X [N, C, ...] is viewed as [N, G, C/G x the spatial size] and
 * normalised per (n, g) by instance_norm, then viewed as X again. Opset 18's
 * scale and bias are instance_norm's own; opset 21's, one per channel,
 * follow as a multiply and an add broadcast over [C, 1, ...], instance_norm
 * taking ones and zeros. */
plx_status onnxi_conv_group_norm(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 3);
    if (st) {
        return st;
    }
    onnxi_value *x = n->in[0], *scale = n->in[1], *bias = n->in[2];
    const plx_tensor_info *xi = &x->info;
    int64_t groups = onnxi_attr_i(n, "num_groups", 0);
    if (xi->rank < 2) {
        return onnxi_invalid(c, n, "input X has rank %u; GroupNormalization needs [N, C, ...]",
                             xi->rank);
    }
    int64_t ch = xi->dims[1];
    if (groups < 1 || ch % groups != 0) {
        return onnxi_invalid(c, n, "num_groups = %lld must be >= 1 and divide the %lld channels",
                             (long long)groups, (long long)ch);
    }
    if (onnxi_attr_i(n, "stash_type", 1) != 1) {
        return ONNXI_UNSUPPORTED("stash_type other than 1 (float32)");
    }
    int64_t per_group = ch / groups;
    for (uint32_t i = 2; i < xi->rank; i++) {
        if (xi->dims[i] != 0 && per_group > INT64_MAX / xi->dims[i]) {
            return onnxi_invalid(c, n, "the size of X overflows");
        }
        per_group *= xi->dims[i];
    }
    bool per_channel = c->opset >= 21;
    int64_t want = per_channel ? ch : groups;
    for (int i = 1; i < 3; i++) {
        const plx_tensor_info *p = &n->in[i]->info;
        if (p->rank != 1 || p->dims[0] != want) {
            return onnxi_invalid(c, n, "%s must be [%lld] (one value per %s)",
                                 i == 1 ? "scale" : "bias", (long long)want,
                                 per_channel ? "channel" : "group");
        }
    }
    plx_tensor_info grouped = *xi;
    grouped.rank = 3;
    grouped.dims[1] = groups;
    grouped.dims[2] = per_group;
    for (uint32_t i = 3; i < PLX_MAX_RANK; i++) {
        grouped.dims[i] = 0;
    }
    onnxi_value *g_in, *g_out, *y, *norm_scale = scale, *norm_bias = bias;
    if (per_channel) {
        /* ones and zeros of X's dtype, one per group */
        plx_tensor_info gi = scale->info;
        gi.dims[0] = groups;
        if (!onnxi_dtype_is_float(gi.dtype)) {
            return onnxi_invalid(c, n, "scale has type %s, expected a float type",
                                 plx_dtype_name(gi.dtype));
        }
        void *ones = NULL;
        if ((st = onnxi_alloc_const(c, n, &gi, &ones)) ||
            (st = onnxi_zeros(c, n, gi.dtype, 1, gi.dims, &norm_bias))) {
            free(ones);
            return st;
        }
        uint8_t one[8];
        size_t es = plx_dtype_bytes_from_double(1.0, gi.dtype, one);
        for (int64_t g = 0; g < groups; g++) {
            memcpy((uint8_t *)ones + (size_t)g * es, one, es);
        }
        if ((st = onnxi_const_take(c, &gi, ones, &norm_scale))) {
            return st;
        }
    }
    plx_instance_norm_desc d = PLX_INSTANCE_NORM_DESC_INIT;
    d.epsilon = onnxi_attr_f(n, "epsilon", 1e-5f);
    if ((st = onnxi_reshape_to(c, n, x, &grouped, &g_in))) {
        return st;
    }
    onnxi_value *ins[3] = {g_in, norm_scale, norm_bias};
    if ((st = onnxi_emit(c, n, PLX_OP_INSTANCE_NORM, &d, ins, 3, 1, &g_out)) ||
        (st = onnxi_reshape_to(c, n, g_out, xi, &y))) {
        return st;
    }
    if (per_channel) {
        /* scale and bias as [C, 1, ...]: they broadcast over X's spatial dims */
        plx_tensor_info cshape = scale->info;
        cshape.rank = xi->rank - 1;
        for (uint32_t i = 1; i < cshape.rank; i++) {
            cshape.dims[i] = 1;
        }
        plx_binary_desc mul = PLX_BINARY_DESC_INIT(PLX_BINARY_MUL);
        plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
        onnxi_value *s_c, *b_c, *scaled;
        if ((st = onnxi_reshape_to(c, n, scale, &cshape, &s_c)) ||
            (st = onnxi_reshape_to(c, n, bias, &cshape, &b_c))) {
            return st;
        }
        onnxi_value *m_in[2] = {y, s_c};
        if ((st = onnxi_emit(c, n, PLX_OP_BINARY, &mul, m_in, 2, 1, &scaled))) {
            return st;
        }
        onnxi_value *a_in[2] = {scaled, b_c};
        if ((st = onnxi_emit(c, n, PLX_OP_BINARY, &add, a_in, 2, 1, &y))) {
            return st;
        }
    }
    return onnxi_bind_out(c, n, 0, y);
}

/* LayerNormalization's optional outputs Mean and InvStdDev (float32, the
 * normalised dims kept as 1): mean = ReduceMean(X), InvStdDev =
 * 1 / sqrt(ReduceMean((X - mean)^2) + epsilon), as extra layers. */
static plx_status layer_norm_stats(onnxi_ctx *c, onnxi_node *n, int64_t axis, float epsilon) {
    onnxi_value *x = n->in[0];
    int64_t rank = x->info.rank;
    if (x->info.dtype != PLX_DTYPE_FLOAT32) {
        return ONNXI_UNSUPPORTED("outputs Mean and InvStdDev for %s input",
                                 plx_dtype_name(x->info.dtype));
    }
    axis = axis < 0 ? axis + rank : axis;
    if (axis < 0 || axis >= rank) {
        return onnxi_invalid(c, n, "axis is out of range for rank %lld", (long long)rank);
    }
    plx_reduce_desc rd = PLX_REDUCE_DESC_INIT(PLX_REDUCE_MEAN);
    for (int64_t a = axis; a < rank; a++) {
        rd.axes[rd.axis_count++] = (int32_t)a;
    }
    plx_binary_desc sub = PLX_BINARY_DESC_INIT(PLX_BINARY_SUB);
    plx_binary_desc mul = PLX_BINARY_DESC_INIT(PLX_BINARY_MUL);
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_unary_desc sqrt_d = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    plx_unary_desc recip = PLX_UNARY_DESC_INIT(PLX_UNARY_RECIPROCAL);
    onnxi_value *mean, *diff, *sq, *var, *eps, *var_eps, *std, *inv;
    plx_status st = onnxi_emit(c, n, PLX_OP_REDUCE, &rd, &x, 1, 1, &mean);
    if (!st) {
        onnxi_value *ins[2] = {x, mean};
        st = onnxi_emit(c, n, PLX_OP_BINARY, &sub, ins, 2, 1, &diff);
    }
    if (!st) {
        onnxi_value *ins[2] = {diff, diff};
        st = onnxi_emit(c, n, PLX_OP_BINARY, &mul, ins, 2, 1, &sq);
    }
    if (!st) {
        st = onnxi_emit(c, n, PLX_OP_REDUCE, &rd, &sq, 1, 1, &var);
    }
    if (!st) {
        st = onnxi_scalar_const(c, PLX_DTYPE_FLOAT32, epsilon, &eps);
    }
    if (!st) {
        onnxi_value *ins[2] = {var, eps};
        st = onnxi_emit(c, n, PLX_OP_BINARY, &add, ins, 2, 1, &var_eps);
    }
    if (!st) {
        st = onnxi_emit(c, n, PLX_OP_UNARY, &sqrt_d, &var_eps, 1, 1, &std);
    }
    if (!st) {
        st = onnxi_emit(c, n, PLX_OP_UNARY, &recip, &std, 1, 1, &inv);
    }
    if (!st) {
        st = onnxi_bind_out(c, n, 1, mean);
    }
    return st ? st : onnxi_bind_out(c, n, 2, inv);
}

plx_status onnxi_conv_layer_norm(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    plx_layer_norm_desc d = PLX_LAYER_NORM_DESC_INIT;
    d.axis = onnxi_attr_i32(n, "axis", -1);
    d.epsilon = onnxi_attr_f(n, "epsilon", 1e-5f);
    if (onnxi_attr_i(n, "stash_type", 1) != 1) {
        return ONNXI_UNSUPPORTED("stash_type other than 1 (float32)");
    }
    st = onnxi_emit1(c, n, PLX_OP_LAYER_NORM, &d, n->in, onnxi_has_in(n, 2) ? 3 : 2);
    if (!st && n->n_out > 1) {
        st = layer_norm_stats(c, n, d.axis, d.epsilon);
    }
    return st;
}


plx_status onnxi_conv_softmax(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    bool log = strcmp(n->proto->op_type, "LogSoftmax") == 0;
    onnxi_value *x = n->in[0];
    int64_t rank = x->info.rank;
    if (c->opset >= 13) {
        plx_softmax_desc d = PLX_SOFTMAX_DESC_INIT;
        d.axis = onnxi_attr_i32(n, "axis", -1);
        d.log = log;
        return onnxi_emit1(c, n, PLX_OP_SOFTMAX, &d, &x, 1);
    }
    /* Before opset 13 the input is coerced to 2-D at `axis` (default 1). */
    int64_t axis = onnxi_attr_i(n, "axis", 1);
    if (axis < -rank || axis > rank || rank == 0) {
        return onnxi_invalid(c, n, "axis %lld is out of range for rank %lld", (long long)axis,
                             (long long)rank);
    }
    axis = axis < 0 ? axis + rank : axis;
    plx_softmax_desc d = PLX_SOFTMAX_DESC_INIT;
    d.log = log;
    if (axis == rank - 1) {
        return onnxi_emit1(c, n, PLX_OP_SOFTMAX, &d, &x, 1);
    }
    plx_axis_desc fd = PLX_AXIS_DESC_INIT((int32_t)axis);
    onnxi_value *flat, *sm, *out;
    st = onnxi_emit(c, n, PLX_OP_FLATTEN, &fd, &x, 1, 1, &flat);
    if (!st) {
        st = onnxi_emit(c, n, PLX_OP_SOFTMAX, &d, &flat, 1, 1, &sm);
    }
    if (!st) {
        st = onnxi_reshape_to(c, n, sm, &x->info, &out);
    }
    return st ? st : onnxi_bind_out(c, n, 0, out);
}

/* ---- reductions --------------------------------------------------------- */

typedef struct reduce_entry {
    const char *op;
    plx_reduce_func func;
    int64_t axes_input_opset; /* opset from which axes is an input */
} reduce_entry;

static const reduce_entry reduce_table[] = {
    {"ReduceMean", PLX_REDUCE_MEAN, 18}, {"ReduceMax", PLX_REDUCE_MAX, 18},
    {"ReduceMin", PLX_REDUCE_MIN, 18}, {"ReduceSum", PLX_REDUCE_SUM, 13},
    {"ReduceProd", PLX_REDUCE_PROD, 18}, {"ReduceL1", PLX_REDUCE_L1, 18},
    {"ReduceL2", PLX_REDUCE_L2, 18}, {"ReduceSumSquare", PLX_REDUCE_SUM_SQUARE, 18},
    {"ReduceLogSum", PLX_REDUCE_LOG_SUM, 18}, {"ReduceLogSumExp", PLX_REDUCE_LOG_SUM_EXP, 18},
};

plx_status onnxi_conv_reduce(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    const reduce_entry *e = NULL;
    for (size_t i = 0; i < sizeof reduce_table / sizeof reduce_table[0]; i++) {
        if (strcmp(reduce_table[i].op, n->proto->op_type) == 0) {
            e = &reduce_table[i];
        }
    }
    if (!e) {
        return ONNXI_UNSUPPORTED("operator not supported");
    }
    plx_reduce_desc d = PLX_REDUCE_DESC_INIT(e->func);
    int64_t axes[PLX_MAX_RANK];
    size_t count = 0;
    bool input = c->opset >= e->axes_input_opset;
    if (input) {
        if (onnxi_has_in(n, 1)) {
            st = onnxi_const_ints(n, 1, "axes", axes, PLX_MAX_RANK, &count);
        }
    } else {
        st = onnxi_attr_ints(n, "axes", axes, PLX_MAX_RANK, &count, NULL);
    }
    if (st || (st = onnxi_axes(c, n, input ? "input 1 (axes)" : "attribute 'axes'", axes, count,
                               n->in[0]->info.rank, d.axes))) {
        return st;
    }
    d.axis_count = (uint32_t)count;
    d.keepdims = onnxi_attr_i(n, "keepdims", 1) != 0;
    d.noop_with_empty_axes = onnxi_attr_i(n, "noop_with_empty_axes", 0) != 0;
    if (n->in[0]->info.dtype == PLX_DTYPE_BOOL &&
        (e->func == PLX_REDUCE_MAX || e->func == PLX_REDUCE_MIN)) {
        /* Max and min of bools (opset 20: any and all) as int32. */
        plx_cast_desc to_i32 = PLX_CAST_DESC_INIT(PLX_DTYPE_INT32);
        plx_cast_desc to_bool = PLX_CAST_DESC_INIT(PLX_DTYPE_BOOL);
        onnxi_value *i32 = NULL, *reduced = NULL;
        st = onnxi_emit(c, n, PLX_OP_CAST, &to_i32, n->in, 1, 1, &i32);
        if (!st) {
            st = onnxi_emit(c, n, PLX_OP_REDUCE, &d, &i32, 1, 1, &reduced);
        }
        return st ? st : onnxi_emit1(c, n, PLX_OP_CAST, &to_bool, &reduced, 1);
    }
    return onnxi_emit1(c, n, PLX_OP_REDUCE, &d, n->in, 1);
}

plx_status onnxi_conv_arg_reduce(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    plx_arg_reduce_desc d = PLX_ARG_REDUCE_DESC_INIT(strcmp(n->proto->op_type, "ArgMin") == 0);
    d.axis = onnxi_attr_i32(n, "axis", 0);
    d.keepdims = onnxi_attr_i(n, "keepdims", 1) != 0;
    d.select_last_index = onnxi_attr_i(n, "select_last_index", 0) != 0;
    return onnxi_emit1(c, n, PLX_OP_ARG_REDUCE, &d, n->in, 1);
}

plx_status onnxi_conv_topk(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    plx_topk_desc d = PLX_TOPK_DESC_INIT(0);
    if (c->opset < 10) {
        d.k = onnxi_attr_i(n, "k", -1);
    } else {
        int64_t k[PLX_MAX_RANK];
        size_t cnt;
        st = onnxi_need_inputs(c, n, 2);
        if (!st) {
            st = onnxi_const_ints(n, 1, "K", k, PLX_MAX_RANK, &cnt);
        }
        if (st || (st = onnxi_check_count(c, n, "input 1 (K)", cnt, 1, "one value"))) {
            return st;
        }
        d.k = k[0];
    }
    d.axis = onnxi_attr_i32(n, "axis", -1);
    d.largest = onnxi_attr_i(n, "largest", 1) != 0;
    d.sorted = onnxi_attr_i(n, "sorted", 1) != 0;
    onnxi_value *outs[2];
    st = onnxi_emit(c, n, PLX_OP_TOPK, &d, n->in, 1, 2, outs);
    if (!st) {
        st = onnxi_bind_out(c, n, 0, outs[0]);
    }
    return st ? st : onnxi_bind_out(c, n, 1, outs[1]);
}
