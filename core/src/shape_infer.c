/* Operator rules of the core: arity, descriptor sizes, dtype rules and shape
 * inference, following ONNX as plexus/ops.h describes it.
 *
 * Every check produces a PLX_INVALID_ARGUMENT status whose message reads
 * "layer '<name>' (<op>): <what is wrong>", naming inputs by their role
 * (X, W, B, A, C, scale, ..., or "input N") and printing shapes as
 * "[1,3,224,224]"; descriptor fields by name ("strides[1] = 0 must be >= 1");
 * arity as "takes 2 to 3 inputs, got 1", "takes 2 inputs, got 3" or
 * "takes at least 1 input, got 0". Nothing here allocates except those
 * messages. On failure the caller's outputs are left as they were.
 *
 * Quantization of outputs (one rule for all ops):
 *   - mem_copy and mem_import copy the input's info unchanged, per-axis
 *     parameters included (the output is the same tensor in other memory);
 *   - data-movement ops (reshape, flatten, transpose, squeeze, unsqueeze,
 *     slice, pad, split, gather (data), expand, concat, depth_to_space,
 *     space_to_depth, tile, gather_elements and gather_nd (data)), nearest
 *     resize, max
 *     pooling and topk's values (monotonic selections, valid because
 *     scales are > 0) pass per-tensor parameters through; concat only when
 *     every input has the same per-tensor parameters (or, 8-bit inputs
 *     with per-tensor parameters and the output's set by the builder, a
 *     concat on quantized tensors: the output keeps what the builder set,
 *     plexus/ops.h), scatter_elements and
 *     scatter_nd only when data and updates have the same per-tensor
 *     parameters and the reduction is none, max or min;
 *   - per-axis parameters are dropped (NONE) by every other op, because the
 *     axis may move, vanish or change length;
 *   - every other output is NONE: its parameters are not a function of the
 *     input's (quantize's scale and zero point are tensors, not attributes).
 */
#include <string.h>

#include "infer_internal.h"
#include "shape_infer.h"

/* ------------------------------------------------------------------------ */
/* Entry point                                                              */

static plx_status check_arity(const layer_ctx *c, const char *what, uint32_t min, uint32_t max,
                              uint32_t got) {
    if (got >= min && got <= max) {
        return NULL;
    }
    if (max == UINT32_MAX) {
        return plxi_fail(c, "takes at least %" PRIu32 " %s%s, got %" PRIu32, min, what,
                         min == 1 ? "" : "s", got);
    }
    if (min == max) {
        return plxi_fail(c, "takes %" PRIu32 " %s%s, got %" PRIu32, min, what, min == 1 ? "" : "s",
                         got);
    }
    return plxi_fail(c, "takes %" PRIu32 " to %" PRIu32 " %ss, got %" PRIu32, min, max, what, got);
}

plx_status plxi_infer_layer(const char *layer_name, plx_op op, const void *desc,
                     const plx_tensor_info *inputs, uint32_t input_count,
                     plx_tensor_info *outputs, uint32_t output_count) {
    layer_ctx ctx = {layer_name, op, desc, inputs, input_count, outputs, output_count};
    const layer_ctx *c = &ctx;
    uint32_t min_in, max_in, min_out, max_out;
    if (!plxi_op_arity(op, &min_in, &max_in, &min_out, &max_out)) {
        return plxi_fail(c, "unknown operator %d", (int)op);
    }
    plx_status s;
    if ((s = check_arity(c, "input", min_in, max_in, input_count)) ||
        (s = check_arity(c, "output", min_out, max_out, output_count))) {
        return s;
    }
    if ((input_count && !inputs) || (output_count && !outputs)) {
        return plxi_fail(c, "%s is NULL", input_count && !inputs ? "inputs" : "outputs");
    }
    size_t desc_size = plxi_op_desc_size(op);
    if (desc_size && !desc) {
        return plxi_fail(c, "descriptor is NULL");
    }
    if (desc_size && *(const uint32_t *)desc < desc_size) {
        return plxi_fail(c, "descriptor struct_size %" PRIu32 " is smaller than %zu",
                         *(const uint32_t *)desc, desc_size);
    }
    for (uint32_t i = 0; i < input_count; i++) {
        if ((s = plxi_check_info(c, &inputs[i], ROLE(c, i)))) {
            return s;
        }
    }
    /* Single-output ops write a temporary, so that a failure leaves the
     * caller's outputs untouched (input and constant only read theirs). It
     * starts as the caller's info: a quantized conv or matmul reads its
     * output's dtype and quantization there (the builder's). */
    plx_tensor_info tmp;
    memset(&tmp, 0, sizeof tmp);
    bool use_tmp = output_count == 1 && op != PLX_OP_INPUT && op != PLX_OP_CONSTANT;
    if (use_tmp) {
        tmp = outputs[0];
        ctx.out = &tmp;
    }
    s = plxi_op_lookup(op)->infer(c);
    if (s) {
        return s;
    }
    for (uint32_t i = 0; i < output_count && op != PLX_OP_INPUT && op != PLX_OP_CONSTANT; i++) {
        size_t bytes;
        const plx_tensor_info *o = &ctx.out[i];
        if (!plx_tensor_info_byte_size(o, &bytes)) {
            return plxi_fail(c, "%s %s (%s) is too large: its byte size overflows size_t",
                             OUT_ROLE(c, i), SHP(o), plx_dtype_name(o->dtype));
        }
    }
    if (use_tmp) {
        outputs[0] = tmp;
    }
    return NULL;
}
