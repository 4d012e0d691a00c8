/* The float8 element types' conversions in plexus/tensor.h on their own:
 * every bit pattern of each type decodes as ml_dtypes decodes it, floats
 * encode as ml_dtypes encodes them (tests/float8_table.h, written by
 * scripts/gen-float8-table.py), saturation as ONNX Cast defines it, and a
 * dense sweep of float32 values encodes to the nearest float8 (ties to the
 * even code) found by searching the decoded table. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <plexus/tensor.h>

#include "float8_table.h"

static const plx_dtype types[4] = {PLX_DTYPE_FLOAT8E4M3FN, PLX_DTYPE_FLOAT8E4M3FNUZ,
                                   PLX_DTYPE_FLOAT8E5M2, PLX_DTYPE_FLOAT8E5M2FNUZ};
static const uint8_t max_code[4] = {0x7e, 0x7f, 0x7b, 0x7f};

static float f32(uint32_t b) {
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static uint32_t bits32(float f) {
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

Test(float8, dtype_basics) {
    for (int t = 0; t < 4; t++) {
        cr_assert(eq(sz, plx_dtype_size(types[t]), 1));
        cr_assert(plx_dtype_is_float8(types[t]));
    }
    cr_assert(not(plx_dtype_is_float8(PLX_DTYPE_UINT8)));
    cr_assert(eq(str, (char *)plx_dtype_name(PLX_DTYPE_FLOAT8E4M3FN), "float8e4m3fn"));
    cr_assert(eq(str, (char *)plx_dtype_name(PLX_DTYPE_FLOAT8E5M2FNUZ), "float8e5m2fnuz"));
    cr_assert(eq(int, PLX_DTYPE_COUNT, 20));
}

Test(float8, decode_every_byte_as_ml_dtypes) {
    for (int t = 0; t < 4; t++) {
        for (int b = 0; b < 256; b++) {
            float want = f32(float8_decode[t][b]);
            float got = plx_float8_to_float32((uint8_t)b, types[t]);
            if (isnan(want)) {
                cr_assert(isnan(got), "%s byte 0x%02x: NaN, got %g", plx_dtype_name(types[t]),
                          b, (double)got);
            } else {
                cr_assert(eq(u32, bits32(got), float8_decode[t][b]), "%s byte 0x%02x: %g, got %g",
                          plx_dtype_name(types[t]), b, (double)want, (double)got);
            }
        }
    }
}

Test(float8, encode_as_ml_dtypes_without_saturation) {
    for (int t = 0; t < 4; t++) {
        for (size_t i = 0; i < FLOAT8_ENCODE_COUNT; i++) {
            float x = f32(float8_encode_in[i]);
            uint8_t want = float8_encode_out[t][i];
            uint8_t got = plx_float32_to_float8(x, types[t], false);
            if (isnan(plx_float8_to_float32(want, types[t]))) {
                cr_assert(isnan(plx_float8_to_float32(got, types[t])),
                          "%s of %a: NaN, got 0x%02x", plx_dtype_name(types[t]), (double)x, got);
            } else {
                cr_assert(eq(u8, got, want), "%s of %a", plx_dtype_name(types[t]), (double)x);
            }
        }
    }
}

/* saturate=1: what ml_dtypes makes infinite or NaN from a number (infinities
 * included) is the largest finite value with the number's sign; the rest is
 * the same. */
