/* `plexus run`, run as a program: usage and exit codes, model errors
 * (missing file, open dimensions, unsupported operators), input checks,
 * the digits example model end to end (predicted class, outputs written as
 * .npy against the reference outputs), the --json document parsed with
 * json-c, the --profile trace, several threads, fallbacks, and every
 * allocation of a run failed in turn (tests/alloc_fail_preload.c).
 *
 * Every run is isolated from the system's plug-ins: an environment without
 * the PLEXUS_* variables Plexus reads, --no-env, --no-default-dir, and the
 * build tree's backends named with --backend-path. The small models are in
 * tests/data/onnx (make-models.py there describes them). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <json-c/json.h>

#include "alloc_interpose.h"
#include "npy.h"

extern char **environ;

#define MODEL(name) ONNX_TEST_DIR "/" name
#define DIGITS_MODEL DIGITS_DIR "/digits.onnx"

typedef struct run_result {
    int status; /* exit code, or -1 when killed */
    int signal; /* the signal that killed it, else 0 */
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

/* The isolated environment: no plug-in variables. */
static char *isolated_env[] = {"PATH=/usr/bin:/bin", NULL};

/* Runs `plexus ARGS...` (NULL-terminated, without argv[0]) as is, in the
 * environment `env`; killed (SIGKILL) after `limit_s` seconds unless 0. */
static run_result run_in(char *const *env, int limit_s, const char *const *args) {
    char out_path[] = "/tmp/plexus-run-out-XXXXXX";
    char err_path[] = "/tmp/plexus-run-err-XXXXXX";
    int out_fd = mkstemp(out_path);
    int err_fd = mkstemp(err_path);
    cr_assert(ge(int, out_fd, 0));
    cr_assert(ge(int, err_fd, 0));

    const char *argv[80] = {PLEXUS_EXE};
    size_t n = 1;
    for (; args[n - 1]; n++) {
        cr_assert(lt(sz, n, sizeof argv / sizeof argv[0] - 1));
        argv[n] = args[n - 1];
    }
    argv[n] = NULL;

    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
    pid_t pid;
    int rc = posix_spawn(&pid, PLEXUS_EXE, &fa, NULL, (char *const *)argv, env);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert(eq(int, rc, 0), "posix_spawn %s: %s", PLEXUS_EXE, strerror(rc));
    int wstatus;
    pid_t got;
    if (!limit_s) {
        got = waitpid(pid, &wstatus, 0);
    } else {
        /* polled every millisecond */
        for (long polls = 0; (got = waitpid(pid, &wstatus, WNOHANG)) == 0; polls++) {
            if (polls == limit_s * 1000L) {
                kill(pid, SIGKILL);
            }
            nanosleep(&(struct timespec){0, 1000000}, NULL);
        }
    }
    cr_assert(eq(int, got, pid));

    run_result r;
    r.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    r.signal = WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0;
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

static run_result run_raw(const char *const *args) {
    return run_in(isolated_env, 0, args);
}

/* Runs `plexus run ARGS... --no-env --no-default-dir --backend-path
 * CPU_REF_DIR`, plus --backend-path TESTDEV_DIR when `testdev`, as run_in. */
static run_result run_cmd(bool testdev, char *const *env, int limit_s, const char *const *args) {
    const char *argv[72] = {"run"};
    size_t n = 1;
    for (size_t i = 0; args[i]; i++) {
        cr_assert(lt(sz, n, sizeof argv / sizeof argv[0] - 8));
        argv[n++] = args[i];
    }
    argv[n++] = "--no-env";
    argv[n++] = "--no-default-dir";
    argv[n++] = "--backend-path";
    argv[n++] = CPU_REF_DIR;
    if (testdev) {
        argv[n++] = "--backend-path";
        argv[n++] = TESTDEV_DIR;
    }
    argv[n] = NULL;
    return run_in(env, limit_s, argv);
}

#define RUN(...) run_cmd(false, isolated_env, 0, (const char *[]){__VA_ARGS__, NULL})
#define RUN_TESTDEV(...) run_cmd(true, isolated_env, 0, (const char *[]){__VA_ARGS__, NULL})

static void free_result(run_result *r) {
    free(r->out);
    free(r->err);
}

static void expect_contains(const char *text, const char *what, const char *where) {
    cr_assert(not(zero(ptr, strstr(text, what))), "missing '%s' in %s:\n%s", what, where, text);
}

/* A fresh directory under /tmp; removed with remove_tree. */
static void make_temp_dir(char *buf, size_t size) {
    snprintf(buf, size, "/tmp/plexus-run-test-XXXXXX");
    cr_assert(not(zero(ptr, mkdtemp(buf))));
}

static void remove_tree(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    int rc = system(cmd);
    cr_assert(eq(int, rc, 0), "%s", cmd);
}

static void write_npy(const char *path, plx_dtype dtype, uint32_t rank, const int64_t *dims,
                      const void *data, size_t bytes) {
    npy_array a = {.dtype = dtype, .rank = rank, .data = (void *)data, .bytes = bytes};
    for (uint32_t i = 0; i < rank; i++) {
        a.dims[i] = dims[i];
    }
    char err[512];
    bool ok = npy_write(path, &a, err, sizeof err);
    cr_assert(ok, "%s", err);
}

static json_object *parse_json(const char *text) {
    json_tokener *tok = json_tokener_new();
    json_object *doc = json_tokener_parse_ex(tok, text, (int)strlen(text));
    enum json_tokener_error e = json_tokener_get_error(tok);
    json_tokener_free(tok);
    cr_assert(eq(int, e, json_tokener_success), "not JSON: %s\n%s", json_tokener_error_desc(e),
              text);
    return doc;
}

static json_object *member(json_object *obj, const char *key, json_type type) {
    json_object *v = NULL;
    cr_assert(json_object_object_get_ex(obj, key, &v), "missing key '%s'", key);
    cr_assert(json_object_is_type(v, type), "key '%s' has type %s, not %s", key,
              json_type_to_name(json_object_get_type(v)), json_type_to_name(type));
    return v;
}

/* A number: int or double. */
static double number(json_object *obj, const char *key) {
    json_object *v = NULL;
    cr_assert(json_object_object_get_ex(obj, key, &v), "missing key '%s'", key);
    bool is_number = json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int);
    cr_assert(is_number, "key '%s' is not a number", key);
    return json_object_get_double(v);
}

static const char *string_member(json_object *obj, const char *key) {
    return json_object_get_string(member(obj, key, json_type_string));
}

/* ------------------------------------------------------------------------ */
/* Usage                                                                      */
/* ------------------------------------------------------------------------ */

Test(cli_run, help_exits_zero) {
    run_result r = run_raw((const char *[]){"run", "--help", NULL});
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    expect_contains(r.out, "usage: plexus run MODEL.onnx", "stdout");
    expect_contains(r.out, "--no-fallback", "stdout");
    expect_contains(r.out, "--backend-path PATH", "stdout");
    /* Every load option is documented. */
    static const char *const load[] = {"--show-layers", "--no-import", "--no-export",
                                       "--copy-io", "--preimport", "--backend-memory",
                                       "Load options", "import_alignment"};
    for (size_t i = 0; i < sizeof load / sizeof load[0]; i++) {
        expect_contains(r.out, load[i], "stdout");
    }
    cr_assert(eq(str, r.err, ""));
    free_result(&r);

    r = run_raw((const char *[]){"--help", NULL});
    cr_assert(eq(int, r.status, 0));
    expect_contains(r.out, "  run ", "the main usage");
    free_result(&r);
}

/* Bad usage: exit 2, the message, the usage on stderr, nothing on stdout. */
static void expect_usage_error(const char *const *args, const char *message) {
    run_result r = run_raw(args);
    cr_assert(eq(int, r.status, 2), "exit %d for '%s %s', stderr: %s", r.status,
              args[1] ? args[1] : "", args[1] && args[2] ? args[2] : "", r.err);
    expect_contains(r.err, message, "stderr");
    expect_contains(r.err, "usage: plexus run", "stderr");
    cr_assert(eq(str, r.out, ""));
    free_result(&r);
}

#define USAGE_ERROR(message, ...) \
    expect_usage_error((const char *[]){"run", __VA_ARGS__, NULL}, message)

