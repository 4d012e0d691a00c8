/* One converter per ONNX operator: reads the node's attributes (and the
 * inputs that act as attributes, which must be known at import), emits
 * Plexus layers through onnxi_emit (which folds them when their inputs are
 * constants) and binds the node's outputs. A converter that cannot map a
 * node returns PLX_UNSUPPORTED with the reason only; the importer adds the
 * node's name, op type and opset. Semantics follow the ONNX operator
 * documents of each opset (https://onnx.ai/onnx/operators/). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

typedef plx_status (*convert_fn)(onnxi_ctx *c, onnxi_node *n);

#define UNSUPPORTED(...) plxi_status_create(PLX_UNSUPPORTED, __VA_ARGS__)

static plx_status invalid(const onnxi_ctx *c, const onnxi_node *n, const char *fmt, ...)
    PLXI_PRINTF(3, 4);
static plx_status invalid(const onnxi_ctx *c, const onnxi_node *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *msg = plxi_vasprintf(fmt, ap);
    va_end(ap);
    plx_status st = plxi_status_create(PLX_INVALID_ARGUMENT, "%s: node '%s' (%s): %s", c->file,
                                       n->name, n->proto->op_type, msg ? msg : "invalid");
    free(msg);
    return st;
}

/* Zeroed memory for a constant the importer makes, within
 * ONNXI_MAX_CONST_BYTES. */
static plx_status alloc_const(const onnxi_ctx *c, const onnxi_node *n,
                              const plx_tensor_info *info, void **out) {
    size_t bytes;
    if (!plx_tensor_info_byte_size(info, &bytes) || bytes > ONNXI_MAX_CONST_BYTES) {
        return invalid(c, n, "the constant it makes would exceed %zu bytes",
                       ONNXI_MAX_CONST_BYTES);
    }
    *out = calloc(1, bytes ? bytes : 1);
    return *out ? NULL : plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory");
}

/* ---- attributes --------------------------------------------------------- */

static const Onnx__AttributeProto *attr(const onnxi_node *n, const char *name) {
    for (size_t i = 0; i < n->proto->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->proto->attribute[i];
        if (a->name && strcmp(a->name, name) == 0) {
            return a;
        }
    }
    return NULL;
}

static int64_t attr_i(const onnxi_node *n, const char *name, int64_t def) {
    const Onnx__AttributeProto *a = attr(n, name);
    return a && a->has_i ? a->i : def;
}

static float attr_f(const onnxi_node *n, const char *name, float def) {
    const Onnx__AttributeProto *a = attr(n, name);
    return a && a->has_f ? a->f : def;
}

/* The string attribute copied into buf (truncated), or def. */
static const char *attr_s(const onnxi_node *n, const char *name, const char *def, char *buf,
                          size_t size) {
    const Onnx__AttributeProto *a = attr(n, name);
    if (!a || !a->has_s) {
        return def;
    }
    size_t len = a->s.len < size - 1 ? a->s.len : size - 1;
    memcpy(buf, a->s.data, len);
    buf[len] = '\0';
    return buf;
}

/* The ints attribute: count (0 when absent); *present tells them apart. */
static plx_status attr_ints(const onnxi_node *n, const char *name, int64_t *out, size_t max,
                            size_t *count, bool *present) {
    const Onnx__AttributeProto *a = attr(n, name);
    *count = 0;
    if (present) {
        *present = a != NULL;
    }
    if (!a) {
        return NULL;
    }
    if (a->n_ints > max) {
        return UNSUPPORTED("attribute %s has %zu values; at most %zu are supported", name,
                           a->n_ints, max);
    }
    for (size_t i = 0; i < a->n_ints; i++) {
        out[i] = a->ints[i];
    }
    *count = a->n_ints;
    return NULL;
}

/* An input that acts as an attribute must be a constant. */
static plx_status need_const(const onnxi_node *n, size_t i, const char *role) {
    const onnxi_value *v = i < n->n_in ? n->in[i] : NULL;
    if (v && v->kind != ONNXI_CONST) {
        return UNSUPPORTED("input %zu (%s) must be known at import, but it is computed from the "
                           "graph's inputs", i, role);
    }
    return NULL;
}

/* Reads a constant integer input into out (count elements). */
static plx_status const_ints(const onnxi_node *n, size_t i, const char *role, int64_t *out,
                             size_t max, size_t *count) {
    plx_status st = need_const(n, i, role);
    if (st) {
        return st;
    }
    const onnxi_value *v = n->in[i];
    size_t cnt = onnxi_elem_count(&v->info);
    if (cnt > max) {
        return UNSUPPORTED("input %zu (%s) has %zu values; at most %zu are supported", i, role,
                           cnt, max);
    }
    for (size_t k = 0; k < cnt; k++) {
        out[k] = onnxi_const_i64(v, k);
    }
    *count = cnt;
    return NULL;
}

static bool has_in(const onnxi_node *n, size_t i) {
    return i < n->n_in && n->in[i] != NULL;
}

static plx_status need_inputs(const onnxi_ctx *c, const onnxi_node *n, size_t min) {
    for (size_t i = 0; i < min; i++) {
        if (!has_in(n, i)) {
            return invalid(c, n, "input %zu is required", i);
        }
    }
    return NULL;
}

static plx_status bind_out(onnxi_ctx *c, onnxi_node *n, size_t k, onnxi_value *v) {
    if (k >= n->proto->n_output || !n->proto->output[k] || !n->proto->output[k][0]) {
        return NULL; /* output not used */
    }
    return onnxi_bind(c, n->proto->output[k], v);
}

/* Emits a single-output layer and binds output 0. */
static plx_status emit1(onnxi_ctx *c, onnxi_node *n, plx_op op, const void *desc,
                        onnxi_value *const *inputs, uint32_t n_in) {
    onnxi_value *out;
    plx_status st = onnxi_emit(c, n, op, desc, inputs, n_in, 1, &out);
    return st ? st : bind_out(c, n, 0, out);
}

/* Only output 0 may be used. */
static plx_status single_output(const onnxi_node *n, const char *what) {
    if (n->n_out > 1) {
        return UNSUPPORTED("output %zu (%s) is not supported", n->n_out - 1, what);
    }
    return NULL;
}

static plx_status scalar_const(onnxi_ctx *c, plx_dtype dt, double value, onnxi_value **out) {
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = dt;
    unsigned char buf[8] = {0};
    switch (dt) {
    case PLX_DTYPE_FLOAT32: {
        float f = (float)value;
        memcpy(buf, &f, 4);
        break;
    }
    case PLX_DTYPE_INT64: {
        int64_t v = (int64_t)value;
        memcpy(buf, &v, 8);
        break;
    }
    case PLX_DTYPE_INT32: {
        int32_t v = (int32_t)value;
        memcpy(buf, &v, 4);
        break;
    }
    default: {
        /* Other dtypes: build a float32 scalar and cast it. */
        return UNSUPPORTED("a constant of type %s is needed", plx_dtype_name(dt));
    }
    }
    return onnxi_const_copy(c, &info, buf, out);
}

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
};

static plx_status conv_activation(onnxi_ctx *c, onnxi_node *n) {
    const char *op = n->proto->op_type;
    const act_entry *e = NULL;
    for (size_t i = 0; i < sizeof act_table / sizeof act_table[0]; i++) {
        if (strcmp(act_table[i].op, op) == 0) {
            e = &act_table[i];
        }
    }
    plx_status st = need_inputs(c, n, 1);
    if (st || !e) {
        return st ? st : UNSUPPORTED("operator not supported");
    }
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(e->func);
    if (e->alpha_attr) {
        d.alpha = attr_f(n, e->alpha_attr, d.alpha);
    }
    if (e->beta_attr) {
        d.beta = attr_f(n, e->beta_attr, d.beta);
    }
    if (e->func == PLX_ACT_GELU) {
        char buf[16];
        const char *approx = attr_s(n, "approximate", "none", buf, sizeof buf);
        if (strcmp(approx, "tanh") == 0) {
            d.alpha = 1.0f;
        } else if (strcmp(approx, "none") != 0) {
            return UNSUPPORTED("approximate='%s'", approx);
        }
    }
    return emit1(c, n, PLX_OP_ACTIVATION, &d, n->in, 1);
}

