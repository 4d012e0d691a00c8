/* cpu_ref's elementwise loops on 8-bit quantized tensors: quantize,
 * dequantize, the quantized add, sub and mul (plexus/ops.h, "Quantized
 * layers") and the int8 depthwise's output stage; and the planes of max
 * pooling (float32 and 8-bit), whose strided taps need the wider shuffles. Like the vector math (vecmath.h), the source (qmap_kernel.c) is
 * compiled once per instruction set and these dispatch on the backend's
 * `isa`; the loops are branch-free plain C that the compiler vectorises,
 * and every variant gives the same bytes. Nothing here allocates. Each
 * returns false, touching nothing, for a variant that is not supported. */
#ifndef PLXK_QMAP_H
#define PLXK_QMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plexus/window.h>

#include "gemm.h"

typedef enum plxk_qfunc { PLXK_QADD = 0, PLXK_QSUB = 1, PLXK_QMUL = 2 } plxk_qfunc;

/* The operands' and the output's types: uint8 where set, else int8. */
#define PLXK_QTYPES(a_u8, b_u8, y_u8) \
    ((unsigned)(a_u8) << 2 | (unsigned)(b_u8) << 1 | (unsigned)(y_u8))

typedef struct plxk_qbin_params {
    float sa, sb, sy; /* the scales of A, B and Y */
    float zy, lo, hi; /* Y's zero point, and its dtype's range */
    int32_t za, zb;   /* the zero points of A and B */
} plxk_qbin_params;

/* y[i] = Y's quantization of real(a) f real(b), real(v) = (v - z) s, for
 * i < n: the float32 result divided by Y's scale, rounded half to even,
 * plus Y's zero point, saturated. An operand not dense (da, db false) is
 * its first value throughout. */
bool plxk_qbinary(plxk_isa isa, plxk_qfunc f, unsigned types, const void *a, bool da,
                  const void *b, bool db, void *y, size_t n, const plxk_qbin_params *p);

/* ONNX QuantizeLinear of float32 x[0..n) to uint8 (u8) or int8: x / scale
 * rounded half to even plus zp, saturated; NaN gives zp. */
bool plxk_quantize8(plxk_isa isa, bool u8, const float *x, void *y, size_t n, float scale,
                    int32_t zp);

/* The smallest and largest of x[0..n) into *lo and *hi (both 0 for n 0;
 * -0 orders below +0), for DynamicQuantizeLinear's range; *finite false
 * when x holds a NaN or an infinity (then *lo and *hi are not
 * meaningful). */
bool plxk_float_range(plxk_isa isa, const float *x, size_t n, float *lo, float *hi,
                      bool *finite);

/* y[i] = table[x[i]] for i < n: a lookup of 8-bit values in a table of
 * 256 bytes (the optimiser's 8-bit tables, core/src/rewrite.c), 64 at a
 * time with AVX-512 VBMI's byte permutes where the CPU has them. */
bool plxk_table8(plxk_isa isa, const uint8_t *table, const uint8_t *x, uint8_t *y, size_t n);

/* ONNX DequantizeLinear of uint8 (u8) or int8 x[0..n): (x - zp) scale. */
bool plxk_dequantize8(plxk_isa isa, bool u8, const void *x, float *y, size_t n, float scale,
                      int32_t zp);

/* The output stage of cpu_ref's int8 depthwise convolution: y[i] =
 * saturate(round_half_even((float)((int32_t)acc[i] + bias) * scale) + zp)
 * to uint8 (u8) or int8, where acc holds integer sums (exact floats). */
bool plxk_requantize8(plxk_isa isa, bool u8, const float *acc, int32_t bias, float scale,
                      int32_t zp, void *y, size_t n);

/* One output plane of a max pool of float32, int8 or uint8 (`dt`) over the
 * input plane x (g: the window geometry, plexus/window.h; its N and C are
 * not read), into y: every variant gives the same values (a NaN wins, as
 * in kernels_pool.c). */
bool plxk_max_pool_plane(plxk_isa isa, plx_dtype dt, const plx_window_geom *g, const void *x,
                         void *y);

#endif /* PLXK_QMAP_H */