Test(cli_run, usage_errors_exit_two) {
    expect_usage_error((const char *[]){"run", NULL}, "no model given");
    USAGE_ERROR("unknown argument '--bogus' for 'run'", MODEL("dynamic_batch.onnx"), "--bogus");
    USAGE_ERROR("unexpected argument 'b.onnx'", "a.onnx", "b.onnx");
    USAGE_ERROR("--iterations needs a value", "m.onnx", "--iterations");
    USAGE_ERROR("bad --iterations 'ten'", "m.onnx", "--iterations", "ten");
    USAGE_ERROR("bad --iterations '0'", "m.onnx", "--iterations", "0");
    USAGE_ERROR("bad --iterations '5x'", "m.onnx", "--iterations", "5x");
    USAGE_ERROR("bad --warmup '-1'", "m.onnx", "--warmup", "-1");
    USAGE_ERROR("bad --concurrency '0'", "m.onnx", "--concurrency", "0");
    USAGE_ERROR("--threads is ambiguous: use --concurrency N", "m.onnx", "--threads", "2");
    USAGE_ERROR("bad --intra-op-threads '0'", "m.onnx", "--intra-op-threads", "0");
    USAGE_ERROR("bad --intra-op-threads 'x'", "m.onnx", "--intra-op-threads", "x");
    USAGE_ERROR("bad --concurrency '99999999999999999999'", "m.onnx", "--concurrency",
                "99999999999999999999");
    USAGE_ERROR("bad --shape 'x'", "m.onnx", "--shape", "x");
    USAGE_ERROR("bad --shape 'x=3xx4'", "m.onnx", "--shape", "x=3xx4");
    USAGE_ERROR("bad --shape 'x=3x'", "m.onnx", "--shape", "x=3x");
    USAGE_ERROR("bad --shape 'x='", "m.onnx", "--shape", "x=");
    USAGE_ERROR("bad --shape '=3x4'", "m.onnx", "--shape", "=3x4");
    USAGE_ERROR("bad --shape 'x=-1x4'", "m.onnx", "--shape", "x=-1x4");
    USAGE_ERROR("bad --shape 'x=1x1x1x1x1x1x1x1x1'", "m.onnx", "--shape", "x=1x1x1x1x1x1x1x1x1");
    USAGE_ERROR("--shape 'x' given twice", "m.onnx", "--shape", "x=1x4", "--shape", "x=2x4");
    USAGE_ERROR("bad --input 'image'", "m.onnx", "--input", "image");
    USAGE_ERROR("bad --input 'image='", "m.onnx", "--input", "image=");
    USAGE_ERROR("--input 'a' given twice", "m.onnx", "--input", "a=1.npy", "--input", "a=2.npy");
    USAGE_ERROR("bad --backends 'cpu_ref,,x'", "m.onnx", "--backends", "cpu_ref,,x");
    USAGE_ERROR("--backends needs a value", "m.onnx", "--backends");
    USAGE_ERROR("--output-dir needs a non-empty path", "m.onnx", "--output-dir", "");
    USAGE_ERROR("--profile needs a value", "m.onnx", "--profile");
    /* The runtime options are info's. */
    USAGE_ERROR("bad --log-level 'loud'", "m.onnx", "--log-level", "loud");
    USAGE_ERROR("bad --option 'cpu_ref': expected ID.KEY=VALUE", "m.onnx", "--option",
                "cpu_ref");
    USAGE_ERROR("--backend-path needs a non-empty path", "m.onnx", "--backend-path", "");
    /* Pre-imports are zero copy: they need import and export. */
    USAGE_ERROR("--preimport needs import and export: it cannot go with --copy-io", "m.onnx",
                "--preimport", "--copy-io");
    USAGE_ERROR("--preimport needs import and export: it cannot go with --no-import", "m.onnx",
                "--no-import", "--preimport");
    USAGE_ERROR("--preimport needs import and export: it cannot go with --no-export", "m.onnx",
                "--preimport", "--no-export");
    USAGE_ERROR("--backend-memory cannot go with --concurrency 2", "m.onnx", "--backend-memory",
                "--concurrency", "2");
}

/* ------------------------------------------------------------------------ */
/* Model errors                                                               */
/* ------------------------------------------------------------------------ */

Test(cli_run, missing_model_exits_one_naming_it) {
    run_result r = RUN("/nonexistent/dir/model.onnx");
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "plexus run: ", "stderr");
    expect_contains(r.err, "/nonexistent/dir/model.onnx", "stderr");
    cr_assert(eq(str, r.out, ""));
    free_result(&r);
}

Test(cli_run, open_dimension_from_a_file_or_a_shape) {
    run_result r = RUN(MODEL("dynamic_batch.onnx"));
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "plexus run: ", "stderr");
    expect_contains(r.err, "'x'", "stderr");
    expect_contains(r.err, "N", "stderr");
    free_result(&r);

    r = RUN(MODEL("dynamic_batch.onnx"), "--shape", "x=3x4");
    cr_assert(eq(int, r.status, 0), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.out, "[3,4]", "stdout");
    expect_contains(r.out, "x: random float32 [3,4] (seed 1)", "stdout");
    /* Not a terminal: no progress on stderr. */
    cr_assert(eq(str, r.err, ""));
    free_result(&r);

    /* The open dimension takes the size of the file given for the input:
     * no --shape needed. */
    char dir[64];
    make_temp_dir(dir, sizeof dir);
    char x5[128], x_rank1[128];
    snprintf(x5, sizeof x5, "x=%s/x5.npy", dir);
    snprintf(x_rank1, sizeof x_rank1, "x=%s/x-rank1.npy", dir);
    float floats[20] = {0};
    write_npy(x5 + 2, PLX_DTYPE_FLOAT32, 2, (const int64_t[]){5, 4}, floats, sizeof floats);
    write_npy(x_rank1 + 2, PLX_DTYPE_FLOAT32, 1, (const int64_t[]){4}, floats,
              4 * sizeof(float));
    r = RUN(MODEL("dynamic_batch.onnx"), "--input", x5);
    cr_assert(eq(int, r.status, 0), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.out, "[5,4]", "stdout");
    free_result(&r);
    /* A file of another rank sizes nothing: the open dimension is named. */
    r = RUN(MODEL("dynamic_batch.onnx"), "--input", x_rank1);
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "'x'", "stderr");
    expect_contains(r.err, "N", "stderr");
    free_result(&r);
    /* With --shape too, the file's shape must agree. */
    r = RUN(MODEL("dynamic_batch.onnx"), "--input", x5, "--shape", "x=3x4");
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "plexus run: input 'x': expected float32 [3,4], got float32 [5,4]",
                    "stderr");
    free_result(&r);
    /* A file that cannot be read sizes nothing either; its error is shown. */
    r = RUN(MODEL("dynamic_batch.onnx"), "--input", "x=/nonexistent/x.npy");
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "'N'", "stderr");
    expect_contains(r.err, "/nonexistent/x.npy", "stderr");
    free_result(&r);
    remove_tree(dir);

    /* A shape for a name that is not an input. */
    r = RUN(MODEL("dynamic_batch.onnx"), "--shape", "x=3x4", "--shape", "nosuch=1");
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "nosuch", "stderr");
    free_result(&r);
}

Test(cli_run, unsupported_operators_are_listed) {
    run_result r = RUN(MODEL("unsupported.onnx"));
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "plexus run: ", "stderr");
    expect_contains(r.err, "RandomUniformLike", "stderr");
    expect_contains(r.err, "StringNormalizer", "stderr");
    free_result(&r);
}

/* ------------------------------------------------------------------------ */
/* Inputs                                                                     */
/* ------------------------------------------------------------------------ */

