/* The model front end (plexus/model.h): the format chosen by the file
 * name's extension or by name, unknown formats, formats not built in,
 * missing files, the list of formats, and `plexus run` on a format that is
 * not built in. Built with -DPLEXUS_HAVE_ONNX when the ONNX importer is:
 * the expectations follow what the build has. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <plexus/model.h>

#define ADD_INT32 ONNX_TEST_DIR "/add_int32.onnx"

/* A copy of add_int32.onnx under the name `suffix` ends with, in a temporary
 * directory; returns the malloc'd path (remove with drop_copy). */
static char *copy_model(const char *suffix) {
    char dir[] = "/tmp/plexus_test_model_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    size_t len = strlen(dir) + strlen(suffix) + 8;
    char *path = malloc(len);
    cr_assert_not_null(path);
    snprintf(path, len, "%s/model%s", dir, suffix);
    FILE *in = fopen(ADD_INT32, "rb");
    FILE *out = fopen(path, "wb");
    cr_assert(in && out);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
        cr_assert_eq(fwrite(buf, 1, n, out), n);
    }
    fclose(in);
    cr_assert_eq(fclose(out), 0);
    return path;
}

static void drop_copy(char *path) {
    unlink(path);
    *strrchr(path, '/') = '\0';
    rmdir(path);
    free(path);
}

/* Opens `path` expecting failure with `code` and a message containing
 * every one of the NULL-terminated strings. */
static void expect_failure(const char *path, const plx_model_options *o, plx_status_code code,
                           const char *const *parts) {
    plx_model *m = (plx_model *)1;
    plx_status st = plx_model_open(path, o, &m);
    cr_assert_not_null(st, "%s opened", path);
    cr_expect_null(m);
    const char *msg = plx_status_get_message(st);
    cr_expect_eq(plx_status_get_code(st), code, "%s: %s", plx_status_code_name(
                 plx_status_get_code(st)), msg);
    for (; *parts; parts++) {
        cr_expect(strstr(msg, *parts) != NULL, "'%s' not in: %s", *parts, msg);
    }
    plx_status_free(st);
}

Test(model, unknown_extension) {
    char *path = copy_model(".bin");
    const char *parts[] = {path, "cannot tell the model's format", "plx_model_options.format",
                           NULL};
    expect_failure(path, NULL, PLX_INVALID_ARGUMENT, parts);
    drop_copy(path);
}

Test(model, unknown_format_name) {
    plx_model_options o;
    plx_model_options_init(&o);
    o.format = "tflite";
    const char *parts[] = {ADD_INT32, "unknown model format 'tflite'", NULL};
    expect_failure(ADD_INT32, &o, PLX_INVALID_ARGUMENT, parts);
}

Test(model, options_too_small) {
    plx_model_options o;
    plx_model_options_init(&o);
    o.struct_size = 4;
    const char *parts[] = {ADD_INT32, "struct_size 4 is not the size of any version", NULL};
    expect_failure(ADD_INT32, &o, PLX_INVALID_ARGUMENT, parts);
}

Test(model, null_arguments) {
    plx_status st = plx_model_open(NULL, NULL, NULL);
    cr_expect_eq(plx_status_get_code(st), PLX_INVALID_ARGUMENT);
    plx_status_free(st);
    plx_model *m = NULL;
    plx_model_destroy(&m);
    plx_model_destroy(NULL);
    cr_expect_null(plx_model_format(NULL));
    cr_expect_eq(plx_model_input_count(NULL), 0);
    cr_expect_null(plx_model_output(NULL, 0));
}

#ifdef PLEXUS_HAVE_ONNX

Test(model, formats_listed) {
    cr_assert_eq(plx_model_format_count(), 1);
    cr_expect_str_eq(plx_model_format_name(0), "onnx");
    cr_expect_null(plx_model_format_name(1));
}

