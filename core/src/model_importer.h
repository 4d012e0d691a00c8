/* What the model front end (model.c, plexus/model.h) needs of one
 * importer: a row of the format table in model.c points at one of these.
 * An importer keeps its own model object (`impl`); the functions below are
 * the front end's only way into it. Each importer's row lives in its own
 * file (model_onnx.c for ONNX), built only when the importer is, and uses
 * only the importer's public header. docs/model-formats.md says how to
 * add one. */
#ifndef PLEXUS_CORE_MODEL_IMPORTER_H
#define PLEXUS_CORE_MODEL_IMPORTER_H

#include <stdbool.h>
#include <stddef.h>

#include <plexus/model.h>

typedef struct plxi_model_importer {
    /* Imports the file at `path` (options never NULL; options->format
     * already chosen). Errors as plexus/model.h documents, naming the file. */
    plx_status (*open)(const char *path, const plx_model_options *options, void **out_impl);
    void (*destroy)(void *impl);
    plx_network *(*network)(void *impl);
    /* Inputs (output false) or outputs (true) of the model, in its order. */
    size_t (*io_count)(const void *impl, bool output);
    const plx_model_io *(*io)(const void *impl, bool output, size_t index);
    /* Every field but `format`, which the front end sets. */
    void (*get_facts)(const void *impl, plx_model_facts *out_facts);
} plxi_model_importer;

/* model.c: whether `path` names a format built in, by the format's name
 * (`format`, NULL: from the file name's extension); plx_model_open's
 * errors for an unknown or absent format. For dynamic_model.c, which opens
 * the file only later. */
plx_status plxi_model_check_format(const char *path, const char *format);

/* model_onnx.c: the ONNX importer (onnx/, plexus/onnx.h). */
extern const plxi_model_importer plxi_onnx_importer;

#endif /* PLEXUS_CORE_MODEL_IMPORTER_H */
