/* Operator rules of the core (core/src/shape_infer.c): arity, descriptor
 * sizes, and for every operator at least one inference and its main
 * refusals, called directly through plxi_infer_layer. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <plexus/plexus.h>

#include "shape_infer.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */

static plx_tensor_info make_info(plx_dtype dtype, const int64_t *dims, size_t rank) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.rank = (uint32_t)rank;
    for (size_t i = 0; i < rank; i++) {
        t.dims[i] = dims[i];
    }
    return t;
}

#define DIMS(...) (const int64_t[]){__VA_ARGS__}
#define NDIMS(...) (sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
/* T(FLOAT32, 1, 3, 224, 224); SCALAR(FLOAT32) for rank 0. */
#define T(dt, ...) make_info(PLX_DTYPE_##dt, DIMS(__VA_ARGS__), NDIMS(__VA_ARGS__))
#define SCALAR(dt) make_info(PLX_DTYPE_##dt, NULL, 0)
#define F32(...) T(FLOAT32, __VA_ARGS__)

static void check_info(const plx_tensor_info *o, plx_dtype dtype, const int64_t *dims,
                       size_t rank) {
    char got[192];
    plxi_format_shape(o, got, sizeof got);
    cr_assert(eq(str, (char *)plx_dtype_name(o->dtype), (char *)plx_dtype_name(dtype)),
              "dtype of %s", got);
    cr_assert(eq(u32, o->rank, (uint32_t)rank), "rank of %s", got);
    for (size_t i = 0; i < rank; i++) {
        cr_assert(eq(i64, o->dims[i], dims[i]), "dim %zu of %s", i, got);
    }
    for (size_t i = rank; i < PLX_MAX_RANK; i++) {
        cr_assert(eq(i64, o->dims[i], 0), "unused dim %zu of %s", i, got);
    }
}
#define EXPECT(o, dt, ...) check_info((o), PLX_DTYPE_##dt, DIMS(__VA_ARGS__), NDIMS(__VA_ARGS__))
#define EXPECT_SCALAR(o, dt) check_info((o), PLX_DTYPE_##dt, NULL, 0)

static void ok(plx_status s) {
    cr_assert(zero(ptr, (void *)s), "unexpected error: %s", plx_status_get_message(s));
}

/* The message contains `text`; the status is freed. */
static void fails_with(plx_status s, const char *text) {
    cr_assert(not(zero(ptr, (void *)s)), "expected an error containing \"%s\"", text);
    cr_assert(eq(int, plx_status_get_code(s), PLX_INVALID_ARGUMENT));
    const char *m = plx_status_get_message(s);
    cr_assert(not(zero(ptr, (void *)strstr(m, text))), "message \"%s\" lacks \"%s\"", m, text);
    cr_assert(eq(int, strncmp(m, "layer '", 7), 0), "message \"%s\" does not name the layer", m);
    plx_status_free(s);
}

/* The message is exactly `text`; the status is freed. */
static void fails_exactly(plx_status s, const char *text) {
    cr_assert(not(zero(ptr, (void *)s)), "expected the error \"%s\"", text);
    cr_assert(eq(int, plx_status_get_code(s), PLX_INVALID_ARGUMENT));
    cr_assert(eq(str, (char *)plx_status_get_message(s), (char *)text));
    plx_status_free(s);
}

/* One input, one output, layer "L". */
static plx_status run1(plx_op op, const void *desc, plx_tensor_info x, plx_tensor_info *y) {
    return plxi_infer_layer("L", op, desc, &x, 1, y, 1);
}

/* Several inputs (given as an array), one output, layer "L". */
#define RUN(op, desc, y, ...)                                                                  \
    plxi_infer_layer("L", (op), (desc), (const plx_tensor_info[]){__VA_ARGS__},                \
                     (uint32_t)(sizeof((const plx_tensor_info[]){__VA_ARGS__}) /               \
                                sizeof(plx_tensor_info)),                                      \
                     (y), 1)

/* ------------------------------------------------------------------------ */
/* Arity, descriptors, generic checks                                       */

Test(shape_infer, arity_table) {
    uint32_t a, b, c, d;
    cr_assert(plxi_op_arity(PLX_OP_CONV, &a, &b, &c, &d));
    cr_assert(eq(u32, a, 2));
    cr_assert(eq(u32, b, 3));
    cr_assert(eq(u32, c, 1));
    cr_assert(eq(u32, d, 1));
    cr_assert(plxi_op_arity(PLX_OP_INPUT, &a, &b, &c, &d));
    cr_assert(eq(u32, a + b, 0));
    cr_assert(eq(u32, c, 1));
    cr_assert(plxi_op_arity(PLX_OP_OUTPUT, &a, &b, &c, &d));
    cr_assert(eq(u32, a, 1));
    cr_assert(eq(u32, c + d, 0));
    cr_assert(plxi_op_arity(PLX_OP_CONCAT, &a, &b, &c, &d));
    cr_assert(eq(u32, a, 1));
    cr_assert(eq(u32, b, UINT32_MAX));
    cr_assert(plxi_op_arity(PLX_OP_SPLIT, &a, &b, &c, &d));
    cr_assert(eq(u32, b, 1));
    cr_assert(eq(u32, d, UINT32_MAX));
    cr_assert(plxi_op_arity(PLX_OP_BATCH_NORM, &a, &b, &c, &d));
    cr_assert(eq(u32, a, 5));
    cr_assert(eq(u32, b, 5));
    cr_assert(plxi_op_arity(PLX_OP_WHERE, &a, &b, &c, &d));
    cr_assert(eq(u32, a, 3));
    cr_assert(plxi_op_arity(PLX_OP_QUANTIZE, &a, &b, &c, &d));
    cr_assert(eq(u32, a, 2));
    cr_assert(eq(u32, b, 3));
    for (int op = 1; op < PLX_OP_COUNT; op++) {
        cr_assert(plxi_op_arity((plx_op)op, &a, &b, &c, &d), "op %d", op);
        cr_assert(le(u32, a, b));
        cr_assert(le(u32, c, d));
    }
    cr_assert(not(plxi_op_arity(PLX_OP_INVALID, &a, &b, &c, &d)));
    cr_assert(not(plxi_op_arity((plx_op)PLX_OP_COUNT, &a, &b, &c, &d)));
}

Test(shape_infer, desc_sizes) {
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_CONV), sizeof(plx_conv_desc)));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_INPUT), sizeof(plx_io_desc)));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_FLATTEN), sizeof(plx_axis_desc)));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_SQUEEZE), sizeof(plx_axes_desc)));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_EXPAND), sizeof(plx_shape_desc)));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_DEQUANTIZE), sizeof(plx_quantize_desc)));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_MATMUL), 0));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_WHERE), 0));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_MEM_COPY), 0));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_MEM_IMPORT), 0));
    for (int op = 1; op < PLX_OP_COUNT; op++) {
        bool none = op == PLX_OP_MATMUL || op == PLX_OP_WHERE || op == PLX_OP_MEM_COPY ||
                    op == PLX_OP_MEM_IMPORT || op == PLX_OP_MATMUL_INTEGER ||
                    op == PLX_OP_DYNAMIC_QUANTIZE || op == PLX_OP_DET;
        cr_assert(eq(int, plxi_op_desc_size((plx_op)op) == 0, none), "op %d", op);
    }
}

Test(shape_infer, arity_errors) {
    plx_conv_desc conv = PLX_CONV_DESC_INIT;
    plx_tensor_info x = F32(1, 3, 8, 8), y;
    fails_exactly(plxi_infer_layer("x", PLX_OP_CONV, &conv, &x, 1, &y, 1),
                  "layer 'x' (conv): takes 2 to 3 inputs, got 1");
    plx_tensor_info three[3] = {F32(2, 2), F32(2, 2), F32(2, 2)};
    fails_exactly(plxi_infer_layer("mm", PLX_OP_MATMUL, NULL, three, 3, &y, 1),
                  "layer 'mm' (matmul): takes 2 inputs, got 3");
    plx_axis_desc axis = PLX_AXIS_DESC_INIT(0);
    fails_exactly(plxi_infer_layer("cat", PLX_OP_CONCAT, &axis, NULL, 0, &y, 1),
                  "layer 'cat' (concat): takes at least 1 input, got 0");
    plx_io_desc io = PLX_IO_DESC_INIT(0);
    fails_exactly(plxi_infer_layer("out", PLX_OP_OUTPUT, &io, &x, 1, &y, 1),
                  "layer 'out' (output): takes 0 outputs, got 1");
    plx_split_desc split = PLX_SPLIT_DESC_INIT(0);
    fails_exactly(plxi_infer_layer("sp", PLX_OP_SPLIT, &split, &x, 1, NULL, 0),
                  "layer 'sp' (split): takes at least 1 output, got 0");
    fails_exactly(plxi_infer_layer("u", (plx_op)99, NULL, &x, 1, &y, 1),
                  "layer 'u' (invalid): unknown operator 99");
}

Test(shape_infer, descriptor_errors) {
    plx_tensor_info in[2] = {F32(1, 3, 8, 8), F32(4, 3, 3, 3)}, y;
    fails_exactly(plxi_infer_layer("c", PLX_OP_CONV, NULL, in, 2, &y, 1),
                  "layer 'c' (conv): descriptor is NULL");
    plx_conv_desc conv = PLX_CONV_DESC_INIT;
    conv.struct_size = 8;
    char want[128];
    snprintf(want, sizeof want, "layer 'c' (conv): descriptor struct_size 8 is smaller than %zu",
             sizeof(plx_conv_desc));
    fails_exactly(plxi_infer_layer("c", PLX_OP_CONV, &conv, in, 2, &y, 1), want);
    /* Ops without a descriptor ignore the pointer. */
    plx_tensor_info mm[2] = {F32(2, 3), F32(3, 4)};
    ok(plxi_infer_layer("m", PLX_OP_MATMUL, NULL, mm, 2, &y, 1));
    EXPECT(&y, FLOAT32, 2, 4);
}

Test(shape_infer, invalid_input_infos) {
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_tensor_info x = F32(2, 3), y;
    x.dtype = (plx_dtype)0;
    fails_exactly(run1(PLX_OP_ACTIVATION, &relu, x, &y),
                  "layer 'L' (activation): X has an invalid dtype 0");
    x = F32(2, -3);
    fails_exactly(run1(PLX_OP_ACTIVATION, &relu, x, &y),
                  "layer 'L' (activation): X [2,-3] has a negative dimension");
    x = F32(2, 3);
    x.rank = 9;
    fails_with(run1(PLX_OP_ACTIVATION, &relu, x, &y), "X has rank 9, more than 8");
    x = T(INT8, 2, 3);
    x.quant.kind = PLX_QUANT_PER_TENSOR;
    x.quant.scale = 0.0f;
    relu.func = PLX_ACT_RELU;
    fails_with(run1(PLX_OP_ACTIVATION, &relu, x, &y), "X has quantization scale 0");
    x.quant.scale = 0.5f;
    x.quant.zero_point = 300;
    fails_with(run1(PLX_OP_ACTIVATION, &relu, x, &y), "X has zero point 300, out of range for int8");
    x = T(INT8, 2, 3);
    x.quant.kind = PLX_QUANT_PER_AXIS;
    x.quant.axis = 2;
    fails_with(run1(PLX_OP_ACTIVATION, &relu, x, &y), "per-axis quantization along axis 2");
    x = T(UINT8, INT64_C(1) << 40, INT64_C(1) << 40);
    fails_with(run1(PLX_OP_ACTIVATION, &relu, x, &y), "its byte size overflows size_t");
}

Test(shape_infer, failure_leaves_output_untouched) {
    plx_tensor_info in[2] = {F32(2, 3), F32(4, 5)};
    plx_tensor_info y = T(INT16, 7, 7);
    fails_exactly(plxi_infer_layer("fc", PLX_OP_MATMUL, NULL, in, 2, &y, 1),
                  "layer 'fc' (matmul): inner dimensions differ: A [2,3] and B [4,5]");
    EXPECT(&y, INT16, 7, 7);
}

Test(shape_infer, format_shape) {
    char buf[64];
    plx_tensor_info t = F32(1, 3, 224, 224);
    cr_assert(eq(str, (char *)plxi_format_shape(&t, buf, sizeof buf), "[1,3,224,224]"));
    t = SCALAR(FLOAT32);
    cr_assert(eq(str, (char *)plxi_format_shape(&t, buf, sizeof buf), "[]"));
    t = F32(123456789, 123456789);
    char small[10];
    plxi_format_shape(&t, small, sizeof small);
    cr_assert(eq(sz, strlen(small), sizeof small - 1));
    cr_assert(eq(str, small + sizeof small - 4, "..."));
}

/* ------------------------------------------------------------------------ */
/* Graph boundary                                                           */

Test(shape_infer, input_layer) {
    plx_io_desc io = PLX_IO_DESC_INIT(0);
    plx_tensor_info y = F32(1, 3, 224, 224);
    ok(plxi_infer_layer("in", PLX_OP_INPUT, &io, NULL, 0, &y, 1));
    EXPECT(&y, FLOAT32, 1, 3, 224, 224);
    y.dtype = PLX_DTYPE_INVALID;
    fails_exactly(plxi_infer_layer("in", PLX_OP_INPUT, &io, NULL, 0, &y, 1),
                  "layer 'in' (input): output 0 has an invalid dtype 0");
    y = F32(INT64_C(1) << 62, 4);
    fails_with(plxi_infer_layer("in", PLX_OP_INPUT, &io, NULL, 0, &y, 1),
               "output 0 [4611686018427387904,4] (float32) is too large");
}

Test(shape_infer, constant_layer) {
    float data[6] = {0};
    plx_constant_desc d = {sizeof d, data};
    plx_tensor_info y = F32(2, 3);
    ok(plxi_infer_layer("k", PLX_OP_CONSTANT, &d, NULL, 0, &y, 1));
    EXPECT(&y, FLOAT32, 2, 3);
    d.data = NULL;
    fails_exactly(plxi_infer_layer("k", PLX_OP_CONSTANT, &d, NULL, 0, &y, 1),
                  "layer 'k' (constant): descriptor data is NULL");
}

Test(shape_infer, output_layer) {
    plx_io_desc io = PLX_IO_DESC_INIT(3);
    plx_tensor_info x = T(BOOL, 4);
    ok(plxi_infer_layer("out", PLX_OP_OUTPUT, &io, &x, 1, NULL, 0));
}

/* ------------------------------------------------------------------------ */
/* Convolutions and dense layers                                            */

Test(shape_infer, conv_basic) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    d.strides[0] = d.strides[1] = 2;
    d.pads_begin[0] = d.pads_begin[1] = d.pads_end[0] = d.pads_end[1] = 3;
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_CONV, &d, &y, F32(1, 3, 224, 224), F32(64, 3, 7, 7), F32(64)));
    EXPECT(&y, FLOAT32, 1, 64, 112, 112);
    /* Depthwise, dilated, no bias. */
    plx_conv_desc dw = PLX_CONV_DESC_INIT;
    dw.group = 32;
    dw.dilations[0] = dw.dilations[1] = 2;
    ok(RUN(PLX_OP_CONV, &dw, &y, T(FLOAT16, 2, 32, 10, 12), T(FLOAT16, 64, 1, 3, 3)));
    EXPECT(&y, FLOAT16, 2, 64, 6, 8);
    /* 1-D: entries past the spatial rank are ignored. */
    plx_conv_desc one = PLX_CONV_DESC_INIT;
    one.strides[1] = 0;
    ok(RUN(PLX_OP_CONV, &one, &y, F32(1, 2, 10), F32(4, 2, 3)));
    EXPECT(&y, FLOAT32, 1, 4, 8);
    /* 3-D: each of D, H and W has its own stride, dilation and pads */
    plx_conv_desc three = PLX_CONV_DESC_INIT;
    three.strides[0] = 2;
    three.dilations[1] = 2;
    three.pads_begin[2] = 1;
    three.pads_end[2] = 2;
    ok(RUN(PLX_OP_CONV, &three, &y, F32(2, 3, 9, 10, 11), F32(5, 3, 3, 3, 3)));
    EXPECT(&y, FLOAT32, 2, 5, 4, 6, 12);
}

Test(shape_infer, conv_auto_pad) {
    /* in 7, kernel 4, stride 2: SAME gives ceil(7/2) = 4 whichever side
     * takes the odd pad (total 3: 1+2 upper, 2+1 lower); VALID gives 2. */
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    d.strides[0] = d.strides[1] = 2;
    d.pads_begin[0] = 100; /* ignored with auto_pad */
    plx_tensor_info y = {0};
    d.auto_pad = PLX_AUTO_PAD_SAME_UPPER;
    ok(RUN(PLX_OP_CONV, &d, &y, F32(1, 1, 7, 8), F32(1, 1, 4, 4)));
    EXPECT(&y, FLOAT32, 1, 1, 4, 4);
    d.auto_pad = PLX_AUTO_PAD_SAME_LOWER;
    ok(RUN(PLX_OP_CONV, &d, &y, F32(1, 1, 7, 8), F32(1, 1, 4, 4)));
    EXPECT(&y, FLOAT32, 1, 1, 4, 4);
    d.auto_pad = PLX_AUTO_PAD_VALID;
    ok(RUN(PLX_OP_CONV, &d, &y, F32(1, 1, 7, 8), F32(1, 1, 4, 4)));
    EXPECT(&y, FLOAT32, 1, 1, 2, 3);
    /* The same with explicit pads: asymmetric pads change the output. */
    d.auto_pad = PLX_AUTO_PAD_NOTSET;
    d.pads_begin[0] = 1;
    d.pads_end[0] = 2;
    d.pads_begin[1] = 0;
    d.pads_end[1] = 0;
    ok(RUN(PLX_OP_CONV, &d, &y, F32(1, 1, 7, 8), F32(1, 1, 4, 4)));
    EXPECT(&y, FLOAT32, 1, 1, 4, 3);
    d.auto_pad = (plx_auto_pad)9;
    fails_exactly(RUN(PLX_OP_CONV, &d, &y, F32(1, 1, 7, 8), F32(1, 1, 4, 4)),
                  "layer 'L' (conv): auto_pad 9 is not a plx_auto_pad");
}

Test(shape_infer, conv_errors) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    plx_tensor_info y = {0};
    fails_exactly(plxi_infer_layer("c1", PLX_OP_CONV, &d,
                                   (const plx_tensor_info[]){F32(1, 4, 8, 8), F32(8, 3, 3, 3)}, 2,
                                   &y, 1),
                  "layer 'c1' (conv): W has 3 input channels per group, X has 4 channels and group 1");
    d.group = 4;
    fails_with(RUN(PLX_OP_CONV, &d, &y, F32(1, 6, 8, 8), F32(8, 3, 3, 3)),
               "X [1,6,8,8] has 6 channels, not divisible by group 4");
    d.group = 2;
    fails_with(RUN(PLX_OP_CONV, &d, &y, F32(1, 6, 8, 8), F32(5, 3, 3, 3)),
               "W [5,3,3,3] has 5 output channels, not divisible by group 2");
    d.group = 0;
    fails_with(RUN(PLX_OP_CONV, &d, &y, F32(1, 6, 8, 8), F32(6, 6, 3, 3)), "group 0 must be >= 1");
    d = (plx_conv_desc)PLX_CONV_DESC_INIT;
    d.strides[1] = 0;
    fails_exactly(RUN(PLX_OP_CONV, &d, &y, F32(1, 3, 8, 8), F32(8, 3, 3, 3)),
                  "layer 'L' (conv): strides[1] = 0 must be >= 1");
    d = (plx_conv_desc)PLX_CONV_DESC_INIT;
    d.dilations[0] = 0;
    fails_with(RUN(PLX_OP_CONV, &d, &y, F32(1, 3, 8, 8), F32(8, 3, 3, 3)),
               "dilations[0] = 0 must be >= 1");
    d = (plx_conv_desc)PLX_CONV_DESC_INIT;
    d.pads_end[0] = -1;
    fails_with(RUN(PLX_OP_CONV, &d, &y, F32(1, 3, 8, 8), F32(8, 3, 3, 3)),
               "pads_end[0] = -1 must be >= 0");
    d = (plx_conv_desc)PLX_CONV_DESC_INIT;
    fails_exactly(RUN(PLX_OP_CONV, &d, &y, T(INT16, 1, 3, 8, 8), T(INT16, 8, 3, 3, 3)),
                  "layer 'L' (conv): X has dtype int16, expected float32, float16, bfloat16 or float64");
    /* int8 is a quantized conv, which needs quantization parameters */
    fails_exactly(RUN(PLX_OP_CONV, &d, &y, T(INT8, 1, 3, 8, 8), T(INT8, 8, 3, 3, 3)),
                  "layer 'L' (conv): X is int8 without per-tensor quantization parameters");
    fails_exactly(RUN(PLX_OP_CONV, &d, &y, F32(1, 3, 8, 8), T(FLOAT16, 8, 3, 3, 3)),
                  "layer 'L' (conv): W has dtype float16 but X has float32; they must match");
    fails_exactly(RUN(PLX_OP_CONV, &d, &y, F32(1, 3, 8, 8), F32(8, 3, 3, 3), F32(4)),
                  "layer 'L' (conv): B [4] must be [8], one value per output channel");
    fails_with(RUN(PLX_OP_CONV, &d, &y, F32(3, 8), F32(8, 3)), "X [3,8] must have rank 3 to 5");
    fails_with(RUN(PLX_OP_CONV, &d, &y, F32(1, 3, 8, 8, 8, 8), F32(8, 3, 3, 3, 3, 3)),
               "X [1,3,8,8,8,8] must have rank 3 to 5 (N, C and 1 to 3 spatial dims)");
    fails_with(RUN(PLX_OP_CONV, &d, &y, F32(1, 3, 8, 8, 8), F32(8, 3, 3, 3)),
               "W [8,3,3,3] must have rank 5 like X [1,3,8,8,8]");
    fails_with(RUN(PLX_OP_CONV, &d, &y, F32(1, 3, 8, 8), F32(8, 3, 3)),
               "W [8,3,3] must have rank 4 like X [1,3,8,8]");
    fails_with(RUN(PLX_OP_CONV, &d, &y, F32(1, 3, 2, 8), F32(8, 3, 3, 3)),
               "X spatial dim 0 has size 2 (2 with pads), smaller than the dilated kernel 3");
    fails_with(RUN(PLX_OP_CONV, &d, &y, F32(1, 3, 8, 8), F32(8, 3, 0, 3)),
               "W [8,3,0,3] has an empty kernel along spatial dim 0");
}

Test(shape_infer, conv_transpose) {
    plx_conv_transpose_desc d = PLX_CONV_TRANSPOSE_DESC_INIT;
    d.strides[0] = d.strides[1] = 2;
    plx_tensor_info y = {0};
    /* 2*(5-1) + 0 + 3 = 11; group 2 doubles W's output channels. */
    d.group = 2;
    ok(RUN(PLX_OP_CONV_TRANSPOSE, &d, &y, F32(1, 4, 5, 6), F32(4, 3, 3, 3), F32(6)));
    EXPECT(&y, FLOAT32, 1, 6, 11, 13);
    d.group = 1;
    d.pads_begin[0] = d.pads_end[0] = 1;
    d.output_padding[0] = 1;
    ok(RUN(PLX_OP_CONV_TRANSPOSE, &d, &y, F32(1, 4, 5, 6), F32(4, 2, 3, 3)));
    EXPECT(&y, FLOAT32, 1, 2, 10, 13);
    d.auto_pad = PLX_AUTO_PAD_SAME_LOWER;
    ok(RUN(PLX_OP_CONV_TRANSPOSE, &d, &y, F32(1, 4, 5, 6), F32(4, 2, 3, 3)));
    EXPECT(&y, FLOAT32, 1, 2, 10, 12);
    d.auto_pad = PLX_AUTO_PAD_VALID;
    ok(RUN(PLX_OP_CONV_TRANSPOSE, &d, &y, F32(1, 4, 5, 6), F32(4, 2, 3, 3)));
    EXPECT(&y, FLOAT32, 1, 2, 12, 13);
    d.auto_pad = PLX_AUTO_PAD_NOTSET;
    d.output_shape[0] = 9;
    d.output_shape[1] = 12;
    ok(RUN(PLX_OP_CONV_TRANSPOSE, &d, &y, F32(1, 4, 5, 6), F32(4, 2, 3, 3)));
    EXPECT(&y, FLOAT32, 1, 2, 9, 12);
    d.output_shape[1] = 14;
    fails_with(RUN(PLX_OP_CONV_TRANSPOSE, &d, &y, F32(1, 4, 5, 6), F32(4, 2, 3, 3)),
               "output_shape[1] = 14 is larger than the full output 13");
    d.output_shape[1] = 0;
    fails_with(RUN(PLX_OP_CONV_TRANSPOSE, &d, &y, F32(1, 4, 5, 6), F32(4, 2, 3, 3)),
               "output_shape[1] is 0: give every spatial dim or none");
    d = (plx_conv_transpose_desc)PLX_CONV_TRANSPOSE_DESC_INIT;
    fails_exactly(RUN(PLX_OP_CONV_TRANSPOSE, &d, &y, F32(1, 4, 5, 6), F32(3, 2, 3, 3)),
                  "layer 'L' (conv_transpose): W [3,2,3,3] has 3 input channels, X [1,4,5,6] has 4");
    d.pads_begin[0] = 4;
    d.pads_end[0] = 3;
    fails_with(RUN(PLX_OP_CONV_TRANSPOSE, &d, &y, F32(1, 4, 5, 6), F32(4, 2, 3, 3)),
               "pads 4 + 3 leave no output along spatial dim 0 (full size 7)");
    d = (plx_conv_transpose_desc)PLX_CONV_TRANSPOSE_DESC_INIT;
    d.output_padding[1] = -1;
    fails_with(RUN(PLX_OP_CONV_TRANSPOSE, &d, &y, F32(1, 4, 5, 6), F32(4, 2, 3, 3)),
               "output_padding[1] = -1 must be >= 0");
}

