/* Asking backends about layers and assigning layers to them
 * (docs/loaded-network.md, "Optimising"): what the optimiser (optimizer.c)
 * and its passes (rewrite.c, subgraph.c) share, below all three. */
#include "assign.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "shape_infer.h"
#include "validate.h"

bool plxi_optimizer_note(plx_optimized_network *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *note = plxi_vasprintf(fmt, ap);
    va_end(ap);
    if (!note || !plxi_ptr_vec_push(&o->notes, note)) {
        free(note);
        return false;
    }
    return true;
}

const char *plxi_refusal_text(const char *backend_id, const char *reason) {
    if (!backend_id) {
        return reason;
    }
    size_t n = strlen(backend_id);
    if (strncmp(reason, backend_id, n) != 0 || (reason[n] != ':' && reason[n] != ' ')) {
        return reason;
    }
    const char *rest = reason + n + (reason[n] == ':');
    while (*rest == ' ') {
        rest++;
    }
    return *rest ? rest : reason;
}

/* Asks `rec` about layer `l`; NULL when it accepts, else the reason (heap).
 * Every layer a backend sees passes through here first (the optimiser's
 * assignment, and the substitutions of optimize_subgraph in subgraph.c), so
 * this is where the host validates the view (validate.h): a view that fails
 * is refused here with the host's reason and the backend never sees it.
 * Layers of a network already passed shape inference when they were added,
 * so for them this cannot fail; substitutions are new layers. The views of
 * later calls (optimize_subgraph's subgraph, create_workload) are built from
 * layers accepted here, so they keep the same contract by construction. */
char *plxi_optimizer_ask(plxi_backend_record *rec, const plxi_layer *l,
                         plxi_layer *const *layers, bool *oom_flag) {
    plx_tensor_info in_small[16];
    const void *const_small[16];
    plx_tensor_info *inputs = in_small;
    const void **constants = const_small;
    if (l->input_count > 16) {
        inputs = malloc(l->input_count * sizeof *inputs);
        constants = malloc(l->input_count * sizeof *constants);
        if (!inputs || !constants) {
            free(inputs);
            free(constants);
            *oom_flag = true;
            return NULL;
        }
    }
    plx_layer_view view;
    plxi_layer_view(l, layers, inputs, constants, &view);
    plx_status s = plxi_layer_view_validate(&view);
    bool backend_said = !s; /* the host's own reasons keep their words */
    if (!s) {
        s = rec->functions.check_layer(rec->instance, &view);
    }
    if (inputs != in_small) {
        free(inputs);
        free((void *)constants);
    }
    if (!s) {
        return NULL;
    }
    const char *message = plx_status_get_message(s);
    if (!message) {
        message = "";
    }
    char *reason = plxi_strdup(backend_said ? plxi_refusal_text(rec->info.id, message) : message);
    plx_status_free(s);
    if (!reason) {
        *oom_flag = true;
    }
    return reason;
}

bool plxi_optimizer_refusal(plxi_layer *l, const char *backend_id, char *reason) {
    plx_refusal *r = realloc(l->refusals, (l->refusal_count + 1) * sizeof *r);
    if (r) {
        /* The grown array replaces the old one (which realloc may have
         * freed) whether or not the id can be copied. */
        l->refusals = r;
    }
    char *id = r ? plxi_strdup(backend_id) : NULL;
    if (!id) {
        free(reason);
        return false;
    }
    r[l->refusal_count].backend_id = id;
    r[l->refusal_count].reason = reason;
    l->refusal_count++;
    return true;
}

/* Assigns one layer by preference; false only when out of memory. The
 * layer's backend stays NULL when every candidate refuses. */
bool plxi_assign_by_preference(plxi_layer *l, plxi_layer *const *layers,
                               plxi_backend_record *const *prefs, size_t pref_count,
                               bool allow_fallback) {
    size_t tries = allow_fallback ? pref_count : 1;
    for (size_t b = 0; b < tries; b++) {
        bool failed = false;
        char *reason = plxi_optimizer_ask(prefs[b], l, layers, &failed);
        if (failed) {
            return false;
        }
        if (!reason) {
            l->backend = prefs[b];
            return true;
        }
        if (!plxi_optimizer_refusal(l, prefs[b]->info.id, reason)) {
            return false;
        }
    }
    return true;
}
