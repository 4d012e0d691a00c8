/* plexus._plexus: the CPython extension of the Python package (docs/python.md),
 * written against the application API (core/include/plexus/). It knows
 * nothing of NumPy: tensors arrive and leave through the buffer protocol
 * (PEP 3118), and the package's __init__.py makes the arrays.
 *
 * Runtime wraps a plx_runtime; Model wraps either a static model (opened,
 * optimised and loaded once: plexus/model.h, plexus/network.h) or a dynamic
 * one (a specialisation per set of input shapes: plexus/dynamic.h). The GIL
 * is released around everything that can take long: runtime creation,
 * loading, specialising and executing. Executions from several threads run
 * at once where the backends allow (a working memory per concurrent
 * execution, kept in a pool), else one at a time (the core serialises). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <plexus/dynamic.h>
#include <plexus/model.h>
#include <plexus/network.h>
#include <plexus/plexus.h>

/* plexus.errors.BY_CODE, looked up at import: the class raised per code. */
static PyObject *errors_by_code;

/* Raises the class of `code` with `message`. Returns NULL. */
static PyObject *raise_code(plx_status_code code, const char *message) {
    PyObject *key = PyLong_FromLong((long)code);
    PyObject *cls = key ? PyDict_GetItemWithError(errors_by_code, key) : NULL;
    Py_XDECREF(key);
    if (!cls) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_RuntimeError, "plexus: status %d: %s", (int)code, message);
        }
        return NULL;
    }
    PyObject *exc = PyObject_CallFunction(cls, "si", message, (int)code);
    if (exc) {
        PyErr_SetObject(cls, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* Raises the class of `code` with a formatted message. Returns NULL. */
static PyObject *raise_fmt(plx_status_code code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (!msg) {
        return NULL;
    }
    const char *text = PyUnicode_AsUTF8(msg);
    if (text) {
        raise_code(code, text);
    }
    Py_DECREF(msg);
    return NULL;
}

/* Raises a failed call's status, prefixed with what was being done when
 * `what` is not NULL, and frees it. Returns NULL. */
static PyObject *raise_status(plx_status st, const char *what) {
    plx_status_code code = plx_status_get_code(st);
    if (what) {
        raise_fmt(code, "%s: %s", what, plx_status_get_message(st));
    } else {
        raise_code(code, plx_status_get_message(st));
    }
    plx_status_free(st);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Conversions                                                                */
/* ------------------------------------------------------------------------ */

/* A tuple of the info's dims. */
static PyObject *shape_tuple(const plx_tensor_info *info) {
    PyObject *t = PyTuple_New((Py_ssize_t)info->rank);
    for (uint32_t i = 0; t && i < info->rank; i++) {
        PyObject *d = PyLong_FromLongLong((long long)info->dims[i]);
        if (!d) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, d);
    }
    return t;
}

/* The dtype of a buffer's struct-module format and item size, or
 * PLX_DTYPE_INVALID when it is none that Plexus has. */
static plx_dtype dtype_of_format(const char *format, Py_ssize_t itemsize) {
    if (!format) {
        return itemsize == 1 ? PLX_DTYPE_UINT8 : PLX_DTYPE_INVALID;
    }
    if (*format == '@' || *format == '=' || *format == '<') {
        format++;
    } else if (*format == '>' || *format == '!') {
        if (itemsize != 1) {
            return PLX_DTYPE_INVALID; /* big-endian data: Plexus's tensors are little-endian */
        }
        format++;
    }
    if (format[0] == '\0' || format[1] != '\0') {
        return PLX_DTYPE_INVALID;
    }
    bool is_signed = false;
    switch (format[0]) {
    case '?':
        return PLX_DTYPE_BOOL;
    case 'b':
        return PLX_DTYPE_INT8;
    case 'B':
        return PLX_DTYPE_UINT8;
    case 'e':
        return PLX_DTYPE_FLOAT16;
    case 'f':
        return PLX_DTYPE_FLOAT32;
    case 'd':
        return PLX_DTYPE_FLOAT64;
    case 'h':
    case 'i':
    case 'l':
    case 'q':
        is_signed = true;
        break;
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
        break;
    default:
        return PLX_DTYPE_INVALID;
    }
    switch (itemsize) {
    case 2:
        return is_signed ? PLX_DTYPE_INT16 : PLX_DTYPE_UINT16;
    case 4:
        return is_signed ? PLX_DTYPE_INT32 : PLX_DTYPE_UINT32;
    case 8:
        return is_signed ? PLX_DTYPE_INT64 : PLX_DTYPE_UINT64;
    default:
        return PLX_DTYPE_INVALID;
    }
}

/* Checks that `view` (a C-contiguous buffer) has the dtype and shape of
 * `info`; raises InvalidArgumentError naming `kind` ("input", "output") and
 * `name` otherwise. */
static bool check_buffer(const Py_buffer *view, const plx_tensor_info *info, const char *kind,
                         const char *name) {
    plx_dtype dt = dtype_of_format(view->format, view->itemsize);
    if (dt != info->dtype) {
        raise_fmt(PLX_INVALID_ARGUMENT,
                  "%s '%s' has dtype %s (buffer format '%s'), the model expects %s", kind, name,
                  plx_dtype_name(dt), view->format ? view->format : "B",
                  plx_dtype_name(info->dtype));
        return false;
    }
    bool same = (uint32_t)view->ndim == info->rank;
    for (uint32_t i = 0; same && i < info->rank; i++) {
        same = (int64_t)view->shape[i] == info->dims[i];
    }
    if (!same) {
        PyObject *got = PyTuple_New(view->ndim);
        for (Py_ssize_t i = 0; got && i < view->ndim; i++) {
            PyObject *d = PyLong_FromSsize_t(view->shape[i]);
            if (!d) {
                Py_CLEAR(got);
                break;
            }
            PyTuple_SET_ITEM(got, i, d);
        }
        PyObject *want = shape_tuple(info);
        if (got && want) {
            raise_fmt(PLX_INVALID_ARGUMENT, "%s '%s' has shape %R, the model expects %R", kind,
                      name, got, want);
        }
        Py_XDECREF(got);
        Py_XDECREF(want);
        return false;
    }
    return true;
}

/* Sets d[key] = value and drops the reference to value; false on error
 * (value NULL included). */
static bool dict_put(PyObject *d, const char *key, PyObject *value) {
    if (!value) {
        return false;
    }
    int rc = PyDict_SetItemString(d, key, value);
    Py_DECREF(value);
    return rc == 0;
}

/* Appends value to list l and drops the reference; false on error. */
static bool list_put(PyObject *l, PyObject *value) {
    if (!value) {
        return false;
    }
    int rc = PyList_Append(l, value);
    Py_DECREF(value);
    return rc == 0;
}

/* ------------------------------------------------------------------------ */
/* Runtime                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    plx_runtime *rt;
} RuntimeObject;

static void Runtime_dealloc(RuntimeObject *self) {
    plx_runtime_destroy(&self->rt);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The C strings of a sequence of str, kept alive by `fast` (a list or
 * tuple that the caller releases). NULL with an exception on error. */
static const char **string_array(PyObject *seq, const char *what, PyObject **fast,
                                 Py_ssize_t *count) {
    *fast = PySequence_Fast(seq, what);
    if (!*fast) {
        return NULL;
    }
    *count = PySequence_Fast_GET_SIZE(*fast);
    const char **out = PyMem_Calloc((size_t)(*count ? *count : 1), sizeof *out);
    if (!out) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < *count; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(*fast, i);
        out[i] = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
        if (!out[i]) {
            if (!PyErr_Occurred()) {
                PyErr_Format(PyExc_TypeError, "%s: item %zd is not a str", what, i);
            }
            PyMem_Free(out);
            return NULL;
        }
    }
    return out;
}

static int Runtime_init(RuntimeObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"search_paths", "backend_options", "ignore_environment",
                             "skip_default_dir", "intra_op_threads", "log_level", NULL};
    PyObject *paths = NULL, *options = NULL;
    int ignore_env = 0, skip_default = 1;
    unsigned int threads = 0;
    const char *log_level = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OOppIz", kwlist, &paths, &options,
                                     &ignore_env, &skip_default, &threads, &log_level)) {
        return -1;
    }
    if (self->rt) {
        PyErr_SetString(PyExc_RuntimeError, "Runtime.__init__ called twice");
        return -1;
    }
    plx_runtime_options o;
    plx_runtime_options_init(&o);
    o.ignore_environment = ignore_env;
    o.skip_default_dir = skip_default;
    o.intra_op_threads = threads;
    if (log_level) {
        plx_log_level level;
        if (!plx_log_level_parse(log_level, &level)) {
            raise_fmt(PLX_INVALID_ARGUMENT,
                      "log_level '%s' is not one of error, warn, info, debug", log_level);
            return -1;
        }
        o.log_level = (int)level;
    }
    int rc = -1;
    PyObject *paths_fast = NULL, *options_fast = NULL;
    const char **path_strs = NULL;
    plx_backend_option *opts = NULL;
    Py_ssize_t path_count = 0, opt_count = 0;
    if (paths) {
        path_strs = string_array(paths, "search_paths", &paths_fast, &path_count);
        if (!path_strs) {
            goto done;
        }
    }
    if (options) {
        options_fast = PySequence_Fast(options, "backend_options must be a sequence");
        if (!options_fast) {
            goto done;
        }
        opt_count = PySequence_Fast_GET_SIZE(options_fast);
        opts = PyMem_Calloc((size_t)(opt_count ? opt_count : 1), sizeof *opts);
        if (!opts) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < opt_count; i++) {
            PyObject *item = PySequence_Fast_GET_ITEM(options_fast, i);
            if (!PyArg_ParseTuple(item, "sss;backend_options: each a (backend id, key, value)",
                                  &opts[i].backend_id, &opts[i].key, &opts[i].value)) {
                goto done;
            }
        }
    }
    o.search_paths = path_strs;
    o.search_path_count = (size_t)path_count;
    o.backend_options = opts;
    o.backend_option_count = (size_t)opt_count;
    plx_status st;
    Py_BEGIN_ALLOW_THREADS
    st = plx_runtime_create(&o, &self->rt);
    Py_END_ALLOW_THREADS
    if (st) {
        raise_status(st, "cannot create the runtime");
        goto done;
    }
    rc = 0;
