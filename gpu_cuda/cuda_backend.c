/* gpu_cuda: the CUDA backend's plumbing, a plug-in built with the SDK and
 * the CUDA toolkit (docs/gpu_cuda.md).
 *
 * What lives here: the entry point, descriptor and function table;
 * availability, options (device, precision), the instance and its
 * capabilities, and factories. Tensor handles are in cuda_tensor.c,
 * workloads in cuda_workload.c, matrix products in cuda_gemm.c, kernels in
 * cuda_kernels.cu (cuda_backend.h).
 *
 * Threads (R-14, R-18 (9), R-20): the CUDA runtime's current device is a
 * per-thread setting, and the host calls a backend from any thread, so
 * every function that calls the CUDA runtime on the instance's device
 * first makes it current (cudaSetDevice, which is cheap once the context
 * exists). The instance is read-only after create, but for check_layer's
 * cuDNN handle, made and used under its lock (cuda_conv_probe). Every
 * workload owns its stream, cuBLASLt or cuDNN handle and workspace, and
 * queued runs on its working memory's stream, so workloads of
 * different working memories run concurrently (async_execution); a
 * factory's copy stream is shared by its handles' maps, which CUDA makes
 * safe. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"

/* The oldest compute capability the kernels are built for (gpu_cuda/meson.build:
 * sm_90 machine code and compute_90 PTX). */
#define GPU_CUDA_MIN_MAJOR 9

/* ------------------------------------------------------------------------ */
/* Availability                                                         */
/* ------------------------------------------------------------------------ */

/* "GPU-" and the device's 16-byte UUID in the form nvidia-smi prints. */
static void format_uuid(const cudaUUID_t *u, char *buf, size_t size) {
    const unsigned char *b = (const unsigned char *)u->bytes;
    snprintf(buf, size,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* Without options: does the driver answer, with a device our kernels run
 * on? Which one is used, and whether the options find it, is create's. */
static plx_status gpu_cuda_check_available(const plx_host *host) {
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess) {
        return host->status_create(host, PLX_UNAVAILABLE, "no CUDA device: %s (%s)",
                                   cudaGetErrorString(rc), cudaGetErrorName(rc));
    }
    if (count == 0) {
        return host->status_create(host, PLX_UNAVAILABLE,
                                   "no CUDA device: the driver reports none");
    }
    char why[512] = "";
    for (int i = 0; i < count; i++) {
        struct cudaDeviceProp p;
        rc = cudaGetDeviceProperties(&p, i);
        if (rc != cudaSuccess) {
            size_t len = strlen(why);
            snprintf(why + len, sizeof why - len, "%sdevice %d: %s", i ? "; " : "", i,
                     cudaGetErrorString(rc));
            continue;
        }
        if (p.major >= GPU_CUDA_MIN_MAJOR) {
            return NULL;
        }
        size_t len = strlen(why);
        snprintf(why + len, sizeof why - len, "%sdevice %d '%.100s' is %d.%d", i ? "; " : "", i,
                 p.name, p.major, p.minor);
    }
    return host->status_create(host, PLX_UNAVAILABLE,
                               "no CUDA device of compute capability %d.0 or later, which the "
                               "backend's kernels are built for (%s)",
                               GPU_CUDA_MIN_MAJOR, why);
}

/* ------------------------------------------------------------------------ */
/* Options                                                                    */
/* ------------------------------------------------------------------------ */

static const plx_option_info gpu_cuda_options[] = {
    {"device", "the CUDA device: its index (0, 1, ...) or its UUID (GPU-..., as nvidia-smi -L "
               "prints it)", "0"},
    {"precision", "compute type of the float32 matrix products: fp32, tf32, fp16 or bf16 "
                  "(inputs and outputs stay float32)", "fp32"},
    {"queued", "on: layers are enqueued on a CUDA stream per working memory, with CUDA events "
               "as fences; off: every layer waits for its own stream", "on"},
    {"graphs", "on: with queued on, the layers a working memory runs between two waits are "
               "captured once as a CUDA graph and replayed; off: launched one by one", "on"},
};
#define GPU_CUDA_OPTION_COUNT (sizeof gpu_cuda_options / sizeof gpu_cuda_options[0])

static const char *const precision_names[] = {"fp32", "tf32", "fp16", "bf16"};

/* Finds the device the option names (index or UUID) among `count`. */
static plx_status choose_device(const plx_host *host, const char *text, int count,
                                int *out_device) {
    if (!text) {
        *out_device = 0;
        return NULL;
    }
    if (strncmp(text, "GPU-", 4) == 0) {
        for (int i = 0; i < count; i++) {
            struct cudaDeviceProp p;
            char uuid[48];
            if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
                continue;
            }
            format_uuid(&p.uuid, uuid, sizeof uuid);
            if (strcmp(uuid, text) == 0) {
                *out_device = i;
                return NULL;
            }
        }
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "option device: no CUDA device has UUID '%s' (%d device%s)",
                                   text, count, count == 1 ? "" : "s");
    }
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (!*text || *end || v < 0 || v >= count) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "option device: '%s' is neither a device index from 0 to %d "
                                   "nor a device UUID (GPU-...)",
                                   text, count - 1);
    }
    *out_device = (int)v;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* The instance                                                               */
