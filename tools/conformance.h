/* `plexus conformance`: what its files share (tools/conformance.c: the
 * command, the report, the checks on the plug-in file, its descriptor,
 * options and capabilities; tools/conformance_ops.c: the checks that build
 * and run networks). docs/conformance.md, "Checking a backend", says what
 * each check does and which requirement of docs/backend-abi.md it tests. */
#ifndef PLEXUS_TOOLS_CONFORMANCE_H
#define PLEXUS_TOOLS_CONFORMANCE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plexus/backend.h>
#include <plexus/plexus.h>

typedef enum conf_verdict { CONF_PASS = 0, CONF_FAIL = 1, CONF_NA = 2 } conf_verdict;

/* One line of the report: "R-n  name  pass|fail|n/a  reason". */
typedef struct conf_check {
    int requirement; /* n of R-n */
    char *name;
    conf_verdict verdict;
    char *reason;
} conf_check;

typedef struct conf_report {
    conf_check *checks;
    size_t count, cap;
    bool out_of_memory;
} conf_report;

/* Appends a check (name and reason formatted, copied). Running out of
 * memory is remembered in the report and fails the run. */
void conf_add(conf_report *r, int requirement, const char *name, conf_verdict verdict,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Counts what backends allocate through their host table, as the
 * runtime's host_allocator (plexus.h). Safe from any thread. */
typedef struct conf_alloc_counter {
    atomic_size_t allocs, frees;
    atomic_size_t live_bytes;
} conf_alloc_counter;

/* The plexus.h allocator that counts into `c`. */
plx_allocator conf_counting_allocator(conf_alloc_counter *c);
/* Allocations not freed yet. */
size_t conf_alloc_live(conf_alloc_counter *c);

/* What the network checks need: the runtime holding the backend alone, its
 * info, and what the descriptor says (read by conformance.c). */
typedef struct conf_target {
    plx_runtime *rt;
    const plx_backend_info *info;
    conf_alloc_counter *counter;
    bool runs_layers;
    /* The function table sets optimize_subgraph. */
    bool optimizes_subgraphs;
    /* Tolerance scale for float results (--tolerance-scale): 1 by default. */
    double tolerance_scale;
    /* Print each network case as it runs (--verbose), on stderr. */
    bool verbose;
} conf_target;

/* The checks that build one-layer networks, run them on the backend and
 * compare with the reference kernels: refusals, results,
 * concurrent executions, planned memory, imports,
 * queued execution, pre-imported inputs and outputs,
 * backend-allocated planned memory released and run again (R-26 (3)),
 * the backend's profiling events, substitutions of optimize_subgraph
 * (R-23),
 * steady-state allocations (R-18 (7), R-20 (6)), and host memory freed at
 * unload. */
void conf_run_network_checks(const conf_target *t, conf_report *r);

#endif
