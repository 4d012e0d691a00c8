/* The `plexus` command line: exit codes, usage text, and the JSON document
 * of `plexus info --json` parsed with json-c and checked field by field. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <json-c/json.h>

extern char **environ;

typedef struct run_result {
    int status; /* exit code, or -1 when killed */
    char *out;
    char *err;
} run_result;

static char *slurp(int fd) {
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    cr_assert(not(zero(ptr, buf)));
    for (;;) {
        if (len + 1 >= cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            cr_assert(not(zero(ptr, buf)));
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
    }
    buf[len] = '\0';
    return buf;
}

/* Runs the CLI with `args` (NULL-terminated, without argv[0]); stdout to
 * `stdout_path` when given, else captured. `env` NULL: the test's env. */
static run_result run_cli(const char *const *args, char *const *env, const char *stdout_path) {
    char out_path[] = "/tmp/plexus-cli-out-XXXXXX";
    char err_path[] = "/tmp/plexus-cli-err-XXXXXX";
    int out_fd = mkstemp(out_path);
    int err_fd = mkstemp(err_path);
    cr_assert(ge(int, out_fd, 0));
    cr_assert(ge(int, err_fd, 0));

    const char *argv[64] = {PLEXUS_EXE};
    size_t n = 1;
    for (; args[n - 1]; n++) {
        cr_assert(lt(sz, n, sizeof argv / sizeof argv[0] - 1));
        argv[n] = args[n - 1];
    }
    argv[n] = NULL;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (stdout_path) {
        posix_spawn_file_actions_addopen(&fa, 1, stdout_path, O_WRONLY, 0);
    } else {
        posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    }
    posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
    pid_t pid;
    int rc = posix_spawn(&pid, PLEXUS_EXE, &fa, NULL, (char *const *)argv, env ? env : environ);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert(eq(int, rc, 0), "posix_spawn %s: %s", PLEXUS_EXE, strerror(rc));
    int wstatus;
    cr_assert(eq(int, waitpid(pid, &wstatus, 0), pid));

    run_result r;
    r.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    lseek(out_fd, 0, SEEK_SET);
    lseek(err_fd, 0, SEEK_SET);
    r.out = slurp(out_fd);
    r.err = slurp(err_fd);
    close(out_fd);
    close(err_fd);
    unlink(out_path);
    unlink(err_path);
    return r;
}

static void free_result(run_result *r) {
    free(r->out);
    free(r->err);
}

/* The isolated environment every test starts from: no plug-in variables. */
static char *isolated_env[] = {"PATH=/usr/bin:/bin", NULL};

Test(cli, version_prints_library_and_abi) {
    run_result r = run_cli((const char *[]){"--version", NULL}, isolated_env, NULL);
    cr_assert(eq(int, r.status, 0));
    cr_assert(not(zero(ptr, strstr(r.out, "plexus 0."))), "stdout: %s", r.out);
    cr_assert(not(zero(ptr, strstr(r.out, "backend ABI 1."))), "stdout: %s", r.out);
    free_result(&r);
}

Test(cli, help_exits_zero) {
    run_result r = run_cli((const char *[]){"--help", NULL}, isolated_env, NULL);
    cr_assert(eq(int, r.status, 0));
    cr_assert(not(zero(ptr, strstr(r.out, "usage: plexus"))));
    free_result(&r);
    r = run_cli((const char *[]){"info", "--help", NULL}, isolated_env, NULL);
    cr_assert(eq(int, r.status, 0));
    cr_assert(not(zero(ptr, strstr(r.out, "usage: plexus info"))));
    free_result(&r);
}

/* Bad usage: exit 2, a message naming the problem and the usage text on stderr. */
static void expect_usage_error(const char *const *args, const char *message) {
    run_result r = run_cli(args, isolated_env, NULL);
    cr_assert(eq(int, r.status, 2), "exit %d for %s", r.status, args[0]);
    cr_assert(not(zero(ptr, strstr(r.err, message))), "stderr: %s", r.err);
    cr_assert(not(zero(ptr, strstr(r.err, "usage: plexus"))), "stderr: %s", r.err);
    cr_assert(eq(str, r.out, ""));
    free_result(&r);
}

Test(cli, usage_errors_exit_two) {
    expect_usage_error((const char *[]){NULL}, "no command given");
    expect_usage_error((const char *[]){"frobnicate", NULL}, "unknown command 'frobnicate'");
    expect_usage_error((const char *[]){"info", "--bogus", NULL},
                       "unknown argument '--bogus' for 'info'");
    expect_usage_error((const char *[]){"info", "--log-level", "loud", NULL},
                       "bad --log-level 'loud'");
    expect_usage_error((const char *[]){"info", "--option", "cpu_ref", NULL},
                       "bad --option 'cpu_ref': expected ID.KEY=VALUE");
    expect_usage_error((const char *[]){"info", "--backend-path", NULL},
                       "--backend-path needs a non-empty path");
}

/* A runtime error (here: stdout cannot be written) exits 1 with a message. */
Test(cli, write_failure_exits_one) {
    run_result r = run_cli((const char *[]){"info", "--no-env", "--no-default-dir", NULL},
                           isolated_env, "/dev/full");
    cr_assert(eq(int, r.status, 1), "exit %d", r.status);
    cr_assert(not(zero(ptr, strstr(r.err, "cannot write the output"))), "stderr: %s", r.err);
    free_result(&r);
}

static json_object *member(json_object *obj, const char *key, json_type type) {
    json_object *v = NULL;
    cr_assert(json_object_object_get_ex(obj, key, &v), "missing key '%s'", key);
    cr_assert(json_object_is_type(v, type), "key '%s' has type %s", key,
              json_type_to_name(json_object_get_type(v)));
    return v;
}

static json_object *find_backend(json_object *backends, const char *id) {
    for (size_t i = 0; i < json_object_array_length(backends); i++) {
        json_object *b = json_object_array_get_idx(backends, i);
        if (strcmp(json_object_get_string(member(b, "id", json_type_string)), id) == 0) {
            return b;
        }
    }
    return NULL;
}

Test(cli, info_json_has_every_documented_field) {
    char env_path[4096];
    snprintf(env_path, sizeof env_path, "PLEXUS_BACKEND_PATH=%s", FAKE_PLUGIN_DIR);
    char *env[] = {"PATH=/usr/bin:/bin", env_path, NULL};
    run_result r = run_cli((const char *[]){"info", "--json", "--no-default-dir",
                                            "--backend-path", CPU_REF_DIR, NULL},
                           env, NULL);
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);

    json_tokener *tok = json_tokener_new();
    json_object *doc = json_tokener_parse_ex(tok, r.out, (int)strlen(r.out));
    cr_assert(eq(int, json_tokener_get_error(tok), json_tokener_success),
              "not JSON: %s\n%s", json_tokener_error_desc(json_tokener_get_error(tok)), r.out);
    json_tokener_free(tok);
    cr_assert(json_object_is_type(doc, json_type_object));

    json_object *abi = member(doc, "abi", json_type_object);
    cr_assert(eq(int, json_object_get_int(member(abi, "major", json_type_int)), 1));
    member(abi, "minor", json_type_int);

    /* Application paths come first, then the environment's; no default dir. */
    json_object *sp = member(doc, "search_path", json_type_array);
    cr_assert(eq(sz, json_object_array_length(sp), 2));
    json_object *e0 = json_object_array_get_idx(sp, 0);
    json_object *e1 = json_object_array_get_idx(sp, 1);
    cr_assert(eq(str, (char *)json_object_get_string(member(e0, "path", json_type_string)),
                 CPU_REF_DIR));
    cr_assert(eq(str, (char *)json_object_get_string(member(e0, "source", json_type_string)),
                 "application"));
    cr_assert(eq(str, (char *)json_object_get_string(member(e1, "path", json_type_string)),
                 FAKE_PLUGIN_DIR));
    cr_assert(eq(str, (char *)json_object_get_string(member(e1, "source", json_type_string)),
                 "environment"));

    json_object *backends = member(doc, "backends", json_type_array);
    json_object *cpu = find_backend(backends, "cpu_ref");
    cr_assert(not(zero(ptr, cpu)), "cpu_ref not listed: %s", r.out);
    member(cpu, "name", json_type_string);
    member(cpu, "version", json_type_string);
    member(member(cpu, "abi", json_type_object), "major", json_type_int);
    cr_assert(not(zero(ptr, strstr(json_object_get_string(member(cpu, "path", json_type_string)),
                                   "cpu_ref.so"))));
    cr_assert(json_object_get_boolean(member(cpu, "available", json_type_boolean)));
    json_object *reason = NULL;
    cr_assert(json_object_object_get_ex(cpu, "reason", &reason));
    cr_assert(zero(ptr, reason), "reason of an available backend is null");
    json_object *caps = member(cpu, "capabilities", json_type_object);
    static const char *const expected_caps[] = {"async_execution", "externally_managed_memory",
                                                "preimport_io_tensors", "memory_import_malloc",
                                                "memory_export_malloc"};
    for (size_t i = 0; i < sizeof expected_caps / sizeof expected_caps[0]; i++) {
        cr_assert(json_object_get_boolean(member(caps, expected_caps[i], json_type_boolean)),
                  "%s", expected_caps[i]);
    }

    /* The fake directory holds broken plug-ins: each is listed with a reason. */
    json_object *rejected = member(doc, "rejected", json_type_array);
    cr_assert(gt(sz, json_object_array_length(rejected), 0));
    for (size_t i = 0; i < json_object_array_length(rejected); i++) {
        json_object *rj = json_object_array_get_idx(rejected, i);
        member(rj, "path", json_type_string);
        cr_assert(gt(sz, strlen(json_object_get_string(member(rj, "reason", json_type_string))),
                     0));
    }
    member(doc, "skipped", json_type_array);
    member(doc, "notes", json_type_array);
    json_object_put(doc);
    free_result(&r);
}

