/* cpu_ref's recurrent kernels: lstm, gru and rnn, ONNX opset 14 with layout 0
 * (X [seq_length, batch, input_size]), as plexus/ops.h describes them.
 *
 * The prepare function checks the whole layer (counts, dtypes, attributes,
 * every shape); the run function calls it again, so that no loop trusts an
 * inconsistent info, and checks sequence_lens before writing anything.
 *
 * Per direction, the input's contribution to every gate of every step is
 * one product on the GEMM, X [seq * batch, input] x W^T, with W's bias (and
 * R's where it is simply added) as the column bias, into the workspace.
 * The recurrence then goes step by step for each batch entry: the hidden
 * state times R^T (the GEMM's matrix-vector loop, a dot product per
 * contiguous row of R) added to the step's row, and the gates' activations over whole vectors, sigmoid
 * and tanh on the vector math (vecmath.h). The running state lives in Y_h
 * (and Y_c), which end up holding the state after the last valid step; a
 * step writes its new hidden state into its slice of Y, then copies it to
 * Y_h. Nothing here allocates. */
#include "kernels_compute.h"
#include "vecmath.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Shapes of a recurrent layer, in elements. */
typedef struct rnn_geom {
    int64_t seq, batch, input, hidden, dirs;
} rnn_geom;

/* The parts of plx_lstm_desc, plx_gru_desc and plx_rnn_desc the loops use. */
typedef struct rnn_attrs {
    plx_rnn_direction direction;
    int64_t hidden;
    float clip;
    const plx_rnn_activation *acts[2]; /* per direction: f, g (and h for lstm) */
} rnn_attrs;

static const char *layer_name(const plx_layer_view *l) {
    return l && l->name ? l->name : "";
}

/* The operator of `gates` gates per direction: lstm 4, gru 3, rnn 1. */
static const char *rnn_op_name(int64_t gates) {
    return gates == 4 ? "lstm" : gates == 3 ? "gru" : "rnn";
}

/* "[1,2,3]" into buf. */
static const char *shape_text(const int64_t *dims, uint32_t rank, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i <= rank && len < size; i++) {
        int n = i == rank ? snprintf(buf + len, size - len, "%s]", rank ? "" : "[")
                          : snprintf(buf + len, size - len, "%s%lld", i ? "," : "[",
                                     (long long)dims[i]);
        if (n < 0) {
            break;
        }
        len += (size_t)n;
    }
    return buf;
}

static bool rnn_activation_ok(plx_activation_func f) {
    switch (f) {
    case PLX_ACT_RELU:
    case PLX_ACT_TANH:
    case PLX_ACT_SIGMOID:
    case PLX_ACT_AFFINE:
    case PLX_ACT_LEAKY_RELU:
    case PLX_ACT_THRESHOLDED_RELU:
    case PLX_ACT_SCALED_TANH:
    case PLX_ACT_HARD_SIGMOID:
    case PLX_ACT_ELU:
    case PLX_ACT_SOFTSIGN:
    case PLX_ACT_SOFTPLUS: return true;
    default: return false;
    }
}

/* The activation functions of ONNX's recurrent operators (plx_activation_func's
 * definitions; only those rnn_activation_ok accepts reach here). */
static double rnn_activate(const plx_rnn_activation *a, double x) {
    double alpha = a->alpha, beta = a->beta;
    switch (a->func) {
    case PLX_ACT_RELU: return x > 0 ? x : 0.0;
    case PLX_ACT_TANH: return tanh(x);
    case PLX_ACT_SIGMOID:
        if (x >= 0) {
            return 1.0 / (1.0 + exp(-x));
        } else {
            double e = exp(x);
            return e / (1.0 + e);
        }
    case PLX_ACT_AFFINE: return alpha * x + beta;
    case PLX_ACT_LEAKY_RELU: return x < 0 ? alpha * x : x;
    case PLX_ACT_THRESHOLDED_RELU: return x > alpha ? x : 0.0;
    case PLX_ACT_SCALED_TANH: return alpha * tanh(beta * x);
    case PLX_ACT_HARD_SIGMOID: {
        double v = alpha * x + beta;
        return v < 0 ? 0.0 : v > 1 ? 1.0 : v;
    }
    case PLX_ACT_ELU: return x < 0 ? alpha * expm1(x) : x;
    case PLX_ACT_SOFTSIGN: return x / (1.0 + fabs(x));
    case PLX_ACT_SOFTPLUS: return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
    default: return x;
    }
}

