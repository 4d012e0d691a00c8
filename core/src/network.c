/* The network builder: layers, connections, validation and shape inference. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "network_internal.h"
#include "shape_infer.h"

static plx_status oom(void) {
    return plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory while building the network");
}

void plxi_layer_free(plxi_layer *l) {
    if (!l) {
        return;
    }
    free(l->name);
    free(l->desc);
    free(l->inputs);
    free(l->outputs);
    free(l->output_given);
    free(l->owned_data);
    free(l->split_sizes);
    for (size_t i = 0; i < l->owned.count; i++) {
        free(l->owned.items[i]);
    }
    plxi_ptr_vec_release(&l->owned);
    for (size_t i = 0; i < l->refusal_count; i++) {
        free((char *)l->refusals[i].backend_id);
        free((char *)l->refusals[i].reason);
    }
    free(l->refusals);
    for (size_t i = 0; i < l->fused_from.count; i++) {
        free(l->fused_from.items[i]);
    }
    plxi_ptr_vec_release(&l->fused_from);
    free(l);
}

bool plxi_layer_fuse(plxi_layer *into, const plxi_layer *from) {
    for (size_t i = 0; i <= from->fused_from.count; i++) {
        char *name = plxi_strdup(i ? from->fused_from.items[i - 1] : from->name);
        if (!name || !plxi_ptr_vec_push(&into->fused_from, name)) {
            free(name);
            return false;
        }
    }
    return true;
}

const void *plxi_constant_data(const plxi_layer *l) {
    return l->op == PLX_OP_CONSTANT && l->desc ? ((const plx_constant_desc *)l->desc)->data : NULL;
}

static void *dup_bytes(const void *p, size_t n) {
    void *q = malloc(n ? n : 1);
    if (q && n) {
        memcpy(q, p, n);
    }
    return q;
}

/* Copies per-axis quantization arrays into the layer so that the infos
 * never point to caller memory. */
bool plxi_layer_own_quant(plxi_layer *l, plx_tensor_info *info) {
    plx_quant_params *q = &info->quant;
    if (q->kind != PLX_QUANT_PER_AXIS) {
        q->scales = NULL;
        q->zero_points = NULL;
        return true;
    }
    size_t n = q->axis >= 0 && (uint32_t)q->axis < info->rank && info->dims[q->axis] > 0
                   ? (size_t)info->dims[q->axis]
                   : 0;
    if (n && q->scales) {
        float *s = dup_bytes(q->scales, n * sizeof *s);
        if (!s || !plxi_ptr_vec_push(&l->owned, s)) {
            free(s);
            return false;
        }
        q->scales = s;
    }
    if (n && q->zero_points) {
        int32_t *z = dup_bytes(q->zero_points, n * sizeof *z);
        if (!z || !plxi_ptr_vec_push(&l->owned, z)) {
            free(z);
            return false;
        }
        q->zero_points = z;
    }
    return true;
}

plxi_layer *plxi_layer_clone(const plxi_layer *src) {
    plxi_layer *l = calloc(1, sizeof *l);
    if (!l) {
        return NULL;
    }
    *l = *src;
    l->name = NULL;
    l->desc = NULL;
    l->inputs = NULL;
    l->outputs = NULL;
    l->output_given = NULL;
    l->owned_data = NULL;
    l->split_sizes = NULL;
    memset(&l->owned, 0, sizeof l->owned);
    l->refusals = NULL;
    l->refusal_count = 0;
    memset(&l->fused_from, 0, sizeof l->fused_from);
    size_t desc_size = plxi_op_desc_size(src->op);
    l->name = plxi_strdup(src->name);
    if (!l->name || (src->desc && !(l->desc = dup_bytes(src->desc, desc_size))) ||
        !(l->inputs = dup_bytes(src->inputs, src->input_count * sizeof *l->inputs)) ||
        !(l->outputs = dup_bytes(src->outputs, src->output_count * sizeof *l->outputs)) ||
        !(l->output_given = dup_bytes(src->output_given, src->output_count * sizeof(bool)))) {
        plxi_layer_free(l);
        return NULL;
    }
    for (uint32_t i = 0; i < l->output_count; i++) {
        if (!plxi_layer_own_quant(l, &l->outputs[i])) {
            plxi_layer_free(l);
            return NULL;
        }
    }
    if (src->owned_data) {
        size_t n = 0;
        plx_tensor_info_byte_size(&src->outputs[0], &n);
        if (!(l->owned_data = dup_bytes(src->owned_data, n))) {
            plxi_layer_free(l);
            return NULL;
        }
        ((plx_constant_desc *)l->desc)->data = l->owned_data;
    }
    if (src->split_sizes) {
        if (!(l->split_sizes = dup_bytes(src->split_sizes, src->output_count * sizeof(int64_t)))) {
            plxi_layer_free(l);
            return NULL;
        }
        ((plx_split_desc *)l->desc)->sizes = l->split_sizes;
    }
    if (src->refusal_count) {
        l->refusals = calloc(src->refusal_count, sizeof *l->refusals);
        if (!l->refusals) {
            plxi_layer_free(l);
            return NULL;
        }
        for (size_t i = 0; i < src->refusal_count; i++) {
            l->refusals[i].backend_id = plxi_strdup(src->refusals[i].backend_id);
            l->refusals[i].reason = plxi_strdup(src->refusals[i].reason);
            l->refusal_count = i + 1;
            if (!l->refusals[i].backend_id || !l->refusals[i].reason) {
                plxi_layer_free(l);
                return NULL;
            }
        }
    }
    for (size_t i = 0; i < src->fused_from.count; i++) {
        char *name = plxi_strdup(src->fused_from.items[i]);
        if (!name || !plxi_ptr_vec_push(&l->fused_from, name)) {
            free(name);
            plxi_layer_free(l);
            return NULL;
        }
    }
    return l;
}

