/* Dynamic models (plexus/dynamic.h): a model file specialised per input
 * signature into a static loaded network, kept in a bounded LRU cache.
 * Built on the public model, optimiser and loader APIs; one lock guards
 * the cache. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <plexus/dynamic.h>

#include "internal.h"
#include "model_importer.h"

/* One cached specialisation: its signature (owned copies of the shapes and
 * values, names and data included), model and loaded network. */
struct plx_specialization {
    plx_model_input_shape *key;
    size_t key_count;
    plx_model_constant_input *values;
    size_t value_count;
    plx_model *model;
    plx_loaded_network *loaded;
    size_t holds;       /* acquires not yet released */
    uint64_t last_used; /* the model's clock at the last acquire or release */
    double ms;
    /* The values of the valued tensors it was made with (part of its key;
     * owned copies), when the model has valued tensors. */
    plx_model_constant_input *tvalues;
    size_t tvalue_count;
    /* A probe: a network that computes the model's valued tensors (the
     * first `probe_tensors` of them) from the inputs, for a signature's
     * shapes and valued inputs. Its bindings and output buffer are made
     * with it; `probe_values` views its outputs after a run. */
    bool probe;
    size_t probe_tensors;
    plx_tensor_binding *probe_in, *probe_out;
    size_t probe_in_count, probe_out_count;
    void *probe_data;
    plx_model_constant_input *probe_values;
};

struct plx_dynamic_model {
    plx_runtime *rt;
    char *path;
    /* options, deep copies: the model's (format, fixed shapes, constants
     * with their data), the optimiser's (backend ids) and the loader's. */
    plx_model_options model_opts;
    char *format;
    plx_model_input_shape *fixed;
    size_t fixed_count;
    plx_model_constant_input *constants;
    size_t constant_count;
    plx_optimize_options opt;
    char **backends;
    size_t backend_count;
    plx_load_options load;
    size_t capacity;
    /* The file's initializers, decoded once and shared by every
     * specialisation and probe. */
    plx_model_weights *weights;

    pthread_mutex_t lock;
    /* Inputs whose values the model needs at import (learnt from the
     * imports that needed them): a signature's values for them are frozen
     * and join the key. Only grows. */
    char **valued;
    size_t valued_count, valued_allocated;
    /* Tensors computed from inputs too big to be valued whose values the
     * model needs at import (an If's condition computed from the audio):
     * each signature's are computed by a probe network, then frozen into
     * the specialisation and joined to its key. Only grows. */
    char **vtensors;
    size_t vtensor_count, vtensor_allocated;
    plx_specialization **entries;
    size_t count, allocated;
    uint64_t clock;
    plx_dynamic_stats stats;
};