done:
    PyMem_Free(opts);
    PyMem_Free(path_strs);
    Py_XDECREF(options_fast);
    Py_XDECREF(paths_fast);
    return rc;
}

static bool runtime_ready(RuntimeObject *self) {
    if (!self->rt) {
        raise_code(PLX_FAILED_PRECONDITION, "the runtime was not initialised");
        return false;
    }
    return true;
}

static PyObject *abi_dict(uint32_t v) {
    return Py_BuildValue("{s:I,s:I}", "major", (unsigned)PLX_ABI_VERSION_GET_MAJOR(v), "minor",
                         (unsigned)PLX_ABI_VERSION_GET_MINOR(v));
}

static PyObject *memory_sources(uint32_t mask) {
    static const struct {
        uint32_t bit;
        const char *name;
    } names[] = {{PLX_MEMORY_SOURCE_MALLOC, "malloc"},
                 {PLX_MEMORY_SOURCE_DMA_BUF, "dma_buf"},
                 {PLX_MEMORY_SOURCE_DMA_BUF_PROTECTED, "dma_buf_protected"}};
    PyObject *l = PyList_New(0);
    for (size_t i = 0; l && i < sizeof names / sizeof names[0]; i++) {
        if ((mask & names[i].bit) && !list_put(l, PyUnicode_FromString(names[i].name))) {
            Py_CLEAR(l);
        }
    }
    return l;
}

static PyObject *capability_value(const plx_capability *c) {
    switch (c->type) {
    case PLX_VALUE_BOOL:
        return PyBool_FromLong(c->bool_value);
    case PLX_VALUE_INT:
        return PyLong_FromLongLong((long long)c->int_value);
    case PLX_VALUE_STRING:
        return PyUnicode_FromString(c->string_value);
    }
    Py_RETURN_NONE;
}