/* add_int32.onnx: a, b: int32 [4] -> Add -> c. */
static void check_add_int32(plx_model *m) {
    cr_expect_str_eq(plx_model_format(m), "onnx");
    cr_assert_not_null(plx_model_network(m));
    cr_assert_eq(plx_model_input_count(m), 2);
    cr_expect_str_eq(plx_model_input(m, 0)->name, "a");
    cr_expect_str_eq(plx_model_input(m, 1)->name, "b");
    cr_expect_eq(plx_model_input(m, 1)->binding_id, 1);
    cr_expect_eq(plx_model_input(m, 0)->info.dtype, PLX_DTYPE_INT32);
    cr_expect_null(plx_model_input(m, 2));
    cr_assert_eq(plx_model_output_count(m), 1);
    cr_expect_str_eq(plx_model_output(m, 0)->name, "c");
    plx_model_facts f;
    plx_model_get_facts(m, &f);
    cr_expect_str_eq(f.format, "onnx");
    cr_expect_str_eq(f.version_name, "IR version");
    cr_expect_gt(f.version, 0);
    cr_expect_gt(f.opset, 0);
    cr_expect_eq(f.node_count, 1);
}

Test(model, by_extension) {
    plx_model *m = NULL;
    plx_status st = plx_model_open(ADD_INT32, NULL, &m);
    cr_assert_null(st, "%s", plx_status_get_message(st));
    check_add_int32(m);
    plx_model_destroy(&m);
    cr_expect_null(m);
}

Test(model, extension_case_insensitive) {
    char *path = copy_model(".ONNX");
    plx_model *m = NULL;
    plx_status st = plx_model_open(path, NULL, &m);
    cr_assert_null(st, "%s", plx_status_get_message(st));
    check_add_int32(m);
    plx_model_destroy(&m);
    drop_copy(path);
}

Test(model, by_format_name) {
    char *path = copy_model(".bin");
    plx_model_options o;
    plx_model_options_init(&o);
    o.format = "onnx";
    plx_model *m = NULL;
    plx_status st = plx_model_open(path, &o, &m);
    cr_assert_null(st, "%s", plx_status_get_message(st));
    check_add_int32(m);
    plx_model_destroy(&m);
    drop_copy(path);
}

Test(model, shapes_pass_through) {
    plx_model_input_shape shape = {.name = "x", .dims = {3, 4}, .rank = 2};
    plx_model_options o;
    plx_model_options_init(&o);
    o.shapes = &shape;
    o.shape_count = 1;
    plx_model *m = NULL;
    plx_status st = plx_model_open(ONNX_TEST_DIR "/dynamic_batch.onnx", &o, &m);
    cr_assert_null(st, "%s", plx_status_get_message(st));
    cr_expect_eq(plx_model_input(m, 0)->info.dims[0], 3);
    plx_model_destroy(&m);
}

/* Data shapes fill the open dims; a struct_size that ends where the
 * options ended before data_shapes is accepted (the new fields read as
 * none). */
Test(model, data_shapes_pass_through) {
    plx_model_input_shape data = {.name = "x", .dims = {5, 4}, .rank = 2};
    plx_model_options o;
    plx_model_options_init(&o);
    o.data_shapes = &data;
    o.data_shape_count = 1;
    plx_model *m = NULL;
    plx_status st = plx_model_open(ONNX_TEST_DIR "/dynamic_batch.onnx", &o, &m);
    cr_assert_null(st, "%s", plx_status_get_message(st));
    cr_expect_eq(plx_model_input(m, 0)->info.dims[0], 5);
    plx_model_destroy(&m);

    plx_model_input_shape shape = {.name = "x", .dims = {3, 4}, .rank = 2};
    o.shapes = &shape;
    o.shape_count = 1;
    o.struct_size = (uint32_t)offsetof(plx_model_options, data_shapes);
    st = plx_model_open(ONNX_TEST_DIR "/dynamic_batch.onnx", &o, &m);
    cr_assert_null(st, "%s", plx_status_get_message(st));
    cr_expect_eq(plx_model_input(m, 0)->info.dims[0], 3);
    plx_model_destroy(&m);

    /* A size between two versions is no version's. */
    o.struct_size = (uint32_t)offsetof(plx_model_options, data_shapes) + 4;
    const char *parts[] = {"struct_size", "not the size of any version", NULL};
    expect_failure(ONNX_TEST_DIR "/dynamic_batch.onnx", &o, PLX_INVALID_ARGUMENT, parts);
}

