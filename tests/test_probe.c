/* The probe (docs/backend-abi.md, "The probe"): plug-ins whose code
 * crashes, aborts, exits, hangs or writes to stdout while they load
 * (tests/plugins/hostile, each one fault) are rejected with what happened,
 * and the good plug-in beside them loads; results come from the cache the
 * second time; a corrupt cache is only a cache; a missing probe is a note.
 * No hostile plug-in is ever loaded in this process. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "test_util.h"

static char tmp[PATH_MAX];

static void setup(void) {
    tu_mkdtemp(tmp);
}

static void teardown(void) {
    tu_rmtree(tmp);
}

TestSuite(probe, .init = setup, .fini = teardown);

/* Counts the log lines that say a result came from the cache. */
static void count_cache_hits(void *user_data, plx_log_level level, const char *source,
                             const char *message) {
    (void)level;
    (void)source;
    if (strstr(message, "the probe's result from")) {
        ++*(size_t *)user_data;
    }
}

/* Options over `paths`, probing with PROBE_EXE (or `probe`), a time limit
 * of 1.5 s and the cache in tmp/cache; *hits counts cache hits. */
static void probing_options(plx_runtime_options *o, const char *const *paths, size_t count,
                            const char *probe, size_t *hits) {
    static char cache[PATH_MAX];
    tu_join(cache, tmp, "cache");
    tu_options(o);
    o->search_paths = paths;
    o->search_path_count = count;
    o->probe_plugins = true;
    o->probe_path = probe ? probe : PROBE_EXE;
    o->probe_timeout_ms = 1500;
    o->probe_cache_dir = cache;
    o->log_fn = count_cache_hits;
    o->log_user_data = hits;
}

static plx_runtime *probing_runtime(const char *const *paths, size_t count, const char *probe,
                                    size_t *hits) {
    plx_runtime_options o;
    probing_options(&o, paths, count, probe, hits);
    return tu_create(&o);
}

static const struct {
    const char *file, *reason;
} hostile[] = {
    {"crash_in_constructor", "killed by SIGSEGV in its constructors (dlopen) during the probe"},
    {"stdout_in_constructor", "wrote 21 bytes to stdout during the probe: a plug-in must not "
                              "write to the host's output"},
    {"crash_in_entry", "killed by SIGSEGV in its entry point during the probe"},
    {"abort_in_entry", "killed by SIGABRT in its entry point during the probe"},
    {"exit_in_entry", "exited with status 0 in its entry point during the probe"},
    {"hang_in_entry", "hung in its entry point during the probe: no answer in 1500 ms, killed"},
    {"crash_in_check_available", "killed by SIGSEGV in check_available during the probe"},
    {"crash_in_create", "killed by SIGSEGV in create during the probe"},
    {"crash_in_destroy", "killed by SIGSEGV in destroy during the probe"},
};
#define HOSTILE_COUNT (sizeof hostile / sizeof hostile[0])

/* Every hostile file rejected with its reason; crash_in_create_fast and
 * fake_good, probed without options, load. */
static void expect_hostile_rejected(const plx_runtime *rt) {
    for (size_t i = 0; i < HOSTILE_COUNT; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s.so", HOSTILE_PLUGIN_DIR, hostile[i].file);
        const plx_rejection *r = tu_rejection_at(rt, path);
        cr_assert(not(zero(ptr, (void *)r)), "no rejection of %s\n%s", path, tu_dump(rt));
        cr_assert(eq(str, (char *)r->reason, (char *)hostile[i].reason), "%s", path);
    }
    cr_assert(eq(sz, plx_runtime_rejection_count(rt), HOSTILE_COUNT), "%s", tu_dump(rt));
    const char *good[] = {"fake_good", "crash_in_create_fast"};
    for (size_t i = 0; i < 2; i++) {
        const plx_backend_info *b = plx_runtime_find_backend(rt, good[i]);
        cr_assert(not(zero(ptr, (void *)b)), "%s", tu_dump(rt));
        cr_assert(b->available);
    }
}

Test(probe, hostile_plugins_are_rejected_and_cached, .timeout = 60) {
    char good[PATH_MAX];
    const char *paths[] = {HOSTILE_PLUGIN_DIR, tu_fake_path(good, "fake_good")};
    size_t hits = 0;
    plx_runtime *rt = probing_runtime(paths, 2, NULL, &hits);
    expect_hostile_rejected(rt);
    cr_assert(eq(sz, hits, 0));
    plx_runtime_destroy(&rt);

    /* again: every verdict from the cache, none probed (the hang would
     * take its 1.5 s again) */
    rt = probing_runtime(paths, 2, NULL, &hits);
    expect_hostile_rejected(rt);
    cr_assert(eq(sz, hits, HOSTILE_COUNT + 2));
    plx_runtime_destroy(&rt);
}

/* The lines of the cache file in tmp/cache. */
static size_t cache_lines(void) {
    char dir[PATH_MAX], path[PATH_MAX];
    tu_join(path, tu_join(dir, tmp, "cache"), "plugin-probe-v2");
    FILE *f = fopen(path, "r");
    cr_assert(not(zero(ptr, f)), "no cache file %s", path);
    size_t n = 0;
    for (int c; (c = fgetc(f)) != EOF;) {
        n += c == '\n';
    }
    fclose(f);
    return n;
}

