/* Tests of cpu_ref's recurrent kernels (kernels_rnn.c: lstm, gru and rnn),
 * called directly with hand-built layer views: ONNX's own backend-test
 * cases with their fixed numbers, and seeded random cases checked against
 * the plain reference loops of rnn_reference.h (written from ONNX's
 * equations, independently of the kernels). */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

#define KT_LAYER_NAME "R1"
#include "kernel_test_util.h"

#include "../rnn_reference.h"

/* ---- helpers ------------------------------------------------------------ */

/* uniform in [-scale, scale] */
static float rnd_f(float scale) {
    return scale * (2.0f * (float)((double)(rnd() >> 11) / 9007199254740992.0) - 1.0f);
}

/* One lstm or gru layer: attributes, sizes, inputs, the kernel's outputs
 * and the reference's. */
typedef struct rnn_case {
    bool lstm;
    plx_lstm_desc ld;
    plx_gru_desc gd;
    int64_t S, B, In, H, D;
    float *x, *w, *r, *b, *h0, *c0, *p;
    int32_t *lens;
    float *y, *yh, *yc, *ry, *ryh, *ryc;
} rnn_case;

static float *fill(size_t n, float scale) {
    float *a = calloc(n ? n : 1, sizeof *a);
    cr_assert(not(zero(ptr, a)));
    for (size_t i = 0; i < n; i++) {
        a[i] = rnd_f(scale);
    }
    return a;
}

static void case_dirs(rnn_case *c) {
    plx_rnn_direction dir = c->lstm ? c->ld.direction : c->gd.direction;
    c->D = dir == PLX_RNN_BIDIRECTIONAL ? 2 : 1;
}

/* Random weights (in [-0.6, 0.6]), inputs, biases, initial states and
 * peepholes; every length S; the ONNX default activations. */
static void case_init(rnn_case *c, bool lstm, plx_rnn_direction dir, int64_t S, int64_t B,
                      int64_t In, int64_t H, uint64_t s) {
    memset(c, 0, sizeof *c);
    seed(s);
    c->lstm = lstm;
    c->S = S;
    c->B = B;
    c->In = In;
    c->H = H;
    c->ld.struct_size = sizeof c->ld;
    c->ld.direction = dir;
    c->ld.hidden_size = H;
    plx_rnn_default_activations(&c->ld.activations[0][0], 3);
    c->gd.struct_size = sizeof c->gd;
    c->gd.direction = dir;
    c->gd.hidden_size = H;
    plx_rnn_default_activations(&c->gd.activations[0][0], 2);
    case_dirs(c);
    int64_t D = c->D, G = lstm ? 4 : 3;
    c->x = fill((size_t)(S * B * In), 1.0f);
    c->w = fill((size_t)(D * G * H * In), 0.6f);
    c->r = fill((size_t)(D * G * H * H), 0.6f);
    c->b = fill((size_t)(D * 2 * G * H), 0.6f);
    c->h0 = fill((size_t)(D * B * H), 0.6f);
    c->c0 = fill((size_t)(D * B * H), 0.6f);
    c->p = fill((size_t)(D * 3 * H), 0.6f);
    c->lens = calloc((size_t)(B ? B : 1), sizeof *c->lens);
    cr_assert(not(zero(ptr, c->lens)));
    for (int64_t i = 0; i < B; i++) {
        c->lens[i] = (int32_t)S;
    }
    size_t ny = (size_t)(S * D * B * H), ns = (size_t)(D * B * H);
    c->y = fill(ny, 0);
    c->yh = fill(ns, 0);
    c->yc = fill(ns, 0);
    c->ry = fill(ny, 0);
    c->ryh = fill(ns, 0);
    c->ryc = fill(ns, 0);
}

static void case_free(rnn_case *c) {
    float *all[] = {c->x, c->w, c->r, c->b, c->h0, c->c0, c->p,
                    c->y, c->yh, c->yc, c->ry, c->ryh, c->ryc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free(all[i]);
    }
    free(c->lens);
    memset(c, 0, sizeof *c);
}

static void set_all(float *a, size_t n, float v) {
    for (size_t i = 0; i < n; i++) {
        a[i] = v;
    }
}

/* The infos of the case's inputs and outputs. */
static void case_infos(const rnn_case *c, plx_tensor_info *ins, plx_tensor_info *outs) {
    int64_t S = c->S, B = c->B, In = c->In, H = c->H, D = c->D, G = c->lstm ? 4 : 3;
    ins[0] = info(PLX_DTYPE_FLOAT32, SHAPE(S, B, In));
    ins[1] = info(PLX_DTYPE_FLOAT32, SHAPE(D, G * H, In));
    ins[2] = info(PLX_DTYPE_FLOAT32, SHAPE(D, G * H, H));
    ins[3] = info(PLX_DTYPE_FLOAT32, SHAPE(D, 2 * G * H));
    ins[4] = info(PLX_DTYPE_INT32, SHAPE(B));
    ins[5] = info(PLX_DTYPE_FLOAT32, SHAPE(D, B, H));
    ins[6] = info(PLX_DTYPE_FLOAT32, SHAPE(D, B, H));
    ins[7] = info(PLX_DTYPE_FLOAT32, SHAPE(D, 3 * H));
    outs[0] = info(PLX_DTYPE_FLOAT32, SHAPE(S, D, B, H));
    outs[1] = info(PLX_DTYPE_FLOAT32, SHAPE(D, B, H));
    outs[2] = info(PLX_DTYPE_FLOAT32, SHAPE(D, B, H));
}

