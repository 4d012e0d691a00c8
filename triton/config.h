/* The model configuration of the Plexus Triton backend: what it reads of
 * Triton's model configuration (config.pbtxt as the JSON message
 * TRITONBACKEND_ModelConfig gives), the Plexus options among its
 * `parameters` included (docs/triton.md lists the keys), and the dtypes
 * of both sides. No call into Triton here: the parser takes the JSON
 * text. */
#ifndef PLEXUS_TRITON_CONFIG_H
#define PLEXUS_TRITON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plexus/plexus.h>
#include <plexus/tensor.h>

#include "triton_api.h"

/* An input or output of config.pbtxt: its dims leave out the batch dim
 * when max_batch_size > 0; -1 is a dim of any size. */
typedef struct tpx_io {
    char *name;
    plx_dtype dtype;
    uint32_t rank;
    int64_t dims[PLX_MAX_RANK];
} tpx_io;

typedef struct tpx_config {
    char *name;
    /* 0: no batch dim; N > 0: every input and output has a batch dim
     * first, of 1 to N, and requests may be gathered into one execution. */
    int64_t max_batch_size;
    /* The model file in the version directory (default "model.onnx"). */
    char *model_filename;
    tpx_io *inputs;
    size_t input_count;
    tpx_io *outputs;
    size_t output_count;
    /* parameters: backends, fallback, threads, backend_options,
     * backend_path, cache_capacity. */
    char **backends;
    size_t backend_count;
    bool fallback;
    uint32_t threads;
    plx_backend_option *backend_options; /* strings owned */
    size_t backend_option_count;
    char **search_paths;
    size_t search_path_count;
    size_t cache_capacity;
} tpx_config;

/* Parses the JSON of a model configuration into *out (zeroed first).
 * Errors (PLX_INVALID_ARGUMENT) name the field or parameter at fault: the
 * JSON is malformed, an input or output has no name, a datatype Plexus has
 * no dtype for, more dims than PLX_MAX_RANK, an unknown parameter key or a
 * value that does not parse. On error *out holds nothing to free. */
plx_status tpx_config_parse(const char *json, size_t size, tpx_config *out);

void tpx_config_free(tpx_config *config);

/* Triton's datatype for a Plexus dtype and back; TRITONSERVER_TYPE_INVALID
 * and PLX_DTYPE_INVALID where the other side has none (Triton has no
 * float8 or int4, Plexus no BYTES). */
TRITONSERVER_DataType tpx_dtype_to_triton(plx_dtype dtype);
plx_dtype tpx_dtype_from_triton(TRITONSERVER_DataType type);
/* The inference protocol's name of a datatype ("FP32"); "INVALID" for one
 * out of range. */
const char *tpx_triton_type_name(TRITONSERVER_DataType type);

#endif /* PLEXUS_TRITON_CONFIG_H */