static plx_status conv_clip(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    double lo = -INFINITY, hi = INFINITY;
    if (c->opset < 11) {
        lo = attr_f(n, "min", -INFINITY);
        hi = attr_f(n, "max", INFINITY);
    } else {
        for (size_t i = 1; i <= 2; i++) {
            if (has_in(n, i)) {
                st = need_const(n, i, i == 1 ? "min" : "max");
                if (st) {
                    return st;
                }
                if (onnxi_elem_count(&n->in[i]->info) != 1) {
                    return invalid(c, n, "input %zu must be a scalar", i);
                }
                *(i == 1 ? &lo : &hi) = onnxi_const_f64(n->in[i], 0);
            }
        }
    }
    plx_dtype dt = n->in[0]->info.dtype;
    if (dt == PLX_DTYPE_FLOAT32 || dt == PLX_DTYPE_FLOAT16 || dt == PLX_DTYPE_BFLOAT16) {
        plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_CLIP);
        d.alpha = (float)lo;
        d.beta = (float)hi;
        return emit1(c, n, PLX_OP_ACTIVATION, &d, n->in, 1);
    }
    /* Integers: max(min(x, hi), lo) with the bounds as constants. */
    onnxi_value *x = n->in[0];
    for (size_t i = 1; i <= 2; i++) {
        if (!has_in(n, i)) {
            continue;
        }
        plx_binary_desc d = PLX_BINARY_DESC_INIT(i == 1 ? PLX_BINARY_MAX : PLX_BINARY_MIN);
        onnxi_value *ins[2] = {x, n->in[i]};
        st = onnxi_emit(c, n, PLX_OP_BINARY, &d, ins, 2, 1, &x);
        if (st) {
            return st;
        }
    }
    return bind_out(c, n, 0, x);
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
};

static plx_status conv_unary(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    for (size_t i = 0; i < sizeof unary_table / sizeof unary_table[0]; i++) {
        if (strcmp(unary_table[i].op, n->proto->op_type) == 0) {
            plx_unary_desc d = PLX_UNARY_DESC_INIT(unary_table[i].func);
            return emit1(c, n, PLX_OP_UNARY, &d, n->in, 1);
        }
    }
    return UNSUPPORTED("operator not supported");
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
};

static bool is_float(plx_dtype dt) {
    return dt == PLX_DTYPE_FLOAT32 || dt == PLX_DTYPE_FLOAT16 || dt == PLX_DTYPE_BFLOAT16;
}

static plx_status conv_binary(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 2);
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
        return UNSUPPORTED("operator not supported");
    }
    if (e->func == PLX_BINARY_MOD) {
        int64_t fmod_attr = attr_i(n, "fmod", 0);
        bool fl = is_float(n->in[0]->info.dtype);
        if (fl != (fmod_attr == 1)) {
            return UNSUPPORTED("fmod=%lld with %s inputs", (long long)fmod_attr,
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
    return emit1(c, n, PLX_OP_BINARY, &d, ins, 2);
}

/* Max, Min, Sum, Mean: variadic, folded pairwise. */
static plx_status conv_variadic(onnxi_ctx *c, onnxi_node *n) {
    const char *op = n->proto->op_type;
    plx_binary_func f = strcmp(op, "Max") == 0   ? PLX_BINARY_MAX
                        : strcmp(op, "Min") == 0 ? PLX_BINARY_MIN
                                                 : PLX_BINARY_ADD;
    if (n->n_in == 0) {
        return invalid(c, n, "needs at least one input");
    }
    plx_status st = need_inputs(c, n, n->n_in);
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
        st = scalar_const(c, acc->info.dtype, (double)n->n_in, &count);
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
    return bind_out(c, n, 0, acc);
}

static plx_status conv_where(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 3);
    return st ? st : emit1(c, n, PLX_OP_WHERE, NULL, n->in, 3);
}

static plx_status conv_cast(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    int32_t to;
    if (strcmp(n->proto->op_type, "CastLike") == 0) {
        st = need_inputs(c, n, 2);
        if (st) {
            return st;
        }
        plx_cast_desc d = PLX_CAST_DESC_INIT(n->in[1]->info.dtype);
        return emit1(c, n, PLX_OP_CAST, &d, n->in, 1);
    }
    to = (int32_t)attr_i(n, "to", 0);
    plx_dtype dt = onnxi_dtype(to);
    if (dt == PLX_DTYPE_INVALID) {
        char buf[32];
        return UNSUPPORTED("cast to %s, which Plexus does not have",
                           onnxi_dtype_name(to, buf, sizeof buf));
    }
    plx_cast_desc d = PLX_CAST_DESC_INIT(dt);
    return emit1(c, n, PLX_OP_CAST, &d, n->in, 1);
}

/* ---- identity-like and constants ---------------------------------------- */

static plx_status conv_identity(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    if (strcmp(n->proto->op_type, "Dropout") == 0) {
        if (c->opset >= 12 && has_in(n, 2)) {
            st = need_const(n, 2, "training_mode");
            if (st) {
                return st;
            }
            if (onnxi_const_i64(n->in[2], 0)) {
                return UNSUPPORTED("training_mode is true");
            }
        }
        if (n->n_out > 1) {
            /* The mask of an inference dropout is all true. */
            plx_tensor_info info = n->in[0]->info;
            info.dtype = PLX_DTYPE_BOOL;
            info.quant.kind = PLX_QUANT_NONE;
            void *ones;
            st = alloc_const(c, n, &info, &ones);
            if (st) {
                return st;
            }
            memset(ones, 1, onnxi_elem_count(&info));
            onnxi_value *mask;
            st = onnxi_const_take(c, &info, ones, &mask);
            if (!st) {
                st = bind_out(c, n, 1, mask);
            }
            if (st) {
                return st;
            }
        }
    }
    return bind_out(c, n, 0, n->in[0]);
}

static plx_status tensor_attr_const(onnxi_ctx *c, onnxi_node *n, const Onnx__TensorProto *t,
                                    onnxi_value **out) {
    char *what = plxi_asprintf("%s: node '%s' (%s): its tensor", c->file, n->name,
                               n->proto->op_type);
    if (!what) {
        return plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory");
    }
    plx_tensor_info info;
    void *data;
    plx_status st = onnxi_tensor_decode(t, what, c->base_dir, &info, &data);
    free(what);
    if (st && plx_status_get_code(st) == PLX_UNSUPPORTED) {
        /* The reason without the file prefix: the report adds the node. */
        plx_status r = UNSUPPORTED("%s", plx_status_get_message(st));
        plx_status_free(st);
        return r;
    }
    return st ? st : onnxi_const_take(c, &info, data, out);
}

static plx_status conv_constant(onnxi_ctx *c, onnxi_node *n) {
    const Onnx__AttributeProto *a;
    onnxi_value *v = NULL;
    plx_status st = NULL;
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    if ((a = attr(n, "value")) && a->t) {
        st = tensor_attr_const(c, n, a->t, &v);
    } else if ((a = attr(n, "value_float")) && a->has_f) {
        info.dtype = PLX_DTYPE_FLOAT32;
        st = onnxi_const_copy(c, &info, &a->f, &v);
    } else if ((a = attr(n, "value_int")) && a->has_i) {
        info.dtype = PLX_DTYPE_INT64;
        st = onnxi_const_copy(c, &info, &a->i, &v);
    } else if ((a = attr(n, "value_floats"))) {
        info.dtype = PLX_DTYPE_FLOAT32;
        info.rank = 1;
        info.dims[0] = (int64_t)a->n_floats;
        st = onnxi_const_copy(c, &info, a->n_floats ? (const void *)a->floats : "", &v);
    } else if ((a = attr(n, "value_ints"))) {
        info.dtype = PLX_DTYPE_INT64;
        info.rank = 1;
        info.dims[0] = (int64_t)a->n_ints;
        st = onnxi_const_copy(c, &info, a->n_ints ? (const void *)a->ints : "", &v);
    } else if (attr(n, "sparse_value") || attr(n, "value_string") || attr(n, "value_strings")) {
        return UNSUPPORTED("sparse and string constants are not supported");
    } else {
        return invalid(c, n, "has no value attribute");
    }
    return st ? st : bind_out(c, n, 0, v);
}

static plx_status conv_constant_of_shape(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    int64_t dims[PLX_MAX_RANK];
    size_t rank;
    if (!st) {
        st = const_ints(n, 0, "shape", dims, PLX_MAX_RANK, &rank);
    }
    if (st) {
        return st;
    }
    onnxi_value *fill = NULL;
    const Onnx__AttributeProto *a = attr(n, "value");
    if (a && a->t) {
        st = tensor_attr_const(c, n, a->t, &fill);
        if (st) {
            return st;
        }
        if (onnxi_elem_count(&fill->info) != 1) {
            return invalid(c, n, "value must hold one element");
        }
    }
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = fill ? fill->info.dtype : PLX_DTYPE_FLOAT32;
    info.rank = (uint32_t)rank;
    for (size_t i = 0; i < rank; i++) {
        if (dims[i] < 0) {
            return invalid(c, n, "shape[%zu] = %lld is negative", i, (long long)dims[i]);
        }
        info.dims[i] = dims[i];
    }
    void *mem;
    st = alloc_const(c, n, &info, &mem);
    if (st) {
        return st;
    }
    unsigned char *data = mem;
    size_t count = onnxi_elem_count(&info);
    size_t es = plx_dtype_size(info.dtype);
    for (size_t i = 0; fill && i < count; i++) {
        memcpy(data + i * es, fill->data, es);
    }
    onnxi_value *v;
    st = onnxi_const_take(c, &info, data, &v);
    return st ? st : bind_out(c, n, 0, v);
}

static plx_status conv_shape(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    const plx_tensor_info *x = &n->in[0]->info;
    int64_t r = x->rank;
    int64_t start = attr_i(n, "start", 0), end = attr_i(n, "end", r);
    start = start < 0 ? start + r : start;
    end = end < 0 ? end + r : end;
    start = start < 0 ? 0 : (start > r ? r : start);
    end = end < 0 ? 0 : (end > r ? r : end);
    int64_t dims[PLX_MAX_RANK];
    size_t count = 0;
    for (int64_t i = start; i < end; i++) {
        dims[count++] = x->dims[i];
    }
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = PLX_DTYPE_INT64;
    info.rank = 1;
    info.dims[0] = (int64_t)count;
    onnxi_value *v;
    st = onnxi_const_copy(c, &info, dims, &v);
    return st ? st : bind_out(c, n, 0, v);
}

static plx_status conv_size(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = PLX_DTYPE_INT64;
    int64_t count = (int64_t)onnxi_elem_count(&n->in[0]->info);
    onnxi_value *v;
    st = onnxi_const_copy(c, &info, &count, &v);
    return st ? st : bind_out(c, n, 0, v);
}

static plx_status conv_range(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 3);
    for (size_t i = 0; i < 3 && !st; i++) {
        static const char *const roles[] = {"start", "limit", "delta"};
        st = need_const(n, i, roles[i]);
        if (!st && onnxi_elem_count(&n->in[i]->info) != 1) {
            st = invalid(c, n, "input %zu (%s) must be a scalar", i, roles[i]);
        }
    }
    if (st) {
        /* Its output's length depends on the values: without them the
         * shape is not static. */
        return st;
    }
    plx_dtype dt = n->in[0]->info.dtype;
    double start = onnxi_const_f64(n->in[0], 0), limit = onnxi_const_f64(n->in[1], 0),
           delta = onnxi_const_f64(n->in[2], 0);
    if (delta == 0) {
        return invalid(c, n, "delta is 0");
    }
    double steps = ceil((limit - start) / delta);
    if (!(steps < 1e9)) {
        return invalid(c, n, "the range has too many elements");
    }
    size_t count = steps > 0 ? (size_t)steps : 0;
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = dt;
    info.rank = 1;
    info.dims[0] = (int64_t)count;
    void *mem;
    st = alloc_const(c, n, &info, &mem);
    if (st) {
        return st;
    }
    unsigned char *data = mem;
    for (size_t i = 0; i < count; i++) {
        switch (dt) {
        case PLX_DTYPE_FLOAT32: {
            float s = (float)start, d = (float)delta;
            ((float *)(void *)data)[i] = s + (float)i * d;
            break;
        }
        case PLX_DTYPE_INT64: {
            int64_t s = onnxi_const_i64(n->in[0], 0), d = onnxi_const_i64(n->in[2], 0);
            ((int64_t *)(void *)data)[i] = s + (int64_t)i * d;
            break;
        }
        case PLX_DTYPE_INT32:
            ((int32_t *)(void *)data)[i] = (int32_t)(onnxi_const_i64(n->in[0], 0) +
                                                     (int64_t)i * onnxi_const_i64(n->in[2], 0));
            break;
        case PLX_DTYPE_INT16:
            ((int16_t *)(void *)data)[i] = (int16_t)(onnxi_const_i64(n->in[0], 0) +
                                                     (int64_t)i * onnxi_const_i64(n->in[2], 0));
            break;
        default:
            free(data);
            return UNSUPPORTED("Range of %s", plx_dtype_name(dt));
        }
    }
    onnxi_value *v;
    st = onnxi_const_take(c, &info, data, &v);
    return st ? st : bind_out(c, n, 0, v);
}

