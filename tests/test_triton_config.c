/* The Triton backend's model configuration (triton/config.c): Triton's
 * JSON of config.pbtxt into a tpx_config, the Plexus parameters among it,
 * and each malformed configuration an error naming the field or parameter.
 * JSON texts are parsed from exact-size heap copies, so that sanitizer
 * builds catch a read past their end. The server itself is tested by
 * tests/triton/test_server.py. */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "config.h"

/* Parses `json` from an exact-size copy (no terminating NUL). */
static plx_status parse(const char *json, tpx_config *out) {
    size_t n = strlen(json);
    char *copy = malloc(n ? n : 1);
    cr_assert(not(zero(ptr, copy)));
    memcpy(copy, json, n);
    plx_status st = tpx_config_parse(copy, n, out);
    free(copy);
    return st;
}

/* Asserts that `json` fails with PLX_INVALID_ARGUMENT and a message that
 * contains `part`. */
static void expect_error(const char *json, const char *part) {
    tpx_config c;
    plx_status st = parse(json, &c);
    cr_assert(not(zero(ptr, st)), "accepted: %s", json);
    cr_expect(eq(int, plx_status_get_code(st), PLX_INVALID_ARGUMENT));
    cr_expect(not(zero(ptr, strstr(plx_status_get_message(st), part))), "'%s' not in '%s'", part,
              plx_status_get_message(st));
    plx_status_free(st);
}

#define IO "\"input\":[{\"name\":\"x\",\"data_type\":\"TYPE_FP32\",\"dims\":[\"3\",4]}]," \
           "\"output\":[{\"name\":\"y\",\"data_type\":\"TYPE_INT64\",\"dims\":[-1]}]"

Test(triton_config, digits_and_defaults) {
    tpx_config c;
    plx_status st = parse("{\"name\":\"digits\",\"max_batch_size\":0,"
                          "\"input\":[{\"name\":\"image\",\"data_type\":\"TYPE_FP32\","
                          "\"dims\":[\"1\",\"1\",\"8\",\"8\"]}],"
                          "\"output\":[{\"name\":\"probabilities\",\"data_type\":\"TYPE_FP32\","
                          "\"dims\":[\"1\",\"10\"]}],\"parameters\":{}}",
                          &c);
    cr_assert(zero(ptr, st), "%s", plx_status_get_message(st));
    cr_expect(eq(str, c.name, "digits"));
    cr_expect(eq(str, c.model_filename, "model.onnx"));
    cr_expect(eq(i64, c.max_batch_size, 0));
    cr_assert(eq(sz, c.input_count, 1));
    cr_expect(eq(str, c.inputs[0].name, "image"));
    cr_expect(eq(int, c.inputs[0].dtype, PLX_DTYPE_FLOAT32));
    cr_expect(eq(u32, c.inputs[0].rank, 4));
    cr_expect(eq(i64, c.inputs[0].dims[3], 8));
    cr_assert(eq(sz, c.output_count, 1));
    cr_expect(eq(i64, c.outputs[0].dims[1], 10));
    cr_expect(c.fallback);
    cr_expect(eq(u32, c.threads, 0));
    cr_expect(eq(sz, c.cache_capacity, 8));
    cr_expect(eq(sz, c.backend_count, 0));
    cr_expect(eq(sz, c.backend_option_count, 0));
    cr_expect(eq(sz, c.search_path_count, 0));
    tpx_config_free(&c);
}

Test(triton_config, parameters) {
    tpx_config c;
    plx_status st = parse(
        "{\"name\":\"m\",\"max_batch_size\":\"16\",\"default_model_filename\":\"net.onnx\"," IO ","
        "\"parameters\":{"
        "\"backends\":{\"string_value\":\" cpu_onednn , cpu_ref,\"},"
        "\"fallback\":{\"string_value\":\"false\"},"
        "\"threads\":{\"string_value\":\"4\"},"
        "\"cache_capacity\":{\"string_value\":\"3\"},"
        "\"backend_path\":{\"string_value\":\"/a/b:/c\"},"
        "\"backend_options\":{\"string_value\":\"cpu_ref.threads=2, gpu_opencl.device=a=b\"}}}",
        &c);
    cr_assert(zero(ptr, st), "%s", plx_status_get_message(st));
    cr_expect(eq(i64, c.max_batch_size, 16));
    cr_expect(eq(str, c.model_filename, "net.onnx"));
    cr_expect(eq(i64, c.inputs[0].dims[0], 3));
    cr_expect(eq(i64, c.inputs[0].dims[1], 4));
    cr_expect(eq(int, c.outputs[0].dtype, PLX_DTYPE_INT64));
    cr_expect(eq(i64, c.outputs[0].dims[0], -1));
    cr_assert(eq(sz, c.backend_count, 2));
    cr_expect(eq(str, c.backends[0], "cpu_onednn"));
    cr_expect(eq(str, c.backends[1], "cpu_ref"));
    cr_expect(not(c.fallback));
    cr_expect(eq(u32, c.threads, 4));
    cr_expect(eq(sz, c.cache_capacity, 3));
    cr_assert(eq(sz, c.search_path_count, 2));
    cr_expect(eq(str, c.search_paths[1], "/c"));
    cr_assert(eq(sz, c.backend_option_count, 2));
    cr_expect(eq(str, (char *)c.backend_options[0].backend_id, "cpu_ref"));
    cr_expect(eq(str, (char *)c.backend_options[0].key, "threads"));
    cr_expect(eq(str, (char *)c.backend_options[0].value, "2"));
    cr_expect(eq(str, (char *)c.backend_options[1].backend_id, "gpu_opencl"));
    cr_expect(eq(str, (char *)c.backend_options[1].key, "device"));
    cr_expect(eq(str, (char *)c.backend_options[1].value, "a=b"));
    tpx_config_free(&c);
}

