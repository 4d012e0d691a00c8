/* Resize of the last two dims of NCHW float32. The host computes the
 * source coordinates exactly as the reference does (in double) into
 * tables: nearest: idx[0..OH-1] rows, idx[OH..OH+OW-1] columns; linear:
 * idx holds h0[OH], h1[OH], w0[OW], w1[OW] and wt the weights rh[OH],
 * rw[OW] of the second tap. */
kernel void resize_nearest_f32(global const float *x, global float *y, global const int *idx,
                               int nc, int IH, int IW, int OH, int OW) {
    int i = (int)get_global_id(0);
    if (i >= nc * OH * OW) {
        return;
    }
    int ow = i % OW;
    int t = i / OW;
    int oh = t % OH;
    int p = t / OH;
    y[i] = x[(p * IH + idx[oh]) * IW + idx[OH + ow]];
}

kernel void resize_linear_f32(global const float *x, global float *y, global const int *idx,
                              global const float *wt, int nc, int IH, int IW, int OH, int OW) {
    int i = (int)get_global_id(0);
    if (i >= nc * OH * OW) {
        return;
    }
    int ow = i % OW;
    int t = i / OW;
    int oh = t % OH;
    int p = t / OH;
    global const float *src = x + p * IH * IW;
    int h0 = idx[oh], h1 = idx[OH + oh], w0 = idx[2 * OH + ow], w1 = idx[2 * OH + OW + ow];
    float rh = wt[oh], rw = wt[OH + ow];
    float top = (1.0f - rw) * src[h0 * IW + w0] + rw * src[h0 * IW + w1];
    float bot = (1.0f - rw) * src[h1 * IW + w0] + rw * src[h1 * IW + w1];
    y[i] = (1.0f - rh) * top + rh * bot;
}
