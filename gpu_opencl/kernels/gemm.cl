/* Batched strided matrix products, the core of matmul, gemm,
 * fully_connected and the im2col convolution:
 *   Y[b](m, n) = alpha * sum_k A[b](m, k) * B[b](k, n) + beta * C[b](m, n)
 * with A[b](m, k) = A[off_a + m*a_sm + k*a_sk], B[b](k, n) = B[off_b +
 * k*b_sk + n*b_sn], C[b](m, n) = C[off_c + m*c_sm + n*c_sn] (strides 0 for
 * broadcast; only when has_c) and Y[b](m, n) = Y[off_y + m*y_sm + n]. The
 * four offsets of batch b are boff[4b .. 4b+3]. */

#define OCL_GEMM_ARGS                                                                          \
    global const float *A, global const float *B, global const float *C, global float *Y,    \
        global const int *boff, int M, int N, int K, int a_sm, int a_sk, int b_sk, int b_sn,  \
        int c_sm, int c_sn, int y_sm, float alpha, float beta, int has_c

/* One work-item per output element (any work-group size). */
kernel void gemm_naive(OCL_GEMM_ARGS) {
    int n = (int)get_global_id(0), m = (int)get_global_id(1), b = (int)get_global_id(2);
    if (n >= N || m >= M) {
        return;
    }
    global const int *o = boff + 4 * b;
    global const float *a = A + o[0] + m * a_sm;
    global const float *bb = B + o[1] + n * b_sn;
    float acc = 0.0f;
    for (int k = 0; k < K; k++) {
        acc += a[k * a_sk] * bb[k * b_sk];
    }
    float v = alpha * acc;
    if (has_c) {
        v += beta * C[o[2] + m * c_sm + n * c_sn];
    }
    Y[o[3] + m * y_sm + n] = v;
}

/* Tiled: a 16x16 work-group computes a 64x64 block of Y, 4x4 elements per
 * work-item, over chunks of 16 along K staged in local memory. Global size
 * (ceil(N/64)*16, ceil(M/64)*16, batches), local (16, 16, 1). */
#define OCL_GT 64 /* block side */
#define OCL_GK 16 /* K chunk */
kernel __attribute__((reqd_work_group_size(16, 16, 1))) void gemm_tiled(OCL_GEMM_ARGS) {
    local float As[OCL_GK][OCL_GT];
    local float Bs[OCL_GK][OCL_GT];
    int tx = (int)get_local_id(0), ty = (int)get_local_id(1);
    int n0 = (int)get_group_id(0) * OCL_GT, m0 = (int)get_group_id(1) * OCL_GT;
    int b = (int)get_global_id(2);
    global const int *o = boff + 4 * b;
    global const float *a = A + o[0];
    global const float *bb = B + o[1];
    int t = ty * 16 + tx;
    float acc[4][4];
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 4; j++) {
            acc[i][j] = 0.0f;
        }
    }
    for (int k0 = 0; k0 < K; k0 += OCL_GK) {
        for (int e = 0; e < 4; e++) {
            int idx = t + 256 * e;
            /* A: consecutive work-items along k */
            int kk = idx % OCL_GK, mm = idx / OCL_GK;
            int gm = m0 + mm, gk = k0 + kk;
            As[kk][mm] = (gm < M && gk < K) ? a[gm * a_sm + gk * a_sk] : 0.0f;
            /* B: consecutive work-items along n */
            int nn = idx % OCL_GT, kb = idx / OCL_GT;
            int gn = n0 + nn, gkb = k0 + kb;
            Bs[kb][nn] = (gn < N && gkb < K) ? bb[gkb * b_sk + gn * b_sn] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < OCL_GK; kk++) {
            float av[4], bv[4];
            for (int i = 0; i < 4; i++) {
                av[i] = As[kk][ty + 16 * i];
                bv[i] = Bs[kk][tx + 16 * i];
            }
            for (int i = 0; i < 4; i++) {
                for (int j = 0; j < 4; j++) {
                    acc[i][j] += av[i] * bv[j];
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < 4; i++) {
        int m = m0 + ty + 16 * i;
        if (m >= M) {
            continue;
        }
        for (int j = 0; j < 4; j++) {
            int n = n0 + tx + 16 * j;
            if (n >= N) {
                continue;
            }
            float v = alpha * acc[i][j];
            if (has_c) {
                v += beta * C[o[2] + m * c_sm + n * c_sn];
            }
            Y[o[3] + m * y_sm + n] = v;
        }
    }
}
