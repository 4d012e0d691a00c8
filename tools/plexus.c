/* plexus: the command-line front end.
 *
 * Exit status: 0 success, 1 runtime error, 2 bad usage (with the usage
 * text on stderr). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plexus/model.h>
#include <plexus/plexus.h>

#include "cli.h"
#include "commands.h"
#include "json_writer.h"
#include "text_clean.h"

static const char main_usage[] =
    "usage: plexus [--help] [--version] <command> [<args>]\n"
    "\n"
    "Commands:\n"
    "  info    list the model formats built in, the backend search path, the\n"
    "          backends found, whether each runs layers (and if not, why),\n"
    "          their capabilities, and every plug-in file refused with its\n"
    "          reason\n"
    "  run     load a model (ONNX), run it on inputs from .npy files (or random\n"
    "          values), and report the backend assignment, load time,\n"
    "          latency, memory plan and outputs\n"
    "  conformance\n"
    "          check one backend plug-in (a file or an id) against the backend\n"
    "          ABI: each requirement a program can check, and every accepted\n"
    "          layer's results against the reference kernels\n"
    "\n"
    "Run 'plexus <command> --help' for a command's options.\n";

static const char info_usage[] =
    "usage: plexus info [--json] [--backend-path PATH]... [--no-env] [--no-default-dir]\n"
    "                   [--no-probe] [--option ID.KEY=VALUE]... [--log-level LEVEL]\n"
    "\n"
    "  --json                 print one JSON document instead of text\n"
    RUNTIME_ARGS_USAGE
    "\n"
    "Environment: PLEXUS_BACKEND_PATH (colon-separated directories or files),\n"
    "PLEXUS_BACKENDS (comma-separated ids to load), PLEXUS_LOG (log level).\n";

typedef struct info_args {
    bool json;
    runtime_args runtime;
} info_args;

/* Returns -1 when parsing succeeded, else an exit status. */
static int parse_info_args(int argc, char **argv, info_args *a) {
    if (!runtime_args_init(&a->runtime, argc)) {
        return EXIT_RUNTIME;
    }
    a->runtime.rt.probe_plugins = true; /* info survives hostile plug-ins by default */
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(info_usage, stdout);
            return EXIT_OK;
        } else if (strcmp(arg, "--json") == 0) {
            a->json = true;
        } else {
            int rc = runtime_args_parse(&a->runtime, argc, argv, &i, NULL, info_usage);
            if (rc > 0) {
                return rc;
            }
            if (rc < 0) {
                return usage_error(NULL, info_usage, "unknown argument '%s' for 'info'", arg);
            }
        }
    }
    return -1;
}

static const char *abi_text(uint32_t v, char *buf, size_t n) {
    snprintf(buf, n, "%u.%u", PLX_ABI_VERSION_GET_MAJOR(v), PLX_ABI_VERSION_GET_MINOR(v));
    return buf;
}

static void print_capability_value(FILE *out, const plx_capability *c) {
    switch (c->type) {
    case PLX_VALUE_BOOL:
        fputs(c->bool_value ? "true" : "false", out);
        break;
    case PLX_VALUE_INT:
        fprintf(out, "%" PRId64, c->int_value);
        break;
    case PLX_VALUE_STRING:
        fprintf(out, "\"%s\"", c->string_value);
        break;
    }
}

static void print_rejections(FILE *out, const char *title, size_t count,
                             const plx_rejection *(*get)(const plx_runtime *, size_t),
                             const plx_runtime *rt) {
    fprintf(out, "\n%s (%zu):\n", title, count);
    if (count == 0) {
        fputs("  (none)\n", out);
    }
    for (size_t i = 0; i < count; i++) {
        const plx_rejection *r = get(rt, i);
        fprintf(out, "  %s", r->path ? r->path : "(static backend)");
        if (r->id) {
            fprintf(out, " [%s]", r->id);
        }
        fprintf(out, "\n    %s\n", r->reason);
    }
}

