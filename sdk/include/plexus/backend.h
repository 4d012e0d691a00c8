/* The Plexus backend ABI.
 *
 * Everything a backend (a plug-in shared object, or a table compiled into an
 * application) shares with the host. Includes only standard headers and the
 * other SDK headers. The contract, with numbered requirements, is
 * docs/backend-abi.md; the comments here say the same thing per field, and
 * name the requirement (R-n) where one applies.
 *
 * Growth rules: every struct that crosses the boundary starts with
 * `struct_size`, and only ever grows at its end. A reader never touches a
 * field that lies beyond the `struct_size` the writer declared; a field
 * added in a later minor version is therefore "absent" (NULL / zero) for a
 * peer built earlier. The host requires at least the size of ABI 1.0's
 * descriptor and function table (through `option_count` and
 * `get_capabilities`). Optional function pointers may be NULL; the host then
 * supplies a default or treats the feature as unsupported. The entry
 * point's name and signature, the descriptor's first two fields and the
 * host table's first three never change, in any major version. */
#ifndef PLEXUS_BACKEND_H
#define PLEXUS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plexus/abi_version.h>
#include <plexus/memory.h>
#include <plexus/ops.h>
#include <plexus/status.h>
#include <plexus/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define PLX_BACKEND_EXPORT __attribute__((visibility("default")))
#define PLX_PRINTF_LIKE(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define PLX_BACKEND_EXPORT
#define PLX_PRINTF_LIKE(fmt_index, first_arg)
#endif

/* The size a struct had when a given field was its last: the value to write
 * in, or compare against, `struct_size`. */
#define PLX_STRUCT_SIZE_UPTO(type, last_field) \
    (offsetof(type, last_field) + sizeof(((type *)0)->last_field))

/* ------------------------------------------------------------------------ */
/* Host services                                                              */
/* ------------------------------------------------------------------------ */

typedef enum plx_log_level {
    PLX_LOG_ERROR = 0,
    PLX_LOG_WARN = 1,
    PLX_LOG_INFO = 2,
    PLX_LOG_DEBUG = 3
} plx_log_level;

typedef struct plx_host plx_host;
/* ABI 1.4: a backend's own profiling event, defined below. */
typedef struct plx_profile_event plx_profile_event;

/* The table of services the host hands to a backend (R-3: a backend links
 * nothing from libplexus and reaches the host only through this table).
 *
 * Ownership and lifetime: owned by the host. The pointer given to the entry
 * point is valid only during that call. The pointer given to `create` is
 * valid until the host calls `destroy` on the backend it created; a backend
 * may keep it in its own state for that long, but never in a global, since
 * one plug-in file can be loaded by several runtimes at once, each with its
 * own table.
 *
 * Thread-safety: every function in the table may be called from any thread
 * at any time while the table is valid. */
struct plx_host {
    /* PLX_STRUCT_SIZE_UPTO(plx_host, <last field the host knows>). */
    uint32_t struct_size;
    /* The ABI version the host implements, PLX_MAKE_ABI_VERSION(major, minor). */
    uint32_t abi_version;

    /* Writes one log line attributed to this backend. `fmt` is a printf
     * format; no trailing newline is needed. Messages below the runtime's
     * log level are dropped cheaply. Messages logged at PLX_LOG_ERROR during
     * the entry point are kept by the host and quoted in the rejection
     * reason when the entry returns NULL; `check_available` and
     * `create` report through the status they return instead.
     * This field and the two before it keep their place in every major
     * version, so a backend can always say why it refuses a host. */
    void (*log)(const plx_host *host, plx_log_level level, const char *fmt, ...)
        PLX_PRINTF_LIKE(3, 4);

    /* Allocates `size` bytes aligned to `alignment`, which is 0 (meaning
     * alignof(max_align_t)) or a power of two. Returns NULL on failure or
     * on a bad alignment. `size` 0 returns a unique pointer that must still
     * be freed. Memory must be released with `free` of the same table. */
    void *(*alloc)(const plx_host *host, size_t size, size_t alignment);
    /* Releases memory from `alloc`; NULL is ignored. */
    void (*free)(const plx_host *host, void *ptr);

    /* Creates a status with `code` and a printf-formatted message. `code`
     * must not be PLX_OK (a status object always means failure); PLX_OK is
     * turned into PLX_INTERNAL. Ownership passes to the caller, who returns it to the host
     * (which then owns it) or releases it with `status_free`. Never returns
     * NULL: on allocation failure it returns a preallocated out-of-memory
     * status, which may be freed like any other. */
    plx_status (*status_create)(const plx_host *host, plx_status_code code,
                                const char *fmt, ...) PLX_PRINTF_LIKE(3, 4);
    /* The code of `status`; PLX_OK for NULL. */
    plx_status_code (*status_code)(const plx_host *host, plx_status status);
    /* The message of `status`, valid until the status is freed; "OK" for NULL. */
    const char *(*status_message)(const plx_host *host, plx_status status);
    /* Releases a status the backend owns; NULL is ignored. */
    void (*status_free)(const plx_host *host, plx_status status);

    /* Reserved for the host; backends must not read or write it. */
    void *host_data;

    /* ---- ABI 1.4: profiling by backends (R-25) ----------------------------
     * Present when struct_size reaches them (a 1.3 host has neither): test
     * with PLX_STRUCT_SIZE_UPTO(plx_host, record_event) before calling. */

