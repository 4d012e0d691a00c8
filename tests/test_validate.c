/* The host's validation of a layer view (core/src/validate.c): what
 * docs/backend-abi.md promises under "What the host guarantees about a layer
 * view". Malformed views are refused here with the layer and the fault
 * named, and reach neither a backend's check_layer (plxi_optimizer_ask) nor
 * the reference kernels (plxi_fold_layer). The backend-side cases these
 * replace were in tests/kernels and tests/gpu_opencl. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plexus/plexus.h>

#include "fold.h"
#include "network_internal.h"
#include "assign.h"
#include "validate.h"

#define DIMS(...) (const int64_t[]){__VA_ARGS__}
#define NDIMS(...) (uint32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define F32(...) info(PLX_DTYPE_FLOAT32, DIMS(__VA_ARGS__), NDIMS(__VA_ARGS__))

static plx_tensor_info info(plx_dtype dtype, const int64_t *dims, uint32_t rank) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.rank = rank;
    for (uint32_t i = 0; i < rank; i++) {
        t.dims[i] = dims[i];
    }
    return t;
}

static plx_layer_view view(const char *name, plx_op op, const void *desc, plx_tensor_info *in,
                           uint32_t n_in, plx_tensor_info *out, uint32_t n_out) {
    plx_layer_view v;
    memset(&v, 0, sizeof v);
    v.struct_size = (uint32_t)sizeof v;
    v.name = name;
    v.op = op;
    v.desc = desc;
    v.inputs = in;
    v.input_count = n_in;
    v.outputs = out;
    v.output_count = n_out;
    return v;
}

static void accepted(const plx_layer_view *v) {
    plx_status s = plxi_layer_view_validate(v);
    cr_assert(s == NULL, "refused: %s", s ? plx_status_get_message(s) : "");
}

/* Refused with PLX_INVALID_ARGUMENT, and a message that names the layer
 * first and contains `needle`. */
static void refused(const plx_layer_view *v, const char *needle) {
    plx_status s = plxi_layer_view_validate(v);
    cr_assert(s != NULL, "accepted, expected a refusal with '%s'", needle);
    const char *m = plx_status_get_message(s);
    char prefix[128];
    snprintf(prefix, sizeof prefix, "layer '%s' (%s): ", v->name, plx_op_name(v->op));
    cr_assert(strncmp(m, prefix, strlen(prefix)) == 0, "'%s' does not start with '%s'", m,
              prefix);
    cr_assert(strstr(m, needle) != NULL, "'%s' lacks '%s'", m, needle);
    cr_assert(plx_status_get_code(s) == PLX_INVALID_ARGUMENT);
    plx_status_free(s);
}

/* A conv view with 1 to 3 inputs of a [1,1,3,3] X and a [1,1,2,2] W. */
typedef struct conv_case {
    plx_conv_desc desc;
    plx_tensor_info in[3], out;
    plx_layer_view v;
} conv_case;

static void conv_case_init(conv_case *c, uint32_t n_in) {
    c->desc = (plx_conv_desc)PLX_CONV_DESC_INIT;
    c->in[0] = F32(1, 1, 3, 3);
    c->in[1] = F32(1, 1, 2, 2);
    c->in[2] = F32(1);
    c->out = F32(1, 1, 2, 2);
    c->v = view("c1", PLX_OP_CONV, &c->desc, c->in, n_in, &c->out, 1);
}

Test(validate, well_formed_views_pass) {
    conv_case c;
    conv_case_init(&c, 2);
    accepted(&c.v);
    c.v.input_count = 3;
    accepted(&c.v);
    /* no descriptor type: desc may be NULL */
    plx_tensor_info ab[2] = {F32(2, 3), F32(3, 2)}, y = F32(2, 2);
    plx_layer_view m = view("m", PLX_OP_MATMUL, NULL, ab, 2, &y, 1);
    accepted(&m);
    /* empty tensors are valid */
    ab[0] = F32(0, 3);
    y = F32(0, 2);
    accepted(&m);
}

/* Was common::bad_views_are_refused in tests/kernels. */
Test(validate, conv_arity_and_descriptor) {
    conv_case c;
    conv_case_init(&c, 1);
    refused(&c.v, "1 inputs, the op takes 2 to 3");
    c.v.input_count = 4;
    refused(&c.v, "4 inputs, the op takes 2 to 3");
    c.v.input_count = 2;
    c.v.output_count = 2;
    refused(&c.v, "2 outputs, the op takes 1 to 1");
    c.v.output_count = 1;
    c.v.desc = NULL;
    refused(&c.v, "the descriptor is NULL");
    c.v.desc = &c.desc;
    c.desc.struct_size = 4;
    refused(&c.v, "descriptor struct_size 4 is smaller than");
    /* gpu_opencl's softmax case of tests/gpu_opencl */
    plx_softmax_desc sd = PLX_SOFTMAX_DESC_INIT;
    sd.struct_size = 4;
    plx_tensor_info x = F32(2, 3), y = F32(2, 3);
    plx_layer_view s = view("sm", PLX_OP_SOFTMAX, &sd, &x, 1, &y, 1);
    refused(&s, "descriptor struct_size 4");
}