/* PLEXUS_BACKENDS limits the ids loaded; the JSON lists the rest as skipped. */
Test(cli, info_json_reports_filter) {
    char env_path[4096];
    snprintf(env_path, sizeof env_path, "PLEXUS_BACKEND_PATH=%s:%s", CPU_REF_DIR, SAMPLE_DIR);
    char *env[] = {"PATH=/usr/bin:/bin", env_path, "PLEXUS_BACKENDS=sample,nosuch", NULL};
    run_result r = run_cli((const char *[]){"info", "--json", "--no-default-dir", NULL}, env,
                           NULL);
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    json_object *doc = json_tokener_parse(r.out);
    cr_assert(not(zero(ptr, doc)), "not JSON: %s", r.out);
    json_object *backends = member(doc, "backends", json_type_array);
    cr_assert(eq(sz, json_object_array_length(backends), 1));
    cr_assert(not(zero(ptr, find_backend(backends, "sample"))));
    json_object *skipped = member(doc, "skipped", json_type_array);
    cr_assert(eq(sz, json_object_array_length(skipped), 1));
    json_object *s0 = json_object_array_get_idx(skipped, 0);
    cr_assert(eq(str, (char *)json_object_get_string(member(s0, "id", json_type_string)),
                 "cpu_ref"));
    cr_assert(eq(str, (char *)json_object_get_string(member(s0, "reason", json_type_string)),
                 "not listed in PLEXUS_BACKENDS"));
    json_object *notes = member(doc, "notes", json_type_array);
    cr_assert(eq(sz, json_object_array_length(notes), 1));
    cr_assert(not(zero(ptr, strstr(json_object_get_string(json_object_array_get_idx(notes, 0)),
                                   "'nosuch'"))));
    json_object_put(doc);
    free_result(&r);
}