PLX_API void plx_dynamic_options_init(plx_dynamic_options *options) {
    if (!options) {
        return;
    }
    memset(options, 0, sizeof *options);
    options->struct_size = sizeof *options;
    plx_model_options_init(&options->model);
    plx_optimize_options_init(&options->optimize);
    plx_load_options_init(&options->load);
    options->cache_capacity = 8;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void free_shapes(plx_model_input_shape *shapes, size_t count) {
    for (size_t i = 0; shapes && i < count; i++) {
        free((char *)shapes[i].name);
    }
    free(shapes);
}

/* Copies `count` shapes, names included; NULL on allocation failure. */
static plx_model_input_shape *copy_shapes(const plx_model_input_shape *shapes, size_t count) {
    plx_model_input_shape *c = calloc(count ? count : 1, sizeof *c);
    for (size_t i = 0; c && i < count; i++) {
        c[i] = shapes[i];
        c[i].name = strdup(shapes[i].name);
        if (!c[i].name) {
            free_shapes(c, i);
            return NULL;
        }
    }
    return c;
}

static void free_values(plx_model_constant_input *values, size_t count) {
    for (size_t i = 0; values && i < count; i++) {
        free((char *)values[i].name);
        free((void *)values[i].data);
    }
    free(values);
}

/* Copies `count` values, names and data included, into *out (*out_count
 * of them copied, also on failure, for free_values). false: a value
 * without a name, an invalid info, no data, or out of memory. */
static bool copy_values(const plx_model_constant_input *values, size_t count,
                        plx_model_constant_input **out, size_t *out_count) {
    *out_count = 0;
    *out = calloc(count ? count : 1, sizeof **out);
    if (!*out) {
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        const plx_model_constant_input *k = &values[i];
        size_t bytes = 0;
        if (!k->name || !plx_tensor_info_byte_size(&k->info, &bytes) || (bytes && !k->data)) {
            return false;
        }
        plx_model_constant_input *c = &(*out)[(*out_count)++];
        c->info = k->info;
        c->name = strdup(k->name);
        void *data = malloc(bytes ? bytes : 1);
        if (data && bytes) {
            memcpy(data, k->data, bytes);
        }
        c->data = data;
        if (!c->name || !data) {
            return false;
        }
    }
    return true;
}

static void free_options(plx_dynamic_model *m) {
    free(m->path);
    free(m->format);
    free_shapes(m->fixed, m->fixed_count);
    free_values(m->constants, m->constant_count);
    for (size_t i = 0; m->backends && i < m->backend_count; i++) {
        free(m->backends[i]);
    }
    free(m->backends);
}

/* The options' strings and arrays copied into m; the optimiser's backends
 * default to every available backend of the runtime. */
static plx_status copy_options(plx_dynamic_model *m, const plx_dynamic_options *o) {
    const plx_model_options *mo = &o->model;
    if ((mo->shape_count && !mo->shapes) || (mo->constant_count && !mo->constants) ||
        (o->optimize.backend_count && !o->optimize.backends)) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "%s: plx_dynamic_options: a count without its array", m->path);
    }
    for (size_t i = 0; i < mo->shape_count; i++) {
        if (!mo->shapes[i].name) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "%s: plx_dynamic_options.model.shapes[%zu] has no name",
                                      m->path, i);
        }
    }
    for (size_t i = 0; i < o->optimize.backend_count; i++) {
        if (!o->optimize.backends[i]) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "%s: plx_dynamic_options.optimize.backends[%zu] is NULL",
                                      m->path, i);
        }
    }
    m->model_opts = *mo;
    m->model_opts.data_shapes = NULL;
    m->model_opts.data_shape_count = 0;
    m->format = mo->format ? strdup(mo->format) : NULL;
    m->fixed = copy_shapes(mo->shapes, mo->shape_count);
    m->fixed_count = m->fixed ? mo->shape_count : 0;
    if (!copy_values(mo->constants, mo->constant_count, &m->constants, &m->constant_count)) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "%s: plx_dynamic_options.model.constants: one without a name, "
                                  "an invalid tensor info or data, or out of memory", m->path);
    }
    bool ok = (!mo->format || m->format) && m->fixed;
    m->opt = o->optimize;
    m->load = o->load;
    size_t nb = o->optimize.backend_count;
    if (!nb) {
        for (size_t i = 0; i < plx_runtime_backend_count(m->rt); i++) {
            nb += plx_runtime_backend(m->rt, i)->available;
        }
    }
    m->backends = calloc(nb ? nb : 1, sizeof *m->backends);
    ok = ok && m->backends;
    if (ok && o->optimize.backend_count) {
        for (size_t i = 0; ok && i < nb; i++) {
            ok = (m->backends[m->backend_count++] = strdup(o->optimize.backends[i])) != NULL;
        }
    } else if (ok) {
        for (size_t i = 0; ok && i < plx_runtime_backend_count(m->rt); i++) {
            const plx_backend_info *b = plx_runtime_backend(m->rt, i);
            if (b->available) {
                ok = (m->backends[m->backend_count++] = strdup(b->id)) != NULL;
            }
        }
    }
    if (!ok) {
        return plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory copying the options",
                                  m->path);
    }
    m->model_opts.format = m->format;
    m->model_opts.shapes = m->fixed;
    m->model_opts.shape_count = m->fixed_count;
    m->model_opts.constants = m->constants;
    m->model_opts.constant_count = m->constant_count;
    m->opt.backends = (const char *const *)m->backends;
    m->opt.backend_count = m->backend_count;
    return NULL;
}

PLX_API plx_status plx_dynamic_model_open(plx_runtime *runtime, const char *path,
                                          const plx_dynamic_options *options,
                                          plx_dynamic_model **out_model) {
    if (!runtime || !path || !out_model) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "plx_dynamic_model_open: %s is NULL",
                                  !runtime ? "runtime" : !path ? "path" : "out_model");
    }
    plx_dynamic_options defaults;
    plx_dynamic_options_init(&defaults);
    if (!options) {
        options = &defaults;
    } else if (options->struct_size < sizeof *options) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "%s: plx_dynamic_options.struct_size %u is too small: call "
                                  "plx_dynamic_options_init", path, (unsigned)options->struct_size);
    }
    if (options->cache_capacity < 1) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "%s: plx_dynamic_options.cache_capacity must be 1 or more",
                                  path);
    }
    plx_status st = plxi_model_check_format(path, options->model.format);
    if (st) {
        return st;
    }
    /* O_NONBLOCK: opening a FIFO must not wait for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return plxi_status_create(PLX_IO_ERROR, "%s: cannot open the model: %s", path,
                                  strerror(errno));
    }
    struct stat fst;
    bool regular = fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode);
    close(fd);
    if (!regular) {
        return plxi_status_create(PLX_IO_ERROR, "%s: not a regular file", path);
    }
    plx_dynamic_model *m = calloc(1, sizeof *m);
    if (!m) {
        return plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    m->rt = runtime;
    m->path = strdup(path);
    m->capacity = options->cache_capacity;
    st = m->path ? copy_options(m, options)
                 : plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", path);
    if (!st) {
        st = plx_model_weights_create(&m->weights);
    }
    if (!st && pthread_mutex_init(&m->lock, NULL) != 0) {
        st = plxi_status_create(PLX_OUT_OF_MEMORY, "%s: cannot create a lock", path);
    }
    if (st) {
        plx_model_weights_release(&m->weights);
        free_options(m);
        free(m);
        return st;
    }
    *out_model = m;
    return NULL;
}

static void free_entry(plx_specialization *e) {
    /* The loaded network borrows the model's constants: unload it first. */
    plx_loaded_network_unload(&e->loaded);
    plx_model_destroy(&e->model);
    free_shapes(e->key, e->key_count);
    free_values(e->values, e->value_count);
    free_values(e->tvalues, e->tvalue_count);
    free(e->probe_in);
    free(e->probe_out);
    free(e->probe_data);
    free(e->probe_values);
    free(e);
}

