/* The "onnx" row of the model front end (model.c): plexus/model.h's calls
 * passed to the ONNX importer's public API (plexus/onnx.h). Built only with
 * the importer (the Meson feature `onnx`). */
#include <stdbool.h>
#include <stddef.h>

#include <plexus/model.h>
#include <plexus/onnx.h>

#include "model_importer.h"

static plx_status onnx_open(const char *path, const plx_model_options *options,
                            void **out_impl) {
    plx_onnx_options o;
    plx_onnx_options_init(&o);
    o.shapes = options->shapes;
    o.shape_count = options->shape_count;
    o.constants = options->constants;
    o.constant_count = options->constant_count;
    o.data_shapes = options->data_shapes;
    o.data_shape_count = options->data_shape_count;
    o.report = options->report;
    o.outputs = options->outputs;
    o.output_count = options->output_count;
    o.weights = options->weights;
    plx_onnx_model *m = NULL;
    plx_status st = plx_onnx_import_file(path, &o, &m);
    if (!st) {
        *out_impl = m;
    }
    return st;
}

static void onnx_destroy(void *impl) {
    plx_onnx_model *m = impl;
    plx_onnx_model_destroy(&m);
}

static plx_network *onnx_network(void *impl) {
    return plx_onnx_model_network(impl);
}

static size_t onnx_io_count(const void *impl, bool output) {
    return output ? plx_onnx_model_output_count(impl) : plx_onnx_model_input_count(impl);
}

static const plx_model_io *onnx_io(const void *impl, bool output, size_t index) {
    return output ? plx_onnx_model_output(impl, index) : plx_onnx_model_input(impl, index);
}

static void onnx_get_facts(const void *impl, plx_model_facts *out_facts) {
    plx_onnx_model_facts f;
    plx_onnx_model_get_facts(impl, &f);
    out_facts->producer = f.producer;
    out_facts->version_name = "IR version";
    out_facts->version = f.ir_version;
    out_facts->opset = f.opset;
    out_facts->node_count = f.node_count;
    out_facts->folded_count = f.folded_count;
}

const plxi_model_importer plxi_onnx_importer = {
    onnx_open, onnx_destroy, onnx_network, onnx_io_count, onnx_io, onnx_get_facts,
};
