/* plexus/geometry.h, the SDK's geometry helpers, on their own: axes,
 * slice plans, broadcasting, gemm and matmul geometry and resize
 * coordinates, on normal and edge cases; and plexus/window.h's layer
 * geometry of 3-D windows (its slots, and who may ask for them). */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <plexus/geometry.h>
#include <plexus/window.h>

static plx_tensor_info shape(plx_dtype dtype, uint32_t rank, const int64_t *dims) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.rank = rank;
    for (uint32_t i = 0; i < rank; i++) {
        t.dims[i] = dims[i];
    }
    return t;
}

#define SHAPE(...) \
    shape(PLX_DTYPE_FLOAT32, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), \
          (int64_t[]){__VA_ARGS__})

/* ---- axes ---------------------------------------------------------------- */

Test(geometry, axis_normalize) {
    uint32_t a = 99;
    cr_assert(plx_axis_normalize(0, 3, false, &a) && a == 0);
    cr_assert(plx_axis_normalize(2, 3, false, &a) && a == 2);
    cr_assert(plx_axis_normalize(-1, 3, false, &a) && a == 2);
    cr_assert(plx_axis_normalize(-3, 3, false, &a) && a == 0);
    a = 99;
    cr_assert(not(plx_axis_normalize(3, 3, false, &a)));
    cr_assert(not(plx_axis_normalize(-4, 3, false, &a)));
    cr_assert(eq(u32, a, 99), "a refused axis leaves the output alone");
    /* inclusive: rank itself names the position after the last dim */
    cr_assert(plx_axis_normalize(3, 3, true, &a) && a == 3);
    cr_assert(plx_axis_normalize(-3, 3, true, &a) && a == 0);
    cr_assert(not(plx_axis_normalize(4, 3, true, &a)));
    cr_assert(not(plx_axis_normalize(-4, 3, true, &a)), "negative axes stay within -rank");
    /* a scalar has no axis, but one position */
    cr_assert(not(plx_axis_normalize(0, 0, false, &a)));
    cr_assert(plx_axis_normalize(0, 0, true, &a) && a == 0);
    /* the int64_t extremes do not overflow */
    cr_assert(not(plx_axis_normalize(INT64_MIN, 8, true, &a)));
    cr_assert(not(plx_axis_normalize(INT64_MAX, 8, true, &a)));
}

/* ---- slice ---------------------------------------------------------------- */

static void slice_is(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t want_start,
                     int64_t want_count) {
    int64_t s = -99, n = -99;
    cr_assert(plx_slice_dim(dim, start, end, step, &s, &n), "slice %lld:%lld:%lld of %lld",
              (long long)start, (long long)end, (long long)step, (long long)dim);
    cr_assert(eq(i64, n, want_count), "count of %lld:%lld:%lld of %lld", (long long)start,
              (long long)end, (long long)step, (long long)dim);
    if (want_count > 0) {
        cr_assert(eq(i64, s, want_start), "start of %lld:%lld:%lld of %lld", (long long)start,
                  (long long)end, (long long)step, (long long)dim);
    }
}

Test(geometry, slice_dim) {
    slice_is(10, 1, 8, 3, 1, 3);  /* 1, 4, 7 */
    slice_is(10, 0, 10, 1, 0, 10);
    slice_is(10, -3, -1, 1, 7, 2); /* negatives count from the end */
    slice_is(10, 5, 5, 1, 5, 0);
    slice_is(10, 8, 2, 1, 0, 0);   /* forward step, backward range: empty */
    slice_is(10, 9, 0, -1, 9, 9);  /* 9 down to 1 */
    slice_is(10, -1, -11, -1, 9, 10); /* the whole dim reversed */
    slice_is(10, 9, -100, -3, 9, 4);  /* 9, 6, 3, 0 */
    slice_is(10, 2, 8, -1, 0, 0);  /* backward step, forward range: empty */
    /* the int64_t extremes clamp */
    slice_is(10, INT64_MIN, INT64_MAX, 1, 0, 10);
    slice_is(10, INT64_MAX, INT64_MIN, -1, 9, 10);
    slice_is(10, 0, INT64_MAX, INT64_MAX, 0, 1);
    slice_is(10, INT64_MAX, INT64_MIN, INT64_MIN, 9, 1);
    slice_is(10, 20, 30, 1, 0, 0);
    /* an empty dim takes nothing, whatever the range */
    slice_is(0, 0, 5, 1, 0, 0);
    slice_is(0, -1, INT64_MIN, -1, 0, 0);
    int64_t s = -99, n = -99;
    cr_assert(not(plx_slice_dim(10, 0, 5, 0, &s, &n)), "step 0 is refused");
    cr_assert(s == -99 && n == -99);
}

