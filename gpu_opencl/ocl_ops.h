/* gpu_opencl internals: the split between the backend plumbing
 * (gpu_opencl_backend.c, ocl_device.c, ocl_program.c, ocl_tensor.c,
 * ocl_workload.c: devices, options, factories, tensor handles, workloads,
 * queues, the program cache; ocl_runtime.c: program building,
 * plans, error names) and the operators (ocl_ops_*.c: which layers run here
 * and how, as plans of kernel launches over the kernels of kernels/<name>.cl).
 *
 * Nothing here is exported: the plug-in's only public symbol is
 * plx_backend_entry. OpenCL 1.2 API only (CL_TARGET_OPENCL_VERSION 120),
 * through the ICD loader. */
#ifndef GPU_OPENCL_OCL_OPS_H
#define GPU_OPENCL_OCL_OPS_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plexus/ops.h>
#include <plexus/tensor.h>

/* The device a backend instance runs on, and the program holding every
 * kernel (built once per context, from ocl_program_source()). Read-only
 * after creation: shared by every factory and thread. */
typedef struct ocl_device {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_program program;
    size_t max_work_group_size;
    cl_ulong local_mem_size;
    cl_uint mem_base_addr_align; /* bits (CL_DEVICE_MEM_BASE_ADDR_ALIGN) */
} ocl_device;

/* The OpenCL C source of every kernel (kernels/<name>.cl, embedded at build
 * time), built with "-cl-std=CL1.2". Compute is float32; float16 tensors
 * are only converted (cast, through vload_half/vstore_half, core 1.2). */
const char *ocl_program_source(void);

/* "CL_INVALID_VALUE", ...; "CL error -N" for codes it does not know (into
 * buf). */
const char *ocl_error_name(cl_int err, char *buf, size_t size);

/* ---- plans: how one layer runs ------------------------------------------ */

#define OCL_MAX_LAUNCHES 6
#define OCL_MAX_ARGS 24
#define OCL_MAX_VALUE 64

typedef enum ocl_arg_kind {
    OCL_ARG_INPUT = 0,  /* the layer's input buffer `slot` (cl_mem) */
    OCL_ARG_OUTPUT = 1, /* the layer's output buffer `slot` (cl_mem) */
    OCL_ARG_VALUE = 2,  /* `size` bytes of `value` (a scalar or a small struct) */
    OCL_ARG_AUX = 3,    /* the plan's auxiliary buffer `slot` (cl_mem) */
    OCL_ARG_LOCAL = 4   /* `size` bytes of __local memory */
} ocl_arg_kind;

typedef struct ocl_arg {
    ocl_arg_kind kind;
    uint32_t slot;
    size_t size;
    unsigned char value[OCL_MAX_VALUE];
} ocl_arg;

typedef enum ocl_launch_kind {
    OCL_LAUNCH_KERNEL = 0, /* clEnqueueNDRangeKernel */
    OCL_LAUNCH_COPY = 1    /* clEnqueueCopyBuffer input copy_src -> output copy_dst, `bytes` */
} ocl_launch_kind;

typedef struct ocl_launch {
    ocl_launch_kind kind;
    cl_kernel kernel;       /* owned by the plan */
    /* What the launch runs, for messages and profiling events: the
     * kernel's CL_KERNEL_FUNCTION_NAME, read once when the plan is built;
     * "copy_buffer" for a copy. */
    char name[64];
    cl_uint work_dim;       /* 1 to 3 */
    size_t global[3];       /* already rounded up to a multiple of local */
    size_t local[3];
    bool has_local;         /* false: NULL local size */
    ocl_arg args[OCL_MAX_ARGS];
    uint32_t arg_count;
    /* OCL_LAUNCH_COPY */
    uint32_t copy_src, copy_dst;
    size_t bytes;
} ocl_launch;

/* One layer as launches, run in order on one in-order queue. Scratch
 * buffers for intermediate results between launches are aux buffers (the
 * plan owns them: a plan belongs to one workload, so one execution at a
 * time uses them). */
#define OCL_MAX_AUX 4

/* Index checking on the device (docs/gpu_opencl.md, "Indices read at run
 * time"): a layer whose kernels read indices from a tensor keeps one int in
 * an aux buffer, set to INT_MAX before the launches; a kernel that meets an
 * index out of range skips it and lowers the int to that index's element
 * number in the indices tensor (atomic_min, so the first bad element
 * wins whatever the order of work-items). ocl_plan_check reads it back
 * after the run. */
typedef struct ocl_index_check {
    bool active;
    uint32_t flag;      /* aux slot of the int */
    uint32_t input;     /* the indices' input slot */
    bool is64;          /* int64 indices (else int32) */
    char what[112];     /* "layer 'name' (gather_elements)" */
    /* How the message names a value and its tensor: "index" and "indices"
     * unless set otherwise ("length", "sequence_lens"). */
    char value_name[16], tensor_name[24];
    /* Kernels may also report a failure of their own with OCL_CHECK_OTHER
     * + n (n < 2^30): the message is then "<other_noun> n <other_text>"
     * ("roi 3 is not finite"). */
    char other_noun[16], other_text[80];
} ocl_index_check;
#define OCL_CHECK_OTHER (1 << 30)

