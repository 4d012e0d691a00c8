/* The registry against misbehaving plug-ins: every fake of
 * tests/plugins/fake_backend.c sits in one directory with the good ones, and
 * each test checks the exact reason one fake is rejected for, and that the
 * good plug-ins beside it still load (one bad plug-in never
 * breaks the loader). Requirement numbers refer to docs/backend-abi.md. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <plexus/network.h>

#include "test_util.h"

#define DESC_FULL_SIZE PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count)
#define FUNCS_FULL_SIZE PLX_STRUCT_SIZE_UPTO(plx_backend_functions, get_capabilities)

static plx_runtime *rt;

static void setup(void) {
    rt = tu_fake_runtime();
}

static void teardown(void) {
    plx_runtime_destroy(&rt);
}

TestSuite(rejections, .init = setup, .fini = teardown);

/* Checks the rejection of fake <file>.so: exact reason, resolved path, and
 * the id when `id` is given (NULL: not checked). */
static void expect_rejection(const char *file, const char *reason, const char *id) {
    const plx_rejection *r = tu_fake_rejection(rt, file);
    cr_assert(eq(str, (char *)r->reason, (char *)reason));
    if (id) {
        cr_assert(not(zero(ptr, (void *)r->id)), "rejection of %s names no id", file);
        cr_assert(eq(str, (char *)r->id, (char *)id));
    }
    tu_assert_good_fakes_loaded(rt);
}

/* The whole picture of one scan: which load, in which order, and that every
 * other fake is rejected once (R-2..R-10). */
Test(rejections, whole_directory) {
    size_t n = plx_runtime_backend_count(rt);
    cr_assert(eq(sz, n, 4), "%s", tu_dump(rt));
    /* File order: fake_abi_1_0.so, fake_first.so (id fake_zulu), fake_good.so,
     * fake_unavailable.so. */
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 0)->id, "fake_abi_1_0"));
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 1)->id, "fake_zulu"));
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 2)->id, "fake_good"));
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 3)->id, "fake_unavailable"));
    cr_assert(zero(ptr, (void *)plx_runtime_backend(rt, 4)));
    /* 25 fakes: 4 listed, the 21 others rejected, nothing skipped. */
    cr_assert(eq(sz, plx_runtime_rejection_count(rt), 21), "%s", tu_dump(rt));
    cr_assert(eq(sz, plx_runtime_skipped_count(rt), 0));
    /* One search entry, the application's, scanned without problem. */
    cr_assert(eq(sz, plx_runtime_search_path_count(rt), 1));
    const plx_search_entry *e = plx_runtime_search_path(rt, 0);
    cr_assert(eq(str, (char *)e->path, FAKE_PLUGIN_DIR));
    cr_assert(eq(int, (int)e->source, (int)PLX_SEARCH_SOURCE_APPLICATION));
    cr_assert(eq(str, (char *)e->problem, ""));
    tu_assert_good_fakes_loaded(rt);
}

/* a shared library without the entry symbol is not a backend. */
Test(rejections, no_entry_point) {
    expect_rejection("fake_not_backend",
                     "no entry point 'plx_backend_entry' in shared library", NULL);
    cr_assert(zero(ptr, (void *)tu_fake_rejection(rt, "fake_not_backend")->id));
}

/* an entry point that returns NULL is quoted with what it logged
 * at error level. */
Test(rejections, entry_returns_null_with_reason) {
    expect_rejection("fake_entry_null",
                     "entry point returned no descriptor: "
                     "fake_entry_null: needs a fake accelerator driver >= 9.1",
                     NULL);
    cr_assert(zero(ptr, (void *)tu_fake_rejection(rt, "fake_entry_null")->id));
}

/* ... and says so when it logged nothing. */
Test(rejections, entry_returns_null_silently) {
    expect_rejection("fake_entry_null_silent",
                     "entry point returned no descriptor (the backend logged no reason)", NULL);
}