void plxi_layer_view(const plxi_layer *l, plxi_layer *const *layers, plx_tensor_info *inputs,
                     const void **constants, plx_layer_view *v) {
    for (uint32_t i = 0; i < l->input_count; i++) {
        const plxi_layer *src = layers[l->inputs[i].layer];
        inputs[i] = src->outputs[l->inputs[i].slot];
        constants[i] = plxi_constant_data(src);
    }
    memset(v, 0, sizeof *v);
    v->struct_size = (uint32_t)sizeof *v;
    v->name = l->name;
    v->op = l->op;
    v->desc = l->desc;
    v->inputs = inputs;
    v->input_count = l->input_count;
    v->outputs = l->outputs;
    v->output_count = l->output_count;
    v->input_constants = constants;
}

PLX_API plx_status plx_network_create(plx_network **out_network) {
    if (!out_network) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "out_network is NULL");
    }
    *out_network = calloc(1, sizeof **out_network);
    return *out_network ? NULL : oom();
}

PLX_API void plx_network_destroy(plx_network **network) {
    if (!network || !*network) {
        return;
    }
    plx_network *n = *network;
    *network = NULL;
    for (size_t i = 0; i < n->layers.count; i++) {
        plxi_layer_free(n->layers.items[i]);
    }
    plxi_ptr_vec_release(&n->layers);
    free(n->order);
    free(n->by_name);
    free(n);
}

PLX_API size_t plx_network_layer_count(const plx_network *network) {
    return network ? network->layers.count : 0;
}

/* The slot of by_name that holds `name`, or the empty one where it goes. */
static size_t name_slot(const plx_network *n, const char *name) {
    size_t mask = n->by_name_cap - 1, i = plxi_hash_str(name) & mask;
    while (n->by_name[i] &&
           strcmp(((plxi_layer *)n->layers.items[n->by_name[i] - 1])->name, name) != 0) {
        i = (i + 1) & mask;
    }
    return i;
}

static plxi_layer *find_layer(const plx_network *n, const char *name) {
    if (!n->by_name_cap) {
        return NULL;
    }
    uint32_t k = n->by_name[name_slot(n, name)];
    return k ? n->layers.items[k - 1] : NULL;
}

/* Indexes layer `index` (already in n->layers) by its name, growing the
 * index to keep it at most half full. */
static bool index_layer(plx_network *n, size_t index) {
    if (2 * (index + 1) > n->by_name_cap) {
        size_t cap = n->by_name_cap ? 2 * n->by_name_cap : 64;
        uint32_t *grown = calloc(cap, sizeof *grown);
        if (!grown) {
            return false;
        }
        free(n->by_name);
        n->by_name = grown;
        n->by_name_cap = cap;
        for (size_t i = 0; i < index; i++) {
            n->by_name[name_slot(n, ((plxi_layer *)n->layers.items[i])->name)] =
                (uint32_t)(i + 1);
        }
    }
    n->by_name[name_slot(n, ((plxi_layer *)n->layers.items[index])->name)] =
        (uint32_t)(index + 1);
    return true;
}

