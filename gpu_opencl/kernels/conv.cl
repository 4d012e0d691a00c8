/* Convolutions (NCDHW; a 2-D one is D = 1, a 1-D one D = H = 1). Geometry
 * in an int16: s0 N, s1 C, s2 H, s3 W, s4 M (output channels), s5 OH,
 * s6 OW, s7 KH, s8 KW, s9 SH, sa SW, sb DH, sc DW, sd PH, se PW (padding
 * before), sf group; the depth in an int8 dg: s0 D, s1 OD, s2 KD, s3 SD,
 * s4 DD (dilation), s5 PD (padding before). */

/* Direct: one work-item per output element (used for depthwise and as the
 * fallback). W is [M, C/group, KD, KH, KW]. */
kernel void conv2d_direct(global const float *x, global const float *w, global const float *bias,
                          global float *y, int has_bias, int16 g, int8 dg) {
    int N = g.s0, C = g.s1, H = g.s2, W = g.s3, M = g.s4, OH = g.s5, OW = g.s6;
    int KH = g.s7, KW = g.s8, SH = g.s9, SW = g.sa, DH = g.sb, DW = g.sc, PH = g.sd, PW = g.se;
    int group = g.sf;
    int D = dg.s0, OD = dg.s1, KD = dg.s2, SD = dg.s3, DD = dg.s4, PD = dg.s5;
    int i = (int)get_global_id(0);
    if (i >= N * M * OD * OH * OW) {
        return;
    }
    int ow = i % OW;
    int t = i / OW;
    int oh = t % OH;
    t /= OH;
    int od = t % OD;
    t /= OD;
    int m = t % M;
    int n = t / M;
    int cg = C / group, mg = M / group;
    int c0 = (m / mg) * cg;
    float acc = 0.0f;
    for (int c = 0; c < cg; c++) {
        for (int kd = 0; kd < KD; kd++) {
            int id = od * SD - PD + kd * DD;
            if (id < 0 || id >= D) {
                continue;
            }
            global const float *xp = x + (((n * C + c0 + c) * D + id) * H) * W;
            global const float *wp = w + (((m * cg + c) * KD + kd) * KH) * KW;
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
    }
    y[i] = has_bias ? acc + bias[m] : acc;
}

/* im2col of every image: col[n][((c*KD + kd)*KH + kh)*KW + kw][(od*OH +
 * oh)*OW + ow] (0 in the padding); the rows of group g are contiguous. */
kernel void im2col(global const float *x, global float *col, int16 g, int8 dg) {
    int N = g.s0, C = g.s1, H = g.s2, W = g.s3, OH = g.s5, OW = g.s6;
    int KH = g.s7, KW = g.s8, SH = g.s9, SW = g.sa, DH = g.sb, DW = g.sc, PH = g.sd, PW = g.se;
    int D = dg.s0, OD = dg.s1, KD = dg.s2, SD = dg.s3, DD = dg.s4, PD = dg.s5;
    int P = OD * OH * OW;
    int i = (int)get_global_id(0);
    if (i >= N * C * KD * KH * KW * P) {
        return;
    }
    int p = i % P;
    int t = i / P;
    int kw = t % KW;
    t /= KW;
    int kh = t % KH;
    t /= KH;
    int kd = t % KD;
    t /= KD;
    int c = t % C;
    int n = t / C;
    int ow = p % OW, oh = p / OW % OH, od = p / OW / OH;
    int id = od * SD - PD + kd * DD, ih = oh * SH - PH + kh * DH, iw = ow * SW - PW + kw * DW;
    col[i] = (id >= 0 && id < D && ih >= 0 && ih < H && iw >= 0 && iw < W)
                 ? x[(((n * C + c) * D + id) * H + ih) * W + iw]
                 : 0.0f;
}

/* Transposed convolution, gather form: output o receives input i through
 * tap k when i*s + k*d - pad == o. W is [C, M/group, KD, KH, KW]. */
kernel void conv_transpose2d(global const float *x, global const float *w,
                             global const float *bias, global float *y, int has_bias, int16 g,
                             int8 dg) {
    int N = g.s0, C = g.s1, H = g.s2, W = g.s3, M = g.s4, OH = g.s5, OW = g.s6;
    int KH = g.s7, KW = g.s8, SH = g.s9, SW = g.sa, DH = g.sb, DW = g.sc, PH = g.sd, PW = g.se;
    int group = g.sf;
    int D = dg.s0, OD = dg.s1, KD = dg.s2, SD = dg.s3, DD = dg.s4, PD = dg.s5;
    int i = (int)get_global_id(0);
    if (i >= N * M * OD * OH * OW) {
        return;
    }
    int ow = i % OW;
    int t = i / OW;
    int oh = t % OH;
    t /= OH;
    int od = t % OD;
    t /= OD;
    int m = t % M;
    int n = t / M;
    int cg = C / group, mg = M / group;
    int c0 = (m / mg) * cg, mm = m % mg;
    float acc = 0.0f;
    for (int c = 0; c < cg; c++) {
        for (int kd = 0; kd < KD; kd++) {
            int td = od + PD - kd * DD;
            if (td < 0 || td % SD || td / SD >= D) {
                continue;
            }
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
                    acc += x[(((n * C + c0 + c) * D + td / SD) * H + th / SH) * W + tw / SW] *
                           w[((((c0 + c) * mg + mm) * KD + kd) * KH + kh) * KW + kw];
                }
            }
        }
    }
    y[i] = has_bias ? acc + bias[m] : acc;
}

