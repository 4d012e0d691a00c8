/* The reference kernels (kernels/): one check and one run function per
 * operator, the code cpu_ref executes workloads on and the core's constant
 * folding (core/src/fold.c) evaluates layers with.
 *
 * Kernels are C over dense row-major buffers that read as the operator's
 * definition; where time goes they are fast: matrix products and
 * convolutions run on a blocked GEMM with per-ISA micro-kernels and an
 * intra-op thread pool (gemm.h), depthwise convs on a kernel of their own
 * (depthwise.h), and the rest is compiled -O3 for the vectoriser
 * (kernels/meson.build). They allocate nothing: everything they need is
 * in their arguments, so executing a workload never touches the heap.
 * Shapes have been inferred and validated by the host before a kernel sees
 * them (outputs[i] infos are final); kernels still never read or write out
 * of bounds whatever the infos say, and report data-dependent errors (an
 * index out of range, an integer division by zero) through `error`. */
#ifndef PLXK_KERNELS_H
#define PLXK_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

#include <plexus/ops.h>
#include <plexus/tensor.h>

#include "gemm.h"

/* Small helpers the kernel files share. */

/* The layer's name for messages ("?" when it has none). */
static inline const char *plxk_layer_name(const plx_layer_view *layer) {
    return layer->name ? layer->name : "?";
}

/* The element count of t; 0 when it overflows (the host's validation
 * rules that out for the layers a kernel runs). */
static inline size_t plxk_element_count(const plx_tensor_info *t) {
    size_t n = 0;
    plx_tensor_info_element_count(t, &n);
    return n;
}

/* Whether a and b have the same rank (at most PLX_MAX_RANK) and dims. */
static inline bool plxk_same_dims(const plx_tensor_info *a, const plx_tensor_info *b) {
    if (a->rank != b->rank || a->rank > PLX_MAX_RANK) {
        return false;
    }
    for (uint32_t d = 0; d < a->rank; d++) {
        if (a->dims[d] != b->dims[d]) {
            return false;
        }
    }
    return true;
}

typedef struct plxk_kernel_args {
    const plx_layer_view *layer; /* infos and descriptor of the layer */
    const void *const *inputs;   /* layer->input_count dense buffers */
    void *const *outputs;        /* layer->output_count dense buffers */
    char *error;                 /* on failure: a message naming the problem */
    size_t error_size;
    /* The backend's GEMM variant and intra-op thread pool (gemm.h); NULL:
     * plxk_isa_best() on the calling thread. */
    const plxk_compute *compute;
    /* Scratch memory of plxk_kernel_workspace bytes for this layer and
     * compute (GEMM panels, an im2col buffer), owned by the caller, which
     * allocates it once; NULL when that is 0. A kernel given less fails
     * with a message rather than allocate. */
    void *workspace;
    size_t workspace_size;
    /* Only for conv, fully_connected, gemm and matmul in float32: relu or
     * clip applied to output 0 as it is written (a precompiled layer's
     * fused activation); NULL: none. */
    const plx_activation_desc *activation;
    /* What plxk_kernel_prepare made of the layer's constant inputs for this
     * compute (fully_connected, gemm and matmul in float32: the constant
     * weights packed for the GEMM), or NULL: the kernel then works from the
     * inputs alone, as constant folding and the kernel tests run it. */
    const void *prepared;
} plxk_kernel_args;

/* Bytes of workspace the kernel of `layer` needs with `compute` (NULL: the
 * best ISA, one thread); 0 for operators that need none or a layer the
 * kernel refuses; SIZE_MAX when the size overflows. */
size_t plxk_kernel_workspace(const plx_layer_view *layer, const plxk_compute *compute);


/* Runs the layer. true on success; false with a message in args->error. */
typedef bool (*plxk_run_fn)(const plxk_kernel_args *args);

/* Runs `run` once outside a workload (kernel tests, constant folding at
 * import): allocates the workspace plxk_kernel_workspace asks for on
 * the heap, runs, frees it (args->workspace is ignored). false with a
 * message when the kernel fails or memory runs out. */
bool plxk_kernel_run_once(plxk_run_fn run, const plxk_kernel_args *args);

/* NULL when cpu_ref can run the layer (op, dtypes, attributes); otherwise
 * the reason, which may be written into buf (size bytes). */
typedef const char *(*plxk_check_fn)(const plx_layer_view *layer, char *buf, size_t size);

/* Looks up an operator's kernel. false when cpu_ref has no kernel for op. */
bool plxk_kernel_lookup(plx_op op, plxk_check_fn *out_check, plxk_run_fn *out_run);

typedef size_t (*plxk_workspace_fn)(const plx_layer_view *layer, const plxk_compute *compute);

