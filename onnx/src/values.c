/* The importer's value table, constants, and the one place that adds layers
 * to the network or folds them into constants with the reference kernels. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* ---- heap strings (the C library's vasprintf) --------------------------- */

char *onnxi_vasprintf(const char *fmt, va_list ap) {
    char *s = NULL;
    return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

char *onnxi_asprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = onnxi_vasprintf(fmt, ap);
    va_end(ap);
    return s;
}

/* ---- string map (open addressing, FNV-1a) ------------------------------- */

static size_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    return (size_t)h;
}

void *onnxi_map_get(const onnxi_map *m, const char *key) {
    if (m->cap == 0) {
        return NULL;
    }
    for (size_t i = hash_str(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) {
            return NULL;
        }
        if (strcmp(m->keys[i], key) == 0) {
            return m->vals[i];
        }
    }
}

static bool map_grow(onnxi_map *m) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    char **keys = calloc(cap, sizeof *keys);
    void **vals = calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return false;
    }
    for (size_t j = 0; j < m->cap; j++) {
        if (m->keys[j]) {
            size_t i = hash_str(m->keys[j]) & (cap - 1);
            while (keys[i]) {
                i = (i + 1) & (cap - 1);
            }
            keys[i] = m->keys[j];
            vals[i] = m->vals[j];
        }
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return true;
}

bool onnxi_map_put(onnxi_map *m, const char *key, void *val) {
    if ((m->count + 1) * 2 > m->cap && !map_grow(m)) {
        return false;
    }
    size_t i = hash_str(key) & (m->cap - 1);
    while (m->keys[i]) {
        if (strcmp(m->keys[i], key) == 0) {
            m->vals[i] = val;
            return true;
        }
        i = (i + 1) & (m->cap - 1);
    }
    char *k = strdup(key);
    if (!k) {
        return false;
    }
    m->keys[i] = k;
    m->vals[i] = val;
    m->count++;
    return true;
}

void onnxi_map_remove(onnxi_map *m, const char *key) {
    if (m->cap == 0) {
        return;
    }
    size_t mask = m->cap - 1, i = hash_str(key) & mask;
    while (m->keys[i] && strcmp(m->keys[i], key) != 0) {
        i = (i + 1) & mask;
    }
    if (!m->keys[i]) {
        return;
    }
    free(m->keys[i]);
    m->keys[i] = NULL;
    m->vals[i] = NULL;
    m->count--;
    /* Backward shift: move up each later key of the run whose home slot
     * does not lie cyclically in (i, j], so that lookups still find it. */
    for (size_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
        size_t home = hash_str(m->keys[j]) & mask;
        bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (!stays) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            m->keys[j] = NULL;
            m->vals[j] = NULL;
            i = j;
        }
    }
}