/* ------------------------------------------------------------------------ */

static void add_cap(plx_backend *b, const char *key, plx_value_type type, bool bv, int64_t iv,
                    const char *sv) {
    if (b->cap_count < GPU_CUDA_MAX_CAPS) {
        plx_capability *c = &b->caps[b->cap_count++];
        memset(c, 0, sizeof *c);
        c->key = key;
        c->type = type;
        c->bool_value = bv;
        c->int_value = iv;
        c->string_value = sv;
    }
}

static void gpu_cuda_destroy(plx_backend *b) {
    if (b) {
        cuda_conv_probe_release(b);
        pthread_mutex_destroy(&b->conv_lock);
        b->host->free(b->host, b);
    }
}

static plx_status gpu_cuda_create(const plx_host *host, const plx_option *options,
                                  size_t option_count, plx_backend **out_backend) {
    const char *device_text = NULL;
    cuda_precision precision = CUDA_PRECISION_FP32;
    bool queued = true;
    bool graphs = true;
    for (size_t i = 0; i < option_count; i++) {
        if (strcmp(options[i].key, "device") == 0) {
            device_text = options[i].value;
        } else if (strcmp(options[i].key, "precision") == 0) {
            size_t p = 0;
            while (p < 4 && strcmp(options[i].value, precision_names[p]) != 0) {
                p++;
            }
            if (p == 4) {
                return host->status_create(host, PLX_INVALID_ARGUMENT,
                                           "option precision: '%s' is not fp32, tf32, fp16 or "
                                           "bf16",
                                           options[i].value);
            }
            precision = (cuda_precision)p;
        } else if (strcmp(options[i].key, "queued") == 0) {
            if (strcmp(options[i].value, "on") != 0 && strcmp(options[i].value, "off") != 0) {
                return host->status_create(host, PLX_INVALID_ARGUMENT,
                                           "option queued: '%s' is not on or off",
                                           options[i].value);
            }
            queued = strcmp(options[i].value, "on") == 0;
        } else if (strcmp(options[i].key, "graphs") == 0) {
            if (strcmp(options[i].value, "on") != 0 && strcmp(options[i].value, "off") != 0) {
                return host->status_create(host, PLX_INVALID_ARGUMENT,
                                           "option graphs: '%s' is not on or off",
                                           options[i].value);
            }
            graphs = strcmp(options[i].value, "on") == 0;
        }
    }
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0) {
        return rc != cudaSuccess ? gpu_cuda_failure(host, rc, PLX_UNAVAILABLE,
                                                    "cudaGetDeviceCount")
                                 : host->status_create(host, PLX_UNAVAILABLE,
                                                       "no CUDA device: the driver reports none");
    }
    int device = 0;
    plx_status s = choose_device(host, device_text, count, &device);
    if (s) {
        return s;
    }
    struct cudaDeviceProp p;
    rc = cudaGetDeviceProperties(&p, device);
    if (rc != cudaSuccess) {
        return gpu_cuda_failure(host, rc, PLX_UNAVAILABLE, "cudaGetDeviceProperties(device %d)",
                                device);
    }
    if (p.major < GPU_CUDA_MIN_MAJOR) {
        return host->status_create(host, PLX_UNAVAILABLE,
                                   "CUDA device %d '%s' is of compute capability %d.%d; the "
                                   "backend's kernels need %d.0 or later",
                                   device, p.name, p.major, p.minor, GPU_CUDA_MIN_MAJOR);
    }
    /* The device's primary context, made now, so that a broken device
     * fails here, naming it, rather than at the first load. */
    rc = cudaSetDevice(device);
    if (rc == cudaSuccess) {
        rc = cudaFree(NULL);
    }
    if (rc != cudaSuccess) {
        return gpu_cuda_failure(host, rc, PLX_UNAVAILABLE, "creating a context on CUDA device %d",
                                device);
    }
    plx_backend *b = host->alloc(host, sizeof *b, 0);
    if (!b) {
        return host->status_create(host, PLX_OUT_OF_MEMORY,
                                   "cannot allocate the backend instance");
    }
    memset(b, 0, sizeof *b);
    if (pthread_mutex_init(&b->conv_lock, NULL) != 0) {
        host->free(host, b);
        return host->status_create(host, PLX_INTERNAL, "pthread_mutex_init failed");
    }
    b->host = host;
    b->device = device;
    b->precision = precision;
    b->queued = queued;
    b->graphs = graphs;
    snprintf(b->device_name, sizeof b->device_name, "%s", p.name);
    format_uuid(&p.uuid, b->uuid, sizeof b->uuid);
    snprintf(b->compute_capability, sizeof b->compute_capability, "%d.%d", p.major, p.minor);
    int runtime_version = 0, driver_version = 0;
    cudaRuntimeGetVersion(&runtime_version);
    cudaDriverGetVersion(&driver_version);
    snprintf(b->versions, sizeof b->versions, "runtime %d.%d, driver %d.%d, cuBLASLt %zu",
             runtime_version / 1000, runtime_version % 1000 / 10, driver_version / 1000,
             driver_version % 1000 / 10, cublasLtGetVersion());
    snprintf(b->choice, sizeof b->choice, "device %d of %d: %s", device, count,
             device_text ? "named by the option device" : "the default, device 0");
    host->log(host, PLX_LOG_INFO, "gpu_cuda: device %d '%s' (%s, compute capability %s, %s)",
              device, b->device_name, b->uuid, b->compute_capability, b->versions);

    add_cap(b, PLX_CAP_ASYNC_EXECUTION, PLX_VALUE_BOOL, true, 0, NULL);
    if (queued) {
        /* fences hold CUDA events of this instance's device; the
         * domain names the instance, so only its own are waited on. */
        snprintf(b->fence_domain, sizeof b->fence_domain, GPU_CUDA_ID ":instance=%p", (void *)b);
        add_cap(b, PLX_CAP_QUEUED_EXECUTION, PLX_VALUE_BOOL, true, 0, NULL);
        add_cap(b, PLX_CAP_FENCE_DOMAIN, PLX_VALUE_STRING, false, 0, b->fence_domain);
    }
    /* intermediate tensors are planned by the host into device
     * buffers the backend allocates (cuda_tensor.c). */
    add_cap(b, PLX_CAP_EXTERNALLY_MANAGED_MEMORY, PLX_VALUE_BOOL, true, 0, NULL);
    add_cap(b, PLX_CAP_ALLOCATES_PLANNED_MEMORY, PLX_VALUE_BOOL, true, 0, NULL);
    add_cap(b, PLX_CAP_IMPORT_MEMORY_KINDS, PLX_VALUE_STRING, false, 0, GPU_CUDA_DEVICE_PTR_KIND);
    add_cap(b, PLX_CAP_PREIMPORT_IO_TENSORS, PLX_VALUE_BOOL, true, 0, NULL);
    add_cap(b, "gpu_cuda.device", PLX_VALUE_STRING, false, 0, b->device_name);
    add_cap(b, "gpu_cuda.uuid", PLX_VALUE_STRING, false, 0, b->uuid);
    add_cap(b, "gpu_cuda.compute_capability", PLX_VALUE_STRING, false, 0, b->compute_capability);
    add_cap(b, "gpu_cuda.versions", PLX_VALUE_STRING, false, 0, b->versions);
    add_cap(b, "gpu_cuda.choice", PLX_VALUE_STRING, false, 0, b->choice);
    add_cap(b, "gpu_cuda.precision", PLX_VALUE_STRING, false, 0, precision_names[precision]);
    add_cap(b, "gpu_cuda.graphs", PLX_VALUE_BOOL, queued && graphs, 0, NULL);
    add_cap(b, "gpu_cuda.memory_bytes", PLX_VALUE_INT, false, (int64_t)p.totalGlobalMem, NULL);
    *out_backend = b;
    return NULL;
}