static PyObject *backend_dict(const plx_backend_info *b) {
    bool runs = plx_backend_info_runs_layers(b);
    PyObject *d = Py_BuildValue(
        "{s:s,s:s,s:s,s:N,s:z,s:O,s:z,s:O,s:z,s:z}", "id", b->id, "name", b->name, "version",
        b->version, "abi", abi_dict(b->abi_version), "path", b->path, "available",
        b->available ? Py_True : Py_False, "reason", b->reason, "runs_layers",
        runs ? Py_True : Py_False, "no_layers_reason", plx_backend_info_no_layers_reason(b),
        "warning", plx_backend_info_table_warning(b));
    if (!d) {
        return NULL;
    }
    PyObject *caps = PyDict_New();
    for (size_t k = 0; caps && k < b->capability_count; k++) {
        if (!dict_put(caps, b->capabilities[k].key, capability_value(&b->capabilities[k]))) {
            Py_CLEAR(caps);
        }
    }
    PyObject *opts = PyList_New(0);
    for (size_t k = 0; opts && k < b->option_count; k++) {
        const plx_option_info *o = &b->options[k];
        if (!list_put(opts, Py_BuildValue("{s:s,s:z,s:z}", "key", o->key, "description",
                                          o->description, "default", o->default_value))) {
            Py_CLEAR(opts);
        }
    }
    /* The sources it can use: none when it runs no layers. */
    PyObject *sources =
        Py_BuildValue("{s:N,s:N}", "import",
                      memory_sources(runs ? plx_backend_info_import_sources(b) : 0), "export",
                      memory_sources(runs ? plx_backend_info_export_sources(b) : 0));
    bool ok = caps && opts && sources;
    if (ok) {
        ok = dict_put(d, "capabilities", caps) & dict_put(d, "memory_sources", sources) &
             dict_put(d, "options", opts);
    } else {
        Py_XDECREF(caps);
        Py_XDECREF(opts);
        Py_XDECREF(sources);
    }
    if (!ok) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *rejection_list(const plx_runtime *rt, size_t count,
                                const plx_rejection *(*get)(const plx_runtime *, size_t)) {
    PyObject *l = PyList_New(0);
    for (size_t i = 0; l && i < count; i++) {
        const plx_rejection *r = get(rt, i);
        if (!list_put(l, Py_BuildValue("{s:z,s:z,s:s}", "path", r->path, "id", r->id, "reason",
                                       r->reason))) {
            Py_CLEAR(l);
        }
    }
    return l;
}

PyDoc_STRVAR(Runtime_info_doc,
             "info() -> dict\n\nThe library's version and ABI, the model formats, the search "
             "path, every backend with its capabilities and options, and the rejected and "
             "skipped plug-ins with their reasons (as `plexus info --json`).");

static PyObject *Runtime_info(RuntimeObject *self, PyObject *unused) {
    (void)unused;
    if (!runtime_ready(self)) {
        return NULL;
    }
    const plx_runtime *rt = self->rt;
    PyObject *d = Py_BuildValue("{s:s,s:N}", "version", plx_version_string(), "abi",
                                abi_dict(plx_abi_version()));
    if (!d) {
        return NULL;
    }
    PyObject *formats = PyList_New(0);
    for (size_t i = 0; formats && i < plx_model_format_count(); i++) {
        if (!list_put(formats, PyUnicode_FromString(plx_model_format_name(i)))) {
            Py_CLEAR(formats);
        }
    }
    PyObject *search = PyList_New(0);
    for (size_t i = 0; search && i < plx_runtime_search_path_count(rt); i++) {
        const plx_search_entry *e = plx_runtime_search_path(rt, i);
        if (!list_put(search, Py_BuildValue("{s:s,s:s,s:z}", "path", e->path, "source",
                                            plx_search_source_name(e->source), "problem",
                                            *e->problem ? e->problem : NULL))) {
            Py_CLEAR(search);
        }
    }
    PyObject *backends = PyList_New(0);
    for (size_t i = 0; backends && i < plx_runtime_backend_count(rt); i++) {
        if (!list_put(backends, backend_dict(plx_runtime_backend(rt, i)))) {
            Py_CLEAR(backends);
        }
    }
    PyObject *notes = PyList_New(0);
    for (size_t i = 0; notes && i < plx_runtime_note_count(rt); i++) {
        if (!list_put(notes, PyUnicode_FromString(plx_runtime_note(rt, i)))) {
            Py_CLEAR(notes);
        }
    }
    if (!dict_put(d, "model_formats", formats) || !dict_put(d, "search_path", search) ||
        !dict_put(d, "backends", backends) ||
        !dict_put(d, "rejected",
                  rejection_list(rt, plx_runtime_rejection_count(rt), plx_runtime_rejection)) ||
        !dict_put(d, "skipped",
                  rejection_list(rt, plx_runtime_skipped_count(rt), plx_runtime_skipped)) ||
        !dict_put(d, "notes", notes)) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

PyDoc_STRVAR(Runtime_enable_profiling_doc,
             "enable_profiling(enabled: bool) -> None\n\nStarts or stops recording trace "
             "events (loads, each workload of each execution, copies, imports).");

static PyObject *Runtime_enable_profiling(RuntimeObject *self, PyObject *arg) {
    if (!runtime_ready(self)) {
        return NULL;
    }
    int enabled = PyObject_IsTrue(arg);
    if (enabled < 0) {
        return NULL;
    }
    plx_status st = plx_runtime_enable_profiling(self->rt, enabled);
    if (st) {
        return raise_status(st, NULL);
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(Runtime_trace_event_count_doc,
             "trace_event_count() -> int\n\nThe number of trace events recorded and not "
             "cleared.");

static PyObject *Runtime_trace_event_count(RuntimeObject *self, PyObject *unused) {
    (void)unused;
    if (!runtime_ready(self)) {
        return NULL;
    }
    return PyLong_FromSize_t(plx_runtime_trace_event_count(self->rt));
}

PyDoc_STRVAR(Runtime_clear_trace_doc, "clear_trace() -> None\n\nForgets the recorded events.");

static PyObject *Runtime_clear_trace(RuntimeObject *self, PyObject *unused) {
    (void)unused;
    if (!runtime_ready(self)) {
        return NULL;
    }
    plx_runtime_clear_trace(self->rt);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(Runtime_write_trace_doc,
             "write_trace(path: str) -> None\n\nWrites the recorded events to `path` as "
             "Chrome trace-event JSON (Perfetto, chrome://tracing).");

static PyObject *Runtime_write_trace(RuntimeObject *self, PyObject *args) {
    PyObject *path_obj = NULL;
    if (!runtime_ready(self) || !PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path_obj)) {
        return NULL;
    }
    plx_status st;
    Py_BEGIN_ALLOW_THREADS
    st = plx_runtime_write_trace(self->rt, PyBytes_AS_STRING(path_obj));
    Py_END_ALLOW_THREADS
    Py_DECREF(path_obj);
    if (st) {
        return raise_status(st, NULL);
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(Runtime_counters_doc,
             "counters() -> dict\n\nnetworks_loaded, inferences_run and inferences_failed "
             "since the runtime was created.");

static PyObject *Runtime_counters(RuntimeObject *self, PyObject *unused) {
    (void)unused;
    if (!runtime_ready(self)) {
        return NULL;
    }
    plx_counters c;
    plx_runtime_counters(self->rt, &c);
    return Py_BuildValue("{s:K,s:K,s:K}", "networks_loaded",
                         (unsigned long long)c.networks_loaded, "inferences_run",
                         (unsigned long long)c.inferences_run, "inferences_failed",
                         (unsigned long long)c.inferences_failed);
}

static PyMethodDef Runtime_methods[] = {
    {"info", (PyCFunction)Runtime_info, METH_NOARGS, Runtime_info_doc},
    {"enable_profiling", (PyCFunction)Runtime_enable_profiling, METH_O,
     Runtime_enable_profiling_doc},
    {"trace_event_count", (PyCFunction)Runtime_trace_event_count, METH_NOARGS,
     Runtime_trace_event_count_doc},
    {"clear_trace", (PyCFunction)Runtime_clear_trace, METH_NOARGS, Runtime_clear_trace_doc},
    {"write_trace", (PyCFunction)Runtime_write_trace, METH_VARARGS, Runtime_write_trace_doc},
    {"counters", (PyCFunction)Runtime_counters, METH_NOARGS, Runtime_counters_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(Runtime_doc,
             "Runtime(search_paths=(), backend_options=(), ignore_environment=False, "
             "skip_default_dir=True, intra_op_threads=0, log_level=None)\n\n"
             "A plx_runtime: the backends found in the search paths (directories or plug-in "
             "files, in order), each created with its (backend id, key, value) options.");

static PyTypeObject RuntimeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "plexus._plexus.Runtime",
    .tp_basicsize = sizeof(RuntimeObject),
    .tp_dealloc = (destructor)Runtime_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = Runtime_doc,
    .tp_methods = Runtime_methods,
    .tp_init = (initproc)Runtime_init,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------------ */
/* Model                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    RuntimeObject *runtime; /* kept alive: it must outlive the model */
    /* A static model: opened, optimised and loaded once. */
    plx_model *model;
    plx_loaded_network *loaded;
    /* A dynamic model: a specialisation per signature. */
    plx_dynamic_model *dynamic;
    /* Executions may run at once, each with a working memory from the pool
     * (static models whose backends all support async execution). */
    bool concurrent;
    plx_working_memory **pool;
    size_t pool_count, pool_capacity;
    /* The alignment that zero-copy memory needs: the largest of the
     * backends that may run the model. */
    size_t alignment;
    PyObject *assignment; /* dict; None for a dynamic model */
} ModelObject;

static void Model_dealloc(ModelObject *self) {
    for (size_t i = 0; i < self->pool_count; i++) {
        plx_working_memory_destroy(&self->pool[i]);
    }
    PyMem_Free(self->pool);
    plx_loaded_network_unload(&self->loaded);
    plx_model_destroy(&self->model);
    plx_dynamic_model_destroy(&self->dynamic);
    Py_XDECREF(self->assignment);
    Py_XDECREF(self->runtime);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Whether every backend of `ids` supports what the load options would ask:
 * host-planned memory (externally_managed_memory, import of malloc memory)
 * and, when `async`, concurrent executions. Also raises *alignment to the
 * largest import alignment among them. */
static bool backends_support(const plx_runtime *rt, const char *const *ids, size_t count,
                             bool async, size_t *alignment) {
    bool ok = count > 0;
    for (size_t i = 0; i < count; i++) {
        const plx_backend_info *b = plx_runtime_find_backend(rt, ids[i]);
        if (!b) {
            ok = false;
            continue;
        }
        size_t a = plx_backend_info_import_alignment(b);
        if (a > *alignment) {
            *alignment = a;
        }
        ok = ok && plx_backend_info_has_capability(b, PLX_CAP_EXTERNALLY_MANAGED_MEMORY) &&
             (plx_backend_info_import_sources(b) & PLX_MEMORY_SOURCE_MALLOC) &&
             (!async || plx_backend_info_has_capability(b, PLX_CAP_ASYNC_EXECUTION));
    }
    return ok;
}

/* The assignment of an optimised network as a dict: layers (name, op,
 * backend, inserted, refusals, fused_from), notes and the summary. */
static PyObject *assignment_dict(const plx_optimized_network *o) {
    PyObject *layers = PyList_New(0);
    for (size_t i = 0; layers && i < plx_optimized_network_layer_count(o); i++) {
        const plx_layer_assignment *l = plx_optimized_network_layer(o, i);
        PyObject *refusals = PyList_New(0);
        for (size_t k = 0; refusals && k < l->refusal_count; k++) {
            if (!list_put(refusals, Py_BuildValue("{s:s,s:s}", "backend",
                                                  l->refusals[k].backend_id, "reason",
                                                  l->refusals[k].reason))) {
                Py_CLEAR(refusals);
            }
        }
        PyObject *fused = PyList_New(0);
        for (size_t k = 0; fused && k < plx_optimized_network_layer_fused_count(o, i); k++) {
            if (!list_put(fused,
                          PyUnicode_FromString(plx_optimized_network_layer_fused_from(o, i, k)))) {
                Py_CLEAR(fused);
            }
        }
        if (!list_put(layers, Py_BuildValue("{s:s,s:s,s:s,s:O,s:N,s:N}", "layer", l->layer_name,
                                            "op", plx_op_name(l->op), "backend", l->backend_id,
                                            "inserted", l->inserted ? Py_True : Py_False,
                                            "refusals", refusals, "fused_from", fused))) {
            Py_CLEAR(layers);
        }
    }
    PyObject *notes = PyList_New(0);
    for (size_t i = 0; notes && i < plx_optimized_network_note_count(o); i++) {
        if (!list_put(notes, PyUnicode_FromString(plx_optimized_network_note(o, i)))) {
            Py_CLEAR(notes);
        }
    }
    return Py_BuildValue("{s:N,s:N,s:s}", "layers", layers, "notes", notes, "summary",
                         plx_optimized_network_summary(o));
}

/* The distinct backend ids of an optimised network's layers (pointers into
 * it), in `ids` of at least the layer count. */
static size_t used_backends(const plx_optimized_network *o, const char **ids) {
    size_t n = 0;
    for (size_t i = 0; i < plx_optimized_network_layer_count(o); i++) {
        const char *id = plx_optimized_network_layer(o, i)->backend_id;
        bool seen = false;
        for (size_t k = 0; k < n && !seen; k++) {
            seen = strcmp(ids[k], id) == 0;
        }
        if (!seen) {
            ids[n++] = id;
        }
    }
    return n;
}

/* Opens, optimises and loads a static model. */
static int model_open_static(ModelObject *self, const char *path, plx_model_options *mo,
                             plx_optimize_options *oo) {
    plx_runtime *rt = self->runtime->rt;
    plx_status st;
    plx_optimized_network *opt = NULL;
    Py_BEGIN_ALLOW_THREADS
    st = plx_model_open(path, mo, &self->model);
    if (!st) {
        st = plx_optimize(rt, plx_model_network(self->model), oo, &opt);
    }
    Py_END_ALLOW_THREADS
    if (st) {
        raise_status(st, NULL);
        return -1;
    }
    self->assignment = assignment_dict(opt);
    size_t layers = plx_optimized_network_layer_count(opt);
    const char **ids = PyMem_Calloc(layers ? layers : 1, sizeof *ids);
    if (!self->assignment || !ids) {
        if (!ids) {
            PyErr_NoMemory();
        }
        PyMem_Free(ids);
        plx_optimized_network_destroy(&opt);
        return -1;
    }
    size_t n = used_backends(opt, ids);
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.externally_managed_memory = backends_support(rt, ids, n, false, &self->alignment);
    lo.async_execution = backends_support(rt, ids, n, true, &self->alignment);
    PyMem_Free(ids);
    self->concurrent = lo.async_execution;
    Py_BEGIN_ALLOW_THREADS
    st = plx_runtime_load_network(rt, &opt, &lo, &self->loaded);
    Py_END_ALLOW_THREADS
    if (st) {
        raise_status(st, NULL);
        return -1;
    }
    return 0;
}

/* Opens a dynamic model: the backends that may run it are those named
 * that run layers. */
static int model_open_dynamic(ModelObject *self, const char *path, const plx_model_options *mo,
                              const plx_optimize_options *oo, size_t cache_capacity) {
    plx_runtime *rt = self->runtime->rt;
    plx_dynamic_options d;
    plx_dynamic_options_init(&d);
    d.model = *mo;
    d.optimize = *oo;
    if (cache_capacity) {
        d.cache_capacity = cache_capacity;
    }
    const char **ids = PyMem_Calloc(oo->backend_count ? oo->backend_count : 1, sizeof *ids);
    if (!ids) {
        PyErr_NoMemory();
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < oo->backend_count; i++) {
        const plx_backend_info *b = plx_runtime_find_backend(rt, oo->backends[i]);
        if (b && plx_backend_info_runs_layers(b)) {
            ids[n++] = b->id;
        }
    }
    d.load.externally_managed_memory = backends_support(rt, ids, n, false, &self->alignment);
    PyMem_Free(ids);
    plx_status st;
    Py_BEGIN_ALLOW_THREADS
    st = plx_dynamic_model_open(rt, path, &d, &self->dynamic);
    Py_END_ALLOW_THREADS
    if (st) {
        raise_status(st, NULL);
        return -1;
    }
    return 0;
}

/* The {name: shape} mapping of `shapes` as plx_model_input_shape entries
 * (names borrowed from the dict's keys). */
static plx_model_input_shape *input_shapes(PyObject *shapes, size_t *out_count) {
    *out_count = 0;
    if (!PyDict_Check(shapes)) {
        PyErr_SetString(PyExc_TypeError, "shapes must be a dict of input name to shape");
        return NULL;
    }
    Py_ssize_t n = PyDict_Size(shapes), pos = 0, i = 0;
    plx_model_input_shape *out = PyMem_Calloc((size_t)(n ? n : 1), sizeof *out);
    if (!out) {
        PyErr_NoMemory();
        return NULL;
    }
    PyObject *key, *value;
    while (PyDict_Next(shapes, &pos, &key, &value)) {
        plx_model_input_shape *s = &out[i++];
        s->name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        PyObject *fast = s->name ? PySequence_Fast(value, "a shape must be a sequence") : NULL;
        if (!fast) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "shapes: every key must be an input name");
            }
            PyMem_Free(out);
            return NULL;
        }
        Py_ssize_t rank = PySequence_Fast_GET_SIZE(fast);
        if (rank > PLX_MAX_RANK) {
            Py_DECREF(fast);
            PyMem_Free(out);
            raise_fmt(PLX_INVALID_ARGUMENT, "shapes: input '%s' has rank %zd, at most %d",
                      s->name, rank, PLX_MAX_RANK);
            return NULL;
        }
        s->rank = (uint32_t)rank;
        for (Py_ssize_t d = 0; d < rank; d++) {
            s->dims[d] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, d));
        }
        Py_DECREF(fast);
        if (PyErr_Occurred()) {
            PyMem_Free(out);
            return NULL;
        }
    }
    *out_count = (size_t)n;
    return out;
}

/* The ids of the runtime's backends that run layers, in its order: the
 * preference when none is named, as `plexus run` without --backends. */
static const char **runs_layers_backends(const plx_runtime *rt, Py_ssize_t *count) {
    size_t n = plx_runtime_backend_count(rt);
    const char **ids = PyMem_Calloc(n ? n : 1, sizeof *ids);
    if (!ids) {
        PyErr_NoMemory();
        return NULL;
    }
    *count = 0;
    for (size_t i = 0; i < n; i++) {
        const plx_backend_info *b = plx_runtime_backend(rt, i);
        if (plx_backend_info_runs_layers(b)) {
            ids[(*count)++] = b->id;
        }
    }
    return ids;
}

static int Model_init(ModelObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"runtime",  "path",   "backends",       "allow_fallback",
                             "dynamic",  "shapes", "cache_capacity", "format", NULL};
    RuntimeObject *runtime = NULL;
    PyObject *path_obj = NULL, *backends = NULL, *shapes = NULL;
    int fallback = 1, dynamic = 0;
    Py_ssize_t capacity = 0;
    const char *format = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O&|OppOnz", kwlist, &RuntimeType, &runtime,
                                     PyUnicode_FSConverter, &path_obj, &backends, &fallback,
                                     &dynamic, &shapes, &capacity, &format)) {
        return -1;
    }
    int rc = -1;
    PyObject *backends_fast = NULL;
    const char **backend_ids = NULL;
    Py_ssize_t backend_count = 0;
    plx_model_input_shape *shape_entries = NULL;
    size_t shape_count = 0;
    if (self->runtime) {
        PyErr_SetString(PyExc_RuntimeError, "Model.__init__ called twice");
        goto done;
    }
    if (!runtime_ready(runtime)) {
        goto done;
    }
    if (capacity < 0) {
        raise_fmt(PLX_INVALID_ARGUMENT, "cache_capacity must be >= 1, not %zd", capacity);
        goto done;
    }
    Py_INCREF(runtime);
    self->runtime = runtime;
    self->alignment = alignof(max_align_t);
    if (backends && backends != Py_None) {
        backend_ids = string_array(backends, "backends", &backends_fast, &backend_count);
    } else {
        backend_ids = runs_layers_backends(runtime->rt, &backend_count);
    }
    if (!backend_ids) {
        goto done;
    }
    if (shapes && shapes != Py_None) {
        shape_entries = input_shapes(shapes, &shape_count);
        if (!shape_entries) {
            goto done;
        }
    }
    plx_model_options mo;
    plx_model_options_init(&mo);
    mo.format = format;
    mo.shapes = shape_entries;
    mo.shape_count = shape_count;
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    oo.backends = backend_ids;
    oo.backend_count = (size_t)backend_count;
    oo.allow_fallback = fallback;
    /* Inputs read and outputs written in the caller's arrays where the
     * backends import them (the package aligns them). */
    oo.import_enabled = true;
    oo.export_enabled = true;
    const char *path = PyBytes_AS_STRING(path_obj);
    rc = dynamic ? model_open_dynamic(self, path, &mo, &oo, (size_t)capacity)
                 : model_open_static(self, path, &mo, &oo);
done:
    PyMem_Free(shape_entries);
    PyMem_Free(backend_ids);
    Py_XDECREF(backends_fast);
    Py_XDECREF(path_obj);
    return rc;
}

