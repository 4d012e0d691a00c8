/* cpu_ref's vector math: float32 functions over whole arrays, the
 * transcendental activations of real models (the sigmoid and tanh of
 * recurrent gates and of hard-swish-free mobile nets, GELU's erf, softmax's
 * exp, and the square root of normalisations) at vector speed.
 *
 * Like the GEMM's micro-kernel, the source (vecmath_kernel.c) is compiled
 * once per instruction set and gemm.c dispatches on the backend's `isa`:
 * the loops are branch-free plain C that the compiler vectorises. Each
 * function is a polynomial on a reduced argument, accurate to a few units
 * in the last place of float32 over its whole range (docs/cpu-ref.md gives
 * the bounds the tests check); NaN stays NaN, and the limits at +-infinity
 * are exact. Nothing here allocates; x and y may be the same array. */
#ifndef PLXK_VECMATH_H
#define PLXK_VECMATH_H

#include <stdbool.h>
#include <stddef.h>

#include <plexus/ops.h>

#include "gemm.h"

typedef enum plxk_vfunc {
    PLXK_VEXP = 0,       /* e^x */
    PLXK_VSIGMOID = 1,   /* 1 / (1 + e^-x) */
    PLXK_VTANH = 2,      /* tanh x */
    PLXK_VERF = 3,       /* erf x */
    PLXK_VGELU_ERF = 4,  /* x / 2 (1 + erf(x / sqrt 2)) */
    PLXK_VGELU_TANH = 5, /* x / 2 (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) */
    PLXK_VSQRT = 6,      /* the square root, correctly rounded (the instruction) */
} plxk_vfunc;
#define PLXK_VFUNC_COUNT 7

/* y[i] = f(x[i]) for i < n in variant `isa`. false, touching nothing, for
 * an unknown function or a variant that is not supported. */
bool plxk_vmap(plxk_isa isa, plxk_vfunc f, const float *x, float *y, size_t n);

/* y[i] = min(max(alpha x[i] + beta, 0), 1), times x[i] when times_x, for
 * i < n in variant `isa`: ONNX HardSigmoid, and HardSwish with alpha 1/6,
 * beta 1/2 and times_x. NaN stays NaN. false, touching nothing, for a
 * variant that is not supported. */
bool plxk_vhard_sigmoid(plxk_isa isa, float alpha, float beta, bool times_x, const float *x,
                        float *y, size_t n);

/* y[0 .. n) = a op b over one run, operand a stepping one element at a
 * time when sa (dense) and staying on a[0] otherwise, b likewise with sb,
 * in variant `isa`: ONNX Add, Sub, Mul, Div, Max and Min (a NaN in either
 * operand gives NaN, as numpy's maximum), PRelu (a < 0 ? b a : a), and Pow
 * by one exponent of 2 (a a). false, touching nothing, for another
 * function, a Pow by anything else, or a variant that is not supported. */
bool plxk_vbinary(plxk_isa isa, plx_binary_func f, const float *a, bool sa, const float *b,
                  bool sb, float *y, size_t n);

#endif /* PLXK_VECMATH_H */
