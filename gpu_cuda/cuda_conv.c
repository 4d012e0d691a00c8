/* gpu_cuda's convolutions through cuDNN's graph (backend) API
 * (cuda_backend.h, cuda_conv_plan; docs/gpu_cuda.md, "Convolutions"):
 * plans and runs; the graph's descriptors are cuda_conv_graph.c's.
 *
 * A conv or conv_transpose layer (1-D, 2-D or 3-D, grouped, strided,
 * dilated, with any pads; cuda_conv_geom.c turns it into cuDNN's tensors)
 * becomes, at create_workload, one operation graph of packed NCHW (NCDHW)
 * float32 tensors: the convolution forward operation (conv_transpose: the
 * convolution's backward data), then, in the same graph, the bias as a
 * pointwise add ([1, M, 1, 1] broadcast), a residual (a fused
 * conv+add+activation layer's tensor of Y's shape) as another add, and a
 * fused activation as a pointwise operation (relu, tanh, sigmoid, gelu and
 * its tanh form), on virtual intermediate tensors: cuDNN's runtime fusion.
 * The engine configurations cuDNN's heuristics give (mode A, then the
 * fallback list) are tried in order, those whose numerical notes the
 * option precision excludes skipped (precision_allows), and the first
 * whose execution plan finalises is kept with its workspace. When none
 * does for the fused graph, the convolution alone is planned, and the
 * bias add, the residual add and the activation run as this backend's own
 * kernels after it on the same stream (the adds here, the activation in
 * cuda_workload.c); when none does for the convolution alone, the layer
 * is refused with the reason.
 *
 * Each run sets the plan's handle to the run's stream and executes it with
 * a variant pack of the tensors' device pointers and the workspace. The
 * pack is made once and kept while the pointers stay the same (planned
 * memory does; an application's zero-copy binding may change them, and
 * then the pack is made again), so a run allocates nothing.
 *
 * check_layer probes the convolution alone the same way, with the
 * instance's handle under its lock, and throws the plan away
 * (cuda_conv_probe): what cuDNN has no engine for is refused there, with
 * the reason, and goes to the next backend, rather than failing the load.
 *
 * Threads: every plan owns its cuDNN handle, as every product owns its
 * cuBLASLt handle (cuda_gemm.c): a workload belongs to one working memory,
 * whose executions the host runs one at a time, so no handle is used by
 * two threads at once, and working memories run concurrently. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudnn.h>

#include "cuda_backend.h"
#include "cuda_conv_graph.h"

struct cuda_conv_plan {
    cudnnHandle_t handle;
    cuda_conv_graph graph; /* the graph's descriptors and the engine configuration */
    cudnnBackendDescriptor_t plan;
    void *workspace;
    int64_t workspace_size;
    cuda_conv_geom geom;
    bool bias_in_graph; /* else ck_binary adds it after the convolution */
    ck_broadcast bias_broadcast;
    bool residual;          /* an add of Z, Y's shape, after the bias */
    bool residual_in_graph; /* else ck_binary adds it after the bias */
    ck_broadcast flat;      /* Y and Z as one flat dim */
    int64_t count; /* Y's elements */
    /* The variant pack, for the pointers it holds (X, W, B, Z, Y). */
    cudnnBackendDescriptor_t pack;
    const void *pack_pointers[5];
};

static plx_status dnn_failure(const plx_host *host, cudnnStatus_t st, const char *call) {
    char detail[512] = "";
    cudnnGetLastErrorString(detail, sizeof detail);
    plx_status_code code = st == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
                                   st == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
                               ? PLX_OUT_OF_MEMORY
                               : PLX_INTERNAL;
    return host->status_create(host, code, "%s: %s (%d)%s%s", call, cudnnGetErrorString(st),
                               (int)st, detail[0] ? ": " : "", detail);
}

/* ------------------------------------------------------------------------ */
/* Engines and the plan                                                       */
/* ------------------------------------------------------------------------ */

