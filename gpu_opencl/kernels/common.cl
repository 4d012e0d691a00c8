/* gpu_opencl kernels, part 1 of the program: helpers shared by the other
 * files (the .cl files are concatenated in a fixed order into one program,
 * built with -cl-std=CL1.2).
 *
 * Conventions: every tensor is dense and row-major; element counts and
 * offsets fit in int (the host refuses larger tensors); global sizes are
 * rounded up, so every kernel bound-checks its global id. Shapes of rank up
 * to 8 travel as int8 values (dims, element strides, 0 along broadcast
 * dims), collapsed by the host where it can. */

/* The offset of dense element i of a tensor of dims d[0..rank-1] in a
 * tensor read with element strides s. */
int ocl_offset(int i, int rank, const int *d, const int *s) {
    int off = 0;
    for (int k = rank - 1; k >= 0; --k) {
        int q = i / d[k];
        off += (i - q * d[k]) * s[k];
        i = q;
    }
    return off;
}

/* Two strided reads at once (binary operators). */
void ocl_offset2(int i, int rank, const int *d, const int *s0, const int *s1, int *o0, int *o1) {
    int a = 0, b = 0;
    for (int k = rank - 1; k >= 0; --k) {
        int q = i / d[k];
        int r = i - q * d[k];
        a += r * s0[k];
        b += r * s1[k];
        i = q;
    }
    *o0 = a;
    *o1 = b;
}

/* numpy's maximum/minimum: a NaN in either operand gives NaN. */
float ocl_max_nan(float a, float b) {
    return isnan(a) || isnan(b) ? a + b : (a > b ? a : b);
}

float ocl_min_nan(float a, float b) {
    return isnan(a) || isnan(b) ? a + b : (a < b ? a : b);
}
