/* gpu_opencl operators: helpers shared by ocl_ops.c and ocl_ops_*.c, and
 * the per-operator check and prepare functions ocl_op_check and
 * ocl_op_prepare dispatch to. Private to the operator files. */
#ifndef GPU_OPENCL_OCL_OPS_INTERNAL_H
#define GPU_OPENCL_OCL_OPS_INTERNAL_H

#include <plexus/geometry.h>

#include "ocl_ops.h"

#if defined(__GNUC__)
#define OCL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define OCL_PRINTF(f, a)
#endif

/* Kernels index with int: every tensor's element count (and so every
 * offset) stays at most this, a margin below 2^31 so that global sizes
 * rounded up to a work-group multiple still fit an int global id. */
#define OCL_INDEX_LIMIT (((int64_t)1 << 31) - ((int64_t)1 << 16))

/* Formats a refusal into buf and returns it (a fixed text without buf). */
const char *ocl_refuse(char *buf, size_t size, const char *fmt, ...) OCL_PRINTF(3, 4);
/* Formats an error into err; returns false. */
bool ocl_fail(char *err, size_t size, const char *fmt, ...) OCL_PRINTF(3, 4);

/* Refuses a layer with an input or output of more than OCL_INDEX_LIMIT
 * elements (the kernels index in int). The rest of a view (slot counts,
 * descriptor size, dtypes and shapes) is the host's to validate
 * (docs/backend-abi.md, "What the host guarantees about a layer view"). */
const char *ocl_check_index_limit(const plx_layer_view *l, char *buf, size_t size);
/* Refuses unless every input and output is float32:
 * "gpu_opencl: conv needs float32, got float16". */
const char *ocl_require_f32(const plx_layer_view *l, char *buf, size_t size);
/* Refuses unless the output has exactly `rank` dims `dims`. */
const char *ocl_require_shape(const plx_layer_view *l, uint32_t out, uint32_t rank,
                              const int64_t *dims, char *buf, size_t size);

int64_t ocl_numel(const plx_tensor_info *t);
int64_t ocl_dim_product(const plx_tensor_info *t, uint32_t from, uint32_t to);
bool ocl_same_dims(const plx_tensor_info *a, const plx_tensor_info *b);
/* "u8", "u16", "u32", "u64" by element size; NULL for others. */
const char *ocl_size_suffix(plx_dtype t);

/* A dense output walked with up to 3 sets of element strides (inputs read
 * strided, or an output written strided). */
typedef struct ocl_shape {
    uint32_t rank;
    int64_t dims[PLX_MAX_RANK];
    int64_t st[3][PLX_MAX_RANK];
} ocl_shape;

/* Drops dims of size 1 and merges neighbours that are contiguous in every
 * stride set (nst of them); leaves rank >= 1. */
void ocl_shape_collapse(ocl_shape *s, uint32_t nst);
/* The first `rank` values, the rest `fill`, as an OpenCL int8. */
cl_int8 ocl_int8_of(const int64_t *v, uint32_t rank, int32_t fill);

/* CL_KERNEL_WORK_GROUP_SIZE of a launch's kernel (at most the device's). */
size_t ocl_kernel_wg(const ocl_launch *l, const ocl_device *dev);
/* A 1-D kernel launch over n work-items (work-groups of up to 64). */
bool ocl_kernel_1d(ocl_plan *plan, const ocl_device *dev, const char *name, int64_t n,
                   ocl_launch **out, char *err, size_t size);
/* A kernel with one work-group per output (`groups` of them), each of a
 * power of two of work-items suited to `per_group` elements; *wg gets the
 * size (for local scratch). */
bool ocl_kernel_groups(ocl_plan *plan, const ocl_device *dev, const char *name, int64_t groups,
                       int64_t per_group, ocl_launch **out, size_t *wg, char *err, size_t size);

