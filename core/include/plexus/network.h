/* Networks: build a graph of layers, assign its layers to backends
 * (optimise), load it into a runtime, and execute it.
 *
 * Conventions as in plexus.h: a plx_status is NULL on success and owned by
 * the caller otherwise; out_* parameters are written only on success. */
#ifndef PLEXUS_NETWORK_H
#define PLEXUS_NETWORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plexus/ops.h>
#include <plexus/plexus.h>
#include <plexus/status.h>
#include <plexus/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Building                                                                   */
/* ------------------------------------------------------------------------ */

/* A network under construction. Not thread-safe: one thread builds it. It
 * may be optimised any number of times, and destroyed once every optimised
 * network made from it is destroyed or loaded (they copy what they need). */
typedef struct plx_network plx_network;

/* Index of a layer in its network, in the order layers were added. */
typedef uint32_t plx_layer_id;

PLX_API plx_status plx_network_create(plx_network **out_network);
/* Destroys the network; sets *network to NULL. NULL is ignored. */
PLX_API void plx_network_destroy(plx_network **network);

/* Adds a layer. `name` must be unique in the network and non-empty; it is
 * copied. `desc` is the op's descriptor (see ops.h; NULL for ops without
 * one); it is copied, including what it points to (split sizes).
 * `input_count` and `output_count` give the slots (ops.h lists each op's;
 * optional inputs count only when connected). Inputs, outputs and
 * constants have their own functions below. Errors name the layer. */
PLX_API plx_status plx_network_add_layer(plx_network *network, const char *name, plx_op op,
                                         const void *desc, uint32_t input_count,
                                         uint32_t output_count, plx_layer_id *out_layer);

/* Adds a network input with binding id `binding_id` and its tensor info. */
PLX_API plx_status plx_network_add_input(plx_network *network, const char *name,
                                         int32_t binding_id, const plx_tensor_info *info,
                                         plx_layer_id *out_layer);

/* Adds a network output with binding id `binding_id`; connect its input. */
PLX_API plx_status plx_network_add_output(plx_network *network, const char *name,
                                          int32_t binding_id, plx_layer_id *out_layer);

typedef enum plx_constant_ownership {
    /* The network copies the data now. */
    PLX_CONSTANT_COPY = 0,
    /* The network keeps the caller's pointer: the data must stay valid and
     * unchanged until the network, every optimised network made from it and
     * every network loaded from those are destroyed or unloaded. */
    PLX_CONSTANT_BORROW = 1
} plx_constant_ownership;

/* Adds a constant layer whose single output holds `data` (the info's byte
 * size, dense row-major). */
PLX_API plx_status plx_network_add_constant(plx_network *network, const char *name,
                                            const plx_tensor_info *info, const void *data,
                                            plx_constant_ownership ownership,
                                            plx_layer_id *out_layer);

/* Connects output slot `from_slot` of layer `from` to input slot `to_slot`
 * of layer `to`. An output may feed any number of inputs; an input is fed
 * once. */
PLX_API plx_status plx_network_connect(plx_network *network, plx_layer_id from,
                                       uint32_t from_slot, plx_layer_id to, uint32_t to_slot);

/* Sets an output slot's tensor info explicitly. Only needed where shape
 * inference cannot know it; inputs and constants get theirs when added.
 * An info that contradicts inference is an error at validation. Per-axis
 * quantization arrays are copied. */
PLX_API plx_status plx_network_set_output_info(plx_network *network, plx_layer_id layer,
                                               uint32_t slot, const plx_tensor_info *info);

/* Checks the whole network (every input slot connected, no cycle, binding
 * ids unique, descriptors valid, dtypes allowed) and infers every output
 * info. The first error found is returned, naming the layer. */
PLX_API plx_status plx_network_validate(plx_network *network);

/* After a successful validate: the info of an output slot. */
PLX_API plx_status plx_network_output_info(const plx_network *network, plx_layer_id layer,
                                           uint32_t slot, plx_tensor_info *out_info);

PLX_API size_t plx_network_layer_count(const plx_network *network);

/* ------------------------------------------------------------------------ */
/* Optimising: assigning layers to backends                                   */
/* ------------------------------------------------------------------------ */

