/* `plexus run`: import a model (plexus/model.h), assign its layers to
 * backends, load it, run it on inputs from .npy files (or seeded random
 * values), and report what happened: the model's inputs and outputs, the
 * assignment of layers to backends with every fallback, load time, latency,
 * the memory plan, the top classes of a classifier, and optionally the
 * outputs as .npy files and a Chrome trace of the run.
 *
 * Exit status: 0 success, 1 the model cannot be loaded or run (a message
 * on stderr, prefixed "plexus run: "), 2 bad usage. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "run.h"

static int run(const run_args *a) {
    run_state s = {.args = a};
    runtime_args rt_args = a->runtime;
    int rc = EXIT_RUNTIME;
    if (!runtime_args_create(&rt_args, PREFIX, &s.rt)) {
        goto done;
    }
    if (!run_choose_backends(&s)) {
        goto done;
    }
    if (a->profile) {
        plx_status st = plx_runtime_enable_profiling(s.rt, true);
        if (st) {
            run_fail_status("cannot enable profiling", st);
            goto done;
        }
    }
    if (!run_import_model(&s) || !run_prepare_inputs(&s) || !run_optimize_and_load(&s) ||
        !run_prepare_outputs(&s) || !run_execute_all(&s) || !run_write_outputs(&s)) {
        goto done;
    }
    run_find_top_classes(&s);
    if (a->profile) {
        plx_status st = plx_runtime_write_trace(s.rt, a->profile);
        if (st) {
            run_fail_status("cannot write the trace", st);
            goto done;
        }
    }
    latency_stats st = run_compute_stats(&s);
    if (a->json) {
        run_print_json(stdout, &s, &st);
    } else {
        run_print_text(stdout, &s, &st);
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, PREFIX ": cannot write the output: %s\n", strerror(errno));
        goto done;
    }
    rc = EXIT_OK;
done:
    run_state_free(&s);
    return rc;
}

int cmd_run(int argc, char **argv) {
    run_args a;
    memset(&a, 0, sizeof a);
    int rc = run_args_parse(argc, argv, &a);
    if (rc < 0) {
        rc = run(&a);
    }
    run_args_free(&a);
    return rc;
}

