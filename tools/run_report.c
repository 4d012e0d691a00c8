/* `plexus run`'s report: latency statistics, then the text or JSON report of
 * the model, the assignment, load, latency, memory plan and top classes. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_writer.h"
#include "run.h"

/* A shape as a JSON array of its sizes. */
static void json_shape(json_writer *w, const plx_tensor_info *info) {
    json_begin_array(w);
    for (uint32_t i = 0; i < info->rank; i++) {
        json_int(w, info->dims[i]);
    }
    json_end_array(w);
}


static int compare_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

latency_stats run_compute_stats(const run_state *s) {
    latency_stats st = {0};
    size_t n = s->latency_count;
    if (n == 0) {
        return st;
    }
    qsort(s->latencies, n, sizeof *s->latencies, compare_double);
    const double *l = s->latencies;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += l[i];
    }
    st.min = l[0];
    st.max = l[n - 1];
    st.median = n % 2 ? l[n / 2] : (l[n / 2 - 1] + l[n / 2]) / 2;
    st.p90 = l[(9 * n + 9) / 10 - 1]; /* nearest rank: ceil(0.9 n) */
    st.mean = sum / (double)n;
    st.throughput = s->run_wall_ms > 0 ? (double)n / (s->run_wall_ms / 1000.0) : 0;
    return st;
}

/* "1.234 ms", or "20.8 us". */
static const char *latency_text(double ms, bool us, char *buf, size_t size) {
    if (us) {
        snprintf(buf, size, "%.1f us", ms * 1000.0);
    } else {
        snprintf(buf, size, "%.3f ms", ms);
    }
    return buf;
}

/* "0.982"; tiny scores as "2.3e-05" rather than "0.000". */
static const char *score_text(float v, char *buf, size_t size) {
    double d = (double)v;
    if (d == 0 || fabs(d) >= 0.001) {
        snprintf(buf, size, "%.3f", d);
    } else {
        snprintf(buf, size, "%.1e", d);
    }
    return buf;
}

static int name_width(const run_state *s) {
    size_t w = 4;
    for (size_t i = 0; i < s->input_count; i++) {
        size_t n = strlen(s->inputs[i].io->name);
        w = n > w ? n : w;
    }
    for (size_t i = 0; i < s->output_count; i++) {
        size_t n = strlen(s->outputs[i].io->name);
        w = n > w ? n : w;
    }
    return w > 40 ? 40 : (int)w;
}

/* How the inputs and outputs reach the network. */
static const char *io_text(const run_args *a) {
    if (a->preimport) {
        return "inputs and outputs pre-imported (--preimport)";
    }
    if (a->no_import && a->no_export) {
        return "inputs and outputs copied (--copy-io)";
    }
    if (a->no_import) {
        return "inputs copied (--no-import), outputs in place where their backends import them";
    }
    if (a->no_export) {
        return "inputs in place where their backends import them, outputs copied (--no-export)";
    }
    return "inputs and outputs in place where the backends import them";
}

/* "copy" or "import" for a layer the optimiser inserted, else NULL. */
static const char *inserted_kind(const layer_row *l) {
    if (!l->inserted) {
        return NULL;
    }
    return l->op == PLX_OP_MEM_IMPORT ? "import" : "copy";
}

/* --show-layers: one line per layer of the optimised network. */
static void print_layers(FILE *out, const run_state *s) {
    size_t name_w = 5, op_w = 2;
    for (size_t i = 0; i < s->layer_count; i++) {
        size_t n = strlen(s->layers[i].name), o = strlen(plx_op_name(s->layers[i].op));
        name_w = n > name_w ? n : name_w;
        op_w = o > op_w ? o : op_w;
    }
    name_w = name_w > 40 ? 40 : name_w;
    fprintf(out, "Layers (%zu, in execution order):\n", s->layer_count);
    for (size_t i = 0; i < s->layer_count; i++) {
        const layer_row *l = &s->layers[i];
        fprintf(out, "  %-*s  %-*s  %s", (int)name_w, l->name, (int)op_w, plx_op_name(l->op),
                l->backend);
        if (inserted_kind(l)) {
            fprintf(out, "  [inserted %s]", inserted_kind(l));
        }
        for (size_t k = 0; k < l->fused_count; k++) {
            fprintf(out, "%s%s", k ? ", " : "  fused from: ", l->fused[k]);
        }
        if (l->refused_by) {
            fprintf(out, "  (fell back from %s)", l->refused_by);
        }
        fputc('\n', out);
    }
}

