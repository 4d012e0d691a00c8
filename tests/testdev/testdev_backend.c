/* testdev: a test-only backend that runs a few layers, for the optimiser
 * and loaded-network tests.
 *
 * - Supports: relu and add (float32, equal shapes), constants (float32),
 *   and "probe" layers: a cast to int64 [1] of a layer whose name starts
 *   with "probe", whose output is the address its input was read from, so
 *   that tests can see whether an input was imported (pointer identity).
 * - A relu layer whose name starts with "fail" fails at execution when its
 *   first input element is negative, and otherwise works as relu.
 * - Option `import` = malloc (default) | dma_buf | none: the memory source
 *   its handles import, so that tests can steer the optimiser between
 *   import and copy layers. (Its dma_buf "import" is only declared, to give
 *   the optimiser a source cpu_ref does not export; importing dma-buf
 *   memory for real comes with the memory issue.)
 * - Option `export` = none (default) | dma_buf | dma_buf_fail: with dma_buf
 *   it reports memory_export_dma_buf (ABI 1.4, R-26), and a handle created
 *   with PLX_MEMORY_SOURCE_DMA_BUF in its export_sources allocates its
 *   memory as a memfd (memfd_create, ftruncate, mmap shared), which
 *   export_external_memory describes as kind "dma_buf": a memfd stands in
 *   for a dma-buf, as in the tests of caller dma-bufs (tests/test_async.c,
 *   memfd_with), since importers only map the descriptor. dma_buf_fail is
 *   the same, except that export_external_memory fails for a tensor whose
 *   first element is negative, so that tests see an import layer fail and
 *   the next execution work.
 * - Option `memory` = backend (default) | planned: with planned it reports
 *   externally_managed_memory and offers its own memory strategy
 *   ("testdev_separate": one buffer per tensor), so tests can see a
 *   backend's strategy used, and overridden by the application's. With
 *   device it is planned too, and allocates the plan's buffers itself
 *   (ABI 1.4, R-26): memory of the vendor kind "testdev.block" (host
 *   memory it hands out as if it were a device's), bound to handles
 *   through import_external_memory, whose places it wants at multiples of
 *   TESTDEV_PLANNED_ALIGNMENT (planned_alignment; it refuses others);
 *   device_fail is the same with an allocation that fails ("device memory
 *   full"). With every mode it lists "testdev.block" in
 *   import_memory_kinds: an application's zero-copy input or output, or
 *   pre-import, may be such a block (a host pointer in `handle`, which the
 *   host treats as unreadable device memory) at a multiple of
 *   TESTDEV_PLANNED_ALIGNMENT; option `kinds` reports another value, for
 *   the host's checks. It reports preimport_io_tensors (an import is a
 *   pointer swap).
 * - Option `subgraph` (ABI 1.2 optimize_subgraph, R-23) = none (default) |
 *   fuse: every add whose only reader is a relu becomes one precompiled
 *   "add+relu" layer | refuse_fused: the same substitutions, but
 *   check_layer refuses the precompiled layer | give_back: every relu is
 *   given back | bad_output: add+relu substitutions that list the add's
 *   output instead of the relu's | bad_input: one that names the relu's
 *   input (inside the set) as an input | whole: every subgraph with an add
 *   and a relu replaced as a whole (the optimiser refuses it when it is
 *   not convex) | fail: optimize_subgraph returns a status. A substitution
 *   the host refuses makes optimize_subgraph return the host's status.
 * Lives in its own build directory so that registry tests scanning the
 * fake plug-ins do not see it. */
#define _GNU_SOURCE /* memfd_create */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <plexus/backend.h>

enum subgraph_mode { SG_NONE, SG_FUSE, SG_REFUSE_FUSED, SG_GIVE_BACK, SG_BAD_OUTPUT,
                     SG_BAD_INPUT, SG_WHOLE, SG_FAIL };
