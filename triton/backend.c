/* libtriton_plexus.so: Plexus as a backend of Triton Inference Server
 * (docs/triton.md). Triton loads the model's file (model.onnx) from its
 * model repository through the Plexus runtime, with the Plexus options of
 * config.pbtxt's parameters, and calls ModelInstanceExecute with the
 * requests its scheduler gathered.
 *
 * Per Triton model: one plx_runtime (the backends, their options and
 * threads). Per model instance: one plx_dynamic_model on that runtime,
 * whose specialisations (one loaded network per set of input shapes: per
 * batch size) each execute in the network's own working memory, so the
 * instances of a model run at the same time, each in memory of its own.
 * Specialisations are made under the model's lock, one at a time, so the
 * runtime never loads two networks at once; a request whose shapes were
 * seen before only looks its network up.
 *
 * An execution gathers the requests of one call whose inputs have the
 * same shapes apart from the batch dim (all of them, for the dynamic
 * batcher's batches) into the instance's input buffers, runs the
 * specialisation for the summed batch once, and cuts its outputs into one
 * response per request. A request the model cannot take (an input
 * missing, unknown, of another datatype or shape) gets an INVALID_ARG
 * error response naming the input, and the others of the call go on. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <plexus/dynamic.h>
#include <plexus/model.h>
#include <plexus/network.h>
#include <plexus/plexus.h>

#include "config.h"
#include "triton_api.h"

/* Buffers handed to Plexus are aligned so that backends import them
 * without a staged copy. */
#define BUFFER_ALIGNMENT 64

typedef struct model_state {
    tpx_config config;
    char *path; /* <repository>/<version>/<model file> */
    plx_runtime *runtime;
    /* Held while an instance acquires a specialisation (which may load a
     * network on the shared runtime). */
    pthread_mutex_t acquire_lock;
} model_state;

/* A growable buffer, BUFFER_ALIGNMENT-aligned. */
typedef struct buffer {
    void *data;
    size_t capacity;
} buffer;

typedef struct instance_state {
    model_state *model;
    TRITONBACKEND_ModelInstance *instance;
    char *name;
    plx_dynamic_model *dynamic;
    /* Per config input or output, in config order. */
    buffer *input_buffers;
    buffer *output_buffers;
    plx_model_input_shape *shapes;
    plx_tensor_binding *input_bindings;
    plx_tensor_binding *output_bindings;
    /* Per request of the current call (grown to the largest call). */
    size_t request_capacity;
    plx_status *request_errors;
    uint64_t *batch_sizes;
    bool *done;
    size_t *group;
} instance_state;

/* ------------------------------------------------------------------------ */
/* Errors and logging                                                         */
/* ------------------------------------------------------------------------ */

static TRITONSERVER_Error_Code triton_code(plx_status_code code) {
    switch (code) {
    case PLX_INVALID_ARGUMENT:
        return TRITONSERVER_ERROR_INVALID_ARG;
    case PLX_NOT_FOUND:
        return TRITONSERVER_ERROR_NOT_FOUND;
    case PLX_ALREADY_EXISTS:
        return TRITONSERVER_ERROR_ALREADY_EXISTS;
    case PLX_UNAVAILABLE:
    case PLX_OUT_OF_MEMORY:
        return TRITONSERVER_ERROR_UNAVAILABLE;
    case PLX_UNSUPPORTED:
    case PLX_INCOMPATIBLE:
        return TRITONSERVER_ERROR_UNSUPPORTED;
    default:
        return TRITONSERVER_ERROR_INTERNAL;
    }
}

/* A Triton error for a Plexus status, which it frees; NULL for NULL. */
static TRITONSERVER_Error *to_triton(plx_status status) {
    if (!status) {
        return NULL;
    }
    TRITONSERVER_Error *e =
        TRITONSERVER_ErrorNew(triton_code(plx_status_get_code(status)), plx_status_get_message(status));
    plx_status_free(status);
    return e;
}

/* A Plexus status for a Triton error, which it deletes; NULL for NULL. */
static plx_status from_triton(TRITONSERVER_Error *error, const char *what) {
    if (!error) {
        return NULL;
    }
    plx_status_code code;
    switch (TRITONSERVER_ErrorCode(error)) {
    case TRITONSERVER_ERROR_INVALID_ARG:
        code = PLX_INVALID_ARGUMENT;
        break;
    case TRITONSERVER_ERROR_NOT_FOUND:
        code = PLX_NOT_FOUND;
        break;
    case TRITONSERVER_ERROR_UNSUPPORTED:
        code = PLX_UNSUPPORTED;
        break;
    case TRITONSERVER_ERROR_UNAVAILABLE:
        code = PLX_UNAVAILABLE;
        break;
    default:
        code = PLX_INTERNAL;
        break;
    }
    plx_status st = plx_status_create(code, "%s: %s", what, TRITONSERVER_ErrorMessage(error));
    TRITONSERVER_ErrorDelete(error);
    return st;
}

/* Logs at `line` of this file: log_line(level, format, ...). */
#define log_line(level, ...) log_at(level, __LINE__, __VA_ARGS__)

static void log_at(TRITONSERVER_LogLevel level, int line, const char *fmt, ...) PLX_PRINTF(3, 4);

static void log_at(TRITONSERVER_LogLevel level, int line, const char *fmt, ...) {
    if (!TRITONSERVER_LogIsEnabled(level)) {
        return;
    }
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    TRITONSERVER_Error *e = TRITONSERVER_LogMessage(level, __FILE__, line, text);
    if (e) {
        TRITONSERVER_ErrorDelete(e);
    }
}