static bool model_ready(ModelObject *self) {
    if (!self->model && !self->dynamic) {
        raise_code(PLX_FAILED_PRECONDITION, "the model was not opened");
        return false;
    }
    return true;
}

/* A list of (name, dtype name, shape) of a model's inputs or outputs. */
static PyObject *io_list(const plx_model *m, bool inputs) {
    size_t n = inputs ? plx_model_input_count(m) : plx_model_output_count(m);
    PyObject *l = PyList_New(0);
    for (size_t i = 0; l && i < n; i++) {
        const plx_model_io *io = inputs ? plx_model_input(m, i) : plx_model_output(m, i);
        if (!list_put(l, Py_BuildValue("(ssN)", io->name, plx_dtype_name(io->info.dtype),
                                       shape_tuple(&io->info)))) {
            Py_CLEAR(l);
        }
    }
    return l;
}

static PyObject *Model_get_inputs(ModelObject *self, void *closure) {
    (void)closure;
    if (!model_ready(self)) {
        return NULL;
    }
    if (!self->model) {
        Py_RETURN_NONE;
    }
    return io_list(self->model, true);
}

static PyObject *Model_get_outputs(ModelObject *self, void *closure) {
    (void)closure;
    if (!model_ready(self)) {
        return NULL;
    }
    if (!self->model) {
        Py_RETURN_NONE;
    }
    return io_list(self->model, false);
}