static const char *const subgraph_modes[] = {"none",       "fuse",      "refuse_fused",
                                             "give_back",  "bad_output", "bad_input",
                                             "whole",      "fail"};

enum memory_mode { MEM_BACKEND, MEM_PLANNED, MEM_DEVICE, MEM_DEVICE_FAIL };
static const char *const memory_modes[] = {"backend", "planned", "device", "device_fail"};

enum export_mode { EXPORT_NONE, EXPORT_DMA_BUF, EXPORT_DMA_BUF_FAIL };
static const char *const export_modes[] = {"none", "dma_buf", "dma_buf_fail"};

/* The vendor kind of testdev's "device" memory. */
#define TESTDEV_BLOCK "testdev.block"
/* Where testdev's device blocks may be bound: beyond the host's 64 bytes
 * and the tensors' sizes in the tests, so a host that ignored it shows. */
#define TESTDEV_PLANNED_ALIGNMENT 1024

struct plx_backend {
    const plx_host *host;
    uint32_t import_sources;
    bool planned;
    enum memory_mode memory;
    enum subgraph_mode subgraph;
    enum export_mode exports;
    plx_capability caps[9];
    char kinds[128];
};

struct plx_factory {
    const plx_host *host;
    uint32_t import_sources;
    enum memory_mode memory;
    enum export_mode exports;
};

struct plx_tensor_handle {
    const plx_host *host;
    size_t bytes;
    void *owned;
    void *data;
    uint32_t import_sources;
    /* export=dma_buf and a handle asked to be lent as a dma-buf: its
     * memory is `memfd`, mapped at `owned`; -1 otherwise. */
    bool lends_dma_buf;
    enum export_mode exports;
    int memfd;
};

enum kind { RELU, ADD, CONSTANT, PROBE, FAIL, ADD_RELU };

/* The payload of testdev's precompiled add+relu. */
static const char add_relu_data[] = "testdev add+relu v1";

struct plx_workload {
    const plx_host *host;
    enum kind kind;
    size_t elements;
    const void *constant;
    plx_tensor_handle *in[2];
    plx_tensor_handle *out;
    char name[64];
};

static const plx_option_info options[] = {
    {"import", "memory source handles import: malloc, dma_buf or none", "malloc"},
    {"memory", "backend (its own allocations), planned (externally managed), device or "
               "device_fail (planned, in buffers it allocates)", "backend"},
    {"subgraph", "none, fuse, refuse_fused, give_back, bad_output, bad_input, whole or fail",
     "none"},
    {"export", "none, dma_buf (memfds lent as dma-bufs) or dma_buf_fail (the same, but the "
               "export of a tensor whose first element is negative fails)", "none"},
    {"kinds", "the import_memory_kinds value to report (for the host's checks)", TESTDEV_BLOCK},
};

/* One buffer per tensor, each at offset 0. */
static bool separate(void *user, const plx_memory_block *blocks, size_t count,
                     plx_memory_placement *placements, size_t *buffer_sizes,
                     size_t *out_buffer_count, char *error, size_t error_size) {
    (void)user;
    (void)error;
    (void)error_size;
    for (size_t i = 0; i < count; i++) {
        placements[i].buffer = (uint32_t)i;
        placements[i].offset = 0;
        buffer_sizes[i] = blocks[i].size;
    }
    *out_buffer_count = count;
    return true;
}

static const plx_memory_strategy separate_strategy = {
    PLX_MEMORY_STRATEGY_SIZE_1_0, "testdev_separate", NULL, separate};

static const plx_memory_strategy *get_memory_strategy(plx_backend *b) {
    /* memory=device keeps the host's greedy plan, whose shared buffers
     * put blocks at offsets that planned_alignment must move. */
    return b->memory == MEM_PLANNED ? &separate_strategy : NULL;
}

