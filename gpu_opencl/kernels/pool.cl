/* Max and average pooling, one work-item per output element. Geometry in
 * an int16: s0 N, s1 C, s2 H, s3 W, s4 OH, s5 OW, s6 KH, s7 KW, s8 SH,
 * s9 SW, sa DH, sb DW, sc/sd pads before (H, W), se/sf pads after.
 * Average divides by the taps inside the input, or inside input and
 * padding with count_include_pad (taps past the padding never count); a
 * window with nothing to average gives NaN; a max over nothing gives -inf;
 * a NaN wins a max. */
kernel void pool2d_f32(global const float *x, global float *y, int16 g, int is_max,
                       int count_include_pad) {
    int N = g.s0, C = g.s1, H = g.s2, W = g.s3, OH = g.s4, OW = g.s5;
    int KH = g.s6, KW = g.s7, SH = g.s8, SW = g.s9, DH = g.sa, DW = g.sb;
    int PBH = g.sc, PBW = g.sd, PEH = g.se, PEW = g.sf;
    int i = (int)get_global_id(0);
    if (i >= N * C * OH * OW) {
        return;
    }
    int ow = i % OW;
    int t = i / OW;
    int oh = t % OH;
    int nc = t / OH;
    global const float *xp = x + nc * H * W;
    float best = -INFINITY, sum = 0.0f;
    int count = 0;
    for (int kh = 0; kh < KH; kh++) {
        int ih = oh * SH - PBH + kh * DH;
        bool h_in = ih >= 0 && ih < H;
        bool h_pad = ih >= -PBH && ih < H + PEH;
        for (int kw = 0; kw < KW; kw++) {
            int iw = ow * SW - PBW + kw * DW;
            bool w_in = iw >= 0 && iw < W;
            bool w_pad = iw >= -PBW && iw < W + PEW;
            if (h_in && w_in) {
                float v = xp[ih * W + iw];
                if (is_max) {
                    best = v > best || isnan(v) ? v : best;
                } else {
                    sum += v;
                }
                count++;
            } else if (count_include_pad && h_pad && w_pad) {
                count++;
            }
        }
    }
    y[i] = is_max ? best : (count ? sum / (float)count : NAN);
}