    /* The host's clock in nanoseconds (CLOCK_MONOTONIC), the clock of the
     * host's own trace events. A backend reads it beside a reading of its
     * device's clock to give record_event a clock mapping. */
    uint64_t (*now_ns)(const plx_host *host);
    /* Records one event of the backend's own (a kernel, a transfer) in the
     * runtime's trace, beside the host's events for the same layers
     * . The host copies what it keeps; `event` and its strings are
     * the backend's and valid during the call only. Dropped at the cost of
     * one flag read when the runtime records no trace; a malformed event
     * (NULL, too small, no name) is dropped too. Never fails, never
     * blocks on anything but the trace's own lock. */
    void (*record_event)(const plx_host *host, const plx_profile_event *event);
};

/* A backend's own profiling event, for plx_host.record_event. */
struct plx_profile_event {
    /* PLX_STRUCT_SIZE_UPTO(plx_profile_event, <last field the backend knows>). */
    uint32_t struct_size;
    /* The loaded network's id (plx_factory_params.network_id, or
     * plx_queue_params.network_id); 0 when the event belongs to none. */
    uint32_t network_id;
    /* What ran: a kernel's or a transfer's name. Not NULL. */
    const char *name;
    /* A short kind ("kernel", "transfer", "wait"); NULL reads as "device". */
    const char *category;
    /* The layer the work belongs to (plx_enqueue_params.layer_name), or NULL. */
    const char *layer;
    /* Start and duration in nanoseconds on the backend's clock. */
    uint64_t start_ns;
    uint64_t duration_ns;
    /* The clock mapping: the backend's clock read `clock_sync_backend_ns`
     * at the moment the host's clock (now_ns) read `clock_sync_host_ns`.
     * The host places the event at clock_sync_host_ns + (start_ns -
     * clock_sync_backend_ns). Both 0: start_ns is on the host's clock
     * already. */
    uint64_t clock_sync_backend_ns;
    uint64_t clock_sync_host_ns;
};

/* ------------------------------------------------------------------------ */
/* Options and capabilities                                                   */
/* ------------------------------------------------------------------------ */

/* One `key=value` option for a backend instance. Both strings are owned by
 * the host and valid only during the `create` call. */
typedef struct plx_option {
    const char *key;
    const char *value;
} plx_option;

/* Describes one option a backend accepts. The host refuses, before calling
 * `create`, any key that is not in the descriptor's list, so a backend
 * sees only keys it declared. Layout frozen for ABI major 1: new facts about
 * options would come as a new array, never as fields appended here, because
 * arrays of this struct are indexed with its size. */
typedef struct plx_option_info {
    const char *key;           /* [a-z][a-z0-9_]*, unique in the list */
    const char *description;   /* one line, for `plexus info` */
    const char *default_value; /* as text; NULL when there is no default */
} plx_option_info;

typedef enum plx_value_type {
    PLX_VALUE_BOOL = 1,
    PLX_VALUE_INT = 2,
    PLX_VALUE_STRING = 3
} plx_value_type;

/* One capability: a typed key/value fact about a created backend instance.
 * Layout frozen for ABI major 1 (see plx_option_info).
 *
 * Keys are either standard (one of the PLX_CAP_* names below, always of the
 * type given there) or namespaced vendor keys, `vendor.name` with each part
 * [a-z][a-z0-9_]*, which the host lists untouched. A capability
 * counts only when it is present and, for booleans, true. */
typedef struct plx_capability {
    const char *key;
    plx_value_type type;
    bool bool_value;          /* meaningful when type == PLX_VALUE_BOOL */
    int64_t int_value;        /* meaningful when type == PLX_VALUE_INT */
    const char *string_value; /* meaningful when type == PLX_VALUE_STRING; not NULL */
} plx_capability;

/* Standard capability keys of ABI 1.0, all boolean. */
/* Executions with different working-memory handles may run concurrently. */
#define PLX_CAP_ASYNC_EXECUTION "async_execution"
/* Intermediate tensors may live in memory the host plans and allocates. */
#define PLX_CAP_EXTERNALLY_MANAGED_MEMORY "externally_managed_memory"
/* Network inputs/outputs may be imported once and reused across executions. */
#define PLX_CAP_PREIMPORT_IO_TENSORS "preimport_io_tensors"
/* The backend can allocate protected (secure) memory. */
#define PLX_CAP_PROTECTED_CONTENT_ALLOCATION "protected_content_allocation"
/* Constant tensors may be fed to workloads as ordinary inputs. */
#define PLX_CAP_CONSTANT_TENSORS_AS_INPUTS "constant_tensors_as_inputs"
/* The backend computes in IEEE half precision. */
#define PLX_CAP_FP16 "fp16"
/* Memory sources the backend's tensor handles can import caller memory from
 * (import) or lend their memory to another backend as (export). */
#define PLX_CAP_IMPORT_MALLOC "memory_import_malloc"
#define PLX_CAP_IMPORT_DMA_BUF "memory_import_dma_buf"
#define PLX_CAP_IMPORT_DMA_BUF_PROTECTED "memory_import_dma_buf_protected"
#define PLX_CAP_EXPORT_MALLOC "memory_export_malloc"
#define PLX_CAP_EXPORT_DMA_BUF "memory_export_dma_buf"
#define PLX_CAP_EXPORT_DMA_BUF_PROTECTED "memory_export_dma_buf_protected"

/* Standard capability key of ABI 1.2, of type PLX_VALUE_INT: the alignment
 * in bytes (a power of two, 1 to 4096) that malloc memory given to
 * import_tensor_handle must have. Absent: the tensor's element size. The
 * host never hands the backend a pointer that misses it: it copies such a
 * caller buffer through an aligned staging buffer of its own and reports
 * the copy. */