/* Option precision on cuDNN's numerical notes of an engine: fp32 admits
 * no engine that uses tensor cores (on float32 data that is TF32), down-
 * converts its inputs or reduces in reduced precision; tf32 admits tensor
 * cores, not the other two; fp16 and bf16 admit every engine, those that
 * down-convert the inputs to a 16-bit type included (the notes do not say
 * which 16-bit type: the two options are the same here). */
static bool precision_allows(cuda_precision precision, const cudnnBackendNumericalNote_t *notes,
                             int64_t count) {
    for (int64_t i = 0; i < count; i++) {
        switch (notes[i]) {
        case CUDNN_NUMERICAL_NOTE_TENSOR_CORE:
            if (precision == CUDA_PRECISION_FP32) {
                return false;
            }
            break;
        case CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS:
        case CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION:
            if (precision == CUDA_PRECISION_FP32 || precision == CUDA_PRECISION_TF32) {
                return false;
            }
            break;
        default:
            break;
        }
    }
    return true;
}

/* The engine of a configuration: whether the precision admits it, and its
 * global index (for the log). False when its notes cannot be read. */
static bool engine_admitted(cudnnBackendDescriptor_t cfg, cuda_precision precision,
                            int64_t *out_index) {
    cudnnBackendDescriptor_t engine = NULL;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) !=
        CUDNN_STATUS_SUCCESS) {
        return false;
    }
    int64_t n = 0, note_count = 0;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    bool ok = cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine) ==
                  CUDNN_STATUS_SUCCESS &&
              cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                       CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                       &note_count, notes) == CUDNN_STATUS_SUCCESS;
    *out_index = -1;
    if (ok) {
        cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                                 out_index);
    }
    cudnnBackendDestroyDescriptor(engine);
    return ok && precision_allows(precision, notes, note_count);
}

/* The first engine configuration of heuristics `mode` for the graph that
 * the precision admits and whose execution plan finalises: the plan into
 * p->plan (and the configuration into p->graph's table), true. False when
 * none does; p->graph.st set only for a failure of the heuristics' own
 * calls. */
static bool plan_from_heuristics(cuda_conv_plan *p, cudnnBackendDescriptor_t graph,
                                 cudnnBackendHeurMode_t mode, cuda_precision precision,
                                 int64_t *out_engine) {
    cuda_conv_graph *b = &p->graph;
    cudnnBackendDescriptor_t heur = cuda_conv_graph_create(
        b, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "cudnnBackendCreateDescriptor(ENGINEHEUR)");
    CUDA_CONV_SET(b, heur, ENGINEHEUR_OPERATION_GRAPH, BACKEND_DESCRIPTOR, 1, &graph);
    CUDA_CONV_SET(b, heur, ENGINEHEUR_MODE, HEUR_MODE, 1, &mode);
    cuda_conv_graph_finalize(b, heur, "cudnnBackendFinalize(ENGINEHEUR)");
    int64_t count = 0;
    if (b->st == CUDNN_STATUS_SUCCESS) {
        b->st = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL);
        if (b->st != CUDNN_STATUS_SUCCESS) {
            b->call = "cudnnBackendGetAttribute(ENGINEHEUR_RESULTS, count)";
        }
    }
    if (b->st != CUDNN_STATUS_SUCCESS || count <= 0) {
        return false;
    }
    /* The configurations, into descriptors of ours. */
    cudnnBackendDescriptor_t *cfgs = calloc((size_t)count, sizeof *cfgs);
    if (!cfgs) {
        b->st = CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
        b->call = "the engine configuration list";
        return false;
    }
    int64_t created = 0;
    for (; created < count; created++) {
        if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfgs[created]) !=
            CUDNN_STATUS_SUCCESS) {
            break;
        }
    }
    int64_t got = 0;
    bool found = false;
    if (created == count &&
        cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, cfgs) ==
            CUDNN_STATUS_SUCCESS) {
        for (int64_t i = 0; i < got && !found && b->count < CUDA_CONV_MAX_DESCRIPTORS;
             i++) {
            int64_t engine;
            if (!engine_admitted(cfgs[i], precision, &engine)) {
                continue;
            }
            cudnnBackendDescriptor_t plan = NULL;
            if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) !=
                CUDNN_STATUS_SUCCESS) {
                continue;
            }
            if (cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                         CUDNN_TYPE_HANDLE, 1, &p->handle) ==
                    CUDNN_STATUS_SUCCESS &&
                cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]) ==
                    CUDNN_STATUS_SUCCESS &&
                cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS) {
                /* Kept with the plan: the configuration and the plan. */
                b->descriptors[b->count++] = cfgs[i];
                cfgs[i] = NULL;
                p->plan = plan;
                *out_engine = engine;
                found = true;
            } else {
                cudnnBackendDestroyDescriptor(plan);
            }
        }
    }
    for (int64_t i = 0; i < created; i++) {
        if (cfgs[i]) {
            cudnnBackendDestroyDescriptor(cfgs[i]);
        }
    }
    free(cfgs);
    return found;
}