typedef struct plx_optimize_options {
    uint32_t struct_size;
    /* Backend ids in order of preference. */
    const char *const *backends;
    size_t backend_count;
    /* true (default): a layer the first backend refuses goes to the next that
     * supports it. false: every refusal by the first backend is an error. */
    bool allow_fallback;
    /* Let network inputs import the caller's memory (zero copy), and layers
     * export into the caller's output memory or another backend's. */
    bool import_enabled;
    bool export_enabled;
    /* true (default): before assignment, backend-independent rewrites that
     * never change what the network computes: batch_norm folded into the
     * conv before it, transposes that cancel removed (two in a row merged),
     * reshapes and transposes of constants folded into the constants,
     * other layers whose inputs are all constants evaluated once (with
     * the reference kernels) into constants,
     * identity layers (a reshape to the same shape, a cast to the same
     * dtype, a pad of nothing, ...) removed, unread constants dropped. Each
     * is an optimiser note; removed layers are absent from the assignment.
     * false: the network's layers as built. */
    bool graph_rewrites;
} plx_optimize_options;

PLX_API void plx_optimize_options_init(plx_optimize_options *options);

typedef struct plx_optimized_network plx_optimized_network;

/* Validates the network and assigns every layer to a backend of `runtime`
 * (which must outlive the result). Errors: none of the requested backends
 * is available (naming what was asked and what is available); a layer no
 * backend supports, or with fallback off every layer the first backend
 * refuses (all listed, each with every reason); validation errors. */
PLX_API plx_status plx_optimize(plx_runtime *runtime, plx_network *network,
                                const plx_optimize_options *options,
                                plx_optimized_network **out_optimized);
PLX_API void plx_optimized_network_destroy(plx_optimized_network **optimized);

/* A refusal on the way to a layer's backend. */
typedef struct plx_refusal {
    const char *backend_id;
    const char *reason;
} plx_refusal;

/* Where one layer of the optimised network runs. Layers inserted by the
 * optimiser (copies and imports between backends) have `inserted` set. */
typedef struct plx_layer_assignment {
    const char *layer_name;
    plx_op op;
    const char *backend_id;
    bool inserted;
    const plx_refusal *refusals;
    size_t refusal_count;
} plx_layer_assignment;

/* Layers in execution (topological) order. Pointers valid until destroy. */
PLX_API size_t plx_optimized_network_layer_count(const plx_optimized_network *optimized);
PLX_API const plx_layer_assignment *plx_optimized_network_layer(
    const plx_optimized_network *optimized, size_t index);
/* The layers of the network as built that the optimiser fused into layer
 * `index` (which keeps its own name, or for a backend's substitution is
 * named after them, "a+b"); they are absent from the assignment. Recorded
 * for: a batch_norm folded into the conv before it; the layers fused into
 * a hard_swish or a gelu; the quantize a quantized layer absorbs
 * ("dequantize, conv and quantize run as one int8 layer"; the dequantizes
 * may feed other layers too and are not listed); the elementwise layers
 * of a quantized chain that runs as one table lookup (the lookup keeps the
 * quantize's name, the table the dequantize's); and every layer a backend's
 * optimize_subgraph replaced. Layers folded into constants
 * and removed identities are only notes. In the order fused; a layer fused
 * into one that was itself fused later is listed after it. 0 / NULL out of
 * range. Pointers valid until destroy. */
PLX_API size_t plx_optimized_network_layer_fused_count(const plx_optimized_network *optimized,
                                                       size_t index);
PLX_API const char *plx_optimized_network_layer_fused_from(
    const plx_optimized_network *optimized, size_t index, size_t k);
/* Requested backend ids that were not used because they are not loaded or
 * not available, each with why; and other remarks. */
PLX_API size_t plx_optimized_network_note_count(const plx_optimized_network *optimized);
PLX_API const char *plx_optimized_network_note(const plx_optimized_network *optimized,
                                               size_t index);
/* One line per backend and per fallback, e.g. "5 layers on cpu_ref" and
 * "'c1' (conv) fell back from fake to cpu_ref; fake: needs float16" (the
 * refusal after its backend's id, docs/backend-abi.md R-18 (1)). */