/* Shared by every add_* function: checks and copies, then appends. */
static plx_status add_layer(plx_network *n, const char *name, plx_op op, const void *desc,
                            uint32_t input_count, uint32_t output_count, plxi_layer **out_layer,
                            plx_layer_id *out_id) {
    if (out_id) {
        *out_id = PLXI_NO_LAYER;
    }
    if (!n) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "network is NULL");
    }
    if (!name || !*name) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "a layer needs a non-empty name");
    }
    if ((unsigned)op >= PLX_OP_COUNT || op == PLX_OP_INVALID || op == PLX_OP_MEM_COPY ||
        op == PLX_OP_MEM_IMPORT || op == PLX_OP_PRECOMPILED) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "layer '%s': op %d is not an operator applications add", name,
                                  (int)op);
    }
    if (find_layer(n, name)) {
        return plxi_status_create(PLX_ALREADY_EXISTS, "layer '%s': the name is already used",
                                  name);
    }
    uint32_t min_in, max_in, min_out, max_out;
    plxi_op_arity(op, &min_in, &max_in, &min_out, &max_out);
    if (input_count < min_in || input_count > max_in) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "layer '%s' (%s): takes %u to %u inputs, got %u", name,
                                  plx_op_name(op), min_in, max_in, input_count);
    }
    if (output_count < min_out || output_count > max_out) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "layer '%s' (%s): takes %u to %u outputs, got %u", name,
                                  plx_op_name(op), min_out, max_out, output_count);
    }
    size_t desc_size = plxi_op_desc_size(op);
    if (desc_size && !desc) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "layer '%s' (%s): descriptor is NULL",
                                  name, plx_op_name(op));
    }
    if (desc_size && *(const uint32_t *)desc < desc_size) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "layer '%s' (%s): descriptor struct_size %u is smaller than %zu",
                                  name, plx_op_name(op), *(const uint32_t *)desc, desc_size);
    }
    plxi_layer *l = calloc(1, sizeof *l);
    if (!l) {
        return oom();
    }
    l->op = op;
    l->input_count = input_count;
    l->output_count = output_count;
    l->name = plxi_strdup(name);
    l->inputs = malloc((input_count ? input_count : 1) * sizeof *l->inputs);
    l->outputs = calloc(output_count ? output_count : 1, sizeof *l->outputs);
    l->output_given = calloc(output_count ? output_count : 1, sizeof *l->output_given);
    if (!l->name || !l->inputs || !l->outputs || !l->output_given ||
        (desc_size && !(l->desc = dup_bytes(desc, desc_size)))) {
        plxi_layer_free(l);
        return oom();
    }
    if (desc_size) {
        /* The copy is exactly this host's descriptor; say so to backends. */
        *(uint32_t *)l->desc = (uint32_t)desc_size;
    }
    for (uint32_t i = 0; i < input_count; i++) {
        l->inputs[i].layer = PLXI_NO_LAYER;
        l->inputs[i].slot = 0;
    }
    if (op == PLX_OP_SPLIT && ((const plx_split_desc *)desc)->sizes) {
        l->split_sizes = dup_bytes(((const plx_split_desc *)desc)->sizes,
                                   output_count * sizeof(int64_t));
        if (!l->split_sizes) {
            plxi_layer_free(l);
            return oom();
        }
        ((plx_split_desc *)l->desc)->sizes = l->split_sizes;
    }
    if (!plxi_ptr_vec_push(&n->layers, l)) {
        plxi_layer_free(l);
        return oom();
    }
    if (!index_layer(n, n->layers.count - 1)) {
        n->layers.count--;
        plxi_layer_free(l);
        return oom();
    }
    n->validated = false;
    *out_layer = l;
    if (out_id) {
        *out_id = (plx_layer_id)(n->layers.count - 1);
    }
    return NULL;
}

PLX_API plx_status plx_network_add_layer(plx_network *network, const char *name, plx_op op,
                                         const void *desc, uint32_t input_count,
                                         uint32_t output_count, plx_layer_id *out_layer) {
    if (op == PLX_OP_INPUT || op == PLX_OP_OUTPUT || op == PLX_OP_CONSTANT) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "layer '%s': add %s layers with plx_network_add_%s",
                                  name ? name : "(null)", plx_op_name(op), plx_op_name(op));
    }
    plxi_layer *l;
    return add_layer(network, name, op, desc, input_count, output_count, &l, out_layer);
}

