/* Status objects: NULL is success, anything else carries a code and a message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plexus/model.h>

#include "internal.h"

struct plx_status_object {
    plx_status_code code;
    bool is_static;
    char *message;
};

/* Returned when a status cannot be allocated, so that failures are never
 * turned into success by an out-of-memory condition. Freeing it is a no-op. */
static char oom_text[] = "out of memory (while creating an error status)";
static struct plx_status_object oom_status = {PLX_OUT_OF_MEMORY, true, oom_text};

plx_status plxi_status_vcreate(plx_status_code code, const char *fmt, va_list ap) {
    if (code == PLX_OK) {
        code = PLX_INTERNAL; /* a status object always means failure */
    }
    struct plx_status_object *s = malloc(sizeof *s);
    if (!s) {
        return &oom_status;
    }
    s->code = code;
    s->is_static = false;
    s->message = plxi_vasprintf(fmt, ap);
    if (!s->message) {
        free(s);
        return &oom_status;
    }
    return s;
}

plx_status plxi_status_create(plx_status_code code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    plx_status s = plxi_status_vcreate(code, fmt, ap);
    va_end(ap);
    return s;
}

PLX_API plx_status_code plx_status_get_code(plx_status status) {
    return status ? status->code : PLX_OK;
}

PLX_API const char *plx_status_get_message(plx_status status) {
    return status ? status->message : "OK";
}

PLX_API void plx_status_free(plx_status status) {
    if (status && !status->is_static) {
        free(status->message);
        free(status);
    }
}

PLX_API const char *plx_status_code_name(plx_status_code code) {
    static const char *const names[] = {
        [PLX_OK] = "OK",
        [PLX_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
        [PLX_NOT_FOUND] = "NOT_FOUND",
        [PLX_ALREADY_EXISTS] = "ALREADY_EXISTS",
        [PLX_UNAVAILABLE] = "UNAVAILABLE",
        [PLX_UNSUPPORTED] = "UNSUPPORTED",
        [PLX_OUT_OF_MEMORY] = "OUT_OF_MEMORY",
        [PLX_INCOMPATIBLE] = "INCOMPATIBLE",
        [PLX_IO_ERROR] = "IO_ERROR",
        [PLX_FAILED_PRECONDITION] = "FAILED_PRECONDITION",
        [PLX_INTERNAL] = "INTERNAL",
    };
    if ((unsigned)code < sizeof names / sizeof names[0] && names[code]) {
        return names[code];
    }
    return "UNKNOWN";
}

/* In the core library (not the model front end) because the importers,
 * built apart from the front end, fill and empty the report too. */
PLX_API void plx_model_import_report_clear(plx_model_import_report *report) {
    if (!report) {
        return;
    }
    for (size_t i = 0; i < report->value_input_count; i++) {
        free(report->value_inputs[i]);
    }
    free(report->value_inputs);
    for (size_t i = 0; i < report->value_tensor_count; i++) {
        free(report->value_tensors[i]);
    }
    free(report->value_tensors);
    report->value_inputs = NULL;
    report->value_input_count = 0;
    report->value_tensors = NULL;
    report->value_tensor_count = 0;
}