static plx_status create(const plx_host *host, const plx_option *opts, size_t count,
                         plx_backend **out) {
    uint32_t sources = PLX_MEMORY_SOURCE_MALLOC;
    bool planned = false;
    enum memory_mode memory = MEM_BACKEND;
    enum subgraph_mode subgraph = SG_NONE;
    enum export_mode exports = EXPORT_NONE;
    const char *kinds = TESTDEV_BLOCK;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(opts[i].key, "kinds") == 0) {
            kinds = opts[i].value;
        } else if (strcmp(opts[i].key, "export") == 0) {
            size_t m = 0;
            while (m < sizeof export_modes / sizeof export_modes[0] &&
                   strcmp(opts[i].value, export_modes[m]) != 0) {
                m++;
            }
            if (m == sizeof export_modes / sizeof export_modes[0]) {
                return host->status_create(host, PLX_INVALID_ARGUMENT,
                                           "testdev: option export=%s: expected none, dma_buf or "
                                           "dma_buf_fail", opts[i].value);
            }
            exports = (enum export_mode)m;
        } else if (strcmp(opts[i].key, "subgraph") == 0) {
            size_t m = 0;
            while (m < sizeof subgraph_modes / sizeof subgraph_modes[0] &&
                   strcmp(opts[i].value, subgraph_modes[m]) != 0) {
                m++;
            }
            if (m == sizeof subgraph_modes / sizeof subgraph_modes[0]) {
                return host->status_create(host, PLX_INVALID_ARGUMENT,
                                           "testdev: option subgraph=%s is not a mode",
                                           opts[i].value);
            }
            subgraph = (enum subgraph_mode)m;
        } else if (strcmp(opts[i].key, "memory") == 0) {
            size_t m = 0;
            while (m < sizeof memory_modes / sizeof memory_modes[0] &&
                   strcmp(opts[i].value, memory_modes[m]) != 0) {
                m++;
            }
            if (m == sizeof memory_modes / sizeof memory_modes[0]) {
                return host->status_create(host, PLX_INVALID_ARGUMENT,
                                           "testdev: option memory=%s: expected backend, planned, "
                                           "device or device_fail", opts[i].value);
            }
            memory = (enum memory_mode)m;
            planned = memory != MEM_BACKEND;
        } else if (strcmp(opts[i].value, "malloc") == 0) {
            sources = PLX_MEMORY_SOURCE_MALLOC;
        } else if (strcmp(opts[i].value, "dma_buf") == 0) {
            sources = PLX_MEMORY_SOURCE_DMA_BUF;
        } else if (strcmp(opts[i].value, "none") == 0) {
            sources = 0;
        } else {
            return host->status_create(host, PLX_INVALID_ARGUMENT,
                                       "testdev: option import=%s: expected malloc, dma_buf or none",
                                       opts[i].value);
        }
    }
    plx_backend *b = host->alloc(host, sizeof *b, 0);
    if (!b) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "testdev: out of memory");
    }
    b->host = host;
    b->import_sources = sources;
    b->caps[0] = (plx_capability){PLX_CAP_IMPORT_MALLOC, PLX_VALUE_BOOL,
                                  (sources & PLX_MEMORY_SOURCE_MALLOC) != 0, 0, NULL};
    b->caps[1] = (plx_capability){PLX_CAP_IMPORT_DMA_BUF, PLX_VALUE_BOOL,
                                  (sources & PLX_MEMORY_SOURCE_DMA_BUF) != 0, 0, NULL};
    b->caps[2] = (plx_capability){PLX_CAP_ASYNC_EXECUTION, PLX_VALUE_BOOL, false, 0, NULL};
    b->caps[3] = (plx_capability){PLX_CAP_EXTERNALLY_MANAGED_MEMORY, PLX_VALUE_BOOL, planned, 0,
                                  NULL};
    b->caps[4] = (plx_capability){PLX_CAP_ALLOCATES_PLANNED_MEMORY, PLX_VALUE_BOOL,
                                  memory == MEM_DEVICE || memory == MEM_DEVICE_FAIL, 0, NULL};
    b->caps[5] = (plx_capability){PLX_CAP_PLANNED_ALIGNMENT, PLX_VALUE_INT, false,
                                  memory == MEM_DEVICE ? TESTDEV_PLANNED_ALIGNMENT : 1, NULL};
    b->caps[6] = (plx_capability){PLX_CAP_EXPORT_DMA_BUF, PLX_VALUE_BOOL,
                                  exports != EXPORT_NONE, 0, NULL};
    snprintf(b->kinds, sizeof b->kinds, "%s", kinds);
    b->caps[7] = (plx_capability){PLX_CAP_IMPORT_MEMORY_KINDS, PLX_VALUE_STRING, false, 0,
                                  b->kinds};
    b->caps[8] = (plx_capability){PLX_CAP_PREIMPORT_IO_TENSORS, PLX_VALUE_BOOL, true, 0, NULL};
    b->planned = planned;
    b->memory = memory;
    b->subgraph = subgraph;
    b->exports = exports;
    *out = b;
    return NULL;
}

