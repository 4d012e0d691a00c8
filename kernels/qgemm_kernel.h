/* Internal to cpu_ref's 8-bit integer GEMM (qgemm.h): what each
 * instruction-set build of qgemm_kernel.c gives qgemm.c (the driver, which
 * splits the work into regions for the threads, packs, corrects for the
 * zero points and writes the output stage).
 *
 * The kernels see a plain product of unsigned bytes by signed bytes:
 * qgemm.c's packing makes A unsigned (a signed value x ^ 0x80, its zero
 * point + 128) and B signed (an unsigned value x ^ 0x80, its zero point -
 * 128), which leaves every (a - za)(b - zb) unchanged; the zero points are
 * then applied once per element of C (qgemm.c):
 *
 *   sum_p (a - za)(b - zb[j]) = sum_p a b - zb[j] rowsum(a)[i] - za csum[j]
 *
 * with csum[j] = sum_p (b - zb[j]) kept beside the packed B. Every sum is
 * computed modulo 2^32 (uint32_t), so all variants agree bit for bit even
 * where a sum leaves the int32 range.
 *
 * Packed layouts, with KG (1 or 4) consecutive values of K kept together
 * so that one 32-bit lane of a vector holds a whole group:
 * - B: panels of NR columns over all of K (rounded up to KG); in panel q
 *   (columns q NR ...) group g (K values g KG ... g KG + KG - 1) is NR x KG
 *   bytes, column c's KG values at q NR Kp + g NR KG + c KG. Zero past N
 *   and past K.
 * - A: one KC pass of MC rows: panels of MR rows; in panel r (rows r MR
 *   ...) group g is MR x KG values (uint8, or int16 holding 0 to 255: see
 *   a_bytes), row i's
 *   at r MR kcp + g MR KG + i KG (kcp: the pass's K rounded up to KG);
 *   zero past the pass's K. Rows past the block's end are never read. */
#ifndef PLXK_QGEMM_KERNEL_H
#define PLXK_QGEMM_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemm_kernel.h" /* PLXK_ISA_SYMBOL */
#include "qgemm.h"

typedef struct plxk_qgemm_impl {
    /* The micro-kernel computes MR x NR of C; a pass packs KC of K (a
     * multiple of KG) and MC rows of A (a multiple of MR); a region has at
     * most NC columns (a multiple of NR). */
    size_t mr, nr, kg, kc, mc, nc;
    size_t a_bytes;      /* bytes of a packed A value: 1 (uint8) or 2 (int16, 0 to 255) */
    double macs_per_ns;  /* rough speed of one thread, for the pool's cost */
    const char *method;  /* what multiplies: "vnni", "int16", "c" */
    /* Packs columns [j0, j0+nc) of B over all of K into panels (layout
     * above, nc rounded up to NR) and writes sums[c], for c <
     * round_up(nc, NR), the sum over K of column j0+c's packed (signed)
     * values, modulo 2^32 (0 past nc). */
    void (*pack_b)(const plxk_qgemm_args *g, size_t j0, size_t nc, int8_t *panels,
                   uint32_t *sums);
    /* Packs A rows [i0, i0+mc) x K [p0, p0+kc) (layout above, the values
     * unsigned). With rowsum not NULL, adds each row's sum of its packed
     * values to rowsum[r] (first: writes it). */
    void (*pack_a)(const plxk_qgemm_args *g, size_t i0, size_t mc, size_t p0, size_t kc,
                   void *out, uint32_t *rowsum, bool first);
    /* acc[r ldacc + c] = (first) or += (later passes) the product of the
     * packed A block (mc rows, kc of K) and the B panels from `b` (the
     * pass's first group of the first panel, panels b_panel bytes apart),
     * for r < mc and c < round_up(nc, NR): columns past nc get zeros'
     * products. Modulo 2^32. */
    void (*multiply)(size_t mc, size_t nc, size_t kc, const void *a, const int8_t *b,
                     size_t b_panel, uint32_t *acc, size_t ldacc, bool first);
} plxk_qgemm_impl;

/* One per build of qgemm_kernel.c; the AVX-512 build gives two that share
 * B's packing (NR, KG): the 16-bit method of AVX-512 BW and AVX-512 VNNI's
 * vpdpbusd (its functions compiled for that extension alone: callers check
 * the CPU first). AVX2 and AVX-512 exist in x86 builds only. */
extern const plxk_qgemm_impl plxk_qgemm_impl_portable;
#if defined(PLXK_GEMM_X86)
extern const plxk_qgemm_impl plxk_qgemm_impl_avx2;
extern const plxk_qgemm_impl plxk_qgemm_impl_avx512;
extern const plxk_qgemm_impl plxk_qgemm_impl_avx512_vnni;
#endif

/* For the tests and the benchmark: whether plxk_qgemm's AVX-512 variant
 * may use VNNI where the CPU has it (the default), or must keep to the
 * 16-bit method. Both pack B the same way and fit the same workspace, so a
 * switch invalidates nothing; it takes effect at the next call. */
void plxk_qgemm_allow_vnni(bool allow);

/* The method plxk_qgemm uses for `isa` now: "vnni", "int16" or "c"; NULL
 * when the variant was not compiled in. */
const char *plxk_qgemm_method(plxk_isa isa);

#endif /* PLXK_QGEMM_KERNEL_H */