static plx_status gpu_cuda_get_capabilities(plx_backend *b,
                                            const plx_capability **out_capabilities,
                                            size_t *out_count) {
    *out_capabilities = b->caps;
    *out_count = b->cap_count;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Layers and factories                                                */
/* ------------------------------------------------------------------------ */

/* Constants are the backend's own: their workload copies the bytes into
 * device memory once, at load (R-18 (5)), whatever the dtype. */
static plx_status gpu_cuda_check_layer(plx_backend *b, const plx_layer_view *layer) {
    if (layer->op == PLX_OP_CONSTANT) {
        return NULL;
    }
    char buf[256];
    const char *reason = gpu_cuda_op_check(layer, buf, sizeof buf);
    if (!reason) {
        reason = gpu_cuda_device_check(b, layer, buf, sizeof buf);
    }
    return reason ? b->host->status_create(b->host, PLX_UNSUPPORTED, "%s", reason) : NULL;
}

static void gpu_cuda_destroy_factory(plx_factory *f) {
    if (f->copy_stream) {
        cudaSetDevice(f->device);
        cudaStreamDestroy(f->copy_stream);
    }
    f->host->free(f->host, f);
}

static plx_status gpu_cuda_create_factory(plx_backend *b, const plx_factory_params *params,
                                          plx_factory **out_factory) {
    const plx_host *host = b->host;
    plx_factory *f = host->alloc(host, sizeof *f, 0);
    if (!f) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    memset(f, 0, sizeof *f);
    f->backend = b;
    f->host = host;
    f->device = b->device;
    f->precision = b->precision;
    f->network_id = params->network_id;
    f->profiling = host->struct_size >= PLX_STRUCT_SIZE_UPTO(plx_host, record_event) &&
                   host->now_ns && host->record_event;
    cudaError_t rc = cudaSetDevice(f->device);
    if (rc == cudaSuccess) {
        rc = cudaStreamCreateWithFlags(&f->copy_stream, cudaStreamNonBlocking);
    }
    if (rc != cudaSuccess) {
        f->copy_stream = NULL;
        gpu_cuda_destroy_factory(f);
        return gpu_cuda_failure(host, rc, PLX_INTERNAL, "cudaStreamCreateWithFlags");
    }
    *out_factory = f;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Descriptor and entry                                                       */
/* ------------------------------------------------------------------------ */

static const plx_backend_functions gpu_cuda_functions = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_functions, import_external_memory),
    .check_available = gpu_cuda_check_available,
    .create = gpu_cuda_create,
    .destroy = gpu_cuda_destroy,
    .get_capabilities = gpu_cuda_get_capabilities,
    .check_layer = gpu_cuda_check_layer,
    .create_factory = gpu_cuda_create_factory,
    .destroy_factory = gpu_cuda_destroy_factory,
    .factory_workloads_created = NULL,
    .create_tensor_handle = gpu_cuda_create_tensor_handle,
    .destroy_tensor_handle = gpu_cuda_destroy_tensor_handle,
    .allocate_tensor_handle = gpu_cuda_allocate_tensor_handle,
    .release_tensor_handle = gpu_cuda_release_tensor_handle,
    .map_tensor_handle = gpu_cuda_map_tensor_handle,
    .unmap_tensor_handle = gpu_cuda_unmap_tensor_handle,
    /* Host memory is never imported: the host copies it through map. */
    .import_tensor_handle = NULL,
    .unimport_tensor_handle = gpu_cuda_unimport_tensor_handle,
    .create_workload = gpu_cuda_create_workload,
    .destroy_workload = gpu_cuda_destroy_workload,
    .configure_workload = NULL,
    .execute_workload = gpu_cuda_execute_workload,
    .create_sub_tensor_handle = NULL,
    .get_memory_strategy = NULL, /* the host's default, greedy */
    .optimize_subgraph = gpu_cuda_optimize_subgraph,
    /* R-24, used when the option queued is on (cuda_queue.c). */
    .create_queue = gpu_cuda_create_queue,
    .destroy_queue = gpu_cuda_destroy_queue,
    .enqueue_workload = gpu_cuda_enqueue_workload,
    .queue_signal = gpu_cuda_queue_signal,
    .fence_wait = gpu_cuda_fence_wait,
    .fence_query = gpu_cuda_fence_query,
    .destroy_fence = gpu_cuda_destroy_fence,
    .allocate_planned_buffer = gpu_cuda_allocate_planned_buffer,
    .free_planned_buffer = gpu_cuda_free_planned_buffer,
    .import_external_memory = gpu_cuda_import_external_memory,
};

static const plx_backend_descriptor gpu_cuda_descriptor = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count),
    .abi_version = PLX_MAKE_ABI_VERSION(PLX_ABI_VERSION_MAJOR, PLX_ABI_VERSION_MINOR),
    .id = GPU_CUDA_ID,
    .name = "CUDA GPU backend",
    .version = "0.1.0",
    .functions = &gpu_cuda_functions,
    .options = gpu_cuda_options,
    .option_count = GPU_CUDA_OPTION_COUNT,
};

/* the descriptor claims the SDK's minor version; a host older than
 * that refuses it with a clear reason, so only the major needs checking. */
const plx_backend_descriptor *plx_backend_entry(uint32_t host_abi_version, const plx_host *host) {
    if (PLX_ABI_VERSION_GET_MAJOR(host_abi_version) != PLX_ABI_VERSION_MAJOR) {
        host->log(host, PLX_LOG_ERROR,
                  "gpu_cuda implements backend ABI %d.x; the host implements %u.%u",
                  PLX_ABI_VERSION_MAJOR, PLX_ABI_VERSION_GET_MAJOR(host_abi_version),
                  PLX_ABI_VERSION_GET_MINOR(host_abi_version));
        return NULL;
    }
    return &gpu_cuda_descriptor;
}
