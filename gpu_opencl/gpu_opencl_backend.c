/* gpu_opencl: the OpenCL backend's plumbing, as a plug-in built with the
 * SDK and the OpenCL ICD loader (never a vendor library directly).
 *
 * What lives here: the entry point, descriptor and function table; the
 * instance (context, capabilities) and factories. Device choice and options
 * are in ocl_device.c, the program and its cache in ocl_program.c, tensor
 * handles in ocl_tensor.c, workloads in ocl_workload.c (ocl_backend.h).
 *
 * Threads (R-14, R-18 (9), R-20): the instance's device description is
 * read-only after create; the program is built once under a lock and then
 * only read. Every workload owns its plan's kernels (the one OpenCL call
 * that is not thread-safe on a shared object is clSetKernelArg), and runs
 * on its working memory's queue (queued, R-24: ocl_queue.c) or its own
 * (queued=off), so workloads of different working memories run
 * concurrently. Maps go
 * through one queue per factory, which OpenCL makes safe to share; a
 * handle's map state is under the handle's lock, since a constant's handle
 * may be mapped by several executions at once. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ocl_backend.h"

/* The alignment asked of imported host memory with planned_memory=host:
 * the device's base address alignment, capped at 64 bytes.
 * CL_MEM_USE_HOST_PTR does not require the base alignment (a driver that
 * wants more copies, correctly), and caller memory aligned to 64 stays
 * zero copy (R-17 (6)); the host's planned places are then 64-byte
 * aligned whatever we report (R-21 (5)). */
#define GPU_OPENCL_MAX_IMPORT_ALIGNMENT 64
/* The largest import_alignment the ABI lets a backend report (R-10 (3)). */
#define GPU_OPENCL_MAX_PLANNED_ALIGNMENT 4096

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void ocl_append(char *buf, size_t size, const char *fmt, ...) {
    size_t len = strlen(buf);
    if (len + 1 >= size) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n >= size - len && size > 4) {
        memcpy(buf + size - 4, "...", 4);
    }
}

/* "clCreateBuffer(64 bytes): CL_MEM_OBJECT_ALLOCATION_FAILURE": an OpenCL
 * failure as a status naming the call and the error (R-12 (4)). Running out
 * of memory keeps its own code. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
plx_status ocl_cl_failure(const plx_host *host, cl_int rc, plx_status_code code,
                             const char *call_fmt, ...) {
    char call[256], nb[32];
    va_list ap;
    va_start(ap, call_fmt);
    vsnprintf(call, sizeof call, call_fmt, ap);
    va_end(ap);
    if (rc == CL_OUT_OF_HOST_MEMORY || rc == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
        rc == CL_OUT_OF_RESOURCES) {
        code = PLX_OUT_OF_MEMORY;
    }
    return host->status_create(host, code, "%s: %s", call, ocl_error_name(rc, nb, sizeof nb));
}
/* ------------------------------------------------------------------------ */
/* Availability                                                         */
/* ------------------------------------------------------------------------ */

/* Without options: is there any device our kernels can run on? Which one
 * is used, and whether the options find it, is create's business. */
static plx_status gpu_opencl_check_available(const plx_host *host) {
    device_list l;
    plx_status s = ocl_enumerate_devices(host, &l);
    if (s) {
        return s;
    }
    if (l.count == 0) {
        char names[512] = "";
        for (cl_uint p = 0; p < l.platform_count && p < 8; p++) {
            ocl_append(names, sizeof names, "%s'%s'", p ? ", " : "", l.platform_names[p]);
        }
        ocl_device_list_free(host, &l);
        return host->status_create(host, PLX_UNAVAILABLE,
                                   "no OpenCL device (%u platform%s: %s, none with a device)",
                                   l.platform_count, l.platform_count == 1 ? "" : "s", names);
    }
    char why[1024] = "";
    for (size_t i = 0; i < l.count; i++) {
        if (!l.items[i].problem[0]) {
            host->log(host, PLX_LOG_DEBUG, "gpu_opencl: available: device %zu '%s' (%s)", i,
                      l.items[i].name, l.items[i].platform_name);
            ocl_device_list_free(host, &l);
            return NULL;
        }
        ocl_append(why, sizeof why, "%s%zu '%s': %s", i ? "; " : "", i, l.items[i].name,
               l.items[i].problem);
    }
    ocl_device_list_free(host, &l);
    return host->status_create(host, PLX_UNAVAILABLE, "no usable OpenCL device (%s)", why);
}