#define PLX_CAP_IMPORT_ALIGNMENT "import_alignment"

/* Standard capability keys of ABI 1.4. */
/* Boolean: the backend's workloads may be enqueued on a queue per working
 * memory (create_queue, enqueue_workload) and complete later, signalling a
 * fence the host waits on; the function group of R-24 is then required. */
#define PLX_CAP_QUEUED_EXECUTION "queued_execution"
/* String, non-empty, at most 127 bytes: backends that report the same
 * domain accept each other's fences in plx_enqueue_params.wait_fences and
 * wait for them without the host (two OpenCL backends on one context). A
 * queued backend without it gets only its own fences, never another's. */
#define PLX_CAP_FENCE_DOMAIN "fence_domain"

/* Boolean: with externally_managed_memory, the buffers of the
 * backend's memory plan come from its allocate_planned_buffer (device
 * memory), bound to handles through import_external_memory; the three
 * functions of R-26 are then required. */
#define PLX_CAP_ALLOCATES_PLANNED_MEMORY "allocates_planned_memory"
/* Integer, a power of two from 1 to 4096: the alignment the host
 * gives the places of the backend's planned tensors within their buffers
 * (at least 64 and import_alignment in any case), for a backend whose
 * bindings need more than its caller memory does (an OpenCL sub-buffer's
 * origin). Absent: 1, no demand beyond those. */
#define PLX_CAP_PLANNED_ALIGNMENT "planned_alignment"
/* String: the kinds of plx_external_memory that the backend's
 * import_external_memory takes as caller memory (zero-copy inputs and
 * outputs, pre-imports), comma-separated without spaces:
 * "gpu_opencl.cl_mem", "acme.device_ptr,dma_buf". Each kind is "host",
 * "dma_buf" or a namespaced vendor kind (`vendor.name`), 1 to 63 bytes of
 * [a-z0-9_.]. import_external_memory is then required. Absent: the backend
 * takes caller memory only through import_tensor_handle, by source. */
#define PLX_CAP_IMPORT_MEMORY_KINDS "import_memory_kinds"

/* Memory sources as bit flags, for APIs that take a set of them. */
typedef enum plx_memory_source {
    PLX_MEMORY_SOURCE_MALLOC = 1u << 0,
    PLX_MEMORY_SOURCE_DMA_BUF = 1u << 1,
    PLX_MEMORY_SOURCE_DMA_BUF_PROTECTED = 1u << 2,
    /* Only in an application's plx_tensor_binding (plexus/network.h), never
     * in a backend's source sets: the binding's `data` points to a
     * plx_external_memory that describes the memory by kind (ABI 1.4). */
    PLX_MEMORY_SOURCE_EXTERNAL = 1u << 8
} plx_memory_source;

/* ------------------------------------------------------------------------ */
/* The backend                                                                */
/* ------------------------------------------------------------------------ */

/* A created backend instance. The backend defines `struct plx_backend`; the
 * host only passes the pointer back. */
typedef struct plx_backend plx_backend;

/* ABI 1.1: the objects a backend creates to run networks. Each is defined by
 * the backend; the host only passes the pointers back.
 * - A factory exists once per loaded network and backend: it creates
 *   that network's tensor handles and workloads.
 * - A tensor handle is the backend's memory for one tensor.
 * - A workload runs one layer, bound to its input and output handles. */
typedef struct plx_factory plx_factory;
typedef struct plx_tensor_handle plx_tensor_handle;
typedef struct plx_workload plx_workload;

/* What the host asks of a factory. Owned by the host; valid during
 * `create_factory` only. */
typedef struct plx_factory_params {
    uint32_t struct_size;
    /* Memory sources (plx_memory_source bits) the network may import into
     * this backend's handles as caller memory or another backend's (0 when
     * the application disabled import; host-planned memory, R-21, is
     * imported regardless), and export this backend's memory to other
     * backends through. */
    uint32_t import_sources;
    uint32_t export_sources;
    /* The loaded network's id, for the backend's own logs. */
    uint32_t network_id;
} plx_factory_params;

/* How one tensor handle will be used. Owned by the host; valid during
 * `create_tensor_handle` only. */
typedef struct plx_tensor_handle_params {
    uint32_t struct_size;
    /* true: the backend owns the memory (allocate_tensor_handle gives it,
     * release_tensor_handle takes it back). false: the host imports memory
     * into the handle and never calls allocate: at every execution (a
     * caller's buffer for a zero-copy input or output, or the producer's
     * memory for an import layer), or once per working-memory allocation
     * (host-planned memory, R-21). import_sources lists the sources the
     * host may import from. */
    bool managed;
    uint32_t import_sources;
    /* Memory sources through which the host will lend this handle's memory
     * to another backend (an import layer reads it in place): the memory must
     * then be reachable that way, e.g. host-visible for malloc. 0: none. */
    uint32_t export_sources;
} plx_tensor_handle_params;

/* ------------------------------------------------------------------------ */
/* ABI 1.4: queued execution                                           */
/* ------------------------------------------------------------------------ */

/* A queue runs the workloads enqueued on it in order, after the call that
 * enqueued them returns; a fence says when the work enqueued before it is
 * done, and how it ended. Both are defined by the backend; the host only
 * passes the pointers back. */
typedef struct plx_queue plx_queue;
typedef struct plx_fence plx_fence;

/* What the host asks of a queue. Owned by the host; valid during
 * `create_queue` only. */