Test(geometry, slice_plan) {
    plx_tensor_info x = SHAPE(4, 5, 6);
    plx_slice_desc d = PLX_SLICE_DESC_INIT;
    d.count = 2;
    d.axes[0] = -1;
    d.starts[0] = 1;
    d.ends[0] = INT64_MAX;
    d.steps[0] = 2;
    d.axes[1] = 0;
    d.starts[1] = -1;
    d.ends[1] = INT64_MIN;
    d.steps[1] = -1;
    int64_t dims[PLX_MAX_RANK], st[PLX_MAX_RANK], offset = -1;
    uint32_t bad = 99;
    cr_assert(eq(int, plx_slice_plan(&x, &d, dims, st, &offset, &bad), PLX_GEOM_OK));
    cr_assert(eq(u32, bad, 0));
    /* x's dense strides are 30, 6, 1: the first element is x[3][0][1] */
    cr_assert(eq(i64, offset, 3 * 30 + 1));
    cr_assert(dims[0] == 4 && st[0] == -30);
    cr_assert(dims[1] == 5 && st[1] == 6, "a dim not named is whole");
    cr_assert(dims[2] == 3 && st[2] == 2);
    /* a dim of one element never steps, however large its step */
    plx_slice_desc one = PLX_SLICE_DESC_INIT;
    one.count = 1;
    one.axes[0] = 0;
    one.starts[0] = 2;
    one.ends[0] = INT64_MIN;
    one.steps[0] = INT64_MIN;
    cr_assert(eq(int, plx_slice_plan(&x, &one, dims, st, &offset, NULL), PLX_GEOM_OK));
    cr_assert(dims[0] == 1 && st[0] == 0 && offset == 60);
    cr_assert(eq(int, plx_slice_plan(&x, &d, dims, st, &offset, NULL), PLX_GEOM_OK));

    d.axes[1] = 2; /* -1 again */
    cr_assert(eq(int, plx_slice_plan(&x, &d, dims, st, &offset, &bad), PLX_GEOM_REPEATED_AXIS));
    cr_assert(eq(u32, bad, 1));
    d.axes[1] = 3;
    cr_assert(eq(int, plx_slice_plan(&x, &d, dims, st, &offset, &bad), PLX_GEOM_BAD_AXIS));
    cr_assert(eq(u32, bad, 1));
    d.axes[1] = -4;
    cr_assert(eq(int, plx_slice_plan(&x, &d, dims, st, &offset, &bad), PLX_GEOM_BAD_AXIS));
    d.axes[1] = 1;
    d.steps[1] = 0;
    cr_assert(eq(int, plx_slice_plan(&x, &d, dims, st, &offset, &bad), PLX_GEOM_ZERO_STEP));
    cr_assert(eq(u32, bad, 1));
    d.steps[0] = 0; /* the first entry at fault is named */
    cr_assert(eq(int, plx_slice_plan(&x, &d, dims, st, &offset, &bad), PLX_GEOM_ZERO_STEP));
    cr_assert(eq(u32, bad, 0));
    d.count = PLX_MAX_RANK + 1;
    cr_assert(eq(int, plx_slice_plan(&x, &d, dims, st, &offset, &bad), PLX_GEOM_BAD_COUNT));
    /* more entries than dims must repeat one */
    plx_slice_desc e = PLX_SLICE_DESC_INIT;
    e.count = 4;
    for (uint32_t i = 0; i < 4; i++) {
        e.axes[i] = (int32_t)i - 1;
        e.ends[i] = 1;
    }
    cr_assert(eq(int, plx_slice_plan(&x, &e, dims, st, &offset, &bad), PLX_GEOM_REPEATED_AXIS));
    cr_assert(eq(u32, bad, 3));
}