static void destroy(plx_backend *b) {
    b->host->free(b->host, b);
}

static plx_status get_capabilities(plx_backend *b, const plx_capability **out, size_t *count) {
    *out = b->caps;
    *count = sizeof b->caps / sizeof b->caps[0];
    return NULL;
}

static bool all_float(const plx_tensor_info *t, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        if (t[i].dtype != PLX_DTYPE_FLOAT32) {
            return false;
        }
    }
    return true;
}

/* Which kernel runs `layer`, or -1. */
static int kind_of(const plx_layer_view *l) {
    if (l->op == PLX_OP_CAST && strncmp(l->name, "probe", 5) == 0 &&
        l->outputs[0].dtype == PLX_DTYPE_INT64 && l->inputs[0].dtype == PLX_DTYPE_FLOAT32) {
        return PROBE;
    }
    if (!all_float(l->inputs, l->input_count) || !all_float(l->outputs, l->output_count)) {
        return -1;
    }
    if (l->op == PLX_OP_PRECOMPILED) {
        const plx_precompiled_desc *d = l->desc;
        return strcmp(d->kind, "add+relu") == 0 && d->size == sizeof add_relu_data &&
                       memcmp(d->data, add_relu_data, d->size) == 0 && l->input_count == 2 &&
                       l->output_count == 1
                   ? ADD_RELU
                   : -1;
    }
    if (l->op == PLX_OP_CONSTANT) {
        return CONSTANT;
    }
    if (l->op == PLX_OP_ACTIVATION &&
        ((const plx_activation_desc *)l->desc)->func == PLX_ACT_RELU) {
        return strncmp(l->name, "fail", 4) == 0 ? FAIL : RELU;
    }
    if (l->op == PLX_OP_BINARY && ((const plx_binary_desc *)l->desc)->func == PLX_BINARY_ADD &&
        plx_tensor_info_same_shape(&l->inputs[0], &l->inputs[1])) {
        return ADD;
    }
    return -1;
}

static plx_status check_layer(plx_backend *b, const plx_layer_view *l) {
    if (l->op == PLX_OP_PRECOMPILED && b->subgraph == SG_REFUSE_FUSED) {
        return b->host->status_create(b->host, PLX_UNSUPPORTED,
                                      "testdev refuses its own fusions (subgraph=refuse_fused)");
    }
    if (kind_of(l) < 0) {
        return b->host->status_create(b->host, PLX_UNSUPPORTED,
                                      "testdev runs only float32 relu, add of equal shapes and "
                                      "constants, not %s", plx_op_name(l->op));
    }
    return NULL;
}

static plx_status create_factory(plx_backend *b, const plx_factory_params *p, plx_factory **out) {
    (void)p;
    plx_factory *f = b->host->alloc(b->host, sizeof *f, 0);
    if (!f) {
        return b->host->status_create(b->host, PLX_OUT_OF_MEMORY, "testdev: out of memory");
    }
    f->host = b->host;
    f->import_sources = b->import_sources;
    f->memory = b->memory;
    f->exports = b->exports;
    *out = f;
    return NULL;
}