/* The runtime's log lines go to Triton's log. */
static void runtime_log(void *user_data, plx_log_level level, const char *source,
                        const char *message) {
    const model_state *m = user_data;
    TRITONSERVER_LogLevel l = level == PLX_LOG_ERROR  ? TRITONSERVER_LOG_ERROR
                              : level == PLX_LOG_WARN ? TRITONSERVER_LOG_WARN
                              : level == PLX_LOG_INFO ? TRITONSERVER_LOG_INFO
                                                      : TRITONSERVER_LOG_VERBOSE;
    log_line(l, "plexus model '%s' [%s]: %s", m->config.name, source, message);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *dtype_name(plx_dtype dtype) {
    return tpx_triton_type_name(tpx_dtype_to_triton(dtype));
}

/* "[1,1,8,8]" into `out`. */
static const char *dims_text(const int64_t *dims, uint32_t rank, char *out, size_t size) {
    size_t used = (size_t)snprintf(out, size, "[");
    for (uint32_t i = 0; i < rank && used < size; i++) {
        used += (size_t)snprintf(out + used, size - used, "%s%lld", i ? "," : "",
                                 (long long)dims[i]);
    }
    if (used < size) {
        snprintf(out + used, size - used, "]");
    }
    return out;
}

/* ------------------------------------------------------------------------ */
/* The backend                                                                */
/* ------------------------------------------------------------------------ */

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend) {
    const char *name = "plexus";
    TRITONSERVER_Error *e = TRITONBACKEND_BackendName(backend, &name);
    if (e) {
        return e;
    }
    uint32_t major = 0, minor = 0;
    e = TRITONBACKEND_ApiVersion(&major, &minor);
    if (e) {
        return e;
    }
    if (major != TRITONBACKEND_API_VERSION_MAJOR || minor < TRITONBACKEND_API_VERSION_MINOR) {
        char text[256];
        snprintf(text, sizeof text,
                 "backend '%s' (Plexus %s) needs Triton's backend API %d.%d or a later 1.x; "
                 "this server has %u.%u",
                 name, plx_version_string(), TRITONBACKEND_API_VERSION_MAJOR,
                 TRITONBACKEND_API_VERSION_MINOR, major, minor);
        return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED, text);
    }
    log_line(TRITONSERVER_LOG_INFO, "backend '%s': Plexus %s, Triton backend API %u.%u", name,
             plx_version_string(), major, minor);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Models                                                                     */
/* ------------------------------------------------------------------------ */

/* Each backend the parameters name must be there and available, and each
 * backend option must name one of the runtime's backends. */
static plx_status check_backends(const model_state *m) {
    const tpx_config *c = &m->config;
    const plx_runtime *rt = m->runtime;
    char found[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < plx_runtime_backend_count(rt) && used < sizeof found; i++) {
        used += (size_t)snprintf(found + used, sizeof found - used, "%s%s", i ? ", " : "",
                                 plx_runtime_backend(rt, i)->id);
    }
    for (size_t i = 0; i < c->backend_count + c->backend_option_count; i++) {
        const char *id = i < c->backend_count ? c->backends[i]
                                              : c->backend_options[i - c->backend_count].backend_id;
        const char *param = i < c->backend_count ? "backends" : "backend_options";
        const plx_backend_info *b = plx_runtime_find_backend(rt, id);
        if (b && !b->available && i < c->backend_count) {
            return plx_status_create(PLX_UNAVAILABLE,
                                     "model '%s': parameter %s: backend '%s' is not available: %s",
                                     c->name, param, id, b->reason ? b->reason : "no reason given");
        }
        if (b) {
            continue;
        }
        /* A rejected plug-in says why (an option key it does not declare). */
        for (size_t r = 0; r < plx_runtime_rejection_count(rt); r++) {
            const plx_rejection *rej = plx_runtime_rejection(rt, r);
            if (rej->id && strcmp(rej->id, id) == 0) {
                return plx_status_create(PLX_INVALID_ARGUMENT,
                                         "model '%s': parameter %s: backend '%s' was rejected: %s",
                                         c->name, param, id, rej->reason);
            }
        }
        return plx_status_create(PLX_NOT_FOUND,
                                 "model '%s': parameter %s: no backend '%s' (found: %s)", c->name,
                                 param, id, used ? found : "none");
    }
    return NULL;
}

static void model_state_free(model_state *m) {
    if (!m) {
        return;
    }
    plx_runtime_destroy(&m->runtime);
    pthread_mutex_destroy(&m->acquire_lock);
    tpx_config_free(&m->config);
    free(m->path);
    free(m);
}

static plx_status model_read_config(TRITONBACKEND_Model *model, model_state *m) {
    TRITONSERVER_Message *message = NULL;
    plx_status st = from_triton(TRITONBACKEND_ModelConfig(model, 1, &message), "model config");
    const char *json = NULL;
    size_t size = 0;
    if (!st) {
        st = from_triton(TRITONSERVER_MessageSerializeToJson(message, &json, &size),
                         "model config");
    }
    if (!st) {
        st = tpx_config_parse(json, size, &m->config);
    }
    if (message) {
        TRITONSERVER_Error *e = TRITONSERVER_MessageDelete(message);
        if (e) {
            TRITONSERVER_ErrorDelete(e);
        }
    }
    return st;
}

