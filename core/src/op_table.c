/* The operator table of the core: one row per operator of PLX_OP_LIST
 * (plexus/ops.h) with its slot counts, input role names, infer function
 * (infer_*.c) and descriptor size, the last taken from the list's
 * descriptor column. */
#include "infer_internal.h"
#include "shape_infer.h"

/* Role names of input slots, as messages print them. */
static const char *const xwb[] = {"X", "W", "B"};
static const char *const ab[] = {"A", "B"};
static const char *const abc[] = {"A", "B", "C"};
static const char *const bn[] = {"X", "scale", "bias", "mean", "var"};
static const char *const norm[] = {"X", "scale", "bias"};
static const char *const gather[] = {"data", "indices"};
static const char *const where[] = {"condition", "X", "Y"};
static const char *const quant[] = {"X", "scale", "zero_point"};
static const char *const rnn[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};
static const char *const x[] = {"X"};
#define ROLES(a) a, (uint32_t)(sizeof a / sizeof *a)
#define ANY UINT32_MAX

/* min/max inputs, min/max outputs, input roles, infer function. */
#define OP_INVALID 0, 0, 0, 0, NULL, 0, NULL
#define OP_INPUT 0, 0, 1, 1, ROLES(x), plxi_infer_input
#define OP_OUTPUT 1, 1, 0, 0, ROLES(x), plxi_infer_output
#define OP_CONSTANT 0, 0, 1, 1, ROLES(x), plxi_infer_constant
#define OP_CONV 2, 3, 1, 1, ROLES(xwb), plxi_infer_conv
#define OP_CONV_TRANSPOSE 2, 3, 1, 1, ROLES(xwb), plxi_infer_conv_transpose
#define OP_FULLY_CONNECTED 2, 3, 1, 1, ROLES(xwb), plxi_infer_fully_connected
#define OP_MATMUL 2, 2, 1, 1, ROLES(ab), plxi_infer_matmul
#define OP_GEMM 2, 3, 1, 1, ROLES(abc), plxi_infer_gemm
#define OP_POOL 1, 1, 1, 1, ROLES(x), plxi_infer_pool
#define OP_GLOBAL_POOL 1, 1, 1, 1, ROLES(x), plxi_infer_global_pool
#define OP_ACTIVATION 1, 1, 1, 1, ROLES(x), plxi_infer_activation
#define OP_BINARY 2, 2, 1, 1, ROLES(ab), plxi_infer_binary
#define OP_UNARY 1, 1, 1, 1, ROLES(x), plxi_infer_unary
#define OP_BATCH_NORM 5, 5, 1, 1, ROLES(bn), plxi_infer_batch_norm
#define OP_LAYER_NORM 2, 3, 1, 1, ROLES(norm), plxi_infer_layer_norm
#define OP_SOFTMAX 1, 1, 1, 1, ROLES(x), plxi_infer_softmax
#define OP_REDUCE 1, 1, 1, 1, ROLES(x), plxi_infer_reduce
#define OP_RESHAPE 1, 1, 1, 1, ROLES(x), plxi_infer_reshape
#define OP_FLATTEN 1, 1, 1, 1, ROLES(x), plxi_infer_flatten
#define OP_TRANSPOSE 1, 1, 1, 1, ROLES(x), plxi_infer_transpose
#define OP_CONCAT 1, ANY, 1, 1, NULL, 0, plxi_infer_concat
#define OP_SPLIT 1, 1, 1, ANY, ROLES(x), plxi_infer_split
#define OP_SLICE 1, 1, 1, 1, ROLES(x), plxi_infer_slice
#define OP_PAD 1, 1, 1, 1, ROLES(x), plxi_infer_pad
#define OP_SQUEEZE 1, 1, 1, 1, ROLES(x), plxi_infer_squeeze
#define OP_UNSQUEEZE 1, 1, 1, 1, ROLES(x), plxi_infer_unsqueeze
#define OP_GATHER 2, 2, 1, 1, ROLES(gather), plxi_infer_gather
#define OP_EXPAND 1, 1, 1, 1, ROLES(x), plxi_infer_expand
#define OP_WHERE 3, 3, 1, 1, ROLES(where), plxi_infer_where
#define OP_CAST 1, 1, 1, 1, ROLES(x), plxi_infer_cast
#define OP_RESIZE 1, 1, 1, 1, ROLES(x), plxi_infer_resize
#define OP_DEPTH_TO_SPACE 1, 1, 1, 1, ROLES(x), plxi_infer_depth_space
#define OP_SPACE_TO_DEPTH 1, 1, 1, 1, ROLES(x), plxi_infer_depth_space
#define OP_QUANTIZE 2, 3, 1, 1, ROLES(quant), plxi_infer_quantize
#define OP_DEQUANTIZE 2, 3, 1, 1, ROLES(quant), plxi_infer_quantize
#define OP_MEM_COPY 1, 1, 1, 1, ROLES(x), plxi_infer_mem_copy
#define OP_MEM_IMPORT 1, 1, 1, 1, ROLES(x), plxi_infer_mem_copy
#define OP_LSTM 8, 8, 3, 3, ROLES(rnn), plxi_infer_rnn
#define OP_GRU 6, 6, 2, 2, rnn, 6, plxi_infer_rnn /* the first 6 of lstm's */
#define OP_TILE 1, 1, 1, 1, ROLES(x), plxi_infer_tile
#define OP_ARG_REDUCE 1, 1, 1, 1, ROLES(x), plxi_infer_arg_reduce
#define OP_TOPK 1, 1, 2, 2, ROLES(x), plxi_infer_topk
#define OP_INSTANCE_NORM 3, 3, 1, 1, ROLES(norm), plxi_infer_instance_norm
/* A backend's replacement of other layers (backend.h): any count. */
#define OP_PRECOMPILED 0, ANY, 1, ANY, ROLES(x), plxi_infer_precompiled

/* sizeof the descriptor column's type, 0 for void: PROBE_void expands to
 * two arguments, shifting 0 into the second place; any other type name
 * stays one argument and sizeof(type) is second. */
#define PROBE_void ~, 0
#define SECOND_(a, b, ...) b
#define SECOND(...) SECOND_(__VA_ARGS__)
#define DESC_SIZE(type) SECOND(PROBE_##type, sizeof(type), ~)

#define ROW(suffix, value, name, desc) [value] = {OP_##suffix, DESC_SIZE(desc)},
static const plxi_op_row rows[PLX_OP_COUNT] = {PLX_OP_LIST(ROW)};

const plxi_op_row *plxi_op_lookup(plx_op op) {
    return (unsigned)op < PLX_OP_COUNT && rows[op].infer ? &rows[op] : NULL;
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
    const plxi_op_row *row = plxi_op_lookup(op);
    return row ? row->desc_size : 0;
}