/* ---- broadcasting ---------------------------------------------------------- */

Test(geometry, broadcast_dims) {
    int64_t a[] = {2, 1, 4}, b[] = {3, 1}, out[PLX_MAX_RANK];
    uint32_t r = 0, bad = 99;
    cr_assert(eq(int, plx_broadcast_dims(a, 3, b, 2, out, &r, &bad), PLX_GEOM_OK));
    cr_assert(r == 3 && out[0] == 2 && out[1] == 3 && out[2] == 4);
    /* a scalar broadcasts to anything; into one of the inputs */
    int64_t c[] = {5, 0};
    cr_assert(eq(int, plx_broadcast_dims(c, 2, NULL, 0, c, &r, NULL), PLX_GEOM_OK));
    cr_assert(r == 2 && c[0] == 5 && c[1] == 0);
    /* 0 is a size like any other: it meets 1, not 3 */
    int64_t z[] = {0}, one[] = {1}, three[] = {3};
    cr_assert(eq(int, plx_broadcast_dims(z, 1, one, 1, out, &r, NULL), PLX_GEOM_OK));
    cr_assert(r == 1 && out[0] == 0);
    cr_assert(eq(int, plx_broadcast_dims(z, 1, three, 1, out, &r, &bad), PLX_GEOM_NO_BROADCAST));
    cr_assert(eq(u32, bad, 0));
    int64_t d[] = {2, 3}, e[] = {4};
    cr_assert(eq(int, plx_broadcast_dims(a, 3, d, 2, out, &r, &bad), PLX_GEOM_NO_BROADCAST));
    cr_assert(eq(u32, bad, 2), "the output dim at fault");
    cr_assert(eq(int, plx_broadcast_dims(d, 2, e, 1, out, &r, &bad), PLX_GEOM_NO_BROADCAST));
    cr_assert(eq(u32, bad, 1));
    cr_assert(eq(int, plx_broadcast_dims(a, PLX_MAX_RANK + 1, b, 2, out, &r, NULL),
                 PLX_GEOM_BAD_RANK));
}

Test(geometry, broadcast_strides) {
    int64_t to[] = {2, 3, 4}, st[PLX_MAX_RANK];
    int64_t row[] = {4}, col[] = {3, 1}, full[] = {2, 3, 4};
    uint32_t bad = 99;
    cr_assert(eq(int, plx_broadcast_strides(row, 1, to, 3, st, &bad), PLX_GEOM_OK));
    cr_assert(st[0] == 0 && st[1] == 0 && st[2] == 1);
    for (uint32_t i = 3; i < PLX_MAX_RANK; i++) {
        cr_assert(eq(i64, st[i], 0), "past the rank");
    }
    cr_assert(eq(int, plx_broadcast_strides(col, 2, to, 3, st, NULL), PLX_GEOM_OK));
    cr_assert(st[0] == 0 && st[1] == 1 && st[2] == 0);
    cr_assert(eq(int, plx_broadcast_strides(full, 3, to, 3, st, NULL), PLX_GEOM_OK));
    cr_assert(st[0] == 12 && st[1] == 4 && st[2] == 1);
    cr_assert(eq(int, plx_broadcast_strides(NULL, 0, to, 3, st, NULL), PLX_GEOM_OK));
    cr_assert(st[0] == 0 && st[1] == 0 && st[2] == 0, "a scalar is read everywhere");
    cr_assert(eq(int, plx_broadcast_strides(full, 3, to, 3, NULL, NULL), PLX_GEOM_OK),
              "no strides wanted");
    /* unidirectional: `to` does not grow */
    int64_t wide[] = {3, 5}, one[] = {1, 4};
    cr_assert(eq(int, plx_broadcast_strides(wide, 2, to, 3, st, &bad), PLX_GEOM_NO_BROADCAST));
    cr_assert(eq(u32, bad, 2));
    cr_assert(eq(int, plx_broadcast_strides(to, 3, one, 2, st, NULL), PLX_GEOM_BAD_RANK));
    int64_t small[] = {1, 1, 4};
    cr_assert(eq(int, plx_broadcast_strides(to, 3, small, 3, st, &bad), PLX_GEOM_NO_BROADCAST));
    cr_assert(eq(u32, bad, 1), "from the last dim");
}