static void free_names(char **names, size_t count) {
    for (size_t i = 0; i < count; i++) {
        free(names[i]);
    }
    free(names);
}

/* Appends a copy of `name` to a growing array of names; false: out of
 * memory (nothing added). */
static bool push_name(char ***names, size_t *count, size_t *allocated, const char *name) {
    char *copy = strdup(name);
    if (copy && *count == *allocated) {
        size_t n = *allocated ? 2 * *allocated : 4;
        char **grown = realloc(*names, n * sizeof *grown);
        if (grown) {
            *names = grown;
            *allocated = n;
        }
    }
    if (!copy || *count == *allocated) {
        free(copy);
        return false;
    }
    (*names)[(*count)++] = copy;
    return true;
}

PLX_API void plx_dynamic_model_destroy(plx_dynamic_model **model) {
    if (!model || !*model) {
        return;
    }
    plx_dynamic_model *m = *model;
    for (size_t i = 0; i < m->count; i++) {
        free_entry(m->entries[i]);
    }
    free(m->entries);
    free_names(m->valued, m->valued_count);
    free_names(m->vtensors, m->vtensor_count);
    plx_model_weights_release(&m->weights);
    pthread_mutex_destroy(&m->lock);
    free_options(m);
    free(m);
    *model = NULL;
}

static bool same_dims(const plx_model_input_shape *a, uint32_t rank, const int64_t *dims) {
    return a->rank == rank && memcmp(a->dims, dims, rank * sizeof dims[0]) == 0;
}

static bool same_value(const plx_model_constant_input *a, const plx_model_constant_input *b) {
    size_t bytes = 0;
    return strcmp(a->name, b->name) == 0 && plx_tensor_info_same_shape(&a->info, &b->info) &&
           plx_tensor_info_byte_size(&a->info, &bytes) &&
           (bytes == 0 || memcmp(a->data, b->data, bytes) == 0);
}

static bool is_valued(const plx_dynamic_model *m, const char *name) {
    for (size_t i = 0; i < m->valued_count; i++) {
        if (strcmp(m->valued[i], name) == 0) {
            return true;
        }
    }
    return false;
}

/* Whether entry e is the specialisation for `sig` as the model keys it
 * now: e's values are those of sig's valued inputs, and e's shapes those
 * of the rest (a value of an input that is not valued counts as its
 * shape). Any order; allocates nothing. Under the lock. */
static bool matches(const plx_dynamic_model *m, const plx_specialization *e,
                    const plx_dynamic_signature *sig) {
    size_t shapes = 0, values = 0;
    for (size_t i = 0; i < sig->shape_count + sig->value_count; i++) {
        bool found = false;
        const plx_model_constant_input *v =
            i < sig->shape_count ? NULL : &sig->values[i - sig->shape_count];
        if (v && is_valued(m, v->name)) {
            values++;
            for (size_t k = 0; k < e->value_count && !found; k++) {
                found = same_value(&e->values[k], v);
            }
        } else {
            const char *name = v ? v->name : sig->shapes[i].name;
            uint32_t rank = v ? v->info.rank : sig->shapes[i].rank;
            const int64_t *dims = v ? v->info.dims : sig->shapes[i].dims;
            shapes++;
            for (size_t k = 0; k < e->key_count && !found; k++) {
                found = strcmp(e->key[k].name, name) == 0 && same_dims(&e->key[k], rank, dims);
            }
        }
        if (!found) {
            return false;
        }
    }
    return shapes == e->key_count && values == e->value_count;
}

/* Unloads unheld specialisations, least recently used first, until at
 * most `capacity` are cached. Under the lock. */