PLX_API const char *plx_optimized_network_summary(const plx_optimized_network *optimized);

/* ------------------------------------------------------------------------ */
/* Loading and executing                                                      */
/* ------------------------------------------------------------------------ */

typedef struct plx_loaded_network plx_loaded_network;

typedef struct plx_load_options {
    uint32_t struct_size; /* set by plx_load_options_init */
    /* Lets the application create working memories and run executions of
     * the network concurrently (plx_loaded_network_create_working_memory).
     * Every backend used must report async_execution and
     * externally_managed_memory; implies externally_managed_memory. */
    bool async_execution;
    /* The host plans the intermediate tensors of every backend used in a
     * few buffers (memory strategies, plexus/memory.h) and gives them to the
     * backends by import. Every backend used must report
     * externally_managed_memory and import malloc memory. */
    bool externally_managed_memory;
} plx_load_options;

/* Defaults: synchronous execution, backend-managed memory. */
PLX_API void plx_load_options_init(plx_load_options *options);

/* Loads an optimised network into its runtime: creates each backend's
 * factory, runs the constants' workloads, plans memory when asked, creates
 * the network's own working memory (tensor handles, then workloads).
 * `options` NULL means the defaults. Consumes *optimized (sets it to NULL)
 * whether or not loading succeeds. Errors name the layer, op and backend at
 * fault, or the backend lacking a capability the options need. The loaded
 * network must be unloaded before its runtime is destroyed;
 * plx_runtime_destroy unloads any left. */
PLX_API plx_status plx_runtime_load_network(plx_runtime *runtime,
                                            plx_optimized_network **optimized,
                                            const plx_load_options *options,
                                            plx_loaded_network **out_loaded);

/* Unloads: destroys working memories, workloads, handles and factories;
 * sets *loaded NULL. No execution may be in flight on the network's
 * working memories (the network's own execution is waited for). */
PLX_API void plx_loaded_network_unload(plx_loaded_network **loaded);

/* The id of a loaded network, unique within its runtime. */
PLX_API uint32_t plx_loaded_network_id(const plx_loaded_network *loaded);

/* Caller memory for one input or output: `size` must equal the tensor's
 * byte size. For inputs the memory is only read.
 * `source` says what `data` is: 0 or PLX_MEMORY_SOURCE_MALLOC, a host
 * pointer; PLX_MEMORY_SOURCE_DMA_BUF, a pointer to an int holding a dma-buf
 * (or memfd) file descriptor whose first `size` bytes are the tensor (the
 * caller keeps owning the descriptor); PLX_MEMORY_SOURCE_EXTERNAL, a
 * pointer to a plx_external_memory (plexus/backend.h) describing the memory
 * by kind: "host" (handle + offset), "dma_buf" (fd, at any offset) or a
 * backend's vendor kind, with a size of at least the tensor's (read during
 * the call; a pre-import copies it; its release is never called). A
 * zero-copy input or output must be in a source (or kind) its backend
 * imports (else the execution fails, naming it); others are copied, the
 * host mapping a dma-buf for the copy; memory of a vendor kind is never
 * copied (docs/memory-and-concurrency.md, "Typed external memory"). */
typedef struct plx_tensor_binding {
    int32_t binding_id;
    void *data;
    size_t size;
    plx_memory_source source;
} plx_tensor_binding;

/* Runs the network once, synchronously, in the network's own working memory:
 * the plain form of plx_loaded_network_execute_with (no working memory, no
 * pre-imported tensors). Every input and every output of the network
 * appears exactly once. Inputs are imported (import enabled and
 * supported) or copied in; outputs are exported into (export enabled and
 * the producer feeds only that output) or copied out. Working memory is
 * allocated at the first execution. Thread-safe: concurrent calls on one
 * loaded network run one at a time. A failing workload returns its message;
 * the network stays loaded and usable. */
PLX_API plx_status plx_loaded_network_execute(plx_loaded_network *loaded,
                                              const plx_tensor_binding *inputs,
                                              size_t input_count,
                                              const plx_tensor_binding *outputs,
                                              size_t output_count);

