/* The compute (GEMM variant and thread pool) the kernel tests give the
 * kernels. Include after Criterion. */
#ifndef PLEXUS_TEST_KERNELS_TEST_COMPUTE_H
#define PLEXUS_TEST_KERNELS_TEST_COMPUTE_H

#include <stdbool.h>
#include <stdlib.h>

#include <criterion/criterion.h>

#include "gemm.h"

/* What the kernels run with: the GEMM variant of CPU_REF_TEST_ISA
 * (portable, avx2 or avx512; unset: the best this CPU runs) on a pool of
 * CPU_REF_TEST_THREADS threads (unset: 1), so that meson runs the suite
 * once per variant. A variant this CPU cannot run skips the test. */
static inline const plxk_compute *test_compute(void) {
    static plxk_compute compute;
    static bool ready;
    if (!ready) {
        const char *isa = getenv("CPU_REF_TEST_ISA"), *threads = getenv("CPU_REF_TEST_THREADS");
        compute.isa = plxk_isa_best();
        if (isa && !plxk_isa_parse(isa, &compute.isa)) {
            cr_assert(false, "CPU_REF_TEST_ISA=%s is not a variant", isa);
        }
        long n = threads ? strtol(threads, NULL, 10) : 1;
        char err[128];
        compute.pool = n > 1 ? plxk_pool_create((size_t)n, err, sizeof err) : NULL;
        ready = true;
    }
    if (!plxk_isa_supported(compute.isa)) {
        cr_skip_test("this CPU cannot run the %s variant", plxk_isa_name(compute.isa));
    }
    return &compute;
}

#endif
