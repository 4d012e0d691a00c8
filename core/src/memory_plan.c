/* Memory plans for externally managed memory: built-in strategies, the plan
 * checker and the lower bound (see memory_plan.h). */
#include "memory_plan.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Longest strategy name and message quoted in a status; both come from code
 * the host does not trust, so they are cut and made printable. */
#define NAME_MAX_LEN 64
#define STRATEGY_ERROR_SIZE 256

static bool is_power_of_two(size_t x) {
    return x != 0 && (x & (x - 1)) == 0;
}

static bool lifetimes_overlap(const plx_memory_block *a, const plx_memory_block *b) {
    return a->first_step <= b->last_step && b->first_step <= a->last_step;
}

/* value rounded up to `alignment` (a power of two); false on overflow. */
static bool align_up(size_t value, size_t alignment, size_t *out) {
    if (value > SIZE_MAX - (alignment - 1)) {
        return false;
    }
    *out = (value + (alignment - 1)) & ~(alignment - 1);
    return true;
}

/* The printable form of a strategy's name, heap-allocated; NULL only when
 * out of memory. */
static char *name_label(const char *name) {
    return plxi_sanitize(name ? name : "(unnamed)", NAME_MAX_LEN);
}

/* A status whose message is "memory strategy '<name>': <fmt...>". */
static plx_status strategy_error(plx_status_code code, const char *name, const char *fmt, ...)
    PLXI_PRINTF(3, 4);
static plx_status strategy_error(plx_status_code code, const char *name, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *detail = plxi_vasprintf(fmt, ap);
    va_end(ap);
    char *label = name_label(name);
    plx_status s;
    if (!detail || !label) {
        s = plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory (reporting a memory plan error)");
    } else {
        s = plxi_status_create(code, "memory strategy '%s': %s", label, detail);
    }
    free(detail);
    free(label);
    return s;
}

static plx_status out_of_memory(const char *what) {
    return plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory (%s)", what);
}

/* The checks every block must pass, whoever planned it. */
static plx_status check_blocks(const plx_memory_block *blocks, size_t count) {
    for (size_t i = 0; i < count; i++) {
        const plx_memory_block *b = &blocks[i];
        if (b->last_step < b->first_step) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "memory block %zu: last_step %" PRIu32
                                      " is before first_step %" PRIu32,
                                      i, b->last_step, b->first_step);
        }
        if (!is_power_of_two(b->alignment)) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "memory block %zu: alignment %zu is not a power of two", i,
                                      b->alignment);
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Lower bound                                                                */
/* ------------------------------------------------------------------------ */

typedef struct size_event {
    uint64_t step; /* uint64: last_step + 1 must not wrap */
    size_t size;
    bool starts; /* false: the block is dead from `step` on */
} size_event;

static int compare_size_events(const void *pa, const void *pb) {
    const size_event *a = pa, *b = pb;
    if (a->step != b->step) {
        return a->step < b->step ? -1 : 1;
    }
    /* Deaths before births at the same step: a block whose last step is s-1
     * is not alive with one born at s. */
    return (int)a->starts - (int)b->starts;
}

/* false only when out of memory. */
static bool lower_bound(const plx_memory_block *blocks, size_t count, size_t *out) {
    *out = 0;
    size_t live = 0;
    for (size_t i = 0; i < count; i++) {
        if (blocks[i].size != 0 && blocks[i].first_step <= blocks[i].last_step) {
            live++;
        }
    }
    if (live == 0) {
        return true;
    }
    if (live > SIZE_MAX / 2 / sizeof(size_event)) {
        return false;
    }
    size_event *events = malloc(2 * live * sizeof *events);
    if (!events) {
        return false;
    }
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        const plx_memory_block *b = &blocks[i];
        if (b->size != 0 && b->first_step <= b->last_step) {
            events[n++] = (size_event){b->first_step, b->size, true};
            events[n++] = (size_event){(uint64_t)b->last_step + 1, b->size, false};
        }
    }
    qsort(events, n, sizeof *events, compare_size_events);
    size_t current = 0, best = 0;
    for (size_t i = 0; i < n; i++) {
        if (!events[i].starts) {
            current -= events[i].size;
            continue;
        }
        if (current > SIZE_MAX - events[i].size) {
            best = SIZE_MAX; /* saturate: nothing larger can be reported */
            break;
        }
        current += events[i].size;
        if (current > best) {
            best = current;
        }
    }
    free(events);
    *out = best;
    return true;
}

