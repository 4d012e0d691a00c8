/* The dense-math kernels' shared helpers that are not inline
 * (kernels_compute.h says what each does): the GEMM call with its workspace
 * and fused activation, and the layer checks the kernels share. One copy
 * for the six families' files rather than one each. */
#include "kernels_compute.h"

#include <stdio.h>
#include <string.h>

size_t plxk_gemm_ws(const plxk_compute *c, int64_t m, int64_t n, int64_t k) {
    size_t s = plxk_gemm_workspace_size(plxk_isa_of(c), (size_t)m, (size_t)n, (size_t)k,
                                           plxk_pool_threads(plxk_pool_of(c)));
    return s == SIZE_MAX ? SIZE_MAX : plxk_round_ws(s);
}

void *plxk_ws_at(const plxk_kernel_args *a, size_t used, size_t *left) {
    if (!a->workspace || used > a->workspace_size) {
        *left = 0;
        return NULL;
    }
    *left = a->workspace_size - used;
    return (char *)a->workspace + used;
}

void plxk_set_epilogue(const plx_activation_desc *act, plxk_gemm_args *g) {
    g->act = PLXK_ACT_NONE;
    if (act && act->func == PLX_ACT_RELU) {
        g->act = PLXK_ACT_RELU;
    } else if (act && act->func == PLX_ACT_CLIP) {
        g->act = PLXK_ACT_CLIP;
        g->lo = act->alpha;
        g->hi = act->beta;
    } else if (act && act->func == PLX_ACT_LEAKY_RELU) {
        g->act = PLXK_ACT_LEAKY;
        g->slope = act->alpha;
    }
}

bool plxk_product(const plxk_kernel_args *a, plxk_gemm_args *g, void *ws, size_t left,
                     const char *op) {
    plxk_set_epilogue(a->activation, g);
    if (!plxk_gemm(plxk_isa_of(a->compute), plxk_pool_of(a->compute), g, ws, left)) {
        return plxk_fail(a, "%s: the matrix product could not run (workspace of "
                               "%zu bytes too small for %zu x %zu x %zu?)",
                            op, left, g->m, g->n, g->k);
    }
    return true;
}

const char *plxk_require_float32(const plx_layer_view *l, const char *op, char *buf,
                                   size_t size) {
    for (uint32_t i = 0; i <= l->input_count; i++) {
        const plx_tensor_info *t = i < l->input_count ? &l->inputs[i] : &l->outputs[0];
        if (t->dtype != PLX_DTYPE_FLOAT32) {
            return plxk_refuse(buf, size, "runs %s in float32 only, not %s (%s %u)", op,
                       plx_dtype_name(t->dtype), i < l->input_count ? "input" : "output",
                       i < l->input_count ? i : 0);
        }
    }
    return NULL;
}

const char *plxk_require_output_shape(const plx_layer_view *l, const char *op, uint32_t rank,
                                        const int64_t *dims, char *buf, size_t size) {
    const plx_tensor_info *y = &l->outputs[0];
    bool same = y->rank == rank;
    for (uint32_t i = 0; same && i < rank; i++) {
        same = y->dims[i] == dims[i];
    }
    if (!same) {
        char want[160] = "", *p = want;
        for (uint32_t i = 0; i < rank && p < want + sizeof want - 24; i++) {
            p += snprintf(p, (size_t)(want + sizeof want - p), "%s%lld", i ? "," : "",
                          (long long)dims[i]);
        }
        return plxk_refuse(buf, size, "%s: the output info disagrees with the inputs (expected [%s])",
                   op, want);
    }
    return NULL;
}

const char *plxk_window_refusal(const char *why, char *buf, size_t size) {
    return why ? plxk_refuse(buf, size, "%s", why) : NULL;
}

enum { SUM_LANES = 16, SUM_BLOCK = 1024 };