/* ---- gemm and matmul -------------------------------------------------------- */

Test(geometry, gemm) {
    plx_tensor_info a = SHAPE(3, 2), b = SHAPE(4, 3), c = SHAPE(4);
    plx_gemm_geom g;
    /* A' = A^T [2, 3], B' = B^T [3, 4], C [4] along N */
    cr_assert(eq(int, plx_gemm_geom_of(&a, &b, &c, true, true, &g), PLX_GEOM_OK));
    cr_assert(g.m == 2 && g.k == 3 && g.n == 4);
    cr_assert(g.a_sm == 1 && g.a_sk == 2 && g.b_sk == 1 && g.b_sn == 3);
    cr_assert(g.c_sm == 0 && g.c_sn == 1);
    plx_tensor_info a2 = SHAPE(2, 3), b2 = SHAPE(3, 4), cm = SHAPE(2, 1), c0 = SHAPE(1);
    c0.rank = 0;
    cr_assert(eq(int, plx_gemm_geom_of(&a2, &b2, &cm, false, false, &g), PLX_GEOM_OK));
    cr_assert(g.a_sm == 3 && g.a_sk == 1 && g.b_sk == 4 && g.b_sn == 1);
    cr_assert(g.c_sm == 1 && g.c_sn == 0);
    cr_assert(eq(int, plx_gemm_geom_of(&a2, &b2, &c0, false, false, &g), PLX_GEOM_OK));
    cr_assert(g.c_sm == 0 && g.c_sn == 0);
    cr_assert(eq(int, plx_gemm_geom_of(&a2, &b2, NULL, false, false, &g), PLX_GEOM_OK));
    cr_assert(g.c_sm == 0 && g.c_sn == 0);

    cr_assert(eq(int, plx_gemm_geom_of(&a2, &b2, &c, false, false, &g), PLX_GEOM_OK),
              "C [4] along N = 4");
    plx_tensor_info c3 = SHAPE(3);
    cr_assert(eq(int, plx_gemm_geom_of(&a2, &b2, &c3, false, false, &g), PLX_GEOM_NO_BROADCAST));
    cr_assert(g.bad[0] == 1 && g.bad[1] == 3, "C as [rows, cols]");
    plx_tensor_info c3d = SHAPE(1, 2, 4);
    cr_assert(eq(int, plx_gemm_geom_of(&a2, &b2, &c3d, false, false, &g), PLX_GEOM_BAD_BIAS_RANK));
    cr_assert(eq(i64, g.bad[0], 3));
    cr_assert(eq(int, plx_gemm_geom_of(&a2, &b, NULL, false, false, &g), PLX_GEOM_K_MISMATCH));
    cr_assert(g.bad[0] == 3 && g.bad[1] == 4);
    cr_assert(eq(int, plx_gemm_geom_of(&c, &b2, NULL, false, false, &g), PLX_GEOM_BAD_RANK));
    cr_assert(g.bad[0] == 1 && g.bad[1] == 2);
}

