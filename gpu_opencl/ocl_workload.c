/* gpu_opencl: workloads, each running one layer's plan (ocl_ops.h), either
 * synchronously on its own in-order queue (execute_workload: constants at
 * load, and every layer with the option queued=off) or enqueued on a
 * working memory's queue (ocl_queue.c, R-24); apart so that execution
 * reads on its own. */
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

/* ------------------------------------------------------------------------ */
/* Workloads                                                           */
/* ------------------------------------------------------------------------ */

void ocl_destroy_workload(plx_workload *w) {
    const plx_host *host = w->factory->host;
    ocl_plan_release(&w->plan);
    if (w->queue) {
        clReleaseCommandQueue(w->queue);
    }
    host->free(host, w->inputs);
    host->free(host, w->outputs);
    host->free(host, w->input_mems);
    host->free(host, w->output_mems);
    host->free(host, w);
}

/* The workload's own in-order queue, for execute_workload. */
static plx_status own_queue(plx_workload *w) {
    plx_factory *f = w->factory;
    cl_int rc = CL_SUCCESS;
    w->queue = clCreateCommandQueue(f->dev.context, f->dev.device, 0, &rc);
    if (rc != CL_SUCCESS || !w->queue) {
        w->queue = NULL;
        return ocl_cl_failure(f->host, rc, PLX_INTERNAL, "clCreateCommandQueue");
    }
    return NULL;
}