/* Zero copy needs malloc memory aligned as its backend imports it
 * (plx_backend_info_import_alignment). A zero-copy input or output, or an
 * import layer's producer, whose memory misses that alignment is not
 * imported: the host copies it through a staging buffer of the working
 * memory (allocated at the first need, kept until the memory is released),
 * logs a warning the first time per network and an info message after,
 * and records a trace event (cat "copy", name "<what> (staged)"). This
 * returns how many such copies the network's executions made. Pre-imports
 * are never staged: a misaligned pre-import fails. Thread-safe. */
PLX_API uint64_t plx_loaded_network_staged_copy_count(const plx_loaded_network *loaded);

/* Layers of a backend that reports queued_execution (docs/backend-abi.md,
 * R-24) are enqueued, and the host waits for them only where their results
 * are needed: where a tensor crosses to a backend that cannot wait for
 * them itself (one without the same fence_domain, a copy or import layer),
 * before the debug callback, and at the end of the execution. This returns
 * how many such waits the network's executions made (a synchronous
 * backend's layers count none: each returned complete). With profiling
 * on, each wait is a trace event (cat "wait", name "wait for <backend>").
 * 0 for NULL. Thread-safe. */
PLX_API uint64_t plx_loaded_network_wait_count(const plx_loaded_network *loaded);

/* ------------------------------------------------------------------------ */
/* Working memories, pre-imported tensors, concurrent executions              */
/* ------------------------------------------------------------------------ */

/* Everything one execution writes: its own tensor handles, workloads and
 * planned buffers. Constants are shared. Create one per thread that runs
 * the network at the same time as others. */
typedef struct plx_working_memory plx_working_memory;

/* Creates a working memory; its memory is allocated at its first
 * execution. Needs the network loaded with async_execution. Thread-safe. */
PLX_API plx_status plx_loaded_network_create_working_memory(plx_loaded_network *loaded,
                                                            plx_working_memory **out);
/* Destroys a working memory; sets it NULL. One that an execution is using
 * is not destroyed (an error is logged) and goes with the network at
 * unload. Working memories are destroyed by unload too: none may be used
 * after its network is unloaded. */
PLX_API void plx_working_memory_destroy(plx_working_memory **working_memory);
/* Releases the working memory's tensor memory; the next execution on it
 * allocates again. Fails while an execution uses it. */
PLX_API plx_status plx_working_memory_release(plx_working_memory *working_memory);

/* What one execution reads and writes. Initialise with
 * plx_execute_args_init. Every input of the network appears once, either as
 * a tensor or as a pre-imported id; likewise every output. */
typedef struct plx_execute_args {
    uint32_t struct_size;
    const plx_tensor_binding *inputs;
    size_t input_count;
    const plx_tensor_binding *outputs;
    size_t output_count;
    const uint32_t *preimported_inputs;  /* ids from plx_loaded_network_import_inputs */
    size_t preimported_input_count;
    const uint32_t *preimported_outputs; /* ids from plx_loaded_network_import_outputs */
    size_t preimported_output_count;
} plx_execute_args;

PLX_API void plx_execute_args_init(plx_execute_args *args);

/* Runs the network once, synchronously, with a working memory and
 * pre-imported tensors (`args`): the full form of plx_loaded_network_execute.
 * With working_memory NULL it uses the network's own working memory, one
 * call at a time (as plx_loaded_network_execute). With a
 * working memory, calls with different working memories run at the same
 * time from any threads; a working memory already in use by another call
 * is refused (PLX_FAILED_PRECONDITION), never shared. Results are the same
 * bytes as a synchronous execution. Errors as plx_loaded_network_execute,
 * plus pre-imported ids that are unknown, cleared or given twice. */
PLX_API plx_status plx_loaded_network_execute_with(plx_loaded_network *loaded,
                                                   plx_working_memory *working_memory,
                                                   const plx_execute_args *args);