Test(shape_infer, fully_connected) {
    plx_fully_connected_desc d = PLX_FULLY_CONNECTED_DESC_INIT;
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_FULLY_CONNECTED, &d, &y, F32(2, 3, 8), F32(8, 16), F32(16)));
    EXPECT(&y, FLOAT32, 2, 3, 16);
    d.weights_transposed = true;
    ok(RUN(PLX_OP_FULLY_CONNECTED, &d, &y, F32(5, 8), F32(16, 8)));
    EXPECT(&y, FLOAT32, 5, 16);
    fails_exactly(RUN(PLX_OP_FULLY_CONNECTED, &d, &y, F32(5, 8), F32(8, 16)),
                  "layer 'L' (fully_connected): X [5,8] has 8 features but W [8,16] has 16 (W is "
                  "[M,K])");
    fails_with(RUN(PLX_OP_FULLY_CONNECTED, &d, &y, F32(8), F32(16, 8)),
               "X [8] must have rank 2 or more");
    fails_with(RUN(PLX_OP_FULLY_CONNECTED, &d, &y, F32(5, 8), F32(16, 8), F32(1, 16)),
               "B [1,16] must be [16]");
}

Test(shape_infer, matmul) {
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_MATMUL, NULL, &y, F32(2, 3), F32(3, 4)));
    EXPECT(&y, FLOAT32, 2, 4);
    /* 1-D operands: the added dim is removed again. */
    ok(RUN(PLX_OP_MATMUL, NULL, &y, F32(3), F32(3, 4)));
    EXPECT(&y, FLOAT32, 4);
    ok(RUN(PLX_OP_MATMUL, NULL, &y, F32(2, 3), F32(3)));
    EXPECT(&y, FLOAT32, 2);
    ok(RUN(PLX_OP_MATMUL, NULL, &y, F32(3), F32(3)));
    EXPECT_SCALAR(&y, FLOAT32);
    ok(RUN(PLX_OP_MATMUL, NULL, &y, F32(3), F32(7, 3, 4)));
    EXPECT(&y, FLOAT32, 7, 4);
    /* Batch broadcasting. */
    ok(RUN(PLX_OP_MATMUL, NULL, &y, F32(5, 1, 2, 3), F32(4, 3, 6)));
    EXPECT(&y, FLOAT32, 5, 4, 2, 6);
    ok(RUN(PLX_OP_MATMUL, NULL, &y, T(INT32, 2, 3), T(INT32, 3, 0)));
    EXPECT(&y, INT32, 2, 0);
    fails_exactly(RUN(PLX_OP_MATMUL, NULL, &y, F32(2, 2, 3), F32(3, 3, 4)),
                  "layer 'L' (matmul): batch dimensions of A [2,2,3] and B [3,3,4] do not broadcast");
    fails_exactly(RUN(PLX_OP_MATMUL, NULL, &y, F32(3), F32(4)),
                  "layer 'L' (matmul): inner dimensions differ: A [3] and B [4]");
    fails_with(RUN(PLX_OP_MATMUL, NULL, &y, T(INT16, 2, 3), T(INT16, 3, 4)),
               "A has dtype int16, expected float32, float16, bfloat16, float64, int32, uint32, int64 or uint64");
    fails_with(RUN(PLX_OP_MATMUL, NULL, &y, T(INT8, 2, 3), T(INT8, 3, 4)),
               "A is int8 without per-tensor quantization parameters");
    fails_with(RUN(PLX_OP_MATMUL, NULL, &y, F32(2, 3), T(FLOAT16, 3, 4)),
               "B has dtype float16 but A has float32");
    fails_with(RUN(PLX_OP_MATMUL, NULL, &y, SCALAR(FLOAT32), F32(3)), "A [] must have rank 1 or more");
}

Test(shape_infer, gemm) {
    plx_gemm_desc d = PLX_GEMM_DESC_INIT;
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_GEMM, &d, &y, F32(4, 3), F32(3, 5), F32(5)));
    EXPECT(&y, FLOAT32, 4, 5);
    ok(RUN(PLX_OP_GEMM, &d, &y, F32(4, 3), F32(3, 5), F32(4, 1)));
    ok(RUN(PLX_OP_GEMM, &d, &y, F32(4, 3), F32(3, 5), SCALAR(FLOAT32)));
    d.trans_a = true;
    d.trans_b = true;
    ok(RUN(PLX_OP_GEMM, &d, &y, F32(3, 4), F32(5, 3)));
    EXPECT(&y, FLOAT32, 4, 5);
    fails_exactly(RUN(PLX_OP_GEMM, &d, &y, F32(4, 3), F32(5, 3)),
                  "layer 'L' (gemm): inner dimensions differ: A [4,3] (transposed) and B [5,3] "
                  "(transposed)");
    d.trans_a = d.trans_b = false;
    fails_exactly(RUN(PLX_OP_GEMM, &d, &y, F32(4, 3), F32(3, 5), F32(4)),
                  "layer 'L' (gemm): C [4] does not broadcast to [M,N] = [4,5]");
    fails_with(RUN(PLX_OP_GEMM, &d, &y, F32(2, 4, 3), F32(3, 5)), "A [2,4,3] must have rank 2");
}

/* ------------------------------------------------------------------------ */
/* Pooling                                                                  */

Test(shape_infer, pool_basic) {
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    d.kernel[0] = d.kernel[1] = 3;
    d.strides[0] = d.strides[1] = 2;
    d.pads_begin[0] = d.pads_begin[1] = d.pads_end[0] = d.pads_end[1] = 1;
    plx_tensor_info y = {0};
    ok(run1(PLX_OP_POOL, &d, F32(1, 64, 112, 112), &y));
    EXPECT(&y, FLOAT32, 1, 64, 56, 56);
    /* Max pooling takes int8 and keeps per-tensor quantization. */
    plx_tensor_info q = T(INT8, 1, 8, 9, 9);
    q.quant.kind = PLX_QUANT_PER_TENSOR;
    q.quant.scale = 0.25f;
    q.quant.zero_point = -3;
    ok(run1(PLX_OP_POOL, &d, q, &y));
    EXPECT(&y, INT8, 1, 8, 5, 5);
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_PER_TENSOR));
    cr_assert(eq(flt, y.quant.scale, 0.25f));
    cr_assert(eq(i32, y.quant.zero_point, -3));
    plx_pool_desc avg = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    avg.kernel[0] = 2;
    ok(run1(PLX_OP_POOL, &avg, T(BFLOAT16, 1, 2, 9), &y));
    EXPECT(&y, BFLOAT16, 1, 2, 8);
    fails_exactly(run1(PLX_OP_POOL, &avg, T(INT32, 1, 2, 9), &y),
                  "layer 'L' (pool): X has dtype int32, expected float32, float16, bfloat16, "
                  "float64, int8 or uint8 for average pooling");
    /* An int8 average pool is a quantized layer: Y's dtype and parameters
     * come from the builder, and X needs its own. */
    memset(&y, 0, sizeof y);
    fails_exactly(run1(PLX_OP_POOL, &avg, T(INT8, 1, 2, 9), &y),
                  "layer 'L' (pool): an average pool of int8 needs per-tensor quantization on X "
                  "and on the output, which the builder sets");
    y.dtype = PLX_DTYPE_UINT8;
    y.quant.kind = PLX_QUANT_PER_TENSOR;
    y.quant.scale = 0.5f;
    y.quant.zero_point = 7;
    plx_tensor_info qx = T(INT8, 1, 2, 9);
    qx.quant = q.quant;
    ok(run1(PLX_OP_POOL, &avg, qx, &y));
    EXPECT(&y, UINT8, 1, 2, 8);
    cr_assert(eq(flt, y.quant.scale, 0.5f));
    cr_assert(eq(i32, y.quant.zero_point, 7));
    memset(&y, 0, sizeof y);
    fails_with(run1(PLX_OP_POOL, &avg, qx, &y), "needs per-tensor quantization on X");
    /* 3-D, ceil_mode on the depth: (7 - 3) / 3 rounds up to 2, 3 windows */
    plx_pool_desc three = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    three.kernel[0] = three.kernel[1] = three.kernel[2] = 3;
    three.strides[0] = 3;
    three.ceil_mode = true;
    ok(run1(PLX_OP_POOL, &three, F32(1, 2, 8, 5, 6), &y));
    EXPECT(&y, FLOAT32, 1, 2, 3, 3, 4);
}

Test(shape_infer, pool_ceil_mode) {
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    d.kernel[0] = d.kernel[1] = 2;
    d.strides[0] = d.strides[1] = 2;
    plx_tensor_info y = {0};
    /* in 5: floor((5-2)/2)+1 = 2, ceil gives 3 (the last window starts at 4). */
    ok(run1(PLX_OP_POOL, &d, F32(1, 1, 5, 5), &y));
    EXPECT(&y, FLOAT32, 1, 1, 2, 2);
    d.ceil_mode = true;
    ok(run1(PLX_OP_POOL, &d, F32(1, 1, 5, 5), &y));
    EXPECT(&y, FLOAT32, 1, 1, 3, 3);
    /* in 4 with pads_end 1: ceil((4+1-2)/2)+1 = 3, but the third window
     * would start at 4, in the right padding: dropped, leaving 2. */
    d.pads_end[0] = 1;
    ok(run1(PLX_OP_POOL, &d, F32(1, 1, 4, 5), &y));
    EXPECT(&y, FLOAT32, 1, 1, 2, 3);
    /* With the pad on the left instead, the third window starts at 4 of
     * the padded axis, inside left padding + input (5): kept. */
    d.pads_begin[0] = 1;
    d.pads_end[0] = 0;
    ok(run1(PLX_OP_POOL, &d, F32(1, 1, 4, 5), &y));
    EXPECT(&y, FLOAT32, 1, 1, 3, 3);
    d.ceil_mode = false;
    ok(run1(PLX_OP_POOL, &d, F32(1, 1, 4, 5), &y));
    EXPECT(&y, FLOAT32, 1, 1, 2, 2);
}

Test(shape_infer, pool_auto_pad) {
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    d.kernel[0] = d.kernel[1] = 2;
    d.strides[0] = d.strides[1] = 2;
    plx_tensor_info y = {0};
    d.auto_pad = PLX_AUTO_PAD_SAME_UPPER;
    ok(run1(PLX_OP_POOL, &d, F32(1, 1, 5, 6), &y));
    EXPECT(&y, FLOAT32, 1, 1, 3, 3);
    d.auto_pad = PLX_AUTO_PAD_SAME_LOWER;
    ok(run1(PLX_OP_POOL, &d, F32(1, 1, 5, 6), &y));
    EXPECT(&y, FLOAT32, 1, 1, 3, 3);
    /* VALID: ceil((in - k + 1) / stride); ceil_mode does not apply. */
    d.auto_pad = PLX_AUTO_PAD_VALID;
    d.ceil_mode = true;
    ok(run1(PLX_OP_POOL, &d, F32(1, 1, 5, 6), &y));
    EXPECT(&y, FLOAT32, 1, 1, 2, 3);
    fails_with(run1(PLX_OP_POOL, &d, F32(1, 1, 1, 6), &y),
               "X spatial dim 0 has size 1, smaller than the dilated kernel 2 (auto_pad VALID)");
}

Test(shape_infer, pool_errors) {
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    plx_tensor_info y = {0};
    /* a max pool's Indices: int64 of Y's shape; other pools have none */
    plx_pool_desc dm = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    dm.kernel[0] = dm.kernel[1] = 2;
    plx_tensor_info two[2], x = F32(1, 2, 5, 5);
    ok(plxi_infer_layer("L", PLX_OP_POOL, &dm, &x, 1, two, 2));
    EXPECT(&two[0], FLOAT32, 1, 2, 4, 4);
    EXPECT(&two[1], INT64, 1, 2, 4, 4);
    dm.kind = PLX_POOL_AVERAGE;
    fails_exactly(plxi_infer_layer("L", PLX_OP_POOL, &dm, &x, 1, two, 2),
                  "layer 'L' (pool): Indices (output 1) come with float32 max pools only, not "
                  "float32 average pools");
    /* average pools take dilations from ABI 1.3: a kernel of 2 dilated by
     * 2 spans 3 */
    d.kernel[0] = d.kernel[1] = 2;
    d.dilations[1] = 2;
    ok(run1(PLX_OP_POOL, &d, F32(1, 1, 5, 5), &y));
    EXPECT(&y, FLOAT32, 1, 1, 4, 3);
    d = (plx_pool_desc)PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    d.kernel[0] = 0;
    fails_with(run1(PLX_OP_POOL, &d, F32(1, 1, 5, 5), &y), "kernel[0] = 0 must be >= 1");
    d.kernel[0] = 2;
    d.pads_begin[0] = 2;
    fails_with(run1(PLX_OP_POOL, &d, F32(1, 1, 5, 5), &y),
               "pads 2 + 0 along spatial dim 0 must be smaller than the dilated kernel 2");
    d.pads_begin[0] = 0;
    d.kind = (plx_pool_kind)7;
    fails_with(run1(PLX_OP_POOL, &d, F32(1, 1, 5, 5), &y), "kind 7 is not a plx_pool_kind");
    d.kind = PLX_POOL_MAX;
    fails_with(run1(PLX_OP_POOL, &d, T(INT32, 1, 1, 5, 5), &y),
               "X has dtype int32, expected float32, float16, bfloat16, float64, int8 or uint8 for max "
               "pooling");
    /* Dilated max pooling: (3-1)*2+1 = 5. */
    d.kernel[0] = d.kernel[1] = 3;
    d.dilations[0] = d.dilations[1] = 2;
    ok(run1(PLX_OP_POOL, &d, F32(1, 1, 9, 5), &y));
    EXPECT(&y, FLOAT32, 1, 1, 5, 1);
}

Test(shape_infer, global_pool) {
    plx_global_pool_desc d = PLX_GLOBAL_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    plx_tensor_info y = {0};
    ok(run1(PLX_OP_GLOBAL_POOL, &d, F32(2, 8, 7, 9), &y));
    EXPECT(&y, FLOAT32, 2, 8, 1, 1);
    ok(run1(PLX_OP_GLOBAL_POOL, &d, F32(2, 8, 7), &y));
    EXPECT(&y, FLOAT32, 2, 8, 1);
    fails_with(run1(PLX_OP_GLOBAL_POOL, &d, F32(2, 8), &y), "X [2,8] must have rank 3 to 5");
    d.kind = (plx_pool_kind)3;
    fails_with(run1(PLX_OP_GLOBAL_POOL, &d, F32(2, 8, 7), &y), "kind 3 is not a plx_pool_kind");
}

/* ------------------------------------------------------------------------ */
/* Elementwise                                                              */

Test(shape_infer, activation) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    plx_tensor_info y = {0};
    ok(run1(PLX_OP_ACTIVATION, &d, F32(2, 3), &y));
    EXPECT(&y, FLOAT32, 2, 3);
    ok(run1(PLX_OP_ACTIVATION, &d, T(INT32, 4), &y));
    EXPECT(&y, INT32, 4);
    fails_with(run1(PLX_OP_ACTIVATION, &d, T(UINT8, 4), &y), "X has dtype uint8");
    plx_activation_desc clip = PLX_ACTIVATION_DESC_INIT(PLX_ACT_CLIP);
    ok(run1(PLX_OP_ACTIVATION, &clip, T(UINT8, 4), &y));
    plx_activation_desc sig = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SIGMOID);
    fails_exactly(run1(PLX_OP_ACTIVATION, &sig, T(INT32, 4), &y),
                  "layer 'L' (activation): X has dtype int32, expected float32, float16, "
                  "bfloat16 or float64 for sigmoid");
    sig.func = (plx_activation_func)99;
    fails_exactly(run1(PLX_OP_ACTIVATION, &sig, F32(4), &y),
                  "layer 'L' (activation): func 99 is not a plx_activation_func");
}

Test(shape_infer, unary) {
    plx_unary_desc d = PLX_UNARY_DESC_INIT(PLX_UNARY_SQRT);
    plx_tensor_info y = {0};
    ok(run1(PLX_OP_UNARY, &d, T(FLOAT16, 3, 1), &y));
    EXPECT(&y, FLOAT16, 3, 1);
    ok(run1(PLX_OP_UNARY, &d, SCALAR(FLOAT32), &y));
    EXPECT_SCALAR(&y, FLOAT32);
    fails_with(run1(PLX_OP_UNARY, &d, T(INT32, 3), &y), "expected float32, float16, bfloat16 or float64 for sqrt");
    d.func = PLX_UNARY_NOT;
    ok(run1(PLX_OP_UNARY, &d, T(BOOL, 3), &y));
    EXPECT(&y, BOOL, 3);
    fails_exactly(run1(PLX_OP_UNARY, &d, F32(3), &y),
                  "layer 'L' (unary): X has dtype float32, expected bool for not");
    d.func = PLX_UNARY_ABS;
    ok(run1(PLX_OP_UNARY, &d, T(UINT8, 3), &y));
    d.func = PLX_UNARY_NEG;
    ok(run1(PLX_OP_UNARY, &d, T(INT8, 3), &y));
    fails_with(run1(PLX_OP_UNARY, &d, T(UINT8, 3), &y), "X has dtype uint8");
    d.func = (plx_unary_func)42;
    fails_with(run1(PLX_OP_UNARY, &d, F32(3), &y), "func 42 is not a plx_unary_func");
}

Test(shape_infer, binary) {
    plx_binary_desc d = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_BINARY, &d, &y, F32(2, 1, 4), F32(3, 1)));
    EXPECT(&y, FLOAT32, 2, 3, 4);
    ok(RUN(PLX_OP_BINARY, &d, &y, T(INT8, 0, 3), T(INT8, 1, 3)));
    EXPECT(&y, INT8, 0, 3);
    ok(RUN(PLX_OP_BINARY, &d, &y, SCALAR(INT64), T(INT64, 5)));
    EXPECT(&y, INT64, 5);
    fails_exactly(RUN(PLX_OP_BINARY, &d, &y, F32(2, 3), F32(4)),
                  "layer 'L' (binary): A [2,3] and B [4] do not broadcast");
    fails_with(RUN(PLX_OP_BINARY, &d, &y, T(INT8, 0), T(INT8, 3)), "A [0] and B [3] do not broadcast");
    fails_exactly(RUN(PLX_OP_BINARY, &d, &y, F32(2), T(INT32, 2)),
                  "layer 'L' (binary): B has dtype int32 but A has float32; they must match");
    fails_with(RUN(PLX_OP_BINARY, &d, &y, T(BOOL, 2), T(BOOL, 2)), "A has dtype bool");
    d.func = PLX_BINARY_LESS;
    ok(RUN(PLX_OP_BINARY, &d, &y, T(INT32, 2, 1), T(INT32, 3)));
    EXPECT(&y, BOOL, 2, 3);
    d.func = PLX_BINARY_EQUAL;
    ok(RUN(PLX_OP_BINARY, &d, &y, T(BOOL, 2), T(BOOL, 2)));
    EXPECT(&y, BOOL, 2);
    d.func = PLX_BINARY_POW;
    fails_with(RUN(PLX_OP_BINARY, &d, &y, T(INT8, 2), T(INT8, 2)), "for pow");
    d.func = (plx_binary_func)22;
    fails_with(RUN(PLX_OP_BINARY, &d, &y, F32(2), F32(2)), "func 22 is not a plx_binary_func");
}

Test(shape_infer, where) {
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_WHERE, NULL, &y, T(BOOL, 2, 1), F32(1, 3), F32(3)));
    EXPECT(&y, FLOAT32, 2, 3);
    ok(RUN(PLX_OP_WHERE, NULL, &y, T(BOOL, 4, 1, 1), T(INT64, 2, 1), T(INT64, 5)));
    EXPECT(&y, INT64, 4, 2, 5);
    fails_exactly(RUN(PLX_OP_WHERE, NULL, &y, F32(2), F32(2), F32(2)),
                  "layer 'L' (where): condition has dtype float32, expected bool");
    fails_with(RUN(PLX_OP_WHERE, NULL, &y, T(BOOL, 2), F32(2), T(FLOAT16, 2)),
               "Y has dtype float16 but X has float32");
    fails_exactly(RUN(PLX_OP_WHERE, NULL, &y, T(BOOL, 2, 1), F32(1, 3), F32(4)),
                  "layer 'L' (where): condition [2,1], X [1,3] and Y [4] do not broadcast");
}

Test(shape_infer, cast) {
    plx_cast_desc d = PLX_CAST_DESC_INIT(PLX_DTYPE_INT8);
    plx_tensor_info y = {0};
    ok(run1(PLX_OP_CAST, &d, F32(2, 5), &y));
    EXPECT(&y, INT8, 2, 5);
    d.to = PLX_DTYPE_BOOL;
    ok(run1(PLX_OP_CAST, &d, T(INT64, 2), &y));
    EXPECT(&y, BOOL, 2);
    d.to = PLX_DTYPE_INVALID;
    fails_exactly(run1(PLX_OP_CAST, &d, F32(2), &y), "layer 'L' (cast): to 0 is not a valid dtype");
    d.to = (plx_dtype)PLX_DTYPE_COUNT;
    fails_with(run1(PLX_OP_CAST, &d, F32(2), &y), "to 20 is not a valid dtype");
}

/* ------------------------------------------------------------------------ */
/* Normalisation and reductions                                             */

Test(shape_infer, batch_norm) {
    plx_batch_norm_desc d = PLX_BATCH_NORM_DESC_INIT;
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_BATCH_NORM, &d, &y, F32(2, 3, 4, 4), F32(3), F32(3), F32(3), F32(3)));
    EXPECT(&y, FLOAT32, 2, 3, 4, 4);
    fails_exactly(RUN(PLX_OP_BATCH_NORM, &d, &y, F32(2, 3, 4, 4), F32(3), F32(3), F32(3), F32(4)),
                  "layer 'L' (batch_norm): var [4] must be [3], one value per channel of X "
                  "[2,3,4,4]");
    fails_with(RUN(PLX_OP_BATCH_NORM, &d, &y, F32(3), F32(3), F32(3), F32(3), F32(3)),
               "X [3] must have rank 2 or more");
    fails_with(RUN(PLX_OP_BATCH_NORM, &d, &y, F32(2, 3), T(FLOAT16, 3), F32(3), F32(3), F32(3)),
               "scale has dtype float16 but X has float32");
    d.epsilon = NAN;
    fails_with(RUN(PLX_OP_BATCH_NORM, &d, &y, F32(2, 3), F32(3), F32(3), F32(3), F32(3)),
               "epsilon nan must be finite and >= 0");
}

Test(shape_infer, layer_norm) {
    plx_layer_norm_desc d = PLX_LAYER_NORM_DESC_INIT;
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_LAYER_NORM, &d, &y, F32(2, 5, 8), F32(8), F32(8)));
    EXPECT(&y, FLOAT32, 2, 5, 8);
    d.axis = 1;
    ok(RUN(PLX_OP_LAYER_NORM, &d, &y, F32(2, 5, 8), F32(5, 8)));
    ok(RUN(PLX_OP_LAYER_NORM, &d, &y, F32(2, 5, 8), F32(1, 8)));
    fails_exactly(RUN(PLX_OP_LAYER_NORM, &d, &y, F32(2, 5, 8), F32(5)),
                  "layer 'L' (layer_norm): scale [5] does not broadcast to the normalised dims "
                  "[5,8] of X [2,5,8]");
    d.axis = -1;
    fails_with(RUN(PLX_OP_LAYER_NORM, &d, &y, F32(2, 5, 8), F32(5, 8)),
               "scale [5,8] does not broadcast to the normalised dims [8]");
    d.axis = 3;
    fails_exactly(RUN(PLX_OP_LAYER_NORM, &d, &y, F32(2, 5, 8), F32(8)),
                  "layer 'L' (layer_norm): axis 3 is out of range [-3, 3) for X [2,5,8]");
    d.axis = -1;
    fails_with(RUN(PLX_OP_LAYER_NORM, &d, &y, F32(2, 8), F32(8), T(FLOAT16, 8)),
               "bias has dtype float16 but X has float32");
}

Test(shape_infer, softmax) {
    plx_softmax_desc d = PLX_SOFTMAX_DESC_INIT;
    plx_tensor_info y = {0};
    ok(run1(PLX_OP_SOFTMAX, &d, F32(2, 3), &y));
    EXPECT(&y, FLOAT32, 2, 3);
    d.axis = -2;
    ok(run1(PLX_OP_SOFTMAX, &d, F32(2, 3), &y));
    d.axis = 2;
    fails_exactly(run1(PLX_OP_SOFTMAX, &d, F32(2, 3), &y),
                  "layer 'L' (softmax): axis 2 is out of range [-2, 2) for X [2,3]");
    d.axis = -1;
    fails_with(run1(PLX_OP_SOFTMAX, &d, T(INT32, 2, 3), &y), "X has dtype int32");
}