static void destroy_factory(plx_factory *f) {
    f->host->free(f->host, f);
}

static plx_status create_handle(plx_factory *f, const plx_tensor_info *info,
                                const plx_tensor_handle_params *p, plx_tensor_handle **out) {
    plx_tensor_handle *h = f->host->alloc(f->host, sizeof *h, 0);
    if (!h) {
        return f->host->status_create(f->host, PLX_OUT_OF_MEMORY, "testdev: out of memory");
    }
    memset(h, 0, sizeof *h);
    h->host = f->host;
    plx_tensor_info_byte_size(info, &h->bytes);
    h->import_sources = f->import_sources;
    h->exports = f->exports;
    h->lends_dma_buf = f->exports != EXPORT_NONE && p->managed &&
                       (p->export_sources & PLX_MEMORY_SOURCE_DMA_BUF) != 0;
    h->memfd = -1;
    *out = h;
    return NULL;
}

static void release(plx_tensor_handle *h) {
    if (h->data == h->owned) {
        h->data = NULL;
    }
    if (h->memfd >= 0) {
        if (h->owned) {
            munmap(h->owned, h->bytes ? h->bytes : 1);
        }
        close(h->memfd);
        h->memfd = -1;
    } else {
        h->host->free(h->host, h->owned);
    }
    h->owned = NULL;
}

/* export=dma_buf: the memory of a handle lent as a dma-buf, a memfd mapped
 * shared (a memfd stands in for a dma-buf). */
static plx_status allocate_memfd(plx_tensor_handle *h) {
    size_t bytes = h->bytes ? h->bytes : 1;
    int fd = memfd_create("testdev", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
        }
        return h->host->status_create(h->host, PLX_OUT_OF_MEMORY,
                                      "testdev: cannot create a memfd of %zu bytes: %s", bytes,
                                      strerror(e));
    }
    void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        int e = errno;
        close(fd);
        return h->host->status_create(h->host, PLX_OUT_OF_MEMORY,
                                      "testdev: cannot map a memfd of %zu bytes: %s", bytes,
                                      strerror(e));
    }
    h->memfd = fd;
    h->owned = map;
    return NULL;
}

static void destroy_handle(plx_tensor_handle *h) {
    release(h);
    h->host->free(h->host, h);
}

static plx_status allocate(plx_tensor_handle *h) {
    if (!h->owned && h->lends_dma_buf) {
        plx_status s = allocate_memfd(h);
        if (s) {
            return s;
        }
    }
    if (!h->owned) {
        h->owned = h->host->alloc(h->host, h->bytes, 16);
        if (!h->owned) {
            return h->host->status_create(h->host, PLX_OUT_OF_MEMORY, "testdev: out of memory");
        }
    }
    h->data = h->owned;
    return NULL;
}

static plx_status map(plx_tensor_handle *h, void **out) {
    if (!h->data) {
        return h->host->status_create(h->host, PLX_FAILED_PRECONDITION, "testdev: no memory");
    }
    *out = h->data;
    return NULL;
}

static void unmap(plx_tensor_handle *h) {
    (void)h;
}

static plx_status import(plx_tensor_handle *h, void *mem, size_t size, plx_memory_source src) {
    if (!(h->import_sources & (uint32_t)src) || src != PLX_MEMORY_SOURCE_MALLOC) {
        return h->host->status_create(h->host, PLX_INVALID_ARGUMENT,
                                      "testdev: cannot import memory source %d", (int)src);
    }
    if (size < h->bytes || (uintptr_t)mem % 4) {
        return h->host->status_create(h->host, PLX_INVALID_ARGUMENT,
                                      "testdev: imported memory too small or misaligned");
    }
    h->data = mem;
    return NULL;
}

static void unimport(plx_tensor_handle *h) {
    h->data = h->owned;
}