/* Registers caller tensors for many executions (zero copy): each is
 * imported once now, so that the backend checks source, size and alignment,
 * and bound again at every execution that names its id. Needs import
 * (for inputs) or export (for outputs) enabled when optimising, the
 * tensor's backend to report preimport_io_tensors, and the input (output)
 * to be zero copy in this network. Writes one id per tensor to out_ids.
 * All or nothing: on error no id of this call remains. The memory (for a
 * dma-buf: the int holding the descriptor, and the descriptor) must stay
 * valid until its id is cleared and no execution uses it. Thread-safe. */
PLX_API plx_status plx_loaded_network_import_inputs(plx_loaded_network *loaded,
                                                    const plx_tensor_binding *inputs,
                                                    size_t count, uint32_t *out_ids);
PLX_API plx_status plx_loaded_network_import_outputs(plx_loaded_network *loaded,
                                                     const plx_tensor_binding *outputs,
                                                     size_t count, uint32_t *out_ids);
/* Forgets pre-imported ids. An id not issued (>= the number issued), one
 * already cleared, or one given twice is an error, and then nothing is
 * cleared. Ids are never reused. */
PLX_API plx_status plx_loaded_network_clear_imported_inputs(plx_loaded_network *loaded,
                                                            const uint32_t *ids, size_t count);
PLX_API plx_status plx_loaded_network_clear_imported_outputs(plx_loaded_network *loaded,
                                                             const uint32_t *ids, size_t count);

/* The memory plan of one backend (externally managed memory): bytes
 * allocated per working memory, and the lower bound (the largest total
 * size of its tensors alive at one step). */
typedef struct plx_memory_report {
    const char *backend_id;
    const char *strategy;
    size_t bytes;
    size_t lower_bound;
    size_t buffer_count;
    size_t tensor_count;
} plx_memory_report;

/* One report per planned backend; none without externally managed memory.
 * Pointers valid until unload. */
PLX_API size_t plx_loaded_network_memory_report_count(const plx_loaded_network *loaded);
PLX_API const plx_memory_report *plx_loaded_network_memory_report(
    const plx_loaded_network *loaded, size_t index);

/* Scheduling executions on worker threads.
 *
 * A scheduler owns `worker_count` threads, each with its own working memory
 * of one loaded network, and queues of requests (plx_execute_args) at three
 * priorities. The application submits and returns at once; a worker runs the
 * request (plx_loaded_network_execute_with with its working memory) and then calls
 * the request's completion callback on that worker thread.
 *
 * Service order, a weighted round-robin: the workers take requests in a
 * cycle of seven turns, high high high high medium medium low. A turn whose
 * queue is empty is skipped, so with every queue busy the order is 4 high,
 * 2 medium, 1 low, again and again; with one queue busy it is served alone.
 * A waiting low request is therefore taken after at most 6 others (and a
 * waiting medium after at most 5): no priority starves. The cycle starts
 * again at its first turn whenever the queues become empty. Within a
 * priority, requests are taken in submission order (FIFO). With several
 * workers the rule orders the taking of requests; executions then run side
 * by side and may complete in another order. */
typedef enum plx_priority {
    PLX_PRIORITY_HIGH = 0,
    PLX_PRIORITY_MEDIUM = 1,
    PLX_PRIORITY_LOW = 2
} plx_priority;

/* Times of one scheduled execution, in milliseconds (CLOCK_MONOTONIC):
 * queued_ms from submission to the start of the execution, run_ms the
 * execution itself (plx_loaded_network_execute_with). Both >= 0. */
typedef struct plx_execution_timing {
    double queued_ms;
    double run_ms;
} plx_execution_timing;

/* Called once per submitted request, on the worker thread that ran it,
 * after the execution has finished (the output memory holds the results).
 * status: NULL on success, else the execution's error; borrowed, valid
 * during the call (the callback must not free it; copy the message to keep
 * it). timing: borrowed, valid during the call. The callback may submit
 * more requests to the same scheduler; it must not destroy the scheduler,
 * nor unload the network. A slow callback holds its worker. */
typedef void (*plx_completion_fn)(void *user_data, plx_status status,
                                  const plx_execution_timing *timing);

/* A set of worker threads executing one loaded network. Thread-safe:
 * submit may be called from any thread, including completion callbacks. */