/* Derives, once, what the kernel of `layer` can compute ahead from the
 * layer's constant inputs (layer->input_constants, which stay valid as long
 * as the network) for `compute`: with `out` NULL, returns the bytes it
 * needs (0: nothing to prepare: no constant that helps, a layer the kernel
 * refuses, or sizes that overflow); otherwise writes them into `out` (size
 * bytes, 64-byte aligned) and returns the same count, or 0, writing
 * nothing, when size is short. The result is valid for this layer view's
 * shapes and this compute's ISA only, and goes to plxk_kernel_args.prepared
 * of every run. */
typedef size_t (*plxk_prepare_fn)(const plx_layer_view *layer, const plxk_compute *compute,
                                  void *out, size_t size);

/* plxk_prepare_fn of the layer's operator; 0 for operators without one. */
size_t plxk_kernel_prepare(const plx_layer_view *layer, const plxk_compute *compute, void *out,
                           size_t size);

/* One row of the kernel table (kernels.c): the operator's check and run
 * functions, its workspace function and its prepare function (NULL:
 * none); all NULL for an operator without a kernel. */
typedef struct plxk_kernel_row {
    plxk_check_fn check;
    plxk_run_fn run;
    plxk_workspace_fn workspace;
    plxk_prepare_fn prepare;
} plxk_kernel_row;

/* Every operator of PLX_OP_LIST has a row plxk_kernel_row_<SUFFIX>,
 * defined next to its kernel at the end of the kernels_*.c file of its
 * family, or in kernels.c for the operators without a kernel and for
 * precompiled layers (fusion.h). kernels.c indexes them by value: an
 * operator without a row fails to link, naming it. */
#define PLXK_KERNEL_ROW_DECL_(suffix, value, name, desc) \
    extern const plxk_kernel_row plxk_kernel_row_##suffix;
PLX_OP_LIST(PLXK_KERNEL_ROW_DECL_)
#undef PLXK_KERNEL_ROW_DECL_

/* PLXK_ROW(INSTANCE_NORM, instance_norm): the operator runs on
 * plxk_check_instance_norm and plxk_run_instance_norm; PLXK_ROW_WS also
 * sizes its workspace with plxk_workspace_<name>; PLXK_ROW_WS_PREP also
 * prepares its constants with plxk_prepare_<name>; PLXK_NO_KERNEL: cpu_ref
 * refuses the operator. */
#define PLXK_ROW(suffix, name)                                                           \
    const plxk_kernel_row plxk_kernel_row_##suffix = {plxk_check_##name, plxk_run_##name, \
                                                      NULL, NULL}
#define PLXK_ROW_WS(suffix, name)                                                        \
    const plxk_kernel_row plxk_kernel_row_##suffix = {plxk_check_##name, plxk_run_##name, \
                                                      plxk_workspace_##name, NULL}
#define PLXK_ROW_WS_PREP(suffix, name)                                                   \
    const plxk_kernel_row plxk_kernel_row_##suffix = {plxk_check_##name, plxk_run_##name, \
                                                      plxk_workspace_##name,              \
                                                      plxk_prepare_##name}
#define PLXK_NO_KERNEL(suffix) \
    const plxk_kernel_row plxk_kernel_row_##suffix = {NULL, NULL, NULL, NULL}

/* Writes a printf-formatted message into args->error; returns false so that
 * kernels can `return plxk_fail(args, ...)`. */