/* Was instance_norm::refusals' 2-input case and topk::refusals' 1-output
 * case in tests/kernels. */
Test(validate, slot_counts_of_the_op_table) {
    plx_instance_norm_desc nd = PLX_INSTANCE_NORM_DESC_INIT;
    plx_tensor_info ins[3] = {F32(2, 3, 4), F32(3), F32(3)}, out = F32(2, 3, 4);
    plx_layer_view v = view("in", PLX_OP_INSTANCE_NORM, &nd, ins, 2, &out, 1);
    refused(&v, "2 inputs, the op takes 3 to 3");
    v.input_count = 3;
    accepted(&v);

    plx_topk_desc td = PLX_TOPK_DESC_INIT(2);
    plx_tensor_info x = F32(4), outs[2] = {F32(2), info(PLX_DTYPE_INT64, DIMS(2), 1)};
    plx_layer_view t = view("tk", PLX_OP_TOPK, &td, &x, 1, outs, 1);
    refused(&t, "1 outputs, the op takes 2 to 2");
    t.output_count = 2;
    accepted(&t);
}

/* Was lstm::refusals and gru::refusals' slot-count and descriptor cases in
 * tests/kernels. */
Test(validate, rnn_slots_and_descriptor) {
    plx_tensor_info ins[8], outs[3];
    for (int i = 0; i < 8; i++) {
        ins[i] = F32(1);
    }
    for (int i = 0; i < 3; i++) {
        outs[i] = F32(1);
    }
    plx_lstm_desc ld;
    memset(&ld, 0, sizeof ld);
    ld.struct_size = sizeof ld;
    plx_layer_view l = view("l", PLX_OP_LSTM, &ld, ins, 7, outs, 3);
    refused(&l, "7 inputs, the op takes 8 to 8");
    l.input_count = 8;
    l.output_count = 2;
    refused(&l, "2 outputs, the op takes 3 to 3");
    l.output_count = 3;
    accepted(&l);

    plx_gru_desc gd;
    memset(&gd, 0, sizeof gd);
    gd.struct_size = sizeof gd;
    plx_layer_view g = view("g", PLX_OP_GRU, &gd, ins, 6, outs, 3);
    refused(&g, "3 outputs, the op takes 2 to 2");
    g.output_count = 2;
    accepted(&g);
    gd.struct_size = 8;
    refused(&g, "descriptor struct_size 8 is smaller than");
}

/* Was the unknown-operator case of ocl_ops::refusals in tests/gpu_opencl. */
Test(validate, unknown_ops) {
    plx_tensor_info x = F32(2), y = F32(2);
    plx_layer_view v = view("bogus", (plx_op)99, NULL, &x, 1, &y, 1);
    refused(&v, "unknown op 99");
    v.op = PLX_OP_COUNT;
    refused(&v, "unknown op");
}

Test(validate, slot_arrays) {
    conv_case c;
    conv_case_init(&c, 2);
    c.v.inputs = NULL;
    refused(&c.v, "the input array is NULL");
    c.v.inputs = c.in;
    c.v.outputs = NULL;
    refused(&c.v, "the output array is NULL");
    plx_status s = plxi_layer_view_validate(NULL);
    cr_assert(s != NULL && strstr(plx_status_get_message(s), "the layer view is NULL") != NULL);
    plx_status_free(s);
}

Test(validate, tensor_infos) {
    conv_case c;
    conv_case_init(&c, 2);
    c.in[1].dtype = (plx_dtype)77;
    refused(&c.v, "input 1 has an invalid dtype 77");
    c.in[1] = F32(1, 1, 2, 2);
    c.out.rank = PLX_MAX_RANK + 1;
    refused(&c.v, "output 0 has rank 9, more than 8");
    c.out = F32(1, 1, 2, 2);
    c.in[0].dims[2] = -3;
    refused(&c.v, "input 0 has a negative dimension -3 (axis 2)");
    c.in[0].dims[2] = 3;
    /* 2^62 float32 elements: the byte size overflows size_t */
    c.in[0] = F32(INT64_C(1) << 31, INT64_C(1) << 31);
    refused(&c.v, "input 0 is too large");
    /* 2^61 bytes fit size_t but not the bound (INT64_MAX / 8) */
    c.in[0] = info(PLX_DTYPE_UINT8, DIMS(INT64_C(1) << 30, INT64_C(1) << 31), 2);
    refused(&c.v, "input 0 is too large");
    c.in[0] = info(PLX_DTYPE_UINT8, DIMS(INT64_C(1) << 28, INT64_C(1) << 31), 2);
    accepted(&c.v); /* 2^59 bytes is within it */
}

