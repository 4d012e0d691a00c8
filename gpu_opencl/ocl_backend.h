/* gpu_opencl internals shared by the backend's plumbing files
 * (gpu_opencl_backend.c, ocl_device.c, ocl_program.c, ocl_tensor.c,
 * ocl_workload.c): the instance, factory and tensor handle, and the
 * functions one file calls in another. Not exported. */
#ifndef GPU_OPENCL_OCL_BACKEND_H
#define GPU_OPENCL_OCL_BACKEND_H

#include <pthread.h>

#include <plexus/backend.h>

#include "ocl_ops.h"

#define GPU_OPENCL_ID "gpu_opencl"

/* The vendor kind of external memory this backend's planned buffers
 * are described as: `handle` is a cl_mem of the instance's context. */
#define GPU_OPENCL_CL_MEM_KIND "gpu_opencl.cl_mem"

/* ---- devices and options (ocl_device.c) ---- */

/* One device seen while enumerating, with what makes it usable or not. */
typedef struct seen_device {
    cl_platform_id platform;
    cl_device_id device;
    cl_uint platform_index;
    cl_uint index_in_platform;
    cl_device_type type;
    char name[256];
    char platform_name[256];
    char platform_version[256];
    char version[256];   /* CL_DEVICE_VERSION */
    char c_version[128]; /* CL_DEVICE_OPENCL_C_VERSION */
    char driver[256];    /* CL_DRIVER_VERSION */
    cl_ulong local_mem;
    cl_uint base_align_bits;
    size_t max_work_group_size;
    bool has_fp16;
    char problem[192]; /* empty: usable */
} seen_device;

typedef struct device_list {
    seen_device *items; /* from host->alloc */
    size_t count;
    cl_uint platform_count;
    char platform_names[8][128]; /* the first few, for messages */
} device_list;


typedef enum type_choice {
    TYPE_DEFAULT = 0, /* a GPU if there is one, else any */
    TYPE_GPU,
    TYPE_CPU,
    TYPE_ACCELERATOR,
    TYPE_ALL
} type_choice;

typedef struct parsed_options {
    const char *platform; /* NULL: any; the host's string, valid during create */
    const char *device;
    type_choice type;
    const char *type_text;
    const char *cache_dir;
    bool queued; /* option queued: on (default) or off */
    bool planned_device; /* option planned_memory: device (default) or host */
} parsed_options;

#define OCL_OPTION_COUNT 6
extern const plx_option_info ocl_options[OCL_OPTION_COUNT];

const char *ocl_device_type_name(cl_device_type t);
void ocl_device_list_free(const plx_host *host, device_list *l);
/* Every platform's devices, each with why it is unusable, if it is.
 * Takes the platform lock itself. */
plx_status ocl_enumerate_devices(const plx_host *host, device_list *out);
/* The process-wide platform lock: held around device enumeration, context
 * creation and context release. An OpenCL implementation may tear its
 * devices down when their last context is released and set them up again
 * at the next query (PoCL does: two runtimes created and destroyed on two
 * threads at once crashed inside clGetDeviceInfo), so these calls from
 * different backend instances, one per runtime, must not overlap. */
void ocl_platform_lock(void);
void ocl_platform_unlock(void);
plx_status ocl_parse_options(const plx_host *host, const plx_option *options, size_t count,
                             parsed_options *out);
/* Chooses the device: writes its index and why, or returns a status naming
 * the option that found nothing. */
plx_status ocl_choose_device(const plx_host *host, const device_list *l,
                             const parsed_options *o, size_t *out_index, char *why,
                             size_t why_size);

/* ---- the instance and factories (gpu_opencl_backend.c) ---- */

#define GPU_OPENCL_MAX_CAPS 20

struct plx_backend {
    const plx_host *host; /* valid until destroy (backend.h, plx_host) */
    /* The device, context and flags; `dev.program` stays NULL: factories
     * get a copy with the program (so that check_layer, which may run
     * beside the first create_factory, reads only what never changes). */
    ocl_device dev;
    size_t import_alignment; /* bytes */

