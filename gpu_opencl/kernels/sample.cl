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

/* Reverse_sequence: X viewed as [d0, d1, inner] with batch and time axes
 * 0 and 1 (either way round); lens (int32 or int64) per batch entry, each
 * in [0, T] (one out of range is flagged in *err, as an index). */
#define OCL_REVERSE_SEQUENCE(T_, S)                                                            \
    kernel void reverse_sequence_##S(global const T_ *x, global const uchar *lens, int is64,  \
                                     global T_ *y, int n, int d1, int inner, int batch_axis,   \
                                     int steps, global int *err) {                             \
        int i = (int)get_global_id(0);                                                         \
        if (i >= n) {                                                                          \
            return;                                                                            \
        }                                                                                      \
        int r = i % inner;                                                                     \
        int q = i / inner;                                                                     \
        int i1 = q % d1, i0 = q / d1;                                                          \
        int b = batch_axis == 0 ? i0 : i1, t = batch_axis == 0 ? i1 : i0;                      \
        long len = ocl_index_at(lens, is64, b);                                                \
        if (len < 0 || len > steps) {                                                          \
            atomic_min(err, b);                                                                \
            return;                                                                            \
        }                                                                                      \
        int src = t < len ? (int)len - 1 - t : t;                                              \
        int s0 = batch_axis == 0 ? i0 : src, s1 = batch_axis == 0 ? src : i1;                  \
        y[i] = x[(s0 * d1 + s1) * inner + r];                                                  \
    }

/* Max_unpool, pass 2 of 3 (after winner[] = -1): each element e of X
 * marks the position of Y its index names (coordinates in the pool's
 * input S of dims full, kept when inside Y's dims out), the latest e
 * winning; an index outside S is flagged. Pass 3 (max_unpool_write_*)
 * copies the winners. */
kernel void max_unpool_mark(global const long *ind, global int *winner, int n, int rank,
                            int8 full_dims, int8 out_dims, long full_count, global int *err) {
    int e = (int)get_global_id(0);
    if (e >= n) {
        return;
    }
    long at = ind[e];
    if (at < 0 || at >= full_count) {
        atomic_min(err, e);
        return;
    }
    int fd[8], od[8];
    vstore8(full_dims, 0, fd);
    vstore8(out_dims, 0, od);
    long rest = at;
    int off = 0, unit = 1;
    bool inside = true;
    for (int k = rank - 1; k >= 0; --k) {
        int c = (int)(rest % fd[k]);
        rest /= fd[k];
        inside = inside && c < od[k];
        off += c * unit;
        unit *= od[k];
    }
    if (inside) {
        atomic_max(winner + off, e);
    }
}

kernel void fill_i32(global int *p, int n, int v) {
    int i = (int)get_global_id(0);
    if (i < n) {
        p[i] = v;
    }
}

#define OCL_MAX_UNPOOL_WRITE(T_, S)                                                            \
    kernel void max_unpool_write_##S(global const T_ *x, global const int *winner,            \
                                     global T_ *y, int n) {                                    \
        int i = (int)get_global_id(0);                                                         \
        if (i < n) {                                                                           \
            int w = winner[i];                                                                 \
            y[i] = w >= 0 ? x[w] : (T_)0;                                                      \
        }                                                                                      \
    }

#define OCL_SAMPLE_KERNELS(T_, S)                                                              \
    OCL_REVERSE_SEQUENCE(T_, S)                                                                \
    OCL_MAX_UNPOOL_WRITE(T_, S)

OCL_SAMPLE_KERNELS(uchar, u8)
OCL_SAMPLE_KERNELS(ushort, u16)
OCL_SAMPLE_KERNELS(uint, u32)
OCL_SAMPLE_KERNELS(ulong, u64)

/* Col2im (float32): one work-item per pixel of Y [N * C, image...], the
 * sum, over the block offsets b in order, of the one column (if any)
 * whose window puts offset b on the pixel: cpu_ref's order of additions
 * for that pixel. */