/* ---- dense -------------------------------------------------------------- */

static plx_status auto_pad(const onnxi_node *n, plx_auto_pad *out) {
    char buf[32];
    const char *s = attr_s(n, "auto_pad", "NOTSET", buf, sizeof buf);
    if (strcmp(s, "NOTSET") == 0) {
        *out = PLX_AUTO_PAD_NOTSET;
    } else if (strcmp(s, "SAME_UPPER") == 0) {
        *out = PLX_AUTO_PAD_SAME_UPPER;
    } else if (strcmp(s, "SAME_LOWER") == 0) {
        *out = PLX_AUTO_PAD_SAME_LOWER;
    } else if (strcmp(s, "VALID") == 0) {
        *out = PLX_AUTO_PAD_VALID;
    } else {
        return UNSUPPORTED("auto_pad='%s'", s);
    }
    return NULL;
}

/* Spatial attributes shared by Conv, ConvTranspose and the pools. */
typedef struct spatial_attrs {
    size_t sp;
    int64_t kernel[PLX_MAX_SPATIAL];
    bool has_kernel;
    int64_t strides[PLX_MAX_SPATIAL];
    int64_t dilations[PLX_MAX_SPATIAL];
    int64_t pads_begin[PLX_MAX_SPATIAL];
    int64_t pads_end[PLX_MAX_SPATIAL];
    plx_auto_pad auto_pad;
} spatial_attrs;

static plx_status read_spatial(const onnxi_ctx *c, const onnxi_node *n, spatial_attrs *s) {
    const plx_tensor_info *x = &n->in[0]->info;
    if (x->rank < 3 || x->rank > 2 + PLX_MAX_SPATIAL) {
        return UNSUPPORTED("input X has rank %u; Plexus supports 1 or 2 spatial dimensions "
                           "(rank 3 or 4)", x->rank);
    }
    s->sp = x->rank - 2;
    int64_t v[2 * PLX_MAX_SPATIAL];
    size_t cnt;
    static const char *const names[] = {"kernel_shape", "strides", "dilations"};
    int64_t *dst[] = {s->kernel, s->strides, s->dilations};
    for (int k = 0; k < 3; k++) {
        bool present;
        plx_status st = attr_ints(n, names[k], v, PLX_MAX_SPATIAL, &cnt, &present);
        if (st) {
            return st;
        }
        if (present && cnt != s->sp) {
            return invalid(c, n, "%s has %zu values, X has %zu spatial dimensions", names[k], cnt,
                           s->sp);
        }
        for (size_t i = 0; i < PLX_MAX_SPATIAL; i++) {
            dst[k][i] = present && i < cnt ? v[i] : 1;
        }
        if (k == 0) {
            s->has_kernel = present;
        }
    }
    bool present;
    plx_status st = attr_ints(n, "pads", v, 2 * PLX_MAX_SPATIAL, &cnt, &present);
    if (st) {
        return st;
    }
    if (present && cnt != 2 * s->sp) {
        return invalid(c, n, "pads has %zu values, expected %zu", cnt, 2 * s->sp);
    }
    for (size_t i = 0; i < PLX_MAX_SPATIAL; i++) {
        s->pads_begin[i] = present && i < s->sp ? v[i] : 0;
        s->pads_end[i] = present && i < s->sp ? v[s->sp + i] : 0;
    }
    return auto_pad(n, &s->auto_pad);
}

static plx_status conv_conv(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 2);
    spatial_attrs s;
    if (!st) {
        st = read_spatial(c, n, &s);
    }
    if (st) {
        return st;
    }
    bool transpose = strcmp(n->proto->op_type, "ConvTranspose") == 0;
    uint32_t n_in = has_in(n, 2) ? 3 : 2;
    if (!transpose) {
        plx_conv_desc d = PLX_CONV_DESC_INIT;
        memcpy(d.strides, s.strides, sizeof d.strides);
        memcpy(d.dilations, s.dilations, sizeof d.dilations);
        memcpy(d.pads_begin, s.pads_begin, sizeof d.pads_begin);
        memcpy(d.pads_end, s.pads_end, sizeof d.pads_end);
        d.auto_pad = s.auto_pad;
        d.group = attr_i(n, "group", 1);
        return emit1(c, n, PLX_OP_CONV, &d, n->in, n_in);
    }
    plx_conv_transpose_desc d = PLX_CONV_TRANSPOSE_DESC_INIT;
    memcpy(d.strides, s.strides, sizeof d.strides);
    memcpy(d.dilations, s.dilations, sizeof d.dilations);
    memcpy(d.pads_begin, s.pads_begin, sizeof d.pads_begin);
    memcpy(d.pads_end, s.pads_end, sizeof d.pads_end);
    d.auto_pad = s.auto_pad;
    d.group = attr_i(n, "group", 1);
    int64_t v[PLX_MAX_RANK];
    size_t cnt;
    bool present;
    st = attr_ints(n, "output_padding", v, PLX_MAX_SPATIAL, &cnt, &present);
    for (size_t i = 0; !st && present && i < cnt; i++) {
        d.output_padding[i] = v[i];
    }
    if (!st) {
        st = attr_ints(n, "output_shape", v, PLX_MAX_RANK, &cnt, &present);
    }
    if (!st && present) {
        /* Either the spatial sizes or the full shape. */
        size_t off = cnt == s.sp + 2 ? 2 : 0;
        if (cnt != s.sp && cnt != s.sp + 2) {
            return invalid(c, n, "output_shape has %zu values", cnt);
        }
        for (size_t i = 0; i < s.sp; i++) {
            d.output_shape[i] = v[off + i];
            /* A requested size past the full output needs negative padding. */
            const plx_tensor_info *w = &n->in[1]->info;
            int64_t in = n->in[0]->info.dims[2 + i];
            int64_t k = w->rank == s.sp + 2 ? w->dims[2 + i] : 1;
            int64_t full = d.strides[i] * (in - 1) + d.output_padding[i] +
                           (k - 1) * d.dilations[i] + 1;
            if (d.output_shape[i] > full) {
                return UNSUPPORTED("output_shape[%zu] = %lld is larger than the full output "
                                   "%lld (negative padding)", i, (long long)d.output_shape[i],
                                   (long long)full);
            }
        }
    }
    return st ? st : emit1(c, n, PLX_OP_CONV_TRANSPOSE, &d, n->in, n_in);
}