static PyObject *Model_get_assignment(ModelObject *self, void *closure) {
    (void)closure;
    if (!model_ready(self)) {
        return NULL;
    }
    if (!self->assignment) {
        Py_RETURN_NONE;
    }
    Py_INCREF(self->assignment);
    return self->assignment;
}

static PyObject *Model_get_dynamic(ModelObject *self, void *closure) {
    (void)closure;
    return PyBool_FromLong(self->dynamic != NULL);
}

static PyObject *Model_get_concurrent(ModelObject *self, void *closure) {
    (void)closure;
    return PyBool_FromLong(self->concurrent);
}

static PyObject *Model_get_alignment(ModelObject *self, void *closure) {
    (void)closure;
    return PyLong_FromSize_t(self->alignment);
}

static PyGetSetDef Model_getset[] = {
    {"inputs", (getter)Model_get_inputs, NULL,
     "The inputs as (name, dtype, shape); None for a dynamic model.", NULL},
    {"outputs", (getter)Model_get_outputs, NULL,
     "The outputs as (name, dtype, shape); None for a dynamic model.", NULL},
    {"assignment", (getter)Model_get_assignment, NULL,
     "Where each layer runs: {'layers': [...], 'notes': [...], 'summary': str}; None for a "
     "dynamic model.",
     NULL},
    {"dynamic", (getter)Model_get_dynamic, NULL, "Whether shapes are chosen per run.", NULL},
    {"concurrent", (getter)Model_get_concurrent, NULL,
     "Whether executions from several threads run at the same time (else one at a time).",
     NULL},
    {"alignment", (getter)Model_get_alignment, NULL,
     "The alignment in bytes that input and output memory needs to be used in place.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(Model_memory_report_doc,
             "memory_report() -> list\n\nThe host's memory plan per backend (bytes per "
             "working memory, lower bound, strategy, buffers, tensors); empty when the "
             "backends manage their own memory, and for a dynamic model.");

static PyObject *Model_memory_report(ModelObject *self, PyObject *unused) {
    (void)unused;
    if (!model_ready(self)) {
        return NULL;
    }
    PyObject *l = PyList_New(0);
    size_t n = self->loaded ? plx_loaded_network_memory_report_count(self->loaded) : 0;
    for (size_t i = 0; l && i < n; i++) {
        const plx_memory_report *r = plx_loaded_network_memory_report(self->loaded, i);
        if (!list_put(l, Py_BuildValue("{s:s,s:s,s:n,s:n,s:n,s:n}", "backend", r->backend_id,
                                       "strategy", r->strategy, "bytes", (Py_ssize_t)r->bytes,
                                       "lower_bound", (Py_ssize_t)r->lower_bound,
                                       "buffer_count", (Py_ssize_t)r->buffer_count,
                                       "tensor_count", (Py_ssize_t)r->tensor_count))) {
            Py_CLEAR(l);
        }
    }
    return l;
}

PyDoc_STRVAR(Model_staged_copy_count_doc,
             "staged_copy_count() -> int\n\nHow many inputs and outputs the executions "
             "copied through a staging buffer because their memory missed the alignment "
             "(0 for a dynamic model, whose specialisations count their own).");

static PyObject *Model_staged_copy_count(ModelObject *self, PyObject *unused) {
    (void)unused;
    if (!model_ready(self)) {
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(
        self->loaded ? (unsigned long long)plx_loaded_network_staged_copy_count(self->loaded)
                     : 0ull);
}

PyDoc_STRVAR(Model_dynamic_stats_doc,
             "dynamic_stats() -> dict or None\n\nA dynamic model's cache: hits, misses, "
             "failures, evictions, cached, specialize_ms; None for a static model.");

static PyObject *Model_dynamic_stats(ModelObject *self, PyObject *unused) {
    (void)unused;
    if (!model_ready(self)) {
        return NULL;
    }
    if (!self->dynamic) {
        Py_RETURN_NONE;
    }
    plx_dynamic_stats s;
    plx_dynamic_model_stats(self->dynamic, &s);
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:n,s:d}", "hits", (unsigned long long)s.hits,
                         "misses", (unsigned long long)s.misses, "failures",
                         (unsigned long long)s.failures, "evictions",
                         (unsigned long long)s.evictions, "cached", (Py_ssize_t)s.cached,
                         "specialize_ms", s.specialize_ms);
}