void run_print_text(FILE *out, const run_state *s, const latency_stats *st) {
    const run_args *a = s->args;
    char buf[256];
    plx_model_facts facts;
    plx_model_get_facts(s->model, &facts);
    int w = name_width(s);

    fprintf(out, "Model: %s\n", a->model);
    fprintf(out, "  %s%s%s%s %" PRId64, *facts.producer ? "producer " : "", facts.producer,
            *facts.producer ? ", " : "", facts.version_name, facts.version);
    if (facts.opset >= 0) {
        fprintf(out, ", opset %" PRId64, facts.opset);
    }
    fprintf(out, ", %zu nodes (%zu folded at import)\n", facts.node_count, facts.folded_count);

    fputs("\nInputs:\n", out);
    for (size_t i = 0; i < s->input_count; i++) {
        const input_data *d = &s->inputs[i];
        fprintf(out, "  %-*s  %-8s %s\n", w, d->io->name, plx_dtype_name(d->io->info.dtype),
                run_shape_text(&d->io->info, buf, sizeof buf));
    }
    if (!s->input_count) {
        fputs("  (none)\n", out);
    }
    fputs("Outputs:\n", out);
    for (size_t i = 0; i < s->output_count; i++) {
        const output_data *d = &s->outputs[i];
        fprintf(out, "  %-*s  %-8s %s\n", w, d->io->name, plx_dtype_name(d->info.dtype),
                run_shape_text(&d->info, buf, sizeof buf));
    }

    /* The --input files frozen to their data: the import needed their
     * values (their shapes, taken from the other files, need no line: a
     * model's open dims take them as --input says). */
    const char *sep = "Valued inputs (frozen to their --input files' data, which the import "
                      "needs): ";
    for (size_t k = 0; k < a->input_count; k++) {
        if (s->given[k].valued) {
            fprintf(out, "%s%s", sep, a->inputs[k].name);
            sep = ", ";
        }
    }
    if (*sep == ',') {
        fputc('\n', out);
    }
    for (size_t i = 0; i < s->probed_count; i++) {
        fprintf(out, "%s%s", i ? ", " : "Valued tensors (computed from the inputs by a probe "
                "network, which the import needs): ", s->probed_names[i]);
    }
    if (s->probed_count) {
        fprintf(out, " (probe %.3f ms)\n", s->probe_ms);
    }

    fputs("\nInput data:\n", out);
    for (size_t i = 0; i < s->input_count; i++) {
        const input_data *d = &s->inputs[i];
        if (d->file) {
            fprintf(out, "  %s: %s\n", d->io->name, d->file);
        } else {
            fprintf(out, "  %s: random %s %s (seed %" PRIu64 ")\n", d->io->name,
                    plx_dtype_name(d->io->info.dtype), run_shape_text(&d->io->info, buf, sizeof buf),
                    d->seed);
        }
    }
    if (!s->input_count) {
        fputs("  (none)\n", out);
    }

    fputs("\nBackends: ", out);
    for (size_t i = 0; i < s->backend_count; i++) {
        fprintf(out, "%s%s", i ? ", " : "", s->backends[i]);
    }
    fprintf(out, " (%s%s)\n", s->backends_defaulted ? "every available backend" : "--backends",
            a->no_fallback ? "; no fallback" : "");
    fputs("Assignment:\n", out);
    for (size_t i = 0; i < s->count_count; i++) {
        const backend_count *c = &s->counts[i];
        fprintf(out, "  %s: %zu layer%s (%zu compute, %zu constant%s, %zu input%s/output%s)",
                c->id, c->layers, c->layers == 1 ? "" : "s", c->layers - c->constants - c->io,
                c->constants, c->constants == 1 ? "" : "s", c->io, c->io == 1 ? "" : "s",
                c->io == 1 ? "" : "s");
        if (c->inserted) {
            fprintf(out, " (+%zu inserted cop%s/import%s)", c->inserted,
                    c->inserted == 1 ? "y" : "ies", c->inserted == 1 ? "" : "s");
        }
        fputc('\n', out);
    }
    if (!s->fallback_count) {
        fputs("  fallbacks: none\n", out);
    } else {
        fprintf(out, "  fallbacks (%zu):\n", s->fallback_count);
        for (size_t i = 0; i < s->fallback_count; i++) {
            const fallback *f = &s->fallbacks[i];
            fprintf(out, "    '%s' (%s): %s -> %s; %s: %s\n", f->layer, plx_op_name(f->op),
                    f->from, f->to, f->from, f->reason);
        }
    }
    for (size_t i = 0; i < s->note_count; i++) {
        fprintf(out, "  note: %s\n", s->notes[i]);
    }
    if (a->show_layers) {
        print_layers(out, s);
    }

    char tries[32] = "";
    if (s->imports > 1) {
        snprintf(tries, sizeof tries, " in %zu tries", s->imports);
    }
    fprintf(out, "\nLoad: %.3f ms (import %.3f%s, optimize %.3f, load %.3f)\n",
            s->import_ms + s->optimize_ms + s->load_ms, s->import_ms, tries, s->optimize_ms,
            s->load_ms);
    char intra[48] = "";
    if (a->runtime.rt.intra_op_threads) {
        snprintf(intra, sizeof intra, ", intra-op threads %lu",
                 (unsigned long)a->runtime.rt.intra_op_threads);
    }
    fprintf(out, "Runs: %ld iteration%s after %ld warm-up run%s%s, concurrency %ld%s, %s\n",
            a->iterations, a->iterations == 1 ? "" : "s", a->warmup, a->warmup == 1 ? "" : "s",
            a->concurrency > 1 ? " per concurrent run" : "", a->concurrency, intra,
            io_text(a));
    fprintf(out, "Memory: %s; buffers %zu-byte aligned; %" PRIu64 " staged cop%s, %" PRIu64
                 " wait%s for queued backends\n",
            s->planned ? "planned by the host" : "each backend its own", s->io_alignment,
            s->staged_copies, s->staged_copies == 1 ? "y" : "ies", s->waits,
            s->waits == 1 ? "" : "s");
    /* One unit for the line: microseconds when the median is under 0.1 ms. */
    bool us = st->median < 0.1;
    char t[4][32];
    fprintf(out, "Latency: min %s, median %s, p90 %s, max %s\n",
            latency_text(st->min, us, t[0], sizeof t[0]),
            latency_text(st->median, us, t[1], sizeof t[1]),
            latency_text(st->p90, us, t[2], sizeof t[2]),
            latency_text(st->max, us, t[3], sizeof t[3]));
    fprintf(out, "Throughput: %.1f inferences/s\n", st->throughput);

    fputs("\nMemory plan:\n", out);
    size_t reports = s->loaded ? plx_loaded_network_memory_report_count(s->loaded) : 0;
    for (size_t i = 0; i < reports; i++) {
        const plx_memory_report *r = plx_loaded_network_memory_report(s->loaded, i);
        fprintf(out, "  %s: %zu bytes (lower bound %zu), %s strategy, %zu buffer%s for %zu "
                     "tensor%s\n",
                r->backend_id, r->bytes, r->lower_bound, r->strategy ? r->strategy : "?",
                r->buffer_count, r->buffer_count == 1 ? "" : "s", r->tensor_count,
                r->tensor_count == 1 ? "" : "s");
    }
    if (!reports) {
        fprintf(out, "  %s\n", s->planned ? "(nothing to plan)"
                                          : "none: a backend used manages its own memory");
    }

    if (s->classifier) {
        const char *name = s->outputs[0].io->name;
        fputs("\nPrediction:\n", out);
        char score[32];
        if (s->top_count) {
            fprintf(out, "  %s: top-1 class %zu (%s)\n", name, s->top[0].index,
                    score_text(s->top[0].score, score, sizeof score));
        }
        if (s->top_count > 1) {
            fprintf(out, "  %s: top-%zu classes", name, s->top_count);
            for (size_t i = 0; i < s->top_count; i++) {
                fprintf(out, "%s %zu (%s)", i ? "," : "", s->top[i].index,
                        score_text(s->top[i].score, score, sizeof score));
            }
            fputc('\n', out);
        }
    }

    if (a->output_dir) {
        fputs("\nOutputs written:\n", out);
        for (size_t i = 0; i < s->output_count; i++) {
            fprintf(out, "  %s: %s\n", s->outputs[i].io->name, s->outputs[i].path);
        }
    }
    if (a->profile) {
        fprintf(out, "\nTrace written: %s\n", a->profile);
    }
}