/* Refuses unless info t has exactly dims (rank r). */
static const char *require_shape(const char *op, const char *role, const plx_tensor_info *t,
                                 const int64_t *dims, uint32_t r, char *buf, size_t size) {
    bool same = t->rank == r;
    for (uint32_t i = 0; same && i < r; i++) {
        same = t->dims[i] == dims[i];
    }
    if (same) {
        return NULL;
    }
    char got[200], want[200];
    uint32_t rank = t->rank <= PLX_MAX_RANK ? t->rank : 0;
    return plxk_refuse(buf, size, "%s: %s %s must be %s", op, role,
                          shape_text(t->dims, rank, got, sizeof got),
                          shape_text(dims, r, want, sizeof want));
}

/* Checks a lstm (gates 4), gru (gates 3) or rnn (gates 1) layer and
 * derives its geometry and attributes. */
static const char *rnn_prepare(const plx_layer_view *l, int64_t gates, rnn_geom *g,
                               rnn_attrs *at, char *buf, size_t size) {
    bool lstm = gates == 4;
    static const char *const roles[] = {"X", "W", "R", "B", "sequence_lens", "initial_h",
                                        "initial_c", "P"};
    static const char *const out_roles[] = {"Y", "Y_h", "Y_c"};
    const char *op = rnn_op_name(gates);
    uint32_t n_in = lstm ? 8 : 6, n_out = lstm ? 3 : 2;
    for (uint32_t i = 0; i < n_in + n_out; i++) {
        const plx_tensor_info *t = i < n_in ? &l->inputs[i] : &l->outputs[i - n_in];
        const char *role = i < n_in ? roles[i] : out_roles[i - n_in];
        plx_dtype want = i == 4 ? PLX_DTYPE_INT32 : PLX_DTYPE_FLOAT32;
        if (t->dtype != want) {
            return plxk_refuse(buf, size, "runs %s with %s %s, not %s", op, role,
                                  plx_dtype_name(want), plx_dtype_name(t->dtype));
        }
    }
    uint32_t per_dir = lstm ? 3 : gates == 3 ? 2 : 1;
    if (gates == 1) {
        const plx_rnn_desc *d = l->desc;
        at->direction = d->direction;
        at->hidden = d->hidden_size;
        at->clip = d->clip;
        at->acts[0] = d->activations[0];
        at->acts[1] = d->activations[1];
    } else if (lstm) {
        const plx_lstm_desc *d = l->desc;
        at->direction = d->direction;
        at->hidden = d->hidden_size;
        at->clip = d->clip;
        at->acts[0] = d->activations[0];
        at->acts[1] = d->activations[1];
    } else {
        const plx_gru_desc *d = l->desc;
        at->direction = d->direction;
        at->hidden = d->hidden_size;
        at->clip = d->clip;
        at->acts[0] = d->activations[0];
        at->acts[1] = d->activations[1];
    }
    if ((unsigned)at->direction > PLX_RNN_BIDIRECTIONAL) {
        return plxk_refuse(buf, size, "%s: direction %d is not a plx_rnn_direction", op,
                              (int)at->direction);
    }
    /* The bound keeps 8 * hidden_size in int64_t; the shapes bound it further. */
    if (at->hidden < 1 || at->hidden > INT64_MAX / 8) {
        return plxk_refuse(buf, size, "%s: hidden_size %lld is out of range", op,
                              (long long)at->hidden);
    }
    if (!(at->clip >= 0.0f) || !isfinite(at->clip)) {
        return plxk_refuse(buf, size, "%s: clip %g must be finite and >= 0", op,
                              (double)at->clip);
    }
    int64_t dirs = at->direction == PLX_RNN_BIDIRECTIONAL ? 2 : 1;
    for (int64_t d = 0; d < dirs; d++) {
        for (uint32_t k = 0; k < per_dir; k++) {
            const plx_rnn_activation *a = &at->acts[d][k];
            if (!rnn_activation_ok(a->func)) {
                return plxk_refuse(buf, size,
                                      "%s: activations[%lld][%u].func %d is not a recurrent "
                                      "activation it runs",
                                      op, (long long)d, k, (int)a->func);
            }
            if (!isfinite(a->alpha) || !isfinite(a->beta)) {
                return plxk_refuse(buf, size,
                                      "%s: activations[%lld][%u] needs a finite alpha and beta",
                                      op, (long long)d, k);
            }
        }
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank != 3) {
        return plxk_refuse(buf, size,
                              "%s: X must have rank 3 ([seq_length, batch, input_size]), "
                              "not %u",
                              op, x->rank);
    }
    g->seq = x->dims[0];
    g->batch = x->dims[1];
    g->input = x->dims[2];
    g->hidden = at->hidden;
    g->dirs = dirs;
    int64_t h = g->hidden;
    const int64_t w[3] = {dirs, gates * h, g->input}, r[3] = {dirs, gates * h, h};
    const int64_t b[2] = {dirs, 2 * gates * h}, lens[1] = {g->batch}, p[2] = {dirs, 3 * h};
    const int64_t state[3] = {dirs, g->batch, h}, y[4] = {g->seq, dirs, g->batch, h};
    const char *why;
    if ((why = require_shape(op, "W", &l->inputs[1], w, 3, buf, size)) ||
        (why = require_shape(op, "R", &l->inputs[2], r, 3, buf, size)) ||
        (why = require_shape(op, "B", &l->inputs[3], b, 2, buf, size)) ||
        (why = require_shape(op, "sequence_lens", &l->inputs[4], lens, 1, buf, size)) ||
        (why = require_shape(op, "initial_h", &l->inputs[5], state, 3, buf, size)) ||
        (lstm && (why = require_shape(op, "initial_c", &l->inputs[6], state, 3, buf, size))) ||
        (lstm && (why = require_shape(op, "P", &l->inputs[7], p, 2, buf, size))) ||
        (why = require_shape(op, "Y", &l->outputs[0], y, 4, buf, size)) ||
        (why = require_shape(op, "Y_h", &l->outputs[1], state, 3, buf, size)) ||
        (lstm && (why = require_shape(op, "Y_c", &l->outputs[2], state, 3, buf, size)))) {
        return why;
    }
    return NULL;
}

