/* Constant folding: a layer whose inputs are all constants evaluated once
 * with the reference kernels (kernels/kernels.h), the code every backend is
 * tested against. One implementation for the ONNX importer
 * (onnx/src/values.c) and the optimiser's rewrites (core/src/rewrite.c), so
 * that a model folds the same whatever plug-ins are installed. */
#ifndef PLEXUS_FOLD_H
#define PLEXUS_FOLD_H

#include <stddef.h>

#include <plexus/ops.h>

/* The largest output the optimiser's rewrites fold into a constant: beyond,
 * the layer is computed at run time (a constant is held for the network's
 * life, an activation only while it is live). The importer allows more
 * (ONNXI_MAX_CONST_BYTES), since a model's computed attributes and weights
 * must be constants there. */
#define PLXI_FOLD_MAX_BYTES ((size_t)16 << 20)

typedef enum plxi_fold_result {
    PLXI_FOLDED,        /* out_data holds the outputs */
    PLXI_FOLD_SKIPPED,  /* no kernel, the kernel refuses, or an output is too large */
    PLXI_FOLD_FAILED,   /* the kernel ran and failed: its message is in err */
    PLXI_FOLD_NO_MEMORY,
} plxi_fold_result;

/* Evaluates `view` (final output infos; input_constants: every input's
 * constant) into out_data[0..view->output_count), heap buffers the caller
 * frees when the result is PLXI_FOLDED; otherwise they are left NULL. An
 * output of more than `max_bytes` skips the layer. */
plxi_fold_result plxi_fold_layer(const plx_layer_view *view, size_t max_bytes, void **out_data,
                                 char *err, size_t err_size);

#endif /* PLEXUS_FOLD_H */