static plx_status conv_pool(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    spatial_attrs s;
    if (!st) {
        st = read_spatial(c, n, &s);
    }
    if (!st) {
        st = single_output(n, "Indices");
    }
    if (st) {
        return st;
    }
    bool is_max = strcmp(n->proto->op_type, "MaxPool") == 0;
    if (!s.has_kernel) {
        return invalid(c, n, "kernel_shape is required");
    }
    for (size_t i = 0; !is_max && i < s.sp; i++) {
        if (s.dilations[i] != 1) {
            return UNSUPPORTED("AveragePool with dilations (opset 19)");
        }
    }
    plx_pool_desc d = PLX_POOL_DESC_INIT(is_max ? PLX_POOL_MAX : PLX_POOL_AVERAGE);
    memcpy(d.kernel, s.kernel, sizeof d.kernel);
    memcpy(d.strides, s.strides, sizeof d.strides);
    memcpy(d.dilations, s.dilations, sizeof d.dilations);
    memcpy(d.pads_begin, s.pads_begin, sizeof d.pads_begin);
    memcpy(d.pads_end, s.pads_end, sizeof d.pads_end);
    d.auto_pad = s.auto_pad;
    d.ceil_mode = attr_i(n, "ceil_mode", 0) != 0;
    d.count_include_pad = attr_i(n, "count_include_pad", 0) != 0;
    if (is_max && attr_i(n, "storage_order", 0) != 0) {
        /* Only affects the Indices output, which is refused above. */
    }
    return emit1(c, n, PLX_OP_POOL, &d, n->in, 1);
}

static plx_status conv_global_pool(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    bool is_max = strcmp(n->proto->op_type, "GlobalMaxPool") == 0;
    plx_global_pool_desc d = PLX_GLOBAL_POOL_DESC_INIT(is_max ? PLX_POOL_MAX : PLX_POOL_AVERAGE);
    return emit1(c, n, PLX_OP_GLOBAL_POOL, &d, n->in, 1);
}

static plx_status conv_matmul(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 2);
    return st ? st : emit1(c, n, PLX_OP_MATMUL, NULL, n->in, 2);
}

static plx_status conv_gemm(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    plx_gemm_desc d = PLX_GEMM_DESC_INIT;
    d.alpha = attr_f(n, "alpha", 1.0f);
    d.beta = attr_f(n, "beta", 1.0f);
    d.trans_a = attr_i(n, "transA", 0) != 0;
    d.trans_b = attr_i(n, "transB", 0) != 0;
    return emit1(c, n, PLX_OP_GEMM, &d, n->in, has_in(n, 2) ? 3 : 2);
}

/* ---- normalisation ------------------------------------------------------ */

static plx_status conv_batch_norm(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 5);
    if (st) {
        return st;
    }
    if (attr_i(n, "training_mode", 0) != 0) {
        return UNSUPPORTED("training_mode=1");
    }
    if (c->opset < 9 && attr_i(n, "spatial", 1) != 1) {
        return UNSUPPORTED("spatial=0");
    }
    st = single_output(n, "training statistics");
    if (st) {
        return st;
    }
    plx_batch_norm_desc d = PLX_BATCH_NORM_DESC_INIT;
    d.epsilon = attr_f(n, "epsilon", 1e-5f);
    return emit1(c, n, PLX_OP_BATCH_NORM, &d, n->in, 5);
}

static plx_status conv_instance_norm(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 3);
    if (st) {
        return st;
    }
    plx_instance_norm_desc d = PLX_INSTANCE_NORM_DESC_INIT;
    d.epsilon = attr_f(n, "epsilon", 1e-5f);
    return emit1(c, n, PLX_OP_INSTANCE_NORM, &d, n->in, 3);
}

/* LayerNormalization's optional outputs Mean and InvStdDev (float32, the
 * normalised dims kept as 1): mean = ReduceMean(X), InvStdDev =
 * 1 / sqrt(ReduceMean((X - mean)^2) + epsilon), as extra layers. */
static plx_status layer_norm_stats(onnxi_ctx *c, onnxi_node *n, int64_t axis, float epsilon) {
    onnxi_value *x = n->in[0];
    int64_t rank = x->info.rank;
    if (x->info.dtype != PLX_DTYPE_FLOAT32) {
        return UNSUPPORTED("outputs Mean and InvStdDev for %s input",
                           plx_dtype_name(x->info.dtype));
    }
    axis = axis < 0 ? axis + rank : axis;
    if (axis < 0 || axis >= rank) {
        return invalid(c, n, "axis is out of range for rank %lld", (long long)rank);
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
        st = scalar_const(c, PLX_DTYPE_FLOAT32, epsilon, &eps);
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
        st = bind_out(c, n, 1, mean);
    }
    return st ? st : bind_out(c, n, 2, inv);
}

static plx_status conv_layer_norm(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    plx_layer_norm_desc d = PLX_LAYER_NORM_DESC_INIT;
    d.axis = (int32_t)attr_i(n, "axis", -1);
    d.epsilon = attr_f(n, "epsilon", 1e-5f);
    if (attr_i(n, "stash_type", 1) != 1) {
        return UNSUPPORTED("stash_type other than 1 (float32)");
    }
    st = emit1(c, n, PLX_OP_LAYER_NORM, &d, n->in, has_in(n, 2) ? 3 : 2);
    if (!st && n->n_out > 1) {
        st = layer_norm_stats(c, n, d.axis, d.epsilon);
    }
    return st;
}

static plx_status reshape_to(onnxi_ctx *c, onnxi_node *n, onnxi_value *x,
                             const plx_tensor_info *shape, onnxi_value **out) {
    plx_reshape_desc d = PLX_RESHAPE_DESC_INIT;
    d.rank = shape->rank;
    for (uint32_t i = 0; i < shape->rank; i++) {
        d.dims[i] = shape->dims[i];
    }
    d.allow_zero = true;
    return onnxi_emit(c, n, PLX_OP_RESHAPE, &d, &x, 1, 1, out);
}

static plx_status conv_softmax(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    bool log = strcmp(n->proto->op_type, "LogSoftmax") == 0;
    onnxi_value *x = n->in[0];
    int64_t rank = x->info.rank;
    if (c->opset >= 13) {
        plx_softmax_desc d = PLX_SOFTMAX_DESC_INIT;
        d.axis = (int32_t)attr_i(n, "axis", -1);
        d.log = log;
        return emit1(c, n, PLX_OP_SOFTMAX, &d, &x, 1);
    }
    /* Before opset 13 the input is coerced to 2-D at `axis` (default 1). */
    int64_t axis = attr_i(n, "axis", 1);
    if (axis < -rank || axis > rank || rank == 0) {
        return invalid(c, n, "axis %lld is out of range for rank %lld", (long long)axis,
                       (long long)rank);
    }
    axis = axis < 0 ? axis + rank : axis;
    plx_softmax_desc d = PLX_SOFTMAX_DESC_INIT;
    d.log = log;
    if (axis == rank - 1) {
        return emit1(c, n, PLX_OP_SOFTMAX, &d, &x, 1);
    }
    plx_axis_desc fd = PLX_AXIS_DESC_INIT((int32_t)axis);
    onnxi_value *flat, *sm, *out;
    st = onnxi_emit(c, n, PLX_OP_FLATTEN, &fd, &x, 1, 1, &flat);
    if (!st) {
        st = onnxi_emit(c, n, PLX_OP_SOFTMAX, &d, &flat, 1, 1, &sm);
    }
    if (!st) {
        st = reshape_to(c, n, sm, &x->info, &out);
    }
    return st ? st : bind_out(c, n, 0, out);
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

static plx_status conv_reduce(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
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
        return UNSUPPORTED("operator not supported");
    }
    plx_reduce_desc d = PLX_REDUCE_DESC_INIT(e->func);
    int64_t axes[PLX_MAX_RANK];
    size_t count = 0;
    if (c->opset >= e->axes_input_opset) {
        if (has_in(n, 1)) {
            st = const_ints(n, 1, "axes", axes, PLX_MAX_RANK, &count);
        }
    } else {
        st = attr_ints(n, "axes", axes, PLX_MAX_RANK, &count, NULL);
    }
    if (st) {
        return st;
    }
    for (size_t i = 0; i < count; i++) {
        d.axes[i] = (int32_t)axes[i];
    }
    d.axis_count = (uint32_t)count;
    d.keepdims = attr_i(n, "keepdims", 1) != 0;
    d.noop_with_empty_axes = attr_i(n, "noop_with_empty_axes", 0) != 0;
    return emit1(c, n, PLX_OP_REDUCE, &d, n->in, 1);
}