static const char *case_check(const rnn_case *c, const plx_tensor_info *ins,
                              const plx_tensor_info *outs) {
    plx_layer_view l = c->lstm ? layer_of(PLX_OP_LSTM, &c->ld, ins, 8, outs, 3)
                               : layer_of(PLX_OP_GRU, &c->gd, ins, 6, outs, 2);
    return c->lstm ? plxk_check_lstm(&l, g_err, sizeof g_err)
                   : plxk_check_gru(&l, g_err, sizeof g_err);
}

/* Runs the kernel on the case, without checking it first (its outputs
 * filled with a pattern no result has, so that unwritten elements show). */
static bool case_run_unchecked(rnn_case *c) {
    case_dirs(c);
    plx_tensor_info ins[8], outs[3];
    case_infos(c, ins, outs);
    memset(c->y, 0x7d, (size_t)(c->S * c->D * c->B * c->H) * sizeof(float));
    memset(c->yh, 0x7d, (size_t)(c->D * c->B * c->H) * sizeof(float));
    memset(c->yc, 0x7d, (size_t)(c->D * c->B * c->H) * sizeof(float));
    const void *in_data[8] = {c->x, c->w, c->r, c->b, c->lens, c->h0, c->c0, c->p};
    void *out_data[3] = {c->y, c->yh, c->yc};
    plx_layer_view l = c->lstm ? layer_of(PLX_OP_LSTM, &c->ld, ins, 8, outs, 3)
                               : layer_of(PLX_OP_GRU, &c->gd, ins, 6, outs, 2);
    return run_layer(c->lstm ? plxk_run_lstm : plxk_run_gru, &l, in_data, out_data);
}

/* Checks the case (cpu_ref must accept it), then runs it. */
static bool case_run(rnn_case *c) {
    case_dirs(c);
    plx_tensor_info ins[8], outs[3];
    case_infos(c, ins, outs);
    const char *why = case_check(c, ins, outs);
    cr_assert(zero(ptr, (void *)why), "refused: %s", why);
    return case_run_unchecked(c);
}

static void case_reference(rnn_case *c) {
    case_dirs(c);
    if (c->lstm) {
        rnnref_lstm(&c->ld, c->S, c->B, c->In, c->x, c->w, c->r, c->b, c->lens, c->h0, c->c0, c->p,
                    c->ry, c->ryh, c->ryc);
    } else {
        rnnref_gru(&c->gd, c->S, c->B, c->In, c->x, c->w, c->r, c->b, c->lens, c->h0, c->ry,
                   c->ryh);
    }
}

static void expect_close(const char *what, const float *got, const float *want, size_t n,
                         float tol) {
    for (size_t i = 0; i < n; i++) {
        float diff = fabsf(got[i] - want[i]);
        cr_assert(le(flt, diff, tol * fmaxf(1.0f, fabsf(want[i]))),
                  "%s element %zu: got %.9g, want %.9g", what, i, (double)got[i], (double)want[i]);
    }
}

/* Kernel and reference agree on every output. */
static void check_case(rnn_case *c) {
    cr_assert(case_run(c), "%s", g_err);
    case_reference(c);
    size_t ny = (size_t)(c->S * c->D * c->B * c->H), ns = (size_t)(c->D * c->B * c->H);
    expect_close("Y", c->y, c->ry, ny, 2e-5f);
    expect_close("Y_h", c->yh, c->ryh, ns, 2e-5f);
    if (c->lstm) {
        expect_close("Y_c", c->yc, c->ryc, ns, 2e-5f);
    }
}

/* Y is zero past each batch entry's length, and Y_h is Y at the last step
 * run (t = len-1 forward, t = 0 reverse). */
static void check_lengths(const rnn_case *c) {
    plx_rnn_direction dir = c->lstm ? c->ld.direction : c->gd.direction;
    for (int64_t d = 0; d < c->D; d++) {
        bool rev = dir == PLX_RNN_REVERSE || d == 1;
        for (int64_t b = 0; b < c->B; b++) {
            int64_t len = c->lens[b], last = rev ? 0 : len - 1;
            for (int64_t t = 0; t < c->S; t++) {
                for (int64_t j = 0; j < c->H; j++) {
                    float v = c->y[((t * c->D + d) * c->B + b) * c->H + j];
                    if (t >= len) {
                        cr_assert(eq(flt, v, 0.0f), "Y[%lld,%lld,%lld,%lld] past the length %lld",
                                  (long long)t, (long long)d, (long long)b, (long long)j,
                                  (long long)len);
                    } else if (t == last) {
                        cr_assert(eq(flt, v, c->yh[(d * c->B + b) * c->H + j]),
                                  "Y_h[%lld,%lld,%lld] is not Y at t = %lld", (long long)d,
                                  (long long)b, (long long)j, (long long)t);
                    }
                }
            }
        }
    }
}

static const plx_activation_func g_rnn_funcs[] = {
    PLX_ACT_RELU,        PLX_ACT_TANH, PLX_ACT_SIGMOID,  PLX_ACT_AFFINE,
    PLX_ACT_LEAKY_RELU,  PLX_ACT_THRESHOLDED_RELU, PLX_ACT_SCALED_TANH,
    PLX_ACT_HARD_SIGMOID, PLX_ACT_ELU, PLX_ACT_SOFTSIGN, PLX_ACT_SOFTPLUS};
#define N_FUNCS (sizeof g_rnn_funcs / sizeof g_rnn_funcs[0])

