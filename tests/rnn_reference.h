/* Reference loops for ONNX LSTM, GRU and RNN (opset 14, layout 0), shared by
 * the kernel tests and the network tests. They are written from ONNX's
 * equations with whole gate vectors in temporary arrays (malloc'd, in
 * double), independently of cpu_ref's kernels:
 *
 *   LSTM, gates i, o, f, c (W [D,4H,I], R [D,4H,H], B [D,8H] = [Wb, Rb],
 *   P [D,3H] = [Pi, Po, Pf]):
 *     it = f(Xt*Wi^T + Ht-1*Ri^T + Pi (.) Ct-1 + Wbi + Rbi)
 *     ft = f(Xt*Wf^T + Ht-1*Rf^T + Pf (.) Ct-1 + Wbf + Rbf)  (1 - it with input_forget)
 *     ct = g(Xt*Wc^T + Ht-1*Rc^T + Wbc + Rbc)
 *     Ct = ft (.) Ct-1 + it (.) ct
 *     ot = f(Xt*Wo^T + Ht-1*Ro^T + Po (.) Ct + Wbo + Rbo)
 *     Ht = ot (.) h(Ct)
 *   GRU, gates z, r, h (W [D,3H,I], R [D,3H,H], B [D,6H]):
 *     zt = f(Xt*Wz^T + Ht-1*Rz^T + Wbz + Rbz)
 *     rt = f(Xt*Wr^T + Ht-1*Rr^T + Wbr + Rbr)
 *     ht = g(Xt*Wh^T + (rt (.) Ht-1)*Rh^T + Rbh + Wbh)    linear_before_reset 0
 *     ht = g(Xt*Wh^T + rt (.) (Ht-1*Rh^T + Rbh) + Wbh)    linear_before_reset 1
 *     Ht = (1 - zt) (.) ht + zt (.) Ht-1
 *
 * clip > 0 bounds every gate's input to the activation (as ONNX Runtime
 * does; not h's input Ct). A reverse direction runs each batch entry's own
 * steps len-1 down to 0. Y is zero past a batch entry's length; Y_h (and
 * Y_c) hold the state after the last step run. Sizes: S seq_length, B
 * batch, In input_size (I is <complex.h>'s, which Criterion includes), H
 * hidden_size, D num_directions. */
#ifndef PLEXUS_TEST_RNN_REFERENCE_H
#define PLEXUS_TEST_RNN_REFERENCE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <plexus/ops.h>

static inline double rnnref_act(const plx_rnn_activation *a, double x) {
    double al = a->alpha, be = a->beta;
    switch (a->func) {
    case PLX_ACT_RELU: return fmax(0.0, x);
    case PLX_ACT_TANH: return tanh(x);
    case PLX_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case PLX_ACT_AFFINE: return al * x + be;
    case PLX_ACT_LEAKY_RELU: return x >= 0 ? x : al * x;
    case PLX_ACT_THRESHOLDED_RELU: return x > al ? x : 0.0;
    case PLX_ACT_SCALED_TANH: return al * tanh(be * x);
    case PLX_ACT_HARD_SIGMOID: return fmin(fmax(al * x + be, 0.0), 1.0);
    case PLX_ACT_ELU: return x >= 0 ? x : al * (exp(x) - 1.0);
    case PLX_ACT_SOFTSIGN: return x / (1.0 + fabs(x));
    case PLX_ACT_SOFTPLUS: return log(1.0 + exp(x));
    default: abort(); /* not a recurrent activation */
    }
}

static inline double rnnref_clip(double v, float clip) {
    return clip > 0 ? fmin(fmax(v, -(double)clip), (double)clip) : v;
}

/* out[q] = Wb[q] + Rb[q] + sum_k x[k] W[q][k] + sum_k h[k] R[q][k], for
 * the n rows of W (cols I) and R (cols H) given. */
static inline void rnnref_gates(double *out, int64_t n, const float *x, const float *w, int64_t In,
                                const double *h, const float *r, int64_t H, const float *wb,
                                const float *rb) {
    for (int64_t q = 0; q < n; q++) {
        double v = (double)wb[q] + (double)rb[q];
        for (int64_t k = 0; k < In; k++) {
            v += (double)x[k] * w[q * In + k];
        }
        for (int64_t k = 0; k < H; k++) {
            v += h[k] * r[q * H + k];
        }
        out[q] = v;
    }
}

