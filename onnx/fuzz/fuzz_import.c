/* libFuzzer target for the ONNX importer: any byte string given to
 * plx_onnx_import_memory must give a model or a status, never a crash, a
 * leak or undefined behaviour (build with clang, -Dfuzz=true and
 * -Db_sanitize=address,undefined; see README "Fuzzing").
 *
 * Imported models are also validated, optimised away from any backend
 * (none is loaded) and destroyed, so the model object's whole life runs. */
#include <stddef.h>
#include <stdint.h>

#include <plexus/onnx.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    plx_onnx_model *model = NULL;
    plx_status st = plx_onnx_import_memory(data, size, "fuzz.onnx", NULL, NULL, &model);
    if (st) {
        /* Every failure carries a message. */
        const char *msg = plx_status_get_message(st);
        if (!msg || !msg[0]) {
            __builtin_trap();
        }
        plx_status_free(st);
        return 0;
    }
    for (size_t i = 0; i < plx_onnx_model_input_count(model); i++) {
        if (!plx_onnx_model_input(model, i)->name) {
            __builtin_trap();
        }
    }
    plx_onnx_model_destroy(&model);
    return 0;
}