/* Function k of the list with non-default parameters. */
static plx_rnn_activation rnn_act(size_t k) {
    plx_activation_func f = g_rnn_funcs[k % N_FUNCS];
    plx_rnn_activation a = {f, 0.7f, 0.4f};
    if (f == PLX_ACT_THRESHOLDED_RELU) {
        a.alpha = 0.1f;
    }
    return a;
}

/* ---- lstm: ONNX's backend tests ---------------------------------------------- */

/* The cases of onnx/backend/test/case/node/lstm.py: W and R all 0.1. The
 * expected Y_h were computed with that file's LSTM_Helper equations
 * (numpy, float32). */
Test(lstm, onnx_defaults) {
    rnn_case c;
    case_init(&c, true, PLX_RNN_FORWARD, 3, 1, 2, 3, 1);
    const float x[6] = {1, 2, 3, 4, 5, 6};
    memcpy(c.x, x, sizeof x);
    set_all(c.w, 12 * 2, 0.1f);
    set_all(c.r, 12 * 3, 0.1f);
    set_all(c.b, 24, 0.0f);
    set_all(c.h0, 3, 0.0f);
    set_all(c.c0, 3, 0.0f);
    set_all(c.p, 9, 0.0f);
    cr_assert(case_run(&c), "%s", g_err);
    const float want[3] = {0.600429893f, 0.600429893f, 0.600429893f};
    expect_close("Y_h", c.yh, want, 3, 1e-6f);
    expect_close("Y[2]", c.y + 6, want, 3, 1e-6f);
    /* first step by hand: gates 0.3, C = sig(.3) tanh(.3), H = sig(.3) tanh(C) */
    double s = 1.0 / (1.0 + exp(-0.3)), c1 = s * tanh(0.3);
    const float want0[3] = {(float)(s * tanh(c1)), (float)(s * tanh(c1)), (float)(s * tanh(c1))};
    expect_close("Y[0]", c.y, want0, 3, 1e-6f);
    case_free(&c);
}

Test(lstm, onnx_initial_bias) {
    rnn_case c;
    case_init(&c, true, PLX_RNN_FORWARD, 3, 1, 3, 4, 2);
    for (int i = 0; i < 9; i++) {
        c.x[i] = (float)(i + 1);
    }
    set_all(c.w, 16 * 3, 0.1f);
    set_all(c.r, 16 * 4, 0.1f);
    set_all(c.b, 16, 0.1f); /* Wb 0.1 */
    set_all(c.b + 16, 16, 0.0f);
    set_all(c.h0, 4, 0.0f);
    set_all(c.c0, 4, 0.0f);
    set_all(c.p, 12, 0.0f);
    cr_assert(case_run(&c), "%s", g_err);
    const float want[4] = {0.907471538f, 0.907471538f, 0.907471538f, 0.907471538f};
    expect_close("Y_h", c.yh, want, 4, 1e-6f);
    case_free(&c);
}

Test(lstm, onnx_peepholes) {
    rnn_case c;
    case_init(&c, true, PLX_RNN_FORWARD, 1, 2, 4, 3, 3);
    for (int i = 0; i < 8; i++) {
        c.x[i] = (float)(i + 1);
    }
    set_all(c.w, 12 * 4, 0.1f);
    set_all(c.r, 12 * 3, 0.1f);
    set_all(c.b, 24, 0.0f);
    set_all(c.h0, 6, 0.0f);
    set_all(c.c0, 6, 0.0f);
    set_all(c.p, 9, 0.1f);
    cr_assert(case_run(&c), "%s", g_err);
    const float want[6] = {0.375069112f, 0.375069112f, 0.375069112f,
                           0.680130899f, 0.680130899f, 0.680130899f};
    expect_close("Y_h", c.yh, want, 6, 1e-6f);
    case_free(&c);
}

/* ---- lstm: against the reference ---------------------------------------------- */

Test(lstm, forward_peepholes_initial_states) {
    rnn_case c;
    case_init(&c, true, PLX_RNN_FORWARD, 5, 3, 4, 6, 10);
    check_case(&c);
    case_free(&c);
}

Test(lstm, forward_without_peepholes_or_initial_states) {
    rnn_case c;
    case_init(&c, true, PLX_RNN_FORWARD, 4, 2, 3, 5, 11);
    set_all(c.p, 15, 0.0f);
    set_all(c.h0, 10, 0.0f);
    set_all(c.c0, 10, 0.0f);
    check_case(&c);
    case_free(&c);
}

Test(lstm, reverse) {
    rnn_case c;
    case_init(&c, true, PLX_RNN_REVERSE, 5, 2, 3, 4, 12);
    check_case(&c);
    check_lengths(&c);
    case_free(&c);
}

Test(lstm, bidirectional_own_activations_per_direction) {
    rnn_case c;
    case_init(&c, true, PLX_RNN_BIDIRECTIONAL, 4, 3, 2, 5, 13);
    c.ld.activations[1][0] = rnn_act(7); /* hard_sigmoid */
    c.ld.activations[1][1] = rnn_act(6); /* scaled_tanh */
    c.ld.activations[1][2] = rnn_act(9); /* softsign */
    check_case(&c);
    check_lengths(&c);
    case_free(&c);
}

Test(lstm, sequence_lens_shorter_every_direction) {
    const plx_rnn_direction dirs[3] = {PLX_RNN_FORWARD, PLX_RNN_REVERSE, PLX_RNN_BIDIRECTIONAL};
    for (int k = 0; k < 3; k++) {
        rnn_case c;
        case_init(&c, true, dirs[k], 5, 4, 3, 4, 20 + (uint64_t)k);
        const int32_t lens[4] = {5, 2, 1, 4};
        memcpy(c.lens, lens, sizeof lens);
        check_case(&c);
        check_lengths(&c);
        case_free(&c);
    }
}

