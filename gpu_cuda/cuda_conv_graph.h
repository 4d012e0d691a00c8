/* gpu_cuda's cuDNN operation graphs for convolutions (cuda_conv.c): the
 * tensors, the convolution and the pointwise operations of a layer's
 * geometry (cuda_conv_geom.h), built and finalised through cuDNN's graph
 * (backend) API. Needs cuDNN and nothing of the CUDA runtime or the
 * device: every descriptor up to the operations is finalised without a
 * handle, and cuDNN checks each operation's shapes then, so a host test
 * (tests/test_gpu_cuda_cudnn.c) has cuDNN itself validate what gpu_cuda
 * gives it on a machine without a GPU. Only the operation graph, which
 * names a handle, needs one. */
#ifndef GPU_CUDA_CUDA_CONV_GRAPH_H
#define GPU_CUDA_CUDA_CONV_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include <cudnn.h>

#include "cuda_conv_geom.h"

/* The tensors' unique ids in the graph and the variant pack. */
enum { CUDA_CONV_UID_X = 1, CUDA_CONV_UID_W, CUDA_CONV_UID_B, CUDA_CONV_UID_Z, CUDA_CONV_UID_Y,
       CUDA_CONV_UID_CONV_OUT, CUDA_CONV_UID_BIAS_OUT, CUDA_CONV_UID_ADD_OUT };

/* Every pointer given to cuDNN is aligned to this many bytes (cudaMalloc
 * gives 256, the host places planned blocks at multiples of 64); a run
 * refuses others (an application's binding at an odd offset). */
#define CUDA_CONV_ALIGNMENT 16

/* At most: 8 tensors, 3 pointwise descriptors, the convolution, 4
 * operations, the graph, 2 heuristics and the engine configuration. */
#define CUDA_CONV_MAX_DESCRIPTORS 24

/* The descriptors of one graph (destroyed by cuda_conv_graph_reset), and
 * the first failure of the calls that made them, with the call's name. */
typedef struct cuda_conv_graph {
    const cuda_conv_geom *geom;
    cudnnBackendDescriptor_t descriptors[CUDA_CONV_MAX_DESCRIPTORS];
    int count;
    cudnnStatus_t st;
    const char *call;
} cuda_conv_graph;

/* A descriptor of `type`, kept in g's table; NULL once g has failed (or
 * now fails: `call` names the failure, or the table is full). */
cudnnBackendDescriptor_t cuda_conv_graph_create(cuda_conv_graph *g,
                                                cudnnBackendDescriptorType_t type,
                                                const char *call);
/* cudnnBackendSetAttribute and cudnnBackendFinalize, unless g has failed;
 * a failure is recorded with `call`. */
void cuda_conv_graph_set(cuda_conv_graph *g, cudnnBackendDescriptor_t d,
                         cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                         int64_t count, const void *value, const char *call);
void cuda_conv_graph_finalize(cuda_conv_graph *g, cudnnBackendDescriptor_t d, const char *call);

#define CUDA_CONV_SET(g, d, NAME, TYPE, count, value)                                          \
    cuda_conv_graph_set((g), (d), CUDNN_ATTR_##NAME, CUDNN_TYPE_##TYPE, (count), (value),      \
                        "cudnnBackendSetAttribute(" #NAME ")")

/* Builds the float32 operations of g->geom's graph: the convolution
 * (forward, or for conv_transpose backward data) X, W -> Y, or X, W ->
 * conv -> (+ B) -> (+ Z, Y's shape) -> (act) -> Y on virtual intermediate
 * tensors; then, when `handle` is not NULL, the operation graph of them,
 * returned. NULL without a handle, or when a call failed (g->st, g->call). */
cudnnBackendDescriptor_t cuda_conv_graph_build(cuda_conv_graph *g, cudnnHandle_t handle,
                                               bool with_bias, bool with_residual, bool with_act,
                                               cudnnPointwiseMode_t act);

/* Destroys every descriptor of g's table and clears its failure. */
void cuda_conv_graph_reset(cuda_conv_graph *g);

#endif /* GPU_CUDA_CUDA_CONV_GRAPH_H */
