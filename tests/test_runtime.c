/* The runtime API around the registry: misuse, backends compiled into the
 * application, per-backend options, capability queries, independent
 * runtimes, and create/destroy churn. Requirement numbers refer to
 * docs/backend-abi.md. */
#include <dirent.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "test_util.h"

/* ------------------------------------------------------------------------ */
/* Misuse                                                                     */
/* ------------------------------------------------------------------------ */

Test(runtime_api, create_with_null_options) {
    plx_runtime *rt = (plx_runtime *)(uintptr_t)1; /* must be cleared on entry */
    plx_status st = plx_runtime_create(NULL, &rt);
    cr_assert(not(zero(ptr, st)));
    cr_assert(eq(int, (int)plx_status_get_code(st), (int)PLX_INVALID_ARGUMENT));
    cr_assert(zero(ptr, rt));
    plx_status_free(st);
}

Test(runtime_api, create_with_zero_struct_size) {
    plx_runtime_options o;
    tu_options(&o);
    o.struct_size = 0;
    plx_runtime *rt = (plx_runtime *)(uintptr_t)1;
    plx_status st = plx_runtime_create(&o, &rt);
    cr_assert(not(zero(ptr, st)));
    cr_assert(eq(int, (int)plx_status_get_code(st), (int)PLX_INVALID_ARGUMENT));
    cr_assert(zero(ptr, rt));
    plx_status_free(st);
}

Test(runtime_api, create_with_null_out_pointer) {
    plx_runtime_options o;
    tu_options(&o);
    plx_status st = plx_runtime_create(&o, NULL);
    cr_assert(not(zero(ptr, st)));
    cr_assert(eq(int, (int)plx_status_get_code(st), (int)PLX_INVALID_ARGUMENT));
    plx_status_free(st);
}

Test(runtime_api, create_with_null_search_path_array) {
    plx_runtime_options o;
    tu_options(&o);
    o.search_path_count = 1;
    plx_runtime *rt = NULL;
    plx_status st = plx_runtime_create(&o, &rt);
    cr_assert(eq(int, (int)plx_status_get_code(st), (int)PLX_INVALID_ARGUMENT));
    cr_assert(zero(ptr, rt));
    plx_status_free(st);
}

Test(runtime_api, destroy_null_is_fine) {
    plx_runtime_destroy(NULL);
    plx_runtime *rt = NULL;
    plx_runtime_destroy(&rt);
    cr_assert(zero(ptr, rt));
}

Test(runtime_api, destroy_clears_the_pointer) {
    plx_runtime *rt = tu_fake_runtime();
    plx_runtime_destroy(&rt);
    cr_assert(zero(ptr, rt));
    plx_runtime_destroy(&rt); /* a second destroy through the same variable is harmless */
}

Test(runtime_api, empty_runtime) {
    plx_runtime *rt = tu_runtime(NULL, 0);
    cr_assert(eq(sz, plx_runtime_backend_count(rt), 0));
    cr_assert(eq(sz, plx_runtime_rejection_count(rt), 0));
    cr_assert(eq(sz, plx_runtime_search_path_count(rt), 0));
    cr_assert(eq(sz, plx_runtime_note_count(rt), 0));
    plx_runtime_destroy(&rt);
}

Test(runtime_api, index_out_of_range) {
    plx_runtime *rt = tu_fake_runtime();
    cr_assert(zero(ptr, (void *)plx_runtime_backend(rt, plx_runtime_backend_count(rt))));
    cr_assert(zero(ptr, (void *)plx_runtime_backend(rt, SIZE_MAX)));
    cr_assert(zero(ptr, (void *)plx_runtime_rejection(rt, plx_runtime_rejection_count(rt))));
    cr_assert(zero(ptr, (void *)plx_runtime_skipped(rt, plx_runtime_skipped_count(rt))));
    cr_assert(zero(ptr, (void *)plx_runtime_search_path(rt, plx_runtime_search_path_count(rt))));
    cr_assert(zero(ptr, (void *)plx_runtime_note(rt, plx_runtime_note_count(rt))));
    cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "no_such_backend")));
    cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, NULL)));
    plx_runtime_destroy(&rt);
}

Test(runtime_api, status_of_null) {
    cr_assert(eq(int, (int)plx_status_get_code(NULL), (int)PLX_OK));
    cr_assert(eq(str, (char *)plx_status_get_message(NULL), "OK"));
    plx_status_free(NULL);
    cr_assert(eq(u32, plx_abi_version(), PLX_ABI_VERSION));
}

