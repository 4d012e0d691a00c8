/* The host's check of a layer view (validate.h). */
#include "validate.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "infer_internal.h"
#include "shape_infer.h"

/* Byte sizes above this are refused so that element and byte counts fit
 * int64_t with room for offsets (the kernels index in int64_t). */
#define MAX_VIEW_BYTES ((size_t)INT64_MAX / 8)

static plx_status fault(const plx_layer_view *v, const char *fmt, ...) PLXI_PRINTF(2, 3);

static plx_status fault(const plx_layer_view *v, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return plxi_status_create(PLX_INVALID_ARGUMENT, "layer '%s' (%s): %s",
                              v->name ? v->name : "?", plx_op_name(v->op), what);
}

static plx_status check_info(const plx_layer_view *v, const plx_tensor_info *t,
                             const char *slot, uint32_t index) {
    if (plx_dtype_size(t->dtype) == 0) {
        return fault(v, "%s %" PRIu32 " has an invalid dtype %d", slot, index, (int)t->dtype);
    }
    if (t->rank > PLX_MAX_RANK) {
        return fault(v, "%s %" PRIu32 " has rank %" PRIu32 ", more than %d", slot, index, t->rank,
                     PLX_MAX_RANK);
    }
    for (uint32_t d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0) {
            return fault(v, "%s %" PRIu32 " has a negative dimension %" PRId64 " (axis %" PRIu32
                            ")", slot, index, t->dims[d], d);
        }
    }
    size_t bytes;
    if (!plx_tensor_info_byte_size(t, &bytes) || bytes > MAX_VIEW_BYTES) {
        return fault(v, "%s %" PRIu32 " is too large: its byte size exceeds %zu", slot, index,
                     MAX_VIEW_BYTES);
    }
    return NULL;
}

plx_status plxi_layer_view_validate(const plx_layer_view *v) {
    if (!v) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "the layer view is NULL");
    }
    const plxi_op_row *row = plxi_op_lookup(v->op);
    if (!row) {
        return fault(v, "unknown op %d", (int)v->op);
    }
    if (v->input_count < row->min_inputs || v->input_count > row->max_inputs) {
        return fault(v, "%" PRIu32 " inputs, the op takes %" PRIu32 " to %" PRIu32,
                     v->input_count, row->min_inputs, row->max_inputs);
    }
    if (v->output_count < row->min_outputs || v->output_count > row->max_outputs) {
        return fault(v, "%" PRIu32 " outputs, the op takes %" PRIu32 " to %" PRIu32,
                     v->output_count, row->min_outputs, row->max_outputs);
    }
    if ((v->input_count && !v->inputs) || (v->output_count && !v->outputs)) {
        return fault(v, "the %s array is NULL", v->input_count && !v->inputs ? "input" : "output");
    }
    size_t desc_size = plxi_op_desc_size(v->op);
    if (desc_size) {
        if (!v->desc) {
            return fault(v, "the descriptor is NULL");
        }
        uint32_t ss = *(const uint32_t *)v->desc;
        if (ss < desc_size) {
            return fault(v, "descriptor struct_size %" PRIu32 " is smaller than %zu", ss,
                         desc_size);
        }
    }
    for (uint32_t i = 0; i < v->input_count; i++) {
        plx_status s = check_info(v, &v->inputs[i], "input", i);
        if (s) {
            return s;
        }
    }
    for (uint32_t i = 0; i < v->output_count; i++) {
        plx_status s = check_info(v, &v->outputs[i], "output", i);
        if (s) {
            return s;
        }
    }
    return NULL;
}