/* the major version must match, in both directions. */
Test(rejections, abi_major_newer) {
    char want[256];
    snprintf(want, sizeof want,
             "built for ABI 2.0, this host implements %u.%u: major versions must match",
             (unsigned)PLX_ABI_VERSION_MAJOR, (unsigned)PLX_ABI_VERSION_MINOR);
    expect_rejection("fake_abi_major_newer", want, NULL);
}

Test(rejections, abi_major_older) {
    char want[256];
    snprintf(want, sizeof want,
             "built for ABI 0.9, this host implements %u.%u: major versions must match",
             (unsigned)PLX_ABI_VERSION_MAJOR, (unsigned)PLX_ABI_VERSION_MINOR);
    expect_rejection("fake_abi_major_older", want, NULL);
}

/* a backend built for a newer minor needs a newer host. */
Test(rejections, abi_minor_newer) {
    char want[256];
    snprintf(want, sizeof want,
             "built for ABI %u.%u, this host implements %u.%u: the backend needs a newer host",
             (unsigned)PLX_ABI_VERSION_MAJOR, (unsigned)PLX_ABI_VERSION_MINOR + 1,
             (unsigned)PLX_ABI_VERSION_MAJOR, (unsigned)PLX_ABI_VERSION_MINOR);
    expect_rejection("fake_abi_minor_newer", want, NULL);
}

/* a backend built for an older (or the same) minor loads, and reports
 * the version it declared. */
Test(rejections, abi_older_minor_loads) {
    const plx_backend_info *b = plx_runtime_find_backend(rt, "fake_abi_1_0");
    cr_assert(not(zero(ptr, (void *)b)), "%s", tu_dump(rt));
    cr_assert(b->available);
    cr_assert(eq(u32, b->abi_version, PLX_MAKE_ABI_VERSION(1, 0)));
    cr_assert(plx_backend_info_has_capability(b, PLX_CAP_ASYNC_EXECUTION));
    tu_assert_good_fakes_loaded(rt);
}

/* a descriptor too small to hold even the version. */
Test(rejections, descriptor_tiny) {
    char want[256];
    snprintf(want, sizeof want, "descriptor too small: 4 bytes, ABI 1.0 needs at least %zu",
             (size_t)DESC_FULL_SIZE);
    expect_rejection("fake_desc_tiny", want, NULL);
}

/* a descriptor that holds the version but stops before ABI 1.0's end. */
Test(rejections, descriptor_short) {
    char want[256];
    snprintf(want, sizeof want, "descriptor too small: %u bytes, ABI 1.0 needs at least %zu",
             (unsigned)PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, name),
             (size_t)DESC_FULL_SIZE);
    expect_rejection("fake_desc_short", want, NULL);
}

/* the function table is required ... */
Test(rejections, function_table_null) {
    expect_rejection("fake_funcs_null", "descriptor has no function table", "fake_funcs_null");
}

/* ... and must be at least as large as ABI 1.0's. */
Test(rejections, function_table_short) {
    char want[256];
    snprintf(want, sizeof want, "function table too small: %u bytes, ABI 1.0 needs at least %zu",
             (unsigned)PLX_STRUCT_SIZE_UPTO(plx_backend_functions, check_available),
             (size_t)FUNCS_FULL_SIZE);
    expect_rejection("fake_funcs_short", want, "fake_funcs_short");
}

/* create and destroy are required. */
Test(rejections, create_null) {
    expect_rejection("fake_null_create", "required function 'create' is NULL", "fake_null_create");
}

Test(rejections, destroy_null) {
    expect_rejection("fake_null_destroy", "required function 'destroy' is NULL",
                     "fake_null_destroy");
}

/* ids are [a-z][a-z0-9_]*, 1 to 63 characters. */
Test(rejections, invalid_id) {
    expect_rejection("fake_bad_id",
                     "invalid backend id 'Bad-Id': must match [a-z][a-z0-9_]* and have 1 to 63 "
                     "characters",
                     NULL);
    cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "Bad-Id")));
}

/* ids are unique; the first file in search order wins. */
Test(rejections, duplicate_id) {
    char first[PATH_MAX], want[PATH_MAX + 128];
    tu_fake_realpath(first, "fake_good");
    snprintf(want, sizeof want, "duplicate backend id 'fake_good': already provided by %s", first);
    expect_rejection("fake_good_dup", want, "fake_good");
    cr_assert(eq(sz, tu_backend_id_count(rt, "fake_good"), 1));
    cr_assert(eq(str, (char *)plx_runtime_find_backend(rt, "fake_good")->path, first));
}