static plx_status model_find_file(TRITONBACKEND_Model *model, model_state *m) {
    TRITONBACKEND_ArtifactType type;
    const char *location = NULL;
    uint64_t version = 0;
    plx_status st = from_triton(TRITONBACKEND_ModelRepository(model, &type, &location),
                                "model repository");
    if (!st) {
        st = from_triton(TRITONBACKEND_ModelVersion(model, &version), "model version");
    }
    if (!st && type != TRITONBACKEND_ARTIFACT_FILESYSTEM) {
        st = plx_status_create(PLX_UNSUPPORTED,
                               "model '%s': the Plexus backend reads models from a file system "
                               "repository only",
                               m->config.name);
    }
    if (!st && asprintf(&m->path, "%s/%llu/%s", location, (unsigned long long)version,
                        m->config.model_filename) < 0) {
        m->path = NULL;
        st = plx_status_create(PLX_OUT_OF_MEMORY, "model '%s': out of memory", m->config.name);
    }
    return st;
}

/* Triton loads models from several threads at once: each model's runtime
 * is created on the thread that loads it. */
static plx_status model_create_runtime(model_state *m) {
    const tpx_config *c = &m->config;
    plx_runtime_options ro;
    plx_runtime_options_init(&ro);
    ro.search_paths = (const char *const *)c->search_paths;
    ro.search_path_count = c->search_path_count;
    ro.backend_options = c->backend_options;
    ro.backend_option_count = c->backend_option_count;
    ro.intra_op_threads = c->threads;
    ro.log_fn = runtime_log;
    ro.log_user_data = m;
    plx_status st = plx_runtime_create(&ro, &m->runtime);
    return st ? st : check_backends(m);
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model) {
    model_state *m = calloc(1, sizeof *m);
    if (!m) {
        return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE, "out of memory");
    }
    if (pthread_mutex_init(&m->acquire_lock, NULL) != 0) {
        free(m);
        return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE, "cannot create a lock");
    }
    plx_status st = model_read_config(model, m);
    if (!st) {
        st = model_find_file(model, m);
    }
    if (!st) {
        st = model_create_runtime(m);
    }
    if (!st) {
        st = from_triton(TRITONBACKEND_ModelSetState(model, m), "model state");
    }
    if (st) {
        model_state_free(m);
        return to_triton(st);
    }
    log_line(TRITONSERVER_LOG_INFO, "model '%s': %s, max_batch_size %lld", m->config.name, m->path,
             (long long)m->config.max_batch_size);
    return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model) {
    void *state = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelState(model, &state);
    if (e) {
        return e;
    }
    model_state_free(state);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Instances                                                                  */
/* ------------------------------------------------------------------------ */

static bool buffer_reserve(buffer *b, size_t size) {
    if (b->capacity >= size && b->data) {
        return true;
    }
    size_t rounded = (size + BUFFER_ALIGNMENT - 1) / BUFFER_ALIGNMENT * BUFFER_ALIGNMENT;
    void *data = aligned_alloc(BUFFER_ALIGNMENT, rounded ? rounded : BUFFER_ALIGNMENT);
    if (!data) {
        return false;
    }
    free(b->data);
    b->data = data;
    b->capacity = rounded;
    return true;
}

static void instance_state_free(instance_state *s) {
    if (!s) {
        return;
    }
    plx_dynamic_model_destroy(&s->dynamic);
    const tpx_config *c = &s->model->config;
    for (size_t i = 0; s->input_buffers && i < c->input_count; i++) {
        free(s->input_buffers[i].data);
    }
    for (size_t i = 0; s->output_buffers && i < c->output_count; i++) {
        free(s->output_buffers[i].data);
    }
    free(s->input_buffers);
    free(s->output_buffers);
    free(s->shapes);
    free(s->input_bindings);
    free(s->output_bindings);
    for (size_t i = 0; s->request_errors && i < s->request_capacity; i++) {
        plx_status_free(s->request_errors[i]);
    }
    free(s->request_errors);
    free(s->batch_sizes);
    free(s->done);
    free(s->group);
    free(s->name);
    free(s);
}

static plx_status acquire(instance_state *s, const plx_dynamic_signature *signature,
                          plx_specialization **out) {
    pthread_mutex_lock(&s->model->acquire_lock);
    plx_status st = plx_dynamic_model_acquire(s->dynamic, signature, out);
    pthread_mutex_unlock(&s->model->acquire_lock);
    return st;
}

/* The index in `ios` of the one called `name`, or `count`. */
static size_t find_io(const tpx_io *ios, size_t count, const char *name) {
    size_t i = 0;
    while (i < count && strcmp(ios[i].name, name) != 0) {
        i++;
    }
    return i;
}

/* The tensor the model has must be the configuration's: its dtype, and
 * its dims where the configuration fixes them (after the batch dim when
 * max_batch_size > 0). */
static plx_status check_io(const model_state *m, const char *what, const tpx_io *io,
                           const plx_tensor_info *info) {
    uint32_t batch = m->config.max_batch_size > 0;
    char have[160], want[160];
    if (info->dtype != io->dtype) {
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "model '%s': %s '%s' is %s in config.pbtxt but %s in %s",
                                 m->config.name, what, io->name, dtype_name(io->dtype),
                                 dtype_name(info->dtype), m->path);
    }
    bool same = info->rank == io->rank + batch;
    for (uint32_t d = 0; same && d < io->rank; d++) {
        same = io->dims[d] == -1 || io->dims[d] == info->dims[d + batch];
    }
    if (!same) {
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "model '%s': %s '%s' has dims %s in config.pbtxt%s but shape %s "
                                 "in %s",
                                 m->config.name, what, io->name,
                                 dims_text(io->dims, io->rank, want, sizeof want),
                                 batch ? " after the batch dim (max_batch_size > 0)" : "",
                                 dims_text(info->dims, info->rank, have, sizeof have), m->path);
    }
    return NULL;
}