static plx_status conv_arg_reduce(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    plx_arg_reduce_desc d = PLX_ARG_REDUCE_DESC_INIT(strcmp(n->proto->op_type, "ArgMin") == 0);
    d.axis = (int32_t)attr_i(n, "axis", 0);
    d.keepdims = attr_i(n, "keepdims", 1) != 0;
    d.select_last_index = attr_i(n, "select_last_index", 0) != 0;
    return emit1(c, n, PLX_OP_ARG_REDUCE, &d, n->in, 1);
}

static plx_status conv_topk(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    plx_topk_desc d = PLX_TOPK_DESC_INIT(0);
    if (c->opset < 10) {
        d.k = attr_i(n, "k", -1);
    } else {
        int64_t k[1];
        size_t cnt;
        st = need_inputs(c, n, 2);
        if (!st) {
            st = const_ints(n, 1, "K", k, 1, &cnt);
        }
        if (st) {
            return st;
        }
        if (cnt != 1) {
            return invalid(c, n, "K must have one element");
        }
        d.k = k[0];
    }
    d.axis = (int32_t)attr_i(n, "axis", -1);
    d.largest = attr_i(n, "largest", 1) != 0;
    d.sorted = attr_i(n, "sorted", 1) != 0;
    onnxi_value *outs[2];
    st = onnxi_emit(c, n, PLX_OP_TOPK, &d, n->in, 1, 2, outs);
    if (!st) {
        st = bind_out(c, n, 0, outs[0]);
    }
    return st ? st : bind_out(c, n, 1, outs[1]);
}

/* ---- data movement ------------------------------------------------------ */

static plx_status conv_reshape(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    plx_reshape_desc d = PLX_RESHAPE_DESC_INIT;
    int64_t dims[PLX_MAX_RANK];
    size_t rank;
    if (c->opset < 5) {
        st = attr_ints(n, "shape", dims, PLX_MAX_RANK, &rank, NULL);
    } else {
        st = need_inputs(c, n, 2);
        if (!st) {
            st = const_ints(n, 1, "shape", dims, PLX_MAX_RANK, &rank);
        }
    }
    if (st) {
        return st;
    }
    for (size_t i = 0; i < rank; i++) {
        d.dims[i] = dims[i];
    }
    d.rank = (uint32_t)rank;
    d.allow_zero = attr_i(n, "allowzero", 0) != 0;
    return emit1(c, n, PLX_OP_RESHAPE, &d, n->in, 1);
}

static plx_status conv_flatten(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    plx_axis_desc d = PLX_AXIS_DESC_INIT((int32_t)attr_i(n, "axis", 1));
    return emit1(c, n, PLX_OP_FLATTEN, &d, n->in, 1);
}

static plx_status conv_transpose(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    plx_transpose_desc d = PLX_TRANSPOSE_DESC_INIT;
    int64_t perm[PLX_MAX_RANK];
    size_t count;
    st = attr_ints(n, "perm", perm, PLX_MAX_RANK, &count, NULL);
    if (st) {
        return st;
    }
    for (size_t i = 0; i < count; i++) {
        if (perm[i] < 0 || perm[i] >= PLX_MAX_RANK) {
            return invalid(c, n, "perm[%zu] = %lld is out of range", i, (long long)perm[i]);
        }
        d.perm[i] = (uint32_t)perm[i];
    }
    d.perm_count = (uint32_t)count;
    return emit1(c, n, PLX_OP_TRANSPOSE, &d, n->in, 1);
}

static plx_status conv_concat(onnxi_ctx *c, onnxi_node *n) {
    if (n->n_in == 0) {
        return invalid(c, n, "needs at least one input");
    }
    plx_status st = need_inputs(c, n, n->n_in);
    if (st) {
        return st;
    }
    const Onnx__AttributeProto *a = attr(n, "axis");
    if (!a || !a->has_i) {
        return invalid(c, n, "attribute axis is required");
    }
    plx_axis_desc d = PLX_AXIS_DESC_INIT((int32_t)a->i);
    return emit1(c, n, PLX_OP_CONCAT, &d, n->in, (uint32_t)n->n_in);
}

static plx_status conv_split(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    size_t n_out = n->proto->n_output;
    if (n_out == 0 || n_out > 16) {
        return UNSUPPORTED("%zu outputs", n_out);
    }
    int64_t sizes[16];
    size_t count = 0;
    bool present = false;
    if (c->opset < 13) {
        st = attr_ints(n, "split", sizes, 16, &count, &present);
    } else if (has_in(n, 1)) {
        st = const_ints(n, 1, "split", sizes, 16, &count);
        present = true;
    }
    if (st) {
        return st;
    }
    if (present && count != n_out) {
        return invalid(c, n, "split has %zu sizes for %zu outputs", count, n_out);
    }
    plx_split_desc d = PLX_SPLIT_DESC_INIT((int32_t)attr_i(n, "axis", 0));
    d.sizes = present ? sizes : NULL;
    onnxi_value *outs[16];
    st = onnxi_emit(c, n, PLX_OP_SPLIT, &d, n->in, 1, (uint32_t)n_out, outs);
    for (size_t i = 0; i < n_out && !st; i++) {
        st = bind_out(c, n, i, outs[i]);
    }
    return st;
}

static plx_status conv_slice(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    int64_t starts[PLX_MAX_RANK], ends[PLX_MAX_RANK], axes[PLX_MAX_RANK], steps[PLX_MAX_RANK];
    size_t ns = 0, ne = 0, na = 0, nst = 0;
    bool has_axes = false, has_steps = false;
    if (c->opset < 10) {
        st = attr_ints(n, "starts", starts, PLX_MAX_RANK, &ns, NULL);
        if (!st) {
            st = attr_ints(n, "ends", ends, PLX_MAX_RANK, &ne, NULL);
        }
        if (!st) {
            st = attr_ints(n, "axes", axes, PLX_MAX_RANK, &na, &has_axes);
        }
    } else {
        st = need_inputs(c, n, 3);
        if (!st) {
            st = const_ints(n, 1, "starts", starts, PLX_MAX_RANK, &ns);
        }
        if (!st) {
            st = const_ints(n, 2, "ends", ends, PLX_MAX_RANK, &ne);
        }
        if (!st && has_in(n, 3)) {
            has_axes = true;
            st = const_ints(n, 3, "axes", axes, PLX_MAX_RANK, &na);
        }
        if (!st && has_in(n, 4)) {
            has_steps = true;
            st = const_ints(n, 4, "steps", steps, PLX_MAX_RANK, &nst);
        }
    }
    if (st) {
        return st;
    }
    if (ne != ns || (has_axes && na != ns) || (has_steps && nst != ns)) {
        return invalid(c, n, "starts, ends, axes and steps have different lengths");
    }
    plx_slice_desc d = PLX_SLICE_DESC_INIT;
    for (size_t i = 0; i < ns; i++) {
        d.starts[i] = starts[i];
        d.ends[i] = ends[i];
        d.axes[i] = (int32_t)(has_axes ? axes[i] : (int64_t)i);
        d.steps[i] = has_steps ? steps[i] : 1;
    }
    d.count = (uint32_t)ns;
    return emit1(c, n, PLX_OP_SLICE, &d, n->in, 1);
}