/* ------------------------------------------------------------------------ */
/* Static backends                                                            */
/* ------------------------------------------------------------------------ */

/* The instance of a static test backend; plx_backend is the backend's type. */
struct plx_backend {
    const plx_host *host;
    void *scratch;
};

/* What the static backends saw, for the tests to check (one process per test). */
static struct {
    uint32_t entry_host_abi;
    uint32_t host_struct_size;
    size_t option_count;
    char option_key[32];
    char option_value[32];
    bool aligned_alloc_ok;
    int destroyed;
} seen;

static plx_status static_create(const plx_host *host, const plx_option *options,
                                size_t option_count, plx_backend **out_backend) {
    *out_backend = NULL;
    seen.option_count = option_count;
    if (option_count > 0) {
        snprintf(seen.option_key, sizeof seen.option_key, "%s", options[0].key);
        snprintf(seen.option_value, sizeof seen.option_value, "%s", options[0].value);
    }
    struct plx_backend *b = host->alloc(host, sizeof *b, 0);
    if (!b) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    b->host = host;
    b->scratch = host->alloc(host, 100, 64);
    seen.aligned_alloc_ok = b->scratch && ((uintptr_t)b->scratch % 64) == 0 &&
                            host->alloc(host, 8, 3) == NULL;
    *out_backend = b;
    return NULL;
}

static void static_destroy(plx_backend *backend) {
    seen.destroyed++;
    backend->host->free(backend->host, backend->scratch);
    backend->host->free(backend->host, backend);
}

static const plx_backend_functions static_functions = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_functions, get_capabilities),
    .create = static_create,
    .destroy = static_destroy,
    /* check_available and get_capabilities left NULL: optional. */
};

static const plx_option_info static_options[] = {
    {"level", "how hard to try", "1"},
};

static const plx_backend_descriptor static_good_descriptor = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count),
    .abi_version = PLX_ABI_VERSION,
    .id = "static_good",
    .name = "Static test backend",
    .version = "1.2.3",
    .functions = &static_functions,
    .options = static_options,
    .option_count = 1,
};

static const plx_backend_descriptor *static_good_entry(uint32_t host_abi_version,
                                                       const plx_host *host) {
    seen.entry_host_abi = host_abi_version;
    seen.host_struct_size = host->struct_size;
    return &static_good_descriptor;
}

static const plx_backend_descriptor static_bad_id_descriptor = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count),
    .abi_version = PLX_ABI_VERSION,
    .id = "Bad-Static",
    .name = "Static test backend with a bad id",
    .version = "1.2.3",
    .functions = &static_functions,
};

static const plx_backend_descriptor *static_bad_id_entry(uint32_t host_abi_version,
                                                         const plx_host *host) {
    (void)host_abi_version;
    (void)host;
    return &static_bad_id_descriptor;
}

static const plx_backend_descriptor *static_null_entry(uint32_t host_abi_version,
                                                       const plx_host *host) {
    (void)host_abi_version;
    host->log(host, PLX_LOG_ERROR, "static: %s", "no device");
    host->log(host, PLX_LOG_WARN, "a warning is not quoted");
    return NULL;
}

static const plx_backend_descriptor static_fake_good_descriptor = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count),
    .abi_version = PLX_ABI_VERSION,
    .id = "fake_good",
    .name = "Static backend that takes the id of a plug-in",
    .version = "1.0.0",
    .functions = &static_functions,
};

static const plx_backend_descriptor *static_fake_good_entry(uint32_t host_abi_version,
                                                            const plx_host *host) {
    (void)host_abi_version;
    (void)host;
    return &static_fake_good_descriptor;
}

/* a static backend is checked like a plug-in, listed with path
 * NULL, and registered before any plug-in. */
Test(static_backends, good_one_is_listed_first) {
    plx_backend_entry_fn entries[] = {static_good_entry};
    const char *paths[] = {FAKE_PLUGIN_DIR};
    plx_runtime_options o;
    tu_options(&o);
    o.search_paths = paths;
    o.search_path_count = 1;
    o.static_backends = entries;
    o.static_backend_count = 1;
    plx_runtime *rt = tu_create(&o);
    const plx_backend_info *b = plx_runtime_backend(rt, 0);
    cr_assert(not(zero(ptr, (void *)b)));
    cr_assert(eq(str, (char *)b->id, "static_good"));
    cr_assert(zero(ptr, (void *)b->path));
    cr_assert(b->available);
    cr_assert(eq(str, (char *)b->name, "Static test backend"));
    cr_assert(eq(str, (char *)b->version, "1.2.3"));
    cr_assert(eq(sz, b->capability_count, 0)); /* no get_capabilities: none */
    cr_assert(eq(sz, b->option_count, 1));
    /* The host table the entry point saw. */
    cr_assert(eq(u32, seen.entry_host_abi, PLX_ABI_VERSION));
    cr_assert(ge(u32, seen.host_struct_size,
                 (uint32_t)PLX_STRUCT_SIZE_UPTO(plx_host, host_data)));
    cr_assert(seen.aligned_alloc_ok, "host->alloc ignored the alignment or accepted 3");
    tu_assert_good_fakes_loaded(rt);
    plx_runtime_destroy(&rt);
    cr_assert(eq(int, seen.destroyed, 1));
}