/* The probe creates each backend with the application's options (and
 * intra-op threads): crash_in_create_fast crashes only when created with
 * mode=fast, so it passes without the option and is rejected with it, and
 * the cache keeps both verdicts apart, until the file changes. */
Test(probe, probe_creates_backends_with_the_applications_options, .timeout = 60) {
    char src[PATH_MAX], crash[PATH_MAX];
    snprintf(src, sizeof src, "%s/crash_in_create_fast.so", HOSTILE_PLUGIN_DIR);
    tu_copy_file(src, tmp, "fast.so");
    tu_join(crash, tmp, "fast.so");
    const char *paths[] = {crash};
    const plx_backend_option fast = {"crash_in_create_fast", "mode", "fast"};
    for (int round = 0; round < 2; round++) {
        for (int with = 0; with < 2; with++) {
            size_t hits = 0;
            plx_runtime_options o;
            probing_options(&o, paths, 1, NULL, &hits);
            o.intra_op_threads = 2;
            o.backend_options = with ? &fast : NULL;
            o.backend_option_count = with ? 1 : 0;
            plx_runtime *rt = tu_create(&o);
            const plx_rejection *r = tu_rejection_at(rt, crash);
            if (with) {
                cr_assert(not(zero(ptr, (void *)r)), "%s", tu_dump(rt));
                cr_assert(eq(str, (char *)r->reason,
                             "killed by SIGSEGV in create during the probe"));
            } else {
                cr_assert(zero(ptr, (void *)r), "%s", tu_dump(rt));
                cr_assert(not(zero(ptr, (void *)plx_runtime_find_backend(
                                            rt, "crash_in_create_fast"))));
            }
            /* the second round: both verdicts from the cache */
            cr_assert(eq(sz, hits, (size_t)round), "round %d, with=%d", round, with);
            plx_runtime_destroy(&rt);
        }
    }
    cr_assert(eq(sz, cache_lines(), 2));
    /* a new file at the path: probed again, and the older file's two
     * verdicts give way to the new one */
    unlink(crash);
    tu_copy_file(src, tmp, "fast.so");
    size_t hits = 0;
    plx_runtime_options o;
    probing_options(&o, paths, 1, NULL, &hits);
    o.intra_op_threads = 2;
    plx_runtime *rt = tu_create(&o);
    cr_assert(eq(sz, hits, 0));
    plx_runtime_destroy(&rt);
    cr_assert(eq(sz, cache_lines(), 1));
}

/* The cache is only a cache: garbage in it is ignored (the files are
 * probed again), and a file that changed is probed again. */
Test(probe, corrupt_cache_is_ignored, .timeout = 60) {
    char dir[PATH_MAX], good[PATH_MAX];
    tu_join(dir, tmp, "cache");
    cr_assert(eq(int, mkdir(dir, 0700), 0));
    static const char garbage[] =
        "not a cache line\n1\t2\t3\n\t\t\t\t\t\t\t\t\t\n"
        "99999999999999999999999\tx\ty\tz\t1\t2\t3\tok\t/a\t\n"
        "\xff\xfe\n";
    tu_write_file(dir, "plugin-probe-v2", garbage, sizeof garbage - 1, 0600);
    tu_copy_file(tu_fake_path(good, "fake_good"), tmp, "good.so");
    char copy[PATH_MAX];
    tu_join(copy, tmp, "good.so");
    char crash[PATH_MAX];
    snprintf(crash, sizeof crash, "%s/crash_in_entry.so", HOSTILE_PLUGIN_DIR);
    const char *paths[] = {crash, copy};
    size_t hits = 0;
    plx_runtime *rt = probing_runtime(paths, 2, NULL, &hits);
    cr_assert(eq(sz, hits, 0));
    cr_assert(eq(str, (char *)tu_rejection_at(rt, crash)->reason,
                 "killed by SIGSEGV in its entry point during the probe"));
    cr_assert(not(zero(ptr, (void *)plx_runtime_find_backend(rt, "fake_good"))));
    plx_runtime_destroy(&rt);

    /* the copy replaced by the crashing file: a new size and mtime */
    tu_copy_file(crash, tmp, "good.so");
    rt = probing_runtime(paths, 2, NULL, &hits);
    cr_assert(eq(sz, hits, 1), "only crash_in_entry.so is unchanged");
    cr_assert(eq(str, (char *)tu_rejection_at(rt, copy)->reason,
                 "killed by SIGSEGV in its entry point during the probe"));
    plx_runtime_destroy(&rt);
}

/* No probe where the application said: a note, and plug-ins load in this
 * process (here a good one only). */
Test(probe, missing_probe_is_a_note) {
    char good[PATH_MAX], missing[PATH_MAX];
    const char *paths[] = {tu_fake_path(good, "fake_good")};
    tu_join(missing, tmp, "no-such-probe");
    size_t hits = 0;
    plx_runtime *rt = probing_runtime(paths, 1, missing, &hits);
    cr_assert(not(zero(ptr, (void *)plx_runtime_find_backend(rt, "fake_good"))));
    /* posix_spawn reports the failed exec, or (under valgrind, which runs
     * the child as a fork) the child exits 127 before it starts */
    char want[PATH_MAX + 64];
    snprintf(want, sizeof want, "the plug-in probe %s cannot run (", missing);
    cr_assert(tu_has_note(rt, want), "%s", tu_dump(rt));
    plx_runtime_destroy(&rt);
}
