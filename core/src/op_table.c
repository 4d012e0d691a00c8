/* The operator table of the core: for each operator of PLX_OP_LIST
 * (plexus/ops.h), its row (slot counts, input role names, infer function),
 * defined next to the infer function in infer_*.c (infer_internal.h,
 * PLXI_OP_ROW), and its descriptor size, taken from the list's descriptor
 * column. */
#include "infer_internal.h"
#include "shape_infer.h"

/* PLX_OP_INVALID is no operator: its row has no infer function, so that
 * plxi_op_lookup refuses it. */
const plxi_op_row plxi_op_row_INVALID = {0, 0, 0, 0, NO_ROLES, NULL};

/* sizeof the descriptor column's type, 0 for void: PROBE_void expands to
 * two arguments, shifting 0 into the second place; any other type name
 * stays one argument and sizeof(type) is second. */
#define PROBE_void ~, 0
#define SECOND_(a, b, ...) b
#define SECOND(...) SECOND_(__VA_ARGS__)
#define DESC_SIZE(type) SECOND(PROBE_##type, sizeof(type), ~)

#define ROW(suffix, value, name, desc) [value] = {&plxi_op_row_##suffix, DESC_SIZE(desc)},
static const struct {
    const plxi_op_row *row;
    size_t desc_size;
} table[PLX_OP_COUNT] = {PLX_OP_LIST(ROW)};

const plxi_op_row *plxi_op_lookup(plx_op op) {
    return (unsigned)op < PLX_OP_COUNT && table[op].row->infer ? table[op].row : NULL;
}

bool plxi_op_arity(plx_op op, uint32_t *out_min_inputs, uint32_t *out_max_inputs,
                   uint32_t *out_min_outputs, uint32_t *out_max_outputs) {
    const plxi_op_row *row = plxi_op_lookup(op);
    if (!row) {
        return false;
    }
    if (out_min_inputs) {
        *out_min_inputs = row->min_inputs;
    }
    if (out_max_inputs) {
        *out_max_inputs = row->max_inputs;
    }
    if (out_min_outputs) {
        *out_min_outputs = row->min_outputs;
    }
    if (out_max_outputs) {
        *out_max_outputs = row->max_outputs;
    }
    return true;
}

size_t plxi_op_desc_size(plx_op op) {
    return plxi_op_lookup(op) ? table[op].desc_size : 0;
}