Test(cli_run, input_dtype_and_shape_are_checked) {
    char dir[64];
    make_temp_dir(dir, sizeof dir);
    char wrong_dtype[128], wrong_shape[128], right[128];
    snprintf(wrong_dtype, sizeof wrong_dtype, "a=%s/a-int64.npy", dir);
    snprintf(wrong_shape, sizeof wrong_shape, "a=%s/a-3x3.npy", dir);
    snprintf(right, sizeof right, "a=%s/a.npy", dir);
    int64_t ints[12] = {0};
    float floats[12] = {0};
    write_npy(wrong_dtype + 2, PLX_DTYPE_INT64, 2, (const int64_t[]){4, 3}, ints, sizeof ints);
    write_npy(wrong_shape + 2, PLX_DTYPE_FLOAT32, 2, (const int64_t[]){3, 3}, floats,
              9 * sizeof(float));
    write_npy(right + 2, PLX_DTYPE_FLOAT32, 2, (const int64_t[]){4, 3}, floats, sizeof floats);

    run_result r = RUN(MODEL("two_inputs.onnx"), "--input", wrong_dtype);
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "plexus run: input 'a': expected float32 [4,3], got int64 [4,3]",
                    "stderr");
    free_result(&r);

    r = RUN(MODEL("two_inputs.onnx"), "--input", wrong_shape);
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "plexus run: input 'a': expected float32 [4,3], got float32 [3,3]",
                    "stderr");
    free_result(&r);

    /* A file that is not there, or not a .npy file. */
    r = RUN(MODEL("two_inputs.onnx"), "--input", "a=/nonexistent/a.npy");
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "input 'a'", "stderr");
    expect_contains(r.err, "/nonexistent/a.npy", "stderr");
    free_result(&r);

    /* An input the model does not have. */
    r = RUN(MODEL("two_inputs.onnx"), "--input", "nosuch=/nonexistent/a.npy");
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "plexus run: --input 'nosuch': the model has no input 'nosuch'",
                    "stderr");
    expect_contains(r.err, "'idx'", "stderr");
    free_result(&r);

    /* The right one: read from the file, the others random. */
    r = RUN(MODEL("two_inputs.onnx"), "--input", right);
    cr_assert(eq(int, r.status, 0), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.out, right + 2, "stdout");
    expect_contains(r.out, "idx: random int64 [2] (seed 2)", "stdout");
    expect_contains(r.out, "b: random float32 [2,3] (seed 3)", "stdout");
    free_result(&r);
    remove_tree(dir);
}

/* Random inputs are reproducible: integer inputs get 0 or 1. */
Test(cli_run, random_integer_inputs) {
    char dir[64];
    make_temp_dir(dir, sizeof dir);
    for (int pass = 0; pass < 2; pass++) {
        run_result r = RUN(MODEL("add_int32.onnx"), "--output-dir", dir);
        cr_assert(eq(int, r.status, 0), "exit %d, stderr: %s", r.status, r.err);
        expect_contains(r.out, "a: random int32 [4] (seed 1)", "stdout");
        expect_contains(r.out, "b: random int32 [4] (seed 2)", "stdout");
        free_result(&r);
        char path[128];
        snprintf(path, sizeof path, "%s/c.npy", dir);
        npy_array c;
        char err[512];
        bool ok = npy_read(path, &c, err, sizeof err);
        cr_assert(ok, "%s", err);
        cr_assert(eq(int, c.dtype, PLX_DTYPE_INT32));
        cr_assert(eq(u32, c.rank, 1));
        cr_assert(eq(i64, c.dims[0], 4));
        static int32_t first[4];
        for (int i = 0; i < 4; i++) {
            int32_t v = ((const int32_t *)c.data)[i];
            cr_assert(ge(i32, v, 0));
            cr_assert(le(i32, v, 2));
            if (pass == 0) {
                first[i] = v;
            } else {
                cr_assert(eq(i32, v, first[i]), "the same seed gives the same values");
            }
        }
        npy_free(&c);
    }
    remove_tree(dir);
}

/* ------------------------------------------------------------------------ */
/* The digits example                                                         */
/* ------------------------------------------------------------------------ */

Test(cli_run, digits_predicts_every_label, .timeout = 120) {
    char out_dir[64];
    make_temp_dir(out_dir, sizeof out_dir);
    /* A directory that does not exist yet: created. */
    char sub[128];
    snprintf(sub, sizeof sub, "%s/new/out", out_dir);
    int checked = 0;
    for (int label = 0; label <= 9; label++) {
        char input[512], expected[512], arg[600];
        snprintf(input, sizeof input, "%s/inputs/digit-%d.npy", DIGITS_DIR, label);
        snprintf(expected, sizeof expected, "%s/expected/digit-%d.npy", DIGITS_DIR, label);
        if (access(input, R_OK) != 0) {
            continue;
        }
        snprintf(arg, sizeof arg, "image=%s", input);
        run_result r = RUN(DIGITS_MODEL, "--input", arg, "--output-dir", sub, "--iterations", "3");
        cr_assert(eq(int, r.status, 0), "digit %d: exit %d, stderr: %s", label, r.status, r.err);
        char top[64];
        snprintf(top, sizeof top, "probabilities: top-1 class %d (", label);
        expect_contains(r.out, top, "stdout");
        expect_contains(r.out, "image: ", "stdout");
        free_result(&r);

        char written[256];
        snprintf(written, sizeof written, "%s/probabilities.npy", sub);
        npy_array got, want;
        char err[512];
        bool ok = npy_read(written, &got, err, sizeof err);
        cr_assert(ok, "%s", err);
        ok = npy_read(expected, &want, err, sizeof err);
        cr_assert(ok, "%s", err);
        cr_assert(eq(int, got.dtype, PLX_DTYPE_FLOAT32));
        cr_assert(eq(int, want.dtype, PLX_DTYPE_FLOAT32));
        cr_assert(eq(sz, got.bytes, want.bytes));
        cr_assert(eq(u32, got.rank, want.rank));
        for (uint32_t d = 0; d < got.rank; d++) {
            cr_assert(eq(i64, got.dims[d], want.dims[d]));
        }
        const float *g = got.data, *w = want.data;
        for (size_t i = 0; i < got.bytes / sizeof(float); i++) {
            double diff = fabs((double)g[i] - (double)w[i]);
            cr_assert(le(dbl, diff, 1e-5), "digit %d, class %zu: %g vs %g", label, i,
                      (double)g[i], (double)w[i]);
        }
        npy_free(&got);
        npy_free(&want);
        unlink(written);
        checked++;
    }
    cr_assert(eq(int, checked, 10), "example inputs found in %s: %d", DIGITS_DIR, checked);
    remove_tree(out_dir);
}

/* The text report names each section. */
Test(cli_run, text_report_sections) {
    run_result r = RUN(DIGITS_MODEL, "--input", "image=" DIGITS_DIR "/inputs/digit-3.npy");
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    static const char *const expected[] = {
        "Model: " DIGITS_MODEL, "Inputs:", "image", "float32", "[1,1,8,8]", "Outputs:",
        "probabilities", "[1,10]", "Assignment:", "cpu_ref: ", "fallbacks: none", "Load: ",
        "Latency: min ", "median ", "p90 ", "max ", "Memory plan:", "cpu_ref: ", "lower bound",
        "top-1 class 3"};
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        expect_contains(r.out, expected[i], "stdout");
    }
    cr_assert(eq(str, r.err, ""));
    free_result(&r);
}

/* ------------------------------------------------------------------------ */
/* --json                                                                     */
/* ------------------------------------------------------------------------ */

static void check_io_list(json_object *list) {
    cr_assert(gt(sz, json_object_array_length(list), 0));
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *io = json_object_array_get_idx(list, i);
        member(io, "name", json_type_string);
        member(io, "dtype", json_type_string);
        json_object *shape = member(io, "shape", json_type_array);
        for (size_t k = 0; k < json_object_array_length(shape); k++) {
            cr_assert(json_object_is_type(json_object_array_get_idx(shape, k), json_type_int));
        }
    }
}