kernel void col2im_f32(global const float *x, global float *y, int total, int r, int plane,
                       int block, int blocks, int8 image, int8 kdims, int8 strides, int8 dils,
                       int8 pads, int8 nblk) {
    int i = (int)get_global_id(0);
    if (i >= total) {
        return;
    }
    int im[8], kd[8], st[8], dl[8], pb[8], nb[8], p[8];
    vstore8(image, 0, im);
    vstore8(kdims, 0, kd);
    vstore8(strides, 0, st);
    vstore8(dils, 0, dl);
    vstore8(pads, 0, pb);
    vstore8(nblk, 0, nb);
    int nc = i / plane, pix = i - nc * plane;
    for (int d = r - 1; d >= 0; --d) {
        p[d] = pix % im[d];
        pix /= im[d];
    }
    global const float *xp = x + nc * block * blocks;
    float sum = 0.0f;
    for (int b = 0; b < block; b++) {
        int rest = b, k = 0, unit = 1;
        bool hit = true;
        for (int d = r - 1; d >= 0 && hit; --d) {
            int o = rest % kd[d];
            rest /= kd[d];
            int q = p[d] - (o * dl[d] - pb[d]);
            hit = q >= 0 && q % st[d] == 0 && q / st[d] < nb[d];
            k += (hit ? q / st[d] : 0) * unit;
            unit *= nb[d];
        }
        if (hit) {
            sum += xp[b * blocks + k];
        }
    }
    y[i] = sum;
}

/* Det (float32): one work-item per M x M matrix, factorised in scratch a
 * by LU with partial pivoting as cpu_ref does (which works in double):
 * the product of the pivots, negated per row swap; 0 when singular. */
kernel void det_f32(global const float *x, global float *a, global float *y, int count, int m) {
    int b = (int)get_global_id(0);
    if (b >= count) {
        return;
    }
    int mm = m * m;
    global float *s = a + b * mm;
    for (int i = 0; i < mm; i++) {
        s[i] = x[b * mm + i];
    }
    float det = 1.0f;
    for (int k = 0; k < m; k++) {
        int p = k;
        for (int i = k + 1; i < m; i++) {
            if (fabs(s[i * m + k]) > fabs(s[p * m + k])) {
                p = i;
            }
        }
        if (s[p * m + k] == 0.0f) {
            det = 0.0f;
            break;
        }
        if (p != k) {
            for (int j = 0; j < m; j++) {
                float t = s[k * m + j];
                s[k * m + j] = s[p * m + j];
                s[p * m + j] = t;
            }
            det = -det;
        }
        float pivot = s[k * m + k];
        det *= pivot;
        for (int i = k + 1; i < m; i++) {
            float f = s[i * m + k] / pivot;
            for (int j = k + 1; j < m; j++) {
                s[i * m + j] -= f * s[k * m + j];
            }
        }
    }
    y[b] = det;
}

/* RoiAlign (float32): one work-item per element of Y [R, C, oh, ow]. The
 * roi's batch index out of [0, N) is flagged as an index (element k of
 * batch_indices); a roi that is not finite, or whose grid has more than
 * 2^24 points per bin, as OCL_CHECK_OTHER + k. In float32 where cpu_ref
 * computes coordinates and sums in double. */
float ocl_ra_sample(global const float *p, int h, int w, float y, float x, int is_max) {
    if (y < -1.0f || y > (float)h || x < -1.0f || x > (float)w) {
        return 0.0f;
    }
    y = y < 0.0f ? 0.0f : y;
    x = x < 0.0f ? 0.0f : x;
    int y0 = (int)y, x0 = (int)x, y1, x1;
    if (y0 >= h - 1) {
        y1 = y0 = h - 1;
        y = (float)y0;
    } else {
        y1 = y0 + 1;
    }
    if (x0 >= w - 1) {
        x1 = x0 = w - 1;
        x = (float)x0;
    } else {
        x1 = x0 + 1;
    }
    float ly = y - (float)y0, lx = x - (float)x0, hy = 1.0f - ly, hx = 1.0f - lx;
    float v1 = hy * hx * p[y0 * w + x0], v2 = hy * lx * p[y0 * w + x1];
    float v3 = ly * hx * p[y1 * w + x0], v4 = ly * lx * p[y1 * w + x1];
    if (!is_max) {
        return v1 + v2 + v3 + v4;
    }
    float m = v1 > v2 ? v1 : v2;
    m = m > v3 ? m : v3;
    return m > v4 ? m : v4;
}

/* The grid of one dim: ratio, or ceil(size / bins); -1 past 2^24. */
int ocl_ra_grid(int ratio, float size, int bins) {
    if (ratio > 0) {
        return ratio <= (1 << 24) ? ratio : -1;
    }
    float g = ceil(size / (float)bins);
    if (!(g <= (float)(1 << 24))) {
        return -1;
    }
    return g < 0.0f ? 0 : (int)g;
}