static void evict(plx_dynamic_model *m) {
    while (m->count > m->capacity) {
        size_t victim = SIZE_MAX;
        for (size_t i = 0; i < m->count; i++) {
            if (!m->entries[i]->holds &&
                (victim == SIZE_MAX || m->entries[i]->last_used < m->entries[victim]->last_used)) {
                victim = i;
            }
        }
        if (victim == SIZE_MAX) {
            return; /* every one is held: evicted when released */
        }
        free_entry(m->entries[victim]);
        m->entries[victim] = m->entries[--m->count];
        m->stats.evictions++;
    }
}

/* The shapes to import with: the options' fixed shapes that the request
 * does not name, then the request's. A request that contradicts a fixed
 * shape is an error. */
static plx_status merge_shapes(const plx_dynamic_model *m, const plx_model_input_shape *shapes,
                               size_t count, plx_model_input_shape **out, size_t *out_count) {
    plx_model_input_shape *all = calloc(m->fixed_count + count + 1, sizeof *all);
    if (!all) {
        return plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", m->path);
    }
    size_t n = 0;
    for (size_t f = 0; f < m->fixed_count; f++) {
        const plx_model_input_shape *same = NULL;
        for (size_t i = 0; i < count && !same; i++) {
            same = strcmp(shapes[i].name, m->fixed[f].name) == 0 ? &shapes[i] : NULL;
        }
        if (same && !same_dims(same, m->fixed[f].rank, m->fixed[f].dims)) {
            free(all);
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "%s: input '%s': the shape given differs from the one the "
                                      "options fix", m->path, same->name);
        }
        if (!same) {
            all[n++] = m->fixed[f];
        }
    }
    if (count) {
        memcpy(all + n, shapes, count * sizeof *shapes);
    }
    *out = all;
    *out_count = n + count;
    return NULL;
}

/* The signature as the model keys it now: the shapes of its inputs that
 * are not valued (a value of one counts as its shape), and the values of
 * the valued ones. The arrays borrow the signature's names and data. */
static plx_status split_signature(const plx_dynamic_model *m, const plx_dynamic_signature *sig,
                                  plx_model_input_shape **out_shapes, size_t *out_shape_count,
                                  plx_model_constant_input **out_values,
                                  size_t *out_value_count) {
    size_t n = sig->shape_count + sig->value_count;
    plx_model_input_shape *shapes = calloc(n + 1, sizeof *shapes);
    plx_model_constant_input *values = calloc(n + 1, sizeof *values);
    if (!shapes || !values) {
        free(shapes);
        free(values);
        return plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", m->path);
    }
    size_t ns = 0, nv = 0;
    for (size_t i = 0; i < sig->shape_count; i++) {
        shapes[ns++] = sig->shapes[i];
    }
    for (size_t i = 0; i < sig->value_count; i++) {
        const plx_model_constant_input *v = &sig->values[i];
        if (is_valued(m, v->name)) {
            values[nv++] = *v;
        } else {
            plx_model_input_shape *s = &shapes[ns++];
            s->name = v->name;
            s->rank = v->info.rank;
            memcpy(s->dims, v->info.dims, v->info.rank * sizeof s->dims[0]);
        }
    }
    *out_shapes = shapes;
    *out_shape_count = ns;
    *out_values = values;
    *out_value_count = nv;
    return NULL;
}

/* After an import that failed needing the values of `report`'s inputs:
 * each becomes valued when the signature gives its value and the value
 * is small; *out_learnt tells whether one did (then import again). An
 * input the signature gives no value for, or too big a one, is an error
 * that wraps the import's (`cause`, consumed). */
static plx_status learn_valued(plx_dynamic_model *m, const plx_dynamic_signature *sig,
                               const plx_model_import_report *report, plx_status cause,
                               bool *out_learnt) {
    *out_learnt = false;
    for (size_t r = 0; r < report->value_input_count; r++) {
        const char *name = report->value_inputs[r];
        const plx_model_constant_input *v = NULL;
        for (size_t i = 0; i < sig->value_count && !v; i++) {
            v = strcmp(sig->values[i].name, name) == 0 ? &sig->values[i] : NULL;
        }
        if (v && is_valued(m, name)) {
            continue; /* frozen already: not what failed */
        }
        size_t bytes = 0;
        if (v && plx_tensor_info_byte_size(&v->info, &bytes) &&
            bytes > PLX_DYNAMIC_MAX_VALUE_BYTES) {
            plx_status st = plxi_status_create(
                plx_status_get_code(cause),
                "%s: input '%s' (%zu bytes) sets what the model computes at import; Plexus "
                "specialises on the values of inputs of at most %d bytes, and has no run-time "
                "control flow yet: %s", m->path, name, bytes, PLX_DYNAMIC_MAX_VALUE_BYTES,
                plx_status_get_message(cause));
            plx_status_free(cause);
            return st;
        }
        if (!v) {
            plx_status st = plxi_status_create(
                PLX_INVALID_ARGUMENT,
                "%s: input '%s' needs a value (plx_dynamic_signature.values): the model takes "
                "what is computed from it as an attribute: %s", m->path, name,
                plx_status_get_message(cause));
            plx_status_free(cause);
            return st;
        }
        if (!push_name(&m->valued, &m->valued_count, &m->valued_allocated, name)) {
            plx_status_free(cause);
            *out_learnt = false;
            return plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", m->path);
        }
        *out_learnt = true;
    }
    if (*out_learnt) {
        plx_status_free(cause);
        return NULL;
    }
    return cause;
}

