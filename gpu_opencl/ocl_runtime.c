/* gpu_opencl: the program source, CL error names, and plans (building
 * launches, releasing them, enqueueing them). See ocl_ops.h. */
#include "ocl_ops.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Generated at build time from kernels/<name>.cl (meson custom_target):
 * static const char ocl_kernels_source[]. */
#include "ocl_kernels_source.h"

const char *ocl_program_source(void) {
    return ocl_kernels_source;
}

const char *ocl_error_name(cl_int err, char *buf, size_t size) {
    switch (err) {
#define E(name) \
    case name:  \
        return #name;
    E(CL_SUCCESS)
    E(CL_DEVICE_NOT_FOUND)
    E(CL_DEVICE_NOT_AVAILABLE)
    E(CL_COMPILER_NOT_AVAILABLE)
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    E(CL_OUT_OF_RESOURCES)
    E(CL_OUT_OF_HOST_MEMORY)
    E(CL_PROFILING_INFO_NOT_AVAILABLE)
    E(CL_MEM_COPY_OVERLAP)
    E(CL_IMAGE_FORMAT_MISMATCH)
    E(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    E(CL_BUILD_PROGRAM_FAILURE)
    E(CL_MAP_FAILURE)
    E(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    E(CL_COMPILE_PROGRAM_FAILURE)
    E(CL_LINKER_NOT_AVAILABLE)
    E(CL_LINK_PROGRAM_FAILURE)
    E(CL_DEVICE_PARTITION_FAILED)
    E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    E(CL_INVALID_VALUE)
    E(CL_INVALID_DEVICE_TYPE)
    E(CL_INVALID_PLATFORM)
    E(CL_INVALID_DEVICE)
    E(CL_INVALID_CONTEXT)
    E(CL_INVALID_QUEUE_PROPERTIES)
    E(CL_INVALID_COMMAND_QUEUE)
    E(CL_INVALID_HOST_PTR)
    E(CL_INVALID_MEM_OBJECT)
    E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    E(CL_INVALID_IMAGE_SIZE)
    E(CL_INVALID_SAMPLER)
    E(CL_INVALID_BINARY)
    E(CL_INVALID_BUILD_OPTIONS)
    E(CL_INVALID_PROGRAM)
    E(CL_INVALID_PROGRAM_EXECUTABLE)
    E(CL_INVALID_KERNEL_NAME)
    E(CL_INVALID_KERNEL_DEFINITION)
    E(CL_INVALID_KERNEL)
    E(CL_INVALID_ARG_INDEX)
    E(CL_INVALID_ARG_VALUE)
    E(CL_INVALID_ARG_SIZE)
    E(CL_INVALID_KERNEL_ARGS)
    E(CL_INVALID_WORK_DIMENSION)
    E(CL_INVALID_WORK_GROUP_SIZE)
    E(CL_INVALID_WORK_ITEM_SIZE)
    E(CL_INVALID_GLOBAL_OFFSET)
    E(CL_INVALID_EVENT_WAIT_LIST)
    E(CL_INVALID_EVENT)
    E(CL_INVALID_OPERATION)
    E(CL_INVALID_GL_OBJECT)
    E(CL_INVALID_BUFFER_SIZE)
    E(CL_INVALID_MIP_LEVEL)
    E(CL_INVALID_GLOBAL_WORK_SIZE)
    E(CL_INVALID_PROPERTY)
    E(CL_INVALID_IMAGE_DESCRIPTOR)
    E(CL_INVALID_COMPILER_OPTIONS)
    E(CL_INVALID_LINKER_OPTIONS)
    E(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef E
    /* Not CL 1.2 core, but common answers of the ICD loader and drivers. */
    case -1001:
        return "CL_PLATFORM_NOT_FOUND_KHR";
    default:
        break;
    }
    if (!buf || size == 0) {
        return "CL error (unknown code)";
    }
    snprintf(buf, size, "CL error %d", (int)err);
    return buf;
}

/* ---- building plans ----------------------------------------------------- */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void set_err(char *err, size_t size, const char *fmt, ...) {
    if (err && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, size, fmt, ap);
        va_end(ap);
    }
}

bool ocl_plan_kernel(ocl_plan *plan, const ocl_device *dev, const char *kernel_name,
                     ocl_launch **out_launch, char *err, size_t err_size) {
    if (plan->count >= OCL_MAX_LAUNCHES) {
        set_err(err, err_size, "gpu_opencl: plan full (%s)", kernel_name);
        return false;
    }
    cl_int rc = CL_SUCCESS;
    cl_kernel k = clCreateKernel(dev->program, kernel_name, &rc);
    if (rc != CL_SUCCESS || !k) {
        char nb[32];
        set_err(err, err_size, "clCreateKernel(%s): %s", kernel_name,
                ocl_error_name(rc, nb, sizeof nb));
        return false;
    }
    ocl_launch *l = &plan->launches[plan->count++];
    memset(l, 0, sizeof *l);
    l->kind = OCL_LAUNCH_KERNEL;
    l->kernel = k;
    l->work_dim = 1;
    /* The name the device knows the kernel by, read once here so that
     * profiling and messages never ask at run time. */
    size_t got = 0;
    if (clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof l->name, l->name, &got) !=
            CL_SUCCESS ||
        got == 0) {
        snprintf(l->name, sizeof l->name, "%s", kernel_name);
    }
    l->name[sizeof l->name - 1] = '\0';
    *out_launch = l;
    return true;
}

/* A launch given more than OCL_MAX_ARGS arguments is marked with
 * arg_count OCL_MAX_ARGS + 1 and fails at enqueue. */
static ocl_arg *next_arg(ocl_launch *l) {
    if (l->arg_count >= OCL_MAX_ARGS) {
        l->arg_count = OCL_MAX_ARGS + 1;
        return NULL;
    }
    ocl_arg *a = &l->args[l->arg_count++];
    memset(a, 0, sizeof *a);
    return a;
}

void ocl_arg_input(ocl_launch *l, uint32_t slot) {
    ocl_arg *a = next_arg(l);
    if (a) {
        a->kind = OCL_ARG_INPUT;
        a->slot = slot;
        a->size = sizeof(cl_mem);
    }
}

void ocl_arg_output(ocl_launch *l, uint32_t slot) {
    ocl_arg *a = next_arg(l);
    if (a) {
        a->kind = OCL_ARG_OUTPUT;
        a->slot = slot;
        a->size = sizeof(cl_mem);
    }
}

void ocl_arg_value(ocl_launch *l, const void *value, size_t size) {
    ocl_arg *a = next_arg(l);
    if (a) {
        a->kind = OCL_ARG_VALUE;
        /* Too large: size 0, which clSetKernelArg refuses at enqueue. */
        if (size <= OCL_MAX_VALUE) {
            memcpy(a->value, value, size);
            a->size = size;
        }
    }
}

void ocl_arg_int(ocl_launch *l, int32_t v) {
    cl_int x = v;
    ocl_arg_value(l, &x, sizeof x);
}

void ocl_arg_float(ocl_launch *l, float v) {
    cl_float x = v;
    ocl_arg_value(l, &x, sizeof x);
}

void ocl_arg_aux(ocl_launch *l, uint32_t slot) {
    ocl_arg *a = next_arg(l);
    if (a) {
        a->kind = OCL_ARG_AUX;
        a->slot = slot;
        a->size = sizeof(cl_mem);
    }
}

void ocl_arg_local(ocl_launch *l, size_t bytes) {
    ocl_arg *a = next_arg(l);
    if (a) {
        a->kind = OCL_ARG_LOCAL;
        a->size = bytes;
    }
}

void ocl_launch_range(ocl_launch *l, cl_uint work_dim, const size_t *global, const size_t *local) {
    if (work_dim < 1) {
        work_dim = 1;
    }
    if (work_dim > 3) {
        work_dim = 3;
    }
    l->work_dim = work_dim;
    l->has_local = local != NULL;
    for (cl_uint i = 0; i < 3; i++) {
        size_t g = i < work_dim ? global[i] : 1;
        size_t lo = (local && i < work_dim) ? local[i] : 1;
        if (lo == 0) {
            lo = 1;
        }
        if (local && g % lo) {
            g += lo - g % lo;
        }
        l->global[i] = g;
        l->local[i] = lo;
    }
}

bool ocl_plan_aux(ocl_plan *plan, const ocl_device *dev, const void *data, size_t bytes,
                  uint32_t *out_slot, char *err, size_t err_size) {
    if (plan->aux_count >= OCL_MAX_AUX) {
        set_err(err, err_size, "gpu_opencl: too many auxiliary buffers");
        return false;
    }
    cl_int rc = CL_SUCCESS;
    cl_mem m;
    if (!data) {
        /* Scratch for results between launches (uninitialised). */
        m = clCreateBuffer(dev->context, CL_MEM_READ_WRITE, bytes ? bytes : 16, NULL, &rc);
    } else if (bytes == 0) {
        /* Buffers cannot be empty; kernels never read this one. */
        m = clCreateBuffer(dev->context, CL_MEM_READ_ONLY, 16, NULL, &rc);
    } else {
        m = clCreateBuffer(dev->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes,
                           (void *)(uintptr_t)data, &rc);
    }
    if (rc != CL_SUCCESS || !m) {
        char nb[32];
        set_err(err, err_size, "clCreateBuffer(auxiliary): %s", ocl_error_name(rc, nb, sizeof nb));
        return false;
    }
    *out_slot = plan->aux_count;
    plan->aux[plan->aux_count++] = m;
    return true;
}

bool ocl_plan_copy(ocl_plan *plan, uint32_t src, uint32_t dst, size_t bytes, char *err,
                   size_t err_size) {
    if (plan->count >= OCL_MAX_LAUNCHES) {
        set_err(err, err_size, "gpu_opencl: plan full (copy)");
        return false;
    }
    ocl_launch *l = &plan->launches[plan->count++];
    memset(l, 0, sizeof *l);
    l->kind = OCL_LAUNCH_COPY;
    snprintf(l->name, sizeof l->name, "copy_buffer");
    l->copy_src = src;
    l->copy_dst = dst;
    l->bytes = bytes;
    return true;
}

void ocl_plan_release(ocl_plan *plan) {
    if (!plan) {
        return;
    }
    for (uint32_t i = 0; i < plan->count && i < OCL_MAX_LAUNCHES; i++) {
        if (plan->launches[i].kernel) {
            clReleaseKernel(plan->launches[i].kernel);
        }
    }
    for (uint32_t i = 0; i < plan->aux_count && i < OCL_MAX_AUX; i++) {
        if (plan->aux[i]) {
            clReleaseMemObject(plan->aux[i]);
        }
    }
    memset(plan, 0, sizeof *plan);
}

/* ---- enqueueing --------------------------------------------------------- */

bool ocl_plan_index_check(ocl_plan *plan, const ocl_device *dev, const char *layer,
                          const char *op, uint32_t input, bool is64, uint32_t *out_flag,
                          char *err, size_t err_size) {
    if (!ocl_plan_aux(plan, dev, NULL, sizeof(cl_int), out_flag, err, err_size)) {
        return false;
    }
    plan->check.active = true;
    plan->check.flag = *out_flag;
    plan->check.input = input;
    plan->check.is64 = is64;
    snprintf(plan->check.what, sizeof plan->check.what, "layer '%s' (%s)", layer ? layer : "?",
             op);
    snprintf(plan->check.value_name, sizeof plan->check.value_name, "index");
    snprintf(plan->check.tensor_name, sizeof plan->check.tensor_name, "indices");
    return true;
}

bool ocl_plan_check(const ocl_plan *plan, cl_command_queue queue, const cl_mem *inputs,
                    char *err, size_t err_size) {
    const ocl_index_check *c = &plan->check;
    if (!c->active || c->flag >= plan->aux_count) {
        return true;
    }
    char nb[32];
    cl_int first = CL_INT_MAX;
    cl_int rc = clEnqueueReadBuffer(queue, plan->aux[c->flag], CL_TRUE, 0, sizeof first, &first,
                                    0, NULL, NULL);
    if (rc != CL_SUCCESS) {
        set_err(err, err_size, "gpu_opencl: %s: reading the index check: %s", c->what,
                ocl_error_name(rc, nb, sizeof nb));
        return false;
    }
    if (first == CL_INT_MAX) {
        return true;
    }
    if (first >= OCL_CHECK_OTHER && c->other_noun[0]) {
        set_err(err, err_size, "gpu_opencl: %s: %s %d %s", c->what, c->other_noun,
                (int)(first - OCL_CHECK_OTHER), c->other_text);
        return false;
    }
    /* the offending index itself, for the message */
    size_t es = c->is64 ? sizeof(cl_long) : sizeof(cl_int);
    unsigned char raw[8] = {0};
    rc = clEnqueueReadBuffer(queue, inputs[c->input], CL_TRUE, (size_t)first * es, es, raw, 0,
                             NULL, NULL);
    if (rc != CL_SUCCESS) {
        set_err(err, err_size, "gpu_opencl: %s: %s element %d is out of range", c->what,
                c->tensor_name, (int)first);
        return false;
    }
    long long v;
    if (c->is64) {
        cl_long w;
        memcpy(&w, raw, sizeof w);
        v = (long long)w;
    } else {
        cl_int w;
        memcpy(&w, raw, sizeof w);
        v = (long long)w;
    }
    set_err(err, err_size, "gpu_opencl: %s: %s %lld (%s element %d) is out of range", c->what,
            c->value_name, v, c->tensor_name, (int)first);
    return false;
}

/* Releases the events a failed enqueue created (ocl_plan_enqueue_events). */
static cl_int drop_events(cl_event *events, cl_int rc) {
    for (uint32_t i = 0; events && i < OCL_MAX_LAUNCHES; i++) {
        if (events[i]) {
            clReleaseEvent(events[i]);
            events[i] = NULL;
        }
    }
    return rc;
}

cl_int ocl_plan_enqueue(const ocl_plan *plan, cl_command_queue queue, const cl_mem *inputs,
                        const cl_mem *outputs, char *err, size_t err_size) {
    return ocl_plan_enqueue_events(plan, queue, inputs, outputs, NULL, err, err_size);
}

cl_int ocl_plan_enqueue_events(const ocl_plan *plan, cl_command_queue queue,
                               const cl_mem *inputs, const cl_mem *outputs, cl_event *events,
                               char *err, size_t err_size) {
    char nb[32];
    for (uint32_t i = 0; events && i < OCL_MAX_LAUNCHES; i++) {
        events[i] = NULL;
    }
    if (plan->check.active && plan->check.flag < plan->aux_count) {
        const cl_int none = CL_INT_MAX;
        cl_int rc = clEnqueueFillBuffer(queue, plan->aux[plan->check.flag], &none, sizeof none, 0,
                                        sizeof none, 0, NULL, NULL);
        if (rc != CL_SUCCESS) {
            set_err(err, err_size, "clEnqueueFillBuffer(index check): %s",
                    ocl_error_name(rc, nb, sizeof nb));
            return rc;
        }
    }
    for (uint32_t i = 0; i < plan->count && i < OCL_MAX_LAUNCHES; i++) {
        const ocl_launch *l = &plan->launches[i];
        if (l->kind == OCL_LAUNCH_COPY) {
            if (l->bytes == 0 || inputs[l->copy_src] == outputs[l->copy_dst]) {
                continue; /* nothing to copy, or the output aliases the input */
            }
            cl_int rc = clEnqueueCopyBuffer(queue, inputs[l->copy_src], outputs[l->copy_dst], 0, 0,
                                            l->bytes, 0, NULL, events ? &events[i] : NULL);
            if (rc != CL_SUCCESS) {
                set_err(err, err_size, "clEnqueueCopyBuffer: %s", ocl_error_name(rc, nb, sizeof nb));
                return drop_events(events, rc);
            }
            continue;
        }
        bool empty = false;
        for (cl_uint d = 0; d < l->work_dim && d < 3; d++) {
            empty = empty || l->global[d] == 0;
        }
        if (empty) {
            continue; /* nothing to compute (an empty tensor) */
        }
        if (l->arg_count > OCL_MAX_ARGS) {
            set_err(err, err_size, "clSetKernelArg(%s): more than %d arguments", l->name,
                    OCL_MAX_ARGS);
            return drop_events(events, CL_INVALID_ARG_INDEX);
        }
        for (uint32_t a = 0; a < l->arg_count; a++) {
            const ocl_arg *arg = &l->args[a];
            cl_int rc;
            switch (arg->kind) {
            case OCL_ARG_INPUT:
                rc = clSetKernelArg(l->kernel, a, sizeof(cl_mem), &inputs[arg->slot]);
                break;
            case OCL_ARG_OUTPUT:
                rc = clSetKernelArg(l->kernel, a, sizeof(cl_mem), &outputs[arg->slot]);
                break;
            case OCL_ARG_AUX:
                rc = arg->slot < plan->aux_count
                         ? clSetKernelArg(l->kernel, a, sizeof(cl_mem), &plan->aux[arg->slot])
                         : CL_INVALID_MEM_OBJECT;
                break;
            case OCL_ARG_LOCAL:
                rc = clSetKernelArg(l->kernel, a, arg->size, NULL);
                break;
            case OCL_ARG_VALUE:
            default:
                rc = clSetKernelArg(l->kernel, a, arg->size, arg->value);
                break;
            }
            if (rc != CL_SUCCESS) {
                set_err(err, err_size, "clSetKernelArg(%s, %u): %s",
                        l->name, (unsigned)a, ocl_error_name(rc, nb, sizeof nb));
                return drop_events(events, rc);
            }
        }
        cl_int rc = clEnqueueNDRangeKernel(queue, l->kernel, l->work_dim, NULL, l->global,
                                           l->has_local ? l->local : NULL, 0, NULL,
                                           events ? &events[i] : NULL);
        if (rc != CL_SUCCESS) {
            set_err(err, err_size, "clEnqueueNDRangeKernel(%s): %s", l->name,
                    ocl_error_name(rc, nb, sizeof nb));
            return drop_events(events, rc);
        }
    }
    return CL_SUCCESS;
}