/* The activations that run inside the graph, as a pointwise operation of
 * cuDNN's with no parameter; the others run as the pointwise kernel after
 * the graph (cuda_workload.c). */
static bool graph_activation(const plx_activation_desc *a, cudnnPointwiseMode_t *mode) {
    switch (a->func) {
    case PLX_ACT_RELU: *mode = CUDNN_POINTWISE_RELU_FWD; return true;
    case PLX_ACT_TANH: *mode = CUDNN_POINTWISE_TANH_FWD; return true;
    case PLX_ACT_SIGMOID: *mode = CUDNN_POINTWISE_SIGMOID_FWD; return true;
    case PLX_ACT_GELU:
        *mode = a->alpha != 0.0f ? CUDNN_POINTWISE_GELU_APPROX_TANH_FWD : CUDNN_POINTWISE_GELU_FWD;
        return true;
    default: return false;
    }
}

/* Destroys the plan and the graph's descriptors (a plan made again). */
static void reset(cuda_conv_plan *p) {
    if (p->plan) {
        cudnnBackendDestroyDescriptor(p->plan);
        p->plan = NULL;
    }
    cuda_conv_graph_reset(&p->graph);
}

void cuda_conv_plan_destroy(cuda_conv_plan *p, const plx_host *host) {
    if (!p) {
        return;
    }
    if (p->pack) {
        cudnnBackendDestroyDescriptor(p->pack);
    }
    reset(p);
    if (p->workspace) {
        cudaFree(p->workspace);
    }
    if (p->handle) {
        cudnnDestroy(p->handle);
    }
    host->free(host, p);
}

/* Builds one graph with p's handle and plans it from heuristics mode A,
 * then the fallback list: true when planned. False with p->graph.st set
 * when a call failed (the graph's, or the last of the heuristics' when
 * neither mode gave a plan), and without when no engine the precision
 * admits has a plan. */
static bool plan_graph(cuda_conv_plan *p, bool with_bias, bool with_residual, bool with_act,
                       cudnnPointwiseMode_t act, cuda_precision precision, int64_t *out_engine) {
    cuda_conv_graph *b = &p->graph;
    b->geom = &p->geom;
    cudnnBackendDescriptor_t graph =
        cuda_conv_graph_build(b, p->handle, with_bias, with_residual, with_act, act);
    if (!graph) {
        return false;
    }
    static const cudnnBackendHeurMode_t modes[] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
    cudnnStatus_t heur_st = CUDNN_STATUS_SUCCESS;
    const char *heur_call = NULL;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        if (plan_from_heuristics(p, graph, modes[i], precision, out_engine)) {
            return true;
        }
        if (b->st != CUDNN_STATUS_SUCCESS) {
            heur_st = b->st;
            heur_call = b->call;
            b->st = CUDNN_STATUS_SUCCESS;
        }
    }
    b->st = heur_st;
    b->call = heur_call;
    return false;
}