Test(lstm, clip) {
    rnn_case c;
    case_init(&c, true, PLX_RNN_BIDIRECTIONAL, 4, 2, 3, 4, 30);
    for (size_t i = 0; i < 4 * 2 * 3; i++) {
        c.x[i] *= 4.0f; /* pre-activations well past the clip */
    }
    check_case(&c);
    float unclipped = c.yh[0];
    c.ld.clip = 0.5f;
    check_case(&c);
    cr_assert(ne(flt, c.yh[0], unclipped), "the clip changed nothing");
    case_free(&c);
}

Test(lstm, input_forget) {
    rnn_case c;
    case_init(&c, true, PLX_RNN_BIDIRECTIONAL, 4, 2, 3, 4, 31);
    c.ld.input_forget = true;
    const int32_t lens[2] = {3, 4};
    memcpy(c.lens, lens, sizeof lens);
    check_case(&c);
    check_lengths(&c);
    case_free(&c);
}

Test(lstm, every_activation) {
    for (size_t k = 0; k < N_FUNCS; k++) {
        rnn_case c;
        case_init(&c, true, PLX_RNN_BIDIRECTIONAL, 3, 2, 3, 4, 40 + k);
        for (int d = 0; d < 2; d++) {
            for (int a = 0; a < 3; a++) {
                c.ld.activations[d][a] = rnn_act(k + (size_t)(a * 4 + d * 5));
            }
        }
        c.ld.clip = k % 2 ? 3.0f : 0.0f;
        check_case(&c);
        case_free(&c);
    }
}

/* No scratch of a fixed size: a hidden size larger than any small buffer. */
Test(lstm, large_hidden_size) {
    rnn_case c;
    case_init(&c, true, PLX_RNN_BIDIRECTIONAL, 3, 2, 9, 67, 50);
    for (size_t i = 0; i < 2 * 4 * 67 * 67; i++) {
        c.r[i] *= 0.1f;
    }
    check_case(&c);
    case_free(&c);
}

/* A direction of at most four steps in all reads R where it is; more
 * steps read it transposed in the workspace (kernels_rnn.c). Both sides of
 * that line, with hidden sizes that fill whole 16 x 16 tiles of the
 * transpose and leave edges (H = 16 and 20: gh = 64 and 80). */
Test(lstm, recurrent_weights_in_place_or_transposed) {
    const int64_t shapes[][3] = {{1, 1, 20}, {2, 2, 16}, {1, 3, 20}, {5, 1, 16}, {3, 2, 20}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        rnn_case c;
        case_init(&c, true, PLX_RNN_BIDIRECTIONAL, shapes[k][0], shapes[k][1], 7, shapes[k][2],
                  60 + k);
        check_case(&c);
        case_free(&c);
    }
    /* eight steps' worth of Y, three run: in place */
    rnn_case c;
    case_init(&c, true, PLX_RNN_FORWARD, 4, 2, 5, 20, 66);
    const int32_t lens[2] = {1, 2};
    memcpy(c.lens, lens, sizeof lens);
    check_case(&c);
    check_lengths(&c);
    case_free(&c);
}

Test(lstm, sequence_lens_out_of_range) {
    rnn_case c;
    case_init(&c, true, PLX_RNN_FORWARD, 3, 2, 2, 3, 60);
    const int32_t bad[3][2] = {{3, 0}, {3, 4}, {-1, 2}};
    const char *const what[3] = {"sequence_lens[1] = 0", "sequence_lens[1] = 4",
                                 "sequence_lens[0] = -1"};
    for (int k = 0; k < 3; k++) {
        memcpy(c.lens, bad[k], sizeof bad[k]);
        cr_assert(not(case_run(&c)), "lengths %d, %d", bad[k][0], bad[k][1]);
        cr_assert(not(zero(ptr, strstr(g_err, what[k]))), "%s", g_err);
        cr_assert(not(zero(ptr, strstr(g_err, "'R1' (lstm)"))), "%s", g_err);
        cr_assert(not(zero(ptr, strstr(g_err, "[1, 3]"))), "%s", g_err);
    }
    case_free(&c);
}