/* Binding ids must be unique per kind; checked here and at validation. */
static plx_status add_io(plx_network *network, const char *name, plx_op op, int32_t binding_id,
                         plxi_layer **out, plx_layer_id *out_layer) {
    plx_io_desc d = PLX_IO_DESC_INIT(binding_id);
    plx_status s = add_layer(network, name, op, &d, op == PLX_OP_INPUT ? 0 : 1,
                             op == PLX_OP_INPUT ? 1 : 0, out, out_layer);
    if (s) {
        return s;
    }
    (*out)->binding_id = binding_id;
    return NULL;
}

static plx_status set_info(plxi_layer *l, uint32_t slot, const plx_tensor_info *info) {
    size_t bytes;
    if (info->rank > PLX_MAX_RANK) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "layer '%s': rank %u is over %d", l->name,
                                  info->rank, PLX_MAX_RANK);
    }
    if (!plx_tensor_info_byte_size(info, &bytes)) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "layer '%s': output %u has an invalid dtype (%d), a negative "
                                  "dimension, or a byte size that overflows",
                                  l->name, slot, (int)info->dtype);
    }
    plx_tensor_info copy = *info;
    for (uint32_t i = copy.rank; i < PLX_MAX_RANK; i++) {
        copy.dims[i] = 0;
    }
    if (!plxi_layer_own_quant(l, &copy)) {
        return oom();
    }
    l->outputs[slot] = copy;
    l->output_given[slot] = true;
    return NULL;
}

static void drop_last_layer(plx_network *n) {
    plxi_layer_free(n->layers.items[--n->layers.count]);
    /* Rare (a failed add): the index is rebuilt without it. */
    memset(n->by_name, 0, n->by_name_cap * sizeof *n->by_name);
    for (size_t i = 0; i < n->layers.count; i++) {
        n->by_name[name_slot(n, ((plxi_layer *)n->layers.items[i])->name)] = (uint32_t)(i + 1);
    }
}

PLX_API plx_status plx_network_add_input(plx_network *network, const char *name,
                                         int32_t binding_id, const plx_tensor_info *info,
                                         plx_layer_id *out_layer) {
    if (!info) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "input '%s': info is NULL",
                                  name ? name : "(null)");
    }
    plxi_layer *l;
    plx_status s = add_io(network, name, PLX_OP_INPUT, binding_id, &l, out_layer);
    if (!s && (s = set_info(l, 0, info))) {
        drop_last_layer(network);
        if (out_layer) {
            *out_layer = PLXI_NO_LAYER;
        }
    }
    return s;
}

PLX_API plx_status plx_network_add_output(plx_network *network, const char *name,
                                          int32_t binding_id, plx_layer_id *out_layer) {
    plxi_layer *l;
    return add_io(network, name, PLX_OP_OUTPUT, binding_id, &l, out_layer);
}

PLX_API plx_status plx_network_add_constant(plx_network *network, const char *name,
                                            const plx_tensor_info *info, const void *data,
                                            plx_constant_ownership ownership,
                                            plx_layer_id *out_layer) {
    if (!info || !data) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "constant '%s': %s is NULL",
                                  name ? name : "(null)", info ? "data" : "info");
    }
    if (ownership != PLX_CONSTANT_COPY && ownership != PLX_CONSTANT_BORROW) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "constant '%s': ownership %d is invalid",
                                  name ? name : "(null)", (int)ownership);
    }
    plx_constant_desc d = {sizeof d, data};
    plxi_layer *l;
    plx_status s = add_layer(network, name, PLX_OP_CONSTANT, &d, 0, 1, &l, out_layer);
    if (s) {
        return s;
    }
    s = set_info(l, 0, info);
    size_t bytes = 0;
    if (!s && ownership == PLX_CONSTANT_COPY) {
        plx_tensor_info_byte_size(info, &bytes);
        l->owned_data = dup_bytes(data, bytes);
        if (!l->owned_data) {
            s = oom();
        } else {
            ((plx_constant_desc *)l->desc)->data = l->owned_data;
        }
    }
    if (s) {
        drop_last_layer(network);
        if (out_layer) {
            *out_layer = PLXI_NO_LAYER;
        }
    }
    return s;
}

