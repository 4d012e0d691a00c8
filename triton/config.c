/* Triton's model configuration, as JSON, into a tpx_config (config.h). */
#define _GNU_SOURCE
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

typedef struct dtype_row {
    plx_dtype dtype;
    TRITONSERVER_DataType triton;
} dtype_row;

static const dtype_row dtype_rows[] = {
    {PLX_DTYPE_BOOL, TRITONSERVER_TYPE_BOOL},       {PLX_DTYPE_UINT8, TRITONSERVER_TYPE_UINT8},
    {PLX_DTYPE_UINT16, TRITONSERVER_TYPE_UINT16},   {PLX_DTYPE_UINT32, TRITONSERVER_TYPE_UINT32},
    {PLX_DTYPE_UINT64, TRITONSERVER_TYPE_UINT64},   {PLX_DTYPE_INT8, TRITONSERVER_TYPE_INT8},
    {PLX_DTYPE_INT16, TRITONSERVER_TYPE_INT16},     {PLX_DTYPE_INT32, TRITONSERVER_TYPE_INT32},
    {PLX_DTYPE_INT64, TRITONSERVER_TYPE_INT64},     {PLX_DTYPE_FLOAT16, TRITONSERVER_TYPE_FP16},
    {PLX_DTYPE_FLOAT32, TRITONSERVER_TYPE_FP32},    {PLX_DTYPE_FLOAT64, TRITONSERVER_TYPE_FP64},
    {PLX_DTYPE_BFLOAT16, TRITONSERVER_TYPE_BF16},
};

/* The inference protocol's names, indexed by TRITONSERVER_DataType; the
 * configuration spells them with "TYPE_" before, and STRING for BYTES. */
static const char *const triton_type_names[] = {
    "INVALID", "BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16",
    "INT32",   "INT64", "FP16", "FP32",   "FP64",   "BYTES",  "BF16",
};

TRITONSERVER_DataType tpx_dtype_to_triton(plx_dtype dtype) {
    for (size_t i = 0; i < sizeof dtype_rows / sizeof dtype_rows[0]; i++) {
        if (dtype_rows[i].dtype == dtype) {
            return dtype_rows[i].triton;
        }
    }
    return TRITONSERVER_TYPE_INVALID;
}

plx_dtype tpx_dtype_from_triton(TRITONSERVER_DataType type) {
    for (size_t i = 0; i < sizeof dtype_rows / sizeof dtype_rows[0]; i++) {
        if (dtype_rows[i].triton == type) {
            return dtype_rows[i].dtype;
        }
    }
    return PLX_DTYPE_INVALID;
}

const char *tpx_triton_type_name(TRITONSERVER_DataType type) {
    size_t n = sizeof triton_type_names / sizeof triton_type_names[0];
    return (size_t)type < n ? triton_type_names[type] : "INVALID";
}

/* "TYPE_FP32" to PLX_DTYPE_FLOAT32; PLX_DTYPE_INVALID for a type Plexus
 * has no dtype for (TYPE_STRING) or an unknown name. */
static plx_dtype dtype_from_config(const char *text) {
    if (strncmp(text, "TYPE_", 5) != 0) {
        return PLX_DTYPE_INVALID;
    }
    for (size_t t = 0; t < sizeof triton_type_names / sizeof triton_type_names[0]; t++) {
        if (strcmp(text + 5, triton_type_names[t]) == 0) {
            return tpx_dtype_from_triton((TRITONSERVER_DataType)t);
        }
    }
    return PLX_DTYPE_INVALID;
}

/* An integer as protobuf's JSON writes it: a number, or a string for
 * 64-bit fields. */
static bool json_int64(json_object *o, int64_t *out) {
    if (json_object_is_type(o, json_type_int)) {
        *out = json_object_get_int64(o);
        return true;
    }
    if (json_object_is_type(o, json_type_string)) {
        const char *s = json_object_get_string(o);
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno == 0 && end != s && *end == '\0') {
            *out = v;
            return true;
        }
    }
    return false;
}