/* the plan's buffers, as "device" blocks. */
static plx_status allocate_planned_buffer(plx_factory *f, const plx_planned_buffer_params *p,
                                          plx_external_memory *out) {
    if (f->memory == MEM_DEVICE_FAIL) {
        return f->host->status_create(f->host, PLX_OUT_OF_MEMORY,
                                      "testdev: device memory full (memory=device_fail)");
    }
    if (f->memory != MEM_DEVICE) {
        return f->host->status_create(f->host, PLX_FAILED_PRECONDITION,
                                      "testdev: allocates planned buffers only with memory=device");
    }
    void *block = f->host->alloc(f->host, (size_t)p->size, (size_t)p->alignment);
    if (!block) {
        return f->host->status_create(f->host, PLX_OUT_OF_MEMORY,
                                      "testdev: out of memory (%llu bytes)",
                                      (unsigned long long)p->size);
    }
    out->kind = TESTDEV_BLOCK;
    out->handle = block;
    out->fd = -1;
    out->offset = 0;
    out->size = p->size;
    return NULL;
}

static void free_planned_buffer(plx_factory *f, const plx_external_memory *m) {
    f->host->free(f->host, m->handle);
}

static plx_status import_external_memory(plx_tensor_handle *h, const plx_external_memory *m) {
    if (!m->kind || strcmp(m->kind, TESTDEV_BLOCK) != 0) {
        return h->host->status_create(h->host, PLX_INVALID_ARGUMENT,
                                      "testdev: cannot import memory of kind '%s'",
                                      m->kind ? m->kind : "(null)");
    }
    if (m->size < h->bytes || m->offset % TESTDEV_PLANNED_ALIGNMENT) {
        return h->host->status_create(h->host, PLX_INVALID_ARGUMENT,
                                      "testdev: block at offset %llu of %llu bytes: too small "
                                      "or not at a multiple of %d",
                                      (unsigned long long)m->offset,
                                      (unsigned long long)m->size, TESTDEV_PLANNED_ALIGNMENT);
    }
    h->data = (char *)m->handle + m->offset;
    return NULL;
}

/* a handle's memfd, described as a dma-buf for an import layer. */
static plx_status export_external_memory(plx_tensor_handle *h, plx_memory_source source,
                                         plx_external_memory *out) {
    if (source != PLX_MEMORY_SOURCE_DMA_BUF || !h->lends_dma_buf) {
        return h->host->status_create(h->host, PLX_INVALID_ARGUMENT,
                                      "testdev: handle cannot be lent through memory source %d "
                                      "(it lends dma-bufs when created for that)", (int)source);
    }
    if (h->memfd < 0) {
        return h->host->status_create(h->host, PLX_FAILED_PRECONDITION,
                                      "testdev: handle has no memory to export");
    }
    if (h->exports == EXPORT_DMA_BUF_FAIL && h->bytes >= sizeof(float) &&
        ((const float *)h->owned)[0] < 0) {
        return h->host->status_create(h->host, PLX_INTERNAL,
                                      "testdev: export of a tensor whose first element is "
                                      "negative fails on purpose (export=dma_buf_fail)");
    }
    out->kind = PLX_MEMORY_KIND_DMA_BUF;
    out->handle = NULL;
    out->fd = h->memfd;
    out->offset = 0;
    out->size = h->bytes;
    out->release = NULL;
    out->release_data = NULL;
    return NULL;
}