/* Text output names every section and the backend's capabilities. */
Test(cli, info_text_lists_sections) {
    run_result r = run_cli((const char *[]){"info", "--no-env", "--no-default-dir",
                                            "--backend-path", CPU_REF_DIR, "--backend-path",
                                            "/nonexistent/plexus", NULL},
                           isolated_env, NULL);
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    static const char *const expected[] = {
        "Search path:", "application  " CPU_REF_DIR, "/nonexistent/plexus (does not exist)",
        "Backends (1):", "cpu_ref: CPU reference backend", "available:    yes",
        "async_execution = true", "Rejected (0):"};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        cr_assert(not(zero(ptr, strstr(r.out, expected[i]))), "missing '%s' in:\n%s",
                  expected[i], r.out);
    }
    free_result(&r);
}

/* An unknown option key rejects the backend, naming the key. */
Test(cli, unknown_option_is_reported) {
    run_result r = run_cli((const char *[]){"info", "--json", "--no-env", "--no-default-dir",
                                            "--backend-path", SAMPLE_DIR, "--option",
                                            "sample.colour=blue", NULL},
                           isolated_env, NULL);
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    json_object *doc = json_tokener_parse(r.out);
    cr_assert(not(zero(ptr, doc)));
    json_object *rejected = member(doc, "rejected", json_type_array);
    cr_assert(eq(sz, json_object_array_length(rejected), 1));
    cr_assert(eq(str,
                 (char *)json_object_get_string(
                     member(json_object_array_get_idx(rejected, 0), "reason", json_type_string)),
                 "unknown option 'colour' for backend 'sample' (accepted: greeting)"));
    json_object_put(doc);
    free_result(&r);
}