typedef struct plx_scheduler plx_scheduler;

/* Creates a scheduler with `worker_count` (1 to 1024) threads for `loaded`,
 * each with its own working memory made by
 * plx_loaded_network_create_working_memory: the network must have been
 * loaded with plx_load_options.async_execution, otherwise this fails with
 * PLX_FAILED_PRECONDITION and a message naming async_execution. The
 * network must stay loaded until the scheduler is destroyed (unloading
 * destroys the working memories the workers use). On failure nothing is
 * left running and *out_scheduler is untouched. */
PLX_API plx_status plx_scheduler_create(plx_loaded_network *loaded, size_t worker_count,
                                        plx_scheduler **out_scheduler);

/* Queues one execution of `args` at `priority` and returns without waiting
 * for it. The args struct and its binding and pre-imported id arrays are
 * copied; the tensor memory they point to is the caller's and must stay
 * valid (inputs unchanged, outputs untouched) until `done` is called, and
 * pre-imported ids must stay uncleared until then. `done` (may be NULL:
 * the outcome, errors included, is then discarded) gets `user_data`.
 * Argument errors of the execution itself (unknown binding id, wrong
 * counts, sizes) are reported through `done`, with the execution's
 * message. Fails, without queuing and without calling `done`, when the
 * scheduler or args are NULL, args is too small (plx_execute_args_init), a
 * count is non-zero with its array NULL, the priority is not a
 * plx_priority, the scheduler is being destroyed (PLX_FAILED_PRECONDITION),
 * or memory runs out. Allocation: a request's storage is recycled from
 * finished requests and allocated only when no recycled one is large
 * enough; executing a request allocates nothing. Thread-safe. */
PLX_API plx_status plx_scheduler_submit(plx_scheduler *scheduler, const plx_execute_args *args,
                                        plx_priority priority, plx_completion_fn done,
                                        void *user_data);

/* Stops accepting requests (submit then fails), runs every request already
 * queued to completion (callbacks included, in the service order above),
 * joins the workers, destroys their working memories and the scheduler,
 * and sets *scheduler to NULL. NULL is ignored. Blocks until then; must
 * not be called from a completion callback. Submissions from other threads
 * must have returned before the call (the scheduler is freed); those made
 * by completion callbacks while it drains are refused. */
PLX_API void plx_scheduler_destroy(plx_scheduler **scheduler);

/* Tensor info of an input or output by binding id. */
PLX_API plx_status plx_loaded_network_input_info(const plx_loaded_network *loaded,
                                                 int32_t binding_id, plx_tensor_info *out_info);
PLX_API plx_status plx_loaded_network_output_info(const plx_loaded_network *loaded,
                                                  int32_t binding_id, plx_tensor_info *out_info);
/* Binding ids, in the order the network's input (output) layers were added. */
PLX_API size_t plx_loaded_network_input_count(const plx_loaded_network *loaded);
PLX_API int32_t plx_loaded_network_input_binding(const plx_loaded_network *loaded, size_t index);
PLX_API size_t plx_loaded_network_output_count(const plx_loaded_network *loaded);
PLX_API int32_t plx_loaded_network_output_binding(const plx_loaded_network *loaded, size_t index);

/* Releases the network's own working memory (intermediate tensors); it is
 * allocated again at the next execution. Constants stay. Waits for a
 * running execution. */
PLX_API void plx_loaded_network_release_working_memory(plx_loaded_network *loaded);

/* Called after every workload with each of its outputs (data valid during
 * the call only). Runs on the executing thread; with working memories,
 * possibly on several threads at once. */
typedef void (*plx_debug_fn)(void *user_data, const char *layer_name, plx_op op,
                             const char *backend_id, uint32_t slot, const plx_tensor_info *info,
                             const void *data);
/* Sets (or, with fn NULL, clears) the debug callback. Executions on working
 * memories that are already running keep the callback they started with
 * until they return. */
PLX_API void plx_loaded_network_set_debug_callback(plx_loaded_network *loaded, plx_debug_fn fn,
                                                   void *user_data);

/* ------------------------------------------------------------------------ */
/* Profiling and counters                                                     */
/* ------------------------------------------------------------------------ */

