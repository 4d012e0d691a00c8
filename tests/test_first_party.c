/* The first-party backends load through the same registry as third-party
 * plug-ins: cpu_ref (the reference CPU backend) and sample (the template for
 * backend authors). Module paths come from meson. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "test_util.h"

#ifndef CPU_REF_MODULE
#error "CPU_REF_MODULE must be defined by the build"
#endif
#ifndef SAMPLE_MODULE
#error "SAMPLE_MODULE must be defined by the build"
#endif

static const plx_backend_info *load_one(plx_runtime **rt, const char *file, const char *id) {
    const char *paths[] = {file};
    *rt = tu_runtime(paths, 1);
    const plx_backend_info *b = plx_runtime_find_backend(*rt, id);
    cr_assert(not(zero(ptr, (void *)b)), "backend '%s' did not load from %s\n%s", id, file,
              tu_dump(*rt));
    cr_assert(eq(sz, plx_runtime_rejection_count(*rt), 0));
    cr_assert(b->available, "'%s' unavailable: %s", id, b->reason ? b->reason : "");
    char real[PATH_MAX];
    cr_assert(not(zero(ptr, realpath(file, real))));
    cr_assert(eq(str, (char *)b->path, real));
    cr_assert(eq(u32, b->abi_version, PLX_ABI_VERSION));
    return b;
}

/* cpu_ref reports its standard capabilities as true. */
Test(first_party, cpu_ref) {
    plx_runtime *rt;
    const plx_backend_info *b = load_one(&rt, CPU_REF_MODULE, "cpu_ref");
    static const char *const caps[] = {
        PLX_CAP_ASYNC_EXECUTION, PLX_CAP_EXTERNALLY_MANAGED_MEMORY, PLX_CAP_PREIMPORT_IO_TENSORS,
        PLX_CAP_IMPORT_MALLOC,   PLX_CAP_IMPORT_DMA_BUF,            PLX_CAP_EXPORT_MALLOC,
    };
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        cr_assert(plx_backend_info_has_capability(b, caps[i]), "cpu_ref lacks %s", caps[i]);
    }
    cr_assert(eq(u32, plx_backend_info_import_sources(b),
                 (uint32_t)(PLX_MEMORY_SOURCE_MALLOC | PLX_MEMORY_SOURCE_DMA_BUF)));
    cr_assert(eq(u32, plx_backend_info_export_sources(b), (uint32_t)PLX_MEMORY_SOURCE_MALLOC));
    plx_runtime_destroy(&rt);
}

Test(first_party, sample) {
    plx_runtime *rt;
    const plx_backend_info *b = load_one(&rt, SAMPLE_MODULE, "sample");
    cr_assert(not(zero(ptr, (void *)b->name)));
    cr_assert(not(zero(ptr, (void *)b->version)));
    plx_runtime_destroy(&rt);
}

/* Both first-party backends side by side, found by directory scan. */
Test(first_party, both_by_directory) {
    char cpu_dir[PATH_MAX], sample_dir[PATH_MAX];
    snprintf(cpu_dir, sizeof cpu_dir, "%s", CPU_REF_MODULE);
    snprintf(sample_dir, sizeof sample_dir, "%s", SAMPLE_MODULE);
    *strrchr(cpu_dir, '/') = '\0';
    *strrchr(sample_dir, '/') = '\0';
    const char *paths[] = {cpu_dir, sample_dir};
    plx_runtime *rt = tu_runtime(paths, 2);
    cr_assert(eq(sz, tu_backend_id_count(rt, "cpu_ref"), 1));
    cr_assert(eq(sz, tu_backend_id_count(rt, "sample"), 1));
    cr_assert(lt(sz, tu_backend_index(rt, "cpu_ref"), tu_backend_index(rt, "sample")));
    plx_runtime_destroy(&rt);
}
