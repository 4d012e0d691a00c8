/* cpu_ref's recurrent kernels: lstm and gru, ONNX opset 14 with layout 0
 * (X [seq_length, batch, input_size]), as plexus/ops.h describes them.
 *
 * The prepare function checks the whole layer (counts, dtypes, attributes,
 * every shape); the run function calls it again, so that no loop trusts an
 * inconsistent info, and checks sequence_lens before writing anything.
 *
 * Nothing here allocates, and no scratch buffer is needed: batch entries
 * and directions are independent recurrences, each run on its own slices
 * of the outputs. The running state lives in Y_h (and Y_c), which end up
 * holding the state after the last valid step as required; a step writes
 * its new hidden state into its slice of Y (H floats), reading the
 * previous one from Y_h, then copies it to Y_h. Gate pre-activations are
 * computed unit by unit as dot products (in double), so that a unit needs
 * only its own values. The one exception is GRU's default hidden gate,
 * (r (.) H_{t-1}) * Rh^T, where every unit needs every r: it is
 * accumulated in Y's slice with the loop over the reset units outside
 * (each r_k computed once, its contribution added to every unit), after
 * which each unit turns its sum into its new hidden value in place. */
#include "kernels.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Shapes of a recurrent layer, in elements. */
typedef struct rnn_geom {
    int64_t seq, batch, input, hidden, dirs;
} rnn_geom;

/* The parts of plx_lstm_desc and plx_gru_desc the loops use. */
typedef struct rnn_attrs {
    plx_rnn_direction direction;
    int64_t hidden;
    float clip;
    const plx_rnn_activation *acts[2]; /* per direction: f, g (and h for lstm) */
} rnn_attrs;

