/* What the files of shape inference share (shape_infer.c, infer_check.c,
 * infer_conv.c, infer_elementwise.c, infer_movement.c, infer_other.c,
 * op_table.c): the context of one call, the checking helpers that word
 * every message alike, and the operator table's rows, which each
 * infer_*.c file defines for its operators. */
#ifndef PLEXUS_CORE_INFER_INTERNAL_H
#define PLEXUS_CORE_INFER_INTERNAL_H

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plexus/ops.h>
#include <plexus/tensor.h>

#include "internal.h"

#define I64 "%" PRId64

/* Room for "[d0,...,d7]" with every dim as long as INT64_MIN. */
#define SHAPE_BUF 192
/* A shape string valid until the end of the enclosing block (plxi_format_shape,
 * shape_infer.h). */
#define SHP(info) plxi_format_shape((info), (char[SHAPE_BUF]){0}, SHAPE_BUF)

/* Dtype sets as bit masks (ONNX's type classes: a layer whose dtype no
 * backend runs passes here and is refused by the backends). */
#define DT(x) (1u << PLX_DTYPE_##x)
#define DT_FLOAT (DT(FLOAT32) | DT(FLOAT16) | DT(BFLOAT16) | DT(FLOAT64))
/* the floats of quantization scales and quantized values: ONNX
 * QuantizeLinear and DequantizeLinear take no float64 */
#define DT_QFLOAT (DT(FLOAT32) | DT(FLOAT16) | DT(BFLOAT16))
/* the 8-bit floats (ABI 1.3): ONNX defines cast, quantize and dequantize
 * on them, and they are in no other set here */
#define DT_F8 (DT(FLOAT8E4M3FN) | DT(FLOAT8E4M3FNUZ) | DT(FLOAT8E5M2) | DT(FLOAT8E5M2FNUZ))
/* the 4-bit integers (ABI 1.3): likewise only cast, quantize and
 * dequantize */
#define DT_I4 (DT(INT4) | DT(UINT4))
/* the quantized layers' 8-bit tensors (plexus/ops.h) */
#define DT_Q8 (DT(INT8) | DT(UINT8))
#define DT_SINT (DT(INT8) | DT(INT16) | DT(INT32) | DT(INT64))
#define DT_UINT (DT(UINT8) | DT(UINT16) | DT(UINT32) | DT(UINT64))
#define DT_INT (DT_SINT | DT_UINT)
#define DT_NUM (DT_FLOAT | DT_INT)
#define DT_ANY (DT_NUM | DT(BOOL))
/* ONNX MatMul, Gemm, ReduceProd and the like: floats and the 32- and
 * 64-bit integers */
#define DT_WIDE (DT_FLOAT | DT(INT32) | DT(INT64) | DT(UINT32) | DT(UINT64))
#define DT_MATMUL DT_WIDE

/* One call of plxi_infer_layer. `out` points to where single-output ops
 * write (a temporary, copied out on success). */
typedef struct layer_ctx {
    const char *name;
    plx_op op;
    const void *desc;
    const plx_tensor_info *in;
    uint32_t n_in;
    plx_tensor_info *out;
    uint32_t n_out;
} layer_ctx;

/* One row of the operator table: slot counts, input role names and the
 * infer function (the descriptor size is op_table.c's, from PLX_OP_LIST). */
typedef struct plxi_op_row {
    uint32_t min_inputs, max_inputs, min_outputs, max_outputs;
    const char *const *inputs; /* role names of the first input_count inputs */
    uint32_t input_count;
    plx_status (*infer)(const layer_ctx *c);
} plxi_op_row;

/* Every operator of PLX_OP_LIST has a row plxi_op_row_<SUFFIX>, defined
 * with PLXI_OP_ROW at the end of the infer_*.c file of its infer function
 * (PLX_OP_INVALID's, which has none, in op_table.c). op_table.c indexes
 * them by value: an operator without a row fails to link, naming it. */
#define PLXI_OP_ROW_DECL_(suffix, value, name, desc) extern const plxi_op_row plxi_op_row_##suffix;
PLX_OP_LIST(PLXI_OP_ROW_DECL_)
#undef PLXI_OP_ROW_DECL_

/* PLXI_OP_ROW(INSTANCE_NORM, 3, 3, 1, 1, ROLES("X", "scale", "bias"),
 * plxi_infer_instance_norm): minimum and maximum inputs, minimum and
 * maximum outputs (ANY: variadic), the role names that messages print for
 * the first inputs (NO_ROLES: "input i" for all) and the infer function,
 * which validates c's descriptor and inputs and writes c->out. */