/* a failing create rejects the plug-in with the backend's message. */
Test(rejections, create_fails) {
    expect_rejection("fake_create_fails",
                     "create failed: backend 'fake_create_fails': firmware handshake timed out",
                     "fake_create_fails");
    cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "fake_create_fails")));
}

/* a standard key must have its standard type. */
Test(rejections, capability_wrong_type) {
    const plx_rejection *r = tu_fake_rejection(rt, "fake_caps_bad_type");
    cr_assert(eq(int, strncmp(r->reason, "invalid capability", 18), 0), "reason: %s", r->reason);
    cr_assert(not(zero(ptr, strstr(r->reason, PLX_CAP_ASYNC_EXECUTION))), "reason: %s",
              r->reason);
    cr_assert(eq(str, (char *)r->id, "fake_caps_bad_type"));
    cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "fake_caps_bad_type")));
    tu_assert_good_fakes_loaded(rt);
}

/* import_alignment (ABI 1.2) is an integer power of two up to 4096. */
Test(rejections, capability_bad_import_alignment) {
    const plx_rejection *r = tu_fake_rejection(rt, "fake_caps_bad_alignment");
    cr_assert(eq(str, (char *)r->reason,
                 "invalid capability 'import_alignment': 48 is not a power of two from 1 to "
                 "4096"));
    cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "fake_caps_bad_alignment")));
    tu_assert_good_fakes_loaded(rt);
}

/* fence_domain (ABI 1.4) is a string of 1 to 127 bytes. */
Test(rejections, capability_empty_fence_domain) {
    const plx_rejection *r = tu_fake_rejection(rt, "fake_caps_empty_domain");
    cr_assert(eq(str, (char *)r->reason,
                 "invalid capability 'fence_domain': must be 1 to 127 bytes"));
    cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "fake_caps_empty_domain")));
    tu_assert_good_fakes_loaded(rt);
}

/* allocates_planned_memory needs the backend allocator's functions. */
Test(rejections, allocates_planned_memory_without_its_functions) {
    const plx_rejection *r = tu_fake_rejection(rt, "fake_caps_allocates");
    /* The fake's table ends at get_capabilities: the rejection says the
     * function lies beyond it. */
    char want[256];
    snprintf(want, sizeof want,
             "required function 'allocate_planned_buffer' is NULL (it lies beyond the function "
             "table's struct_size, %zu bytes) (the backend reports allocates_planned_memory; ABI 1.4 or "
             "later)",
             (size_t)FUNCS_FULL_SIZE);
    cr_assert(eq(str, (char *)r->reason, want));
    tu_assert_good_fakes_loaded(rt);
}

/* memory_export_dma_buf needs export_external_memory, through which
 * the host lends the backend's dma-bufs to import layers. */
Test(rejections, export_dma_buf_without_its_function) {
    const plx_rejection *r = tu_fake_rejection(rt, "fake_caps_exports_dma_buf");
    /* The fake's table ends at get_capabilities: the rejection says the
     * function lies beyond it. */
    char want[256];
    snprintf(want, sizeof want,
             "required function 'export_external_memory' is NULL (it lies beyond the function "
             "table's struct_size, %zu bytes) (the backend reports memory_export_dma_buf; ABI 1.4 or "
             "later)",
             (size_t)FUNCS_FULL_SIZE);
    cr_assert(eq(str, (char *)r->reason, want));
    cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "fake_caps_exports_dma_buf")));
    tu_assert_good_fakes_loaded(rt);
}

/* a key that is neither standard nor vendor.name is invalid. */
Test(rejections, capability_unknown_key) {
    const plx_rejection *r = tu_fake_rejection(rt, "fake_caps_unknown_key");
    cr_assert(eq(int, strncmp(r->reason, "invalid capability", 18), 0), "reason: %s", r->reason);
    cr_assert(not(zero(ptr, strstr(r->reason, "turbo"))), "reason: %s", r->reason);
    cr_assert(eq(str, (char *)r->id, "fake_caps_unknown_key"));
    cr_assert(zero(ptr, (void *)plx_runtime_find_backend(rt, "fake_caps_unknown_key")));
    tu_assert_good_fakes_loaded(rt);
}

