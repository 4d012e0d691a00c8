/* cpu_ref's fusions through the host's graph optimisation: the
 * optimize_subgraph hook, and the kernel of the precompiled layers it
 * makes (a conv, fully_connected, gemm or matmul with the activation that
 * alone reads it). */
#ifndef PLXK_FUSION_H
#define PLXK_FUSION_H

#include <plexus/backend.h>

#include "kernels.h"

/* Offers every conv/fully_connected/gemm/matmul of `subgraph` whose only
 * reader is an activation to `editor` as one precompiled layer. A
 * substitution the host refuses is skipped. Never fails. Thread-safe (it
 * keeps nothing). */
plx_status plxk_optimize_subgraph(const plx_host *host, const plx_subgraph_view *subgraph,
                                     const plx_subgraph_editor *editor);

/* The precompiled layers' check, run, workspace and prepare (in the kernel
 * table): the base operator's kernel, then the activation in place on its
 * output. */
const char *plxk_check_precompiled(const plx_layer_view *layer, char *buf, size_t size);
bool plxk_run_precompiled(const plxk_kernel_args *args);
size_t plxk_workspace_precompiled(const plx_layer_view *layer, const plxk_compute *compute);
size_t plxk_prepare_precompiled(const plx_layer_view *layer, const plxk_compute *compute,
                                void *out, size_t size);

#endif /* PLXK_FUSION_H */