/* Deformable convolution (float32), one work-item per element of Y [N, M,
 * oH, oW]: the bias, plus over the group's input channels and the kernel
 * taps in order (cpu_ref's order for one output), the weight times X read
 * bilinearly at the tap's offset position (a neighbour outside X reads 0,
 * a NaN position gives NaN) times the tap's mask. In float32 where cpu_ref
 * samples in double. Geometry g: s0 N, s1 C, s2 H, s3 W, s4 M, s5 kH,
 * s6 kW, s7 oH, s8 oW, s9/sa strides, sb/sc dilations, sd/se pads before,
 * sf group; og: offset_group. */
float ocl_dc_sample(global const float *p, int h, int w, float y, float x) {
    if (isnan(y) || isnan(x)) {
        return NAN;
    }
    if (!(y > -1.0f && y < (float)h && x > -1.0f && x < (float)w)) {
        return 0.0f;
    }
    float fy = floor(y), fx = floor(x), ly = y - fy, lx = x - fx;
    int y0 = (int)fy, x0 = (int)fx;
    float v = 0.0f;
    for (int dy = 0; dy < 2; dy++) {
        int yy = y0 + dy;
        float wy = dy ? ly : 1.0f - ly;
        if (yy < 0 || yy >= h || wy == 0.0f) {
            continue;
        }
        for (int dx = 0; dx < 2; dx++) {
            int xx = x0 + dx;
            float wx = dx ? lx : 1.0f - lx;
            if (xx >= 0 && xx < w && wx != 0.0f) {
                v += wy * wx * p[yy * w + xx];
            }
        }
    }
    return v;
}

kernel void deform_conv_f32(global const float *x, global const float *wt,
                            global const float *off, global const float *bias,
                            global const float *mask, global float *y, int16 g, int og,
                            int has_bias, int has_mask) {
    int N = g.s0, C = g.s1, H = g.s2, W = g.s3, M = g.s4, KH = g.s5, KW = g.s6;
    int OH = g.s7, OW = g.s8, SH = g.s9, SW = g.sa, DH = g.sb, DW = g.sc, PH = g.sd, PW = g.se;
    int group = g.sf;
    int i = (int)get_global_id(0);
    if (i >= N * M * OH * OW) {
        return;
    }
    int ox = i % OW;
    int t = i / OW;
    int oy = t % OH;
    t /= OH;
    int m = t % M;
    int n = t / M;
    int cpg = C / group, mpg = M / group, cpo = C / og, grp = m / mpg;
    int plane = OH * OW, o = oy * OW + ox, ktaps = KH * KW;
    float acc = has_bias ? bias[m] : 0.0f;
    for (int cl = 0; cl < cpg; cl++) {
        int c = grp * cpg + cl, ogi = c / cpo;
        global const float *xp = x + (n * C + c) * H * W;
        for (int ki = 0; ki < KH; ki++) {
            for (int kj = 0; kj < KW; kj++) {
                int tap = (ogi * KH + ki) * KW + kj;
                float dh = off[(n * 2 * og * ktaps + 2 * tap) * plane + o];
                float dw = off[(n * 2 * og * ktaps + 2 * tap + 1) * plane + o];
                float sy = (float)(oy * SH - PH + ki * DH) + dh;
                float sx = (float)(ox * SW - PW + kj * DW) + dw;
                float v = ocl_dc_sample(xp, H, W, sy, sx);
                if (has_mask) {
                    v *= mask[(n * og * ktaps + tap) * plane + o];
                }
                acc += wt[((m * cpg + cl) * KH + ki) * KW + kj] * v;
            }
        }
    }
    y[i] = acc;
}