/* Loads the specialisation for a batch of `batch_size` (when
 * max_batch_size > 0; else for the configured shapes) when config.pbtxt
 * fixes every dim, and checks that the model's inputs and outputs are the
 * configuration's: a model the backends cannot run, or a configuration
 * that does not describe it, fails the load. */
static plx_status instance_warm_up(instance_state *s, int64_t batch_size) {
    const model_state *m = s->model;
    const tpx_config *c = &m->config;
    uint32_t batch = c->max_batch_size > 0;
    for (size_t i = 0; i < c->input_count; i++) {
        plx_model_input_shape *sh = &s->shapes[i];
        sh->name = c->inputs[i].name;
        sh->rank = c->inputs[i].rank + batch;
        sh->dims[0] = batch_size;
        for (uint32_t d = 0; d < c->inputs[i].rank; d++) {
            if (c->inputs[i].dims[d] < 0) {
                return NULL; /* checked at the first request of each shape */
            }
            sh->dims[d + batch] = c->inputs[i].dims[d];
        }
    }
    plx_dynamic_signature sig = {.shapes = s->shapes, .shape_count = c->input_count};
    plx_specialization *spec = NULL;
    plx_status st = acquire(s, &sig, &spec);
    if (st) {
        char what[64] = "";
        if (batch) {
            snprintf(what, sizeof what, " and a batch of %lld", (long long)batch_size);
        }
        plx_status wrapped = plx_status_create(plx_status_get_code(st),
                                               "model '%s': with the shapes of config.pbtxt%s: %s",
                                               c->name, what, plx_status_get_message(st));
        plx_status_free(st);
        return wrapped;
    }
    const plx_model *pm = plx_specialization_model(spec);
    for (size_t i = 0; !st && i < plx_model_input_count(pm); i++) {
        const plx_model_io *io = plx_model_input(pm, i);
        size_t k = find_io(c->inputs, c->input_count, io->name);
        st = k < c->input_count ? check_io(m, "input", &c->inputs[k], &io->info)
                                : plx_status_create(PLX_INVALID_ARGUMENT,
                                                    "model '%s': %s has input '%s', which "
                                                    "config.pbtxt does not list",
                                                    c->name, m->path, io->name);
    }
    for (size_t i = 0; !st && i < c->output_count; i++) {
        size_t k = 0;
        while (k < plx_model_output_count(pm) &&
               strcmp(plx_model_output(pm, k)->name, c->outputs[i].name) != 0) {
            k++;
        }
        st = k < plx_model_output_count(pm)
                 ? check_io(m, "output", &c->outputs[i], &plx_model_output(pm, k)->info)
                 : plx_status_create(PLX_INVALID_ARGUMENT,
                                     "model '%s': config.pbtxt lists output '%s', which %s does "
                                     "not have",
                                     c->name, c->outputs[i].name, m->path);
    }
    log_line(TRITONSERVER_LOG_INFO, "model '%s' instance '%s': loaded in %.1f ms", c->name,
             s->name, plx_specialization_time_ms(spec));
    plx_dynamic_model_release(s->dynamic, &spec);
    return st;
}