/* After an import that failed: the tensors of `report` not yet valued
 * become valued tensors (each signature's then computed by a probe).
 * Whether one did; false also when out of memory. */
static bool learn_tensors(plx_dynamic_model *m, const plx_model_import_report *report) {
    bool more = false;
    for (size_t r = 0; r < report->value_tensor_count; r++) {
        const char *name = report->value_tensors[r];
        bool known = false;
        for (size_t i = 0; i < m->vtensor_count && !known; i++) {
            known = strcmp(m->vtensors[i], name) == 0;
        }
        if (!known && !push_name(&m->vtensors, &m->vtensor_count, &m->vtensor_allocated, name)) {
            return false;
        }
        more = more || !known;
    }
    return more;
}

/* How an import for a signature ended besides success or an error: it
 * found valued tensors to compute first (acquire then makes or runs a
 * probe and tries again). */
typedef enum import_outcome { IMPORTED, NEEDS_TENSORS } import_outcome;

/* Imports the model for `sig` as keyed now, with the valued tensors'
 * values `tv` (tv_count of them) frozen; a probe (e->probe) instead
 * outputs the valued tensors. When the import needs the values of more
 * inputs, learns them (learn_valued) and imports again; when those inputs
 * cannot be valued but the tensors computed from them can, learns the
 * tensors (*out NEEDS_TENSORS, no error). */
static plx_status import_for(plx_dynamic_model *m, const plx_dynamic_signature *sig,
                             const plx_model_constant_input *tv, size_t tv_count,
                             plx_specialization *e, import_outcome *out) {
    *out = IMPORTED;
    for (;;) {
        plx_model_input_shape *shapes = NULL, *all = NULL;
        plx_model_constant_input *values = NULL, *frozen = NULL;
        size_t ns = 0, nv = 0, all_count = 0;
        plx_status st = split_signature(m, sig, &shapes, &ns, &values, &nv);
        if (!st) {
            st = merge_shapes(m, shapes, ns, &all, &all_count);
        }
        if (!st) {
            /* The options' constants, the valued inputs', the tensors'. */
            frozen = calloc(m->constant_count + nv + tv_count + 1, sizeof *frozen);
            if (!frozen) {
                st = plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", m->path);
            } else {
                if (m->constant_count) {
                    memcpy(frozen, m->constants, m->constant_count * sizeof *frozen);
                }
                if (nv) {
                    memcpy(frozen + m->constant_count, values, nv * sizeof *frozen);
                }
                if (tv_count) {
                    memcpy(frozen + m->constant_count + nv, tv, tv_count * sizeof *frozen);
                }
            }
        }
        plx_model_import_report report = {0};
        if (!st) {
            plx_model_options o = m->model_opts;
            o.shapes = all;
            o.shape_count = all_count;
            o.constants = frozen;
            o.constant_count = m->constant_count + nv + tv_count;
            o.report = &report;
            o.weights = m->weights;
            if (e->probe) {
                o.outputs = (const char *const *)m->vtensors;
                o.output_count = e->probe_tensors;
            }
            st = plx_model_open(m->path, &o, &e->model);
        }
        if (!st) {
            /* The key: the shapes and values the import took. */
            e->key = copy_shapes(shapes, ns);
            e->key_count = e->key ? ns : 0;
            if (!e->key || !copy_values(values, nv, &e->values, &e->value_count) ||
                !copy_values(tv, tv_count, &e->tvalues, &e->tvalue_count)) {
                st = plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", m->path);
            }
        }
        bool learnt = false;
        if (st && report.value_input_count) {
            st = learn_valued(m, sig, &report, st, &learnt);
            if (st && !e->probe && learn_tensors(m, &report)) {
                /* The inputs cannot be valued, the tensors can. */
                plx_status_free(st);
                st = NULL;
                *out = NEEDS_TENSORS;
            }
        }
        plx_model_import_report_clear(&report);
        free(shapes);
        free(values);
        free(all);
        free(frozen);
        if (!learnt) {
            return st;
        }
    }
}