/* Every required key with its type, on a run with a fallback. */
Test(cli_run, json_has_every_key) {
    char dir[64];
    make_temp_dir(dir, sizeof dir);
    run_result r = RUN_TESTDEV(MODEL("two_inputs.onnx"), "--json", "--backends", "testdev,cpu_ref",
                               "--option", "testdev.memory=planned", "--iterations", "4",
                               "--warmup", "2", "--output-dir", dir);
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    json_object *doc = parse_json(r.out);
    cr_assert(eq(str, (char *)string_member(doc, "model"), MODEL("two_inputs.onnx")));

    json_object *inputs = member(doc, "inputs", json_type_array);
    check_io_list(inputs);
    cr_assert(eq(sz, json_object_array_length(inputs), 3));
    json_object *idx = json_object_array_get_idx(inputs, 1);
    cr_assert(eq(str, (char *)string_member(idx, "name"), "idx"));
    cr_assert(eq(str, (char *)string_member(idx, "dtype"), "int64"));
    cr_assert(eq(str, (char *)string_member(idx, "source"), "random"));
    cr_assert(eq(int, json_object_get_int(member(idx, "seed", json_type_int)), 2));
    json_object *outputs = member(doc, "outputs", json_type_array);
    check_io_list(outputs);
    json_object *y = json_object_array_get_idx(outputs, 0);
    cr_assert(eq(str, (char *)string_member(y, "name"), "y"));
    char path[128];
    snprintf(path, sizeof path, "%s/y.npy", dir);
    cr_assert(eq(str, (char *)string_member(y, "file"), path));
    cr_assert(eq(int, access(path, R_OK), 0));

    json_object *assignment = member(doc, "assignment", json_type_object);
    json_object *layers = member(assignment, "layers", json_type_object);
    int on_cpu = json_object_get_int(member(layers, "cpu_ref", json_type_int));
    int on_testdev = json_object_get_int(member(layers, "testdev", json_type_int));
    cr_assert(gt(int, on_cpu, 0));
    cr_assert(gt(int, on_testdev, 0));
    json_object *fallbacks = member(assignment, "fallbacks", json_type_array);
    cr_assert(eq(sz, json_object_array_length(fallbacks), 1), "%s", r.out);
    json_object *f = json_object_array_get_idx(fallbacks, 0);
    member(f, "layer", json_type_string);
    cr_assert(eq(str, (char *)string_member(f, "op"), "gather"));
    cr_assert(eq(str, (char *)string_member(f, "from"), "testdev"));
    cr_assert(eq(str, (char *)string_member(f, "to"), "cpu_ref"));
    cr_assert(gt(sz, strlen(string_member(f, "reason")), 0));

    double load_ms = number(doc, "load_ms");
    cr_assert(ge(dbl, load_ms, 0.0));
    json_object *spec = member(doc, "specialization", json_type_object);
    cr_assert(eq(int, json_object_get_int(member(spec, "count", json_type_int)), 1));
    cr_assert(eq(dbl, number(spec, "ms"), load_ms));
    cr_assert(eq(int, json_object_get_int(member(spec, "import_tries", json_type_int)), 1));
    cr_assert(eq(sz, json_object_array_length(member(spec, "shapes_from_files",
                                                     json_type_array)), 0), "no --input");
    cr_assert(eq(sz, json_object_array_length(member(spec, "valued_inputs", json_type_array)),
                 0));
    cr_assert(eq(sz, json_object_array_length(member(spec, "valued_tensors", json_type_array)),
                 0));
    cr_assert(eq(dbl, number(spec, "probe_ms"), 0.0));
    json_object *lat = member(doc, "latency_ms", json_type_object);
    double mn = number(lat, "min"), med = number(lat, "median"), p90 = number(lat, "p90"),
           mx = number(lat, "max");
    cr_assert(ge(dbl, mn, 0.0));
    cr_assert(le(dbl, mn, med));
    cr_assert(le(dbl, med, p90));
    cr_assert(le(dbl, p90, mx));

    json_object *memory = member(doc, "memory", json_type_object);
    const char *const planned[] = {"cpu_ref", "testdev"};
    for (size_t i = 0; i < 2; i++) {
        json_object *m = member(memory, planned[i], json_type_object);
        int64_t bytes = json_object_get_int64(member(m, "bytes", json_type_int));
        int64_t bound = json_object_get_int64(member(m, "lower_bound", json_type_int));
        cr_assert(ge(i64, bytes, bound), "%s", planned[i]);
    }
    cr_assert(eq(int, json_object_get_int(member(doc, "iterations", json_type_int)), 4));
    cr_assert(eq(int, json_object_get_int(member(doc, "warmup", json_type_int)), 2));
    cr_assert(eq(int, json_object_get_int(member(doc, "concurrency", json_type_int)), 1));
    cr_assert(json_object_is_type(json_object_object_get(doc, "intra_op_threads"),
                                  json_type_null));
    cr_assert(not(json_object_get_boolean(member(doc, "copy_io", json_type_boolean))));
    json_object *io = member(doc, "io", json_type_object);
    cr_assert(json_object_get_boolean(member(io, "import_enabled", json_type_boolean)));
    cr_assert(json_object_get_boolean(member(io, "export_enabled", json_type_boolean)));
    cr_assert(not(json_object_get_boolean(member(io, "preimport", json_type_boolean))));
    cr_assert(json_object_get_boolean(member(io, "planned_memory", json_type_boolean)));
    cr_assert(ge(int, json_object_get_int(member(io, "alignment", json_type_int)), 64));
    member(io, "staged_copies", json_type_int);
    member(io, "waits", json_type_int);
    member(assignment, "per_layer", json_type_array);
    /* Not a classifier: [2,3] is not [1,K]. */
    json_object *top = NULL;
    cr_assert(not(json_object_object_get_ex(doc, "top_classes", &top)));
    json_object_put(doc);
    free_result(&r);
    remove_tree(dir);
}

Test(cli_run, json_top_classes_of_digits) {
    run_result r = RUN(DIGITS_MODEL, "--json", "--input", "image=" DIGITS_DIR "/inputs/digit-7.npy");
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    json_object *doc = parse_json(r.out);
    json_object *top = member(doc, "top_classes", json_type_object);
    cr_assert(eq(str, (char *)string_member(top, "output"), "probabilities"));
    json_object *classes = member(top, "classes", json_type_array);
    cr_assert(eq(sz, json_object_array_length(classes), 3));
    json_object *first = json_object_array_get_idx(classes, 0);
    cr_assert(eq(int, json_object_get_int(member(first, "class", json_type_int)), 7));
    double s0 = number(first, "score");
    double s1 = number(json_object_array_get_idx(classes, 1), "score");
    cr_assert(ge(dbl, s0, s1));
    cr_assert(le(dbl, s0, 1.0));
    json_object *memory = member(doc, "memory", json_type_object);
    member(member(memory, "cpu_ref", json_type_object), "bytes", json_type_int);
    json_object_put(doc);
    free_result(&r);
}

/* ------------------------------------------------------------------------ */
/* --profile                                                                  */
/* ------------------------------------------------------------------------ */

Test(cli_run, profile_writes_a_trace) {
    char dir[64];
    make_temp_dir(dir, sizeof dir);
    char trace[128];
    snprintf(trace, sizeof trace, "%s/trace.json", dir);
    run_result r = RUN_TESTDEV(MODEL("two_inputs.onnx"), "--json", "--backends", "testdev,cpu_ref",
                               "--iterations", "3", "--warmup", "1", "--profile", trace);
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    json_object *doc = parse_json(r.out);
    cr_assert(eq(str, (char *)string_member(doc, "profile"), trace));
    json_object *fb = json_object_array_get_idx(
        member(member(doc, "assignment", json_type_object), "fallbacks", json_type_array), 0);
    cr_assert(not(zero(ptr, fb)));
    char *gather_layer = strdup(string_member(fb, "layer"));
    json_object_put(doc);
    free_result(&r);

    json_object *t = json_object_from_file(trace);
    cr_assert(not(zero(ptr, t)), "%s is not JSON", trace);
    json_object *events = member(t, "traceEvents", json_type_array);
    bool load = false, factories = false;
    int gather_runs = 0, testdev_runs = 0;
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        json_object *e = json_object_array_get_idx(events, i);
        json_object *cat = NULL;
        if (!json_object_object_get_ex(e, "cat", &cat)) {
            continue; /* metadata */
        }
        const char *name = string_member(e, "name");
        json_object *args = member(e, "args", json_type_object);
        if (strcmp(json_object_get_string(cat), "load") == 0) {
            load = load || strcmp(name, "load") == 0;
            factories = factories || strcmp(name, "create factories") == 0;
        } else if (strcmp(json_object_get_string(cat), "execute") == 0) {
            const char *op = string_member(args, "op");
            const char *backend = string_member(args, "backend");
            cr_assert(gt(sz, strlen(name), 0));
            if (strcmp(name, gather_layer) == 0) {
                cr_assert(eq(str, (char *)op, "gather"));
                cr_assert(eq(str, (char *)backend, "cpu_ref"));
                gather_runs++;
            }
            testdev_runs += strcmp(backend, "testdev") == 0;
        }
    }
    cr_assert(load, "no 'load' event");
    cr_assert(factories, "no 'create factories' event");
    cr_assert(eq(int, gather_runs, 4), "one event per execution (1 warm-up, 3 timed)");
    cr_assert(ge(int, testdev_runs, 4));
    json_object_put(t);
    free(gather_layer);

    /* A trace that cannot be written: exit 1. */
    r = RUN(MODEL("add_int32.onnx"), "--profile", "/nonexistent/dir/trace.json");
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "/nonexistent/dir/trace.json", "stderr");
    free_result(&r);
    remove_tree(dir);
}

/* ------------------------------------------------------------------------ */
/* Threads, backends, fallback                                                */
/* ------------------------------------------------------------------------ */