static plx_status instance_open(instance_state *s) {
    const model_state *m = s->model;
    const tpx_config *c = &m->config;
    plx_dynamic_options o;
    plx_dynamic_options_init(&o);
    o.optimize.backends = (const char *const *)c->backends;
    o.optimize.backend_count = c->backend_count;
    o.optimize.allow_fallback = c->fallback;
    o.cache_capacity = c->cache_capacity;
    plx_status st = plx_dynamic_model_open(m->runtime, m->path, &o, &s->dynamic);
    if (st) {
        return st;
    }
    s->input_buffers = calloc(c->input_count, sizeof *s->input_buffers);
    s->output_buffers = calloc(c->output_count, sizeof *s->output_buffers);
    s->shapes = calloc(c->input_count, sizeof *s->shapes);
    s->input_bindings = calloc(c->input_count, sizeof *s->input_bindings);
    s->output_bindings = calloc(c->output_count, sizeof *s->output_bindings);
    if (!s->input_buffers || !s->output_buffers || !s->shapes || !s->input_bindings ||
        !s->output_bindings) {
        return plx_status_create(PLX_OUT_OF_MEMORY, "model '%s': out of memory", c->name);
    }
    /* Request shapes are copied into s->shapes: their rank must fit. */
    for (size_t i = 0; i < c->input_count; i++) {
        if (c->inputs[i].rank + (c->max_batch_size > 0) > PLX_MAX_RANK) {
            return plx_status_create(PLX_INVALID_ARGUMENT,
                                     "model '%s': input '%s' has more than %d dims with the batch "
                                     "dim",
                                     c->name, c->inputs[i].name, PLX_MAX_RANK);
        }
    }
    /* A batch of 1, and the largest batch, which also proves that the
     * model's batch dim is open. */
    st = instance_warm_up(s, 1);
    if (!st && c->max_batch_size > 1) {
        st = instance_warm_up(s, c->max_batch_size);
    }
    return st;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance *instance) {
    TRITONBACKEND_Model *model = NULL;
    void *mstate = NULL;
    const char *name = NULL;
    TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
    plx_status st = from_triton(TRITONBACKEND_ModelInstanceModel(instance, &model), "instance");
    if (!st) {
        st = from_triton(TRITONBACKEND_ModelState(model, &mstate), "instance");
    }
    if (!st) {
        st = from_triton(TRITONBACKEND_ModelInstanceName(instance, &name), "instance");
    }
    if (!st) {
        st = from_triton(TRITONBACKEND_ModelInstanceKind(instance, &kind), "instance");
    }
    model_state *m = mstate;
    if (!st && kind == TRITONSERVER_INSTANCEGROUPKIND_GPU) {
        st = plx_status_create(PLX_UNSUPPORTED,
                               "model '%s' instance '%s': instance_group kind KIND_GPU: the "
                               "Plexus backend places layers on devices by its backends "
                               "parameter (for example gpu_opencl); use KIND_CPU",
                               m->config.name, name);
    }
    if (st) {
        return to_triton(st);
    }
    instance_state *s = calloc(1, sizeof *s);
    if (!s) {
        return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE, "out of memory");
    }
    s->model = m;
    s->instance = instance;
    s->name = strdup(name);
    st = s->name ? instance_open(s)
                 : plx_status_create(PLX_OUT_OF_MEMORY, "model '%s': out of memory",
                                     m->config.name);
    if (!st) {
        st = from_triton(TRITONBACKEND_ModelInstanceSetState(instance, s), "instance state");
    }
    if (st) {
        instance_state_free(s);
        return to_triton(st);
    }
    return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance *instance) {
    void *state = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(instance, &state);
    if (e) {
        return e;
    }
    instance_state_free(state);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Executing requests                                                         */
/* ------------------------------------------------------------------------ */

static bool reserve_requests(instance_state *s, size_t count) {
    if (count <= s->request_capacity) {
        return true;
    }
    plx_status *errors = calloc(count, sizeof *errors);
    uint64_t *batches = calloc(count, sizeof *batches);
    bool *done = calloc(count, sizeof *done);
    size_t *group = calloc(count, sizeof *group);
    if (!errors || !batches || !done || !group) {
        free(errors);
        free(batches);
        free(done);
        free(group);
        return false;
    }
    free(s->request_errors);
    free(s->batch_sizes);
    free(s->done);
    free(s->group);
    s->request_errors = errors;
    s->batch_sizes = batches;
    s->done = done;
    s->group = group;
    s->request_capacity = count;
    return true;
}

static plx_status input_of(TRITONBACKEND_Request *request, const char *name,
                           TRITONBACKEND_Input **input, TRITONSERVER_DataType *type,
                           const int64_t **shape, uint32_t *rank, uint64_t *bytes,
                           uint32_t *buffers) {
    plx_status st = from_triton(TRITONBACKEND_RequestInput(request, name, input), "input");
    if (!st) {
        const char *ignored;
        st = from_triton(
            TRITONBACKEND_InputProperties(*input, &ignored, type, shape, rank, bytes, buffers),
            "input");
    }
    return st;
}

/* Checks one request against the configuration (the inputs it names,
 * their datatypes and shapes, and its batch size) and returns its batch. */
static plx_status check_request(const instance_state *s, TRITONBACKEND_Request *request,
                                uint64_t *out_batch) {
    const tpx_config *c = &s->model->config;
    uint32_t count = 0;
    plx_status st = from_triton(TRITONBACKEND_RequestInputCount(request, &count), "request");
    for (uint32_t i = 0; !st && i < count; i++) {
        TRITONBACKEND_Input *input;
        const char *name;
        st = from_triton(TRITONBACKEND_RequestInputByIndex(request, i, &input), "request");
        if (!st) {
            st = from_triton(TRITONBACKEND_InputProperties(input, &name, NULL, NULL, NULL, NULL,
                                                           NULL),
                             "request");
        }
        if (!st && find_io(c->inputs, c->input_count, name) == c->input_count) {
            st = plx_status_create(PLX_INVALID_ARGUMENT, "model '%s' has no input '%s'", c->name,
                                   name);
        }
    }
    uint32_t batch = c->max_batch_size > 0;
    uint64_t batch_size = 1;
    for (size_t i = 0; !st && i < c->input_count; i++) {
        const tpx_io *io = &c->inputs[i];
        TRITONBACKEND_Input *input;
        TRITONSERVER_DataType type;
        const int64_t *shape;
        uint32_t rank, buffers;
        uint64_t bytes;
        st = input_of(request, io->name, &input, &type, &shape, &rank, &bytes, &buffers);
        if (st) {
            plx_status_free(st);
            return plx_status_create(PLX_INVALID_ARGUMENT, "model '%s': input '%s' is missing",
                                     c->name, io->name);
        }
        if (tpx_dtype_from_triton(type) != io->dtype) {
            return plx_status_create(PLX_INVALID_ARGUMENT,
                                     "model '%s': input '%s' is %s, the model takes %s", c->name,
                                     io->name, tpx_triton_type_name(type), dtype_name(io->dtype));
        }
        bool same = rank == io->rank + batch && (!batch || shape[0] >= 1);
        for (uint32_t d = 0; same && d < io->rank; d++) {
            same = shape[d + batch] >= 0 && (io->dims[d] == -1 || io->dims[d] == shape[d + batch]);
        }
        char have[160], want[160];
        if (!same) {
            return plx_status_create(PLX_INVALID_ARGUMENT,
                                     "model '%s': input '%s' has shape %s, the model takes %s%s",
                                     c->name, io->name, dims_text(shape, rank, have, sizeof have),
                                     batch ? "[batch]+" : "",
                                     dims_text(io->dims, io->rank, want, sizeof want));
        }
        if (batch && i > 0 && (uint64_t)shape[0] != batch_size) {
            return plx_status_create(PLX_INVALID_ARGUMENT,
                                     "model '%s': input '%s' has a batch of %lld, input '%s' of "
                                     "%llu",
                                     c->name, io->name, (long long)shape[0], c->inputs[0].name,
                                     (unsigned long long)batch_size);
        }
        if (batch) {
            batch_size = (uint64_t)shape[0];
        }
        if (batch && batch_size > (uint64_t)c->max_batch_size) {
            return plx_status_create(PLX_INVALID_ARGUMENT,
                                     "model '%s': input '%s' has a batch of %llu, more than "
                                     "max_batch_size %lld",
                                     c->name, io->name, (unsigned long long)batch_size,
                                     (long long)c->max_batch_size);
        }
    }
    *out_batch = batch_size;
    return st;
}

/* Whether two checked requests' inputs have the same shapes after the
 * batch dim (so that they can run as one batch). */
static bool same_shapes(const tpx_config *c, TRITONBACKEND_Request *a, TRITONBACKEND_Request *b) {
    for (size_t i = 0; i < c->input_count; i++) {
        TRITONBACKEND_Input *ia, *ib;
        TRITONSERVER_DataType ta, tb;
        const int64_t *sa, *sb;
        uint32_t ra, rb, na, nb;
        uint64_t ba, bb;
        plx_status st = input_of(a, c->inputs[i].name, &ia, &ta, &sa, &ra, &ba, &na);
        if (!st) {
            st = input_of(b, c->inputs[i].name, &ib, &tb, &sb, &rb, &bb, &nb);
        }
        if (st) {
            plx_status_free(st);
            return false;
        }
        if (ra != rb || memcmp(sa + 1, sb + 1, (ra - 1) * sizeof *sa) != 0) {
            return false;
        }
    }
    return true;
}

/* Copies the inputs of the group's requests, one after another, into the
 * instance's buffer for each input, and sets the bindings. */
static plx_status gather_inputs(instance_state *s, TRITONBACKEND_Request **requests,
                                size_t group_size, const plx_model *pm) {
    const tpx_config *c = &s->model->config;
    for (size_t k = 0; k < plx_model_input_count(pm); k++) {
        const plx_model_io *io = plx_model_input(pm, k);
        size_t i = find_io(c->inputs, c->input_count, io->name);
        size_t need = 0;
        if (i == c->input_count || !plx_tensor_info_byte_size(&io->info, &need)) {
            return plx_status_create(PLX_INTERNAL, "model '%s': input '%s' of the model is not "
                                     "in config.pbtxt", c->name, io->name);
        }
        if (!buffer_reserve(&s->input_buffers[i], need)) {
            return plx_status_create(PLX_OUT_OF_MEMORY, "model '%s': out of memory", c->name);
        }
        uint8_t *dst = s->input_buffers[i].data;
        size_t used = 0;
        for (size_t r = 0; r < group_size; r++) {
            TRITONBACKEND_Input *input;
            TRITONSERVER_DataType type;
            const int64_t *shape;
            uint32_t rank, buffers;
            uint64_t bytes;
            plx_status st = input_of(requests[s->group[r]], io->name, &input, &type, &shape,
                                     &rank, &bytes, &buffers);
            for (uint32_t b = 0; !st && b < buffers; b++) {
                const void *data;
                uint64_t size;
                TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
                int64_t mt_id = 0;
                st = from_triton(TRITONBACKEND_InputBuffer(input, b, &data, &size, &mt, &mt_id),
                                 "input");
                if (!st && mt == TRITONSERVER_MEMORY_GPU) {
                    st = plx_status_create(PLX_UNSUPPORTED,
                                           "model '%s': input '%s' is in GPU memory, which the "
                                           "Plexus backend does not read",
                                           c->name, io->name);
                }
                if (!st && size > need - used) {
                    st = plx_status_create(PLX_INVALID_ARGUMENT,
                                           "model '%s': input '%s' has more than the %zu bytes "
                                           "of its shape",
                                           c->name, io->name, need);
                }
                if (!st) {
                    memcpy(dst + used, data, size);
                    used += size;
                }
            }
            if (st) {
                return st;
            }
        }
        if (used != need) {
            char dims[160];
            return plx_status_create(PLX_INVALID_ARGUMENT,
                                     "model '%s': input '%s' has %zu bytes of data, its shape %s "
                                     "takes %zu",
                                     c->name, io->name, used,
                                     dims_text(io->info.dims, io->info.rank, dims, sizeof dims),
                                     need);
        }
        s->input_bindings[k] = (plx_tensor_binding){io->binding_id, dst, need, 0};
    }
    return NULL;
}

static plx_status bind_outputs(instance_state *s, const plx_model *pm, uint64_t total_batch) {
    const tpx_config *c = &s->model->config;
    for (size_t k = 0; k < plx_model_output_count(pm); k++) {
        const plx_model_io *io = plx_model_output(pm, k);
        size_t need = 0;
        char dims[160];
        if (!plx_tensor_info_byte_size(&io->info, &need) ||
            tpx_dtype_to_triton(io->info.dtype) == TRITONSERVER_TYPE_INVALID) {
            return plx_status_create(PLX_UNSUPPORTED,
                                     "model '%s': output '%s' is of a dtype Triton has no type for",
                                     c->name, io->name);
        }
        if (c->max_batch_size > 0 &&
            (io->info.rank == 0 || (uint64_t)io->info.dims[0] != total_batch)) {
            return plx_status_create(PLX_UNSUPPORTED,
                                     "model '%s': output '%s' has shape %s for a batch of %llu; "
                                     "with max_batch_size > 0 its first dim must be the batch",
                                     c->name, io->name,
                                     dims_text(io->info.dims, io->info.rank, dims, sizeof dims),
                                     (unsigned long long)total_batch);
        }
        buffer *b = &s->output_buffers[k < c->output_count ? k : 0];
        if (k >= c->output_count || !buffer_reserve(b, need)) {
            return plx_status_create(k >= c->output_count ? PLX_INVALID_ARGUMENT
                                                           : PLX_OUT_OF_MEMORY,
                                     "model '%s': %s", c->name,
                                     k >= c->output_count
                                         ? "the model has more outputs than config.pbtxt lists"
                                         : "out of memory");
        }
        s->output_bindings[k] = (plx_tensor_binding){io->binding_id, b->data, need, 0};
    }
    return NULL;
}

/* One response: each output the request asks for, its slice of the
 * batch (rows [first, first + batch) when max_batch_size > 0). */
static plx_status respond(instance_state *s, TRITONBACKEND_Request *request,
                          TRITONBACKEND_Response *response, const plx_model *pm,
                          uint64_t first, uint64_t batch, uint64_t total_batch) {
    const tpx_config *c = &s->model->config;
    uint32_t count = 0;
    plx_status st = from_triton(TRITONBACKEND_RequestOutputCount(request, &count), "request");
    for (uint32_t r = 0; !st && r < count; r++) {
        const char *name;
        st = from_triton(TRITONBACKEND_RequestOutputName(request, r, &name), "request");
        size_t k = 0;
        while (!st && k < plx_model_output_count(pm) &&
               strcmp(plx_model_output(pm, k)->name, name) != 0) {
            k++;
        }
        if (!st && k == plx_model_output_count(pm)) {
            st = plx_status_create(PLX_INVALID_ARGUMENT, "model '%s' has no output '%s'",
                                   c->name, name);
        }
        if (st) {
            break;
        }
        const plx_model_io *io = plx_model_output(pm, k);
        int64_t shape[PLX_MAX_RANK];
        memcpy(shape, io->info.dims, sizeof shape);
        size_t row = s->output_bindings[k].size;
        size_t offset = 0;
        if (c->max_batch_size > 0) {
            row /= total_batch;
            offset = row * first;
            shape[0] = (int64_t)batch;
        }
        size_t size = row * (c->max_batch_size > 0 ? batch : 1);
        TRITONBACKEND_Output *output;
        void *dst = NULL;
        TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
        int64_t mt_id = 0;
        st = from_triton(TRITONBACKEND_ResponseOutput(response, &output, name,
                                                      tpx_dtype_to_triton(io->info.dtype), shape,
                                                      io->info.rank),
                         "output");
        if (!st) {
            st = from_triton(TRITONBACKEND_OutputBuffer(output, &dst, size, &mt, &mt_id),
                             "output");
        }
        if (!st && mt == TRITONSERVER_MEMORY_GPU) {
            st = plx_status_create(PLX_UNSUPPORTED,
                                   "model '%s': output '%s': Triton gave GPU memory, which the "
                                   "Plexus backend does not write",
                                   c->name, name);
        }
        if (!st && size) {
            memcpy(dst, (const uint8_t *)s->output_bindings[k].data + offset, size);
        }
    }
    return st;
}

/* Runs the requests s->group[0..group_size) as one execution, sends their
 * responses and reports their statistics; when the execution fails, sets
 * the error of each, for the caller to respond with. */
static void run_group(instance_state *s, TRITONBACKEND_Request **requests, size_t group_size,
                      uint64_t exec_start) {
    const tpx_config *c = &s->model->config;
    uint64_t total = 0;
    for (size_t r = 0; r < group_size; r++) {
        total += s->batch_sizes[s->group[r]];
    }
    TRITONBACKEND_Request *first = requests[s->group[0]];
    plx_status st = NULL;
    for (size_t i = 0; !st && i < c->input_count; i++) {
        TRITONBACKEND_Input *input;
        TRITONSERVER_DataType type;
        const int64_t *shape;
        uint32_t rank, buffers;
        uint64_t bytes;
        st = input_of(first, c->inputs[i].name, &input, &type, &shape, &rank, &bytes, &buffers);
        if (!st) {
            s->shapes[i].name = c->inputs[i].name;
            s->shapes[i].rank = rank;
            memcpy(s->shapes[i].dims, shape, rank * sizeof *shape);
            if (c->max_batch_size > 0) {
                s->shapes[i].dims[0] = (int64_t)total;
            }
        }
    }
    plx_specialization *spec = NULL;
    if (!st) {
        plx_dynamic_signature sig = {.shapes = s->shapes, .shape_count = c->input_count};
        st = acquire(s, &sig, &spec);
    }
    const plx_model *pm = spec ? plx_specialization_model(spec) : NULL;
    if (!st) {
        st = gather_inputs(s, requests, group_size, pm);
    }
    if (!st) {
        st = bind_outputs(s, pm, total);
    }
    uint64_t compute_start = now_ns();
    if (!st) {
        st = plx_loaded_network_execute(plx_specialization_network(spec), s->input_bindings,
                                        plx_model_input_count(pm), s->output_bindings,
                                        plx_model_output_count(pm));
    }
    uint64_t compute_end = now_ns();
    if (st) {
        /* Each request of the group gets the error (the caller responds). */
        for (size_t r = 0; r < group_size; r++) {
            s->request_errors[s->group[r]] =
                plx_status_create(plx_status_get_code(st), "%s", plx_status_get_message(st));
        }
        plx_status_free(st);
        plx_dynamic_model_release(s->dynamic, &spec);
        return;
    }
    uint64_t row = 0;
    for (size_t r = 0; r < group_size; r++) {
        size_t i = s->group[r];
        TRITONBACKEND_Response *response = NULL;
        plx_status rst = from_triton(TRITONBACKEND_ResponseNew(&response, requests[i]),
                                     "response");
        if (rst) {
            s->request_errors[i] = rst; /* the caller tries again to respond */
            row += s->batch_sizes[i];
            continue;
        }
        rst = respond(s, requests[i], response, pm, row, s->batch_sizes[i], total);
        bool success = rst == NULL;
        TRITONSERVER_Error *error = to_triton(rst);
        TRITONSERVER_Error *e =
            TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, error);
        if (error) {
            TRITONSERVER_ErrorDelete(error); /* sending does not take it */
        }
        if (e) {
            log_line(TRITONSERVER_LOG_ERROR, "model '%s': sending a response: %s", c->name,
                     TRITONSERVER_ErrorMessage(e));
            TRITONSERVER_ErrorDelete(e);
        }
        e = TRITONBACKEND_ModelInstanceReportStatistics(s->instance, requests[i], success,
                                                        exec_start, compute_start, compute_end,
                                                        now_ns());
        if (e) {
            TRITONSERVER_ErrorDelete(e);
        }
        row += s->batch_sizes[i];
    }
    TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceReportBatchStatistics(
        s->instance, total, exec_start, compute_start, compute_end, now_ns());
    if (e) {
        TRITONSERVER_ErrorDelete(e);
    }
    plx_dynamic_model_release(s->dynamic, &spec);
}