Test(shape_infer, reduce) {
    plx_reduce_desc d = PLX_REDUCE_DESC_INIT(PLX_REDUCE_MEAN);
    plx_tensor_info y = {0};
    d.axes[0] = -1;
    d.axis_count = 1;
    ok(run1(PLX_OP_REDUCE, &d, F32(2, 3, 4), &y));
    EXPECT(&y, FLOAT32, 2, 3, 1);
    d.keepdims = false;
    ok(run1(PLX_OP_REDUCE, &d, F32(2, 3, 4), &y));
    EXPECT(&y, FLOAT32, 2, 3);
    d.axes[1] = 0;
    d.axis_count = 2;
    ok(run1(PLX_OP_REDUCE, &d, T(INT32, 2, 3, 4), &y));
    EXPECT(&y, INT32, 3);
    /* No axes: everything, unless noop_with_empty_axes. */
    d.axis_count = 0;
    ok(run1(PLX_OP_REDUCE, &d, F32(2, 3, 4), &y));
    EXPECT_SCALAR(&y, FLOAT32);
    d.keepdims = true;
    ok(run1(PLX_OP_REDUCE, &d, F32(2, 3, 4), &y));
    EXPECT(&y, FLOAT32, 1, 1, 1);
    d.noop_with_empty_axes = true;
    ok(run1(PLX_OP_REDUCE, &d, F32(2, 3, 4), &y));
    EXPECT(&y, FLOAT32, 2, 3, 4);
    d.axes[0] = 1;
    d.axes[1] = -2;
    d.axis_count = 2;
    fails_exactly(run1(PLX_OP_REDUCE, &d, F32(2, 3, 4), &y),
                  "layer 'L' (reduce): axes[1] = -2 repeats axis 1");
    d.axes[1] = -4;
    fails_exactly(run1(PLX_OP_REDUCE, &d, F32(2, 3, 4), &y),
                  "layer 'L' (reduce): axes[1] -4 is out of range [-3, 3) for X [2,3,4]");
    d.axis_count = 1;
    fails_with(run1(PLX_OP_REDUCE, &d, T(BOOL, 2, 3, 4), &y), "X has dtype bool");
    d.func = (plx_reduce_func)10;
    fails_with(run1(PLX_OP_REDUCE, &d, F32(2, 3, 4), &y), "func 10 is not a plx_reduce_func");
}

/* ------------------------------------------------------------------------ */
/* Data movement                                                            */

Test(shape_infer, reshape) {
    plx_reshape_desc d = PLX_RESHAPE_DESC_INIT;
    plx_tensor_info y = {0};
    d.dims[0] = 0;
    d.dims[1] = -1;
    d.rank = 2;
    ok(run1(PLX_OP_RESHAPE, &d, F32(2, 3, 4), &y));
    EXPECT(&y, FLOAT32, 2, 12);
    d.dims[0] = 4;
    d.dims[1] = 0;
    d.dims[2] = 2;
    d.rank = 3;
    ok(run1(PLX_OP_RESHAPE, &d, F32(2, 3, 4), &y));
    EXPECT(&y, FLOAT32, 4, 3, 2);
    d.rank = 0;
    ok(run1(PLX_OP_RESHAPE, &d, F32(1, 1), &y));
    EXPECT_SCALAR(&y, FLOAT32);
    /* allow_zero: 0 is a real zero. */
    d.allow_zero = true;
    d.dims[0] = 0;
    d.dims[1] = 3;
    d.rank = 2;
    ok(run1(PLX_OP_RESHAPE, &d, F32(3, 0), &y));
    EXPECT(&y, FLOAT32, 0, 3);
    d.dims[1] = -1;
    fails_with(run1(PLX_OP_RESHAPE, &d, F32(3, 0), &y), "has both -1 and 0 with allow_zero");
    d.allow_zero = false;
    d.dims[0] = -1;
    fails_exactly(run1(PLX_OP_RESHAPE, &d, F32(2, 3), &y),
                  "layer 'L' (reshape): dims [-1,-1] has more than one -1");
    d.dims[0] = -2;
    fails_with(run1(PLX_OP_RESHAPE, &d, F32(2, 3), &y), "dims[0] = -2 must be >= -1");
    d.dims[0] = 4;
    fails_with(run1(PLX_OP_RESHAPE, &d, F32(2, 3), &y),
               "cannot infer the -1 of dims [4,-1] from X [2,3] (6 elements)");
    d.dims[1] = 2;
    fails_exactly(run1(PLX_OP_RESHAPE, &d, F32(2, 3), &y),
                  "layer 'L' (reshape): X [2,3] has 6 elements, dims [4,2] ([4,2]) have 8");
    d.dims[0] = 1;
    d.dims[1] = 6;
    d.dims[2] = 0;
    d.rank = 3;
    fails_with(run1(PLX_OP_RESHAPE, &d, F32(2, 3), &y),
               "dims[2] = 0 copies a dim of X [2,3], which has rank 2");
    d.dims[0] = INT64_C(1) << 32;
    d.dims[1] = INT64_C(1) << 32;
    d.dims[2] = 16;
    fails_exactly(run1(PLX_OP_RESHAPE, &d, F32(2, 3), &y),
                  "layer 'L' (reshape): dims [4294967296,4294967296,16] overflow the element count");
    d.rank = 9;
    fails_with(run1(PLX_OP_RESHAPE, &d, F32(2, 3), &y), "rank 9 is more than 8");
}

Test(shape_infer, quantization_pass_through) {
    plx_reshape_desc d = PLX_RESHAPE_DESC_INIT;
    d.dims[0] = -1;
    d.rank = 1;
    plx_tensor_info x = T(UINT8, 2, 3), y;
    x.quant.kind = PLX_QUANT_PER_TENSOR;
    x.quant.scale = 0.5f;
    x.quant.zero_point = 128;
    ok(run1(PLX_OP_RESHAPE, &d, x, &y));
    EXPECT(&y, UINT8, 6);
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_PER_TENSOR));
    cr_assert(eq(flt, y.quant.scale, 0.5f));
    cr_assert(eq(i32, y.quant.zero_point, 128));
    /* Per-axis parameters are dropped by data movement... */
    static const float scales[3] = {0.1f, 0.2f, 0.3f};
    plx_tensor_info pa = T(INT8, 2, 3);
    pa.quant.kind = PLX_QUANT_PER_AXIS;
    pa.quant.axis = 1;
    pa.quant.scales = scales;
    ok(run1(PLX_OP_RESHAPE, &d, pa, &y));
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_NONE));
    /* ...kept by copies... */
    ok(plxi_infer_layer("copy", PLX_OP_MEM_COPY, NULL, &pa, 1, &y, 1));
    EXPECT(&y, INT8, 2, 3);
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_PER_AXIS));
    cr_assert(eq(ptr, (void *)y.quant.scales, (void *)scales));
    ok(plxi_infer_layer("imp", PLX_OP_MEM_IMPORT, NULL, &x, 1, &y, 1));
    EXPECT(&y, UINT8, 2, 3);
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_PER_TENSOR));
    /* ...and never invented by computing ops. */
    plx_cast_desc cast = PLX_CAST_DESC_INIT(PLX_DTYPE_INT32);
    ok(run1(PLX_OP_CAST, &cast, x, &y));
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_NONE));
    /* Concat keeps parameters all inputs share, drops differing ones. */
    plx_axis_desc axis = PLX_AXIS_DESC_INIT(0);
    plx_tensor_info two[2] = {x, x};
    ok(plxi_infer_layer("cat", PLX_OP_CONCAT, &axis, two, 2, &y, 1));
    EXPECT(&y, UINT8, 4, 3);
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_PER_TENSOR));
    two[1].quant.zero_point = 127;
    memset(&y, 0, sizeof y); /* Y's parameters not set (the network passes none) */
    ok(plxi_infer_layer("cat", PLX_OP_CONCAT, &axis, two, 2, &y, 1));
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_NONE));
}

Test(shape_infer, flatten) {
    plx_axis_desc d = PLX_AXIS_DESC_INIT(2);
    plx_tensor_info y = {0};
    ok(run1(PLX_OP_FLATTEN, &d, F32(2, 3, 4, 5), &y));
    EXPECT(&y, FLOAT32, 6, 20);
    d.axis = 0;
    ok(run1(PLX_OP_FLATTEN, &d, F32(2, 3, 4, 5), &y));
    EXPECT(&y, FLOAT32, 1, 120);
    d.axis = 4;
    ok(run1(PLX_OP_FLATTEN, &d, F32(2, 3, 4, 5), &y));
    EXPECT(&y, FLOAT32, 120, 1);
    d.axis = -1;
    ok(run1(PLX_OP_FLATTEN, &d, T(BOOL, 2, 3, 4, 5), &y));
    EXPECT(&y, BOOL, 24, 5);
    d.axis = 5;
    fails_exactly(run1(PLX_OP_FLATTEN, &d, F32(2, 3, 4, 5), &y),
                  "layer 'L' (flatten): axis 5 is out of range [-4, 4] for X [2,3,4,5]");
}

Test(shape_infer, transpose) {
    plx_transpose_desc d = PLX_TRANSPOSE_DESC_INIT;
    plx_tensor_info y = {0};
    ok(run1(PLX_OP_TRANSPOSE, &d, F32(2, 3, 4), &y));
    EXPECT(&y, FLOAT32, 4, 3, 2);
    d.perm[0] = 0;
    d.perm[1] = 2;
    d.perm[2] = 1;
    d.perm_count = 3;
    ok(run1(PLX_OP_TRANSPOSE, &d, T(INT64, 2, 3, 4), &y));
    EXPECT(&y, INT64, 2, 4, 3);
    d.perm[2] = 2;
    fails_exactly(run1(PLX_OP_TRANSPOSE, &d, F32(2, 3, 4), &y),
                  "layer 'L' (transpose): perm[2] = 2: perm must be a permutation of 0..2");
    d.perm[2] = 3;
    fails_with(run1(PLX_OP_TRANSPOSE, &d, F32(2, 3, 4), &y), "perm[2] = 3");
    fails_with(run1(PLX_OP_TRANSPOSE, &d, F32(2, 3), &y), "perm has 3 entries, X [2,3] has rank 2");
}

Test(shape_infer, concat) {
    plx_axis_desc d = PLX_AXIS_DESC_INIT(1);
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_CONCAT, &d, &y, F32(2, 3), F32(2, 5), F32(2, 0)));
    EXPECT(&y, FLOAT32, 2, 8);
    d.axis = -2;
    ok(RUN(PLX_OP_CONCAT, &d, &y, F32(2, 3), F32(4, 3)));
    EXPECT(&y, FLOAT32, 6, 3);
    ok(RUN(PLX_OP_CONCAT, &d, &y, F32(2, 3)));
    EXPECT(&y, FLOAT32, 2, 3);
    d.axis = 1;
    fails_exactly(RUN(PLX_OP_CONCAT, &d, &y, F32(2, 3), F32(3, 5)),
                  "layer 'L' (concat): input 1 [3,5] differs from input 0 [2,3] outside axis 1");
    fails_with(RUN(PLX_OP_CONCAT, &d, &y, F32(2, 3), F32(2, 3, 1)),
               "input 1 [2,3,1] differs from input 0 [2,3] outside axis 1");
    fails_with(RUN(PLX_OP_CONCAT, &d, &y, F32(2, 3), F32(2, 3), T(INT8, 2, 3)),
               "input 2 has dtype int8 but input 0 has float32");
    fails_with(RUN(PLX_OP_CONCAT, &d, &y, SCALAR(FLOAT32)), "axis 1 is out of range [-0, 0)");
    fails_with(RUN(PLX_OP_CONCAT, &d, &y, T(INT8, 1, INT64_MAX), T(INT8, 1, 1)),
               "the concatenated axis 1 overflows");
}

Test(shape_infer, split) {
    plx_split_desc d = PLX_SPLIT_DESC_INIT(1);
    plx_tensor_info x = F32(10, 7), y[4];
    /* Equal parts with a remainder: ceil(7/3) = 3, 3, then 1. */
    ok(plxi_infer_layer("s", PLX_OP_SPLIT, &d, &x, 1, y, 3));
    EXPECT(&y[0], FLOAT32, 10, 3);
    EXPECT(&y[1], FLOAT32, 10, 3);
    EXPECT(&y[2], FLOAT32, 10, 1);
    x = F32(8);
    d.axis = -1;
    ok(plxi_infer_layer("s", PLX_OP_SPLIT, &d, &x, 1, y, 3));
    EXPECT(&y[0], FLOAT32, 3);
    EXPECT(&y[2], FLOAT32, 2);
    ok(plxi_infer_layer("s", PLX_OP_SPLIT, &d, &x, 1, y, 4));
    EXPECT(&y[3], FLOAT32, 2);
    x = F32(5);
    fails_exactly(plxi_infer_layer("s", PLX_OP_SPLIT, &d, &x, 1, y, 4),
                  "layer 's' (split): axis 0 of X [5] (size 5) cannot be split into 4 parts of 2");
    /* Explicit sizes. */
    int64_t sizes[3] = {2, 0, 5};
    d.sizes = sizes;
    x = T(INT8, 7, 2);
    d.axis = 0;
    ok(plxi_infer_layer("s", PLX_OP_SPLIT, &d, &x, 1, y, 3));
    EXPECT(&y[0], INT8, 2, 2);
    EXPECT(&y[1], INT8, 0, 2);
    EXPECT(&y[2], INT8, 5, 2);
    sizes[2] = 4;
    fails_exactly(plxi_infer_layer("s", PLX_OP_SPLIT, &d, &x, 1, y, 3),
                  "layer 's' (split): sizes sum to 6, but axis 0 of X [7,2] has size 7");
    sizes[1] = -1;
    sizes[2] = 6;
    fails_with(plxi_infer_layer("s", PLX_OP_SPLIT, &d, &x, 1, y, 3), "sizes[1] = -1 must be >= 0");
    d.axis = 2;
    fails_with(plxi_infer_layer("s", PLX_OP_SPLIT, &d, &x, 1, y, 3),
               "axis 2 is out of range [-2, 2) for X [7,2]");
}

Test(shape_infer, slice) {
    plx_slice_desc d = PLX_SLICE_DESC_INIT;
    plx_tensor_info y = {0};
    d.count = 1;
    d.starts[0] = 1;
    d.ends[0] = 8;
    d.steps[0] = 3; /* 1, 4, 7 */
    ok(run1(PLX_OP_SLICE, &d, F32(10, 4), &y));
    EXPECT(&y, FLOAT32, 3, 4);
    /* Clamping. */
    d.starts[0] = -100;
    d.ends[0] = INT64_MAX;
    d.steps[0] = 1;
    ok(run1(PLX_OP_SLICE, &d, F32(10, 4), &y));
    EXPECT(&y, FLOAT32, 10, 4);
    d.starts[0] = 20;
    ok(run1(PLX_OP_SLICE, &d, F32(10, 4), &y));
    EXPECT(&y, FLOAT32, 0, 4);
    d.starts[0] = -3;
    d.ends[0] = -1;
    ok(run1(PLX_OP_SLICE, &d, F32(10, 4), &y));
    EXPECT(&y, FLOAT32, 2, 4);
    /* Negative steps: the whole axis reversed, 8 6 4 2, and clamped starts. */
    d.starts[0] = -1;
    d.ends[0] = INT64_MIN;
    d.steps[0] = -1;
    ok(run1(PLX_OP_SLICE, &d, F32(10, 4), &y));
    EXPECT(&y, FLOAT32, 10, 4);
    d.starts[0] = 8;
    d.ends[0] = 1;
    d.steps[0] = -2;
    ok(run1(PLX_OP_SLICE, &d, F32(10, 4), &y));
    EXPECT(&y, FLOAT32, 4, 4);
    d.starts[0] = 100; /* clamped to 9: 9, 6, 3, 0 */
    d.ends[0] = -100;
    d.steps[0] = -3;
    ok(run1(PLX_OP_SLICE, &d, F32(10, 4), &y));
    EXPECT(&y, FLOAT32, 4, 4);
    d.starts[0] = 2;
    d.ends[0] = 5;
    ok(run1(PLX_OP_SLICE, &d, F32(10, 4), &y));
    EXPECT(&y, FLOAT32, 0, 4);
    d.starts[0] = -1;
    d.ends[0] = INT64_MIN;
    d.steps[0] = INT64_MIN;
    ok(run1(PLX_OP_SLICE, &d, F32(10, 4), &y));
    EXPECT(&y, FLOAT32, 1, 4);
    /* Several axes, negative axis. */
    d.count = 2;
    d.axes[0] = -1;
    d.starts[0] = 1;
    d.ends[0] = 3;
    d.steps[0] = 1;
    d.axes[1] = 0;
    d.starts[1] = 0;
    d.ends[1] = 5;
    d.steps[1] = 2;
    ok(run1(PLX_OP_SLICE, &d, T(INT8, 10, 4), &y));
    EXPECT(&y, INT8, 3, 2);
    ok(run1(PLX_OP_SLICE, &d, T(INT8, 0, 4), &y));
    EXPECT(&y, INT8, 0, 2);
    d.axes[1] = 1;
    fails_exactly(run1(PLX_OP_SLICE, &d, F32(10, 4), &y),
                  "layer 'L' (slice): axes[1] = 1 repeats axis 1");
    d.axes[1] = 2;
    fails_with(run1(PLX_OP_SLICE, &d, F32(10, 4), &y), "axes[1] 2 is out of range [-2, 2)");
    d.axes[1] = 0;
    d.steps[1] = 0;
    fails_exactly(run1(PLX_OP_SLICE, &d, F32(10, 4), &y), "layer 'L' (slice): steps[1] is 0");
}

Test(shape_infer, pad) {
    plx_pad_desc d = PLX_PAD_DESC_INIT(PLX_PAD_CONSTANT);
    plx_tensor_info y = {0};
    d.pads_begin[0] = 1;
    d.pads_begin[1] = 2;
    d.pads_end[1] = -1;
    ok(run1(PLX_OP_PAD, &d, T(BOOL, 2, 3), &y));
    EXPECT(&y, BOOL, 3, 4);
    d.pads_end[1] = -6;
    fails_exactly(run1(PLX_OP_PAD, &d, F32(2, 3), &y),
                  "layer 'L' (pad): pads 2 and -6 crop dim 1 of X [2,3] below 0");
    d.pads_end[1] = -5;
    ok(run1(PLX_OP_PAD, &d, F32(2, 3), &y));
    EXPECT(&y, FLOAT32, 3, 0);
    d.mode = PLX_PAD_REFLECT;
    d.pads_end[1] = 0;
    d.pads_begin[1] = 3;
    fails_with(run1(PLX_OP_PAD, &d, F32(2, 3), &y),
               "reflect pads 3 and 0 must be smaller than dim 1 of X [2,3]");
    d.pads_begin[1] = 2;
    ok(run1(PLX_OP_PAD, &d, F32(2, 3), &y));
    EXPECT(&y, FLOAT32, 3, 5);
    /* wrap: any size of pad, but no crop and no empty dim */
    d.mode = PLX_PAD_WRAP;
    d.pads_begin[1] = 7;
    ok(run1(PLX_OP_PAD, &d, F32(2, 3), &y));
    EXPECT(&y, FLOAT32, 3, 10);
    d.pads_end[1] = -1;
    fails_exactly(run1(PLX_OP_PAD, &d, F32(2, 3), &y),
                  "layer 'L' (pad): wrap pads 7 and -1 of dim 1 must be >= 0");
    d.pads_end[1] = 0;
    fails_with(run1(PLX_OP_PAD, &d, F32(2, 0), &y), "wrap padding of the empty dim 1 of X [2,0]");
    d.pads_begin[1] = 2;
    d.mode = (plx_pad_mode)4;
    fails_with(run1(PLX_OP_PAD, &d, F32(2, 3), &y), "mode 4 is not a plx_pad_mode");
    d.mode = PLX_PAD_CONSTANT;
    d.pads_end[0] = INT64_MAX;
    fails_with(run1(PLX_OP_PAD, &d, F32(2, 3), &y), "padded dim 0 overflows");
}

Test(shape_infer, squeeze) {
    plx_axes_desc d = PLX_AXES_DESC_INIT;
    plx_tensor_info y = {0};
    ok(run1(PLX_OP_SQUEEZE, &d, F32(1, 3, 1, 5), &y));
    EXPECT(&y, FLOAT32, 3, 5);
    ok(run1(PLX_OP_SQUEEZE, &d, F32(1, 1), &y));
    EXPECT_SCALAR(&y, FLOAT32);
    d.axes[0] = -2;
    d.axis_count = 1;
    ok(run1(PLX_OP_SQUEEZE, &d, F32(1, 3, 1, 5), &y));
    EXPECT(&y, FLOAT32, 1, 3, 5);
    d.axes[0] = 1;
    fails_exactly(run1(PLX_OP_SQUEEZE, &d, F32(1, 3, 1, 5), &y),
                  "layer 'L' (squeeze): axis 1 of X [1,3,1,5] has size 3, not 1");
    d.axes[0] = 4;
    fails_with(run1(PLX_OP_SQUEEZE, &d, F32(1, 3, 1, 5), &y), "axes[0] 4 is out of range [-4, 4)");
}

Test(shape_infer, unsqueeze) {
    plx_axes_desc d = PLX_AXES_DESC_INIT;
    plx_tensor_info y = {0};
    d.axes[0] = 0;
    d.axes[1] = -1;
    d.axis_count = 2;
    ok(run1(PLX_OP_UNSQUEEZE, &d, F32(3, 4), &y));
    EXPECT(&y, FLOAT32, 1, 3, 4, 1);
    d.axes[0] = 1;
    d.axis_count = 1;
    ok(run1(PLX_OP_UNSQUEEZE, &d, F32(3, 4), &y));
    EXPECT(&y, FLOAT32, 3, 1, 4);
    d.axes[0] = 0;
    ok(run1(PLX_OP_UNSQUEEZE, &d, SCALAR(INT64), &y));
    EXPECT(&y, INT64, 1);
    d.axes[0] = 3;
    fails_exactly(run1(PLX_OP_UNSQUEEZE, &d, F32(3, 4), &y),
                  "layer 'L' (unsqueeze): axes[0] = 3 is out of range [-3, 3) for the output rank 3");
    d.axes[0] = 2;
    d.axes[1] = -2;
    d.axis_count = 2;
    fails_with(run1(PLX_OP_UNSQUEEZE, &d, F32(3, 4), &y), "axes[1] = -2 repeats axis 2");
    d.axis_count = 0;
    fails_with(run1(PLX_OP_UNSQUEEZE, &d, F32(3, 4), &y), "axis_count is 0");
    d.axis_count = 2;
    fails_with(run1(PLX_OP_UNSQUEEZE, &d, F32(1, 1, 1, 1, 1, 1, 1), &y), "would exceed rank 8");
}

Test(shape_infer, gather) {
    plx_axis_desc d = PLX_AXIS_DESC_INIT(0);
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_GATHER, &d, &y, F32(5, 4), T(INT64, 3)));
    EXPECT(&y, FLOAT32, 3, 4);
    d.axis = 1;
    ok(RUN(PLX_OP_GATHER, &d, &y, F32(5, 4), T(INT32, 2, 3)));
    EXPECT(&y, FLOAT32, 5, 2, 3);
    d.axis = -2;
    ok(RUN(PLX_OP_GATHER, &d, &y, T(BOOL, 5, 4), SCALAR(INT64)));
    EXPECT(&y, BOOL, 4);
    /* ABI 1.3: 8-bit indices; data's quantization passes through */
    d.axis = 0;
    plx_tensor_info table = T(INT8, 256);
    table.quant.kind = PLX_QUANT_PER_TENSOR;
    table.quant.scale = 0.5f;
    ok(RUN(PLX_OP_GATHER, &d, &y, table, T(UINT8, 2, 3)));
    EXPECT(&y, INT8, 2, 3);
    cr_assert(eq(flt, y.quant.scale, 0.5f));
    ok(RUN(PLX_OP_GATHER, &d, &y, F32(5, 4), T(INT8, 3)));
    EXPECT(&y, FLOAT32, 3, 4);
    fails_exactly(RUN(PLX_OP_GATHER, &d, &y, F32(5, 4), F32(3)),
                  "layer 'L' (gather): indices has dtype float32, expected int8, uint8, int32 or "
                  "int64");
    d.axis = 2;
    fails_exactly(RUN(PLX_OP_GATHER, &d, &y, F32(5, 4), T(INT32, 3)),
                  "layer 'L' (gather): axis 2 is out of range [-2, 2) for data [5,4]");
    d.axis = 0;
    fails_with(RUN(PLX_OP_GATHER, &d, &y, F32(1, 1, 1, 1, 1), T(INT32, 1, 1, 1, 1, 1)),
               "the output rank 9");
}