typedef struct plx_queue_params {
    uint32_t struct_size;
    /* The loaded network's id, for the backend's logs and events. */
    uint32_t network_id;
} plx_queue_params;

/* One workload to enqueue. Owned by the host; valid during
 * `enqueue_workload` only, except `layer_name` (below). */
typedef struct plx_enqueue_params {
    uint32_t struct_size;
    /* A workload of the queue's factory, of the working memory the queue
     * serves. */
    plx_workload *workload;
    /* Fences the work must not start before: fences this backend created,
     * or created by a backend reporting the same fence_domain. The host
     * may destroy them once the call returns; a backend that needs them
     * longer keeps its own reference (an OpenCL event it retains). When a
     * wait fence reports a failure, the work that waits on it fails with
     * that verdict, so that the wait on this queue reports it: the host
     * waits on the last queue only. */
    plx_fence *const *wait_fences;
    uint32_t wait_fence_count;
    /* The layer's name, valid while the network is loaded: for the error a
     * fence reports and for profiling events. Not NULL. */
    const char *layer_name;
    /* true: the runtime is recording a trace for this execution, and the
     * backend may record device events for this work. false: it
     * should spend nothing on profiling. */
    bool profile;
} plx_enqueue_params;

/* ------------------------------------------------------------------------ */
/* ABI 1.4: typed external memory and backend allocators               */
/* ------------------------------------------------------------------------ */

/* Kinds of plx_external_memory. Besides these two, a kind may be a
 * namespaced vendor kind, `vendor.name` ("gpu_opencl.cl_mem"), which only
 * the backends that define it interpret. */
/* `handle` is a host pointer, readable and writable by the host. */
#define PLX_MEMORY_KIND_HOST "host"
/* `fd` is a dma-buf file descriptor. */
#define PLX_MEMORY_KIND_DMA_BUF "dma_buf"

/* A piece of memory described by its kind, for the calls that hand memory
 * across the boundary. Owned by whoever fills it; the strings and the
 * callback stay valid as long as the memory. */
typedef struct plx_external_memory {
    uint32_t struct_size;
    /* PLX_MEMORY_KIND_HOST, PLX_MEMORY_KIND_DMA_BUF or a vendor kind. Not NULL. */
    const char *kind;
    /* The object: a host pointer (host), a cl_mem or a device pointer
     * (vendor kinds); NULL for dma_buf. */
    void *handle;
    /* The dma-buf's file descriptor; -1 for other kinds. */
    int fd;
    /* The memory meant: bytes [offset, offset + size) of the object. */
    uint64_t offset;
    uint64_t size;
    /* Optional: called once when the memory's owner (the side that filled
     * this) is to give it back; NULL: nothing to call. */
    void (*release)(void *release_data);
    void *release_data;
} plx_external_memory;

/* One buffer of a memory plan the host asks a backend to allocate. Owned
 * by the host; valid during `allocate_planned_buffer` only. */
typedef struct plx_planned_buffer_params {
    uint32_t struct_size;
    /* Bytes, at least 1. */
    uint64_t size;
    /* The largest alignment among the blocks placed in the buffer: each
     * block lies at a multiple of its own alignment from the buffer's
     * start, so a buffer at least this aligned aligns them all. */
    uint64_t alignment;
    /* The loaded network's id and the buffer's index in the plan, for the
     * backend's logs. */
    uint32_t network_id;
    uint32_t buffer;
} plx_planned_buffer_params;

/* ------------------------------------------------------------------------ */
/* ABI 1.2: graph optimisation by backends                             */
/* ------------------------------------------------------------------------ */

/* Where a tensor of a subgraph comes from: output `slot` of subgraph layer
 * `layer`, or, when `layer` is PLX_SUBGRAPH_EXTERNAL, the subgraph's
 * external input number `slot`. */
#define PLX_SUBGRAPH_EXTERNAL UINT32_MAX
typedef struct plx_subgraph_source {
    uint32_t layer;
    uint32_t slot;
} plx_subgraph_source;

/* One layer of a subgraph. */
typedef struct plx_subgraph_layer {
    /* The layer as check_layer saw it (name, op, descriptor, infos,
     * constant inputs). */
    plx_layer_view view;
    /* view.input_count entries: where each input comes from. */
    const plx_subgraph_source *inputs;
    /* view.output_count entries each: how many subgraph layers read the
     * output slot, and whether anything outside the subgraph reads it
     * (another backend's layer or a network output). */
    const uint32_t *readers;
    const bool *escapes;
} plx_subgraph_layer;

/* A maximal connected set of compute layers the optimiser assigned to this
 * backend (constants, network inputs and outputs are not part of it; they
 * are external inputs or readers outside). Owned by the host, valid during
 * optimize_subgraph only; constant data (views' input_constants,
 * external_constants) stays valid as long as the network. */
typedef struct plx_subgraph_view {
    uint32_t struct_size;
    uint32_t layer_count;
    const plx_subgraph_layer *layers;    /* in execution (topological) order */
    uint32_t external_input_count;
    const plx_tensor_info *external_inputs; /* their infos */
    /* Per external input: its data when it is a constant, else NULL. */
    const void *const *external_constants;
} plx_subgraph_view;

/* A helper for optimize_subgraph: the subgraph layer that alone reads
 * output 0 of layer `a` (nothing outside the subgraph reads it, and no
 * other subgraph layer), or UINT32_MAX; *out_input (may be NULL) gets the
 * input slot at which it reads it. The usual test before fusing `a` with
 * what follows it. */