/* In a setuid process PLEXUS_BACKEND_PATH and PLEXUS_BACKENDS are read with
 * secure_getenv, so they are ignored, and `plexus info` says so. The test
 * makes a setuid-nobody copy of the CLI and runs it as root, which gives the
 * process different real and effective user ids (AT_SECURE). */
/* Skips the test where a setuid copy of the CLI cannot run as one. */
static void need_setuid(void) {
    if (geteuid() != 0) {
        cr_skip_test("needs root to make a setuid copy of the CLI");
    }
    if (getenv("PLEXUS_TEST_VALGRIND")) {
        /* valgrind cannot follow a child into a setuid program. */
        cr_skip_test("valgrind cannot run a setuid program");
    }
#if defined(__SANITIZE_ADDRESS__)
    /* It aborts at exit in a setuid process, whatever ASAN_OPTIONS says
     * (secure mode ignores it); the plain build runs this test. */
    cr_skip_test("LeakSanitizer cannot run in a setuid process");
#endif
}

/* Runs a copy of the CLI that is setuid to uid 65534 with `args` (after
 * the program name) and `env`; returns its stdout (malloc'd) and asserts
 * that it exited 0. `dir` (a fresh directory) holds the copy; the caller
 * removes it. */
static char *run_setuid_cli(const char *dir, const char *const *args, char *const *env) {
    char copy[600];
    snprintf(copy, sizeof copy, "%s/plexus", dir);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chown 65534:65534 '%s' && chmod 4755 '%s'",
             PLEXUS_EXE, copy, copy, copy);
    cr_assert(eq(int, system(cmd), 0), "%s", cmd);
    const char *argv[16] = {copy};
    for (size_t i = 0; args[i]; i++) {
        cr_assert(lt(sz, i + 2, sizeof argv / sizeof argv[0]));
        argv[i + 1] = args[i];
    }
    char out_path[] = "/tmp/plexus-setuid-out-XXXXXX";
    int out_fd = mkstemp(out_path);
    cr_assert(ge(int, out_fd, 0));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    pid_t pid;
    cr_assert(eq(int, posix_spawn(&pid, copy, &fa, NULL, (char *const *)argv, env), 0));
    posix_spawn_file_actions_destroy(&fa);
    int wstatus;
    cr_assert(eq(int, waitpid(pid, &wstatus, 0), pid));
    lseek(out_fd, 0, SEEK_SET);
    char *out = slurp(out_fd);
    close(out_fd);
    unlink(out_path);
    cr_assert(eq(int, WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1, 0), "output: %s", out);
    return out;
}

static void remove_dir(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert(eq(int, system(cmd), 0));
}

Test(cli, environment_ignored_when_setuid) {
    need_setuid();
    char dir[] = "/tmp/plexus-setuid-XXXXXX";
    cr_assert(not(zero(ptr, mkdtemp(dir))));
    cr_assert(eq(int, chmod(dir, 0755), 0));
    char *env[] = {"PATH=/usr/bin:/bin", "PLEXUS_BACKEND_PATH=" CPU_REF_DIR,
                   "PLEXUS_BACKENDS=cpu_ref", NULL};
    char *out = run_setuid_cli(dir, (const char *[]){"info", "--json", "--no-default-dir", NULL},
                               env);
    remove_dir(dir);

    json_object *doc = json_tokener_parse(out);
    cr_assert(not(zero(ptr, doc)), "not JSON: %s", out);
    cr_assert(eq(sz, json_object_array_length(member(doc, "search_path", json_type_array)), 0));
    cr_assert(eq(sz, json_object_array_length(member(doc, "backends", json_type_array)), 0));
    json_object *notes = member(doc, "notes", json_type_array);
    cr_assert(eq(sz, json_object_array_length(notes), 2), "%s", out);
    cr_assert(eq(str, (char *)json_object_get_string(json_object_array_get_idx(notes, 0)),
                 "PLEXUS_BACKEND_PATH is set but ignored: the process runs with elevated "
                 "privileges (setuid/setgid)"));
    cr_assert(not(zero(ptr, strstr(json_object_get_string(json_object_array_get_idx(notes, 1)),
                                   "PLEXUS_BACKENDS is set but ignored"))));
    json_object_put(doc);
    free(out);
}

