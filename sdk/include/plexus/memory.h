/* Plexus memory strategies: planning a network's intermediate tensors.
 *
 * When a backend's intermediate tensors live in memory the host plans
 * (externally managed memory, PLX_CAP_EXTERNALLY_MANAGED_MEMORY), the host
 * walks the network's layers in execution order, one step per layer, and
 * describes every intermediate tensor as a block: the step of the layer that
 * produces it, the step of its last consumer, its size and its alignment. A
 * memory strategy turns the blocks into buffers and offsets; the host then
 * checks the result (every block inside an existing buffer, aligned, and no
 * two blocks that are alive at the same step sharing a byte) before it
 * allocates anything, so a faulty strategy produces an error that names it,
 * never a corrupt plan.
 *
 * Includes only standard headers, so that a backend or an application can
 * provide a strategy without anything else from Plexus. */
#ifndef PLEXUS_MEMORY_H
#define PLEXUS_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One intermediate tensor to place. Arrays of blocks are indexed with this
 * struct's size, so its layout is frozen: new facts about blocks would come
 * as a new array, never as fields appended here. */
typedef struct plx_memory_block {
    /* The step of the layer that produces the tensor (steps count layers in
     * execution order from 0). The block is alive from this step... */
    uint32_t first_step;
    /* ...through this one, inclusive: the step of its last consumer.
     * Always >= first_step; a tensor nobody reads lives for one step. */
    uint32_t last_step;
    /* Bytes. 0 is allowed: such a block occupies nothing and may share its
     * offset with any other block, but must still lie within its buffer
     * (offset <= buffer size) and be aligned. */
    size_t size;
    /* Required alignment of the block's offset within its buffer: a power of
     * two, >= 1. The host allocates each buffer at least as aligned as the
     * largest alignment of the blocks placed in it, so an aligned offset is
     * an aligned address. */
    size_t alignment;
} plx_memory_block;

/* Where a strategy put one block: byte `offset` of buffer `buffer`, an index
 * below the buffer count the strategy reports. Layout frozen, as for
 * plx_memory_block. */
typedef struct plx_memory_placement {
    uint32_t buffer;
    size_t offset;
} plx_memory_placement;

typedef struct plx_memory_strategy plx_memory_strategy;

/* A memory strategy, supplied by the host (the built-in ones), by a backend
 * or by an application.
 *
 * Ownership and lifetime: owned by whoever supplies it, who keeps it, its
 * name and its user_data valid for as long as any runtime may plan with it
 * (for a backend: until the backend instance that supplied it is destroyed).
 * The host only reads it and never frees anything in it.
 *
 * Thread-safety: `place` may be called from several threads at once, for
 * different networks, with the same `user_data`; a strategy that keeps
 * mutable state in `user_data` must protect it. */
struct plx_memory_strategy {
    /* PLX_MEMORY_STRATEGY_SIZE_1_0 for the fields below; later versions only
     * append fields, and the host reads no field beyond this size. */
    uint32_t struct_size;
    /* A short name for messages and selection ("greedy"): printable ASCII,
     * unique among the strategies a runtime knows. NULL reads as
     * "(unnamed)". */
    const char *name;
    /* Passed back to `place` untouched; may be NULL. */
    void *user_data;
    /* Places `count` blocks (count >= 1; the host plans an empty set itself
     * and never calls `place` with count 0).
     *
     * - `blocks`: `count` blocks, already checked by the host (first_step <=
     *   last_step, alignment a power of two >= 1, the sum of all sizes plus
     *   alignments fits in size_t). Read-only.
     * - `placements`: `count` entries, one per block in the same order, to
     *   fill.
     * - `buffer_sizes`: room for `count` entries; fill the first
     *   *out_buffer_count with each buffer's size in bytes. No strategy needs
     *   more buffers than blocks.
     * - `out_buffer_count`: set to the number of buffers used, 1..count.
     * - `error`, `error_size`: on failure, a NUL-terminated message of at
     *   most error_size bytes, saying why (the host quotes it as
     *   "memory strategy '<name>' failed: <message>"). error_size >= 64.
     *
     * All pointers are owned by the host and valid only during the call; a
     * strategy must not keep them. Returns true when it filled every output,
     * false on failure (out of memory, a limit of the strategy); the host
     * then ignores the outputs. Whatever a strategy returns, the host checks
     * the plan before using it; it never trusts one. */
    bool (*place)(void *user_data, const plx_memory_block *blocks, size_t count,
                  plx_memory_placement *placements, size_t *buffer_sizes,
                  size_t *out_buffer_count, char *error, size_t error_size);
};

/* The value of `struct_size` for a strategy with the fields of version 1.0
 * (through `place`). */
#define PLX_MEMORY_STRATEGY_SIZE_1_0                         \
    ((uint32_t)(offsetof(plx_memory_strategy, place) +       \
                sizeof(((plx_memory_strategy *)0)->place)))

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_MEMORY_H */
