/* The environment: PLEXUS_BACKEND_PATH adds search entries after the
 * application's, PLEXUS_BACKENDS filters by id, PLEXUS_SKIP_DEFAULT_DIR=1
 * leaves the installed directory out, and ignore_environment turns them
 * off. Each Criterion test runs in its own process, so setenv here does
 * not leak into other tests. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "test_util.h"

static char tmp[PATH_MAX], app_dir[PATH_MAX], env_dir[PATH_MAX];

static void setup(void) {
    unsetenv("PLEXUS_BACKEND_PATH");
    unsetenv("PLEXUS_BACKENDS");
    unsetenv("PLEXUS_SKIP_DEFAULT_DIR");
    tu_mkdtemp(tmp);
    tu_join(app_dir, tmp, "app");
    tu_join(env_dir, tmp, "env");
    cr_assert(eq(int, mkdir(app_dir, 0755), 0));
    cr_assert(eq(int, mkdir(env_dir, 0755), 0));
    tu_link_fake(app_dir, "fake_good", "fake_good.so");
    tu_link_fake(env_dir, "fake_unavailable", "fake_unavailable.so");
}

static void teardown(void) {
    tu_rmtree(tmp);
}

TestSuite(environment, .init = setup, .fini = teardown);

/* Options that read the environment but still skip the default directory. */
static plx_runtime *runtime_reading_env(bool ignore_environment) {
    const char *paths[] = {app_dir};
    plx_runtime_options o;
    tu_options(&o);
    o.ignore_environment = ignore_environment;
    o.search_paths = paths;
    o.search_path_count = 1;
    return tu_create(&o);
}

static void expect_entry(const plx_runtime *rt, size_t i, const char *path,
                         plx_search_source source, const char *problem) {
    const plx_search_entry *e = plx_runtime_search_path(rt, i);
    cr_assert(not(zero(ptr, (void *)e)), "no search entry #%zu\n%s", i, tu_dump(rt));
    cr_assert(eq(str, (char *)e->path, (char *)path));
    cr_assert(eq(int, (int)e->source, (int)source));
    cr_assert(eq(str, (char *)e->problem, (char *)problem));
}

/* Directories and files from PLEXUS_BACKEND_PATH come after the
 * application's, tagged "environment"; one that does not exist says so. */
Test(environment, backend_path_after_application) {
    char missing[PATH_MAX], file[PATH_MAX], value[4 * PATH_MAX];
    tu_join(missing, tmp, "missing");
    tu_fake_path(file, "fake_first");
    snprintf(value, sizeof value, "%s:%s:%s", env_dir, missing, file);
    cr_assert(eq(int, setenv("PLEXUS_BACKEND_PATH", value, 1), 0));

    plx_runtime *rt = runtime_reading_env(false);
    cr_assert(eq(sz, plx_runtime_search_path_count(rt), 4));
    expect_entry(rt, 0, app_dir, PLX_SEARCH_SOURCE_APPLICATION, "");
    expect_entry(rt, 1, env_dir, PLX_SEARCH_SOURCE_ENVIRONMENT, "");
    expect_entry(rt, 2, missing, PLX_SEARCH_SOURCE_ENVIRONMENT, "does not exist");
    expect_entry(rt, 3, file, PLX_SEARCH_SOURCE_ENVIRONMENT, "");
    cr_assert(eq(str, (char *)plx_search_source_name(PLX_SEARCH_SOURCE_ENVIRONMENT),
                 "environment"));

    cr_assert(eq(sz, plx_runtime_backend_count(rt), 3));
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 0)->id, "fake_good"));
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 1)->id, "fake_unavailable"));
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 2)->id, "fake_zulu"));
    cr_assert(eq(sz, plx_runtime_rejection_count(rt), 0));
    plx_runtime_destroy(&rt);
}

/* PLEXUS_SKIP_DEFAULT_DIR=1 does what skip_default_dir does (the options
 * here do not set it): only the application's directory is searched. */