Test(geometry, matmul) {
    plx_tensor_info a = SHAPE(2, 1, 3, 4), b = SHAPE(5, 4, 6);
    plx_matmul_geom g;
    cr_assert(eq(int, plx_matmul_geom_of(&a, &b, &g), PLX_GEOM_OK));
    cr_assert(g.m == 3 && g.k == 4 && g.n == 6 && g.batch_rank == 2);
    cr_assert(g.batch[0] == 2 && g.batch[1] == 5);
    cr_assert(g.a_bs[0] == 12 && g.a_bs[1] == 0, "A is broadcast over the inner batch dim");
    cr_assert(g.b_bs[0] == 0 && g.b_bs[1] == 24, "B has no outer batch dim");
    cr_assert(g.rank == 4 && g.dims[0] == 2 && g.dims[1] == 5 && g.dims[2] == 3 && g.dims[3] == 6);

    /* 1-D operands: [K] x [K] is a scalar, [K] x [.., K, N] drops M */
    plx_tensor_info v = SHAPE(4);
    cr_assert(eq(int, plx_matmul_geom_of(&v, &v, &g), PLX_GEOM_OK));
    cr_assert(g.m == 1 && g.n == 1 && g.k == 4 && g.batch_rank == 0 && g.rank == 0);
    cr_assert(eq(int, plx_matmul_geom_of(&v, &b, &g), PLX_GEOM_OK));
    cr_assert(g.rank == 2 && g.dims[0] == 5 && g.dims[1] == 6 && g.b_bs[0] == 24);
    plx_tensor_info m = SHAPE(3, 4);
    cr_assert(eq(int, plx_matmul_geom_of(&m, &v, &g), PLX_GEOM_OK));
    cr_assert(g.rank == 1 && g.dims[0] == 3);

    plx_tensor_info b2 = SHAPE(3, 4, 6);
    plx_tensor_info a3 = SHAPE(2, 2, 3, 4);
    cr_assert(eq(int, plx_matmul_geom_of(&a3, &b2, &g), PLX_GEOM_NO_BROADCAST));
    cr_assert(g.bad[0] == 2 && g.bad[1] == 3);
    plx_tensor_info b3 = SHAPE(5, 6);
    cr_assert(eq(int, plx_matmul_geom_of(&m, &b3, &g), PLX_GEOM_K_MISMATCH));
    cr_assert(g.bad[0] == 4 && g.bad[1] == 5);
    plx_tensor_info s = SHAPE(1);
    s.rank = 0;
    cr_assert(eq(int, plx_matmul_geom_of(&s, &m, &g), PLX_GEOM_BAD_RANK));
    cr_assert(g.bad[0] == 0 && g.bad[1] == 2);
}

/* ---- resize ------------------------------------------------------------------ */

Test(geometry, resize_scale) {
    double s = 0.0;
    cr_assert(eq(int, plx_resize_scale(2.0f, 3, 6, &s), PLX_GEOM_OK));
    cr_assert(eq(dbl, s, 2.0));
    cr_assert(eq(int, plx_resize_scale(0.0f, 4, 6, &s), PLX_GEOM_OK), "0: from the sizes");
    cr_assert(eq(dbl, s, 1.5));
    cr_assert(eq(int, plx_resize_scale(0.0f, 0, 0, &s), PLX_GEOM_OK));
    cr_assert(eq(dbl, s, 1.0));
    cr_assert(eq(int, plx_resize_scale(-1.0f, 4, 6, &s), PLX_GEOM_BAD_SCALE));
    cr_assert(eq(int, plx_resize_scale(INFINITY, 4, 6, &s), PLX_GEOM_BAD_SCALE));
    cr_assert(eq(int, plx_resize_scale(NAN, 4, 6, &s), PLX_GEOM_BAD_SCALE));
    cr_assert(eq(int, plx_resize_scale(2.0f, 0, 3, &s), PLX_GEOM_EMPTY_INPUT));
}

Test(geometry, resize_geom) {
    plx_tensor_info x = {.dtype = PLX_DTYPE_FLOAT32, .rank = 4, .dims = {2, 3, 4, 5}};
    plx_tensor_info y = {.dtype = PLX_DTYPE_FLOAT32, .rank = 4, .dims = {2, 3, 8, 10}};
    plx_resize_geom g;
    int dim = -1;
    const float from_sizes[2] = {0.0f, 0.0f}, given[2] = {2.0f, 2.5f};
    cr_assert(eq(int, plx_resize_geom_of(&x, &y, from_sizes, &g, &dim), PLX_GEOM_OK));
    cr_assert(eq(i64, g.nc, 6));
    cr_assert(eq(i64, g.in[0], 4));
    cr_assert(eq(i64, g.in[1], 5));
    cr_assert(eq(i64, g.out[0], 8));
    cr_assert(eq(i64, g.out[1], 10));
    cr_assert(eq(dbl, g.scale[0], 2.0));
    cr_assert(eq(dbl, g.scale[1], 2.0));
    cr_assert(eq(int, plx_resize_geom_of(&x, &y, given, &g, NULL), PLX_GEOM_OK));
    cr_assert(eq(dbl, g.scale[1], 2.5), "a given scale is kept");
    /* Another N or C, or rank. */
    y.dims[1] = 4;
    cr_assert(eq(int, plx_resize_geom_of(&x, &y, from_sizes, &g, &dim), PLX_GEOM_BAD_RANK));
    y.dims[1] = 3;
    x.rank = 3;
    cr_assert(eq(int, plx_resize_geom_of(&x, &y, from_sizes, &g, &dim), PLX_GEOM_BAD_RANK));
    x.rank = 4;
    /* An empty W resized to 10: the dim is named. */
    x.dims[3] = 0;
    cr_assert(eq(int, plx_resize_geom_of(&x, &y, from_sizes, &g, &dim), PLX_GEOM_EMPTY_INPUT));
    cr_assert(eq(int, dim, 1));
}