static plx_status conv_pad(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    char buf[32];
    const char *mode = attr_s(n, "mode", "constant", buf, sizeof buf);
    plx_pad_mode m;
    if (strcmp(mode, "constant") == 0) {
        m = PLX_PAD_CONSTANT;
    } else if (strcmp(mode, "reflect") == 0) {
        m = PLX_PAD_REFLECT;
    } else if (strcmp(mode, "edge") == 0) {
        m = PLX_PAD_EDGE;
    } else {
        return UNSUPPORTED("mode='%s'", mode);
    }
    plx_pad_desc d = PLX_PAD_DESC_INIT(m);
    uint32_t rank = n->in[0]->info.rank;
    int64_t pads[2 * PLX_MAX_RANK], axes[PLX_MAX_RANK];
    size_t np = 0, na = 0;
    if (c->opset < 11) {
        st = attr_ints(n, "pads", pads, 2 * PLX_MAX_RANK, &np, NULL);
        d.value = attr_f(n, "value", 0.0f);
    } else {
        st = need_inputs(c, n, 2);
        if (!st) {
            st = const_ints(n, 1, "pads", pads, 2 * PLX_MAX_RANK, &np);
        }
        if (!st && has_in(n, 2)) {
            st = need_const(n, 2, "constant_value");
            if (!st) {
                d.value = onnxi_elem_count(&n->in[2]->info) ? onnxi_const_f64(n->in[2], 0) : 0.0;
            }
        }
        if (!st && has_in(n, 3)) {
            st = const_ints(n, 3, "axes", axes, PLX_MAX_RANK, &na);
        }
    }
    if (st) {
        return st;
    }
    if (na == 0) {
        if (np != 2 * (size_t)rank) {
            return invalid(c, n, "pads has %zu values for rank %u", np, rank);
        }
        for (uint32_t i = 0; i < rank; i++) {
            d.pads_begin[i] = pads[i];
            d.pads_end[i] = pads[rank + i];
        }
    } else {
        if (np != 2 * na) {
            return invalid(c, n, "pads has %zu values for %zu axes", np, na);
        }
        for (size_t i = 0; i < na; i++) {
            int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
            if (a < 0 || a >= (int64_t)rank) {
                return invalid(c, n, "axes[%zu] = %lld is out of range", i, (long long)axes[i]);
            }
            d.pads_begin[a] = pads[i];
            d.pads_end[a] = pads[na + i];
        }
    }
    return emit1(c, n, PLX_OP_PAD, &d, n->in, 1);
}

static plx_status conv_squeeze(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    bool unsqueeze = strcmp(n->proto->op_type, "Unsqueeze") == 0;
    int64_t axes[PLX_MAX_RANK];
    size_t count = 0;
    if (c->opset < 13) {
        st = attr_ints(n, "axes", axes, PLX_MAX_RANK, &count, NULL);
    } else if (has_in(n, 1)) {
        st = const_ints(n, 1, "axes", axes, PLX_MAX_RANK, &count);
    }
    if (st) {
        return st;
    }
    if (unsqueeze && count == 0) {
        return invalid(c, n, "axes is required");
    }
    plx_axes_desc d = PLX_AXES_DESC_INIT;
    for (size_t i = 0; i < count; i++) {
        d.axes[i] = (int32_t)axes[i];
    }
    d.axis_count = (uint32_t)count;
    return emit1(c, n, unsqueeze ? PLX_OP_UNSQUEEZE : PLX_OP_SQUEEZE, &d, n->in, 1);
}

static plx_status conv_gather(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    plx_axis_desc d = PLX_AXIS_DESC_INIT((int32_t)attr_i(n, "axis", 0));
    return emit1(c, n, PLX_OP_GATHER, &d, n->in, 2);
}

static plx_status conv_expand(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 2);
    int64_t dims[PLX_MAX_RANK];
    size_t rank;
    if (!st) {
        st = const_ints(n, 1, "shape", dims, PLX_MAX_RANK, &rank);
    }
    if (st) {
        return st;
    }
    plx_shape_desc d = PLX_SHAPE_DESC_INIT;
    for (size_t i = 0; i < rank; i++) {
        d.dims[i] = dims[i];
    }
    d.rank = (uint32_t)rank;
    return emit1(c, n, PLX_OP_EXPAND, &d, n->in, 1);
}

static plx_status conv_tile(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 2);
    int64_t reps[PLX_MAX_RANK];
    size_t count;
    if (!st) {
        st = const_ints(n, 1, "repeats", reps, PLX_MAX_RANK, &count);
    }
    if (st) {
        return st;
    }
    if (count != n->in[0]->info.rank) {
        return invalid(c, n, "repeats has %zu values, input has rank %u", count,
                       n->in[0]->info.rank);
    }
    plx_tile_desc d = PLX_TILE_DESC_INIT;
    for (size_t i = 0; i < count; i++) {
        d.repeats[i] = reps[i];
    }
    return emit1(c, n, PLX_OP_TILE, &d, n->in, 1);
}

static plx_status conv_depth_space(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    bool d2s = strcmp(n->proto->op_type, "DepthToSpace") == 0;
    plx_depth_space_desc d = PLX_DEPTH_SPACE_DESC_INIT(attr_i(n, "blocksize", 0));
    char buf[16];
    const char *mode = attr_s(n, "mode", "DCR", buf, sizeof buf);
    if (d2s && strcmp(mode, "CRD") == 0) {
        d.mode = PLX_DEPTH_SPACE_CRD;
    } else if (strcmp(mode, "DCR") != 0) {
        return UNSUPPORTED("mode='%s'", mode);
    }
    return emit1(c, n, d2s ? PLX_OP_DEPTH_TO_SPACE : PLX_OP_SPACE_TO_DEPTH, &d, n->in, 1);
}

static plx_status conv_resize(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    const char *op = n->proto->op_type;
    bool upsample = strcmp(op, "Upsample") == 0;
    const plx_tensor_info *x = &n->in[0]->info;
    if (x->rank != 4) {
        return UNSUPPORTED("input X has rank %u; only rank 4 (NCHW) is supported", x->rank);
    }
    char mbuf[32], cbuf[48], nbuf[32];
    const char *mode = attr_s(n, "mode", "nearest", mbuf, sizeof mbuf);
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_NEAREST);
    if (strcmp(mode, "nearest") == 0) {
        d.mode = PLX_RESIZE_NEAREST;
    } else if (strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0) {
        d.mode = PLX_RESIZE_LINEAR;
    } else {
        return UNSUPPORTED("mode='%s'", mode);
    }
    /* Upsample and Resize-10: asymmetric coordinates, floor for nearest. */
    bool old = upsample || c->opset < 11;
    const char *coord = old ? "asymmetric"
                            : attr_s(n, "coordinate_transformation_mode", "half_pixel", cbuf,
                                     sizeof cbuf);
    static const struct {
        const char *name;
        plx_resize_coord v;
    } coords[] = {{"half_pixel", PLX_RESIZE_COORD_HALF_PIXEL},
                  {"asymmetric", PLX_RESIZE_COORD_ASYMMETRIC},
                  {"align_corners", PLX_RESIZE_COORD_ALIGN_CORNERS},
                  {"pytorch_half_pixel", PLX_RESIZE_COORD_PYTORCH_HALF_PIXEL},
                  {"tf_half_pixel_for_nn", PLX_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN}};
    bool found = false;
    for (size_t i = 0; i < sizeof coords / sizeof coords[0]; i++) {
        if (strcmp(coords[i].name, coord) == 0) {
            d.coord = coords[i].v;
            found = true;
        }
    }
    if (!found) {
        return UNSUPPORTED("coordinate_transformation_mode='%s'", coord);
    }
    const char *nearest = old ? "floor"
                              : attr_s(n, "nearest_mode", "round_prefer_floor", nbuf, sizeof nbuf);
    static const struct {
        const char *name;
        plx_resize_nearest v;
    } nmodes[] = {{"round_prefer_floor", PLX_RESIZE_NEAREST_ROUND_PREFER_FLOOR},
                  {"round_prefer_ceil", PLX_RESIZE_NEAREST_ROUND_PREFER_CEIL},
                  {"floor", PLX_RESIZE_NEAREST_FLOOR},
                  {"ceil", PLX_RESIZE_NEAREST_CEIL}};
    found = false;
    for (size_t i = 0; i < sizeof nmodes / sizeof nmodes[0]; i++) {
        if (strcmp(nmodes[i].name, nearest) == 0) {
            d.nearest = nmodes[i].v;
            found = true;
        }
    }
    if (!found) {
        return UNSUPPORTED("nearest_mode='%s'", nearest);
    }
    if (attr_i(n, "antialias", 0) != 0) {
        return UNSUPPORTED("antialias=1");
    }
    if (attr(n, "axes")) {
        return UNSUPPORTED("the axes attribute");
    }
    char kbuf[32];
    if (strcmp(attr_s(n, "keep_aspect_ratio_policy", "stretch", kbuf, sizeof kbuf), "stretch")) {
        return UNSUPPORTED("keep_aspect_ratio_policy other than 'stretch'");
    }
    /* Scales or sizes: attribute (Upsample-7), input 1 (Upsample-9,
     * Resize-10), inputs 2 and 3 (Resize-11+). */
    double scales[PLX_MAX_RANK];
    size_t ns = 0;
    int64_t sizes[PLX_MAX_RANK];
    size_t nz = 0;
    if (upsample && c->opset < 9) {
        const Onnx__AttributeProto *a = attr(n, "scales");
        if (!a || a->n_floats > PLX_MAX_RANK) {
            return invalid(c, n, "attribute scales is required");
        }
        for (size_t i = 0; i < a->n_floats; i++) {
            scales[i] = a->floats[i];
        }
        ns = a->n_floats;
    } else {
        size_t si = old ? 1 : 2;
        if (has_in(n, si) && onnxi_elem_count(&n->in[si]->info) > 0) {
            st = need_const(n, si, "scales");
            if (st) {
                return st;
            }
            ns = onnxi_elem_count(&n->in[si]->info);
            if (ns > PLX_MAX_RANK) {
                return invalid(c, n, "scales has %zu values", ns);
            }
            for (size_t i = 0; i < ns; i++) {
                scales[i] = onnxi_const_f64(n->in[si], i);
            }
        }
        if (!old && has_in(n, 3) && onnxi_elem_count(&n->in[3]->info) > 0) {
            st = const_ints(n, 3, "sizes", sizes, PLX_MAX_RANK, &nz);
            if (st) {
                return st;
            }
        }
    }
    if (ns) {
        if (ns != 4 || scales[0] != 1.0 || scales[1] != 1.0) {
            return UNSUPPORTED("scales other than [1, 1, h, w]");
        }
        d.scales[0] = (float)scales[2];
        d.scales[1] = (float)scales[3];
    } else if (nz) {
        if (nz != 4 || sizes[0] != x->dims[0] || sizes[1] != x->dims[1]) {
            return UNSUPPORTED("sizes that change N or C");
        }
        d.sizes[0] = sizes[2];
        d.sizes[1] = sizes[3];
    } else {
        return invalid(c, n, "needs scales or sizes");
    }
    return emit1(c, n, PLX_OP_RESIZE, &d, n->in, 1);
}