/* A batched matrix product (gemm.cl), operands from inputs or aux slots. */
typedef struct ocl_gemm_desc {
    int64_t m, n, k;
    int64_t a_sm, a_sk, b_sk, b_sn, c_sm, c_sn, y_sm;
    float alpha, beta;
    bool a_aux, b_aux;       /* operand in an aux slot instead of an input */
    uint32_t a_slot, b_slot;
    bool has_c;
    uint32_t c_slot;         /* input slot of C */
    int64_t batches;
    const int32_t *offsets;  /* 4 per batch: A, B, C, Y element offsets */
} ocl_gemm_desc;
bool ocl_plan_gemm(ocl_plan *plan, const ocl_device *dev, const ocl_gemm_desc *g, char *err,
                   size_t size);

/* Per operator: check and prepare (prepare runs only after check passed). */
#define OCL_OP_FUNCS(name)                                                                      \
    const char *ocl_check_##name(const ocl_device *dev, const plx_layer_view *l, char *buf,     \
                                 size_t size);                                                  \
    bool ocl_prepare_##name(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,     \
                            char *err, size_t size);

/* ocl_ops_data.c */
OCL_OP_FUNCS(reshape) /* reshape, flatten, squeeze, unsqueeze */
OCL_OP_FUNCS(transpose)
OCL_OP_FUNCS(concat)
OCL_OP_FUNCS(split)
OCL_OP_FUNCS(slice)
OCL_OP_FUNCS(pad)
OCL_OP_FUNCS(gather)
OCL_OP_FUNCS(expand)
OCL_OP_FUNCS(tile)
OCL_OP_FUNCS(depth_to_space)
OCL_OP_FUNCS(space_to_depth)
/* ocl_ops_elementwise.c */
OCL_OP_FUNCS(activation)
OCL_OP_FUNCS(unary)
OCL_OP_FUNCS(binary)
OCL_OP_FUNCS(where)
OCL_OP_FUNCS(cast)
/* ocl_ops_compute.c */
OCL_OP_FUNCS(conv)
OCL_OP_FUNCS(conv_transpose)
OCL_OP_FUNCS(fully_connected)
OCL_OP_FUNCS(matmul)
OCL_OP_FUNCS(gemm)
OCL_OP_FUNCS(pool)
OCL_OP_FUNCS(global_pool)
OCL_OP_FUNCS(batch_norm)
OCL_OP_FUNCS(layer_norm)
OCL_OP_FUNCS(instance_norm)
OCL_OP_FUNCS(softmax)
OCL_OP_FUNCS(reduce)
OCL_OP_FUNCS(arg_reduce)
OCL_OP_FUNCS(resize)
OCL_OP_FUNCS(deform_conv)
OCL_OP_FUNCS(lstm) /* lstm, gru, rnn */
/* ocl_ops_index.c */
OCL_OP_FUNCS(gather_elements)
OCL_OP_FUNCS(scatter_elements)
OCL_OP_FUNCS(gather_nd)
OCL_OP_FUNCS(scatter_nd)
OCL_OP_FUNCS(trilu)
OCL_OP_FUNCS(one_hot)
OCL_OP_FUNCS(hardmax)
OCL_OP_FUNCS(cum_sum)
OCL_OP_FUNCS(topk)
/* ocl_ops_sample.c */
OCL_OP_FUNCS(grid_sample)
OCL_OP_FUNCS(reverse_sequence)
OCL_OP_FUNCS(max_unpool)
OCL_OP_FUNCS(col2im)
OCL_OP_FUNCS(det)
OCL_OP_FUNCS(roi_align)
OCL_OP_FUNCS(dft)
OCL_OP_FUNCS(stft)
/* gather's plan for indices read at run time (checked on the device). */
bool ocl_prepare_gather_dynamic(const ocl_device *dev, const plx_layer_view *l, ocl_plan *plan,
                                char *err, size_t size);

#undef OCL_OP_FUNCS

#endif /* GPU_OPENCL_OCL_OPS_INTERNAL_H */