Test(cli_run, threads_run_concurrently, .timeout = 120) {
    run_result r = RUN(DIGITS_MODEL, "--json", "--concurrency", "2", "--iterations", "9", "--input",
                       "image=" DIGITS_DIR "/inputs/digit-4.npy");
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    json_object *doc = parse_json(r.out);
    cr_assert(eq(int, json_object_get_int(member(doc, "concurrency", json_type_int)), 2));
    cr_assert(eq(int, json_object_get_int(member(doc, "iterations", json_type_int)), 9));
    double tp = number(doc, "throughput_per_s");
    cr_assert(gt(dbl, tp, 0.0));
    json_object *classes = member(member(doc, "top_classes", json_type_object), "classes",
                                  json_type_array);
    json_object *first = json_object_array_get_idx(classes, 0);
    cr_assert(eq(int, json_object_get_int(member(first, "class", json_type_int)), 4));
    json_object_put(doc);
    free_result(&r);

    r = RUN(DIGITS_MODEL, "--concurrency", "3", "--iterations", "2", "--warmup", "0");
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    expect_contains(r.out, "concurrency 3", "stdout");
    free_result(&r);
}

/* --intra-op-threads sets every backend's `threads`; the reports say so. */
Test(cli_run, intra_op_threads) {
    run_result r = RUN(DIGITS_MODEL, "--json", "--intra-op-threads", "2", "--iterations", "2");
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    json_object *doc = parse_json(r.out);
    cr_assert(eq(int, json_object_get_int(member(doc, "intra_op_threads", json_type_int)), 2));
    cr_assert(eq(int, json_object_get_int(member(doc, "concurrency", json_type_int)), 1));
    json_object_put(doc);
    free_result(&r);
    r = RUN(DIGITS_MODEL, "--intra-op-threads", "2", "--iterations", "2");
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    expect_contains(r.out, "concurrency 1, intra-op threads 2", "stdout");
    free_result(&r);
}

/* The digits model with its input and output buffers used in place (the
 * default) and copied (--copy-io): the same probabilities, and the reports
 * say which. */
Test(cli_run, copy_io_gives_the_same_outputs) {
    char out_dir[64];
    make_temp_dir(out_dir, sizeof out_dir);
    char input[512], arg[600], sub[2][128], written[2][160];
    snprintf(input, sizeof input, "%s/inputs/digit-3.npy", DIGITS_DIR);
    snprintf(arg, sizeof arg, "image=%s", input);
    for (int copy = 0; copy < 2; copy++) {
        snprintf(sub[copy], sizeof sub[copy], "%s/%d", out_dir, copy);
        run_result r = copy ? RUN(DIGITS_MODEL, "--input", arg, "--output-dir", sub[copy],
                                  "--iterations", "3", "--copy-io")
                            : RUN(DIGITS_MODEL, "--input", arg, "--output-dir", sub[copy],
                                  "--iterations", "3");
        cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
        expect_contains(r.out, copy ? "inputs and outputs copied (--copy-io)"
                                    : "inputs and outputs in place where the backends import",
                        "stdout");
        free_result(&r);
        snprintf(written[copy], sizeof written[copy], "%s/probabilities.npy", sub[copy]);
    }
    npy_array a, b;
    char err[512];
    cr_assert(npy_read(written[0], &a, err, sizeof err), "%s", err);
    cr_assert(npy_read(written[1], &b, err, sizeof err), "%s", err);
    cr_assert(eq(sz, a.bytes, b.bytes));
    cr_assert(eq(int, memcmp(a.data, b.data, a.bytes), 0));
    npy_free(&a);
    npy_free(&b);
    run_result r = RUN(DIGITS_MODEL, "--json", "--copy-io", "--iterations", "1");
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    json_object *doc = parse_json(r.out);
    cr_assert(json_object_get_boolean(member(doc, "copy_io", json_type_boolean)));
    json_object_put(doc);
    free_result(&r);
    remove_tree(out_dir);
}

/* testdev does not support asynchronous execution: a clear error. */
Test(cli_run, threads_need_async_backends) {
    run_result r = RUN_TESTDEV(MODEL("dynamic_batch.onnx"), "--shape", "x=2x4", "--backends",
                               "testdev", "--concurrency", "2");
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "plexus run: --concurrency 2 needs asynchronous execution", "stderr");
    expect_contains(r.err, "'testdev'", "stderr");
    free_result(&r);
}

Test(cli_run, no_fallback) {
    /* A backend that does not exist. */
    run_result r = RUN(MODEL("add_int32.onnx"), "--backends", "nosuch,cpu_ref", "--no-fallback");
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "plexus run: backend 'nosuch' is not loaded", "stderr");
    free_result(&r);

    /* With fallback, a missing backend is a note and the next one runs. */
    r = RUN(MODEL("add_int32.onnx"), "--backends", "nosuch,cpu_ref");
    cr_assert(eq(int, r.status, 0), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.out, "note: backend 'nosuch' is not loaded", "stdout");
    free_result(&r);

    /* testdev refuses the gather: with --no-fallback, an error naming it. */
    r = RUN_TESTDEV(MODEL("two_inputs.onnx"), "--backends", "testdev,cpu_ref", "--no-fallback");
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "plexus run: ", "stderr");
    expect_contains(r.err, "gather", "stderr");
    expect_contains(r.err, "fallback is disabled", "stderr");
    free_result(&r);

    /* Only unknown backends: fails with or without fallback. */
    r = RUN(MODEL("add_int32.onnx"), "--backends", "nosuch");
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "nosuch", "stderr");
    free_result(&r);
}

/* No backend found at all. */
Test(cli_run, no_backend_available) {
    run_result r = run_raw((const char *[]){"run", MODEL("add_int32.onnx"), "--no-env",
                                            "--no-default-dir", NULL});
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "plexus run: no backend is available", "stderr");
    free_result(&r);
}

/* Output names that are not file names are sanitised. */
Test(cli_run, output_names_are_sanitised) {
    char dir[64];
    make_temp_dir(dir, sizeof dir);
    run_result r = RUN(MODEL("odd_names.onnx"), "--output-dir", dir);
    cr_assert(eq(int, r.status, 0), "exit %d, stderr: %s", r.status, r.err);
    free_result(&r);
    char path[128];
    snprintf(path, sizeof path, "%s/scores_out_0.npy", dir);
    cr_assert(eq(int, access(path, R_OK), 0), "%s", path);
    snprintf(path, sizeof path, "%s/_...npy", dir);
    cr_assert(eq(int, access(path, R_OK), 0), "%s", path);
    /* Nothing else: two files. */
    DIR *d = opendir(dir);
    cr_assert(not(zero(ptr, d)));
    int files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        files += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    }
    closedir(d);
    cr_assert(eq(int, files, 2));
    remove_tree(dir);
}

/* --output-dir that cannot be created: exit 1. */
Test(cli_run, output_dir_errors) {
    run_result r = RUN(MODEL("add_int32.onnx"), "--output-dir", "/proc/no/such/dir");
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "plexus run: --output-dir: ", "stderr");
    free_result(&r);
}

/* ------------------------------------------------------------------------ */
/* Frozen inputs                                                              */
/* ------------------------------------------------------------------------ */

Test(cli_run, constant_freezes_an_input) {
    run_result r = RUN(MODEL("reshape_by_input.onnx"));
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "must be known at import", "stderr");
    expect_contains(r.err, "input 'shape' sets what the model computes at import", "stderr");
    expect_contains(r.err, "--input shape=FILE.npy", "stderr");
    free_result(&r);

    char dir[64];
    make_temp_dir(dir, sizeof dir);
    char shape_arg[128], bad_arg[128];
    snprintf(shape_arg, sizeof shape_arg, "shape=%s/shape.npy", dir);
    snprintf(bad_arg, sizeof bad_arg, "shape=%s/missing.npy", dir);
    write_npy(shape_arg + 6, PLX_DTYPE_INT64, 1, (const int64_t[]){2}, (const int64_t[]){3, 2},
              2 * sizeof(int64_t));
    r = RUN(MODEL("reshape_by_input.onnx"), "--constant", shape_arg, "--json");
    cr_assert(eq(int, r.status, 0), "exit %d, stderr: %s", r.status, r.err);
    json_object *doc = parse_json(r.out);
    json_object *inputs = member(doc, "inputs", json_type_array);
    cr_assert(eq(sz, json_object_array_length(inputs), 1), "the frozen input is not listed");
    json_object *out0 = json_object_array_get_idx(member(doc, "outputs", json_type_array), 0);
    json_object *shape = member(out0, "shape", json_type_array);
    cr_assert(eq(i64, json_object_get_int64(json_object_array_get_idx(shape, 0)), 3));
    cr_assert(eq(i64, json_object_get_int64(json_object_array_get_idx(shape, 1)), 2));
    json_object_put(doc);
    free_result(&r);

    r = RUN(MODEL("reshape_by_input.onnx"), "--constant", bad_arg);
    cr_assert(eq(int, r.status, 1), "exit %d", r.status);
    expect_contains(r.err, "--constant shape", "stderr");
    free_result(&r);
    r = RUN(MODEL("reshape_by_input.onnx"), "--constant", "shape");
    cr_assert(eq(int, r.status, 2), "exit %d", r.status);
    expect_contains(r.err, "bad --constant 'shape'", "stderr");
    free_result(&r);
    remove_tree(dir);
}