/* Every length must be in [1, seq_length]: checked before anything is written. */
static bool check_lens(const plxk_kernel_args *args, const char *op, const int32_t *lens,
                       const rnn_geom *g) {
    for (int64_t b = 0; b < g->batch; b++) {
        if (lens[b] < 1 || lens[b] > g->seq) {
            return plxk_fail(args,
                                "layer '%s' (%s): sequence_lens[%lld] = %ld is out of range: it must be "
                                "in [1, %lld] (seq_length)",
                                layer_name(args->layer), op, (long long)b, (long)lens[b],
                                (long long)g->seq);
        }
    }
    return true;
}

/* What a run keeps in its workspace: the input products of one direction
 * (xg [seq * batch, gates * hidden]), the column bias and one step's gate
 * values (gates * hidden each), the direction's recurrent weights
 * transposed (rt [hidden, gates * hidden]: rnn_transpose_r), then the
 * GEMM's own workspace. */
typedef struct rnn_ws {
    float *xg, *bias, *step, *rt;
    void *gemm;
    size_t gemm_size;
} rnn_ws;

static size_t rnn_floats_bytes(int64_t count) {
    return plxk_round_ws((size_t)count * sizeof(float));
}

static size_t rnn_workspace(const plx_layer_view *l, int64_t gates,
                            const plxk_compute *compute) {
    rnn_geom g;
    rnn_attrs at;
    char buf[8];
    if (rnn_prepare(l, gates, &g, &at, buf, sizeof buf)) {
        return 0;
    }
    int64_t gh = gates * g.hidden, rows = g.seq * g.batch;
    /* the shapes' byte sizes fit (the host's contract), so these do */
    size_t gemm = plxk_gemm_ws(compute, rows, gh, g.input);
    size_t own = rnn_floats_bytes(rows * gh) + 2 * rnn_floats_bytes(gh) +
                 rnn_floats_bytes(g.hidden * gh);
    return gemm == SIZE_MAX || own > SIZE_MAX - gemm ? SIZE_MAX : own + gemm;
}