Test(shape_infer, expand) {
    plx_shape_desc d = PLX_SHAPE_DESC_INIT;
    plx_tensor_info y = {0};
    d.dims[0] = 2;
    d.dims[1] = 1;
    d.dims[2] = 4;
    d.rank = 3;
    ok(run1(PLX_OP_EXPAND, &d, F32(3, 1), &y));
    EXPECT(&y, FLOAT32, 2, 3, 4);
    /* The desc shape may be shorter than the input. */
    d.dims[0] = 4;
    d.rank = 1;
    ok(run1(PLX_OP_EXPAND, &d, T(INT8, 2, 1), &y));
    EXPECT(&y, INT8, 2, 4);
    d.dims[0] = 3;
    fails_exactly(run1(PLX_OP_EXPAND, &d, F32(2, 2), &y),
                  "layer 'L' (expand): X [2,2] does not broadcast with the shape [3]");
    d.dims[0] = -1;
    fails_with(run1(PLX_OP_EXPAND, &d, F32(2, 1), &y), "dims[0] = -1 must be >= 0");
    /* 2^31 * 2^31 elements fit size_t, 2^65 bytes do not. */
    d.dims[0] = INT64_C(1) << 31;
    d.dims[1] = INT64_C(1) << 31;
    d.rank = 2;
    fails_exactly(plxi_infer_layer("big", PLX_OP_EXPAND, &d, (const plx_tensor_info[]){T(INT64, 1, 1)},
                                   1, &y, 1),
                  "layer 'big' (expand): Y [2147483648,2147483648] (int64) is too large: its byte "
                  "size overflows size_t");
}

Test(shape_infer, resize) {
    plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_LINEAR);
    plx_tensor_info y = {0};
    d.scales[0] = d.scales[1] = 2.0f;
    ok(run1(PLX_OP_RESIZE, &d, F32(1, 3, 4, 5), &y));
    EXPECT(&y, FLOAT32, 1, 3, 8, 10);
    d.scales[0] = d.scales[1] = 0.5f;
    ok(run1(PLX_OP_RESIZE, &d, F32(1, 3, 4, 5), &y));
    EXPECT(&y, FLOAT32, 1, 3, 2, 2);
    d.scales[0] = d.scales[1] = 0.0f;
    d.sizes[0] = 7;
    d.sizes[1] = 9;
    ok(run1(PLX_OP_RESIZE, &d, T(FLOAT16, 1, 3, 4, 5), &y));
    EXPECT(&y, FLOAT16, 1, 3, 7, 9);
    /* ABI 1.3: sizes with scales (which then only map coordinates) */
    d.scales[0] = 1.5f;
    d.scales[1] = 2.0f;
    ok(run1(PLX_OP_RESIZE, &d, T(FLOAT16, 1, 3, 4, 5), &y));
    EXPECT(&y, FLOAT16, 1, 3, 7, 9);
    d.scales[1] = 0.0f;
    fails_exactly(run1(PLX_OP_RESIZE, &d, F32(1, 3, 4, 5), &y),
                  "layer 'L' (resize): scales[1] = 0 must be finite and > 0");
    d.sizes[0] = d.sizes[1] = 0;
    d.scales[0] = 0.0f;
    fails_exactly(run1(PLX_OP_RESIZE, &d, F32(1, 3, 4, 5), &y),
                  "layer 'L' (resize): give sizes or scales");
    d.sizes[0] = 4;
    d.sizes[1] = -2;
    fails_with(run1(PLX_OP_RESIZE, &d, F32(1, 3, 4, 5), &y), "sizes[1] = -2 must be >= 1");
    d.sizes[0] = d.sizes[1] = 0;
    d.scales[0] = 2.0f;
    d.scales[1] = -1.0f;
    fails_with(run1(PLX_OP_RESIZE, &d, F32(1, 3, 4, 5), &y), "scales[1] = -1 must be finite and > 0");
    d.scales[1] = 2.0f;
    fails_with(run1(PLX_OP_RESIZE, &d, F32(3, 4, 5), &y), "X [3,4,5] must have rank 4");
    fails_with(run1(PLX_OP_RESIZE, &d, T(UINT8, 1, 3, 4, 5), &y), "X has dtype uint8");
    /* nearest moves values: 8-bit X, its per-tensor quantization kept */
    d.mode = PLX_RESIZE_NEAREST;
    plx_tensor_info q = T(INT8, 1, 3, 4, 5);
    q.quant.kind = PLX_QUANT_PER_TENSOR;
    q.quant.scale = 0.25f;
    q.quant.zero_point = -3;
    ok(run1(PLX_OP_RESIZE, &d, q, &y));
    EXPECT(&y, INT8, 1, 3, 8, 10);
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_PER_TENSOR));
    cr_assert(eq(flt, y.quant.scale, 0.25f));
    cr_assert(eq(i32, y.quant.zero_point, -3));
    d.mode = (plx_resize_mode)5;
    fails_with(run1(PLX_OP_RESIZE, &d, F32(1, 3, 4, 5), &y), "mode 5 is not a plx_resize_mode");
    d.mode = PLX_RESIZE_NEAREST;
    d.coord = (plx_resize_coord)7;
    fails_with(run1(PLX_OP_RESIZE, &d, F32(1, 3, 4, 5), &y), "coord 7 is not a plx_resize_coord");
    /* ABI 1.3: the new modes and coordinates, their names, and the
     * fields they read */
    cr_assert(eq(str, (char *)plx_resize_mode_name(PLX_RESIZE_CUBIC_ANTIALIAS), "cubic_antialias"));
    cr_assert(eq(str, (char *)plx_resize_coord_name(PLX_RESIZE_COORD_TF_CROP_AND_RESIZE),
                 "tf_crop_and_resize"));
    cr_assert(zero(ptr, (void *)plx_resize_mode_name((plx_resize_mode)5)));
    cr_assert(zero(ptr, (void *)plx_resize_coord_name((plx_resize_coord)7)));
    plx_resize_desc e = PLX_RESIZE_DESC_INIT(PLX_RESIZE_CUBIC_ANTIALIAS);
    cr_assert(eq(flt, e.cubic_coeff_a, -0.75f));
    cr_assert(not(e.exclude_outside));
    cr_assert(eq(flt, e.roi_start[0], 0.0f));
    cr_assert(eq(flt, e.roi_end[1], 1.0f));
    cr_assert(eq(flt, e.extrapolation_value, 0.0f));
    e.coord = PLX_RESIZE_COORD_TF_CROP_AND_RESIZE;
    e.sizes[0] = e.sizes[1] = 3;
    ok(run1(PLX_OP_RESIZE, &e, F32(1, 3, 4, 5), &y));
    EXPECT(&y, FLOAT32, 1, 3, 3, 3);
    e.cubic_coeff_a = NAN;
    fails_exactly(run1(PLX_OP_RESIZE, &e, F32(1, 3, 4, 5), &y),
                  "layer 'L' (resize): cubic_coeff_a nan must be finite");
    e.mode = PLX_RESIZE_LINEAR; /* which does not read it */
    ok(run1(PLX_OP_RESIZE, &e, F32(1, 3, 4, 5), &y));
    e.roi_end[1] = INFINITY;
    fails_exactly(run1(PLX_OP_RESIZE, &e, F32(1, 3, 4, 5), &y),
                  "layer 'L' (resize): roi of dim 3 [0, inf] must be finite");
    e.coord = PLX_RESIZE_COORD_HALF_PIXEL_SYMMETRIC; /* which does not read it */
    ok(run1(PLX_OP_RESIZE, &e, F32(1, 3, 4, 5), &y));
}

Test(shape_infer, deform_conv) {
    plx_deform_conv_desc d = PLX_DEFORM_CONV_DESC_INIT;
    plx_tensor_info y = {0};
    uint32_t a, b, c, e;
    cr_assert(plxi_op_arity(PLX_OP_DEFORM_CONV, &a, &b, &c, &e));
    cr_assert(eq(u32, a, 3));
    cr_assert(eq(u32, b, 5));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_DEFORM_CONV), sizeof(plx_deform_conv_desc)));
    cr_assert(eq(str, (char *)plx_op_name(PLX_OP_DEFORM_CONV), "deform_conv"));
    /* 3x3 kernel, pads 1, stride 2 over 7x8: 4x4; offset_group 2 */
    d.strides[0] = d.strides[1] = 2;
    d.pads_begin[0] = d.pads_begin[1] = d.pads_end[0] = d.pads_end[1] = 1;
    d.group = 2;
    d.offset_group = 2;
    ok(RUN(PLX_OP_DEFORM_CONV, &d, &y, F32(2, 4, 7, 8), F32(6, 2, 3, 3), F32(2, 36, 4, 4)));
    EXPECT(&y, FLOAT32, 2, 6, 4, 4);
    ok(RUN(PLX_OP_DEFORM_CONV, &d, &y, F32(2, 4, 7, 8), F32(6, 2, 3, 3), F32(2, 36, 4, 4), F32(6),
           F32(2, 18, 4, 4)));
    EXPECT(&y, FLOAT32, 2, 6, 4, 4);
    fails_exactly(RUN(PLX_OP_DEFORM_CONV, &d, &y, F32(2, 4, 7, 8), F32(6, 2, 3, 3),
                      F32(2, 18, 4, 4)),
                  "layer 'L' (deform_conv): offset [2,18,4,4] must be [2, 36, 4, 4] "
                  "([N, offset_group * 2 * kH * kW, oH, oW])");
    fails_with(RUN(PLX_OP_DEFORM_CONV, &d, &y, F32(2, 4, 7, 8), F32(6, 2, 3, 3), F32(2, 36, 4, 4),
                   F32(6), F32(2, 18, 4, 5)),
               "mask [2,18,4,5] must be [2, 18, 4, 4]");
    fails_with(RUN(PLX_OP_DEFORM_CONV, &d, &y, F32(2, 4, 7, 8), F32(6, 2, 3, 3), F32(2, 36, 4, 4),
                   F32(5)),
               "B [5] must be [6]");
    fails_with(RUN(PLX_OP_DEFORM_CONV, &d, &y, F32(2, 4, 7, 8), F32(6, 4, 3, 3), F32(2, 36, 4, 4)),
               "W [6,4,3,3] must be [M, C/group, kH, kW]");
    d.offset_group = 3;
    fails_with(RUN(PLX_OP_DEFORM_CONV, &d, &y, F32(2, 4, 7, 8), F32(6, 2, 3, 3), F32(2, 54, 4, 4)),
               "X [2,4,7,8] has 4 channels, not divisible by offset_group 3");
    d.offset_group = 2;
    d.pads_begin[0] = d.pads_end[0] = 0;
    fails_with(RUN(PLX_OP_DEFORM_CONV, &d, &y, F32(2, 4, 2, 8), F32(6, 2, 3, 3), F32(2, 36, 1, 4)),
               "does not fit X");
    fails_with(RUN(PLX_OP_DEFORM_CONV, &d, &y, F32(2, 4, 7, 8), T(FLOAT16, 6, 2, 3, 3),
                   F32(2, 36, 3, 4)),
               "W");
}

Test(shape_infer, roi_align) {
    plx_roi_align_desc d = PLX_ROI_ALIGN_DESC_INIT;
    plx_tensor_info y = {0};
    uint32_t a, b, c, e;
    cr_assert(plxi_op_arity(PLX_OP_ROI_ALIGN, &a, &b, &c, &e));
    cr_assert(eq(u32, a, 3));
    cr_assert(eq(u32, b, 3));
    cr_assert(eq(u32, c + e, 2));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_ROI_ALIGN), sizeof(plx_roi_align_desc)));
    cr_assert(eq(str, (char *)plx_op_name(PLX_OP_ROI_ALIGN), "roi_align"));
    cr_assert(eq(int, d.mode, PLX_ROI_ALIGN_AVG));
    cr_assert(d.half_pixel);
    d.output_height = 5;
    d.output_width = 7;
    ok(RUN(PLX_OP_ROI_ALIGN, &d, &y, F32(2, 3, 10, 10), F32(4, 4), T(INT64, 4)));
    EXPECT(&y, FLOAT32, 4, 3, 5, 7);
    ok(RUN(PLX_OP_ROI_ALIGN, &d, &y, T(FLOAT16, 1, 2, 3, 3), T(FLOAT16, 0, 4), T(INT32, 0)));
    EXPECT(&y, FLOAT16, 0, 2, 5, 7);
    fails_exactly(RUN(PLX_OP_ROI_ALIGN, &d, &y, F32(2, 3, 10, 10), F32(4, 5), T(INT64, 4)),
                  "layer 'L' (roi_align): rois [4,5] and batch_indices [4] must be [R, 4] and [R]");
    fails_with(RUN(PLX_OP_ROI_ALIGN, &d, &y, F32(2, 3, 10, 10), F32(4, 4), T(INT64, 3)),
               "rois [4,4] and batch_indices [3] must be [R, 4] and [R]");
    fails_with(RUN(PLX_OP_ROI_ALIGN, &d, &y, F32(2, 3, 10, 10), T(FLOAT16, 4, 4), T(INT64, 4)),
               "rois");
    fails_with(RUN(PLX_OP_ROI_ALIGN, &d, &y, F32(2, 3, 10, 10), F32(4, 4), F32(4)),
               "batch_indices has dtype float32");
    fails_with(RUN(PLX_OP_ROI_ALIGN, &d, &y, F32(3, 10, 10), F32(4, 4), T(INT64, 4)), "X");
    d.output_width = 0;
    fails_exactly(RUN(PLX_OP_ROI_ALIGN, &d, &y, F32(2, 3, 10, 10), F32(4, 4), T(INT64, 4)),
                  "layer 'L' (roi_align): output_height 5 and output_width 0 must be >= 1");
    d.output_width = 7;
    d.sampling_ratio = -1;
    fails_with(RUN(PLX_OP_ROI_ALIGN, &d, &y, F32(2, 3, 10, 10), F32(4, 4), T(INT64, 4)),
               "sampling_ratio -1 must be >= 0 (0: adaptive)");
    d.sampling_ratio = 0;
    d.mode = (plx_roi_align_mode)2;
    fails_with(RUN(PLX_OP_ROI_ALIGN, &d, &y, F32(2, 3, 10, 10), F32(4, 4), T(INT64, 4)),
               "mode 2 is not a plx_roi_align_mode");
}

Test(shape_infer, grid_sample) {
    plx_grid_sample_desc d = PLX_GRID_SAMPLE_DESC_INIT;
    plx_tensor_info y = {0};
    uint32_t a, b, c, e;
    cr_assert(plxi_op_arity(PLX_OP_GRID_SAMPLE, &a, &b, &c, &e));
    cr_assert(eq(u32, a, 2));
    cr_assert(eq(u32, b, 2));
    cr_assert(eq(u32, c + e, 2));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_GRID_SAMPLE), sizeof(plx_grid_sample_desc)));
    cr_assert(eq(str, (char *)plx_op_name(PLX_OP_GRID_SAMPLE), "grid_sample"));
    cr_assert(eq(int, d.mode, PLX_GRID_SAMPLE_LINEAR));
    cr_assert(eq(int, d.padding, PLX_GRID_SAMPLE_ZEROS));
    cr_assert(not(d.align_corners));
    /* Y is [N, C] and the grid's point dims, X's dtype; the grid's float
     * type may differ, and X's quantization is not kept */
    ok(RUN(PLX_OP_GRID_SAMPLE, &d, &y, F32(2, 3, 4, 5), F32(2, 6, 7, 2)));
    EXPECT(&y, FLOAT32, 2, 3, 6, 7);
    d.mode = PLX_GRID_SAMPLE_CUBIC;
    d.padding = PLX_GRID_SAMPLE_REFLECTION;
    ok(RUN(PLX_OP_GRID_SAMPLE, &d, &y, T(FLOAT16, 1, 2, 3, 4, 5), T(BFLOAT16, 1, 6, 7, 8, 3)));
    EXPECT(&y, FLOAT16, 1, 2, 6, 7, 8);
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_NONE));
    ok(RUN(PLX_OP_GRID_SAMPLE, &d, &y, F32(1, 2, 9), F32(1, 0, 1)));
    EXPECT(&y, FLOAT32, 1, 2, 0);
    fails_exactly(RUN(PLX_OP_GRID_SAMPLE, &d, &y, F32(2, 3, 4, 5), F32(1, 6, 7, 2)),
                  "layer 'L' (grid_sample): grid [1,6,7,2] must be [N, O1, .., O2, 2] for X "
                  "[2,3,4,5] (N = 2)");
    fails_with(RUN(PLX_OP_GRID_SAMPLE, &d, &y, F32(2, 3, 4, 5), F32(2, 6, 7, 3)),
               "grid [2,6,7,3] must be [N, O1, .., O2, 2]");
    fails_with(RUN(PLX_OP_GRID_SAMPLE, &d, &y, F32(2, 3, 4, 5), F32(2, 6, 2)),
               "grid [2,6,2] must be");
    fails_exactly(RUN(PLX_OP_GRID_SAMPLE, &d, &y, F32(2, 3), F32(2, 1)),
                  "layer 'L' (grid_sample): X [2,3] must have rank 3 or more");
    fails_exactly(RUN(PLX_OP_GRID_SAMPLE, &d, &y, T(INT32, 2, 3, 4, 5), F32(2, 6, 7, 2)),
                  "layer 'L' (grid_sample): X has dtype int32, expected float32, float16, "
                  "bfloat16 or float64");
    fails_exactly(RUN(PLX_OP_GRID_SAMPLE, &d, &y, F32(2, 3, 4, 5), T(INT64, 2, 6, 7, 2)),
                  "layer 'L' (grid_sample): grid has dtype int64, expected float32, float16, "
                  "bfloat16 or float64");
    d.mode = (plx_grid_sample_mode)3;
    fails_exactly(RUN(PLX_OP_GRID_SAMPLE, &d, &y, F32(2, 3, 4, 5), F32(2, 6, 7, 2)),
                  "layer 'L' (grid_sample): mode 3 is not a plx_grid_sample_mode");
    d.mode = PLX_GRID_SAMPLE_NEAREST;
    d.padding = (plx_grid_sample_padding)-1;
    fails_exactly(RUN(PLX_OP_GRID_SAMPLE, &d, &y, F32(2, 3, 4, 5), F32(2, 6, 7, 2)),
                  "layer 'L' (grid_sample): padding -1 is not a plx_grid_sample_padding");
    d.padding = PLX_GRID_SAMPLE_BORDER;
    fails_exactly(RUN(PLX_OP_GRID_SAMPLE, &d, &y, F32(1, INT64_C(1) << 32, 1, 1),
                      F32(1, INT64_C(1) << 20, INT64_C(1) << 20, 2)),
                  "layer 'L' (grid_sample): Y of X [1,4294967296,1,1] and grid "
                  "[1,1048576,1048576,2] has too many elements");
}

Test(shape_infer, dft) {
    plx_dft_desc d = PLX_DFT_DESC_INIT;
    plx_tensor_info y = {0};
    uint32_t a, b, c, e;
    cr_assert(plxi_op_arity(PLX_OP_DFT, &a, &b, &c, &e));
    cr_assert(eq(u32, a, 1));
    cr_assert(eq(u32, b, 1));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_DFT), sizeof(plx_dft_desc)));
    cr_assert(eq(str, (char *)plx_op_name(PLX_OP_DFT), "dft"));
    cr_assert(eq(int, d.axis, -2));
    cr_assert(eq(i64, d.length, 0));
    cr_assert(not(d.inverse));
    cr_assert(not(d.onesided));
    /* real in, complex out; the axis keeps its length, or the given one */
    ok(RUN(PLX_OP_DFT, &d, &y, F32(1, 10, 10, 1)));
    EXPECT(&y, FLOAT32, 1, 10, 10, 2);
    d.axis = 1;
    d.length = 7;
    ok(RUN(PLX_OP_DFT, &d, &y, T(FLOAT64, 2, 10, 3, 2)));
    EXPECT(&y, FLOAT64, 2, 7, 3, 2);
    d.onesided = true;
    ok(RUN(PLX_OP_DFT, &d, &y, F32(2, 10, 3, 1)));
    EXPECT(&y, FLOAT32, 2, 4, 3, 2);
    d.onesided = false;
    d.length = 0;
    d.axis = -1;
    fails_exactly(RUN(PLX_OP_DFT, &d, &y, F32(2, 10, 1)),
                  "layer 'L' (dft): axis -1 is X [2,10,1]'s last dim, which holds the complex "
                  "parts");
    d.axis = 3;
    fails_exactly(RUN(PLX_OP_DFT, &d, &y, F32(2, 10, 1)),
                  "layer 'L' (dft): axis 3 is out of range [-3, 3) for X [2,10,1]");
    d.axis = 1;
    fails_exactly(RUN(PLX_OP_DFT, &d, &y, F32(2, 10, 3)),
                  "layer 'L' (dft): X [2,10,3] must end in a dim of 1 (real) or 2 (complex)");
    fails_exactly(RUN(PLX_OP_DFT, &d, &y, F32(2, 0, 1)),
                  "layer 'L' (dft): the transform along axis 1 of X [2,0,1] has no length");
    fails_exactly(RUN(PLX_OP_DFT, &d, &y, F32(2)), "layer 'L' (dft): X [2] must have rank 2 or more");
    fails_with(RUN(PLX_OP_DFT, &d, &y, T(INT32, 2, 3, 1)), "X has dtype int32, expected float32");
    d.length = -1;
    fails_exactly(RUN(PLX_OP_DFT, &d, &y, F32(2, 10, 1)),
                  "layer 'L' (dft): length -1 must be 0 (X's dim) to 1099511627776");
    d.length = 0;
    d.inverse = true;
    d.onesided = true;
    fails_exactly(RUN(PLX_OP_DFT, &d, &y, F32(2, 10, 2)),
                  "layer 'L' (dft): onesided is not defined with inverse");
}

Test(shape_infer, stft) {
    plx_stft_desc d = PLX_STFT_DESC_INIT(8, 16);
    plx_tensor_info y = {0};
    uint32_t a, b, c, e;
    cr_assert(plxi_op_arity(PLX_OP_STFT, &a, &b, &c, &e));
    cr_assert(eq(u32, a, 1));
    cr_assert(eq(u32, b, 2));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_STFT), sizeof(plx_stft_desc)));
    cr_assert(eq(str, (char *)plx_op_name(PLX_OP_STFT), "stft"));
    cr_assert(d.onesided);
    /* 1 + (128 - 16) / 8 = 15 frames of 16 / 2 + 1 = 9 bins */
    ok(RUN(PLX_OP_STFT, &d, &y, F32(1, 128, 1)));
    EXPECT(&y, FLOAT32, 1, 15, 9, 2);
    ok(RUN(PLX_OP_STFT, &d, &y, F32(2, 130, 2), F32(16)));
    EXPECT(&y, FLOAT32, 2, 15, 9, 2);
    d.onesided = false;
    ok(RUN(PLX_OP_STFT, &d, &y, F32(1, 16, 1)));
    EXPECT(&y, FLOAT32, 1, 1, 16, 2);
    fails_exactly(RUN(PLX_OP_STFT, &d, &y, F32(1, 15, 1)),
                  "layer 'L' (stft): frame_length 16 must be 1 to signal [1,15,1]'s length");
    fails_exactly(RUN(PLX_OP_STFT, &d, &y, F32(1, 128, 1), F32(15)),
                  "layer 'L' (stft): window [15] must be [16] (frame_length)");
    fails_with(RUN(PLX_OP_STFT, &d, &y, F32(1, 128, 1), T(FLOAT64, 16)),
               "window has dtype float64");
    fails_exactly(RUN(PLX_OP_STFT, &d, &y, F32(1, 128, 3)),
                  "layer 'L' (stft): signal [1,128,3] must end in a dim of 1 (real) or 2 "
                  "(complex)");
    fails_exactly(RUN(PLX_OP_STFT, &d, &y, F32(128, 1)),
                  "layer 'L' (stft): signal [128,1] must have rank 3");
    d.frame_step = 0;
    fails_exactly(RUN(PLX_OP_STFT, &d, &y, F32(1, 128, 1)),
                  "layer 'L' (stft): frame_step 0 must be 1 or more");
}

Test(shape_infer, col2im) {
    plx_col2im_desc d = PLX_COL2IM_DESC_INIT;
    plx_tensor_info y = {0};
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_COL2IM), sizeof(plx_col2im_desc)));
    cr_assert(eq(str, (char *)plx_op_name(PLX_OP_COL2IM), "col2im"));
    cr_assert(eq(i64, d.strides[5], 1));
    cr_assert(eq(i64, d.dilations[0], 1));
    fails_exactly(RUN(PLX_OP_COL2IM, &d, &y, F32(1, 5, 5)),
                  "layer 'L' (col2im): spatial 0 must be 1 to 6");
    /* image 5 x 5, block 1 x 5: 5 x 1 blocks */
    d.spatial = 2;
    d.image_shape[0] = d.image_shape[1] = 5;
    d.block_shape[0] = 1;
    d.block_shape[1] = 5;
    ok(RUN(PLX_OP_COL2IM, &d, &y, F32(1, 10, 5)));
    EXPECT(&y, FLOAT32, 1, 2, 5, 5);
    /* 3-D image [3, 4, 5], block [1, 1, 5]: 3 * 4 blocks */
    d.spatial = 3;
    d.image_shape[0] = 3;
    d.image_shape[1] = 4;
    d.image_shape[2] = 5;
    d.block_shape[0] = d.block_shape[1] = 1;
    d.block_shape[2] = 5;
    ok(RUN(PLX_OP_COL2IM, &d, &y, T(FLOAT64, 1, 10, 12)));
    EXPECT(&y, FLOAT64, 1, 2, 3, 4, 5);
    fails_exactly(RUN(PLX_OP_COL2IM, &d, &y, F32(1, 10, 13)),
                  "layer 'L' (col2im): X [1,10,13] must be [N, C * 5 (the block's size), 12 "
                  "(the blocks)]");
    fails_with(RUN(PLX_OP_COL2IM, &d, &y, F32(1, 9, 12)), "X [1,9,12] must be [N, C * 5");
    d.block_shape[2] = 6;
    fails_exactly(RUN(PLX_OP_COL2IM, &d, &y, F32(1, 12, 1)),
                  "layer 'L' (col2im): the block of dim 2 (6, dilation 1) does not fit the "
                  "padded image (5)");
    d.pads_end[2] = 1;
    ok(RUN(PLX_OP_COL2IM, &d, &y, F32(1, 12, 12)));
    d.strides[1] = 0;
    fails_exactly(RUN(PLX_OP_COL2IM, &d, &y, F32(1, 12, 12)),
                  "layer 'L' (col2im): strides[1] = 0 must be >= 1");
    d.strides[1] = 1;
    fails_exactly(RUN(PLX_OP_COL2IM, &d, &y, F32(12, 12)),
                  "layer 'L' (col2im): X [12,12] must have rank 3");
}