    pthread_mutex_t program_lock;
    cl_program program; /* built at the first create_factory, under program_lock */

    char *cache_dir; /* from host->alloc; NULL: no program cache */
    char build_options[64];
    uint64_t program_key; /* FNV-1a of the device, driver, source and options */

    /* Capability values (strings live here until destroy). */
    plx_capability caps[GPU_OPENCL_MAX_CAPS];
    size_t cap_count;
    char device_name[256];
    char platform_name[256];
    char platform_version[256];
    char device_version[256];
    char driver_version[256];
    char choice[256];
    char devices_text[2048];
    /* Option queued: on reports queued_execution and fence_domain. */
    bool queued;
    /* "gpu_opencl:context=0x...": fences are this instance's own, for its
     * one context (PLX_CAP_FENCE_DOMAIN). */
    char fence_domain[64];
    /* Option planned_memory=device, in effect: reports
     * allocates_planned_memory, so planned tensors are sub-buffers of
     * cl_mem buffers of the backend's own (ocl_tensor.c). */
    bool planned_device;
    size_t base_align; /* CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes */
};


struct plx_factory {
    plx_backend *backend;
    const plx_host *host;
    ocl_device dev;              /* the instance's, with the program */
    cl_command_queue map_queue;  /* map/unmap of every handle of the factory */
    cl_mem empty;                /* what tensors of 0 bytes are bound to */
    size_t import_alignment;
    uint32_t network_id;
    bool queued;    /* the instance's option queued */
    bool profiling; /* the host can take profiling events */
    bool planned_device; /* the instance's planned_memory=device */
    size_t base_align;   /* the device's base address alignment, bytes */
};

/* Appends printf output to buf (size bytes, NUL-terminated), truncating
 * with "..." when full. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void ocl_append(char *buf, size_t size, const char *fmt, ...);
/* An OpenCL failure as a status naming the call and the error (R-12 (4)). */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
plx_status ocl_cl_failure(const plx_host *host, cl_int rc, plx_status_code code,
                          const char *call_fmt, ...);

/* ---- the program and its cache (ocl_program.c) ---- */

/* FNV-1a of the device, driver, source and options: the cache's key. */
uint64_t ocl_program_key(const plx_backend *b);
/* Builds (or loads) the program; called with program_lock held. */
plx_status ocl_build_program(plx_backend *b);

/* ---- tensor handles (ocl_tensor.c) ---- */


/* A handle's memory is a cl_mem: one it created (managed), a
 * CL_MEM_USE_HOST_PTR wrapper of imported host memory, so that kernels use
 * the caller's (or the host's planned) bytes in place, or, for a planned
 * tensor with planned_memory=device, its place in a planned buffer
 * of the backend's: a sub-buffer, or the buffer itself (retained) at
 * offset 0. A tensor of 0 bytes
 * is bound to the factory's small `empty` buffer, since OpenCL has no empty
 * buffers; nothing reads or writes it. No sub-tensors: a sub-buffer's origin
 * must be a multiple of the device's base address alignment, which a
 * concat's parts are not, so the host runs concat and split as layers. */
struct plx_tensor_handle {
    plx_factory *factory;
    size_t bytes;
    size_t element_size;
    bool managed;
    bool has_memory;
    bool owns_mem;      /* mem is released with the memory */
    bool imported;      /* mem wraps imported memory (host or external) */
    bool external;      /* ... bound by import_external_memory: device memory */
    bool written;       /* some workload writes it: unimport copies back */
    bool constant;      /* a constant's output: read-only once computed */
    cl_mem mem;
    void *import_ptr;

    pthread_mutex_t lock; /* map state: several executions may map a constant */
    unsigned map_count;
    void *map_ptr;
    unsigned char empty_view[8]; /* what mapping a tensor of 0 bytes gives */
};


plx_status ocl_create_tensor_handle(plx_factory *f, const plx_tensor_info *info,
                                    const plx_tensor_handle_params *params,
                                    plx_tensor_handle **out_handle);
