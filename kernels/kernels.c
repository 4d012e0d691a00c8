/* The operator -> kernel table of the reference kernels (kernels.h). */
#include "kernels.h"

#include "fusion.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

bool plxk_fail(const plxk_kernel_args *args, const char *fmt, ...) {
    if (args->error && args->error_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(args->error, args->error_size, fmt, ap);
        va_end(ap);
    }
    return false;
}

const char *plxk_refuse(char *buf, size_t size, const char *fmt, ...) {
    if (!buf || size == 0) {
        return "cpu_ref cannot run this layer";
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return buf;
}

#define ENTRY(op, name) [op] = {plxk_check_##name, plxk_run_##name, NULL}
#define ENTRY_WS(op, name) \
    [op] = {plxk_check_##name, plxk_run_##name, plxk_workspace_##name}

typedef size_t (*workspace_fn)(const plx_layer_view *layer, const plxk_compute *compute);

static const struct {
    plxk_check_fn check;
    plxk_run_fn run;
    workspace_fn workspace; /* NULL: none */
} table[PLX_OP_COUNT] = {
    ENTRY(PLX_OP_CONSTANT, constant),
    ENTRY_WS(PLX_OP_CONV, conv),
    ENTRY(PLX_OP_CONV_TRANSPOSE, conv_transpose),
    ENTRY_WS(PLX_OP_FULLY_CONNECTED, fully_connected),
    ENTRY_WS(PLX_OP_MATMUL, matmul),
    ENTRY_WS(PLX_OP_GEMM, gemm),
    ENTRY(PLX_OP_POOL, pool),
    ENTRY(PLX_OP_GLOBAL_POOL, global_pool),
    ENTRY(PLX_OP_ACTIVATION, activation),
    ENTRY(PLX_OP_BINARY, binary),
    ENTRY(PLX_OP_UNARY, unary),
    ENTRY(PLX_OP_BATCH_NORM, batch_norm),
    ENTRY(PLX_OP_LAYER_NORM, layer_norm),
    ENTRY(PLX_OP_SOFTMAX, softmax),
    ENTRY(PLX_OP_REDUCE, reduce),
    ENTRY(PLX_OP_RESHAPE, reshape),
    ENTRY(PLX_OP_FLATTEN, reshape),
    ENTRY(PLX_OP_TRANSPOSE, transpose),
    ENTRY(PLX_OP_CONCAT, concat),
    ENTRY(PLX_OP_SPLIT, split),
    ENTRY(PLX_OP_SLICE, slice),
    ENTRY(PLX_OP_PAD, pad),
    ENTRY(PLX_OP_SQUEEZE, reshape),
    ENTRY(PLX_OP_UNSQUEEZE, reshape),
    ENTRY(PLX_OP_GATHER, gather),
    ENTRY(PLX_OP_EXPAND, expand),
    ENTRY(PLX_OP_WHERE, where),
    ENTRY(PLX_OP_CAST, cast),
    ENTRY(PLX_OP_RESIZE, resize),
    ENTRY(PLX_OP_DEPTH_TO_SPACE, depth_to_space),
    ENTRY(PLX_OP_SPACE_TO_DEPTH, space_to_depth),
    ENTRY(PLX_OP_QUANTIZE, quantize),
    ENTRY(PLX_OP_DEQUANTIZE, dequantize),
    ENTRY(PLX_OP_MEM_COPY, mem_copy),
    ENTRY(PLX_OP_TILE, tile),
    ENTRY(PLX_OP_ARG_REDUCE, arg_reduce),
    ENTRY(PLX_OP_TOPK, topk),
    ENTRY(PLX_OP_INSTANCE_NORM, instance_norm),
    ENTRY(PLX_OP_LSTM, lstm),
    ENTRY(PLX_OP_GRU, gru),
    ENTRY_WS(PLX_OP_PRECOMPILED, precompiled),
};

bool plxk_kernel_lookup(plx_op op, plxk_check_fn *out_check, plxk_run_fn *out_run) {
    if ((unsigned)op >= PLX_OP_COUNT || !table[op].run) {
        return false;
    }
    *out_check = table[op].check;
    *out_run = table[op].run;
    return true;
}

size_t plxk_kernel_workspace(const plx_layer_view *layer, const plxk_compute *compute) {
    if (!layer || (unsigned)layer->op >= PLX_OP_COUNT || !table[layer->op].workspace) {
        return 0;
    }
    return table[layer->op].workspace(layer, compute);
}

bool plxk_kernel_run_once(plxk_run_fn run, const plxk_kernel_args *args) {
    plxk_kernel_args a = *args;
    a.workspace_size = plxk_kernel_workspace(args->layer, args->compute);
    a.workspace = NULL;
    if (a.workspace_size > SIZE_MAX - 64 ||
        (a.workspace_size &&
         !(a.workspace = aligned_alloc(64, (a.workspace_size + 63) / 64 * 64)))) {
        return plxk_fail(args, "cpu_ref: cannot allocate a workspace of %zu bytes",
                            a.workspace_size);
    }
    bool ok = run(&a);
    free(a.workspace);
    return ok;
}
