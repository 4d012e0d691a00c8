/* Backend discovery and loading (registry.c): static and plug-in backends,
 * their records, and the runtime's notes. */
#ifndef PLEXUS_CORE_REGISTRY_H
#define PLEXUS_CORE_REGISTRY_H

#include <stdbool.h>
#include <sys/stat.h>

#include "internal.h"

plx_status plxi_registry_load_static(plx_runtime *rt, plx_backend_entry_fn entry);
plx_status plxi_registry_scan(plx_runtime *rt, plx_search_entry *entry);
void plxi_backend_record_destroy(plxi_backend_record *record);
/* Set by the probe executable (tools/plugin_probe.c) only: called with the
 * step the registry is about to run a plug-in's code in ("its entry
 * point", "create", ...), so that the host that started the probe can say
 * where the plug-in failed. NULL in the library. */
extern void (*plxi_probe_phase)(const char *phase);

/* probe.c: loading each plug-in file in the probe first
 * (plx_runtime_options.probe_plugins). */
/* Turns the probe on: the executable (NULL: PLX_PROBE_PATH), the time limit
 * (0: 10 s) and the cache directory (NULL: the user's; "": none). */
plx_status plxi_probe_configure(plx_runtime *rt, const char *path, uint32_t timeout_ms,
                                const char *cache_dir);
/* Probes the plug-in at `resolved` (st: its stat), from the cache when it
 * holds the file. *out_reason: NULL when the file passed (or the probe could
 * not run: a note says so, and the probe is off for the rest of the scan),
 * else why it is rejected (heap). Returns an out-of-memory status only. */
plx_status plxi_probe_plugin(plx_runtime *rt, const char *resolved, const struct stat *st,
                             char **out_reason);
/* Writes the cache back when it changed (failures to write are notes). */
plx_status plxi_probe_cache_save(plx_runtime *rt);
void plxi_probe_release(plx_runtime *rt);

/* Adds a note; false when out of memory. */
bool plxi_runtime_note(plx_runtime *rt, const char *fmt, ...) PLXI_PRINTF(2, 3);

#endif /* PLEXUS_CORE_REGISTRY_H */
