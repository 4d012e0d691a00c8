/* The ONNX backend node tests, run on Plexus: every case directory of
 * onnx/backend/test/data/node (model.onnx, test_data_set_N/input_K.pb and
 * output_K.pb) is imported with plx_onnx_import_file, optimised for each
 * available backend alone (no fallback), loaded, run on every data set, and
 * its outputs compared with the expected ones under ONNX's backend-test
 * tolerances. Prints TAP (one test point per case and backend).
 *
 * The code of two programs (node_tests.h): tests/conformance/run_conformance
 * (the test suite's runner) and `plexus conformance --onnx-node-tests`
 * (tools/conformance.c), which runs it on one plug-in file.
 *
 * Each case runs in a child process (unless --no-fork), so that a crash,
 * a hang (--timeout) or a sanitizer's report in one case fails that case
 * only, with the reason. The parent then loads no backend itself (a probe
 * process lists them) and each case's process makes its own runtime: an
 * OpenCL driver's threads do not survive fork(), so a runtime made before
 * the fork would hang in the child. See docs/conformance.md. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strcasestr, strsignal */
#endif
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <plexus/dynamic.h>
#include <plexus/network.h>
#include <plexus/onnx.h>
#include <plexus/plexus.h>

#include "node_tests.h"
#include "option_arg.h"

/* ONNX's backend-test defaults (onnx/backend/test/loader). */
#define RTOL 1e-3
#define ATOL 1e-7

/* Longest reason printed on a TAP line. */
#define REASON_MAX 600
/* Longest grouping key (a key lists every reason of a case). */
#define KEY_MAX 8000

#define MAX_JOBS 64

/* ------------------------------------------------------------------------ */
/* Small helpers                                                              */
/* ------------------------------------------------------------------------ */

static const char *prog = "run_conformance";
/* Where the TAP stream goes (node_tests_run's `tap`). */
static FILE *tap_out;

static void die_oom(void) {
    fprintf(stderr, "%s: out of memory\n", prog);
    exit(3);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        die_oom();
    }
    return p;
}

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        die_oom();
    }
    return q;
}

static char *xstrdup(const char *s) {
    size_t n = strlen(s);
    char *p = xmalloc(n + 1);
    memcpy(p, s, n + 1);
    return p;
}

__attribute__((format(printf, 1, 0))) static char *xvasprintf(const char *fmt, va_list ap) {
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0) {
        return xstrdup("(unprintable message)");
    }
    char *s = xmalloc((size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

__attribute__((format(printf, 1, 2))) static char *xasprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

/* A growing string. */
typedef struct strbuf {
    char *s;
    size_t len, cap;
} strbuf;

static void sb_addn(strbuf *b, const char *text, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1) {
            cap *= 2;
        }
        b->s = xrealloc(b->s, cap);
        b->cap = cap;
    }
    memcpy(b->s + b->len, text, n);
    b->len += n;
    b->s[b->len] = '\0';
}

__attribute__((format(printf, 2, 3))) static void sb_add(strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    sb_addn(b, s, strlen(s));
    free(s);
}

/* The buffer's string, owned by the caller ("" when empty). */
static char *sb_take(strbuf *b) {
    char *s = b->s ? b->s : xstrdup("");
    b->s = NULL;
    b->len = b->cap = 0;
    return s;
}

/* One line, for TAP: control characters become spaces, runs of spaces one
 * space, '#' (which would start a TAP directive) "no.", and the result is
 * cut at `max` characters. Returns a new string. */
static char *one_line(const char *text, size_t max) {
    strbuf b = {0};
    bool space = false;
    for (const char *p = text ? text : ""; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c == 0x7f || c == ' ') {
            space = b.len > 0;
            continue;
        }
        if (space) {
            sb_addn(&b, " ", 1);
            space = false;
        }
        if (c == '#') {
            sb_addn(&b, "no.", 3);
        } else {
            sb_addn(&b, (const char *)p, 1);
        }
    }
    char *s = sb_take(&b);
    size_t n = strlen(s);
    if (n > max && max > 3) {
        /* do not cut a UTF-8 sequence in two */
        size_t cut = max - 3;
        while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80) {
            cut--;
        }
        memcpy(s + cut, "...", 4);
    }
    return s;
}

static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct strlist {
    char **v;
    size_t n, cap;
} strlist;

static void sl_push(strlist *l, char *s) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = xrealloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = s;
}

static void sl_free(strlist *l) {
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i]);
    }
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

static bool sl_contains(const strlist *l, const char *s) {
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(l->v[i], s) == 0) {
            return true;
        }
    }
    return false;
}

/* The entries of `dir` (sorted by name) for which keep() holds. Returns
 * false with errno set when the directory cannot be read. */
static bool list_dir(const char *dir, bool (*keep)(const char *dir, const char *name),
                     strlist *out) {
    DIR *d = opendir(dir);
    if (!d) {
        return false;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        if (keep(dir, e->d_name)) {
            sl_push(out, xstrdup(e->d_name));
        }
    }
    closedir(d);
    if (out->n) {
        qsort(out->v, out->n, sizeof *out->v, cmp_str);
    }
    return true;
}

/* "float32[2,3,4]" */
static char *info_str(const plx_tensor_info *info) {
    strbuf b = {0};
    sb_add(&b, "%s[", plx_dtype_name(info->dtype));
    for (uint32_t i = 0; i < info->rank && i < PLX_MAX_RANK; i++) {
        sb_add(&b, "%s%" PRId64, i ? "," : "", info->dims[i]);
    }
    sb_addn(&b, "]", 1);
    return sb_take(&b);
}

/* ------------------------------------------------------------------------ */
/* Results                                                                    */
/* ------------------------------------------------------------------------ */

typedef enum result_kind {
    RESULT_NONE = 0, /* not reported (the case's process died first) */
    RESULT_PASS,
    RESULT_FAIL,
    RESULT_SKIP
} result_kind;

/* The outcome of one case on one backend. `key` groups skips (and
 * failures) in the summary; `reason` is the one-line message. */
/* The key of a pass specialised on the values of some inputs (the graph
 * needs them at import): counted apart in the summary. */
#define VALUED_PASS "specialised on the values of"

typedef struct result {
    result_kind kind;
    char *key;
    char *reason;
} result;

static void result_set(result *r, result_kind kind, const char *key, const char *reason) {
    free(r->key);
    free(r->reason);
    r->kind = kind;
    r->key = key ? one_line(key, KEY_MAX) : NULL;
    r->reason = reason ? one_line(reason, REASON_MAX) : NULL;
}

static void result_clear(result *r) {
    free(r->key);
    free(r->reason);
    r->key = r->reason = NULL;
    r->kind = RESULT_NONE;
}

/* ------------------------------------------------------------------------ */
/* Options                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct options {
    const char *data_dir;
    strlist backend_paths;
    strlist backends;     /* --backends: restrict to these ids */
    strlist filters;      /* --filter: any substring matches */
    const char *expected_failures;
    plx_backend_option *backend_options; /* --option */
    size_t backend_option_count;
    bool list_skips;
    bool fork;
    unsigned timeout_s;
    unsigned jobs;
} options;

static void free_options(options *o) {
    sl_free(&o->backend_paths);
    sl_free(&o->backends);
    sl_free(&o->filters);
    free(o->backend_options); /* the strings are argv's */
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: %s [options] NODE_DATA_DIR\n"
            "Runs the ONNX backend node tests (onnx/backend/test/data/node) on Plexus;\n"
            "prints TAP, one test point per case and backend.\n"
            "\n"
            "  --backend-path DIR      search DIR (a directory or plug-in file) for backends;\n"
            "                          repeatable; the default directory and the\n"
            "                          environment are never used\n"
            "  --backends A,B          only these backend ids (each must be available)\n"
            "  --filter SUBSTRING      only cases whose name contains SUBSTRING; repeatable\n"
            "  --option ID.KEY=VALUE   create backend ID with option KEY set to VALUE;\n"
            "                          repeatable\n"
            "  --list-skips            print skip reasons with counts at the end\n"
            "  --expected-failures F   cases listed in F ('case' or 'case [backend]' per\n"
            "                          line, '#' comments) that fail are TODO, not failures\n"
            "  --timeout SECONDS       per case (default 60, times 10 when PLEXUS_TEST_VALGRIND\n"
            "                          is set; 0: none)\n"
            "  --jobs N, -j N          cases run at once (default: online CPUs, at most 8)\n"
            "  --no-fork               run cases in this process (no crash isolation)\n"
            "  --tap=-                 accepted and ignored: the output is always TAP\n"
            "  --help                  this text\n"
            "Exit status: 0 when no case failed unexpectedly, 1 otherwise, 2 bad usage.\n",
            prog);
}

static bool parse_uint(const char *s, unsigned *out) {
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || v > 100000) {
        return false;
    }
    *out = (unsigned)v;
    return true;
}

