/* The loaded network (docs/loaded-network.md, "Loading", "Executing",
 * "Pre-imported inputs and outputs", "Executing asynchronously").
 *
 * Load: one factory per backend used; constants' handles and workloads,
 * allocated and run at once (shared by every execution); the memory plan of
 * each backend whose intermediate tensors the host manages; then the
 * network's own working memory.
 *
 * A working memory (plx_working_memory) holds everything one execution
 * writes: a tensor handle per non-constant layer output, a workload per
 * compute layer, and, for planned backends, the buffers of the plan. The
 * network's own working memory serves plx_loaded_network_execute, one call
 * at a time under the network's mutex; applications create more for
 * concurrent executions. Memory is allocated at a working memory's first
 * execution and can be released.
 *
 * An execution validates the bindings, imports or copies inputs in, imports
 * callers' output buffers into exported handles, runs the layers in order
 * (the host does copy layers itself and binds import layers to their
 * producer's memory), copies outputs out and ends every import. Every array
 * an execution needs is sized beforehand, so a steady-state execution
 * allocates nothing. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "loaded_network.h"

plx_status plxi_ln_oom(void) {
    return plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory while loading the network");
}

PLX_API void plx_load_options_init(plx_load_options *options) {
    if (options) {
        memset(options, 0, sizeof *options);
        options->struct_size = (uint32_t)PLX_STRUCT_SIZE_UPTO(plx_load_options,
                                                               externally_managed_memory);
    }
}

PLX_API void plx_execute_args_init(plx_execute_args *args) {
    if (args) {
        memset(args, 0, sizeof *args);
        args->struct_size = (uint32_t)PLX_STRUCT_SIZE_UPTO(plx_execute_args,
                                                            preimported_output_count);
    }
}

plx_factory *plxi_ln_factory_of(const plx_loaded_network *n, const plxi_backend_record *b) {
    for (size_t i = 0; i < n->factory_count; i++) {
        if (n->factories[i].backend == b) {
            return n->factories[i].factory;
        }
    }
    return NULL;
}

const plxi_layer *plxi_ln_layer_at(const plx_loaded_network *n, size_t i) {
    return n->optimized->layers.items[i];
}

/* Annotates a backend's failure with where it happened; consumes `s`. */
plx_status plxi_ln_at_layer(plx_status s, const plxi_layer *l, const char *what) {
    plx_status r = plxi_status_create(plx_status_get_code(s), "layer '%s' (%s) on %s: %s: %s",
                                      l->name, plx_op_name(l->op), l->backend->info.id, what,
                                      plx_status_get_message(s));
    plx_status_free(s);
    return r;
}