/* ------------------------------------------------------------------------ */
/* The instance                                                               */
/* ------------------------------------------------------------------------ */

static void add_cap_bool(plx_backend *b, const char *key, bool v) {
    if (b->cap_count < GPU_OPENCL_MAX_CAPS) {
        plx_capability *c = &b->caps[b->cap_count++];
        memset(c, 0, sizeof *c);
        c->key = key;
        c->type = PLX_VALUE_BOOL;
        c->bool_value = v;
    }
}

static void add_cap_int(plx_backend *b, const char *key, int64_t v) {
    if (b->cap_count < GPU_OPENCL_MAX_CAPS) {
        plx_capability *c = &b->caps[b->cap_count++];
        memset(c, 0, sizeof *c);
        c->key = key;
        c->type = PLX_VALUE_INT;
        c->int_value = v;
    }
}

static void add_cap_string(plx_backend *b, const char *key, const char *v) {
    if (b->cap_count < GPU_OPENCL_MAX_CAPS) {
        plx_capability *c = &b->caps[b->cap_count++];
        memset(c, 0, sizeof *c);
        c->key = key;
        c->type = PLX_VALUE_STRING;
        c->string_value = v;
    }
}

static void gpu_opencl_destroy(plx_backend *b) {
    if (!b) {
        return;
    }
    const plx_host *host = b->host;
    if (b->program) {
        clReleaseProgram(b->program);
    }
    if (b->dev.context) {
        ocl_platform_lock();
        clReleaseContext(b->dev.context);
        ocl_platform_unlock();
    }
    pthread_mutex_destroy(&b->program_lock);
    host->free(host, b->cache_dir);
    host->free(host, b);
}