size_t plxi_memory_lower_bound(const plx_memory_block *blocks, size_t count) {
    size_t result = 0;
    if (count == 0 || !blocks || !lower_bound(blocks, count, &result)) {
        return 0;
    }
    return result;
}

/* ------------------------------------------------------------------------ */
/* Validation                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct step_key {
    uint32_t step;
    size_t index;
} step_key;

static int compare_step_keys(const void *pa, const void *pb) {
    const step_key *a = pa, *b = pb;
    if (a->step != b->step) {
        return a->step < b->step ? -1 : 1;
    }
    return (a->index > b->index) - (a->index < b->index);
}

/* A block alive at the sweep's current step; the active set is kept sorted
 * by (buffer, offset) and, as long as the plan is valid so far, its byte
 * ranges within a buffer are disjoint, so a new block can only collide with
 * its neighbours in that order. */
typedef struct active_block {
    uint32_t buffer;
    size_t offset;
    size_t end;
    size_t block;
} active_block;

/* The first position in `active` whose (buffer, offset) is not below the
 * given one. */
static size_t active_lower_bound(const active_block *active, size_t n, uint32_t buffer,
                                 size_t offset) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (active[mid].buffer < buffer ||
            (active[mid].buffer == buffer && active[mid].offset < offset)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static plx_status overlap_error(const char *name, const plx_memory_block *blocks,
                                const active_block *x, const active_block *y) {
    if (x->block > y->block) {
        const active_block *t = x;
        x = y;
        y = t;
    }
    uint32_t step = blocks[x->block].first_step > blocks[y->block].first_step
                        ? blocks[x->block].first_step
                        : blocks[y->block].first_step;
    return strategy_error(PLX_INTERNAL, name,
                          "blocks %zu and %zu overlap in buffer %" PRIu32
                          " (bytes %zu..%zu and %zu..%zu, both alive at step %" PRIu32 ")",
                          x->block, y->block, x->buffer, x->offset, x->end, y->offset, y->end,
                          step);
}

/* The sweep: blocks enter in first_step order and leave once the step is
 * past their last_step; each entering block is checked against its
 * neighbours among the blocks alive. Zero-size blocks never enter. */
static plx_status check_overlaps(const char *name, const plx_memory_block *blocks, size_t count,
                                 const plx_memory_placement *placements) {
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        if (blocks[i].size != 0) {
            n++;
        }
    }
    if (n < 2) {
        return NULL;
    }
    if (n > SIZE_MAX / sizeof(active_block)) {
        return out_of_memory("checking a memory plan");
    }
    step_key *by_first = malloc(n * sizeof *by_first);
    step_key *by_last = malloc(n * sizeof *by_last);
    active_block *active = malloc(n * sizeof *active);
    plx_status status = NULL;
    if (!by_first || !by_last || !active) {
        status = out_of_memory("checking a memory plan");
        goto done;
    }
    size_t k = 0;
    for (size_t i = 0; i < count; i++) {
        if (blocks[i].size != 0) {
            by_first[k] = (step_key){blocks[i].first_step, i};
            by_last[k] = (step_key){blocks[i].last_step, i};
            k++;
        }
    }
    qsort(by_first, n, sizeof *by_first, compare_step_keys);
    qsort(by_last, n, sizeof *by_last, compare_step_keys);

    size_t alive = 0, next_death = 0;
    for (size_t i = 0; i < n; i++) {
        size_t b = by_first[i].index;
        uint32_t step = by_first[i].step;
        /* Every block with last_step < step entered earlier (its first_step
         * is smaller still), so it is in the active set. */
        while (next_death < n && by_last[next_death].step < step) {
            size_t d = by_last[next_death++].index;
            size_t pos = active_lower_bound(active, alive, placements[d].buffer,
                                            placements[d].offset);
            if (pos < alive && active[pos].block == d) {
                memmove(&active[pos], &active[pos + 1], (alive - pos - 1) * sizeof *active);
                alive--;
            }
        }
        active_block entry = {placements[b].buffer, placements[b].offset,
                              placements[b].offset + blocks[b].size, b};
        size_t pos = active_lower_bound(active, alive, entry.buffer, entry.offset);
        if (pos > 0 && active[pos - 1].buffer == entry.buffer &&
            active[pos - 1].end > entry.offset) {
            status = overlap_error(name, blocks, &active[pos - 1], &entry);
            goto done;
        }
        if (pos < alive && active[pos].buffer == entry.buffer && active[pos].offset < entry.end) {
            status = overlap_error(name, blocks, &active[pos], &entry);
            goto done;
        }
        memmove(&active[pos + 1], &active[pos], (alive - pos) * sizeof *active);
        active[pos] = entry;
        alive++;
    }
done:
    free(by_first);
    free(by_last);
    free(active);
    return status;
}