Test(lstm, refusals) {
    rnn_case c;
    case_init(&c, true, PLX_RNN_FORWARD, 3, 2, 2, 3, 61);
    plx_tensor_info ins[8], outs[3];
    case_infos(&c, ins, outs);
    const char *why;

    c.ld.activations[0][1].func = PLX_ACT_GELU;
    why = case_check(&c, ins, outs);
    cr_assert(not(zero(ptr, (void *)why)));
    cr_assert(not(zero(ptr, strstr(why, "activations[0][1]"))), "%s", why);
    /* a run of a refused layer fails with the reason */
    cr_assert(not(case_run_unchecked(&c)));
    cr_assert(not(zero(ptr, strstr(g_err, "activations[0][1]"))), "%s", g_err);

    /* an unused direction's activations do not matter */
    plx_rnn_default_activations(&c.ld.activations[0][0], 3);
    c.ld.activations[1][0].func = PLX_ACT_GELU;
    cr_assert(zero(ptr, (void *)case_check(&c, ins, outs)), "%s", g_err);

    c.ld.direction = (plx_rnn_direction)3;
    why = case_check(&c, ins, outs);
    cr_assert(not(zero(ptr, strstr(why, "direction 3"))), "%s", why);
    c.ld.direction = PLX_RNN_FORWARD;

    c.ld.hidden_size = 4;
    why = case_check(&c, ins, outs);
    cr_assert(not(zero(ptr, strstr(why, "W [1,12,2] must be [1,16,2]"))), "%s", why);
    c.ld.hidden_size = 0;
    why = case_check(&c, ins, outs);
    cr_assert(not(zero(ptr, strstr(why, "hidden_size 0"))), "%s", why);
    c.ld.hidden_size = 3;

    c.ld.clip = -1.0f;
    cr_assert(not(zero(ptr, (void *)case_check(&c, ins, outs))));
    c.ld.clip = NAN;
    cr_assert(not(zero(ptr, (void *)case_check(&c, ins, outs))));
    c.ld.clip = 0.0f;

    ins[4].dtype = PLX_DTYPE_INT64;
    why = case_check(&c, ins, outs);
    cr_assert(not(zero(ptr, strstr(why, "sequence_lens int32, not int64"))), "%s", why);
    ins[4].dtype = PLX_DTYPE_INT32;
    ins[7].dims[1] = 8;
    why = case_check(&c, ins, outs);
    cr_assert(not(zero(ptr, strstr(why, "P [1,8] must be [1,9]"))), "%s", why);
    ins[7].dims[1] = 9;
    outs[0].dims[0] = 2;
    why = case_check(&c, ins, outs);
    cr_assert(not(zero(ptr, strstr(why, "Y [2,1,2,3] must be [3,1,2,3]"))), "%s", why);
    outs[0].dims[0] = 3;
    cr_assert(zero(ptr, (void *)case_check(&c, ins, outs)), "%s", g_err);
    /* wrong slot counts are the host's to refuse (tests/test_validate.c) */
    case_free(&c);
}

/* ---- gru: ONNX's backend tests ------------------------------------------------ */

/* The cases of onnx/backend/test/case/node/gru.py: W and R all 0.1. The
 * expected Y_h were computed with that file's GRU_Helper equations (numpy,
 * float32). */
Test(gru, onnx_defaults) {
    rnn_case c;
    case_init(&c, false, PLX_RNN_FORWARD, 1, 3, 2, 5, 100);
    const float x[6] = {1, 2, 3, 4, 5, 6};
    memcpy(c.x, x, sizeof x);
    set_all(c.w, 15 * 2, 0.1f);
    set_all(c.r, 15 * 5, 0.1f);
    set_all(c.b, 30, 0.0f);
    set_all(c.h0, 15, 0.0f);
    cr_assert(case_run(&c), "%s", g_err);
    float want[15];
    set_all(want, 5, 0.123970278f);
    set_all(want + 5, 5, 0.200536609f);
    set_all(want + 10, 5, 0.199916527f);
    expect_close("Y_h", c.yh, want, 15, 1e-6f);
    expect_close("Y", c.y, want, 15, 1e-6f);
    case_free(&c);
}

Test(gru, onnx_initial_bias) {
    rnn_case c;
    case_init(&c, false, PLX_RNN_FORWARD, 1, 3, 3, 3, 101);
    for (int i = 0; i < 9; i++) {
        c.x[i] = (float)(i + 1);
    }
    set_all(c.w, 9 * 3, 0.1f);
    set_all(c.r, 9 * 3, 0.1f);
    set_all(c.b, 9, 0.1f); /* Wb 0.1 */
    set_all(c.b + 9, 9, 0.0f);
    set_all(c.h0, 9, 0.0f);
    cr_assert(case_run(&c), "%s", g_err);
    float want[9];
    set_all(want, 3, 0.200536609f);
    set_all(want + 3, 3, 0.154823378f);
    set_all(want + 6, 3, 0.0748427585f);
    expect_close("Y_h", c.yh, want, 9, 1e-6f);
    case_free(&c);
}

/* linear_before_reset 0 and 1 with one step from a zero state agree (the
 * reset gate multiplies a zero Ht-1 either way) unless Rbh is non-zero:
 * a hand check of where Rbh goes. */
Test(gru, rbh_inside_or_outside_the_reset) {
    rnn_case c;
    case_init(&c, false, PLX_RNN_FORWARD, 1, 1, 1, 1, 102);
    c.x[0] = 1.0f;
    set_all(c.w, 3, 0.0f);
    set_all(c.r, 3, 0.0f);
    set_all(c.b, 6, 0.0f);
    c.b[5] = 2.0f; /* Rbh */
    c.h0[0] = 0.0f;
    /* z = r = sigmoid(0) = 0.5; lbr 0: h = tanh(Rbh) ; lbr 1: h = tanh(0.5 * Rbh) */
    cr_assert(case_run(&c), "%s", g_err);
    const float want0[1] = {(float)(0.5 * tanh(2.0))};
    expect_close("Y_h", c.yh, want0, 1, 1e-6f);
    c.gd.linear_before_reset = true;
    cr_assert(case_run(&c), "%s", g_err);
    const float want1[1] = {(float)(0.5 * tanh(1.0))};
    expect_close("Y_h", c.yh, want1, 1, 1e-6f);
    case_free(&c);
}

/* ---- gru: against the reference ------------------------------------------------ */

Test(gru, forward_both_reset_modes) {
    for (int lbr = 0; lbr < 2; lbr++) {
        rnn_case c;
        case_init(&c, false, PLX_RNN_FORWARD, 5, 3, 4, 6, 110 + (uint64_t)lbr);
        c.gd.linear_before_reset = lbr;
        check_case(&c);
        case_free(&c);
    }
}