/* A failed import names, in the report, the graph inputs whose values it
 * needed (reshape_by_input.onnx reshapes to its input `shape`; in
 * slice_of_big.onnx the target is a slice of `big`); frozen, the import
 * goes on. A later call empties the report; a struct_size that ends
 * before `report` fills none. */
Test(model, report_names_inputs_needed_at_import) {
    plx_model_import_report report = {0};
    plx_model_options o;
    plx_model_options_init(&o);
    o.report = &report;
    plx_model *m = NULL;
    plx_status st = plx_model_open(ONNX_TEST_DIR "/reshape_by_input.onnx", &o, &m);
    cr_assert_not_null(st);
    plx_status_free(st);
    cr_assert(eq(sz, report.value_input_count, 1));
    cr_expect(eq(str, report.value_inputs[0], "shape"));
    st = plx_model_open(ONNX_TEST_DIR "/slice_of_big.onnx", &o, &m);
    cr_assert_not_null(st);
    plx_status_free(st);
    cr_assert(eq(sz, report.value_input_count, 1), "emptied, then filled again");
    cr_expect(eq(str, report.value_inputs[0], "big"));

    static const int64_t to_3x2[2] = {3, 2};
    plx_model_constant_input k = {.name = "shape", .info = {.dtype = PLX_DTYPE_INT64, .rank = 1,
                                                           .dims = {2}}, .data = to_3x2};
    o.constants = &k;
    o.constant_count = 1;
    st = plx_model_open(ONNX_TEST_DIR "/reshape_by_input.onnx", &o, &m);
    cr_assert_null(st, "%s", plx_status_get_message(st));
    cr_expect(eq(sz, report.value_input_count, 0), "a success leaves it empty");
    cr_expect(eq(i64, plx_model_output(m, 0)->info.dims[0], 3));
    plx_model_destroy(&m);

    /* Another reason to fail names no input; nor does an older struct. */
    st = plx_model_open(ONNX_TEST_DIR "/unsupported.onnx", &o, &m);
    cr_assert_not_null(st);
    plx_status_free(st);
    cr_expect(eq(sz, report.value_input_count, 0));
    o.constant_count = 0;
    o.struct_size = (uint32_t)offsetof(plx_model_options, report);
    st = plx_model_open(ONNX_TEST_DIR "/reshape_by_input.onnx", &o, &m);
    cr_assert_not_null(st);
    plx_status_free(st);
    cr_expect(eq(sz, report.value_input_count, 0));
    plx_model_import_report_clear(&report);
    plx_model_import_report_clear(NULL);
}

/* branch_on_energy.onnx tests whether its input is loud (If on
 * ReduceSum(x * x) > 1): the report names both the input and the computed
 * condition; `outputs` computes the condition alone, and a constant for
 * it freezes the branch. */