/* Imports, optimises and loads the specialisation (or, `probe`, the probe)
 * for the request, with the valued tensors' values `tv`. */
static plx_status specialize(plx_dynamic_model *m, const plx_dynamic_signature *sig,
                             const plx_model_constant_input *tv, size_t tv_count, bool probe,
                             plx_specialization **out, import_outcome *outcome) {
    double t0 = now_ms();
    plx_specialization *e = calloc(1, sizeof *e);
    plx_status st = NULL;
    if (!e) {
        st = plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", m->path);
    } else {
        e->probe = probe;
        e->probe_tensors = probe ? m->vtensor_count : 0;
        st = import_for(m, sig, tv, tv_count, e, outcome);
    }
    plx_optimized_network *optimized = NULL;
    bool made = !st && *outcome == IMPORTED;
    if (made) {
        st = plx_optimize(m->rt, plx_model_network(e->model), &m->opt, &optimized);
    }
    if (made && !st) {
        st = plx_runtime_load_network(m->rt, &optimized, &m->load, &e->loaded);
    }
    if (st || !made) {
        if (e) {
            free_entry(e);
        }
        return st;
    }
    e->ms = now_ms() - t0;
    *out = e;
    return NULL;
}

/* A probe's bindings and output buffer, made once: its inputs take the
 * signature's offered values at each run; its outputs (the valued
 * tensors) go to one buffer, viewed by probe_values. */
static plx_status prepare_probe(plx_dynamic_model *m, plx_specialization *p) {
    const plx_model *pm = p->model;
    p->probe_in_count = plx_model_input_count(pm);
    p->probe_out_count = plx_model_output_count(pm);
    p->probe_in = calloc(p->probe_in_count + 1, sizeof *p->probe_in);
    p->probe_out = calloc(p->probe_out_count + 1, sizeof *p->probe_out);
    p->probe_values = calloc(p->probe_out_count + 1, sizeof *p->probe_values);
    size_t total = 0, offsets[64];
    bool ok = p->probe_in && p->probe_out && p->probe_values && p->probe_out_count <= 64;
    for (size_t i = 0; ok && i < p->probe_out_count; i++) {
        size_t bytes = 0;
        ok = plx_tensor_info_byte_size(&plx_model_output(pm, i)->info, &bytes);
        offsets[i] = total;
        total += (bytes + 63) / 64 * 64;
    }
    p->probe_data = ok ? calloc(total ? total : 1, 1) : NULL;
    if (!p->probe_data) {
        return plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory making a probe",
                                  m->path);
    }
    for (size_t i = 0; i < p->probe_in_count; i++) {
        p->probe_in[i].binding_id = plx_model_input(pm, i)->binding_id;
    }
    for (size_t i = 0; i < p->probe_out_count; i++) {
        const plx_model_io *io = plx_model_output(pm, i);
        size_t bytes = 0;
        plx_tensor_info_byte_size(&io->info, &bytes);
        p->probe_out[i] = (plx_tensor_binding){io->binding_id,
                                               (char *)p->probe_data + offsets[i], bytes, 0};
        p->probe_values[i] = (plx_model_constant_input){io->name, io->info,
                                                        p->probe_out[i].data};
    }
    return NULL;
}

/* Runs the probe on the signature's offered values: afterwards
 * probe_values hold the valued tensors. Allocates nothing. */
static plx_status run_probe(plx_dynamic_model *m, plx_specialization *p,
                            const plx_dynamic_signature *sig) {
    for (size_t i = 0; i < p->probe_in_count; i++) {
        const plx_model_io *io = plx_model_input(p->model, i);
        const plx_model_constant_input *v = NULL;
        for (size_t k = 0; k < sig->value_count && !v; k++) {
            v = strcmp(sig->values[k].name, io->name) == 0 ? &sig->values[k] : NULL;
        }
        size_t bytes = 0;
        plx_tensor_info_byte_size(&io->info, &bytes);
        if (!v) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "%s: input '%s' needs a value (plx_dynamic_signature."
                                      "values): the model computes from it '%s', whose value it "
                                      "needs at import", m->path, io->name, m->vtensors[0]);
        }
        p->probe_in[i].data = (void *)v->data;
        p->probe_in[i].size = bytes;
    }
    plx_status st = plx_loaded_network_execute(p->loaded, p->probe_in, p->probe_in_count,
                                               p->probe_out, p->probe_out_count);
    for (size_t i = 0; !st && i < p->probe_out_count; i++) {
        if (p->probe_out[i].size > PLX_DYNAMIC_MAX_VALUE_BYTES) {
            st = plxi_status_create(PLX_UNSUPPORTED,
                                    "%s: tensor '%s' (%zu bytes), computed from the inputs, "
                                    "sets what the model computes at import; Plexus "
                                    "specialises on values of at most %d bytes", m->path,
                                    p->probe_values[i].name, p->probe_out[i].size,
                                    PLX_DYNAMIC_MAX_VALUE_BYTES);
        }
    }
    return st;
}