/* A plug-in anyone can write is refused in a setuid process (and only
 * noted in others: tests/test_discovery.c): here a world-writable copy of
 * cpu_ref named with --backend-path. */
Test(cli, writable_plugin_refused_when_setuid) {
    need_setuid();
    char dir[] = "/tmp/plexus-setuid-XXXXXX";
    cr_assert(not(zero(ptr, mkdtemp(dir))));
    cr_assert(eq(int, chmod(dir, 0755), 0));
    char plugin[600], cmd[2048];
    snprintf(plugin, sizeof plugin, "%s/cpu_ref.so", dir);
    snprintf(cmd, sizeof cmd, "cp '%s/cpu_ref.so' '%s' && chmod 0666 '%s'", CPU_REF_DIR, plugin,
             plugin);
    cr_assert(eq(int, system(cmd), 0), "%s", cmd);
    char *out = run_setuid_cli(dir, (const char *[]){"info", "--json", "--no-env",
                                                     "--no-default-dir", "--backend-path",
                                                     plugin, NULL},
                               isolated_env);
    remove_dir(dir);
    json_object *doc = json_tokener_parse(out);
    cr_assert(not(zero(ptr, doc)), "not JSON: %s", out);
    cr_assert(eq(sz, json_object_array_length(member(doc, "backends", json_type_array)), 0),
              "%s", out);
    json_object *rejected = member(doc, "rejected", json_type_array);
    cr_assert(eq(sz, json_object_array_length(rejected), 1), "%s", out);
    json_object *reason;
    cr_assert(json_object_object_get_ex(json_object_array_get_idx(rejected, 0), "reason",
                                        &reason));
    cr_assert(eq(str, (char *)json_object_get_string(reason),
                 "refused in a setuid or setgid process: the file is world-writable"));
    json_object_put(doc);
    free(out);
}

/* Writes a junk plug-in file named `name` into dir. */
static void junk_plugin(const char *dir, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert(not(zero(ptr, f)), "%s: %s", path, strerror(errno));
    fputs("junk\n", f);
    fclose(f);
}

/* Text a model or a plug-in directory controls reaches the terminal with
 * its control characters escaped and invalid UTF-8 shown as \xNN, and the
 * JSON document stays valid UTF-8 (json-c parses it; the escapes survive). */