Test(shape_infer, det) {
    plx_tensor_info y = {0};
    cr_assert(eq(str, (char *)plx_op_name(PLX_OP_DET), "det"));
    ok(RUN(PLX_OP_DET, NULL, &y, F32(3, 2, 2)));
    EXPECT(&y, FLOAT32, 3);
    ok(RUN(PLX_OP_DET, NULL, &y, T(FLOAT64, 4, 4)));
    cr_assert(eq(u32, y.rank, 0));
    cr_assert(eq(int, y.dtype, PLX_DTYPE_FLOAT64));
    fails_exactly(RUN(PLX_OP_DET, NULL, &y, F32(3, 2, 3)),
                  "layer 'L' (det): X [3,2,3] must end in a square matrix [.., M, M]");
    fails_exactly(RUN(PLX_OP_DET, NULL, &y, F32(3)), "layer 'L' (det): X [3] must have rank 2 or more");
    fails_with(RUN(PLX_OP_DET, NULL, &y, T(INT32, 2, 2)), "X has dtype int32, expected float32");
}

Test(shape_infer, reverse_sequence) {
    plx_reverse_sequence_desc d = PLX_REVERSE_SEQUENCE_DESC_INIT;
    plx_tensor_info y = {0};
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_REVERSE_SEQUENCE), sizeof(plx_reverse_sequence_desc)));
    cr_assert(eq(str, (char *)plx_op_name(PLX_OP_REVERSE_SEQUENCE), "reverse_sequence"));
    cr_assert(eq(i32, d.batch_axis, 1));
    cr_assert(eq(i32, d.time_axis, 0));
    /* [T, B, ..]: sequence_lens has B values */
    ok(RUN(PLX_OP_REVERSE_SEQUENCE, &d, &y, F32(5, 3, 2), T(INT64, 3)));
    EXPECT(&y, FLOAT32, 5, 3, 2);
    d.batch_axis = 0;
    d.time_axis = 1;
    ok(RUN(PLX_OP_REVERSE_SEQUENCE, &d, &y, T(BOOL, 5, 3), T(INT32, 5)));
    EXPECT(&y, BOOL, 5, 3);
    fails_exactly(RUN(PLX_OP_REVERSE_SEQUENCE, &d, &y, F32(5, 3), T(INT64, 3)),
                  "layer 'L' (reverse_sequence): sequence_lens [3] must be [5] (X [5,3] along "
                  "batch_axis 0)");
    fails_with(RUN(PLX_OP_REVERSE_SEQUENCE, &d, &y, F32(5, 3), F32(5)),
               "sequence_lens has dtype float32, expected int32 or int64");
    fails_exactly(RUN(PLX_OP_REVERSE_SEQUENCE, &d, &y, F32(5), T(INT64, 5)),
                  "layer 'L' (reverse_sequence): X [5] must have rank 2 or more");
    d.time_axis = 0;
    fails_exactly(RUN(PLX_OP_REVERSE_SEQUENCE, &d, &y, F32(5, 3), T(INT64, 5)),
                  "layer 'L' (reverse_sequence): batch_axis 0 and time_axis 0 must be 0 and 1 in "
                  "either order");
}

Test(shape_infer, max_unpool) {
    plx_max_unpool_desc d = PLX_MAX_UNPOOL_DESC_INIT;
    plx_tensor_info y = {0};
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_MAX_UNPOOL), sizeof(plx_max_unpool_desc)));
    cr_assert(eq(str, (char *)plx_op_name(PLX_OP_MAX_UNPOOL), "max_unpool"));
    d.spatial = 2;
    d.kernel[0] = d.kernel[1] = 2;
    d.strides[0] = d.strides[1] = 2;
    /* (2 - 1) * 2 + 2 = 4 per dim, or output_shape */
    ok(RUN(PLX_OP_MAX_UNPOOL, &d, &y, F32(1, 3, 2, 2), T(INT64, 1, 3, 2, 2)));
    EXPECT(&y, FLOAT32, 1, 3, 4, 4);
    d.output_shape[0] = d.output_shape[1] = 5;
    ok(RUN(PLX_OP_MAX_UNPOOL, &d, &y, F32(1, 3, 2, 2), T(INT64, 1, 3, 2, 2)));
    EXPECT(&y, FLOAT32, 1, 3, 5, 5);
    d.output_shape[1] = 0;
    fails_exactly(RUN(PLX_OP_MAX_UNPOOL, &d, &y, F32(1, 3, 2, 2), T(INT64, 1, 3, 2, 2)),
                  "layer 'L' (max_unpool): output_shape[1] = 0 where others are given");
    d.output_shape[0] = 0;
    fails_exactly(RUN(PLX_OP_MAX_UNPOOL, &d, &y, F32(1, 3, 2, 2), T(INT64, 1, 3, 2, 1)),
                  "layer 'L' (max_unpool): I [1,3,2,1] must have X [1,3,2,2]'s shape");
    fails_with(RUN(PLX_OP_MAX_UNPOOL, &d, &y, F32(1, 3, 2, 2), T(INT32, 1, 3, 2, 2)),
               "I has dtype int32, expected int64");
    fails_exactly(RUN(PLX_OP_MAX_UNPOOL, &d, &y, F32(1, 3, 2), T(INT64, 1, 3, 2)),
                  "layer 'L' (max_unpool): X [1,3,2] must have rank 4");
    d.pads_begin[0] = d.pads_end[0] = 2;
    fails_exactly(RUN(PLX_OP_MAX_UNPOOL, &d, &y, F32(1, 3, 1, 2), T(INT64, 1, 3, 1, 2)),
                  "layer 'L' (max_unpool): the unpooled dim 0 of X [1,3,1,2] (kernel 2, stride 2, "
                  "pads 2 and 2) is empty");
    d.spatial = 0;
    fails_exactly(RUN(PLX_OP_MAX_UNPOOL, &d, &y, F32(1, 3, 1, 2), T(INT64, 1, 3, 1, 2)),
                  "layer 'L' (max_unpool): spatial 0 must be 1 to 6");
}

Test(shape_infer, depth_space) {
    plx_depth_space_desc d = PLX_DEPTH_SPACE_DESC_INIT(2);
    plx_tensor_info y = {0};
    ok(run1(PLX_OP_DEPTH_TO_SPACE, &d, F32(1, 8, 2, 3), &y));
    EXPECT(&y, FLOAT32, 1, 2, 4, 6);
    d.mode = PLX_DEPTH_SPACE_CRD;
    ok(run1(PLX_OP_DEPTH_TO_SPACE, &d, T(INT8, 1, 8, 2, 3), &y));
    EXPECT(&y, INT8, 1, 2, 4, 6);
    fails_exactly(run1(PLX_OP_SPACE_TO_DEPTH, &d, F32(1, 2, 4, 6), &y),
                  "layer 'L' (space_to_depth): mode CRD applies to depth_to_space only");
    d.mode = PLX_DEPTH_SPACE_DCR;
    ok(run1(PLX_OP_SPACE_TO_DEPTH, &d, F32(1, 2, 4, 6), &y));
    EXPECT(&y, FLOAT32, 1, 8, 2, 3);
    fails_with(run1(PLX_OP_DEPTH_TO_SPACE, &d, F32(1, 6, 2, 3), &y),
               "X [1,6,2,3] has 6 channels, not divisible by block_size^2 = 4");
    fails_with(run1(PLX_OP_SPACE_TO_DEPTH, &d, F32(1, 2, 4, 5), &y),
               "X [1,2,4,5] has H and W not divisible by block_size 2");
    d.block_size = 0;
    fails_with(run1(PLX_OP_SPACE_TO_DEPTH, &d, F32(1, 2, 4, 6), &y), "block_size 0 must be >= 1");
    d.block_size = 2;
    fails_with(run1(PLX_OP_DEPTH_TO_SPACE, &d, F32(8, 2, 3), &y), "X [8,2,3] must have rank 4");
}

/* ------------------------------------------------------------------------ */
/* Quantization                                                             */

Test(shape_infer, quantize) {
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_UINT8);
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_QUANTIZE, &d, &y, F32(2, 3), SCALAR(FLOAT32), SCALAR(UINT8)));
    EXPECT(&y, UINT8, 2, 3);
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_NONE));
    d.output_dtype = PLX_DTYPE_INT8;
    ok(RUN(PLX_OP_QUANTIZE, &d, &y, F32(2, 3), SCALAR(FLOAT32)));
    EXPECT(&y, INT8, 2, 3);
    /* Per axis along the default axis 1; a rank-1 input with a scalar
     * scale does not care about the axis. */
    ok(RUN(PLX_OP_QUANTIZE, &d, &y, F32(2, 3), F32(3), T(INT8, 3)));
    EXPECT(&y, INT8, 2, 3);
    ok(RUN(PLX_OP_QUANTIZE, &d, &y, F32(5), SCALAR(FLOAT32)));
    EXPECT(&y, INT8, 5);
    fails_exactly(RUN(PLX_OP_QUANTIZE, &d, &y, F32(2, 3), F32(2)),
                  "layer 'L' (quantize): scale [2] must have one entry per index of axis 1 of X "
                  "[2,3]");
    fails_with(RUN(PLX_OP_QUANTIZE, &d, &y, F32(5), F32(5)), "axis 1 is out of range [-1, 1) for X [5]");
    fails_exactly(RUN(PLX_OP_QUANTIZE, &d, &y, F32(2, 3), SCALAR(FLOAT32), SCALAR(UINT8)),
                  "layer 'L' (quantize): output_dtype int8 differs from zero_point's dtype uint8");
    fails_with(RUN(PLX_OP_QUANTIZE, &d, &y, F32(2, 3), F32(3), SCALAR(INT8)),
               "zero_point [] must have the shape of scale [3]");
    fails_with(RUN(PLX_OP_QUANTIZE, &d, &y, F32(2, 3), SCALAR(FLOAT32), SCALAR(INT32)),
               "zero_point has dtype int32, expected float8e4m3fn, float8e4m3fnuz, float8e5m2, "
               "float8e5m2fnuz, int4, uint4, int8, uint8, int16 or uint16");
    fails_with(RUN(PLX_OP_QUANTIZE, &d, &y, T(INT32, 2, 3), SCALAR(INT32)), "X has dtype int32");
    fails_with(RUN(PLX_OP_QUANTIZE, &d, &y, F32(2, 3), SCALAR(FLOAT16)),
               "scale has dtype float16 but X has float32");
    d.output_dtype = PLX_DTYPE_FLOAT32;
    fails_with(RUN(PLX_OP_QUANTIZE, &d, &y, F32(2, 3), SCALAR(FLOAT32)),
               "output_dtype float32 must be float8e4m3fn, float8e4m3fnuz, float8e5m2, "
               "float8e5m2fnuz, int4, uint4, int8, uint8, int16 or uint16");
}

/* Blocked (de)quantization: the scale has X's shape with ceil(dim / block)
 * along the axis; the zero point the scale's shape. */
Test(shape_infer, quantize_blocked) {
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_INT8);
    d.axis = 1;
    d.block_size = 4;
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_QUANTIZE, &d, &y, F32(3, 10, 2), F32(3, 3, 2), T(INT8, 3, 3, 2)));
    EXPECT(&y, INT8, 3, 10, 2);
    fails_with(RUN(PLX_OP_QUANTIZE, &d, &y, F32(3, 10, 2), F32(3, 2, 2), T(INT8, 3, 2, 2)),
               "scale [3,2,2] must have X's shape [3,10,2] with ceil(10 / 4) = 3 along axis 1 "
               "(blocked quantization)");
    fails_with(RUN(PLX_OP_QUANTIZE, &d, &y, F32(3, 10, 2), F32(3, 3, 2), T(INT8, 3, 3, 1)),
               "zero_point [3,3,1] must have the shape of scale [3,3,2]");
    d.block_size = -1;
    fails_with(RUN(PLX_OP_QUANTIZE, &d, &y, F32(3, 10, 2), F32(3, 3, 2)),
               "block_size -1 must be >= 0");
    plx_quantize_desc dq = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_FLOAT32);
    dq.axis = -1;
    dq.block_size = 32;
    ok(RUN(PLX_OP_DEQUANTIZE, &dq, &y, T(INT4, 8, 64), F32(8, 2)));
    EXPECT(&y, FLOAT32, 8, 64);
}

Test(shape_infer, dequantize) {
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_FLOAT32);
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_DEQUANTIZE, &d, &y, T(INT8, 2, 3), SCALAR(FLOAT32), SCALAR(INT8)));
    EXPECT(&y, FLOAT32, 2, 3);
    d.axis = 0;
    ok(RUN(PLX_OP_DEQUANTIZE, &d, &y, T(INT32, 4, 3), F32(4)));
    EXPECT(&y, FLOAT32, 4, 3);
    fails_exactly(RUN(PLX_OP_DEQUANTIZE, &d, &y, T(INT8, 2, 3), SCALAR(FLOAT32), SCALAR(UINT8)),
                  "layer 'L' (dequantize): zero_point has dtype uint8 but X has int8; they must "
                  "match");
    fails_with(RUN(PLX_OP_DEQUANTIZE, &d, &y, F32(2, 3), SCALAR(FLOAT32)),
               "X has dtype float32, expected float8e4m3fn, float8e4m3fnuz, float8e5m2, "
               "float8e5m2fnuz, int4, uint4, int8, uint8, int16, uint16 or int32");
    fails_with(RUN(PLX_OP_DEQUANTIZE, &d, &y, T(UINT8, 2, 3), F32(2, 3)),
               "scale [2,3] must be a scalar or 1-D");
    d.output_dtype = PLX_DTYPE_INT8;
    fails_with(RUN(PLX_OP_DEQUANTIZE, &d, &y, T(UINT8, 2, 3), SCALAR(FLOAT32)),
               "output_dtype int8 differs from scale's dtype float32");
}

/* ABI 1.3: the float8 types as quantized data; cast to and from them. */
Test(shape_infer, float8_quantize_dequantize_cast) {
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_FLOAT8E4M3FN);
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_QUANTIZE, &d, &y, F32(2, 3), SCALAR(FLOAT32), T(FLOAT8E4M3FN, 1)));
    EXPECT(&y, FLOAT8E4M3FN, 2, 3);
    fails_exactly(RUN(PLX_OP_QUANTIZE, &d, &y, F32(2, 3), SCALAR(FLOAT32), T(FLOAT8E5M2, 1)),
                  "layer 'L' (quantize): output_dtype float8e4m3fn differs from zero_point's "
                  "dtype float8e5m2");
    plx_quantize_desc dq = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_FLOAT16);
    ok(RUN(PLX_OP_DEQUANTIZE, &dq, &y, T(FLOAT8E5M2FNUZ, 4), SCALAR(FLOAT16)));
    EXPECT(&y, FLOAT16, 4);
    plx_cast_desc c = PLX_CAST_DESC_INIT(PLX_DTYPE_FLOAT8E5M2);
    ok(RUN(PLX_OP_CAST, &c, &y, T(FLOAT16, 3)));
    EXPECT(&y, FLOAT8E5M2, 3);
    c.to = PLX_DTYPE_FLOAT32;
    ok(RUN(PLX_OP_CAST, &c, &y, T(FLOAT8E4M3FNUZ, 3)));
    EXPECT(&y, FLOAT32, 3);
    /* no arithmetic on them: ONNX defines none */
    plx_activation_desc a = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    fails_with(RUN(PLX_OP_ACTIVATION, &a, &y, T(FLOAT8E4M3FN, 3)), "X has dtype float8e4m3fn");
}

/* ABI 1.3: int4 and uint4 likewise only in cast, quantize and dequantize. */
Test(shape_infer, int4_quantize_dequantize_cast) {
    plx_quantize_desc d = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_INT4);
    d.axis = 0;
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_QUANTIZE, &d, &y, F32(3, 4), F32(3), T(INT4, 3)));
    EXPECT(&y, INT4, 3, 4);
    plx_quantize_desc dq = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_FLOAT32);
    ok(RUN(PLX_OP_DEQUANTIZE, &dq, &y, T(UINT4, 5), SCALAR(FLOAT32), T(UINT4, 1)));
    EXPECT(&y, FLOAT32, 5);
    plx_cast_desc c = PLX_CAST_DESC_INIT(PLX_DTYPE_UINT4);
    ok(RUN(PLX_OP_CAST, &c, &y, F32(2)));
    EXPECT(&y, UINT4, 2);
    plx_binary_desc b = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    fails_with(RUN(PLX_OP_BINARY, &b, &y, T(INT4, 2), T(INT4, 2)), "A has dtype int4");
}

Test(shape_infer, mem_copy_and_import) {
    plx_tensor_info x = T(INT16, 3, 0, 2), y;
    ok(plxi_infer_layer("c", PLX_OP_MEM_COPY, NULL, &x, 1, &y, 1));
    EXPECT(&y, INT16, 3, 0, 2);
    ok(plxi_infer_layer("i", PLX_OP_MEM_IMPORT, NULL, &x, 1, &y, 1));
    EXPECT(&y, INT16, 3, 0, 2);
    fails_exactly(plxi_infer_layer("i", PLX_OP_MEM_IMPORT, NULL, &x, 1, NULL, 0),
                  "layer 'i' (mem_import): takes 1 output, got 0");
}

/* ------------------------------------------------------------------------ */
/* Added in ABI 1.1: tile, arg_reduce, topk, instance_norm, and the new     */
/* activation, unary, binary and reduce functions                           */

Test(shape_infer, new_ops_arity_and_desc_sizes) {
    uint32_t a, b, c, d;
    cr_assert(plxi_op_arity(PLX_OP_TILE, &a, &b, &c, &d));
    cr_assert(eq(u32, a + b + c + d, 4));
    cr_assert(plxi_op_arity(PLX_OP_ARG_REDUCE, &a, &b, &c, &d));
    cr_assert(eq(u32, a + b + c + d, 4));
    cr_assert(plxi_op_arity(PLX_OP_TOPK, &a, &b, &c, &d));
    cr_assert(eq(u32, a, 1));
    cr_assert(eq(u32, b, 1));
    cr_assert(eq(u32, c, 2));
    cr_assert(eq(u32, d, 2));
    cr_assert(plxi_op_arity(PLX_OP_INSTANCE_NORM, &a, &b, &c, &d));
    cr_assert(eq(u32, a, 3));
    cr_assert(eq(u32, b, 3));
    cr_assert(eq(u32, c, 1));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_TILE), sizeof(plx_tile_desc)));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_ARG_REDUCE), sizeof(plx_arg_reduce_desc)));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_TOPK), sizeof(plx_topk_desc)));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_INSTANCE_NORM), sizeof(plx_instance_norm_desc)));
}

Test(shape_infer, activation_new_funcs) {
    plx_tensor_info y = {0};
    for (int f = PLX_ACT_SELU; f <= PLX_ACT_SCALED_TANH; f++) {
        plx_activation_desc d = PLX_ACTIVATION_DESC_INIT((plx_activation_func)f);
        ok(run1(PLX_OP_ACTIVATION, &d, F32(2, 3), &y));
        EXPECT(&y, FLOAT32, 2, 3);
        if (f != PLX_ACT_CELU) {
            ok(run1(PLX_OP_ACTIVATION, &d, T(BFLOAT16, 4), &y));
            EXPECT(&y, BFLOAT16, 4);
        }
        fails_with(run1(PLX_OP_ACTIVATION, &d, T(INT32, 4), &y), "X has dtype int32");
    }
    /* ONNX Celu is float32 only, and alpha divides x. */
    plx_activation_desc celu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_CELU);
    fails_exactly(run1(PLX_OP_ACTIVATION, &celu, T(FLOAT16, 4), &y),
                  "layer 'L' (activation): X has dtype float16, expected float32 for celu");
    celu.alpha = 0.0f;
    fails_exactly(run1(PLX_OP_ACTIVATION, &celu, F32(4), &y),
                  "layer 'L' (activation): alpha 0 must be non-zero for celu (it divides x)");
    plx_activation_desc mish = PLX_ACTIVATION_DESC_INIT(PLX_ACT_MISH);
    fails_with(run1(PLX_OP_ACTIVATION, &mish, T(INT8, 4), &y),
               "X has dtype int8, expected float32, float16, bfloat16 or float64 for mish");
    mish.func = (plx_activation_func)18;
    fails_exactly(run1(PLX_OP_ACTIVATION, &mish, F32(4), &y),
                  "layer 'L' (activation): func 18 is not a plx_activation_func");
}

Test(shape_infer, unary_new_funcs) {
    plx_tensor_info y = {0};
    for (int f = PLX_UNARY_SIN; f <= PLX_UNARY_SIGN; f++) {
        plx_unary_desc d = PLX_UNARY_DESC_INIT((plx_unary_func)f);
        ok(run1(PLX_OP_UNARY, &d, T(FLOAT16, 3, 2), &y));
        EXPECT(&y, FLOAT16, 3, 2);
        fails_with(run1(PLX_OP_UNARY, &d, T(UINT8, 3), &y), "X has dtype uint8");
    }
    plx_unary_desc d = PLX_UNARY_DESC_INIT(PLX_UNARY_ROUND);
    fails_exactly(run1(PLX_OP_UNARY, &d, T(INT32, 3), &y),
                  "layer 'L' (unary): X has dtype int32, expected float32, float16, bfloat16 or float64 "
                  "for round");
    d.func = PLX_UNARY_SIGN;
    ok(run1(PLX_OP_UNARY, &d, T(INT8, 3), &y));
    EXPECT(&y, INT8, 3);
    ok(run1(PLX_OP_UNARY, &d, T(INT64, 3), &y));
    fails_with(run1(PLX_OP_UNARY, &d, T(BOOL, 3), &y),
               "expected float32, float16, bfloat16, float64, int8, int16, int32 or int64 for sign");
    d.func = (plx_unary_func)28;
    fails_exactly(run1(PLX_OP_UNARY, &d, F32(3), &y),
                  "layer 'L' (unary): func 28 is not a plx_unary_func");
}

Test(shape_infer, binary_new_funcs) {
    plx_tensor_info y = {0};
    /* prelu: the slope broadcasts to X's shape, which the output keeps */
    plx_binary_desc d = PLX_BINARY_DESC_INIT(PLX_BINARY_PRELU);
    ok(RUN(PLX_OP_BINARY, &d, &y, F32(2, 3, 4, 4), F32(3, 1, 1)));
    EXPECT(&y, FLOAT32, 2, 3, 4, 4);
    ok(RUN(PLX_OP_BINARY, &d, &y, T(INT64, 2, 3), SCALAR(INT64)));
    EXPECT(&y, INT64, 2, 3);
    fails_exactly(RUN(PLX_OP_BINARY, &d, &y, F32(2, 3, 4, 4), F32(4, 1, 1)),
                  "layer 'L' (binary): slope B [4,1,1] does not broadcast to the shape of A "
                  "[2,3,4,4]");
    /* a bidirectional broadcast is not enough: B may not grow A */
    fails_exactly(RUN(PLX_OP_BINARY, &d, &y, F32(1, 4), F32(3, 4)),
                  "layer 'L' (binary): slope B [3,4] does not broadcast to the shape of A [1,4]");
    fails_with(RUN(PLX_OP_BINARY, &d, &y, T(INT8, 2), T(INT8, 2)),
               "A has dtype int8, expected float32, float16, bfloat16, float64, int32, uint32, int64 or uint64 for prelu");
    /* and, or, xor: bool only */
    for (int f = PLX_BINARY_AND; f <= PLX_BINARY_XOR; f++) {
        d.func = (plx_binary_func)f;
        ok(RUN(PLX_OP_BINARY, &d, &y, T(BOOL, 2, 1), T(BOOL, 3)));
        EXPECT(&y, BOOL, 2, 3);
    }
    d.func = PLX_BINARY_AND;
    fails_exactly(RUN(PLX_OP_BINARY, &d, &y, T(INT32, 2), T(INT32, 2)),
                  "layer 'L' (binary): A has dtype int32, expected bool for and");
    d.func = PLX_BINARY_XOR;
    fails_with(RUN(PLX_OP_BINARY, &d, &y, T(BOOL, 2), T(UINT8, 2)),
               "B has dtype uint8 but A has bool; they must match");
    /* greater_equal, less_equal: numbers in, bool out */
    d.func = PLX_BINARY_GREATER_EQUAL;
    ok(RUN(PLX_OP_BINARY, &d, &y, T(INT32, 2, 1), T(INT32, 3)));
    EXPECT(&y, BOOL, 2, 3);
    d.func = PLX_BINARY_LESS_EQUAL;
    ok(RUN(PLX_OP_BINARY, &d, &y, T(BFLOAT16, 4), SCALAR(BFLOAT16)));
    EXPECT(&y, BOOL, 4);
    fails_with(RUN(PLX_OP_BINARY, &d, &y, T(BOOL, 2), T(BOOL, 2)), "for less_equal");
    /* mod: every numeric type, the dividend's dtype out */
    d.func = PLX_BINARY_MOD;
    ok(RUN(PLX_OP_BINARY, &d, &y, T(INT8, 2, 3), T(INT8, 3)));
    EXPECT(&y, INT8, 2, 3);
    ok(RUN(PLX_OP_BINARY, &d, &y, T(FLOAT16, 2), T(FLOAT16, 2)));
    EXPECT(&y, FLOAT16, 2);
    fails_with(RUN(PLX_OP_BINARY, &d, &y, T(INT8, 2), T(INT8, 3)), "A [2] and B [3] do not broadcast");
}