/* unavailable is not a rejection: the backend is listed, not created,
 * with the backend's message verbatim and no capabilities. */
Test(rejections, unavailable_is_listed) {
    const plx_backend_info *b = plx_runtime_find_backend(rt, "fake_unavailable");
    cr_assert(not(zero(ptr, (void *)b)));
    cr_assert(not(b->available));
    cr_assert(not(zero(ptr, (void *)b->reason)));
    cr_assert(eq(str, (char *)b->reason, "no fake accelerator found: /dev/fake0 does not exist"));
    cr_assert(eq(sz, b->capability_count, 0));
    cr_assert(not(plx_backend_info_has_capability(b, PLX_CAP_ASYNC_EXECUTION)));
    char real[PATH_MAX];
    cr_assert(eq(str, (char *)b->path, (char *)tu_fake_realpath(real, "fake_unavailable")));
    cr_assert(zero(ptr, (void *)tu_rejection_at(rt, real)));
    cr_assert(zero(ptr, (void *)tu_skipped_id(rt, "fake_unavailable")));
    tu_assert_good_fakes_loaded(rt);
}

/* A loaded backend reports what its descriptor said. */
Test(rejections, good_backend_info) {
    const plx_backend_info *b = plx_runtime_find_backend(rt, "fake_good");
    cr_assert(not(zero(ptr, (void *)b)));
    cr_assert(eq(str, (char *)b->name, "Fake backend (fake_good)"));
    cr_assert(eq(str, (char *)b->version, "0.0.1"));
    cr_assert(eq(u32, b->abi_version, PLX_ABI_VERSION));
    cr_assert(b->available);
    cr_assert(zero(ptr, (void *)b->reason));
    cr_assert(eq(sz, b->option_count, 1));
    cr_assert(eq(str, (char *)b->options[0].key, "mode"));
    cr_assert(eq(str, (char *)b->options[0].default_value, "exact"));
    cr_assert(eq(sz, b->capability_count, 5));
}

/* ------------------------------------------------------------------------ */
/* whether a backend runs layers, and the table cut short               */
/* ------------------------------------------------------------------------ */

/* A runtime over the plug-ins that run no layers, fake_good and
 * fake_abi_1_0 (by file), and cpu_ref. */
static plx_runtime *layers_runtime(void) {
    char good[PATH_MAX], abi10[PATH_MAX];
    const char *paths[] = {LAYERS_PLUGIN_DIR, tu_fake_path(good, "fake_good"),
                           tu_fake_path(abi10, "fake_abi_1_0"), CPU_REF_MODULE};
    return tu_runtime(paths, sizeof paths / sizeof paths[0]);
}

/* Each reason a backend runs no layers, told by the one function the
 * optimiser asks too; cpu_ref runs layers. NULL is answered. */