static plx_status conv_quantize(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    if (attr_i(n, "block_size", 0) != 0) {
        return UNSUPPORTED("blocked quantization (block_size)");
    }
    bool quant = strcmp(n->proto->op_type, "QuantizeLinear") == 0;
    /* Plexus quantizes to 8 bits (and dequantizes int32 biases). */
    plx_dtype q = quant ? (has_in(n, 2) ? n->in[2]->info.dtype : PLX_DTYPE_UINT8)
                        : n->in[0]->info.dtype;
    if (q != PLX_DTYPE_INT8 && q != PLX_DTYPE_UINT8 && (quant || q != PLX_DTYPE_INT32)) {
        return UNSUPPORTED("%s quantized data", plx_dtype_name(q));
    }
    plx_dtype out = quant ? (has_in(n, 2) ? n->in[2]->info.dtype : PLX_DTYPE_UINT8)
                          : PLX_DTYPE_FLOAT32;
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(out);
    d.axis = (int32_t)attr_i(n, "axis", 1);
    return emit1(c, n, quant ? PLX_OP_QUANTIZE : PLX_OP_DEQUANTIZE, &d, n->in,
                 has_in(n, 2) ? 3 : 2);
}

/* ---- recurrent ---------------------------------------------------------- */

static plx_status rnn_activation(const char *name, float alpha, float beta, bool has_alpha,
                                 bool has_beta, plx_rnn_activation *out) {
    static const struct {
        const char *name;
        plx_activation_func f;
    } acts[] = {{"Relu", PLX_ACT_RELU}, {"Tanh", PLX_ACT_TANH}, {"Sigmoid", PLX_ACT_SIGMOID},
                {"Affine", PLX_ACT_AFFINE}, {"LeakyRelu", PLX_ACT_LEAKY_RELU},
                {"ThresholdedRelu", PLX_ACT_THRESHOLDED_RELU},
                {"ScaledTanh", PLX_ACT_SCALED_TANH}, {"HardSigmoid", PLX_ACT_HARD_SIGMOID},
                {"Elu", PLX_ACT_ELU}, {"Softsign", PLX_ACT_SOFTSIGN},
                {"Softplus", PLX_ACT_SOFTPLUS}};
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        if (strcmp(acts[i].name, name) == 0) {
            out->func = acts[i].f;
            out->alpha = has_alpha ? alpha : plx_activation_default_alpha(acts[i].f);
            out->beta = has_beta ? beta : plx_activation_default_beta(acts[i].f);
            return NULL;
        }
    }
    return UNSUPPORTED("activation '%s'", name);
}

/* A zero-filled constant of the given shape. */
static plx_status zeros(onnxi_ctx *c, const onnxi_node *n, plx_dtype dt, uint32_t rank,
                        const int64_t *dims, onnxi_value **out) {
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = dt;
    info.rank = rank;
    for (uint32_t i = 0; i < rank; i++) {
        info.dims[i] = dims[i];
    }
    void *d;
    plx_status st = alloc_const(c, n, &info, &d);
    return st ? st : onnxi_const_take(c, &info, d, out);
}

static plx_status conv_rnn(onnxi_ctx *c, onnxi_node *n) {
    bool lstm = strcmp(n->proto->op_type, "LSTM") == 0;
    plx_status st = need_inputs(c, n, 3);
    if (st) {
        return st;
    }
    if (attr_i(n, "layout", 0) != 0) {
        return UNSUPPORTED("layout=1 (batch first)");
    }
    const plx_tensor_info *x = &n->in[0]->info;
    if (x->rank != 3) {
        return invalid(c, n, "X has rank %u, expected 3", x->rank);
    }
    char dbuf[32];
    const char *dir = attr_s(n, "direction", "forward", dbuf, sizeof dbuf);
    plx_rnn_direction direction;
    if (strcmp(dir, "forward") == 0) {
        direction = PLX_RNN_FORWARD;
    } else if (strcmp(dir, "reverse") == 0) {
        direction = PLX_RNN_REVERSE;
    } else if (strcmp(dir, "bidirectional") == 0) {
        direction = PLX_RNN_BIDIRECTIONAL;
    } else {
        return invalid(c, n, "direction '%s'", dir);
    }
    int64_t num_dir = direction == PLX_RNN_BIDIRECTIONAL ? 2 : 1;
    int64_t hidden = attr_i(n, "hidden_size", 0);
    if (hidden <= 0 && n->in[2]->info.rank == 3) {
        hidden = n->in[2]->info.dims[2];
    }
    if (hidden <= 0) {
        return invalid(c, n, "hidden_size is required");
    }
    uint32_t per_dir = lstm ? 3 : 2;
    /* Both directions' activations in a row, as the descriptors hold them. */
    plx_rnn_activation acts[6];
    plx_rnn_default_activations(acts, per_dir);
    const Onnx__AttributeProto *an = attr(n, "activations");
    if (an && an->n_strings) {
        if (an->n_strings != per_dir * (size_t)num_dir) {
            return invalid(c, n, "activations has %zu names, expected %u", an->n_strings,
                           (unsigned)(per_dir * num_dir));
        }
        const Onnx__AttributeProto *aa = attr(n, "activation_alpha");
        const Onnx__AttributeProto *ab = attr(n, "activation_beta");
        for (size_t k = 0; k < an->n_strings; k++) {
            char name[32];
            size_t len = an->strings[k].len < sizeof name - 1 ? an->strings[k].len : sizeof name - 1;
            memcpy(name, an->strings[k].data, len);
            name[len] = '\0';
            bool ha = aa && k < aa->n_floats, hb = ab && k < ab->n_floats;
            st = rnn_activation(name, ha ? aa->floats[k] : 0, hb ? ab->floats[k] : 0, ha, hb,
                                &acts[k]);
            if (st) {
                return st;
            }
        }
    }
    int64_t seq = x->dims[0], batch = x->dims[1];
    /* Absent optional inputs get ONNX's defaults. */
    onnxi_value *ins[8];
    for (size_t i = 0; i < 8; i++) {
        ins[i] = has_in(n, i) ? n->in[i] : NULL;
    }
    int64_t gates = lstm ? 4 : 3;
    if (!ins[3]) {
        int64_t dims[2] = {num_dir, 2 * gates * hidden};
        st = zeros(c, n, PLX_DTYPE_FLOAT32, 2, dims, &ins[3]);
    }
    if (!st && !ins[4]) {
        int64_t dims[1] = {batch};
        st = zeros(c, n, PLX_DTYPE_INT32, 1, dims, &ins[4]);
        if (!st) {
            for (int64_t b = 0; b < batch; b++) {
                ((int32_t *)ins[4]->data)[b] = (int32_t)seq;
            }
        }
    } else if (!st && ins[4]->info.dtype != PLX_DTYPE_INT32) {
        plx_cast_desc cd = PLX_CAST_DESC_INIT(PLX_DTYPE_INT32);
        st = onnxi_emit(c, n, PLX_OP_CAST, &cd, &n->in[4], 1, 1, &ins[4]);
    }
    int64_t state_dims[3] = {num_dir, batch, hidden};
    if (!st && !ins[5]) {
        st = zeros(c, n, PLX_DTYPE_FLOAT32, 3, state_dims, &ins[5]);
    }
    if (!st && lstm && !ins[6]) {
        st = zeros(c, n, PLX_DTYPE_FLOAT32, 3, state_dims, &ins[6]);
    }
    if (!st && lstm && !ins[7]) {
        int64_t dims[2] = {num_dir, 3 * hidden};
        st = zeros(c, n, PLX_DTYPE_FLOAT32, 2, dims, &ins[7]);
    }
    if (st) {
        return st;
    }
    onnxi_value *outs[3];
    if (lstm) {
        plx_lstm_desc d;
        memset(&d, 0, sizeof d);
        d.struct_size = sizeof d;
        d.direction = direction;
        d.hidden_size = hidden;
        memcpy(d.activations, acts, sizeof d.activations); /* [2][3] */
        d.clip = attr_f(n, "clip", 0.0f);
        d.input_forget = attr_i(n, "input_forget", 0) != 0;
        st = onnxi_emit(c, n, PLX_OP_LSTM, &d, ins, 8, 3, outs);
    } else {
        plx_gru_desc d;
        memset(&d, 0, sizeof d);
        d.struct_size = sizeof d;
        d.direction = direction;
        d.hidden_size = hidden;
        memcpy(d.activations, acts, sizeof d.activations); /* [2][2] */
        d.clip = attr_f(n, "clip", 0.0f);
        d.linear_before_reset = attr_i(n, "linear_before_reset", 0) != 0;
        st = onnxi_emit(c, n, PLX_OP_GRU, &d, ins, 6, 2, outs);
    }
    for (size_t i = 0; i < (lstm ? 3u : 2u) && !st; i++) {
        st = bind_out(c, n, i, outs[i]);
    }
    return st;
}

