/* `plexus conformance`, run as a program on the backends of
 * tests/plugins/buggy: the correct one passes every check, and each one
 * with a planted bug fails exactly the check of the requirement it breaks
 * (its --json document parsed with json-c). cpu_ref, the reference, passes
 * everything. docs/conformance.md, "Checking a backend". */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <json-c/json.h>

extern char **environ;

typedef struct run_result {
    int status; /* exit code, or -1 when killed */
    char *out;
} run_result;

static char *slurp_file(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert(not(zero(ptr, f)), "%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    cr_assert(not(zero(ptr, buf)));
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (len + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            cr_assert(not(zero(ptr, buf)));
        }
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

/* Runs `plexus conformance ARGS...` (NULL-terminated), stdout captured,
 * stderr to the test's. */
static run_result conformance(const char *const *args) {
    char out_path[] = "/tmp/plexus-conformance-XXXXXX";
    int out_fd = mkstemp(out_path);
    cr_assert(ge(int, out_fd, 0));
    const char *argv[16] = {PLEXUS_EXE, "conformance"};
    size_t n = 2;
    for (size_t i = 0; args[i]; i++) {
        cr_assert(lt(sz, n, sizeof argv / sizeof argv[0] - 1));
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    pid_t pid;
    int rc = posix_spawn(&pid, PLEXUS_EXE, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert(eq(int, rc, 0), "posix_spawn %s: %s", PLEXUS_EXE, strerror(rc));
    int wstatus;
    cr_assert(eq(int, waitpid(pid, &wstatus, 0), pid));
    close(out_fd);
    run_result r = {WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1, slurp_file(out_path)};
    unlink(out_path);
    return r;
}

/* The failed checks of a --json report, as "R-n name" lines. */
static char *failures(json_object *doc, size_t *count) {
    json_object *checks = NULL;
    cr_assert(json_object_object_get_ex(doc, "checks", &checks));
    size_t cap = 4096, len = 0;
    char *text = calloc(1, cap);
    cr_assert(not(zero(ptr, text)));
    *count = 0;
    for (size_t i = 0; i < json_object_array_length(checks); i++) {
        json_object *c = json_object_array_get_idx(checks, i), *v;
        cr_assert(json_object_object_get_ex(c, "result", &v));
        const char *result = json_object_get_string(v);
        cr_assert(strcmp(result, "pass") == 0 || strcmp(result, "fail") == 0 ||
                      strcmp(result, "n/a") == 0,
                  "result '%s'", result);
        if (strcmp(result, "fail") != 0) {
            continue;
        }
        json_object *req, *name, *reason;
        cr_assert(json_object_object_get_ex(c, "requirement", &req));
        cr_assert(json_object_object_get_ex(c, "name", &name));
        cr_assert(json_object_object_get_ex(c, "reason", &reason));
        cr_assert(gt(sz, strlen(json_object_get_string(reason)), 0),
                  "a failure without a reason");
        int w = snprintf(text + len, cap - len, "%s %s\n", json_object_get_string(req),
                         json_object_get_string(name));
        cr_assert(gt(int, w, 0));
        len += (size_t)w < cap - len ? (size_t)w : cap - len - 1;
        (*count)++;
    }
    return text;
}

/* Runs conformance --json on `file` and checks that the failed checks are
 * exactly those listed (each "R-n name", every line of the report that
 * fails must start with one of them, and each must fail at least once). */
static void expect_failures(const char *file, const char *const *expected) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", BUGGY_PLUGIN_DIR, file);
    run_result r = conformance((const char *[]){"--json", path, NULL});
    json_object *doc = json_tokener_parse(r.out);
    cr_assert(not(zero(ptr, doc)), "not JSON: %s", r.out);
    size_t n = 0;
    char *failed = failures(doc, &n);
    if (!expected[0]) {
        cr_assert(eq(int, r.status, 0), "exit %d; failed:\n%s", r.status, failed);
        cr_assert(eq(sz, n, 0), "failed:\n%s", failed);
    } else {
        cr_assert(eq(int, r.status, 1), "exit %d", r.status);
        for (const char *line = failed; *line; line = strchr(line, '\n') + 1) {
            bool listed = false;
            for (size_t i = 0; expected[i]; i++) {
                listed |= strncmp(line, expected[i], strlen(expected[i])) == 0;
            }
            cr_assert(listed, "unexpected failure: %.*s (all:\n%s)", (int)strcspn(line, "\n"),
                      line, failed);
        }
        for (size_t i = 0; expected[i]; i++) {
            cr_assert(not(zero(ptr, strstr(failed, expected[i]))), "'%s' did not fail:\n%s",
                      expected[i], failed);
        }
    }
    json_object *id;
    cr_assert(json_object_object_get_ex(doc, "backend", &id));
    cr_assert(eq(str, (char *)json_object_get_string(id), "buggy"));
    free(failed);
    json_object_put(doc);
    free(r.out);
}

#define NONE ((const char *const[]){NULL})
#define ONLY(...) ((const char *const[]){__VA_ARGS__, NULL})

/* The correct backend: nothing fails, exit 0. */
Test(conformance, correct_backend_passes) {
    expect_failures("buggy_good.so", NONE);
}

/* The checks of the capabilities and functions the correct backend has
 * run on it and pass, rather than being not applicable: the planted bugs
 * below then fail a check that runs. */
Test(conformance, correct_backend_runs_the_capability_checks) {
    static const char *const ran[][2] = {
        {"R-17", "pre-imported inputs and outputs"}, {"R-20", "concurrent executions"},
        {"R-21", "planned memory"},                  {"R-22", "import malloc"},
        {"R-22", "import dma_buf"},                  {"R-23", "substitutions"},
        {"R-25", "profiling events"},                {"R-26", "backend-allocated planned memory"},
    };
    char path[4096];
    snprintf(path, sizeof path, "%s/buggy_good.so", BUGGY_PLUGIN_DIR);
    run_result r = conformance((const char *[]){"--json", path, NULL});
    json_object *doc = json_tokener_parse(r.out), *checks = NULL;
    cr_assert(not(zero(ptr, doc)), "not JSON: %s", r.out);
    cr_assert(json_object_object_get_ex(doc, "checks", &checks));
    for (size_t k = 0; k < sizeof ran / sizeof ran[0]; k++) {
        const char *result = NULL;
        for (size_t i = 0; i < json_object_array_length(checks); i++) {
            json_object *c = json_object_array_get_idx(checks, i), *req, *name, *v;
            cr_assert(json_object_object_get_ex(c, "requirement", &req));
            cr_assert(json_object_object_get_ex(c, "name", &name));
            cr_assert(json_object_object_get_ex(c, "result", &v));
            if (strcmp(json_object_get_string(req), ran[k][0]) == 0 &&
                strcmp(json_object_get_string(name), ran[k][1]) == 0) {
                result = json_object_get_string(v);
            }
        }
        cr_assert(not(zero(ptr, (void *)result)), "no check '%s %s'", ran[k][0], ran[k][1]);
        cr_assert(eq(str, (char *)result, "pass"), "%s %s: %s", ran[k][0], ran[k][1], result);
    }
    json_object_put(doc);
    free(r.out);
}

/* relu lets small negatives through. */
Test(conformance, wrong_result_fails_results) {
    expect_failures("buggy_wrong_result.so", ONLY("R-19 results relu"));
}

/* R-18 (1): the same layer refused twice gets two reasons. */
Test(conformance, unstable_refusal_fails_stability) {
    expect_failures("buggy_unstable_refusal.so", ONLY("R-18 refusal is stable"));
}

/* R-18 (1): the reason repeats the id the host already shows. */
Test(conformance, reason_with_id_fails_reasons) {
    expect_failures("buggy_reason_id.so", ONLY("R-18 refusal reasons"));
}

/* R-18 (1): a refusal without a reason. */
Test(conformance, empty_reason_fails_reasons) {
    expect_failures("buggy_empty_reason.so", ONLY("R-18 refusal reasons"));
}

/* a standard key with the wrong type; the core rejects the plug-in
 * and its reason is the failure. */
Test(conformance, capability_of_wrong_type_fails_capabilities) {
    expect_failures("buggy_cap_wrong_type.so", ONLY("R-10 loads through discovery"));
}

/* async_execution claimed, one scratch buffer shared by all. */
Test(conformance, shared_scratch_fails_concurrency) {
    expect_failures("buggy_shared_scratch.so", ONLY("R-20 concurrent executions"));
}

/* destroy_factory forgets to free: left at unload and at destroy. */
Test(conformance, leak_fails_memory_freed) {
    expect_failures("buggy_leak.so",
                    ONLY("R-13 host memory freed at unload", "R-13 host memory freed at destroy"));
}

/* R-18 (7): an allocation through the host at every execution. */
Test(conformance, steady_allocation_fails_steady_state) {
    expect_failures("buggy_steady_alloc.so", ONLY("R-18 no host allocation in steady state"));
}

/* dma-buf import claimed, the memory ignored. */
Test(conformance, ignored_import_fails_dma_buf) {
    expect_failures("buggy_import_ignored.so", ONLY("R-22 import dma_buf"));
}

/* R-17 (6): pre-imported inputs read from a copy of their first values. */
Test(conformance, stale_preimport_fails_preimported_io) {
    expect_failures("buggy_preimport_stale.so", ONLY("R-17 pre-imported inputs and outputs"));
}

/* R-26 (3): planned buffers kept at each release, until the factory goes. */
Test(conformance, kept_planned_buffers_fail_released_planned_memory) {
    expect_failures("buggy_planned_kept.so", ONLY("R-26 backend-allocated planned memory"));
}

/* R-25 (3): profiling events on a clock of the backend's, unmapped. */
Test(conformance, unmapped_event_clock_fails_profiling_events) {
    expect_failures("buggy_event_clock.so", ONLY("R-25 profiling events"));
}

/* the add and relu it substitutes lose the relu. */
Test(conformance, fusion_without_relu_fails_substitutions) {
    expect_failures("buggy_fusion_no_relu.so", ONLY("R-23 substitutions"));
}

/* a host of another major refused without a word. */
Test(conformance, silent_refusal_fails_refuses_with_reason) {
    expect_failures("buggy_silent_refusal.so", ONLY("R-6 refuses another host with a reason"));
}

/* R-2 (1): a second exported symbol. */
Test(conformance, extra_export_fails_exports) {
    expect_failures("buggy_exports.so", ONLY("R-2 exports one symbol"));
}

/* a libplexus function taken from the host process. */
Test(conformance, libplexus_symbol_fails_links_nothing) {
    expect_failures("buggy_links_plexus.so", ONLY("R-3 links nothing from libplexus"));
}

/* cpu_ref, the reference backend, passes everything; text output has one
 * line per check and the summary. */
Test(conformance, cpu_ref_passes) {
    run_result r = conformance((const char *[]){CPU_REF_MODULE, NULL});
    cr_assert(eq(int, r.status, 0), "%s", r.out);
    cr_assert(not(zero(ptr, strstr(r.out, "R-19   results conv 3x3 stride 2 pad 1 group 4 "
                                          "float32"))), "%s", r.out);
    cr_assert(not(zero(ptr, strstr(r.out, "conformance cpu_ref: "))), "%s", r.out);
    cr_assert(not(zero(ptr, strstr(r.out, ", 0 failed, "))), "%s", r.out);
    free(r.out);
}

/* A backend id is looked up through the normal discovery
 * (PLEXUS_BACKEND_PATH here), then loaded alone; an id nothing provides
 * exits 1. */
Test(conformance, backend_by_id) {
    char path[4096];
    snprintf(path, sizeof path, "%s/buggy_good.so", BUGGY_PLUGIN_DIR);
    cr_assert(eq(int, setenv("PLEXUS_BACKEND_PATH", path, 1), 0));
    cr_assert(eq(int, setenv("PLEXUS_SKIP_DEFAULT_DIR", "1", 1), 0));
    run_result r = conformance((const char *[]){"buggy", NULL});
    cr_assert(eq(int, r.status, 0), "%s", r.out);
    cr_assert(not(zero(ptr, strstr(r.out, "conformance buggy: "))), "%s", r.out);
    free(r.out);
    r = conformance((const char *[]){"no_such_backend", NULL});
    cr_assert(eq(int, r.status, 1));
    free(r.out);
}

/* Usage errors exit 2; a file that is not there exits 1. */
Test(conformance, bad_usage) {
    run_result r = conformance((const char *[]){NULL});
    cr_assert(eq(int, r.status, 2));
    free(r.out);
    r = conformance((const char *[]){"--tolerance-scale", "0", CPU_REF_MODULE, NULL});
    cr_assert(eq(int, r.status, 2));
    free(r.out);
    r = conformance((const char *[]){"/nonexistent/backend.so", NULL});
    cr_assert(eq(int, r.status, 1));
    free(r.out);
}

#ifdef NONFINITE_DIR
/* --onnx-node-tests: the node-test runner on the plug-in alone, its TAP on
 * stderr under --json so that stdout stays one JSON document. */
Test(conformance, onnx_node_tests_on_the_backend_alone, .timeout = 300) {
    char path[4096];
    snprintf(path, sizeof path, "%s/buggy_good.so", BUGGY_PLUGIN_DIR);
    run_result r = conformance((const char *[]){"--json", "--onnx-node-tests", NONFINITE_DIR,
                                                path, NULL});
    json_object *doc = json_tokener_parse(r.out);
    cr_assert(not(zero(ptr, doc)), "not JSON: %s", r.out);
    json_object *v;
    cr_assert(json_object_object_get_ex(doc, "onnx_node_tests", &v));
    cr_assert(eq(str, (char *)json_object_get_string(v), "passed"));
    cr_assert(eq(int, r.status, 0));
    json_object_put(doc);
    free(r.out);
}
#endif
