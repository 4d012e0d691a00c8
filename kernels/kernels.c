/* The operator -> kernel table of the reference kernels (kernels.h): the
 * row of every operator of PLX_OP_LIST by value. */
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
        return "no reference kernel runs this layer";
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return buf;
}

/* The operators without a kernel, which cpu_ref refuses: the graph's
 * inputs and outputs, and mem_import, which the host executes itself
 * (core/src/execute.c). Precompiled layers run fusion.c's kernel. */
PLXK_NO_KERNEL(INVALID);
PLXK_NO_KERNEL(INPUT);
PLXK_NO_KERNEL(OUTPUT);
PLXK_NO_KERNEL(MEM_IMPORT);
PLXK_ROW_WS_PREP(PRECOMPILED, precompiled);

#define ROW(suffix, value, name, desc) [value] = &plxk_kernel_row_##suffix,
static const plxk_kernel_row *const table[PLX_OP_COUNT] = {PLX_OP_LIST(ROW)};

bool plxk_kernel_lookup(plx_op op, plxk_check_fn *out_check, plxk_run_fn *out_run) {
    if ((unsigned)op >= PLX_OP_COUNT || !table[op]->run) {
        return false;
    }
    *out_check = table[op]->check;
    *out_run = table[op]->run;
    return true;
}

size_t plxk_kernel_workspace(const plx_layer_view *layer, const plxk_compute *compute) {
    if (!layer || (unsigned)layer->op >= PLX_OP_COUNT || !table[layer->op]->workspace) {
        return 0;
    }
    return table[layer->op]->workspace(layer, compute);
}

size_t plxk_kernel_prepare(const plx_layer_view *layer, const plxk_compute *compute, void *out,
                           size_t size) {
    if (!layer || (unsigned)layer->op >= PLX_OP_COUNT || !table[layer->op]->prepare) {
        return 0;
    }
    return table[layer->op]->prepare(layer, compute, out, size);
}

bool plxk_kernel_run_once(plxk_run_fn run, const plxk_kernel_args *args) {
    plxk_kernel_args a = *args;
    a.workspace_size = plxk_kernel_workspace(args->layer, args->compute);
    a.workspace = NULL;
    if (a.workspace_size > SIZE_MAX - 64 ||
        (a.workspace_size &&
         !(a.workspace = aligned_alloc(64, (a.workspace_size + 63) / 64 * 64)))) {
        return plxk_fail(args, "cannot allocate a workspace of %zu bytes",
                            a.workspace_size);
    }
    bool ok = run(&a);
    free(a.workspace);
    return ok;
}