static inline uint32_t plx_subgraph_sole_reader(const plx_subgraph_view *g, uint32_t a,
                                                uint32_t *out_input) {
    const plx_subgraph_layer *l = &g->layers[a];
    if (l->view.output_count < 1 || l->readers[0] != 1 || l->escapes[0]) {
        return UINT32_MAX;
    }
    for (uint32_t r = a + 1; r < g->layer_count; r++) { /* readers come later */
        const plx_subgraph_layer *c = &g->layers[r];
        for (uint32_t k = 0; k < c->view.input_count; k++) {
            if (c->inputs[k].layer == a && c->inputs[k].slot == 0) {
                if (out_input) {
                    *out_input = k;
                }
                return r;
            }
        }
    }
    return UINT32_MAX;
}

/* One replacement: the layers `layers` (indices into the subgraph, at least
 * one, no layer twice) become one PLX_OP_PRECOMPILED layer.
 * - inputs: the new layer's inputs, in order. Each must be a tensor that a
 *   replaced layer reads from outside the replaced set (an external input,
 *   or an output of a subgraph layer that is not replaced); each at most
 *   once. The backend may leave out inputs it has no use for.
 * - outputs: the new layer's outputs, in order: output slots of replaced
 *   layers, each at most once. Every replaced output that something outside
 *   the replaced set reads must be listed; its readers read the new layer's
 *   output instead, with the same tensor info.
 * - kind, data, size: the plx_precompiled_desc the new layer gets (the host
 *   copies both; kind non-empty, at most 63 bytes; size at most 16 MiB).
 * The replaced set must be convex: no path leads from one replaced layer to
 * another through a layer that is not replaced. Valid during substitute. */
typedef struct plx_substitution {
    uint32_t struct_size;
    const uint32_t *layers;
    uint32_t layer_count;
    const plx_subgraph_source *inputs;
    uint32_t input_count;
    const plx_subgraph_source *outputs;
    uint32_t output_count;
    const char *kind;
    const void *data;
    size_t size;
} plx_substitution;

/* What a backend may do with the subgraph it is offered, through the
 * host's functions. Owned by the host, valid during optimize_subgraph. */
typedef struct plx_subgraph_editor plx_subgraph_editor;
struct plx_subgraph_editor {
    uint32_t struct_size;
    /* Replaces layers by one precompiled layer. The host checks the
     * substitution at once and returns PLX_INVALID_ARGUMENT naming what is
     * wrong (an index out of range or already used, an input that is not
     * read from outside the set, a missing output, a set that is not
     * convex, ...): then nothing changed. Accepted, the host later asks
     * check_layer about the new layer; a refusal there rejects the
     * substitution, with a note. Later calls may not reuse the layers. */
    plx_status (*substitute)(const plx_subgraph_editor *editor,
                             const plx_substitution *substitution);
    /* Gives layer `layer` back: the optimiser offers it to the backends
     * after this one in the preference list, recording `reason` (copied;
     * not NULL) as this backend's refusal. PLX_INVALID_ARGUMENT for an
     * index out of range or a layer already substituted or given back. */
    plx_status (*give_back)(const plx_subgraph_editor *editor, uint32_t layer,
                            const char *reason);
    void *host_data; /* the host's; do not touch */
};

/* The backend's function table. Owned by the backend; it must stay valid and
 * unchanged while the plug-in is loaded (a `static const` object). */