static plx_status gpu_opencl_create(const plx_host *host, const plx_option *options,
                                    size_t option_count, plx_backend **out_backend) {
    parsed_options o;
    plx_status s = ocl_parse_options(host, options, option_count, &o);
    if (s) {
        return s;
    }
    device_list l;
    s = ocl_enumerate_devices(host, &l);
    if (s) {
        return s;
    }
    size_t chosen = 0;
    char why[256];
    s = ocl_choose_device(host, &l, &o, &chosen, why, sizeof why);
    if (s) {
        ocl_device_list_free(host, &l);
        return s;
    }
    plx_backend *b = host->alloc(host, sizeof *b, 0);
    if (!b) {
        ocl_device_list_free(host, &l);
        return host->status_create(host, PLX_OUT_OF_MEMORY,
                                   "cannot allocate the backend instance");
    }
    memset(b, 0, sizeof *b);
    b->host = host;
    if (pthread_mutex_init(&b->program_lock, NULL) != 0) {
        host->free(host, b);
        ocl_device_list_free(host, &l);
        return host->status_create(host, PLX_INTERNAL, "pthread_mutex_init failed");
    }
    const seen_device *d = &l.items[chosen];
    b->dev.platform = d->platform;
    b->dev.device = d->device;
    b->dev.max_work_group_size = d->max_work_group_size;
    b->dev.local_mem_size = d->local_mem;
    b->dev.mem_base_addr_align = d->base_align_bits;
    size_t base_align = d->base_align_bits / 8u;
    b->base_align = base_align;
    b->import_alignment = base_align < GPU_OPENCL_MAX_IMPORT_ALIGNMENT
                              ? base_align
                              : GPU_OPENCL_MAX_IMPORT_ALIGNMENT;
    /* planned_memory=device: a planned tensor is a sub-buffer at its
     * place, and OpenCL wants a sub-buffer's origin to be a multiple of the
     * base address alignment (CL_MISALIGNED_SUB_BUFFER_OFFSET otherwise).
     * planned_alignment asks the host to place planned blocks there, while
     * import_alignment, which caller memory must meet to be imported in
     * place, stays as it was. A device wanting more than the ABI's 4096
     * bytes plans into host memory as with planned_memory=host. */
    b->planned_device = o.planned_device;
    if (b->planned_device && base_align > GPU_OPENCL_MAX_PLANNED_ALIGNMENT) {
        host->log(host, PLX_LOG_WARN,
                  "gpu_opencl: device '%s' aligns sub-buffers to %zu bytes, more than the %d "
                  "a planned alignment may be: planned_memory=device is not used",
                  d->name, base_align, GPU_OPENCL_MAX_PLANNED_ALIGNMENT);
        b->planned_device = false;
    }
    snprintf(b->device_name, sizeof b->device_name, "%s", d->name);
    snprintf(b->platform_name, sizeof b->platform_name, "%s", d->platform_name);
    snprintf(b->platform_version, sizeof b->platform_version, "%s", d->platform_version);
    snprintf(b->device_version, sizeof b->device_version, "%s", d->version);
    snprintf(b->driver_version, sizeof b->driver_version, "%s", d->driver);
    snprintf(b->choice, sizeof b->choice, "device %zu: %.200s", chosen, why);
    snprintf(b->build_options, sizeof b->build_options, "-cl-std=CL1.2");
    b->program_key = ocl_program_key(b);

    /* `plexus info` shows every device seen, the one chosen and why: as
     * vendor capabilities (R-10 (4): strings are allowed) and in the log. */
    for (size_t i = 0; i < l.count; i++) {
        const seen_device *e = &l.items[i];
        const char *problem = e->problem;
        ocl_append(b->devices_text, sizeof b->devices_text, "%s%zu: '%s' (platform %u '%s', %s, %s)%s%s",
               i ? "; " : "", i, e->name, e->platform_index, e->platform_name,
               ocl_device_type_name(e->type), e->version, *problem ? ": unusable: " : "",
               i == chosen ? " [chosen]" : problem);
        host->log(host, PLX_LOG_INFO,
                  "gpu_opencl: device %zu: '%s' (platform %u '%s', %s, %s, driver %s, %" PRIu64
                  " KiB local memory%s)%s%s", i, e->name, e->platform_index, e->platform_name,
                  ocl_device_type_name(e->type), e->version, e->driver,
                  (uint64_t)(e->local_mem / 1024), e->has_fp16 ? ", cl_khr_fp16" : "",
                  *problem ? ": unusable: " : "", problem);
    }
    host->log(host, PLX_LOG_INFO, "gpu_opencl: chose device %zu '%s': %s", chosen, d->name, why);

    if (o.cache_dir) {
        size_t n = strlen(o.cache_dir);
        b->cache_dir = host->alloc(host, n + 1, 0);
        if (!b->cache_dir) {
            ocl_device_list_free(host, &l);
            gpu_opencl_destroy(b);
            return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
        }
        memcpy(b->cache_dir, o.cache_dir, n + 1);
    }
    bool has_fp16 = d->has_fp16;
    b->queued = o.queued;
    ocl_device_list_free(host, &l);

    cl_int rc = CL_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)b->dev.platform,
                                     0};
    /* No notification callback: errors reach the caller through each call's
     * return code, and a driver thread must not log after destroy. */
    ocl_platform_lock();
    b->dev.context = clCreateContext(props, 1, &b->dev.device, NULL, NULL, &rc);
    ocl_platform_unlock();
    if (rc != CL_SUCCESS || !b->dev.context) {
        b->dev.context = NULL;
        s = ocl_cl_failure(host, rc, PLX_UNAVAILABLE, "clCreateContext(device '%s')",
                       b->device_name);
        gpu_opencl_destroy(b);
        return s;
    }

    add_cap_bool(b, PLX_CAP_ASYNC_EXECUTION, true);
    if (b->queued) {
        /* one in-order queue per working memory (ocl_queue.c). Fences
         * hold events of this context, so the domain names the context:
         * only this instance's fences are waited on without the host. */
        snprintf(b->fence_domain, sizeof b->fence_domain, GPU_OPENCL_ID ":context=%p",
                 (void *)b->dev.context);
        add_cap_bool(b, PLX_CAP_QUEUED_EXECUTION, true);
        add_cap_string(b, PLX_CAP_FENCE_DOMAIN, b->fence_domain);
    }
    add_cap_bool(b, PLX_CAP_EXTERNALLY_MANAGED_MEMORY, true);
    if (b->planned_device) {
        /* planned buffers are cl_mem buffers of ours (ocl_tensor.c). */
        add_cap_bool(b, PLX_CAP_ALLOCATES_PLANNED_MEMORY, true);
    }
    add_cap_bool(b, PLX_CAP_PREIMPORT_IO_TENSORS, true);
    add_cap_bool(b, PLX_CAP_IMPORT_MALLOC, true);
    add_cap_string(b, "gpu_opencl.device", b->device_name);
    add_cap_string(b, "gpu_opencl.platform", b->platform_name);
    add_cap_string(b, "gpu_opencl.device_version", b->device_version);
    add_cap_string(b, "gpu_opencl.driver_version", b->driver_version);
    add_cap_string(b, "gpu_opencl.choice", b->choice);
    add_cap_string(b, "gpu_opencl.devices", b->devices_text);
    add_cap_int(b, "gpu_opencl.local_memory_bytes", (int64_t)b->dev.local_mem_size);
    add_cap_int(b, PLX_CAP_IMPORT_ALIGNMENT, (int64_t)b->import_alignment);
    if (b->planned_device) {
        add_cap_int(b, PLX_CAP_PLANNED_ALIGNMENT, (int64_t)(b->base_align ? b->base_align : 1));
    }
    add_cap_bool(b, "gpu_opencl.cl_khr_fp16", has_fp16);
    add_cap_string(b, "gpu_opencl.program_cache", b->cache_dir ? b->cache_dir : "off");
    add_cap_string(b, "gpu_opencl.planned_memory", b->planned_device ? "device" : "host");
    *out_backend = b;
    return NULL;
}