plx_status plxi_memory_plan_validate(const char *strategy_name, const plx_memory_block *blocks,
                                     size_t count, const plx_memory_placement *placements,
                                     const size_t *buffer_sizes, size_t buffer_count) {
    if (count > 0 && (!blocks || !placements)) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "memory plan check: %zu blocks but no block or placement array",
                                  count);
    }
    if (buffer_count > 0 && !buffer_sizes) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "memory plan check: %zu buffers but no buffer size array",
                                  buffer_count);
    }
    plx_status s = check_blocks(blocks, count);
    if (s) {
        return s;
    }
    if (count > 0 && buffer_count == 0) {
        return strategy_error(PLX_INTERNAL, strategy_name, "no buffers for %zu blocks", count);
    }
    for (size_t i = 0; i < count; i++) {
        const plx_memory_block *b = &blocks[i];
        const plx_memory_placement *p = &placements[i];
        if (p->buffer >= buffer_count) {
            return strategy_error(PLX_INTERNAL, strategy_name,
                                  "block %zu is placed in buffer %" PRIu32
                                  ", but there are only %zu buffers",
                                  i, p->buffer, buffer_count);
        }
        if (p->offset % b->alignment != 0) {
            return strategy_error(PLX_INTERNAL, strategy_name,
                                  "block %zu is at offset %zu of buffer %" PRIu32
                                  ", which is not a multiple of its alignment %zu",
                                  i, p->offset, p->buffer, b->alignment);
        }
        size_t buffer_size = buffer_sizes[p->buffer];
        if (b->size > buffer_size || p->offset > buffer_size - b->size) {
            return strategy_error(PLX_INTERNAL, strategy_name,
                                  "block %zu (%zu bytes at offset %zu) does not fit in buffer %" PRIu32
                                  " of %zu bytes",
                                  i, b->size, p->offset, p->buffer, buffer_size);
        }
    }
    return check_overlaps(strategy_name, blocks, count, placements);
}

/* ------------------------------------------------------------------------ */
/* Built-in strategies                                                        */
/* ------------------------------------------------------------------------ */

static void set_error(char *error, size_t error_size, const char *message) {
    if (error && error_size > 0) {
        size_t n = strlen(message);
        if (n >= error_size) {
            n = error_size - 1;
        }
        memcpy(error, message, n);
        error[n] = '\0';
    }
}

static bool place_none(void *user_data, const plx_memory_block *blocks, size_t count,
                       plx_memory_placement *placements, size_t *buffer_sizes,
                       size_t *out_buffer_count, char *error, size_t error_size) {
    (void)user_data;
    if (count > UINT32_MAX) {
        set_error(error, error_size, "more blocks than buffer indices");
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        placements[i] = (plx_memory_placement){(uint32_t)i, 0};
        buffer_sizes[i] = blocks[i].size;
    }
    *out_buffer_count = count;
    return true;
}

typedef struct greedy_key {
    size_t size;
    uint32_t first_step;
    size_t index;
} greedy_key;

static int compare_greedy_keys(const void *pa, const void *pb) {
    const greedy_key *a = pa, *b = pb;
    if (a->size != b->size) {
        return a->size > b->size ? -1 : 1; /* largest first */
    }
    if (a->first_step != b->first_step) {
        return a->first_step < b->first_step ? -1 : 1;
    }
    return (a->index > b->index) - (a->index < b->index);
}

/* A block the greedy planner has placed; kept sorted by offset. */
typedef struct greedy_placed {
    size_t offset;
    size_t end;
    size_t block;
} greedy_placed;