/* An input whose value the model needs at import (branch_on_rate.onnx's
 * If tests sr == 16000) is frozen to its --input file's data, as a dynamic
 * model does; the report says so. Too big a value, or none, is refused
 * naming the input. */
Test(cli_run, input_values_the_model_needs) {
    char dir[64];
    make_temp_dir(dir, sizeof dir);
    char x_arg[128], sr_arg[128], big_arg[128], out_dir[128];
    snprintf(x_arg, sizeof x_arg, "x=%s/x.npy", dir);
    snprintf(sr_arg, sizeof sr_arg, "sr=%s/sr.npy", dir);
    snprintf(big_arg, sizeof big_arg, "big=%s/big.npy", dir);
    snprintf(out_dir, sizeof out_dir, "%s/out", dir);
    const float x[4] = {-1, 2, -3, 4};
    write_npy(x_arg + 2, PLX_DTYPE_FLOAT32, 1, (const int64_t[]){4}, x, sizeof x);
    const int64_t rate = 8000;
    write_npy(sr_arg + 3, PLX_DTYPE_INT64, 0, NULL, &rate, sizeof rate);
    static int64_t big[600];
    write_npy(big_arg + 4, PLX_DTYPE_INT64, 1, (const int64_t[]){600}, big, sizeof big);

    run_result r = RUN(MODEL("branch_on_rate.onnx"), "--input", x_arg, "--input", sr_arg,
                       "--output-dir", out_dir);
    cr_assert(eq(int, r.status, 0), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.out, "Valued inputs (frozen to their --input files' data, which the "
                           "import needs): sr\n", "stdout");
    expect_contains(r.out, "in 2 tries", "stdout");
    free_result(&r);
    char y_path[160];
    snprintf(y_path, sizeof y_path, "%s/y.npy", out_dir);
    npy_array got;
    char err[512];
    cr_assert(npy_read(y_path, &got, err, sizeof err), "%s", err);
    cr_assert(eq(sz, got.bytes, 4 * sizeof(float)));
    const float *y = got.data;
    cr_expect(eq(flt, y[0], 1.0f), "sr 8000: the else branch, -x");
    cr_expect(eq(flt, y[3], -4.0f));
    npy_free(&got);

    r = RUN(MODEL("branch_on_rate.onnx"), "--input", x_arg, "--input", sr_arg, "--json");
    cr_assert(eq(int, r.status, 0), "exit %d, stderr: %s", r.status, r.err);
    json_object *doc = parse_json(r.out);
    cr_assert(eq(sz, json_object_array_length(member(doc, "inputs", json_type_array)), 1));
    json_object *spec = member(doc, "specialization", json_type_object);
    cr_assert(eq(int, json_object_get_int(member(spec, "import_tries", json_type_int)), 2));
    json_object *valued = member(spec, "valued_inputs", json_type_array);
    cr_assert(eq(sz, json_object_array_length(valued), 1));
    cr_assert(eq(str, (char *)json_object_get_string(json_object_array_get_idx(valued, 0)),
                 "sr"));
    json_object *shaped = member(spec, "shapes_from_files", json_type_array);
    cr_assert(eq(sz, json_object_array_length(shaped), 1));
    json_object_put(doc);
    free_result(&r);

    r = RUN(MODEL("branch_on_rate.onnx"), "--input", x_arg);
    cr_assert(eq(int, r.status, 1), "exit %d", r.status);
    expect_contains(r.err, "node 'branch' (If", "stderr");
    expect_contains(r.err, "give its value with --input sr=FILE.npy", "stderr");
    free_result(&r);
    /* Too big to freeze, but what the model computes from it is small: a
     * probe computes the reshape's target first. */
    big[0] = 3;
    big[1] = 2;
    write_npy(big_arg + 4, PLX_DTYPE_INT64, 1, (const int64_t[]){600}, big, sizeof big);
    r = RUN(MODEL("slice_of_big.onnx"), "--input", big_arg, "--json");
    cr_assert(eq(int, r.status, 0), "exit %d, stderr: %s", r.status, r.err);
    doc = parse_json(r.out);
    spec = member(doc, "specialization", json_type_object);
    json_object *tensors = member(spec, "valued_tensors", json_type_array);
    cr_assert(eq(sz, json_object_array_length(tensors), 1));
    cr_assert(eq(str, (char *)json_object_get_string(json_object_array_get_idx(tensors, 0)),
                 "target"));
    cr_assert(gt(dbl, number(spec, "probe_ms"), 0.0));
    json_object *out0 = json_object_array_get_idx(member(doc, "outputs", json_type_array), 0);
    json_object *shape = member(out0, "shape", json_type_array);
    cr_assert(eq(i64, json_object_get_int64(json_object_array_get_idx(shape, 0)), 3));
    json_object_put(doc);
    free_result(&r);
    r = RUN(MODEL("all_of_big.onnx"), "--input", big_arg);
    cr_assert(eq(int, r.status, 1), "exit %d", r.status);
    expect_contains(r.err, "tensor 'target' (4800 bytes), computed from the inputs", "stderr");
    free_result(&r);
    /* A condition computed from the data: the probe needs the data. */
    r = RUN(MODEL("branch_on_energy.onnx"), "--shape", "x=16");
    cr_assert(eq(int, r.status, 1), "exit %d", r.status);
    expect_contains(r.err, "input 'x' sets what the model computes at import (through 'loud')",
                    "stderr");
    free_result(&r);
    remove_tree(dir);
}

/* ------------------------------------------------------------------------ */
/* Allocation failures                                                        */
/* ------------------------------------------------------------------------ */

/* A run's limit in the sweep: a run takes milliseconds, so a hang is a bug. */
#define SWEEP_RUN_LIMIT_S 30

/* The digits example (digit 7) on cpu_ref with --output-dir, and --json
 * when `json`, with tests/alloc_fail_preload.c preloaded: the count of the
 * process's allocations written to `count_file` at exit, the `fail_at`-th
 * (from 1; 0: none) failed. */
static run_result run_digits_failing(bool json, const char *out_dir, const char *count_file,
                                     size_t fail_at) {
    char count_var[160], fail_var[64];
    snprintf(count_var, sizeof count_var, "PLEXUS_TEST_ALLOC_COUNT_FILE=%s", count_file);
    snprintf(fail_var, sizeof fail_var, "PLEXUS_TEST_FAIL_ALLOC=%zu", fail_at);
    char *env[] = {"PATH=/usr/bin:/bin", "LD_PRELOAD=" ALLOC_FAIL_PRELOAD, count_var, fail_var,
                   NULL};
    return run_cmd(false, env, SWEEP_RUN_LIMIT_S,
                   (const char *[]){DIGITS_MODEL, "--input",
                                    "image=" DIGITS_DIR "/inputs/digit-7.npy", "--output-dir",
                                    out_dir, "--backends", "cpu_ref", json ? "--json" : NULL,
                                    NULL});
}

/* Whether a run's report is whole and predicts 7: one complete --json
 * document, or the text report through its last line, which names the
 * output `written`. */
static bool whole_report_of_7(bool json, const char *out, const char *written) {
    if (!json) {
        char last[160];
        snprintf(last, sizeof last, "\n  probabilities: %s\n", written);
        size_t n = strlen(out), k = strlen(last);
        return strstr(out, "probabilities: top-1 class 7 (") && n >= k &&
               strcmp(out + n - k, last) == 0;
    }
    json_tokener *tok = json_tokener_new();
    cr_assert(not(zero(ptr, tok)));
    json_object *doc = json_tokener_parse_ex(tok, out, (int)strlen(out));
    const char *rest = out + json_tokener_get_parse_end(tok);
    bool whole = json_tokener_get_error(tok) == json_tokener_success &&
                 strspn(rest, " \n") == strlen(rest);
    json_tokener_free(tok);
    json_object *top = NULL, *classes = NULL;
    bool seven = whole && json_object_object_get_ex(doc, "top_classes", &top) &&
                 json_object_object_get_ex(top, "classes", &classes) &&
                 json_object_get_int(json_object_object_get(
                     json_object_array_get_idx(classes, 0), "class")) == 7;
    json_object_put(doc);
    return seven;
}