static const char *layer_name(const plx_layer_view *l) {
    return l && l->name ? l->name : "";
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

/* clip > 0 bounds an activation's input to [-clip, clip]. */
static double clip_input(double v, float clip) {
    if (clip > 0) {
        double c = clip;
        v = v < -c ? -c : v > c ? c : v;
    }
    return v;
}

static double dot(const float *a, const float *b, int64_t n) {
    double acc = 0.0;
    for (int64_t i = 0; i < n; i++) {
        acc += (double)a[i] * (double)b[i];
    }
    return acc;
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
    return plxk_refuse(buf, size, "cpu_ref %s: %s %s must be %s", op, role,
                          shape_text(t->dims, rank, got, sizeof got),
                          shape_text(dims, r, want, sizeof want));
}

/* Checks a lstm (gates 4) or gru (gates 3) layer and derives its geometry
 * and attributes. */
static const char *rnn_prepare(const plx_layer_view *l, bool lstm, rnn_geom *g, rnn_attrs *at,
                               char *buf, size_t size) {
    static const char *const roles[] = {"X", "W", "R", "B", "sequence_lens", "initial_h",
                                        "initial_c", "P"};
    static const char *const out_roles[] = {"Y", "Y_h", "Y_c"};
    const char *op = lstm ? "lstm" : "gru";
    uint32_t n_in = lstm ? 8 : 6, n_out = lstm ? 3 : 2;
    for (uint32_t i = 0; i < n_in + n_out; i++) {
        const plx_tensor_info *t = i < n_in ? &l->inputs[i] : &l->outputs[i - n_in];
        const char *role = i < n_in ? roles[i] : out_roles[i - n_in];
        plx_dtype want = i == 4 ? PLX_DTYPE_INT32 : PLX_DTYPE_FLOAT32;
        if (t->dtype != want) {
            return plxk_refuse(buf, size, "cpu_ref runs %s with %s %s, not %s", op, role,
                                  plx_dtype_name(want), plx_dtype_name(t->dtype));
        }
    }
    uint32_t per_dir = lstm ? 3 : 2;
    if (lstm) {
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
        return plxk_refuse(buf, size, "cpu_ref %s: direction %d is not a plx_rnn_direction", op,
                              (int)at->direction);
    }
    /* The bound keeps 8 * hidden_size in int64_t; the shapes bound it further. */
    if (at->hidden < 1 || at->hidden > INT64_MAX / 8) {
        return plxk_refuse(buf, size, "cpu_ref %s: hidden_size %lld is out of range", op,
                              (long long)at->hidden);
    }
    if (!(at->clip >= 0.0f) || !isfinite(at->clip)) {
        return plxk_refuse(buf, size, "cpu_ref %s: clip %g must be finite and >= 0", op,
                              (double)at->clip);
    }
    int64_t dirs = at->direction == PLX_RNN_BIDIRECTIONAL ? 2 : 1;
    for (int64_t d = 0; d < dirs; d++) {
        for (uint32_t k = 0; k < per_dir; k++) {
            const plx_rnn_activation *a = &at->acts[d][k];
            if (!rnn_activation_ok(a->func)) {
                return plxk_refuse(buf, size,
                                      "cpu_ref %s: activations[%lld][%u].func %d is not a recurrent "
                                      "activation cpu_ref runs",
                                      op, (long long)d, k, (int)a->func);
            }
            if (!isfinite(a->alpha) || !isfinite(a->beta)) {
                return plxk_refuse(buf, size,
                                      "cpu_ref %s: activations[%lld][%u] needs a finite alpha and beta",
                                      op, (long long)d, k);
            }
        }
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank != 3) {
        return plxk_refuse(buf, size,
                              "cpu_ref %s: X must have rank 3 ([seq_length, batch, input_size]), "
                              "not %u",
                              op, x->rank);
    }
    g->seq = x->dims[0];
    g->batch = x->dims[1];
    g->input = x->dims[2];
    g->hidden = at->hidden;
    g->dirs = dirs;
    int64_t h = g->hidden, gates = lstm ? 4 : 3;
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

/* ---- lstm ----------------------------------------------------------------- */

const char *plxk_check_lstm(const plx_layer_view *layer, char *buf, size_t size) {
    rnn_geom g;
    rnn_attrs at;
    return rnn_prepare(layer, true, &g, &at, buf, size);
}

bool plxk_run_lstm(const plxk_kernel_args *args) {
    char why[256];
    rnn_geom g;
    rnn_attrs at;
    if (rnn_prepare(args->layer, true, &g, &at, why, sizeof why)) {
        return plxk_fail(args, "layer '%s': %s", layer_name(args->layer), why);
    }
    const plx_lstm_desc *desc = args->layer->desc;
    const float *x = args->inputs[0], *w = args->inputs[1], *r = args->inputs[2];
    const float *bias = args->inputs[3], *h0 = args->inputs[5], *c0 = args->inputs[6];
    const float *peep = args->inputs[7];
    const int32_t *lens = args->inputs[4];
    float *y = args->outputs[0], *yh = args->outputs[1], *yc = args->outputs[2];
    if (!check_lens(args, "lstm", lens, &g)) {
        return false;
    }
    const int64_t S = g.seq, B = g.batch, I = g.input, H = g.hidden, D = g.dirs;
    const size_t row_bytes = (size_t)H * sizeof(float);
    for (int64_t d = 0; d < D; d++) {
        bool reverse = at.direction == PLX_RNN_REVERSE || d == 1;
        const plx_rnn_activation *act_f = &at.acts[d][0], *act_g = &at.acts[d][1],
                                 *act_h = &at.acts[d][2];
        const float *wd = w + d * 4 * H * I, *rd = r + d * 4 * H * H;
        const float *wb = bias + d * 8 * H, *rb = wb + 4 * H;
        const float *pi = peep + d * 3 * H, *po = pi + H, *pf = po + H;
        for (int64_t b = 0; b < B; b++) {
            float *hs = yh + (d * B + b) * H, *cs = yc + (d * B + b) * H;
            memcpy(hs, h0 + (d * B + b) * H, row_bytes);
            memcpy(cs, c0 + (d * B + b) * H, row_bytes);
            int64_t len = lens[b];
            for (int64_t step = 0; step < len; step++) {
                int64_t t = reverse ? len - 1 - step : step;
                const float *xt = x + (t * B + b) * I;
                float *yt = y + ((t * D + d) * B + b) * H;
                for (int64_t j = 0; j < H; j++) {
                    double pre[4]; /* i, o, f, c */
                    for (int64_t q = 0; q < 4; q++) {
                        int64_t row = q * H + j;
                        pre[q] = dot(xt, wd + row * I, I) + dot(hs, rd + row * H, H) +
                                 (double)wb[row] + (double)rb[row];
                    }
                    double c_prev = cs[j];
                    double it = rnn_activate(act_f, clip_input(pre[0] + pi[j] * c_prev, at.clip));
                    double ft = 1.0 - it;
                    if (!desc->input_forget) {
                        ft = rnn_activate(act_f, clip_input(pre[2] + pf[j] * c_prev, at.clip));
                    }
                    double ct = rnn_activate(act_g, clip_input(pre[3], at.clip));
                    double c_new = ft * c_prev + it * ct;
                    double ot = rnn_activate(act_f, clip_input(pre[1] + po[j] * c_new, at.clip));
                    cs[j] = (float)c_new;
                    yt[j] = (float)(ot * rnn_activate(act_h, c_new));
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

/* ---- gru ------------------------------------------------------------------ */

const char *plxk_check_gru(const plx_layer_view *layer, char *buf, size_t size) {
    rnn_geom g;
    rnn_attrs at;
    return rnn_prepare(layer, false, &g, &at, buf, size);
}

bool plxk_run_gru(const plxk_kernel_args *args) {
    char why[256];
    rnn_geom g;
    rnn_attrs at;
    if (rnn_prepare(args->layer, false, &g, &at, why, sizeof why)) {
        return plxk_fail(args, "layer '%s': %s", layer_name(args->layer), why);
    }
    const plx_gru_desc *desc = args->layer->desc;
    const float *x = args->inputs[0], *w = args->inputs[1], *r = args->inputs[2];
    const float *bias = args->inputs[3], *h0 = args->inputs[5];
    const int32_t *lens = args->inputs[4];
    float *y = args->outputs[0], *yh = args->outputs[1];
    if (!check_lens(args, "gru", lens, &g)) {
        return false;
    }
    const int64_t S = g.seq, B = g.batch, I = g.input, H = g.hidden, D = g.dirs;
    const size_t row_bytes = (size_t)H * sizeof(float);
    for (int64_t d = 0; d < D; d++) {
        bool reverse = at.direction == PLX_RNN_REVERSE || d == 1;
        const plx_rnn_activation *act_f = &at.acts[d][0], *act_g = &at.acts[d][1];
        const float *wd = w + d * 3 * H * I, *rd = r + d * 3 * H * H;
        const float *wb = bias + d * 6 * H, *rb = wb + 3 * H;
        /* rows of gate z are [0, H), of r [H, 2H), of h [2H, 3H) */
        const float *wh = wd + 2 * H * I, *rh = rd + 2 * H * H;
        for (int64_t b = 0; b < B; b++) {
            float *hs = yh + (d * B + b) * H;
            memcpy(hs, h0 + (d * B + b) * H, row_bytes);
            int64_t len = lens[b];
            for (int64_t step = 0; step < len; step++) {
                int64_t t = reverse ? len - 1 - step : step;
                const float *xt = x + (t * B + b) * I;
                float *yt = y + ((t * D + d) * B + b) * H;
                if (!desc->linear_before_reset) {
                    /* yt[j] = sum_k r_k * H_{t-1}[k] * Rh[j][k] */
                    memset(yt, 0, row_bytes);
                    for (int64_t k = 0; k < H; k++) {
                        int64_t row = H + k;
                        double rk = rnn_activate(
                            act_f, clip_input(dot(xt, wd + row * I, I) + dot(hs, rd + row * H, H) +
                                                  (double)wb[row] + (double)rb[row],
                                              at.clip));
                        double rhk = rk * hs[k];
                        for (int64_t j = 0; j < H; j++) {
                            yt[j] = (float)(yt[j] + rhk * rh[j * H + k]);
                        }
                    }
                }
                for (int64_t j = 0; j < H; j++) {
                    double zt = rnn_activate(act_f, clip_input(dot(xt, wd + j * I, I) +
                                                                   dot(hs, rd + j * H, H) +
                                                                   (double)wb[j] + (double)rb[j],
                                                               at.clip));
                    double pre = dot(xt, wh + j * I, I) + (double)wb[2 * H + j];
                    if (desc->linear_before_reset) {
                        int64_t row = H + j;
                        double rt = rnn_activate(
                            act_f, clip_input(dot(xt, wd + row * I, I) + dot(hs, rd + row * H, H) +
                                                  (double)wb[row] + (double)rb[row],
                                              at.clip));
                        pre += rt * (dot(hs, rh + j * H, H) + (double)rb[2 * H + j]);
                    } else {
                        pre += (double)yt[j] + (double)rb[2 * H + j];
                    }
                    double ht = rnn_activate(act_g, clip_input(pre, at.clip));
                    yt[j] = (float)((1.0 - zt) * ht + zt * hs[j]);
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

/* The kernel table's rows (kernels.h, PLXK_ROW). */
PLXK_ROW(LSTM, lstm);
PLXK_ROW(GRU, gru);