Test(gru, reverse_both_reset_modes) {
    for (int lbr = 0; lbr < 2; lbr++) {
        rnn_case c;
        case_init(&c, false, PLX_RNN_REVERSE, 4, 2, 3, 5, 112 + (uint64_t)lbr);
        c.gd.linear_before_reset = lbr;
        check_case(&c);
        check_lengths(&c);
        case_free(&c);
    }
}

Test(gru, bidirectional_own_activations_per_direction) {
    for (int lbr = 0; lbr < 2; lbr++) {
        rnn_case c;
        case_init(&c, false, PLX_RNN_BIDIRECTIONAL, 4, 3, 2, 5, 114 + (uint64_t)lbr);
        c.gd.linear_before_reset = lbr;
        c.gd.activations[1][0] = rnn_act(7); /* hard_sigmoid */
        c.gd.activations[1][1] = rnn_act(10); /* softplus */
        check_case(&c);
        check_lengths(&c);
        case_free(&c);
    }
}

Test(gru, sequence_lens_shorter_every_direction) {
    const plx_rnn_direction dirs[3] = {PLX_RNN_FORWARD, PLX_RNN_REVERSE, PLX_RNN_BIDIRECTIONAL};
    for (int k = 0; k < 6; k++) {
        rnn_case c;
        case_init(&c, false, dirs[k % 3], 5, 4, 3, 4, 120 + (uint64_t)k);
        c.gd.linear_before_reset = k >= 3;
        const int32_t lens[4] = {1, 5, 3, 2};
        memcpy(c.lens, lens, sizeof lens);
        check_case(&c);
        check_lengths(&c);
        case_free(&c);
    }
}

Test(gru, clip) {
    for (int lbr = 0; lbr < 2; lbr++) {
        rnn_case c;
        case_init(&c, false, PLX_RNN_BIDIRECTIONAL, 4, 2, 3, 4, 130 + (uint64_t)lbr);
        c.gd.linear_before_reset = lbr;
        for (size_t i = 0; i < 4 * 2 * 3; i++) {
            c.x[i] *= 4.0f;
        }
        check_case(&c);
        float unclipped = c.yh[0];
        c.gd.clip = 0.5f;
        check_case(&c);
        cr_assert(ne(flt, c.yh[0], unclipped), "the clip changed nothing");
        case_free(&c);
    }
}

Test(gru, every_activation) {
    for (size_t k = 0; k < N_FUNCS; k++) {
        rnn_case c;
        case_init(&c, false, PLX_RNN_BIDIRECTIONAL, 3, 2, 3, 4, 140 + k);
        c.gd.linear_before_reset = k % 2;
        for (int d = 0; d < 2; d++) {
            for (int a = 0; a < 2; a++) {
                c.gd.activations[d][a] = rnn_act(k + (size_t)(a * 4 + d * 5));
            }
        }
        c.gd.clip = k % 3 ? 0.0f : 2.0f;
        check_case(&c);
        case_free(&c);
    }
}

Test(gru, large_hidden_size) {
    for (int lbr = 0; lbr < 2; lbr++) {
        rnn_case c;
        case_init(&c, false, PLX_RNN_BIDIRECTIONAL, 3, 2, 9, 67, 150 + (uint64_t)lbr);
        c.gd.linear_before_reset = lbr;
        for (size_t i = 0; i < 2 * 3 * 67 * 67; i++) {
            c.r[i] *= 0.1f;
        }
        check_case(&c);
        case_free(&c);
    }
}

/* As lstm.recurrent_weights_in_place_or_transposed, in both reset modes. */
Test(gru, recurrent_weights_in_place_or_transposed) {
    const int64_t shapes[][3] = {{1, 1, 20}, {2, 2, 16}, {5, 1, 16}, {3, 2, 20}};
    for (int lbr = 0; lbr < 2; lbr++) {
        for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
            rnn_case c;
            case_init(&c, false, PLX_RNN_BIDIRECTIONAL, shapes[k][0], shapes[k][1], 7,
                      shapes[k][2], 160 + k + 10 * (uint64_t)lbr);
            c.gd.linear_before_reset = lbr;
            check_case(&c);
            case_free(&c);
        }
    }
}

Test(gru, sequence_lens_out_of_range) {
    rnn_case c;
    case_init(&c, false, PLX_RNN_BIDIRECTIONAL, 2, 3, 2, 3, 160);
    const int32_t lens[3] = {2, 1, 3};
    memcpy(c.lens, lens, sizeof lens);
    cr_assert(not(case_run(&c)));
    cr_assert(not(zero(ptr, strstr(g_err, "'R1' (gru): sequence_lens[2] = 3 is out of range"))),
              "%s", g_err);
    case_free(&c);
}