Test(shape_infer, reduce_new_funcs) {
    plx_tensor_info y = {0};
    for (int f = PLX_REDUCE_PROD; f <= PLX_REDUCE_LOG_SUM_EXP; f++) {
        plx_reduce_desc d = PLX_REDUCE_DESC_INIT((plx_reduce_func)f);
        d.axes[0] = 1;
        d.axis_count = 1;
        ok(run1(PLX_OP_REDUCE, &d, F32(2, 3, 4), &y));
        EXPECT(&y, FLOAT32, 2, 1, 4);
        ok(run1(PLX_OP_REDUCE, &d, T(INT64, 2, 3, 4), &y));
        EXPECT(&y, INT64, 2, 1, 4);
        d.keepdims = false;
        ok(run1(PLX_OP_REDUCE, &d, T(FLOAT16, 2, 3, 4), &y));
        EXPECT(&y, FLOAT16, 2, 4);
        fails_with(run1(PLX_OP_REDUCE, &d, T(INT8, 2, 3, 4), &y), "X has dtype int8");
    }
    plx_reduce_desc d = PLX_REDUCE_DESC_INIT(PLX_REDUCE_LOG_SUM_EXP);
    fails_exactly(run1(PLX_OP_REDUCE, &d, T(UINT8, 2), &y),
                  "layer 'L' (reduce): X has dtype uint8, expected float32, float16, bfloat16, "
                  "float64, int32, uint32, int64 or uint64 for log_sum_exp");
    /* mean .. sum keep every numeric type */
    d.func = PLX_REDUCE_SUM;
    ok(run1(PLX_OP_REDUCE, &d, T(UINT8, 2), &y));
    EXPECT(&y, UINT8, 1);
}

Test(shape_infer, tile) {
    plx_tile_desc d = PLX_TILE_DESC_INIT;
    plx_tensor_info y = {0};
    d.repeats[0] = 2;
    d.repeats[1] = 3;
    ok(run1(PLX_OP_TILE, &d, F32(2, 5), &y));
    EXPECT(&y, FLOAT32, 4, 15);
    d.repeats[1] = 0;
    ok(run1(PLX_OP_TILE, &d, T(BOOL, 2, 5), &y));
    EXPECT(&y, BOOL, 4, 0);
    d.repeats[1] = 1;
    d.repeats[2] = 4;
    ok(run1(PLX_OP_TILE, &d, T(INT64, 1, 2, 3), &y));
    EXPECT(&y, INT64, 2, 2, 12);
    /* repeats for more dims than X has */
    fails_exactly(run1(PLX_OP_TILE, &d, F32(2, 5), &y),
                  "layer 'L' (tile): repeats[2] = 4 is past the rank 2 of X [2,5]: repeats has "
                  "one entry per dim of X, the rest stay 1");
    d.repeats[2] = 0; /* a zeroed descriptor rather than PLX_TILE_DESC_INIT */
    fails_with(run1(PLX_OP_TILE, &d, F32(2, 5), &y), "repeats[2] = 0 is past the rank 2");
    d.repeats[2] = 1;
    d.repeats[1] = -1;
    fails_exactly(run1(PLX_OP_TILE, &d, F32(2, 5), &y),
                  "layer 'L' (tile): repeats[1] = -1 must be >= 0");
    d.repeats[1] = INT64_MAX;
    fails_with(run1(PLX_OP_TILE, &d, F32(2, 5), &y),
               "dim 1 of X [2,5] times repeats[1] = 9223372036854775807 overflows");
    /* a scalar: every entry stays 1 */
    plx_tile_desc s = PLX_TILE_DESC_INIT;
    ok(run1(PLX_OP_TILE, &s, SCALAR(INT8), &y));
    EXPECT_SCALAR(&y, INT8);
    /* per-tensor quantization passes through (data movement) */
    plx_tensor_info q = T(UINT8, 2);
    q.quant.kind = PLX_QUANT_PER_TENSOR;
    q.quant.scale = 0.25f;
    q.quant.zero_point = 3;
    s.repeats[0] = 3;
    ok(run1(PLX_OP_TILE, &s, q, &y));
    EXPECT(&y, UINT8, 6);
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_PER_TENSOR));
    cr_assert(eq(i32, y.quant.zero_point, 3));
}

Test(shape_infer, arg_reduce) {
    plx_arg_reduce_desc d = PLX_ARG_REDUCE_DESC_INIT(false);
    plx_tensor_info y = {0};
    ok(run1(PLX_OP_ARG_REDUCE, &d, F32(2, 3, 4), &y));
    EXPECT(&y, INT64, 1, 3, 4);
    d.keepdims = false;
    d.axis = -1;
    ok(run1(PLX_OP_ARG_REDUCE, &d, T(UINT8, 2, 3, 4), &y));
    EXPECT(&y, INT64, 2, 3);
    d.select_min = true;
    d.select_last_index = true;
    ok(run1(PLX_OP_ARG_REDUCE, &d, T(FLOAT16, 5), &y));
    EXPECT_SCALAR(&y, INT64);
    d.axis = 3;
    fails_exactly(run1(PLX_OP_ARG_REDUCE, &d, F32(2, 3, 4), &y),
                  "layer 'L' (arg_reduce): axis 3 is out of range [-3, 3) for X [2,3,4]");
    d.axis = -4;
    fails_with(run1(PLX_OP_ARG_REDUCE, &d, F32(2, 3, 4), &y), "axis -4 is out of range");
    d.axis = 0;
    fails_exactly(run1(PLX_OP_ARG_REDUCE, &d, T(BOOL, 2), &y),
                  "layer 'L' (arg_reduce): X has dtype bool, expected float32, float16, "
                  "bfloat16, float64, int8, uint8, int16, uint16, int32, uint32, int64 or "
                  "uint64 for argmin");
    fails_with(run1(PLX_OP_ARG_REDUCE, &d, SCALAR(FLOAT32), &y), "axis 0 is out of range [-0, 0)");
    d.axis = 1;
    fails_exactly(run1(PLX_OP_ARG_REDUCE, &d, F32(2, 0), &y),
                  "layer 'L' (arg_reduce): axis 1 of X [2,0] is empty: there is no minimum to "
                  "index");
    ok(run1(PLX_OP_ARG_REDUCE, &d, F32(0, 0), &y)); /* nothing to index either */
    EXPECT(&y, INT64, 0);
}

Test(shape_infer, topk) {
    plx_topk_desc d = PLX_TOPK_DESC_INIT(2);
    plx_tensor_info x = T(FLOAT16, 3, 5), ys[2];
    ok(plxi_infer_layer("L", PLX_OP_TOPK, &d, &x, 1, ys, 2));
    EXPECT(&ys[0], FLOAT16, 3, 2);
    EXPECT(&ys[1], INT64, 3, 2);
    d.axis = 0;
    d.k = 3;
    x = T(INT32, 3, 5);
    ok(plxi_infer_layer("L", PLX_OP_TOPK, &d, &x, 1, ys, 2));
    EXPECT(&ys[0], INT32, 3, 5);
    EXPECT(&ys[1], INT64, 3, 5);
    d.k = 0;
    ok(plxi_infer_layer("L", PLX_OP_TOPK, &d, &x, 1, ys, 2));
    EXPECT(&ys[0], INT32, 0, 5);
    EXPECT(&ys[1], INT64, 0, 5);
    d.k = 4;
    fails_exactly(plxi_infer_layer("L", PLX_OP_TOPK, &d, &x, 1, ys, 2),
                  "layer 'L' (topk): k 4 is larger than axis 0 of X [3,5] (size 3)");
    d.k = -1;
    fails_exactly(plxi_infer_layer("L", PLX_OP_TOPK, &d, &x, 1, ys, 2),
                  "layer 'L' (topk): k -1 must be >= 0");
    d.k = 1;
    d.axis = 2;
    fails_exactly(plxi_infer_layer("L", PLX_OP_TOPK, &d, &x, 1, ys, 2),
                  "layer 'L' (topk): axis 2 is out of range [-2, 2) for X [3,5]");
    d.axis = -1;
    fails_exactly(plxi_infer_layer("L", PLX_OP_TOPK, &d, &x, 1, ys, 1),
                  "layer 'L' (topk): takes 2 outputs, got 1");
    x = T(BOOL, 3);
    fails_with(plxi_infer_layer("L", PLX_OP_TOPK, &d, &x, 1, ys, 2), "X has dtype bool");
    /* a failure leaves the outputs as they were */
    ys[0] = T(INT16, 7);
    ys[1] = T(INT16, 7);
    d.k = 9;
    x = F32(4);
    fails_with(plxi_infer_layer("L", PLX_OP_TOPK, &d, &x, 1, ys, 2), "k 9 is larger");
    EXPECT(&ys[0], INT16, 7);
    EXPECT(&ys[1], INT16, 7);
    /* the values keep per-tensor quantization (a selection); the indices have none */
    x = T(INT8, 6);
    x.quant.kind = PLX_QUANT_PER_TENSOR;
    x.quant.scale = 2.0f;
    x.quant.zero_point = -1;
    d.k = 2;
    ok(plxi_infer_layer("L", PLX_OP_TOPK, &d, &x, 1, ys, 2));
    EXPECT(&ys[0], INT8, 2);
    cr_assert(eq(int, ys[0].quant.kind, PLX_QUANT_PER_TENSOR));
    cr_assert(eq(flt, ys[0].quant.scale, 2.0f));
    cr_assert(eq(int, ys[1].quant.kind, PLX_QUANT_NONE));
}

Test(shape_infer, instance_norm) {
    plx_instance_norm_desc d = PLX_INSTANCE_NORM_DESC_INIT;
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_INSTANCE_NORM, &d, &y, F32(2, 3, 5), F32(3), F32(3)));
    EXPECT(&y, FLOAT32, 2, 3, 5);
    ok(RUN(PLX_OP_INSTANCE_NORM, &d, &y, T(BFLOAT16, 1, 4, 2, 2), T(BFLOAT16, 4),
           T(BFLOAT16, 4)));
    EXPECT(&y, BFLOAT16, 1, 4, 2, 2);
    fails_exactly(RUN(PLX_OP_INSTANCE_NORM, &d, &y, F32(2, 3, 5), F32(4), F32(3)),
                  "layer 'L' (instance_norm): scale [4] must be [3], one value per channel of X "
                  "[2,3,5]");
    fails_exactly(RUN(PLX_OP_INSTANCE_NORM, &d, &y, F32(2, 3, 5), F32(3), F32(1, 3)),
                  "layer 'L' (instance_norm): bias [1,3] must be [3], one value per channel of X "
                  "[2,3,5]");
    fails_exactly(RUN(PLX_OP_INSTANCE_NORM, &d, &y, F32(2, 3), F32(3), F32(3)),
                  "layer 'L' (instance_norm): X [2,3] must have rank 3 or more");
    fails_with(RUN(PLX_OP_INSTANCE_NORM, &d, &y, T(INT32, 2, 3, 5), T(INT32, 3), T(INT32, 3)),
               "X has dtype int32, expected float32, float16, bfloat16 or float64");
    fails_with(RUN(PLX_OP_INSTANCE_NORM, &d, &y, F32(2, 3, 5), T(FLOAT16, 3), F32(3)),
               "scale has dtype float16 but X has float32");
    fails_with(RUN(PLX_OP_INSTANCE_NORM, &d, &y, F32(2, 3, 5), F32(3)), "takes 3 inputs, got 2");
    d.epsilon = -1.0f;
    fails_with(RUN(PLX_OP_INSTANCE_NORM, &d, &y, F32(2, 3, 5), F32(3), F32(3)),
               "epsilon -1 must be finite and >= 0");
}

/* ------------------------------------------------------------------------ */
/* lstm, gru                                                                */

/* The inputs of a lstm (8) or gru (the first 6): X [S,B,In], D directions. */
static void rnn_inputs(plx_tensor_info *in, bool lstm, int64_t S, int64_t B, int64_t In, int64_t H,
                       int64_t D) {
    int64_t G = lstm ? 4 : 3;
    in[0] = F32(S, B, In);
    in[1] = F32(D, G * H, In);
    in[2] = F32(D, G * H, H);
    in[3] = F32(D, 2 * G * H);
    in[4] = T(INT32, B);
    in[5] = F32(D, B, H);
    in[6] = F32(D, B, H);
    in[7] = F32(D, 3 * H);
}

static plx_status run_rnn(plx_op op, const void *desc, const plx_tensor_info *in,
                          plx_tensor_info *out) {
    bool lstm = op == PLX_OP_LSTM;
    return plxi_infer_layer("L", op, desc, in, lstm ? 8 : 6, out, lstm ? 3 : 2);
}

Test(shape_infer, rnn_arity_and_desc_sizes) {
    uint32_t a, b, c, d;
    cr_assert(plxi_op_arity(PLX_OP_LSTM, &a, &b, &c, &d));
    cr_assert(eq(u32, a, 8));
    cr_assert(eq(u32, b, 8));
    cr_assert(eq(u32, c, 3));
    cr_assert(eq(u32, d, 3));
    cr_assert(plxi_op_arity(PLX_OP_GRU, &a, &b, &c, &d));
    cr_assert(eq(u32, a, 6));
    cr_assert(eq(u32, b, 6));
    cr_assert(eq(u32, c, 2));
    cr_assert(eq(u32, d, 2));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_LSTM), sizeof(plx_lstm_desc)));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_GRU), sizeof(plx_gru_desc)));
}

Test(shape_infer, lstm) {
    plx_lstm_desc d = {sizeof d, PLX_RNN_BIDIRECTIONAL, 5, {{{0}}}, 0.0f, false};
    plx_rnn_default_activations(&d.activations[0][0], 3);
    plx_tensor_info in[8], out[3];
    rnn_inputs(in, true, 7, 2, 3, 5, 2);
    ok(run_rnn(PLX_OP_LSTM, &d, in, out));
    EXPECT(&out[0], FLOAT32, 7, 2, 2, 5);
    EXPECT(&out[1], FLOAT32, 2, 2, 5);
    EXPECT(&out[2], FLOAT32, 2, 2, 5);

    d.direction = PLX_RNN_REVERSE;
    fails_exactly(run_rnn(PLX_OP_LSTM, &d, in, out),
                  "layer 'L' (lstm): W [2,20,3] must be [1,20,3] "
                  "([num_directions, 4*hidden_size, input_size])");
    rnn_inputs(in, true, 7, 2, 3, 5, 1);
    ok(run_rnn(PLX_OP_LSTM, &d, in, out));
    EXPECT(&out[0], FLOAT32, 7, 1, 2, 5);
    EXPECT(&out[2], FLOAT32, 1, 2, 5);

    d.hidden_size = 4;
    fails_exactly(run_rnn(PLX_OP_LSTM, &d, in, out),
                  "layer 'L' (lstm): W [1,20,3] must be [1,16,3] "
                  "([num_directions, 4*hidden_size, input_size])");
    d.hidden_size = 0;
    fails_exactly(run_rnn(PLX_OP_LSTM, &d, in, out), "layer 'L' (lstm): hidden_size 0 must be >= 1");
    d.hidden_size = INT64_MAX / 4;
    fails_with(run_rnn(PLX_OP_LSTM, &d, in, out), "is too large");
    d.hidden_size = 5;
    d.direction = (plx_rnn_direction)3;
    fails_with(run_rnn(PLX_OP_LSTM, &d, in, out), "direction 3 is not a plx_rnn_direction");
    d.direction = PLX_RNN_FORWARD;
    d.clip = -1.0f;
    fails_with(run_rnn(PLX_OP_LSTM, &d, in, out), "clip -1 must be finite and >= 0");
    d.clip = INFINITY;
    fails_with(run_rnn(PLX_OP_LSTM, &d, in, out), "clip inf");
    d.clip = 0.0f;

    d.activations[0][2].func = PLX_ACT_GELU;
    fails_with(run_rnn(PLX_OP_LSTM, &d, in, out),
               "activations[0][2].func 8 is not a recurrent activation");
    d.activations[0][2] = (plx_rnn_activation){PLX_ACT_AFFINE, NAN, 0.0f};
    fails_with(run_rnn(PLX_OP_LSTM, &d, in, out), "activations[0][2] has alpha nan");
    d.activations[0][2] = (plx_rnn_activation){PLX_ACT_TANH, 0.0f, 0.0f};
    d.activations[1][0].func = PLX_ACT_GELU; /* direction 1 is unused */
    ok(run_rnn(PLX_OP_LSTM, &d, in, out));

    in[4] = T(INT64, 2);
    fails_exactly(run_rnn(PLX_OP_LSTM, &d, in, out),
                  "layer 'L' (lstm): sequence_lens has dtype int64, expected int32");
    in[4] = T(INT32, 3);
    fails_with(run_rnn(PLX_OP_LSTM, &d, in, out), "sequence_lens [3] must be [2] ([batch_size])");
    in[4] = T(INT32, 2);
    in[6] = F32(1, 3, 5);
    fails_with(run_rnn(PLX_OP_LSTM, &d, in, out),
               "initial_c [1,3,5] must be [1,2,5] ([num_directions, batch_size, hidden_size])");
    in[6] = F32(1, 2, 5);
    in[7] = F32(1, 20);
    fails_with(run_rnn(PLX_OP_LSTM, &d, in, out), "P [1,20] must be [1,15]");
    in[7] = F32(1, 15);
    in[1].dtype = PLX_DTYPE_FLOAT16;
    fails_with(run_rnn(PLX_OP_LSTM, &d, in, out), "W has dtype float16 but X has float32");
    in[1].dtype = PLX_DTYPE_FLOAT32;
    in[0] = T(FLOAT16, 7, 2, 3);
    fails_with(run_rnn(PLX_OP_LSTM, &d, in, out), "X has dtype float16, expected float32");
    in[0] = F32(2, 3);
    fails_with(run_rnn(PLX_OP_LSTM, &d, in, out), "X [2,3] must have rank 3");

    /* a failure leaves the outputs as they were */
    plx_tensor_info before[3];
    memcpy(before, out, sizeof before);
    fails_with(run_rnn(PLX_OP_LSTM, &d, in, out), "X [2,3]");
    cr_assert(eq(int, memcmp(before, out, sizeof before), 0));
    fails_with(plxi_infer_layer("L", PLX_OP_LSTM, &d, in, 8, out, 2), "takes 3 outputs, got 2");
    fails_with(plxi_infer_layer("L", PLX_OP_LSTM, &d, in, 7, out, 3), "takes 8 inputs, got 7");
}

Test(shape_infer, gru) {
    plx_gru_desc d = {sizeof d, PLX_RNN_BIDIRECTIONAL, 4, {{{0}}}, 0.0f, true};
    plx_rnn_default_activations(&d.activations[0][0], 2);
    plx_tensor_info in[8], out[2];
    rnn_inputs(in, false, 3, 5, 2, 4, 2);
    ok(run_rnn(PLX_OP_GRU, &d, in, out));
    EXPECT(&out[0], FLOAT32, 3, 2, 5, 4);
    EXPECT(&out[1], FLOAT32, 2, 5, 4);

    in[2] = F32(2, 12, 3);
    fails_exactly(run_rnn(PLX_OP_GRU, &d, in, out),
                  "layer 'L' (gru): R [2,12,3] must be [2,12,4] "
                  "([num_directions, 3*hidden_size, hidden_size])");
    in[2] = F32(2, 12, 4);
    in[3] = F32(2, 16);
    fails_with(run_rnn(PLX_OP_GRU, &d, in, out),
               "B [2,16] must be [2,24] ([num_directions, 6*hidden_size])");
    in[3] = F32(2, 24);
    in[5] = F32(1, 5, 4);
    fails_with(run_rnn(PLX_OP_GRU, &d, in, out), "initial_h [1,5,4] must be [2,5,4]");
    in[5] = F32(2, 5, 4);
    d.activations[1][1].func = PLX_ACT_HARD_SWISH;
    fails_with(run_rnn(PLX_OP_GRU, &d, in, out), "activations[1][1].func 6 is not a recurrent");
    d.activations[1][1].func = PLX_ACT_ELU;
    ok(run_rnn(PLX_OP_GRU, &d, in, out));
}

/* rnn: one gate per direction (W [D, H, I], B [D, 2H]). */
Test(shape_infer, rnn) {
    uint32_t a, b, c, e;
    cr_assert(plxi_op_arity(PLX_OP_RNN, &a, &b, &c, &e));
    cr_assert(eq(u32, a, 6));
    cr_assert(eq(u32, b, 6));
    cr_assert(eq(u32, c, 2));
    cr_assert(eq(u32, e, 2));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_RNN), sizeof(plx_rnn_desc)));
    plx_rnn_desc d = {sizeof d, PLX_RNN_REVERSE, 4, {{{PLX_ACT_TANH, 0, 0}}, {{PLX_ACT_TANH, 0, 0}}},
                      0.0f};
    plx_tensor_info in[6] = {F32(3, 5, 2), F32(1, 4, 2), F32(1, 4, 4),
                             F32(1, 8),    T(INT32, 5),  F32(1, 5, 4)};
    plx_tensor_info out[2];
    ok(plxi_infer_layer("L", PLX_OP_RNN, &d, in, 6, out, 2));
    EXPECT(&out[0], FLOAT32, 3, 1, 5, 4);
    EXPECT(&out[1], FLOAT32, 1, 5, 4);
    in[1] = F32(1, 12, 2);
    fails_exactly(plxi_infer_layer("L", PLX_OP_RNN, &d, in, 6, out, 2),
                  "layer 'L' (rnn): W [1,12,2] must be [1,4,2] "
                  "([num_directions, hidden_size, input_size])");
    in[1] = F32(1, 4, 2);
    in[3] = F32(1, 4);
    fails_with(plxi_infer_layer("L", PLX_OP_RNN, &d, in, 6, out, 2),
               "B [1,4] must be [1,8] ([num_directions, 2*hidden_size])");
    in[3] = F32(1, 8);
    d.activations[0][0].func = PLX_ACT_HARD_SWISH;
    fails_with(plxi_infer_layer("L", PLX_OP_RNN, &d, in, 6, out, 2),
               "activations[0][0].func 6 is not a recurrent");
    d.activations[0][0].func = PLX_ACT_RELU;
    d.clip = -1.0f;
    fails_with(plxi_infer_layer("L", PLX_OP_RNN, &d, in, 6, out, 2), "clip -1 must be finite");
    d.clip = 0.0f;
    fails_with(plxi_infer_layer("L", PLX_OP_RNN, &d, in, 5, out, 2), "takes 6 inputs, got 5");
    ok(plxi_infer_layer("L", PLX_OP_RNN, &d, in, 6, out, 2));
}

/* ------------------------------------------------------------------------ */
/* gather_elements, scatter_elements, scatter_nd, gather_nd                 */

