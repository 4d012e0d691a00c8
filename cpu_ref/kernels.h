/* cpu_ref's kernels: one check and one run function per operator.
 *
 * Kernels are plain, readable loops over dense row-major buffers (speed
 * comes in a later issue). They allocate nothing: everything they need is
 * in their arguments, so executing a workload never touches the heap.
 * Shapes have been inferred and validated by the host before a kernel sees
 * them (outputs[i] infos are final); kernels still never read or write out
 * of bounds whatever the infos say, and report data-dependent errors (an
 * index out of range, an integer division by zero) through `error`. */
#ifndef CPU_REF_KERNELS_H
#define CPU_REF_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

#include <plexus/ops.h>
#include <plexus/tensor.h>

#include "gemm.h"

typedef struct cpu_ref_kernel_args {
    const plx_layer_view *layer; /* infos and descriptor of the layer */
    const void *const *inputs;   /* layer->input_count dense buffers */
    void *const *outputs;        /* layer->output_count dense buffers */
    char *error;                 /* on failure: a message naming the problem */
    size_t error_size;
    /* The backend's GEMM variant and intra-op thread pool (gemm.h); NULL:
     * cpu_ref_isa_best() on the calling thread. */
    const cpu_ref_compute *compute;
    /* Scratch memory of cpu_ref_kernel_workspace bytes for this layer and
     * compute (GEMM panels, an im2col buffer), owned by the caller, which
     * allocates it once; NULL when that is 0. A kernel given less fails
     * with a message rather than allocate. */
    void *workspace;
    size_t workspace_size;
    /* Only for conv, fully_connected, gemm and matmul in float32: relu or
     * clip applied to output 0 as it is written (a precompiled layer's
     * fused activation); NULL: none. */
    const plx_activation_desc *activation;
} cpu_ref_kernel_args;

/* Bytes of workspace the kernel of `layer` needs with `compute` (NULL: the
 * best ISA, one thread); 0 for operators that need none or a layer the
 * kernel refuses; SIZE_MAX when the size overflows. */
size_t cpu_ref_kernel_workspace(const plx_layer_view *layer, const cpu_ref_compute *compute);


/* Runs the layer. true on success; false with a message in args->error. */
typedef bool (*cpu_ref_run_fn)(const cpu_ref_kernel_args *args);

/* Runs `run` once outside a workload (kernel tests, constant folding at
 * import): allocates the workspace cpu_ref_kernel_workspace asks for on
 * the heap, runs, frees it (args->workspace is ignored). false with a
 * message when the kernel fails or memory runs out. */
bool cpu_ref_kernel_run_once(cpu_ref_run_fn run, const cpu_ref_kernel_args *args);

/* NULL when cpu_ref can run the layer (op, dtypes, attributes); otherwise
 * the reason, which may be written into buf (size bytes). */
typedef const char *(*cpu_ref_check_fn)(const plx_layer_view *layer, char *buf, size_t size);

/* Looks up an operator's kernel. false when cpu_ref has no kernel for op. */
bool cpu_ref_kernel_lookup(plx_op op, cpu_ref_check_fn *out_check, cpu_ref_run_fn *out_run);

/* Writes a printf-formatted message into args->error; returns false so that
 * kernels can `return cpu_ref_fail(args, ...)`. */
bool cpu_ref_fail(const cpu_ref_kernel_args *args, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Formats a check function's refusal into buf (size bytes) and returns
 * it; without a buffer, a fixed reason. */
const char *cpu_ref_refuse(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* One declaration pair per operator with a kernel; defined in
 * kernels_compute.c (dense math), kernels_elementwise.c and kernels_data.c. */
#define CPU_REF_KERNEL(name)                                                           \
    const char *cpu_ref_check_##name(const plx_layer_view *layer, char *buf, size_t size); \
    bool cpu_ref_run_##name(const cpu_ref_kernel_args *args);

/* kernels_compute.c */
CPU_REF_KERNEL(conv)
CPU_REF_KERNEL(conv_transpose)
CPU_REF_KERNEL(fully_connected)
CPU_REF_KERNEL(matmul)
CPU_REF_KERNEL(gemm)
CPU_REF_KERNEL(pool)
CPU_REF_KERNEL(global_pool)
CPU_REF_KERNEL(batch_norm)
CPU_REF_KERNEL(layer_norm)
CPU_REF_KERNEL(softmax)
CPU_REF_KERNEL(reduce)
CPU_REF_KERNEL(resize)
CPU_REF_KERNEL(instance_norm)
CPU_REF_KERNEL(arg_reduce)
CPU_REF_KERNEL(topk)
/* kernels_elementwise.c */
CPU_REF_KERNEL(activation)
CPU_REF_KERNEL(binary)
CPU_REF_KERNEL(unary)
CPU_REF_KERNEL(where)
CPU_REF_KERNEL(cast)
CPU_REF_KERNEL(quantize)
CPU_REF_KERNEL(dequantize)
/* kernels_data.c */
CPU_REF_KERNEL(constant)
CPU_REF_KERNEL(mem_copy)
CPU_REF_KERNEL(reshape) /* also flatten, squeeze, unsqueeze: a byte copy */
CPU_REF_KERNEL(transpose)
CPU_REF_KERNEL(concat)
CPU_REF_KERNEL(split)
CPU_REF_KERNEL(slice)
CPU_REF_KERNEL(pad)
CPU_REF_KERNEL(gather)
CPU_REF_KERNEL(expand)
CPU_REF_KERNEL(depth_to_space)
CPU_REF_KERNEL(space_to_depth)
CPU_REF_KERNEL(tile)
/* kernels_rnn.c */
CPU_REF_KERNEL(lstm)
CPU_REF_KERNEL(gru)

/* Workspace sizes (cpu_ref_kernel_workspace) of the kernels that need one. */
size_t cpu_ref_workspace_conv(const plx_layer_view *layer, const cpu_ref_compute *compute);
size_t cpu_ref_workspace_fully_connected(const plx_layer_view *layer,
                                         const cpu_ref_compute *compute);
size_t cpu_ref_workspace_gemm(const plx_layer_view *layer, const cpu_ref_compute *compute);
size_t cpu_ref_workspace_matmul(const plx_layer_view *layer, const cpu_ref_compute *compute);

#undef CPU_REF_KERNEL

#endif /* CPU_REF_KERNELS_H */
