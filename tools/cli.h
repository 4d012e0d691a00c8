/* plexus CLI: what the commands share (tools/cli.c): exit statuses, usage
 * errors, and the options that create a runtime. */
#ifndef PLEXUS_TOOLS_CLI_H
#define PLEXUS_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include <plexus/plexus.h>

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

/* Prints "plexus: MESSAGE" ("plexus COMMAND: MESSAGE" when `command` is not
 * NULL), a blank line and `usage` on stderr; returns EXIT_USAGE. */
int usage_error(const char *command, const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The usage lines of the options runtime_args_parse accepts, for a
 * command's usage text. */
#define RUNTIME_ARGS_USAGE                                                                  \
    "  --backend-path PATH    search PATH (a directory or a plug-in file) first;\n"        \
    "                         may be repeated\n"                                            \
    "  --no-env               ignore PLEXUS_BACKEND_PATH, PLEXUS_BACKENDS and\n"           \
    "                         PLEXUS_SKIP_DEFAULT_DIR\n"                                    \
    "  --no-default-dir       do not search the installed backend directory\n"             \
    "  --probe, --no-probe    load each plug-in in a separate process first (the\n"      \
    "                         probe), and refuse those that crash, exit or hang\n"       \
    "                         there (default: on for info, off for run)\n"               \
    "  --option ID.KEY=VALUE  pass KEY=VALUE to backend ID when it is created;\n"          \
    "                         may be repeated\n"                                            \
    "  --intra-op-threads N   threads each backend uses within a layer: threads=N\n"       \
    "                         for every backend that has a `threads` option (an\n"         \
    "                         --option ID.threads=M for one backend wins); default:\n"     \
    "                         each backend's own\n"                                        \
    "  --log-level LEVEL      error, warn, info or debug (default: PLEXUS_LOG, else warn)\n"

/* How a command creates its runtime: --backend-path PATH (repeated),
 * --no-env, --no-default-dir, --probe / --no-probe, --option ID.KEY=VALUE (repeated),
 * --intra-op-threads N, --log-level LEVEL. */
typedef struct runtime_args {
    const char **paths;
    size_t path_count;
    plx_backend_option *options;
    size_t option_count;
    plx_runtime_options rt;
} runtime_args;

/* Room for the options of `argc` arguments; false (with a message) when
 * memory runs out. */
bool runtime_args_init(runtime_args *a, int argc);
void runtime_args_free(runtime_args *a);

/* Parses argv[*i] when it is one of the runtime options, with its value
 * (advancing *i past it). Returns -1 when the argument is not one of them,
 * 0 when it was consumed, else EXIT_USAGE after a usage error
 * (usage_error(command, usage, ...)). Strings are borrowed from argv,
 * which --option splits in place. */
int runtime_args_parse(runtime_args *a, int argc, char **argv, int *i, const char *command,
                       const char *usage);

/* Creates the runtime the arguments describe. On failure prints
 * "PREFIX: cannot create the runtime: ..." and returns false. */
bool runtime_args_create(runtime_args *a, const char *prefix, plx_runtime **out_runtime);

#endif