static int parse_options(int argc, char **argv, options *o) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    o->fork = true;
    o->timeout_s = 60;
    o->jobs = cpus < 1 ? 1 : cpus > 8 ? 8 : (unsigned)cpus;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        bool takes = strcmp(a, "--backend-path") == 0 || strcmp(a, "--backends") == 0 ||
                     strcmp(a, "--filter") == 0 || strcmp(a, "--expected-failures") == 0 ||
                     strcmp(a, "--timeout") == 0 || strcmp(a, "--jobs") == 0 ||
                     strcmp(a, "-j") == 0 || strcmp(a, "--option") == 0;
        if (takes) {
            if (i + 1 >= argc) {
                fprintf(stderr, "%s: %s needs a value\n", prog, a);
                return 2;
            }
            val = argv[++i];
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--backend-path") == 0) {
            sl_push(&o->backend_paths, xstrdup(val));
        } else if (strcmp(a, "--backends") == 0) {
            const char *p = val;
            while (*p) {
                size_t n = strcspn(p, ",");
                if (n) {
                    char *id = xmalloc(n + 1);
                    memcpy(id, p, n);
                    id[n] = '\0';
                    sl_push(&o->backends, id);
                }
                p += n;
                if (*p == ',') {
                    p++;
                }
            }
            if (o->backends.n == 0) {
                fprintf(stderr, "%s: --backends needs at least one id\n", prog);
                return 2;
            }
        } else if (strcmp(a, "--option") == 0) {
            o->backend_options = xrealloc(o->backend_options, (o->backend_option_count + 1) *
                                                                   sizeof *o->backend_options);
            /* split in argv itself, which outlives the options */
            if (!option_arg_parse(argv[i], &o->backend_options[o->backend_option_count])) {
                fprintf(stderr, "%s: bad --option '%s' (ID.KEY=VALUE)\n", prog, val);
                return 2;
            }
            o->backend_option_count++;
        } else if (strcmp(a, "--filter") == 0) {
            sl_push(&o->filters, xstrdup(val));
        } else if (strcmp(a, "--expected-failures") == 0) {
            o->expected_failures = val;
        } else if (strcmp(a, "--timeout") == 0) {
            if (!parse_uint(val, &o->timeout_s)) {
                fprintf(stderr, "%s: bad --timeout '%s'\n", prog, val);
                return 2;
            }
        } else if (strcmp(a, "--jobs") == 0 || strcmp(a, "-j") == 0) {
            if (!parse_uint(val, &o->jobs) || o->jobs == 0 || o->jobs > MAX_JOBS) {
                fprintf(stderr, "%s: bad --jobs '%s' (1 to %d)\n", prog, val, MAX_JOBS);
                return 2;
            }
        } else if (strcmp(a, "--tap=-") == 0 || strcmp(a, "--tap") == 0) {
            /* TAP on stdout is the only output (the test loop of
             * tests/meson.build passes --tap=- to every TAP program) */
        } else if (strcmp(a, "--list-skips") == 0) {
            o->list_skips = true;
        } else if (strcmp(a, "--no-fork") == 0) {
            o->fork = false;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "%s: unknown option '%s'\n", prog, a);
            usage(stderr);
            return 2;
        } else if (o->data_dir) {
            fprintf(stderr, "%s: one data directory only ('%s' and '%s')\n", prog, o->data_dir,
                    a);
            return 2;
        } else {
            o->data_dir = a;
        }
    }
    if (!o->data_dir) {
        usage(stderr);
        return 2;
    }
    /* `meson test --setup valgrind` sets it: everything runs some 20 times
     * slower there */
    const char *vg = getenv("PLEXUS_TEST_VALGRIND");
    if (vg && *vg && strcmp(vg, "0") != 0 && o->timeout_s <= 100000 / 10) {
        o->timeout_s *= 10;
    }
    if (!o->fork) {
        o->jobs = 1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Expected failures                                                          */
/* ------------------------------------------------------------------------ */

/* Entries "case" (every backend) or "case [backend]". */
typedef struct expected {
    char *case_name;
    char *backend; /* NULL: every backend */
    bool seen;
    bool failed; /* it did fail somewhere */
} expected;

typedef struct expected_list {
    expected *v;
    size_t n;
} expected_list;

static bool load_expected(const char *path, expected_list *out) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot open %s: %s\n", prog, path, strerror(errno));
        return false;
    }
    char line[1024];
    unsigned lineno = 0;
    bool ok = true;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) {
            *hash = '\0';
        }
        char *p = line;
        while (isspace((unsigned char)*p)) {
            p++;
        }
        size_t n = strlen(p);
        while (n && isspace((unsigned char)p[n - 1])) {
            p[--n] = '\0';
        }
        if (!n) {
            continue;
        }
        size_t name_len = strcspn(p, " \t[");
        char *backend = NULL;
        char *rest = p + name_len;
        while (isspace((unsigned char)*rest)) {
            rest++;
        }
        if (*rest == '[') {
            char *close = strchr(rest, ']');
            if (!close || close[1] != '\0' || close == rest + 1) {
                fprintf(stderr, "%s:%u: expected 'case' or 'case [backend]'\n", path, lineno);
                ok = false;
                continue;
            }
            *close = '\0';
            backend = xstrdup(rest + 1);
        } else if (*rest) {
            fprintf(stderr, "%s:%u: expected 'case' or 'case [backend]'\n", path, lineno);
            ok = false;
            continue;
        }
        p[name_len] = '\0';
        out->v = xrealloc(out->v, (out->n + 1) * sizeof *out->v);
        out->v[out->n].case_name = xstrdup(p);
        out->v[out->n].backend = backend;
        out->v[out->n].seen = false;
        out->v[out->n].failed = false;
        out->n++;
    }
    fclose(f);
    return ok;
}

static expected *find_expected(expected_list *l, const char *case_name, const char *backend) {
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(l->v[i].case_name, case_name) == 0 &&
            (!l->v[i].backend || strcmp(l->v[i].backend, backend) == 0)) {
            return &l->v[i];
        }
    }
    return NULL;
}

static void free_expected(expected_list *l) {
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].case_name);
        free(l->v[i].backend);
    }
    free(l->v);
}

/* ------------------------------------------------------------------------ */
/* Messages                                                                   */
/* ------------------------------------------------------------------------ */

/* `msg` without the paths of the case: "<model path>: " prefixes dropped,
 * "<case dir>/" dropped elsewhere (the TAP line names the case). */
static char *strip_paths(const char *msg, const char *model_path, const char *case_dir) {
    strbuf b = {0};
    size_t ml = strlen(model_path), cl = strlen(case_dir);
    for (const char *p = msg; *p;) {
        if (strncmp(p, model_path, ml) == 0 && p[ml] == ':' && p[ml + 1] == ' ') {
            p += ml + 2;
        } else if (strncmp(p, case_dir, cl) == 0 && p[cl] == '/') {
            p += cl + 1;
        } else {
            sb_addn(&b, p, 1);
            p++;
        }
    }
    return sb_take(&b);
}

/* Whether an import error other than PLX_UNSUPPORTED is about something
 * Plexus does not do (a data type it lacks), rather than a fault. */
static bool says_unsupported(const char *msg) {
    static const char *const words[] = {"unsupported", "not supported", "does not support",
                                        "which plexus does not have"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        if (strcasestr(msg, words[i])) {
            return true;
        }
    }
    return false;
}

/* Copies the text between the first `open` and the next `close` after it. */
static char *between(const char *s, const char *open, char close) {
    const char *p = strstr(s, open);
    if (!p) {
        return NULL;
    }
    p += strlen(open);
    const char *q = strchr(p, close);
    if (!q || q == p) {
        return NULL;
    }
    char *r = xmalloc((size_t)(q - p) + 1);
    memcpy(r, p, (size_t)(q - p));
    r[q - p] = '\0';
    return r;
}

/* Whether the quote at `q` opens the name of a node, tensor or the like
 * (not a value such as mode='cubic'). */
static bool names_follow(const char *start, const char *q) {
    static const char *const words[] = {"node ", "layer ", "input ", "output ",
                                        "tensor ", "initializer ", "reads ", "defines "};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        size_t n = strlen(words[i]);
        if ((size_t)(q - start) >= n && strncmp(q - n, words[i], n) == 0) {
            return true;
        }
    }
    return false;
}

/* Replaces the quoted names of nodes, tensors... by '*' and the numbers
 * of shapes and index lists by N, so that reasons that differ only by
 * names and sizes group together. */
static char *generalise(const char *reason) {
    strbuf b = {0};
    for (const char *p = reason; *p; p++) {
        if (*p == '\'' && names_follow(reason, p)) {
            const char *q = strchr(p + 1, '\'');
            if (q) {
                sb_addn(&b, "'*'", 3);
                p = q;
                continue;
            }
        }
        if (isdigit((unsigned char)*p) && p > reason &&
            (p[-1] == '[' || p[-1] == ',')) { /* shapes and indexes, not "opset 7" */
            while (isdigit((unsigned char)p[1])) {
                p++;
            }
            sb_addn(&b, "N", 1);
            continue;
        }
        sb_addn(&b, p, 1);
    }
    return sb_take(&b);
}

/* The lines of an import's PLX_UNSUPPORTED message that name nodes: every
 * non-empty line but a leading header that ends with ':'. */
static void unsupported_lines(const char *msg, strlist *out) {
    const char *p = msg;
    bool first = true;
    while (*p) {
        size_t n = strcspn(p, "\n");
        const char *line = p;
        p += n;
        if (*p == '\n') {
            p++;
        }
        while (n && isspace((unsigned char)*line)) {
            line++;
            n--;
        }
        while (n && isspace((unsigned char)line[n - 1])) {
            n--;
        }
        if (!n) {
            continue;
        }
        bool header = first && line[n - 1] == ':' && *p;
        first = false;
        if (header) {
            continue;
        }
        char *l = xmalloc(n + 1);
        memcpy(l, line, n);
        l[n] = '\0';
        sl_push(out, l);
    }
}

/* A one-line reason and a grouping key for an import's PLX_UNSUPPORTED
 * message. Lines look like "node 'n' (OpType, opset 13): reason"; the
 * key is "unsupported: OpType: reason" with names and numbers generalised. */
