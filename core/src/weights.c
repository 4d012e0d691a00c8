/* Initializer data shared between imports of one model file
 * (plx_model_weights, plexus/model.h): a table by name under one lock,
 * reference-counted. In the core library because the importers, built
 * apart from the model front end, look initializers up in it. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <plexus/model.h>

#include "internal.h"

typedef struct weight {
    char *name;
    plx_tensor_info info;
    void *data;
} weight;

struct plx_model_weights {
    pthread_mutex_t lock;
    size_t refs;
    char *source; /* the file the first insert came from; NULL until then */
    weight *slots; /* open addressing by name, at most half full */
    size_t cap, count, bytes;
};

PLX_API plx_status plx_model_weights_create(plx_model_weights **out_weights) {
    if (!out_weights) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "plx_model_weights_create: out_weights is NULL");
    }
    plx_model_weights *w = calloc(1, sizeof *w);
    if (!w || pthread_mutex_init(&w->lock, NULL) != 0) {
        free(w);
        return plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory creating model weights");
    }
    w->refs = 1;
    *out_weights = w;
    return NULL;
}

PLX_API plx_model_weights *plx_model_weights_retain(plx_model_weights *weights) {
    if (weights) {
        pthread_mutex_lock(&weights->lock);
        weights->refs++;
        pthread_mutex_unlock(&weights->lock);
    }
    return weights;
}

PLX_API void plx_model_weights_release(plx_model_weights **weights) {
    if (!weights || !*weights) {
        return;
    }
    plx_model_weights *w = *weights;
    *weights = NULL;
    pthread_mutex_lock(&w->lock);
    size_t left = --w->refs;
    pthread_mutex_unlock(&w->lock);
    if (left) {
        return;
    }
    for (size_t i = 0; i < w->cap; i++) {
        free(w->slots[i].name);
        free(w->slots[i].data);
    }
    free(w->slots);
    free(w->source);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

PLX_API size_t plx_model_weights_bytes(plx_model_weights *weights) {
    if (!weights) {
        return 0;
    }
    pthread_mutex_lock(&weights->lock);
    size_t bytes = weights->bytes;
    pthread_mutex_unlock(&weights->lock);
    return bytes;
}

/* The slot holding `name`, or the empty one where it goes. Under the lock,
 * with cap > 0. */
static weight *slot_of(plx_model_weights *w, const char *name) {
    size_t mask = w->cap - 1, i = plxi_hash_str(name) & mask;
    while (w->slots[i].name && strcmp(w->slots[i].name, name) != 0) {
        i = (i + 1) & mask;
    }
    return &w->slots[i];
}

/* Whether the store serves `source` (the first one it was given). */
static bool same_source(const plx_model_weights *w, const char *source) {
    return w->source && source && strcmp(w->source, source) == 0;
}

PLX_API const void *plx_model_weights_lookup(plx_model_weights *weights, const char *source,
                                             const char *name, plx_tensor_info *out_info) {
    if (!weights || !name || !out_info) {
        return NULL;
    }
    pthread_mutex_lock(&weights->lock);
    const void *data = NULL;
    if (weights->cap && same_source(weights, source)) {
        const weight *e = slot_of(weights, name);
        if (e->name) {
            *out_info = e->info;
            data = e->data;
        }
    }
    pthread_mutex_unlock(&weights->lock);
    return data;
}

static bool grow(plx_model_weights *w) {
    size_t cap = w->cap ? 2 * w->cap : 256;
    weight *old = w->slots;
    size_t old_cap = w->cap;
    w->slots = calloc(cap, sizeof *w->slots);
    if (!w->slots) {
        w->slots = old;
        return false;
    }
    w->cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].name) {
            *slot_of(w, old[i].name) = old[i];
        }
    }
    free(old);
    return true;
}

PLX_API const void *plx_model_weights_insert(plx_model_weights *weights, const char *source,
                                             const char *name, const plx_tensor_info *info,
                                             void *data) {
    size_t bytes = 0;
    if (!weights || !source || !name || !info || !data ||
        !plx_tensor_info_byte_size(info, &bytes)) {
        return NULL;
    }
    pthread_mutex_lock(&weights->lock);
    const void *stored = NULL;
    if (!weights->source) {
        weights->source = strdup(source);
    }
    if (same_source(weights, source) &&
        (2 * (weights->count + 1) <= weights->cap || grow(weights))) {
        weight *e = slot_of(weights, name);
        if (e->name) {
            stored = e->data; /* another import put it first */
            free(data);
        } else if ((e->name = strdup(name)) != NULL) {
            e->info = *info;
            e->data = data;
            weights->count++;
            weights->bytes += bytes;
            stored = data;
        }
    }
    pthread_mutex_unlock(&weights->lock);
    return stored;
}
