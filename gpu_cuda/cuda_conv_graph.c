/* gpu_cuda's cuDNN operation graphs for convolutions (cuda_conv_graph.h). */
#include "cuda_conv_graph.h"

cudnnBackendDescriptor_t
cuda_conv_graph_create(cuda_conv_graph *b, cudnnBackendDescriptorType_t type, const char *call) {
    cudnnBackendDescriptor_t d = NULL;
    if (b->st != CUDNN_STATUS_SUCCESS) {
        return NULL;
    }
    if (b->count == CUDA_CONV_MAX_DESCRIPTORS) {
        b->st = CUDNN_STATUS_NOT_SUPPORTED;
        b->call = "gpu_cuda's descriptor table (CUDA_CONV_MAX_DESCRIPTORS)";
        return NULL;
    }
    b->st = cudnnBackendCreateDescriptor(type, &d);
    if (b->st != CUDNN_STATUS_SUCCESS) {
        b->call = call;
        return NULL;
    }
    b->descriptors[b->count++] = d;
    return d;
}

void cuda_conv_graph_set(cuda_conv_graph *b, cudnnBackendDescriptor_t d,
                         cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                         int64_t count, const void *value, const char *call) {
    if (b->st == CUDNN_STATUS_SUCCESS) {
        b->st = cudnnBackendSetAttribute(d, name, type, count, value);
        if (b->st != CUDNN_STATUS_SUCCESS) {
            b->call = call;
        }
    }
}

void cuda_conv_graph_finalize(cuda_conv_graph *b, cudnnBackendDescriptor_t d, const char *call) {
    if (b->st == CUDNN_STATUS_SUCCESS) {
        b->st = cudnnBackendFinalize(d);
        if (b->st != CUDNN_STATUS_SUCCESS) {
            b->call = call;
        }
    }
}

/* A float32 tensor of the geometry's rank; virtual: an intermediate of
 * the graph that never reaches memory. */
static cudnnBackendDescriptor_t tensor(cuda_conv_graph *b, int64_t uid, const int64_t *dims,
                                       const int64_t *strides, bool is_virtual) {
    cudnnBackendDescriptor_t t = cuda_conv_graph_create(b, CUDNN_BACKEND_TENSOR_DESCRIPTOR,
                                                        "cudnnBackendCreateDescriptor(TENSOR)");
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    int64_t alignment = CUDA_CONV_ALIGNMENT, n = b->geom->nb_dims;
    CUDA_CONV_SET(b, t, TENSOR_DATA_TYPE, DATA_TYPE, 1, &type);
    CUDA_CONV_SET(b, t, TENSOR_DIMENSIONS, INT64, n, dims);
    CUDA_CONV_SET(b, t, TENSOR_STRIDES, INT64, n, strides);
    CUDA_CONV_SET(b, t, TENSOR_UNIQUE_ID, INT64, 1, &uid);
    CUDA_CONV_SET(b, t, TENSOR_BYTE_ALIGNMENT, INT64, 1, &alignment);
    CUDA_CONV_SET(b, t, TENSOR_IS_VIRTUAL, BOOLEAN, 1, &is_virtual);
    cuda_conv_graph_finalize(b, t, "cudnnBackendFinalize(TENSOR)");
    return t;
}

