/* gpu_opencl operators: ocl_op_check / ocl_op_prepare dispatch, and the
 * helpers the per-operator files share (ocl_ops_internal.h). */
#include "ocl_ops_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- messages ----------------------------------------------------------- */

const char *ocl_refuse(char *buf, size_t size, const char *fmt, ...) {
    if (!buf || size == 0) {
        return "gpu_opencl cannot run this layer";
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return buf;
}

bool ocl_fail(char *err, size_t size, const char *fmt, ...) {
    if (err && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, size, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* ---- infos -------------------------------------------------------------- */

int64_t ocl_numel(const plx_tensor_info *t) {
    int64_t n = 1;
    for (uint32_t i = 0; i < t->rank && i < PLX_MAX_RANK; i++) {
        n *= t->dims[i];
    }
    return n;
}

int64_t ocl_dim_product(const plx_tensor_info *t, uint32_t from, uint32_t to) {
    int64_t n = 1;
    for (uint32_t i = from; i < to && i < PLX_MAX_RANK; i++) {
        n *= t->dims[i];
    }
    return n;
}

bool ocl_same_dims(const plx_tensor_info *a, const plx_tensor_info *b) {
    if (a->rank != b->rank) {
        return false;
    }
    for (uint32_t i = 0; i < a->rank && i < PLX_MAX_RANK; i++) {
        if (a->dims[i] != b->dims[i]) {
            return false;
        }
    }
    return true;
}

const char *ocl_size_suffix(plx_dtype t) {
    switch (plx_dtype_size(t)) {
    case 1: return "u8";
    case 2: return "u16";
    case 4: return "u32";
    case 8: return "u64";
    default: return NULL;
    }
}

static bool within_index_limit(const plx_tensor_info *t) {
    size_t n = 0;
    return plx_tensor_info_element_count(t, &n) && (uint64_t)n <= (uint64_t)OCL_INDEX_LIMIT;
}

const char *ocl_check_index_limit(const plx_layer_view *l, char *buf, size_t size) {
    for (uint32_t i = 0; i < l->input_count + l->output_count; i++) {
        bool in = i < l->input_count;
        if (!within_index_limit(in ? &l->inputs[i] : &l->outputs[i - l->input_count])) {
            return ocl_refuse(buf, size,
                              "%s: %s %u has too many elements (2^31 - 2^16 at most)",
                              plx_op_name(l->op), in ? "input" : "output",
                              in ? i : i - l->input_count);
        }
    }
    return NULL;
}

const char *ocl_require_f32(const plx_layer_view *l, char *buf, size_t size) {
    for (uint32_t i = 0; i < l->input_count + l->output_count; i++) {
        const plx_tensor_info *t = i < l->input_count ? &l->inputs[i] : &l->outputs[i - l->input_count];
        if (t->dtype != PLX_DTYPE_FLOAT32) {
            return ocl_refuse(buf, size, "%s needs float32, got %s", plx_op_name(l->op),
                              plx_dtype_name(t->dtype));
        }
    }
    return NULL;
}

const char *ocl_require_shape(const plx_layer_view *l, uint32_t out, uint32_t rank,
                              const int64_t *dims, char *buf, size_t size) {
    const plx_tensor_info *y = &l->outputs[out];
    bool same = y->rank == rank;
    for (uint32_t i = 0; same && i < rank; i++) {
        same = y->dims[i] == dims[i];
    }
    if (!same) {
        return ocl_refuse(buf, size, "%s: output %u's shape disagrees with the inputs",
                          plx_op_name(l->op), out);
    }
    return NULL;
}

/* ---- shapes ------------------------------------------------------------- */

void ocl_shape_collapse(ocl_shape *s, uint32_t nst) {
    ocl_shape r;
    memset(&r, 0, sizeof r);
    for (uint32_t d = 0; d < s->rank; d++) {
        if (s->dims[d] == 1) {
            continue; /* never steps */
        }
        bool merge = r.rank > 0;
        for (uint32_t k = 0; merge && k < nst; k++) {
            /* the previous kept dim continues into this one */
            merge = r.st[k][r.rank - 1] == s->st[k][d] * s->dims[d];
        }
        if (merge) {
            r.dims[r.rank - 1] *= s->dims[d];
            for (uint32_t k = 0; k < nst; k++) {
                r.st[k][r.rank - 1] = s->st[k][d];
            }
        } else {
            r.dims[r.rank] = s->dims[d];
            for (uint32_t k = 0; k < nst; k++) {
                r.st[k][r.rank] = s->st[k][d];
            }
            r.rank++;
        }
    }
    if (r.rank == 0) {
        r.rank = 1;
        r.dims[0] = 1;
    }
    *s = r;
}

cl_int8 ocl_int8_of(const int64_t *v, uint32_t rank, int32_t fill) {
    cl_int8 r;
    for (uint32_t i = 0; i < 8; i++) {
        r.s[i] = i < rank ? (cl_int)v[i] : fill;
    }
    return r;
}

/* ---- launches ----------------------------------------------------------- */

size_t ocl_kernel_wg(const ocl_launch *l, const ocl_device *dev) {
    size_t wg = 0;
    if (clGetKernelWorkGroupInfo(l->kernel, dev->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg,
                                 NULL) != CL_SUCCESS ||
        wg == 0) {
        wg = 1;
    }
    if (dev->max_work_group_size && wg > dev->max_work_group_size) {
        wg = dev->max_work_group_size;
    }
    return wg;
}

static size_t pow2_floor(size_t v) {
    size_t p = 1;
    while (p * 2 <= v) {
        p *= 2;
    }
    return p;
}

bool ocl_kernel_1d(ocl_plan *plan, const ocl_device *dev, const char *name, int64_t n,
                   ocl_launch **out, char *err, size_t size) {
    if (!ocl_plan_kernel(plan, dev, name, out, err, size)) {
        return false;
    }
    size_t wg = ocl_kernel_wg(*out, dev);
    size_t local = wg < 64 ? pow2_floor(wg) : 64;
    size_t global = (size_t)(n > 0 ? n : 0);
    ocl_launch_range(*out, 1, &global, &local);
    return true;
}

bool ocl_kernel_groups(ocl_plan *plan, const ocl_device *dev, const char *name, int64_t groups,
                       int64_t per_group, ocl_launch **out, size_t *wg, char *err, size_t size) {
    if (!ocl_plan_kernel(plan, dev, name, out, err, size)) {
        return false;
    }
    size_t max = pow2_floor(ocl_kernel_wg(*out, dev));
    size_t local = 1;
    while (local < 128 && local < max && (int64_t)local < per_group) {
        local *= 2;
    }
    size_t global = (size_t)(groups > 0 ? groups : 0) * local;
    ocl_launch_range(*out, 1, &global, &local);
    *wg = local;
    return true;
}

bool ocl_plan_gemm(ocl_plan *plan, const ocl_device *dev, const ocl_gemm_desc *g, char *err,
                   size_t size) {
    uint32_t table = 0;
    if (!ocl_plan_aux(plan, dev, g->offsets, (size_t)g->batches * 4 * sizeof(int32_t), &table, err,
                      size)) {
        return false;
    }
    /* the tiled kernel needs 16x16 work-groups and is worth it on blocks */
    bool tiled = g->m >= 16 && g->n >= 16 && dev->max_work_group_size >= 256;
    ocl_launch *l = NULL;
    if (tiled) {
        if (!ocl_plan_kernel(plan, dev, "gemm_tiled", &l, err, size)) {
            return false;
        }
        if (ocl_kernel_wg(l, dev) < 256) {
            clReleaseKernel(l->kernel);
            l->kernel = NULL;
            plan->count--;
            tiled = false;
        }
    }
    if (!tiled && !ocl_plan_kernel(plan, dev, "gemm_naive", &l, err, size)) {
        return false;
    }
    if (g->a_aux) {
        ocl_arg_aux(l, g->a_slot);
    } else {
        ocl_arg_input(l, g->a_slot);
    }
    if (g->b_aux) {
        ocl_arg_aux(l, g->b_slot);
    } else {
        ocl_arg_input(l, g->b_slot);
    }
    if (g->has_c) {
        ocl_arg_input(l, g->c_slot);
    } else if (g->a_aux) { /* unread: any buffer */
        ocl_arg_aux(l, g->a_slot);
    } else {
        ocl_arg_input(l, g->a_slot);
    }
    ocl_arg_output(l, 0);
    ocl_arg_aux(l, table);
    ocl_arg_int(l, (int32_t)g->m);
    ocl_arg_int(l, (int32_t)g->n);
    ocl_arg_int(l, (int32_t)g->k);
    ocl_arg_int(l, (int32_t)g->a_sm);
    ocl_arg_int(l, (int32_t)g->a_sk);
    ocl_arg_int(l, (int32_t)g->b_sk);
    ocl_arg_int(l, (int32_t)g->b_sn);
    ocl_arg_int(l, (int32_t)g->c_sm);
    ocl_arg_int(l, (int32_t)g->c_sn);
    ocl_arg_int(l, (int32_t)g->y_sm);
    ocl_arg_float(l, g->alpha);
    ocl_arg_float(l, g->beta);
    ocl_arg_int(l, g->has_c ? 1 : 0);
    size_t global[3], local[3] = {16, 16, 1};
    if (tiled) {
        global[0] = (size_t)((g->n + 63) / 64) * 16;
        global[1] = (size_t)((g->m + 63) / 64) * 16;
        global[2] = (size_t)g->batches;
        ocl_launch_range(l, 3, global, local);
    } else {
        size_t wg = ocl_kernel_wg(l, dev);
        local[0] = wg >= 64 ? 64 : pow2_floor(wg);
        local[1] = 1;
        global[0] = (size_t)g->n;
        global[1] = (size_t)g->m;
        global[2] = (size_t)g->batches;
        ocl_launch_range(l, 3, global, local);
    }
    return true;
}

/* ---- dispatch ----------------------------------------------------------- */

typedef const char *(*check_fn)(const ocl_device *, const plx_layer_view *, char *, size_t);
typedef bool (*prepare_fn)(const ocl_device *, const plx_layer_view *, ocl_plan *, char *, size_t);

#define ENTRY(op, name) [op] = {ocl_check_##name, ocl_prepare_##name}

static const struct {
    check_fn check;
    prepare_fn prepare;
} ops[PLX_OP_COUNT] = {
    ENTRY(PLX_OP_CONV, conv),
    ENTRY(PLX_OP_CONV_TRANSPOSE, conv_transpose),
    ENTRY(PLX_OP_FULLY_CONNECTED, fully_connected),
    ENTRY(PLX_OP_MATMUL, matmul),
    ENTRY(PLX_OP_GEMM, gemm),
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
    ENTRY(PLX_OP_TILE, tile),
    ENTRY(PLX_OP_ARG_REDUCE, arg_reduce),
    ENTRY(PLX_OP_INSTANCE_NORM, instance_norm),
    ENTRY(PLX_OP_GATHER_ELEMENTS, gather_elements),
    ENTRY(PLX_OP_SCATTER_ELEMENTS, scatter_elements),
    ENTRY(PLX_OP_GATHER_ND, gather_nd),
    ENTRY(PLX_OP_SCATTER_ND, scatter_nd),
    ENTRY(PLX_OP_TRILU, trilu),
    ENTRY(PLX_OP_ONE_HOT, one_hot),
    ENTRY(PLX_OP_HARDMAX, hardmax),
    ENTRY(PLX_OP_CUM_SUM, cum_sum),
    ENTRY(PLX_OP_TOPK, topk),
    ENTRY(PLX_OP_GRID_SAMPLE, grid_sample),
    ENTRY(PLX_OP_REVERSE_SEQUENCE, reverse_sequence),
    ENTRY(PLX_OP_MAX_UNPOOL, max_unpool),
    ENTRY(PLX_OP_COL2IM, col2im),
    ENTRY(PLX_OP_DET, det),
    ENTRY(PLX_OP_ROI_ALIGN, roi_align),
    ENTRY(PLX_OP_DFT, dft),
    ENTRY(PLX_OP_STFT, stft),
    ENTRY(PLX_OP_DEFORM_CONV, deform_conv),
    ENTRY(PLX_OP_LSTM, lstm),
    ENTRY(PLX_OP_GRU, lstm),
    ENTRY(PLX_OP_RNN, lstm),
};

const char *ocl_op_check(const ocl_device *dev, const plx_layer_view *layer, char *buf,
                         size_t size) {
    /* The host validated the view (a known op among them). */
    if (!ops[layer->op].check) {
        return ocl_refuse(buf, size, "%s is not implemented", plx_op_name(layer->op));
    }
    return ops[layer->op].check(dev, layer, buf, size);
}

bool ocl_op_prepare(const ocl_device *dev, const plx_layer_view *layer, ocl_plan *plan,
                    char *err, size_t err_size) {
    memset(plan, 0, sizeof *plan);
    char why_buf[256];
    const char *why = ocl_op_check(dev, layer, why_buf, sizeof why_buf);
    if (why) {
        return ocl_fail(err, err_size, "%s", why);
    }
    if (!ops[layer->op].prepare(dev, layer, plan, err, err_size)) {
        ocl_plan_release(plan);
        return false;
    }
    return true;
}