plx_status ocl_create_workload(plx_factory *f, const plx_layer_view *layer,
                                             plx_tensor_handle *const *inputs,
                                             plx_tensor_handle *const *outputs,
                                             plx_workload **out_workload) {
    const plx_host *host = f->host;
    plx_workload *w = host->alloc(host, sizeof *w, 0);
    if (!w) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    memset(w, 0, sizeof *w);
    w->factory = f;
    w->input_count = layer->input_count;
    w->output_count = layer->output_count;
    size_t ni = layer->input_count + 1, no = layer->output_count + 1;
    w->inputs = host->alloc(host, ni * sizeof *w->inputs, 0);
    w->outputs = host->alloc(host, no * sizeof *w->outputs, 0);
    w->input_mems = host->alloc(host, ni * sizeof *w->input_mems, 0);
    w->output_mems = host->alloc(host, no * sizeof *w->output_mems, 0);
    if (!w->inputs || !w->outputs || !w->input_mems || !w->output_mems) {
        ocl_destroy_workload(w);
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    for (uint32_t i = 0; i < layer->input_count; i++) {
        w->inputs[i] = inputs[i];
    }
    for (uint32_t i = 0; i < layer->output_count; i++) {
        w->outputs[i] = outputs[i];
    }
    if (layer->op == PLX_OP_CONSTANT) {
        const plx_constant_desc *d = layer->desc;
        if (layer->output_count != 1 || !d || (!d->data && outputs[0]->bytes)) {
            ocl_destroy_workload(w);
            return host->status_create(host, PLX_INVALID_ARGUMENT, "a constant without data");
        }
        w->constant = true;
        w->constant_data = d->data;
    } else if (!ocl_op_prepare(&f->dev, layer, &w->plan, w->error, sizeof w->error)) {
        plx_status s = host->status_create(host, PLX_INTERNAL, "%s",
                                           w->error[0] ? w->error : "cannot prepare the layer");
        ocl_destroy_workload(w);
        return s;
    }
    /* Queued, a workload runs on its working memory's queue and
     * needs one of its own only if the host executes it (a constant at
     * load): created then. With queued=off every workload runs through
     * execute_workload, so its queue is made here as before. */
    if (!f->queued) {
        plx_status s = own_queue(w);
        if (s) {
            ocl_destroy_workload(w);
            return s;
        }
    }
    /* Each output handle belongs to this layer of this working memory, so
     * nothing else touches these flags now (R-20 (2)). */
    for (uint32_t i = 0; i < layer->output_count; i++) {
        outputs[i]->written = true;
        outputs[i]->constant = w->constant;
    }
    *out_workload = w;
    return NULL;
}

plx_status ocl_workload_bind(plx_workload *w) {
    const plx_host *host = w->factory->host;
    for (uint32_t i = 0; i < w->input_count; i++) {
        if (!w->inputs[i]->has_memory) {
            return host->status_create(host, PLX_FAILED_PRECONDITION, "input %u has no memory",
                                       i);
        }
        w->input_mems[i] = w->inputs[i]->mem;
    }
    for (uint32_t i = 0; i < w->output_count; i++) {
        if (!w->outputs[i]->has_memory) {
            return host->status_create(host, PLX_FAILED_PRECONDITION, "output %u has no memory",
                                       i);
        }
        w->output_mems[i] = w->outputs[i]->mem;
    }
    return NULL;
}

plx_status ocl_workload_enqueue(plx_workload *w, cl_command_queue queue, cl_event *events) {
    const plx_host *host = w->factory->host;
    plx_status s = ocl_workload_bind(w);
    if (s) {
        return s;
    }
    cl_int rc;
    if (w->constant) {
        size_t bytes = w->outputs[0]->bytes;
        if (bytes == 0) {
            return NULL;
        }
        /* Non-blocking: the data lives as long as the network. */
        rc = clEnqueueWriteBuffer(queue, w->output_mems[0], CL_FALSE, 0, bytes, w->constant_data,
                                  0, NULL, NULL);
        if (rc != CL_SUCCESS) {
            return ocl_cl_failure(host, rc, PLX_INTERNAL, "clEnqueueWriteBuffer(%zu bytes)", bytes);
        }
        return NULL;
    }
    w->error[0] = '\0';
    rc = ocl_plan_enqueue_events(&w->plan, queue, w->input_mems, w->output_mems, events, w->error,
                                 sizeof w->error);
    if (rc != CL_SUCCESS) {
        plx_status_code code = (rc == CL_OUT_OF_HOST_MEMORY || rc == CL_OUT_OF_RESOURCES ||
                                rc == CL_MEM_OBJECT_ALLOCATION_FAILURE)
                                   ? PLX_OUT_OF_MEMORY
                                   : PLX_INTERNAL;
        char nb[32];
        return host->status_create(host, code, "%s",
                                   w->error[0] ? w->error : ocl_error_name(rc, nb, sizeof nb));
    }
    return NULL;
}

bool ocl_workload_has_check(const plx_workload *w) {
    return !w->constant && w->plan.check.active;
}

plx_status ocl_workload_check(plx_workload *w, cl_command_queue queue, const char *layer_name) {
    /* An index out of range, which the kernels flagged (ocl_ops.h,
     * ocl_index_check): an execution error, as on cpu_ref. */
    if (ocl_plan_check(&w->plan, queue, w->input_mems, w->error, sizeof w->error)) {
        return NULL;
    }
    const plx_host *host = w->factory->host;
    if (layer_name) {
        return host->status_create(host, PLX_INVALID_ARGUMENT, "layer '%s': %s", layer_name,
                                   w->error);
    }
    return host->status_create(host, PLX_INVALID_ARGUMENT, "%s", w->error);
}

plx_status ocl_execute_workload(plx_workload *w) {
    plx_factory *f = w->factory;
    const plx_host *host = f->host;
    if (!w->queue) {
        plx_status s = own_queue(w); /* queued: made at the first use */
        if (s) {
            return s;
        }
    }
    cl_int rc;
    if (w->constant) {
        plx_status s = ocl_workload_bind(w);
        if (s) {
            return s;
        }
        size_t bytes = w->outputs[0]->bytes;
        if (bytes == 0) {
            return NULL;
        }
        rc = clEnqueueWriteBuffer(w->queue, w->output_mems[0], CL_TRUE, 0, bytes, w->constant_data,
                                  0, NULL, NULL);
        if (rc != CL_SUCCESS) {
            return ocl_cl_failure(host, rc, PLX_INTERNAL, "clEnqueueWriteBuffer(%zu bytes)", bytes);
        }
        return NULL;
    }
    plx_status s = ocl_workload_enqueue(w, w->queue, NULL);
    if (s) {
        clFinish(w->queue); /* what was enqueued before the failure */
        return s;
    }
    /* Synchronous (R-18 (7)): the next layer may run on another queue, or
     * be the host mapping the outputs. */
    rc = clFinish(w->queue);
    if (rc != CL_SUCCESS) {
        return ocl_cl_failure(host, rc, PLX_INTERNAL, "clFinish");
    }
    return ocl_workload_check(w, w->queue, NULL);
}