Test(geometry, status_text) {
    cr_assert(eq(str, (char *)plx_geom_status_text(PLX_GEOM_ZERO_STEP), "step 0"));
    for (int s = PLX_GEOM_OK; s <= PLX_GEOM_EMPTY_INPUT; s++) {
        const char *t = plx_geom_status_text((plx_geom_status)s);
        cr_assert(strcmp(t, "unknown geometry status") != 0, "status %d has a text", s);
    }
    cr_assert(eq(str, (char *)plx_geom_status_text((plx_geom_status)99),
                 "unknown geometry status"));
}

Test(geometry, resize_coordinate) {
    /* 4 -> 8, scale 2: output 3 */
    cr_assert(eq(dbl, plx_resize_coordinate(PLX_RESIZE_COORD_HALF_PIXEL, 3, 2.0, 4), 1.25));
    cr_assert(eq(dbl, plx_resize_coordinate(PLX_RESIZE_COORD_ASYMMETRIC, 3, 2.0, 4), 1.5));
    cr_assert(eq(dbl, plx_resize_coordinate(PLX_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN, 3, 2.0, 4),
                 1.75));
    cr_assert(eq(dbl, plx_resize_coordinate(PLX_RESIZE_COORD_PYTORCH_HALF_PIXEL, 3, 2.0, 4), 1.25));
    /* align_corners maps the ends onto each other: 7 * 3 / 7 */
    cr_assert(eq(dbl, plx_resize_coordinate(PLX_RESIZE_COORD_ALIGN_CORNERS, 7, 2.0, 4), 3.0));
    cr_assert(eq(dbl, plx_resize_coordinate(PLX_RESIZE_COORD_ALIGN_CORNERS, 0, 2.0, 4), 0.0));
    /* a scaled length of 1 */
    cr_assert(eq(dbl, plx_resize_coordinate(PLX_RESIZE_COORD_ALIGN_CORNERS, 0, 0.25, 4), 0.0));
    cr_assert(eq(dbl, plx_resize_coordinate(PLX_RESIZE_COORD_PYTORCH_HALF_PIXEL, 0, 0.25, 4),
                 -0.5));
    /* bounded to [-2, in + 1] */
    cr_assert(eq(dbl, plx_resize_coordinate(PLX_RESIZE_COORD_HALF_PIXEL, 0, 0.01, 4), 4.0 + 1.0));
    cr_assert(eq(dbl, plx_resize_coordinate(PLX_RESIZE_COORD_HALF_PIXEL, 0, 1e-300, 4), 5.0));
    double c = plx_resize_coordinate(PLX_RESIZE_COORD_HALF_PIXEL, 0, 100.0, 4);
    cr_assert(c > -0.5 && c < -0.49, "%g is not bounded: 0.5 / 100 - 0.5", c);
    cr_assert(eq(dbl, plx_resize_coordinate(PLX_RESIZE_COORD_HALF_PIXEL, 0, 0.1, 1), 2.0));
    cr_assert(eq(dbl, plx_resize_coordinate(PLX_RESIZE_COORD_ASYMMETRIC, 0, 0.0, 4), -2.0),
              "NaN (0 / 0) is bounded low");
    /* a mode outside the enum is half_pixel */
    cr_assert(eq(dbl, plx_resize_coordinate((plx_resize_coord)99, 3, 2.0, 4), 1.25));
}

