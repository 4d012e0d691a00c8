/* Model files: open a model of any format compiled into libplexus and get
 * its network, inputs, outputs and facts, without naming the importer.
 *
 * Part of libplexus (link with `plexus`); conventions as in plexus.h: a
 * plx_status is NULL on success and owned by the caller otherwise, out_*
 * parameters are written only on success.
 *
 * Formats: each has a name ("onnx") and a file-name extension (".onnx").
 * plx_model_open takes the format named in plx_model_options.format, else
 * the one whose extension ends the file's name (case-insensitive). Which
 * formats a build has depends on how libplexus was configured (the Meson
 * feature of each importer, docs/model-formats.md); plx_model_format_count
 * and plx_model_format_name list them. An importer's own header (as
 * plexus/onnx.h) gives the rest of what that format offers.
 *
 * Errors of plx_model_open, whose messages name the file:
 *   - PLX_INVALID_ARGUMENT: no format named and the file's extension is not
 *     one of a known format; or a format name that no importer has.
 *   - PLX_UNSUPPORTED: the format is known but its importer is not built
 *     into this libplexus.
 *   - otherwise the importer's errors (plexus/onnx.h for "onnx"): the file
 *     cannot be read (PLX_IO_ERROR), is malformed, or uses what Plexus
 *     cannot import.
 *
 * Thread-safety: the format list is constant and may be read from any
 * thread; a model is used by one thread at a time; distinct models are
 * independent. */
#ifndef PLEXUS_MODEL_H
#define PLEXUS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <plexus/network.h>
#include <plexus/plexus.h>
#include <plexus/status.h>
#include <plexus/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The size of a model input whose dims are not all known: dims of `rank`
 * entries replace the declared shape (whose rank must match; known dims
 * must be equal). */
typedef struct plx_model_input_shape {
    const char *name;
    int64_t dims[PLX_MAX_RANK];
    uint32_t rank;
} plx_model_input_shape;

/* A model input frozen to a value at import: it becomes a constant of the
 * network (and is no longer one of the model's inputs), so that what it
 * feeds can be folded or take it as an attribute (a reshape's shape, a
 * resize's scales...). `info` gives the data's dtype and shape, which must
 * be the input's (its open dims take the data's sizes); `data` is copied.
 * The name may also be that of a tensor a node of the main graph computes:
 * the tensor is then that value, and the nodes only it needed are not
 * imported (its dtype and shape are the data's). */
typedef struct plx_model_constant_input {
    const char *name;
    plx_tensor_info info;
    const void *data;
} plx_model_constant_input;

/* What a failed import can tell a program beyond its status, to act on.
 * Give one in plx_model_options.report; plx_model_open empties it on entry
 * (freeing what an earlier call left there, so zero it before its first
 * use) and fills it when the import fails. plx_model_import_report_clear
 * frees its contents. */
typedef struct plx_model_import_report {
    /* Graph inputs whose values the import needed: a node takes as an
     * attribute (a reshape's target shape, an `If`'s condition, a slice's
     * bounds) a tensor computed from them. Freezing them to values
     * (`constants`) lets the import go on; it may then need more. Names as
     * in the model, each once, malloc'd. Empty when the import failed for
     * another reason. */
    char **value_inputs;
    size_t value_input_count;
    /* The tensors of the main graph, computed by its nodes, whose values
     * the import needed (the names the nodes read, each once, malloc'd):
     * computed first (`outputs`) and then frozen (`constants`), they let
     * the import go on when the inputs they come from cannot be frozen.
     * A tensor inside an If branch or a loop body is not listed. */
    char **value_tensors;
    size_t value_tensor_count;
} plx_model_import_report;

PLX_API void plx_model_import_report_clear(plx_model_import_report *report);

/* Initializer data shared between imports of one model file: give the
 * same plx_model_weights in plx_model_options.weights to every import of a
 * file (a dynamic model does, for its specialisations) and each of the
 * main graph's initializers is decoded once, by the first import, and
 * borrowed by the later ones; what an import computes (folded constants)
 * stays its own. A store serves the file its first import named (by path,
 * as given): imports of any other file decode as usual. The file must not
 * change while the store is in use. Reference-counted: create gives one
 * reference, each model opened with the store holds one until it is
 * destroyed, and the data lives until the last is released. Thread-safe. */
typedef struct plx_model_weights plx_model_weights;

PLX_API plx_status plx_model_weights_create(plx_model_weights **out_weights);
/* Adds a reference; returns `weights`. */
PLX_API plx_model_weights *plx_model_weights_retain(plx_model_weights *weights);
/* Drops a reference (sets *weights NULL; NULL is ignored). */
PLX_API void plx_model_weights_release(plx_model_weights **weights);
/* The bytes of initializer data it holds. */
PLX_API size_t plx_model_weights_bytes(plx_model_weights *weights);
/* For importers: the data stored for initializer `name` of `source` (and
 * its info in *out_info), or NULL. */
