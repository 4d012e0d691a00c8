/* cpu_ref's lp pools (kernels_funcs.h): pool and global_pool of kind
 * PLX_POOL_LP, y = (sum over the window of |x|^p)^(1/p) (ONNX LpPool and
 * GlobalLpPool), in float32, float16 and bfloat16.
 *
 * Padded positions count as 0 (they add nothing), so a window entirely in
 * the padding gives 0. Sums are in double, the result rounded once to the
 * dtype. p = 1 (sum of |x|) and p = 2 (square root of the sum of squares)
 * have loops of their own without pow; other p take pow per element. The
 * loops are chosen once per layer (a function per dtype and p), never per
 * element. Nothing here allocates. */
#include "kernels_compute.h"
#include "kernels_funcs.h"

#include <math.h>
#include <stdint.h>

static const char *lp_dtype(const plx_layer_view *l, const char *op, plx_pool_kind kind, int64_t p,
                            char *buf, size_t size) {
    plx_dtype dt = l->inputs[0].dtype;
    if (kind != PLX_POOL_LP) {
        return plxk_refuse(buf, size, "%s: pool kind %d has no kernel here", op, (int)kind);
    }
    if (p < 1) {
        return plxk_refuse(buf, size, "%s: lp pooling needs p >= 1, got %lld", op,
                           (long long)p);
    }
    if (dt != PLX_DTYPE_FLOAT32 && dt != PLX_DTYPE_FLOAT16 && dt != PLX_DTYPE_BFLOAT16) {
        return plxk_refuse(buf, size, "runs lp %s in float32, float16 and bfloat16 only, not %s",
                           op, plx_dtype_name(dt));
    }
    if (l->outputs[0].dtype != dt) {
        return plxk_refuse(buf, size, "%s: X is %s but Y is %s", op, plx_dtype_name(dt),
                           plx_dtype_name(l->outputs[0].dtype));
    }
    return NULL;
}

/* One element's value, by dtype: LOAD_F32 and the like take the pointer
 * and index and give a float. */
#define LOAD_F32(p, i) (((const float *)(p))[i])
#define LOAD_F16(p, i) plx_float16_to_float32(((const uint16_t *)(p))[i])
#define LOAD_BF16(p, i) plx_bfloat16_to_float32(((const uint16_t *)(p))[i])
#define STORE_F32(p, i, v) (((float *)(p))[i] = (float)(v))
#define STORE_F16(p, i, v) (((uint16_t *)(p))[i] = plx_float32_to_float16((float)(v)))
#define STORE_BF16(p, i, v) (((uint16_t *)(p))[i] = plx_float32_to_bfloat16((float)(v)))

/* |x|^p's terms and the root: a = |x| in double, s the sum */
#define TERM_P1(a) (a)
#define TERM_P2(a) ((a) * (a))
#define TERM_PN(a) pow((a), pd)
#define ROOT_P1(s) (s)
#define ROOT_P2(s) sqrt(s)
#define ROOT_PN(s) pow((s), 1.0 / pd)

typedef struct lp_job {
    const plx_window_geom *g;
    const void *x;
    void *y;
    double p;
} lp_job;

/* One output plane (image n, channel c = task) of a windowed lp pool,
 * over the geometry's three slots (the depth, slot 2, trivial but in a
 * 3-D pool). */