static void json_io(json_writer *w, const char *name, const plx_tensor_info *info) {
    json_key(w, "name");
    json_string(w, name);
    json_key(w, "dtype");
    json_string(w, plx_dtype_name(info->dtype));
    json_key(w, "shape");
    json_shape(w, info);
}

void run_print_json(FILE *out, const run_state *s, const latency_stats *st) {
    const run_args *a = s->args;
    json_writer w;
    json_init(&w, out);
    json_begin_object(&w);
    json_key(&w, "model");
    json_string(&w, a->model);

    /* "ir_version" is the file format's version (plx_model_facts.version),
     * under the name the report has always given it. */
    plx_model_facts facts;
    plx_model_get_facts(s->model, &facts);
    json_key(&w, "model_facts");
    json_begin_object(&w);
    json_key(&w, "format");
    json_string(&w, facts.format);
    json_key(&w, "producer");
    json_string(&w, facts.producer);
    json_key(&w, "ir_version");
    json_int(&w, facts.version);
    json_key(&w, "opset");
    json_int(&w, facts.opset);
    json_key(&w, "node_count");
    json_int(&w, (int64_t)facts.node_count);
    json_key(&w, "folded_count");
    json_int(&w, (int64_t)facts.folded_count);
    json_end_object(&w);

    json_key(&w, "inputs");
    json_begin_array(&w);
    for (size_t i = 0; i < s->input_count; i++) {
        const input_data *d = &s->inputs[i];
        json_begin_object(&w);
        json_io(&w, d->io->name, &d->io->info);
        json_key(&w, "source");
        json_string(&w, d->file ? "file" : "random");
        json_key(&w, "file");
        json_string(&w, d->file);
        json_key(&w, "seed");
        if (d->file) {
            json_null(&w);
        } else {
            json_int(&w, (int64_t)d->seed);
        }
        json_end_object(&w);
    }
    json_end_array(&w);

    json_key(&w, "outputs");
    json_begin_array(&w);
    for (size_t i = 0; i < s->output_count; i++) {
        const output_data *d = &s->outputs[i];
        json_begin_object(&w);
        json_io(&w, d->io->name, &d->info);
        json_key(&w, "file");
        json_string(&w, d->path);
        json_end_object(&w);
    }
    json_end_array(&w);

    json_key(&w, "backends");
    json_begin_array(&w);
    for (size_t i = 0; i < s->backend_count; i++) {
        json_string(&w, s->backends[i]);
    }
    json_end_array(&w);
    json_key(&w, "allow_fallback");
    json_bool(&w, !a->no_fallback);

    json_key(&w, "assignment");
    json_begin_object(&w);
    json_key(&w, "layers");
    json_begin_object(&w);
    for (size_t i = 0; i < s->count_count; i++) {
        json_key(&w, s->counts[i].id);
        json_int(&w, (int64_t)s->counts[i].layers);
    }
    json_end_object(&w);
    json_key(&w, "inserted");
    json_begin_object(&w);
    for (size_t i = 0; i < s->count_count; i++) {
        json_key(&w, s->counts[i].id);
        json_int(&w, (int64_t)s->counts[i].inserted);
    }
    json_end_object(&w);
    json_key(&w, "fallbacks");
    json_begin_array(&w);
    for (size_t i = 0; i < s->fallback_count; i++) {
        const fallback *f = &s->fallbacks[i];
        json_begin_object(&w);
        json_key(&w, "layer");
        json_string(&w, f->layer);
        json_key(&w, "op");
        json_string(&w, plx_op_name(f->op));
        json_key(&w, "from");
        json_string(&w, f->from);
        json_key(&w, "to");
        json_string(&w, f->to);
        json_key(&w, "reason");
        json_string(&w, f->reason);
        json_end_object(&w);
    }
    json_end_array(&w);
    json_key(&w, "notes");
    json_begin_array(&w);
    for (size_t i = 0; i < s->note_count; i++) {
        json_string(&w, s->notes[i]);
    }
    json_end_array(&w);
    json_key(&w, "per_layer");
    json_begin_array(&w);
    for (size_t i = 0; i < s->layer_count; i++) {
        const layer_row *l = &s->layers[i];
        json_begin_object(&w);
        json_key(&w, "layer");
        json_string(&w, l->name);
        json_key(&w, "op");
        json_string(&w, plx_op_name(l->op));
        json_key(&w, "backend");
        json_string(&w, l->backend);
        json_key(&w, "inserted");
        json_string(&w, inserted_kind(l));
        json_key(&w, "fused_from");
        json_begin_array(&w);
        for (size_t k = 0; k < l->fused_count; k++) {
            json_string(&w, l->fused[k]);
        }
        json_end_array(&w);
        json_key(&w, "fell_back_from");
        json_string(&w, l->refused_by);
        json_end_object(&w);
    }
    json_end_array(&w);
    json_end_object(&w);

    json_key(&w, "load_ms");
    json_double(&w, s->import_ms + s->optimize_ms + s->load_ms);
    json_key(&w, "load_phases_ms");
    json_begin_object(&w);
    json_key(&w, "import");
    json_double(&w, s->import_ms);
    json_key(&w, "optimize");
    json_double(&w, s->optimize_ms);
    json_key(&w, "load");
    json_double(&w, s->load_ms);
    json_end_object(&w);
    /* The one specialisation this run made: the inputs whose file gave a
     * shape, those frozen to their file's value, and the import's tries. */
    json_key(&w, "specialization");
    json_begin_object(&w);
    json_key(&w, "count");
    json_int(&w, 1);
    json_key(&w, "ms");
    json_double(&w, s->import_ms + s->optimize_ms + s->load_ms);
    json_key(&w, "import_tries");
    json_int(&w, (int64_t)s->imports);
    for (int valued = 0; valued < 2; valued++) {
        json_key(&w, valued ? "valued_inputs" : "shapes_from_files");
        json_begin_array(&w);
        for (size_t k = 0; k < a->input_count; k++) {
            if (s->given[k].read && s->given[k].valued == (valued != 0)) {
                json_string(&w, a->inputs[k].name);
            }
        }
        json_end_array(&w);
    }
    json_key(&w, "valued_tensors");
    json_begin_array(&w);
    for (size_t i = 0; i < s->probed_count; i++) {
        json_string(&w, s->probed_names[i]);
    }
    json_end_array(&w);
    json_key(&w, "probe_ms");
    json_double(&w, s->probe_ms);
    json_end_object(&w);

    json_key(&w, "iterations");
    json_int(&w, a->iterations);
    json_key(&w, "warmup");
    json_int(&w, a->warmup);
    json_key(&w, "concurrency");
    json_int(&w, a->concurrency);
    json_key(&w, "intra_op_threads");
    if (a->runtime.rt.intra_op_threads) {
        json_int(&w, (long)a->runtime.rt.intra_op_threads);
    } else {
        json_null(&w);
    }
    json_key(&w, "copy_io");
    json_bool(&w, a->no_import && a->no_export);
    json_key(&w, "io");
    json_begin_object(&w);
    json_key(&w, "import_enabled");
    json_bool(&w, !a->no_import);
    json_key(&w, "export_enabled");
    json_bool(&w, !a->no_export);
    json_key(&w, "preimport");
    json_bool(&w, a->preimport);
    json_key(&w, "planned_memory");
    json_bool(&w, s->planned);
    json_key(&w, "alignment");
    json_int(&w, (int64_t)s->io_alignment);
    json_key(&w, "staged_copies");
    json_int(&w, (int64_t)s->staged_copies);
    json_key(&w, "waits");
    json_int(&w, (int64_t)s->waits);
    json_end_object(&w);
    json_key(&w, "latency_ms");
    json_begin_object(&w);
    json_key(&w, "min");
    json_double(&w, st->min);
    json_key(&w, "median");
    json_double(&w, st->median);
    json_key(&w, "p90");
    json_double(&w, st->p90);
    json_key(&w, "max");
    json_double(&w, st->max);
    json_key(&w, "mean");
    json_double(&w, st->mean);
    json_end_object(&w);
    json_key(&w, "throughput_per_s");
    json_double(&w, st->throughput);

    json_key(&w, "memory");
    json_begin_object(&w);
    size_t reports = plx_loaded_network_memory_report_count(s->loaded);
    for (size_t i = 0; i < reports; i++) {
        const plx_memory_report *r = plx_loaded_network_memory_report(s->loaded, i);
        json_key(&w, r->backend_id);
        json_begin_object(&w);
        json_key(&w, "bytes");
        json_int(&w, (int64_t)r->bytes);
        json_key(&w, "lower_bound");
        json_int(&w, (int64_t)r->lower_bound);
        json_key(&w, "strategy");
        json_string(&w, r->strategy);
        json_key(&w, "buffers");
        json_int(&w, (int64_t)r->buffer_count);
        json_key(&w, "tensors");
        json_int(&w, (int64_t)r->tensor_count);
        json_end_object(&w);
    }
    json_end_object(&w);

    if (s->classifier) {
        json_key(&w, "top_classes");
        json_begin_object(&w);
        json_key(&w, "output");
        json_string(&w, s->outputs[0].io->name);
        json_key(&w, "classes");
        json_begin_array(&w);
        for (size_t i = 0; i < s->top_count; i++) {
            json_begin_object(&w);
            json_key(&w, "class");
            json_int(&w, (int64_t)s->top[i].index);
            json_key(&w, "score");
            json_double(&w, (double)s->top[i].score);
            json_end_object(&w);
        }
        json_end_array(&w);
        json_end_object(&w);
    }

    json_key(&w, "output_dir");
    json_string(&w, a->output_dir);
    json_key(&w, "profile");
    json_string(&w, a->profile);
    json_end_object(&w);
}

