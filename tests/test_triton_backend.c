/* libtriton_plexus.so's version check (triton/backend.c,
 * TRITONBACKEND_Initialize): loaded as Triton loads it, into this program,
 * which plays the server's part by defining the Triton API functions that
 * the check calls (exported, so the library binds to them; the library's
 * other Triton functions stay unbound, as it is opened with lazy binding
 * and they are never called here). A server whose backend API has the
 * major version 1 and a minor of at least 19 is accepted; any other is
 * refused with UNSUPPORTED and a message giving both versions. The server
 * itself is tested by tests/triton/test_server.py. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "triton_api.h"

struct TRITONSERVER_Error {
    TRITONSERVER_Error_Code code;
    char *message;
};

static uint32_t server_major, server_minor;

TRITONSERVER_Error *TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char *msg) {
    TRITONSERVER_Error *e = malloc(sizeof *e);
    cr_assert(not(zero(ptr, e)));
    e->code = code;
    e->message = strdup(msg);
    return e;
}

void TRITONSERVER_ErrorDelete(TRITONSERVER_Error *error) {
    if (error) {
        free(error->message);
        free(error);
    }
}

TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error *error) {
    return error->code;
}

const char *TRITONSERVER_ErrorMessage(TRITONSERVER_Error *error) {
    return error->message;
}

bool TRITONSERVER_LogIsEnabled(TRITONSERVER_LogLevel level) {
    (void)level;
    return false;
}

TRITONSERVER_Error *TRITONSERVER_LogMessage(TRITONSERVER_LogLevel level, const char *filename,
                                            const int line, const char *msg) {
    (void)level;
    (void)filename;
    (void)line;
    (void)msg;
    return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ApiVersion(uint32_t *major, uint32_t *minor) {
    *major = server_major;
    *minor = server_minor;
    return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_BackendName(TRITONBACKEND_Backend *backend, const char **name) {
    (void)backend;
    *name = "plexus";
    return NULL;
}

typedef TRITONSERVER_Error *(*initialize_fn)(TRITONBACKEND_Backend *);

/* TRITONBACKEND_Initialize's answer to a server of API major.minor. */
static TRITONSERVER_Error *initialize(uint32_t major, uint32_t minor) {
    void *lib = dlopen(TRITON_BACKEND_MODULE, RTLD_LAZY | RTLD_LOCAL);
    cr_assert(not(zero(ptr, lib)), "%s", dlerror());
    initialize_fn init = (initialize_fn)(uintptr_t)dlsym(lib, "TRITONBACKEND_Initialize");
    cr_assert(not(zero(ptr, (void *)(uintptr_t)init)));
    server_major = major;
    server_minor = minor;
    /* The backend handle is the server's; the check only passes it back. */
    TRITONSERVER_Error *e = init((TRITONBACKEND_Backend *)&server_major);
    dlclose(lib);
    return e;
}

Test(triton_backend, accepts_api_1_19_and_later_minors) {
    cr_expect(zero(ptr, initialize(1, 19)));
    cr_expect(zero(ptr, initialize(1, 27)));
}

Test(triton_backend, refuses_older_minor_and_other_major) {
    const uint32_t versions[][2] = {{1, 18}, {1, 0}, {2, 19}, {0, 30}};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        TRITONSERVER_Error *e = initialize(versions[i][0], versions[i][1]);
        cr_assert(not(zero(ptr, e)), "API %u.%u accepted", versions[i][0], versions[i][1]);
        cr_expect(eq(int, e->code, TRITONSERVER_ERROR_UNSUPPORTED));
        char server[32];
        snprintf(server, sizeof server, "this server has %u.%u", versions[i][0], versions[i][1]);
        cr_expect(not(zero(ptr, strstr(e->message, server))), "%s", e->message);
        cr_expect(not(zero(ptr, strstr(e->message, "needs Triton's backend API 1.19"))), "%s",
                  e->message);
        TRITONSERVER_ErrorDelete(e);
    }
}