Test(float8, encode_saturating) {
    for (int t = 0; t < 4; t++) {
        for (size_t i = 0; i < FLOAT8_ENCODE_COUNT; i++) {
            float x = f32(float8_encode_in[i]);
            uint8_t want = float8_encode_out[t][i];
            float wv = plx_float8_to_float32(want, types[t]);
            uint8_t got = plx_float32_to_float8(x, types[t], true);
            if (isnan(x)) {
                cr_assert(isnan(plx_float8_to_float32(got, types[t])));
                continue;
            }
            if (isnan(wv) || isinf(wv)) {
                want = (uint8_t)(max_code[t] | (signbit(x) ? 0x80 : 0));
            }
            cr_assert(eq(u8, got, want), "%s of %a saturating", plx_dtype_name(types[t]),
                      (double)x);
        }
    }
    /* the ONNX Cast table's rows */
    cr_assert(eq(u8, plx_float32_to_float8(INFINITY, PLX_DTYPE_FLOAT8E4M3FN, true), 0x7e));
    cr_assert(eq(u8, plx_float32_to_float8(-INFINITY, PLX_DTYPE_FLOAT8E4M3FN, false), 0xff));
    cr_assert(eq(u8, plx_float32_to_float8(INFINITY, PLX_DTYPE_FLOAT8E5M2, false), 0x7c));
    cr_assert(eq(u8, plx_float32_to_float8(-INFINITY, PLX_DTYPE_FLOAT8E5M2, true), 0xfb));
    cr_assert(eq(u8, plx_float32_to_float8(INFINITY, PLX_DTYPE_FLOAT8E5M2FNUZ, false), 0x80));
    cr_assert(eq(u8, plx_float32_to_float8(-0.0f, PLX_DTYPE_FLOAT8E4M3FNUZ, false), 0x00));
    cr_assert(eq(u8, plx_float32_to_float8(-0.0f, PLX_DTYPE_FLOAT8E4M3FN, false), 0x80));
    cr_assert(eq(u8, plx_float32_to_float8(NAN, PLX_DTYPE_FLOAT8E5M2FNUZ, true), 0x80));
    cr_assert(eq(u8, plx_float32_to_float8(464.0f, PLX_DTYPE_FLOAT8E4M3FN, false), 0x7e),
              "464 ties to 448 (even)");
    cr_assert(eq(u8, plx_float32_to_float8(465.0f, PLX_DTYPE_FLOAT8E4M3FN, false), 0x7f));
}

/* The nearest finite value of type t to x by search (ties to the even
 * code); -1 when x is beyond the largest finite value's rounding range. */
static int nearest_by_search(float x, int t, const float values[128]) {
    double best = INFINITY;
    int best_code = -1;
    for (int b = 0; b < 128; b++) {
        float v = values[b];
        if (!isfinite(v)) {
            continue;
        }
        double d = fabs((double)fabsf(x) - (double)v);
        if (d < best || (d == best && (b & 1) == 0)) {
            best = d;
            best_code = b;
        }
    }
    double maxv = plx_float8_to_float32(max_code[t], types[t]);
    double ulp = maxv - plx_float8_to_float32((uint8_t)(max_code[t] - 1), types[t]);
    double lim = maxv + ulp / 2;
    if (fabsf(x) > lim || (fabsf(x) == lim && (max_code[t] & 1))) {
        return -1;
    }
    return best_code;
}

Test(float8, dense_sweep_rounds_to_nearest_even) {
    for (int t = 0; t < 4; t++) {
        bool fnuz = types[t] == PLX_DTYPE_FLOAT8E4M3FNUZ || types[t] == PLX_DTYPE_FLOAT8E5M2FNUZ;
        float values[128];
        for (int b = 0; b < 128; b++) {
            values[b] = plx_float8_to_float32((uint8_t)b, types[t]);
        }
        /* the float32 values from 2^-24 to 2^17 in steps of 0x7ff in their bits */
        for (uint32_t u = 0x33800000u; u < 0x48000000u; u += 0x7ffu) {
            float x = f32(u);
            for (int s = 0; s < 2; s++) {
                float xs = s ? -x : x;
                int want = nearest_by_search(xs, t, values);
                uint8_t got = plx_float32_to_float8(xs, types[t], false);
                if (want < 0) {
                    float g = plx_float8_to_float32(got, types[t]);
                    cr_assert(types[t] == PLX_DTYPE_FLOAT8E5M2 ? isinf(g) != 0 : isnan(g) != 0,
                              "%s of %a overflows", plx_dtype_name(types[t]), (double)xs);
                    continue;
                }
                uint8_t w = (uint8_t)want;
                if (s && !(fnuz && w == 0)) {
                    w |= 0x80;
                }
                cr_assert(eq(u8, got, w), "%s of %a", plx_dtype_name(types[t]), (double)xs);
            }
        }
    }
}

Test(float8, from_double) {
    /* 1 + 2^-4 + 2^-40 is above the tie between 1 and 1.125 in e4m3: rounds
     * up, where a first rounding to float32 would make it the tie */
    double v = 1.0 + 0.0625 + 0x1p-40;
    cr_assert(eq(u8, plx_float64_to_float8(v, PLX_DTYPE_FLOAT8E4M3FN, true), 0x39));
    cr_assert(eq(u8, plx_float64_to_float8(1.0625, PLX_DTYPE_FLOAT8E4M3FN, true), 0x38));
    uint8_t out[8];
    cr_assert(eq(sz, plx_dtype_bytes_from_double(1e6, PLX_DTYPE_FLOAT8E5M2, out), 1));
    cr_assert(eq(u8, out[0], 0x7b), "constants saturate");
}
