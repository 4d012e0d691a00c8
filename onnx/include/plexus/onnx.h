/* ONNX import: turn an ONNX model file into a Plexus network.
 *
 * Part of libplexus (link with `plexus`); conventions as in plexus.h: a
 * plx_status is NULL on success and owned by the caller otherwise, out_*
 * parameters are written only on success.
 *
 * What is imported:
 *   - ModelProto files (protobuf), IR versions 3 to 10, default-domain
 *     ("" or "ai.onnx") operator sets 7 to 22 (ONNX 1.17); a newer IR
 *     version or opset is PLX_UNSUPPORTED, since its operators may mean
 *     what the importer does not know. Nodes of other domains are
 *     unsupported. A graph without outputs is PLX_INVALID_ARGUMENT.
 *   - Initializers (dense TensorProto, raw or typed fields) and external
 *     tensor data: files named by the tensor's `location`, resolved
 *     relative to the model's directory; a location that is absolute or
 *     leaves that directory (through "..", or a symbolic link) is refused.
 *   - Every tensor gets a static shape at import. Graph inputs take their
 *     declared dims; a dimension without a size (dim_param or unset) takes
 *     the size given in plx_onnx_options.shapes, else import fails naming
 *     the input and the dimension.
 *   - Constant subgraphs are folded: Constant, Shape, Size,
 *     ConstantOfShape, Range and any other node whose inputs are all known
 *     at import is evaluated then (with the reference kernels, whatever
 *     backends are installed), so Shape -> Gather -> Unsqueeze -> Concat
 *     -> Reshape chains become a plain reshape. `If` with a condition known
 *     at import is replaced by the chosen branch.
 *   - Identity and Dropout (inference) are aliases, not layers.
 *
 * plexus/model.h opens ONNX files too (format "onnx", extension ".onnx"),
 * with the same options and errors; this header adds what is ONNX's own
 * (import from memory, the model's facts, TensorProto files).
 *
 * Errors:
 *   - PLX_IO_ERROR: the file (or an external data file) cannot be read.
 *   - PLX_INVALID_ARGUMENT: a malformed model: not a protobuf ModelProto
 *     (truncated, wrong wire types), no graph, a value used but never
 *     defined (a missing initializer), a cycle, a tensor whose data does not
 *     match its shape or whose size overflows, shapes inconsistent with an
 *     operator; the message names the file and the node or tensor.
 *   - PLX_UNSUPPORTED: valid ONNX that Plexus cannot import: the message
 *     lists every unsupported node (name, op type, opset, reason), one per
 *     line, not only the first.
 *
 * Thread-safety: a model is used by one thread at a time; distinct models
 * are independent. */
#ifndef PLEXUS_ONNX_H
#define PLEXUS_ONNX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plexus/model.h>
#include <plexus/network.h>
#include <plexus/plexus.h>
#include <plexus/status.h>
#include <plexus/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The size of a graph input whose dims are not all known, and a graph input
 * frozen to a value at import: as in plexus/model.h (the types are the
 * same, so that plx_model_options' arrays pass through unchanged). */
typedef plx_model_input_shape plx_onnx_input_shape;
typedef plx_model_constant_input plx_onnx_constant_input;
typedef plx_model_import_report plx_onnx_import_report;

typedef struct plx_onnx_options {
    uint32_t struct_size; /* set by plx_onnx_options_init */
    const plx_onnx_input_shape *shapes;
    size_t shape_count;
    const plx_onnx_constant_input *constants;
    size_t constant_count;
    /* As plx_model_options.data_shapes (plexus/model.h), with the same
     * rule for a struct_size that ends at constant_count. */
    const plx_onnx_input_shape *data_shapes;
    size_t data_shape_count;
    /* As plx_model_options.report: the graph inputs whose values a failed
     * import needed (emptied on entry, filled on failure; free with
     * plx_model_import_report_clear). A struct_size that ends at
     * data_shape_count reads as none. */
    plx_onnx_import_report *report;
    /* As plx_model_options.outputs: tensors to output instead of the
     * graph's outputs. */
    const char *const *outputs;
    size_t output_count;
    /* As plx_model_options.weights: the main graph's initializers shared
     * with other imports of the file. */
    plx_model_weights *weights;
} plx_onnx_options;

PLX_API void plx_onnx_options_init(plx_onnx_options *options);

/* An imported model: the network, and the model's inputs and outputs. */
typedef struct plx_onnx_model plx_onnx_model;

/* Reads and imports the model at `path`. `options` NULL means defaults.
 * A shape or constant given for a name that is not a graph input, or both
 * for one input, is an error. */
PLX_API plx_status plx_onnx_import_file(const char *path, const plx_onnx_options *options,
                                        plx_onnx_model **out_model);

/* As plx_onnx_import_file, from `size` bytes at `data` (copied as needed;
 * may be freed after the call). `name` stands for the file in messages.
 * `base_dir` is the directory external data is resolved against; NULL
 * refuses external data. */
PLX_API plx_status plx_onnx_import_memory(const void *data, size_t size, const char *name,
                                          const char *base_dir, const plx_onnx_options *options,
                                          plx_onnx_model **out_model);

/* Destroys the model and its network; sets *model NULL; NULL is ignored.
 * The network's constants are borrowed from the model (PLX_CONSTANT_BORROW):
 * destroy the model only after every optimised or loaded network made from
 * it is destroyed or unloaded. */
PLX_API void plx_onnx_model_destroy(plx_onnx_model **model);

/* The network (validated), owned by the model. Optimise it with
 * plx_optimize; do not add layers to it. */
PLX_API plx_network *plx_onnx_model_network(plx_onnx_model *model);

/* One graph input or output: its ONNX name, the binding id it has in the
 * network (inputs and outputs each numbered 0, 1, ... in graph order), and
 * its tensor info (plexus/model.h's type). Pointers valid while the model
 * lives. */
typedef plx_model_io plx_onnx_io;

PLX_API size_t plx_onnx_model_input_count(const plx_onnx_model *model);
PLX_API const plx_onnx_io *plx_onnx_model_input(const plx_onnx_model *model, size_t index);
PLX_API size_t plx_onnx_model_output_count(const plx_onnx_model *model);
PLX_API const plx_onnx_io *plx_onnx_model_output(const plx_onnx_model *model, size_t index);

/* Facts about the source model, for reports: producer name and version
 * ("" when absent), IR version, default-domain opset, and how many ONNX
 * nodes were folded at import. */
typedef struct plx_onnx_model_facts {
    const char *producer;
    int64_t ir_version;
    int64_t opset;
    size_t node_count;
    size_t folded_count;
} plx_onnx_model_facts;
PLX_API void plx_onnx_model_get_facts(const plx_onnx_model *model, plx_onnx_model_facts *out_facts);

/* ONNX TensorProto files (as the ONNX test data's input_0.pb): reads one
 * tensor. On success *out_data is malloc'd (release with free; never NULL,
 * even for 0 bytes), holds the dense row-major data in host order
 * (*out_info's byte size) and *out_name is the tensor's name (malloc'd, ""
 * when unnamed). External data is refused here. Errors as for import. */
PLX_API plx_status plx_onnx_read_tensor_file(const char *path, plx_tensor_info *out_info,
                                             void **out_data, char **out_name);

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_ONNX_H */
