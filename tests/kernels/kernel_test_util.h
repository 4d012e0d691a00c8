/* Helpers shared by the kernel tests: tensor infos, hand-built layer views,
 * a runner that collects a kernel's error message and a random stream. A test file defines
 * KT_LAYER_NAME (the name its layer views carry, which error messages
 * quote) before including this header. */
#ifndef PLEXUS_TEST_KERNEL_TEST_UTIL_H
#define PLEXUS_TEST_KERNEL_TEST_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#include "test_compute.h"

#ifndef KT_LAYER_NAME
#error "define KT_LAYER_NAME before including kernel_test_util.h"
#endif

#define SHAPE(...) (const int64_t[]){__VA_ARGS__}, (uint32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define SCALAR NULL, 0u

static inline plx_tensor_info info(plx_dtype t, const int64_t *dims, uint32_t rank) {
    plx_tensor_info ti;
    memset(&ti, 0, sizeof ti);
    ti.dtype = t;
    ti.rank = rank;
    for (uint32_t i = 0; i < rank; i++) {
        ti.dims[i] = dims[i];
    }
    return ti;
}

static inline size_t numel(const plx_tensor_info *t) {
    size_t n = 1;
    for (uint32_t i = 0; i < t->rank; i++) {
        n *= (size_t)t->dims[i];
    }
    return n;
}

static inline plx_layer_view layer_of(plx_op op, const void *desc, const plx_tensor_info *ins, uint32_t nin,
                               const plx_tensor_info *outs, uint32_t nout) {
    plx_layer_view l;
    memset(&l, 0, sizeof l);
    l.struct_size = sizeof(plx_layer_view);
    l.name = KT_LAYER_NAME;
    l.op = op;
    l.desc = desc;
    l.inputs = ins;
    l.input_count = nin;
    l.outputs = outs;
    l.output_count = nout;
    return l;
}

static char g_err[256];

/* A reproducible xorshift stream per test (seed it first) and integers in
 * [lo, hi]. */
static uint64_t g_rng;
static inline void seed(uint64_t s) { g_rng = s * 2654435761u + 88172645463325252u; }
static inline uint64_t rnd(void) {
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    return g_rng * 2685821657736338717u;
}
static inline int64_t rnd_i(int64_t lo, int64_t hi) {
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1u; /* 0: the whole int64 range */
    uint64_t r = span ? rnd() % span : rnd();
    return (int64_t)((uint64_t)lo + r); /* modulo 2^64 */
}

static inline bool run_layer(plxk_run_fn fn, const plx_layer_view *l, const void *const *ins,
                      void *const *outs) {
    plxk_kernel_args a = {.layer = l,
                             .inputs = ins,
                             .outputs = outs,
                             .error = g_err,
                             .error_size = sizeof g_err,
                             .compute = test_compute()};
    g_err[0] = 0;
    return plxk_kernel_run_once(fn, &a);
}

#endif