static void print_info_text(FILE *out, const plx_runtime *rt) {
    char buf[32];
    fprintf(out, "Plexus %s, backend ABI %s\n", plx_version_string(),
            abi_text(plx_abi_version(), buf, sizeof buf));
    fputs("Model formats:", out);
    for (size_t i = 0; i < plx_model_format_count(); i++) {
        fprintf(out, "%s %s", i ? "," : "", plx_model_format_name(i));
    }
    fputs(plx_model_format_count() ? "\n" : " none\n", out);

    fprintf(out, "\nSearch path:\n");
    size_t n = plx_runtime_search_path_count(rt);
    if (n == 0) {
        fputs("  (empty)\n", out);
    }
    for (size_t i = 0; i < n; i++) {
        const plx_search_entry *e = plx_runtime_search_path(rt, i);
        fprintf(out, "  %-12s %s%s%s%s\n", plx_search_source_name(e->source), e->path,
                *e->problem ? " (" : "", e->problem, *e->problem ? ")" : "");
    }

    n = plx_runtime_backend_count(rt);
    fprintf(out, "\nBackends (%zu):\n", n);
    if (n == 0) {
        fputs("  (none)\n", out);
    }
    for (size_t i = 0; i < n; i++) {
        const plx_backend_info *b = plx_runtime_backend(rt, i);
        fprintf(out, "  %s: %s %s (ABI %s)\n", b->id, b->name, b->version,
                abi_text(b->abi_version, buf, sizeof buf));
        fprintf(out, "    path:         %s\n", b->path ? b->path : "(compiled into the application)");
        if (b->available) {
            fputs("    available:    yes\n", out);
        } else {
            fprintf(out, "    available:    no: %s\n", b->reason);
        }
        bool runs = plx_backend_info_runs_layers(b);
        if (runs) {
            fputs("    runs layers:  yes\n", out);
        } else {
            fprintf(out, "    runs layers:  no: %s\n", plx_backend_info_no_layers_reason(b));
        }
        if (plx_backend_info_table_warning(b)) {
            fprintf(out, "    warning:      %s\n", plx_backend_info_table_warning(b));
        }
        if (b->available) {
            /* What a backend that runs no layers reports is never acted on. */
            fprintf(out, "    capabilities%s:", runs ? "" : " (unused: runs no layers)");
            if (b->capability_count == 0) {
                fputs(" (none)", out);
            }
            fputc('\n', out);
            for (size_t k = 0; k < b->capability_count; k++) {
                fprintf(out, "      %s = ", b->capabilities[k].key);
                print_capability_value(out, &b->capabilities[k]);
                fputc('\n', out);
            }
        }
        if (b->option_count) {
            fputs("    options:\n", out);
            for (size_t k = 0; k < b->option_count; k++) {
                const plx_option_info *o = &b->options[k];
                fprintf(out, "      %s: %s", o->key, o->description);
                if (o->default_value) {
                    fprintf(out, " (default: %s)", o->default_value);
                }
                fputc('\n', out);
            }
        }
    }

    print_rejections(out, "Rejected", plx_runtime_rejection_count(rt), plx_runtime_rejection,
                     rt);
    n = plx_runtime_skipped_count(rt);
    if (n) {
        print_rejections(out, "Skipped", n, plx_runtime_skipped, rt);
    }
    n = plx_runtime_note_count(rt);
    if (n) {
        fputs("\nNotes:\n", out);
        for (size_t i = 0; i < n; i++) {
            fprintf(out, "  %s\n", plx_runtime_note(rt, i));
        }
    }
}

static void json_abi(json_writer *w, uint32_t v) {
    json_begin_object(w);
    json_key(w, "major");
    json_int(w, PLX_ABI_VERSION_GET_MAJOR(v));
    json_key(w, "minor");
    json_int(w, PLX_ABI_VERSION_GET_MINOR(v));
    json_end_object(w);
}

static void json_rejections(json_writer *w, size_t count,
                            const plx_rejection *(*get)(const plx_runtime *, size_t),
                            const plx_runtime *rt) {
    json_begin_array(w);
    for (size_t i = 0; i < count; i++) {
        const plx_rejection *r = get(rt, i);
        json_begin_object(w);
        json_key(w, "path");
        json_string(w, r->path);
        json_key(w, "id");
        json_string(w, r->id);
        json_key(w, "reason");
        json_string(w, r->reason);
        json_end_object(w);
    }
    json_end_array(w);
}

static void json_memory_sources(json_writer *w, uint32_t mask) {
    static const struct {
        uint32_t bit;
        const char *name;
    } names[] = {{PLX_MEMORY_SOURCE_MALLOC, "malloc"},
                 {PLX_MEMORY_SOURCE_DMA_BUF, "dma_buf"},
                 {PLX_MEMORY_SOURCE_DMA_BUF_PROTECTED, "dma_buf_protected"}};
    json_begin_array(w);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (mask & names[i].bit) {
            json_string(w, names[i].name);
        }
    }
    json_end_array(w);
}