/* A pointwise operation y = mode(x) or y = x + b (mode ADD) in float32. */
static cudnnBackendDescriptor_t pointwise(cuda_conv_graph *b, cudnnPointwiseMode_t mode,
                                          cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t bias,
                                          cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t pw = cuda_conv_graph_create(b, CUDNN_BACKEND_POINTWISE_DESCRIPTOR,
                                                         "cudnnBackendCreateDescriptor(POINTWISE)");
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    CUDA_CONV_SET(b, pw, POINTWISE_MODE, POINTWISE_MODE, 1, &mode);
    CUDA_CONV_SET(b, pw, POINTWISE_MATH_PREC, DATA_TYPE, 1, &prec);
    cuda_conv_graph_finalize(b, pw, "cudnnBackendFinalize(POINTWISE)");
    cudnnBackendDescriptor_t op =
        cuda_conv_graph_create(b, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
                               "cudnnBackendCreateDescriptor(OPERATION_POINTWISE)");
    CUDA_CONV_SET(b, op, OPERATION_POINTWISE_PW_DESCRIPTOR, BACKEND_DESCRIPTOR, 1, &pw);
    CUDA_CONV_SET(b, op, OPERATION_POINTWISE_XDESC, BACKEND_DESCRIPTOR, 1, &x);
    if (bias) {
        CUDA_CONV_SET(b, op, OPERATION_POINTWISE_BDESC, BACKEND_DESCRIPTOR, 1, &bias);
    }
    CUDA_CONV_SET(b, op, OPERATION_POINTWISE_YDESC, BACKEND_DESCRIPTOR, 1, &y);
    cuda_conv_graph_finalize(b, op, "cudnnBackendFinalize(OPERATION_POINTWISE)");
    return op;
}