Test(shape_infer, gather_elements) {
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_GATHER_ELEMENTS), sizeof(plx_axis_desc)));
    plx_axis_desc d = PLX_AXIS_DESC_INIT(0);
    plx_tensor_info y = {0};
    /* the axis' dim may be anything, the others at most data's */
    ok(RUN(PLX_OP_GATHER_ELEMENTS, &d, &y, F32(3, 4), T(INT64, 7, 2)));
    EXPECT(&y, FLOAT32, 7, 2);
    d.axis = -1;
    ok(RUN(PLX_OP_GATHER_ELEMENTS, &d, &y, T(BOOL, 2, 3, 4), T(INT32, 2, 1, 9)));
    EXPECT(&y, BOOL, 2, 1, 9);
    ok(RUN(PLX_OP_GATHER_ELEMENTS, &d, &y, T(FLOAT16, 0, 3), T(INT32, 0, 5)));
    EXPECT(&y, FLOAT16, 0, 5);
    /* per-tensor quantization passes through */
    plx_tensor_info q = T(INT8, 4, 4);
    q.quant.kind = PLX_QUANT_PER_TENSOR;
    q.quant.scale = 0.5f;
    q.quant.zero_point = 3;
    ok(RUN(PLX_OP_GATHER_ELEMENTS, &d, &y, q, T(INT64, 4, 2)));
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_PER_TENSOR));
    cr_assert(eq(i32, y.quant.zero_point, 3));

    fails_exactly(RUN(PLX_OP_GATHER_ELEMENTS, &d, &y, F32(3, 4), F32(3, 4)),
                  "layer 'L' (gather_elements): indices has dtype float32, expected int32 or int64");
    d.axis = 2;
    fails_exactly(RUN(PLX_OP_GATHER_ELEMENTS, &d, &y, F32(3, 4), T(INT64, 3, 4)),
                  "layer 'L' (gather_elements): axis 2 is out of range [-2, 2) for data [3,4]");
    d.axis = 0;
    fails_exactly(RUN(PLX_OP_GATHER_ELEMENTS, &d, &y, SCALAR(FLOAT32), SCALAR(INT64)),
                  "layer 'L' (gather_elements): axis 0 is out of range [-0, 0) for data []");
    fails_exactly(RUN(PLX_OP_GATHER_ELEMENTS, &d, &y, F32(3, 4), T(INT64, 12)),
                  "layer 'L' (gather_elements): indices [12] must have the rank of data [3,4] (2)");
    fails_exactly(RUN(PLX_OP_GATHER_ELEMENTS, &d, &y, F32(3, 4), T(INT64, 2, 5)),
                  "layer 'L' (gather_elements): indices [2,5] is larger than data [3,4] in dim 1 "
                  "(only axis 0 may be)");
    fails_exactly(RUN(PLX_OP_GATHER_ELEMENTS, &d, &y, F32(0, 4), T(INT64, 1, 4)),
                  "layer 'L' (gather_elements): indices [1,4] index the empty axis 0 of data [0,4]");
    fails_with(plxi_infer_layer("L", PLX_OP_GATHER_ELEMENTS, &d,
                                (const plx_tensor_info[]){F32(3)}, 1, &y, 1),
               "takes 2 inputs, got 1");
}

Test(shape_infer, scatter_elements) {
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_SCATTER_ELEMENTS), sizeof(plx_scatter_desc)));
    plx_scatter_desc d = PLX_SCATTER_DESC_INIT;
    cr_assert(eq(i32, d.axis, 0));
    cr_assert(eq(int, d.reduction, PLX_SCATTER_NONE));
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_SCATTER_ELEMENTS, &d, &y, F32(3, 3), T(INT64, 5, 3), F32(5, 3)));
    EXPECT(&y, FLOAT32, 3, 3);
    d.axis = -1;
    d.reduction = PLX_SCATTER_MIN;
    ok(RUN(PLX_OP_SCATTER_ELEMENTS, &d, &y, T(INT16, 2, 6), T(INT32, 1, 2), T(INT16, 1, 2)));
    EXPECT(&y, INT16, 2, 6);
    /* quantization: kept for selections with the same parameters, dropped for add */
    plx_tensor_info q = T(UINT8, 4);
    q.quant.kind = PLX_QUANT_PER_TENSOR;
    q.quant.scale = 0.25f;
    q.quant.zero_point = 128;
    d.axis = 0;
    d.reduction = PLX_SCATTER_MAX;
    plx_tensor_info qu = T(UINT8, 2);
    qu.quant = q.quant;
    ok(RUN(PLX_OP_SCATTER_ELEMENTS, &d, &y, q, T(INT64, 2), qu));
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_PER_TENSOR));
    d.reduction = PLX_SCATTER_ADD;
    ok(RUN(PLX_OP_SCATTER_ELEMENTS, &d, &y, q, T(INT64, 2), qu));
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_NONE));
    d.reduction = PLX_SCATTER_NONE;
    ok(RUN(PLX_OP_SCATTER_ELEMENTS, &d, &y, q, T(INT64, 2), T(UINT8, 2)));
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_NONE));

    d.reduction = (plx_scatter_reduction)5;
    fails_exactly(RUN(PLX_OP_SCATTER_ELEMENTS, &d, &y, F32(3, 3), T(INT64, 3, 3), F32(3, 3)),
                  "layer 'L' (scatter_elements): reduction 5 is not a plx_scatter_reduction");
    d.reduction = PLX_SCATTER_MUL;
    fails_exactly(RUN(PLX_OP_SCATTER_ELEMENTS, &d, &y, F32(3, 3), T(UINT8, 3, 3), F32(3, 3)),
                  "layer 'L' (scatter_elements): indices has dtype uint8, expected int32 or int64");
    fails_exactly(RUN(PLX_OP_SCATTER_ELEMENTS, &d, &y, F32(3, 3), T(INT64, 3, 3), T(FLOAT16, 3, 3)),
                  "layer 'L' (scatter_elements): updates has dtype float16 but data has float32; "
                  "they must match");
    d.axis = -3;
    fails_exactly(RUN(PLX_OP_SCATTER_ELEMENTS, &d, &y, F32(3, 3), T(INT64, 3, 3), F32(3, 3)),
                  "layer 'L' (scatter_elements): axis -3 is out of range [-2, 2) for data [3,3]");
    d.axis = 1;
    fails_exactly(RUN(PLX_OP_SCATTER_ELEMENTS, &d, &y, F32(3, 3), T(INT64, 3, 2), F32(2, 3)),
                  "layer 'L' (scatter_elements): updates [2,3] must have the shape of indices "
                  "[3,2]");
    fails_exactly(RUN(PLX_OP_SCATTER_ELEMENTS, &d, &y, F32(3, 3), T(INT64, 3), F32(3)),
                  "layer 'L' (scatter_elements): indices [3] must have the rank of data [3,3] (2)");
    fails_exactly(RUN(PLX_OP_SCATTER_ELEMENTS, &d, &y, F32(3, 3), T(INT64, 4, 1), F32(4, 1)),
                  "layer 'L' (scatter_elements): indices [4,1] is larger than data [3,3] in dim 0 "
                  "(only axis 1 may be)");
    fails_exactly(RUN(PLX_OP_SCATTER_ELEMENTS, &d, &y, F32(3, 0), T(INT64, 3, 1), F32(3, 1)),
                  "layer 'L' (scatter_elements): indices [3,1] index the empty axis 1 of data "
                  "[3,0]");
    /* empty indices on an empty axis: nothing to scatter */
    ok(RUN(PLX_OP_SCATTER_ELEMENTS, &d, &y, F32(3, 0), T(INT64, 3, 0), F32(3, 0)));
    EXPECT(&y, FLOAT32, 3, 0);
}

Test(shape_infer, scatter_nd) {
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_SCATTER_ND), sizeof(plx_scatter_desc)));
    plx_scatter_desc d = PLX_SCATTER_DESC_INIT;
    plx_tensor_info y = {0};
    /* k = 1: slices of data's dims 1.. */
    ok(RUN(PLX_OP_SCATTER_ND, &d, &y, F32(4, 4, 4), T(INT64, 2, 1), F32(2, 4, 4)));
    EXPECT(&y, FLOAT32, 4, 4, 4);
    /* k = rank: single elements; a KV-cache update [b, h, t, d] by 2-tuples */
    d.reduction = PLX_SCATTER_ADD;
    ok(RUN(PLX_OP_SCATTER_ND, &d, &y, T(INT32, 8), T(INT32, 4, 1), T(INT32, 4)));
    EXPECT(&y, INT32, 8);
    ok(RUN(PLX_OP_SCATTER_ND, &d, &y, T(BFLOAT16, 1, 2, 16, 8), T(INT64, 1, 2, 1, 2),
           T(BFLOAT16, 1, 2, 1, 16, 8)));
    EXPECT(&y, BFLOAT16, 1, 2, 16, 8);
    /* k = 0: every tuple names the whole of data */
    ok(RUN(PLX_OP_SCATTER_ND, &d, &y, F32(2, 3), T(INT64, 2, 0), F32(2, 2, 3)));
    EXPECT(&y, FLOAT32, 2, 3);

    d.axis = 1;
    fails_exactly(RUN(PLX_OP_SCATTER_ND, &d, &y, F32(4), T(INT64, 1, 1), F32(1)),
                  "layer 'L' (scatter_nd): axis 1 must be 0: scatter_nd has no axis");
    d.axis = 0;
    d.reduction = (plx_scatter_reduction)-1;
    fails_exactly(RUN(PLX_OP_SCATTER_ND, &d, &y, F32(4), T(INT64, 1, 1), F32(1)),
                  "layer 'L' (scatter_nd): reduction -1 is not a plx_scatter_reduction");
    d.reduction = PLX_SCATTER_NONE;
    fails_exactly(RUN(PLX_OP_SCATTER_ND, &d, &y, F32(4), T(FLOAT32, 1, 1), F32(1)),
                  "layer 'L' (scatter_nd): indices has dtype float32, expected int32 or int64");
    fails_exactly(RUN(PLX_OP_SCATTER_ND, &d, &y, F32(4), T(INT64, 1, 1), T(INT64, 1)),
                  "layer 'L' (scatter_nd): updates has dtype int64 but data has float32; they "
                  "must match");
    fails_exactly(RUN(PLX_OP_SCATTER_ND, &d, &y, SCALAR(FLOAT32), T(INT64, 1, 1), F32(1)),
                  "layer 'L' (scatter_nd): data [] must have rank 1 or more");
    fails_exactly(RUN(PLX_OP_SCATTER_ND, &d, &y, F32(4), SCALAR(INT64), F32(1)),
                  "layer 'L' (scatter_nd): indices [] must have rank 1 or more");
    fails_exactly(RUN(PLX_OP_SCATTER_ND, &d, &y, F32(4, 4), T(INT64, 1, 3), F32(1)),
                  "layer 'L' (scatter_nd): the last dim of indices [1,3] is 3; it must be 0 to 2 "
                  "(the rank of data [4,4])");
    fails_exactly(RUN(PLX_OP_SCATTER_ND, &d, &y, F32(4, 4), T(INT64, 3, 1), F32(3, 5)),
                  "layer 'L' (scatter_nd): updates [3,5] must have the shape [3,4] (indices [3,1] "
                  "but its last dim, then data [4,4] from dim 1)");
    fails_exactly(RUN(PLX_OP_SCATTER_ND, &d, &y, F32(4, 4), T(INT64, 3, 1), F32(3)),
                  "layer 'L' (scatter_nd): updates [3] must have the shape [3,4] (indices [3,1] "
                  "but its last dim, then data [4,4] from dim 1)");
    fails_with(RUN(PLX_OP_SCATTER_ND, &d, &y, F32(2, 2, 2, 2, 2, 2, 2, 2),
                   T(INT64, 2, 2, 2, 2, 2, 2, 2, 1), F32(2)),
               "updates [2] must have rank 14 for data [2,2,2,2,2,2,2,2] and indices "
               "[2,2,2,2,2,2,2,1], more than 8");
    fails_exactly(RUN(PLX_OP_SCATTER_ND, &d, &y, F32(3, 0, 2), T(INT64, 1, 2), F32(1, 2)),
                  "layer 'L' (scatter_nd): indices [1,2] index the empty dim 1 of data [3,0,2]");
}

Test(shape_infer, gather_nd) {
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_GATHER_ND), sizeof(plx_gather_nd_desc)));
    plx_gather_nd_desc d = PLX_GATHER_ND_DESC_INIT;
    cr_assert(eq(i32, d.batch_dims, 0));
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_GATHER_ND, &d, &y, F32(2, 2), T(INT64, 2, 2)));
    EXPECT(&y, FLOAT32, 2);
    ok(RUN(PLX_OP_GATHER_ND, &d, &y, T(INT32, 2, 2), T(INT64, 2, 1)));
    EXPECT(&y, INT32, 2, 2);
    ok(RUN(PLX_OP_GATHER_ND, &d, &y, F32(2, 2, 2), T(INT32, 2, 1, 2)));
    EXPECT(&y, FLOAT32, 2, 1, 2);
    d.batch_dims = 1;
    ok(RUN(PLX_OP_GATHER_ND, &d, &y, T(INT8, 2, 2, 2), T(INT64, 2, 1)));
    EXPECT(&y, INT8, 2, 2);
    ok(RUN(PLX_OP_GATHER_ND, &d, &y, F32(2, 3, 4, 5), T(INT64, 2, 7, 2)));
    EXPECT(&y, FLOAT32, 2, 7, 5);
    /* one index per data element: a scalar output per tuple */
    d.batch_dims = 0;
    ok(RUN(PLX_OP_GATHER_ND, &d, &y, F32(5), T(INT64, 1)));
    EXPECT_SCALAR(&y, FLOAT32);

    fails_exactly(RUN(PLX_OP_GATHER_ND, &d, &y, F32(5), T(UINT8, 1)),
                  "layer 'L' (gather_nd): indices has dtype uint8, expected int32 or int64");
    fails_exactly(RUN(PLX_OP_GATHER_ND, &d, &y, SCALAR(FLOAT32), T(INT64, 1)),
                  "layer 'L' (gather_nd): data [] must have rank 1 or more");
    fails_exactly(RUN(PLX_OP_GATHER_ND, &d, &y, F32(5), SCALAR(INT64)),
                  "layer 'L' (gather_nd): indices [] must have rank 1 or more");
    d.batch_dims = 2;
    fails_exactly(RUN(PLX_OP_GATHER_ND, &d, &y, F32(2, 3, 4), T(INT64, 2, 1)),
                  "layer 'L' (gather_nd): batch_dims 2 is out of range [0, 2) for data [2,3,4] "
                  "and indices [2,1]");
    d.batch_dims = -1;
    fails_with(RUN(PLX_OP_GATHER_ND, &d, &y, F32(2, 3, 4), T(INT64, 2, 1)),
               "batch_dims -1 is out of range [0, 2)");
    d.batch_dims = 1;
    fails_exactly(RUN(PLX_OP_GATHER_ND, &d, &y, F32(2, 3, 4), T(INT64, 3, 1)),
                  "layer 'L' (gather_nd): indices [3,1] and data [2,3,4] differ in batch dim 0");
    fails_exactly(RUN(PLX_OP_GATHER_ND, &d, &y, F32(2, 3, 4), T(INT64, 2, 3)),
                  "layer 'L' (gather_nd): the last dim of indices [2,3] is 3; it must be 1 to 2 "
                  "(the rank of data [2,3,4] minus batch_dims)");
    d.batch_dims = 0;
    fails_exactly(RUN(PLX_OP_GATHER_ND, &d, &y, F32(2, 3, 4), T(INT64, 2, 0)),
                  "layer 'L' (gather_nd): the last dim of indices [2,0] is 0; it must be 1 to 3 "
                  "(the rank of data [2,3,4])");
    fails_exactly(RUN(PLX_OP_GATHER_ND, &d, &y, F32(2, 0, 4), T(INT64, 2, 2)),
                  "layer 'L' (gather_nd): indices [2,2] index the empty dim 1 of data [2,0,4]");
    /* no tuple: the empty dim is never indexed */
    ok(RUN(PLX_OP_GATHER_ND, &d, &y, F32(2, 0, 4), T(INT64, 0, 2)));
    EXPECT(&y, FLOAT32, 0, 4);
    fails_with(RUN(PLX_OP_GATHER_ND, &d, &y, F32(2, 2, 2, 2, 2), T(INT64, 2, 2, 2, 2, 2, 1)),
               "the output rank 9");
}

/* ------------------------------------------------------------------------ */
/* trilu, one_hot, hardmax, cum_sum                                         */

Test(shape_infer, mask_scan_arity_and_desc_sizes) {
    uint32_t a, b, c, d;
    cr_assert(plxi_op_arity(PLX_OP_TRILU, &a, &b, &c, &d));
    cr_assert(eq(u32, a + b + c + d, 4));
    cr_assert(plxi_op_arity(PLX_OP_ONE_HOT, &a, &b, &c, &d));
    cr_assert(eq(u32, a, 2));
    cr_assert(eq(u32, b, 2));
    cr_assert(eq(u32, c + d, 2));
    cr_assert(plxi_op_arity(PLX_OP_HARDMAX, &a, &b, &c, &d));
    cr_assert(eq(u32, a + b + c + d, 4));
    cr_assert(plxi_op_arity(PLX_OP_CUM_SUM, &a, &b, &c, &d));
    cr_assert(eq(u32, a + b + c + d, 4));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_TRILU), sizeof(plx_trilu_desc)));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_ONE_HOT), sizeof(plx_one_hot_desc)));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_HARDMAX), sizeof(plx_axis_desc)));
    cr_assert(eq(sz, plxi_op_desc_size(PLX_OP_CUM_SUM), sizeof(plx_cum_sum_desc)));
    cr_assert(eq(str, (char *)plx_op_name(PLX_OP_TRILU), "trilu"));
    cr_assert(eq(str, (char *)plx_op_name(PLX_OP_ONE_HOT), "one_hot"));
    cr_assert(eq(str, (char *)plx_op_name(PLX_OP_HARDMAX), "hardmax"));
    cr_assert(eq(str, (char *)plx_op_name(PLX_OP_CUM_SUM), "cum_sum"));
}

Test(shape_infer, trilu) {
    plx_trilu_desc d = PLX_TRILU_DESC_INIT;
    plx_tensor_info y = {0};
    cr_assert(d.upper);
    cr_assert(eq(i64, d.k, 0));
    /* any dtype, rank 2 or more, any k */
    ok(run1(PLX_OP_TRILU, &d, T(BOOL, 3, 4), &y));
    EXPECT(&y, BOOL, 3, 4);
    d.k = INT64_MIN;
    d.upper = false;
    ok(run1(PLX_OP_TRILU, &d, T(BFLOAT16, 2, 0, 5), &y));
    EXPECT(&y, BFLOAT16, 2, 0, 5);
    ok(run1(PLX_OP_TRILU, &d, T(INT64, 1, 2, 3, 4, 5), &y));
    EXPECT(&y, INT64, 1, 2, 3, 4, 5);
    /* the output drops quantization (zeros are not the zero point) */
    plx_tensor_info q = T(UINT8, 2, 2);
    q.quant.kind = PLX_QUANT_PER_TENSOR;
    q.quant.scale = 0.5f;
    q.quant.zero_point = 3;
    ok(run1(PLX_OP_TRILU, &d, q, &y));
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_NONE));
    fails_exactly(run1(PLX_OP_TRILU, &d, F32(4), &y),
                  "layer 'L' (trilu): X [4] must have rank 2 or more");
    fails_exactly(run1(PLX_OP_TRILU, &d, SCALAR(FLOAT32), &y),
                  "layer 'L' (trilu): X [] must have rank 2 or more");
}

Test(shape_infer, one_hot) {
    plx_one_hot_desc d = PLX_ONE_HOT_DESC_INIT(5);
    plx_tensor_info y = {0};
    cr_assert(eq(i32, d.axis, -1));
    /* axis -1: depth last; values' dtype */
    ok(RUN(PLX_OP_ONE_HOT, &d, &y, T(INT64, 2, 3), T(FLOAT16, 2)));
    EXPECT(&y, FLOAT16, 2, 3, 5);
    d.axis = 0;
    ok(RUN(PLX_OP_ONE_HOT, &d, &y, F32(2, 3), T(BOOL, 2)));
    EXPECT(&y, BOOL, 5, 2, 3);
    d.axis = 1;
    ok(RUN(PLX_OP_ONE_HOT, &d, &y, T(UINT8, 2, 3), T(INT32, 2)));
    EXPECT(&y, INT32, 2, 5, 3);
    d.axis = -3; /* [-r-1, r]: -3 is 0 for indices of rank 2 */
    ok(RUN(PLX_OP_ONE_HOT, &d, &y, T(INT8, 2, 3), T(INT64, 2)));
    EXPECT(&y, INT64, 5, 2, 3);
    d.axis = 2;
    ok(RUN(PLX_OP_ONE_HOT, &d, &y, T(INT16, 2, 3), F32(2)));
    EXPECT(&y, FLOAT32, 2, 3, 5);
    /* scalar indices give [depth] */
    d.axis = -1;
    ok(RUN(PLX_OP_ONE_HOT, &d, &y, SCALAR(INT32), F32(2)));
    EXPECT(&y, FLOAT32, 5);

    d.axis = 3;
    fails_exactly(RUN(PLX_OP_ONE_HOT, &d, &y, T(INT64, 2, 3), F32(2)),
                  "layer 'L' (one_hot): axis 3 is out of range [-3, 2] for indices [2,3]");
    d.axis = -4;
    fails_with(RUN(PLX_OP_ONE_HOT, &d, &y, T(INT64, 2, 3), F32(2)), "axis -4 is out of range");
    d.axis = -1;
    fails_exactly(RUN(PLX_OP_ONE_HOT, &d, &y, T(INT64, 2, 3), F32(3)),
                  "layer 'L' (one_hot): values [3] must be [2] ([off_value, on_value])");
    fails_exactly(RUN(PLX_OP_ONE_HOT, &d, &y, T(INT64, 2, 3), F32(1, 2)),
                  "layer 'L' (one_hot): values [1,2] must be [2] ([off_value, on_value])");
    fails_exactly(RUN(PLX_OP_ONE_HOT, &d, &y, T(BOOL, 2, 3), F32(2)),
                  "layer 'L' (one_hot): indices has dtype bool, expected float32, float16, "
                  "bfloat16, float64, int8, uint8, int16, uint16, int32, uint32, int64 or "
                  "uint64");
    fails_exactly(RUN(PLX_OP_ONE_HOT, &d, &y, T(INT64, 1, 1, 1, 1, 1, 1, 1, 1), F32(2)),
                  "layer 'L' (one_hot): indices [1,1,1,1,1,1,1,1] has rank 8; Y would have more "
                  "than 8 dims");
    d.depth = 0;
    fails_exactly(RUN(PLX_OP_ONE_HOT, &d, &y, T(INT64, 2), F32(2)),
                  "layer 'L' (one_hot): depth 0 must be >= 1");
    d.depth = INT64_MAX;
    fails_exactly(RUN(PLX_OP_ONE_HOT, &d, &y, T(INT64, 2), F32(2)),
                  "layer 'L' (one_hot): Y of indices [2] with depth 9223372036854775807 has too "
                  "many elements");
    fails_with(RUN(PLX_OP_ONE_HOT, &d, &y, T(INT64, 2)), "takes 2 inputs, got 1");
}

Test(shape_infer, hardmax) {
    plx_axis_desc d = PLX_AXIS_DESC_INIT(-1);
    plx_tensor_info y = {0};
    ok(run1(PLX_OP_HARDMAX, &d, F32(2, 3, 4), &y));
    EXPECT(&y, FLOAT32, 2, 3, 4);
    d.axis = 0;
    ok(run1(PLX_OP_HARDMAX, &d, T(FLOAT16, 0, 3), &y));
    EXPECT(&y, FLOAT16, 0, 3);
    ok(run1(PLX_OP_HARDMAX, &d, T(BFLOAT16, 7), &y));
    EXPECT(&y, BFLOAT16, 7);
    fails_exactly(run1(PLX_OP_HARDMAX, &d, T(INT32, 2, 3), &y),
                  "layer 'L' (hardmax): X has dtype int32, expected float32, float16, "
                  "bfloat16 or float64");
    d.axis = 2;
    fails_exactly(run1(PLX_OP_HARDMAX, &d, F32(2, 3), &y),
                  "layer 'L' (hardmax): axis 2 is out of range [-2, 2) for X [2,3]");
    d.axis = -1;
    fails_with(run1(PLX_OP_HARDMAX, &d, SCALAR(FLOAT32), &y), "axis -1 is out of range");
}

Test(shape_infer, cum_sum) {
    plx_cum_sum_desc d = PLX_CUM_SUM_DESC_INIT(0);
    plx_tensor_info y = {0};
    cr_assert(not(d.exclusive));
    cr_assert(not(d.reverse));
    ok(run1(PLX_OP_CUM_SUM, &d, F32(5), &y));
    EXPECT(&y, FLOAT32, 5);
    d.axis = -1;
    d.exclusive = d.reverse = true;
    plx_dtype ok_types[] = {PLX_DTYPE_FLOAT16, PLX_DTYPE_BFLOAT16, PLX_DTYPE_INT32,
                            PLX_DTYPE_INT64};
    for (int i = 0; i < 4; i++) {
        plx_tensor_info x = F32(2, 0, 3);
        x.dtype = ok_types[i];
        ok(run1(PLX_OP_CUM_SUM, &d, x, &y));
        check_info(&y, ok_types[i], DIMS(2, 0, 3), 3);
    }
    /* ONNX CumSum has no 8- or 16-bit integers, nor bool */
    fails_exactly(run1(PLX_OP_CUM_SUM, &d, T(INT8, 3), &y),
                  "layer 'L' (cum_sum): X has dtype int8, expected float32, float16, bfloat16, "
                  "float64, int32, uint32, int64 or uint64");
    fails_with(run1(PLX_OP_CUM_SUM, &d, T(UINT8, 3), &y), "X has dtype uint8");
    fails_with(run1(PLX_OP_CUM_SUM, &d, T(BOOL, 3), &y), "X has dtype bool");
    fails_exactly(run1(PLX_OP_CUM_SUM, &d, SCALAR(FLOAT32), &y),
                  "layer 'L' (cum_sum): X [] must have rank 1 or more");
    d.axis = 2;
    fails_exactly(run1(PLX_OP_CUM_SUM, &d, F32(2, 3), &y),
                  "layer 'L' (cum_sum): axis 2 is out of range [-2, 2) for X [2,3]");
    d.axis = -3;
    fails_with(run1(PLX_OP_CUM_SUM, &d, F32(2, 3), &y), "axis -3 is out of range [-2, 2)");
}