Test(gru, refusals) {
    rnn_case c;
    case_init(&c, false, PLX_RNN_BIDIRECTIONAL, 3, 2, 2, 3, 161);
    plx_tensor_info ins[8], outs[3];
    case_infos(&c, ins, outs);
    const char *why;
    cr_assert(zero(ptr, (void *)case_check(&c, ins, outs)), "%s", g_err);

    c.gd.activations[1][0].func = PLX_ACT_HARD_SWISH;
    why = case_check(&c, ins, outs);
    cr_assert(not(zero(ptr, strstr(why, "activations[1][0]"))), "%s", why);
    c.gd.activations[1][0].func = PLX_ACT_SIGMOID;
    c.gd.activations[0][1].alpha = INFINITY;
    cr_assert(not(zero(ptr, (void *)case_check(&c, ins, outs))));
    c.gd.activations[0][1].alpha = 1.0f;

    ins[1].dims[1] = 12; /* an lstm's W */
    why = case_check(&c, ins, outs);
    cr_assert(not(zero(ptr, strstr(why, "W [2,12,2] must be [2,9,2]"))), "%s", why);
    ins[1].dims[1] = 9;
    ins[0].dtype = PLX_DTYPE_FLOAT16;
    why = case_check(&c, ins, outs);
    cr_assert(not(zero(ptr, strstr(why, "X float32, not float16"))), "%s", why);
    ins[0].dtype = PLX_DTYPE_FLOAT32;
    outs[1].dims[0] = 1;
    why = case_check(&c, ins, outs);
    cr_assert(not(zero(ptr, strstr(why, "Y_h [1,2,3] must be [2,2,3]"))), "%s", why);
    outs[1].dims[0] = 2;
    cr_assert(zero(ptr, (void *)case_check(&c, ins, outs)), "%s", g_err);
    /* wrong slot counts and a short descriptor are the host's to refuse
     * (tests/test_validate.c) */
    case_free(&c);
}

/* ---- rnn ------------------------------------------------------------------ */

/* One rnn layer on random data (weights in [-0.6, 0.6]), checked against
 * rnnref_rnn: Y and Y_h, Y zero past each length. */
static void rnn_check(plx_rnn_direction dir, int64_t S, int64_t B, int64_t In, int64_t H,
                      const int32_t *lens, const plx_rnn_activation *acts, float clip,
                      uint64_t s) {
    seed(s);
    int64_t D = dir == PLX_RNN_BIDIRECTIONAL ? 2 : 1;
    plx_rnn_desc d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.direction = dir;
    d.hidden_size = H;
    d.clip = clip;
    for (int64_t k = 0; k < 2; k++) {
        plx_rnn_activation t = {PLX_ACT_TANH, 0, 0};
        d.activations[k][0] = acts ? acts[k] : t;
    }
    float *x = fill((size_t)(S * B * In), 1.0f), *w = fill((size_t)(D * H * In), 0.6f);
    float *r = fill((size_t)(D * H * H), 0.6f), *b = fill((size_t)(D * 2 * H), 0.6f);
    float *h0 = fill((size_t)(D * B * H), 0.6f);
    size_t ny = (size_t)(S * D * B * H), ns = (size_t)(D * B * H);
    float *y = fill(ny, 0), *yh = fill(ns, 0), *ry = fill(ny, 0), *ryh = fill(ns, 0);
    int32_t *l = calloc((size_t)B, sizeof *l);
    cr_assert(not(zero(ptr, l)));
    for (int64_t i = 0; i < B; i++) {
        l[i] = lens ? lens[i] : (int32_t)S;
    }
    plx_tensor_info ins[6] = {
        info(PLX_DTYPE_FLOAT32, SHAPE(S, B, In)), info(PLX_DTYPE_FLOAT32, SHAPE(D, H, In)),
        info(PLX_DTYPE_FLOAT32, SHAPE(D, H, H)),  info(PLX_DTYPE_FLOAT32, SHAPE(D, 2 * H)),
        info(PLX_DTYPE_INT32, SHAPE(B)),          info(PLX_DTYPE_FLOAT32, SHAPE(D, B, H))};
    plx_tensor_info outs[2] = {info(PLX_DTYPE_FLOAT32, SHAPE(S, D, B, H)),
                               info(PLX_DTYPE_FLOAT32, SHAPE(D, B, H))};
    plx_layer_view lv = layer_of(PLX_OP_RNN, &d, ins, 6, outs, 2);
    const char *why = plxk_check_rnn(&lv, g_err, sizeof g_err);
    cr_assert(zero(ptr, (void *)why), "refused: %s", why);
    memset(y, 0x7d, ny * sizeof(float));
    memset(yh, 0x7d, ns * sizeof(float));
    const void *in_data[6] = {x, w, r, b, l, h0};
    void *out_data[2] = {y, yh};
    cr_assert(run_layer(plxk_run_rnn, &lv, in_data, out_data), "%s", g_err);
    rnnref_rnn(&d, S, B, In, x, w, r, b, l, h0, ry, ryh);
    expect_close("Y", y, ry, ny, 2e-5f);
    expect_close("Y_h", yh, ryh, ns, 2e-5f);
    float *all[] = {x, w, r, b, h0, y, yh, ry, ryh};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free(all[i]);
    }
    free(l);
}

/* ONNX's test_simple_rnn_defaults: X [1, 3, 2] = 1..6, W 0.1 everywhere,
 * R 0.1, no bias: Ht = tanh(0.1 (x0 + x1) + 0.1 * 4 * 0), so Y for batch
 * entry b is tanh(0.1 * (2b + 1 + 2b + 2)). */