static json_object *member(json_object *o, const char *key) {
    json_object *v = NULL;
    return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static plx_status oom(void) {
    return plx_status_create(PLX_OUT_OF_MEMORY, "model configuration: out of memory");
}

static plx_status parse_ios(json_object *array, const char *what, tpx_io **out,
                            size_t *out_count) {
    if (!array) {
        return NULL;
    }
    if (!json_object_is_type(array, json_type_array)) {
        return plx_status_create(PLX_INVALID_ARGUMENT, "model configuration: '%s' is not a list",
                                 what);
    }
    size_t n = json_object_array_length(array);
    if (n == 0) {
        return NULL;
    }
    tpx_io *ios = calloc(n, sizeof *ios);
    if (!ios) {
        return oom();
    }
    *out = ios;
    *out_count = n;
    for (size_t i = 0; i < n; i++) {
        json_object *io = json_object_array_get_idx(array, i);
        json_object *name = member(io, "name");
        if (!name || !json_object_is_type(name, json_type_string) ||
            json_object_get_string(name)[0] == '\0') {
            return plx_status_create(PLX_INVALID_ARGUMENT,
                                     "model configuration: %s %zu has no name", what, i);
        }
        ios[i].name = strdup(json_object_get_string(name));
        if (!ios[i].name) {
            return oom();
        }
        json_object *type = member(io, "data_type");
        const char *type_text = type ? json_object_get_string(type) : "TYPE_INVALID";
        ios[i].dtype = dtype_from_config(type_text);
        if (ios[i].dtype == PLX_DTYPE_INVALID) {
            return plx_status_create(PLX_INVALID_ARGUMENT,
                                     "model configuration: %s '%s' has data_type %s, which "
                                     "Plexus has no dtype for",
                                     what, ios[i].name, type_text);
        }
        json_object *dims = member(io, "dims");
        size_t rank = dims && json_object_is_type(dims, json_type_array)
                          ? json_object_array_length(dims)
                          : 0;
        if (rank > PLX_MAX_RANK) {
            return plx_status_create(PLX_INVALID_ARGUMENT,
                                     "model configuration: %s '%s' has %zu dims, more than "
                                     "Plexus's %d",
                                     what, ios[i].name, rank, PLX_MAX_RANK);
        }
        ios[i].rank = (uint32_t)rank;
        for (size_t d = 0; d < rank; d++) {
            int64_t v;
            if (!json_int64(json_object_array_get_idx(dims, d), &v) || v < -1) {
                return plx_status_create(PLX_INVALID_ARGUMENT,
                                         "model configuration: %s '%s': dim %zu is not a size "
                                         "or -1",
                                         what, ios[i].name, d);
            }
            ios[i].dims[d] = v;
        }
    }
    return NULL;
}

/* Splits `text` at each of `seps` into trimmed, non-empty strdup'd parts. */
static plx_status split(const char *key, const char *text, const char *seps, char ***out,
                        size_t *out_count) {
    size_t cap = 1;
    for (const char *p = text; *p; p++) {
        cap += strchr(seps, *p) != NULL;
    }
    char **parts = calloc(cap, sizeof *parts);
    if (!parts) {
        return oom();
    }
    *out = parts;
    *out_count = 0;
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, seps);
        const char *start = p;
        const char *end = p + len;
        while (start < end && (*start == ' ' || *start == '\t')) {
            start++;
        }
        while (end > start && (end[-1] == ' ' || end[-1] == '\t')) {
            end--;
        }
        if (end > start) {
            parts[*out_count] = strndup(start, (size_t)(end - start));
            if (!parts[*out_count]) {
                return oom();
            }
            (*out_count)++;
        }
        p += len;
        if (*p) {
            p++;
        }
    }
    if (*out_count == 0) {
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "model configuration: parameter %s is empty", key);
    }
    return NULL;
}

static void free_strings(char **strings, size_t count) {
    for (size_t i = 0; strings && i < count; i++) {
        free(strings[i]);
    }
    free(strings);
}

static plx_status parse_unsigned(const char *key, const char *text, unsigned long min,
                                 unsigned long max, unsigned long *out) {
    char *end;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v < min || v > max) {
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "model configuration: parameter %s is '%s', not a whole number "
                                 "from %lu to %lu",
                                 key, text, min, max);
    }
    *out = v;
    return NULL;
}

/* "ID.KEY=VALUE,..." into plx_backend_options whose strings it owns. */
static plx_status parse_backend_options(const char *text, tpx_config *c) {
    char **parts = NULL;
    size_t n = 0;
    plx_status st = split("backend_options", text, ",", &parts, &n);
    if (!st) {
        c->backend_options = calloc(n, sizeof *c->backend_options);
        st = c->backend_options ? NULL : oom();
    }
    for (size_t i = 0; !st && i < n; i++) {
        char *dot = strchr(parts[i], '.');
        char *eq = dot ? strchr(dot, '=') : NULL;
        if (!dot || !eq || dot == parts[i] || eq == dot + 1) {
            st = plx_status_create(PLX_INVALID_ARGUMENT,
                                   "model configuration: parameter backend_options: '%s' is not "
                                   "ID.KEY=VALUE",
                                   parts[i]);
            break;
        }
        plx_backend_option *o = &c->backend_options[c->backend_option_count];
        o->backend_id = strndup(parts[i], (size_t)(dot - parts[i]));
        o->key = strndup(dot + 1, (size_t)(eq - dot - 1));
        o->value = strdup(eq + 1);
        c->backend_option_count++;
        if (!o->backend_id || !o->key || !o->value) {
            st = oom();
        }
    }
    free_strings(parts, n);
    return st;
}