double plxk_sum_floats(const float *x, size_t n, float shift, bool square) {
    double total = 0.0;
    for (size_t b0 = 0; b0 < n; b0 += SUM_BLOCK) {
        size_t len = n - b0 < SUM_BLOCK ? n - b0 : SUM_BLOCK;
        size_t main_len = len / SUM_LANES * SUM_LANES;
        const float *restrict p = x + b0;
        float part[SUM_LANES] = {0};
        /* two loops, not one with the choice inside: GCC left that scalar */
        if (square) {
            for (size_t i = 0; i < main_len; i += SUM_LANES) {
                for (size_t l = 0; l < SUM_LANES; l++) {
                    float d = p[i + l] - shift;
                    part[l] += d * d;
                }
            }
        } else {
            for (size_t i = 0; i < main_len; i += SUM_LANES) {
                for (size_t l = 0; l < SUM_LANES; l++) {
                    part[l] += p[i + l] - shift;
                }
            }
        }
        double block = 0.0;
        for (size_t i = main_len; i < len; i++) {
            float d = p[i] - shift;
            block += square ? d * d : d;
        }
        for (size_t l = 0; l < SUM_LANES; l++) {
            block += part[l];
        }
        total += block;
    }
    return total;
}

/* Elements per task of plxk_map_pooled: a multiple of every vector width,
 * and large enough that a task costs several microseconds. */
enum { MAP_CHUNK = 16384 };

typedef struct map_job {
    plxk_float_map fn;
    const void *ctx;
    const float *x;
    float *y;
    size_t n;
} map_job;

static void map_chunk(void *ctx, size_t task, size_t thread) {
    (void)thread;
    const map_job *j = ctx;
    size_t at = task * MAP_CHUNK, n = j->n - at < MAP_CHUNK ? j->n - at : MAP_CHUNK;
    j->fn(j->ctx, j->x + at, j->y + at, n);
}

void plxk_map_pooled(plxk_pool *pool, plxk_float_map fn, const void *ctx, const float *x,
                     float *y, size_t n, double ns_per_element) {
    map_job job = {fn, ctx, x, y, n};
    plxk_pool_run(pool, (n + MAP_CHUNK - 1) / MAP_CHUNK, (double)n * ns_per_element, map_chunk,
                  &job);
}

typedef struct vmap_params {
    plxk_isa isa;
    plxk_vfunc f;
} vmap_params;

static void vmap_run(const void *ctx, const float *x, float *y, size_t n) {
    const vmap_params *p = ctx;
    (void)plxk_vmap(p->isa, p->f, x, y, n); /* isa checked by plxk_vmap_pooled */
}

bool plxk_require_isa(const plxk_kernel_args *args, const char *op, plxk_isa *isa) {
    *isa = plxk_isa_of(args->compute);
    if (!plxk_isa_supported(*isa)) {
        return plxk_fail(args, "%s: the %s variant does not run on this CPU", op,
                         plxk_isa_name(*isa));
    }
    return true;
}

bool plxk_vmap_pooled(const plxk_kernel_args *args, plxk_vfunc f, const float *x, float *y,
                      size_t n, const char *op) {
    plxk_isa isa;
    if (!plxk_require_isa(args, op, &isa)) {
        return false;
    }
    vmap_params p = {isa, f};
    /* about a nanosecond an element for the costlier functions (erf, GELU) */
    plxk_map_pooled(plxk_pool_of(args->compute), vmap_run, &p, x, y, n, 1.0);
    return true;
}

int64_t plxk_broadcast_run(uint32_t rank, const int64_t *dims, const int64_t st[][PLX_MAX_RANK],
                           bool dense[2], uint32_t *outer) {
    /* kind[k]: -1 undecided (only dims of size 1 so far), 0 broadcast, 1
     * dense over the merged dims */
    int kind[2] = {-1, -1};
    int64_t run = 1;
    uint32_t d = rank;
    for (; d > 0; d--) {
        int64_t len = dims[d - 1];
        int next[2] = {kind[0], kind[1]};
        bool ok = true;
        for (int k = 0; k < 2 && ok && len != 1; k++) {
            int64_t s = st[k][d - 1];
            if (s == run && kind[k] != 0) {
                next[k] = 1;
            } else if (s == 0 && kind[k] != 1) {
                next[k] = 0;
            } else {
                ok = false;
            }
        }
        if (!ok) {
            break;
        }
        kind[0] = next[0];
        kind[1] = next[1];
        run *= len;
    }
    dense[0] = kind[0] != 0;
    dense[1] = kind[1] != 0;
    *outer = d;
    return run;
}