/* Sends an error response for a request (the error is consumed). */
static void respond_error(const tpx_config *c, TRITONBACKEND_Request *request, plx_status error) {
    TRITONBACKEND_Response *response = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ResponseNew(&response, request);
    if (!e) {
        TRITONSERVER_Error *sent = to_triton(error);
        error = NULL;
        e = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, sent);
        if (sent) {
            TRITONSERVER_ErrorDelete(sent); /* sending does not take it */
        }
    }
    if (e) {
        log_line(TRITONSERVER_LOG_ERROR, "model '%s': cannot send an error response: %s",
                 c->name, TRITONSERVER_ErrorMessage(e));
        TRITONSERVER_ErrorDelete(e);
    }
    plx_status_free(error);
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance *instance,
                                                      TRITONBACKEND_Request **requests,
                                                      const uint32_t request_count) {
    uint64_t exec_start = now_ns();
    void *state = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(instance, &state);
    if (e) {
        return e;
    }
    instance_state *s = state;
    const tpx_config *c = &s->model->config;
    if (!reserve_requests(s, request_count)) {
        return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE,
                                     "out of memory for a batch of requests");
    }
    for (uint32_t i = 0; i < request_count; i++) {
        s->done[i] = false;
        s->request_errors[i] = check_request(s, requests[i], &s->batch_sizes[i]);
    }
    /* Requests of the same shapes, up to max_batch_size in all, run as one
     * execution; without a batch dim, each runs alone. */
    for (uint32_t i = 0; i < request_count; i++) {
        if (s->done[i] || s->request_errors[i]) {
            continue;
        }
        size_t n = 0;
        uint64_t total = 0;
        for (uint32_t j = i; j < request_count && (j == i || c->max_batch_size > 0); j++) {
            if (s->done[j] || s->request_errors[j] ||
                total + s->batch_sizes[j] > (uint64_t)(c->max_batch_size > 0 ? c->max_batch_size
                                                                              : 1) ||
                (j != i && !same_shapes(c, requests[i], requests[j]))) {
                continue;
            }
            s->group[n++] = j;
            s->done[j] = true;
            total += s->batch_sizes[j];
        }
        run_group(s, requests, n, exec_start);
    }
    uint64_t exec_end = now_ns();
    for (uint32_t i = 0; i < request_count; i++) {
        if (s->request_errors[i]) {
            TRITONSERVER_Error *se = TRITONBACKEND_ModelInstanceReportStatistics(
                instance, requests[i], false, exec_start, exec_start, exec_end, exec_end);
            if (se) {
                TRITONSERVER_ErrorDelete(se);
            }
            respond_error(c, requests[i], s->request_errors[i]);
            s->request_errors[i] = NULL;
        }
        TRITONSERVER_Error *re =
            TRITONBACKEND_RequestRelease(requests[i], TRITONSERVER_REQUEST_RELEASE_ALL);
        if (re) {
            log_line(TRITONSERVER_LOG_ERROR, "model '%s': releasing a request: %s", c->name,
                     TRITONSERVER_ErrorMessage(re));
            TRITONSERVER_ErrorDelete(re);
        }
    }
    return NULL;
}