/* One execution's tensors: the caller's buffers and their bindings. */
typedef struct {
    Py_ssize_t input_count, output_count;
    const char **input_names;
    Py_buffer *inputs; /* input_count views; obj NULL when not taken */
    Py_buffer *outputs;
    plx_tensor_binding *in_bind, *out_bind;
    size_t in_bind_count;
    PyObject *result; /* list of (name, output object) */
} run_state;

static void run_state_free(run_state *r) {
    for (Py_ssize_t i = 0; r->inputs && i < r->input_count; i++) {
        if (r->inputs[i].obj) {
            PyBuffer_Release(&r->inputs[i]);
        }
    }
    for (Py_ssize_t i = 0; r->outputs && i < r->output_count; i++) {
        if (r->outputs[i].obj) {
            PyBuffer_Release(&r->outputs[i]);
        }
    }
    PyMem_Free(r->input_names);
    PyMem_Free(r->inputs);
    PyMem_Free(r->outputs);
    PyMem_Free(r->in_bind);
    PyMem_Free(r->out_bind);
    Py_XDECREF(r->result);
}

/* Takes the (name, buffer) pairs of `inputs`: C-contiguous views. */
static bool take_inputs(run_state *r, PyObject *inputs) {
    PyObject *fast = PySequence_Fast(inputs, "inputs must be a sequence of (name, buffer)");
    if (!fast) {
        return false;
    }
    r->input_count = PySequence_Fast_GET_SIZE(fast);
    size_t n = (size_t)(r->input_count ? r->input_count : 1);
    r->input_names = PyMem_Calloc(n, sizeof *r->input_names);
    r->inputs = PyMem_Calloc(n, sizeof *r->inputs);
    r->in_bind = PyMem_Calloc(n, sizeof *r->in_bind);
    if (!r->input_names || !r->inputs || !r->in_bind) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return false;
    }
    bool ok = true;
    for (Py_ssize_t i = 0; ok && i < r->input_count; i++) {
        PyObject *name = NULL, *obj = NULL;
        ok = PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "UO;inputs: (name, buffer)",
                              &name, &obj) &&
             (r->input_names[i] = PyUnicode_AsUTF8(name)) != NULL;
        for (Py_ssize_t k = 0; ok && k < i; k++) {
            if (strcmp(r->input_names[k], r->input_names[i]) == 0) {
                raise_fmt(PLX_INVALID_ARGUMENT, "input '%s' is given twice", r->input_names[i]);
                ok = false;
            }
        }
        if (ok && PyObject_GetBuffer(obj, &r->inputs[i], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
            r->inputs[i].obj = NULL;
            PyErr_Clear();
            raise_fmt(PLX_INVALID_ARGUMENT,
                      "input '%s' is not a C-contiguous buffer (a %s)", r->input_names[i],
                      Py_TYPE(obj)->tp_name);
            ok = false;
        }
    }
    /* The names are owned by the str objects, which the caller's sequence
     * keeps alive for the call. */
    Py_DECREF(fast);
    return ok;
}

