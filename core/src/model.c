/* The model front end (plexus/model.h): a table of formats, each with the
 * importer that reads it when that importer is built (model_importer.h),
 * and the model object that forwards to the chosen importer. Adding a
 * format: one row here, docs/model-formats.md. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <plexus/model.h>

#include "internal.h"
#include "model_importer.h"

typedef struct format_row {
    const char *name;
    const char *extension;
    const plxi_model_importer *importer; /* NULL: not built */
} format_row;

static const format_row formats[] = {
#ifdef PLEXUS_HAVE_ONNX
    {"onnx", ".onnx", &plxi_onnx_importer},
#else
    {"onnx", ".onnx", NULL},
#endif
};
#define FORMAT_COUNT (sizeof formats / sizeof formats[0])

struct plx_model {
    const format_row *format;
    void *impl;
};

PLX_API void plx_model_options_init(plx_model_options *options) {
    if (options) {
        memset(options, 0, sizeof *options);
        options->struct_size = sizeof *options;
    }
}

PLX_API size_t plx_model_format_count(void) {
    size_t n = 0;
    for (size_t i = 0; i < FORMAT_COUNT; i++) {
        n += formats[i].importer != NULL;
    }
    return n;
}

PLX_API const char *plx_model_format_name(size_t index) {
    for (size_t i = 0; i < FORMAT_COUNT; i++) {
        if (formats[i].importer && index-- == 0) {
            return formats[i].name;
        }
    }
    return NULL;
}

/* "onnx, tflite" (the built ones) or "none", into buf. */
static const char *built_names(char *buf, size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < FORMAT_COUNT && len < size; i++) {
        if (formats[i].importer) {
            int n = snprintf(buf + len, size - len, "%s%s", len ? ", " : "", formats[i].name);
            len += n > 0 ? (size_t)n : 0;
        }
    }
    return *buf ? buf : "none";
}

static bool has_extension(const char *path, const char *ext) {
    size_t n = strlen(path), e = strlen(ext);
    return n > e && strcasecmp(path + n - e, ext) == 0;
}

/* The row for the format named in the options, else for the file name's
 * extension. */
static plx_status choose_format(const char *path, const char *name, const format_row **out) {
    char built[256];
    for (size_t i = 0; i < FORMAT_COUNT; i++) {
        if (name ? strcmp(formats[i].name, name) == 0 : has_extension(path, formats[i].extension)) {
            if (!formats[i].importer) {
                return plxi_status_create(PLX_UNSUPPORTED,
                                          "%s: the %s format is not built into this libplexus "
                                          "(formats built in: %s)",
                                          path, formats[i].name, built_names(built, sizeof built));
            }
            *out = &formats[i];
            return NULL;
        }
    }
    if (name) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "%s: unknown model format '%s' (formats built in: %s)", path,
                                  name, built_names(built, sizeof built));
    }
    return plxi_status_create(PLX_INVALID_ARGUMENT,
                              "%s: cannot tell the model's format from the file name: no known "
                              "extension (formats built in: %s); name the format "
                              "(plx_model_options.format, plexus run --format)",
                              path, built_names(built, sizeof built));
}

plx_status plxi_model_check_format(const char *path, const char *format) {
    const format_row *row = NULL;
    return choose_format(path, format, &row);
}

PLX_API plx_status plx_model_open(const char *path, const plx_model_options *options,
                                  plx_model **out_model) {
    if (out_model) {
        *out_model = NULL;
    }
    if (!path || !out_model) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "plx_model_open: path and out_model must not be NULL");
    }
    /* Callers built before data_shapes, or before report, pass the struct
     * that ended at constant_count or data_shape_count: the fields they
     * lack read as zero. */
    plx_model_options given;
    plx_model_options_init(&given);
    if (options) {
        size_t oldest = offsetof(plx_model_options, data_shapes);
        size_t older = offsetof(plx_model_options, report);
        if (options->struct_size != oldest && options->struct_size != older &&
            options->struct_size < sizeof given) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "%s: plx_model_options.struct_size %u is not the size of "
                                      "any version of the struct: call plx_model_options_init",
                                      path, (unsigned)options->struct_size);
        }
        memcpy(&given, options, options->struct_size < sizeof given ? options->struct_size
                                                                    : sizeof given);
        given.struct_size = sizeof given;
    }
    options = &given;
    plx_model_import_report_clear(options->report);
    const format_row *row = NULL;
    plx_status st = choose_format(path, options->format, &row);
    if (st) {
        return st;
    }
    plx_model *m = calloc(1, sizeof *m);
    if (!m) {
        return plxi_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    m->format = row;
    st = row->importer->open(path, options, &m->impl);
    if (st) {
        free(m);
        return st;
    }
    *out_model = m;
    return NULL;
}

PLX_API void plx_model_destroy(plx_model **model) {
    if (!model || !*model) {
        return;
    }
    (*model)->format->importer->destroy((*model)->impl);
    free(*model);
    *model = NULL;
}

PLX_API const char *plx_model_format(const plx_model *model) {
    return model ? model->format->name : NULL;
}

PLX_API plx_network *plx_model_network(plx_model *model) {
    return model ? model->format->importer->network(model->impl) : NULL;
}

PLX_API size_t plx_model_input_count(const plx_model *model) {
    return model ? model->format->importer->io_count(model->impl, false) : 0;
}

PLX_API const plx_model_io *plx_model_input(const plx_model *model, size_t index) {
    return model ? model->format->importer->io(model->impl, false, index) : NULL;
}

PLX_API size_t plx_model_output_count(const plx_model *model) {
    return model ? model->format->importer->io_count(model->impl, true) : 0;
}

PLX_API const plx_model_io *plx_model_output(const plx_model *model, size_t index) {
    return model ? model->format->importer->io(model->impl, true, index) : NULL;
}

PLX_API void plx_model_get_facts(const plx_model *model, plx_model_facts *out_facts) {
    if (!out_facts) {
        return;
    }
    memset(out_facts, 0, sizeof *out_facts);
    if (model) {
        model->format->importer->get_facts(model->impl, out_facts);
        out_facts->format = model->format->name;
    }
}
