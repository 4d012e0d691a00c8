/* `plexus run`, shared between its files: the arguments (tools/run_args.c),
 * the run itself (tools/run_exec.c: import, inputs, load, execution,
 * outputs) and the report (tools/run_report.c: text and JSON); tools/run.c
 * puts them in order. */
#ifndef PLEXUS_TOOLS_RUN_H
#define PLEXUS_TOOLS_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <plexus/network.h>
#include <plexus/model.h>
#include <plexus/plexus.h>

#include "cli.h"
#include "npy.h"

#define PREFIX "plexus run"

/* Top classes shown for a classifier's output. */
#define TOP_K 3

/* ------------------------------------------------------------------------ */
/* Arguments                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct input_arg {
    const char *name; /* points into argv (split in place) */
    const char *file;
} input_arg;

typedef struct run_args {
    const char *model;
    const char *format;   /* --format; NULL: from the model's extension */
    char *backends_text;  /* owned copy, split at commas */
    const char **backends; /* into backends_text */
    size_t backend_count;
    bool no_fallback;
    /* --no-import (or --copy-io): plx_optimize_options.import_enabled
     * false: inputs copied in, copy layers instead of import layers
     * between backends. --no-export (or --copy-io): export_enabled false:
     * outputs copied out. */
    bool no_import;
    bool no_export;
    bool preimport;      /* --preimport: pre-imported inputs and outputs */
    bool backend_memory; /* --backend-memory: no externally managed memory */
    bool show_layers;    /* --show-layers: the per-layer list in the text */
    input_arg *inputs;
    size_t input_count;
    input_arg *constants; /* --constant NAME=FILE.npy */
    size_t constant_count;
    plx_model_input_shape *shapes;
    size_t shape_count;
    const char *output_dir;
    long iterations;
    long warmup;
    long concurrency; /* runs at once (--concurrency) */
    const char *profile;
    bool json;
    runtime_args runtime;
} run_args;

/* Parses the arguments after "run" into `a` (zeroed by the caller).
 * Returns -1 to go on, else the exit status after a usage error (or after
 * --help). Free `a` with run_args_free whatever it returns. */
int run_args_parse(int argc, char **argv, run_args *a);
void run_args_free(run_args *a);

/* ------------------------------------------------------------------------ */
/* The run                                                                    */
/* ------------------------------------------------------------------------ */

/* An --input file read before import; `err` when it could not be read
 * (reported once the model's inputs are known, so that a wrong name is
 * named first). */
typedef struct given_input {
    npy_array array;
    bool read;
    bool valued; /* frozen to its data: the import needs its value */
    bool probed; /* read by a probe network (it may then feed no layer) */
    char err[1024];
} given_input;

typedef struct input_data {
    const plx_model_io *io;
    void *data; /* owned */
    size_t bytes;
    const char *file; /* NULL: random */
    uint64_t seed;
} input_data;

typedef struct output_data {
    const plx_model_io *io;
    plx_tensor_info info; /* the loaded network's */
    void *data;           /* owned: the results of the last run (of thread 0) */
    size_t bytes;
    char *path;           /* written to, or NULL */
} output_data;

typedef struct backend_count {
    char *id;
    size_t layers;    /* every layer of the network, as the optimiser's summary */
    size_t constants; /* of which constants */
    size_t io;        /* of which network inputs and outputs */
    size_t inserted;  /* copies and imports the optimiser inserted */
} backend_count;

/* One layer of the optimised network, as the report lists it. */
typedef struct layer_row {
    char *name;
    plx_op op;
    char *backend;
    bool inserted;    /* a copy or import layer the optimiser inserted */
    char **fused;     /* the layers fused into it */
    size_t fused_count;
    char *refused_by; /* the first backend that refused it, or NULL */
} layer_row;

typedef struct fallback {
    char *layer;
    plx_op op;
    char *from;
    char *to;
    char *reason;
} fallback;

typedef struct top_class {
    size_t index;
    float score;
} top_class;

typedef struct run_state {
    const run_args *args;
    plx_runtime *rt;
    plx_model *model;
    plx_optimized_network *optimized;
    plx_loaded_network *loaded;

    const char **backends; /* requested or defaulted */
    size_t backend_count;
    bool backends_defaulted;

    /* The --input files, read before import (their shapes fill the model's
     * open dims) in run_args' order; run_prepare_inputs takes their data. */
    given_input *given;
    input_data *inputs;
    size_t input_count;
    output_data *outputs;
    size_t output_count;
    plx_tensor_binding *in_bindings;
    plx_tensor_binding *out_bindings;
    /* The alignment of every input and output buffer: the largest
     * import_alignment of the backends asked for (at least 64), so that
     * no zero-copy tensor is staged. */
    size_t io_alignment;
    /* --preimport with one run at a time: the ids of the pre-imported
     * inputs and outputs (NULL otherwise; threads keep their own). */
    uint32_t *in_ids;
    uint32_t *out_ids;
    uint64_t staged_copies; /* plx_loaded_network_staged_copy_count after the runs */
    uint64_t waits;         /* plx_loaded_network_wait_count after the runs */

    backend_count *counts;
    size_t count_count;
    fallback *fallbacks;
    size_t fallback_count;
    layer_row *layers;
    size_t layer_count;
    char **notes;
    size_t note_count;
    bool planned; /* loaded with externally managed memory */

    double import_ms, optimize_ms, load_ms;
    size_t imports; /* tries of the import (more than 1: inputs were valued) */
    /* Tensors the import needed the values of, computed from the --input
     * files by a probe network and frozen (their data owned). */
    npy_array *probed;
    char **probed_names;
    size_t probed_count;
    double probe_ms;
    double *latencies; /* iterations entries, ms */
    size_t latency_count;
    double run_wall_ms;

    bool classifier;
    top_class top[TOP_K];
    size_t top_count;
} run_state;


/* The steps of a run, in order (tools/run.c); each prints what went wrong
 * ("plexus run: ...") and returns false. */
bool run_choose_backends(run_state *s);
bool run_import_model(run_state *s);
bool run_prepare_inputs(run_state *s);
bool run_optimize_and_load(run_state *s);
bool run_prepare_outputs(run_state *s);
bool run_execute_all(run_state *s);
bool run_write_outputs(run_state *s);
void run_find_top_classes(run_state *s);
void run_state_free(run_state *s);

/* Prints "plexus run: WHAT: MESSAGE" and frees `s`. */
void run_fail_status(const char *what, plx_status s);
/* "[1,3,224,224]"; "[]" for a scalar. */
const char *run_shape_text(const plx_tensor_info *info, char *buf, size_t size);

/* ------------------------------------------------------------------------ */
/* Report                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct latency_stats {
    double min, median, p90, max, mean, throughput;
} latency_stats;

latency_stats run_compute_stats(const run_state *s);
void run_print_text(FILE *out, const run_state *s, const latency_stats *st);
void run_print_json(FILE *out, const run_state *s, const latency_stats *st);

#endif
