/* plexus-plugin-probe: loads one plug-in file in a process of its own, for
 * a host that runs with plx_runtime_options.probe_plugins (core/src/probe.c,
 * docs/backend-abi.md "The probe").
 *
 *   plexus-plugin-probe FD PATH [--threads N] [--option ID KEY VALUE]...
 *
 * Loads PATH through the registry of the core itself (a runtime whose only
 * search path is PATH, environment ignored, probe off, with the host's
 * intra-op threads and backend options as given after PATH), then
 * destroys that runtime, and reports on file descriptor FD each step before
 * the plug-in's code runs in it ("phase create\n"), after "probe\n" when it
 * starts and before "done\n" at the end.
 * Prints nothing on stdout: anything there is the plug-in's. Exits 0 when
 * it got to the end, whatever the registry made of the file (a rejection is
 * the in-process load's to report); a plug-in that crashes, aborts, exits or
 * hangs ends it before "done". */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <plexus/plexus.h>

#include "registry.h"

static int report_fd = -1;

static void say(const char *line) {
    size_t len = strlen(line), done = 0;
    while (done < len) {
        ssize_t n = write(report_fd, line + done, len - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return;
        }
        done += (size_t)n;
    }
}

static void report_phase(const char *phase) {
    char line[160];
    snprintf(line, sizeof line, "phase %s\n", phase);
    say(line);
}

static void quiet(void *user_data, plx_log_level level, const char *source, const char *message) {
    (void)user_data;
    (void)level;
    (void)source;
    (void)message;
}

/* Reads the arguments after PATH into `o` (options: room for argc / 4).
 * False when they do not parse. */
static bool parse_options(int argc, char **argv, plx_runtime_options *o,
                          plx_backend_option *options) {
    for (int i = 3; i < argc;) {
        char *end;
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            errno = 0;
            unsigned long n = strtoul(argv[i + 1], &end, 10);
            if (errno || *end || n == 0 || n > UINT32_MAX) {
                return false;
            }
            o->intra_op_threads = (uint32_t)n;
            i += 2;
        } else if (strcmp(argv[i], "--option") == 0 && i + 3 < argc) {
            options[o->backend_option_count++] =
                (plx_backend_option){argv[i + 1], argv[i + 2], argv[i + 3]};
            i += 4;
        } else {
            return false;
        }
    }
    o->backend_options = options;
    return true;
}

int main(int argc, char **argv) {
    char *end;
    long fd = argc >= 3 ? strtol(argv[1], &end, 10) : -1;
    plx_runtime_options o;
    plx_runtime_options_init(&o);
    plx_backend_option *options = calloc((size_t)argc / 4 + 1, sizeof *options);
    if (argc < 3 || *end || fd < 3 || fd > 1024 || !options ||
        !parse_options(argc, argv, &o, options)) {
        fputs("usage: plexus-plugin-probe FD PATH [--threads N] [--option ID KEY VALUE]... "
              "(run by libplexus, not by hand)\n", stderr);
        free(options);
        return 2;
    }
    report_fd = (int)fd;
    /* A fault is the host's to see as what it is: a sanitizer's handler
     * would turn SIGSEGV into an exit status */
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        signal(faults[i], SIG_DFL);
    }
    plxi_probe_phase = report_phase;
    say("probe\n"); /* started: what follows is the plug-in's doing */
    const char *paths[] = {argv[2]};
    o.search_paths = paths;
    o.search_path_count = 1;
    o.ignore_environment = true;
    o.skip_default_dir = true;
    o.log_fn = quiet;
    plx_runtime *rt = NULL;
    plx_status s = plx_runtime_create(&o, &rt);
    plx_status_free(s);
    plx_runtime_destroy(&rt);
    free(options);
    report_phase("exit");
    say("done\n");
    return 0;
}