static bool rnn_ws_carve(const plxk_kernel_args *args, const rnn_geom *g, int64_t gates,
                         rnn_ws *w) {
    int64_t gh = gates * g->hidden;
    size_t sizes[4] = {rnn_floats_bytes(g->seq * g->batch * gh), rnn_floats_bytes(gh),
                       rnn_floats_bytes(gh), rnn_floats_bytes(g->hidden * gh)};
    float **parts[4] = {&w->xg, &w->bias, &w->step, &w->rt};
    size_t used = 0, left = 0;
    for (int i = 0; i < 4; i++) {
        *parts[i] = plxk_ws_at(args, used, &left);
        if (!*parts[i] || left < sizes[i]) {
            return false;
        }
        used += sizes[i];
    }
    w->gemm = plxk_ws_at(args, used, &w->gemm_size);
    return true;
}

/* xg = X W_d^T + bias for every step and batch entry of direction d. */
static bool rnn_inputs(const plxk_kernel_args *args, const rnn_geom *g, int64_t gates,
                       const float *x, const float *wd, rnn_ws *w) {
    int64_t gh = gates * g->hidden;
    plxk_gemm_args ga = {0};
    ga.m = (size_t)(g->seq * g->batch);
    ga.n = (size_t)gh;
    ga.k = (size_t)g->input;
    ga.alpha = 1.0f;
    ga.a = x;
    ga.a_rs = (ptrdiff_t)g->input;
    ga.a_cs = 1;
    ga.b = wd;
    ga.b_rs = 1;
    ga.b_cs = (ptrdiff_t)g->input;
    ga.c = w->xg;
    ga.ldc = (size_t)gh;
    ga.bias = w->bias;
    ga.bias_rs = 0;
    ga.bias_cs = 1;
    if (!plxk_gemm(plxk_isa_of(args->compute), plxk_pool_of(args->compute), &ga, w->gemm,
                   w->gemm_size)) {
        return plxk_fail(args, "layer '%s': cpu_ref %s: the input product could not run",
                         layer_name(args->layer), rnn_op_name(gates));
    }
    return true;
}

/* rt = R_d^T: row k holds column k of the direction's recurrent weights
 * (gh rows of h floats), so that a step's product R h is a sum of rows of
 * rt scaled by h[k], contiguous vectors, with no reduction across lanes.
 * Whole T x T tiles are copied into a local block by rows first: in that
 * form the compiler turns the transposition into vector shuffles (element
 * by element, R of an LSTM with h = 128 took 33 us). */
static void rnn_transpose_r(const float *rd, int64_t gh, int64_t h, float *rt) {
    enum { T = 16 };
    for (int64_t j0 = 0; j0 < gh; j0 += T) {
        int64_t jn = gh - j0 < T ? gh - j0 : T;
        for (int64_t k0 = 0; k0 < h; k0 += T) {
            int64_t kn = h - k0 < T ? h - k0 : T;
            if (jn == T && kn == T) {
                float block[T][T];
                for (int64_t j = 0; j < T; j++) {
                    memcpy(block[j], rd + (j0 + j) * h + k0, sizeof block[j]);
                }
                for (int64_t k = 0; k < T; k++) {
                    float *out = rt + (k0 + k) * gh + j0;
                    for (int64_t j = 0; j < T; j++) {
                        out[j] = block[j][k];
                    }
                }
                continue;
            }
            for (int64_t k = k0; k < k0 + kn; k++) {
                for (int64_t j = j0; j < j0 + jn; j++) {
                    rt[k * gh + j] = rd[j * h + k];
                }
            }
        }
    }
}

