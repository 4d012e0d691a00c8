/* The loaded network's state, shared by the files that hold its parts:
 * loading and queries (loaded_network.c), working memories
 * (working_memory.c), executions (execute.c), pre-imported inputs and
 * outputs (preimport.c) and the host-managed memory plan
 * (memory_plan_network.c).
 * docs/loaded-network.md gives the rules they follow. */
#ifndef PLEXUS_CORE_LOADED_NETWORK_H
#define PLEXUS_CORE_LOADED_NETWORK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memory_plan.h"
#include "network_internal.h"


/* Alignment of planned tensors inside their buffers: a cache line, which
 * also satisfies every element type. */
#define PLAN_ALIGNMENT 64

/* One tensor handle: an output slot of a layer. */
typedef struct handle_slot {
    plx_tensor_handle *handle;
    plxi_backend_record *backend;
    const plx_tensor_info *info;
    size_t bytes;
    bool managed;       /* the backend owns the memory */
    bool planned;       /* the host's plan gives it memory (imported) */
    bool constant;      /* allocated at load, kept until unload */
    bool allocated;     /* managed: allocate_tensor_handle was called */
    bool caller_memory; /* a zero-copy network input or output */
    bool exported;      /* an import layer reads it in place */
    uint32_t export_sources; /* exported: the sources it is lent through */
    uint32_t import_sources; /* what its backend imports, looked up once */
    size_t import_alignment; /* what its backend imports malloc memory at */
    bool bound;         /* holds an import that the execution must end */
    /* Caller memory that missed import_alignment is copied here and the
     * stage imported instead (allocated at the first need, freed with the
     * working memory's memory); staged: this execution did so. */
    void *stage;
    bool staged;
    /* A sub-tensor of `parent` at `offset` bytes (in-place concat/split). */
    struct handle_slot *parent;
    size_t offset;
    bool is_parent;
    uint32_t block;     /* planned: index of its block in its backend's plan */
} handle_slot;

/* The queue of one queued backend in one working memory. */
typedef struct wm_queue {
    plxi_backend_record *backend;
    plx_queue *queue;
    const char *domain;       /* its fence_domain; NULL when it has none */
} wm_queue;

typedef struct layer_state {
    plxi_layer *layer;
    plx_workload *workload;   /* compute layers (constants: the network's) */
    wm_queue *queue;          /* non-NULL: the workload is enqueued there */
    handle_slot **outputs;    /* output_count entries */
    handle_slot **inputs;     /* input_count entries: the producers' slots */
} layer_state;

/* The plan of one backend whose intermediate tensors the host manages. */
typedef struct backend_plan {
    plxi_backend_record *backend;
    const char *strategy_name;
    const plx_memory_strategy *strategy; /* NULL: the built-in by name */
    plxi_memory_plan plan;
    const plx_allocator *allocator; /* NULL: the host's aligned malloc */
    /* The backend allocates the buffers itself: no application
     * allocator for it, and it sets allocate_planned_buffer. */
    bool backend_allocates;
    plx_memory_report report;
} backend_plan;

struct plx_working_memory {
    plx_loaded_network *network;
    layer_state *layers;      /* in execution order */
    handle_slot *slots;       /* every non-constant output slot */
    wm_queue *queues;         /* one per queued backend with layers here */
    size_t queue_count;
    void **buffers;           /* per plan, per buffer */
    /* Per plan, per buffer, for plans whose backend allocates: what
     * it returned; kind NULL when not allocated. */
    plx_external_memory *device_buffers;
    bool memory_ready;
    atomic_bool in_use;       /* refuses a second concurrent execution */
    /* Per execution: which binding or pre-import filled each input/output. */
    const plx_tensor_binding **input_args;
    const plx_tensor_binding **output_args;
    const struct preimport **input_pre;
    const struct preimport **output_pre;
    /* The memory each input/output uses in the current execution. */
    struct caller_mem *in_mem;
    struct caller_mem *out_mem;
};

typedef struct io_binding {
    int32_t binding_id;
    plx_tensor_info info;
    size_t bytes;
    size_t layer;             /* input: the input layer; output: the producer */
    uint32_t slot;            /* the producer's output slot */
    bool zero_copy;           /* input imported / output exported */
    const char *layer_name;
} io_binding;

/* The caller's memory for one input or output, resolved from its binding
 * (docs/loaded-network.md, "Executing"): a host pointer (source MALLOC: a
 * malloc binding, or kind "host" at its offset), a whole dma-buf (source
 * DMA_BUF, `data` the int holding its fd), or memory described by kind
 * (source EXTERNAL: a dma-buf description, a vendor kind), whose `ext` is
 * a copy of the caller's description, its kind borrowed. */
typedef struct caller_mem {
    plx_memory_source source;
    void *data;
    plx_external_memory ext;
} caller_mem;

/* A caller tensor imported once for many executions. */
typedef struct preimport {
    size_t io;                /* index in inputs or outputs */
    caller_mem mem;           /* an EXTERNAL one's kind is `kind` */
    char *kind;               /* owned copy of the kind, or NULL */
    bool cleared;
} preimport;