static plx_status create_workload(plx_factory *f, const plx_layer_view *l,
                                  plx_tensor_handle *const *in, plx_tensor_handle *const *out,
                                  plx_workload **result) {
    int kind = kind_of(l);
    if (kind < 0) {
        return f->host->status_create(f->host, PLX_UNSUPPORTED, "testdev: unsupported layer");
    }
    plx_workload *w = f->host->alloc(f->host, sizeof *w, 0);
    if (!w) {
        return f->host->status_create(f->host, PLX_OUT_OF_MEMORY, "testdev: out of memory");
    }
    memset(w, 0, sizeof *w);
    w->host = f->host;
    w->kind = (enum kind)kind;
    size_t bytes = 0;
    plx_tensor_info_byte_size(&l->outputs[0], &bytes);
    w->elements = bytes / plx_dtype_size(l->outputs[0].dtype);
    w->constant = kind == CONSTANT ? ((const plx_constant_desc *)l->desc)->data : NULL;
    for (uint32_t i = 0; i < l->input_count && i < 2; i++) {
        w->in[i] = in[i];
    }
    w->out = out[0];
    strncpy(w->name, l->name, sizeof w->name - 1);
    *result = w;
    return NULL;
}

static void destroy_workload(plx_workload *w) {
    w->host->free(w->host, w);
}

static plx_status execute(plx_workload *w) {
    float *y = w->out->data;
    switch (w->kind) {
    case CONSTANT:
        memcpy(y, w->constant, w->elements * sizeof(float));
        break;
    case RELU:
        for (size_t i = 0; i < w->elements; i++) {
            float x = ((const float *)w->in[0]->data)[i];
            y[i] = x > 0 ? x : 0;
        }
        break;
    case ADD:
        for (size_t i = 0; i < w->elements; i++) {
            y[i] = ((const float *)w->in[0]->data)[i] + ((const float *)w->in[1]->data)[i];
        }
        break;
    case ADD_RELU:
        for (size_t i = 0; i < w->elements; i++) {
            float v = ((const float *)w->in[0]->data)[i] + ((const float *)w->in[1]->data)[i];
            y[i] = v > 0 ? v : 0;
        }
        break;
    case PROBE: {
        int64_t address = (int64_t)(uintptr_t)w->in[0]->data;
        memcpy(w->out->data, &address, sizeof address);
        break;
    }
    case FAIL:
        if (((const float *)w->in[0]->data)[0] < 0) {
            return w->host->status_create(w->host, PLX_INTERNAL,
                                          "testdev: workload '%s' fails on purpose", w->name);
        }
        for (size_t i = 0; i < w->elements; i++) {
            float x = ((const float *)w->in[0]->data)[i];
            y[i] = x > 0 ? x : 0;
        }
        break;
    }
    return NULL;
}

static bool is_op(const plx_subgraph_layer *l, plx_op op) {
    if (l->view.op != op) {
        return false;
    }
    if (op == PLX_OP_ACTIVATION) {
        return ((const plx_activation_desc *)l->view.desc)->func == PLX_ACT_RELU;
    }
    return ((const plx_binary_desc *)l->view.desc)->func == PLX_BINARY_ADD;
}