/* A direction's recurrent weights as a step reads them: R_d itself (gh
 * rows of h floats), or R_d^T in the workspace (rnn_transpose_r). */
typedef struct rnn_rmat {
    const float *at;
    ptrdiff_t k_step, j_step; /* between elements (j, k) and (j, k+1), (j+1, k) */
} rnn_rmat;

/* A direction runs its steps from R_d^T once it takes more than this many
 * in all (the sum of its sequence lengths), and from R_d itself below.
 * Transposing costs about a pass over R; a product from rows of R^T (sums
 * of contiguous rows scaled by h[k]) is faster than one from rows of R (dot
 * products, each ending in a reduction across lanes), and pays the pass
 * back after a few steps. Measured with bench/ops_vs_onnxruntime.py, one
 * thread: an LSTM step with h = 128 took 0.025 ms with the transpose and
 * 0.011 without; 16 steps with h = 64 took 0.034 and 0.060. */
#define RNN_TRANSPOSE_STEPS 4

/* The steps of one direction: the sum of the batch's sequence lengths. */
static int64_t rnn_steps(const int32_t *lens, int64_t batch) {
    int64_t steps = 0;
    for (int64_t b = 0; b < batch; b++) {
        steps += lens[b];
    }
    return steps;
}

static rnn_rmat rnn_weights(const float *rd, int64_t gh, int64_t h, int64_t steps, float *rt) {
    if (steps <= RNN_TRANSPOSE_STEPS) {
        return (rnn_rmat){rd, 1, (ptrdiff_t)h};
    }
    rnn_transpose_r(rd, gh, h, rt);
    return (rnn_rmat){rt, (ptrdiff_t)gh, 1};
}

/* out[0 .. count) = beta * out + R[rows] h, rows [row, row + count) of R,
 * plus bias when given. */
static void rnn_recur(plxk_isa isa, const float *hs, rnn_rmat r, int64_t h, int64_t row,
                      int64_t count, float beta, const float *bias, float *out) {
    plxk_gemm_args ga = {0};
    ga.m = 1;
    ga.n = (size_t)count;
    ga.k = (size_t)h;
    ga.alpha = 1.0f;
    ga.a = hs;
    ga.a_rs = (ptrdiff_t)h;
    ga.a_cs = 1;
    ga.b = r.at + (ptrdiff_t)row * r.j_step;
    ga.b_rs = r.k_step;
    ga.b_cs = r.j_step;
    ga.beta = beta;
    ga.c = out;
    ga.ldc = (size_t)count;
    ga.bias = bias;
    ga.bias_rs = 0;
    ga.bias_cs = 1;
    /* one row: the matrix-vector loop, which needs no workspace and
     * refuses nothing these arguments hold (the run checked the variant) */
    (void)plxk_gemm(isa, NULL, &ga, NULL, 0);
}

/* v[0 .. n) = act(clip(v)) in place: sigmoid and tanh on the vector math,
 * the other activations element by element in double. */
static void rnn_activate_vec(const plx_rnn_activation *a, float clip, plxk_isa isa, float *v,
                             int64_t n) {
    if (clip > 0) {
        for (int64_t i = 0; i < n; i++) {
            v[i] = v[i] < -clip ? -clip : v[i] > clip ? clip : v[i];
        }
    }
    if (a->func == PLX_ACT_SIGMOID || a->func == PLX_ACT_TANH) {
        (void)plxk_vmap(isa, a->func == PLX_ACT_SIGMOID ? PLXK_VSIGMOID : PLXK_VTANH, v, v,
                        (size_t)n); /* the run checked the variant */
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        v[i] = (float)rnn_activate(a, v[i]);
    }
}

/* The start of every recurrent run: the layer checked again (*g, *at),
 * the sequence lengths (input 4) checked, the workspace carved and the
 * variant checked; false with args failed otherwise. */
