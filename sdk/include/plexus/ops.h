/* Operators: layer types and their descriptors. Shared by applications
 * (which build networks from them) and backends (which receive them in
 * support queries and workload creation). Semantics follow ONNX: images are
 * NCHW, elementwise operators broadcast like numpy, negative axes count from
 * the end. Weights, biases and other tensors are layer inputs (usually fed
 * by constant layers), as in ONNX; descriptors hold only attributes.
 *
 * Every descriptor starts with `struct_size` and grows only at its end
 * (backend.h, R-1); initialise one with its PLX_*_DESC_INIT macro, which
 * sets the size and ONNX's defaults. Pointers inside a descriptor point to
 * memory owned by the network, valid for the network's lifetime.
 * Includes only standard headers and the other SDK headers. */
#ifndef PLEXUS_OPS_H
#define PLEXUS_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>

#include <plexus/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Layer types, one row each in value order:
 * X(ENUM_SUFFIX, value, "name", descriptor type or void). Values are part
 * of the ABI: only append. The comment of each row gives its inputs in
 * order ([optional] in brackets), outputs and descriptor. The descriptor
 * column is only a name here (the types are defined below); the core
 * takes its sizeof (core/src/op_table.c). */
#define PLX_OP_LIST(X) \
    X(INVALID, 0, "invalid", void)                             \
    X(INPUT, 1, "input", plx_io_desc)                          /* network input; no inputs; 1 output; plx_io_desc */ \
    X(OUTPUT, 2, "output", plx_io_desc)                        /* network output; 1 input; no outputs; plx_io_desc */ \
    X(CONSTANT, 3, "constant", plx_constant_desc)              /* no inputs; 1 output holding the data; plx_constant_desc */ \
    X(CONV, 4, "conv", plx_conv_desc)                          /* X, W, [B] -> Y; plx_conv_desc */ \
    X(CONV_TRANSPOSE, 5, "conv_transpose", plx_conv_transpose_desc) /* X, W, [B] -> Y; plx_conv_transpose_desc */ \
    X(FULLY_CONNECTED, 6, "fully_connected", plx_fully_connected_desc) /* X, W, [B] -> Y; plx_fully_connected_desc */ \
    X(MATMUL, 7, "matmul", void)                               /* A, B -> Y (numpy matmul, batched); no descriptor */ \
    X(GEMM, 8, "gemm", plx_gemm_desc)                          /* A, B, [C] -> Y; plx_gemm_desc */ \
    X(POOL, 9, "pool", plx_pool_desc)                          /* X -> Y, [Indices] (max, ABI 1.3); plx_pool_desc */ \
    X(GLOBAL_POOL, 10, "global_pool", plx_global_pool_desc)    /* X -> Y; plx_global_pool_desc */ \
    X(ACTIVATION, 11, "activation", plx_activation_desc)       /* X -> Y; plx_activation_desc */ \
    X(BINARY, 12, "binary", plx_binary_desc)                   /* A, B -> Y (broadcasting); plx_binary_desc */ \
    X(UNARY, 13, "unary", plx_unary_desc)                      /* X -> Y; plx_unary_desc */ \
    X(BATCH_NORM, 14, "batch_norm", plx_batch_norm_desc)       /* X, scale, bias, mean, var -> Y; plx_batch_norm_desc */ \
    X(LAYER_NORM, 15, "layer_norm", plx_layer_norm_desc)       /* X, scale, [bias] -> Y; plx_layer_norm_desc */ \
    X(SOFTMAX, 16, "softmax", plx_softmax_desc)                /* X -> Y; plx_softmax_desc */ \
    X(REDUCE, 17, "reduce", plx_reduce_desc)                   /* X -> Y; plx_reduce_desc */ \
    X(RESHAPE, 18, "reshape", plx_reshape_desc)                /* X -> Y; plx_reshape_desc */ \
    X(FLATTEN, 19, "flatten", plx_axis_desc)                   /* X -> Y; plx_axis_desc */ \
    X(TRANSPOSE, 20, "transpose", plx_transpose_desc)          /* X -> Y; plx_transpose_desc */ \
    X(CONCAT, 21, "concat", plx_axis_desc)                     /* X0..Xn-1 -> Y; plx_axis_desc */ \
    X(SPLIT, 22, "split", plx_split_desc)                      /* X -> Y0..Yn-1; plx_split_desc */ \
    X(SLICE, 23, "slice", plx_slice_desc)                      /* X -> Y; plx_slice_desc */ \
    X(PAD, 24, "pad", plx_pad_desc)                            /* X -> Y; plx_pad_desc */ \
    X(SQUEEZE, 25, "squeeze", plx_axes_desc)                   /* X -> Y; plx_axes_desc (no axes: every dim of size 1) */ \
    X(UNSQUEEZE, 26, "unsqueeze", plx_axes_desc)               /* X -> Y; plx_axes_desc (axes of the output) */ \
    X(GATHER, 27, "gather", plx_axis_desc)                     /* data, indices (int32/int64; int8/uint8 from 1.3) -> Y; plx_axis_desc */ \
    X(EXPAND, 28, "expand", plx_shape_desc)                    /* X -> Y; plx_shape_desc (broadcast to the shape) */ \
    X(WHERE, 29, "where", void)                                /* cond (bool), X, Y -> Z (broadcasting); no descriptor */ \
    X(CAST, 30, "cast", plx_cast_desc)                         /* X -> Y; plx_cast_desc */ \
    X(RESIZE, 31, "resize", plx_resize_desc)                   /* X (rank 4) -> Y; plx_resize_desc */ \
    X(DEPTH_TO_SPACE, 32, "depth_to_space", plx_depth_space_desc) /* X -> Y; plx_depth_space_desc */ \
    X(SPACE_TO_DEPTH, 33, "space_to_depth", plx_depth_space_desc) /* X -> Y; plx_depth_space_desc */ \
    X(QUANTIZE, 34, "quantize", plx_quantize_desc)             /* X, scale, [zero_point] -> Y; plx_quantize_desc */ \
    X(DEQUANTIZE, 35, "dequantize", plx_quantize_desc)         /* X, scale, [zero_point] -> Y; plx_quantize_desc */ \
    X(MEM_COPY, 36, "mem_copy", void)                          /* X -> Y, inserted by the optimiser between backends */ \
    X(MEM_IMPORT, 37, "mem_import", void)                      /* X -> Y, inserted by the optimiser: Y imports X's memory */ \
    X(LSTM, 38, "lstm", plx_lstm_desc)                         /* X, W, R, B, sequence_lens, initial_h, initial_c, P -> Y, Y_h, Y_c; plx_lstm_desc */ \
    X(GRU, 39, "gru", plx_gru_desc)                            /* X, W, R, B, sequence_lens, initial_h -> Y, Y_h; plx_gru_desc */ \
    X(TILE, 40, "tile", plx_tile_desc)                         /* X -> Y; plx_tile_desc */ \
    X(ARG_REDUCE, 41, "arg_reduce", plx_arg_reduce_desc)       /* X -> Y (int64); plx_arg_reduce_desc */ \
    X(TOPK, 42, "topk", plx_topk_desc)                         /* X -> values, indices (int64); plx_topk_desc */ \
    X(INSTANCE_NORM, 43, "instance_norm", plx_instance_norm_desc) /* X, scale, bias -> Y; plx_instance_norm_desc */ \
    /* ABI 1.2: layers a backend put in place of others through */ \
    /* optimize_subgraph (backend.h); never added by applications. */ \
    X(PRECOMPILED, 44, "precompiled", plx_precompiled_desc)    /* any -> any; plx_precompiled_desc */ \
    /* ABI 1.3: ONNX GatherElements, ScatterElements (and Scatter), */ \
    /* ScatterND, GatherND. */ \
    X(GATHER_ELEMENTS, 45, "gather_elements", plx_axis_desc)   /* data, indices (int32/int64, data's rank) -> Y (indices' shape); plx_axis_desc */ \
    X(SCATTER_ELEMENTS, 46, "scatter_elements", plx_scatter_desc) /* data, indices (int32/int64), updates (indices' shape) -> Y (data's shape); plx_scatter_desc */ \
    X(SCATTER_ND, 47, "scatter_nd", plx_scatter_desc)          /* data, indices (int32/int64, [..., k]), updates -> Y (data's shape); plx_scatter_desc */ \
    X(GATHER_ND, 48, "gather_nd", plx_gather_nd_desc)          /* data, indices (int32/int64, [..., k]) -> Y; plx_gather_nd_desc */ \
    /* ABI 1.3: ONNX Trilu, OneHot, Hardmax, CumSum. */ \
    X(TRILU, 49, "trilu", plx_trilu_desc)                      /* X (rank >= 2) -> Y; plx_trilu_desc */ \
    X(ONE_HOT, 50, "one_hot", plx_one_hot_desc)                /* indices, values ([off, on]) -> Y; plx_one_hot_desc */ \
    X(HARDMAX, 51, "hardmax", plx_axis_desc)                   /* X -> Y; plx_axis_desc (default -1) */ \
    X(CUM_SUM, 52, "cum_sum", plx_cum_sum_desc)                /* X -> Y; plx_cum_sum_desc */ \
    /* ABI 1.3: integer products and dynamic quantization (ONNX */ \
    /* MatMulInteger, ConvInteger, DynamicQuantizeLinear). */ \
    X(MATMUL_INTEGER, 53, "matmul_integer", void)              /* A, B (int8/uint8), [a_zero_point], [b_zero_point] -> Y (int32); no descriptor */ \
    X(CONV_INTEGER, 54, "conv_integer", plx_conv_desc)         /* X, W (int8/uint8), [x_zero_point], [w_zero_point] -> Y (int32); plx_conv_desc */ \
    X(DYNAMIC_QUANTIZE, 55, "dynamic_quantize", void)          /* X (float32) -> Y (uint8), Y_scale, Y_zero_point; no descriptor */ \
    /* ABI 1.3: ONNX GridSample. */ \
    X(GRID_SAMPLE, 56, "grid_sample", plx_grid_sample_desc)    /* X [N, C, D1..Dr], grid [N, O1..Or, r] -> Y [N, C, O1..Or]; plx_grid_sample_desc */ \
    /* ABI 1.3: ONNX DFT and STFT. */ \
    X(DFT, 57, "dft", plx_dft_desc)                            /* X [.., n, .., 1 or 2] -> Y [.., L or L/2+1, .., 2]; plx_dft_desc */ \
    X(STFT, 58, "stft", plx_stft_desc)                         /* signal [B, len, 1 or 2], [window [L]] -> Y [B, frames, L or L/2+1, 2]; plx_stft_desc */ \
    /* ABI 1.3: ONNX Col2Im. */ \
    X(COL2IM, 59, "col2im", plx_col2im_desc)                   /* X [N, C * prod(block), L] -> Y [N, C, image...]; plx_col2im_desc */ \
    /* ABI 1.3: ONNX Det, ReverseSequence, MaxUnpool. */ \
    X(DET, 60, "det", void)                                    /* X [.., M, M] (a float type) -> Y [..]; no descriptor */ \
    X(REVERSE_SEQUENCE, 61, "reverse_sequence", plx_reverse_sequence_desc) /* X, sequence_lens (int32/int64, [batch]) -> Y (X's shape); plx_reverse_sequence_desc */ \
    X(MAX_UNPOOL, 62, "max_unpool", plx_max_unpool_desc)       /* X [N, C, D1..Dr], I (int64, X's shape) -> Y [N, C, O1..Or]; plx_max_unpool_desc */ \
    /* ABI 1.3: ONNX RNN (the Elman cell). */ \
    X(RNN, 63, "rnn", plx_rnn_desc)                            /* X, W, R, B, sequence_lens, initial_h -> Y, Y_h; plx_rnn_desc */ \
    /* ABI 1.3: ONNX RoiAlign. */ \
    X(ROI_ALIGN, 64, "roi_align", plx_roi_align_desc)          /* X [N, C, H, W], rois [R, 4], batch_indices (int32/int64) [R] -> Y [R, C, oh, ow]; plx_roi_align_desc */ \
    /* ABI 1.3: ONNX DeformConv (2-D). */ \
    X(DEFORM_CONV, 65, "deform_conv", plx_deform_conv_desc)    /* X, W, offset, [B], [mask] -> Y; plx_deform_conv_desc */