typedef struct factory_entry {
    plxi_backend_record *backend;
    plx_factory *factory;
} factory_entry;

struct plx_loaded_network {
    plx_runtime *runtime;
    uint32_t id;
    plx_optimized_network *optimized;
    plx_load_options options;
    pthread_mutex_t lock;     /* the network's own execution, pre-imports, lists */

    factory_entry *factories;
    size_t factory_count;
    size_t layer_count;
    size_t slot_count;
    size_t *slot_base;        /* per layer: index of its first output slot */
    handle_slot *constants;   /* slot_count entries; only constant slots used */
    plx_workload **constant_workloads; /* per layer */
    backend_plan *plans;
    size_t plan_count;
    plx_memory_block **blocks; /* per plan: its blocks (built at load) */
    size_t *block_counts;
    uint32_t *slot_block;     /* per slot: its block in its backend's plan */

    io_binding *inputs;
    size_t input_count;
    io_binding *outputs;
    size_t output_count;
    /* The network's input and output layers, counted before any working
     * memory exists (working memories size their arrays with them). */
    size_t input_layers;
    size_t output_layers;

    preimport *pre_inputs;
    size_t pre_input_count;
    preimport *pre_outputs;
    size_t pre_output_count;

    plx_working_memory *own;  /* for plx_loaded_network_execute */
    plxi_ptr_vec working_memories; /* created by the application */
    plx_debug_fn debug_fn;
    void *debug_user_data;
    _Atomic uint64_t staged_copies; /* plx_loaded_network_staged_copy_count */
    _Atomic uint64_t waits;         /* plx_loaded_network_wait_count */
    atomic_bool staged_warned;      /* the first staged copy logged a warning */
};


/* "out of memory while loading the network". */
plx_status plxi_ln_oom(void);
/* The factory `n` created for backend `b`; NULL when it has none. */
plx_factory *plxi_ln_factory_of(const plx_loaded_network *n, const plxi_backend_record *b);
/* Layer `i` of the optimised network, in execution order. */
const plxi_layer *plxi_ln_layer_at(const plx_loaded_network *n, size_t i);
/* Annotates a backend's failure with where it happened; consumes `s`. */
plx_status plxi_ln_at_layer(plx_status s, const plxi_layer *l, const char *what);
/* The memory plan of backend `b` (its index in *out_index when not NULL);
 * NULL when the host does not plan that backend's memory. */
backend_plan *plxi_ln_plan_of(const plx_loaded_network *n, const plxi_backend_record *b,
                              size_t *out_index);

/* Does backend `b` import malloc memory? */
bool plxi_ln_imports_malloc(const plxi_backend_record *b);
/* Does backend `b` allocate its planned buffers in network `n` (R-26: it
 * can, and the application gave no allocator for it)? */
bool plxi_ln_backend_allocates(const plx_loaded_network *n, const plxi_backend_record *b);
/* Allocates a backend-managed handle that has no memory yet; consumes
 * nothing, and names layer `l` on failure. */
plx_status plxi_ln_allocate(handle_slot *h, const plxi_layer *l);
/* How many inputs read output `slot` of layer `index`, whether one of them
 * is a network output, and the step of the last reader. */
size_t plxi_ln_consumers(const plx_optimized_network *o, size_t index, uint32_t slot,
                         bool *out_feeds_output, size_t *out_last);

/* Executions (execute.c), also used by pre-imports. */
/* The index of `binding` in `list`; `count` when it is not there. */
size_t plxi_ln_find_io(const io_binding *list, size_t count, int32_t binding);
/* Resolves binding `b` of a tensor of `bytes` bytes into *out, checking
 * an external description (`what` names the binding on failure). */
plx_status plxi_ln_caller_mem(const plx_tensor_binding *b, size_t bytes, const char *what,
                              caller_mem *out);
/* Does `data` miss the alignment h's backend imports malloc memory at? */
bool plxi_ln_misaligned(const handle_slot *h, const void *data);
/* Imports caller memory `m` into `h` (staged when misaligned host memory,
 * never when `stage` is false), naming `kind` ("input", "output") and
 * `binding` on failure. */
plx_status plxi_ln_import_caller(plx_loaded_network *n, handle_slot *h, const caller_mem *m,
                                 bool stage, int32_t binding, const char *kind);

/* Working memories (working_memory.c). */
/* Fills a working memory's layer states and slots (docs/loaded-network.md,
 * Loading 3); calls no backend. */
plx_status plxi_working_memory_lay_out(plx_working_memory *wm, bool *in_place);
plx_status plxi_working_memory_create(plx_loaded_network *n, plx_working_memory **out);
void plxi_working_memory_free(plx_working_memory *wm);
/* Allocates the memory of `wm` when it has none (its first execution, or the
 * first after a release). */
plx_status plxi_working_memory_ensure(plx_working_memory *wm);

/* The host-managed memory plan of every planned backend
 * (memory_plan_network.c, over the planner of memory_plan.c). */
plx_status plxi_ln_plan_memory(plx_loaded_network *n);

/* Unloads every network still loaded (runtime destroy; loaded_network.c). */
void plxi_runtime_unload_all(plx_runtime *runtime);

#endif