Test(environment, skip_default_dir) {
    cr_assert(eq(int, setenv("PLEXUS_SKIP_DEFAULT_DIR", "1", 1), 0));
    const char *paths[] = {app_dir};
    plx_runtime_options o;
    tu_options(&o);
    o.ignore_environment = false;
    o.skip_default_dir = false;
    o.search_paths = paths;
    o.search_path_count = 1;
    plx_runtime *rt = tu_create(&o);
    cr_assert(eq(sz, plx_runtime_search_path_count(rt), 1), "%s", tu_dump(rt));
    expect_entry(rt, 0, app_dir, PLX_SEARCH_SOURCE_APPLICATION, "");
    cr_assert(eq(sz, plx_runtime_note_count(rt), 0));
    plx_runtime_destroy(&rt);
}

/* A value other than 0, 1 or empty is named in a note and changes nothing. */
Test(environment, skip_default_dir_bad_value) {
    cr_assert(eq(int, setenv("PLEXUS_SKIP_DEFAULT_DIR", "yes", 1), 0));
    plx_runtime *rt = runtime_reading_env(false);
    cr_assert(eq(sz, plx_runtime_note_count(rt), 1), "%s", tu_dump(rt));
    cr_assert(eq(str, (char *)plx_runtime_note(rt, 0),
                 "PLEXUS_SKIP_DEFAULT_DIR is 'yes', neither 0 nor 1: ignored"));
    cr_assert(eq(sz, plx_runtime_backend_count(rt), 1));
    plx_runtime_destroy(&rt);
}

/* ignore_environment: PLEXUS_BACKEND_PATH and PLEXUS_BACKENDS are not read. */
Test(environment, ignored_on_request) {
    cr_assert(eq(int, setenv("PLEXUS_BACKEND_PATH", env_dir, 1), 0));
    cr_assert(eq(int, setenv("PLEXUS_BACKENDS", "nothing_at_all", 1), 0));
    plx_runtime *rt = runtime_reading_env(true);
    cr_assert(eq(sz, plx_runtime_search_path_count(rt), 1));
    expect_entry(rt, 0, app_dir, PLX_SEARCH_SOURCE_APPLICATION, "");
    cr_assert(eq(sz, plx_runtime_backend_count(rt), 1));
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 0)->id, "fake_good"));
    cr_assert(eq(sz, plx_runtime_skipped_count(rt), 0));
    cr_assert(eq(sz, plx_runtime_note_count(rt), 0));
    plx_runtime_destroy(&rt);
}

/* PLEXUS_BACKENDS: valid backends not listed are skipped, not rejected; a
 * listed id that nothing provides is noted; broken plug-ins are still
 * rejected. */
Test(environment, backends_filter) {
    cr_assert(eq(int, setenv("PLEXUS_BACKENDS", "fake_good,fake_missing_id", 1), 0));
    const char *paths[] = {FAKE_PLUGIN_DIR};
    plx_runtime_options o;
    tu_options(&o);
    o.ignore_environment = false;
    o.search_paths = paths;
    o.search_path_count = 1;
    plx_runtime *rt = tu_create(&o);

    cr_assert(eq(sz, plx_runtime_backend_count(rt), 1));
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 0)->id, "fake_good"));

    char real[PATH_MAX];
    static const char *const skipped_ids[] = {"fake_zulu", "fake_unavailable", "fake_abi_1_0"};
    static const char *const skipped_files[] = {"fake_first", "fake_unavailable", "fake_abi_1_0"};
    for (size_t i = 0; i < 3; i++) {
        const plx_rejection *s = tu_skipped_id(rt, skipped_ids[i]);
        cr_assert(not(zero(ptr, (void *)s)), "%s was not skipped\n%s", skipped_ids[i],
                  tu_dump(rt));
        cr_assert(eq(str, (char *)s->reason, "not listed in PLEXUS_BACKENDS"));
        cr_assert(eq(str, (char *)s->path, (char *)tu_fake_realpath(real, skipped_files[i])));
        cr_assert(zero(ptr, (void *)tu_rejection_at(rt, real)));
    }
    /* The filter applies as soon as the id is known, before create: backends
     * that would fail create or report bad capabilities are skipped too. */
    static const char *const never_created[] = {"fake_create_fails", "fake_caps_bad_type",
                                                "fake_caps_unknown_key",
                                                "fake_caps_bad_alignment",
                                                "fake_caps_empty_domain", "fake_caps_allocates",
                                                "fake_caps_exports_dma_buf"};
    for (size_t i = 0; i < 7; i++) {
        const plx_rejection *s = tu_skipped_id(rt, never_created[i]);
        cr_assert(not(zero(ptr, (void *)s)), "%s was not skipped", never_created[i]);
        cr_assert(eq(str, (char *)s->reason, "not listed in PLEXUS_BACKENDS"));
    }
    cr_assert(eq(sz, plx_runtime_skipped_count(rt), 10), "%s", tu_dump(rt));
    cr_assert(tu_has_note(rt, "fake_missing_id"));
    cr_assert(not(tu_has_note(rt, "'fake_good'")));
    /* Broken plug-ins are still reported. */
    cr_assert(eq(str, (char *)tu_fake_rejection(rt, "fake_funcs_null")->reason,
                 "descriptor has no function table"));
    plx_runtime_destroy(&rt);
}