Test(rejections, runs_layers_and_why_not) {
    plx_runtime *lrt = layers_runtime();
    const plx_backend_info *cpu = plx_runtime_find_backend(lrt, "cpu_ref");
    cr_assert(not(zero(ptr, (void *)cpu)), "%s", tu_dump(lrt));
    cr_assert(plx_backend_info_runs_layers(cpu));
    cr_assert(zero(ptr, (void *)plx_backend_info_no_layers_reason(cpu)));
    cr_assert(zero(ptr, (void *)plx_backend_info_table_warning(cpu)));

    const plx_backend_info *good = plx_runtime_find_backend(lrt, "fake_good");
    cr_assert(not(plx_backend_info_runs_layers(good)));
    char want[256];
    snprintf(want, sizeof want,
             "its function table ends before the network functions: struct_size is %zu bytes, "
             "check_layer needs at least %zu (set struct_size to sizeof(plx_backend_functions))",
             (size_t)FUNCS_FULL_SIZE,
             (size_t)PLX_STRUCT_SIZE_UPTO(plx_backend_functions, check_layer));
    cr_assert(eq(str, (char *)plx_backend_info_no_layers_reason(good), want));

    const plx_backend_info *nocl = plx_runtime_find_backend(lrt, "fake_no_check_layer");
    cr_assert(not(zero(ptr, (void *)nocl)), "%s", tu_dump(lrt));
    cr_assert(not(plx_backend_info_runs_layers(nocl)));
    cr_assert(eq(str, (char *)plx_backend_info_no_layers_reason(nocl),
                 "its function table leaves check_layer NULL"));

    const plx_backend_info *old = plx_runtime_find_backend(lrt, "fake_abi_1_0");
    cr_assert(not(plx_backend_info_runs_layers(old)));
    cr_assert(not(zero(ptr, strstr(plx_backend_info_no_layers_reason(old),
                                   "it declares ABI 1.0, which has no network functions"))));

    cr_assert(not(plx_backend_info_runs_layers(NULL)));
    cr_assert(zero(ptr, (void *)plx_backend_info_no_layers_reason(NULL)));
    cr_assert(zero(ptr, (void *)plx_backend_info_table_warning(NULL)));
    plx_runtime_destroy(&lrt);
}

/* The trap: capabilities that only a backend running layers uses, from a
 * backend that runs none, are a warning naming the capability and the
 * reason; a table cut short with nothing that says layers were meant is
 * not (the host cannot see beyond struct_size). */
Test(rejections, table_cut_short_is_a_warning) {
    plx_runtime *lrt = layers_runtime();
    const plx_backend_info *good = plx_runtime_find_backend(lrt, "fake_good");
    char want[512];
    snprintf(want, sizeof want,
             "reports capability 'async_execution', which only a backend that runs layers "
             "uses, but it runs none: %s",
             plx_backend_info_no_layers_reason(good));
    cr_assert(eq(str, (char *)plx_backend_info_table_warning(good), want));
    const plx_backend_info *nocl = plx_runtime_find_backend(lrt, "fake_no_check_layer");
    cr_assert(not(zero(ptr, strstr(plx_backend_info_table_warning(nocl),
                                   "but it runs none: its function table leaves check_layer "
                                   "NULL"))));
    const plx_backend_info *vendor = plx_runtime_find_backend(lrt, "fake_vendor_caps_only");
    cr_assert(not(zero(ptr, (void *)vendor)), "%s", tu_dump(lrt));
    cr_assert(not(plx_backend_info_runs_layers(vendor)));
    cr_assert(zero(ptr, (void *)plx_backend_info_table_warning(vendor)));
    /* The optimiser leaves such a backend out with the same reason. */
    plx_network *n = NULL;
    cr_assert(zero(ptr, plx_network_create(&n)));
    int64_t dims[] = {4};
    plx_tensor_info info = tu_f32(1, dims);
    plx_layer_id in = 0, relu = 0, out = 0;
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    cr_assert(zero(ptr, plx_network_add_input(n, "x", 0, &info, &in)));
    cr_assert(zero(ptr, plx_network_add_layer(n, "r", PLX_OP_ACTIVATION, &d, 1, 1, &relu)));
    cr_assert(zero(ptr, plx_network_add_output(n, "y", 0, &out)));
    cr_assert(zero(ptr, plx_network_connect(n, in, 0, relu, 0)));
    cr_assert(zero(ptr, plx_network_connect(n, relu, 0, out, 0)));
    const char *ids[] = {"fake_good", "cpu_ref"};
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = ids;
    oo.backend_count = 2;
    plx_optimized_network *on = NULL;
    cr_assert(zero(ptr, plx_optimize(lrt, n, &oo, &on)));
    char note[512];
    snprintf(note, sizeof note, "backend 'fake_good' runs no layers: %s",
             plx_backend_info_no_layers_reason(good));
    cr_assert(eq(str, (char *)plx_optimized_network_note(on, 0), note));
    plx_optimized_network_destroy(&on);
    plx_network_destroy(&n);
    plx_runtime_destroy(&lrt);
}
