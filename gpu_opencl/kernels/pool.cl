/* Max, average and lp pooling, one work-item per output element. Geometry in
 * an int16: s0 N, s1 C, s2 H, s3 W, s4 OH, s5 OW, s6 KH, s7 KW, s8 SH,
 * s9 SW, sa DH, sb DW, sc/sd pads before (H, W), se/sf pads after; the
 * depth (1 but in a 3-D pool) in an int8 dg: s0 D, s1 OD, s2 KD, s3 SD,
 * s4 DD, s5 pad before, s6 pad after.
 * Average divides by the taps inside the input, or inside input and
 * padding with count_include_pad (taps past the padding never count); a
 * window with nothing to average gives NaN; a max over nothing gives -inf;
 * a NaN wins a max. kind: 0 max, 1 average, 2 lp (the sum of |x|^p over
 * the taps inside X, to the power 1/p: padding adds nothing; in float32,
 * where cpu_ref sums in double). */
kernel void pool2d_f32(global const float *x, global float *y, int16 g, int8 dg, int kind,
                       int count_include_pad, int p) {
    int N = g.s0, C = g.s1, H = g.s2, W = g.s3, OH = g.s4, OW = g.s5;
    int KH = g.s6, KW = g.s7, SH = g.s8, SW = g.s9, DH = g.sa, DW = g.sb;
    int PBH = g.sc, PBW = g.sd, PEH = g.se, PEW = g.sf;
    int D = dg.s0, OD = dg.s1, KD = dg.s2, SD = dg.s3, DD = dg.s4, PBD = dg.s5, PED = dg.s6;
    int i = (int)get_global_id(0);
    if (i >= N * C * OD * OH * OW) {
        return;
    }
    int ow = i % OW;
    int t = i / OW;
    int oh = t % OH;
    t /= OH;
    int od = t % OD;
    int nc = t / OD;
    float best = -INFINITY, sum = 0.0f;
    int count = 0;
    for (int kd = 0; kd < KD; kd++) {
        int id = od * SD - PBD + kd * DD;
        bool d_in = id >= 0 && id < D;
        bool d_pad = id >= -PBD && id < D + PED;
        int base = (nc * D + id) * H * W; /* read only when id is inside */
        for (int kh = 0; kh < KH; kh++) {
            int ih = oh * SH - PBH + kh * DH;
            bool h_in = d_in && ih >= 0 && ih < H;
            bool h_pad = d_pad && ih >= -PBH && ih < H + PEH;
            for (int kw = 0; kw < KW; kw++) {
                int iw = ow * SW - PBW + kw * DW;
                bool w_in = iw >= 0 && iw < W;
                bool w_pad = iw >= -PBW && iw < W + PEW;
                if (h_in && w_in) {
                    float v = x[base + ih * W + iw];
                    if (kind == 0) {
                        best = v > best || isnan(v) ? v : best;
                    } else if (kind == 1) {
                        sum += v;
                    } else {
                        float a = fabs(v);
                        sum += p == 1 ? a : p == 2 ? a * a : pow(a, (float)p);
                    }
                    count++;
                } else if (count_include_pad && h_pad && w_pad) {
                    count++;
                }
            }
        }
    }
    y[i] = kind == 0   ? best
           : kind == 1 ? (count ? sum / (float)count : NAN)
           : p == 1    ? sum
           : p == 2    ? sqrt(sum)
                       : pow(sum, 1.0f / (float)p);
}

/* A max pool with its Indices: the first maximum of each window in
 * row-major order (a NaN counts as larger than any number, the first NaN
 * winning), its position in X flattened, ((n * C + c) * D + d) * H * W +
 * h * W + w, or h + w * H within the plane when column_major (1-D and 2-D
 * pools); a window with nothing inside X gives -inf and -1. Geometry as
 * pool2d_f32. */
kernel void max_pool2d_indices_f32(global const float *x, global float *y, global long *ind,
                                   int16 g, int8 dg, int column_major) {
    int N = g.s0, C = g.s1, H = g.s2, W = g.s3, OH = g.s4, OW = g.s5;
    int KH = g.s6, KW = g.s7, SH = g.s8, SW = g.s9, DH = g.sa, DW = g.sb;
    int PBH = g.sc, PBW = g.sd;
    int D = dg.s0, OD = dg.s1, KD = dg.s2, SD = dg.s3, DD = dg.s4, PBD = dg.s5;
    int i = (int)get_global_id(0);
    if (i >= N * C * OD * OH * OW) {
        return;
    }
    int ow = i % OW;
    int t = i / OW;
    int oh = t % OH;
    t /= OH;
    int od = t % OD;
    int nc = t / OD;
    float best = -INFINITY;
    long at = -1;
    for (int kd = 0; kd < KD; kd++) {
        int id = od * SD - PBD + kd * DD;
        if (id < 0 || id >= D) {
            continue;
        }
        global const float *xp = x + (nc * D + id) * H * W;
        for (int kh = 0; kh < KH; kh++) {
            int ih = oh * SH - PBH + kh * DH;
            if (ih < 0 || ih >= H) {
                continue;
            }
            for (int kw = 0; kw < KW; kw++) {
                int iw = ow * SW - PBW + kw * DW;
                if (iw < 0 || iw >= W) {
                    continue;
                }
                float v = xp[ih * W + iw];
                if (at < 0 || (v > best && !isnan(best)) || (isnan(v) && !isnan(best))) {
                    best = v;
                    at = ((long)nc * D + id) * H * W + (column_major ? ih + iw * H : ih * W + iw);
                }
            }
        }
    }
    y[i] = best;
    ind[i] = at;
}