/* PLX_OP_LIST_END_, an alias of PLX_OP_INVALID (so that no value is new
 * and switches need no case for it), closes the enumerator list without
 * the trailing comma that C++98 forbids. */
#define PLX_OP_ENUM_(suffix, value, name, desc) PLX_OP_##suffix = value,
typedef enum plx_op { PLX_OP_LIST(PLX_OP_ENUM_) PLX_OP_LIST_END_ = 0 } plx_op;
#undef PLX_OP_ENUM_

#define PLX_OP_PLUS_ONE_(suffix, value, name, desc) +1
#define PLX_OP_COUNT (0 PLX_OP_LIST(PLX_OP_PLUS_ONE_))

/* "conv", "batch_norm", ...: the lower-case name of an operator;
 * "invalid" for values out of range. */
#define PLX_OP_NAME_(suffix, value, name, desc) name,
static inline const char *plx_op_name(plx_op op) {
    static const char *const names[PLX_OP_COUNT] = {PLX_OP_LIST(PLX_OP_NAME_)};
    return (unsigned)op < PLX_OP_COUNT ? names[op] : "invalid";
}
#undef PLX_OP_NAME_

/* ABI 1.2: the descriptor of a PLX_OP_PRECOMPILED layer, which stands for
 * the layers a backend replaced (backend.h, plx_substitution). `kind`
 * says what it computes in the backend's words ("conv+relu"); `data` is the
 * backend's own description of it, `size` bytes, opaque to the host. Both
 * are the host's copies, valid while the network that holds the layer. */
typedef struct plx_precompiled_desc {
    uint32_t struct_size;
    const char *kind;
    const void *data;
    size_t size;
} plx_precompiled_desc;

/* Padding rule of ONNX's auto_pad. */
typedef enum plx_auto_pad {
    PLX_AUTO_PAD_NOTSET = 0, /* use pads_begin/pads_end */
    PLX_AUTO_PAD_SAME_UPPER = 1,
    PLX_AUTO_PAD_SAME_LOWER = 2,
    PLX_AUTO_PAD_VALID = 3
} plx_auto_pad;

/* Operators with spatial dimensions take 1 (NCW), 2 (NCHW) or, from ABI
 * 1.3, 3 (NCDHW) of them; the spatial rank is the input's rank minus 2.
 * Arrays hold one entry per spatial dimension, in the input's order;
 * entries past the spatial rank are ignored. The arrays of plx_conv_desc,
 * plx_conv_transpose_desc and plx_pool_desc grew from 2 to 3 entries in
 * 1.3, before any version with operator descriptors (1.1 onward) was
 * released (docs/backend-abi.md, version history). */
#define PLX_MAX_SPATIAL 3

typedef struct plx_io_desc {
    uint32_t struct_size;
    int32_t binding_id; /* unique among the network's inputs, or outputs */
} plx_io_desc;
#define PLX_IO_DESC_INIT(binding) {sizeof(plx_io_desc), (binding)}

/* The data of a constant layer lives in the network; a backend's constant
 * workload copies it into its output handle once, at load time. */
typedef struct plx_constant_desc {
    uint32_t struct_size;
    const void *data;   /* byte size of the output's tensor info; valid while the network lives */
} plx_constant_desc;