static bool rnn_start(const plxk_kernel_args *args, int64_t gates, rnn_geom *g, rnn_attrs *at,
                      rnn_ws *w) {
    char why[256];
    if (rnn_prepare(args->layer, gates, g, at, why, sizeof why)) {
        return plxk_fail(args, "layer '%s': %s", layer_name(args->layer), why);
    }
    if (!check_lens(args, rnn_op_name(gates), args->inputs[4], g)) {
        return false;
    }
    if (!rnn_ws_carve(args, g, gates, w)) {
        return plxk_fail(args, "layer '%s': cpu_ref %s: a workspace of %zu bytes is too small",
                         layer_name(args->layer), rnn_op_name(gates),
                         args->workspace_size);
    }
    plxk_isa isa;
    return plxk_require_isa(args, rnn_op_name(gates), &isa);
}

/* ---- lstm ----------------------------------------------------------------- */

const char *plxk_check_lstm(const plx_layer_view *layer, char *buf, size_t size) {
    rnn_geom g;
    rnn_attrs at;
    return rnn_prepare(layer, 4, &g, &at, buf, size);
}

bool plxk_run_lstm(const plxk_kernel_args *args) {
    rnn_geom g;
    rnn_attrs at;
    rnn_ws ws;
    if (!rnn_start(args, 4, &g, &at, &ws)) {
        return false;
    }
    const plx_lstm_desc *desc = args->layer->desc;
    const float *x = args->inputs[0], *w = args->inputs[1], *r = args->inputs[2];
    const float *bias = args->inputs[3], *h0 = args->inputs[5], *c0 = args->inputs[6];
    const float *peep = args->inputs[7];
    const int32_t *lens = args->inputs[4];
    float *y = args->outputs[0], *yh = args->outputs[1], *yc = args->outputs[2];
    plxk_isa isa = plxk_isa_of(args->compute);
    const int64_t S = g.seq, B = g.batch, I = g.input, H = g.hidden, D = g.dirs, GH = 4 * H;
    const size_t row_bytes = (size_t)H * sizeof(float);
    const int64_t steps = rnn_steps(lens, B);
    for (int64_t d = 0; d < D; d++) {
        bool reverse = at.direction == PLX_RNN_REVERSE || d == 1;
        const plx_rnn_activation *act_f = &at.acts[d][0], *act_g = &at.acts[d][1],
                                 *act_h = &at.acts[d][2];
        const float *wb = bias + d * 8 * H, *rb = wb + 4 * H;
        const float *pi = peep + d * 3 * H, *po = pi + H, *pf = po + H;
        for (int64_t j = 0; j < GH; j++) {
            ws.bias[j] = wb[j] + rb[j];
        }
        rnn_rmat rm = rnn_weights(r + d * GH * H, GH, H, steps, ws.rt);
        if (!rnn_inputs(args, &g, 4, x, w + d * GH * I, &ws)) {
            return false;
        }
        /* gate rows: i [0, H), o [H, 2H), f [2H, 3H), c [3H, 4H) */
        float *gi = ws.step, *go = gi + H, *gf = go + H, *gc = gf + H;
        for (int64_t b = 0; b < B; b++) {
            float *hs = yh + (d * B + b) * H, *cs = yc + (d * B + b) * H;
            memcpy(hs, h0 + (d * B + b) * H, row_bytes);
            memcpy(cs, c0 + (d * B + b) * H, row_bytes);
            int64_t len = lens[b];
            for (int64_t step = 0; step < len; step++) {
                int64_t t = reverse ? len - 1 - step : step;
                float *yt = y + ((t * D + d) * B + b) * H;
                memcpy(ws.step, ws.xg + (t * B + b) * GH, (size_t)GH * sizeof(float));
                rnn_recur(isa, hs, rm, H, 0, GH, 1.0f, NULL, ws.step);
                for (int64_t j = 0; j < H; j++) {
                    gi[j] += pi[j] * cs[j];
                    gf[j] += pf[j] * cs[j];
                }
                rnn_activate_vec(act_f, at.clip, isa, gi, H);
                if (desc->input_forget) {
                    for (int64_t j = 0; j < H; j++) {
                        gf[j] = 1.0f - gi[j];
                    }
                } else {
                    rnn_activate_vec(act_f, at.clip, isa, gf, H);
                }
                rnn_activate_vec(act_g, at.clip, isa, gc, H);
                for (int64_t j = 0; j < H; j++) {
                    cs[j] = gf[j] * cs[j] + gi[j] * gc[j];
                    go[j] += po[j] * cs[j];
                    yt[j] = cs[j];
                }
                rnn_activate_vec(act_f, at.clip, isa, go, H);
                rnn_activate_vec(act_h, 0.0f, isa, yt, H);
                for (int64_t j = 0; j < H; j++) {
                    yt[j] *= go[j];
                }
                memcpy(hs, yt, row_bytes);
            }
            for (int64_t t = len; t < S; t++) {
                memset(y + ((t * D + d) * B + b) * H, 0, row_bytes);
            }
        }
    }
    return true;
}