static plx_status parse_parameter(const char *key, const char *value, tpx_config *c) {
    unsigned long v;
    plx_status st;
    if (strcmp(key, "backends") == 0) {
        return split(key, value, ",", &c->backends, &c->backend_count);
    }
    if (strcmp(key, "backend_path") == 0) {
        return split(key, value, ":", &c->search_paths, &c->search_path_count);
    }
    if (strcmp(key, "backend_options") == 0) {
        return parse_backend_options(value, c);
    }
    if (strcmp(key, "fallback") == 0) {
        if (strcmp(value, "true") != 0 && strcmp(value, "false") != 0) {
            return plx_status_create(PLX_INVALID_ARGUMENT,
                                     "model configuration: parameter fallback is '%s', not true "
                                     "or false",
                                     value);
        }
        c->fallback = strcmp(value, "true") == 0;
        return NULL;
    }
    if (strcmp(key, "threads") == 0) {
        st = parse_unsigned(key, value, 0, 1024, &v);
        c->threads = st ? 0 : (uint32_t)v;
        return st;
    }
    if (strcmp(key, "cache_capacity") == 0) {
        st = parse_unsigned(key, value, 1, 1024, &v);
        c->cache_capacity = st ? c->cache_capacity : (size_t)v;
        return st;
    }
    return plx_status_create(PLX_INVALID_ARGUMENT,
                             "model configuration: unknown parameter '%s' (the Plexus backend "
                             "takes backends, fallback, threads, backend_options, backend_path, "
                             "cache_capacity)",
                             key);
}

static plx_status parse_parameters(json_object *params, tpx_config *c) {
    if (!params) {
        return NULL;
    }
    json_object_object_foreach(params, key, value) {
        json_object *s = member(value, "string_value");
        if (!s || !json_object_is_type(s, json_type_string)) {
            return plx_status_create(PLX_INVALID_ARGUMENT,
                                     "model configuration: parameter %s has no string_value", key);
        }
        plx_status st = parse_parameter(key, json_object_get_string(s), c);
        if (st) {
            return st;
        }
    }
    return NULL;
}

static plx_status parse_root(json_object *root, tpx_config *c) {
    json_object *name = member(root, "name");
    c->name = strdup(name ? json_object_get_string(name) : "");
    json_object *file = member(root, "default_model_filename");
    const char *file_name = file ? json_object_get_string(file) : "";
    c->model_filename = strdup(file_name[0] ? file_name : "model.onnx");
    if (!c->name || !c->model_filename) {
        return oom();
    }
    json_object *mbs = member(root, "max_batch_size");
    if (mbs && (!json_int64(mbs, &c->max_batch_size) || c->max_batch_size < 0)) {
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "model configuration: max_batch_size is not 0 or more");
    }
    plx_status st = parse_ios(member(root, "input"), "input", &c->inputs, &c->input_count);
    if (!st) {
        st = parse_ios(member(root, "output"), "output", &c->outputs, &c->output_count);
    }
    if (!st && (c->input_count == 0 || c->output_count == 0)) {
        st = plx_status_create(PLX_INVALID_ARGUMENT,
                               "model configuration: the Plexus backend needs the model's inputs "
                               "and outputs listed in config.pbtxt (input and output)");
    }
    return st ? st : parse_parameters(member(root, "parameters"), c);
}

plx_status tpx_config_parse(const char *json, size_t size, tpx_config *out) {
    memset(out, 0, sizeof *out);
    out->fallback = true;
    out->cache_capacity = 8;
    json_tokener *tok = json_tokener_new();
    if (!tok) {
        return oom();
    }
    json_object *root = size <= INT_MAX ? json_tokener_parse_ex(tok, json, (int)size) : NULL;
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (!root || jerr != json_tokener_success || end != size ||
        !json_object_is_type(root, json_type_object)) {
        json_object_put(root);
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "model configuration: not a JSON object (%s)",
                                 !root && jerr == json_tokener_continue ? "it ends early"
                                 : root && end != size                  ? "text after its end"
                                 : root ? "another JSON value"
                                        : json_tokener_error_desc(jerr));
    }
    plx_status st = parse_root(root, out);
    json_object_put(root);
    if (st) {
        tpx_config_free(out);
    }
    return st;
}

void tpx_config_free(tpx_config *c) {
    for (size_t i = 0; i < c->input_count; i++) {
        free(c->inputs[i].name);
    }
    for (size_t i = 0; i < c->output_count; i++) {
        free(c->outputs[i].name);
    }
    free(c->inputs);
    free(c->outputs);
    free_strings(c->backends, c->backend_count);
    free_strings(c->search_paths, c->search_path_count);
    for (size_t i = 0; i < c->backend_option_count; i++) {
        free((char *)c->backend_options[i].backend_id);
        free((char *)c->backend_options[i].key);
        free((char *)c->backend_options[i].value);
    }
    free(c->backend_options);
    free(c->name);
    free(c->model_filename);
    memset(c, 0, sizeof *c);
}