Test(triton_config, bad_parameters) {
#define WITH(params) "{\"name\":\"m\"," IO ",\"parameters\":{" params "}}"
    expect_error(WITH("\"thread\":{\"string_value\":\"2\"}"), "unknown parameter 'thread'");
    expect_error(WITH("\"threads\":{\"string_value\":\"many\"}"), "parameter threads is 'many'");
    expect_error(WITH("\"threads\":{\"string_value\":\"-1\"}"), "parameter threads");
    expect_error(WITH("\"threads\":{\"string_value\":\"1025\"}"), "from 0 to 1024");
    expect_error(WITH("\"cache_capacity\":{\"string_value\":\"0\"}"), "cache_capacity");
    expect_error(WITH("\"fallback\":{\"string_value\":\"yes\"}"), "parameter fallback is 'yes'");
    expect_error(WITH("\"backends\":{\"string_value\":\" , \"}"), "parameter backends is empty");
    expect_error(WITH("\"backend_options\":{\"string_value\":\"cpu_ref=2\"}"),
                 "'cpu_ref=2' is not ID.KEY=VALUE");
    expect_error(WITH("\"backend_options\":{\"string_value\":\".k=v\"}"), "'.k=v'");
    expect_error(WITH("\"backend_options\":{\"string_value\":\"a.=v\"}"), "'a.=v'");
    expect_error(WITH("\"backends\":{\"int64_value\":\"2\"}"), "backends has no string_value");
#undef WITH
}

Test(triton_config, bad_tensors) {
    expect_error("{\"input\":[{\"name\":\"s\",\"data_type\":\"TYPE_STRING\",\"dims\":[1]}],"
                 "\"output\":[{\"name\":\"y\",\"data_type\":\"TYPE_FP32\",\"dims\":[1]}]}",
                 "input 's' has data_type TYPE_STRING");
    expect_error("{\"input\":[{\"data_type\":\"TYPE_FP32\",\"dims\":[1]}],"
                 "\"output\":[{\"name\":\"y\",\"data_type\":\"TYPE_FP32\",\"dims\":[1]}]}",
                 "input 0 has no name");
    expect_error("{\"input\":[{\"name\":\"x\",\"data_type\":\"TYPE_FP32\",\"dims\":[1]}],"
                 "\"output\":[{\"name\":\"y\",\"dims\":[1]}]}",
                 "output 'y' has data_type TYPE_INVALID");
    expect_error("{\"input\":[{\"name\":\"x\",\"data_type\":\"TYPE_FP32\",\"dims\":[-2]}],"
                 "\"output\":[{\"name\":\"y\",\"data_type\":\"TYPE_FP32\",\"dims\":[1]}]}",
                 "input 'x': dim 0 is not a size or -1");
    expect_error("{\"input\":[{\"name\":\"x\",\"data_type\":\"TYPE_FP32\",\"dims\":[\"1x\"]}],"
                 "\"output\":[{\"name\":\"y\",\"data_type\":\"TYPE_FP32\",\"dims\":[1]}]}",
                 "dim 0 is not a size");
    expect_error("{\"input\":[{\"name\":\"x\",\"data_type\":\"TYPE_FP32\","
                 "\"dims\":[1,1,1,1,1,1,1,1,1]}],"
                 "\"output\":[{\"name\":\"y\",\"data_type\":\"TYPE_FP32\",\"dims\":[1]}]}",
                 "has 9 dims");
    expect_error("{\"input\":{},\"output\":[]}", "'input' is not a list");
    expect_error("{\"name\":\"m\"}", "needs the model's inputs and outputs");
    expect_error("{\"max_batch_size\":-1," IO "}", "max_batch_size");
}

Test(triton_config, not_json) {
    expect_error("", "not a JSON object");
    expect_error("[1,2]", "not a JSON object");
    expect_error("{\"name\":\"m\",\"input\":[", "not a JSON object");
    expect_error("{\"name\":\"m\"} trailing", "not a JSON object");
}

Test(triton_config, dtypes_both_ways) {
    for (int t = TRITONSERVER_TYPE_BOOL; t <= TRITONSERVER_TYPE_BF16; t++) {
        plx_dtype d = tpx_dtype_from_triton((TRITONSERVER_DataType)t);
        if (t == TRITONSERVER_TYPE_BYTES) {
            cr_expect(eq(int, d, PLX_DTYPE_INVALID));
            continue;
        }
        cr_expect(ne(int, d, PLX_DTYPE_INVALID), "type %d", t);
        cr_expect(eq(int, tpx_dtype_to_triton(d), t));
    }
    cr_expect(eq(int, tpx_dtype_to_triton(PLX_DTYPE_FLOAT8E4M3FN), TRITONSERVER_TYPE_INVALID));
    cr_expect(eq(str, (char *)tpx_triton_type_name(TRITONSERVER_TYPE_FP32), "FP32"));
    cr_expect(eq(str, (char *)tpx_triton_type_name((TRITONSERVER_DataType)99), "INVALID"));
}
