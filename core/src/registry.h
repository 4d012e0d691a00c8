/* Backend discovery and loading (registry.c): static and plug-in backends,
 * their records, and the runtime's notes. */
#ifndef PLEXUS_CORE_REGISTRY_H
#define PLEXUS_CORE_REGISTRY_H

#include <stdbool.h>

#include "internal.h"

plx_status plxi_registry_load_static(plx_runtime *rt, plx_backend_entry_fn entry);
plx_status plxi_registry_scan(plx_runtime *rt, plx_search_entry *entry);
void plxi_backend_record_destroy(plxi_backend_record *record);
/* Adds a note; false when out of memory. */
bool plxi_runtime_note(plx_runtime *rt, const char *fmt, ...) PLXI_PRINTF(2, 3);

#endif /* PLEXUS_CORE_REGISTRY_H */