static plx_status get_layer(const plx_network *n, plx_layer_id id, plxi_layer **out) {
    if (!n) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "network is NULL");
    }
    if (id >= n->layers.count) {
        return plxi_status_create(PLX_NOT_FOUND, "no layer with id %u (the network has %zu)", id,
                                  n->layers.count);
    }
    *out = n->layers.items[id];
    return NULL;
}

PLX_API plx_status plx_network_connect(plx_network *network, plx_layer_id from,
                                       uint32_t from_slot, plx_layer_id to, uint32_t to_slot) {
    plxi_layer *src = NULL, *dst = NULL;
    plx_status s = get_layer(network, from, &src);
    if (!s) {
        s = get_layer(network, to, &dst);
    }
    if (s) {
        return s;
    }
    if (from_slot >= src->output_count) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "layer '%s' (%s) has %u outputs; cannot connect output %u",
                                  src->name, plx_op_name(src->op), src->output_count, from_slot);
    }
    if (to_slot >= dst->input_count) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "layer '%s' (%s) has %u inputs; cannot connect input %u",
                                  dst->name, plx_op_name(dst->op), dst->input_count, to_slot);
    }
    if (dst->inputs[to_slot].layer != PLXI_NO_LAYER) {
        const plxi_layer *prev = network->layers.items[dst->inputs[to_slot].layer];
        return plxi_status_create(PLX_ALREADY_EXISTS,
                                  "layer '%s' (%s): input %u is already connected to '%s'",
                                  dst->name, plx_op_name(dst->op), to_slot, prev->name);
    }
    dst->inputs[to_slot].layer = from;
    dst->inputs[to_slot].slot = from_slot;
    network->validated = false;
    return NULL;
}

PLX_API plx_status plx_network_set_output_info(plx_network *network, plx_layer_id layer,
                                               uint32_t slot, const plx_tensor_info *info) {
    plxi_layer *l = NULL;
    plx_status s = get_layer(network, layer, &l);
    if (s) {
        return s;
    }
    if (!info) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "layer '%s': info is NULL", l->name);
    }
    if (slot >= l->output_count) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "layer '%s' (%s) has %u outputs, not %u",
                                  l->name, plx_op_name(l->op), l->output_count, slot + 1);
    }
    network->validated = false;
    return set_info(l, slot, info);
}

/* Kahn's algorithm; on a cycle, names a layer on it. */
static plx_status topological_order(plx_network *n) {
    size_t count = n->layers.count;
    uint32_t *pending = calloc(count ? count : 1, sizeof *pending);
    uint32_t *order = malloc((count ? count : 1) * sizeof *order);
    if (!pending || !order) {
        free(pending);
        free(order);
        return oom();
    }
    for (size_t i = 0; i < count; i++) {
        pending[i] = ((plxi_layer *)n->layers.items[i])->input_count;
    }
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < count; i++) {
        if (pending[i] == 0) {
            order[tail++] = (uint32_t)i;
        }
    }
    while (head < tail) {
        uint32_t done = order[head++];
        /* Every input slot fed by `done` is now satisfied. */
        for (size_t i = 0; i < count; i++) {
            const plxi_layer *l = n->layers.items[i];
            for (uint32_t k = 0; k < l->input_count; k++) {
                if (l->inputs[k].layer == done && --pending[i] == 0) {
                    order[tail++] = (uint32_t)i;
                }
            }
        }
    }
    plx_status s = NULL;
    if (tail < count) {
        for (size_t i = 0; i < count; i++) {
            if (pending[i]) {
                const plxi_layer *l = n->layers.items[i];
                s = plxi_status_create(PLX_INVALID_ARGUMENT,
                                       "layer '%s' (%s) is on a cycle: the network must be "
                                       "acyclic", l->name, plx_op_name(l->op));
                break;
            }
        }
        free(order);
        order = NULL;
    }
    free(pending);
    free(n->order);
    n->order = order;
    return s;
}

static bool same_info(const plx_tensor_info *a, const plx_tensor_info *b) {
    return plx_tensor_info_same_shape(a, b);
}