typedef struct plx_conv_desc {
    uint32_t struct_size;
    int64_t strides[PLX_MAX_SPATIAL];    /* default 1 */
    int64_t dilations[PLX_MAX_SPATIAL];  /* default 1 */
    int64_t pads_begin[PLX_MAX_SPATIAL]; /* default 0; used when auto_pad is NOTSET */
    int64_t pads_end[PLX_MAX_SPATIAL];
    plx_auto_pad auto_pad;
    int64_t group;                       /* default 1; C_in/group channels per group */
} plx_conv_desc;
#define PLX_CONV_DESC_INIT \
    {sizeof(plx_conv_desc), {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, PLX_AUTO_PAD_NOTSET, 1}

/* W is [C_in, C_out/group, (kD,) (kH,) kW]. Output size per spatial dim:
 * stride*(in-1) + output_padding + ((k-1)*dilation+1) - pads_begin - pads_end,
 * unless output_shape is given (non-zero), as in ONNX ConvTranspose. */
typedef struct plx_conv_transpose_desc {
    uint32_t struct_size;
    int64_t strides[PLX_MAX_SPATIAL];
    int64_t dilations[PLX_MAX_SPATIAL];
    int64_t pads_begin[PLX_MAX_SPATIAL];
    int64_t pads_end[PLX_MAX_SPATIAL];
    int64_t output_padding[PLX_MAX_SPATIAL]; /* default 0 */
    int64_t output_shape[PLX_MAX_SPATIAL];   /* 0: computed */
    plx_auto_pad auto_pad;
    int64_t group;
} plx_conv_transpose_desc;
#define PLX_CONV_TRANSPOSE_DESC_INIT \
    {sizeof(plx_conv_transpose_desc), {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, \
     {0, 0, 0}, PLX_AUTO_PAD_NOTSET, 1}

/* Y[n, m] = sum_k X[n, k] * W'[k, m] + B[m], X of rank 2 ([N, K]) or more
 * (flattened to [prod(dims[0..rank-2]), K], Y keeps the leading dims).
 * W' is W ([K, M]) or, when weights_transposed, W is [M, K]. */
typedef struct plx_fully_connected_desc {
    uint32_t struct_size;
    bool weights_transposed;
} plx_fully_connected_desc;
#define PLX_FULLY_CONNECTED_DESC_INIT {sizeof(plx_fully_connected_desc), false}

/* Y = alpha * A' B' + beta * C, A' = A or A^T, B' likewise; C broadcasts
 * to [M, N]. A and B are rank 2. */
typedef struct plx_gemm_desc {
    uint32_t struct_size;
    float alpha; /* default 1 */
    float beta;  /* default 1 */
    bool trans_a;
    bool trans_b;
} plx_gemm_desc;
#define PLX_GEMM_DESC_INIT {sizeof(plx_gemm_desc), 1.0f, 1.0f, false, false}

typedef enum plx_pool_kind {
    PLX_POOL_MAX = 0,
    PLX_POOL_AVERAGE = 1,
    PLX_POOL_LP = 2 /* (sum over the window of |x|^p)^(1/p); padding counts as 0 (ONNX LpPool) */
} plx_pool_kind;

/* Y [N, C, (oD,) (oH,) oW] pools X [N, C, (D,) (H,) W] over windows placed as a
 * convolution's: the maximum, the average, or for lp (sum of |x|^p)^(1/p),
 * where padded positions count as 0 (pads may then reach the kernel's
 * size: a window wholly in the padding gives 0). */
typedef struct plx_pool_desc {
    uint32_t struct_size;
    plx_pool_kind kind;
    int64_t kernel[PLX_MAX_SPATIAL];     /* required, >= 1 */
    int64_t strides[PLX_MAX_SPATIAL];    /* default 1 */
    int64_t dilations[PLX_MAX_SPATIAL];  /* default 1 (average pools from ABI 1.3: 1 before) */
    int64_t pads_begin[PLX_MAX_SPATIAL];
    int64_t pads_end[PLX_MAX_SPATIAL];
    plx_auto_pad auto_pad;
    bool ceil_mode;
    bool count_include_pad;              /* average only */
    int64_t p;                           /* LP only, >= 1; default 2 */
    /* ABI 1.3: a max pool may have a second output, Indices (int64, Y's
     * shape): each maximum's position in X flattened, (n * C + c) * H * W
     * + h * W + w, or with indices_column_major (ONNX storage_order 1)
     * (n * C + c) * H * W + h + w * H; the first maximum in the window's
     * row-major order. (A 3-D pool's Indices: ((n * C + c) * D + d) * H *
     * W + h * W + w; column-major is for 2-D pools.) */
    bool indices_column_major;
} plx_pool_desc;
#define PLX_POOL_DESC_INIT(kind_) \
    {sizeof(plx_pool_desc), (kind_), {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, \
     PLX_AUTO_PAD_NOTSET, false, false, 2, false}

/* Pools over every spatial dimension: Y is [N, C, 1, ...]. */
typedef struct plx_global_pool_desc {
    uint32_t struct_size;
    plx_pool_kind kind;
    int64_t p; /* LP only, >= 1; default 2 */
} plx_global_pool_desc;
#define PLX_GLOBAL_POOL_DESC_INIT(kind_) {sizeof(plx_global_pool_desc), (kind_), 2}

typedef enum plx_activation_func {
    PLX_ACT_RELU = 0,
    PLX_ACT_CLIP = 1,         /* min(max(x, alpha), beta); alpha/beta default -inf/+inf */
    PLX_ACT_LEAKY_RELU = 2,   /* x < 0 ? alpha * x : x; alpha default 0.01 */
    PLX_ACT_ELU = 3,          /* x < 0 ? alpha * (exp(x) - 1) : x; alpha default 1 */
    PLX_ACT_SIGMOID = 4,
    PLX_ACT_HARD_SIGMOID = 5, /* max(0, min(1, alpha * x + beta)); 0.2, 0.5 */
    PLX_ACT_HARD_SWISH = 6,   /* x * max(0, min(1, x / 6 + 0.5)) */
    PLX_ACT_TANH = 7,
    PLX_ACT_GELU = 8,         /* exact (erf); alpha != 0 selects the tanh approximation */
    PLX_ACT_SOFTPLUS = 9,     /* log(1 + exp(x)) */
    PLX_ACT_SELU = 10,        /* beta * (x <= 0 ? alpha * (exp(x) - 1) : x); alpha 1.67326319..., beta (gamma) 1.05070102... */
    PLX_ACT_MISH = 11,        /* x * tanh(softplus(x)) */
    PLX_ACT_SOFTSIGN = 12,    /* x / (1 + |x|) */
    PLX_ACT_THRESHOLDED_RELU = 13, /* x > alpha ? x : 0; alpha default 1 */
    PLX_ACT_CELU = 14,        /* max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); alpha default 1 */
    PLX_ACT_AFFINE = 15,      /* alpha * x + beta (RNN activations); alpha default 1 */
    PLX_ACT_SCALED_TANH = 16, /* alpha * tanh(beta * x) (RNN activations); 1, 1 */
    PLX_ACT_SHRINK = 17       /* x < -alpha ? x + beta : x > alpha ? x - beta : 0 (ONNX Shrink:
                               * alpha = lambd, default 0.5; beta = bias, default 0) */
} plx_activation_func;

typedef struct plx_activation_desc {
    uint32_t struct_size;
    plx_activation_func func;
    float alpha;
    float beta;
} plx_activation_desc;
/* Sets func and its ONNX defaults for alpha and beta (calls functions, so
 * it initialises automatic variables, not static ones). */
#define PLX_ACTIVATION_DESC_INIT(func_) \
    {sizeof(plx_activation_desc), (func_), plx_activation_default_alpha(func_), plx_activation_default_beta(func_)}

/* "relu", "leaky_relu", ...: the lower-case name of an activation; NULL for
 * values out of range (a func this header does not know). */
static inline const char *plx_activation_func_name(plx_activation_func func) {
    static const char *const names[] = {"relu", "clip", "leaky_relu", "elu", "sigmoid",
                                        "hard_sigmoid", "hard_swish", "tanh", "gelu",
                                        "softplus", "selu", "mish", "softsign",
                                        "thresholded_relu", "celu", "affine", "scaled_tanh",
                                        "shrink"};
    return (unsigned)func < sizeof names / sizeof names[0] ? names[func] : NULL;
}

static inline float plx_activation_default_alpha(plx_activation_func f) {
    switch (f) {
    case PLX_ACT_CLIP: return -INFINITY;
    case PLX_ACT_LEAKY_RELU: return 0.01f;
    case PLX_ACT_ELU: return 1.0f;
    case PLX_ACT_HARD_SIGMOID: return 0.2f;
    case PLX_ACT_SHRINK: return 0.5f;
    case PLX_ACT_SELU: return 1.67326319217681884765625f;
    case PLX_ACT_THRESHOLDED_RELU:
    case PLX_ACT_CELU:
    case PLX_ACT_AFFINE:
    case PLX_ACT_SCALED_TANH: return 1.0f;
    default: return 0.0f;
    }
}
static inline float plx_activation_default_beta(plx_activation_func f) {
    switch (f) {
    case PLX_ACT_CLIP: return INFINITY;
    case PLX_ACT_HARD_SIGMOID: return 0.5f;
    case PLX_ACT_SELU: return 1.05070102214813232421875f;
    case PLX_ACT_SCALED_TANH: return 1.0f;
    default: return 0.0f;
    }
}

typedef enum plx_binary_func {
    PLX_BINARY_ADD = 0,
    PLX_BINARY_SUB = 1,
    PLX_BINARY_MUL = 2,
    PLX_BINARY_DIV = 3,     /* integer division truncates toward zero; x/0 is an execution error */
    PLX_BINARY_POW = 4,
    PLX_BINARY_MAX = 5,
    PLX_BINARY_MIN = 6,
    PLX_BINARY_EQUAL = 7,   /* output bool */
    PLX_BINARY_LESS = 8,    /* output bool */
    PLX_BINARY_GREATER = 9, /* output bool */
    PLX_BINARY_PRELU = 10,  /* A < 0 ? B * A : A; B (the slope) broadcasts to A's shape */
    PLX_BINARY_AND = 11,    /* bool inputs and output */
    PLX_BINARY_OR = 12,     /* bool */
    PLX_BINARY_XOR = 13,    /* bool */
    PLX_BINARY_GREATER_EQUAL = 14, /* output bool */
    PLX_BINARY_LESS_EQUAL = 15,    /* output bool */
    PLX_BINARY_MOD = 16,    /* integers: sign of the divisor (Python %, ONNX fmod=0); floats: fmod (sign of the dividend); x%0 is an execution error for integers */
    PLX_BINARY_BITWISE_AND = 17, /* integer types */
    PLX_BINARY_BITWISE_OR = 18,  /* integer types */
    PLX_BINARY_BITWISE_XOR = 19, /* integer types */
    PLX_BINARY_SHIFT_LEFT = 20,  /* A << B, unsigned types (uint8); a shift >= the bit width gives 0 */
    PLX_BINARY_SHIFT_RIGHT = 21  /* A >> B (logical), unsigned types (uint8); a shift >= the bit width gives 0 */
} plx_binary_func;

typedef struct plx_binary_desc {
    uint32_t struct_size;
    plx_binary_func func;
} plx_binary_desc;
#define PLX_BINARY_DESC_INIT(func_) {sizeof(plx_binary_desc), (func_)}

/* "add", "greater_equal", ...: the lower-case name of a binary function;
 * NULL for values out of range. */
static inline const char *plx_binary_func_name(plx_binary_func func) {
    static const char *const names[] = {"add", "sub", "mul", "div", "pow", "max",
                                        "min", "equal", "less", "greater", "prelu", "and",
                                        "or", "xor", "greater_equal", "less_equal", "mod",
                                        "bitwise_and", "bitwise_or", "bitwise_xor",
                                        "shift_left", "shift_right"};
    return (unsigned)func < sizeof names / sizeof names[0] ? names[func] : NULL;
}

/* True for the comparisons (equal, less, greater, greater_equal,
 * less_equal), whose output is bool whatever the inputs' dtype. */
static inline bool plx_binary_func_is_compare(plx_binary_func func) {
    return func == PLX_BINARY_EQUAL || func == PLX_BINARY_LESS || func == PLX_BINARY_GREATER ||
           func == PLX_BINARY_GREATER_EQUAL || func == PLX_BINARY_LESS_EQUAL;
}

/* True for the logical functions (and, or, xor): bool inputs and output. */
static inline bool plx_binary_func_is_logical(plx_binary_func func) {
    return func == PLX_BINARY_AND || func == PLX_BINARY_OR || func == PLX_BINARY_XOR;
}

/* True for the bitwise functions (bitwise_and, bitwise_or, bitwise_xor,
 * shift_left, shift_right): integer inputs, output of their dtype. */
static inline bool plx_binary_func_is_bitwise(plx_binary_func func) {
    return func >= PLX_BINARY_BITWISE_AND && func <= PLX_BINARY_SHIFT_RIGHT;
}

typedef enum plx_unary_func {
    PLX_UNARY_ABS = 0,
    PLX_UNARY_NEG = 1,
    PLX_UNARY_SQRT = 2,
    PLX_UNARY_RECIPROCAL = 3,
    PLX_UNARY_EXP = 4,
    PLX_UNARY_LOG = 5,
    PLX_UNARY_ERF = 6,
    PLX_UNARY_FLOOR = 7,
    PLX_UNARY_CEIL = 8,
    PLX_UNARY_NOT = 9, /* bool only */
    PLX_UNARY_SIN = 10, /* float types from here to ROUND */
    PLX_UNARY_COS = 11,
    PLX_UNARY_TAN = 12,
    PLX_UNARY_ASIN = 13,
    PLX_UNARY_ACOS = 14,
    PLX_UNARY_ATAN = 15,
    PLX_UNARY_SINH = 16,
    PLX_UNARY_COSH = 17,
    PLX_UNARY_ASINH = 18,
    PLX_UNARY_ACOSH = 19,
    PLX_UNARY_ATANH = 20,
    PLX_UNARY_ROUND = 21, /* halves to even */
    PLX_UNARY_SIGN = 22,  /* -1, 0 or 1; float and signed integer types */
    PLX_UNARY_IS_NAN = 23,     /* float types; output bool */
    PLX_UNARY_IS_INF = 24,     /* float types; output bool: +inf or -inf */
    PLX_UNARY_IS_POS_INF = 25, /* float types; output bool: +inf */
    PLX_UNARY_IS_NEG_INF = 26, /* float types; output bool: -inf */
    PLX_UNARY_BITWISE_NOT = 27 /* integer types: ~x */
} plx_unary_func;

typedef struct plx_unary_desc {
    uint32_t struct_size;
    plx_unary_func func;
} plx_unary_desc;
#define PLX_UNARY_DESC_INIT(func_) {sizeof(plx_unary_desc), (func_)}

/* True for is_nan, is_inf, is_pos_inf and is_neg_inf, whose output is
 * bool whatever the input's dtype. */
static inline bool plx_unary_func_is_test(plx_unary_func func) {
    return func == PLX_UNARY_IS_NAN || func == PLX_UNARY_IS_INF || func == PLX_UNARY_IS_POS_INF ||
           func == PLX_UNARY_IS_NEG_INF;
}

/* "abs", "reciprocal", ...: the lower-case name of a unary function; NULL
 * for values out of range. */
static inline const char *plx_unary_func_name(plx_unary_func func) {
    static const char *const names[] = {"abs", "neg", "sqrt", "reciprocal", "exp", "log",
                                        "erf", "floor", "ceil", "not", "sin", "cos",
                                        "tan", "asin", "acos", "atan", "sinh", "cosh",
                                        "asinh", "acosh", "atanh", "round", "sign",
                                        "is_nan", "is_inf", "is_pos_inf", "is_neg_inf",
                                        "bitwise_not"};
    return (unsigned)func < sizeof names / sizeof names[0] ? names[func] : NULL;
}

/* Inference batch normalisation over channel axis 1:
 * Y = (X - mean) / sqrt(var + epsilon) * scale + bias. */
typedef struct plx_batch_norm_desc {
    uint32_t struct_size;
    float epsilon; /* default 1e-5 */
} plx_batch_norm_desc;
#define PLX_BATCH_NORM_DESC_INIT {sizeof(plx_batch_norm_desc), 1e-5f}

/* Normalises over the dims from `axis` to the last (ONNX LayerNormalization);
 * scale and bias have those dims' shape (or broadcast to it). */
typedef struct plx_layer_norm_desc {
    uint32_t struct_size;
    int32_t axis;  /* default -1 */
    float epsilon; /* default 1e-5 */
} plx_layer_norm_desc;
#define PLX_LAYER_NORM_DESC_INIT {sizeof(plx_layer_norm_desc), -1, 1e-5f}

/* Softmax (or log-softmax) along one axis (ONNX opset 13 semantics). */
typedef struct plx_softmax_desc {
    uint32_t struct_size;
    int32_t axis; /* default -1 */
    bool log;
} plx_softmax_desc;
#define PLX_SOFTMAX_DESC_INIT {sizeof(plx_softmax_desc), -1, false}

typedef enum plx_reduce_func {
    PLX_REDUCE_MEAN = 0,
    PLX_REDUCE_MAX = 1,
    PLX_REDUCE_MIN = 2,
    PLX_REDUCE_SUM = 3,
    PLX_REDUCE_PROD = 4,
    PLX_REDUCE_L1 = 5,        /* sum |x| */
    PLX_REDUCE_L2 = 6,        /* sqrt(sum x^2) */
    PLX_REDUCE_SUM_SQUARE = 7,
    PLX_REDUCE_LOG_SUM = 8,   /* log(sum x) */
    PLX_REDUCE_LOG_SUM_EXP = 9 /* log(sum exp(x)), computed stably */
} plx_reduce_func;

/* Reduces over `axes` (all axes when axis_count is 0, unless
 * noop_with_empty_axes, which makes it an identity). */
typedef struct plx_reduce_desc {
    uint32_t struct_size;
    plx_reduce_func func;
    int32_t axes[PLX_MAX_RANK];
    uint32_t axis_count;
    bool keepdims; /* default true */
    bool noop_with_empty_axes;
} plx_reduce_desc;
#define PLX_REDUCE_DESC_INIT(func_) {sizeof(plx_reduce_desc), (func_), {0}, 0, true, false}

/* ONNX Reshape: a 0 copies the input's dim (unless allow_zero), one -1 is
 * inferred. */
typedef struct plx_reshape_desc {
    uint32_t struct_size;
    int64_t dims[PLX_MAX_RANK];
    uint32_t rank;
    bool allow_zero;
} plx_reshape_desc;
#define PLX_RESHAPE_DESC_INIT {sizeof(plx_reshape_desc), {0}, 0, false}

/* One axis: flatten (default 1), concat, gather and gather_elements
 * (default 0), hardmax (default -1). Hardmax (ONNX opset 13): X float32, float16 or bfloat16,
 * Y of X's shape and dtype, 1 at the first maximum of X along the axis
 * (a NaN counts as larger than every number, as numpy's argmax) and 0
 * elsewhere. */
typedef struct plx_axis_desc {
    uint32_t struct_size;
    int32_t axis;
} plx_axis_desc;
#define PLX_AXIS_DESC_INIT(axis_) {sizeof(plx_axis_desc), (axis_)}

/* perm_count 0: reverse the dimensions, as ONNX's default. */
typedef struct plx_transpose_desc {
    uint32_t struct_size;
    uint32_t perm[PLX_MAX_RANK];
    uint32_t perm_count;
} plx_transpose_desc;
#define PLX_TRANSPOSE_DESC_INIT {sizeof(plx_transpose_desc), {0}, 0}

/* The layer's output count is the number of parts. `sizes` has one entry
 * per output (summing to the axis' size), or is NULL for equal parts (the
 * last one smaller when the size does not divide, as ONNX opset 18). */
typedef struct plx_split_desc {
    uint32_t struct_size;
    int32_t axis;
    const int64_t *sizes;
} plx_split_desc;
#define PLX_SPLIT_DESC_INIT(axis_) {sizeof(plx_split_desc), (axis_), NULL}

/* ONNX Slice: for each of `count` entries, axis axes[i] from starts[i] to
 * ends[i] (exclusive) by steps[i]; negative starts/ends count from the end,
 * out-of-range values are clamped. */
typedef struct plx_slice_desc {
    uint32_t struct_size;
    int64_t starts[PLX_MAX_RANK];
    int64_t ends[PLX_MAX_RANK];
    int32_t axes[PLX_MAX_RANK];
    int64_t steps[PLX_MAX_RANK]; /* non-zero */
    uint32_t count;
} plx_slice_desc;
#define PLX_SLICE_DESC_INIT {sizeof(plx_slice_desc), {0}, {0}, {0}, {1, 1, 1, 1, 1, 1, 1, 1}, 0}

typedef enum plx_pad_mode {
    PLX_PAD_CONSTANT = 0,
    PLX_PAD_REFLECT = 1,
    PLX_PAD_EDGE = 2,
    /* ABI 1.3: the dim repeated periodically (numpy "wrap"); pads >= 0 */
    PLX_PAD_WRAP = 3
} plx_pad_mode;

/* Pads every dimension i by pads_begin[i] before and pads_end[i] after
 * (negative values crop, as in ONNX). */
typedef struct plx_pad_desc {
    uint32_t struct_size;
    plx_pad_mode mode;
    int64_t pads_begin[PLX_MAX_RANK];
    int64_t pads_end[PLX_MAX_RANK];
    double value; /* constant mode; converted to the tensor's dtype */
} plx_pad_desc;
#define PLX_PAD_DESC_INIT(mode_) {sizeof(plx_pad_desc), (mode_), {0}, {0}, 0.0}

/* A list of axes: squeeze, unsqueeze. */
typedef struct plx_axes_desc {
    uint32_t struct_size;
    int32_t axes[PLX_MAX_RANK];
    uint32_t axis_count;
} plx_axes_desc;
#define PLX_AXES_DESC_INIT {sizeof(plx_axes_desc), {0}, 0}

/* A target shape: expand. */
typedef struct plx_shape_desc {
    uint32_t struct_size;
    int64_t dims[PLX_MAX_RANK];
    uint32_t rank;
} plx_shape_desc;
#define PLX_SHAPE_DESC_INIT {sizeof(plx_shape_desc), {0}, 0}

/* Float to integer truncates toward zero (saturation is not defined by
 * ONNX and not relied on); anything to bool is x != 0. To a float8 type
 * (ABI 1.3) rounds to nearest even; `saturate` (appended in 1.3, at the
 * 1.2 `sizeof`; default true, ONNX Cast's saturate) decides what lies
 * beyond the type's largest finite value: true gives that value with the
 * sign, false infinity (float8e5m2) or NaN (the others), as
 * plx_float32_to_float8 (tensor.h). It applies only to float8 targets. */
typedef struct plx_cast_desc {
    uint32_t struct_size;
    plx_dtype to;
    bool saturate;
} plx_cast_desc;
#define PLX_CAST_DESC_INIT(to_) {sizeof(plx_cast_desc), (to_), true}

/* How resize interpolates. The antialiased modes (ONNX's antialias = 1)
 * are values of their own rather than a flag, so that a backend that
 * predates them refuses them (R-19 (3)) instead of running plain linear
 * or cubic. */
typedef enum plx_resize_mode {
    PLX_RESIZE_NEAREST = 0,
    PLX_RESIZE_LINEAR = 1,           /* bilinear over H and W */
    /* ABI 1.3: */
    PLX_RESIZE_CUBIC = 2,            /* bicubic: Keys' cubic convolution with a = cubic_coeff_a */
    PLX_RESIZE_LINEAR_ANTIALIAS = 3, /* linear, its filter stretched by 1 / scale when downscaling */
    PLX_RESIZE_CUBIC_ANTIALIAS = 4   /* cubic, likewise */
} plx_resize_mode;

/* ONNX's coordinate_transformation_mode: the input coordinate x_in of
 * output index x along a dim of `in` elements resized by `scale` to
 * `out` (the descriptor's scale, else out / in; out_len = scale * in):
 * half_pixel (x + 0.5) / scale - 0.5; asymmetric x / scale; align_corners
 * x * (in - 1) / (out_len - 1), 0 when out_len is 1; pytorch_half_pixel
 * as half_pixel, -0.5 when out_len is 1; tf_half_pixel_for_nn (x + 0.5) /
 * scale; half_pixel_symmetric half_pixel shifted by in / 2 * (1 - out /
 * out_len); tf_crop_and_resize start * (in - 1) + x * (end - start) * (in
 * - 1) / (out_len - 1), or (start + end) / 2 * (in - 1) when out_len is 1,
 * with start and end the dim's `roi`, and a point outside [0, in - 1]
 * takes `extrapolation_value`. */
typedef enum plx_resize_coord {
    PLX_RESIZE_COORD_HALF_PIXEL = 0,
    PLX_RESIZE_COORD_ASYMMETRIC = 1,
    PLX_RESIZE_COORD_ALIGN_CORNERS = 2,
    PLX_RESIZE_COORD_PYTORCH_HALF_PIXEL = 3,
    PLX_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN = 4,
    /* ABI 1.3: */
    PLX_RESIZE_COORD_HALF_PIXEL_SYMMETRIC = 5,
    PLX_RESIZE_COORD_TF_CROP_AND_RESIZE = 6
} plx_resize_coord;

typedef enum plx_resize_nearest {
    PLX_RESIZE_NEAREST_ROUND_PREFER_FLOOR = 0,
    PLX_RESIZE_NEAREST_ROUND_PREFER_CEIL = 1,
    PLX_RESIZE_NEAREST_FLOOR = 2,
    PLX_RESIZE_NEAREST_CEIL = 3
} plx_resize_nearest;

/* Resizes the last two dims (H, W) of an NCHW tensor, each on its own
 * (ONNX Resize, opsets 10 to 19, on H and W). sizes (both non-zero) give
 * the output size, else scales (both > 0) do, as floor(in * scale); a
 * scale above 0 also maps coordinates, even where sizes give the size
 * (ONNX's keep_aspect_ratio_policy: one scale for both dims, the output
 * rounded), else out / in does.
 *
 * Along each dim an output point reads the input points around its
 * coordinate x_in (plx_resize_coord): nearest one, rounded by `nearest`;
 * linear 2 and cubic 4, the ones nearest x_in (the lower on ties), with
 * the weights 1 - t, t (t = x_in - floor) and Keys' cubic convolution
 * kernel of `cubic_coeff_a`. The antialiased modes, when downscaling
 * (scale < 1), weigh every input point within 1 / scale (linear) or 2 /
 * scale (cubic) of x_in by the kernel at scale * distance, the weights
 * divided by their sum; at scale >= 1 they are linear and cubic. Points
 * outside the input read its edge, or with exclude_outside (cubic and
 * the antialiased modes; linear reads the same either way, nearest
 * ignores it) weigh 0, the other weights divided by their sum. */
typedef struct plx_resize_desc {
    uint32_t struct_size;
    plx_resize_mode mode;
    plx_resize_coord coord;
    plx_resize_nearest nearest;
    float scales[2];
    int64_t sizes[2];
    /* ABI 1.3 (from the 1.2 sizeof, R-1 (4)); each field matters only
     * with the 1.3 enum values named, so that a backend that predates
     * them, and refuses those values, may ignore them. */
    float cubic_coeff_a;   /* the cubic modes; default -0.75 */
    bool exclude_outside;  /* the cubic and antialiased modes; default false */
    float roi_start[2];    /* tf_crop_and_resize: the crop of H and W in [0, 1] units; default 0 */
    float roi_end[2];      /* default 1 */
    float extrapolation_value; /* tf_crop_and_resize; default 0 */
} plx_resize_desc;
/* "nearest", "cubic_antialias", ... and "half_pixel", "tf_crop_and_resize",
 * ...: the lower-case names of a resize mode and coordinate
 * transformation (ONNX's, the antialiased modes suffixed); NULL for
 * values out of range. */
static inline const char *plx_resize_mode_name(plx_resize_mode m) {
    static const char *const names[] = {"nearest", "linear", "cubic", "linear_antialias",
                                        "cubic_antialias"};
    return (unsigned)m < sizeof names / sizeof names[0] ? names[m] : NULL;
}
static inline const char *plx_resize_coord_name(plx_resize_coord c) {
    static const char *const names[] = {"half_pixel", "asymmetric", "align_corners",
                                        "pytorch_half_pixel", "tf_half_pixel_for_nn",
                                        "half_pixel_symmetric", "tf_crop_and_resize"};
    return (unsigned)c < sizeof names / sizeof names[0] ? names[c] : NULL;
}

#define PLX_RESIZE_DESC_INIT(mode_) \
    {sizeof(plx_resize_desc), (mode_), PLX_RESIZE_COORD_HALF_PIXEL, \
     PLX_RESIZE_NEAREST_ROUND_PREFER_FLOOR, {0, 0}, {0, 0}, -0.75f, false, {0, 0}, {1, 1}, 0.0f}

typedef enum plx_depth_space_mode {
    PLX_DEPTH_SPACE_DCR = 0, /* depth-column-row (ONNX default) */
    PLX_DEPTH_SPACE_CRD = 1  /* column-row-depth; depth-to-space only */
} plx_depth_space_mode;

typedef struct plx_depth_space_desc {
    uint32_t struct_size;
    int64_t block_size;
    plx_depth_space_mode mode;
} plx_depth_space_desc;
#define PLX_DEPTH_SPACE_DESC_INIT(block_) {sizeof(plx_depth_space_desc), (block_), PLX_DEPTH_SPACE_DCR}

/* Linear (de)quantization with scale and zero-point inputs, per tensor
 * (scalar scale) or per axis (1-D scale along `axis`):
 * quantize: y = saturate(round_half_even(x / scale) + zero_point);
 * dequantize: y = (x - zero_point) * scale. Quantize's output dtype is the
 * zero point's (uint8 when absent); `output_dtype` must agree.
 * ABI 1.3: the quantized dtype may be a float8 type. Quantize then makes
 * x / scale + zero_point (the zero point decoded, ONNX requires it 0) as
 * cast to that type with `saturate` (appended in 1.3, at the 1.2 `sizeof`;
 * default true) would; `saturate` applies to float8 outputs only.
 * ABI 1.3, blocked quantization (ONNX opset 21): with `block_size` B > 0
 * (appended in 1.3; 0, the default, is per tensor or per axis as above),
 * the scale and the zero point have X's shape but ceil(X.dims[axis] / B)
 * along `axis`, and element x[..., i, ...] (i along the axis) takes entry
 * [..., i / B, ...]. A backend that does not run it refuses a layer whose
 * block_size is not 0. */
typedef struct plx_quantize_desc {
    uint32_t struct_size;
    int32_t axis; /* default 1 */
    plx_dtype output_dtype; /* quantize: uint8, int8 or (ABI 1.3) uint16, int16 or a float8 type; dequantize: the scale's */
    bool saturate;
    int64_t block_size; /* ABI 1.3; default 0 */
} plx_quantize_desc;
#define PLX_QUANTIZE_DESC_INIT(out_) {sizeof(plx_quantize_desc), 1, (out_), true, 0}

/* Quantized layers (ABI 1.3). conv, matmul and gemm also run on quantized
 * tensors, with the quantization on the tensor infos (tensor.h):
 *   - X (conv) or A (matmul, gemm): int8 or uint8, per-tensor parameters;
 *   - W (conv) or B (matmul, gemm): int8 or uint8, per-tensor parameters or
 *     per axis along the output channels (conv: axis 0; matmul: B's last
 *     axis; gemm: axis 0 when trans_b, else 1);
 *   - conv's B and gemm's C (bias): int32, one per output channel ([M];
 *     gemm [N] or [1, N]), in units of X's scale times W's scale of its
 *     channel, zero point 0 (its quantization, if any, is not read); gemm's
 *     alpha and beta are 1;
 *   - Y: int8 or uint8 with per-tensor parameters, which the builder sets
 *     (plx_network_set_output_info): they are not a function of the
 *     inputs', so shape inference cannot give them and fails without.
 * With real(q) = (q - zero_point) * scale, Y is the float layer's result
 * requantized: Y = saturate(round_half_even(acc * sx * sw[c] / sy) + zy),
 * acc = sum (x - zx)(w - zw[c]) + B[c], the product computed in float32 as
 * (float)acc * (sx * sw[c] / sy). Padding of a quantized conv is zx (the
 * real value 0).
 *
 * global_pool average and pool average on int8/uint8 X with per-tensor
 * parameters are the mean of the real values (a pool's taps counted as in
 * float32), requantized into Y's (preset by the builder; Y's dtype may
 * differ from X's): Y = saturate(round_half_even((float)(sum (x - zx) *
 * sx / count) / sy) + zy), the sum exact and the mean rounded once to
 * float32; a window with no tap counted gives zy. Max pooling of
 * int8/uint8 keeps X's parameters.
 *
 * concat on quantized tensors: every input int8 or uint8 with per-tensor
 * parameters (dtypes may mix) and Y int8 or uint8 with per-tensor
 * parameters that the builder sets, some input's dtype or parameters not
 * Y's: an input with Y's is copied, every other requantized value by value,
 * y = saturate(round_half_even((float)(x - zx) * sx / sy) + zy) in
 * float32, what dequantize, a float concat and quantize give (and ONNX
 * Runtime's QLinearConcat). Such a concat computes: it never runs in place.
 *
 * binary add, sub and mul also compute on quantized tensors when A, B and
 * Y are all int8/uint8 with per-tensor parameters (the builder sets Y's):
 * Y = saturate(round_half_even(f((a - za) * sa, (b - zb) * sb) / sy) + zy)
 * in float32, what dequantize, the float layer and quantize give. Without
 * quantization parameters an integer binary layer computes on the integers.
 *
 * matmul_integer and conv_integer are ONNX's MatMulInteger and
 * ConvInteger: the exact int32 sum of (a - a_zero_point)(b - b_zero_point)
 * with zero points from tensors (which may be computed at run time, as
 * dynamic_quantize computes them): A's or X's a scalar (or, for matmul,
 * one per row of A, [M]), B's or W's a scalar or one per output column
 * (matmul: [N]) or output channel (conv: [M]), each of its operand's dtype;
 * absent ones are 0. conv_integer has no bias.
 *
 * dynamic_quantize is ONNX's DynamicQuantizeLinear: with lo = min(0,
 * min(X)) and hi = max(0, max(X)), Y_scale = (hi - lo) / 255 (float32
 * scalar, rank 0), Y_zero_point = saturate(round_half_even(-lo /
 * Y_scale)) (uint8 scalar) and Y = saturate(round_half_even(X / Y_scale) +
 * Y_zero_point) (uint8, X's shape). Where hi == lo (X all zeros) the
 * scale is 1, as ONNX Runtime makes it (ONNX divides by zero there); NaN
 * or infinity in X is an execution error. */

typedef enum plx_rnn_direction {
    PLX_RNN_FORWARD = 0,
    PLX_RNN_REVERSE = 1,
    PLX_RNN_BIDIRECTIONAL = 2 /* num_directions = 2: forward is direction 0 */
} plx_rnn_direction;

/* One activation of a recurrent cell: a function of plx_activation_func
 * (relu, tanh, sigmoid, affine, leaky_relu, thresholded_relu,
 * scaled_tanh, hard_sigmoid, elu, softsign, softplus) with its alpha and
 * beta, as ONNX's activations / activation_alpha / activation_beta. */
typedef struct plx_rnn_activation {
    plx_activation_func func;
    float alpha;
    float beta;
} plx_rnn_activation;

/* ONNX LSTM (layout 0: X is [seq_length, batch, input_size]). Every input
 * slot is present (an importer supplies ONNX's defaults for absent ones):
 * W [D, 4H, I], R [D, 4H, H], B [D, 8H] ([Wb, Rb]), sequence_lens int32
 * [batch] (each 0 < len <= seq_length; a value out of range is an
 * execution error), initial_h and initial_c [D, batch, H], P [D, 3H]
 * ([Pi, Po, Pf]); gate order i, o, f, c; D is 2 when bidirectional, else
 * 1 (direction 0 forward, 1 reverse). A reverse direction runs each batch
 * entry's own steps, len-1 down to 0. Outputs Y [seq_length, D, batch, H]
 * (zero past a batch entry's length), Y_h and Y_c [D, batch, H] (the state
 * after each direction's last step run: t = len-1 forward, t = 0
 * reverse). float32. */
typedef struct plx_lstm_desc {
    uint32_t struct_size;
    plx_rnn_direction direction;
    int64_t hidden_size;
    /* Per direction: f (gates), g (cell input), h (output); defaults
     * sigmoid, tanh, tanh. Only the first D rows are used (and checked);
     * alpha and beta must be finite. */
    plx_rnn_activation activations[2][3];
    /* > 0: the input of every gate's activation (i, o, f, c; not h's Ct)
     * is clipped to [-clip, clip], as ONNX Runtime does; 0: none. */
    float clip;
    /* Couples the input and forget gates: ft = 1 - it (Pf unused), as ONNX
     * Runtime does. */
    bool input_forget;
} plx_lstm_desc;

/* ONNX GRU (layout 0), every input slot present as for LSTM: W [D, 3H, I],
 * R [D, 3H, H], B [D, 6H] ([Wb, Rb]), sequence_lens int32 [batch],
 * initial_h [D, batch, H]; gate order z, r, h. Outputs Y [seq_length, D,
 * batch, H] and Y_h [D, batch, H]. Directions, lengths and zeros past
 * them as for LSTM. float32. */
typedef struct plx_gru_desc {
    uint32_t struct_size;
    plx_rnn_direction direction;
    int64_t hidden_size;
    /* Per direction: f (gates), g (hidden); defaults sigmoid, tanh. Only
     * the first D rows are used (and checked). */
    plx_rnn_activation activations[2][2];
    float clip; /* as LSTM's: the inputs of z's, r's and h's activations */
    /* false: ht = g(Xt*Wh^T + (rt (.) Ht-1)*Rh^T + Rbh + Wbh);
     * true: ht = g(Xt*Wh^T + rt (.) (Ht-1*Rh^T + Rbh) + Wbh). */
    bool linear_before_reset;
} plx_gru_desc;

/* Sets the ONNX default activations (both directions). */
static inline void plx_rnn_default_activations(plx_rnn_activation *acts, uint32_t per_direction) {
    for (uint32_t d = 0; d < 2; d++) {
        for (uint32_t k = 0; k < per_direction; k++) {
            plx_activation_func f = k == 0 ? PLX_ACT_SIGMOID : PLX_ACT_TANH;
            plx_rnn_activation a = {f, plx_activation_default_alpha(f), plx_activation_default_beta(f)};
            acts[d * per_direction + k] = a;
        }
    }
}

/* Y = X repeated repeats[i] times along each dim i (one entry per dim of
 * X, each >= 0; the entries past X's rank must keep the default 1, so that
 * repeats written for a tensor of another rank are refused). */
typedef struct plx_tile_desc {
    uint32_t struct_size;
    int64_t repeats[PLX_MAX_RANK];
} plx_tile_desc;
#define PLX_TILE_DESC_INIT {sizeof(plx_tile_desc), {1, 1, 1, 1, 1, 1, 1, 1}}

/* ONNX ArgMax (select_min false) and ArgMin: int64 indices along `axis`;
 * ties give the first index, or the last with select_last_index. A NaN
 * wins over every number in both, as numpy's argmax and argmin. */
typedef struct plx_arg_reduce_desc {
    uint32_t struct_size;
    bool select_min;
    int32_t axis;     /* default 0 */
    bool keepdims;    /* default true */
    bool select_last_index;
} plx_arg_reduce_desc;
#define PLX_ARG_REDUCE_DESC_INIT(min_) {sizeof(plx_arg_reduce_desc), (min_), 0, true, false}

/* ONNX TopK: the k largest (or smallest) values along `axis` and their
 * int64 indices; equal values keep the lower index first, and a NaN
 * counts as larger than every number. Outputs are sorted (largest first,
 * or smallest first) whether or not `sorted` is set (ONNX leaves the order
 * open when it is not). */
typedef struct plx_topk_desc {
    uint32_t struct_size;
    int64_t k;        /* 0 <= k <= dims[axis] */
    int32_t axis;     /* default -1 */
    bool largest;     /* default true */
    bool sorted;      /* default true */
} plx_topk_desc;
#define PLX_TOPK_DESC_INIT(k_) {sizeof(plx_topk_desc), (k_), -1, true, true}

/* ONNX InstanceNormalization: X [N, C, ...], scale and bias [C]; each
 * (n, c) plane normalised by its own mean and variance. */
typedef struct plx_instance_norm_desc {
    uint32_t struct_size;
    float epsilon; /* default 1e-5 */
} plx_instance_norm_desc;
#define PLX_INSTANCE_NORM_DESC_INIT {sizeof(plx_instance_norm_desc), 1e-5f}

/* How scatter_elements and scatter_nd combine an update u with the value
 * x already at its place (ONNX's `reduction`): none writes u; add x + u;
 * mul x * u; max and min the larger or smaller, a NaN winning (numpy's
 * maximum and minimum). Integers wrap modulo 2^bits; float16 and bfloat16
 * compute in float32 and round once; on bool add and max are "or", mul
 * and min "and" (numpy's bool arithmetic). */
typedef enum plx_scatter_reduction {
    PLX_SCATTER_NONE = 0,
    PLX_SCATTER_ADD = 1,
    PLX_SCATTER_MUL = 2,
    PLX_SCATTER_MAX = 3,
    PLX_SCATTER_MIN = 4
} plx_scatter_reduction;

/* ONNX ScatterElements (and the deprecated Scatter) and ScatterND: Y is a
 * copy of data in which the updates are combined (`reduction`) into the
 * places the indices name; negative indices count from the end, an index
 * out of range is an execution error.
 * scatter_elements: indices and updates have one shape, of data's rank,
 * each dim other than `axis` at most data's; the update at position p goes
 * to p with p[axis] replaced by indices[p].
 * scatter_nd: indices is [i0, .., iq-2, k] with k <= data's rank r, updates
 * [i0, .., iq-2, data.dims[k..r-1]]; each k-tuple of indices names a slice
 * data[t0, .., tk-1, ...], which the matching slice of updates goes to.
 * Updates are applied in order (row-major over updates), so with
 * duplicate indices and reduction none, which ONNX leaves undefined, the
 * last one wins; the reductions are applied in that order too. */
typedef struct plx_scatter_desc {
    uint32_t struct_size;
    int32_t axis; /* scatter_elements only (scatter_nd needs 0); default 0 */
    plx_scatter_reduction reduction; /* default none */
} plx_scatter_desc;
#define PLX_SCATTER_DESC_INIT {sizeof(plx_scatter_desc), 0, PLX_SCATTER_NONE}

/* "none", "add", ...: the lower-case name of a reduction (ONNX's
 * attribute value); NULL for values out of range. */
static inline const char *plx_scatter_reduction_name(plx_scatter_reduction r) {
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : NULL;
}

/* ONNX GatherND: data of rank r, indices of rank q >= 1 whose last dim k
 * (1 <= k <= r - batch_dims) holds index tuples into data's dims
 * batch_dims..batch_dims+k-1; the first batch_dims dims of data and
 * indices are equal and index both. Y is [indices.dims[0..q-2],
 * data.dims[batch_dims+k..r-1]]: for each tuple, the slice it names.
 * Negative indices count from the end; one out of range is an execution
 * error. (gather_elements, ONNX GatherElements, takes plx_axis_desc:
 * Y[p] = data[p with p[axis] replaced by indices[p]], indices of data's
 * rank with each dim other than axis at most data's; axis default 0.) */
typedef struct plx_gather_nd_desc {
    uint32_t struct_size;
    int32_t batch_dims; /* default 0; 0 <= batch_dims < min(r, q) */
} plx_gather_nd_desc;
#define PLX_GATHER_ND_DESC_INIT {sizeof(plx_gather_nd_desc), 0}
/* ONNX Trilu: X of rank >= 2, any dtype, taken as a batch of matrices
 * over its last two dims; Y (X's shape and dtype) keeps the elements of
 * each matrix on and above (upper) or on and below (lower) the k-th
 * diagonal, and is 0 elsewhere: element (i, j) is kept when j - i >= k
 * (upper) or j - i <= k (lower). k > 0 counts diagonals above the main
 * one, k < 0 below; any value (past the matrix it keeps all or none). */
typedef struct plx_trilu_desc {
    uint32_t struct_size;
    bool upper; /* default true */
    int64_t k;  /* default 0 */
} plx_trilu_desc;
#define PLX_TRILU_DESC_INIT {sizeof(plx_trilu_desc), true, 0}

/* ONNX OneHot: inputs indices (any numeric dtype; floats are truncated
 * toward zero) and values (rank 1, 2 elements: [off, on], any dtype). Y
 * has values' dtype and indices' shape with a dim of `depth` inserted at
 * `axis` (in [-r-1, r] for indices of rank r; negative counts from the
 * end of Y). Y is `on` where the position along axis equals the index,
 * `off` elsewhere. Indices in [-depth, -1] count from the end (index +
 * depth); indices outside [-depth, depth - 1] (NaN and infinities
 * included) give a row of `off` only, not an error. */
typedef struct plx_one_hot_desc {
    uint32_t struct_size;
    int32_t axis;  /* default -1 */
    int64_t depth; /* >= 1 */
} plx_one_hot_desc;
#define PLX_ONE_HOT_DESC_INIT(depth_) {sizeof(plx_one_hot_desc), -1, (depth_)}

/* ONNX CumSum: Y[..., j, ...] is the sum of X[..., i, ...] along `axis`
 * for i <= j (i < j when exclusive; i >= j, or i > j, when reverse); an
 * exclusive sum's first element (last when reverse) is 0. X and Y have
 * the same shape and dtype: float32, float16, bfloat16 (summed in
 * float32), int32 or int64 (which wrap on overflow). */
typedef struct plx_cum_sum_desc {
    uint32_t struct_size;
    int32_t axis;   /* in [-rank, rank - 1]; default 0 */
    bool exclusive; /* default false */
    bool reverse;   /* default false */
} plx_cum_sum_desc;
#define PLX_CUM_SUM_DESC_INIT(axis_) {sizeof(plx_cum_sum_desc), (axis_), false, false}

/* How grid_sample interpolates (ONNX GridSample's mode; opset 16 names
 * them bilinear and bicubic). */
typedef enum plx_grid_sample_mode {
    PLX_GRID_SAMPLE_LINEAR = 0,  /* N-linear over the 2^r nearest points */
    PLX_GRID_SAMPLE_NEAREST = 1, /* the nearest point, halves to even */
    PLX_GRID_SAMPLE_CUBIC = 2    /* N-cubic over 4^r points, Keys' a = -0.75 */
} plx_grid_sample_mode;

/* What grid_sample reads at a point outside X (ONNX's padding_mode). */
typedef enum plx_grid_sample_padding {
    PLX_GRID_SAMPLE_ZEROS = 0,     /* 0 */
    PLX_GRID_SAMPLE_BORDER = 1,    /* the nearest border value */
    PLX_GRID_SAMPLE_REFLECTION = 2 /* X mirrored at its borders, as often as it takes */
} plx_grid_sample_padding;

/* ONNX GridSample (opsets 16 to 22): X [N, C, D1, .., Dr] (r >= 1
 * spatial dims; float32, float16 or bfloat16), grid [N, O1, .., Or, r]
 * (a float type, not necessarily X's) -> Y [N, C, O1, .., Or], X's dtype.
 * grid[n, o1, .., or] holds r coordinates normalised to [-1, 1], the last
 * one along Dr (x, y, z order: reversed against X's dims). A normalised
 * g maps to the input coordinate ((g + 1) * D - 1) / 2, or with
 * align_corners (g + 1) / 2 * (D - 1), computed in float32 as ONNX's
 * reference does. The borders are [-0.5, D - 0.5] ([0, D - 1] with
 * align_corners): border padding clamps a coordinate outside them to
 * [0, D - 1], reflection mirrors it at them until it falls inside (a dim
 * of size 1 with align_corners reflects to 0). Interpolation weighs each
 * dim separately: linear the 2 points around the coordinate, cubic 4
 * (Keys' cubic convolution with a = -0.75, as PyTorch), nearest 1 (the
 * coordinate rounded half to even). A point outside X reads 0 (zeros),
 * the nearest border point (border) or its mirror image (reflection). */
typedef struct plx_grid_sample_desc {
    uint32_t struct_size;
    plx_grid_sample_mode mode;          /* default linear */
    plx_grid_sample_padding padding;    /* default zeros */
    bool align_corners;                 /* default false */
} plx_grid_sample_desc;
#define PLX_GRID_SAMPLE_DESC_INIT \
    {sizeof(plx_grid_sample_desc), PLX_GRID_SAMPLE_LINEAR, PLX_GRID_SAMPLE_ZEROS, false}

/* ONNX DFT (opsets 17 and 20): the discrete Fourier transform of length
 * L along `axis` of X, whose last dim holds a real value (1) or a complex
 * one (2: real, imaginary); X and Y have the same float dtype. `axis`
 * counts in X's rank (negative from the end) and is never the last dim.
 * X's line along axis is cut or padded with zeros to L, then
 *   Y[k] = sum over j < L of X[j] exp(-2 pi i j k / L),
 * or with `inverse` (1 / L) sum X[j] exp(+2 pi i j k / L). Y has X's dims
 * but L along axis (L / 2 + 1 with `onesided`: the bins a real signal's
 * conjugate symmetry leaves) and a last dim of 2. onesided with inverse
 * is not defined here. */
typedef struct plx_dft_desc {
    uint32_t struct_size;
    int32_t axis;   /* default -2 (ONNX opset 20; opset 17's default is 1) */
    int64_t length; /* L >= 1; 0: X's dim along axis */
    bool inverse;   /* default false */
    bool onesided;  /* default false */
} plx_dft_desc;
#define PLX_DFT_DESC_INIT {sizeof(plx_dft_desc), -2, 0, false, false}

/* ONNX STFT (opset 17): signal [B, len, 1 or 2] (real or complex, a
 * float type) cut into frames = 1 + (len - L) / frame_step frames of
 * frame_length = L samples, frame f starting at f * frame_step, each
 * multiplied by window (optional input 1: [L], signal's dtype; none: 1)
 * and transformed as by dft (forward, length L). Y is [B, frames, L or
 * L / 2 + 1 (onesided), 2], signal's dtype. 1 <= L <= len. */
typedef struct plx_stft_desc {
    uint32_t struct_size;
    int64_t frame_step;   /* >= 1 */
    int64_t frame_length; /* L >= 1 */
    bool onesided;        /* default true */
} plx_stft_desc;
#define PLX_STFT_DESC_INIT(step_, length_) {sizeof(plx_stft_desc), (step_), (length_), true}

/* The most spatial dims of a col2im layer (its descriptor's arrays). */
#define PLX_COL2IM_MAX_SPATIAL (PLX_MAX_RANK - 2)

/* ONNX Col2Im (opset 18): the inverse of im2col, over r spatial dims
 * (1 <= r <= PLX_COL2IM_MAX_SPATIAL). X [N, C * prod(block_shape), L]
 * holds, per channel c and block offset b (row c * prod(block_shape) +
 * b, b row-major over block_shape), the values of L sliding blocks placed
 * as a convolution's windows over the padded image: L = prod over d of
 * (image_shape[d] + pads_begin[d] + pads_end[d] - dilations[d] *
 * (block_shape[d] - 1) - 1) / strides[d] + 1, row-major. Y [N, C,
 * image_shape...] sums the values that land on each pixel (those in the
 * padding are dropped); X's dtype. Entries past `spatial` are ignored. */
typedef struct plx_col2im_desc {
    uint32_t struct_size;
    uint32_t spatial;                                  /* r */
    int64_t image_shape[PLX_COL2IM_MAX_SPATIAL];       /* >= 1 */
    int64_t block_shape[PLX_COL2IM_MAX_SPATIAL];       /* >= 1 */
    int64_t strides[PLX_COL2IM_MAX_SPATIAL];           /* >= 1; default 1 */
    int64_t dilations[PLX_COL2IM_MAX_SPATIAL];         /* >= 1; default 1 */
    int64_t pads_begin[PLX_COL2IM_MAX_SPATIAL];        /* >= 0; default 0 */
    int64_t pads_end[PLX_COL2IM_MAX_SPATIAL];
} plx_col2im_desc;
#define PLX_COL2IM_DESC_INIT                                                             \
    {sizeof(plx_col2im_desc), 0, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0},               \
     {1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1}, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}}

/* ONNX ReverseSequence (opset 10): X of rank >= 2 and sequence_lens
 * [X.dims[batch_axis]] (int32 or int64, each in [0, X.dims[time_axis]]).
 * Along time_axis, the first sequence_lens[b] elements of batch b come
 * out reversed and the rest as they are. batch_axis and time_axis are 0
 * and 1 in either order. Y has X's shape and dtype. Values of
 * sequence_lens out of range fail the run. */
typedef struct plx_reverse_sequence_desc {
    uint32_t struct_size;
    int32_t batch_axis; /* default 1 */
    int32_t time_axis;  /* default 0 */
} plx_reverse_sequence_desc;
#define PLX_REVERSE_SEQUENCE_DESC_INIT {sizeof(plx_reverse_sequence_desc), 1, 0}

/* ONNX MaxUnpool (opsets 9, 11, 22): the inverse of a max pool with
 * indices, over r spatial dims (1 <= r <= PLX_COL2IM_MAX_SPATIAL). The
 * pool's input had the full shape S = [N, C, (D_i - 1) * strides[i] -
 * pads_begin[i] - pads_end[i] + kernel[i] ...]; I holds, per element of
 * X, its position in S flattened row-major (N and C included, as
 * max_pool's indices count). Y [N, C, O1..Or] is 0 but where an index
 * lands: Y is S (output_shape all 0) or output_shape, with S's positions
 * at the same coordinates (the ones past output_shape dropped, the ones
 * past S left 0). Two indices on one position keep the later element's
 * value. An index outside S fails the run. Y has X's dtype. */
typedef struct plx_max_unpool_desc {
    uint32_t struct_size;
    uint32_t spatial;                                /* r */
    int64_t kernel[PLX_COL2IM_MAX_SPATIAL];          /* >= 1 */
    int64_t strides[PLX_COL2IM_MAX_SPATIAL];         /* >= 1; default 1 */
    int64_t pads_begin[PLX_COL2IM_MAX_SPATIAL];      /* >= 0; default 0 */
    int64_t pads_end[PLX_COL2IM_MAX_SPATIAL];
    int64_t output_shape[PLX_COL2IM_MAX_SPATIAL];    /* spatial dims of Y; all 0: S's */
} plx_max_unpool_desc;
#define PLX_MAX_UNPOOL_DESC_INIT                                                         \
    {sizeof(plx_max_unpool_desc), 0, {0, 0, 0, 0, 0, 0}, {1, 1, 1, 1, 1, 1},           \
     {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}}
/* ONNX RNN (layout 0), the Elman cell, every input slot present as for
 * GRU: W [D, H, I], R [D, H, H], B [D, 2H] ([Wb, Rb]), sequence_lens int32
 * [batch], initial_h [D, batch, H]; Ht = f(Xt*W^T + Ht-1*R^T + Wb + Rb).
 * Outputs Y [seq_length, D, batch, H] and Y_h [D, batch, H]. Directions,
 * lengths and zeros past them as for LSTM. float32. */
typedef struct plx_rnn_desc {
    uint32_t struct_size;
    plx_rnn_direction direction;
    int64_t hidden_size;
    /* Per direction: f; default tanh. Only the first D rows are used (and
     * checked). */
    plx_rnn_activation activations[2][1];
    float clip; /* as LSTM's: the input of f */
} plx_rnn_desc;

/* How roi_align pools the samples of one output bin. */
typedef enum plx_roi_align_mode {
    PLX_ROI_ALIGN_AVG = 0, /* the mean of the bilinearly interpolated samples */
    PLX_ROI_ALIGN_MAX = 1  /* the largest of the samples' weighted corner values */
} plx_roi_align_mode;

/* ONNX RoiAlign: X [N, C, H, W], rois [R, 4] of X's float type ((x1, y1,
 * x2, y2) in X's coordinates over spatial_scale), batch_indices [R]
 * (int32 or int64; each in [0, N): another value is an execution error)
 * -> Y [R, C, output_height, output_width] of X's dtype. A roi scaled by
 * spatial_scale (minus 0.5 with half_pixel) is cut into output_height x
 * output_width bins, each sampled on a grid of sampling_ratio x
 * sampling_ratio points (0: ceil(roi size / output size) per dim) at the
 * grid cells' centres. A point more than one pixel outside X reads 0; one
 * inside is clamped to [0, H - 1] x [0, W - 1] and read bilinearly from
 * its 4 neighbours. AVG: the bin is the mean of its points; MAX: the
 * largest, over its points, of the 4 neighbours' values each times its
 * bilinear weight (ONNX's reference and ONNX Runtime). Without
 * half_pixel (ONNX's output_half_pixel, opset 10's only mode) a roi is at
 * least 1 x 1. */
typedef struct plx_roi_align_desc {
    uint32_t struct_size;
    plx_roi_align_mode mode; /* default AVG */
    bool half_pixel;         /* default true (opset 16) */
    int64_t output_height;   /* >= 1; default 1 */
    int64_t output_width;    /* >= 1; default 1 */
    int64_t sampling_ratio;  /* >= 0; default 0 (adaptive) */
    float spatial_scale;     /* finite; default 1 */
} plx_roi_align_desc;
#define PLX_ROI_ALIGN_DESC_INIT {sizeof(plx_roi_align_desc), PLX_ROI_ALIGN_AVG, true, 1, 1, 0, 1.0f}

/* ONNX DeformConv, 2-D: X [N, C, H, W], W [M, C/group, kH, kW], offset
 * [N, offset_group * 2 * kH * kW, oH, oW], B [M] (optional), mask [N,
 * offset_group * kH * kW, oH, oW] (optional: all ones) -> Y [N, M, oH,
 * oW], all of one float type. oH = (H + pads - ((kH - 1) * dilation +
 * 1)) / stride + 1, likewise oW, and offset's and mask's spatial dims must
 * be those. Kernel tap (i, j) of output (y, x) reads channel c of X at
 * (y * stride - pad_begin + i * dilation + dh, likewise for w + dw), (dh,
 * dw) = offset[n, ((g * kH + i) * kW + j) * 2 + (0, 1), y, x] with g =
 * c / (C / offset_group), bilinearly (a neighbour outside X reads 0), times
 * mask[n, (g * kH + i) * kW + j, y, x]; the taps are then summed with
 * W's weights as a convolution's. */
typedef struct plx_deform_conv_desc {
    uint32_t struct_size;
    int64_t strides[2];    /* >= 1; default 1 */
    int64_t dilations[2];  /* >= 1; default 1 */
    int64_t pads_begin[2]; /* >= 0; default 0 */
    int64_t pads_end[2];
    int64_t group;         /* default 1 */
    int64_t offset_group;  /* default 1; divides C */
} plx_deform_conv_desc;
#define PLX_DEFORM_CONV_DESC_INIT {sizeof(plx_deform_conv_desc), {1, 1}, {1, 1}, {0, 0}, {0, 0}, 1, 1}

/* One layer as a backend sees it: in support queries and when creating its
 * workload. The view, its arrays and the descriptor struct are owned by the
 * host and valid only during the call that receives it; a backend that
 * needs something later (a descriptor field, a shape) copies it. Memory
 * that descriptor fields point to (split sizes, constant data) and the
 * input_constants data stay valid as long as the network that holds the
 * layer (for a workload: until its factory is destroyed). */
typedef struct plx_layer_view {
    uint32_t struct_size;
    const char *name;             /* unique in the network */
    plx_op op;
    const void *desc;             /* the op's descriptor; NULL for ops without one */
    const plx_tensor_info *inputs;  /* input_count entries, in slot order */
    uint32_t input_count;
    const plx_tensor_info *outputs; /* output_count entries, in slot order */
    uint32_t output_count;
    /* Per input slot: the data when that input is fed by a constant layer
     * (valid for the network's lifetime, so it may be kept, e.g. to pre-pack
     * weights), else NULL. The array itself may be NULL: no constant inputs. */
    const void *const *input_constants;
} plx_layer_view;

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_OPS_H */