/* A filter list of several ids. */
Test(environment, backends_filter_several_ids) {
    cr_assert(eq(int, setenv("PLEXUS_BACKENDS", "fake_zulu,fake_good", 1), 0));
    const char *paths[] = {FAKE_PLUGIN_DIR};
    plx_runtime_options o;
    tu_options(&o);
    o.ignore_environment = false;
    o.search_paths = paths;
    o.search_path_count = 1;
    plx_runtime *rt = tu_create(&o);
    cr_assert(eq(sz, plx_runtime_backend_count(rt), 2));
    /* The filter selects; it does not reorder. */
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 0)->id, "fake_zulu"));
    cr_assert(eq(str, (char *)plx_runtime_backend(rt, 1)->id, "fake_good"));
    cr_assert(not(zero(ptr, (void *)tu_skipped_id(rt, "fake_unavailable"))));
    cr_assert(eq(sz, plx_runtime_note_count(rt), 0));
    plx_runtime_destroy(&rt);
}

/* PLEXUS_BACKENDS that names no id once parsed (",,," or blanks: variables
 * joined while unset) is ignored with a note, not a filter that loads
 * nothing. */
Test(environment, backends_filter_naming_nothing_is_noted) {
    cr_assert(eq(int, setenv("PLEXUS_BACKENDS", ",, ,\t,", 1), 0));
    plx_runtime *rt = runtime_reading_env(false);
    cr_assert(not(zero(ptr, (void *)plx_runtime_find_backend(rt, "fake_good"))), "%s",
              tu_dump(rt));
    cr_assert(eq(sz, plx_runtime_skipped_count(rt), 0));
    cr_assert(tu_has_note(rt, "PLEXUS_BACKENDS=',, ,\\x09,' names no backend: ignored, every "
                              "backend is loaded"),
              "%s", tu_dump(rt));
    plx_runtime_destroy(&rt);
}

typedef struct captured {
    char text[512];
    size_t lines;
} captured;

static void capture_log(void *user_data, plx_log_level level, const char *source,
                        const char *message) {
    (void)level;
    (void)source;
    captured *c = user_data;
    if (strstr(message, "PLEXUS_LOG")) {
        snprintf(c->text, sizeof c->text, "%s", message);
        c->lines++;
    }
}

/* A PLEXUS_LOG value that is no level is named in the warning escaped and
 * cut to 32 bytes: 100 KB of it, with an ESC sequence, was echoed raw. */
Test(environment, log_level_garbage_is_shown_escaped_and_cut) {
    size_t big = 100000;
    char *value = malloc(big + 1);
    cr_assert(not(zero(ptr, value)));
    memcpy(value, "\x1b[2Jx", 5);
    memset(value + 5, 'y', big - 5);
    value[big] = '\0';
    cr_assert(eq(int, setenv("PLEXUS_LOG", value, 1), 0));
    free(value);
    captured c = {{0}, 0};
    plx_runtime_options o;
    tu_options(&o);
    o.log_level = PLX_LOG_LEVEL_DEFAULT;
    o.log_fn = capture_log;
    o.log_user_data = &c;
    plx_runtime *rt = tu_create(&o);
    plx_runtime_destroy(&rt);
    unsetenv("PLEXUS_LOG");
    cr_assert(eq(sz, c.lines, 1));
    /* 32 bytes shown: ESC, "[2Jx" and 27 y */
    cr_assert(eq(str, c.text,
                 "PLEXUS_LOG='\\x1b[2Jxyyyyyyyyyyyyyyyyyyyyyyyyyyy...' is not one of error, "
                 "warn, info, debug; using warn"));
}