/* a static backend with a bad id is rejected with path NULL. */
Test(static_backends, bad_id_is_rejected) {
    plx_backend_entry_fn entries[] = {static_bad_id_entry, static_good_entry};
    plx_runtime_options o;
    tu_options(&o);
    o.static_backends = entries;
    o.static_backend_count = 2;
    plx_runtime *rt = tu_create(&o);
    cr_assert(eq(sz, plx_runtime_rejection_count(rt), 1));
    const plx_rejection *r = plx_runtime_rejection(rt, 0);
    cr_assert(zero(ptr, (void *)r->path));
    cr_assert(eq(str, (char *)r->reason,
                 "invalid backend id 'Bad-Static': must match [a-z][a-z0-9_]* and have 1 to 63 "
                 "characters"));
    cr_assert(eq(sz, plx_runtime_backend_count(rt), 1));
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 0)->id, "static_good"));
    plx_runtime_destroy(&rt);
}

/* a static entry that returns NULL is quoted with its error log only. */
Test(static_backends, null_entry_quotes_error_log) {
    plx_backend_entry_fn entries[] = {static_null_entry};
    plx_runtime_options o;
    tu_options(&o);
    o.static_backends = entries;
    o.static_backend_count = 1;
    plx_runtime *rt = tu_create(&o);
    cr_assert(eq(sz, plx_runtime_rejection_count(rt), 1));
    const plx_rejection *r = plx_runtime_rejection(rt, 0);
    cr_assert(zero(ptr, (void *)r->path));
    cr_assert(zero(ptr, (void *)r->id));
    cr_assert(eq(str, (char *)r->reason, "entry point returned no descriptor: static: no device"));
    plx_runtime_destroy(&rt);
}

/* a static backend takes its id first; the plug-in with the same id
 * is the duplicate. */
Test(static_backends, static_wins_over_plugin) {
    plx_backend_entry_fn entries[] = {static_fake_good_entry};
    const char *paths[] = {FAKE_PLUGIN_DIR};
    plx_runtime_options o;
    tu_options(&o);
    o.search_paths = paths;
    o.search_path_count = 1;
    o.static_backends = entries;
    o.static_backend_count = 1;
    plx_runtime *rt = tu_create(&o);
    cr_assert(eq(sz, tu_backend_id_count(rt, "fake_good"), 1));
    cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "fake_good")->path));
    const plx_rejection *r = tu_fake_rejection(rt, "fake_good");
    const char *prefix = "duplicate backend id 'fake_good': already provided by ";
    cr_assert(eq(int, strncmp(r->reason, prefix, strlen(prefix)), 0), "reason: %s", r->reason);
    plx_runtime_destroy(&rt);
}

/* create sees only the keys the descriptor declares, with their values. */
Test(static_backends, declared_option_reaches_create) {
    plx_backend_entry_fn entries[] = {static_good_entry};
    plx_backend_option opts[] = {{"static_good", "level", "3"}};
    plx_runtime_options o;
    tu_options(&o);
    o.static_backends = entries;
    o.static_backend_count = 1;
    o.backend_options = opts;
    o.backend_option_count = 1;
    plx_runtime *rt = tu_create(&o);
    cr_assert(not(zero(ptr, (void *)plx_runtime_find_backend(rt, "static_good"))));
    cr_assert(eq(sz, seen.option_count, 1));
    cr_assert(eq(str, seen.option_key, "level"));
    cr_assert(eq(str, seen.option_value, "3"));
    plx_runtime_destroy(&rt);
}

/* ------------------------------------------------------------------------ */
/* Options for plug-ins                                                 */
/* ------------------------------------------------------------------------ */

static char tmp[PATH_MAX];

static void make_good_dir(void) {
    tu_mkdtemp(tmp);
    tu_link_fake(tmp, "fake_good", "fake_good.so");
    tu_link_fake(tmp, "fake_first", "fake_first.so");
}

