/* The probe: each plug-in file loaded first in a separate process
 * (registry.h, docs/backend-abi.md "The probe").
 *
 * The host starts PLX_PROBE_PATH (tools/plugin_probe.c) with posix_spawn,
 * which loads the one file through this same registry code, with
 * plxi_probe_phase reporting each step on file descriptor 3 ("probe\n" when
 * it starts, "phase its entry point\n", ..., "done\n"). The host reads that and the probe's stdout
 * until both close or the time limit passes, then reaps it: a probe that was
 * killed by a signal, exited before "done", outlived the limit or printed on
 * stdout rejects the file, with the last step it reached. Results are
 * cached in one text file per user (a cache only: a line that does not
 * parse is ignored, and the file is replaced whole by rename, so concurrent
 * writers lose an entry at worst). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "registry.h"

#ifndef PLX_PROBE_PATH
#error "PLX_PROBE_PATH must be defined by the build"
#endif

extern char **environ;

#define DEFAULT_TIMEOUT_MS 10000u
#define CACHE_NAME "plugin-probe-v2"
#define CACHE_MAX_ENTRIES 4096

void (*plxi_probe_phase)(const char *phase) = NULL;

typedef struct plxi_probe_entry {
    char *path;
    uint64_t dev, ino, size;
    int64_t mtime_s, mtime_ns;
    uint32_t abi;
    uint64_t options; /* options_key of the run */
    char *reason; /* NULL: passed */
} plxi_probe_entry;

static plx_status oom(void) {
    return plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory while probing plug-ins");
}

static void free_entry(plxi_probe_entry *e) {
    if (e) {
        free(e->path);
        free(e->reason);
        free(e);
    }
}

/* The cache file: cache_dir/CACHE_NAME, the user's by default. NULL and no
 * error when there is none. */
static char *cache_file(const char *cache_dir) {
    if (cache_dir && !*cache_dir) {
        return NULL;
    }
    if (cache_dir) {
        return plxi_asprintf("%s/%s", cache_dir, CACHE_NAME);
    }
    const char *xdg = secure_getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/') {
        return plxi_asprintf("%s/plexus/%s", xdg, CACHE_NAME);
    }
    const char *home = secure_getenv("HOME");
    if (home && home[0] == '/') {
        return plxi_asprintf("%s/.cache/plexus/%s", home, CACHE_NAME);
    }
    return NULL;
}

plx_status plxi_probe_configure(plx_runtime *rt, const char *path, uint32_t timeout_ms,
                                const char *cache_dir) {
    rt->probe = true;
    rt->probe_timeout_ms = timeout_ms ? timeout_ms : DEFAULT_TIMEOUT_MS;
    rt->probe_path = plxi_strdup(path ? path : PLX_PROBE_PATH);
    bool want_cache = !cache_dir || *cache_dir;
    rt->probe_cache_file = want_cache ? cache_file(cache_dir) : NULL;
    if (!rt->probe_path || (want_cache && !rt->probe_cache_file && cache_dir)) {
        return oom();
    }
    return NULL;
}

void plxi_probe_release(plx_runtime *rt) {
    for (size_t i = 0; i < rt->probe_cache.count; i++) {
        free_entry(rt->probe_cache.items[i]);
    }
    plxi_ptr_vec_release(&rt->probe_cache);
    free(rt->probe_path);
    free(rt->probe_cache_file);
    rt->probe_path = NULL;
    rt->probe_cache_file = NULL;
}

/* ---- the cache ----------------------------------------------------------- */

/* One line: abi dev ino size mtime_s mtime_ns options ok path reason,
 * tab-separated; path and reason hold no tab or newline (such entries are
 * not cached). */
static plxi_probe_entry *parse_line(char *line) {
    char *f[10];
    size_t n = 0;
    for (char *p = line; n < 10; n++) {
        f[n] = p;
        char *tab = n < 9 ? strchr(p, '\t') : NULL;
        if (n < 9 && !tab) {
            return NULL;
        }
        if (tab) {
            *tab = '\0';
            p = tab + 1;
        }
    }
    plxi_probe_entry *e = calloc(1, sizeof *e);
    if (!e) {
        return NULL;
    }
    char *end;
    unsigned long long v[7];
    for (int i = 0; i < 7; i++) {
        errno = 0;
        v[i] = strtoull(f[i], &end, 10);
        if (errno || end == f[i] || *end) {
            free(e);
            return NULL;
        }
    }
    e->abi = (uint32_t)v[0];
    e->dev = v[1];
    e->ino = v[2];
    e->size = v[3];
    e->mtime_s = (int64_t)v[4];
    e->mtime_ns = (int64_t)v[5];
    e->options = v[6];
    bool ok = strcmp(f[7], "ok") == 0;
    if ((!ok && strcmp(f[7], "rejected") != 0) || f[8][0] != '/' || (!ok && !f[9][0])) {
        free(e);
        return NULL;
    }
    e->path = plxi_strdup(f[8]);
    e->reason = ok ? NULL : plxi_strdup(f[9]);
    if (!e->path || (!ok && !e->reason)) {
        free_entry(e);
        return NULL;
    }
    return e;
}

