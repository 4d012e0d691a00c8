/* cpu_ref's int8 GEMM (qgemm.h) as plain reference loops: exact, every
 * output stage, B read in place or from its packed copy (row-major K x N).
 * One variant for every ISA and one thread; the blocked per-ISA kernels
 * replace it. */
#include "qgemm.h"
#include <math.h>
#include <string.h>
static int32_t ld(const void *p, bool s, ptrdiff_t i) { return s ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i]; }
size_t plxk_qgemm_workspace_size(plxk_isa isa, size_t m, size_t n, size_t k, size_t threads) { (void)isa; (void)threads; return m && n && k ? 64 : 0; }
size_t plxk_qgemm_packed_b_size(plxk_isa isa, size_t n, size_t k) { (void)isa; return n && k ? n * k : 0; }
bool plxk_qgemm_pack_b(plxk_isa isa, const plxk_qgemm_args *a, void *out, size_t size) {
    (void)isa; if (!a->b || size < a->n * a->k) return false;
    for (size_t p = 0; p < a->k; p++) for (size_t j = 0; j < a->n; j++) ((uint8_t *)out)[p * a->n + j] = ((const uint8_t *)a->b)[(ptrdiff_t)p * a->b_rs + (ptrdiff_t)j * a->b_cs];
    return true;
}
bool plxk_qgemm(plxk_isa isa, plxk_pool *pool, const plxk_qgemm_args *a, void *ws, size_t wss) {
    (void)isa; (void)pool; (void)ws; (void)wss;
    for (size_t i = 0; i < a->m; i++) for (size_t j = 0; j < a->n; j++) {
        int32_t zb = a->b_zero_points ? a->b_zero_points[j] : a->b_zero_point, acc = 0;
        for (size_t p = 0; p < a->k; p++) {
            int32_t bv = a->packed_b ? (a->b_signed ? ((const int8_t *)a->packed_b)[p * a->n + j] : ((const uint8_t *)a->packed_b)[p * a->n + j]) : ld(a->b, a->b_signed, (ptrdiff_t)p * a->b_rs + (ptrdiff_t)j * a->b_cs);
            acc += (ld(a->a, a->a_signed, (ptrdiff_t)i * a->a_rs + (ptrdiff_t)p * a->a_cs) - a->a_zero_point) * (bv - zb);
        }
        int32_t v = acc + (a->bias ? a->bias[j] : 0);
        ptrdiff_t o = (ptrdiff_t)i * a->c_rs + (ptrdiff_t)j * a->c_cs;
        float sc = a->scale ? a->scale[(ptrdiff_t)j * a->scale_stride] : 1.0f;
        if (a->output == PLXK_QOUT_INT32) ((int32_t *)a->c)[o] = v;
        else if (a->output == PLXK_QOUT_FLOAT) ((float *)a->c)[o] = (float)v * sc + (a->fbias ? a->fbias[j] : 0.0f);
        else { float r = nearbyintf((float)v * sc) + (float)a->out_zero_point;
            if (a->output == PLXK_QOUT_UINT8) ((uint8_t *)a->c)[o] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
            else ((int8_t *)a->c)[o] = (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r); }
    }
    return true;
}