static void remove_tmp(void) {
    tu_rmtree(tmp);
}

TestSuite(options, .init = make_good_dir, .fini = remove_tmp);

static plx_runtime *runtime_with_option(const char *id, const char *key, const char *value) {
    const char *paths[] = {tmp};
    plx_backend_option opt = {id, key, value};
    plx_runtime_options o;
    tu_options(&o);
    o.search_paths = paths;
    o.search_path_count = 1;
    o.backend_options = &opt;
    o.backend_option_count = 1;
    return tu_create(&o);
}

Test(options, unknown_key_rejects_backend) {
    plx_runtime *rt = runtime_with_option("fake_good", "nope", "1");
    const plx_rejection *r = tu_fake_rejection(rt, "fake_good");
    cr_assert(eq(str, (char *)r->reason,
                 "unknown option 'nope' for backend 'fake_good' (accepted: mode)"));
    cr_assert(eq(str, (char *)r->id, "fake_good"));
    cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "fake_good")));
    cr_assert(not(zero(ptr, (void *)plx_runtime_find_backend(rt, "fake_zulu"))));
    plx_runtime_destroy(&rt);
}

Test(options, bad_value_fails_create) {
    plx_runtime *rt = runtime_with_option("fake_good", "mode", "slow");
    const plx_rejection *r = tu_fake_rejection(rt, "fake_good");
    cr_assert(eq(str, (char *)r->reason,
                 "create failed: invalid value 'slow' for option 'mode': expected fast or exact"));
    cr_assert(eq(str, (char *)r->id, "fake_good"));
    cr_assert(not(zero(ptr, (void *)plx_runtime_find_backend(rt, "fake_zulu"))));
    plx_runtime_destroy(&rt);
}

Test(options, good_value_is_accepted) {
    plx_runtime *rt = runtime_with_option("fake_good", "mode", "fast");
    const plx_backend_info *b = plx_runtime_find_backend(rt, "fake_good");
    cr_assert(not(zero(ptr, (void *)b)));
    cr_assert(b->available);
    cr_assert(eq(sz, plx_runtime_rejection_count(rt), 0));
    cr_assert(eq(sz, plx_runtime_note_count(rt), 0));
    plx_runtime_destroy(&rt);
}

Test(options, option_for_absent_backend_is_a_note) {
    plx_runtime *rt = runtime_with_option("nobody_here", "mode", "fast");
    cr_assert(tu_has_note(rt, "nobody_here"));
    cr_assert(eq(sz, plx_runtime_rejection_count(rt), 0));
    cr_assert(eq(sz, plx_runtime_backend_count(rt), 2));
    plx_runtime_destroy(&rt);
}

/* ------------------------------------------------------------------------ */
/* Capabilities                                                  */
/* ------------------------------------------------------------------------ */

Test(capabilities, fake_good) {
    plx_runtime *rt = tu_fake_runtime();
    const plx_backend_info *b = plx_runtime_find_backend(rt, "fake_good");
    cr_assert(not(zero(ptr, (void *)b)));

    /* counts only when present, boolean and true. */
    cr_assert(plx_backend_info_has_capability(b, PLX_CAP_ASYNC_EXECUTION));
    cr_assert(plx_backend_info_has_capability(b, PLX_CAP_IMPORT_MALLOC));
    const plx_capability *emm = plx_backend_info_capability(b, PLX_CAP_EXTERNALLY_MANAGED_MEMORY);
    cr_assert(not(zero(ptr, (void *)emm)), "present-but-false capability not listed");
    cr_assert(eq(int, (int)emm->type, (int)PLX_VALUE_BOOL));
    cr_assert(not(emm->bool_value));
    cr_assert(not(plx_backend_info_has_capability(b, PLX_CAP_EXTERNALLY_MANAGED_MEMORY)));
    cr_assert(zero(ptr, (void *)plx_backend_info_capability(b, PLX_CAP_PREIMPORT_IO_TENSORS)));
    cr_assert(not(plx_backend_info_has_capability(b, PLX_CAP_PREIMPORT_IO_TENSORS)));

    /* vendor keys are listed untouched. */
    const plx_capability *tiles = plx_backend_info_capability(b, "acme.tile_count");
    cr_assert(not(zero(ptr, (void *)tiles)));
    cr_assert(eq(int, (int)tiles->type, (int)PLX_VALUE_INT));
    cr_assert(eq(i64, tiles->int_value, 4));
    cr_assert(not(plx_backend_info_has_capability(b, "acme.tile_count")));
    const plx_capability *name = plx_backend_info_capability(b, "acme.codename");
    cr_assert(not(zero(ptr, (void *)name)));
    cr_assert(eq(int, (int)name->type, (int)PLX_VALUE_STRING));
    cr_assert(eq(str, (char *)name->string_value, "roadrunner"));
    cr_assert(eq(sz, b->capability_count, 5));

    cr_assert(eq(u32, plx_backend_info_import_sources(b), (uint32_t)PLX_MEMORY_SOURCE_MALLOC));
    cr_assert(eq(u32, plx_backend_info_export_sources(b), 0));
    plx_runtime_destroy(&rt);
}