static void load_cache(plx_runtime *rt) {
    rt->probe_cache_loaded = true;
    FILE *f = rt->probe_cache_file ? fopen(rt->probe_cache_file, "re") : NULL;
    if (!f) {
        return;
    }
    char line[8192];
    while (fgets(line, sizeof line, f) && rt->probe_cache.count < CACHE_MAX_ENTRIES) {
        size_t len = strlen(line);
        if (len == 0 || line[len - 1] != '\n') {
            continue; /* too long, or cut off */
        }
        line[len - 1] = '\0';
        plxi_probe_entry *e = parse_line(line);
        if (e && !plxi_ptr_vec_push(&rt->probe_cache, e)) {
            free_entry(e);
        }
    }
    fclose(f);
}

/* The probe's arguments after the file: the options the runtime creates
 * backends with, so that the probe creates them the same way:
 * "--threads N" (plx_runtime_options.intra_op_threads), then
 * "--option ID KEY VALUE" for each backend option. *count: how many. NULL
 * when out of memory; the strings are the runtime's. */
static char **probe_options(const plx_runtime *rt, size_t *count) {
    char **v = calloc(2 + 4 * rt->option_count + 1, sizeof *v);
    size_t n = 0;
    if (v && rt->intra_op_threads[0]) {
        v[n++] = "--threads";
        v[n++] = (char *)rt->intra_op_threads;
    }
    for (size_t i = 0; v && i < rt->option_count; i++) {
        v[n++] = "--option";
        v[n++] = (char *)rt->options[i].backend_id;
        v[n++] = (char *)rt->options[i].key;
        v[n++] = (char *)rt->options[i].value;
    }
    *count = n;
    return v;
}

/* A key of those arguments for the cache (64-bit FNV-1a over the strings
 * and their terminators): a result holds for the options it was probed
 * with. */
static uint64_t options_key(char *const *args, size_t count) {
    uint64_t h = 14695981039346656037u;
    for (size_t i = 0; i < count; i++) {
        for (const char *p = args[i];; p++) {
            h = (h ^ (unsigned char)*p) * 1099511628211u;
            if (!*p) {
                break;
            }
        }
    }
    return h;
}

/* Whether entry `e` was made for the file `st` describes, by this ABI. */
static bool same_identity(const plxi_probe_entry *e, const struct stat *st) {
    return e->abi == PLX_ABI_VERSION && e->dev == (uint64_t)st->st_dev &&
           e->ino == (uint64_t)st->st_ino && e->size == (uint64_t)st->st_size &&
           e->mtime_s == (int64_t)st->st_mtim.tv_sec &&
           e->mtime_ns == (int64_t)st->st_mtim.tv_nsec;
}

static bool same_file(const plxi_probe_entry *e, const char *path, const struct stat *st,
                      uint64_t options) {
    return strcmp(e->path, path) == 0 && e->options == options && same_identity(e, st);
}

/* Records the probe's verdict on `path` with `options`, dropping the
 * path's entries it replaces: the one of the same options, and those made
 * for an older file at that path. */
static plx_status remember(plx_runtime *rt, const char *path, const struct stat *st,
                           uint64_t options, const char *reason) {
    if (!rt->probe_cache_file || strpbrk(path, "\t\n") || (reason && strpbrk(reason, "\t\n"))) {
        return NULL;
    }
    plxi_probe_entry *e = calloc(1, sizeof *e);
    if (!e) {
        return oom();
    }
    *e = (plxi_probe_entry){.path = plxi_strdup(path), .dev = (uint64_t)st->st_dev,
                            .ino = (uint64_t)st->st_ino, .size = (uint64_t)st->st_size,
                            .mtime_s = (int64_t)st->st_mtim.tv_sec,
                            .mtime_ns = (int64_t)st->st_mtim.tv_nsec, .abi = PLX_ABI_VERSION,
                            .options = options, .reason = reason ? plxi_strdup(reason) : NULL};
    if (!e->path || (reason && !e->reason)) {
        free_entry(e);
        return oom();
    }
    size_t keep = 0;
    for (size_t i = 0; i < rt->probe_cache.count; i++) {
        plxi_probe_entry *old = rt->probe_cache.items[i];
        if (strcmp(old->path, path) == 0 &&
            (old->options == options || !same_identity(old, st))) {
            free_entry(old);
            continue;
        }
        rt->probe_cache.items[keep++] = old;
    }
    rt->probe_cache.count = keep;
    rt->probe_cache_dirty = true;
    if (rt->probe_cache.count >= CACHE_MAX_ENTRIES || !plxi_ptr_vec_push(&rt->probe_cache, e)) {
        free_entry(e);
        return rt->probe_cache.count >= CACHE_MAX_ENTRIES ? NULL : oom();
    }
    return NULL;
}

