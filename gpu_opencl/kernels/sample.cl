/* Sampling and rearranging: grid_sample (float32, r >= 1 spatial dims),
 * reverse_sequence. */

/* Mirrors x at lo and hi until it lies in [lo, hi], by the nearer border
 * first (as cpu_ref's kernels/kernels_grid_sample.c, which works in
 * double: float32 here); an empty range gives lo. x is finite. */
float ocl_gs_reflect(float x, float lo, float hi) {
    float range = hi - lo;
    if (!(range > 0.0f)) {
        return lo;
    }
    if (x >= lo && x <= hi) {
        return x;
    }
    float dx = x < lo ? lo - x : x - hi;
    float crossed = floor(dx / range);
    float rest = dx - crossed * range;
    bool even = fmod(crossed, 2.0f) == 0.0f;
    if (x < lo) {
        return even ? lo + rest : hi - rest;
    }
    return even ? hi - rest : lo + rest;
}

/* Input index i along a dim of size n as the padding mode (0 zeros, 1
 * border, 2 reflection) reads it: -1 for a 0, else in [0, n - 1]. */
int ocl_gs_index(int padding, int i, int n, float lo, float hi) {
    if (i >= 0 && i < n) {
        return i;
    }
    if (padding == 1) {
        return i < 0 ? 0 : n - 1;
    }
    if (padding == 2) {
        int j = (int)ocl_gs_reflect((float)i, lo, hi);
        return j < 0 ? 0 : j > n - 1 ? n - 1 : j;
    }
    return -1;
}

/* The taps of normalised coordinate v along a dim of size n: their count
 * (1 nearest, 2 linear, 4 cubic), indices (-1: reads 0) and weights; 0
 * when the point's value is NaN. mode: 0 linear, 1 nearest, 2 cubic. */
int ocl_gs_taps(int mode, int padding, int align, float v, int n, int *idx, float *w) {
#pragma OPENCL FP_CONTRACT OFF
    if (isnan(v)) {
        return 0;
    }
    float fn = (float)n;
    float x = align ? (v + 1.0f) / 2.0f * (fn - 1.0f) : ((v + 1.0f) * fn - 1.0f) / 2.0f;
    if (isnan(x)) {
        return 0;
    }
    if (mode == 1) {
        x = rint(x); /* halves to even */
    }
    float lo = align ? 0.0f : -0.5f;
    float hi = align ? fn - 1.0f : fn - 0.5f;
    if (x < lo || x > hi) {
        if (padding == 1) {
            x = x < 0.0f ? 0.0f : x > fn - 1.0f ? fn - 1.0f : x;
        } else if (padding == 2) {
            x = isinf(x) ? (x < 0.0f ? lo : hi) : ocl_gs_reflect(x, lo, hi);
        } else {
            x = x < -8.0f ? -8.0f : x > fn + 8.0f ? fn + 8.0f : x;
        }
    }
    float f = floor(x);
    int i0 = (int)f;
    float t = x - f;
    if (mode == 1) {
        w[0] = 1.0f;
        idx[0] = ocl_gs_index(padding, (int)x, n, lo, hi);
        return 1;
    }
    if (mode == 0) {
        w[0] = 1.0f - t;
        w[1] = t;
        idx[0] = ocl_gs_index(padding, i0, n, lo, hi);
        idx[1] = ocl_gs_index(padding, i0 + 1, n, lo, hi);
        return 2;
    }
    const float a = -0.75f;
    float t1 = t + 1.0f, u = 1.0f - t, u1 = 2.0f - t;
    w[0] = ((a * t1 - 5.0f * a) * t1 + 8.0f * a) * t1 - 4.0f * a;
    w[1] = ((a + 2.0f) * t - (a + 3.0f)) * t * t + 1.0f;
    w[2] = ((a + 2.0f) * u - (a + 3.0f)) * u * u + 1.0f;
    w[3] = ((a * u1 - 5.0f * a) * u1 + 8.0f * a) * u1 - 4.0f * a;
    for (int j = 0; j < 4; j++) {
        idx[j] = ocl_gs_index(padding, i0 - 1 + j, n, lo, hi);
    }
    return 4;
}

/* One work-item per element of Y [N, C, points]: the point's taps along
 * each of the r spatial dims (grid's last dim is reversed against X's
 * dims), then the sum over every combination of one tap per dim of the
 * product of their weights times X there (combinations in row-major
 * order, as cpu_ref sums them). */
kernel void grid_sample_f32(global const float *x, global const float *grid, global float *y,
                            int total, int C, int r, int8 in_dims, int points, int mode,
                            int padding, int align) {
    int i = (int)get_global_id(0);
    if (i >= total) {
        return;
    }
    int p = i % points;
    int t = i / points;
    int nb = t / C;
    int dims[8], stride[8], cnt[8], idx[8][4], at[8];
    float w[8][4];
    vstore8(in_dims, 0, dims);
    int plane = 1;
    for (int k = r - 1; k >= 0; --k) {
        stride[k] = plane;
        plane *= dims[k];
    }
    global const float *g = grid + (nb * points + p) * r;
    for (int k = 0; k < r; k++) {
        cnt[k] = ocl_gs_taps(mode, padding, align, g[r - 1 - k], dims[k], idx[k], w[k]);
        if (cnt[k] == 0) {
            y[i] = NAN;
            return;
        }
        at[k] = 0;
    }
    global const float *xp = x + t * plane;
    float sum = 0.0f;
    for (;;) {
        float wq = 1.0f;
        int off = 0;
        bool zero = false;
        for (int k = 0; k < r; k++) {
            int o = idx[k][at[k]];
            zero = zero || o < 0;
            off += o * stride[k];
            wq *= w[k][at[k]];
        }
        if (!zero) {
            sum += wq * xp[off];
        }
        int k = r - 1;
        while (k >= 0 && ++at[k] == cnt[k]) {
            at[k] = 0;
            --k;
        }
        if (k < 0) {
            break;
        }
    }
    y[i] = sum;
}