/* Binds every input of `m` to the caller's buffer of its name; names given
 * that are not inputs of `m` must be in `valued` (inputs a dynamic model
 * froze into the specialisation). */
static bool bind_inputs(run_state *r, const plx_model *m, const char *const *valued,
                        size_t valued_count) {
    size_t n = plx_model_input_count(m);
    for (Py_ssize_t i = 0; i < r->input_count; i++) {
        bool known = false;
        for (size_t k = 0; k < n && !known; k++) {
            known = strcmp(plx_model_input(m, k)->name, r->input_names[i]) == 0;
        }
        for (size_t k = 0; k < valued_count && !known; k++) {
            known = strcmp(valued[k], r->input_names[i]) == 0;
        }
        if (!known) {
            PyObject *names = io_list(m, true);
            if (names) {
                raise_fmt(PLX_INVALID_ARGUMENT,
                          "'%s' is not an input of the model (its inputs, as (name, dtype, "
                          "shape): %R)",
                          r->input_names[i], names);
                Py_DECREF(names);
            }
            return false;
        }
    }
    r->in_bind_count = 0;
    for (size_t k = 0; k < n; k++) {
        const plx_model_io *io = plx_model_input(m, k);
        Py_ssize_t found = -1;
        for (Py_ssize_t i = 0; i < r->input_count && found < 0; i++) {
            if (strcmp(io->name, r->input_names[i]) == 0) {
                found = i;
            }
        }
        if (found < 0) {
            PyObject *shape = shape_tuple(&io->info);
            if (shape) {
                raise_fmt(PLX_INVALID_ARGUMENT, "input '%s' is missing (%s, shape %R)",
                          io->name, plx_dtype_name(io->info.dtype), shape);
                Py_DECREF(shape);
            }
            return false;
        }
        Py_buffer *v = &r->inputs[found];
        if (!check_buffer(v, &io->info, "input", io->name)) {
            return false;
        }
        r->in_bind[r->in_bind_count++] =
            (plx_tensor_binding){io->binding_id, v->buf, (size_t)v->len, 0};
    }
    return true;
}

/* Makes the outputs of `m` with alloc(name, dtype, shape), each a writable
 * C-contiguous buffer of the output's dtype and shape, and binds them. */