Test(rnn, onnx_defaults_by_hand) {
    plx_rnn_desc d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.hidden_size = 4;
    for (int k = 0; k < 2; k++) {
        d.activations[k][0] = (plx_rnn_activation){PLX_ACT_TANH, 0, 0};
    }
    float x[6] = {1, 2, 3, 4, 5, 6}, w[8], r[16], b[8] = {0}, h0[12] = {0}, y[12], yh[12];
    set_all(w, 8, 0.1f);
    set_all(r, 16, 0.1f);
    int32_t lens[3] = {1, 1, 1};
    plx_tensor_info ins[6] = {
        info(PLX_DTYPE_FLOAT32, SHAPE(1, 3, 2)), info(PLX_DTYPE_FLOAT32, SHAPE(1, 4, 2)),
        info(PLX_DTYPE_FLOAT32, SHAPE(1, 4, 4)), info(PLX_DTYPE_FLOAT32, SHAPE(1, 8)),
        info(PLX_DTYPE_INT32, SHAPE(3)),         info(PLX_DTYPE_FLOAT32, SHAPE(1, 3, 4))};
    plx_tensor_info outs[2] = {info(PLX_DTYPE_FLOAT32, SHAPE(1, 1, 3, 4)),
                               info(PLX_DTYPE_FLOAT32, SHAPE(1, 3, 4))};
    plx_layer_view lv = layer_of(PLX_OP_RNN, &d, ins, 6, outs, 2);
    const void *in_data[6] = {x, w, r, b, lens, h0};
    void *out_data[2] = {y, yh};
    cr_assert(run_layer(plxk_run_rnn, &lv, in_data, out_data), "%s", g_err);
    for (int bi = 0; bi < 3; bi++) {
        float want = (float)tanh(0.1 * (4 * bi + 3));
        for (int j = 0; j < 4; j++) {
            cr_assert(le(flt, fabsf(y[bi * 4 + j] - want), 1e-6f), "Y[%d][%d] = %g, want %g", bi,
                      j, (double)y[bi * 4 + j], (double)want);
            cr_assert(eq(flt, yh[bi * 4 + j], y[bi * 4 + j]));
        }
    }
}

Test(rnn, forward_reverse_bidirectional) {
    rnn_check(PLX_RNN_FORWARD, 5, 3, 4, 6, NULL, NULL, 0, 171);
    rnn_check(PLX_RNN_REVERSE, 5, 3, 4, 6, NULL, NULL, 0, 172);
    rnn_check(PLX_RNN_BIDIRECTIONAL, 5, 3, 4, 6, NULL, NULL, 0, 173);
}

/* Shorter lengths (Y zero past them, Y_h the last step run), other
 * activations per direction, clip, and few steps (R read in place) or many
 * (R transposed first). */
Test(rnn, lengths_activations_clip) {
    const int32_t lens[3] = {4, 1, 2};
    const plx_rnn_activation acts[2] = {{PLX_ACT_RELU, 0, 0}, {PLX_ACT_SCALED_TANH, 0.7f, 1.3f}};
    rnn_check(PLX_RNN_BIDIRECTIONAL, 4, 3, 2, 5, lens, acts, 0, 181);
    rnn_check(PLX_RNN_FORWARD, 4, 3, 2, 5, lens, NULL, 0.3f, 182);
    rnn_check(PLX_RNN_FORWARD, 1, 2, 3, 4, NULL, NULL, 0, 183);
    rnn_check(PLX_RNN_REVERSE, 16, 2, 8, 40, NULL, NULL, 0, 184);
}

Test(rnn, refusals_and_lengths_out_of_range) {
    plx_rnn_desc d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.hidden_size = 3;
    d.direction = PLX_RNN_FORWARD;
    d.activations[0][0] = (plx_rnn_activation){PLX_ACT_TANH, 0, 0};
    plx_tensor_info ins[6] = {
        info(PLX_DTYPE_FLOAT32, SHAPE(2, 2, 2)), info(PLX_DTYPE_FLOAT32, SHAPE(1, 3, 2)),
        info(PLX_DTYPE_FLOAT32, SHAPE(1, 3, 3)), info(PLX_DTYPE_FLOAT32, SHAPE(1, 6)),
        info(PLX_DTYPE_INT32, SHAPE(2)),         info(PLX_DTYPE_FLOAT32, SHAPE(1, 2, 3))};
    plx_tensor_info outs[2] = {info(PLX_DTYPE_FLOAT32, SHAPE(2, 1, 2, 3)),
                               info(PLX_DTYPE_FLOAT32, SHAPE(1, 2, 3))};
    plx_layer_view lv = layer_of(PLX_OP_RNN, &d, ins, 6, outs, 2);
    cr_assert(zero(ptr, (void *)plxk_check_rnn(&lv, g_err, sizeof g_err)), "%s", g_err);
    ins[3].dims[1] = 12;
    const char *why = plxk_check_rnn(&lv, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, strstr(why, "rnn: B [1,12] must be [1,6]"))), "%s", why);
    ins[3].dims[1] = 6;
    d.activations[0][0].func = PLX_ACT_GELU;
    why = plxk_check_rnn(&lv, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, strstr(why, "activations[0][0]"))), "%s", why);
    d.activations[0][0].func = PLX_ACT_TANH;
    ins[0].dtype = PLX_DTYPE_FLOAT16;
    why = plxk_check_rnn(&lv, g_err, sizeof g_err);
    cr_assert(not(zero(ptr, strstr(why, "runs rnn with X float32, not float16"))), "%s",
              why);
    ins[0].dtype = PLX_DTYPE_FLOAT32;
    float x[8] = {0}, w[6] = {0}, r[9] = {0}, b[6] = {0}, h0[6] = {0}, y[12], yh[6];
    int32_t lens[2] = {2, 3};
    const void *in_data[6] = {x, w, r, b, lens, h0};
    void *out_data[2] = {y, yh};
    cr_assert(not(run_layer(plxk_run_rnn, &lv, in_data, out_data)));
    cr_assert(not(zero(ptr, strstr(g_err, "'R1' (rnn): sequence_lens[1] = 3 is out of range"))),
              "%s", g_err);
}
