/* Subgraph offers to backends during optimisation (subgraph.c). */
#ifndef PLEXUS_CORE_SUBGRAPH_H
#define PLEXUS_CORE_SUBGRAPH_H

#include <stdbool.h>
#include <stddef.h>

#include "network_internal.h"

/* Offers each backend with optimize_subgraph its maximal
 * subgraphs and applies what it returns; *count changes. */
plx_status plxi_optimize_subgraphs(plx_optimized_network *o, plxi_layer **layers,
                                   size_t *count, plxi_backend_record *const *prefs,
                                   size_t pref_count, bool allow_fallback);

#endif /* PLEXUS_CORE_SUBGRAPH_H */