static bool bind_outputs(run_state *r, const plx_model *m, PyObject *alloc) {
    size_t n = plx_model_output_count(m);
    r->output_count = (Py_ssize_t)n;
    r->outputs = PyMem_Calloc(n ? n : 1, sizeof *r->outputs);
    r->out_bind = PyMem_Calloc(n ? n : 1, sizeof *r->out_bind);
    r->result = PyList_New(0);
    if (!r->outputs || !r->out_bind || !r->result) {
        if (!PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        return false;
    }
    for (size_t k = 0; k < n; k++) {
        const plx_model_io *io = plx_model_output(m, k);
        PyObject *obj = PyObject_CallFunction(alloc, "ssN", io->name,
                                              plx_dtype_name(io->info.dtype),
                                              shape_tuple(&io->info));
        if (!obj) {
            return false;
        }
        if (PyObject_GetBuffer(obj, &r->outputs[k],
                               PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) != 0) {
            r->outputs[k].obj = NULL;
            PyErr_Clear();
            raise_fmt(PLX_INVALID_ARGUMENT,
                      "output '%s': a %s is not a writable C-contiguous buffer", io->name,
                      Py_TYPE(obj)->tp_name);
            Py_DECREF(obj);
            return false;
        }
        if (!check_buffer(&r->outputs[k], &io->info, "output", io->name) ||
            !list_put(r->result, Py_BuildValue("(sN)", io->name, obj))) {
            return false;
        }
        r->out_bind[k] = (plx_tensor_binding){io->binding_id, r->outputs[k].buf,
                                              (size_t)r->outputs[k].len, 0};
    }
    return true;
}

/* One execution of a static model: on a working memory from the pool when
 * executions may run at once, else on the network's own (one at a time). */
static bool run_static(ModelObject *self, run_state *r) {
    plx_working_memory *wm = NULL;
    if (self->concurrent && self->pool_count > 0) {
        wm = self->pool[--self->pool_count];
    }
    plx_execute_args a;
    plx_execute_args_init(&a);
    a.inputs = r->in_bind;
    a.input_count = r->in_bind_count;
    a.outputs = r->out_bind;
    a.output_count = (size_t)r->output_count;
    plx_status st = NULL;
    Py_BEGIN_ALLOW_THREADS
    if (self->concurrent && !wm) {
        st = plx_loaded_network_create_working_memory(self->loaded, &wm);
    }
    if (!st) {
        st = plx_loaded_network_execute_with(self->loaded, wm, &a);
    }
    Py_END_ALLOW_THREADS
    if (wm) {
        if (self->pool_count == self->pool_capacity) {
            size_t cap = self->pool_capacity ? 2 * self->pool_capacity : 4;
            plx_working_memory **p = PyMem_Realloc(self->pool, cap * sizeof *p);
            if (p) {
                self->pool = p;
                self->pool_capacity = cap;
            }
        }
        if (self->pool_count < self->pool_capacity) {
            self->pool[self->pool_count++] = wm;
        } else {
            plx_working_memory_destroy(&wm);
        }
    }
    if (st) {
        raise_status(st, NULL);
        return false;
    }
    return true;
}

/* One execution of a dynamic model: the specialisation for the inputs'
 * shapes (small inputs offered by value too, for the inputs the model
 * needs the values of), then its network. */
static bool run_dynamic(ModelObject *self, run_state *r, PyObject *alloc) {
    size_t n = (size_t)(r->input_count ? r->input_count : 1);
    plx_model_input_shape *shapes = PyMem_Calloc(n, sizeof *shapes);
    plx_model_constant_input *values = PyMem_Calloc(n, sizeof *values);
    size_t valued_max = (size_t)r->input_count;
    const char **valued = PyMem_Calloc(valued_max ? valued_max : 1, sizeof *valued);
    if (!shapes || !values || !valued) {
        PyMem_Free(shapes);
        PyMem_Free(values);
        PyMem_Free(valued);
        PyErr_NoMemory();
        return false;
    }
    plx_dynamic_signature sig = {shapes, 0, values, 0};
    for (Py_ssize_t i = 0; i < r->input_count; i++) {
        const Py_buffer *v = &r->inputs[i];
        if (v->ndim > PLX_MAX_RANK) {
            raise_fmt(PLX_INVALID_ARGUMENT, "input '%s' has rank %d, at most %d",
                      r->input_names[i], v->ndim, PLX_MAX_RANK);
            PyMem_Free(shapes);
            PyMem_Free(values);
            PyMem_Free(valued);
            return false;
        }
        plx_tensor_info info = {.dtype = dtype_of_format(v->format, v->itemsize),
                                .rank = (uint32_t)v->ndim};
        for (int d = 0; d < v->ndim; d++) {
            info.dims[d] = (int64_t)v->shape[d];
        }
        if (info.dtype != PLX_DTYPE_INVALID && v->len <= PLX_DYNAMIC_MAX_VALUE_BYTES) {
            values[sig.value_count++] = (plx_model_constant_input){r->input_names[i], info, v->buf};
        } else {
            plx_model_input_shape *s = &shapes[sig.shape_count++];
            s->name = r->input_names[i];
            s->rank = info.rank;
            memcpy(s->dims, info.dims, sizeof s->dims);
        }
    }
    plx_specialization *sp = NULL;
    plx_status st;
    Py_BEGIN_ALLOW_THREADS
    st = plx_dynamic_model_acquire(self->dynamic, &sig, &sp);
    Py_END_ALLOW_THREADS
    PyMem_Free(shapes);
    PyMem_Free(values);
    if (st) {
        PyMem_Free(valued);
        raise_status(st, NULL);
        return false;
    }
    size_t valued_count = plx_dynamic_model_valued_inputs(self->dynamic, valued, valued_max);
    if (valued_count > valued_max) {
        valued_count = valued_max;
    }
    const plx_model *m = plx_specialization_model(sp);
    bool ok = bind_inputs(r, m, valued, valued_count) && bind_outputs(r, m, alloc);
    PyMem_Free(valued);
    st = NULL;
    Py_BEGIN_ALLOW_THREADS
    if (ok) {
        st = plx_loaded_network_execute(plx_specialization_network(sp), r->in_bind,
                                        r->in_bind_count, r->out_bind, (size_t)r->output_count);
    }
    plx_dynamic_model_release(self->dynamic, &sp);
    Py_END_ALLOW_THREADS
    if (st) {
        raise_status(st, NULL);
        return false;
    }
    return ok;
}

PyDoc_STRVAR(Model_run_doc,
             "run(inputs, alloc) -> list\n\nExecutes the model once. `inputs` is a sequence "
             "of (name, buffer), each C-contiguous with the input's dtype and shape; "
             "alloc(name, dtype, shape) returns a writable buffer for each output. Returns "
             "[(name, output buffer object)] in the model's output order. The GIL is "
             "released during the execution.");

static PyObject *Model_run(ModelObject *self, PyObject *args) {
    PyObject *inputs = NULL, *alloc = NULL;
    if (!PyArg_ParseTuple(args, "OO:run", &inputs, &alloc) || !model_ready(self)) {
        return NULL;
    }
    if (!PyCallable_Check(alloc)) {
        PyErr_SetString(PyExc_TypeError, "run: alloc must be callable");
        return NULL;
    }
    run_state r = {0};
    bool ok = take_inputs(&r, inputs);
    if (ok && self->dynamic) {
        ok = run_dynamic(self, &r, alloc);
    } else if (ok) {
        ok = bind_inputs(&r, self->model, NULL, 0) && bind_outputs(&r, self->model, alloc) &&
             run_static(self, &r);
    }
    PyObject *result = NULL;
    if (ok) {
        result = r.result;
        r.result = NULL;
    }
    run_state_free(&r);
    return result;
}

static PyMethodDef Model_methods[] = {
    {"run", (PyCFunction)Model_run, METH_VARARGS, Model_run_doc},
    {"memory_report", (PyCFunction)Model_memory_report, METH_NOARGS, Model_memory_report_doc},
    {"staged_copy_count", (PyCFunction)Model_staged_copy_count, METH_NOARGS,
     Model_staged_copy_count_doc},
    {"dynamic_stats", (PyCFunction)Model_dynamic_stats, METH_NOARGS, Model_dynamic_stats_doc},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(Model_doc,
             "Model(runtime, path, backends=None, allow_fallback=True, dynamic=False, "
             "shapes=None, cache_capacity=0, format=None)\n\n"
             "A model file loaded on `runtime`: opened, its layers assigned to the backends "
             "in order of preference (`backends`; None: every available one), with fallback "
             "to the next that runs a layer, and loaded. `shapes` fixes open input dims; with "
             "`dynamic` the shapes come from each run's inputs (plexus/dynamic.h).");

static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "plexus._plexus.Model",
    .tp_basicsize = sizeof(ModelObject),
    .tp_dealloc = (destructor)Model_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = Model_doc,
    .tp_methods = Model_methods,
    .tp_getset = Model_getset,
    .tp_init = (initproc)Model_init,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------------ */
/* Module                                                                     */
/* ------------------------------------------------------------------------ */

static struct PyModuleDef plexus_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "plexus._plexus",
    .m_doc = "The C API of Plexus for the plexus package (docs/python.md).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__plexus(void);

PyMODINIT_FUNC PyInit__plexus(void) {
    PyObject *errors = PyImport_ImportModule("plexus.errors");
    if (!errors) {
        return NULL;
    }
    errors_by_code = PyObject_GetAttrString(errors, "BY_CODE");
    Py_DECREF(errors);
    if (!errors_by_code || PyType_Ready(&RuntimeType) < 0 || PyType_Ready(&ModelType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&plexus_module);
    if (!m) {
        return NULL;
    }
    Py_INCREF(&RuntimeType);
    Py_INCREF(&ModelType);
    if (PyModule_AddObject(m, "Runtime", (PyObject *)&RuntimeType) < 0 ||
        PyModule_AddObject(m, "Model", (PyObject *)&ModelType) < 0 ||
        PyModule_AddStringConstant(m, "version", plx_version_string()) < 0 ||
        PyModule_AddIntConstant(m, "abi_version", (long)plx_abi_version()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