Test(model, outputs_and_computed_tensors) {
    const char *path = ONNX_TEST_DIR "/branch_on_energy.onnx";
    plx_model_input_shape x = {.name = "x", .dims = {4}, .rank = 1};
    plx_model_import_report report = {0};
    plx_model_options o;
    plx_model_options_init(&o);
    o.shapes = &x;
    o.shape_count = 1;
    o.report = &report;
    plx_model *m = NULL;
    plx_status st = plx_model_open(path, &o, &m);
    cr_assert_not_null(st);
    plx_status_free(st);
    cr_assert(eq(sz, report.value_input_count, 1));
    cr_expect(eq(str, report.value_inputs[0], "x"));
    cr_assert(eq(sz, report.value_tensor_count, 1));
    cr_expect(eq(str, report.value_tensors[0], "loud"));

    const char *outputs[] = {"loud", "energy"};
    o.outputs = outputs;
    o.output_count = 2;
    st = plx_model_open(path, &o, &m);
    cr_assert_null(st, "%s", plx_status_get_message(st));
    cr_assert(eq(sz, plx_model_output_count(m), 2));
    cr_expect(eq(str, (char *)plx_model_output(m, 0)->name, "loud"));
    cr_expect(eq(int, (int)plx_model_output(m, 0)->info.dtype, (int)PLX_DTYPE_BOOL));
    cr_expect(eq(sz, plx_model_input_count(m), 1));
    plx_model_facts f;
    plx_model_get_facts(m, &f);
    cr_expect(eq(sz, f.node_count, 4), "every node of the file, the If not imported");
    plx_model_destroy(&m);

    static const uint8_t yes = 1;
    plx_model_constant_input loud = {.name = "loud", .info = {.dtype = PLX_DTYPE_BOOL},
                                     .data = &yes};
    o.outputs = NULL;
    o.output_count = 0;
    o.constants = &loud;
    o.constant_count = 1;
    st = plx_model_open(path, &o, &m);
    cr_assert_null(st, "%s", plx_status_get_message(st));
    cr_expect(eq(sz, plx_model_input_count(m), 1), "x feeds the branch");
    cr_expect(eq(str, (char *)plx_model_output(m, 0)->name, "y"));
    /* input, relu, output: the condition's nodes are not imported. */
    cr_expect(eq(sz, plx_network_layer_count(plx_model_network(m)), 3));
    plx_model_destroy(&m);

    /* Names that are no tensor of the main graph. */
    loud.name = "t"; /* inside the then branch */
    const char *p1[] = {"'t'", "not an input of the model nor a tensor a node computes", NULL};
    expect_failure(path, &o, PLX_INVALID_ARGUMENT, p1);
    o.constant_count = 0;
    const char *bad[] = {"nosuch"};
    o.outputs = bad;
    o.output_count = 1;
    const char *p2[] = {"'nosuch'", "no node of the main graph computes", NULL};
    expect_failure(path, &o, PLX_INVALID_ARGUMENT, p2);
    const char *twice[] = {"loud", "loud"};
    o.outputs = twice;
    o.output_count = 2;
    const char *p3[] = {"'loud' is asked for twice", NULL};
    expect_failure(path, &o, PLX_INVALID_ARGUMENT, p3);
    plx_model_import_report_clear(&report);
}

Test(model, missing_file) {
    const char *parts[] = {ONNX_TEST_DIR "/no_such_model.onnx", NULL};
    expect_failure(ONNX_TEST_DIR "/no_such_model.onnx", NULL, PLX_IO_ERROR, parts);
}

#else

Test(model, formats_listed) {
    cr_expect_eq(plx_model_format_count(), 0);
    cr_expect_null(plx_model_format_name(0));
}

Test(model, onnx_not_built_in) {
    const char *parts[] = {ADD_INT32, "the onnx format is not built into this libplexus",
                           "formats built in: none", NULL};
    expect_failure(ADD_INT32, NULL, PLX_UNSUPPORTED, parts);
    plx_model_options o;
    plx_model_options_init(&o);
    o.format = "onnx";
    char *path = copy_model(".bin");
    const char *named[] = {path, "the onnx format is not built into", NULL};
    expect_failure(path, &o, PLX_UNSUPPORTED, named);
    drop_copy(path);
}

/* `plexus run` says so too, naming the file, and fails. */
Test(model, cli_onnx_not_built_in) {
    FILE *p = popen(PLEXUS_EXE " run --no-env --no-default-dir --backend-path " CPU_REF_DIR " " ADD_INT32
                      " 2>&1", "r");
    cr_assert_not_null(p);
    char out[4096] = "";
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    bool failed = WIFEXITED(status) && WEXITSTATUS(status) != 0;
    cr_expect(failed, "status %d: %s", status, out);
    cr_expect(strstr(out, "plexus run: " ADD_INT32 ": the onnx format is not built into") != NULL,
              "%s", out);
}

#endif