/* Why a layer has no plan when cuDNN has no engine for it. */
static const char *no_engine(const plx_layer_view *l, char *buf, size_t size) {
    snprintf(buf, size, "cuDNN has no engine for this %dD %s that the option precision admits",
             (int)l->inputs[0].rank - 2,
             l->op == PLX_OP_CONV_TRANSPOSE ? "transposed convolution (backward data)"
                                            : "convolution");
    return buf;
}

const char *cuda_conv_probe(plx_backend *b, const plx_layer_view *l, char *buf, size_t size) {
    cuda_conv_plan p;
    memset(&p, 0, sizeof p);
    const char *why = cuda_conv_geometry(l, &p.geom, buf, size);
    if (why) {
        return why;
    }
    pthread_mutex_lock(&b->conv_lock);
    cudaError_t rc = cudaSetDevice(b->device);
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    if (rc == cudaSuccess && !b->cudnn) {
        st = cudnnCreate(&b->cudnn);
        if (st != CUDNN_STATUS_SUCCESS) {
            b->cudnn = NULL;
        }
    }
    bool planned = false;
    cudnnStatus_t graph_st = CUDNN_STATUS_SUCCESS;
    const char *graph_call = NULL;
    if (rc == cudaSuccess && st == CUDNN_STATUS_SUCCESS) {
        int64_t engine;
        p.handle = b->cudnn;
        planned = plan_graph(&p, false, false, false, CUDNN_POINTWISE_RELU_FWD, b->precision,
                             &engine);
        graph_st = p.graph.st;
        graph_call = p.graph.call;
        reset(&p);
    }
    pthread_mutex_unlock(&b->conv_lock);
    if (planned) {
        return NULL;
    }
    if (rc != cudaSuccess) {
        snprintf(buf, size, "cudaSetDevice(%d): %s", b->device, cudaGetErrorString(rc));
    } else if (st != CUDNN_STATUS_SUCCESS) {
        snprintf(buf, size, "cudnnCreate: %s", cudnnGetErrorString(st));
    } else if (graph_st != CUDNN_STATUS_SUCCESS) {
        snprintf(buf, size, "cuDNN refuses the convolution: %s: %s", graph_call,
                 cudnnGetErrorString(graph_st));
    } else {
        no_engine(l, buf, size);
    }
    return buf;
}

void cuda_conv_probe_release(plx_backend *b) {
    if (b->cudnn) {
        cudaSetDevice(b->device);
        cudnnDestroy(b->cudnn);
        b->cudnn = NULL;
    }
}

