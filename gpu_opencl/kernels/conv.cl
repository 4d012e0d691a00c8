/* Convolutions (NCHW; a 1-D one is H = 1). Geometry in an int16:
 * s0 N, s1 C, s2 H, s3 W, s4 M (output channels), s5 OH, s6 OW, s7 KH,
 * s8 KW, s9 SH, sa SW, sb DH, sc DW, sd PH, se PW (padding before), sf group. */

/* Direct: one work-item per output element (used for depthwise and as the
 * fallback). W is [M, C/group, KH, KW]. */
kernel void conv2d_direct(global const float *x, global const float *w, global const float *bias,
                          global float *y, int has_bias, int16 g) {
    int N = g.s0, C = g.s1, H = g.s2, W = g.s3, M = g.s4, OH = g.s5, OW = g.s6;
    int KH = g.s7, KW = g.s8, SH = g.s9, SW = g.sa, DH = g.sb, DW = g.sc, PH = g.sd, PW = g.se;
    int group = g.sf;
    int i = (int)get_global_id(0);
    if (i >= N * M * OH * OW) {
        return;
    }
    int ow = i % OW;
    int t = i / OW;
    int oh = t % OH;
    t /= OH;
    int m = t % M;
    int n = t / M;
    int cg = C / group, mg = M / group;
    int c0 = (m / mg) * cg;
    float acc = 0.0f;
    for (int c = 0; c < cg; c++) {
        global const float *xp = x + ((n * C + c0 + c) * H) * W;
        global const float *wp = w + ((m * cg + c) * KH) * KW;
        for (int kh = 0; kh < KH; kh++) {
            int ih = oh * SH - PH + kh * DH;
            if (ih < 0 || ih >= H) {
                continue;
            }
            for (int kw = 0; kw < KW; kw++) {
                int iw = ow * SW - PW + kw * DW;
                if (iw < 0 || iw >= W) {
                    continue;
                }
                acc += xp[ih * W + iw] * wp[kh * KW + kw];
            }
        }
    }
    y[i] = has_bias ? acc + bias[m] : acc;
}

/* im2col of every image: col[n][(c*KH + kh)*KW + kw][oh*OW + ow] (0 in the
 * padding); the rows of group g are contiguous. */
kernel void im2col(global const float *x, global float *col, int16 g) {
    int N = g.s0, C = g.s1, H = g.s2, W = g.s3, OH = g.s5, OW = g.s6;
    int KH = g.s7, KW = g.s8, SH = g.s9, SW = g.sa, DH = g.sb, DW = g.sc, PH = g.sd, PW = g.se;
    int P = OH * OW;
    int i = (int)get_global_id(0);
    if (i >= N * C * KH * KW * P) {
        return;
    }
    int p = i % P;
    int t = i / P;
    int kw = t % KW;
    t /= KW;
    int kh = t % KH;
    t /= KH;
    int c = t % C;
    int n = t / C;
    int oh = p / OW, ow = p % OW;
    int ih = oh * SH - PH + kh * DH, iw = ow * SW - PW + kw * DW;
    col[i] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? x[((n * C + c) * H + ih) * W + iw] : 0.0f;
}

/* Transposed convolution, gather form: output o receives input i through
 * tap k when i*s + k*d - pad == o. W is [C, M/group, KH, KW]. */
kernel void conv_transpose2d(global const float *x, global const float *w,
                             global const float *bias, global float *y, int has_bias, int16 g) {
    int N = g.s0, C = g.s1, H = g.s2, W = g.s3, M = g.s4, OH = g.s5, OW = g.s6;
    int KH = g.s7, KW = g.s8, SH = g.s9, SW = g.sa, DH = g.sb, DW = g.sc, PH = g.sd, PW = g.se;
    int group = g.sf;
    int i = (int)get_global_id(0);
    if (i >= N * M * OH * OW) {
        return;
    }
    int ow = i % OW;
    int t = i / OW;
    int oh = t % OH;
    t /= OH;
    int m = t % M;
    int n = t / M;
    int cg = C / group, mg = M / group;
    int c0 = (m / mg) * cg, mm = m % mg;
    float acc = 0.0f;
    for (int c = 0; c < cg; c++) {
        for (int kh = 0; kh < KH; kh++) {
            int th = oh + PH - kh * DH;
            if (th < 0 || th % SH || th / SH >= H) {
                continue;
            }
            for (int kw = 0; kw < KW; kw++) {
                int tw = ow + PW - kw * DW;
                if (tw < 0 || tw % SW || tw / SW >= W) {
                    continue;
                }
                acc += x[((n * C + c0 + c) * H + th / SH) * W + tw / SW] *
                       w[(((c0 + c) * mg + mm) * KH + kh) * KW + kw];
            }
        }
    }
    y[i] = has_bias ? acc + bias[m] : acc;
}