plx_status ocl_allocate_tensor_handle(plx_tensor_handle *h);
void ocl_release_tensor_handle(plx_tensor_handle *h);
plx_status ocl_map_tensor_handle(plx_tensor_handle *h, void **out_data);
void ocl_unmap_tensor_handle(plx_tensor_handle *h);
void ocl_unimport_tensor_handle(plx_tensor_handle *h);
plx_status ocl_import_tensor_handle(plx_tensor_handle *h, void *memory, size_t size,
                                    plx_memory_source source);
void ocl_destroy_tensor_handle(plx_tensor_handle *h);
/* planned buffers of kind GPU_OPENCL_CL_MEM_KIND, and the binding of
 * a planned handle to its place in one. */
plx_status ocl_allocate_planned_buffer(plx_factory *f, const plx_planned_buffer_params *params,
                                       plx_external_memory *out_memory);
void ocl_free_planned_buffer(plx_factory *f, const plx_external_memory *memory);
plx_status ocl_import_external_memory(plx_tensor_handle *h, const plx_external_memory *memory);

/* ---- workloads (ocl_workload.c) ---- */

/* A workload owns its plan (kernels and auxiliary buffers) and the arrays
 * a run fills, so that running allocates nothing (R-18 (7)); and, when the
 * host executes it (execute_workload), its own in-order queue. Queued
 * it runs on its working memory's queue instead (ocl_queue.c). */
struct plx_workload {
    plx_factory *factory;
    cl_command_queue queue; /* execute_workload's; NULL until the first (queued) */
    ocl_plan plan;
    bool constant;
    const void *constant_data; /* plx_constant_desc.data: valid while the network lives */
    uint32_t input_count, output_count;
    plx_tensor_handle **inputs;
    plx_tensor_handle **outputs;
    cl_mem *input_mems; /* the handles' memory at the last enqueue */
    cl_mem *output_mems;
    char error[512];
};

plx_status ocl_create_workload(plx_factory *f, const plx_layer_view *layer,
                               plx_tensor_handle *const *inputs,
                               plx_tensor_handle *const *outputs, plx_workload **out_workload);
void ocl_destroy_workload(plx_workload *w);
plx_status ocl_execute_workload(plx_workload *w);
/* Reads the handles' memory into input_mems and output_mems; a status when
 * one has none. */
plx_status ocl_workload_bind(plx_workload *w);
/* Binds the workload and enqueues its launches on `queue`, without
 * waiting; `events` as for ocl_plan_enqueue_events (NULL: none). A
 * constant's bytes are written without blocking (they live as long as the
 * network). A status when nothing or only part was enqueued. */
plx_status ocl_workload_enqueue(plx_workload *w, cl_command_queue queue, cl_event *events);
/* Whether the workload's kernels flag indices out of range (ocl_plan_check). */
bool ocl_workload_has_check(const plx_workload *w);
/* Once its run finished: NULL when no index was out of range, else a
 * status (PLX_INVALID_ARGUMENT) with the message of ocl_plan_check,
 * preceded by "layer 'NAME': " when layer_name is given. Blocking reads
 * on `queue`. */
plx_status ocl_workload_check(plx_workload *w, cl_command_queue queue, const char *layer_name);

/* ---- queued execution and profiling (ocl_queue.c, R-24, R-25) ---- */

plx_status ocl_create_queue(plx_factory *f, const plx_queue_params *params,
                            plx_queue **out_queue);
void ocl_destroy_queue(plx_queue *q);
plx_status ocl_enqueue_workload(plx_queue *q, const plx_enqueue_params *params);
plx_status ocl_queue_signal(plx_queue *q, plx_fence **out_fence);
plx_status ocl_fence_wait(plx_fence *f);
plx_status ocl_fence_query(plx_fence *f, bool *out_signalled);
void ocl_destroy_fence(plx_fence *f);

#endif /* GPU_OPENCL_OCL_BACKEND_H */
