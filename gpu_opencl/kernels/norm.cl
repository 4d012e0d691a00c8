/* Normalisations and softmax. The per-row kernels run one work-group per
 * row (ocl_wg_reduce of reduce.cl); statistics are two-pass (mean, then
 * the mean of squared deviations). They never return before a barrier
 * (PoCL, at least, miscompiles that even when the whole work-group
 * returns): a group past the rows works on an empty row instead. */

/* Y = (X - mean) / sqrt(var + eps) * scale + bias over channel axis 1;
 * X as [n, C, inner]. */
kernel void batch_norm_f32(global const float *x, global const float *scale,
                           global const float *bias, global const float *mean,
                           global const float *var, global float *y, int n, int C, int inner,
                           float eps) {
    int i = (int)get_global_id(0);
    if (i >= n) {
        return;
    }
    int ch = (i / inner) % C;
    y[i] = (x[i] - mean[ch]) / sqrt(var[ch] + eps) * scale[ch] + bias[ch];
}

/* Mean and (biased) variance of len elements at xb, stride 1. */
float2 ocl_row_stats(global const float *xb, int len, local float *s) {
    int lid = (int)get_local_id(0), wg = (int)get_local_size(0);
    float acc = 0.0f;
    for (int i = lid; i < len; i += wg) {
        acc += xb[i];
    }
    float mean = ocl_wg_reduce(s, 0, acc) / (float)len;
    acc = 0.0f;
    for (int i = lid; i < len; i += wg) {
        float d = xb[i] - mean;
        acc += d * d;
    }
    float var = ocl_wg_reduce(s, 0, acc) / (float)len;
    return (float2)(mean, var);
}

/* Layer norm over the last dims: row o of inner elements; scale and bias
 * read with broadcast strides over X's dims (xdims, rank). */
kernel void layer_norm_f32(global const float *x, global const float *scale,
                           global const float *bias, global float *y, int has_bias, int outer,
                           int inner, int rank, int8 xdims, int8 sst, int8 bst, float eps,
                           local float *scratch) {
    int o = (int)get_group_id(0);
    int len = o < outer ? inner : 0; /* every work-item reaches the barriers */
    int lid = (int)get_local_id(0), wg = (int)get_local_size(0);
    global const float *xb = x + (o < outer ? o * inner : 0);
    float2 st = ocl_row_stats(xb, len, scratch);
    float inv = 1.0f / sqrt(st.y + eps);
    int d[8], s0[8], s1[8];
    vstore8(xdims, 0, d);
    vstore8(sst, 0, s0);
    vstore8(bst, 0, s1);
    for (int i = lid; i < len; i += wg) {
        int so, bo;
        ocl_offset2(o * inner + i, rank, d, s0, s1, &so, &bo);
        float v = (xb[i] - st.x) * inv * scale[so];
        y[o * inner + i] = has_bias ? v + bias[bo] : v;
    }
}

/* Instance norm: plane p = n*C + c of inner elements. */
kernel void instance_norm_f32(global const float *x, global const float *scale,
                              global const float *bias, global float *y, int planes, int C,
                              int inner, float eps, local float *scratch) {
    int p = (int)get_group_id(0);
    int len = p < planes ? inner : 0; /* every work-item reaches the barriers */
    int lid = (int)get_local_id(0), wg = (int)get_local_size(0);
    global const float *xb = x + (p < planes ? p * inner : 0);
    float2 st = ocl_row_stats(xb, len, scratch);
    int ch = p % C;
    float k = scale[ch] / sqrt(st.y + eps);
    for (int i = lid; i < len; i += wg) {
        y[p * inner + i] = (xb[i] - st.x) * k + bias[ch];
    }
}

/* Softmax (or log-softmax) of line g = o*inner + in of X as [outer, len,
 * inner]: the maximum subtracted first (a NaN wins it). */
kernel void softmax_f32(global const float *x, global float *y, int lines, int len, int inner,
                        int log_form, local float *scratch) {
    int g = (int)get_group_id(0);
    if (g >= lines) {
        len = 0; /* no early return: every work-item reaches the barriers */
    }
    int lid = (int)get_local_id(0), wg = (int)get_local_size(0);
    int o = g / inner, in = g % inner;
    int base = o * len * inner + in;
    float mx = -INFINITY;
    for (int i = lid; i < len; i += wg) {
        float v = x[base + i * inner];
        mx = v > mx || isnan(v) ? v : mx;
    }
    mx = ocl_wg_reduce(scratch, 1, mx);
    float acc = 0.0f;
    for (int i = lid; i < len; i += wg) {
        acc += exp(x[base + i * inner] - mx);
    }
    float sum = ocl_wg_reduce(scratch, 0, acc);
    float log_sum = log(sum);
    for (int i = lid; i < len; i += wg) {
        float shifted = x[base + i * inner] - mx;
        y[base + i * inner] = log_form ? shifted - log_sum : exp(shifted) / sum;
    }
}