typedef struct plx_backend_functions {
    /* PLX_STRUCT_SIZE_UPTO(plx_backend_functions, <last field the backend knows>). */
    uint32_t struct_size;

    /* Optional. Says whether the backend can work on this machine (a device
     * is present, a driver answers). Returns NULL when available; otherwise
     * a status from host->status_create whose message says why not (code
     * PLX_UNAVAILABLE). An unavailable backend is listed with that reason and
     * is not created. NULL function: always available.
     * Called at most once per runtime, before `create`, on the thread that
     * creates the runtime; `host` is valid only during the call. Must not
     * crash when no device exists. */
    plx_status (*check_available)(const plx_host *host);

    /* Required. Creates an instance with the given options (only keys that
     * the descriptor declares, each at most once; values unchecked; the host
     * does not fill in defaults, so absent keys take the backend's own). On success writes
     * *out_backend and returns NULL. On failure returns a status naming the
     * bad option or the failing step, and leaves *out_backend NULL; the
     * backend then holds no resources. `host` stays valid until `destroy`.
     * Called once per runtime, on the thread that creates the runtime. */
    plx_status (*create)(const plx_host *host, const plx_option *options,
                         size_t option_count, plx_backend **out_backend);

    /* Required. Releases an instance created by `create` and everything it
     * holds. Called once, after every other use of the instance has
     * returned, on the thread that destroys the runtime. */
    void (*destroy)(plx_backend *backend);

    /* Optional. Writes the instance's capabilities: an array owned by the
     * backend, valid and unchanged until `destroy`. Returns NULL on success.
     * The host copies the list once, right after `create`, and validates it
     * an invalid list rejects the plug-in. NULL function: no
     * capabilities. */
    plx_status (*get_capabilities)(plx_backend *backend,
                                   const plx_capability **out_capabilities,
                                   size_t *out_count);

    /* ---- ABI 1.1: running networks (R-16 to R-19) ----------------------
     * A backend runs layers when it sets `check_layer`; then every other
     * function of this group is required, except the ones marked optional.
     * A backend that leaves `check_layer` NULL (or is built for ABI 1.0) is
     * listed but assigned no layers.
     *
     * Threads: calls on the handles and workloads of one working
     * memory (one execution's objects) never overlap. A network loaded for
     * asynchronous execution needs the backend to report async_execution:
     * then executions of different working memories run at the same time,
     * so execute_workload, map/unmap and import/unimport on different
     * handles and workloads of one factory may be called concurrently, a
     * constant's handle (shared by every working memory) may be mapped by
     * several executions at once, and creating or destroying a working
     * memory's handles and workloads may run beside them. Without async_execution the host serialises every call
     * of a loaded network. */

    /* Says whether the backend can run `layer` (op, descriptor, input and
     * output infos, all already validated by the host: a known op, slot
     * counts within the op's, non-NULL slot arrays, a descriptor of at least
     * the op's descriptor size when it has one, and infos with a known
     * dtype, rank <= PLX_MAX_RANK, dims >= 0 and a byte size of at most
     * INT64_MAX / 8; docs/backend-abi.md, "What the host guarantees about a
     * layer view"). The backend checks only what it supports. NULL: supported.
     * Otherwise a status (PLX_UNSUPPORTED) whose message is the reason,
     * shown to users after the backend's id: "runs conv in float32 only,
     * not float16" reads "cpu_ref: runs conv in float32 only, not float16"
     * (a reason that starts with the id itself, "cpu_ref: " or "cpu_ref ",
     * has it dropped; docs/backend-abi.md, R-18 (1)). Must not keep any
     * pointer from `layer`. May be called from any thread, concurrently. */
    plx_status (*check_layer)(plx_backend *backend, const plx_layer_view *layer);

    /* Creates the factory for one loaded network. The factory lives until
     * destroy_factory, which the host calls after destroying every handle
     * and workload it created. */
    plx_status (*create_factory)(plx_backend *backend, const plx_factory_params *params,
                                 plx_factory **out_factory);
    void (*destroy_factory)(plx_factory *factory);
    /* Optional. Called once at load, after the workloads of the network's
     * own working memory exist and before its memory is allocated, so a
     * factory can plan across them. (Constants were created and run
     * before; working memories the application creates later add
     * workloads after it.) */
    plx_status (*factory_workloads_created)(plx_factory *factory);

    /* Creates a handle for a tensor described by `info` (copy what you
     * keep). It holds no memory until allocate_tensor_handle (managed) or
     * import_tensor_handle (not managed). */
    plx_status (*create_tensor_handle)(plx_factory *factory, const plx_tensor_info *info,
                                       const plx_tensor_handle_params *params,
                                       plx_tensor_handle **out_handle);
    /* Releases the handle and any memory it owns. Never called while a
     * workload bound to it still exists. */
    void (*destroy_tensor_handle)(plx_tensor_handle *handle);
    /* Gives a managed handle its memory (at least the info's byte size).
     * Called when the host needs the memory (constants at load, working
     * memory at the first execution); called again after a release. */
    plx_status (*allocate_tensor_handle)(plx_tensor_handle *handle);
    /* Takes a managed handle's memory back; the handle stays usable and is
     * allocated again before its next use. No-op when not allocated. */
    void (*release_tensor_handle)(plx_tensor_handle *handle);
    /* Makes the handle's contents readable and writable by the host at
     * *out_data: dense, row-major, the info's byte size, aligned to at least
     * the element size. Valid until unmap_tensor_handle. The host maps a
     * handle only while no workload runs on it. For a backend that exports
     * malloc memory (memory_export_malloc), the pointer is the handle's
     * memory itself and stays valid while that memory is allocated. */
    plx_status (*map_tensor_handle)(plx_tensor_handle *handle, void **out_data);
    void (*unmap_tensor_handle)(plx_tensor_handle *handle);
    /* Optional (NULL: the backend imports nothing). Makes `memory` (of the
     * given source: for PLX_MEMORY_SOURCE_MALLOC a host pointer of at least
     * `size` bytes; for PLX_MEMORY_SOURCE_DMA_BUF a pointer to an int holding
     * a dma-buf file descriptor of at least `size` bytes, which the caller
     * keeps owning and the backend may map or attach) the handle's storage
     * until unimport_tensor_handle or the next import: workloads bound to the handle then read and write it
     * directly, with no copy. The memory stays owned by the caller. Fails
     * (PLX_INVALID_ARGUMENT, naming the problem) when the source is not one
     * the backend imports, the size is too small, or the alignment is not
     * one the backend can use; the host then reports an error, never a
     * silent copy. A backend that needs more than element alignment says so
     * with PLX_CAP_IMPORT_ALIGNMENT, and the host stages misaligned caller
     * buffers instead of importing them. */
    plx_status (*import_tensor_handle)(plx_tensor_handle *handle, void *memory, size_t size,
                                       plx_memory_source source);
    /* Required with import_tensor_handle. Ends the import; after it the
     * handle holds no memory until the next import. For memory written by
     * the backend (an exported output), everything written is visible in
     * the imported memory when this returns. */
    void (*unimport_tensor_handle)(plx_tensor_handle *handle);

    /* Creates the workload for `layer`, bound to its handles (input_count
     * and output_count entries, in slot order; handles may belong to other
     * factories of the same backend only through the host's copy or import
     * layers, so every handle here is this factory's). The layer view is
     * valid during the call only: copy what you keep. No workload is created
     * for input and output layers; constant layers get one, which the host
     * runs once at load. A failure says why (the host prefixes the layer). */
    plx_status (*create_workload)(plx_factory *factory, const plx_layer_view *layer,
                                  plx_tensor_handle *const *inputs,
                                  plx_tensor_handle *const *outputs, plx_workload **out_workload);
    void (*destroy_workload)(plx_workload *workload);
    /* Optional. Called once working memory is allocated (and again after it
     * was released and allocated anew); constant workloads once, at load.
     * Handles that import memory get it per execution, so they may still be
     * empty here. */
    plx_status (*configure_workload)(plx_workload *workload);
    /* Runs the layer. A failure returns a status saying what went wrong
     * (the host prefixes the layer, op and backend); the workload and
     * network stay usable. Must not allocate in steady state. */
    plx_status (*execute_workload)(plx_workload *workload);

    /* Optional (NULL: no sub-tensors). Creates a handle for a part of
     * `parent`, a managed or host-planned handle of the same factory: the part is described
     * by `info` and occupies the parent's bytes [byte_offset, byte_offset +
     * byte size of info), a contiguous range of the parent's dense layout.
     * The sub-tensor has no memory of its own: it sees the parent's from the
     * parent's allocation (or, planned, import) on, and the host never allocates, releases or
     * imports it, but maps it and binds it to workloads like any handle.
     * The host destroys it before its parent. The host uses sub-tensors to
     * run a concat whose parts are contiguous in its output, or a split whose
     * parts are contiguous in its input, without a workload: the producers
     * write into (or the consumers read from) the whole tensor's memory. */
    plx_status (*create_sub_tensor_handle)(plx_factory *factory, plx_tensor_handle *parent,
                                           const plx_tensor_info *info, size_t byte_offset,
                                           plx_tensor_handle **out_handle);

    /* Optional. The memory strategy the backend wants for its
     * tensors when the host plans them (externally managed memory): a
     * static object, valid while the plug-in is loaded, whose `place` may be
     * called from any thread. Used unless the application names a strategy
     * for this backend; NULL function or result: the host's default
     * ("greedy"). Every plan it makes is validated; a wrong one fails the
     * load naming the strategy. */
    const plx_memory_strategy *(*get_memory_strategy)(plx_backend *backend);

    /* ---- ABI 1.2: graph optimisation (R-23) ------------------------------ */
    /* Optional. Called by plx_optimize once per maximal subgraph assigned to
     * this backend, after every compute layer is assigned, before copies
     * and imports are inserted: the backend may replace layers by
     * precompiled ones (fusions, a compiled subgraph) and give layers back,
     * through `editor`. Returning a status discards every change made in
     * the call (the host notes why); the network stays as assigned. The
     * backend keeps nothing of the view. Called from the thread that runs
     * plx_optimize; calls for different networks may be concurrent. */
    plx_status (*optimize_subgraph)(plx_backend *backend, const plx_subgraph_view *subgraph,
                                    const plx_subgraph_editor *editor);

    /* ---- ABI 1.4: queued execution (R-24) --------------------------------
     * Required, all seven, when the backend reports queued_execution; the
     * host ignores them otherwise and calls execute_workload, which a
     * queued backend still provides (constants run through it at load, and
     * a host older than 1.4 knows nothing else).
     *
     * Threads: a queue serves one working memory, so the calls on one
     * queue, and on the fences it signalled, never overlap, exactly like
     * the calls on that working memory's handles and workloads.
     * Fences of different queues may be waited on concurrently. */

    /* Creates the queue of one working memory (the network's own, or one
     * the application creates), after that working memory's workloads.
     * The host destroys it before them, and only when all work enqueued on
     * it has completed: the host waited on a fence that covers it, its own
     * or one of a queue that waited for it. (Should queue_signal fail, the
     * host cannot wait; destroy_queue then waits for the work itself.) */
    plx_status (*create_queue)(plx_factory *factory, const plx_queue_params *params,
                               plx_queue **out_queue);
    void (*destroy_queue)(plx_queue *queue);
    /* Enqueues one workload after everything enqueued on `queue` before.
     * Returns as soon as the work is queued; it may run at any time after,
     * up to the wait on a fence that covers it. Until then the host does
     * not map, import or unimport any handle of this factory's working
     * memory. A status means the work was not enqueued (the host names the
     * layer and waits for what was enqueued before, then fails the
     * execution); a failure while running is reported by the fence. Must
     * not allocate in steady state. */
    plx_status (*enqueue_workload)(plx_queue *queue, const plx_enqueue_params *params);
    /* Creates a fence that signals once everything enqueued on `queue` so
     * far has completed (at once when nothing is pending). A backend that
     * batches work submits it here at the latest: a fence is always
     * signalled eventually without any other call. */
    plx_status (*queue_signal)(plx_queue *queue, plx_fence **out_fence);
    /* Blocks until `fence` signals. NULL when all the work it covers ran;
     * otherwise a status for the first failure, naming the layer when the
     * backend can tell ("layer 'gather_3': index 7 out of range [0, 5)").
     * Waiting again on a signalled fence returns the same verdict (a new
     * status each time). After a failure the queue stays usable: work
     * enqueued later runs as usual. */
    plx_status (*fence_wait)(plx_fence *fence);
    /* Says, without blocking, whether `fence` has signalled. A status only
     * when the query itself fails (a lost device); the work's own verdict
     * comes from fence_wait. */
    plx_status (*fence_query)(plx_fence *fence, bool *out_signalled);
    /* Releases a fence, signalled or not (the work goes on). The host
     * destroys a queue's fences before the queue, and waits on a queue's
     * fences in the order they were signalled. */
    void (*destroy_fence)(plx_fence *fence);

    /* ---- ABI 1.4: backend allocators and typed memory (R-26) -------------
     * Optional. allocate_planned_buffer and free_planned_buffer go
     * together, with import_external_memory, and are required when the
     * backend reports allocates_planned_memory; import_external_memory
     * alone is required when it reports import_memory_kinds. Such a backend gets the buffers of its
     * memory plan from itself (device memory) instead of the host's
     * malloc, unless the application gave an allocator for it
     * (plx_runtime_options.allocators), which then serves host memory
     * imported as before (so the backend must import malloc memory for
     * that choice to load). */

    /* Allocates one buffer of the plan: fills *out_memory (its struct_size
     * set by the host; kind, handle or fd, offset, size of at least
     * params->size; release unused here) with memory aligned to
     * params->alignment. Called at a working memory's first execution, and
     * again after a release. A status (PLX_OUT_OF_MEMORY for a full
     * device) fails that execution naming the backend. */
    plx_status (*allocate_planned_buffer)(plx_factory *factory,
                                          const plx_planned_buffer_params *params,
                                          plx_external_memory *out_memory);
    /* Frees a buffer from allocate_planned_buffer (the description it
     * filled), after every handle bound to it was unimported. */
    void (*free_planned_buffer)(plx_factory *factory, const plx_external_memory *memory);
    /* Makes bytes [memory->offset, memory->offset + memory->size) of the
     * described object the storage of an unmanaged handle, until
     * unimport_tensor_handle, like import_tensor_handle does for a host
     * pointer. The host passes memory of the kinds the backend's own
     * allocate_planned_buffer returned, at a block's offset within it and
     * with the block's size; and, for a backend that reports
     * import_memory_kinds, the application's memory of one of those kinds
     * for a zero-copy input or output (at the offset and size the
     * application gave, the size at least the tensor's). The description is
     * valid during the call only; the object stays valid until the
     * unimport. PLX_INVALID_ARGUMENT, naming the fault, for a kind it does
     * not take, an object it cannot use (another device's, another
     * context's) or a size below the handle's. Optional on its own: set
     * with the allocator pair, or alone by a backend that reports
     * import_memory_kinds. */
    plx_status (*import_external_memory)(plx_tensor_handle *handle,
                                         const plx_external_memory *memory);

    /* Optional; required when the backend reports memory_export_dma_buf.
     * Describes the memory of an allocated handle, one created with
     * `source` in its params' export_sources, as memory of that source's
     * kind, so that the host lends it to another backend through an import
     * layer: for PLX_MEMORY_SOURCE_DMA_BUF, kind PLX_MEMORY_KIND_DMA_BUF,
     * fd, offset and size (at least the tensor's byte size), handle NULL,
     * release NULL. The fd stays owned by the producer and valid while the
     * handle's memory is allocated; the host and the consumer never close
     * it. The host passes the fd on to the consumer's import_tensor_handle
     * which takes a whole dma-buf: the offset must be 0. The host
     * calls it with no work of the handle's backend pending. A status
     * (PLX_INVALID_ARGUMENT for a source the handle cannot be lent through)
     * fails that execution naming the import layer. */
    plx_status (*export_external_memory)(plx_tensor_handle *handle, plx_memory_source source,
                                         plx_external_memory *out_memory);
} plx_backend_functions;