static void print_info_json(FILE *out, const plx_runtime *rt) {
    json_writer w;
    json_init(&w, out);
    json_begin_object(&w);
    json_key(&w, "version");
    json_string(&w, plx_version_string());
    json_key(&w, "abi");
    json_abi(&w, plx_abi_version());
    json_key(&w, "model_formats");
    json_begin_array(&w);
    for (size_t i = 0; i < plx_model_format_count(); i++) {
        json_string(&w, plx_model_format_name(i));
    }
    json_end_array(&w);

    json_key(&w, "search_path");
    json_begin_array(&w);
    for (size_t i = 0; i < plx_runtime_search_path_count(rt); i++) {
        const plx_search_entry *e = plx_runtime_search_path(rt, i);
        json_begin_object(&w);
        json_key(&w, "path");
        json_string(&w, e->path);
        json_key(&w, "source");
        json_string(&w, plx_search_source_name(e->source));
        json_key(&w, "problem");
        json_string(&w, *e->problem ? e->problem : NULL);
        json_end_object(&w);
    }
    json_end_array(&w);

    json_key(&w, "backends");
    json_begin_array(&w);
    for (size_t i = 0; i < plx_runtime_backend_count(rt); i++) {
        const plx_backend_info *b = plx_runtime_backend(rt, i);
        json_begin_object(&w);
        json_key(&w, "id");
        json_string(&w, b->id);
        json_key(&w, "name");
        json_string(&w, b->name);
        json_key(&w, "version");
        json_string(&w, b->version);
        json_key(&w, "abi");
        json_abi(&w, b->abi_version);
        json_key(&w, "path");
        json_string(&w, b->path);
        json_key(&w, "available");
        json_bool(&w, b->available);
        json_key(&w, "reason");
        json_string(&w, b->reason);
        bool runs = plx_backend_info_runs_layers(b);
        json_key(&w, "runs_layers");
        json_bool(&w, runs);
        json_key(&w, "no_layers_reason");
        json_string(&w, plx_backend_info_no_layers_reason(b));
        json_key(&w, "warning");
        json_string(&w, plx_backend_info_table_warning(b));
        json_key(&w, "capabilities");
        json_begin_object(&w);
        for (size_t k = 0; k < b->capability_count; k++) {
            const plx_capability *c = &b->capabilities[k];
            json_key(&w, c->key);
            switch (c->type) {
            case PLX_VALUE_BOOL:
                json_bool(&w, c->bool_value);
                break;
            case PLX_VALUE_INT:
                json_int(&w, c->int_value);
                break;
            case PLX_VALUE_STRING:
                json_string(&w, c->string_value);
                break;
            }
        }
        json_end_object(&w);
        json_key(&w, "memory_sources");
        json_begin_object(&w);
        /* The sources it can use: none when it runs no layers. */
        json_key(&w, "import");
        json_memory_sources(&w, runs ? plx_backend_info_import_sources(b) : 0);
        json_key(&w, "export");
        json_memory_sources(&w, runs ? plx_backend_info_export_sources(b) : 0);
        json_end_object(&w);
        json_key(&w, "options");
        json_begin_array(&w);
        for (size_t k = 0; k < b->option_count; k++) {
            json_begin_object(&w);
            json_key(&w, "key");
            json_string(&w, b->options[k].key);
            json_key(&w, "description");
            json_string(&w, b->options[k].description);
            json_key(&w, "default");
            json_string(&w, b->options[k].default_value);
            json_end_object(&w);
        }
        json_end_array(&w);
        json_end_object(&w);
    }
    json_end_array(&w);

    json_key(&w, "rejected");
    json_rejections(&w, plx_runtime_rejection_count(rt), plx_runtime_rejection, rt);
    json_key(&w, "skipped");
    json_rejections(&w, plx_runtime_skipped_count(rt), plx_runtime_skipped, rt);
    json_key(&w, "notes");
    json_begin_array(&w);
    for (size_t i = 0; i < plx_runtime_note_count(rt); i++) {
        json_string(&w, plx_runtime_note(rt, i));
    }
    json_end_array(&w);
    json_end_object(&w);
}

static int cmd_info(int argc, char **argv) {
    info_args a = {0};
    int rc = parse_info_args(argc, argv, &a);
    if (rc < 0) {
        plx_runtime *rt = NULL;
        if (!runtime_args_create(&a.runtime, "plexus", &rt)) {
            rc = EXIT_RUNTIME;
        } else {
            if (a.json) {
                print_info_json(stdout, rt);
            } else {
                print_info_text(stdout, rt);
            }
            /* flushed before the backends' destroy runs: the report is out
             * even if a plug-in's teardown takes the process down */
            rc = fflush(stdout) == 0 ? EXIT_OK : EXIT_RUNTIME;
            if (rc != EXIT_OK) {
                fprintf(stderr, "plexus: cannot write the output: %s\n", strerror(errno));
            }
            plx_runtime_destroy(&rt);
        }
    }
    runtime_args_free(&a.runtime);
    return rc;
}

int main(int argc, char **argv) {
    /* before anything is printed: model, plug-in and environment text is
     * shown with its control characters escaped (text_clean.h) */
    if (!text_clean_std_streams()) {
        fputs("plexus: out of memory while setting up the output streams\n", stderr);
        return EXIT_RUNTIME;
    }
    if (argc < 2) {
        return usage_error(NULL, main_usage, "no command given");
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(main_usage, stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        char buf[32];
        printf("plexus %s (backend ABI %s)\n", plx_version_string(),
               abi_text(plx_abi_version(), buf, sizeof buf));
        return EXIT_OK;
    }
    if (strcmp(cmd, "info") == 0) {
        return cmd_info(argc - 2, argv + 2);
    }
    if (strcmp(cmd, "run") == 0) {
        return cmd_run(argc - 2, argv + 2);
    }
    if (strcmp(cmd, "conformance") == 0) {
        return cmd_conformance(argc - 2, argv + 2);
    }
    return usage_error(NULL, main_usage, "unknown command '%s'", cmd);
}