static plx_status optimize_subgraph(plx_backend *b, const plx_subgraph_view *g,
                                    const plx_subgraph_editor *editor) {
    if (b->subgraph == SG_FAIL) {
        return b->host->status_create(b->host, PLX_INTERNAL,
                                      "testdev fails optimize_subgraph (subgraph=fail)");
    }
    if (b->subgraph == SG_GIVE_BACK) {
        for (uint32_t i = 0; i < g->layer_count; i++) {
            if (is_op(&g->layers[i], PLX_OP_ACTIVATION)) {
                plx_status s = editor->give_back(editor, i, "testdev gives relus back");
                if (s) {
                    return s;
                }
            }
        }
        return NULL;
    }
    if (b->subgraph == SG_WHOLE) {
        uint32_t all[16], n = 0, add = UINT32_MAX, relu = UINT32_MAX;
        for (uint32_t i = 0; i < g->layer_count && n < 16; i++) {
            all[n++] = i;
            add = is_op(&g->layers[i], PLX_OP_BINARY) ? i : add;
            relu = is_op(&g->layers[i], PLX_OP_ACTIVATION) ? i : relu;
        }
        if (add == UINT32_MAX || relu == UINT32_MAX) {
            return NULL;
        }
        /* Inputs: every tensor the layers read from outside the subgraph. */
        plx_subgraph_source in[32];
        uint32_t in_count = 0;
        for (uint32_t i = 0; i < n; i++) {
            for (uint32_t k = 0; k < g->layers[i].view.input_count && in_count < 32; k++) {
                plx_subgraph_source src = g->layers[i].inputs[k];
                bool seen = src.layer != PLX_SUBGRAPH_EXTERNAL;
                for (uint32_t j = 0; !seen && j < in_count; j++) {
                    seen = in[j].slot == src.slot;
                }
                if (!seen) {
                    in[in_count++] = src;
                }
            }
        }
        /* Outputs: every output read outside the subgraph, relu's first. */
        plx_subgraph_source out[16] = {{relu, 0}};
        uint32_t out_count = 1;
        for (uint32_t i = 0; i < n && out_count < 16; i++) {
            if (i != relu && g->layers[i].escapes[0]) {
                out[out_count++] = (plx_subgraph_source){i, 0};
            }
        }
        plx_substitution sub = {sizeof sub, all, n, in, in_count, out, out_count,
                                "add+relu", add_relu_data, sizeof add_relu_data};
        return editor->substitute(editor, &sub);
    }
    if (b->subgraph == SG_NONE) {
        return NULL;
    }
    for (uint32_t a = 0; a < g->layer_count; a++) {
        uint32_t r = plx_subgraph_sole_reader(g, a, NULL);
        if (!is_op(&g->layers[a], PLX_OP_BINARY) || r == UINT32_MAX ||
            !is_op(&g->layers[r], PLX_OP_ACTIVATION)) {
            continue;
        }
        uint32_t set[2] = {a, r};
        plx_subgraph_source out = {b->subgraph == SG_BAD_OUTPUT ? a : r, 0};
        plx_subgraph_source bad_in[2] = {g->layers[a].inputs[0], {a, 0}};
        plx_substitution sub = {sizeof sub,
                                set,
                                2,
                                b->subgraph == SG_BAD_INPUT ? bad_in : g->layers[a].inputs,
                                2,
                                &out,
                                1,
                                "add+relu",
                                add_relu_data,
                                sizeof add_relu_data};
        plx_status s = editor->substitute(editor, &sub);
        if (s) {
            return s;
        }
    }
    return NULL;
}

static const plx_backend_functions functions = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_functions, export_external_memory),
    .create = create,
    .destroy = destroy,
    .get_capabilities = get_capabilities,
    .check_layer = check_layer,
    .create_factory = create_factory,
    .destroy_factory = destroy_factory,
    .create_tensor_handle = create_handle,
    .destroy_tensor_handle = destroy_handle,
    .allocate_tensor_handle = allocate,
    .release_tensor_handle = release,
    .map_tensor_handle = map,
    .unmap_tensor_handle = unmap,
    .import_tensor_handle = import,
    .unimport_tensor_handle = unimport,
    .create_workload = create_workload,
    .destroy_workload = destroy_workload,
    .execute_workload = execute,
    .get_memory_strategy = get_memory_strategy,
    .optimize_subgraph = optimize_subgraph,
    .allocate_planned_buffer = allocate_planned_buffer,
    .free_planned_buffer = free_planned_buffer,
    .import_external_memory = import_external_memory,
    .export_external_memory = export_external_memory,
};

static const plx_backend_descriptor descriptor = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count),
    .abi_version = PLX_ABI_VERSION,
    .id = "testdev",
    .name = "Test device",
    .version = "1.0.0",
    .functions = &functions,
    .options = options,
    .option_count = sizeof options / sizeof options[0],
};

const plx_backend_descriptor *plx_backend_entry(uint32_t host_abi_version, const plx_host *host) {
    (void)host;
    return PLX_ABI_VERSION_GET_MAJOR(host_abi_version) == PLX_ABI_VERSION_MAJOR ? &descriptor
                                                                                  : NULL;
}
