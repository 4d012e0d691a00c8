/* Planning intermediate tensors in externally managed memory: the built-in
 * memory strategies, the checker every plan passes, and the lower bound that
 * plans are measured against (prefix plxi_, internal to the core).
 *
 * Everything here is pure computation on caller-owned arrays: no global
 * state, safe to call from any number of threads at once. */
#ifndef PLEXUS_CORE_MEMORY_PLAN_H
#define PLEXUS_CORE_MEMORY_PLAN_H

#include <stddef.h>

#include <plexus/memory.h>
#include <plexus/status.h>

/* A checked plan. Every array is owned by the plan (heap, freed by
 * plxi_memory_plan_release); all are NULL for an empty plan. */
typedef struct plxi_memory_plan {
    plx_memory_placement *placements; /* one per block, in block order */
    size_t *buffer_sizes;             /* buffer_count entries, bytes */
    size_t *buffer_alignments;        /* buffer_count entries: the largest
                                         alignment of the blocks in each
                                         buffer, >= 1; allocate buffers at
                                         least this aligned */
    size_t buffer_count;
    size_t total_bytes;               /* sum of buffer_sizes */
    size_t lower_bound;               /* plxi_memory_lower_bound of the blocks */
} plxi_memory_plan;

/* The built-in strategy called `name`, or NULL when there is none:
 * - "none": one buffer per block, each at offset 0 (no sharing; Arm NN's
 *   default, the baseline the others are measured against).
 * - "greedy": one arena. Blocks are taken largest first (ties: earlier
 *   first_step, then lower index) and each goes to the smallest aligned gap
 *   between the already placed blocks whose lifetimes overlap its own, else
 *   after the highest of them (TFLite's greedy-by-size planner). Should
 *   alignment padding make that arena larger than the sum of the blocks'
 *   sizes, it returns "none"'s layout instead, so it never uses more bytes
 *   than "none". Its result depends only on the blocks. O(n^2) in the
 *   number of blocks.
 * The returned strategies are static and stateless. */
const plx_memory_strategy *plxi_memory_strategy_builtin(const char *name);

/* The largest total size of the blocks alive at any one step: no plan, with
 * any number of buffers, can use fewer bytes. Saturates at SIZE_MAX. Blocks
 * are taken as given (last_step < first_step counts as never alive); `blocks`
 * may be NULL when count is 0. O(n log n); returns 0 if it cannot allocate
 * its scratch memory (callers that need certainty use plxi_memory_plan_create). */
size_t plxi_memory_lower_bound(const plx_memory_block *blocks, size_t count);

/* Checks a plan for `count` blocks against the blocks: each placement names
 * a buffer below buffer_count, its offset is a multiple of its block's
 * alignment, the block lies within the buffer (offset + size <= buffer size,
 * without overflow), and no two blocks alive at a common step share a byte
 * of the same buffer (zero-size blocks share nothing). A buffer_count of 0
 * with count > 0 is invalid. Buffers no block uses are allowed.
 *
 * Returns NULL when the plan is valid; PLX_INVALID_ARGUMENT for bad blocks
 * (see plxi_memory_plan_create) or NULL arrays; PLX_INTERNAL for a bad plan, with a
 * message that starts "memory strategy '<strategy_name>': " and names the
 * block(s) and buffer. PLX_OUT_OF_MEMORY if scratch memory runs out.
 * O(n log n + n * k), k being the most blocks alive at one step. */
plx_status plxi_memory_plan_validate(const char *strategy_name, const plx_memory_block *blocks,
                                     size_t count, const plx_memory_placement *placements,
                                     const size_t *buffer_sizes, size_t buffer_count);

/* Plans `count` blocks with `strategy` and writes the checked plan to *out
 * (zeroed on entry, written only on success; release it with
 * plxi_memory_plan_release).
 *
 * Errors:
 * - PLX_INVALID_ARGUMENT: strategy, blocks or out NULL (blocks may be NULL
 *   when count is 0), a strategy without `place`, a block whose last_step <
 *   first_step or whose alignment is not a power of two (the message names
 *   the block), or blocks whose sizes and alignments add up to more than
 *   SIZE_MAX, or more than UINT32_MAX blocks.
 * - PLX_INCOMPATIBLE: a strategy whose struct_size is below
 *   PLX_MEMORY_STRATEGY_SIZE_1_0.
 * - PLX_INTERNAL: the strategy returned false ("memory strategy '<name>'
 *   failed: <its message>") or a plan that does not pass
 *   plxi_memory_plan_validate.
 * - PLX_OUT_OF_MEMORY.
 * count 0 gives an empty plan without calling the strategy. */
plx_status plxi_memory_plan_create(const plx_memory_strategy *strategy,
                                   const plx_memory_block *blocks, size_t count,
                                   plxi_memory_plan *out);

/* Frees a plan's arrays and zeroes it; NULL and zeroed plans are fine. */
void plxi_memory_plan_release(plxi_memory_plan *plan);

#endif /* PLEXUS_CORE_MEMORY_PLAN_H */
