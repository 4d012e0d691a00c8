/* Models whose input shapes are known only at run time: a dynamic model
 * keeps a model file whose inputs have open dims (a symbolic batch or
 * sequence length) and, for each set of input shapes an execution brings
 * (a signature), makes a static network for those shapes: imported with
 * the shapes, every shape computation folded, optimised and loaded on the
 * chosen backends. Backends see only static shapes. Specialisations are
 * kept in a bounded cache, least recently used first out; a signature seen
 * before costs a lookup.
 *
 * Some inputs set what the model computes at import: a reshape's target
 * shape, a slice's bounds, a sample rate an `If` tests, when computed from
 * them. The model finds these *valued* inputs itself, from the imports
 * that need them, and from then on freezes their values into each
 * specialisation, so that what they feed folds; their values join the
 * cache key: each distinct value makes its own specialisation, which
 * suits inputs with few values (at most PLX_DYNAMIC_MAX_VALUE_BYTES of
 * data). A signature therefore offers the values of the inputs it can
 * (all of them is simplest), and the model takes those it needs.
 *
 * When such a value is computed from an input too big to specialise on
 * (an `If` whose condition is computed from the audio itself), the model
 * values the computed tensor instead: for each signature, a *probe*
 * network (the part of the model that computes those tensors, itself
 * specialised on the signature's shapes) runs on the offered values, and
 * the tensors' values, at most PLX_DYNAMIC_MAX_VALUE_BYTES each, are
 * frozen into the specialisation and join its key. The host thus
 * evaluates the condition and the specialisation runs the branch it
 * chose. Every acquire of such a model runs its probe.
 *
 * Part of libplexus (link with `plexus`); conventions as in plexus.h: a
 * plx_status is NULL on success and owned by the caller otherwise, out_*
 * parameters are written only on success.
 *
 * Use: plx_dynamic_model_open once; per execution, plx_dynamic_model_acquire
 * with the inputs' shapes, execute the specialisation's loaded network
 * (plexus/network.h) with bindings of the sizes its inputs and outputs
 * have (plx_specialization_model gives them, output shapes included), then
 * plx_dynamic_model_release. A held specialisation is never evicted.
 *
 * Cost: a specialisation reads and imports the model file again with its
 * shapes; the file's initializers are decoded once, by the first import,
 * and shared by every specialisation (plx_model_weights), while what an
 * import computes from them (folded constants) and what backends make of
 * them at load are each specialisation's own; the cache capacity bounds
 * how many are loaded at once. The file (and its external data) must stay
 * as it was while the model is open.
 *
 * Thread-safety: acquire, release, prepare and stats may be called from
 * any thread at once (one lock; a miss specialises under it, so a miss
 * delays other threads' lookups). A specialisation's loaded network follows
 * plexus/network.h's rules (one plx_loaded_network_execute at a time, or
 * working memories per thread). destroy only when no specialisation is
 * held and no other call is in flight. */
#ifndef PLEXUS_DYNAMIC_H
#define PLEXUS_DYNAMIC_H

#include <stddef.h>
#include <stdint.h>

#include <plexus/model.h>
#include <plexus/network.h>
#include <plexus/plexus.h>
#include <plexus/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct plx_dynamic_options {
    uint32_t struct_size; /* set by plx_dynamic_options_init */
    /* How the file is opened: format, and constants frozen at import.
     * model.shapes fixes open dims for every specialisation (a signature
     * may not contradict them); model.data_shapes is not used (the
     * signature gives the shapes). */
    plx_model_options model;
    /* How each specialisation is optimised (backends in order of
     * preference, fallback, rewrites) and loaded. */
    plx_optimize_options optimize;
    plx_load_options load;
    /* Specialisations kept loaded: 1 or more (default 8). More may be held
     * at once; the least recently used unheld ones are evicted down to
     * this number. */
    size_t cache_capacity;
} plx_dynamic_options;

/* Defaults: each member's own init, cache_capacity 8. */
PLX_API void plx_dynamic_options_init(plx_dynamic_options *options);

typedef struct plx_dynamic_model plx_dynamic_model;

/* Opens `path` for specialisation on `runtime` (which must outlive the
 * model). The file is read and its format chosen as by plx_model_open,
 * but no specialisation is made yet: a file that cannot be read or whose
 * format is unknown fails here, a model the shapes given later cannot
 * import fails at acquire. `options` NULL means the defaults (every
 * available backend of the runtime, in its order). The strings and arrays
 * of `options` are copied. */
