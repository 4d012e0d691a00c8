/* What the ONNX operator converters share: the attribute readers (node
 * attributes and the constant inputs that act as attributes), input and
 * output checks, binding outputs and the small constants the importer makes.
 * Kept apart from the converters so that each family of operators (the
 * convert_*.c files) reads its nodes the same way. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

plx_status onnxi_invalid(const onnxi_ctx *c, const onnxi_node *n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *msg = onnxi_vasprintf(fmt, ap);
    va_end(ap);
    plx_status st = plx_status_create(PLX_INVALID_ARGUMENT, "%s: node '%s' (%s): %s", c->file,
                                      n->name, n->proto->op_type, msg ? msg : "invalid");
    free(msg);
    return st;
}

/* Zeroed memory for a constant the importer makes, within
 * ONNXI_MAX_CONST_BYTES. */
plx_status onnxi_alloc_const(const onnxi_ctx *c, const onnxi_node *n,
                             const plx_tensor_info *info, void **out) {
    size_t bytes;
    if (!plx_tensor_info_byte_size(info, &bytes) || bytes > ONNXI_MAX_CONST_BYTES) {
        return onnxi_invalid(c, n, "the constant it makes would exceed %zu bytes",
                             ONNXI_MAX_CONST_BYTES);
    }
    *out = calloc(1, bytes ? bytes : 1);
    return *out ? NULL : plx_status_create(PLX_OUT_OF_MEMORY, "out of memory");
}

/* ---- attributes --------------------------------------------------------- */

const Onnx__AttributeProto *onnxi_attr(const onnxi_node *n, const char *name) {
    for (size_t i = 0; i < n->proto->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->proto->attribute[i];
        if (a->name && strcmp(a->name, name) == 0) {
            return a;
        }
    }
    return NULL;
}

/* The attribute `name` when it has `type` (or says no type, as files
 * written before the field did); one of another type is noted in
 * n->bad_attribute (the import then refuses the node) and read as
 * absent. */
static const Onnx__AttributeProto *attr_typed(const onnxi_node *n, const char *name,
                                              Onnx__AttributeProto__AttributeType type) {
    const Onnx__AttributeProto *a = onnxi_attr(n, name);
    if (a && a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED &&
        a->type != type) {
        if (n->bad_attribute && !*n->bad_attribute) {
            *n->bad_attribute = a;
        }
        return NULL;
    }
    return a;
}