static void condense_unsupported(const char *msg, char **out_reason, char **out_key) {
    strlist lines = {0};
    unsupported_lines(msg, &lines);
    if (lines.n == 0) {
        *out_reason = xasprintf("unsupported: %s", msg);
        char *g = generalise(msg);
        *out_key = xasprintf("unsupported: %s", g);
        free(g);
        sl_free(&lines);
        return;
    }
    strbuf reason = {0}, key = {0};
    strlist keys = {0};
    for (size_t i = 0; i < lines.n; i++) {
        const char *line = lines.v[i];
        char *op = NULL;
        if (strncmp(line, "node '", 6) == 0) {
            op = between(line, "' (", ',');
            if (!op) {
                op = between(line, "' (", ')');
            }
        }
        const char *why = strstr(line, "): ");
        why = why ? why + 3 : line;
        char *g = generalise(why);
        char *k = op ? xasprintf("%s: %s", op, g) : xstrdup(g);
        if (!sl_contains(&keys, k)) {
            if (keys.n < 3) {
                sb_add(&reason, "%s%s%s%s", reason.len ? "; " : "", op ? op : "",
                       op ? ": " : "", why);
            }
            sb_add(&key, "%s%s", key.len ? " | " : "", k);
            sl_push(&keys, k);
        } else {
            free(k);
        }
        free(g);
        free(op);
    }
    if (keys.n > 3) {
        sb_add(&reason, " (and %zu more)", keys.n - 3);
    }
    char *r = sb_take(&reason);
    char *k = sb_take(&key);
    *out_reason = xasprintf("unsupported: %s", r);
    *out_key = xasprintf("unsupported: %s", k);
    free(r);
    free(k);
    sl_free(&keys);
    sl_free(&lines);
}

/* A one-line reason and key for plx_optimize's refusal ("N layers cannot
 * be assigned (fallback is disabled):\n  layer 'x' (op): backend: why"). */
static void condense_refusal(const char *backend, const char *msg, char **out_reason,
                             char **out_key) {
    strbuf reason = {0}, key = {0};
    strlist keys = {0};
    const char *p = strchr(msg, '\n');
    size_t shown = 0;
    while (p && *p) {
        p++;
        size_t n = strcspn(p, "\n");
        char *line = xmalloc(n + 1);
        memcpy(line, p, n);
        line[n] = '\0';
        p += n;
        char *op = between(line, "(", ')');
        const char *why = strstr(line, "): ");
        why = why ? why + 3 : line;
        /* drop the "backend: " prefix of the (single) refusal */
        size_t bl = strlen(backend);
        if (strncmp(why, backend, bl) == 0 && why[bl] == ':') {
            why += bl + 1;
            while (*why == ' ') {
                why++;
            }
        }
        char *g = generalise(why);
        char *k = xasprintf("%s: %s", op ? op : "?", g);
        if (!sl_contains(&keys, k)) {
            if (shown++ < 3) {
                sb_add(&reason, "%s%s: %s", reason.len ? "; " : "", op ? op : "?", why);
            }
            sb_add(&key, "%s%s", key.len ? " | " : "", k);
            sl_push(&keys, k);
        } else {
            free(k);
        }
        free(g);
        free(op);
        free(line);
    }
    if (keys.n == 0) {
        *out_reason = xasprintf("refused by %s: %s", backend, msg);
        *out_key = xasprintf("refused by %s", backend);
    } else {
        if (keys.n > 3) {
            sb_add(&reason, " (and %zu more)", keys.n - 3);
        }
        char *r = sb_take(&reason);
        char *k = sb_take(&key);
        *out_reason = xasprintf("refused by %s: %s", backend, r);
        *out_key = xasprintf("refused by %s: %s", backend, k);
        free(r);
        free(k);
    }
    free(reason.s);
    free(key.s);
    sl_free(&keys);
}

/* ------------------------------------------------------------------------ */
/* Comparing tensors                                                          */
/* ------------------------------------------------------------------------ */

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The float8 types compare as floats too (their values exactly, NaN
 * matching NaN, whatever its encoding). */
static bool is_float_dtype(plx_dtype d) {
    return d == PLX_DTYPE_FLOAT32 || d == PLX_DTYPE_FLOAT16 || d == PLX_DTYPE_BFLOAT16 ||
           d == PLX_DTYPE_FLOAT64 || plx_dtype_is_float8(d);
}

static double float_at(plx_dtype d, const void *data, size_t i) {
    const unsigned char *p = data;
    switch (d) {
    case PLX_DTYPE_FLOAT32: {
        float f;
        memcpy(&f, p + i * 4, 4);
        return f;
    }
    case PLX_DTYPE_FLOAT16: {
        uint16_t h;
        memcpy(&h, p + i * 2, 2);
        return half_to_float(h);
    }
    case PLX_DTYPE_BFLOAT16: {
        uint16_t h;
        memcpy(&h, p + i * 2, 2);
        uint32_t bits = (uint32_t)h << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    case PLX_DTYPE_FLOAT64: {
        double v;
        memcpy(&v, p + i * 8, 8);
        return v;
    }
    case PLX_DTYPE_FLOAT8E4M3FN:
    case PLX_DTYPE_FLOAT8E4M3FNUZ:
    case PLX_DTYPE_FLOAT8E5M2:
    case PLX_DTYPE_FLOAT8E5M2FNUZ:
        return plx_float8_to_float32(p[i], d);
    default:
        return 0;
    }
}

static int64_t int_at(plx_dtype d, const void *data, size_t i) {
    const unsigned char *p = data;
    switch (d) {
    case PLX_DTYPE_INT8:
    case PLX_DTYPE_INT4: /* one element per byte, sign-extended */
        return (int8_t)p[i];
    case PLX_DTYPE_UINT8:
    case PLX_DTYPE_UINT4:
    case PLX_DTYPE_BOOL:
        return p[i];
    case PLX_DTYPE_INT16: {
        int16_t v;
        memcpy(&v, p + i * 2, 2);
        return v;
    }
    case PLX_DTYPE_INT32: {
        int32_t v;
        memcpy(&v, p + i * 4, 4);
        return v;
    }
    case PLX_DTYPE_INT64: {
        int64_t v;
        memcpy(&v, p + i * 8, 8);
        return v;
    }
    default:
        return 0;
    }
}

/* The bits of element i of an integer or bool tensor, zero-extended:
 * equal exactly when the elements are. */
static uint64_t int_bits_at(plx_dtype d, const void *data, size_t i) {
    size_t es = plx_dtype_size(d);
    uint64_t v = 0;
    switch (es) {
    case 1: v = ((const unsigned char *)data)[i]; break;
    case 2: {
        uint16_t w;
        memcpy(&w, (const unsigned char *)data + i * 2, 2);
        v = w;
        break;
    }
    case 4: {
        uint32_t w;
        memcpy(&w, (const unsigned char *)data + i * 4, 4);
        v = w;
        break;
    }
    case 8: memcpy(&v, (const unsigned char *)data + i * 8, 8); break;
    default: break;
    }
    return v;
}

/* "-5", "65535", "18446744073709551615": element i as its dtype reads it. */
static char *int_text_at(plx_dtype d, const void *data, size_t i) {
    if (d == PLX_DTYPE_UINT16 || d == PLX_DTYPE_UINT32 || d == PLX_DTYPE_UINT64) {
        return xasprintf("%" PRIu64, int_bits_at(d, data, i));
    }
    return xasprintf("%" PRId64, int_at(d, data, i));
}

/* ONNX's check (numpy.testing.assert_allclose): NaN matches NaN, an
 * infinity only the same infinity, else |got - want| <= atol + rtol*|want|. */
static bool close_enough(double got, double want) {
    if (isnan(got) || isnan(want)) {
        return isnan(got) && isnan(want);
    }
    if (isinf(got) || isinf(want)) {
        return got == want;
    }
    return fabs(got - want) <= ATOL + RTOL * fabs(want);
}

/* "[1,0,2]": the multi-index of flat element i. */
static char *index_str(const plx_tensor_info *info, size_t i) {
    int64_t idx[PLX_MAX_RANK] = {0};
    size_t rest = i;
    for (uint32_t d = info->rank; d-- > 0;) {
        int64_t n = info->dims[d] > 0 ? info->dims[d] : 1;
        idx[d] = (int64_t)(rest % (size_t)n);
        rest /= (size_t)n;
    }
    strbuf b = {0};
    sb_addn(&b, "[", 1);
    for (uint32_t d = 0; d < info->rank; d++) {
        sb_add(&b, "%s%" PRId64, d ? "," : "", idx[d]);
    }
    sb_addn(&b, "]", 1);
    return sb_take(&b);
}

/* Compares `got` with `want` (both of `info`, `count` elements). NULL when
 * they match; otherwise the first mismatch and how many elements differ. */
static char *compare_tensor(const plx_tensor_info *info, size_t count, const void *got,
                            const void *want) {
    size_t bad = 0, first = 0;
    double max_err = 0;
    bool fl = is_float_dtype(info->dtype);
    for (size_t i = 0; i < count; i++) {
        bool ok;
        if (fl) {
            double g = float_at(info->dtype, got, i), w = float_at(info->dtype, want, i);
            ok = close_enough(g, w);
            if (!ok && isfinite(g) && isfinite(w) && fabs(g - w) > max_err) {
                max_err = fabs(g - w);
            }
        } else {
            ok = int_bits_at(info->dtype, got, i) == int_bits_at(info->dtype, want, i);
        }
        if (!ok && bad++ == 0) {
            first = i;
        }
    }
    if (!bad) {
        return NULL;
    }
    char *idx = index_str(info, first);
    char *r;
    if (fl) {
        r = xasprintf("element %zu %s: got %.9g, expected %.9g (%zu of %zu elements differ, "
                      "max abs error %.3g; rtol %g, atol %g)",
                      first, idx, float_at(info->dtype, got, first),
                      float_at(info->dtype, want, first), bad, count, max_err, RTOL, ATOL);
    } else {
        char *g = int_text_at(info->dtype, got, first), *w = int_text_at(info->dtype, want, first);
        r = xasprintf("element %zu %s: got %s, expected %s (%zu of %zu elements differ; exact)",
                      first, idx, g, w, bad, count);
        free(g);
        free(w);
    }
    free(idx);
    return r;
}

/* ------------------------------------------------------------------------ */
/* One case                                                                   */
/* ------------------------------------------------------------------------ */

/* One tensor file read. */
typedef struct tensor_file {
    plx_tensor_info info;
    void *data;
    size_t size;
    char *name;
} tensor_file;

typedef struct data_set {
    char *name; /* "test_data_set_0" */
    tensor_file *inputs, *outputs;
    size_t input_count, output_count;
} data_set;

static void free_tensor_files(tensor_file *t, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(t[i].data);
        free(t[i].name);
    }
    free(t);
}