PLX_API const void *plx_model_weights_lookup(plx_model_weights *weights, const char *source,
                                             const char *name, plx_tensor_info *out_info);
/* For importers: stores `data` (malloc'd, of `info`) for initializer
 * `name` of `source`, and returns the data stored for it: `data`, taken,
 * or the data an import stored first (then `data` is freed). NULL when
 * the store serves another file or is out of memory: `data` stays the
 * caller's. */
PLX_API const void *plx_model_weights_insert(plx_model_weights *weights, const char *source,
                                             const char *name, const plx_tensor_info *info,
                                             void *data);

typedef struct plx_model_options {
    uint32_t struct_size; /* set by plx_model_options_init */
    /* A format name ("onnx"); NULL: from the file name's extension. */
    const char *format;
    const plx_model_input_shape *shapes;
    size_t shape_count;
    const plx_model_constant_input *constants;
    size_t constant_count;
    /* The shapes of the data the caller will bind (as read from its input
     * files), used where the model leaves a dim open: an entry fills the
     * open dims of the input of its name when its rank is the input's. It
     * never overrides a size the model or `shapes` gives, and an entry that
     * names no input, or has another rank, is ignored: the caller checks its
     * data against plx_model_input's info as for any input. Added after
     * constant_count; a struct_size that ends at constant_count reads as
     * none. */
    const plx_model_input_shape *data_shapes;
    size_t data_shape_count;
    /* Optional: filled when the import fails (above). Added after
     * data_shape_count; a struct_size that ends there reads as none. */
    plx_model_import_report *report;
    /* Optional: the tensors, by name, that the model outputs instead of
     * the graph's outputs (graph outputs, or tensors the main graph's
     * nodes compute). Only the nodes they need are imported, and only the
     * graph inputs they need are inputs of the model. */
    const char *const *outputs;
    size_t output_count;
    /* Optional: initializer data shared with the other imports of this
     * file that use the same store (above). */
    plx_model_weights *weights;
} plx_model_options;

PLX_API void plx_model_options_init(plx_model_options *options);

/* The formats built into this libplexus: names ("onnx"), in a fixed order.
 * plx_model_format_name returns NULL for an index out of range; the
 * strings are static. */
PLX_API size_t plx_model_format_count(void);
PLX_API const char *plx_model_format_name(size_t index);

/* An opened model: its network, inputs and outputs. */
typedef struct plx_model plx_model;

/* Reads and imports the model at `path`. `options` NULL means defaults.
 * A shape or constant given for a name that is not an input of the model,
 * or both for one input, is an error. */
PLX_API plx_status plx_model_open(const char *path, const plx_model_options *options,
                                  plx_model **out_model);

/* Destroys the model and its network; sets *model NULL; NULL is ignored.
 * The network's constants are borrowed from the model: destroy the model
 * only after every optimised or loaded network made from it is destroyed
 * or unloaded. */
PLX_API void plx_model_destroy(plx_model **model);

/* The format the model was opened as ("onnx"); static. */
PLX_API const char *plx_model_format(const plx_model *model);

/* The network (validated), owned by the model. Optimise it with
 * plx_optimize; do not add layers to it. */
PLX_API plx_network *plx_model_network(plx_model *model);

/* One model input or output: its name in the model, the binding id it has
 * in the network (inputs and outputs each numbered 0, 1, ... in the
 * model's order), and its tensor info. Pointers valid while the model
 * lives. */
typedef struct plx_model_io {
    const char *name;
    int32_t binding_id;
    plx_tensor_info info;
} plx_model_io;

/* Inputs and outputs in the model's order; NULL for an index out of range. */
PLX_API size_t plx_model_input_count(const plx_model *model);
PLX_API const plx_model_io *plx_model_input(const plx_model *model, size_t index);
PLX_API size_t plx_model_output_count(const plx_model *model);
PLX_API const plx_model_io *plx_model_output(const plx_model *model, size_t index);

/* Facts about the source model, for reports. Strings are static or live
 * as long as the model. */
typedef struct plx_model_facts {
    const char *format;       /* as plx_model_format */
    const char *producer;     /* the tool that wrote the file, with its version; "" when absent */
    const char *version_name; /* what `version` numbers: "IR version" for ONNX */
    int64_t version;          /* the file format's version */
    int64_t opset;            /* the operator set's version; -1 when the format has none */
    size_t node_count;        /* operator nodes in the file */
    size_t folded_count;      /* of which evaluated at import into constants */
} plx_model_facts;
PLX_API void plx_model_get_facts(const plx_model *model, plx_model_facts *out_facts);

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_MODEL_H */