/* Describes a backend. Owned by the backend; it must stay valid and
 * unchanged while the plug-in is loaded (a `static const` object). The host
 * copies the strings it keeps. */
typedef struct plx_backend_descriptor {
    /* PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, <last field the backend knows>). */
    uint32_t struct_size;
    /* The ABI version the backend implements for this host:
     * PLX_MAKE_ABI_VERSION(major, minor). The major must equal the host's;
     * the minor must not exceed the host's. */
    uint32_t abi_version;
    /* Unique backend id: [a-z][a-z0-9_]*, 1 to 63 characters. */
    const char *id;
    /* Human-readable name, for listings. Not NULL, at most 255 bytes. */
    const char *name;
    /* Backend version, a semantic version string ("1.4.0", "2.0.0-rc.1"). */
    const char *version;
    /* The function table. */
    const plx_backend_functions *functions;
    /* The options `create` accepts; may be NULL when option_count is 0. */
    const plx_option_info *options;
    size_t option_count;
} plx_backend_descriptor;

/* The one symbol a plug-in exports. The host calls it once per
 * runtime that loads the file, with the ABI version the host implements and
 * the host table (valid only during the call). It returns a descriptor for
 * an ABI the host can use (same major, minor <= the host's), or NULL when it
 * cannot work with this host, after logging the reason through
 * host->log(PLX_LOG_ERROR, ...). Must not allocate resources that would
 * need releasing: there is no matching "unload" call. May be called from
 * any thread, and concurrently for different runtimes. */
#define PLX_BACKEND_ENTRY_SYMBOL "plx_backend_entry"

typedef const plx_backend_descriptor *(*plx_backend_entry_fn)(uint32_t host_abi_version,
                                                              const plx_host *host);

/* Plug-ins define this function; the declaration gives it default
 * visibility so that it is the one exported symbol of a backend built with
 * -fvisibility=hidden. Backends compiled into an application do not define
 * it: they pass an entry function of their own name to the runtime instead
 * (plx_runtime_options.static_backends). */
PLX_BACKEND_EXPORT const plx_backend_descriptor *plx_backend_entry(uint32_t host_abi_version,
                                                                   const plx_host *host);

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_BACKEND_H */