static plx_status gpu_opencl_get_capabilities(plx_backend *b,
                                              const plx_capability **out_capabilities,
                                              size_t *out_count) {
    *out_capabilities = b->caps;
    *out_count = b->cap_count;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Layers                                                              */
/* ------------------------------------------------------------------------ */

/* Constants are the backend's own: their workload writes the constant's
 * bytes into its buffer once, at load (R-18 (5)); any dtype is bytes, and
 * the host's validation (one output of a known dtype, a descriptor) is all
 * they need. The other operators are the operators' (ocl_op_check). */
static plx_status gpu_opencl_check_layer(plx_backend *b, const plx_layer_view *layer) {
    if (layer->op == PLX_OP_CONSTANT) {
        return NULL;
    }
    char buf[256];
    buf[0] = '\0';
    const char *reason = ocl_op_check(&b->dev, layer, buf, sizeof buf);
    if (!reason) {
        return NULL;
    }
    /* The host names the backend already ("layer 'x' (conv): gpu_opencl:
     * ..."): its prefix on the operators' reasons, which also serve as load
     * errors, is dropped here. */
    static const char prefix[] = GPU_OPENCL_ID ": ";
    if (strncmp(reason, prefix, sizeof prefix - 1) == 0) {
        reason += sizeof prefix - 1;
    }
    return b->host->status_create(b->host, PLX_UNSUPPORTED, "%s", reason);
}

static void gpu_opencl_destroy_factory(plx_factory *f) {
    if (f->map_queue) {
        clReleaseCommandQueue(f->map_queue);
    }
    if (f->empty) {
        clReleaseMemObject(f->empty);
    }
    f->host->free(f->host, f);
}

static plx_status gpu_opencl_create_factory(plx_backend *b, const plx_factory_params *params,
                                            plx_factory **out_factory) {
    const plx_host *host = b->host;
    plx_status s = NULL;
    pthread_mutex_lock(&b->program_lock);
    if (!b->program) {
        s = ocl_build_program(b);
    }
    cl_program program = b->program;
    pthread_mutex_unlock(&b->program_lock);
    if (s) {
        return s;
    }
    plx_factory *f = host->alloc(host, sizeof *f, 0);
    if (!f) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    memset(f, 0, sizeof *f);
    f->backend = b;
    f->host = host;
    f->dev = b->dev;
    f->dev.program = program;
    f->import_alignment = b->import_alignment;
    f->network_id = params->network_id;
    f->queued = b->queued;
    f->planned_device = b->planned_device;
    f->base_align = b->base_align;
    /* device times go to the trace only through a 1.4 host's table. */
    f->profiling = host->struct_size >= PLX_STRUCT_SIZE_UPTO(plx_host, record_event) &&
                   host->now_ns && host->record_event;
    cl_int rc = CL_SUCCESS;
    f->map_queue = clCreateCommandQueue(f->dev.context, f->dev.device, 0, &rc);
    if (rc != CL_SUCCESS || !f->map_queue) {
        f->map_queue = NULL;
        gpu_opencl_destroy_factory(f);
        return ocl_cl_failure(host, rc, PLX_INTERNAL, "clCreateCommandQueue");
    }
    f->empty = clCreateBuffer(f->dev.context, CL_MEM_READ_WRITE, 64, NULL, &rc);
    if (rc != CL_SUCCESS || !f->empty) {
        f->empty = NULL;
        gpu_opencl_destroy_factory(f);
        return ocl_cl_failure(host, rc, PLX_INTERNAL, "clCreateBuffer(64 bytes)");
    }
    *out_factory = f;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Descriptor and entry                                                       */
/* ------------------------------------------------------------------------ */

static const plx_backend_functions gpu_opencl_functions = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_functions, import_external_memory),
    .check_available = gpu_opencl_check_available,
    .create = gpu_opencl_create,
    .destroy = gpu_opencl_destroy,
    .get_capabilities = gpu_opencl_get_capabilities,
    .check_layer = gpu_opencl_check_layer,
    .create_factory = gpu_opencl_create_factory,
    .destroy_factory = gpu_opencl_destroy_factory,
    .factory_workloads_created = NULL,
    .create_tensor_handle = ocl_create_tensor_handle,
    .destroy_tensor_handle = ocl_destroy_tensor_handle,
    .allocate_tensor_handle = ocl_allocate_tensor_handle,
    .release_tensor_handle = ocl_release_tensor_handle,
    .map_tensor_handle = ocl_map_tensor_handle,
    .unmap_tensor_handle = ocl_unmap_tensor_handle,
    .import_tensor_handle = ocl_import_tensor_handle,
    .unimport_tensor_handle = ocl_unimport_tensor_handle,
    .create_workload = ocl_create_workload,
    .destroy_workload = ocl_destroy_workload,
    .configure_workload = NULL,
    .execute_workload = ocl_execute_workload,
    .create_sub_tensor_handle = NULL, /* see struct plx_tensor_handle */
    .get_memory_strategy = NULL,      /* the host's default, greedy */
    .optimize_subgraph = NULL,
    /* R-24, used when the option queued is on (ocl_queue.c). */
    .create_queue = ocl_create_queue,
    .destroy_queue = ocl_destroy_queue,
    .enqueue_workload = ocl_enqueue_workload,
    .queue_signal = ocl_queue_signal,
    .fence_wait = ocl_fence_wait,
    .fence_query = ocl_fence_query,
    .destroy_fence = ocl_destroy_fence,
    /* R-26, used when the option planned_memory is device (ocl_tensor.c). */
    .allocate_planned_buffer = ocl_allocate_planned_buffer,
    .free_planned_buffer = ocl_free_planned_buffer,
    .import_external_memory = ocl_import_external_memory,
};

static const plx_backend_descriptor gpu_opencl_descriptor = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count),
    .abi_version = PLX_MAKE_ABI_VERSION(PLX_ABI_VERSION_MAJOR, PLX_ABI_VERSION_MINOR),
    .id = GPU_OPENCL_ID,
    .name = "OpenCL GPU backend",
    .version = "0.1.0",
    .functions = &gpu_opencl_functions,
    .options = ocl_options,
    .option_count = OCL_OPTION_COUNT,
};

/* the descriptor claims the SDK's minor version; a host older than
 * that refuses it with a clear reason, so only the major needs checking. */
const plx_backend_descriptor *plx_backend_entry(uint32_t host_abi_version, const plx_host *host) {
    if (PLX_ABI_VERSION_GET_MAJOR(host_abi_version) != PLX_ABI_VERSION_MAJOR) {
        host->log(host, PLX_LOG_ERROR,
                  "gpu_opencl implements backend ABI %d.x; the host implements %u.%u",
                  PLX_ABI_VERSION_MAJOR, PLX_ABI_VERSION_GET_MAJOR(host_abi_version),
                  PLX_ABI_VERSION_GET_MINOR(host_abi_version));
        return NULL;
    }
    return &gpu_opencl_descriptor;
}