size_t plxk_workspace_lstm(const plx_layer_view *layer, const plxk_compute *compute) {
    return rnn_workspace(layer, 4, compute);
}

/* ---- gru ------------------------------------------------------------------ */

const char *plxk_check_gru(const plx_layer_view *layer, char *buf, size_t size) {
    rnn_geom g;
    rnn_attrs at;
    return rnn_prepare(layer, 3, &g, &at, buf, size);
}

bool plxk_run_gru(const plxk_kernel_args *args) {
    rnn_geom g;
    rnn_attrs at;
    rnn_ws ws;
    if (!rnn_start(args, 3, &g, &at, &ws)) {
        return false;
    }
    const plx_gru_desc *desc = args->layer->desc;
    const float *x = args->inputs[0], *w = args->inputs[1], *r = args->inputs[2];
    const float *bias = args->inputs[3], *h0 = args->inputs[5];
    const int32_t *lens = args->inputs[4];
    float *y = args->outputs[0], *yh = args->outputs[1];
    plxk_isa isa = plxk_isa_of(args->compute);
    const int64_t S = g.seq, B = g.batch, I = g.input, H = g.hidden, D = g.dirs, GH = 3 * H;
    const size_t row_bytes = (size_t)H * sizeof(float);
    const int64_t steps = rnn_steps(lens, B);
    for (int64_t d = 0; d < D; d++) {
        bool reverse = at.direction == PLX_RNN_REVERSE || d == 1;
        const plx_rnn_activation *act_f = &at.acts[d][0], *act_g = &at.acts[d][1];
        const float *wb = bias + d * 6 * H, *rb = wb + 3 * H;
        /* z and r take both biases up front; h's recurrent bias Rb_h goes
         * inside the reset (linear_before_reset) or after R_h's product */
        for (int64_t j = 0; j < GH; j++) {
            ws.bias[j] = wb[j] + (j < 2 * H ? rb[j] : 0.0f);
        }
        rnn_rmat rm = rnn_weights(r + d * GH * H, GH, H, steps, ws.rt);
        if (!rnn_inputs(args, &g, 3, x, w + d * GH * I, &ws)) {
            return false;
        }
        /* gate rows: z [0, H), r [H, 2H), h [2H, 3H); step holds z, r,
         * then the hidden gate's recurrent part */
        float *gz = ws.step, *gr = gz + H, *gh = gr + H;
        for (int64_t b = 0; b < B; b++) {
            float *hs = yh + (d * B + b) * H;
            memcpy(hs, h0 + (d * B + b) * H, row_bytes);
            int64_t len = lens[b];
            for (int64_t step = 0; step < len; step++) {
                int64_t t = reverse ? len - 1 - step : step;
                const float *xgt = ws.xg + (t * B + b) * GH;
                float *yt = y + ((t * D + d) * B + b) * H;
                memcpy(gz, xgt, 2 * row_bytes);
                rnn_recur(isa, hs, rm, H, 0, 2 * H, 1.0f, NULL, gz);
                rnn_activate_vec(act_f, at.clip, isa, gz, 2 * H);
                if (desc->linear_before_reset) {
                    /* r (.) (H R_h^T + Rb_h) */
                    rnn_recur(isa, hs, rm, H, 2 * H, H, 0.0f, rb + 2 * H, gh);
                    for (int64_t j = 0; j < H; j++) {
                        gh[j] *= gr[j];
                    }
                } else {
                    /* (r (.) H) R_h^T + Rb_h, r (.) H first into Y's slice */
                    for (int64_t j = 0; j < H; j++) {
                        yt[j] = gr[j] * hs[j];
                    }
                    rnn_recur(isa, yt, rm, H, 2 * H, H, 0.0f, rb + 2 * H, gh);
                }
                for (int64_t j = 0; j < H; j++) {
                    gh[j] += xgt[2 * H + j];
                }
                rnn_activate_vec(act_g, at.clip, isa, gh, H);
                for (int64_t j = 0; j < H; j++) {
                    yt[j] = (1.0f - gz[j]) * gh[j] + gz[j] * hs[j];
                }
                memcpy(hs, yt, row_bytes);
            }
            for (int64_t t = len; t < S; t++) {
                memset(y + ((t * D + d) * B + b) * H, 0, row_bytes);
            }
        }
    }
    return true;
}