static bool place_greedy(void *user_data, const plx_memory_block *blocks, size_t count,
                         plx_memory_placement *placements, size_t *buffer_sizes,
                         size_t *out_buffer_count, char *error, size_t error_size) {
    (void)user_data;
    greedy_key *order = malloc(count * sizeof *order);
    greedy_placed *placed = malloc(count * sizeof *placed);
    if (!order || !placed) {
        free(order);
        free(placed);
        set_error(error, error_size, "out of memory");
        return false;
    }
    for (size_t i = 0; i < count; i++) {
        order[i] = (greedy_key){blocks[i].size, blocks[i].first_step, i};
    }
    qsort(order, count, sizeof *order, compare_greedy_keys);

    size_t arena = 0, placed_count = 0;
    bool ok = true;
    for (size_t o = 0; o < count && ok; o++) {
        size_t i = order[o].index;
        const plx_memory_block *b = &blocks[i];
        if (b->size == 0) {
            /* Occupies nothing; offset 0 is aligned and inside any buffer. */
            placements[i] = (plx_memory_placement){0, 0};
            continue;
        }
        /* Walk the placed blocks alive with this one in offset order;
         * `current` is the end of the highest of them seen so far, so
         * [current, next offset) is free for this block's whole life. */
        size_t current = 0, best_offset = 0, best_gap = SIZE_MAX;
        bool found = false;
        for (size_t p = 0; p < placed_count; p++) {
            if (!lifetimes_overlap(b, &blocks[placed[p].block])) {
                continue;
            }
            size_t candidate;
            if (!align_up(current, b->alignment, &candidate)) {
                ok = false;
                break;
            }
            if (candidate <= placed[p].offset && placed[p].offset - candidate >= b->size) {
                size_t gap = placed[p].offset - current;
                if (gap < best_gap) {
                    best_gap = gap;
                    best_offset = candidate;
                    found = true;
                }
            }
            if (placed[p].end > current) {
                current = placed[p].end;
            }
        }
        if (ok && !found) {
            ok = align_up(current, b->alignment, &best_offset);
        }
        if (!ok || best_offset > SIZE_MAX - b->size) {
            ok = false;
            break;
        }
        size_t end = best_offset + b->size;
        if (end > arena) {
            arena = end;
        }
        placements[i] = (plx_memory_placement){0, best_offset};
        /* Insert after any block at the same offset, keeping the order a
         * function of the input alone. */
        size_t lo = 0, hi = placed_count;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (placed[mid].offset <= best_offset) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        memmove(&placed[lo + 1], &placed[lo], (placed_count - lo) * sizeof *placed);
        placed[lo] = (greedy_placed){best_offset, end, i};
        placed_count++;
    }
    free(order);
    free(placed);
    if (!ok) {
        set_error(error, error_size, "arena size overflows size_t");
        return false;
    }
    /* Alignment padding can make the arena larger than the blocks side by
     * side (a 3-byte block, then a 2-byte one aligned to 256, both alive at
     * once: 258 bytes against 5). Separate buffers are then smaller, and
     * greedy never does worse than no sharing at all. */
    size_t separate = 0;
    for (size_t i = 0; i < count; i++) {
        if (separate > SIZE_MAX - blocks[i].size) {
            separate = SIZE_MAX;
            break;
        }
        separate += blocks[i].size;
    }
    if (arena > separate) {
        return place_none(NULL, blocks, count, placements, buffer_sizes, out_buffer_count, error,
                          error_size);
    }
    buffer_sizes[0] = arena;
    *out_buffer_count = 1;
    return true;
}

static const plx_memory_strategy builtin_strategies[] = {
    {PLX_MEMORY_STRATEGY_SIZE_1_0, "none", NULL, place_none},
    {PLX_MEMORY_STRATEGY_SIZE_1_0, "greedy", NULL, place_greedy},
};