/* The allocations a run made (alloc_fail_preload.c's count file). */
static size_t read_count(const char *path) {
    FILE *f = fopen(path, "r");
    cr_assert(not(zero(ptr, f)), "no allocation count in %s: the run did not exit", path);
    size_t n = 0;
    cr_assert(eq(int, fscanf(f, "%zu", &n), 1));
    fclose(f);
    return n;
}

/* The whole path of `plexus run` (arguments, the .npy input, the runtime
 * with cpu_ref, import, optimisation, load, the runs, the .npy output, the
 * report, teardown) with each allocation of the process failed in turn,
 * every one of them: a count run first (972 allocations with --json, 971
 * without, when this was written), then one run per allocation, 4 to 8 s
 * for each report on two cores, so no bound on the range is needed. Each
 * run ends cleanly: exit 1 with a message that
 * says "out of memory", the library's words for PLX_OUT_OF_MEMORY, and
 * nothing on stdout; or exit 0 with the count run's outputs and a whole
 * report (glibc's stdio, say, works unbuffered without its buffer). Never a
 * signal, a hang, another error or a truncated report. */
static void sweep_allocations(bool json) {
    if (!alloc_interpose_available()) {
        cr_skip_test("the allocator cannot be interposed in sanitizer builds or under valgrind "
                     "(tests/alloc_interpose.h)");
    }
    char dir[64], out_dir[96], count_file[96], written[128];
    make_temp_dir(dir, sizeof dir);
    snprintf(out_dir, sizeof out_dir, "%s/out", dir);
    snprintf(count_file, sizeof count_file, "%s/count", dir);
    snprintf(written, sizeof written, "%s/probabilities.npy", out_dir);

    run_result r = run_digits_failing(json, out_dir, count_file, 0);
    cr_assert(eq(int, r.status, 0), "exit %d, stderr: %s", r.status, r.err);
    cr_assert(whole_report_of_7(json, r.out, written), "%s", r.out);
    free_result(&r);
    size_t total = read_count(count_file);
    cr_assert(gt(sz, total, 100));
    npy_array want;
    char err[512];
    cr_assert(npy_read(written, &want, err, sizeof err), "%s", err);

    size_t errors = 0, completed = 0;
    for (size_t k = 1; k <= total; k++) {
        unlink(written);
        r = run_digits_failing(json, out_dir, count_file, k);
        cr_assert(eq(int, r.signal, 0), "allocation %zu of %zu: killed by signal %d (%s%s); "
                  "stderr: %s", k, total, r.signal, strsignal(r.signal),
                  r.signal == SIGKILL ? ": hung" : "", r.err);
        if (r.status == 0) {
            completed++;
            cr_assert(whole_report_of_7(json, r.out, written),
                      "allocation %zu of %zu: not a whole report:\n%s", k, total, r.out);
            npy_array got;
            cr_assert(npy_read(written, &got, err, sizeof err), "allocation %zu of %zu: %s", k,
                      total, err);
            bool same = got.dtype == want.dtype && got.bytes == want.bytes &&
                        memcmp(got.data, want.data, want.bytes) == 0;
            cr_assert(same, "allocation %zu of %zu: other outputs", k, total);
            npy_free(&got);
        } else {
            errors++;
            cr_assert(eq(int, r.status, 1), "allocation %zu of %zu: exit %d, stderr: %s", k,
                      total, r.status, r.err);
            cr_assert(not(zero(ptr, strstr(r.err, "out of memory"))),
                      "allocation %zu of %zu: not named out of memory: %s", k, total, r.err);
            cr_assert(eq(str, r.out, ""), "allocation %zu of %zu: a report on stdout", k, total);
        }
        free_result(&r);
    }
    npy_free(&want);
    cr_log_info("%s report: %zu allocations; %zu failures ended in an out-of-memory error, %zu "
                "runs completed without", json ? "--json" : "text", total, errors, completed);
    remove_tree(dir);
}

Test(cli_run, every_allocation_failure_ends_cleanly_json, .timeout = 240) {
    sweep_allocations(true);
}

Test(cli_run, every_allocation_failure_ends_cleanly_text, .timeout = 240) {
    sweep_allocations(false);
}

/* ------------------------------------------------------------------------ */
/* What a backend author looks at: layers, zero copy, pre-imports            */
/* ------------------------------------------------------------------------ */

/* The entry of per_layer for `layer`; asserts that there is one. */
static json_object *layer_entry(json_object *per_layer, const char *layer) {
    for (size_t i = 0; i < json_object_array_length(per_layer); i++) {
        json_object *l = json_object_array_get_idx(per_layer, i);
        if (strcmp(string_member(l, "layer"), layer) == 0) {
            return l;
        }
    }
    cr_fatal("no layer '%s' in per_layer", layer);
    return NULL;
}

/* The entries of per_layer whose "inserted" is `kind` ("copy", "import"). */
static size_t inserted_count(json_object *per_layer, const char *kind) {
    size_t n = 0;
    for (size_t i = 0; i < json_object_array_length(per_layer); i++) {
        json_object *v = NULL;
        json_object_object_get_ex(json_object_array_get_idx(per_layer, i), "inserted", &v);
        n += v && json_object_is_type(v, json_type_string) &&
             strcmp(json_object_get_string(v), kind) == 0;
    }
    return n;
}

/* Asserts that the layer list has a line "  NAME  ..." (--show-layers)
 * holding each of the NULL-terminated `parts`, columns apart. */
static void expect_layer_line(const char *text, const char *name, const char *const *parts) {
    char start[128];
    snprintf(start, sizeof start, "\n  %s ", name);
    const char *list = strstr(text, "\nLayers (");
    cr_assert(not(zero(ptr, (void *)list)), "no layer list in:\n%s", text);
    const char *line = strstr(list, start);
    cr_assert(not(zero(ptr, (void *)line)), "no line for layer '%s' in:\n%s", name, text);
    line++;
    size_t len = strcspn(line, "\n");
    const char *at = line;
    for (size_t i = 0; parts[i]; i++) {
        const char *p = strstr(at, parts[i]);
        cr_assert(p && p + strlen(parts[i]) <= line + len, "layer '%s': no '%s' in '%.*s'",
                  name, parts[i], (int)len, line);
        at = p + strlen(parts[i]);
    }
}

#define LAYER_LINE(text, name, ...) \
    expect_layer_line(text, name, (const char *const[]){__VA_ARGS__, NULL})

/* --show-layers: every layer with its backend, the fallback and the layer
 * inserted between the two backends (an import: cpu_ref exports malloc
 * memory that testdev imports; a copy without import); nothing without it. */
Test(cli_run, show_layers_lists_every_layer) {
    run_result r = RUN_TESTDEV(MODEL("two_inputs.onnx"), "--backends", "testdev,cpu_ref",
                               "--show-layers", "--iterations", "1");
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    expect_contains(r.out, "Layers (7, in execution order):\n", "stdout");
    LAYER_LINE(r.out, "a", " input ", " cpu_ref");
    LAYER_LINE(r.out, "idx", " input ", " cpu_ref");
    LAYER_LINE(r.out, "b", " input ", " testdev");
    LAYER_LINE(r.out, "gather", " gather ", " cpu_ref ", " (fell back from testdev)");
    LAYER_LINE(r.out, "gather:0 -> testdev (import, malloc)", " mem_import ", " testdev ",
               " [inserted import]");
    LAYER_LINE(r.out, "add", " binary ", " testdev");
    LAYER_LINE(r.out, "y.output", " output ", " testdev");
    free_result(&r);

    r = RUN_TESTDEV(MODEL("two_inputs.onnx"), "--backends", "testdev,cpu_ref", "--show-layers",
                    "--no-import", "--iterations", "1");
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    LAYER_LINE(r.out, "gather:0 -> testdev (copy)", " mem_copy ", " testdev ",
               " [inserted copy]");
    expect_contains(r.out, "inputs copied (--no-import)", "stdout");
    free_result(&r);

    /* cpu_ref fuses each conv with its relu: the layer names both. */
    r = RUN(DIGITS_MODEL, "--show-layers", "--iterations", "1");
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    LAYER_LINE(r.out, "conv1+relu1", " precompiled ", " cpu_ref ", " fused from: conv1, relu1");
    free_result(&r);

    r = RUN(DIGITS_MODEL, "--iterations", "1");
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    cr_assert(zero(ptr, strstr(r.out, "Layers (")), "%s", r.out);
    free_result(&r);
}