plx_status cuda_conv_plan_create(plx_factory *f, const plx_layer_view *l,
                                 const plx_activation_desc *act, bool residual,
                                 bool *out_act_in_graph, cuda_conv_plan **out_plan) {
    const plx_host *host = f->host;
    char buf[256];
    cuda_conv_plan *p = host->alloc(host, sizeof *p, 0);
    if (!p) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    memset(p, 0, sizeof *p);
    const char *why = cuda_conv_geometry(l, &p->geom, buf, sizeof buf);
    if (why) {
        cuda_conv_plan_destroy(p, host);
        return host->status_create(host, PLX_UNSUPPORTED, "%s", why);
    }
    const cuda_conv_geom *g = &p->geom;
    /* The bias added by the kernel: Y as [N, M, spatial] and B as [1, M, 1]. */
    p->bias_broadcast.rank = 3;
    p->bias_broadcast.dims[0] = g->y[0];
    p->bias_broadcast.dims[1] = g->y[1];
    p->bias_broadcast.dims[2] = g->y_strides[1];
    p->bias_broadcast.a_strides[0] = g->y_strides[0];
    p->bias_broadcast.a_strides[1] = g->y_strides[1];
    p->bias_broadcast.a_strides[2] = 1;
    p->bias_broadcast.b_strides[1] = 1;
    p->count = g->y[0] * g->y_strides[0];
    p->residual = residual;
    p->flat.rank = 1;
    p->flat.dims[0] = p->count;
    p->flat.a_strides[0] = 1;
    p->flat.b_strides[0] = 1;

    cudnnStatus_t st = cudnnCreate(&p->handle);
    if (st != CUDNN_STATUS_SUCCESS) {
        p->handle = NULL;
        plx_status s = dnn_failure(host, st, "cudnnCreate");
        cuda_conv_plan_destroy(p, host);
        return s;
    }
    const cuda_conv_graph *b = &p->graph;
    cudnnPointwiseMode_t mode = CUDNN_POINTWISE_RELU_FWD;
    bool act_in_graph = act && graph_activation(act, &mode);
    bool fused = false;
    int64_t engine = -1;
    if (g->has_bias || residual || act_in_graph) {
        fused = plan_graph(p, g->has_bias, residual, act_in_graph, mode, f->precision, &engine);
        if (!fused) {
            host->log(host, PLX_LOG_DEBUG,
                      "gpu_cuda: %s '%s': cuDNN does not run it fused with its %s%s%s (%s%s%s); "
                      "the convolution alone, then gpu_cuda's kernels",
                      plx_op_name(l->op), l->name ? l->name : "", g->has_bias ? "bias " : "",
                      residual ? "residual " : "", act_in_graph ? "activation" : "",
                      b->st ? b->call : "no engine the option precision admits",
                      b->st ? ": " : "", b->st ? cudnnGetErrorString(b->st) : "");
            reset(p);
        }
    }
    if (!fused && !plan_graph(p, false, false, false, mode, f->precision, &engine)) {
        plx_status s = b->st ? dnn_failure(host, b->st, b->call)
                            : host->status_create(host, PLX_UNSUPPORTED, "%s",
                                                  no_engine(l, buf, sizeof buf));
        cuda_conv_plan_destroy(p, host);
        return s;
    }
    p->bias_in_graph = fused && g->has_bias;
    p->residual_in_graph = fused && residual;
    *out_act_in_graph = fused && act_in_graph;
    int64_t n = 0;
    st = cudnnBackendGetAttribute(p->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                  CUDNN_TYPE_INT64, 1, &n, &p->workspace_size);
    if (st != CUDNN_STATUS_SUCCESS) {
        plx_status s =
            dnn_failure(host, st, "cudnnBackendGetAttribute(EXECUTION_PLAN_WORKSPACE_SIZE)");
        cuda_conv_plan_destroy(p, host);
        return s;
    }
    if (p->workspace_size > 0) {
        cudaError_t rc = cudaMalloc(&p->workspace, (size_t)p->workspace_size);
        if (rc != cudaSuccess) {
            p->workspace = NULL;
            plx_status s = gpu_cuda_failure(host, rc, PLX_OUT_OF_MEMORY,
                                            "cudaMalloc(%lld bytes of cuDNN workspace)",
                                            (long long)p->workspace_size);
            cuda_conv_plan_destroy(p, host);
            return s;
        }
    }
    host->log(host, PLX_LOG_DEBUG,
              "gpu_cuda: %s '%s': cuDNN engine %lld, %s, workspace %lld bytes",
              plx_op_name(l->op), l->name ? l->name : "", (long long)engine,
              !fused ? "the convolution alone" : "one graph with what follows it",
              (long long)p->workspace_size);
    *out_plan = p;
    return NULL;
}

/* The variant pack for these pointers (X, W, B or NULL, Z or NULL, Y),
 * made when they differ from the last run's. */