size_t plxk_workspace_gru(const plx_layer_view *layer, const plxk_compute *compute) {
    return rnn_workspace(layer, 3, compute);
}

/* ---- rnn ------------------------------------------------------------------ */

const char *plxk_check_rnn(const plx_layer_view *layer, char *buf, size_t size) {
    rnn_geom g;
    rnn_attrs at;
    return rnn_prepare(layer, 1, &g, &at, buf, size);
}

/* Ht = f(Xt W^T + Wb + Rb + Ht-1 R^T): the input product with both biases
 * comes from the workspace, the recurrent one is added in place. */
bool plxk_run_rnn(const plxk_kernel_args *args) {
    rnn_geom g;
    rnn_attrs at;
    rnn_ws ws;
    if (!rnn_start(args, 1, &g, &at, &ws)) {
        return false;
    }
    const float *x = args->inputs[0], *w = args->inputs[1], *r = args->inputs[2];
    const float *bias = args->inputs[3], *h0 = args->inputs[5];
    const int32_t *lens = args->inputs[4];
    float *y = args->outputs[0], *yh = args->outputs[1];
    plxk_isa isa = plxk_isa_of(args->compute);
    const int64_t S = g.seq, B = g.batch, I = g.input, H = g.hidden, D = g.dirs;
    const size_t row_bytes = (size_t)H * sizeof(float);
    const int64_t steps = rnn_steps(lens, B);
    for (int64_t d = 0; d < D; d++) {
        bool reverse = at.direction == PLX_RNN_REVERSE || d == 1;
        const plx_rnn_activation *act_f = &at.acts[d][0];
        const float *wb = bias + d * 2 * H, *rb = wb + H;
        for (int64_t j = 0; j < H; j++) {
            ws.bias[j] = wb[j] + rb[j];
        }
        rnn_rmat rm = rnn_weights(r + d * H * H, H, H, steps, ws.rt);
        if (!rnn_inputs(args, &g, 1, x, w + d * H * I, &ws)) {
            return false;
        }
        for (int64_t b = 0; b < B; b++) {
            float *hs = yh + (d * B + b) * H;
            memcpy(hs, h0 + (d * B + b) * H, row_bytes);
            int64_t len = lens[b];
            for (int64_t step = 0; step < len; step++) {
                int64_t t = reverse ? len - 1 - step : step;
                float *yt = y + ((t * D + d) * B + b) * H;
                memcpy(yt, ws.xg + (t * B + b) * H, row_bytes);
                rnn_recur(isa, hs, rm, H, 0, H, 1.0f, NULL, yt);
                rnn_activate_vec(act_f, at.clip, isa, yt, H);
                memcpy(hs, yt, row_bytes);
            }
            for (int64_t t = len; t < S; t++) {
                memset(y + ((t * D + d) * B + b) * H, 0, row_bytes);
            }
        }
    }
    return true;
}

size_t plxk_workspace_rnn(const plx_layer_view *layer, const plxk_compute *compute) {
    return rnn_workspace(layer, 1, compute);
}

/* The kernel table's rows (kernels.h, PLXK_ROW). */
PLXK_ROW_WS(LSTM, lstm);
PLXK_ROW_WS(GRU, gru);
PLXK_ROW_WS(RNN, rnn);