/* Makes room for one more entry. */
static plx_status reserve_entry(plx_dynamic_model *m) {
    if (m->count < m->allocated) {
        return NULL;
    }
    size_t n = m->allocated ? 2 * m->allocated : 8;
    plx_specialization **grown = realloc(m->entries, n * sizeof *grown);
    if (!grown) {
        return plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", m->path);
    }
    m->entries = grown;
    m->allocated = n;
    return NULL;
}

/* The entry for `sig` among the probes (probe) or the specialisations,
 * whose valued tensors' values are `tv`; NULL when none. */
static plx_specialization *lookup(const plx_dynamic_model *m, const plx_dynamic_signature *sig,
                                  bool probe, const plx_model_constant_input *tv,
                                  size_t tv_count) {
    for (size_t i = 0; i < m->count; i++) {
        plx_specialization *e = m->entries[i];
        if (e->probe != probe || (probe && e->probe_tensors != m->vtensor_count) ||
            (!probe && e->tvalue_count != tv_count) || !matches(m, e, sig)) {
            continue;
        }
        bool same = true;
        for (size_t k = 0; k < tv_count && same; k++) {
            same = same_value(&e->tvalues[k], &tv[k]);
        }
        if (same) {
            return e;
        }
    }
    return NULL;
}

/* The probe for `sig`, found or made (a miss), run on its values. */
static plx_status probe_values(plx_dynamic_model *m, const plx_dynamic_signature *sig,
                               plx_specialization **out) {
    plx_specialization *p = lookup(m, sig, true, NULL, 0);
    plx_status st = NULL;
    if (!p) {
        import_outcome outcome;
        m->stats.misses++;
        st = reserve_entry(m);
        if (!st) {
            st = specialize(m, sig, NULL, 0, true, &p, &outcome);
        }
        if (!st) {
            st = prepare_probe(m, p);
            if (st) {
                free_entry(p);
            }
        }
        if (st) {
            m->stats.failures++;
            return st;
        }
        m->entries[m->count++] = p;
        m->stats.specialize_ms += p->ms;
    }
    p->last_used = ++m->clock;
    st = run_probe(m, p, sig);
    if (!st) {
        *out = p;
    }
    return st;
}

/* The name of entry i of the signature: its shapes, then its values. */
static const char *sig_name(const plx_dynamic_signature *sig, size_t i) {
    return i < sig->shape_count ? sig->shapes[i].name : sig->values[i - sig->shape_count].name;
}

/* What acquire checks before the lookup: names present and unique across
 * shapes and values, ranks in range, values with data and not for an
 * input the options freeze. */
static plx_status check_signature(const plx_dynamic_model *m, const plx_dynamic_signature *sig) {
    if ((sig->shape_count && !sig->shapes) || (sig->value_count && !sig->values)) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "%s: the signature has a count "
                                  "without its array", m->path);
    }
    size_t n = sig->shape_count + sig->value_count;
    for (size_t i = 0; i < n; i++) {
        const char *name = sig_name(sig, i);
        bool is_shape = i < sig->shape_count;
        const plx_tensor_info *vi = is_shape ? NULL : &sig->values[i - sig->shape_count].info;
        size_t bytes = 0;
        if (!name) {
            return plxi_status_create(PLX_INVALID_ARGUMENT, "%s: %s[%zu] has no name", m->path,
                                      is_shape ? "shapes" : "values",
                                      is_shape ? i : i - sig->shape_count);
        }
        if (is_shape ? sig->shapes[i].rank > PLX_MAX_RANK
                     : !plx_tensor_info_byte_size(vi, &bytes) ||
                           (bytes && !sig->values[i - sig->shape_count].data)) {
            return plxi_status_create(PLX_INVALID_ARGUMENT, "%s: input '%s': %s", m->path, name,
                                      is_shape ? "rank above PLX_MAX_RANK"
                                               : "the value's info is invalid or it has no data");
        }
        for (size_t k = 0; k < i; k++) {
            if (strcmp(sig_name(sig, k), name) == 0) {
                return plxi_status_create(PLX_INVALID_ARGUMENT, "%s: input '%s' is given twice",
                                          m->path, name);
            }
        }
        for (size_t k = 0; !is_shape && k < m->constant_count; k++) {
            if (strcmp(m->constants[k].name, name) == 0) {
                return plxi_status_create(PLX_INVALID_ARGUMENT, "%s: input '%s' is frozen by the "
                                          "options: it takes no value per signature", m->path,
                                          name);
            }
        }
    }
    return NULL;
}

