/* The core's services exported for code outside the core that builds
 * networks (plexus/layer_eval.h, plx_status_create in plexus/plexus.h):
 * thin wrappers over the internals, so that importers use only public API. */
#include <stdarg.h>

#include <plexus/layer_eval.h>
#include <plexus/plexus.h>

#include "fold.h"
#include "internal.h"
#include "shape_infer.h"

PLX_API plx_status plx_status_create(plx_status_code code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    plx_status s = plxi_status_vcreate(code, fmt, ap);
    va_end(ap);
    return s;
}

PLX_API plx_status plx_infer_layer(const char *layer_name, plx_op op, const void *desc,
                                   const plx_tensor_info *inputs, uint32_t input_count,
                                   plx_tensor_info *outputs, uint32_t output_count) {
    return plxi_infer_layer(layer_name, op, desc, inputs, input_count, outputs, output_count);
}

PLX_API plx_fold_result plx_fold_layer(const plx_layer_view *view, size_t max_bytes,
                                       void **out_data, char *err, size_t err_size) {
    switch (plxi_fold_layer(view, max_bytes, out_data, err, err_size)) {
    case PLXI_FOLDED:
        return PLX_FOLDED;
    case PLXI_FOLD_SKIPPED:
        return PLX_FOLD_SKIPPED;
    case PLXI_FOLD_FAILED:
        return PLX_FOLD_FAILED;
    case PLXI_FOLD_NO_MEMORY:
        break;
    }
    return PLX_FOLD_NO_MEMORY;
}
