/* Backend-independent rewrites of the optimiser's working copy (rewrite.c). */
#ifndef PLEXUS_CORE_REWRITE_H
#define PLEXUS_CORE_REWRITE_H

#include <stddef.h>

#include "assign.h"
#include "network_internal.h"

/* The rewrites of `layers` (the optimiser's working copy, *count of them in
 * topological order, inputs numbered by position), before assignment;
 * removed layers are freed and the array compacted, *count updated. Notes
 * say what changed. All are backend-independent except the QDQ fold, which
 * makes a quantized layer only where one of `prefs` (pref_count backends,
 * by preference) accepts it. */
plx_status plxi_rewrite(plx_optimized_network *o, plxi_layer **layers, size_t *count,
                        plxi_backend_record *const *prefs, size_t pref_count);

/* Drops the NULL entries of `layers` and renumbers the rest in
 * a stable topological order (inputs renumbered); PLX_INTERNAL on a cycle. */
plx_status plxi_layers_sort(plxi_layer **layers, size_t *count);

#endif /* PLEXUS_CORE_REWRITE_H */
