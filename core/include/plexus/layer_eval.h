/* Evaluating one layer outside a network: the core's shape inference and
 * constant folding, for code that builds networks from another description
 * and must know a layer's output shapes, or its values, while it builds (a
 * model importer: onnx/src/values.c).
 *
 * Part of libplexus (link with `plexus`); conventions as in plexus.h: a
 * plx_status is NULL on success and owned by the caller otherwise. Every
 * function is a pure function of its arguments and is thread-safe. */
#ifndef PLEXUS_LAYER_EVAL_H
#define PLEXUS_LAYER_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include <plexus/ops.h>
#include <plexus/plexus.h>
#include <plexus/status.h>
#include <plexus/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The output infos of a layer, as plx_network_add_layer computes them:
 * validates the descriptor (every field in range) and the input infos
 * (dtypes allowed for the op, shapes consistent), then writes
 * output_count entries of `outputs` (dtype, rank, dims; quantization NONE
 * unless the op defines it). Read on entry only for conv and matmul on
 * quantized tensors (plexus/ops.h): outputs[0]'s dtype and per-tensor
 * quantization, which the caller sets, as a builder sets them with
 * plx_network_set_output_info; initialise it for those.
 * `layer_name` is used in messages only.
 * Errors are PLX_INVALID_ARGUMENT statuses whose message starts with
 * "layer '<name>' (<op>): " and names the offending field or input and the
 * shapes involved. */
PLX_API plx_status plx_infer_layer(const char *layer_name, plx_op op, const void *desc,
                                   const plx_tensor_info *inputs, uint32_t input_count,
                                   plx_tensor_info *outputs, uint32_t output_count);

typedef enum plx_fold_result {
    PLX_FOLDED = 0,          /* out_data holds the outputs */
    PLX_FOLD_SKIPPED = 1,    /* no kernel, the kernel refuses, or an output is too large */
    PLX_FOLD_FAILED = 2,     /* the kernel ran and failed: its message is in err */
    PLX_FOLD_NO_MEMORY = 3,
} plx_fold_result;

/* Evaluates a layer whose inputs are all constants with the reference
 * kernels (those every backend is tested against, whatever backends are
 * installed). `view` gives the final output infos (plx_infer_layer's) and,
 * in input_constants, every input's data. On PLX_FOLDED,
 * out_data[0..view->output_count) are malloc'd buffers holding the
 * outputs, which the caller frees; otherwise they are left NULL. An output
 * of more than `max_bytes` bytes skips the layer. On PLX_FOLD_FAILED, `err`
 * (err_size bytes) holds the kernel's message. */
PLX_API plx_fold_result plx_fold_layer(const plx_layer_view *view, size_t max_bytes,
                                       void **out_data, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_LAYER_EVAL_H */