/* Outputs Y [S,D,B,H], Y_h and Y_c [D,B,H]; lens may not be NULL. */
static inline void rnnref_lstm(const plx_lstm_desc *d, int64_t S, int64_t B, int64_t In,
                               const float *X, const float *W, const float *R, const float *Bias,
                               const int32_t *lens, const float *h0, const float *c0,
                               const float *P, float *Y, float *Yh, float *Yc) {
    int64_t H = d->hidden_size, D = d->direction == PLX_RNN_BIDIRECTIONAL ? 2 : 1;
    double *h = calloc((size_t)H, sizeof *h), *c = calloc((size_t)H, sizeof *c);
    double *g = calloc((size_t)(4 * H), sizeof *g);
    double *hn = calloc((size_t)H, sizeof *hn), *cn = calloc((size_t)H, sizeof *cn);
    if (!h || !c || !g || !hn || !cn) {
        abort();
    }
    memset(Y, 0, (size_t)(S * D * B * H) * sizeof *Y);
    for (int64_t dir = 0; dir < D; dir++) {
        bool rev = d->direction == PLX_RNN_REVERSE || dir == 1;
        const plx_rnn_activation *f = &d->activations[dir][0], *gg = &d->activations[dir][1],
                                 *hh = &d->activations[dir][2];
        const float *pi = P + dir * 3 * H, *po = pi + H, *pf = po + H;
        for (int64_t b = 0; b < B; b++) {
            for (int64_t j = 0; j < H; j++) {
                h[j] = h0[(dir * B + b) * H + j];
                c[j] = c0[(dir * B + b) * H + j];
            }
            int64_t len = lens[b];
            for (int64_t s = 0; s < len; s++) {
                int64_t t = rev ? len - 1 - s : s;
                const float *wb = Bias + dir * 8 * H, *rb = wb + 4 * H;
                rnnref_gates(g, 4 * H, X + (t * B + b) * In, W + dir * 4 * H * In, In, h,
                             R + dir * 4 * H * H, H, wb, rb);
                const double *gi = g, *go = g + H, *gf = g + 2 * H, *gc = g + 3 * H;
                for (int64_t j = 0; j < H; j++) {
                    double it = rnnref_act(f, rnnref_clip(gi[j] + pi[j] * c[j], d->clip));
                    double ft = d->input_forget
                                    ? 1.0 - it
                                    : rnnref_act(f, rnnref_clip(gf[j] + pf[j] * c[j], d->clip));
                    double ct = rnnref_act(gg, rnnref_clip(gc[j], d->clip));
                    cn[j] = ft * c[j] + it * ct;
                    double ot = rnnref_act(f, rnnref_clip(go[j] + po[j] * cn[j], d->clip));
                    hn[j] = ot * rnnref_act(hh, cn[j]);
                }
                for (int64_t j = 0; j < H; j++) {
                    h[j] = hn[j];
                    c[j] = cn[j];
                    Y[((t * D + dir) * B + b) * H + j] = (float)h[j];
                }
            }
            for (int64_t j = 0; j < H; j++) {
                Yh[(dir * B + b) * H + j] = (float)h[j];
                Yc[(dir * B + b) * H + j] = (float)c[j];
            }
        }
    }
    free(h);
    free(c);
    free(g);
    free(hn);
    free(cn);
}