const plx_memory_strategy *plxi_memory_strategy_builtin(const char *name) {
    if (!name) {
        return NULL;
    }
    for (size_t i = 0; i < sizeof builtin_strategies / sizeof builtin_strategies[0]; i++) {
        if (strcmp(builtin_strategies[i].name, name) == 0) {
            return &builtin_strategies[i];
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Planning                                                                   */
/* ------------------------------------------------------------------------ */

void plxi_memory_plan_release(plxi_memory_plan *plan) {
    if (!plan) {
        return;
    }
    free(plan->placements);
    free(plan->buffer_sizes);
    free(plan->buffer_alignments);
    memset(plan, 0, sizeof *plan);
}

plx_status plxi_memory_plan_create(const plx_memory_strategy *strategy,
                                   const plx_memory_block *blocks, size_t count,
                                   plxi_memory_plan *out) {
    if (!out) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "memory plan: no output");
    }
    memset(out, 0, sizeof *out);
    if (!strategy) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "memory plan: no memory strategy");
    }
    if (strategy->struct_size < PLX_MEMORY_STRATEGY_SIZE_1_0) {
        /* Fields beyond struct_size may not exist: not even the name is read. */
        return plxi_status_create(PLX_INCOMPATIBLE,
                                  "memory strategy: struct_size %" PRIu32
                                  " is smaller than version 1.0's %" PRIu32,
                                  strategy->struct_size, PLX_MEMORY_STRATEGY_SIZE_1_0);
    }
    const char *name = strategy->name;
    if (!strategy->place) {
        return strategy_error(PLX_INVALID_ARGUMENT, name, "no place function");
    }
    if (count > 0 && !blocks) {
        return plxi_status_create(PLX_INVALID_ARGUMENT, "memory plan: %zu blocks but no array",
                                  count);
    }
    if (count > UINT32_MAX || count > SIZE_MAX / sizeof(greedy_placed)) {
        return plxi_status_create(PLX_INVALID_ARGUMENT,
                                  "memory plan: %zu blocks, more than buffer indices can name",
                                  count);
    }
    plx_status s = check_blocks(blocks, count);
    if (s) {
        return s;
    }
    /* With every size and alignment summed below SIZE_MAX, no sensible plan
     * (and neither built-in one) overflows an offset or a buffer size. */
    size_t sum = 0;
    for (size_t i = 0; i < count; i++) {
        size_t extent = blocks[i].size + (blocks[i].alignment - 1);
        if (extent < blocks[i].size || sum > SIZE_MAX - extent) {
            return plxi_status_create(PLX_INVALID_ARGUMENT,
                                      "memory plan: the sizes and alignments of %zu blocks add "
                                      "up to more than SIZE_MAX (at block %zu)",
                                      count, i);
        }
        sum += extent;
    }
    if (count == 0) {
        return NULL;
    }

    size_t bound;
    if (!lower_bound(blocks, count, &bound)) {
        return out_of_memory("planning memory");
    }
    plx_memory_placement *placements = malloc(count * sizeof *placements);
    size_t *buffer_sizes = calloc(count, sizeof *buffer_sizes);
    size_t *buffer_alignments = NULL;
    char error[STRATEGY_ERROR_SIZE];
    if (!placements || !buffer_sizes) {
        s = out_of_memory("planning memory");
        goto fail;
    }
    /* An unplaced block then shows up as one in a buffer that does not
     * exist, rather than as a plausible placement. */
    for (size_t i = 0; i < count; i++) {
        placements[i] = (plx_memory_placement){UINT32_MAX, 0};
    }
    size_t buffer_count = 0;
    memset(error, 0, sizeof error);
    if (!strategy->place(strategy->user_data, blocks, count, placements, buffer_sizes,
                         &buffer_count, error, sizeof error)) {
        char *message = plxi_sanitize(error, sizeof error); /* reads at most sizeof error */
        char *label = name_label(name);
        if (!message || !label) {
            s = out_of_memory("reporting a memory plan error");
        } else {
            s = plxi_status_create(PLX_INTERNAL, "memory strategy '%s' failed: %s", label,
                                   message[0] ? message : "(no message)");
        }
        free(message);
        free(label);
        goto fail;
    }
    if (buffer_count > count) {
        s = strategy_error(PLX_INTERNAL, name,
                           "reported %zu buffers for %zu blocks (at most one per block)",
                           buffer_count, count);
        goto fail;
    }
    s = plxi_memory_plan_validate(name, blocks, count, placements, buffer_sizes, buffer_count);
    if (s) {
        goto fail;
    }
    size_t total = 0;
    for (size_t i = 0; i < buffer_count; i++) {
        if (total > SIZE_MAX - buffer_sizes[i]) {
            s = strategy_error(PLX_INTERNAL, name,
                               "buffer sizes add up to more than SIZE_MAX (at buffer %zu)", i);
            goto fail;
        }
        total += buffer_sizes[i];
    }
    buffer_alignments = malloc(buffer_count * sizeof *buffer_alignments);
    if (!buffer_alignments) {
        s = out_of_memory("planning memory");
        goto fail;
    }
    for (size_t i = 0; i < buffer_count; i++) {
        buffer_alignments[i] = 1;
    }
    for (size_t i = 0; i < count; i++) {
        size_t *a = &buffer_alignments[placements[i].buffer];
        if (blocks[i].alignment > *a) {
            *a = blocks[i].alignment;
        }
    }
    out->placements = placements;
    out->buffer_sizes = buffer_sizes;
    out->buffer_alignments = buffer_alignments;
    out->buffer_count = buffer_count;
    out->total_bytes = total;
    out->lower_bound = bound;
    return NULL;

fail:
    free(placements);
    free(buffer_sizes);
    free(buffer_alignments);
    return s;
}
