/* Data movement: strided gathers and scatters (transpose, slice, expand,
 * split, concat, depth/space), tile, pad, gather. One kernel per element
 * size: u8, u16, u32, u64 (the bytes are moved, whatever the dtype). */

/* y[i] = x[base + offset of i over dims with strides xs] */
#define OCL_COPY_STRIDED(T, S)                                                                 \
    kernel void copy_strided_##S(global const T *x, global T *y, int n, int rank, int8 dims,  \
                                 int8 xs, int base) {                                         \
        int i = (int)get_global_id(0);                                                         \
        if (i >= n) {                                                                          \
            return;                                                                            \
        }                                                                                      \
        int d[8], s[8];                                                                        \
        vstore8(dims, 0, d);                                                                   \
        vstore8(xs, 0, s);                                                                     \
        y[i] = x[base + ocl_offset(i, rank, d, s)];                                            \
    }

/* y[base + offset of i over dims with strides ys] = x[i] */
#define OCL_SCATTER_STRIDED(T, S)                                                              \
    kernel void scatter_strided_##S(global const T *x, global T *y, int n, int rank, int8 dims, \
                                    int8 ys, int base) {                                      \
        int i = (int)get_global_id(0);                                                         \
        if (i >= n) {                                                                          \
            return;                                                                            \
        }                                                                                      \
        int d[8], s[8];                                                                        \
        vstore8(dims, 0, d);                                                                   \
        vstore8(ys, 0, s);                                                                     \
        y[base + ocl_offset(i, rank, d, s)] = x[i];                                            \
    }

/* Tile: the input coordinate is the output's modulo X's dim. */
#define OCL_TILE(T, S)                                                                         \
    kernel void tile_##S(global const T *x, global T *y, int n, int rank, int8 ydims,          \
                         int8 xdims, int8 xs) {                                                \
        int i = (int)get_global_id(0);                                                         \
        if (i >= n) {                                                                          \
            return;                                                                            \
        }                                                                                      \
        int yd[8], xd[8], s[8], off = 0, j = i;                                                \
        vstore8(ydims, 0, yd);                                                                 \
        vstore8(xdims, 0, xd);                                                                 \
        vstore8(xs, 0, s);                                                                     \
        for (int k = rank - 1; k >= 0; --k) {                                                  \
            int q = j / yd[k];                                                                 \
            off += ((j - q * yd[k]) % xd[k]) * s[k];                                           \
            j = q;                                                                             \
        }                                                                                      \
        y[i] = x[off];                                                                         \
    }

/* Pad: mode 0 constant (value), 1 reflect (numpy "reflect", as often as
 * needed), 2 edge. pb: pads_begin (negative crops). */
int ocl_pad_source(int mode, int c, int n) {
    if (c >= 0 && c < n) {
        return c;
    }
    if (mode == 0) {
        return -1;
    }
    if (mode == 2 || n == 1) {
        return c < 0 ? 0 : n - 1;
    }
    int period = 2 * (n - 1);
    int m = c % period;
    m = m < 0 ? m + period : m;
    return m < n ? m : period - m;
}

#define OCL_PAD(T, S)                                                                          \
    kernel void pad_##S(global const T *x, global T *y, int n, int rank, int8 ydims,           \
                        int8 xdims, int8 xs, int8 pads_begin, int mode, T value) {             \
        int i = (int)get_global_id(0);                                                         \
        if (i >= n) {                                                                          \
            return;                                                                            \
        }                                                                                      \
        int yd[8], xd[8], s[8], pb[8], off = 0, j = i;                                         \
        vstore8(ydims, 0, yd);                                                                 \
        vstore8(xdims, 0, xd);                                                                 \
        vstore8(xs, 0, s);                                                                     \
        vstore8(pads_begin, 0, pb);                                                            \
        for (int k = rank - 1; k >= 0; --k) {                                                  \
            int q = j / yd[k];                                                                 \
            int c = ocl_pad_source(mode, (j - q * yd[k]) - pb[k], xd[k]);                      \
            if (c < 0) {                                                                       \
                y[i] = value;                                                                  \
                return;                                                                        \
            }                                                                                  \
            off += c * s[k];                                                                   \
            j = q;                                                                             \
        }                                                                                      \
        y[i] = x[off];                                                                         \
    }

/* Gather along an axis: X viewed as [outer, dim, row], indices (already
 * normalised to [0, dim) by the host) of ni entries; Y is [outer, ni, row]. */
#define OCL_GATHER(T, S)                                                                       \
    kernel void gather_##S(global const T *x, global const int *idx, global T *y, int n,      \
                           int ni, int row, int dim) {                                         \
        int i = (int)get_global_id(0);                                                         \
        if (i >= n) {                                                                          \
            return;                                                                            \
        }                                                                                      \
        int r = i % row;                                                                       \
        int t = i / row;                                                                       \
        int j = t % ni;                                                                        \
        int o = t / ni;                                                                        \
        y[i] = x[(o * dim + idx[j]) * row + r];                                                \
    }

#define OCL_DATA_KERNELS(T, S)                                                                 \
    OCL_COPY_STRIDED(T, S)                                                                     \
    OCL_SCATTER_STRIDED(T, S)                                                                  \
    OCL_TILE(T, S)                                                                             \
    OCL_PAD(T, S)                                                                              \
    OCL_GATHER(T, S)

OCL_DATA_KERNELS(uchar, u8)
OCL_DATA_KERNELS(ushort, u16)
OCL_DATA_KERNELS(uint, u32)
OCL_DATA_KERNELS(ulong, u64)
