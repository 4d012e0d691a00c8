/* Operator rules of the core: arity, descriptor sizes, dtype rules, and
 * shape inference. Pure functions of a layer's descriptor and input infos. */
#ifndef PLEXUS_CORE_SHAPE_INFER_H
#define PLEXUS_CORE_SHAPE_INFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plexus/ops.h>
#include <plexus/status.h>
#include <plexus/tensor.h>

/* Number of input and output slots an operator accepts. max_* is
 * UINT32_MAX for variadic slots (concat inputs, split outputs). false for
 * an unknown op. */
bool plxi_op_arity(plx_op op, uint32_t *out_min_inputs, uint32_t *out_max_inputs,
                   uint32_t *out_min_outputs, uint32_t *out_max_outputs);

/* sizeof the descriptor struct of `op` (what struct_size must be at least),
 * or 0 for ops without a descriptor (matmul, where, mem_copy, mem_import). */
size_t plxi_op_desc_size(plx_op op);

/* Validates the descriptor (every field in range) and the input infos
 * (dtypes allowed for the op, shapes consistent, per ONNX), then writes
 * the output infos (dtype, rank, dims; quantization NONE unless the op
 * defines it, e.g. reshape/transpose keep per-tensor quantization).
 *
 * A single-output op reads outputs[0] first: quantized conv, matmul and
 * concat take their output dtype and quantization from what the builder
 * set there, so callers pass initialised infos (zeroed when they set
 * nothing); outputs are written only on success.
 *
 * `layer_name` is used in messages only. Errors are PLX_INVALID_ARGUMENT
 * statuses whose message starts with "layer '<name>' (<op>): " and names
 * the offending field or input and the shapes involved, e.g.
 * "layer 'c1' (conv): W has 3 input channels per group, X has 4 channels and group 1".
 * Returns NULL on success. */
plx_status plxi_infer_layer(const char *layer_name, plx_op op, const void *desc,
                            const plx_tensor_info *inputs, uint32_t input_count,
                            plx_tensor_info *outputs, uint32_t output_count);

/* Formats a shape as "[1,3,224,224]" (rank 0: "[]") into buf; returns buf. */
const char *plxi_format_shape(const plx_tensor_info *info, char *buf, size_t size);

#endif /* PLEXUS_CORE_SHAPE_INFER_H */
