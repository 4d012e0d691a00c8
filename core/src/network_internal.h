/* Internal representation of networks, shared by the builder (network.c),
 * the optimiser (optimizer.c) and the loaded network (loaded_network.c). */
#ifndef PLEXUS_CORE_NETWORK_INTERNAL_H
#define PLEXUS_CORE_NETWORK_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <plexus/network.h>

#include "internal.h"

#define PLXI_NO_LAYER UINT32_MAX

/* Where an input slot gets its tensor: output `slot` of layer `layer`. */
typedef struct plxi_source {
    uint32_t layer; /* PLXI_NO_LAYER while unconnected */
    uint32_t slot;
} plxi_source;

/* One layer. Everything it points to is owned by the layer, except the data
 * of a borrowed constant. */
typedef struct plxi_layer {
    char *name;
    plx_op op;
    void *desc;                /* copy of the caller's descriptor, or NULL */
    uint32_t input_count;
    uint32_t output_count;
    plxi_source *inputs;
    plx_tensor_info *outputs;  /* inferred (or given) infos */
    bool *output_given;        /* set by the caller, checked against inference */
    int32_t binding_id;        /* inputs and outputs */
    void *owned_data;          /* a copied constant's data */
    int64_t *split_sizes;      /* copy of plx_split_desc.sizes */
    plxi_ptr_vec owned;        /* per-axis quantization arrays */

    /* Set by the optimiser. */
    plxi_backend_record *backend;
    bool inserted;
    /* An inserted import layer: the memory source through which the
     * producer's backend lends its memory (PLX_MEMORY_SOURCE_MALLOC: the
     * host maps the producer's handle; PLX_MEMORY_SOURCE_DMA_BUF: the
     * producer's export_external_memory describes it, R-26). 0 otherwise. */
    uint32_t lend_source;
    plx_refusal *refusals;
    size_t refusal_count;
    /* Names (char*, owned) of the layers the optimiser fused into this one
     * (plx_optimized_network_layer_fused_from), in the order fused. */
    plxi_ptr_vec fused_from;
} plxi_layer;

struct plx_network {
    plxi_ptr_vec layers; /* plxi_layer* */
    bool validated;
    uint32_t *order;     /* topological order after validation */
    /* The layers by name: open addressing, index + 1 (0: empty), at most
     * half full, so that adding a layer checks its name in constant time. */
    uint32_t *by_name;
    size_t by_name_cap;
};

void plxi_layer_free(plxi_layer *layer);
/* A deep copy (borrowed constant data stays borrowed); NULL when out of memory. */
plxi_layer *plxi_layer_clone(const plxi_layer *layer);
/* Fills a backend's view of `layer`. `inputs` must hold input_count infos
 * and `constants` input_count pointers; both are filled from `layers`. */
void plxi_layer_view(const plxi_layer *layer, plxi_layer *const *layers,
                     plx_tensor_info *inputs, const void **constants, plx_layer_view *out_view);
/* Records that `from` (and whatever was fused into it) is fused into
 * `into`; false when out of memory. */
bool plxi_layer_fuse(plxi_layer *into, const plxi_layer *from);
/* Data of a constant layer. */
const void *plxi_constant_data(const plxi_layer *layer);

struct plx_optimized_network {
    plx_runtime *runtime;
    plxi_ptr_vec layers;            /* plxi_layer*, in execution order */
    plx_layer_assignment *assignments;
    plxi_ptr_vec notes;             /* char* */
    char *summary;
    bool import_enabled;
    bool export_enabled;
};

/* network.c: copies per-axis quantization arrays of `info` into `l`. */
bool plxi_layer_own_quant(plxi_layer *l, plx_tensor_info *info);

#endif /* PLEXUS_CORE_NETWORK_INTERNAL_H */