typedef struct ocl_plan {
    ocl_launch launches[OCL_MAX_LAUNCHES];
    uint32_t count;
    cl_mem aux[OCL_MAX_AUX];
    uint32_t aux_count;
    ocl_index_check check;
} ocl_plan;

/* Launch-building helpers (ocl_runtime.c). Each returns false with a
 * message in err when the kernel is missing or the plan is full. */
bool ocl_plan_kernel(ocl_plan *plan, const ocl_device *dev, const char *kernel_name,
                     ocl_launch **out_launch, char *err, size_t err_size);
void ocl_arg_input(ocl_launch *l, uint32_t slot);
void ocl_arg_output(ocl_launch *l, uint32_t slot);
void ocl_arg_value(ocl_launch *l, const void *value, size_t size);
void ocl_arg_int(ocl_launch *l, int32_t v);
void ocl_arg_float(ocl_launch *l, float v);
void ocl_arg_aux(ocl_launch *l, uint32_t slot);
void ocl_arg_local(ocl_launch *l, size_t bytes);
/* Sets a 1-D to 3-D range; local NULL lets the driver choose. Global sizes
 * are rounded up to multiples of local (kernels bound-check). */
void ocl_launch_range(ocl_launch *l, cl_uint work_dim, const size_t *global, const size_t *local);
/* An aux buffer initialised with `bytes` of `data` (read-only for kernels),
 * or, when data is NULL, an uninitialised read-write scratch buffer of
 * `bytes` (for results between launches); returns its slot through
 * out_slot. */
bool ocl_plan_aux(ocl_plan *plan, const ocl_device *dev, const void *data, size_t bytes,
                  uint32_t *out_slot, char *err, size_t err_size);
/* A copy launch (output dst <- input src, bytes). */
bool ocl_plan_copy(ocl_plan *plan, uint32_t src, uint32_t dst, size_t bytes, char *err,
                   size_t err_size);
/* Releases kernels and aux buffers; the plan is zeroed. */
void ocl_plan_release(ocl_plan *plan);
/* Adds the index check's flag (an aux buffer of one int) to the plan, for
 * the indices in input slot `input` (int64 when is64) of the layer named
 * `layer` running `op`; returns the flag's aux slot for the kernels'
 * argument. */
bool ocl_plan_index_check(ocl_plan *plan, const ocl_device *dev, const char *layer,
                          const char *op, uint32_t input, bool is64, uint32_t *out_flag,
                          char *err, size_t err_size);
/* After the plan's launches finished: true when no index was out of range
 * (or the plan checks none); otherwise false with "gpu_opencl: layer 'x'
 * (gather_nd): index 7 (indices element 3) is out of range" in err (a
 * failed read-back is reported there too). Blocking reads on `queue`. */
bool ocl_plan_check(const ocl_plan *plan, cl_command_queue queue, const cl_mem *inputs,
                    char *err, size_t err_size);
/* Enqueues every launch on `queue` (does not wait). Returns CL_SUCCESS, or
 * the failing call's code with "clEnqueueNDRangeKernel(kernel): CL_..." in
 * err. */
cl_int ocl_plan_enqueue(const ocl_plan *plan, cl_command_queue queue, const cl_mem *inputs,
                        const cl_mem *outputs, char *err, size_t err_size);
/* ocl_plan_enqueue, keeping each launch's event for profiling:
 * `events` has room for OCL_MAX_LAUNCHES; launch i that was enqueued
 * leaves its event in events[i] (the caller releases it), one that was
 * skipped (nothing to compute or copy) leaves NULL. With `events` NULL no
 * event is created, as ocl_plan_enqueue. On failure every event created is
 * released and the array holds NULL. */
cl_int ocl_plan_enqueue_events(const ocl_plan *plan, cl_command_queue queue,
                               const cl_mem *inputs, const cl_mem *outputs, cl_event *events,
                               char *err, size_t err_size);

/* ---- operators (ocl_ops_*.c) -------------------------------------------- */

/* NULL when gpu_opencl runs the layer on `dev` (op, enum values, dtypes,
 * ranks, attributes); otherwise the reason, possibly written into buf.
 * Everything not covered is refused here, so it falls back and never
 * miscomputes. */
const char *ocl_op_check(const ocl_device *dev, const plx_layer_view *layer, char *buf,
                         size_t size);

/* Builds the layer's plan (kernels, argument values, ranges, aux buffers
 * such as broadcast strides or pre-packed weights). Only for layers
 * ocl_op_check accepted. `layer->input_constants` may give constant inputs'
 * data (valid for the network's lifetime) for pre-packing. false with a
 * message on failure (the plan is left released). */
bool ocl_op_prepare(const ocl_device *dev, const plx_layer_view *layer, ocl_plan *plan,
                    char *err, size_t err_size);

#endif /* GPU_OPENCL_OCL_OPS_H */