PLX_API plx_status plx_dynamic_model_acquire(plx_dynamic_model *model,
                                             const plx_dynamic_signature *signature,
                                             plx_specialization **out_specialization) {
    if (!model || !out_specialization) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "plx_dynamic_model_acquire: %s is NULL",
                                  !model ? "model" : "out_specialization");
    }
    static const plx_dynamic_signature none = {NULL, 0, NULL, 0};
    const plx_dynamic_signature *sig = signature ? signature : &none;
    plx_status st = check_signature(model, sig);
    if (st) {
        return st;
    }
    pthread_mutex_lock(&model->lock);
    plx_specialization *e = NULL;
    /* Each round learns more valued tensors or ends: at most one round per
     * tensor the model can name, and a few to spare. */
    for (int round = 0; !st && !e && round < 64; round++) {
        const plx_model_constant_input *tv = NULL;
        size_t tv_count = 0;
        if (model->vtensor_count) {
            plx_specialization *p = NULL;
            st = probe_values(model, sig, &p);
            if (st) {
                break;
            }
            tv = p->probe_values;
            tv_count = p->probe_out_count;
        }
        e = lookup(model, sig, false, tv, tv_count);
        if (e) {
            model->stats.hits++;
            break;
        }
        model->stats.misses++;
        import_outcome outcome = IMPORTED;
        st = reserve_entry(model);
        if (!st) {
            st = specialize(model, sig, tv, tv_count, false, &e, &outcome);
        }
        if (st) {
            model->stats.failures++;
        } else if (e) {
            model->entries[model->count++] = e;
            model->stats.specialize_ms += e->ms;
        } else {
            model->stats.misses--; /* not a specialisation: tensors to probe first */
        }
    }
    if (!st && !e) {
        st = plxi_status_create(PLX_UNSUPPORTED, "%s: the model kept needing more computed "
                                "values at import", model->path);
    }
    if (e && !st) {
        e->holds++;
        e->last_used = ++model->clock;
        evict(model);
        *out_specialization = e;
    }
    pthread_mutex_unlock(&model->lock);
    return st;
}

PLX_API void plx_dynamic_model_release(plx_dynamic_model *model,
                                       plx_specialization **specialization) {
    if (!model || !specialization || !*specialization) {
        return;
    }
    pthread_mutex_lock(&model->lock);
    plx_specialization *e = *specialization;
    if (e->holds) {
        e->holds--;
    }
    e->last_used = ++model->clock;
    evict(model);
    pthread_mutex_unlock(&model->lock);
    *specialization = NULL;
}

PLX_API plx_status plx_dynamic_model_prepare(plx_dynamic_model *model,
                                             const plx_dynamic_signature *signatures,
                                             size_t count) {
    if (!model || (count && !signatures)) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "plx_dynamic_model_prepare: model and signatures are required");
    }
    for (size_t k = 0; k < count; k++) {
        plx_specialization *s = NULL;
        plx_status st = plx_dynamic_model_acquire(model, &signatures[k], &s);
        if (st) {
            return st;
        }
        plx_dynamic_model_release(model, &s);
    }
    return NULL;
}

PLX_API const plx_model *plx_specialization_model(const plx_specialization *specialization) {
    return specialization ? specialization->model : NULL;
}

PLX_API plx_loaded_network *plx_specialization_network(plx_specialization *specialization) {
    return specialization ? specialization->loaded : NULL;
}

PLX_API double plx_specialization_time_ms(const plx_specialization *specialization) {
    return specialization ? specialization->ms : 0.0;
}

/* Up to `max` of the *count names of the array *names into out_names,
 * read under the model's lock (the array grows under it). */
static size_t list_names(plx_dynamic_model *m, char **const *names, const size_t *count,
                         const char **out_names, size_t max) {
    pthread_mutex_lock(&m->lock);
    size_t n = *count;
    for (size_t i = 0; out_names && i < n && i < max; i++) {
        out_names[i] = (*names)[i];
    }
    pthread_mutex_unlock(&m->lock);
    return n;
}

PLX_API size_t plx_dynamic_model_valued_inputs(plx_dynamic_model *model, const char **out_names,
                                              size_t max) {
    return model ? list_names(model, &model->valued, &model->valued_count, out_names, max) : 0;
}

PLX_API size_t plx_dynamic_model_valued_tensors(plx_dynamic_model *model,
                                               const char **out_names, size_t max) {
    return model ? list_names(model, &model->vtensors, &model->vtensor_count, out_names, max)
                 : 0;
}

PLX_API void plx_dynamic_model_stats(plx_dynamic_model *model, plx_dynamic_stats *out_stats) {
    if (!model || !out_stats) {
        return;
    }
    pthread_mutex_lock(&model->lock);
    *out_stats = model->stats;
    out_stats->cached = model->count;
    pthread_mutex_unlock(&model->lock);
}