#define LP_PLANE(NAME, LOAD, STORE, TERM, ROOT)                                                \
    static void NAME(void *ctx, size_t task, size_t thread) {                                  \
        (void)thread;                                                                          \
        const lp_job *job = ctx;                                                               \
        const plx_window_geom *g = job->g;                                                     \
        const double pd = job->p;                                                              \
        (void)pd;                                                                              \
        int64_t xo = (int64_t)task * plxk_geom_in_plane(g);                                    \
        int64_t yo = (int64_t)task * plxk_geom_out_plane(g);                                   \
        for (int64_t o = 0; o < plxk_geom_out_plane(g); o++) {                                 \
            int64_t od = o / (g->out[0] * g->out[1]), oh = o / g->out[1] % g->out[0];          \
            int64_t ow = o % g->out[1];                                                        \
            double s = 0.0;                                                                    \
            for (int64_t kd = 0; kd < g->k[2]; kd++) {                                         \
                int64_t id = od * g->s[2] - g->pb[2] + kd * g->d[2];                           \
                for (int64_t kh = 0; id >= 0 && id < g->in[2] && kh < g->k[0]; kh++) {         \
                    int64_t ih = oh * g->s[0] - g->pb[0] + kh * g->d[0];                       \
                    if (ih < 0 || ih >= g->in[0]) {                                            \
                        continue;                                                              \
                    }                                                                          \
                    const int64_t row = xo + (id * g->in[0] + ih) * g->in[1];                  \
                    for (int64_t kw = 0; kw < g->k[1]; kw++) {                                 \
                        int64_t iw = ow * g->s[1] - g->pb[1] + kw * g->d[1];                   \
                        if (iw >= 0 && iw < g->in[1]) {                                        \
                            double a = fabs((double)LOAD(job->x, row + iw));                   \
                            s += TERM(a);                                                      \
                        }                                                                      \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
            STORE(job->y, yo + o, ROOT(s));                                                    \
        }                                                                                      \
    }

LP_PLANE(lp_f32_p1, LOAD_F32, STORE_F32, TERM_P1, ROOT_P1)
LP_PLANE(lp_f32_p2, LOAD_F32, STORE_F32, TERM_P2, ROOT_P2)
LP_PLANE(lp_f32_pn, LOAD_F32, STORE_F32, TERM_PN, ROOT_PN)
LP_PLANE(lp_f16_p1, LOAD_F16, STORE_F16, TERM_P1, ROOT_P1)
LP_PLANE(lp_f16_p2, LOAD_F16, STORE_F16, TERM_P2, ROOT_P2)
LP_PLANE(lp_f16_pn, LOAD_F16, STORE_F16, TERM_PN, ROOT_PN)
LP_PLANE(lp_bf16_p1, LOAD_BF16, STORE_BF16, TERM_P1, ROOT_P1)
LP_PLANE(lp_bf16_p2, LOAD_BF16, STORE_BF16, TERM_P2, ROOT_P2)
LP_PLANE(lp_bf16_pn, LOAD_BF16, STORE_BF16, TERM_PN, ROOT_PN)

/* The function for dtype dt and exponent p (row: float32, float16,
 * bfloat16; column: p 1, 2, other). */
static int lp_variant(plx_dtype dt, int64_t p) {
    int row = dt == PLX_DTYPE_FLOAT32 ? 0 : dt == PLX_DTYPE_FLOAT16 ? 1 : 2;
    return row * 3 + (p == 1 ? 0 : p == 2 ? 1 : 2);
}

static const char *lp_pool_prepare(const plx_layer_view *l, plx_window_geom *g, char *buf,
                                   size_t size) {
    const plx_pool_desc *desc = l->desc;
    const char *why = lp_dtype(l, "pool", desc->kind, desc->p, buf, size);
    if (why) {
        return why;
    }
    char msg[224];
    return plxk_window_refusal(plx_window_geom_pool_nd(l, PLXK_ATTR_LIMIT, g, msg, sizeof msg),
                               buf, size);
}

const char *plxk_check_lp_pool(const plx_layer_view *layer, char *buf, size_t size) {
    plx_window_geom g = {0};
    return lp_pool_prepare(layer, &g, buf, size);
}

bool plxk_run_lp_pool(const plxk_kernel_args *args) {
    static const plxk_pool_task_fn planes[9] = {lp_f32_p1,  lp_f32_p2,  lp_f32_pn,
                                                lp_f16_p1,  lp_f16_p2,  lp_f16_pn,
                                                lp_bf16_p1, lp_bf16_p2, lp_bf16_pn};
    char why[256];
    plx_window_geom g = {0};
    if (lp_pool_prepare(args->layer, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_pool_desc *desc = args->layer->desc;
    lp_job job = {&g, args->inputs[0], args->outputs[0], (double)desc->p};
    double cost_ns = (double)(g.n * g.c) * (double)plxk_geom_out_plane(&g) *
                     (double)plxk_geom_taps(&g) * (desc->p <= 2 ? 0.5 : 20.0);
    plxk_pool_run(plxk_pool_of(args->compute), (size_t)(g.n * g.c), cost_ns,
                  planes[lp_variant(args->layer->inputs[0].dtype, desc->p)], &job);
    return true;
}

static const char *global_lp_prepare(const plx_layer_view *l, int64_t *outer, int64_t *inner,
                                     char *buf, size_t size) {
    const plx_global_pool_desc *desc = l->desc;
    const char *why = lp_dtype(l, "global_pool", desc->kind, desc->p, buf, size);
    if (why) {
        return why;
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 3) {
        return plxk_refuse(buf, size, "global_pool takes X of rank >= 3, not %u", x->rank);
    }
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0; i < x->rank; i++) {
        dims[i] = i < 2 ? x->dims[i] : 1;
    }
    *outer = x->dims[0] * x->dims[1];
    *inner = plxk_dim_product(x, 2, x->rank);
    return plxk_require_output_shape(l, "global_pool", x->rank, dims, buf, size);
}

const char *plxk_check_global_lp_pool(const plx_layer_view *layer, char *buf, size_t size) {
    int64_t outer = 0, inner = 0;
    return global_lp_prepare(layer, &outer, &inner, buf, size);
}

/* One whole map of `inner` values from x[o * inner]. */
#define GLOBAL_LP(LOAD, STORE, TERM, ROOT)                                                     \
    do {                                                                                       \
        for (int64_t o = 0; o < outer; o++) {                                                  \
            double s = 0.0;                                                                    \
            for (int64_t i = 0; i < inner; i++) {                                              \
                double a = fabs((double)LOAD(x, o * inner + i));                               \
                s += TERM(a);                                                                  \
            }                                                                                  \
            STORE(y, o, ROOT(s));                                                              \
        }                                                                                      \
    } while (0)

#define GLOBAL_LP_DTYPE(LOAD, STORE)                                                           \
    do {                                                                                       \
        if (desc->p == 1) {                                                                    \
            GLOBAL_LP(LOAD, STORE, TERM_P1, ROOT_P1);                                          \
        } else if (desc->p == 2) {                                                             \
            GLOBAL_LP(LOAD, STORE, TERM_P2, ROOT_P2);                                          \
        } else {                                                                               \
            GLOBAL_LP(LOAD, STORE, TERM_PN, ROOT_PN);                                          \
        }                                                                                      \
    } while (0)

bool plxk_run_global_lp_pool(const plxk_kernel_args *args) {
    char why[256];
    int64_t outer = 0, inner = 0;
    if (global_lp_prepare(args->layer, &outer, &inner, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const plx_global_pool_desc *desc = args->layer->desc;
    plx_dtype dt = args->layer->inputs[0].dtype;
    const void *x = args->inputs[0];
    void *y = args->outputs[0];
    const double pd = (double)desc->p;
    if (dt == PLX_DTYPE_FLOAT32 && desc->p == 2) {
        /* the sum of squares in float lanes, block totals in double */
        for (int64_t o = 0; o < outer; o++) {
            double s = plxk_sum_floats((const float *)x + o * inner, (size_t)inner, 0.0f, true);
            ((float *)y)[o] = (float)sqrt(s);
        }
        return true;
    }
    switch (dt) {
    case PLX_DTYPE_FLOAT32: GLOBAL_LP_DTYPE(LOAD_F32, STORE_F32); break;
    case PLX_DTYPE_FLOAT16: GLOBAL_LP_DTYPE(LOAD_F16, STORE_F16); break;
    default: GLOBAL_LP_DTYPE(LOAD_BF16, STORE_BF16); break;
    }
    return true;
}
