/* Recurrent layers (float32): lstm, gru and rnn, ONNX layout 0, as
 * plexus/ops.h describes them. One work-group per (direction, batch
 * entry) runs the whole recurrence: each step its work-items compute the
 * gate rows (W's row times X's step plus R's row times the hidden state,
 * with the biases) into the group's scratch, then the cell update for
 * their hidden units; barriers (global memory fences: the state lives in
 * Y_h and Y_c, the gates in the scratch) separate the phases. Every
 * work-item of a group takes the same path (the group's length and
 * direction are shared). A sequence length outside [1, seq_length] is
 * flagged in *err (its batch entry), as an index; that group then writes
 * nothing. Activations are elementwise.cl's ocl_activate with the
 * recurrent functions' codes; acts[d * per + k] its function, alpha,
 * beta. */

float ocl_rnn_act(int func, float alpha, float beta, float clip, float v) {
    if (clip > 0.0f) {
        v = v < -clip ? -clip : v > clip ? clip : v;
    }
    return ocl_activate(func, v, alpha, beta);
}

float ocl_rnn_dot(global const float *a, global const float *b, int n) {
    float s = 0.0f;
    for (int k = 0; k < n; k++) {
        s += a[k] * b[k];
    }
    return s;
}

/* Shared opening of the three: this group's direction d and batch entry
 * b, its length, whether it runs backwards. */
#define OCL_RNN_OPEN                                                                          \
    int grp = (int)get_group_id(0), lid = (int)get_local_id(0), wg = (int)get_local_size(0); \
    int d = grp / NB, b = grp - d * NB;                                                       \
    if (d >= D) {                                                                             \
        return;                                                                               \
    }                                                                                         \
    int len = lens[b];                                                                        \
    if (len < 1 || len > S) {                                                                 \
        if (lid == 0) {                                                                       \
            atomic_min(err, b);                                                               \
        }                                                                                     \
        return;                                                                               \
    }                                                                                         \
    bool reverse = direction == 1 || d == 1;                                                  \
    int fa[8];                                                                                \
    float al[8], be[8];                                                                       \
    vstore8(funcs, 0, fa);                                                                    \
    vstore8(alphas, 0, al);                                                                   \
    vstore8(betas, 0, be);

/* Zeroes Y's rows of this group past its length. */
#define OCL_RNN_CLOSE                                                                         \
    for (int t = len; t < S; t++) {                                                           \
        for (int j = lid; j < H; j += wg) {                                                   \
            y[((t * D + d) * NB + b) * H + j] = 0.0f;                                         \
        }                                                                                     \
    }