void onnxi_map_free(onnxi_map *m) {
    for (size_t i = 0; i < m->cap; i++) {
        free(m->keys[i]);
    }
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- values ------------------------------------------------------------- */

static bool grow(void ***arr, size_t *cap, size_t need) {
    if (need <= *cap) {
        return true;
    }
    size_t n = *cap ? *cap * 2 : 32;
    while (n < need) {
        n *= 2;
    }
    void **p = realloc(*arr, n * sizeof *p);
    if (!p) {
        return false;
    }
    *arr = p;
    *cap = n;
    return true;
}

onnxi_value *onnxi_value_new(onnxi_ctx *c, onnxi_value_kind kind, const plx_tensor_info *info) {
    if (!grow((void ***)&c->owned, &c->owned_cap, c->owned_count + 1)) {
        return NULL;
    }
    onnxi_value *v = calloc(1, sizeof *v);
    if (!v) {
        return NULL;
    }
    v->kind = kind;
    if (info) {
        v->info = *info;
    }
    c->owned[c->owned_count++] = v;
    return v;
}

static plx_status oom(onnxi_ctx *c) {
    return plx_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", c->file);
}

plx_status onnxi_const_take(onnxi_ctx *c, const plx_tensor_info *info, void *data,
                            onnxi_value **out) {
    if (!grow(&c->blobs, &c->blob_cap, c->blob_count + 1)) {
        free(data);
        return oom(c);
    }
    c->blobs[c->blob_count++] = data;
    onnxi_value *v = onnxi_value_new(c, ONNXI_CONST, info);
    if (!v) {
        return oom(c);
    }
    v->info.quant.kind = PLX_QUANT_NONE;
    v->data = data;
    *out = v;
    return NULL;
}

plx_status onnxi_const_borrow(onnxi_ctx *c, const plx_tensor_info *info, const void *data,
                              onnxi_value **out) {
    onnxi_value *v = onnxi_value_new(c, ONNXI_CONST, info);
    if (!v) {
        return oom(c);
    }
    v->info.quant.kind = PLX_QUANT_NONE;
    v->data = (void *)data;
    c->borrowed = true;
    *out = v;
    return NULL;
}

plx_status onnxi_const_copy(onnxi_ctx *c, const plx_tensor_info *info, const void *data,
                            onnxi_value **out) {
    size_t bytes;
    if (!plx_tensor_info_byte_size(info, &bytes) || bytes > ONNXI_MAX_CONST_BYTES) {
        return plx_status_create(PLX_INVALID_ARGUMENT, "%s: a constant of more than %zu bytes",
                                 c->file, ONNXI_MAX_CONST_BYTES);
    }
    void *copy = malloc(bytes ? bytes : 1);
    if (!copy) {
        return oom(c);
    }
    if (bytes) {
        memcpy(copy, data, bytes);
    }
    return onnxi_const_take(c, info, copy, out);
}

plx_status onnxi_bind(onnxi_ctx *c, const char *name, onnxi_value *v) {
    return onnxi_map_put(&c->values, name, v) ? NULL : oom(c);
}

char *onnxi_unique_name(onnxi_ctx *c, const char *base) {
    /* The suffixes already tried for `base` are not tried again (an
     * unrolled loop names its body's layers thousands of times). */
    uintptr_t next = (uintptr_t)onnxi_map_get(&c->name_suffixes, base);
    char *name = next ? onnxi_asprintf("%s#%lu", base, (unsigned long)next) : strdup(base);
    for (next = next ? next + 1 : 1; name && onnxi_map_get(&c->layer_names, name); next++) {
        free(name);
        name = onnxi_asprintf("%s#%lu", base, (unsigned long)next);
    }
    if (name && (!onnxi_map_put(&c->layer_names, name, c) ||
                 !onnxi_map_put(&c->name_suffixes, base, (void *)next))) {
        free(name);
        return NULL;
    }
    return name;
}

size_t onnxi_elem_count(const plx_tensor_info *info) {
    size_t n = 0;
    return plx_tensor_info_element_count(info, &n) ? n : 0;
}

bool onnxi_dtype_is_float(plx_dtype dt) {
    return dt == PLX_DTYPE_FLOAT32 || dt == PLX_DTYPE_FLOAT16 || dt == PLX_DTYPE_BFLOAT16 ||
           dt == PLX_DTYPE_FLOAT64;
}

int64_t onnxi_const_i64(const onnxi_value *v, size_t i) {
    const void *d = v->data;
    switch (v->info.dtype) {
    case PLX_DTYPE_INT64: return ((const int64_t *)d)[i];
    case PLX_DTYPE_INT32: return ((const int32_t *)d)[i];
    case PLX_DTYPE_INT16: return ((const int16_t *)d)[i];
    case PLX_DTYPE_INT8:
    case PLX_DTYPE_INT4: return ((const int8_t *)d)[i];
    case PLX_DTYPE_UINT4: return ((const uint8_t *)d)[i];
    case PLX_DTYPE_UINT8:
    case PLX_DTYPE_BOOL: return ((const uint8_t *)d)[i];
    case PLX_DTYPE_UINT16: return ((const uint16_t *)d)[i];
    case PLX_DTYPE_UINT32: return ((const uint32_t *)d)[i];
    case PLX_DTYPE_UINT64: {
        /* past INT64_MAX saturates: a huge count or index stays huge */
        uint64_t u = ((const uint64_t *)d)[i];
        return u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
    }
    case PLX_DTYPE_FLOAT32:
    case PLX_DTYPE_FLOAT16:
    case PLX_DTYPE_BFLOAT16:
    case PLX_DTYPE_FLOAT64:
    case PLX_DTYPE_FLOAT8E4M3FN:
    case PLX_DTYPE_FLOAT8E4M3FNUZ:
    case PLX_DTYPE_FLOAT8E5M2:
    case PLX_DTYPE_FLOAT8E5M2FNUZ:
        /* truncated, saturated, NaN 0: C leaves the plain conversion
         * undefined out of range */
        return plx_dtype_int_from_double(onnxi_const_f64(v, i), PLX_DTYPE_INT64);
    case PLX_DTYPE_INVALID: break;
    }
    return 0;
}

double onnxi_const_f64(const onnxi_value *v, size_t i) {
    const void *d = v->data;
    switch (v->info.dtype) {
    case PLX_DTYPE_FLOAT32: return ((const float *)d)[i];
    case PLX_DTYPE_FLOAT16: return plx_float16_to_float32(((const uint16_t *)d)[i]);
    case PLX_DTYPE_BFLOAT16: return plx_bfloat16_to_float32(((const uint16_t *)d)[i]);
    case PLX_DTYPE_FLOAT64: return ((const double *)d)[i];
    case PLX_DTYPE_UINT64: return (double)((const uint64_t *)d)[i];
    case PLX_DTYPE_FLOAT8E4M3FN:
    case PLX_DTYPE_FLOAT8E4M3FNUZ:
    case PLX_DTYPE_FLOAT8E5M2:
    case PLX_DTYPE_FLOAT8E5M2FNUZ:
        return plx_float8_to_float32(((const uint8_t *)d)[i], v->info.dtype);
    default: return (double)onnxi_const_i64(v, i);
    }
}

/* ---- layers ------------------------------------------------------------- */

plx_status onnxi_materialise(onnxi_ctx *c, onnxi_value *v, const char *hint) {
    if (v->has_layer) {
        return NULL;
    }
    if (v->kind != ONNXI_CONST) {
        return plx_status_create(PLX_INTERNAL, "%s: value for '%s' has no layer", c->file, hint);
    }
    char *base = onnxi_asprintf("%s.const", hint);
    char *name = base ? onnxi_unique_name(c, base) : NULL;
    free(base);
    if (!name) {
        return oom(c);
    }
    plx_status st = plx_network_add_constant(c->net, name, &v->info, v->data, PLX_CONSTANT_BORROW,
                                             &v->layer);
    free(name);
    if (st) {
        return st;
    }
    v->has_layer = true;
    v->slot = 0;
    return NULL;
}

/* Infers the outputs, reporting errors against the node. */
static plx_status infer(onnxi_ctx *c, onnxi_node *n, const char *lname, plx_op op,
                        const void *desc, const plx_tensor_info *in, uint32_t n_in,
                        plx_tensor_info *out, uint32_t n_out) {
    plx_status st = plx_infer_layer(lname, op, desc, in, n_in, out, n_out);
    if (!st) {
        return NULL;
    }
    plx_status wrapped = plx_status_create(plx_status_get_code(st), "%s: node '%s' (%s): %s",
                                           c->file, n->name, n->proto->op_type,
                                           plx_status_get_message(st));
    plx_status_free(st);
    return wrapped;
}

/* Runs the layer with the reference kernels (plx_fold_layer,
 * plexus/layer_eval.h) into new constants. *out_folded false when they
 * cannot (then the layer is added to the network instead). */
static plx_status fold(onnxi_ctx *c, onnxi_node *n, const char *lname, plx_op op,
                       const void *desc, onnxi_value *const *inputs, uint32_t n_in,
                       const plx_tensor_info *out_info, uint32_t n_out, onnxi_value **outs,
                       bool *out_folded) {
    *out_folded = false;
    plx_tensor_info in_info[16];
    const void *in_data[16];
    for (uint32_t i = 0; i < n_in; i++) {
        in_info[i] = inputs[i]->info;
        in_data[i] = inputs[i]->data;
    }
    plx_layer_view view = {sizeof view, lname, op, desc, in_info, n_in, out_info, n_out, in_data};
    void *out_data[16];
    char err[256] = "";
    plx_fold_result r = plx_fold_layer(&view, ONNXI_MAX_CONST_BYTES, out_data, err, sizeof err);
    if (r == PLX_FOLD_FAILED) {
        return plx_status_create(PLX_INVALID_ARGUMENT, "%s: node '%s' (%s): evaluating it at "
                                 "import failed: %s", c->file, n->name, n->proto->op_type, err);
    }
    if (r != PLX_FOLDED) {
        return NULL; /* too big to hold as a constant, or no kernel: compute at run time */
    }
    for (uint32_t i = 0; i < n_out; i++) {
        void *d = out_data[i];
        out_data[i] = NULL;
        plx_status st = onnxi_const_take(c, &out_info[i], d, &outs[i]);
        if (st) {
            for (uint32_t j = i + 1; j < n_out; j++) {
                free(out_data[j]);
            }
            return st;
        }
    }
    *out_folded = true;
    return NULL;
}

plx_status onnxi_emit(onnxi_ctx *c, onnxi_node *n, plx_op op, const void *desc,
                      onnxi_value *const *inputs, uint32_t n_in, uint32_t n_out,
                      onnxi_value **outs) {
    if (n_in > 16 || n_out > 16) {
        return plx_status_create(PLX_UNSUPPORTED, "more than 16 inputs or outputs");
    }
    char *lname = n->emitted == 0 ? strdup(n->name)
                                  : onnxi_asprintf("%s/%zu", n->name, n->emitted);
    char *unique = lname ? onnxi_unique_name(c, lname) : NULL;
    free(lname);
    if (!unique) {
        return oom(c);
    }
    n->emitted++;
    plx_tensor_info in_info[16], out_info[16];
    memset(out_info, 0, sizeof out_info);
    bool all_const = true;
    for (uint32_t i = 0; i < n_in; i++) {
        in_info[i] = inputs[i]->info;
        all_const = all_const && inputs[i]->kind == ONNXI_CONST;
    }
    plx_status st = infer(c, n, unique, op, desc, in_info, n_in, out_info, n_out);
    if (st) {
        free(unique);
        return st;
    }
    /* A dequantize of constants stays a layer: the optimiser's QDQ pass
     * reads the quantized weights through it (convert_quant.c), and folds
     * it itself where no backend takes the quantized layer. */
    if (all_const && op != PLX_OP_DEQUANTIZE) {
        bool folded;
        st = fold(c, n, unique, op, desc, inputs, n_in, out_info, n_out, outs, &folded);
        if (st || folded) {
            free(unique);
            return st;
        }
    }
    n->all_folded = false;
    for (uint32_t i = 0; i < n_in && !st; i++) {
        st = onnxi_materialise(c, inputs[i], unique);
    }
    plx_layer_id id = 0;
    if (!st) {
        st = plx_network_add_layer(c->net, unique, op, desc, n_in, n_out, &id);
    }
    for (uint32_t i = 0; i < n_in && !st; i++) {
        st = plx_network_connect(c->net, inputs[i]->layer, inputs[i]->slot, id, i);
    }
    free(unique);
    for (uint32_t i = 0; i < n_out && !st; i++) {
        outs[i] = onnxi_value_new(c, ONNXI_LAYER, &out_info[i]);
        if (!outs[i]) {
            return oom(c);
        }
        outs[i]->has_layer = true;
        outs[i]->layer = id;
        outs[i]->slot = i;
        if (n_in) {
            outs[i]->src = malloc(n_in * sizeof *outs[i]->src);
            if (!outs[i]->src) {
                return oom(c);
            }
            memcpy(outs[i]->src, inputs, n_in * sizeof *outs[i]->src);
            outs[i]->src_count = n_in;
        }
    }
    return st;
}

/* Adds `name` to the context's value needs unless it is there. */
static bool add_value_need(onnxi_ctx *c, const char *name) {
    for (size_t i = 0; i < c->value_need_count; i++) {
        if (strcmp(c->value_needs[i], name) == 0) {
            return true;
        }
    }
    char *copy = strdup(name);
    if (!copy || !grow((void ***)&c->value_needs, &c->value_need_cap, c->value_need_count + 1)) {
        free(copy);
        return false;
    }
    c->value_needs[c->value_need_count++] = copy;
    return true;
}

plx_status onnxi_note_value_tensor(onnxi_ctx *c, const char *name) {
    if (!name || !onnxi_map_get(&c->producers, name)) {
        return NULL;
    }
    for (size_t i = 0; i < c->value_tensor_count; i++) {
        if (strcmp(c->value_tensors[i], name) == 0) {
            return NULL;
        }
    }
    char *copy = strdup(name);
    if (!copy ||
        !grow((void ***)&c->value_tensors, &c->value_tensor_cap, c->value_tensor_count + 1)) {
        free(copy);
        return oom(c);
    }
    c->value_tensors[c->value_tensor_count++] = copy;
    return NULL;
}

plx_status onnxi_note_value_need(onnxi_ctx *c, const onnxi_value *v) {
    /* Depth-first over the values each layer reads, each visited once. */
    uint32_t mark = ++c->mark;
    size_t cap = 64, top = 0;
    const onnxi_value **stack = malloc(cap * sizeof *stack);
    if (!stack) {
        return oom(c);
    }
    stack[top++] = v;
    bool ok = true;
    while (top && ok) {
        onnxi_value *x = (onnxi_value *)stack[--top];
        if (x->mark == mark || x->kind != ONNXI_LAYER) {
            continue;
        }
        x->mark = mark;
        if (x->input_name) {
            ok = add_value_need(c, x->input_name);
            continue;
        }
        if (top + x->src_count > cap) {
            cap = 2 * (top + x->src_count);
            const onnxi_value **grown = realloc(stack, cap * sizeof *stack);
            if (!grown) {
                ok = false;
                break;
            }
            stack = grown;
        }
        for (uint32_t i = 0; i < x->src_count; i++) {
            stack[top++] = x->src[i];
        }
    }
    free(stack);
    return ok ? NULL : oom(c);
}