static void free_data_sets(data_set *ds, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(ds[i].name);
        free_tensor_files(ds[i].inputs, ds[i].input_count);
        free_tensor_files(ds[i].outputs, ds[i].output_count);
    }
    free(ds);
}

static bool keep_data_set(const char *dir, const char *name) {
    if (strncmp(name, "test_data_set_", 14) != 0) {
        return false;
    }
    char *path = xasprintf("%s/%s", dir, name);
    bool d = is_dir(path);
    free(path);
    return d;
}

/* The node tests store bfloat16 tensors as UINT16 TensorProtos (NumPy has
 * no bfloat16; ONNX's runners reinterpret them). For an input or output the
 * model declares bfloat16, such a tensor, read as uint16, is taken as
 * bfloat16: the same bits. */
static void uint16_as_bfloat16(tensor_file *t, plx_dtype declared) {
    if (declared == PLX_DTYPE_BFLOAT16 && t->info.dtype == PLX_DTYPE_UINT16) {
        t->info.dtype = PLX_DTYPE_BFLOAT16;
    }
}

/* Reads prefix_0.pb, prefix_1.pb, ... of `dir`; `declared` gives the
 * model's dtype for each (declared_count of them). NULL on success; else
 * the error (with *out_code the status code, PLX_OK for a problem of the
 * data). */
static char *read_tensor_files(const char *dir, const char *prefix, const plx_dtype *declared,
                               size_t declared_count, tensor_file **out, size_t *out_count,
                               plx_status_code *out_code) {
    tensor_file *t = NULL;
    size_t n = 0;
    for (;;) {
        char *path = xasprintf("%s/%s_%zu.pb", dir, prefix, n);
        if (!is_file(path)) {
            free(path);
            break;
        }
        t = xrealloc(t, (n + 1) * sizeof *t);
        memset(&t[n], 0, sizeof t[n]);
        plx_status s = plx_onnx_read_tensor_file(path, &t[n].info, &t[n].data, &t[n].name);
        if (!s && n < declared_count) {
            uint16_as_bfloat16(&t[n], declared[n]);
        }
        if (s) {
            char *r = xasprintf("%s_%zu.pb: %s: %s", prefix, n,
                                plx_status_code_name(plx_status_get_code(s)),
                                plx_status_get_message(s));
            if (strstr(plx_status_get_message(s), path)) { /* it names the file */
                free(r);
                r = xasprintf("%s: %s", plx_status_code_name(plx_status_get_code(s)),
                              plx_status_get_message(s));
            }
            *out_code = plx_status_get_code(s);
            plx_status_free(s);
            free(path);
            free_tensor_files(t, n);
            return r;
        }
        if (!t[n].data || !t[n].name || !plx_tensor_info_byte_size(&t[n].info, &t[n].size)) {
            char *r = xasprintf("%s_%zu.pb: plx_onnx_read_tensor_file returned an invalid "
                                "tensor (data %p, name %p, dtype %d)",
                                prefix, n, t[n].data, (void *)t[n].name, (int)t[n].info.dtype);
            *out_code = PLX_INTERNAL;
            free(path);
            free_tensor_files(t, n + 1);
            return r;
        }
        free(path);
        n++;
    }
    *out = t;
    *out_count = n;
    return NULL;
}

/* What the case's process reports: one line per result, and the phase it
 * is in (so that a crash can say where). Written to a pipe in fork mode;
 * collected directly otherwise. */
typedef struct reporter {
    int fd;           /* the pipe, or -1 */
    result *results;  /* --no-fork: the results, one per backend */
} reporter;

static void write_all(int fd, const char *s, size_t n) {
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return;
        }
        s += w;
        n -= (size_t)w;
    }
}

static void report_phase(reporter *rep, const char *phase) {
    if (rep->fd < 0) {
        return;
    }
    char *line = xasprintf("P\t%s\n", phase);
    write_all(rep->fd, line, strlen(line));
    free(line);
}

static void report(reporter *rep, size_t backend, result_kind kind, const char *key,
                   const char *reason) {
    if (rep->fd < 0) {
        result_set(&rep->results[backend], kind, key, reason);
        return;
    }
    char *k = one_line(key ? key : "", KEY_MAX);
    char *r = one_line(reason ? reason : "", REASON_MAX);
    /* tabs were turned into spaces by one_line */
    char *line = xasprintf("R\t%zu\t%d\t%s\t%s\n", backend, (int)kind, k, r);
    write_all(rep->fd, line, strlen(line));
    free(line);
    free(k);
    free(r);
}

static void report_all(reporter *rep, size_t backend_count, result_kind kind, const char *key,
                       const char *reason) {
    for (size_t b = 0; b < backend_count; b++) {
        report(rep, b, kind, key, reason);
    }
}

/* Checks one data set's tensors against the model's inputs and outputs.
 * NULL when they agree. */
static char *check_data_set(const plx_onnx_model *model, const data_set *ds) {
    size_t in_n = plx_onnx_model_input_count(model);
    size_t out_n = plx_onnx_model_output_count(model);
    if (ds->input_count != in_n) {
        return xasprintf("%s has %zu input files, the imported model %zu inputs", ds->name,
                         ds->input_count, in_n);
    }
    if (ds->output_count != out_n) {
        return xasprintf("%s has %zu output files, the imported model %zu outputs", ds->name,
                         ds->output_count, out_n);
    }
    for (size_t k = 0; k < in_n + out_n; k++) {
        bool is_in = k < in_n;
        size_t i = is_in ? k : k - in_n;
        const plx_onnx_io *io = is_in ? plx_onnx_model_input(model, i)
                                      : plx_onnx_model_output(model, i);
        const tensor_file *t = is_in ? &ds->inputs[i] : &ds->outputs[i];
        if (!io) {
            return xasprintf("plx_onnx_model_%s(%zu) returned NULL", is_in ? "input" : "output",
                             i);
        }
        /* The names in the files are not checked: ONNX's runners bind by
         * position, and some of the suite's files carry other names (the
         * float8 and int4 Cast cases name their input 'x', not 'input'). */
        if (!plx_tensor_info_same_shape(&io->info, &t->info)) {
            char *a = info_str(&io->info), *b = info_str(&t->info);
            char *r = xasprintf("%s %zu '%s': the imported model has %s, %s/%s_%zu.pb holds %s",
                                is_in ? "input" : "output", i, io->name ? io->name : "?", a,
                                ds->name, is_in ? "input" : "output", i, b);
            free(a);
            free(b);
            return r;
        }
    }
    return NULL;
}

/* Runs every data set on one loaded network. NULL when every output
 * matches; otherwise the first problem. */
static char *run_data_sets(plx_loaded_network *loaded, const plx_onnx_model *model,
                           const data_set *sets, size_t set_count, bool *out_exec_failed) {
    size_t in_n = plx_onnx_model_input_count(model);
    size_t out_n = plx_onnx_model_output_count(model);
    plx_tensor_binding *in = xmalloc(in_n * sizeof *in);
    plx_tensor_binding *out = xmalloc(out_n * sizeof *out);
    void **bufs = xmalloc(out_n * sizeof *bufs);
    char *problem = NULL;
    *out_exec_failed = false;
    for (size_t o = 0; o < out_n; o++) {
        bufs[o] = NULL;
    }
    for (size_t s = 0; s < set_count && !problem; s++) {
        const data_set *ds = &sets[s];
        for (size_t i = 0; i < in_n; i++) {
            in[i].binding_id = plx_onnx_model_input(model, i)->binding_id;
            in[i].data = ds->inputs[i].data;
            in[i].size = ds->inputs[i].size;
            in[i].source = 0;
        }
        for (size_t o = 0; o < out_n; o++) {
            size_t size = ds->outputs[o].size;
            free(bufs[o]);
            bufs[o] = xmalloc(size);
            /* a pattern that no correct output is likely to equal wholly */
            memset(bufs[o], 0xA5, size ? size : 1);
            out[o].binding_id = plx_onnx_model_output(model, o)->binding_id;
            out[o].data = bufs[o];
            out[o].size = size;
            out[o].source = 0;
        }
        plx_status st = plx_loaded_network_execute(loaded, in_n ? in : NULL, in_n,
                                                   out_n ? out : NULL, out_n);
        if (st) {
            problem = xasprintf("%s: execute: %s: %s", ds->name,
                                plx_status_code_name(plx_status_get_code(st)),
                                plx_status_get_message(st));
            plx_status_free(st);
            *out_exec_failed = true;
            break;
        }
        for (size_t o = 0; o < out_n && !problem; o++) {
            const tensor_file *want = &ds->outputs[o];
            size_t count = 0;
            plx_tensor_info_element_count(&want->info, &count);
            char *why = compare_tensor(&want->info, count, bufs[o], want->data);
            if (why) {
                const char *name = plx_onnx_model_output(model, o)->name;
                char *info = info_str(&want->info);
                problem = xasprintf("%s: output %zu '%s' %s: %s", ds->name, o,
                                    name ? name : "?", info, why);
                free(info);
                free(why);
            }
        }
    }
    for (size_t o = 0; o < out_n; o++) {
        free(bufs[o]);
    }
    free(bufs);
    free(in);
    free(out);
    return problem;
}