Test(geometry, resize_nearest) {
    const plx_resize_nearest pf = PLX_RESIZE_NEAREST_ROUND_PREFER_FLOOR,
                             pc = PLX_RESIZE_NEAREST_ROUND_PREFER_CEIL,
                             fl = PLX_RESIZE_NEAREST_FLOOR, ce = PLX_RESIZE_NEAREST_CEIL;
    cr_assert(eq(i64, plx_resize_nearest_index(pf, 1.5, 4), 1));
    cr_assert(eq(i64, plx_resize_nearest_index(pc, 1.5, 4), 2));
    cr_assert(eq(i64, plx_resize_nearest_index(pf, 1.6, 4), 2));
    cr_assert(eq(i64, plx_resize_nearest_index(pc, 1.4, 4), 1));
    cr_assert(eq(i64, plx_resize_nearest_index(fl, 1.9, 4), 1));
    cr_assert(eq(i64, plx_resize_nearest_index(ce, 1.1, 4), 2));
    cr_assert(eq(i64, plx_resize_nearest_index(ce, 2.0, 4), 2), "an integer is itself");
    cr_assert(eq(i64, plx_resize_nearest_index(fl, -0.5, 4), 0), "clamped low");
    cr_assert(eq(i64, plx_resize_nearest_index(ce, -1.5, 4), 0));
    cr_assert(eq(i64, plx_resize_nearest_index(pc, -0.5, 4), 0));
    cr_assert(eq(i64, plx_resize_nearest_index(ce, 3.5, 4), 3), "clamped high");
    cr_assert(eq(i64, plx_resize_nearest_index(pf, 5.0, 4), 3));
    cr_assert(eq(i64, plx_resize_nearest_index((plx_resize_nearest)99, 1.5, 4), 1),
              "a mode outside the enum is round_prefer_floor");
}

Test(geometry, resize_linear) {
    int64_t lo = -1, hi = -1;
    cr_assert(eq(dbl, plx_resize_linear_taps(1.25, 4, &lo, &hi), 0.25));
    cr_assert(lo == 1 && hi == 2);
    cr_assert(eq(dbl, plx_resize_linear_taps(2.0, 4, &lo, &hi), 0.0));
    cr_assert(lo == 2 && hi == 3);
    cr_assert(eq(dbl, plx_resize_linear_taps(-0.25, 4, &lo, &hi), 0.75), "floor of a negative");
    cr_assert(lo == 0 && hi == 0);
    cr_assert(eq(dbl, plx_resize_linear_taps(3.5, 4, &lo, &hi), 0.5));
    cr_assert(lo == 3 && hi == 3, "both clamped to the last");
    cr_assert(eq(dbl, plx_resize_linear_taps(-2.0, 1, &lo, &hi), 0.0));
    cr_assert(lo == 0 && hi == 0);
}

/* ---- window layers in 3-D ------------------------------------------------ */

static plx_layer_view window_view(plx_op op, const void *desc, const plx_tensor_info *in,
                                  uint32_t nin, const plx_tensor_info *out) {
    plx_layer_view l;
    memset(&l, 0, sizeof l);
    l.struct_size = sizeof l;
    l.name = "w";
    l.op = op;
    l.desc = desc;
    l.inputs = in;
    l.input_count = nin;
    l.outputs = out;
    l.output_count = 1;
    return l;
}

/* A 3-D conv: the functions without _nd refuse it (a backend that calls
 * them has not opted in), the _nd ones put D, H and W in slots 2, 0 and
 * 1; a 2-D conv keeps slot 2 trivial. */