kernel void lstm_f32(global const float *x, global const float *w, global const float *r,
                     global const float *bias, global const int *lens, global const float *h0,
                     global const float *c0, global const float *peep, global float *y,
                     global float *yh, global float *yc, global float *scratch, int S, int NB,
                     int I, int H, int D, int direction, float clip, int input_forget,
                     int8 funcs, float8 alphas, float8 betas, global int *err) {
    OCL_RNN_OPEN
    int GH = 4 * H;
    global const float *wd = w + d * GH * I, *rd = r + d * GH * H;
    global const float *wb = bias + d * 8 * H, *rb = wb + 4 * H;
    global const float *pi = peep + d * 3 * H, *po = pi + H, *pf = po + H;
    global float *hs = yh + (d * NB + b) * H, *cs = yc + (d * NB + b) * H;
    global float *g = scratch + grp * GH;
    int a = d * 3; /* f, g, h */
    for (int j = lid; j < H; j += wg) {
        hs[j] = h0[(d * NB + b) * H + j];
        cs[j] = c0[(d * NB + b) * H + j];
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int step = 0; step < len; step++) {
        int t = reverse ? len - 1 - step : step;
        global const float *xt = x + (t * NB + b) * I;
        for (int row = lid; row < GH; row += wg) {
            g[row] = ocl_rnn_dot(wd + row * I, xt, I) + (wb[row] + rb[row]) +
                     ocl_rnn_dot(rd + row * H, hs, H);
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        global float *yt = y + ((t * D + d) * NB + b) * H;
        for (int j = lid; j < H; j += wg) {
            float c = cs[j];
            float gi = ocl_rnn_act(fa[a], al[a], be[a], clip, g[j] + pi[j] * c);
            float gf = input_forget ? 1.0f - gi
                                    : ocl_rnn_act(fa[a], al[a], be[a], clip,
                                                  g[2 * H + j] + pf[j] * c);
            float gc = ocl_rnn_act(fa[a + 1], al[a + 1], be[a + 1], clip, g[3 * H + j]);
            c = gf * c + gi * gc;
            float go = ocl_rnn_act(fa[a], al[a], be[a], clip, g[H + j] + po[j] * c);
            float h = ocl_rnn_act(fa[a + 2], al[a + 2], be[a + 2], 0.0f, c) * go;
            cs[j] = c;
            yt[j] = h;
            hs[j] = h;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
    OCL_RNN_CLOSE
}

kernel void gru_f32(global const float *x, global const float *w, global const float *r,
                    global const float *bias, global const int *lens, global const float *h0,
                    global float *y, global float *yh, global float *scratch, int S, int NB,
                    int I, int H, int D, int direction, float clip, int linear_before_reset,
                    int8 funcs, float8 alphas, float8 betas, global int *err) {
    OCL_RNN_OPEN
    int GH = 3 * H;
    global const float *wd = w + d * GH * I, *rd = r + d * GH * H;
    global const float *wb = bias + d * 6 * H, *rb = wb + 3 * H;
    global float *hs = yh + (d * NB + b) * H;
    global float *g = scratch + grp * (GH + H), *rh = g + GH; /* z, r, X's h part; R's h part */
    int a = d * 2; /* f, g */
    for (int j = lid; j < H; j += wg) {
        hs[j] = h0[(d * NB + b) * H + j];
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int step = 0; step < len; step++) {
        int t = reverse ? len - 1 - step : step;
        global const float *xt = x + (t * NB + b) * I;
        global float *yt = y + ((t * D + d) * NB + b) * H;
        for (int row = lid; row < GH; row += wg) {
            float v = ocl_rnn_dot(wd + row * I, xt, I) + wb[row];
            if (row < 2 * H) {
                v += rb[row] + ocl_rnn_dot(rd + row * H, hs, H);
            } else if (linear_before_reset) {
                rh[row - 2 * H] = ocl_rnn_dot(rd + row * H, hs, H) + rb[row];
            }
            g[row] = v;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        for (int j = lid; j < 2 * H; j += wg) {
            g[j] = ocl_rnn_act(fa[a], al[a], be[a], clip, g[j]);
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        if (!linear_before_reset) {
            /* (r (.) H) R_h^T + Rb_h, r (.) H first into Y's row */
            for (int j = lid; j < H; j += wg) {
                yt[j] = g[H + j] * hs[j];
            }
            barrier(CLK_GLOBAL_MEM_FENCE);
            for (int j = lid; j < H; j += wg) {
                rh[j] = ocl_rnn_dot(rd + (2 * H + j) * H, yt, H) + rb[2 * H + j];
            }
            barrier(CLK_GLOBAL_MEM_FENCE);
        }
        for (int j = lid; j < H; j += wg) {
            float gh = (linear_before_reset ? g[H + j] * rh[j] : rh[j]) + g[2 * H + j];
            gh = ocl_rnn_act(fa[a + 1], al[a + 1], be[a + 1], clip, gh);
            float z = g[j];
            float h = (1.0f - z) * gh + z * hs[j];
            yt[j] = h;
            hs[j] = h;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
    OCL_RNN_CLOSE
}

kernel void rnn_f32(global const float *x, global const float *w, global const float *r,
                    global const float *bias, global const int *lens, global const float *h0,
                    global float *y, global float *yh, global float *scratch, int S, int NB,
                    int I, int H, int D, int direction, float clip, int unused, int8 funcs,
                    float8 alphas, float8 betas, global int *err) {
    OCL_RNN_OPEN
    global const float *wd = w + d * H * I, *rd = r + d * H * H;
    global const float *wb = bias + d * 2 * H, *rb = wb + H;
    global float *hs = yh + (d * NB + b) * H;
    global float *g = scratch + grp * H;
    for (int j = lid; j < H; j += wg) {
        hs[j] = h0[(d * NB + b) * H + j];
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int step = 0; step < len; step++) {
        int t = reverse ? len - 1 - step : step;
        global const float *xt = x + (t * NB + b) * I;
        for (int row = lid; row < H; row += wg) {
            g[row] = ocl_rnn_dot(wd + row * I, xt, I) + (wb[row] + rb[row]) +
                     ocl_rnn_dot(rd + row * H, hs, H);
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        global float *yt = y + ((t * D + d) * NB + b) * H;
        for (int j = lid; j < H; j += wg) {
            float h = ocl_rnn_act(fa[d], al[d], be[d], clip, g[j]);
            yt[j] = h;
            hs[j] = h;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
    (void)unused;
    OCL_RNN_CLOSE
}