#define PLXI_OP_ROW(suffix, min_in, max_in, min_out, max_out, roles, infer) \
    const plxi_op_row plxi_op_row_##suffix = {min_in, max_in, min_out, max_out, roles, infer}
#define ROLES(...)                        \
    (const char *const[]){__VA_ARGS__}, \
        (uint32_t)(sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))
#define NO_ROLES NULL, 0
#define ANY UINT32_MAX

/* The row of `op`, or NULL for an unknown op. */
const plxi_op_row *plxi_op_lookup(plx_op op);

/* "layer '<name>' (<op>): <what>" as a PLX_INVALID_ARGUMENT status. */
plx_status plxi_fail(const layer_ctx *c, const char *fmt, ...) PLXI_PRINTF(2, 3);

bool plxi_dtype_in(plx_dtype d, unsigned mask);

bool plxi_add_i64(int64_t a, int64_t b, int64_t *r);

/* a, b >= 0 */
bool plxi_mul_nonneg(int64_t a, int64_t b, int64_t *r);

/* Product of dims[from..to-1] (all >= 0). */
bool plxi_dims_product(const int64_t *dims, uint32_t from, uint32_t to, int64_t *r);

/* Numpy broadcasting of two shapes; false when incompatible. */
bool plxi_broadcast(const int64_t *a, uint32_t ra, const int64_t *b, uint32_t rb,
               int64_t *out, uint32_t *out_rank);

/* True when `from` broadcasts to `to` without changing `to`. */
bool plxi_broadcasts_to(const int64_t *from, uint32_t rf, const int64_t *to, uint32_t rt);

void plxi_info_init(plx_tensor_info *o, plx_dtype dtype, uint32_t rank);

void plxi_info_set_dims(plx_tensor_info *o, const int64_t *dims, uint32_t rank);

/* Quantization of a moved tensor: per-tensor kept, per-axis dropped (the
 * rule at the top of shape_infer.c). */
plx_quant_params plxi_moved_quant(const plx_tensor_info *in);

/* A tensor info as it may appear anywhere: valid dtype, rank and dims, a
 * byte size that fits size_t, consistent quantization. */
plx_status plxi_check_info(const layer_ctx *c, const plx_tensor_info *t, const char *role);

plx_status plxi_check_dtype(const layer_ctx *c, uint32_t i, unsigned mask, const char *what);

/* Input j must have input i's dtype. */
plx_status plxi_check_same_dtype(const layer_ctx *c, uint32_t j, uint32_t i);

plx_status plxi_check_rank(const layer_ctx *c, uint32_t i, uint32_t min, uint32_t max);

/* Fields indexed by spatial dim: each of the first `n` must be >= min. */
plx_status plxi_check_min(const layer_ctx *c, const char *field, const int64_t *v, uint32_t n,
                     int64_t min);

plx_status plxi_check_axis(const layer_ctx *c, const char *field, int64_t axis, uint32_t i,
                      bool inclusive, uint32_t *out);

/* Dtype and rank of N, C and 1 to 3 spatial dims. */
plx_status plxi_check_spatial_input(const layer_ctx *c, unsigned dtypes, const char *what,
                               uint32_t *out_spatial);

plx_status plxi_check_auto_pad(const layer_ctx *c, plx_auto_pad ap);

/* Output size of a sliding window along spatial dim i (conv, pool). */
plx_status plxi_window_out(const layer_ctx *c, uint32_t i, int64_t in, int64_t k, int64_t s,
                      int64_t d, int64_t pb, int64_t pe, plx_auto_pad ap, bool ceil_mode,
                      int64_t *out);

void plxi_same_as_input(const layer_ctx *c, plx_dtype dtype);
/* softmax and hardmax: X float32, float16 or bfloat16, `axis` in [-r, r),
 * Y of X's shape and dtype. */
plx_status plxi_infer_float_along_axis(const layer_ctx *c, int32_t axis);

/* The role name of input slot i ("X", "W", ... from the operator table,
 * else "input i"), of output slot i ("Y", "Z" or "output i"), and a dtype
 * set as "float32, float16, ..." (what ROLE, OUT_ROLE and DTYPES give). */
const char *plxi_input_role(const layer_ctx *c, uint32_t i, char *buf, size_t size);
const char *plxi_output_role(const layer_ctx *c, uint32_t i, char *buf, size_t size);
const char *plxi_dtype_list(unsigned mask, char *buf, size_t size);
#define ROLE(c, i) plxi_input_role((c), (i), (char[24]){0}, 24)
#define OUT_ROLE(c, i) plxi_output_role((c), (i), (char[24]){0}, 24)
#define DTYPES(mask) plxi_dtype_list((mask), (char[160]){0}, 160)

#endif /* PLEXUS_CORE_INFER_INTERNAL_H */