/* mkdir -p of the directory part of `file`, mode 0700. */
static bool make_parent_dirs(const char *file) {
    char *dir = plxi_strdup(file);
    if (!dir) {
        return false;
    }
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
    }
    for (char *p = dir + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0700);
            *p = '/';
        }
    }
    bool ok = mkdir(dir, 0700) == 0 || errno == EEXIST;
    free(dir);
    return ok;
}

plx_status plxi_probe_cache_save(plx_runtime *rt) {
    if (!rt->probe || !rt->probe_cache_file || !rt->probe_cache_dirty) {
        return NULL;
    }
    rt->probe_cache_dirty = false;
    char *tmp = plxi_asprintf("%s.XXXXXX", rt->probe_cache_file);
    if (!tmp) {
        return oom();
    }
    int fd = make_parent_dirs(rt->probe_cache_file) ? mkstemp(tmp) : -1;
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    bool ok = f != NULL;
    for (size_t i = 0; ok && i < rt->probe_cache.count; i++) {
        const plxi_probe_entry *e = rt->probe_cache.items[i];
        ok = fprintf(f, "%" PRIu32 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRId64
                        "\t%" PRId64 "\t%" PRIu64 "\t%s\t%s\t%s\n",
                     e->abi, e->dev, e->ino, e->size, e->mtime_s, e->mtime_ns, e->options,
                     e->reason ? "rejected" : "ok", e->path, e->reason ? e->reason : "") > 0;
    }
    if (f) {
        ok = fclose(f) == 0 && ok;
    } else if (fd >= 0) {
        close(fd);
    }
    int err = errno;
    ok = ok && rename(tmp, rt->probe_cache_file) == 0;
    if (!ok) {
        err = errno ? errno : err;
        if (fd >= 0) {
            unlink(tmp);
        }
    }
    free(tmp);
    if (!ok && !plxi_runtime_note(rt, "the plug-in probe's cache %s cannot be written: %s",
                                  rt->probe_cache_file, strerror(err))) {
        return oom();
    }
    return NULL;
}

/* ---- running the probe ---------------------------------------------------- */

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

typedef struct probe_run {
    char phase[128]; /* the last step reported, "" before the first */
    char partial[160];
    size_t partial_len;
    bool started; /* the probe said "probe": it runs */
    bool done;
    size_t stdout_bytes;
    bool timed_out;
    int status; /* waitpid's */
} probe_run;

/* Takes the report's bytes: lines "phase TEXT" and "done". */
static void take_report(probe_run *r, const char *buf, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (buf[i] != '\n') {
            if (r->partial_len < sizeof r->partial - 1) {
                r->partial[r->partial_len++] = buf[i];
            }
            continue;
        }
        r->partial[r->partial_len] = '\0';
        if (strncmp(r->partial, "phase ", 6) == 0) {
            snprintf(r->phase, sizeof r->phase, "%s", r->partial + 6);
        } else if (strcmp(r->partial, "done") == 0) {
            r->done = true;
        } else if (strcmp(r->partial, "probe") == 0) {
            r->started = true;
        }
        r->partial_len = 0;
    }
}

/* Spawns the probe on `path` with the option arguments `opts` and waits
 * for it (at most the time limit). Returns the spawn's error (0: it ran). */