/* Imports the case's model. When the import needs the values of graph
 * inputs (an If's condition, a reshape's target, a slice's bounds given
 * as inputs: plx_onnx_options.report names them), imports it again with
 * those inputs frozen to test_data_set_0's values, as a dynamic model
 * specialises on them (plexus/dynamic.h: inputs of at most
 * PLX_DYNAMIC_MAX_VALUE_BYTES). On success *out_valued holds the valued
 * inputs (names and data), to check the other data sets against;
 * otherwise the status of the last import. */
static plx_status import_case(const char *case_dir, const char *model_path,
                              plx_onnx_model **out_model, tensor_file **out_valued,
                              size_t *out_valued_count) {
    *out_valued = NULL;
    *out_valued_count = 0;
    tensor_file *files = NULL;
    size_t n = 0;
    bool files_read = false;
    plx_onnx_constant_input *k = NULL;
    bool *valued = NULL;
    size_t nk = 0;
    plx_onnx_import_report report = {0};
    plx_status st = NULL;
    for (;;) {
        plx_onnx_options o;
        plx_onnx_options_init(&o);
        o.constants = k;
        o.constant_count = nk;
        o.report = &report;
        st = plx_onnx_import_file(model_path, &o, out_model);
        if (!st || report.value_input_count == 0) {
            break;
        }
        if (!files_read) {
            files_read = true;
            char *dir = xasprintf("%s/test_data_set_0", case_dir);
            plx_status_code code = PLX_OK;
            char *err = read_tensor_files(dir, "input", NULL, 0, &files, &n, &code);
            free(dir);
            if (err) {
                free(err);
                break;
            }
            k = xmalloc((n + 1) * sizeof *k);
            valued = calloc(n + 1, sizeof *valued);
            if (!valued) {
                die_oom();
            }
        }
        bool more = false;
        for (size_t r = 0; r < report.value_input_count; r++) {
            for (size_t i = 0; i < n; i++) {
                if (!valued[i] && files[i].name && strcmp(files[i].name,
                                                          report.value_inputs[r]) == 0 &&
                    files[i].size <= PLX_DYNAMIC_MAX_VALUE_BYTES) {
                    valued[i] = more = true;
                    k[nk++] = (plx_onnx_constant_input){files[i].name, files[i].info,
                                                        files[i].data};
                }
            }
        }
        if (!more) {
            break;
        }
        plx_status_free(st);
    }
    plx_model_import_report_clear(&report);
    if (!st && nk) {
        /* Keep the valued inputs to check the other data sets against. */
        tensor_file *keep = xmalloc(nk * sizeof *keep);
        size_t kept = 0;
        for (size_t i = 0; i < n; i++) {
            if (valued[i]) {
                keep[kept++] = files[i];
                files[i].data = NULL;
                files[i].name = NULL;
            }
        }
        *out_valued = keep;
        *out_valued_count = kept;
    }
    free_tensor_files(files, n);
    free(k);
    free(valued);
    return st;
}

/* A data set's valued inputs must hold test_data_set_0's values (the one
 * specialisation the case is run with); they are then dropped from the
 * data set, whose other inputs keep their order. NULL when they do. */
static char *drop_valued(data_set *ds, const tensor_file *valued, size_t count) {
    for (size_t v = 0; v < count; v++) {
        size_t i = 0;
        while (i < ds->input_count &&
               !(ds->inputs[i].name && strcmp(ds->inputs[i].name, valued[v].name) == 0)) {
            i++;
        }
        if (i == ds->input_count) {
            return xasprintf("%s has no input '%s'", ds->name, valued[v].name);
        }
        const tensor_file *t = &ds->inputs[i];
        if (!plx_tensor_info_same_shape(&t->info, &valued[v].info) ||
            t->size != valued[v].size || memcmp(t->data, valued[v].data, t->size) != 0) {
            return xasprintf("%s: input '%s' differs from test_data_set_0's, on whose value the "
                             "case is specialised", ds->name, valued[v].name);
        }
        free(ds->inputs[i].data);
        free(ds->inputs[i].name);
        memmove(&ds->inputs[i], &ds->inputs[i + 1],
                (ds->input_count - i - 1) * sizeof ds->inputs[i]);
        ds->input_count--;
    }
    return NULL;
}

/* Runs one case on every backend and reports each result. */
/* The runtime: only the paths given; no default directory, no
 * environment. */
static plx_status make_runtime(const options *opt, plx_runtime **out);

/* Runs one case on every backend. *rt is the runtime, made here on first
 * need when NULL (so that a case refused at import loads no backend). */