/* ---- the backend never sees a refused view ------------------------------ */

static int check_calls;

static plx_status counting_check(plx_backend *backend, const plx_layer_view *layer) {
    (void)backend;
    (void)layer;
    check_calls++;
    return NULL;
}

Test(validate, optimizer_asks_only_valid_views) {
    plxi_backend_record rec;
    memset(&rec, 0, sizeof rec);
    rec.functions.check_layer = counting_check;

    plx_tensor_info xi = F32(1, 1, 3, 3), wi = F32(1, 1, 2, 2), yi = F32(1, 1, 2, 2);
    plxi_layer x = {.name = "x", .op = PLX_OP_INPUT, .output_count = 1, .outputs = &xi};
    plxi_layer w = {.name = "w", .op = PLX_OP_INPUT, .output_count = 1, .outputs = &wi};
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    plxi_source src[2] = {{0, 0}, {1, 0}};
    plxi_layer conv = {.name = "c1", .op = PLX_OP_CONV, .desc = &d, .input_count = 1,
                       .output_count = 1, .inputs = src, .outputs = &yi};
    plxi_layer *layers[3] = {&x, &w, &conv};

    check_calls = 0;
    bool oom = false;
    char *reason = plxi_optimizer_ask(&rec, &conv, layers, &oom);
    cr_assert(!oom);
    cr_assert(reason != NULL);
    cr_assert(strstr(reason, "layer 'c1' (conv): 1 inputs, the op takes 2 to 3") != NULL, "%s",
              reason);
    cr_assert(check_calls == 0, "check_layer saw a view the host refused");
    free(reason);

    conv.input_count = 2;
    reason = plxi_optimizer_ask(&rec, &conv, layers, &oom);
    cr_assert(reason == NULL && !oom, "%s", reason ? reason : "out of memory");
    cr_assert(check_calls == 1);
}

/* Constant folding runs the reference kernels on views it builds itself:
 * a malformed one is skipped, never run (a NULL descriptor would be read). */
Test(validate, fold_skips_invalid_views) {
    float xd[9] = {0}, wd[4] = {0};
    const void *consts[2] = {xd, wd};
    conv_case c;
    conv_case_init(&c, 2);
    c.v.input_constants = consts;
    void *out[1] = {NULL};
    char err[256] = "";
    c.v.desc = NULL;
    cr_assert(plxi_fold_layer(&c.v, PLXI_FOLD_MAX_BYTES, out, err, sizeof err) ==
              PLXI_FOLD_SKIPPED);
    cr_assert(out[0] == NULL);
    c.v.desc = &c.desc;
    c.v.input_count = 1;
    cr_assert(plxi_fold_layer(&c.v, PLXI_FOLD_MAX_BYTES, out, err, sizeof err) ==
              PLXI_FOLD_SKIPPED);
    c.v.input_count = 2;
    cr_assert(plxi_fold_layer(&c.v, PLXI_FOLD_MAX_BYTES, out, err, sizeof err) == PLXI_FOLDED,
              "%s", err);
    free(out[0]);
}

/* R-18 (1): the host shows "<id>: <reason>", so a reason that starts with
 * the backend's own id ("<id>:" or "<id> ") has it dropped: the id appears
 * once. Only the whole id followed by ':' or ' ' counts, and a reason that
 * would be left empty is kept whole. */
Test(refusal_text, the_backend_id_appears_once) {
    static const struct {
        const char *reason, *shown;
    } cases[] = {
        {"acme: runs conv in float32 only", "runs conv in float32 only"},
        {"acme:runs conv", "runs conv"},
        {"acme runs conv in float32 only", "runs conv in float32 only"},
        {"acme   runs conv", "runs conv"},
        {"runs conv in float32 only", "runs conv in float32 only"},
        {"acme_cpu runs conv", "acme_cpu runs conv"}, /* another id */
        {"acmeconv: no", "acmeconv: no"},
        {"Acme: runs conv", "Acme: runs conv"}, /* ids are lower case */
        {"acme:", "acme:"},
        {"acme", "acme"},
        {"acme: ", "acme: "},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *shown = plxi_refusal_text("acme", cases[i].reason);
        cr_assert_str_eq(shown, cases[i].shown, "'%s' shown as '%s'", cases[i].reason, shown);
    }
}