/* ------------------------------------------------------------------------ */
/* is_nan, is_inf, bitwise, shifts, shrink, lp pools                        */

Test(shape_infer, unary_tests_and_bitwise_not) {
    plx_tensor_info y = {0};
    for (int f = PLX_UNARY_IS_NAN; f <= PLX_UNARY_IS_NEG_INF; f++) {
        plx_unary_desc d = PLX_UNARY_DESC_INIT((plx_unary_func)f);
        cr_assert(plx_unary_func_is_test((plx_unary_func)f));
        ok(run1(PLX_OP_UNARY, &d, T(FLOAT16, 3, 2), &y));
        EXPECT(&y, BOOL, 3, 2); /* bool whatever the input */
        ok(run1(PLX_OP_UNARY, &d, SCALAR(BFLOAT16), &y));
        EXPECT_SCALAR(&y, BOOL);
        ok(run1(PLX_OP_UNARY, &d, F32(0, 4), &y));
        EXPECT(&y, BOOL, 0, 4);
    }
    cr_assert(not(plx_unary_func_is_test(PLX_UNARY_BITWISE_NOT)));
    plx_unary_desc d = PLX_UNARY_DESC_INIT(PLX_UNARY_IS_NAN);
    fails_exactly(run1(PLX_OP_UNARY, &d, T(INT32, 3), &y),
                  "layer 'L' (unary): X has dtype int32, expected float32, float16, bfloat16 or float64 "
                  "for is_nan");
    d.func = PLX_UNARY_IS_POS_INF;
    fails_with(run1(PLX_OP_UNARY, &d, T(BOOL, 3), &y), "expected float32, float16, bfloat16 or float64 for is_pos_inf");
    d.func = PLX_UNARY_BITWISE_NOT;
    ok(run1(PLX_OP_UNARY, &d, T(UINT8, 3, 1), &y));
    EXPECT(&y, UINT8, 3, 1);
    ok(run1(PLX_OP_UNARY, &d, T(INT64, 2), &y));
    EXPECT(&y, INT64, 2);
    fails_exactly(run1(PLX_OP_UNARY, &d, F32(3), &y),
                  "layer 'L' (unary): X has dtype float32, expected int8, uint8, int16, uint16, "
                  "int32, uint32, int64 or uint64 for bitwise_not");
    fails_with(run1(PLX_OP_UNARY, &d, T(BOOL, 3), &y), "X has dtype bool");
    cr_assert(eq(str, (char *)plx_unary_func_name(PLX_UNARY_IS_INF), "is_inf"));
    cr_assert(eq(str, (char *)plx_unary_func_name(PLX_UNARY_BITWISE_NOT), "bitwise_not"));
    cr_assert(zero(ptr, (void *)plx_unary_func_name((plx_unary_func)28)));
}

Test(shape_infer, binary_bitwise_and_shifts) {
    plx_tensor_info y = {0};
    for (int f = PLX_BINARY_BITWISE_AND; f <= PLX_BINARY_BITWISE_XOR; f++) {
        plx_binary_desc d = PLX_BINARY_DESC_INIT((plx_binary_func)f);
        cr_assert(plx_binary_func_is_bitwise((plx_binary_func)f));
        ok(RUN(PLX_OP_BINARY, &d, &y, T(INT16, 2, 1, 4), T(INT16, 3, 1)));
        EXPECT(&y, INT16, 2, 3, 4);
        ok(RUN(PLX_OP_BINARY, &d, &y, T(UINT8, 5), SCALAR(UINT8)));
        EXPECT(&y, UINT8, 5);
        fails_with(RUN(PLX_OP_BINARY, &d, &y, F32(2), F32(2)), "A has dtype float32");
        fails_with(RUN(PLX_OP_BINARY, &d, &y, T(BOOL, 2), T(BOOL, 2)), "A has dtype bool");
        fails_with(RUN(PLX_OP_BINARY, &d, &y, T(INT32, 2), T(INT64, 2)), "B has dtype int64");
    }
    plx_binary_desc d = PLX_BINARY_DESC_INIT(PLX_BINARY_BITWISE_AND);
    fails_exactly(RUN(PLX_OP_BINARY, &d, &y, T(INT8, 2, 3), T(INT8, 4)),
                  "layer 'L' (binary): A [2,3] and B [4] do not broadcast");
    for (int f = PLX_BINARY_SHIFT_LEFT; f <= PLX_BINARY_SHIFT_RIGHT; f++) {
        d.func = (plx_binary_func)f;
        cr_assert(plx_binary_func_is_bitwise(d.func));
        ok(RUN(PLX_OP_BINARY, &d, &y, T(UINT8, 2, 3), T(UINT8, 3)));
        EXPECT(&y, UINT8, 2, 3);
    }
    fails_exactly(RUN(PLX_OP_BINARY, &d, &y, T(INT8, 3), T(INT8, 3)),
                  "layer 'L' (binary): A has dtype int8, expected uint8, uint16, uint32 or uint64 for shift_right");
    cr_assert(not(plx_binary_func_is_bitwise(PLX_BINARY_XOR)));
    cr_assert(not(plx_binary_func_is_bitwise(PLX_BINARY_MOD)));
    cr_assert(eq(str, (char *)plx_binary_func_name(PLX_BINARY_SHIFT_LEFT), "shift_left"));
    cr_assert(zero(ptr, (void *)plx_binary_func_name((plx_binary_func)22)));
}

Test(shape_infer, shrink) {
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SHRINK);
    cr_assert(eq(flt, d.alpha, 0.5f));
    cr_assert(eq(flt, d.beta, 0.0f));
    plx_tensor_info y = {0};
    ok(run1(PLX_OP_ACTIVATION, &d, F32(2, 3), &y));
    EXPECT(&y, FLOAT32, 2, 3);
    ok(run1(PLX_OP_ACTIVATION, &d, T(FLOAT16, 4), &y));
    ok(run1(PLX_OP_ACTIVATION, &d, T(INT8, 4), &y)); /* ONNX Shrink: every numeric type */
    EXPECT(&y, INT8, 4);
    ok(run1(PLX_OP_ACTIVATION, &d, T(UINT8, 4), &y));
    fails_exactly(run1(PLX_OP_ACTIVATION, &d, T(BOOL, 4), &y),
                  "layer 'L' (activation): X has dtype bool, expected float32, float16, bfloat16, "
                  "float64, int8, uint8, int16, uint16, int32, uint32, int64 or uint64 for "
                  "shrink");
    d.alpha = NAN;
    fails_with(run1(PLX_OP_ACTIVATION, &d, F32(4), &y), "must not be NaN");
}

Test(shape_infer, lp_pool) {
    plx_pool_desc d = PLX_POOL_DESC_INIT(PLX_POOL_LP);
    cr_assert(eq(i64, d.p, 2));
    plx_tensor_info y = {0};
    d.kernel[0] = d.kernel[1] = 2;
    ok(run1(PLX_OP_POOL, &d, F32(1, 3, 28, 28), &y));
    EXPECT(&y, FLOAT32, 1, 3, 27, 27);
    /* pads as large as the kernel (ONNX's test_lppool_2d_pads): 28+4-2+1 */
    d.pads_begin[0] = d.pads_begin[1] = d.pads_end[0] = d.pads_end[1] = 2;
    ok(run1(PLX_OP_POOL, &d, F32(1, 3, 28, 28), &y));
    EXPECT(&y, FLOAT32, 1, 3, 31, 31);
    /* dilations (opset 18): (2-1)*2+1 = 3 */
    d = (plx_pool_desc)PLX_POOL_DESC_INIT(PLX_POOL_LP);
    d.kernel[0] = d.kernel[1] = 2;
    d.dilations[0] = d.dilations[1] = 2;
    ok(run1(PLX_OP_POOL, &d, T(FLOAT16, 1, 1, 4, 4), &y));
    EXPECT(&y, FLOAT16, 1, 1, 2, 2);
    d.p = 0;
    fails_exactly(run1(PLX_OP_POOL, &d, F32(1, 1, 4, 4), &y),
                  "layer 'L' (pool): p 0 must be at least 1 for lp pooling");
    d.p = 3;
    fails_exactly(run1(PLX_OP_POOL, &d, T(INT8, 1, 1, 4, 4), &y),
                  "layer 'L' (pool): X has dtype int8, expected float32, float16, bfloat16 or float64 for "
                  "lp pooling");
    d.kind = (plx_pool_kind)3;
    fails_with(run1(PLX_OP_POOL, &d, F32(1, 1, 4, 4), &y), "kind 3 is not a plx_pool_kind");

    plx_global_pool_desc g = PLX_GLOBAL_POOL_DESC_INIT(PLX_POOL_LP);
    cr_assert(eq(i64, g.p, 2));
    ok(run1(PLX_OP_GLOBAL_POOL, &g, F32(2, 8, 7, 9), &y));
    EXPECT(&y, FLOAT32, 2, 8, 1, 1);
    g.p = -1;
    fails_exactly(run1(PLX_OP_GLOBAL_POOL, &g, F32(2, 8, 7), &y),
                  "layer 'L' (global_pool): p -1 must be at least 1 for lp pooling");
}

/* ------------------------------------------------------------------------ */
/* Quantized products, matmul_integer, conv_integer, dynamic_quantize       */

static plx_tensor_info quantized(plx_tensor_info t, float scale, int32_t zp) {
    t.quant.kind = PLX_QUANT_PER_TENSOR;
    t.quant.scale = scale;
    t.quant.zero_point = zp;
    return t;
}

Test(shape_infer, quantized_conv_and_matmul) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    d.pads_begin[0] = d.pads_begin[1] = d.pads_end[0] = d.pads_end[1] = 1;
    plx_tensor_info x = quantized(T(UINT8, 1, 3, 8, 8), 0.5f, 128);
    plx_tensor_info w = quantized(T(INT8, 4, 3, 3, 3), 0.01f, 0);
    /* the output's quantization comes from the builder, the shape from inference */
    plx_tensor_info y = quantized(T(INT8, 1), 0.25f, -3);
    ok(RUN(PLX_OP_CONV, &d, &y, x, w, T(INT32, 4)));
    EXPECT(&y, INT8, 1, 4, 8, 8);
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_PER_TENSOR));
    cr_assert(eq(flt, y.quant.scale, 0.25f));
    cr_assert(eq(i32, y.quant.zero_point, -3));
    /* per-axis weights along the output channels */
    float scales[4] = {0.1f, 0.2f, 0.3f, 0.4f};
    plx_tensor_info wa = T(INT8, 4, 3, 3, 3);
    wa.quant.kind = PLX_QUANT_PER_AXIS;
    wa.quant.axis = 0;
    wa.quant.scales = scales;
    y = quantized(T(UINT8, 1), 0.25f, 3);
    ok(RUN(PLX_OP_CONV, &d, &y, x, wa));
    EXPECT(&y, UINT8, 1, 4, 8, 8);
    wa.quant.axis = 1;
    wa.dims[1] = 4;
    fails_with(RUN(PLX_OP_CONV, &d, &y, quantized(T(UINT8, 1, 4, 8, 8), 0.5f, 1), wa),
               "per-axis ones along axis 0");
    /* no output quantization, a float bias, weights without parameters */
    y = T(UINT8, 1);
    fails_with(RUN(PLX_OP_CONV, &d, &y, x, w),
               "a quantized conv needs its output's dtype (int8 or uint8) and per-tensor "
               "quantization set by the builder");
    y = quantized(T(UINT8, 1), 0.25f, 3);
    fails_with(RUN(PLX_OP_CONV, &d, &y, x, w, F32(4)), "B has dtype float32, expected int32");
    fails_with(RUN(PLX_OP_CONV, &d, &y, x, T(INT8, 4, 3, 3, 3)),
               "W [4,3,3,3] needs per-tensor quantization parameters");
    /* matmul: B per column (its last axis) */
    float cols[5] = {1, 2, 3, 4, 5};
    plx_tensor_info b = T(INT8, 7, 5);
    b.quant.kind = PLX_QUANT_PER_AXIS;
    b.quant.axis = 1;
    b.quant.scales = cols;
    y = quantized(T(UINT8, 1), 0.5f, 0);
    ok(RUN(PLX_OP_MATMUL, NULL, &y, quantized(T(UINT8, 2, 3, 7), 0.1f, 5), b));
    EXPECT(&y, UINT8, 2, 3, 5);
    b.quant.axis = 0;
    b.dims[0] = 5;
    b.dims[1] = 5;
    fails_with(RUN(PLX_OP_MATMUL, NULL, &y, quantized(T(UINT8, 3, 5), 0.1f, 5), b),
               "along axis 1");
    /* gemm: B [N, K] transposed is per axis 0; alpha and beta 1; C a bias per column */
    plx_gemm_desc gd = PLX_GEMM_DESC_INIT;
    gd.trans_b = true;
    plx_tensor_info bt = quantized(T(INT8, 6, 4), 0.01f, 0);
    y = quantized(T(INT8, 1), 0.5f, 0);
    ok(RUN(PLX_OP_GEMM, &gd, &y, quantized(T(UINT8, 2, 4), 0.1f, 5), bt, T(INT32, 6)));
    EXPECT(&y, INT8, 2, 6);
    fails_with(RUN(PLX_OP_GEMM, &gd, &y, quantized(T(UINT8, 2, 4), 0.1f, 5), bt, T(INT32, 2, 6)),
               "must be [6] or [1,6], a bias per column");
    gd.alpha = 2.0f;
    fails_with(RUN(PLX_OP_GEMM, &gd, &y, quantized(T(UINT8, 2, 4), 0.1f, 5), bt),
               "a quantized gemm takes alpha = beta = 1");
}

Test(shape_infer, integer_products) {
    plx_tensor_info y = {0};
    ok(RUN(PLX_OP_MATMUL_INTEGER, NULL, &y, T(UINT8, 4, 3), T(INT8, 3, 2)));
    EXPECT(&y, INT32, 4, 2);
    ok(RUN(PLX_OP_MATMUL_INTEGER, NULL, &y, T(UINT8, 2, 4, 3), T(UINT8, 3, 2),
                 SCALAR(UINT8), T(UINT8, 2)));
    EXPECT(&y, INT32, 2, 4, 2);
    ok(RUN(PLX_OP_MATMUL_INTEGER, NULL, &y, T(UINT8, 4, 3), T(UINT8, 3, 2), T(UINT8, 4)));
    fails_with(RUN(PLX_OP_MATMUL_INTEGER, NULL, &y, T(UINT8, 4, 3), T(UINT8, 3, 2), T(UINT8, 3)),
               "a_zero_point [3] must be a scalar or [4]");
    fails_with(RUN(PLX_OP_MATMUL_INTEGER, NULL, &y, T(UINT8, 4, 3), T(UINT8, 3, 2), SCALAR(INT8)),
               "a_zero_point has dtype int8 but A has uint8");
    fails_with(RUN(PLX_OP_MATMUL_INTEGER, NULL, &y, F32(4, 3), T(UINT8, 3, 2)),
               "A has dtype float32, expected int8 or uint8");
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    ok(RUN(PLX_OP_CONV_INTEGER, &d, &y, T(UINT8, 1, 1, 3, 3), T(UINT8, 1, 1, 2, 2),
                 SCALAR(UINT8)));
    EXPECT(&y, INT32, 1, 1, 2, 2);
    fails_with(RUN(PLX_OP_CONV_INTEGER, &d, &y, T(UINT8, 1, 1, 3, 3), T(INT8, 2, 1, 2, 2),
                   SCALAR(UINT8), T(INT8, 3)),
               "w_zero_point [3] must be a scalar or [2]");
    fails_with(RUN(PLX_OP_CONV_INTEGER, &d, &y, T(UINT8, 1, 1, 3, 3), T(UINT8, 1, 1, 2, 2),
                   T(UINT8, 2)),
               "x_zero_point [2] must be a scalar");
    plx_tensor_info outs[3];
    plx_tensor_info x = F32(2, 5);
    ok(plxi_infer_layer("L", PLX_OP_DYNAMIC_QUANTIZE, NULL, &x, 1, outs, 3));
    EXPECT(&outs[0], UINT8, 2, 5);
    EXPECT_SCALAR(&outs[1], FLOAT32);
    EXPECT_SCALAR(&outs[2], UINT8);
    x = T(FLOAT16, 2);
    fails_with(plxi_infer_layer("L", PLX_OP_DYNAMIC_QUANTIZE, NULL, &x, 1, outs, 3),
               "X has dtype float16, expected float32");
}

/* The element types of ABI 1.3 (float64, uint16, uint32, uint64) pass
 * where ONNX's type classes have them and keep their dtype; quantize and
 * dequantize take no float64 scale (ONNX) but 16-bit data; messages list
 * every dtype floats first, integers by width, bool last. */
Test(shape_infer, abi13_dtypes) {
    plx_tensor_info y = {0};
    plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    ok(RUN(PLX_OP_BINARY, &add, &y, T(FLOAT64, 2, 3), T(FLOAT64, 3)));
    EXPECT(&y, FLOAT64, 2, 3);
    ok(RUN(PLX_OP_BINARY, &add, &y, T(UINT16, 4), T(UINT16, 1)));
    EXPECT(&y, UINT16, 4);
    plx_binary_desc less = PLX_BINARY_DESC_INIT(PLX_BINARY_LESS);
    ok(RUN(PLX_OP_BINARY, &less, &y, T(UINT64, 4), T(UINT64, 4)));
    EXPECT(&y, BOOL, 4);
    plx_binary_desc shl = PLX_BINARY_DESC_INIT(PLX_BINARY_SHIFT_LEFT);
    ok(RUN(PLX_OP_BINARY, &shl, &y, T(UINT32, 4), T(UINT32, 4)));
    EXPECT(&y, UINT32, 4);
    plx_binary_desc prelu = PLX_BINARY_DESC_INIT(PLX_BINARY_PRELU);
    ok(RUN(PLX_OP_BINARY, &prelu, &y, T(UINT64, 2, 3), T(UINT64, 3)));
    EXPECT(&y, UINT64, 2, 3);
    plx_binary_desc pow_ = PLX_BINARY_DESC_INIT(PLX_BINARY_POW);
    ok(RUN(PLX_OP_BINARY, &pow_, &y, T(FLOAT64, 3), T(FLOAT64, 3)));
    fails_with(RUN(PLX_OP_BINARY, &pow_, &y, T(UINT32, 3), T(UINT32, 3)), "A has dtype uint32");
    plx_cast_desc cast = PLX_CAST_DESC_INIT(PLX_DTYPE_FLOAT64);
    ok(run1(PLX_OP_CAST, &cast, T(UINT64, 5), &y));
    EXPECT(&y, FLOAT64, 5);
    plx_unary_desc nf = PLX_UNARY_DESC_INIT(PLX_UNARY_BITWISE_NOT);
    ok(run1(PLX_OP_UNARY, &nf, T(UINT64, 5), &y));
    EXPECT(&y, UINT64, 5);
    fails_exactly(run1(PLX_OP_UNARY, &nf, T(FLOAT64, 5), &y),
                  "layer 'L' (unary): X has dtype float64, expected int8, uint8, int16, uint16, "
                  "int32, uint32, int64 or uint64 for bitwise_not");
    plx_unary_desc neg = PLX_UNARY_DESC_INIT(PLX_UNARY_NEG);
    fails_with(run1(PLX_OP_UNARY, &neg, T(UINT16, 5), &y), "X has dtype uint16");
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    ok(run1(PLX_OP_ACTIVATION, &relu, T(FLOAT64, 5), &y));
    fails_with(run1(PLX_OP_ACTIVATION, &relu, T(UINT32, 5), &y), "X has dtype uint32");
    plx_reduce_desc lse = PLX_REDUCE_DESC_INIT(PLX_REDUCE_LOG_SUM_EXP);
    ok(run1(PLX_OP_REDUCE, &lse, T(FLOAT64, 2, 3), &y));
    EXPECT(&y, FLOAT64, 1, 1);
    ok(run1(PLX_OP_REDUCE, &lse, T(UINT64, 2, 3), &y));
    fails_with(run1(PLX_OP_REDUCE, &lse, T(UINT16, 2, 3), &y), "X has dtype uint16");
    plx_cum_sum_desc cs = PLX_CUM_SUM_DESC_INIT(0);
    ok(run1(PLX_OP_CUM_SUM, &cs, T(UINT32, 4), &y));
    EXPECT(&y, UINT32, 4);
    fails_with(run1(PLX_OP_CUM_SUM, &cs, T(UINT16, 4), &y), "X has dtype uint16");
    ok(RUN(PLX_OP_MATMUL, NULL, &y, T(UINT64, 2, 3), T(UINT64, 3, 4)));
    EXPECT(&y, UINT64, 2, 4);
    plx_conv_desc conv = PLX_CONV_DESC_INIT;
    ok(RUN(PLX_OP_CONV, &conv, &y, T(FLOAT64, 1, 2, 5, 5), T(FLOAT64, 3, 2, 3, 3)));
    EXPECT(&y, FLOAT64, 1, 3, 3, 3);

    plx_quantize_desc q = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_UINT16);
    ok(RUN(PLX_OP_QUANTIZE, &q, &y, F32(2, 3), SCALAR(FLOAT32), SCALAR(UINT16)));
    EXPECT(&y, UINT16, 2, 3);
    q.output_dtype = PLX_DTYPE_INT16;
    ok(RUN(PLX_OP_QUANTIZE, &q, &y, F32(2, 3), SCALAR(FLOAT32), SCALAR(INT16)));
    EXPECT(&y, INT16, 2, 3);
    fails_exactly(RUN(PLX_OP_QUANTIZE, &q, &y, T(FLOAT64, 2, 3), SCALAR(FLOAT64), SCALAR(INT16)),
                  "layer 'L' (quantize): X has dtype float64, expected float32, float16 or "
                  "bfloat16");
    plx_quantize_desc dq = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_FLOAT32);
    ok(RUN(PLX_OP_DEQUANTIZE, &dq, &y, T(UINT16, 2, 3), SCALAR(FLOAT32), SCALAR(UINT16)));
    EXPECT(&y, FLOAT32, 2, 3);
    fails_with(RUN(PLX_OP_DEQUANTIZE, &dq, &y, T(UINT16, 2, 3), SCALAR(FLOAT64)),
               "scale has dtype float64, expected float32, float16 or bfloat16");

    plx_binary_desc and_ = PLX_BINARY_DESC_INIT(PLX_BINARY_AND);
    fails_exactly(RUN(PLX_OP_BINARY, &and_, &y, T(UINT64, 2), T(UINT64, 2)),
                  "layer 'L' (binary): A has dtype uint64, expected bool for and");
    plx_binary_desc eq_ = PLX_BINARY_DESC_INIT(PLX_BINARY_EQUAL);
    plx_tensor_info bad = T(FLOAT32, 2);
    bad.dtype = (plx_dtype)PLX_DTYPE_COUNT;
    fails_with(RUN(PLX_OP_BINARY, &eq_, &y, bad, bad), "invalid dtype 20");
}

Test(shape_infer, concat_on_quantized_tensors) {
    plx_axis_desc d = PLX_AXIS_DESC_INIT(1);
    plx_tensor_info y = {0};
    /* the inputs' common parameters move to Y */
    memset(&y, 0, sizeof y);
    ok(RUN(PLX_OP_CONCAT, &d, &y, quantized(T(INT8, 2, 3), 0.5f, 1),
           quantized(T(INT8, 2, 4), 0.5f, 1)));
    EXPECT(&y, INT8, 2, 7);
    cr_assert(eq(int, y.quant.kind, PLX_QUANT_PER_TENSOR));
    cr_assert(eq(i32, y.quant.zero_point, 1));
    /* differing parameters (and dtypes) with Y's set by the builder: each
     * input requantized into Y's */
    memset(&y, 0, sizeof y);
    y.dtype = PLX_DTYPE_UINT8;
    y = quantized(y, 0.25f, 9);
    ok(RUN(PLX_OP_CONCAT, &d, &y, quantized(T(INT8, 2, 3), 0.5f, 1),
           quantized(T(UINT8, 2, 4), 0.1f, 128)));
    EXPECT(&y, UINT8, 2, 7);
    cr_assert(eq(flt, y.quant.scale, 0.25f));
    cr_assert(eq(i32, y.quant.zero_point, 9));
    /* without Y's parameters, int8 and uint8 do not mix */
    memset(&y, 0, sizeof y);
    fails_with(RUN(PLX_OP_CONCAT, &d, &y, quantized(T(INT8, 2, 3), 0.5f, 1),
                   quantized(T(UINT8, 2, 4), 0.1f, 128)),
               "input 1 has dtype uint8 but input 0 has int8");
    /* an input without parameters is not requantized */
    y.dtype = PLX_DTYPE_UINT8;
    y = quantized(y, 0.25f, 9);
    fails_with(RUN(PLX_OP_CONCAT, &d, &y, T(INT8, 2, 3), quantized(T(UINT8, 2, 4), 0.1f, 128)),
               "input 1 has dtype uint8 but input 0 has int8");
}