backend_plan *plxi_ln_plan_of(const plx_loaded_network *n, const plxi_backend_record *b,
                             size_t *out_index) {
    for (size_t i = 0; i < n->plan_count; i++) {
        if (n->plans[i].backend == b) {
            if (out_index) {
                *out_index = i;
            }
            return &n->plans[i];
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                    */
/* ------------------------------------------------------------------------ */

static plx_status create_factories(plx_loaded_network *n) {
    plx_optimized_network *o = n->optimized;
    for (size_t i = 0; i < n->layer_count; i++) {
        const plxi_layer *l = o->layers.items[i];
        if (plxi_ln_factory_of(n, l->backend) || l->op == PLX_OP_OUTPUT) {
            continue;
        }
        plx_factory_params params = {
            (uint32_t)sizeof params,
            o->import_enabled ? plx_backend_info_import_sources(&l->backend->info) : 0,
            o->export_enabled ? plx_backend_info_export_sources(&l->backend->info) : 0, n->id};
        factory_entry *e = &n->factories[n->factory_count];
        e->backend = l->backend;
        plx_status s = l->backend->functions.create_factory(l->backend->instance, &params,
                                                              &e->factory);
        if (s) {
            plx_status r = plxi_status_create(plx_status_get_code(s),
                                              "backend '%s': cannot create a workload factory: "
                                              "%s", l->backend->info.id,
                                              plx_status_get_message(s));
            plx_status_free(s);
            return r;
        }
        if (!e->factory) {
            return plxi_status_create(PLX_INTERNAL,
                                      "backend '%s': create_factory succeeded without a factory",
                                      l->backend->info.id);
        }
        n->factory_count++;
    }
    return NULL;
}

/* docs/loaded-network.md, Loading 2: what the options require of the backends. */
static plx_status check_capabilities(plx_loaded_network *n) {
    for (size_t f = 0; f < n->factory_count; f++) {
        const plxi_backend_record *b = n->factories[f].backend;
        if (n->options.async_execution) {
            if (!plx_backend_info_has_capability(&b->info, PLX_CAP_ASYNC_EXECUTION)) {
                return plxi_status_create(PLX_UNSUPPORTED,
                                          "backend '%s' does not report async_execution, which "
                                          "asynchronous execution needs", b->info.id);
            }
            if (!plx_backend_info_has_capability(&b->info, PLX_CAP_EXTERNALLY_MANAGED_MEMORY)) {
                return plxi_status_create(PLX_UNSUPPORTED,
                                          "backend '%s' does not report "
                                          "externally_managed_memory, which asynchronous "
                                          "execution needs", b->info.id);
            }
        }
        if (n->options.externally_managed_memory || n->options.async_execution) {
            if (!plx_backend_info_has_capability(&b->info, PLX_CAP_EXTERNALLY_MANAGED_MEMORY)) {
                return plxi_status_create(PLX_UNSUPPORTED,
                                          "backend '%s' does not report "
                                          "externally_managed_memory", b->info.id);
            }
            if (!plxi_ln_imports_malloc(b) && !plxi_ln_backend_allocates(n, b)) {
                return plxi_status_create(PLX_UNSUPPORTED,
                                          "backend '%s' reports externally_managed_memory but "
                                          "cannot import malloc memory, which the host's plan "
                                          "gives it", b->info.id);
            }
        }
    }
    return NULL;
}

/* Constants: a handle and a workload each, allocated and run at load
 * (docs/loaded-network.md, Loading 5), shared by every working memory. */
static plx_status load_constants(plx_loaded_network *n) {
    plx_optimized_network *o = n->optimized;
    for (size_t i = 0; i < n->layer_count; i++) {
        plxi_layer *l = o->layers.items[i];
        if (l->op != PLX_OP_CONSTANT) {
            continue;
        }
        handle_slot *h = &n->constants[n->slot_base[i]];
        h->backend = l->backend;
        h->info = &l->outputs[0];
        h->managed = true;
        h->constant = true;
        plx_tensor_info_byte_size(&l->outputs[0], &h->bytes);
        plx_factory *f = plxi_ln_factory_of(n, l->backend);
        plx_tensor_handle_params hp = {(uint32_t)sizeof hp, true, 0, 0};
        plx_status s = l->backend->functions.create_tensor_handle(f, h->info, &hp, &h->handle);
        if (s) {
            return plxi_ln_at_layer(s, l, "cannot create a tensor handle");
        }
        if (!h->handle) {
            return plxi_status_create(PLX_INTERNAL, "layer '%s' on %s: no tensor handle",
                                      l->name, l->backend->info.id);
        }
        plx_layer_view view;
        plx_tensor_info none_i[1];
        const void *none_c[1];
        plxi_layer_view(l, (plxi_layer *const *)o->layers.items, none_i, none_c, &view);
        s = l->backend->functions.create_workload(f, &view, NULL, &h->handle,
                                                  &n->constant_workloads[i]);
        if (s) {
            return plxi_ln_at_layer(s, l, "cannot create the workload");
        }
        if (!n->constant_workloads[i]) {
            return plxi_status_create(PLX_INTERNAL, "layer '%s' on %s: no workload was created",
                                      l->name, l->backend->info.id);
        }
        s = plxi_ln_allocate(h, l);
        if (!s && l->backend->functions.configure_workload) {
            plx_status c = l->backend->functions.configure_workload(n->constant_workloads[i]);
            s = c ? plxi_ln_at_layer(c, l, "configure failed") : NULL;
        }
        if (!s) {
            plx_status e = l->backend->functions.execute_workload(n->constant_workloads[i]);
            s = e ? plxi_ln_at_layer(e, l, "constant workload failed") : NULL;
        }
        if (s) {
            return s;
        }
    }
    return NULL;
}

static plx_status collect_io(plx_loaded_network *n, const plx_working_memory *wm) {
    plx_optimized_network *o = n->optimized;
    for (size_t i = 0; i < n->layer_count; i++) {
        const plxi_layer *l = o->layers.items[i];
        if (l->op == PLX_OP_INPUT) {
            io_binding *b = &n->inputs[n->input_count++];
            const handle_slot *h = wm->layers[i].outputs[0];
            b->binding_id = l->binding_id;
            b->info = l->outputs[0];
            b->layer = i;
            b->slot = 0;
            b->bytes = h->bytes;
            b->zero_copy = h->caller_memory;
            b->layer_name = l->name;
        } else if (l->op == PLX_OP_OUTPUT) {
            io_binding *b = &n->outputs[n->output_count++];
            const plxi_layer *producer = o->layers.items[l->inputs[0].layer];
            const handle_slot *h = wm->layers[i].inputs[0];
            b->binding_id = l->binding_id;
            b->info = producer->outputs[l->inputs[0].slot];
            b->layer = l->inputs[0].layer;
            b->slot = l->inputs[0].slot;
            b->bytes = h->bytes;
            b->zero_copy = h->caller_memory && producer->op != PLX_OP_INPUT;
            b->layer_name = l->name;
        }
    }
    return NULL;
}

static void unload(plx_loaded_network *n) {
    for (size_t i = 0; i < n->working_memories.count; i++) {
        plxi_working_memory_free(n->working_memories.items[i]);
    }
    plxi_ptr_vec_release(&n->working_memories);
    plxi_working_memory_free(n->own);
    for (size_t i = 0; n->constant_workloads && i < n->layer_count; i++) {
        if (n->constant_workloads[i]) {
            plxi_ln_layer_at(n, i)->backend->functions.destroy_workload(n->constant_workloads[i]);
        }
    }
    for (size_t i = 0; n->constants && i < n->slot_count; i++) {
        handle_slot *h = &n->constants[i];
        if (h->handle) {
            if (h->allocated) {
                h->backend->functions.release_tensor_handle(h->handle);
            }
            h->backend->functions.destroy_tensor_handle(h->handle);
        }
    }
    for (size_t i = 0; i < n->factory_count; i++) {
        if (n->factories[i].factory) {
            n->factories[i].backend->functions.destroy_factory(n->factories[i].factory);
        }
    }
    for (size_t p = 0; p < n->plan_count; p++) {
        plxi_memory_plan_release(&n->plans[p].plan);
        free(n->blocks ? n->blocks[p] : NULL);
    }
    pthread_mutex_destroy(&n->lock);
    free(n->plans);
    free(n->blocks);
    free(n->block_counts);
    free(n->slot_block);
    free(n->factories);
    free(n->slot_base);
    free(n->constants);
    free(n->constant_workloads);
    free(n->inputs);
    free(n->outputs);
    for (size_t i = 0; i < n->pre_input_count; i++) {
        free(n->pre_inputs[i].kind);
    }
    for (size_t i = 0; i < n->pre_output_count; i++) {
        free(n->pre_outputs[i].kind);
    }
    free(n->pre_inputs);
    free(n->pre_outputs);
    plx_optimized_network_destroy(&n->optimized);
    free(n);
}

PLX_API void plx_loaded_network_unload(plx_loaded_network **loaded) {
    if (!loaded || !*loaded) {
        return;
    }
    plx_loaded_network *n = *loaded;
    *loaded = NULL;
    plx_runtime *rt = n->runtime;
    pthread_mutex_lock(&rt->loaded_lock);
    for (size_t i = 0; i < rt->loaded.count; i++) {
        if (rt->loaded.items[i] == n) {
            rt->loaded.items[i] = rt->loaded.items[--rt->loaded.count];
            break;
        }
    }
    pthread_mutex_unlock(&rt->loaded_lock);
    /* Waits for the network's own execution; the application guarantees no
     * execution with its working memories is in flight. */
    pthread_mutex_lock(&n->lock);
    pthread_mutex_unlock(&n->lock);
    unload(n);
}

void plxi_runtime_unload_all(plx_runtime *rt) {
    while (rt->loaded.count) {
        plx_loaded_network *n = rt->loaded.items[rt->loaded.count - 1];
        plxi_log(&rt->logger, PLX_LOG_WARN, "plexus",
                 "network %u was still loaded when its runtime was destroyed; unloading it",
                 n->id);
        plx_loaded_network_unload(&n);
    }
}

/* Runs one load phase, recording it as a "load" event when profiling. */
static plx_status load_phase(plx_loaded_network *n, bool profile, const char *name,
                             plx_status (*phase)(plx_loaded_network *)) {
    uint64_t start = profile ? plxi_now_ns() : 0;
    plx_status s = phase(n);
    if (profile) {
        plxi_profile_record(n->runtime, name, "load", "", "", n->id, start, plxi_now_ns());
    }
    return s;
}

static plx_status create_own_working_memory(plx_loaded_network *n) {
    return plxi_working_memory_create(n, &n->own);
}

PLX_API plx_status plx_runtime_load_network(plx_runtime *runtime,
                                            plx_optimized_network **optimized,
                                            const plx_load_options *options,
                                            plx_loaded_network **out_loaded) {
    if (out_loaded) {
        *out_loaded = NULL;
    }
    if (!optimized || !*optimized) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "optimized network is NULL");
    }
    plx_optimized_network *o = *optimized;
    *optimized = NULL;
    plx_load_options defaults;
    plx_load_options_init(&defaults);
    if (!options) {
        options = &defaults;
    }
    if (!runtime || !out_loaded || o->runtime != runtime ||
        options->struct_size < defaults.struct_size) {
        const char *why = !runtime      ? "runtime is NULL"
                          : !out_loaded ? "out_loaded is NULL"
                          : o->runtime != runtime
                              ? "the network was optimised for another runtime"
                              : "load options: struct_size too small (initialise with "
                                "plx_load_options_init)";
        plx_optimized_network_destroy(&o); /* the call takes it, also on failure */
        return plxi_status_create(PLX_INVALID_ARGUMENT, "%s", why);
    }
    bool profile = plxi_profiling(runtime);
    uint64_t load_start = profile ? plxi_now_ns() : 0;
    plx_loaded_network *n = calloc(1, sizeof *n);
    if (!n) {
        plx_optimized_network_destroy(&o);
        return plxi_ln_oom();
    }
    atomic_init(&n->staged_copies, 0);
    atomic_init(&n->waits, 0);
    atomic_init(&n->staged_warned, false);
    n->runtime = runtime;
    n->optimized = o;
    n->options = *options;
    pthread_mutex_init(&n->lock, NULL);
    size_t count = o->layers.count, ins = 0, outs = 0;
    n->layer_count = count;
    n->slot_base = calloc(count + 1, sizeof *n->slot_base);
    for (size_t i = 0; n->slot_base && i < count; i++) {
        const plxi_layer *l = o->layers.items[i];
        n->slot_base[i] = n->slot_count;
        n->slot_count += l->output_count;
        ins += l->op == PLX_OP_INPUT;
        outs += l->op == PLX_OP_OUTPUT;
    }
    n->input_layers = ins;
    n->output_layers = outs;
    n->constants = calloc(n->slot_count + 1, sizeof *n->constants);
    n->constant_workloads = calloc(count + 1, sizeof *n->constant_workloads);
    n->factories = calloc(count + 1, sizeof *n->factories);
    n->inputs = calloc(ins + 1, sizeof *n->inputs);
    n->outputs = calloc(outs + 1, sizeof *n->outputs);
    pthread_mutex_lock(&runtime->loaded_lock);
    n->id = ++runtime->last_network_id;
    bool listed = plxi_ptr_vec_push(&runtime->loaded, n);
    pthread_mutex_unlock(&runtime->loaded_lock);
    plx_status s = NULL;
    if (!listed || !n->slot_base || !n->constants || !n->constant_workloads || !n->factories ||
        !n->inputs || !n->outputs) {
        s = plxi_ln_oom();
    }
    if (!s) {
        s = load_phase(n, profile, "create factories", create_factories);
    }
    if (!s) {
        s = load_phase(n, profile, "check capabilities", check_capabilities);
    }
    if (!s) {
        s = load_phase(n, profile, "constants", load_constants);
    }
    if (!s) {
        s = load_phase(n, profile, "memory plan", plxi_ln_plan_memory);
    }
    if (!s) {
        s = load_phase(n, profile, "working memory", create_own_working_memory);
    }
    /* docs/loaded-network.md, Loading 6: every workload of the load exists. */
    for (size_t i = 0; !s && i < n->factory_count; i++) {
        const plxi_backend_record *b = n->factories[i].backend;
        if (b->functions.factory_workloads_created) {
            plx_status e = b->functions.factory_workloads_created(n->factories[i].factory);
            if (e) {
                s = plxi_status_create(plx_status_get_code(e),
                                       "backend '%s': workloads_created hook failed: %s",
                                       b->info.id, plx_status_get_message(e));
                plx_status_free(e);
            }
        }
    }
    if (!s) {
        s = collect_io(n, n->own);
    }
    if (profile) {
        plxi_profile_record(runtime, "load", "load", "", "", n->id, load_start, plxi_now_ns());
    }
    if (s) {
        plx_loaded_network_unload(&n);
        return s;
    }
    atomic_fetch_add_explicit(&runtime->networks_loaded, 1, memory_order_relaxed);
    plxi_log(&runtime->logger, PLX_LOG_INFO, "plexus", "loaded network %u: %s", n->id,
             o->summary);
    *out_loaded = n;
    return NULL;
}

PLX_API uint64_t plx_loaded_network_staged_copy_count(const plx_loaded_network *loaded) {
    return loaded ? atomic_load_explicit(&((plx_loaded_network *)loaded)->staged_copies,
                                         memory_order_relaxed)
                  : 0;
}

PLX_API uint64_t plx_loaded_network_wait_count(const plx_loaded_network *loaded) {
    return loaded ? atomic_load_explicit(&((plx_loaded_network *)loaded)->waits,
                                         memory_order_relaxed)
                  : 0;
}

PLX_API uint32_t plx_loaded_network_id(const plx_loaded_network *loaded) {
    return loaded ? loaded->id : 0;
}

/* ------------------------------------------------------------------------ */
/* Queries                                                                    */
/* ------------------------------------------------------------------------ */

static plx_status find_info(const io_binding *list, size_t count, int32_t binding,
                            const char *kind, plx_tensor_info *out) {
    size_t k = plxi_ln_find_io(list, count, binding);
    if (k == count) {
        return plxi_status_create(PLX_NOT_FOUND,
                                  "%s binding id %d is not one of the network's %ss", kind,
                                  binding, kind);
    }
    *out = list[k].info;
    return NULL;
}

PLX_API plx_status plx_loaded_network_input_info(const plx_loaded_network *loaded,
                                                 int32_t binding_id, plx_tensor_info *out_info) {
    if (!loaded || !out_info) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "%s is NULL",
                                  loaded ? "out_info" : "loaded network");
    }
    return find_info(loaded->inputs, loaded->input_count, binding_id, "input", out_info);
}