/* --json always lists the layers: layer, op, backend, inserted, fused_from,
 * fell_back_from; as many as the assignment counts. */
Test(cli_run, json_lists_every_layer) {
    run_result r = RUN_TESTDEV(MODEL("two_inputs.onnx"), "--json", "--backends",
                               "testdev,cpu_ref", "--iterations", "1");
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    json_object *doc = parse_json(r.out);
    json_object *assignment = member(doc, "assignment", json_type_object);
    json_object *per_layer = member(assignment, "per_layer", json_type_array);
    json_object *counts = member(assignment, "layers", json_type_object);
    json_object *inserted = member(assignment, "inserted", json_type_object);
    size_t total = 0;
    static const char *const ids[] = {"cpu_ref", "testdev"};
    for (size_t i = 0; i < 2; i++) {
        total += (size_t)json_object_get_int(member(counts, ids[i], json_type_int)) +
                 (size_t)json_object_get_int(member(inserted, ids[i], json_type_int));
    }
    cr_assert(eq(sz, json_object_array_length(per_layer), total), "%s", r.out);
    json_object *gather = layer_entry(per_layer, "gather");
    cr_assert(eq(str, (char *)string_member(gather, "op"), "gather"));
    cr_assert(eq(str, (char *)string_member(gather, "backend"), "cpu_ref"));
    cr_assert(eq(str, (char *)string_member(gather, "fell_back_from"), "testdev"));
    cr_assert(json_object_is_type(json_object_object_get(gather, "inserted"), json_type_null));
    cr_assert(eq(sz, json_object_array_length(member(gather, "fused_from", json_type_array)), 0));
    json_object *add = layer_entry(per_layer, "add");
    cr_assert(eq(str, (char *)string_member(add, "backend"), "testdev"));
    cr_assert(json_object_is_type(json_object_object_get(add, "fell_back_from"),
                                  json_type_null));
    cr_assert(eq(sz, inserted_count(per_layer, "import"), 1), "%s", r.out);
    cr_assert(eq(sz, inserted_count(per_layer, "copy"), 0), "%s", r.out);
    json_object_put(doc);
    free_result(&r);

    r = RUN(DIGITS_MODEL, "--json", "--iterations", "1");
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    doc = parse_json(r.out);
    per_layer = member(member(doc, "assignment", json_type_object), "per_layer",
                       json_type_array);
    json_object *fused = member(layer_entry(per_layer, "conv2+relu2"), "fused_from",
                                json_type_array);
    cr_assert(eq(sz, json_object_array_length(fused), 2));
    cr_assert(eq(str, (char *)json_object_get_string(json_object_array_get_idx(fused, 0)),
                 "conv2"));
    cr_assert(eq(str, (char *)json_object_get_string(json_object_array_get_idx(fused, 1)),
                 "relu2"));
    json_object_put(doc);
    free_result(&r);
}

/* The I/O options reach the optimiser: --no-import turns the import layer
 * into a copy, --no-export only the outputs; aligned buffers are never
 * staged; --backend-memory plans nothing. */
Test(cli_run, zero_copy_options) {
    static const struct {
        const char *option;
        bool import, export_;
        const char *inserted;
    } cases[] = {{"--iterations", true, true, "import"},
                 {"--no-import", false, true, "copy"},
                 {"--no-export", true, false, "import"},
                 {"--copy-io", false, false, "copy"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool plain = strcmp(cases[i].option, "--iterations") == 0;
        run_result r = plain ? RUN_TESTDEV(MODEL("two_inputs.onnx"), "--json", "--backends",
                                           "testdev,cpu_ref", "--iterations", "2")
                             : RUN_TESTDEV(MODEL("two_inputs.onnx"), "--json", "--backends",
                                           "testdev,cpu_ref", cases[i].option, "--iterations",
                                           "2");
        cr_assert(eq(int, r.status, 0), "%s: stderr: %s", cases[i].option, r.err);
        json_object *doc = parse_json(r.out);
        json_object *io = member(doc, "io", json_type_object);
        cr_assert(eq(int, json_object_get_boolean(member(io, "import_enabled", json_type_boolean)),
                     cases[i].import), "%s", cases[i].option);
        cr_assert(eq(int, json_object_get_boolean(member(io, "export_enabled", json_type_boolean)),
                     cases[i].export_), "%s", cases[i].option);
        cr_assert(eq(int, json_object_get_int(member(io, "staged_copies", json_type_int)), 0),
                  "%s", cases[i].option);
        cr_assert(eq(int, json_object_get_int(member(io, "waits", json_type_int)), 0));
        json_object *per_layer = member(member(doc, "assignment", json_type_object), "per_layer",
                                        json_type_array);
        cr_assert(eq(sz, inserted_count(per_layer, cases[i].inserted), 1), "%s: %s",
                  cases[i].option, r.out);
        json_object_put(doc);
        free_result(&r);
    }

    run_result r = RUN(DIGITS_MODEL, "--json", "--backend-memory", "--iterations", "1");
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    json_object *doc = parse_json(r.out);
    cr_assert(not(json_object_get_boolean(
        member(member(doc, "io", json_type_object), "planned_memory", json_type_boolean))));
    cr_assert(eq(int, json_object_object_length(member(doc, "memory", json_type_object)), 0));
    json_object_put(doc);
    free_result(&r);
    r = RUN(DIGITS_MODEL, "--iterations", "1");
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    expect_contains(r.out, "Memory: planned by the host; buffers 64-byte aligned; 0 staged "
                           "copies, 0 waits for queued backends\n",
                    "stdout");
    free_result(&r);
}

/* --preimport on cpu_ref, which pre-imports: the same outputs as a plain
 * run, one run at a time and from two threads. */
Test(cli_run, preimport_gives_the_same_outputs, .timeout = 120) {
    char out_dir[64];
    make_temp_dir(out_dir, sizeof out_dir);
    char arg[600], sub[3][128], written[3][160];
    snprintf(arg, sizeof arg, "image=%s/inputs/digit-3.npy", DIGITS_DIR);
    for (int k = 0; k < 3; k++) {
        snprintf(sub[k], sizeof sub[k], "%s/%d", out_dir, k);
        run_result r = k == 0   ? RUN(DIGITS_MODEL, "--input", arg, "--output-dir", sub[k],
                                      "--iterations", "3")
                       : k == 1 ? RUN(DIGITS_MODEL, "--input", arg, "--output-dir", sub[k],
                                      "--iterations", "3", "--preimport")
                                : RUN(DIGITS_MODEL, "--input", arg, "--output-dir", sub[k],
                                      "--iterations", "4", "--preimport", "--concurrency", "2");
        cr_assert(eq(int, r.status, 0), "run %d: stderr: %s", k, r.err);
        if (k) {
            expect_contains(r.out, "inputs and outputs pre-imported (--preimport)", "stdout");
        }
        free_result(&r);
        snprintf(written[k], sizeof written[k], "%s/probabilities.npy", sub[k]);
    }
    npy_array a;
    char err[512];
    cr_assert(npy_read(written[0], &a, err, sizeof err), "%s", err);
    for (int k = 1; k < 3; k++) {
        npy_array b;
        cr_assert(npy_read(written[k], &b, err, sizeof err), "%s", err);
        cr_assert(eq(sz, a.bytes, b.bytes));
        cr_assert(eq(int, memcmp(a.data, b.data, a.bytes), 0), "run %d", k);
        npy_free(&b);
    }
    npy_free(&a);
    run_result r = RUN(DIGITS_MODEL, "--json", "--preimport", "--iterations", "1");
    cr_assert(eq(int, r.status, 0), "stderr: %s", r.err);
    json_object *doc = parse_json(r.out);
    cr_assert(json_object_get_boolean(
        member(member(doc, "io", json_type_object), "preimport", json_type_boolean)));
    json_object_put(doc);
    free_result(&r);
    remove_tree(out_dir);
}

/* An input that cannot be pre-imported (testdev with import=none imports
 * nothing, so its inputs are not zero copy): the core's error, naming the
 * tensor and the cause, and exit status 1. */
Test(cli_run, preimport_refused_names_the_cause) {
    run_result r = RUN_TESTDEV(MODEL("two_inputs.onnx"), "--backends", "testdev,cpu_ref",
                               "--option", "testdev.import=none", "--preimport");
    cr_assert(eq(int, r.status, 1), "exit %d, stderr: %s", r.status, r.err);
    expect_contains(r.err, "plexus run: cannot pre-import the inputs (--preimport): ", "stderr");
    expect_contains(r.err, "is not zero copy in this network (its backend cannot import it",
                    "stderr");
    free_result(&r);
}