Test(cli, untrusted_text_is_escaped) {
    char dir[] = "/tmp/plexus_test_cli_XXXXXX";
    cr_assert(not(zero(ptr, mkdtemp(dir))));
    junk_plugin(dir, "red\x1b[31m.so");
    junk_plugin(dir, "bad\xff\xfe.so");
    junk_plugin(dir, "ok\xc3\xa9.so"); /* valid UTF-8 is shown as is */

    run_result r = run_cli((const char *[]){"info", "--no-env", "--no-default-dir",
                                            "--backend-path", dir, NULL},
                           isolated_env, NULL);
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    cr_assert(zero(ptr, strchr(r.out, '\x1b')), "raw ESC in:\n%s", r.out);
    cr_assert(zero(ptr, strchr(r.err, '\x1b')), "raw ESC in:\n%s", r.err);
    cr_assert(not(zero(ptr, strstr(r.out, "red\\x1b[31m.so"))), "%s", r.out);
    cr_assert(not(zero(ptr, strstr(r.out, "bad\\xff\\xfe.so"))), "%s", r.out);
    cr_assert(not(zero(ptr, strstr(r.out, "ok\xc3\xa9.so"))), "%s", r.out);
    free_result(&r);

    r = run_cli((const char *[]){"info", "--json", "--no-env", "--no-default-dir",
                                 "--backend-path", dir, NULL},
                isolated_env, NULL);
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    cr_assert(zero(ptr, strchr(r.out, '\x1b')), "raw ESC in:\n%s", r.out);
    cr_assert(not(zero(ptr, strstr(r.out, "red\\u001b[31m.so"))), "%s", r.out);
    json_object *doc = json_tokener_parse(r.out);
    cr_assert(not(zero(ptr, doc)), "not JSON:\n%s", r.out);
    json_object *rejected;
    cr_assert(json_object_object_get_ex(doc, "rejected", &rejected), "%s", r.out);
    bool red = false, bad = false, ok = false;
    for (size_t i = 0; i < json_object_array_length(rejected); i++) {
        json_object *file;
        cr_assert(json_object_object_get_ex(json_object_array_get_idx(rejected, i), "path",
                                            &file));
        const char *p = json_object_get_string(file);
        red = red || strstr(p, "red\x1b[31m.so"); /* \u001b decodes to ESC */
        bad = bad || strstr(p, "bad\xef\xbf\xbd\xef\xbf\xbd.so"); /* two U+FFFD */
        ok = ok || strstr(p, "ok\xc3\xa9.so");
    }
    cr_assert(red && bad && ok, "%s", r.out);
    json_object_put(doc);
    free_result(&r);
    remove_dir(dir);
}

/* `plexus info` probes plug-ins by default: hostile ones (a crash, an exit,
 * output on stdout while they load) are listed as rejected with what
 * happened, the report is whole and valid JSON, and the good plug-in beside
 * them is listed. With --no-probe the exit in the entry point would end
 * the process with an empty report. */
Test(cli, info_survives_hostile_plugins) {
    const char *args[] = {"info", "--json", "--no-env", "--no-default-dir",
                          "--backend-path", HOSTILE_PLUGIN_DIR "/crash_in_entry.so",
                          "--backend-path", HOSTILE_PLUGIN_DIR "/exit_in_entry.so",
                          "--backend-path", HOSTILE_PLUGIN_DIR "/stdout_in_constructor.so",
                          "--backend-path", FAKE_PLUGIN_DIR "/fake_good.so", NULL};
    run_result r = run_cli(args, isolated_env, NULL);
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    json_object *doc = json_tokener_parse(r.out);
    cr_assert(not(zero(ptr, doc)), "not JSON:\n%s", r.out);
    json_object *rejected = member(doc, "rejected", json_type_array);
    cr_assert(eq(sz, json_object_array_length(rejected), 3), "%s", r.out);
    static const char *const reasons[] = {
        "killed by SIGSEGV in its entry point during the probe",
        "exited with status 0 in its entry point during the probe",
        "wrote 21 bytes to stdout during the probe: a plug-in must not write to the host's "
        "output"};
    for (size_t i = 0; i < 3; i++) {
        json_object *reason;
        cr_assert(json_object_object_get_ex(json_object_array_get_idx(rejected, i), "reason",
                                            &reason));
        cr_assert(eq(str, (char *)json_object_get_string(reason), (char *)reasons[i]));
    }
    cr_assert(eq(sz, json_object_array_length(member(doc, "backends", json_type_array)), 1),
              "%s", r.out);
    json_object_put(doc);
    free_result(&r);
}

/* ------------------------------------------------------------------------ */
/* Whether each backend runs layers                                    */
/* ------------------------------------------------------------------------ */

/* `plexus info` over cpu_ref, fake_good (a table ending at
 * get_capabilities while it reports async_execution: the trap) and the
 * plug-ins of tests/plugins/layers. */
static run_result info_of_layer_fakes(bool json) {
    const char *args[] = {"info", "--no-env", "--no-default-dir", "--backend-path", CPU_REF_DIR,
                          "--backend-path", FAKE_PLUGIN_DIR "/fake_good.so", "--backend-path",
                          LAYERS_PLUGIN_DIR, json ? "--json" : NULL, NULL};
    return run_cli(args, isolated_env, NULL);
}

/* Text: "runs layers: yes", or "no" with the reason; the warning of the
 * trap; capabilities of a backend that runs none marked unused. */