/* ------------------------------------------------------------------------ */
/* Independent runtimes                                                       */
/* ------------------------------------------------------------------------ */

TestSuite(independence, .init = make_good_dir, .fini = remove_tmp);

Test(independence, two_runtimes_one_process) {
    char only[PATH_MAX];
    tu_join(only, tmp, "only_first");
    cr_assert(eq(int, mkdir(only, 0755), 0));
    tu_link_fake(only, "fake_first", "fake_first.so");

    const char *only_paths[] = {only};
    plx_runtime *small = tu_runtime(only_paths, 1);
    plx_runtime *big = tu_fake_runtime();
    cr_assert(eq(sz, plx_runtime_backend_count(small), 1));
    cr_assert(eq(sz, plx_runtime_backend_count(big), 4));
    cr_assert(zero(ptr, (void *)plx_runtime_find_backend(small, "fake_good")));
    cr_assert(eq(sz, plx_runtime_rejection_count(small), 0));

    const plx_backend_info *zulu = plx_runtime_find_backend(small, "fake_zulu");
    cr_assert(not(zero(ptr, (void *)zulu)));
    /* Both runtimes hold fake_first.so: closing it in one must not unmap it
     * for the other. */
    plx_runtime_destroy(&big);
    cr_assert(eq(str, (char *)zulu->id, "fake_zulu"));
    cr_assert(eq(str, (char *)zulu->name, "Fake backend (fake_zulu)"));
    char real[PATH_MAX];
    cr_assert(eq(str, (char *)zulu->path, (char *)tu_fake_realpath(real, "fake_first")));
    const plx_capability *c = plx_backend_info_capability(zulu, "acme.codename");
    cr_assert(not(zero(ptr, (void *)c)));
    cr_assert(eq(str, (char *)c->string_value, "roadrunner"));
    cr_assert(plx_backend_info_has_capability(zulu, PLX_CAP_ASYNC_EXECUTION));
    plx_runtime_destroy(&small); /* calls fake_first.so's destroy: still mapped */
}

/* ------------------------------------------------------------------------ */
/* Churn: nothing leaks across create/destroy                                 */
/* ------------------------------------------------------------------------ */

static size_t open_fd_count(void) {
    DIR *d = opendir("/proc/self/fd");
    cr_assert(not(zero(ptr, d)));
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return n;
}

static int churn_iterations(void) {
    return tu_under_valgrind() ? 20 : 1000;
}

static void churn(int iterations) {
    for (int i = 0; i < iterations; i++) {
        plx_runtime *rt = tu_fake_runtime();
        cr_assert(eq(sz, plx_runtime_backend_count(rt), 4));
        plx_runtime_destroy(&rt);
    }
}

/* Every plug-in file opened is closed again, rejected ones included. */
Test(churn, no_file_descriptor_leak, .timeout = 300) {
    churn(5); /* warm-up: the dynamic linker and libc keep some state after first use */
    size_t before = open_fd_count();
    churn(churn_iterations());
    size_t after = open_fd_count();
    cr_assert(eq(sz, after, before), "file descriptors leaked: %zu before, %zu after", before,
              after);
}

/* Heap use does not grow with the number of runtimes created. */
Test(churn, bounded_heap_growth, .timeout = 300) {
    if (tu_under_asan() || tu_under_valgrind()) {
        cr_skip_test("heap growth not measured: AddressSanitizer or valgrind replaces malloc, "
                     "and reports leaks itself");
    }
    churn(5);
    struct mallinfo2 before = mallinfo2();
    int iterations = churn_iterations();
    churn(iterations);
    struct mallinfo2 after = mallinfo2();
    long long growth = (long long)after.uordblks - (long long)before.uordblks;
    cr_assert(lt(i64, (int64_t)growth, 64 * 1024),
              "heap grew by %lld bytes over %d create/destroy cycles", growth, iterations);
}