PLX_API plx_status plx_loaded_network_output_info(const plx_loaded_network *loaded,
                                                  int32_t binding_id, plx_tensor_info *out_info) {
    if (!loaded || !out_info) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "%s is NULL",
                                  loaded ? "out_info" : "loaded network");
    }
    return find_info(loaded->outputs, loaded->output_count, binding_id, "output", out_info);
}

PLX_API size_t plx_loaded_network_input_count(const plx_loaded_network *loaded) {
    return loaded ? loaded->input_count : 0;
}

PLX_API int32_t plx_loaded_network_input_binding(const plx_loaded_network *loaded, size_t index) {
    return loaded && index < loaded->input_count ? loaded->inputs[index].binding_id : -1;
}

PLX_API size_t plx_loaded_network_output_count(const plx_loaded_network *loaded) {
    return loaded ? loaded->output_count : 0;
}

PLX_API int32_t plx_loaded_network_output_binding(const plx_loaded_network *loaded,
                                                  size_t index) {
    return loaded && index < loaded->output_count ? loaded->outputs[index].binding_id : -1;
}

PLX_API size_t plx_loaded_network_memory_report_count(const plx_loaded_network *loaded) {
    return loaded ? loaded->plan_count : 0;
}

PLX_API const plx_memory_report *plx_loaded_network_memory_report(
    const plx_loaded_network *loaded, size_t index) {
    return loaded && index < loaded->plan_count ? &loaded->plans[index].report : NULL;
}

PLX_API void plx_loaded_network_set_debug_callback(plx_loaded_network *loaded, plx_debug_fn fn,
                                                   void *user_data) {
    if (!loaded) {
        return;
    }
    pthread_mutex_lock(&loaded->lock);
    loaded->debug_fn = fn;
    loaded->debug_user_data = user_data;
    pthread_mutex_unlock(&loaded->lock);
}

