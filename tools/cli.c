/* What the plexus commands share: usage errors and the options that create
 * a runtime (tools/cli.h). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <plexus/plexus.h>

#include "cli.h"
#include "option_arg.h"

/* More intra-op threads than this is a typo, not a machine. */
#define MAX_INTRA_OP_THREADS 1024

int usage_error(const char *command, const char *usage, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (command) {
        fprintf(stderr, "plexus %s: ", command);
    } else {
        fputs("plexus: ", stderr);
    }
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n\n%s", usage);
    return EXIT_USAGE;
}

bool runtime_args_init(runtime_args *a, int argc) {
    memset(a, 0, sizeof *a);
    plx_runtime_options_init(&a->rt);
    size_t n = argc > 0 ? (size_t)argc : 1;
    a->paths = calloc(n, sizeof *a->paths);
    a->options = calloc(n, sizeof *a->options);
    if (!a->paths || !a->options) {
        fprintf(stderr, "plexus: out of memory while reading the arguments\n");
        runtime_args_free(a);
        return false;
    }
    return true;
}

void runtime_args_free(runtime_args *a) {
    free(a->paths);
    free(a->options);
    a->paths = NULL;
    a->options = NULL;
    a->path_count = a->option_count = 0;
}

int runtime_args_parse(runtime_args *a, int argc, char **argv, int *i, const char *command,
                       const char *usage) {
    const char *arg = argv[*i];
    bool has_value = *i + 1 < argc;
    if (strcmp(arg, "--no-env") == 0) {
        a->rt.ignore_environment = true;
    } else if (strcmp(arg, "--no-default-dir") == 0) {
        a->rt.skip_default_dir = true;
    } else if (strcmp(arg, "--probe") == 0 || strcmp(arg, "--no-probe") == 0) {
        a->rt.probe_plugins = strcmp(arg, "--probe") == 0;
    } else if (strcmp(arg, "--backend-path") == 0) {
        if (!has_value || !*argv[*i + 1]) {
            return usage_error(command, usage, "%s needs a non-empty path", arg);
        }
        a->paths[a->path_count++] = argv[++*i];
    } else if (strcmp(arg, "--option") == 0) {
        if (!has_value) {
            return usage_error(command, usage, "%s needs ID.KEY=VALUE", arg);
        }
        ++*i;
        if (!option_arg_parse(argv[*i], &a->options[a->option_count])) {
            return usage_error(command, usage, "bad --option '%s': expected ID.KEY=VALUE",
                               argv[*i]);
        }
        a->option_count++;
    } else if (strcmp(arg, "--intra-op-threads") == 0) {
        char *end = NULL;
        if (!has_value) {
            return usage_error(command, usage, "%s needs a count", arg);
        }
        ++*i;
        errno = 0;
        unsigned long n = strtoul(argv[*i], &end, 10);
        if (errno || end == argv[*i] || *end || argv[*i][0] == '-' || n < 1 ||
            n > MAX_INTRA_OP_THREADS) {
            return usage_error(command, usage,
                               "bad --intra-op-threads '%s': expected a count from 1 to %d",
                               argv[*i], MAX_INTRA_OP_THREADS);
        }
        a->rt.intra_op_threads = (uint32_t)n;
    } else if (strcmp(arg, "--log-level") == 0) {
        plx_log_level level;
        if (!has_value) {
            return usage_error(command, usage, "%s needs a level", arg);
        }
        ++*i;
        if (!plx_log_level_parse(argv[*i], &level)) {
            return usage_error(command, usage,
                               "bad --log-level '%s': expected error, warn, info or debug",
                               argv[*i]);
        }
        a->rt.log_level = (int)level;
    } else {
        return -1;
    }
    return 0;
}

/* The probe beside this executable (a build tree: tools/), else NULL (the
 * installed one, which libplexus knows). */
static const char *probe_beside_exe(char *buf, size_t size) {
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0 || (size_t)n >= size - 1) {
        return NULL;
    }
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    static const char name[] = "plexus-plugin-probe";
    if (!slash || (size_t)(slash + 1 - buf) + sizeof name > size) {
        return NULL;
    }
    memcpy(slash + 1, name, sizeof name);
    return access(buf, X_OK) == 0 ? buf : NULL;
}

bool runtime_args_create(runtime_args *a, const char *prefix, plx_runtime **out_runtime) {
    char probe[PATH_MAX];
    if (a->rt.probe_plugins && !a->rt.probe_path) {
        a->rt.probe_path = probe_beside_exe(probe, sizeof probe);
    }
    a->rt.search_paths = a->paths;
    a->rt.search_path_count = a->path_count;
    a->rt.backend_options = a->options;
    a->rt.backend_option_count = a->option_count;
    plx_status s = plx_runtime_create(&a->rt, out_runtime);
    if (s) {
        fprintf(stderr, "%s: cannot create the runtime: %s\n", prefix,
                plx_status_get_message(s));
        plx_status_free(s);
        a->rt.probe_path = NULL;
        return false;
    }
    a->rt.probe_path = NULL; /* pointed into this frame; read during create only */
    return true;
}