static void run_case(plx_runtime **rtp, const options *opt, const char *case_name,
                     char *const *backend_ids, size_t backend_count, reporter *rep) {
    char *case_dir = xasprintf("%s/%s", opt->data_dir, case_name);
    char *model_path = xasprintf("%s/model.onnx", case_dir);
    plx_onnx_model *model = NULL;
    data_set *sets = NULL;
    size_t set_count = 0;
    strlist set_names = {0};
    plx_dtype *in_dtypes = NULL, *out_dtypes = NULL;
    size_t in_n = 0, out_n = 0;

    tensor_file *valued = NULL;
    size_t valued_count = 0;
    report_phase(rep, "import");
    plx_status s = import_case(case_dir, model_path, &model, &valued, &valued_count);
    if (s) {
        plx_status_code code = plx_status_get_code(s);
        char *msg = strip_paths(plx_status_get_message(s), model_path, case_dir);
        if (code == PLX_UNSUPPORTED) {
            char *reason, *key;
            condense_unsupported(msg, &reason, &key);
            report_all(rep, backend_count, RESULT_SKIP, key, reason);
            free(reason);
            free(key);
        } else if (code != PLX_OUT_OF_MEMORY && code != PLX_INTERNAL && says_unsupported(msg)) {
            /* e.g. a data type Plexus lacks, reported with another code */
            char *reason = xasprintf("import: %s: %s", plx_status_code_name(code), msg);
            char *g = generalise(msg);
            char *key = xasprintf("import %s: %s", plx_status_code_name(code), g);
            report_all(rep, backend_count, RESULT_SKIP, key, reason);
            free(g);
            free(key);
            free(reason);
        } else {
            char *reason = xasprintf("import: %s: %s", plx_status_code_name(code), msg);
            char *key = xasprintf("import %s", plx_status_code_name(code));
            report_all(rep, backend_count, RESULT_FAIL, key, reason);
            free(key);
            free(reason);
        }
        free(msg);
        plx_status_free(s);
        goto done;
    }

    /* The data sets. */
    report_phase(rep, "read data");
    if (!list_dir(case_dir, keep_data_set, &set_names)) {
        char *r = xasprintf("cannot list %s: %s", case_dir, strerror(errno));
        report_all(rep, backend_count, RESULT_FAIL, "test data", r);
        free(r);
        goto done;
    }
    if (set_names.n == 0) {
        report_all(rep, backend_count, RESULT_FAIL, "test data", "no test_data_set_N directory");
        goto done;
    }
    in_n = plx_onnx_model_input_count(model);
    out_n = plx_onnx_model_output_count(model);
    in_dtypes = xmalloc(in_n * sizeof *in_dtypes);
    out_dtypes = xmalloc(out_n * sizeof *out_dtypes);
    for (size_t i = 0; i < in_n; i++) {
        const plx_onnx_io *io = plx_onnx_model_input(model, i);
        in_dtypes[i] = io ? io->info.dtype : PLX_DTYPE_INVALID;
    }
    for (size_t i = 0; i < out_n; i++) {
        const plx_onnx_io *io = plx_onnx_model_output(model, i);
        out_dtypes[i] = io ? io->info.dtype : PLX_DTYPE_INVALID;
    }
    sets = xmalloc(set_names.n * sizeof *sets);
    for (size_t i = 0; i < set_names.n; i++) {
        data_set *ds = &sets[set_count];
        memset(ds, 0, sizeof *ds);
        ds->name = xstrdup(set_names.v[i]);
        set_count++;
        char *dir = xasprintf("%s/%s", case_dir, set_names.v[i]);
        plx_status_code code = PLX_OK;
        char *err = read_tensor_files(dir, "input", in_dtypes, in_n, &ds->inputs,
                                      &ds->input_count, &code);
        if (!err) {
            err = read_tensor_files(dir, "output", out_dtypes, out_n, &ds->outputs,
                                    &ds->output_count, &code);
        }
        free(dir);
        if (err) {
            char *stripped = strip_paths(err, model_path, case_dir);
            free(err);
            err = stripped;
            char *r = xasprintf("test data: %s", err);
            if (code == PLX_UNSUPPORTED) {
                const char *colon = strstr(err, ": ");
                char *g = generalise(colon ? colon + 2 : err);
                char *key = xasprintf("test data: %s", g);
                report_all(rep, backend_count, RESULT_SKIP, key, r);
                free(g);
                free(key);
            } else {
                report_all(rep, backend_count, RESULT_FAIL, "test data", r);
            }
            free(r);
            free(err);
            goto done;
        }
        char *mismatch = NULL;
        if (valued_count) {
            mismatch = drop_valued(ds, valued, valued_count);
            if (mismatch) {
                report_all(rep, backend_count, RESULT_SKIP, "valued inputs differ between data sets",
                           mismatch);
                free(mismatch);
                goto done;
            }
        }
        mismatch = check_data_set(model, ds);
        if (mismatch) {
            report_all(rep, backend_count, RESULT_FAIL, "inputs/outputs differ from the model",
                       mismatch);
            free(mismatch);
            goto done;
        }
    }

    if (!*rtp) {
        report_phase(rep, "create the runtime");
        s = make_runtime(opt, rtp);
        if (s) {
            char *reason = xasprintf("cannot create a runtime: %s", plx_status_get_message(s));
            report_all(rep, backend_count, RESULT_FAIL, "runtime", reason);
            free(reason);
            plx_status_free(s);
            goto done;
        }
    }
    plx_runtime *rt = *rtp;
    for (size_t b = 0; b < backend_count; b++) {
        const char *id = backend_ids[b];
        char *phase = xasprintf("optimise for %s", id);
        report_phase(rep, phase);
        free(phase);
        plx_optimize_options oo;
        plx_optimize_options_init(&oo);
        const char *ids[1] = {id};
        oo.backends = ids;
        oo.backend_count = 1;
        oo.allow_fallback = false;
        plx_optimized_network *optimized = NULL;
        s = plx_optimize(rt, plx_onnx_model_network(model), &oo, &optimized);
        if (s) {
            plx_status_code code = plx_status_get_code(s);
            if (code == PLX_UNSUPPORTED) {
                char *reason, *key;
                condense_refusal(id, plx_status_get_message(s), &reason, &key);
                report(rep, b, RESULT_SKIP, key, reason);
                free(reason);
                free(key);
            } else {
                char *reason = xasprintf("optimise: %s: %s", plx_status_code_name(code),
                                         plx_status_get_message(s));
                char *key = xasprintf("optimise %s", plx_status_code_name(code));
                report(rep, b, RESULT_FAIL, key, reason);
                free(key);
                free(reason);
            }
            plx_status_free(s);
            continue;
        }
        phase = xasprintf("load on %s", id);
        report_phase(rep, phase);
        free(phase);
        plx_loaded_network *loaded = NULL;
        s = plx_runtime_load_network(rt, &optimized, NULL, &loaded);
        plx_optimized_network_destroy(&optimized); /* consumed already; NULL-safe */
        if (s) {
            plx_status_code code = plx_status_get_code(s);
            char *reason =
                xasprintf("load: %s: %s", plx_status_code_name(code), plx_status_get_message(s));
            char *key = xasprintf("load %s", plx_status_code_name(code));
            report(rep, b, RESULT_FAIL, key, reason);
            free(key);
            free(reason);
            plx_status_free(s);
            continue;
        }
        phase = xasprintf("execute on %s", id);
        report_phase(rep, phase);
        free(phase);
        bool exec_failed = false;
        char *problem = run_data_sets(loaded, model, sets, set_count, &exec_failed);
        if (problem) {
            report(rep, b, RESULT_FAIL, exec_failed ? "execute" : "wrong output", problem);
            free(problem);
        } else {
            /* A case specialised on input values passes as a dynamic model
             * runs it (its reason says so; counted apart). With every input
             * valued the whole graph folds at import and nothing ran on the
             * backend: a skip. */
            if (valued_count && plx_onnx_model_input_count(model) == 0) {
                report(rep, b, RESULT_SKIP, "every input valued: folded at import",
                       "every input valued: the graph folds at import and nothing runs on "
                       "the backend (the folded outputs match)");
            } else if (valued_count) {
                char *names = NULL;
                for (size_t v = 0; v < valued_count; v++) {
                    char *more = xasprintf("%s%s'%s'", names ? names : "", v ? ", " : "",
                                           valued[v].name);
                    free(names);
                    names = more;
                }
                char *note = xasprintf(VALUED_PASS " %s (the graph needs %s at import)", names,
                                       valued_count == 1 ? "its value" : "their values");
                report(rep, b, RESULT_PASS, VALUED_PASS, note);
                free(note);
                free(names);
            } else {
                report(rep, b, RESULT_PASS, NULL, NULL);
            }
        }
        phase = xasprintf("unload on %s", id);
        report_phase(rep, phase);
        free(phase);
        plx_loaded_network_unload(&loaded);
    }

done:
    report_phase(rep, "clean up");
    free(in_dtypes);
    free(out_dtypes);
    free_data_sets(sets, set_count);
    free_tensor_files(valued, valued_count);
    sl_free(&set_names);
    plx_onnx_model_destroy(&model);
    free(model_path);
    free(case_dir);
    report_phase(rep, "done");
}

/* ------------------------------------------------------------------------ */
/* Child processes                                                            */
/* ------------------------------------------------------------------------ */

typedef struct case_state {
    char *name;
    result *results; /* one per backend */
    bool finished;
} case_state;

typedef struct slot {
    pid_t pid;
    int fd;
    size_t case_index;
    strbuf out;
    struct timespec started;
} slot;

/* Applies what a child wrote to its case; returns the last phase seen
 * (pointing into buf) or NULL. */
static const char *apply_child_output(char *buf, case_state *cs, size_t backend_count) {
    const char *phase = NULL;
    char *p = buf;
    while (p && *p) {
        char *nl = strchr(p, '\n');
        if (!nl) {
            break; /* a partial line: the child died while writing */
        }
        *nl = '\0';
        if (p[0] == 'P' && p[1] == '\t') {
            phase = p + 2;
        } else if (p[0] == 'R' && p[1] == '\t') {
            char *f[4] = {0};
            char *q = p + 2;
            for (int i = 0; i < 4 && q; i++) {
                f[i] = q;
                q = i < 3 ? strchr(q, '\t') : NULL;
                if (q) {
                    *q++ = '\0';
                }
            }
            if (f[3]) {
                size_t b = strtoul(f[0], NULL, 10);
                int kind = atoi(f[1]);
                if (b < backend_count && kind >= RESULT_PASS && kind <= RESULT_SKIP) {
                    result_set(&cs->results[b], (result_kind)kind, f[2][0] ? f[2] : NULL,
                               f[3][0] ? f[3] : NULL);
                }
            }
        }
        p = nl + 1;
    }
    return phase;
}

static void finish_child(slot *sl, case_state *cs, size_t backend_count, unsigned timeout_s) {
    int status = 0;
    while (waitpid(sl->pid, &status, 0) < 0) {
        if (errno != EINTR) {
            status = -1;
            break;
        }
    }
    const char *phase = sl->out.s ? apply_child_output(sl->out.s, cs, backend_count) : NULL;
    char *why = NULL;
    if (status == -1) {
        why = xasprintf("waitpid failed: %s", strerror(errno));
    } else if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        if (sig == SIGALRM) {
            why = xasprintf("timed out after %u s (during %s)", timeout_s,
                            phase ? phase : "start");
        } else {
            why = xasprintf("crashed: signal %d (%s) during %s", sig, strsignal(sig),
                            phase ? phase : "start");
        }
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        why = xasprintf("the case's process exited with status %d during %s (a sanitizer's "
                        "or valgrind's report is on stderr)",
                        WEXITSTATUS(status), phase ? phase : "start");
    } else if (!phase || strcmp(phase, "done") != 0) {
        why = xasprintf("the case's process stopped during %s", phase ? phase : "start");
    }
    if (why) {
        /* A process that failed fails every result of its case: a report
         * of a checker (a leak, say) cannot be pinned on one backend. */
        for (size_t b = 0; b < backend_count; b++) {
            result *r = &cs->results[b];
            if (r->kind == RESULT_NONE) {
                result_set(r, RESULT_FAIL, WIFSIGNALED(status) ? "crash or timeout" : "process",
                           why);
            } else if (status == -1 || !WIFSIGNALED(status)) {
                char *both = xasprintf("%s; it had reported: %s", why,
                                       r->kind == RESULT_PASS ? "pass"
                                       : r->reason            ? r->reason
                                                              : "?");
                result_set(r, RESULT_FAIL, "process", both);
                free(both);
            }
        }
        free(why);
    }
    for (size_t b = 0; b < backend_count; b++) {
        if (cs->results[b].kind == RESULT_NONE) {
            result_set(&cs->results[b], RESULT_FAIL, "process", "no result reported");
        }
    }
    close(sl->fd);
    free(sl->out.s);
    memset(sl, 0, sizeof *sl);
    sl->fd = -1;
    cs->finished = true;
}

/* Forks a child that writes to a pipe: in the child returns 0 with
 * fds[1] its end (SIGPIPE default again); in the parent the pid with fds[0]
 * its end; -1 (reported) when the pipe or the fork fails. */