PLX_API plx_status plx_network_validate(plx_network *network) {
    if (!network) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "network is NULL");
    }
    plxi_ptr_vec *layers = &network->layers;
    /* Connections and binding ids first: they make the later messages sound. */
    for (size_t i = 0; i < layers->count; i++) {
        const plxi_layer *l = layers->items[i];
        for (uint32_t k = 0; k < l->input_count; k++) {
            if (l->inputs[k].layer == PLXI_NO_LAYER) {
                return plxi_status_create(PLX_INVALID_ARGUMENT,
                                          "layer '%s' (%s): input %u is not connected", l->name,
                                          plx_op_name(l->op), k);
            }
        }
        if (l->op != PLX_OP_INPUT && l->op != PLX_OP_OUTPUT) {
            continue;
        }
        for (size_t j = 0; j < i; j++) {
            const plxi_layer *o = layers->items[j];
            if (o->op == l->op && o->binding_id == l->binding_id) {
                return plxi_status_create(PLX_INVALID_ARGUMENT,
                                          "layer '%s' (%s): binding id %d is already used by "
                                          "'%s'", l->name, plx_op_name(l->op), l->binding_id,
                                          o->name);
            }
        }
    }
    plx_status s = topological_order(network);
    if (s) {
        return s;
    }
    plx_tensor_info in[64], *inputs = in;
    plx_tensor_info *heap = NULL;
    for (size_t i = 0; !s && i < layers->count; i++) {
        plxi_layer *l = layers->items[network->order[i]];
        if (l->input_count > sizeof in / sizeof in[0]) {
            free(heap);
            heap = malloc(l->input_count * sizeof *heap);
            if (!heap) {
                return oom();
            }
            inputs = heap;
        } else {
            inputs = in;
        }
        for (uint32_t k = 0; k < l->input_count; k++) {
            const plxi_layer *src = layers->items[l->inputs[k].layer];
            inputs[k] = src->outputs[l->inputs[k].slot];
        }
        plx_tensor_info out[PLX_MAX_RANK], *outputs = out;
        plx_tensor_info *out_heap = NULL;
        if (l->output_count > sizeof out / sizeof out[0]) {
            out_heap = calloc(l->output_count, sizeof *out_heap);
            if (!out_heap) {
                free(heap);
                return oom();
            }
            outputs = out_heap;
        }
        /* Inference sees what the builder set (the quantized layers read
         * their output's parameters there), never an earlier inference's
         * result, which may no longer hold. */
        for (uint32_t k = 0; k < l->output_count; k++) {
            bool fresh = !l->output_given[k] && l->op != PLX_OP_INPUT &&
                         l->op != PLX_OP_CONSTANT;
            if (fresh) {
                memset(&outputs[k], 0, sizeof outputs[k]);
            } else {
                outputs[k] = l->outputs[k];
            }
        }
        s = plxi_infer_layer(l->name, l->op, l->desc, inputs, l->input_count, outputs,
                             l->output_count);
        for (uint32_t k = 0; !s && k < l->output_count; k++) {
            if (l->output_given[k] && l->op != PLX_OP_INPUT && l->op != PLX_OP_CONSTANT &&
                !same_info(&l->outputs[k], &outputs[k])) {
                char a[128], b[128];
                s = plxi_status_create(
                    PLX_INVALID_ARGUMENT,
                    "layer '%s' (%s): output %u is set to %s %s but inference gives %s %s",
                    l->name, plx_op_name(l->op), k, plx_dtype_name(l->outputs[k].dtype),
                    plxi_format_shape(&l->outputs[k], a, sizeof a),
                    plx_dtype_name(outputs[k].dtype), plxi_format_shape(&outputs[k], b, sizeof b));
            } else if (!s && !l->output_given[k]) {
                l->outputs[k] = outputs[k];
            } else if (!s && l->outputs[k].quant.kind == PLX_QUANT_NONE) {
                /* A given info keeps its quantization; inference may add one. */
                l->outputs[k].quant = outputs[k].quant;
            }
        }
        free(out_heap);
    }
    free(heap);
    network->validated = s == NULL;
    return s;
}

PLX_API plx_status plx_network_output_info(const plx_network *network, plx_layer_id layer,
                                           uint32_t slot, plx_tensor_info *out_info) {
    plxi_layer *l = NULL;
    plx_status s = get_layer(network, layer, &l);
    if (s) {
        return s;
    }
    if (!out_info || slot >= l->output_count) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "layer '%s' (%s) has %u outputs, not %u",
                                  l->name, plx_op_name(l->op), l->output_count, slot + 1);
    }
    if (!network->validated) {
        return plxi_status_create(PLX_FAILED_PRECONDITION,
                                  "layer '%s': output infos are known after plx_network_validate",
                                  l->name);
    }
    *out_info = l->outputs[slot];
    return NULL;
}
