/* Constant folding with the reference kernels (fold.h). */
#include "fold.h"

#include <stdlib.h>

#include <plexus/plexus.h>
#include <plexus/tensor.h>

#include "kernels.h"
#include "validate.h"

static void free_outputs(void **out_data, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        free(out_data[i]);
        out_data[i] = NULL;
    }
}

plxi_fold_result plxi_fold_layer(const plx_layer_view *view, size_t max_bytes, void **out_data,
                                 char *err, size_t err_size) {
    for (uint32_t i = 0; i < view->output_count; i++) {
        out_data[i] = NULL;
    }
    /* The kernels rely on the host's contract (validate.h) like any
     * backend: the views here come from the optimiser's rewrites and the
     * ONNX importer, not through plxi_optimizer_ask, so they are validated
     * here; a view that fails is not folded. */
    plxk_check_fn check;
    plxk_run_fn run;
    plx_status invalid = plxi_layer_view_validate(view);
    if (invalid) {
        plx_status_free(invalid);
        return PLXI_FOLD_SKIPPED;
    }
    if (!plxk_kernel_lookup(view->op, &check, &run)) {
        return PLXI_FOLD_SKIPPED;
    }
    char why[256];
    if (check(view, why, sizeof why)) {
        return PLXI_FOLD_SKIPPED;
    }
    for (uint32_t i = 0; i < view->output_count; i++) {
        size_t bytes;
        if (!plx_tensor_info_byte_size(&view->outputs[i], &bytes) ||
            bytes > max_bytes) {
            free_outputs(out_data, i);
            return PLXI_FOLD_SKIPPED;
        }
        out_data[i] = calloc(1, bytes ? bytes : 1);
        if (!out_data[i]) {
            free_outputs(out_data, i);
            return PLXI_FOLD_NO_MEMORY;
        }
    }
    plxk_kernel_args args = {.layer = view, .inputs = view->input_constants, .outputs = out_data,
                             .error = err, .error_size = err_size};
    if (!plxk_kernel_run_once(run, &args)) {
        free_outputs(out_data, view->output_count);
        return PLXI_FOLD_FAILED;
    }
    return PLXI_FOLDED;
}