kernel void roi_align_f32(global const float *x, global const float *rois,
                          global const uchar *bidx, int is64, global float *y, int total, int N,
                          int C, int H, int W, int oh, int ow, int ratio, float scale,
                          int half_pixel, int is_max, global int *err) {
    int i = (int)get_global_id(0);
    if (i >= total) {
        return;
    }
    int pw = i % ow;
    int t = i / ow;
    int ph = t % oh;
    t /= oh;
    int ch = t % C;
    int k = t / C;
    long b = ocl_index_at(bidx, is64, k);
    if (b < 0 || b >= N) {
        atomic_min(err, k);
        return;
    }
    global const float *q = rois + k * 4;
    float offset = half_pixel ? 0.5f : 0.0f;
    float hgt0 = (q[3] - q[1]) * scale, wid0 = (q[2] - q[0]) * scale;
    if (!isfinite(q[0]) || !isfinite(q[1]) || !isfinite(q[2]) || !isfinite(q[3]) ||
        !isfinite(hgt0) || !isfinite(wid0)) {
        atomic_min(err, (1 << 30) + k);
        return;
    }
    float start_w = q[0] * scale - offset, start_h = q[1] * scale - offset;
    float wid = q[2] * scale - offset - start_w, hgt = q[3] * scale - offset - start_h;
    if (!half_pixel) {
        hgt = hgt > 1.0f ? hgt : 1.0f;
        wid = wid > 1.0f ? wid : 1.0f;
    }
    int gh = ocl_ra_grid(ratio, hgt, oh), gw = ocl_ra_grid(ratio, wid, ow);
    if (gh < 0 || gw < 0 || (gh > 0 && gw > (1 << 24) / gh)) {
        atomic_min(err, (1 << 30) + k);
        return;
    }
    float bin_h = hgt / (float)oh, bin_w = wid / (float)ow;
    int pts = gh > 0 && gw > 0 ? gh * gw : 0;
    float count = pts > 1 ? (float)pts : 1.0f;
    global const float *plane = x + ((int)b * C + ch) * H * W;
    float acc = 0.0f;
    bool first = true;
    for (int iy = 0; iy < gh; iy++) {
        float yy = start_h + (float)ph * bin_h + ((float)iy + 0.5f) * bin_h / (float)gh;
        for (int ix = 0; ix < gw; ix++) {
            float xx = start_w + (float)pw * bin_w + ((float)ix + 0.5f) * bin_w / (float)gw;
            float v = ocl_ra_sample(plane, H, W, yy, xx, is_max);
            if (!is_max) {
                acc += v;
            } else if (first || v > acc) {
                acc = v;
            }
            first = false;
        }
    }
    y[i] = is_max ? acc : acc / count;
}

/* DFT and STFT (float32), as a direct sum: one work-item per output bin
 * k of one line, sum over j < take of x[j] (times window[j]) times
 * exp(-+2 pi i j k / L), the angle reduced to (j k mod L) / L and taken
 * with sinpi/cospi (so quarter turns are exact); O(L) per bin, in float32
 * where cpu_ref runs an FFT in double. Line o (of `frames` per batch
 * entry b = o / frames, frame f = o % frames) starts at b * a_stride + f *
 * f_stride + inner position * comp, its elements j_stride apart. */
kernel void dft_f32(global const float *x, global const float *win, global float *y, int total,
                    int out, int inner, int frames, int a_stride, int f_stride, int j_stride,
                    int comp, int L, int take, int inverse, int has_win) {
    int i = (int)get_global_id(0);
    if (i >= total) {
        return;
    }
    int in = i % inner;
    int t = i / inner;
    int k = t % out;
    int o = t / out;
    int f = o % frames, b = o / frames;
    int base = b * a_stride + f * f_stride + in * comp;
    float sr = 0.0f, si = 0.0f;
    for (int j = 0; j < take; j++) {
        float xr = x[base + j * j_stride];
        float xi = comp == 2 ? x[base + j * j_stride + 1] : 0.0f;
        if (has_win) {
            float w = win[j];
            xr *= w;
            xi *= w;
        }
        int m = (int)(((long)j * k) % L);
        float ang = 2.0f * (float)m / (float)L;
        float c = cospi(ang), s = sinpi(ang);
        if (inverse) {
            sr += xr * c - xi * s;
            si += xi * c + xr * s;
        } else {
            sr += xr * c + xi * s;
            si += xi * c - xr * s;
        }
    }
    if (inverse) {
        sr /= (float)L;
        si /= (float)L;
    }
    y[2 * i] = sr;
    y[2 * i + 1] = si;
}