Test(cli, info_text_says_whether_backends_run_layers) {
    run_result r = info_of_layer_fakes(false);
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    const char *cpu = strstr(r.out, "  cpu_ref: ");
    const char *good = strstr(r.out, "  fake_good: ");
    const char *nocl = strstr(r.out, "  fake_no_check_layer: ");
    const char *vendor = strstr(r.out, "  fake_vendor_caps_only: ");
    cr_assert(cpu && good && nocl && vendor, "%s", r.out);
    cr_assert(not(zero(ptr, strstr(cpu, "    runs layers:  yes\n    capabilities:\n"))), "%s",
              r.out);
    cr_assert(not(zero(ptr, strstr(good, "    runs layers:  no: its function table ends before "
                                         "the network functions: struct_size is "))),
              "%s", r.out);
    cr_assert(not(zero(ptr, strstr(good, "    warning:      reports capability "
                                         "'async_execution', which only a backend that runs "
                                         "layers uses, but it runs none: "))),
              "%s", r.out);
    cr_assert(not(zero(ptr, strstr(good, "    capabilities (unused: runs no layers):\n"))), "%s",
              r.out);
    cr_assert(not(zero(ptr, strstr(nocl, "    runs layers:  no: its function table leaves "
                                         "check_layer NULL\n"))),
              "%s", r.out);
    /* Nothing says fake_vendor_caps_only meant to run layers: no warning. */
    const char *vendor_end = strstr(vendor, "    options:");
    const char *warning = strstr(vendor, "warning:");
    cr_assert(vendor_end && (!warning || warning > vendor_end), "%s", r.out);
    /* The warning is logged at discovery too (warn level, stderr). */
    cr_assert(not(zero(ptr, strstr(r.err, "backend 'fake_good': reports capability "
                                          "'async_execution'"))),
              "stderr: %s", r.err);
    free_result(&r);
}

/* JSON: runs_layers, no_layers_reason and warning for each backend; the
 * memory sources of one that runs no layers are empty (none is usable),
 * its capabilities still as reported. */
Test(cli, info_json_says_whether_backends_run_layers) {
    run_result r = info_of_layer_fakes(true);
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    json_object *doc = json_tokener_parse(r.out);
    cr_assert(not(zero(ptr, doc)), "not JSON: %s", r.out);
    json_object *backends = member(doc, "backends", json_type_array);
    json_object *cpu = find_backend(backends, "cpu_ref");
    json_object *good = find_backend(backends, "fake_good");
    json_object *vendor = find_backend(backends, "fake_vendor_caps_only");
    cr_assert(cpu && good && vendor, "%s", r.out);

    cr_assert(json_object_get_boolean(member(cpu, "runs_layers", json_type_boolean)));
    cr_assert(json_object_is_type(json_object_object_get(cpu, "no_layers_reason"),
                                  json_type_null));
    cr_assert(json_object_is_type(json_object_object_get(cpu, "warning"), json_type_null));
    json_object *cpu_import = member(member(cpu, "memory_sources", json_type_object), "import",
                                     json_type_array);
    cr_assert(gt(sz, json_object_array_length(cpu_import), 0));

    cr_assert(not(json_object_get_boolean(member(good, "runs_layers", json_type_boolean))));
    cr_assert(not(zero(ptr, strstr(json_object_get_string(member(good, "no_layers_reason",
                                                                 json_type_string)),
                                   "ends before the network functions"))));
    cr_assert(not(zero(ptr, strstr(json_object_get_string(member(good, "warning",
                                                                 json_type_string)),
                                   "reports capability 'async_execution'"))));
    json_object *sources = member(good, "memory_sources", json_type_object);
    cr_assert(eq(sz, json_object_array_length(member(sources, "import", json_type_array)), 0));
    cr_assert(eq(sz, json_object_array_length(member(sources, "export", json_type_array)), 0));
    cr_assert(json_object_get_boolean(member(member(good, "capabilities", json_type_object),
                                             "memory_import_malloc", json_type_boolean)));

    cr_assert(not(json_object_get_boolean(member(vendor, "runs_layers", json_type_boolean))));
    cr_assert(json_object_is_type(json_object_object_get(vendor, "warning"), json_type_null));
    json_object_put(doc);
    free_result(&r);
}