/* ---- control flow ------------------------------------------------------- */

static plx_status conv_if(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = need_inputs(c, n, 1);
    if (!st) {
        st = need_const(n, 0, "cond");
    }
    if (st) {
        return st;
    }
    if (onnxi_elem_count(&n->in[0]->info) != 1) {
        return invalid(c, n, "cond must have one element");
    }
    bool cond = onnxi_const_i64(n->in[0], 0) != 0;
    const Onnx__AttributeProto *a = attr(n, cond ? "then_branch" : "else_branch");
    if (!a || !a->g) {
        return invalid(c, n, "attribute %s is required", cond ? "then_branch" : "else_branch");
    }
    const Onnx__GraphProto *g = a->g;
    if (g->n_output != n->proto->n_output) {
        return invalid(c, n, "the branch has %zu outputs, the node %zu", g->n_output,
                       n->proto->n_output);
    }
    st = onnxi_import_initializers(c, g);
    if (!st) {
        st = onnxi_import_nodes(c, g);
    }
    for (size_t i = 0; i < g->n_output && !st; i++) {
        const char *name = g->output[i]->name;
        onnxi_value *v = name ? onnxi_map_get(&c->values, name) : NULL;
        if (!v) {
            return invalid(c, n, "branch output '%s' is not defined", name ? name : "");
        }
        st = bind_out(c, n, i, v);
    }
    return st;
}

/* ---- dispatch ----------------------------------------------------------- */

static const struct {
    const char *op;
    convert_fn fn;
    int64_t since; /* the first opset with this form */
} converters[] = {
    {"Abs", conv_unary, 1}, {"Acos", conv_unary, 7}, {"Acosh", conv_unary, 9},
    {"Add", conv_binary, 1}, {"And", conv_binary, 1}, {"ArgMax", conv_arg_reduce, 1},
    {"ArgMin", conv_arg_reduce, 1}, {"Asin", conv_unary, 7}, {"Asinh", conv_unary, 9},
    {"Atan", conv_unary, 7}, {"Atanh", conv_unary, 9}, {"AveragePool", conv_pool, 1},
    {"BatchNormalization", conv_batch_norm, 1}, {"Cast", conv_cast, 1},
    {"CastLike", conv_cast, 15}, {"Ceil", conv_unary, 1}, {"Celu", conv_activation, 12},
    {"Clip", conv_clip, 1}, {"Concat", conv_concat, 1}, {"Constant", conv_constant, 1},
    {"ConstantOfShape", conv_constant_of_shape, 9}, {"Conv", conv_conv, 1},
    {"ConvTranspose", conv_conv, 1}, {"Cos", conv_unary, 7}, {"Cosh", conv_unary, 9},
    {"DepthToSpace", conv_depth_space, 1}, {"DequantizeLinear", conv_quantize, 10},
    {"Div", conv_binary, 1}, {"Dropout", conv_identity, 1}, {"Elu", conv_activation, 1},
    {"Equal", conv_binary, 1}, {"Erf", conv_unary, 9}, {"Exp", conv_unary, 1},
    {"Expand", conv_expand, 8}, {"Flatten", conv_flatten, 1}, {"Floor", conv_unary, 1},
    {"GRU", conv_rnn, 1}, {"Gather", conv_gather, 1}, {"Gelu", conv_activation, 20},
    {"Gemm", conv_gemm, 1}, {"GlobalAveragePool", conv_global_pool, 1},
    {"GlobalMaxPool", conv_global_pool, 1}, {"Greater", conv_binary, 1},
    {"GreaterOrEqual", conv_binary, 12}, {"HardSigmoid", conv_activation, 1},
    {"HardSwish", conv_activation, 14}, {"Identity", conv_identity, 1}, {"If", conv_if, 1},
    {"InstanceNormalization", conv_instance_norm, 1},
    {"LSTM", conv_rnn, 1}, {"LayerNormalization", conv_layer_norm, 17},
    {"LeakyRelu", conv_activation, 1}, {"Less", conv_binary, 1},
    {"LessOrEqual", conv_binary, 12}, {"Log", conv_unary, 1},
    {"LogSoftmax", conv_softmax, 1}, {"MatMul", conv_matmul, 1}, {"Max", conv_variadic, 1},
    {"MaxPool", conv_pool, 1}, {"Mean", conv_variadic, 1}, {"Min", conv_variadic, 1},
    {"Mish", conv_activation, 18}, {"Mod", conv_binary, 10}, {"Mul", conv_binary, 1},
    {"Neg", conv_unary, 1}, {"Not", conv_unary, 1}, {"Or", conv_binary, 1},
    {"PRelu", conv_binary, 1}, {"Pad", conv_pad, 1}, {"Pow", conv_binary, 1},
    {"QuantizeLinear", conv_quantize, 10}, {"Range", conv_range, 11},
    {"Reciprocal", conv_unary, 1}, {"ReduceL1", conv_reduce, 1},
    {"ReduceL2", conv_reduce, 1}, {"ReduceLogSum", conv_reduce, 1},
    {"ReduceLogSumExp", conv_reduce, 1}, {"ReduceMax", conv_reduce, 1},
    {"ReduceMean", conv_reduce, 1}, {"ReduceMin", conv_reduce, 1},
    {"ReduceProd", conv_reduce, 1}, {"ReduceSum", conv_reduce, 1},
    {"ReduceSumSquare", conv_reduce, 1}, {"Relu", conv_activation, 1},
    {"Reshape", conv_reshape, 1}, {"Resize", conv_resize, 10}, {"Round", conv_unary, 11},
    {"Selu", conv_activation, 1}, {"Shape", conv_shape, 1}, {"Sigmoid", conv_activation, 1},
    {"Sign", conv_unary, 9}, {"Sin", conv_unary, 7}, {"Sinh", conv_unary, 9},
    {"Size", conv_size, 1}, {"Slice", conv_slice, 1}, {"Softmax", conv_softmax, 1},
    {"Softplus", conv_activation, 1}, {"Softsign", conv_activation, 1},
    {"SpaceToDepth", conv_depth_space, 1}, {"Split", conv_split, 1},
    {"Sqrt", conv_unary, 1}, {"Squeeze", conv_squeeze, 1}, {"Sub", conv_binary, 1},
    {"Sum", conv_variadic, 1}, {"Tan", conv_unary, 7}, {"Tanh", conv_activation, 1},
    {"ThresholdedRelu", conv_activation, 10}, {"Tile", conv_tile, 6}, {"TopK", conv_topk, 1},
    {"Transpose", conv_transpose, 1}, {"Unsqueeze", conv_squeeze, 1},
    {"Upsample", conv_resize, 7}, {"Where", conv_where, 9}, {"Xor", conv_binary, 1},
};

bool onnxi_op_known(const char *op) {
    for (size_t i = 0; i < sizeof converters / sizeof converters[0]; i++) {
        if (strcmp(converters[i].op, op) == 0) {
            return true;
        }
    }
    return false;
}

plx_status onnxi_convert(onnxi_ctx *c, onnxi_node *n) {
    const char *op = n->proto->op_type;
    for (size_t i = 0; i < sizeof converters / sizeof converters[0]; i++) {
        if (strcmp(converters[i].op, op) == 0) {
            if (c->opset < converters[i].since) {
                return UNSUPPORTED("the operator does not exist in opset %lld",
                                   (long long)c->opset);
            }
            return converters[i].fn(c, n);
        }
    }
    return UNSUPPORTED("operator not supported");
}