int64_t onnxi_attr_i(const onnxi_node *n, const char *name, int64_t def) {
    const Onnx__AttributeProto *a = attr_typed(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    return a && a->has_i ? a->i : def;
}

int32_t onnxi_attr_i32(const onnxi_node *n, const char *name, int32_t def) {
    const Onnx__AttributeProto *a = attr_typed(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (!a || !a->has_i) {
        return def;
    }
    if (a->i < INT32_MIN || a->i > INT32_MAX) {
        if (n->bad_range && !*n->bad_range) {
            *n->bad_range = a;
        }
        return def;
    }
    return (int32_t)a->i;
}

float onnxi_attr_f(const onnxi_node *n, const char *name, float def) {
    const Onnx__AttributeProto *a =
        attr_typed(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    return a && a->has_f ? a->f : def;
}

/* The string attribute copied into buf (truncated), or def. */
const char *onnxi_attr_s(const onnxi_node *n, const char *name, const char *def, char *buf,
                         size_t size) {
    const Onnx__AttributeProto *a =
        attr_typed(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (!a || !a->has_s) {
        return def;
    }
    size_t len = a->s.len < size - 1 ? a->s.len : size - 1;
    if (len > 0) { /* an empty string's data may be NULL, which memcpy must not get */
        memcpy(buf, a->s.data, len);
    }
    buf[len] = '\0';
    return buf;
}

/* The ints attribute: count (0 when absent); *present tells them apart. */
plx_status onnxi_attr_ints(const onnxi_node *n, const char *name, int64_t *out, size_t max,
                           size_t *count, bool *present) {
    const Onnx__AttributeProto *a =
        attr_typed(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    *count = 0;
    if (present) {
        *present = a != NULL;
    }
    if (!a) {
        return NULL;
    }
    if (a->n_ints > max) {
        return ONNXI_UNSUPPORTED("attribute %s has %zu values; at most %zu are supported", name,
                                 a->n_ints, max);
    }
    for (size_t i = 0; i < a->n_ints; i++) {
        out[i] = a->ints[i];
    }
    *count = a->n_ints;
    return NULL;
}

/* ---- attributes against the tensors they describe ------------------------ */

plx_status onnxi_check_count(const onnxi_ctx *c, const onnxi_node *n, const char *what,
                             size_t count, size_t want, const char *per) {
    if (count == want) {
        return NULL;
    }
    return onnxi_invalid(c, n, "%s has %zu values; it needs %zu (%s)", what, count, want, per);
}

plx_status onnxi_attr_ints_n(const onnxi_ctx *c, const onnxi_node *n, const char *name,
                             int64_t *out, size_t want, const char *per, bool *present) {
    const Onnx__AttributeProto *a =
        attr_typed(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    *present = a != NULL;
    if (!a) {
        return NULL;
    }
    char what[80];
    snprintf(what, sizeof what, "attribute '%s'", name);
    plx_status st = onnxi_check_count(c, n, what, a->n_ints, want, per);
    for (size_t i = 0; !st && i < want; i++) {
        out[i] = a->ints[i];
    }
    return st;
}

plx_status onnxi_axes(const onnxi_ctx *c, const onnxi_node *n, const char *what,
                      const int64_t *axes, size_t count, uint32_t rank, int32_t *out) {
    /* rank is at most an input's rank plus the PLX_MAX_RANK axes that
     * Unsqueeze may add */
    bool seen[2 * PLX_MAX_RANK] = {false};
    for (size_t i = 0; i < count; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + (int64_t)rank : axes[i];
        if (a < 0 || a >= (int64_t)rank) {
            return onnxi_invalid(c, n, "%s entry %zu = %lld is out of range [-%u, %u] for rank %u",
                                 what, i, (long long)axes[i], rank, rank - 1, rank);
        }
        if (seen[a]) {
            return onnxi_invalid(c, n, "%s entry %zu = %lld repeats axis %lld", what, i,
                                 (long long)axes[i], (long long)a);
        }
        seen[a] = true;
        out[i] = (int32_t)a;
    }
    return NULL;
}

/* An input that acts as an attribute must be a constant; one that is not
 * is noted in n->needed (the import traces it to graph inputs). */
plx_status onnxi_need_const(onnxi_node *n, size_t i, const char *role) {
    const onnxi_value *v = i < n->n_in ? n->in[i] : NULL;
    if (v && v->kind != ONNXI_CONST) {
        n->needed = v;
        n->needed_name = n->proto->input[i];
        return ONNXI_UNSUPPORTED(
            "input %zu (%s) must be known at import, but it is computed from the "
            "graph's inputs",
            i, role);
    }
    return NULL;
}

/* Reads a constant integer input into out (count elements). */
plx_status onnxi_const_ints(onnxi_node *n, size_t i, const char *role, int64_t *out,
                            size_t max, size_t *count) {
    plx_status st = onnxi_need_const(n, i, role);
    if (st) {
        return st;
    }
    const onnxi_value *v = n->in[i];
    size_t cnt = onnxi_elem_count(&v->info);
    if (cnt > max) {
        return ONNXI_UNSUPPORTED("input %zu (%s) has %zu values; at most %zu are supported", i,
                                 role, cnt, max);
    }
    for (size_t k = 0; k < cnt; k++) {
        out[k] = onnxi_const_i64(v, k);
    }
    *count = cnt;
    return NULL;
}

bool onnxi_has_in(const onnxi_node *n, size_t i) {
    return i < n->n_in && n->in[i] != NULL;
}

plx_status onnxi_need_inputs(const onnxi_ctx *c, const onnxi_node *n, size_t min) {
    for (size_t i = 0; i < min; i++) {
        if (!onnxi_has_in(n, i)) {
            return onnxi_invalid(c, n, "input %zu is required", i);
        }
    }
    return NULL;
}

plx_status onnxi_bind_out(onnxi_ctx *c, onnxi_node *n, size_t k, onnxi_value *v) {
    if (k >= n->proto->n_output || !n->proto->output[k] || !n->proto->output[k][0]) {
        return NULL; /* output not used */
    }
    return onnxi_bind(c, n->proto->output[k], v);
}

/* Emits a single-output layer and binds output 0. */
plx_status onnxi_emit1(onnxi_ctx *c, onnxi_node *n, plx_op op, const void *desc,
                       onnxi_value *const *inputs, uint32_t n_in) {
    onnxi_value *out;
    plx_status st = onnxi_emit(c, n, op, desc, inputs, n_in, 1, &out);
    return st ? st : onnxi_bind_out(c, n, 0, out);
}

/* Only output 0 may be used. */
plx_status onnxi_single_output(const onnxi_node *n, const char *what) {
    if (n->n_out > 1) {
        return ONNXI_UNSUPPORTED("output %zu (%s) is not supported", n->n_out - 1, what);
    }
    return NULL;
}

plx_status onnxi_scalar_const(onnxi_ctx *c, plx_dtype dt, double value, onnxi_value **out) {
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = dt;
    uint8_t buf[8];
    /* value converted as a cast converts a float (plexus/tensor.h) */
    if (plx_dtype_bytes_from_double(value, dt, buf) == 0) {
        return ONNXI_UNSUPPORTED("a constant of type %s is needed", plx_dtype_name(dt));
    }
    return onnxi_const_copy(c, &info, buf, out);
}
plx_status onnxi_reshape_to(onnxi_ctx *c, onnxi_node *n, onnxi_value *x,
                            const plx_tensor_info *shape, onnxi_value **out) {
    plx_reshape_desc d = PLX_RESHAPE_DESC_INIT;
    d.rank = shape->rank;
    for (uint32_t i = 0; i < shape->rank; i++) {
        d.dims[i] = shape->dims[i];
    }
    d.allow_zero = true;
    return onnxi_emit(c, n, PLX_OP_RESHAPE, &d, &x, 1, 1, out);
}
/* A zero-filled constant of the given shape. */
plx_status onnxi_zeros(onnxi_ctx *c, const onnxi_node *n, plx_dtype dt, uint32_t rank,
                       const int64_t *dims, onnxi_value **out) {
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = dt;
    info.rank = rank;
    for (uint32_t i = 0; i < rank; i++) {
        info.dims[i] = dims[i];
    }
    void *d;
    plx_status st = onnxi_alloc_const(c, n, &info, &d);
    return st ? st : onnxi_const_take(c, &info, d, out);
}