static int run_probe(plx_runtime *rt, const char *path, char *const *opts, size_t opt_count,
                     probe_run *r) {
    char **argv = calloc(3 + opt_count + 1, sizeof *argv);
    if (!argv) {
        return ENOMEM;
    }
    argv[0] = rt->probe_path;
    argv[1] = "3";
    argv[2] = (char *)path;
    memcpy(argv + 3, opts, opt_count * sizeof *opts);
    int report[2], out[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        int err = errno;
        free(argv);
        return err;
    }
    if (pipe2(out, O_CLOEXEC) != 0) {
        int err = errno;
        close(report[0]);
        close(report[1]);
        free(argv);
        return err;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, report[1], 3);
    pid_t pid;
    int err = posix_spawn(&pid, rt->probe_path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    free(argv);
    close(report[1]);
    close(out[1]);
    if (err) {
        close(report[0]);
        close(out[0]);
        return err;
    }
    struct pollfd fds[2] = {{.fd = report[0], .events = POLLIN}, {.fd = out[0], .events = POLLIN}};
    uint64_t deadline = now_ms() + rt->probe_timeout_ms;
    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
        uint64_t now = now_ms();
        if (now >= deadline) {
            r->timed_out = true;
            break;
        }
        int n = poll(fds, 2, (int)(deadline - now));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            r->timed_out = n == 0;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !fds[i].revents) {
                continue;
            }
            char buf[512];
            ssize_t got = read(fds[i].fd, buf, sizeof buf);
            if (got < 0 && errno == EINTR) {
                continue;
            }
            if (got <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
            } else if (i == 0) {
                take_report(r, buf, (size_t)got);
            } else {
                r->stdout_bytes += (size_t)got;
            }
        }
    }
    if (r->timed_out) {
        kill(pid, SIGKILL);
    }
    for (int i = 0; i < 2; i++) {
        if (fds[i].fd >= 0) {
            close(fds[i].fd);
        }
    }
    while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR) {
    }
    return 0;
}

/* Whether the probe's run rejects the file; *why: the reason (heap; NULL
 * when out of memory). */
static bool rejects(const probe_run *r, uint32_t timeout_ms, char **why) {
    *why = NULL;
    const char *where = r->phase[0] ? r->phase : "loading";
    if (r->timed_out) {
        *why = plxi_asprintf("hung in %s during the probe: no answer in %" PRIu32
                             " ms, killed", where, timeout_ms);
    } else if (WIFSIGNALED(r->status)) {
        const char *name = sigabbrev_np(WTERMSIG(r->status));
        *why = plxi_asprintf("killed by SIG%s in %s during the probe", name ? name : "?",
                             where);
    } else if (!r->done) {
        *why = plxi_asprintf("exited with status %d in %s during the probe",
                             WIFEXITED(r->status) ? WEXITSTATUS(r->status) : -1, where);
    } else if (r->stdout_bytes) {
        *why = plxi_asprintf("wrote %zu bytes to stdout during the probe: a plug-in must not "
                             "write to the host's output", r->stdout_bytes);
    } else {
        return false;
    }
    return true;
}

plx_status plxi_probe_plugin(plx_runtime *rt, const char *resolved, const struct stat *st,
                             char **out_reason) {
    *out_reason = NULL;
    if (!rt->probe) {
        return NULL;
    }
    if (!rt->probe_cache_loaded) {
        load_cache(rt);
    }
    size_t opt_count;
    char **opts = probe_options(rt, &opt_count);
    if (!opts) {
        return oom();
    }
    uint64_t key = options_key(opts, opt_count);
    for (size_t i = 0; i < rt->probe_cache.count; i++) {
        const plxi_probe_entry *e = rt->probe_cache.items[i];
        if (same_file(e, resolved, st, key)) {
            free(opts);
            plxi_log(&rt->logger, PLX_LOG_DEBUG, "plexus", "%s: the probe's result from %s",
                     resolved, rt->probe_cache_file);
            if (e->reason && !(*out_reason = plxi_strdup(e->reason))) {
                return oom();
            }
            return NULL;
        }
    }
    probe_run r;
    memset(&r, 0, sizeof r);
    int err = run_probe(rt, resolved, opts, opt_count, &r);
    free(opts);
    if (err == ENOMEM || err == EAGAIN) {
        return oom();
    }
    char why_not[96] = "";
    if (err) {
        snprintf(why_not, sizeof why_not, "%s", strerror(err));
    } else if (!r.started && !r.timed_out && WIFEXITED(r.status)) {
        /* where posix_spawn cannot report a failed exec (its child exits
         * 127), or the probe refused its arguments */
        snprintf(why_not, sizeof why_not, "it exited with status %d before it started",
                 WEXITSTATUS(r.status));
    }
    if (why_not[0]) {
        rt->probe = false;
        return plxi_runtime_note(rt, "the plug-in probe %s cannot run (%s): plug-ins are loaded "
                                     "in this process without it",
                                 rt->probe_path, why_not)
                   ? NULL
                   : oom();
    }
    char *why;
    if (rejects(&r, rt->probe_timeout_ms, &why) && !why) {
        return oom();
    }
    plxi_log(&rt->logger, PLX_LOG_DEBUG, "plexus", "%s: probed: %s", resolved,
             why ? why : "passed");
    plx_status s = remember(rt, resolved, st, key, why);
    if (s) {
        free(why);
        return s;
    }
    *out_reason = why;
    return NULL;
}