/* Counters of a runtime, always kept (atomically, whatever the profiling
 * setting), since the runtime was created. networks_loaded: successful
 * plx_runtime_load_network calls (not the number loaded now).
 * inferences_run: plx_loaded_network_execute_with and plx_loaded_network_execute
 * calls that succeeded (scheduled executions included); inferences_failed:
 * those that returned an error, argument errors included. */
typedef struct plx_counters {
    uint64_t networks_loaded;
    uint64_t inferences_run;
    uint64_t inferences_failed;
} plx_counters;

/* Writes the runtime's counters to *out (all zero for a NULL runtime).
 * Each counter is read atomically, the three not as one snapshot.
 * Thread-safe. */
PLX_API void plx_runtime_counters(const plx_runtime *runtime, plx_counters *out);

/* Starts (enabled true) or stops recording trace events in `runtime`.
 * Recorded while enabled, each a complete event with the calling thread:
 *   cat "load":    per plx_runtime_load_network, "create factories",
 *                  "check capabilities", "constants", "memory plan",
 *                  "working memory" (each phase that ran) and the whole
 *                  "load";
 *   cat "execute": one per workload per execution (name: the layer's,
 *                  op: its op name, backend: its backend id);
 *   cat "copy":    one per copy layer the host runs between backends
 *                  (backend: the destination's);
 *   cat "import":  one per import-layer binding;
 *   cat "enqueue": one per layer of a queued backend per execution (the
 *                  time to enqueue it; docs/backend-abi.md, R-24);
 *   cat "wait":    one per host wait for a queued backend (name "wait for
 *                  <backend>");
 *   a backend's own events (R-25: kernels, transfers; its category), on a
 *                  track named "<backend> device", placed on the host's
 *                  clock, with the layer among their arguments.
 * Every event carries the loaded network's id. Events are kept, across
 * disable and enable, until plx_runtime_clear_trace or the runtime is
 * destroyed.
 * Cost: disabled, an execution reads one relaxed atomic flag and
 * allocates nothing. Enabled, events go into one buffer under a mutex
 * that grows by doubling (amortised allocation); an event that cannot be
 * stored for lack of memory is dropped and counted (written as
 * "dropped_events"). Errors: runtime NULL (PLX_INVALID_ARGUMENT), out of
 * memory at the first enable. Thread-safe; executions already running see
 * the change at their next execution or load phase. */
PLX_API plx_status plx_runtime_enable_profiling(plx_runtime *runtime, bool enabled);

/* The number of events recorded and not cleared; 0 for NULL.
 * Thread-safe. */
PLX_API size_t plx_runtime_trace_event_count(const plx_runtime *runtime);

/* Forgets every recorded event (and the dropped count); profiling stays as
 * it is. NULL is ignored. Thread-safe. */
PLX_API void plx_runtime_clear_trace(plx_runtime *runtime);

/* Writes the recorded events to the file `path` (created or truncated) as
 * Chrome trace-event JSON, which Perfetto and chrome://tracing open:
 *   {"traceEvents":[
 *     {"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"plexus"}},
 *     {"name":"thread_name","ph":"M","pid":1,"tid":<n>,"args":{"name":"thread <n>"}},
 *     {"name":"conv1","cat":"execute","ph":"X","ts":<us>,"dur":<us>,"pid":1,
 *      "tid":<n>,"args":{"op":"conv","backend":"cpu_ref","network":1}}, ...],
 *    "displayTimeUnit":"ms","otherData":{"dropped_events":<n>}}
 * ts and dur are microseconds (with fractions), ts counted from the first
 * enable; tid is a small number per thread of the process (1, 2, ...).
 * Load events have "op":"" and "backend":"". The events are kept. Writing
 * holds the event buffer's lock: events recorded meanwhile wait.
 * Errors: runtime or path NULL (PLX_INVALID_ARGUMENT); the file cannot be
 * opened or written (PLX_IO_ERROR, naming the path and the system's
 * reason). Thread-safe. */
PLX_API plx_status plx_runtime_write_trace(plx_runtime *runtime, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_NETWORK_H */