PLX_API plx_status plx_dynamic_model_open(plx_runtime *runtime, const char *path,
                                          const plx_dynamic_options *options,
                                          plx_dynamic_model **out_model);

/* Unloads every specialisation and frees the model; sets *model NULL; NULL
 * is ignored. No specialisation may be held. */
PLX_API void plx_dynamic_model_destroy(plx_dynamic_model **model);

typedef struct plx_specialization plx_specialization;

/* The most data an input may have for the model to specialise on its
 * value: a larger one that the model needs at import is refused (the
 * model would need control flow at run time). */
#define PLX_DYNAMIC_MAX_VALUE_BYTES 4096

/* What an execution brings: `shapes` name graph inputs and give their
 * whole shapes (dims the model fixes must agree); `values` offer inputs'
 * values (their data is read during the call only, and a probe, when the
 * model has one, runs on them: they must then be the data the execution
 * binds). The model takes, as
 * plx_model_options.constants, the values of its valued inputs; a value
 * of any other input stands for its shape. Every input whose dims the
 * model and options.model.shapes leave open must be named, and every
 * valued input must have a value. Any order; a name appears once in all. */
typedef struct plx_dynamic_signature {
    const plx_model_input_shape *shapes;
    size_t shape_count;
    const plx_model_constant_input *values;
    size_t value_count;
} plx_dynamic_signature;

/* The specialisation for `signature` (NULL: no shapes, no values): found
 * in the cache (a hit: no allocation) or made and cached (a miss). Its
 * network's inputs are the model's less the valued ones. On a miss whose
 * import needs the values of inputs not yet valued, those the signature
 * offers become valued and the import is made again. The caller holds
 * it until plx_dynamic_model_release. Errors: NULL arguments; a name given
 * twice, or a value for an input the options freeze; an input the import
 * needs the value of that the signature gives no value for
 * (PLX_INVALID_ARGUMENT) or one of more than PLX_DYNAMIC_MAX_VALUE_BYTES
 * (the import's code, PLX_UNSUPPORTED), each naming the input and the
 * node; and the import's, optimiser's and loader's errors for this
 * signature (naming the input, the dim, the node), as PLX_INVALID_ARGUMENT
 * or PLX_UNSUPPORTED. A failed specialisation is not cached. */
PLX_API plx_status plx_dynamic_model_acquire(plx_dynamic_model *model,
                                             const plx_dynamic_signature *signature,
                                             plx_specialization **out_specialization);

/* Gives back a specialisation from acquire; sets *specialization NULL;
 * NULL is ignored. No execution of its network may be in flight. */
PLX_API void plx_dynamic_model_release(plx_dynamic_model *model,
                                       plx_specialization **specialization);

/* Makes the specialisations of `count` signatures ahead of executions (a
 * server's batch sizes), each as acquire then release; stops at the first
 * error. They stay cached as any other, subject to the capacity. */
PLX_API plx_status plx_dynamic_model_prepare(plx_dynamic_model *model,
                                             const plx_dynamic_signature *signatures,
                                             size_t count);

/* The specialisation's static model (its inputs and outputs with their
 * concrete shapes and binding ids, plexus/model.h) and its loaded network.
 * Valid while the specialisation is held. */
PLX_API const plx_model *plx_specialization_model(const plx_specialization *specialization);
PLX_API plx_loaded_network *plx_specialization_network(plx_specialization *specialization);
/* How long making it took (import, optimise, load), in milliseconds. */
PLX_API double plx_specialization_time_ms(const plx_specialization *specialization);

/* The valued inputs found so far: their count, and up to `max` of their
 * names in out_names (NULL: only the count). The names live as long as
 * the model. */
PLX_API size_t plx_dynamic_model_valued_inputs(plx_dynamic_model *model, const char **out_names,
                                              size_t max);
/* The valued tensors found so far (computed by probes), likewise. */
PLX_API size_t plx_dynamic_model_valued_tensors(plx_dynamic_model *model,
                                               const char **out_names, size_t max);

typedef struct plx_dynamic_stats {
    uint64_t hits;       /* acquires served from the cache */
    uint64_t misses;     /* specialisations made, probes included */
    uint64_t failures;   /* misses whose specialisation failed (not cached) */
    uint64_t evictions;  /* specialisations unloaded to keep to the capacity */
    size_t cached;       /* specialisations loaded now */
    double specialize_ms; /* time spent making specialisations, in all */
} plx_dynamic_stats;

PLX_API void plx_dynamic_model_stats(plx_dynamic_model *model, plx_dynamic_stats *out_stats);

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_DYNAMIC_H */
