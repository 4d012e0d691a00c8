/* Asking backends about layers and assigning layers (assign.c): shared by
 * the optimiser (optimizer.c) and its passes (rewrite.c, subgraph.c). */
#ifndef PLEXUS_CORE_ASSIGN_H
#define PLEXUS_CORE_ASSIGN_H

#include <stdbool.h>
#include <stddef.h>

#include "network_internal.h"

/* Adds a note to the optimised network; false when out of memory. */
bool plxi_optimizer_note(plx_optimized_network *o, const char *fmt, ...) PLXI_PRINTF(2, 3);
/* A backend's refusal reason as the host records and shows it, after
 * "<backend_id>: " (docs/backend-abi.md, R-18 (1)): without a leading
 * "<backend_id>:" or "<backend_id> " (and the spaces after it), so that the
 * id appears once. Points into `reason`; `reason` itself when it does not
 * start so, when nothing would be left, or when backend_id is NULL. */
const char *plxi_refusal_text(const char *backend_id, const char *reason);
/* Asks `rec` about `l`: NULL when it accepts, else the reason
 * (heap; *oom_flag set when out of memory). */
char *plxi_optimizer_ask(plxi_backend_record *rec, const plxi_layer *l,
                         plxi_layer *const *layers, bool *oom_flag);
/* Records a refusal (takes `reason`); false when out of memory. */
bool plxi_optimizer_refusal(plxi_layer *l, const char *backend_id, char *reason);
/* Assigns `l` to the first of `prefs` that accepts it (only prefs[0]
 * without fallback), recording refusals; false when out of memory. */
bool plxi_assign_by_preference(plxi_layer *l, plxi_layer *const *layers,
                               plxi_backend_record *const *prefs, size_t pref_count,
                               bool allow_fallback);

#endif /* PLEXUS_CORE_ASSIGN_H */