static plx_status variant_pack(const plx_host *host, cuda_conv_plan *p,
                               const void *const pointers[5]) {
    if (p->pack && memcmp(pointers, p->pack_pointers, sizeof p->pack_pointers) == 0) {
        return NULL;
    }
    if (p->pack) {
        cudnnBackendDestroyDescriptor(p->pack);
        p->pack = NULL;
    }
    static const int64_t all_uids[5] = {CUDA_CONV_UID_X, CUDA_CONV_UID_W, CUDA_CONV_UID_B, CUDA_CONV_UID_Z, CUDA_CONV_UID_Y};
    int64_t uids[5];
    void *data[5];
    int64_t count = 0;
    for (int i = 0; i < 5; i++) {
        if (pointers[i]) {
            uids[count] = all_uids[i];
            data[count++] = (void *)(uintptr_t)pointers[i];
        }
    }
    cudnnBackendDescriptor_t pack = NULL;
    cudnnStatus_t st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
    const char *call = "cudnnBackendCreateDescriptor(VARIANT_PACK)";
    if (st == CUDNN_STATUS_SUCCESS) {
        call = "cudnnBackendSetAttribute(VARIANT_PACK_UNIQUE_IDS)";
        st = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                                      count, uids);
    }
    if (st == CUDNN_STATUS_SUCCESS) {
        call = "cudnnBackendSetAttribute(VARIANT_PACK_DATA_POINTERS)";
        st = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                      CUDNN_TYPE_VOID_PTR, count, data);
    }
    if (st == CUDNN_STATUS_SUCCESS) {
        call = "cudnnBackendSetAttribute(VARIANT_PACK_WORKSPACE)";
        st = cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                      CUDNN_TYPE_VOID_PTR, 1, &p->workspace);
    }
    if (st == CUDNN_STATUS_SUCCESS) {
        call = "cudnnBackendFinalize(VARIANT_PACK)";
        st = cudnnBackendFinalize(pack);
    }
    if (st != CUDNN_STATUS_SUCCESS) {
        if (pack) {
            cudnnBackendDestroyDescriptor(pack);
        }
        return dnn_failure(host, st, call);
    }
    p->pack = pack;
    memcpy(p->pack_pointers, pointers, sizeof p->pack_pointers);
    return NULL;
}

plx_status cuda_conv_run(plx_factory *f, cuda_conv_plan *p, cudaStream_t stream, const void *x,
                         const void *w, const void *bias, const void *z, float *y) {
    const plx_host *host = f->host;
    const void *pointers[5] = {x, w, p->bias_in_graph ? bias : NULL,
                               p->residual_in_graph ? z : NULL, y};
    static const char *const names[5] = {"X", "W", "B", "the residual", "Y"};
    for (int i = 0; i < 5; i++) {
        if (((uintptr_t)pointers[i] & (CUDA_CONV_ALIGNMENT - 1)) != 0) {
            return host->status_create(host, PLX_INVALID_ARGUMENT,
                                       "cuDNN's plan takes tensors aligned to %d bytes, and "
                                       "conv's %s is not",
                                       CUDA_CONV_ALIGNMENT, names[i]);
        }
    }
    plx_status s = variant_pack(host, p, pointers);
    if (s) {
        return s;
    }
    cudnnStatus_t st = cudnnSetStream(p->handle, stream);
    if (st != CUDNN_STATUS_SUCCESS) {
        return dnn_failure(host, st, "cudnnSetStream");
    }
    st = cudnnBackendExecute(p->handle, p->plan, p->pack);
    if (st != CUDNN_STATUS_SUCCESS) {
        return dnn_failure(host, st, "cudnnBackendExecute");
    }
    if (p->geom.has_bias && !p->bias_in_graph) {
        cudaError_t rc = ck_binary_launch(stream, CK_ADD, y, bias, y, p->count, &p->bias_broadcast);
        if (rc != cudaSuccess) {
            return gpu_cuda_failure(host, rc, PLX_INTERNAL, "launch (conv's bias)");
        }
    }
    if (p->residual && !p->residual_in_graph) {
        cudaError_t rc = ck_binary_launch(stream, CK_ADD, y, z, y, p->count, &p->flat);
        if (rc != cudaSuccess) {
            return gpu_cuda_failure(host, rc, PLX_INTERNAL, "launch (conv's residual add)");
        }
    }
    return NULL;
}