static pid_t fork_with_pipe(int fds[2]) {
    if (pipe(fds) != 0) {
        fprintf(stderr, "%s: pipe: %s\n", prog, strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "%s: fork: %s\n", prog, strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        signal(SIGPIPE, SIG_DFL);
    } else {
        close(fds[1]);
    }
    return pid;
}

/* Starts the child for case `index`. */
static bool start_child(slot *sl, size_t index, const options *opt, case_state *cases,
                        char *const *backend_ids, size_t backend_count) {
    int fds[2];
    pid_t pid = fork_with_pipe(fds);
    if (pid < 0) {
        return false;
    }
    if (pid == 0) {
        if (opt->timeout_s) {
            alarm(opt->timeout_s);
        }
        reporter rep = {fds[1], NULL};
        plx_runtime *rt = NULL;
        run_case(&rt, opt, cases[index].name, backend_ids, backend_count, &rep);
        close(fds[1]);
        plx_runtime_destroy(&rt);
        exit(0);
    }
    sl->pid = pid;
    sl->fd = fds[0];
    sl->case_index = index;
    sl->out = (strbuf){0};
    clock_gettime(CLOCK_MONOTONIC, &sl->started);
    return true;
}

/* ------------------------------------------------------------------------ */
/* Main                                                                       */
/* ------------------------------------------------------------------------ */

static void log_to_stderr(void *user_data, plx_log_level level, const char *source,
                          const char *message) {
    (void)user_data;
    fprintf(stderr, "# plexus[%s] %s: %s\n", source, plx_log_level_name(level), message);
}

/* ------------------------------------------------------------------------ */
/* Runtime and backends                                                       */
/* ------------------------------------------------------------------------ */

static plx_status make_runtime(const options *opt, plx_runtime **out) {
    plx_runtime_options ro;
    plx_runtime_options_init(&ro);
    ro.search_paths = (const char *const *)opt->backend_paths.v;
    ro.search_path_count = opt->backend_paths.n;
    ro.backend_options = opt->backend_options;
    ro.backend_option_count = opt->backend_option_count;
    ro.ignore_environment = true;
    ro.skip_default_dir = true;
    ro.log_level = PLX_LOG_WARN;
    ro.log_fn = log_to_stderr;
    return plx_runtime_create(&ro, out);
}

/* What the runtime found, as lines: "# rejected: ...", "# backend ..."
 * (comments for the TAP stream) and "B\tID" for each available backend
 * that --backends lets run. */
static char *list_backends(plx_runtime *rt, const options *opt) {
    strbuf b = {0};
    for (size_t i = 0; i < plx_runtime_rejection_count(rt); i++) {
        const plx_rejection *rj = plx_runtime_rejection(rt, i);
        sb_add(&b, "# rejected: %s: %s\n", rj->path ? rj->path : (rj->id ? rj->id : "?"),
               rj->reason);
    }
    for (size_t i = 0; i < plx_runtime_backend_count(rt); i++) {
        const plx_backend_info *bi = plx_runtime_backend(rt, i);
        if (!bi->available) {
            sb_add(&b, "# backend %s unavailable: %s\n", bi->id, bi->reason ? bi->reason : "");
            continue;
        }
        if (opt->backends.n && !sl_contains(&opt->backends, bi->id)) {
            continue;
        }
        sb_add(&b, "# backend %s %s (%s)\n", bi->id, bi->version ? bi->version : "",
               bi->path ? bi->path : "static");
        sb_add(&b, "B\t%s\n", bi->id);
    }
    return sb_take(&b);
}

/* list_backends() in a child process, whose runtime (and whatever a
 * driver starts with it) dies with it. False when the child fails; a
 * runtime it cannot create is a "# " line with the reason and no backend. */
static bool probe_backends(const options *opt, char **out) {
    int fds[2];
    pid_t pid = fork_with_pipe(fds);
    if (pid < 0) {
        return false;
    }
    if (pid == 0) {
        plx_runtime *rt = NULL;
        plx_status s = make_runtime(opt, &rt);
        char *text;
        if (s) {
            text = xasprintf("# cannot create a runtime: %s\n", plx_status_get_message(s));
            plx_status_free(s);
        } else {
            text = list_backends(rt, opt);
        }
        write_all(fds[1], text, strlen(text));
        free(text);
        close(fds[1]);
        plx_runtime_destroy(&rt);
        exit(0);
    }
    strbuf b = {0};
    char buf[4096];
    for (;;) {
        ssize_t got = read(fds[0], buf, sizeof buf);
        if (got > 0) {
            sb_addn(&b, buf, (size_t)got);
        } else if (got == 0 || errno != EINTR) {
            break;
        }
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    char *text = sb_take(&b);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        free(text);
        return false;
    }
    *out = text;
    return true;
}


static bool keep_case(const char *dir, const char *name) {
    char *path = xasprintf("%s/%s/model.onnx", dir, name);
    bool ok = is_file(path);
    free(path);
    return ok;
}

typedef struct count_entry {
    char *key;
    size_t count;
} count_entry;

static int cmp_count(const void *a, const void *b) {
    const count_entry *x = a, *y = b;
    if (x->count != y->count) {
        return x->count < y->count ? 1 : -1;
    }
    return strcmp(x->key, y->key);
}

static void count_key(count_entry **v, size_t *n, const char *key) {
    for (size_t i = 0; i < *n; i++) {
        if (strcmp((*v)[i].key, key) == 0) {
            (*v)[i].count++;
            return;
        }
    }
    *v = xrealloc(*v, (*n + 1) * sizeof **v);
    (*v)[*n].key = xstrdup(key);
    (*v)[*n].count = 1;
    (*n)++;
}

/* A skip's key is "kind: reason" or "kind: reason | reason...": counts
 * one under each reason. */
static void count_skip_reasons(count_entry **v, size_t *n, const char *key) {
    const char *colon = strstr(key, ": ");
    if (!colon || !strstr(colon, " | ")) {
        count_key(v, n, key);
        return;
    }
    size_t kind_len = (size_t)(colon - key) + 2;
    const char *p = key + kind_len;
    while (*p) {
        const char *bar = strstr(p, " | ");
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        char *one = xmalloc(kind_len + len + 1);
        memcpy(one, key, kind_len);
        memcpy(one + kind_len, p, len);
        one[kind_len + len] = '\0';
        count_key(v, n, one);
        free(one);
        p += len;
        if (bar) {
            p += 3;
        }
    }
}

typedef struct totals {
    size_t passed, failed, skipped, expected_failed, unexpected_passed;
    size_t passed_valued; /* of passed: specialised on the values of inputs */
} totals;

/* Prints the TAP lines of one finished case. */
static void print_case(const case_state *cs, char *const *backend_ids, size_t backend_count,
                       expected_list *xf, size_t *test_number, totals *all, totals *per_backend) {
    for (size_t b = 0; b < backend_count; b++) {
        const result *r = &cs->results[b];
        size_t n = ++*test_number;
        expected *x = find_expected(xf, cs->name, backend_ids[b]);
        if (x) {
            x->seen = true;
        }
        switch (r->kind) {
        case RESULT_PASS:
            if (x) {
                fprintf(tap_out, "ok %zu - %s [%s] # TODO listed in the expected failures, but passes\n",
                       n, cs->name, backend_ids[b]);
                all->unexpected_passed++;
                per_backend[b].unexpected_passed++;
            } else if (r->reason && r->reason[0]) {
                fprintf(tap_out, "ok %zu - %s [%s] (%s)\n", n, cs->name, backend_ids[b], r->reason);
            } else {
                fprintf(tap_out, "ok %zu - %s [%s]\n", n, cs->name, backend_ids[b]);
            }
            all->passed++;
            per_backend[b].passed++;
            if (r->key && strcmp(r->key, VALUED_PASS) == 0) {
                all->passed_valued++;
                per_backend[b].passed_valued++;
            }
            break;
        case RESULT_SKIP:
            fprintf(tap_out, "ok %zu - %s [%s] # SKIP %s\n", n, cs->name, backend_ids[b],
                   r->reason ? r->reason : "");
            all->skipped++;
            per_backend[b].skipped++;
            break;
        case RESULT_FAIL:
        case RESULT_NONE:
        default:
            if (x) {
                x->failed = true;
                fprintf(tap_out, "not ok %zu - %s [%s]: %s # TODO expected failure\n", n, cs->name,
                       backend_ids[b], r->reason ? r->reason : "failed");
                all->expected_failed++;
                per_backend[b].expected_failed++;
            } else {
                fprintf(tap_out, "not ok %zu - %s [%s]: %s\n", n, cs->name, backend_ids[b],
                       r->reason ? r->reason : "failed");
            }
            all->failed++;
            per_backend[b].failed++;
            break;
        }
    }
    fflush(tap_out);
}

int node_tests_run(int argc, char **argv, FILE *tap) {
    tap_out = tap;
    if (argc > 0 && argv[0]) {
        const char *slash = strrchr(argv[0], '/');
        prog = slash ? slash + 1 : argv[0];
    }
    options opt = {0};
    int rc = parse_options(argc, argv, &opt);
    if (rc) {
        free_options(&opt);
        return rc;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    signal(SIGPIPE, SIG_IGN);

    expected_list xf = {0};
    strlist case_names = {0};
    strlist backend_ids = {0};
    plx_runtime *rt = NULL;
    case_state *cases = NULL;
    size_t case_count = 0;
    int exit_code = 0;

    fprintf(tap_out, "TAP version 13\n");
    if (opt.expected_failures && !load_expected(opt.expected_failures, &xf)) {
        fprintf(tap_out, "Bail out! cannot read the expected failures %s\n", opt.expected_failures);
        exit_code = 2;
        goto out;
    }

    /* The backends: listed by this process with --no-fork, else by a probe
     * process (see the top of the file). */
    char *listing = NULL;
    if (opt.fork) {
        if (!probe_backends(&opt, &listing)) {
            fprintf(tap_out, "Bail out! cannot list the backends (the probe process failed)\n");
            exit_code = 1;
            goto out;
        }
    } else {
        plx_status s = make_runtime(&opt, &rt);
        if (s) {
            fprintf(tap_out, "Bail out! cannot create a runtime: %s\n", plx_status_get_message(s));
            plx_status_free(s);
            exit_code = 1;
            goto out;
        }
        listing = list_backends(rt, &opt);
    }
    /* "#" lines are printed; "B\tID" lines are the backends to run. */
    for (char *line = listing, *nl; line && *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl) {
            break;
        }
        *nl = '\0';
        if (strncmp(line, "B\t", 2) == 0) {
            sl_push(&backend_ids, xstrdup(line + 2));
        } else {
            fprintf(tap_out, "%s\n", line);
        }
    }
    free(listing);
    for (size_t i = 0; i < opt.backends.n; i++) {
        if (!sl_contains(&backend_ids, opt.backends.v[i])) {
            fprintf(tap_out, "Bail out! backend '%s' asked for with --backends is not available\n",
                   opt.backends.v[i]);
            exit_code = 1;
            goto out;
        }
    }
    if (backend_ids.n == 0) {
        fprintf(tap_out, "Bail out! no backend available (search path:");
        for (size_t i = 0; i < opt.backend_paths.n; i++) {
            fprintf(tap_out, " %s", opt.backend_paths.v[i]);
        }
        fprintf(tap_out, ")\n");
        exit_code = 1;
        goto out;
    }

    /* The cases. */
    strlist all_cases = {0};
    if (!list_dir(opt.data_dir, keep_case, &all_cases)) {
        fprintf(tap_out, "Bail out! cannot read %s: %s\n", opt.data_dir, strerror(errno));
        exit_code = 1;
        goto out;
    }
    for (size_t i = 0; i < all_cases.n; i++) {
        bool keep = opt.filters.n == 0;
        for (size_t f = 0; f < opt.filters.n && !keep; f++) {
            keep = strstr(all_cases.v[i], opt.filters.v[f]) != NULL;
        }
        if (keep) {
            sl_push(&case_names, all_cases.v[i]);
            all_cases.v[i] = NULL;
        }
    }
    sl_free(&all_cases);
    if (case_names.n == 0) {
        fprintf(tap_out, "Bail out! no case (a directory with model.onnx) in %s%s\n", opt.data_dir,
               opt.filters.n ? " matches the filter" : "");
        exit_code = 1;
        goto out;
    }
    case_count = case_names.n;
    cases = xmalloc(case_count * sizeof *cases);
    for (size_t i = 0; i < case_count; i++) {
        cases[i].name = case_names.v[i];
        cases[i].results = xmalloc(backend_ids.n * sizeof *cases[i].results);
        memset(cases[i].results, 0, backend_ids.n * sizeof *cases[i].results);
        cases[i].finished = false;
    }
    fprintf(tap_out, "# %zu cases x %zu backends from %s\n", case_count, backend_ids.n, opt.data_dir);
    fflush(tap_out);

    size_t nb = backend_ids.n;
    totals all = {0};
    totals *per_backend = xmalloc(nb * sizeof *per_backend);
    memset(per_backend, 0, nb * sizeof *per_backend);
    size_t test_number = 0, printed = 0;

    if (!opt.fork) {
        for (size_t i = 0; i < case_count; i++) {
            reporter rep = {-1, cases[i].results};
            run_case(&rt, &opt, cases[i].name, backend_ids.v, nb, &rep);
            cases[i].finished = true;
            print_case(&cases[i], backend_ids.v, nb, &xf, &test_number, &all, per_backend);
        }
        printed = case_count;
    } else {
        slot slots[MAX_JOBS];
        for (unsigned j = 0; j < MAX_JOBS; j++) {
            memset(&slots[j], 0, sizeof slots[j]);
            slots[j].fd = -1;
        }
        size_t next = 0, running = 0;
        while (printed < case_count) {
            /* start children */
            for (unsigned j = 0; j < opt.jobs && next < case_count; j++) {
                if (slots[j].fd >= 0) {
                    continue;
                }
                if (!start_child(&slots[j], next, &opt, cases, backend_ids.v, nb)) {
                    for (size_t b = 0; b < nb; b++) {
                        result_set(&cases[next].results[b], RESULT_FAIL, "process",
                                   "cannot start the case's process");
                    }
                    cases[next].finished = true;
                } else {
                    running++;
                }
                next++;
            }
            /* wait for output */
            if (running) {
                struct pollfd pfd[MAX_JOBS];
                unsigned map[MAX_JOBS];
                nfds_t n = 0;
                for (unsigned j = 0; j < opt.jobs; j++) {
                    if (slots[j].fd >= 0) {
                        pfd[n].fd = slots[j].fd;
                        pfd[n].events = POLLIN;
                        pfd[n].revents = 0;
                        map[n] = j;
                        n++;
                    }
                }
                int pr = poll(pfd, n, -1);
                if (pr < 0 && errno != EINTR) {
                    fprintf(stderr, "%s: poll: %s\n", prog, strerror(errno));
                    exit_code = 1;
                    break;
                }
                for (nfds_t k = 0; pr > 0 && k < n; k++) {
                    if (!pfd[k].revents) {
                        continue;
                    }
                    slot *sl = &slots[map[k]];
                    char buf[4096];
                    ssize_t got = read(sl->fd, buf, sizeof buf);
                    if (got > 0) {
                        sb_addn(&sl->out, buf, (size_t)got);
                    } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                        finish_child(sl, &cases[sl->case_index], nb, opt.timeout_s);
                        running--;
                    }
                }
            }
            /* print finished cases in order */
            while (printed < case_count && cases[printed].finished) {
                print_case(&cases[printed], backend_ids.v, nb, &xf, &test_number, &all,
                           per_backend);
                printed++;
            }
        }
    }

    /* Summary. */
    fprintf(tap_out, "1..%zu\n", test_number);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    for (size_t b = 0; b < nb; b++) {
        fprintf(tap_out, "# %s: %zu passed (%zu of them specialised on input values), %zu failed, "
               "%zu skipped", backend_ids.v[b], per_backend[b].passed,
               per_backend[b].passed_valued, per_backend[b].failed, per_backend[b].skipped);
        if (per_backend[b].expected_failed) {
            fprintf(tap_out, " (%zu failures expected)", per_backend[b].expected_failed);
        }
        fprintf(tap_out, "\n");
    }

    /* Failures, then skip reasons, grouped. */
    count_entry *fails = NULL, *skips = NULL;
    size_t fail_n = 0, skip_n = 0;
    for (size_t i = 0; i < case_count; i++) {
        for (size_t b = 0; b < nb; b++) {
            const result *r = &cases[i].results[b];
            if (r->kind == RESULT_SKIP) {
                count_skip_reasons(&skips, &skip_n, r->key ? r->key : "(no reason)");
            } else if (r->kind != RESULT_PASS) {
                count_key(&fails, &fail_n, r->key ? r->key : "(no reason)");
            }
        }
    }
    if (fail_n) {
        qsort(fails, fail_n, sizeof *fails, cmp_count);
        fprintf(tap_out, "# failures by kind:\n");
        for (size_t i = 0; i < fail_n; i++) {
            fprintf(tap_out, "#   %4zu  %s\n", fails[i].count, fails[i].key);
        }
        fprintf(tap_out, "# failures:\n");
        for (size_t i = 0; i < case_count; i++) {
            for (size_t b = 0; b < nb; b++) {
                const result *r = &cases[i].results[b];
                if (r->kind != RESULT_PASS && r->kind != RESULT_SKIP) {
                    fprintf(tap_out, "#   %s [%s]: %s\n", cases[i].name, backend_ids.v[b],
                           r->reason ? r->reason : "failed");
                }
            }
        }
    }
    if (opt.list_skips && skip_n) {
        qsort(skips, skip_n, sizeof *skips, cmp_count);
        fprintf(tap_out, "# skip reasons (cases x backends; a case skipped for several reasons "
               "counts under each):\n");
        for (size_t i = 0; i < skip_n; i++) {
            fprintf(tap_out, "#   %4zu  %s\n", skips[i].count, skips[i].key);
        }
    }
    for (size_t i = 0; i < fail_n; i++) {
        free(fails[i].key);
    }
    for (size_t i = 0; i < skip_n; i++) {
        free(skips[i].key);
    }
    free(fails);
    free(skips);
    for (size_t i = 0; i < xf.n; i++) {
        const expected *x = &xf.v[i];
        if (!x->seen && opt.filters.n == 0) {
            fprintf(tap_out, "# expected failure '%s%s%s%s' matches no case and backend\n", x->case_name,
                   x->backend ? " [" : "", x->backend ? x->backend : "", x->backend ? "]" : "");
        } else if (x->seen && !x->failed) {
            fprintf(tap_out, "# expected failure '%s%s%s%s' did not fail (skipped or passed)\n",
                   x->case_name, x->backend ? " [" : "", x->backend ? x->backend : "",
                   x->backend ? "]" : "");
        }
    }
    fprintf(tap_out, "# conformance: %zu passed (%zu of them specialised on input values), %zu failed, "
           "%zu skipped (of %zu cases x %zu backends)", all.passed, all.passed_valued,
           all.failed, all.skipped, case_count, nb);
    if (all.expected_failed || all.unexpected_passed) {
        fprintf(tap_out, "; %zu failures expected, %zu expected failures passed", all.expected_failed,
               all.unexpected_passed);
    }
    fprintf(tap_out, "\n# wall time %.1f s\n", wall);
    if (all.failed > all.expected_failed || all.unexpected_passed) {
        exit_code = 1;
    }
    free(per_backend);

out:
    fflush(tap_out);
    if (cases) {
        for (size_t i = 0; i < case_count; i++) {
            for (size_t b = 0; b < backend_ids.n; b++) {
                result_clear(&cases[i].results[b]);
            }
            free(cases[i].results);
        }
        free(cases);
    }
    plx_runtime_destroy(&rt);
    sl_free(&case_names);
    sl_free(&backend_ids);
    free_options(&opt);
    free_expected(&xf);
    return exit_code;
}
