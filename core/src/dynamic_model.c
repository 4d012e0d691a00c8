/* Dynamic models (plexus/dynamic.h): a model file specialised per input
 * signature into a static loaded network, kept in a bounded LRU cache.
 * Built on the public model, optimiser and loader APIs; one lock guards
 * the cache. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

    pthread_mutex_t lock;
    /* Inputs whose values the model needs at import (learnt from the
     * imports that needed them): a signature's values for them are frozen
     * and join the key. Only grows. */
    char **valued;
    size_t valued_count, valued_allocated;
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
    FILE *f = fopen(path, "rb");
    if (!f) {
        return plxi_status_create(PLX_IO_ERROR, "%s: cannot open the model: %s", path,
                                  strerror(errno));
    }
    fclose(f);
    plx_dynamic_model *m = calloc(1, sizeof *m);
    if (!m) {
        return plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    m->rt = runtime;
    m->path = strdup(path);
    m->capacity = options->cache_capacity;
    st = m->path ? copy_options(m, options)
                 : plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", path);
    if (!st && pthread_mutex_init(&m->lock, NULL) != 0) {
        st = plxi_status_create(PLX_OUT_OF_MEMORY, "%s: cannot create a lock", path);
    }
    if (st) {
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
    free(e);
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
    for (size_t i = 0; i < m->valued_count; i++) {
        free(m->valued[i]);
    }
    free(m->valued);
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
        char *copy = strdup(name);
        if (copy && m->valued_count == m->valued_allocated) {
            size_t n = m->valued_allocated ? 2 * m->valued_allocated : 4;
            char **grown = realloc(m->valued, n * sizeof *grown);
            if (grown) {
                m->valued = grown;
                m->valued_allocated = n;
            }
        }
        if (!copy || m->valued_count == m->valued_allocated) {
            free(copy);
            plx_status_free(cause);
            *out_learnt = false;
            return plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", m->path);
        }
        m->valued[m->valued_count++] = copy;
        *out_learnt = true;
    }
    if (*out_learnt) {
        plx_status_free(cause);
        return NULL;
    }
    return cause;
}

/* Imports the model for `sig` as keyed now. When the import needs the
 * values of more inputs, learns them (learn_valued) and imports again. */
static plx_status import_for(plx_dynamic_model *m, const plx_dynamic_signature *sig,
                             plx_specialization *e) {
    for (;;) {
        plx_model_input_shape *shapes = NULL, *all = NULL;
        plx_model_constant_input *values = NULL, *frozen = NULL;
        size_t ns = 0, nv = 0, all_count = 0;
        plx_status st = split_signature(m, sig, &shapes, &ns, &values, &nv);
        if (!st) {
            st = merge_shapes(m, shapes, ns, &all, &all_count);
        }
        if (!st) {
            /* The options' constants, then the valued inputs'. */
            frozen = calloc(m->constant_count + nv + 1, sizeof *frozen);
            if (!frozen) {
                st = plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", m->path);
            } else {
                if (m->constant_count) {
                    memcpy(frozen, m->constants, m->constant_count * sizeof *frozen);
                }
                if (nv) {
                    memcpy(frozen + m->constant_count, values, nv * sizeof *frozen);
                }
            }
        }
        plx_model_import_report report = {NULL, 0};
        if (!st) {
            plx_model_options o = m->model_opts;
            o.shapes = all;
            o.shape_count = all_count;
            o.constants = frozen;
            o.constant_count = m->constant_count + nv;
            o.report = &report;
            st = plx_model_open(m->path, &o, &e->model);
        }
        if (!st) {
            /* The key: the shapes and values the import took. */
            e->key = copy_shapes(shapes, ns);
            e->key_count = e->key ? ns : 0;
            if (!e->key || !copy_values(values, nv, &e->values, &e->value_count)) {
                st = plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", m->path);
            }
        }
        bool learnt = false;
        if (st && report.value_input_count) {
            st = learn_valued(m, sig, &report, st, &learnt);
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

/* Imports, optimises and loads the specialisation for the request. */
static plx_status specialize(plx_dynamic_model *m, const plx_dynamic_signature *sig,
                             plx_specialization **out) {
    double t0 = now_ms();
    plx_specialization *e = calloc(1, sizeof *e);
    plx_status st = e ? import_for(m, sig, e)
                      : plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", m->path);
    plx_optimized_network *optimized = NULL;
    if (!st) {
        st = plx_optimize(m->rt, plx_model_network(e->model), &m->opt, &optimized);
    }
    if (!st) {
        st = plx_runtime_load_network(m->rt, &optimized, &m->load, &e->loaded);
    }
    if (st) {
        if (e) {
            free_entry(e);
        }
        return st;
    }
    e->ms = now_ms() - t0;
    *out = e;
    return NULL;
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
    for (size_t i = 0; i < model->count && !e; i++) {
        e = matches(model, model->entries[i], sig) ? model->entries[i] : NULL;
    }
    if (e) {
        model->stats.hits++;
    } else {
        model->stats.misses++;
        if (model->count == model->allocated) {
            size_t n = model->allocated ? 2 * model->allocated : 8;
            plx_specialization **grown = realloc(model->entries, n * sizeof *grown);
            if (!grown) {
                st = plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", model->path);
            } else {
                model->entries = grown;
                model->allocated = n;
            }
        }
        if (!st) {
            st = specialize(model, sig, &e);
        }
        if (st) {
            model->stats.failures++;
        } else {
            model->entries[model->count++] = e;
            model->stats.specialize_ms += e->ms;
        }
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

PLX_API size_t plx_dynamic_model_valued_inputs(plx_dynamic_model *model, const char **out_names,
                                              size_t max) {
    if (!model) {
        return 0;
    }
    pthread_mutex_lock(&model->lock);
    size_t n = model->valued_count;
    for (size_t i = 0; out_names && i < n && i < max; i++) {
        out_names[i] = model->valued[i];
    }
    pthread_mutex_unlock(&model->lock);
    return n;
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