bool plxk_fail(const plxk_kernel_args *args, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Formats a check function's refusal into buf (size bytes) and returns
 * it; without a buffer, a fixed reason. */
const char *plxk_refuse(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* One declaration pair per kernel, which its operators' rows name;
 * defined in the dense-math files (kernels_conv.c, kernels_matmul.c,
 * kernels_pool.c, kernels_norm.c, kernels_reduce.c, kernels_resize.c),
 * kernels_elementwise.c, kernels_data.c, kernels_rnn.c, kernels_index.c,
 * kernels_mask_scan.c, kernels_quant.c, kernels_grid_sample.c,
 * kernels_signal.c, kernels_col2im.c, kernels_det.c, kernels_roi_align.c and
 * kernels_deform_conv.c. */
#define PLXK_KERNEL(name)                                                           \
    const char *plxk_check_##name(const plx_layer_view *layer, char *buf, size_t size); \
    bool plxk_run_##name(const plxk_kernel_args *args);

/* the dense-math files (kernels_compute.h) */
PLXK_KERNEL(conv)
PLXK_KERNEL(conv_transpose)
PLXK_KERNEL(fully_connected)
PLXK_KERNEL(matmul)
PLXK_KERNEL(gemm)
PLXK_KERNEL(pool)
PLXK_KERNEL(global_pool)
PLXK_KERNEL(batch_norm)
PLXK_KERNEL(layer_norm)
PLXK_KERNEL(softmax)
PLXK_KERNEL(reduce)
PLXK_KERNEL(resize)
PLXK_KERNEL(instance_norm)
PLXK_KERNEL(arg_reduce)
PLXK_KERNEL(topk)
/* kernels_elementwise.c */
PLXK_KERNEL(activation)
PLXK_KERNEL(binary)
PLXK_KERNEL(unary)
PLXK_KERNEL(where)
PLXK_KERNEL(cast)
PLXK_KERNEL(quantize)
PLXK_KERNEL(dequantize)
/* kernels_data.c */
PLXK_KERNEL(constant)
PLXK_KERNEL(mem_copy)
PLXK_KERNEL(reshape) /* also flatten, squeeze, unsqueeze: a byte copy */
PLXK_KERNEL(transpose)
PLXK_KERNEL(concat)
PLXK_KERNEL(split)
PLXK_KERNEL(slice)
PLXK_KERNEL(pad)
PLXK_KERNEL(gather)
PLXK_KERNEL(expand)
PLXK_KERNEL(depth_to_space)
PLXK_KERNEL(space_to_depth)
PLXK_KERNEL(tile)
/* kernels_rnn.c */
PLXK_KERNEL(lstm)
PLXK_KERNEL(gru)
PLXK_KERNEL(rnn)
/* kernels_index.c */
PLXK_KERNEL(gather_elements)
PLXK_KERNEL(scatter_elements) /* also ONNX's old Scatter */
PLXK_KERNEL(scatter_nd)
PLXK_KERNEL(gather_nd)
/* kernels_mask_scan.c */
PLXK_KERNEL(trilu)
PLXK_KERNEL(one_hot)
PLXK_KERNEL(hardmax)
PLXK_KERNEL(cum_sum)
/* kernels_quant.c (conv and matmul on quantized tensors reach it from
 * their own rows) */
PLXK_KERNEL(conv_integer)
PLXK_KERNEL(matmul_integer)
PLXK_KERNEL(dynamic_quantize)
/* kernels_grid_sample.c */
PLXK_KERNEL(grid_sample)
/* kernels_signal.c */
PLXK_KERNEL(dft)
PLXK_KERNEL(stft)
/* kernels_col2im.c */
PLXK_KERNEL(col2im)
PLXK_KERNEL(max_unpool)
/* kernels_det.c */
PLXK_KERNEL(det)
/* kernels_data.c */
PLXK_KERNEL(reverse_sequence)
/* kernels_roi_align.c */
PLXK_KERNEL(roi_align)
/* kernels_deform_conv.c */
PLXK_KERNEL(deform_conv)

/* Workspace sizes (plxk_kernel_workspace) of the kernels that need one. */
size_t plxk_workspace_conv(const plx_layer_view *layer, const plxk_compute *compute);
size_t plxk_workspace_conv_transpose(const plx_layer_view *layer,
                                     const plxk_compute *compute);
size_t plxk_workspace_fully_connected(const plx_layer_view *layer,
                                         const plxk_compute *compute);
size_t plxk_workspace_gemm(const plx_layer_view *layer, const plxk_compute *compute);
size_t plxk_workspace_matmul(const plx_layer_view *layer, const plxk_compute *compute);
size_t plxk_workspace_resize(const plx_layer_view *layer, const plxk_compute *compute);
size_t plxk_workspace_lstm(const plx_layer_view *layer, const plxk_compute *compute);
size_t plxk_workspace_gru(const plx_layer_view *layer, const plxk_compute *compute);
size_t plxk_workspace_rnn(const plx_layer_view *layer, const plxk_compute *compute);
size_t plxk_workspace_cum_sum(const plx_layer_view *layer, const plxk_compute *compute);
size_t plxk_workspace_dft(const plx_layer_view *layer, const plxk_compute *compute);
size_t plxk_workspace_stft(const plx_layer_view *layer, const plxk_compute *compute);
size_t plxk_workspace_det(const plx_layer_view *layer, const plxk_compute *compute);
size_t plxk_workspace_conv_integer(const plx_layer_view *layer, const plxk_compute *compute);
size_t plxk_workspace_matmul_integer(const plx_layer_view *layer, const plxk_compute *compute);

/* Prepared constants (plxk_kernel_prepare) of the kernels that have them. */
size_t plxk_prepare_fully_connected(const plx_layer_view *layer, const plxk_compute *compute,
                                    void *out, size_t size);
size_t plxk_prepare_gemm(const plx_layer_view *layer, const plxk_compute *compute, void *out,
                         size_t size);
size_t plxk_prepare_matmul(const plx_layer_view *layer, const plxk_compute *compute, void *out,
                           size_t size);
size_t plxk_prepare_conv(const plx_layer_view *layer, const plxk_compute *compute, void *out,
                         size_t size);
size_t plxk_prepare_conv_integer(const plx_layer_view *layer, const plxk_compute *compute,
                                 void *out, size_t size);
size_t plxk_prepare_matmul_integer(const plx_layer_view *layer, const plxk_compute *compute,
                                   void *out, size_t size);

#undef PLXK_KERNEL

#endif /* PLXK_KERNELS_H */