Test(geometry, window_3d_slots) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    d.strides[0] = 2;     /* D */
    d.dilations[1] = 2;   /* H */
    d.pads_begin[2] = 1;  /* W */
    d.pads_end[2] = 2;
    plx_tensor_info in[2] = {SHAPE(2, 3, 9, 10, 11), SHAPE(5, 3, 3, 3, 3)};
    plx_tensor_info y = SHAPE(2, 5, 4, 6, 12);
    plx_layer_view l = window_view(PLX_OP_CONV, &d, in, 2, &y);
    plx_window_geom g;
    char buf[160];
    const char *why = plx_window_geom_conv(&l, 1 << 20, &g, buf, sizeof buf);
    cr_assert(why && strstr(why, "conv takes 1-D or 2-D inputs (rank 3 or 4), not rank 5"), "%s",
              why ? why : "(accepted)");
    why = plx_window_geom_conv_nd(&l, 1 << 20, &g, buf, sizeof buf);
    cr_assert(zero(ptr, (void *)why), "%s", why);
    cr_assert(eq(u32, g.spatial_rank, 3));
    cr_assert(eq(i64, g.in[2], 9), "D in slot 2");
    cr_assert(eq(i64, g.in[0], 10));
    cr_assert(eq(i64, g.in[1], 11));
    cr_assert(eq(i64, g.s[2], 2));
    cr_assert(eq(i64, g.d[0], 2));
    cr_assert(eq(i64, g.pb[1], 1));
    cr_assert(eq(i64, g.pe[1], 2));
    cr_assert(eq(i64, g.out[2], 4));
    cr_assert(eq(i64, g.out[0], 6));
    cr_assert(eq(i64, g.out[1], 12));
    y.dims[4] = 11; /* the output info must agree */
    why = plx_window_geom_conv_nd(&l, 1 << 20, &g, buf, sizeof buf);
    cr_assert(why && strstr(why, "expected [2,5,4,6,12]"), "%s", why ? why : "(accepted)");

    /* 2-D through the _nd function: slot 2 trivial */
    plx_conv_desc d2 = PLX_CONV_DESC_INIT;
    plx_tensor_info in2[2] = {SHAPE(1, 3, 7, 8), SHAPE(4, 3, 3, 3)};
    plx_tensor_info y2 = SHAPE(1, 4, 5, 6);
    l = window_view(PLX_OP_CONV, &d2, in2, 2, &y2);
    cr_assert(zero(ptr, (void *)plx_window_geom_conv_nd(&l, 1 << 20, &g, buf, sizeof buf)));
    cr_assert(eq(i64, g.in[2] * g.k[2] * g.out[2] * g.s[2] * g.d[2], 1));
    cr_assert(eq(i64, g.pb[2] + g.pe[2], 0));
    cr_assert(eq(i64, g.in[0], 7));

    /* pool and conv_transpose likewise */
    plx_pool_desc p = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    p.kernel[0] = 2, p.kernel[1] = 3, p.kernel[2] = 1;
    plx_tensor_info px = SHAPE(1, 2, 4, 5, 6), py = SHAPE(1, 2, 3, 3, 6);
    l = window_view(PLX_OP_POOL, &p, &px, 1, &py);
    cr_assert(plx_window_geom_pool(&l, 1 << 20, &g, buf, sizeof buf) != NULL);
    cr_assert(zero(ptr, (void *)plx_window_geom_pool_nd(&l, 1 << 20, &g, buf, sizeof buf)));
    cr_assert(eq(i64, g.k[2], 2));
    cr_assert(eq(i64, g.out[2], 3));
    plx_conv_transpose_desc t = PLX_CONV_TRANSPOSE_DESC_INIT;
    t.strides[0] = 2;
    plx_tensor_info tin[2] = {SHAPE(1, 2, 3, 4, 5), SHAPE(2, 3, 2, 2, 2)};
    plx_tensor_info ty = SHAPE(1, 3, 6, 5, 6);
    l = window_view(PLX_OP_CONV_TRANSPOSE, &t, tin, 2, &ty);
    cr_assert(plx_window_geom_conv_transpose(&l, 1 << 20, &g, buf, sizeof buf) != NULL);
    why = plx_window_geom_conv_transpose_nd(&l, 1 << 20, &g, buf, sizeof buf);
    cr_assert(zero(ptr, (void *)why), "%s", why);
    cr_assert(eq(i64, g.out[2], 6));
    cr_assert(eq(i64, g.m, 3));
}