/* Outputs Y [S,D,B,H] and Y_h [D,B,H]. */
static inline void rnnref_gru(const plx_gru_desc *d, int64_t S, int64_t B, int64_t In,
                              const float *X, const float *W, const float *R, const float *Bias,
                              const int32_t *lens, const float *h0, float *Y, float *Yh) {
    int64_t H = d->hidden_size, D = d->direction == PLX_RNN_BIDIRECTIONAL ? 2 : 1;
    double *h = calloc((size_t)H, sizeof *h), *zr = calloc((size_t)(2 * H), sizeof *zr);
    double *rh = calloc((size_t)H, sizeof *rh), *hn = calloc((size_t)H, sizeof *hn);
    double *xw = calloc((size_t)H, sizeof *xw), *hr = calloc((size_t)H, sizeof *hr);
    if (!h || !zr || !rh || !hn || !xw || !hr) {
        abort();
    }
    memset(Y, 0, (size_t)(S * D * B * H) * sizeof *Y);
    for (int64_t dir = 0; dir < D; dir++) {
        bool rev = d->direction == PLX_RNN_REVERSE || dir == 1;
        const plx_rnn_activation *f = &d->activations[dir][0], *g = &d->activations[dir][1];
        const float *w = W + dir * 3 * H * In, *r = R + dir * 3 * H * H;
        const float *wb = Bias + dir * 6 * H, *rb = wb + 3 * H;
        const float *wh = w + 2 * H * In, *rhw = r + 2 * H * H;
        const float *wbh = wb + 2 * H, *rbh = rb + 2 * H;
        for (int64_t b = 0; b < B; b++) {
            for (int64_t j = 0; j < H; j++) {
                h[j] = h0[(dir * B + b) * H + j];
            }
            int64_t len = lens[b];
            for (int64_t s = 0; s < len; s++) {
                int64_t t = rev ? len - 1 - s : s;
                const float *x = X + (t * B + b) * In;
                rnnref_gates(zr, 2 * H, x, w, In, h, r, H, wb, rb);
                for (int64_t j = 0; j < 2 * H; j++) {
                    zr[j] = rnnref_act(f, rnnref_clip(zr[j], d->clip));
                }
                const double *z = zr, *rt = zr + H;
                /* xw = Xt*Wh^T + Wbh; hr = Ht-1*Rh^T + Rbh; rh = rt (.) Ht-1 */
                for (int64_t j = 0; j < H; j++) {
                    double v = wbh[j];
                    for (int64_t k = 0; k < In; k++) {
                        v += (double)x[k] * wh[j * In + k];
                    }
                    xw[j] = v;
                    double u = rbh[j];
                    for (int64_t k = 0; k < H; k++) {
                        u += h[k] * rhw[j * H + k];
                    }
                    hr[j] = u;
                    rh[j] = rt[j] * h[j];
                }
                for (int64_t j = 0; j < H; j++) {
                    double pre;
                    if (d->linear_before_reset) {
                        pre = xw[j] + rt[j] * hr[j];
                    } else {
                        double u = rbh[j];
                        for (int64_t k = 0; k < H; k++) {
                            u += rh[k] * rhw[j * H + k];
                        }
                        pre = xw[j] + u;
                    }
                    double ht = rnnref_act(g, rnnref_clip(pre, d->clip));
                    hn[j] = (1.0 - z[j]) * ht + z[j] * h[j];
                }
                for (int64_t j = 0; j < H; j++) {
                    h[j] = hn[j];
                    Y[((t * D + dir) * B + b) * H + j] = (float)h[j];
                }
            }
            for (int64_t j = 0; j < H; j++) {
                Yh[(dir * B + b) * H + j] = (float)h[j];
            }
        }
    }
    free(h);
    free(zr);
    free(rh);
    free(hn);
    free(xw);
    free(hr);
}

/* RNN (W [D,H,I], R [D,H,H], B [D,2H] = [Wb, Rb]):
 *   Ht = f(Xt*W^T + Ht-1*R^T + Wb + Rb). Outputs Y [S,D,B,H] (zero past a
 * batch entry's length) and Y_h [D,B,H]. */
static inline void rnnref_rnn(const plx_rnn_desc *d, int64_t S, int64_t B, int64_t In,
                              const float *X, const float *W, const float *R, const float *Bias,
                              const int32_t *lens, const float *h0, float *Y, float *Yh) {
    int64_t H = d->hidden_size, D = d->direction == PLX_RNN_BIDIRECTIONAL ? 2 : 1;
    double *h = calloc((size_t)H, sizeof *h), *pre = calloc((size_t)H, sizeof *pre);
    if (!h || !pre) {
        abort();
    }
    memset(Y, 0, (size_t)(S * D * B * H) * sizeof *Y);
    for (int64_t dir = 0; dir < D; dir++) {
        bool rev = d->direction == PLX_RNN_REVERSE || dir == 1;
        const plx_rnn_activation *f = &d->activations[dir][0];
        const float *w = W + dir * H * In, *r = R + dir * H * H;
        const float *wb = Bias + dir * 2 * H, *rb = wb + H;
        for (int64_t b = 0; b < B; b++) {
            for (int64_t j = 0; j < H; j++) {
                h[j] = h0[(dir * B + b) * H + j];
            }
            int64_t len = lens[b];
            for (int64_t s = 0; s < len; s++) {
                int64_t t = rev ? len - 1 - s : s;
                rnnref_gates(pre, H, X + (t * B + b) * In, w, In, h, r, H, wb, rb);
                for (int64_t j = 0; j < H; j++) {
                    h[j] = rnnref_act(f, rnnref_clip(pre[j], d->clip));
                    Y[((t * D + dir) * B + b) * H + j] = (float)h[j];
                }
            }
            for (int64_t j = 0; j < H; j++) {
                Yh[(dir * B + b) * H + j] = (float)h[j];
            }
        }
    }
    free(h);
    free(pre);
}

#endif /* PLEXUS_TEST_RNN_REFERENCE_H */
