/* The SDK's host tensors (plexus/host_tensor.h) on their own, behind a host
 * table of the test's (counted allocations, statuses with their message):
 * owned memory, imports of each memory source (R-17 (6), R-22), sub-tensors,
 * the destroy helper, and the ready-made handle functions that
 * PLX_HOST_TENSOR_FUNCTIONS puts in a function table. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <plexus/host_tensor.h>

#include "test_host_table.h"

#define OK(expr)                                                                     \
    do {                                                                             \
        plx_status s_ = (expr);                                                      \
        cr_assert(zero(ptr, s_), "%s: %s", #expr, s_ ? s_->message : "");           \
    } while (0)

/* `expr` fails with `code` and a message containing `text`. */
#define FAILS(expr, code_, text)                                                     \
    do {                                                                             \
        plx_status s_ = (expr);                                                      \
        cr_assert(not(zero(ptr, s_)), "%s succeeded", #expr);                        \
        cr_assert(eq(int, s_->code, code_), "%s: %s", #expr, s_->message);           \
        cr_assert(not(zero(ptr, strstr(s_->message, text))), "%s: '%s' lacks '%s'",  \
                  #expr, s_->message, text);                                         \
        free(s_);                                                                    \
    } while (0)

static plx_tensor_info f32(int64_t d0, int64_t d1) {
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = PLX_DTYPE_FLOAT32;
    t.rank = 2;
    t.dims[0] = d0;
    t.dims[1] = d1;
    return t;
}

/* A memfd holding `bytes` (copied from `data` when not NULL), standing in
 * for a dma-buf as in tests/test_async.c. */
static int memfd_with(const void *data, size_t bytes) {
    int fd = memfd_create("plexus-host-tensor", 0);
    cr_assert(ge(int, fd, 0));
    cr_assert(eq(int, ftruncate(fd, (off_t)bytes), 0));
    if (data) {
        cr_assert(eq(sz, (size_t)pwrite(fd, data, bytes, 0), bytes));
    }
    return fd;
}

static void check_no_leak(void) {
    cr_assert(eq(int, th_live_allocations, 0), "%d allocations left", th_live_allocations);
}

TestSuite(host_tensor, .init = NULL, .fini = check_no_leak);

/* ---- the plx_host_tensor functions ----------------------------------------- */

/* R-17 (2), (4): owned memory, aligned as asked; map gives it; release
 * frees it and leaves no memory; a bad info is refused naming it. */
Test(host_tensor, owned_memory) {
    plx_host_tensor t;
    plx_tensor_info info = f32(2, 3);
    OK(plx_host_tensor_init(&t, &th_host, &info, 64));
    cr_assert(eq(sz, t.bytes, 24));
    void *data = NULL;
    FAILS(plx_host_tensor_map(&t, &data), PLX_FAILED_PRECONDITION, "the tensor has no memory");
    OK(plx_host_tensor_allocate(&t));
    OK(plx_host_tensor_allocate(&t)); /* again: nothing to do */
    cr_assert(eq(int, th_live_allocations, 1));
    OK(plx_host_tensor_map(&t, &data));
    cr_assert(eq(ptr, data, t.owned));
    cr_assert(eq(u64, (uintptr_t)data % 64, 0));
    plx_host_tensor_release(&t);
    cr_assert(zero(ptr, plx_host_tensor_data(&t)));
    cr_assert(eq(int, th_live_allocations, 0));

    plx_tensor_info bad = f32(2, 3);
    bad.dtype = (plx_dtype)999;
    FAILS(plx_host_tensor_init(&t, &th_host, &bad, 64), PLX_INVALID_ARGUMENT,
          "invalid tensor info (dtype 999, rank 2)");
}

/* R-17 (6), (7): malloc memory is used in place until unimport, which goes
 * back to the owned memory; too small or misaligned memory is refused, and
 * the messages do not name a backend (the host prefixes it, R-12 (7)). */
Test(host_tensor, malloc_import) {
    plx_host_tensor t;
    plx_tensor_info info = f32(2, 3);
    OK(plx_host_tensor_init(&t, &th_host, &info, 64));
    float buf[7];
    void *data = NULL;
    OK(plx_host_tensor_import(&t, buf, sizeof buf, PLX_MEMORY_SOURCE_MALLOC));
    OK(plx_host_tensor_map(&t, &data));
    cr_assert(eq(ptr, data, buf));
    plx_host_tensor_unimport(&t);
    cr_assert(zero(ptr, plx_host_tensor_data(&t)));

    OK(plx_host_tensor_allocate(&t));
    OK(plx_host_tensor_import(&t, buf, sizeof buf, PLX_MEMORY_SOURCE_MALLOC));
    cr_assert(eq(ptr, plx_host_tensor_data(&t), buf));
    plx_host_tensor_unimport(&t);
    cr_assert(eq(ptr, plx_host_tensor_data(&t), t.owned));

    FAILS(plx_host_tensor_import(&t, buf, 20, PLX_MEMORY_SOURCE_MALLOC), PLX_INVALID_ARGUMENT,
          "imported memory of 20 bytes is smaller than the tensor's 24");
    FAILS(plx_host_tensor_import(&t, NULL, 24, PLX_MEMORY_SOURCE_MALLOC), PLX_INVALID_ARGUMENT,
          "imported memory of 0 bytes");
    FAILS(plx_host_tensor_import(&t, (char *)buf + 2, 24, PLX_MEMORY_SOURCE_MALLOC),
          PLX_INVALID_ARGUMENT, "is not aligned to the element size (4 bytes)");
    plx_host_tensor_destroy(&t);
}

/* a dma-buf (a memfd here) is mapped shared: the tensor shows its
 * bytes, what is written through it is in the buffer, and unimport unmaps
 * it without closing the descriptor, which stays the caller's. */
Test(host_tensor, dma_buf_import) {
    plx_host_tensor t;
    plx_tensor_info info = f32(2, 3);
    OK(plx_host_tensor_init(&t, &th_host, &info, 64));
    const float in[6] = {1, 2, 3, 4, 5, 6};
    int fd = memfd_with(in, sizeof in);
    OK(plx_host_tensor_import(&t, &fd, sizeof in, PLX_MEMORY_SOURCE_DMA_BUF));
    float *data = NULL;
    OK(plx_host_tensor_map(&t, (void **)&data));
    cr_assert(not(zero(ptr, t.mapping)));
    cr_assert(eq(int, memcmp(data, in, sizeof in), 0));
    data[5] = 42.0f;
    plx_host_tensor_unimport(&t);
    cr_assert(zero(ptr, t.mapping));
    cr_assert(zero(ptr, plx_host_tensor_data(&t)));
    float back[6];
    cr_assert(eq(sz, (size_t)pread(fd, back, sizeof back, 0), sizeof back));
    cr_assert(eq(flt, back[5], 42.0f));

    /* A second import ends the first (its mapping) before taking the new. */
    OK(plx_host_tensor_import(&t, &fd, sizeof in, PLX_MEMORY_SOURCE_DMA_BUF));
    float buf[6];
    OK(plx_host_tensor_import(&t, buf, sizeof buf, PLX_MEMORY_SOURCE_MALLOC));
    cr_assert(zero(ptr, t.mapping));
    cr_assert(eq(ptr, plx_host_tensor_data(&t), buf));
    /* destroy ends a dma-buf import too. */
    OK(plx_host_tensor_import(&t, &fd, sizeof in, PLX_MEMORY_SOURCE_DMA_BUF));
    plx_host_tensor_destroy(&t);
    cr_assert(zero(ptr, t.mapping));

    /* Refusals name the descriptor and the fault, never a copy. */
    FAILS(plx_host_tensor_import(&t, &fd, 20, PLX_MEMORY_SOURCE_DMA_BUF), PLX_INVALID_ARGUMENT,
          "dma-buf of 20 bytes is smaller than the tensor's 24");
    int small = memfd_with(NULL, 16);
    char expect[64];
    snprintf(expect, sizeof expect, "dma-buf fd %d holds 16 bytes, the tensor's are 24", small);
    FAILS(plx_host_tensor_import(&t, &small, 24, PLX_MEMORY_SOURCE_DMA_BUF),
          PLX_INVALID_ARGUMENT, expect);
    int bad = -1;
    FAILS(plx_host_tensor_import(&t, &bad, 24, PLX_MEMORY_SOURCE_DMA_BUF), PLX_INVALID_ARGUMENT,
          "dma-buf fd -1: ");
    /* A descriptor that cannot be mapped shared for writing (a pipe). */
    int pipefd[2];
    cr_assert(eq(int, pipe(pipefd), 0));
    snprintf(expect, sizeof expect, "cannot map dma-buf fd %d (24 bytes)", pipefd[0]);
    FAILS(plx_host_tensor_import(&t, &pipefd[0], 24, PLX_MEMORY_SOURCE_DMA_BUF),
          PLX_INVALID_ARGUMENT, expect);
    cr_assert(zero(ptr, plx_host_tensor_data(&t)));
    close(pipefd[0]);
    close(pipefd[1]);
    close(small);
    /* fd stays open: the import never closed it */
    cr_assert(eq(sz, (size_t)pread(fd, back, sizeof back, 0), sizeof back));
    close(fd);

    /* A tensor of no bytes needs no mapping, but has an address. */
    plx_tensor_info empty = f32(0, 3);
    OK(plx_host_tensor_init(&t, &th_host, &empty, 64));
    int none = memfd_with(NULL, 0);
    OK(plx_host_tensor_import(&t, &none, 0, PLX_MEMORY_SOURCE_DMA_BUF));
    cr_assert(not(zero(ptr, plx_host_tensor_data(&t))));
    cr_assert(zero(ptr, t.mapping));
    plx_host_tensor_destroy(&t);
    cr_assert(zero(ptr, plx_host_tensor_data(&t)));
    close(none);
}

/* R-17 (6): a source the helpers do not import is refused, naming it. */
Test(host_tensor, other_sources_are_refused) {
    plx_host_tensor t;
    plx_tensor_info info = f32(2, 3);
    OK(plx_host_tensor_init(&t, &th_host, &info, 64));
    float buf[6];
    FAILS(plx_host_tensor_import(&t, buf, sizeof buf, PLX_MEMORY_SOURCE_DMA_BUF_PROTECTED),
          PLX_INVALID_ARGUMENT, "memory source 4 (dma_buf_protected) is not imported");
    FAILS(plx_host_tensor_import(&t, buf, sizeof buf, (plx_memory_source)8),
          PLX_INVALID_ARGUMENT, "memory source 8 (unknown) is not imported");
    cr_assert(zero(ptr, plx_host_tensor_data(&t)));
}

/* R-17 (9): a sub-tensor is a range of its parent's bytes, wherever they
 * are; ranges outside the parent or at a misaligned offset are refused. */
Test(host_tensor, sub_tensors) {
    plx_host_tensor parent, sub;
    plx_tensor_info whole = f32(2, 3), row = f32(1, 3);
    OK(plx_host_tensor_init(&parent, &th_host, &whole, 64));
    OK(plx_host_tensor_init_sub(&sub, &parent, &row, 12));
    cr_assert(zero(ptr, plx_host_tensor_data(&sub)));
    OK(plx_host_tensor_allocate(&parent));
    cr_assert(eq(ptr, plx_host_tensor_data(&sub), (char *)parent.owned + 12));
    float buf[6];
    OK(plx_host_tensor_import(&parent, buf, sizeof buf, PLX_MEMORY_SOURCE_MALLOC));
    void *data = NULL;
    OK(plx_host_tensor_map(&sub, &data));
    cr_assert(eq(ptr, data, &buf[3]));
    FAILS(plx_host_tensor_init_sub(&sub, &parent, &row, 16), PLX_INVALID_ARGUMENT,
          "a sub-tensor of 12 bytes at offset 16 does not fit its parent of 24 bytes");
    FAILS(plx_host_tensor_init_sub(&sub, &parent, &row, 2), PLX_INVALID_ARGUMENT,
          "sub-tensor offset 2 is not a multiple of the element size");
    plx_host_tensor_destroy(&parent);
}

/* ---- the ready-made handle functions ---------------------------------------- */

/* A factory as a backend using PLX_HOST_TENSOR_FUNCTIONS defines it. */
struct plx_factory {
    plx_host_tensor_factory tensors;
    int backend_state;
};

static const plx_backend_functions table = {
    .struct_size = (uint32_t)sizeof(plx_backend_functions),
    PLX_HOST_TENSOR_FUNCTIONS,
};

static const plx_capability capabilities[] = {PLX_HOST_TENSOR_CAPABILITIES};

/* The fragment fills exactly the nine tensor-handle entries. */
Test(host_tensor, table_fragment_fills_the_handle_entries) {
    cr_assert(table.create_tensor_handle == plx_host_tensor_create_handle);
    cr_assert(table.destroy_tensor_handle == plx_host_tensor_destroy_handle);
    cr_assert(table.allocate_tensor_handle == plx_host_tensor_allocate_handle);
    cr_assert(table.release_tensor_handle == plx_host_tensor_release_handle);
    cr_assert(table.map_tensor_handle == plx_host_tensor_map_handle);
    cr_assert(table.unmap_tensor_handle == plx_host_tensor_unmap_handle);
    cr_assert(table.import_tensor_handle == plx_host_tensor_import_handle);
    cr_assert(table.unimport_tensor_handle == plx_host_tensor_unimport_handle);
    cr_assert(table.create_sub_tensor_handle == plx_host_tensor_create_sub_handle);
    cr_assert(table.create == NULL && table.check_layer == NULL);
    cr_assert(table.create_workload == NULL && table.export_external_memory == NULL);

    cr_assert(eq(sz, sizeof capabilities / sizeof capabilities[0], 3));
    const char *keys[] = {PLX_CAP_IMPORT_MALLOC, PLX_CAP_IMPORT_DMA_BUF, PLX_CAP_EXPORT_MALLOC};
    for (size_t i = 0; i < 3; i++) {
        cr_assert(eq(str, (char *)capabilities[i].key, (char *)keys[i]));
        cr_assert(eq(int, capabilities[i].type, PLX_VALUE_BOOL));
        cr_assert(capabilities[i].bool_value);
    }
}

/* The handle calls through the table, as the host makes them: a managed
 * handle with a sub-tensor, an unmanaged one importing malloc memory and a
 * dma-buf, and destroy freeing all of it. */
Test(host_tensor, handles_through_the_table) {
    struct plx_factory factory;
    plx_host_tensor_factory_init(&factory.tensors, &th_host, 128);
    factory.backend_state = 7;
    plx_factory *f = &factory;
    plx_tensor_info info = f32(2, 3), row = f32(1, 3);
    plx_tensor_handle_params managed = {sizeof managed, true, 0, PLX_MEMORY_SOURCE_MALLOC};
    plx_tensor_handle_params unmanaged = {sizeof unmanaged, false, PLX_MEMORY_SOURCE_MALLOC, 0};

    plx_tensor_handle *h = NULL, *part = NULL, *in = NULL;
    OK(table.create_tensor_handle(f, &info, &managed, &h));
    OK(table.create_sub_tensor_handle(f, h, &row, 12, &part));
    OK(table.create_tensor_handle(f, &info, &unmanaged, &in));
    cr_assert(eq(int, th_live_allocations, 3));
    void *data = NULL;
    FAILS(table.map_tensor_handle(h, &data), PLX_FAILED_PRECONDITION, "no memory");
    OK(table.allocate_tensor_handle(h));
    OK(table.map_tensor_handle(h, &data));
    cr_assert(eq(u64, (uintptr_t)data % 128, 0));
    cr_assert(eq(ptr, data, plx_host_tensor_data(plx_host_tensor_of(h))));
    float *whole = data;
    for (int i = 0; i < 6; i++) {
        whole[i] = (float)i;
    }
    table.unmap_tensor_handle(h);
    /* memory_export_malloc: the pointer stays valid after the unmap */
    cr_assert(eq(ptr, plx_host_tensor_data(plx_host_tensor_of(h)), whole));
    float *second = NULL;
    OK(table.map_tensor_handle(part, (void **)&second));
    cr_assert(eq(flt, second[0], 3.0f));
    table.unmap_tensor_handle(part);

    float buf[6] = {0};
    OK(table.import_tensor_handle(in, buf, sizeof buf, PLX_MEMORY_SOURCE_MALLOC));
    OK(table.map_tensor_handle(in, &data));
    cr_assert(eq(ptr, data, buf));
    table.unimport_tensor_handle(in);
    int fd = memfd_with(whole, sizeof buf);
    OK(table.import_tensor_handle(in, &fd, sizeof buf, PLX_MEMORY_SOURCE_DMA_BUF));
    OK(table.map_tensor_handle(in, &data));
    cr_assert(eq(flt, ((float *)data)[5], 5.0f));
    FAILS(table.import_tensor_handle(in, buf, sizeof buf, PLX_MEMORY_SOURCE_DMA_BUF_PROTECTED),
          PLX_INVALID_ARGUMENT, "dma_buf_protected");

    /* Refusals at creation free what they took. */
    plx_tensor_handle *none = NULL;
    FAILS(table.create_sub_tensor_handle(f, h, &info, 12, &none), PLX_INVALID_ARGUMENT,
          "does not fit its parent");
    cr_assert(zero(ptr, none));
    plx_tensor_info bad = info;
    bad.rank = 99;
    FAILS(table.create_tensor_handle(f, &bad, &managed, &none), PLX_INVALID_ARGUMENT,
          "invalid tensor info");
    cr_assert(zero(ptr, none));

    /* destroy (sub-tensors first, as the host does) frees the handles, the
     * owned memory and the mapping; the release of a released handle is a
     * no-op. */
    table.destroy_tensor_handle(in); /* still importing the dma-buf */
    table.release_tensor_handle(h);
    table.release_tensor_handle(h);
    table.destroy_tensor_handle(part);
    table.destroy_tensor_handle(h);
    cr_assert(eq(int, th_live_allocations, 0));
    cr_assert(eq(int, factory.backend_state, 7));
    close(fd);
}