cudnnBackendDescriptor_t cuda_conv_graph_build(cuda_conv_graph *b, cudnnHandle_t handle,
                                               bool with_bias, bool with_residual, bool with_act,
                                               cudnnPointwiseMode_t act) {
    const cuda_conv_geom *g = b->geom;
    cudnnBackendDescriptor_t x = tensor(b, CUDA_CONV_UID_X, g->x, g->x_strides, false);
    cudnnBackendDescriptor_t w = tensor(b, CUDA_CONV_UID_W, g->w, g->w_strides, false);
    cudnnBackendDescriptor_t y = tensor(b, CUDA_CONV_UID_Y, g->y, g->y_strides, false);
    bool more = with_bias || with_residual || with_act;
    cudnnBackendDescriptor_t conv_out =
        more ? tensor(b, CUDA_CONV_UID_CONV_OUT, g->y, g->y_strides, true) : y;

    cudnnBackendDescriptor_t conv = cuda_conv_graph_create(
        b, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, "cudnnBackendCreateDescriptor(CONVOLUTION)");
    cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    int64_t spatial = g->spatial;
    CUDA_CONV_SET(b, conv, CONVOLUTION_COMP_TYPE, DATA_TYPE, 1, &comp);
    CUDA_CONV_SET(b, conv, CONVOLUTION_CONV_MODE, CONVOLUTION_MODE, 1, &mode);
    CUDA_CONV_SET(b, conv, CONVOLUTION_SPATIAL_DIMS, INT64, 1, &spatial);
    CUDA_CONV_SET(b, conv, CONVOLUTION_DILATIONS, INT64, spatial, g->dilation);
    CUDA_CONV_SET(b, conv, CONVOLUTION_FILTER_STRIDES, INT64, spatial, g->stride);
    CUDA_CONV_SET(b, conv, CONVOLUTION_PRE_PADDINGS, INT64, spatial, g->pre_pad);
    CUDA_CONV_SET(b, conv, CONVOLUTION_POST_PADDINGS, INT64, spatial, g->post_pad);
    cuda_conv_graph_finalize(b, conv, "cudnnBackendFinalize(CONVOLUTION)");

    cudnnBackendDescriptor_t ops[4];
    int op_count = 0;
    float alpha = 1.0f, beta = 0.0f;
    if (!g->transpose) {
        ops[op_count] =
            cuda_conv_graph_create(b, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                   "cudnnBackendCreateDescriptor(OPERATION_CONVOLUTION_FORWARD)");
        CUDA_CONV_SET(b, ops[op_count], OPERATION_CONVOLUTION_FORWARD_X, BACKEND_DESCRIPTOR, 1, &x);
        CUDA_CONV_SET(b, ops[op_count], OPERATION_CONVOLUTION_FORWARD_W, BACKEND_DESCRIPTOR, 1, &w);
        CUDA_CONV_SET(b, ops[op_count], OPERATION_CONVOLUTION_FORWARD_Y, BACKEND_DESCRIPTOR, 1,
                      &conv_out);
        CUDA_CONV_SET(b, ops[op_count], OPERATION_CONVOLUTION_FORWARD_CONV_DESC, BACKEND_DESCRIPTOR,
                      1, &conv);
        CUDA_CONV_SET(b, ops[op_count], OPERATION_CONVOLUTION_FORWARD_ALPHA, FLOAT, 1, &alpha);
        CUDA_CONV_SET(b, ops[op_count], OPERATION_CONVOLUTION_FORWARD_BETA, FLOAT, 1, &beta);
        cuda_conv_graph_finalize(b, ops[op_count],
                                 "cudnnBackendFinalize(OPERATION_CONVOLUTION_FORWARD)");
    } else {
        /* conv_transpose: the backward data of the convolution from Y to X
         * (cuda_conv_geom.h), X its DY and Y its DX. */
        ops[op_count] = cuda_conv_graph_create(
            b, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
            "cudnnBackendCreateDescriptor(OPERATION_CONVOLUTION_BACKWARD_DATA)");
        CUDA_CONV_SET(b, ops[op_count], OPERATION_CONVOLUTION_BWD_DATA_DY, BACKEND_DESCRIPTOR, 1,
                      &x);
        CUDA_CONV_SET(b, ops[op_count], OPERATION_CONVOLUTION_BWD_DATA_W, BACKEND_DESCRIPTOR, 1,
                      &w);
        CUDA_CONV_SET(b, ops[op_count], OPERATION_CONVOLUTION_BWD_DATA_DX, BACKEND_DESCRIPTOR, 1,
                      &conv_out);
        CUDA_CONV_SET(b, ops[op_count], OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                      BACKEND_DESCRIPTOR, 1, &conv);
        CUDA_CONV_SET(b, ops[op_count], OPERATION_CONVOLUTION_BWD_DATA_ALPHA, FLOAT, 1, &alpha);
        CUDA_CONV_SET(b, ops[op_count], OPERATION_CONVOLUTION_BWD_DATA_BETA, FLOAT, 1, &beta);
        cuda_conv_graph_finalize(b, ops[op_count],
                                 "cudnnBackendFinalize(OPERATION_CONVOLUTION_BACKWARD_DATA)");
    }
    op_count++;

    cudnnBackendDescriptor_t last = conv_out;
    if (with_bias) {
        cudnnBackendDescriptor_t bias = tensor(b, CUDA_CONV_UID_B, g->b, g->b_strides, false);
        cudnnBackendDescriptor_t out =
            with_residual || with_act ? tensor(b, CUDA_CONV_UID_BIAS_OUT, g->y, g->y_strides, true)
                                      : y;
        ops[op_count++] = pointwise(b, CUDNN_POINTWISE_ADD, last, bias, out);
        last = out;
    }
    if (with_residual) {
        cudnnBackendDescriptor_t z = tensor(b, CUDA_CONV_UID_Z, g->y, g->y_strides, false);
        cudnnBackendDescriptor_t out =
            with_act ? tensor(b, CUDA_CONV_UID_ADD_OUT, g->y, g->y_strides, true) : y;
        ops[op_count++] = pointwise(b, CUDNN_POINTWISE_ADD, last, z, out);
        last = out;
    }
    if (with_act) {
        ops[op_count++] = pointwise(b, act, last, NULL, y);
    }

    if (!handle) {
        return NULL;
    }
    cudnnBackendDescriptor_t graph = cuda_conv_graph_create(
        b, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "cudnnBackendCreateDescriptor(OPERATIONGRAPH)");
    CUDA_CONV_SET(b, graph, OPERATIONGRAPH_HANDLE, HANDLE, 1, &handle);
    CUDA_CONV_SET(b, graph, OPERATIONGRAPH_OPS, BACKEND_DESCRIPTOR, op_count, ops);
    cuda_conv_graph_finalize(b, graph, "cudnnBackendFinalize(OPERATIONGRAPH)");
    return b->st == CUDNN_STATUS_SUCCESS ? graph : NULL;
}

void cuda_conv_graph_reset(cuda_conv_graph *g) {
    while (g->count > 0) {
        cudnnBackendDestroyDescriptor(g->descriptors[--g->count]);
    }
    g->st = CUDNN_STATUS_SUCCESS;
    g->call = NULL;
}
