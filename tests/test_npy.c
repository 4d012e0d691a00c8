/* The .npy reader and writer (tools/npy.c): round trips of every dtype and
 * ranks 0..8, files written by NumPy 2.4 (tests/data/npy, see README
 * there), byte-exact agreement with np.save, malformed files (each an
 * error naming the file and the problem), writer refusals, and truncated
 * or corrupted headers parsed from exact-size buffers so that sanitizer
 * builds catch any out-of-bounds read. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "npy.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                    */
/* ------------------------------------------------------------------------ */

static char tmp_dir[256];

static void make_tmp_dir(void) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/plexus_test_npy_XXXXXX");
    cr_assert(not(zero(ptr, mkdtemp(tmp_dir))));
}

static void remove_tmp_dir(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    cr_expect(eq(int, system(cmd), 0));
}

TestSuite(npy, .init = make_tmp_dir, .fini = remove_tmp_dir);

static const char *tmp_file(const char *name) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    return path;
}

static const char *fixture(const char *name) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", NPY_DATA_DIR, name);
    return path;
}

static unsigned char *read_bytes(const char *path, size_t *out_size) {
    FILE *f = fopen(path, "rb");
    cr_assert(not(zero(ptr, f)), "cannot open %s", path);
    unsigned char *buf = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (size == cap) {
            cap = cap ? cap * 2 : 4096;
            buf = realloc(buf, cap);
            cr_assert(not(zero(ptr, buf)));
        }
        size_t got = fread(buf + size, 1, cap - size, f);
        size += got;
        if (got == 0) {
            break;
        }
    }
    fclose(f);
    *out_size = size;
    return buf;
}

static void write_bytes(const char *path, const void *buf, size_t size) {
    FILE *f = fopen(path, "wb");
    cr_assert(not(zero(ptr, f)));
    cr_assert(eq(sz, fwrite(buf, 1, size, f), size));
    cr_assert(eq(int, fclose(f), 0));
}

/* A .npy file: magic, version, header length, `dict` padded with spaces to
 * a multiple of 64 and a '\n', then `data`. */
static unsigned char *make_npy(unsigned major, const char *dict, const void *data, size_t data_len,
                               size_t *out_size) {
    size_t prefix = major == 1 ? 10 : 12;
    size_t dict_len = strlen(dict);
    size_t hlen = dict_len + 1;
    size_t pad = (64 - (prefix + hlen) % 64) % 64;
    size_t total = prefix + hlen + pad + data_len;
    unsigned char *buf = malloc(total);
    cr_assert(not(zero(ptr, buf)));
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    size_t field = hlen + pad;
    buf[8] = (unsigned char)(field & 0xff);
    buf[9] = (unsigned char)(field >> 8 & 0xff);
    if (prefix == 12) {
        buf[10] = (unsigned char)(field >> 16 & 0xff);
        buf[11] = (unsigned char)(field >> 24 & 0xff);
    }
    memcpy(buf + prefix, dict, dict_len);
    memset(buf + prefix + dict_len, ' ', pad);
    buf[prefix + dict_len + pad] = '\n';
    if (data_len > 0) {
        memcpy(buf + prefix + hlen + pad, data, data_len);
    }
    *out_size = total;
    return buf;
}

static bool array_is_zeroed(const npy_array *a) {
    npy_array zero_array;
    memset(&zero_array, 0, sizeof zero_array);
    return memcmp(a, &zero_array, sizeof *a) == 0;
}

/* `buf` must fail, from a file (npy_read) and from memory (npy_parse, on
 * an exact-size copy), with a message that names the file and contains
 * `fragment`. */
static void expect_error(const void *buf, size_t size, const char *fragment) {
    char err[512];
    npy_array a;
    const char *path = tmp_file("bad.npy");
    write_bytes(path, buf, size);
    memset(&a, 0x5a, sizeof a);
    err[0] = '\0';
    cr_assert(not(npy_read(path, &a, err, sizeof err)), "read succeeded; wanted '%s'", fragment);
    cr_assert(not(zero(ptr, strstr(err, fragment))), "message '%s' lacks '%s'", err, fragment);
    cr_assert(eq(int, strncmp(err, path, strlen(path)), 0), "message '%s' lacks the path", err);
    cr_assert(array_is_zeroed(&a));

    unsigned char *copy = malloc(size > 0 ? size : 1);
    cr_assert(not(zero(ptr, copy)));
    if (size > 0) {
        memcpy(copy, buf, size);
    }
    memset(&a, 0x5a, sizeof a);
    cr_assert(not(npy_parse(copy, size, "mem.npy", &a, err, sizeof err)));
    cr_assert(not(zero(ptr, strstr(err, fragment))), "message '%s' lacks '%s'", err, fragment);
    cr_assert(eq(int, strncmp(err, "mem.npy: ", 9), 0), "message '%s'", err);
    cr_assert(array_is_zeroed(&a));
    free(copy);
}

static void expect_dict_error(const char *dict, const void *data, size_t data_len,
                              const char *fragment) {
    size_t size;
    unsigned char *buf = make_npy(1, dict, data, data_len, &size);
    expect_error(buf, size, fragment);
    free(buf);
}

static npy_array read_ok(const char *path) {
    char err[512] = "";
    npy_array a;
    cr_assert(npy_read(path, &a, err, sizeof err), "%s", err);
    cr_assert(not(zero(ptr, a.data)));
    return a;
}

static void expect_shape(const npy_array *a, plx_dtype dtype, uint32_t rank, const int64_t *dims) {
    cr_assert(eq(int, (int)a->dtype, (int)dtype));
    cr_assert(eq(u32, a->rank, rank));
    for (uint32_t i = 0; i < PLX_MAX_RANK; i++) {
        cr_assert(eq(i64, a->dims[i], i < rank ? dims[i] : 0), "dim %u", i);
    }
}

static uint64_t rng_next(uint64_t *state) { /* splitmix64 */
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static const plx_dtype all_dtypes[] = {
    PLX_DTYPE_FLOAT32, PLX_DTYPE_FLOAT16, PLX_DTYPE_FLOAT64, PLX_DTYPE_INT8,
    PLX_DTYPE_UINT8,   PLX_DTYPE_INT16,   PLX_DTYPE_UINT16,  PLX_DTYPE_INT32,
    PLX_DTYPE_UINT32,  PLX_DTYPE_INT64,   PLX_DTYPE_UINT64,  PLX_DTYPE_BOOL,
};
#define DTYPE_COUNT (sizeof all_dtypes / sizeof all_dtypes[0])

/* ------------------------------------------------------------------------ */
/* Round trips                                                                */
/* ------------------------------------------------------------------------ */

Test(npy, round_trip_every_dtype_and_rank) {
    uint64_t rng = 42;
    for (size_t t = 0; t < DTYPE_COUNT; t++) {
        for (uint32_t rank = 0; rank <= PLX_MAX_RANK; rank++) {
            npy_array a;
            memset(&a, 0, sizeof a);
            a.dtype = all_dtypes[t];
            a.rank = rank;
            size_t count = 1;
            for (uint32_t i = 0; i < rank; i++) {
                a.dims[i] = (int64_t)(i % 3 + 1) + (rank == 1 ? 10 : 0);
                count *= (size_t)a.dims[i];
            }
            a.bytes = count * plx_dtype_size(a.dtype);
            unsigned char *data = malloc(a.bytes);
            cr_assert(not(zero(ptr, data)));
            for (size_t i = 0; i < a.bytes; i++) {
                uint64_t r = rng_next(&rng);
                data[i] = a.dtype == PLX_DTYPE_BOOL ? (unsigned char)(r & 1) : (unsigned char)r;
            }
            a.data = data;

            char name[64], err[512] = "";
            snprintf(name, sizeof name, "%s_rank%u.npy", plx_dtype_name(a.dtype), rank);
            const char *path = tmp_file(name);
            cr_assert(npy_write(path, &a, err, sizeof err), "%s", err);

            size_t file_size;
            unsigned char *file = read_bytes(path, &file_size);
            cr_assert(ge(sz, file_size, a.bytes + 64));
            cr_assert(eq(sz, (file_size - a.bytes) % 64, 0), "data not 64-byte aligned");
            cr_assert(eq(int, file[6], 1)); /* version 1.0 */
            cr_assert(eq(int, file[file_size - a.bytes - 1], '\n'));
            free(file);

            npy_array b = read_ok(path);
            expect_shape(&b, a.dtype, rank, a.dims);
            cr_assert(eq(sz, b.bytes, a.bytes));
            cr_assert(eq(int, memcmp(b.data, data, a.bytes), 0), "%s", name);
            npy_free(&b);
            cr_assert(array_is_zeroed(&b));
            free(data);
        }
    }
}

Test(npy, round_trip_empty_arrays) {
    static const int64_t shapes[][3] = {{0, 0, 0}, {0, 3, 0}, {3, 0, 2}};
    static const uint32_t ranks[] = {1, 2, 3};
    for (size_t s = 0; s < 3; s++) {
        npy_array a;
        memset(&a, 0, sizeof a);
        a.dtype = PLX_DTYPE_FLOAT32;
        a.rank = ranks[s];
        memcpy(a.dims, shapes[s], (size_t)a.rank * sizeof(int64_t));
        char err[512] = "";
        const char *path = tmp_file("empty.npy");
        cr_assert(npy_write(path, &a, err, sizeof err), "%s", err); /* NULL data is fine */
        npy_array b = read_ok(path);
        expect_shape(&b, PLX_DTYPE_FLOAT32, a.rank, a.dims);
        cr_assert(eq(sz, b.bytes, 0));
        npy_free(&b);
    }
}

Test(npy, round_trip_extreme_values) {
    int64_t v[] = {INT64_MIN, -1, 0, 1, INT64_MAX};
    npy_array a = {.dtype = PLX_DTYPE_INT64, .rank = 1, .dims = {5}, .data = v, .bytes = sizeof v};
    char err[512] = "";
    cr_assert(npy_write(tmp_file("x.npy"), &a, err, sizeof err), "%s", err);
    npy_array b = read_ok(tmp_file("x.npy"));
    cr_assert(eq(int, memcmp(b.data, v, sizeof v), 0));
    npy_free(&b);
}

/* ------------------------------------------------------------------------ */
/* Files written by NumPy                                                     */
/* ------------------------------------------------------------------------ */

Test(npy, numpy_v1_float32_2x3) {
    npy_array a = read_ok(fixture("v1_f32_2x3.npy"));
    expect_shape(&a, PLX_DTYPE_FLOAT32, 2, (const int64_t[]){2, 3});
    cr_assert(eq(sz, a.bytes, 24));
    const float *f = a.data;
    for (int i = 0; i < 6; i++) {
        cr_assert(eq(flt, f[i], (float)i * 0.5f));
    }
    npy_free(&a);
}

Test(npy, numpy_v2_int16) {
    npy_array a = read_ok(fixture("v2_i16_3.npy"));
    expect_shape(&a, PLX_DTYPE_INT16, 1, (const int64_t[]){3});
    const int16_t *v = a.data;
    cr_assert(eq(i16, v[0], 1));
    cr_assert(eq(i16, v[1], -2));
    cr_assert(eq(i16, v[2], 300));
    npy_free(&a);
}

Test(npy, numpy_v3_uint8) {
    npy_array a = read_ok(fixture("v3_u8_4.npy"));
    expect_shape(&a, PLX_DTYPE_UINT8, 1, (const int64_t[]){4});
    static const uint8_t want[] = {0, 1, 128, 255};
    cr_assert(eq(int, memcmp(a.data, want, 4), 0));
    npy_free(&a);
}

Test(npy, numpy_scalar_int64) {
    npy_array a = read_ok(fixture("scalar_i64.npy"));
    expect_shape(&a, PLX_DTYPE_INT64, 0, NULL);
    cr_assert(eq(sz, a.bytes, 8));
    cr_assert(eq(i64, *(const int64_t *)a.data, -5));
    npy_free(&a);
}

Test(npy, numpy_bool) {
    npy_array a = read_ok(fixture("bool_5.npy"));
    expect_shape(&a, PLX_DTYPE_BOOL, 1, (const int64_t[]){5});
    static const uint8_t want[] = {1, 0, 1, 1, 0};
    cr_assert(eq(int, memcmp(a.data, want, 5), 0));
    npy_free(&a);
}

Test(npy, numpy_float16) {
    npy_array a = read_ok(fixture("f16_4.npy"));
    expect_shape(&a, PLX_DTYPE_FLOAT16, 1, (const int64_t[]){4});
    static const uint16_t want[] = {0x0000, 0x3c00, 0xc000, 0x3800}; /* 0, 1, -2, 0.5 */
    cr_assert(eq(int, memcmp(a.data, want, sizeof want), 0));
    npy_free(&a);
}

Test(npy, numpy_int8_rank3_and_int32_rank8) {
    npy_array a = read_ok(fixture("i8_2x2x2.npy"));
    expect_shape(&a, PLX_DTYPE_INT8, 3, (const int64_t[]){2, 2, 2});
    for (int i = 0; i < 8; i++) {
        cr_assert(eq(i8, ((const int8_t *)a.data)[i], (int8_t)(i - 4)));
    }
    npy_free(&a);
    a = read_ok(fixture("i32_1x1x1x1x1x1x1x2.npy"));
    expect_shape(&a, PLX_DTYPE_INT32, 8, (const int64_t[]){1, 1, 1, 1, 1, 1, 1, 2});
    cr_assert(eq(i32, ((const int32_t *)a.data)[0], 7));
    cr_assert(eq(i32, ((const int32_t *)a.data)[1], -7));
    npy_free(&a);
}

Test(npy, numpy_empty_array) {
    npy_array a = read_ok(fixture("empty_f32_0x3.npy"));
    expect_shape(&a, PLX_DTYPE_FLOAT32, 2, (const int64_t[]){0, 3});
    cr_assert(eq(sz, a.bytes, 0));
    npy_free(&a);
}

/* Big-endian files are byte-swapped into host order, not refused. */
Test(npy, numpy_big_endian_is_byte_swapped) {
    npy_array a = read_ok(fixture("be_f4_3.npy"));
    expect_shape(&a, PLX_DTYPE_FLOAT32, 1, (const int64_t[]){3});
    const float *f = a.data;
    cr_assert(eq(flt, f[0], 1.5f));
    cr_assert(eq(flt, f[1], -2.0f));
    cr_assert(eq(flt, f[2], 3.0f));
    npy_free(&a);
    a = read_ok(fixture("be_i8_2.npy"));
    cr_assert(eq(i64, ((const int64_t *)a.data)[0], 1));
    cr_assert(eq(i64, ((const int64_t *)a.data)[1], -2));
    npy_free(&a);
}

Test(npy, numpy_fortran_order_refused) {
    size_t size;
    unsigned char *buf = read_bytes(fixture("fortran_f32_2x3.npy"), &size);
    expect_error(buf, size, "Fortran-ordered arrays are not supported (save with order='C')");
    free(buf);
}

Test(npy, numpy_float64) {
    npy_array a = read_ok(fixture("f64_2.npy"));
    expect_shape(&a, PLX_DTYPE_FLOAT64, 1, (const int64_t[]){2});
    cr_assert(eq(dbl, ((const double *)a.data)[0], 1.0));
    cr_assert(eq(dbl, ((const double *)a.data)[1], 2.0));
    npy_free(&a);
    a = read_ok(fixture("be_f8_2.npy"));
    expect_shape(&a, PLX_DTYPE_FLOAT64, 1, (const int64_t[]){2});
    cr_assert(eq(dbl, ((const double *)a.data)[0], 1.5));
    cr_assert(eq(dbl, ((const double *)a.data)[1], -0.25));
    npy_free(&a);
}

/* '<u2', '<u4' and '<u8', their largest values included. */
Test(npy, numpy_unsigned) {
    npy_array a = read_ok(fixture("u2_3.npy"));
    expect_shape(&a, PLX_DTYPE_UINT16, 1, (const int64_t[]){3});
    cr_assert(eq(u16, ((const uint16_t *)a.data)[1], 1));
    cr_assert(eq(u16, ((const uint16_t *)a.data)[2], 65535));
    npy_free(&a);
    a = read_ok(fixture("u4_2.npy"));
    expect_shape(&a, PLX_DTYPE_UINT32, 1, (const int64_t[]){2});
    cr_assert(eq(u32, ((const uint32_t *)a.data)[0], 7));
    cr_assert(eq(u32, ((const uint32_t *)a.data)[1], UINT32_MAX));
    npy_free(&a);
    a = read_ok(fixture("u8_2.npy"));
    expect_shape(&a, PLX_DTYPE_UINT64, 1, (const int64_t[]){2});
    cr_assert(eq(u64, ((const uint64_t *)a.data)[0], 1));
    cr_assert(eq(u64, ((const uint64_t *)a.data)[1], UINT64_MAX));
    npy_free(&a);
}

/* What npy_write produces is what np.save produces, byte for byte. */
Test(npy, writer_matches_numpy_bytes) {
    static const char *const names[] = {
        "v1_f32_2x3.npy", "scalar_i64.npy",          "bool_5.npy",        "f16_4.npy",
        "i8_2x2x2.npy",   "i32_1x1x1x1x1x1x1x2.npy", "empty_f32_0x3.npy", "f64_2.npy",
        "u2_3.npy",       "u4_2.npy",                "u8_2.npy",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        npy_array a = read_ok(fixture(names[i]));
        char err[512] = "";
        cr_assert(npy_write(tmp_file("out.npy"), &a, err, sizeof err), "%s", err);
        npy_free(&a);
        size_t want_size, got_size;
        unsigned char *want = read_bytes(fixture(names[i]), &want_size);
        unsigned char *got = read_bytes(tmp_file("out.npy"), &got_size);
        cr_assert(eq(sz, got_size, want_size), "%s", names[i]);
        cr_assert(eq(int, memcmp(got, want, want_size), 0), "%s", names[i]);
        free(want);
        free(got);
    }
}

/* ------------------------------------------------------------------------ */
/* Header syntax NumPy accepts                                                */
/* ------------------------------------------------------------------------ */

Test(npy, header_key_order_whitespace_and_quotes) {
    int32_t v[6] = {1, 2, 3, 4, 5, 6};
    static const char *const dicts[] = {
        "{'shape': (2, 3), 'fortran_order': False, 'descr': '<i4'}",
        "{ \"descr\" :\t\"<i4\" ,\n'shape':(2,3,),'fortran_order':False , }",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (2L, 3L), }",
    };
    for (size_t i = 0; i < 3; i++) {
        size_t size;
        unsigned char *buf = make_npy(1 + (unsigned)i % 3, dicts[i], v, sizeof v, &size);
        npy_array a;
        char err[512] = "";
        cr_assert(npy_parse(buf, size, "mem", &a, err, sizeof err), "%s: %s", dicts[i], err);
        expect_shape(&a, PLX_DTYPE_INT32, 2, (const int64_t[]){2, 3});
        cr_assert(eq(int, memcmp(a.data, v, sizeof v), 0));
        npy_free(&a);
        free(buf);
    }
}

/* Files from old NumPy versions align the data to 16 bytes only. */
Test(npy, header_aligned_to_16_bytes) {
    const char dict[] = "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }";
    unsigned char buf[128];
    size_t hlen = sizeof dict; /* dict + '\n' */
    size_t pad = (16 - (10 + hlen) % 16) % 16;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)(hlen + pad);
    buf[9] = 0;
    memcpy(buf + 10, dict, sizeof dict - 1);
    memset(buf + 10 + sizeof dict - 1, ' ', pad);
    buf[10 + hlen + pad - 1] = '\n';
    buf[10 + hlen + pad] = 7;
    buf[10 + hlen + pad + 1] = 9;
    size_t size = 10 + hlen + pad + 2;
    cr_assert(eq(sz, (size - 2) % 16, 0));
    npy_array a;
    char err[512] = "";
    cr_assert(npy_parse(buf, size, "old", &a, err, sizeof err), "%s", err);
    cr_assert(eq(u8, ((const uint8_t *)a.data)[1], 9));
    npy_free(&a);
}

Test(npy, single_byte_types_any_byte_order) {
    static const char *const descrs[] = {"<i1", "|i1", ">i1", "<u1", "|u1", "<b1", "|b1"};
    for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++) {
        char dict[128];
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (1,), }",
                 descrs[i]);
        uint8_t one = 1;
        size_t size;
        unsigned char *buf = make_npy(1, dict, &one, 1, &size);
        npy_array a;
        char err[512] = "";
        cr_assert(npy_parse(buf, size, "mem", &a, err, sizeof err), "%s: %s", descrs[i], err);
        npy_free(&a);
        free(buf);
    }
}

/* ------------------------------------------------------------------------ */
/* Malformed files                                                            */
/* ------------------------------------------------------------------------ */

#define F32_2 "'descr': '<f4', 'fortran_order': False"

Test(npy, empty_file) {
    expect_error("", 0, "empty file");
}

Test(npy, bad_magic) {
    expect_error("PK\x03\x04 not numpy at all", 21, "bad magic");
    expect_error("\x93NUMPX\x01\x00\x10\x00", 10, "bad magic");
}

Test(npy, truncated_prefix) {
    expect_error("\x93NUM", 4, "truncated .npy header (file has only 4 bytes)");
    expect_error("\x93NUMPY\x01", 7, "truncated .npy header");
    expect_error("\x93NUMPY\x01\x00\x10", 9, "truncated .npy header");
    expect_error("\x93NUMPY\x02\x00\x10\x00\x00", 11, "truncated .npy header");
}

Test(npy, unknown_version) {
    expect_error("\x93NUMPY\x04\x00\x10\x00{}", 12, "unsupported .npy format version 4.0");
    expect_error("\x93NUMPY\x00\x00\x10\x00{}", 12, "unsupported .npy format version 0.0");
    expect_error("\x93NUMPY\x01\x01\x10\x00{}", 12, "unsupported .npy format version 1.1");
}

Test(npy, header_length_past_eof) {
    size_t size;
    unsigned char *buf = make_npy(1, "{" F32_2 ", 'shape': (2,), }", NULL, 0, &size);
    buf[8] = 0xff;
    buf[9] = 0xff;
    expect_error(buf, size, "header length 65535 runs past the end of the file");
    free(buf);
    buf = make_npy(2, "{" F32_2 ", 'shape': (2,), }", NULL, 0, &size);
    memset(buf + 8, 0xff, 4);
    expect_error(buf, size, "header length 4294967295 runs past the end of the file");
    free(buf);
}

Test(npy, unterminated_dict) {
    expect_dict_error("{" F32_2 ", 'shape': (2,), ", NULL, 0, "unterminated header dict");
    expect_dict_error("{" F32_2, NULL, 0, "unterminated header dict");
    expect_dict_error("{'descr'", NULL, 0, "unterminated header dict");
    expect_dict_error("{'descr': ", NULL, 0, "unterminated header dict");
    expect_dict_error("{'descr': '<f4", NULL, 0, "unterminated string");
    expect_dict_error("{" F32_2 ", 'shape': (2, ", NULL, 0, "unterminated 'shape' tuple");
    expect_dict_error("", NULL, 0, "does not start with a dict");
}

Test(npy, missing_unknown_and_duplicate_keys) {
    expect_dict_error("{'fortran_order': False, 'shape': (1,), }", NULL, 0, "no 'descr' key");
    expect_dict_error("{'descr': '<f4', 'shape': (1,), }", NULL, 0, "no 'fortran_order' key");
    expect_dict_error("{" F32_2 ", }", NULL, 0, "no 'shape' key");
    expect_dict_error("{}", NULL, 0, "no 'descr' key");
    expect_dict_error("{" F32_2 ", 'shape': (), 'extra': 1}", NULL, 0, "unexpected key 'extra'");
    expect_dict_error("{" F32_2 ", 'shape': (), 'descr': '<f4'}", NULL, 0,
                      "duplicate key 'descr'");
}

Test(npy, malformed_values) {
    expect_dict_error("{'descr': '<f4', 'fortran_order': 0, 'shape': ()}", NULL, 0,
                      "'fortran_order' is not True or False");
    expect_dict_error("{'descr': '<f4', 'fortran_order': Falsey, 'shape': ()}", NULL, 0,
                      "'fortran_order' is not True or False");
    expect_dict_error("{" F32_2 ", 'shape': [2]}", NULL, 0, "'shape' is not a tuple");
    expect_dict_error("{" F32_2 ", 'shape': (2)}", NULL, 0, "'shape' is not a tuple");
    expect_dict_error("{" F32_2 ", 'shape': (2 3)}", NULL, 0, "expected ',' or ')'");
    expect_dict_error("{" F32_2 ", 'shape': (a,)}", NULL, 0, "expected an integer");
    expect_dict_error("{" F32_2 ", 'shape': (,)}", NULL, 0, "expected an integer");
    expect_dict_error("{" F32_2 " 'shape': ()}", NULL, 0, "expected ',' or '}'");
    expect_dict_error("{'descr' '<f4'}", NULL, 0, "expected ':'");
    expect_dict_error("{descr: '<f4'}", NULL, 0, "expected a string");
    expect_dict_error("{" F32_2 ", 'shape': ()} x", NULL, 0, "unexpected characters after");
}

Test(npy, unknown_descr) {
    expect_dict_error("{'descr': '<c8', 'fortran_order': False, 'shape': ()}", NULL, 0,
                      "unsupported descr '<c8'");
    expect_dict_error("{'descr': '<f4 ', 'fortran_order': False, 'shape': ()}", NULL, 0,
                      "unsupported descr '<f4 '");
    expect_dict_error("{'descr': '', 'fortran_order': False, 'shape': ()}", NULL, 0,
                      "unsupported descr ''");
    expect_dict_error("{'descr': 'f4', 'fortran_order': False, 'shape': ()}", NULL, 0,
                      "unsupported descr 'f4'");
    expect_dict_error("{'descr': '<V2', 'fortran_order': False, 'shape': ()}", NULL, 0,
                      "bfloat16 has no NumPy dtype");
    expect_dict_error("{'descr': '|f4', 'fortran_order': False, 'shape': ()}", NULL, 0,
                      "no byte order ('|') but a multi-byte type");
    expect_dict_error("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}", NULL, 0,
                      "structured dtypes are not supported");
}

Test(npy, big_endian_hand_made) {
    const unsigned char data[] = {0x01, 0x02, 0xff, 0xfe};
    size_t size;
    unsigned char *buf = make_npy(1, "{'descr': '>i2', 'fortran_order': False, 'shape': (2,)}",
                                  data, sizeof data, &size);
    npy_array a;
    char err[512] = "";
    cr_assert(npy_parse(buf, size, "be", &a, err, sizeof err), "%s", err);
    cr_assert(eq(i16, ((const int16_t *)a.data)[0], 0x0102));
    cr_assert(eq(i16, ((const int16_t *)a.data)[1], -2));
    npy_free(&a);
    free(buf);
}

Test(npy, fortran_order) {
    float v[4] = {0};
    expect_dict_error("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", v, sizeof v,
                      "Fortran-ordered arrays are not supported (save with order='C')");
}

Test(npy, bad_dims) {
    expect_dict_error("{" F32_2 ", 'shape': (-3,), }", NULL, 0, "dimension 0 is negative (-3)");
    expect_dict_error("{" F32_2 ", 'shape': (2, -1), }", NULL, 0, "dimension 1 is negative");
    expect_dict_error("{" F32_2 ", 'shape': (99999999999999999999,), }", NULL, 0,
                      "dimension 0 is too large");
    expect_dict_error("{" F32_2 ", 'shape': (9223372036854775807,), }", NULL, 0,
                      "byte size overflows");
    expect_dict_error("{" F32_2 ", 'shape': (4294967296, 4294967296), }", NULL, 0,
                      "byte size overflows");
    /* a zero dimension does not hide an overflow of the others */
    expect_dict_error("{" F32_2 ", 'shape': (0, 4294967296, 4294967296), }", NULL, 0,
                      "byte size overflows");
    expect_dict_error("{" F32_2 ", 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }", NULL, 0,
                      "rank exceeds the maximum of 8");
}

Test(npy, truncated_and_trailing_data) {
    float v[7] = {0};
    expect_dict_error("{" F32_2 ", 'shape': (2, 3), }", v, 20,
                      "truncated data: shape (2, 3) of float32 needs 24 bytes, the file has 20");
    expect_dict_error("{" F32_2 ", 'shape': (2, 3), }", NULL, 0,
                      "truncated data: shape (2, 3) of float32 needs 24 bytes, the file has 0");
    expect_dict_error("{" F32_2 ", 'shape': (2, 3), }", v, 28,
                      "4 trailing bytes after the data: shape (2, 3) of float32 needs 24 bytes");
    expect_dict_error("{" F32_2 ", 'shape': (), }", v, 3, "needs 4 bytes, the file has 3");
}

Test(npy, bool_values_other_than_0_and_1) {
    const uint8_t v[3] = {1, 0, 2};
    expect_dict_error("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", v, 3,
                      "bool element 2 is 2 (must be 0 or 1)");
}

Test(npy, missing_file_and_directory) {
    char err[512];
    npy_array a;
    cr_assert(not(npy_read(tmp_file("nope.npy"), &a, err, sizeof err)));
    cr_assert(not(zero(ptr, strstr(err, "nope.npy: cannot open"))), "%s", err);
    cr_assert(not(npy_read(tmp_dir, &a, err, sizeof err)));
    cr_assert(not(zero(ptr, strstr(err, "is a directory"))), "%s", err);
}

/* Streams that never end are refused from the bytes the header
 * announces, not read until memory runs out: a character device, and a
 * pipe whose valid header is followed by endless data. */
Test(npy, endless_streams, .timeout = 30) {
    char err[512];
    npy_array a;
    cr_assert(not(npy_read("/dev/zero", &a, err, sizeof err)));
    cr_assert(not(zero(ptr, strstr(err, "/dev/zero: not a .npy file (bad magic"))), "%s", err);

    size_t size;
    unsigned char *head = make_npy(1, "{" F32_2 ", 'shape': (2, 3), }", NULL, 0, &size);
    int fds[2];
    cr_assert(eq(int, pipe(fds), 0));
    pid_t child = fork();
    cr_assert(ge(int, child, 0));
    if (child == 0) {
        close(fds[0]);
        signal(SIGPIPE, SIG_IGN); /* a closed pipe ends the loop with EPIPE */
        static const unsigned char zeros[65536];
        ssize_t wrote = write(fds[1], head, size);
        free(head);
        if (wrote != (ssize_t)size) {
            _exit(2);
        }
        for (;;) { /* until the reader closes its end */
            if (write(fds[1], zeros, sizeof zeros) < 0) {
                _exit(0);
            }
        }
    }
    close(fds[1]);
    char path[64];
    snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
    bool ok = npy_read(path, &a, err, sizeof err);
    close(fds[0]);
    int status;
    cr_assert(eq(int, waitpid(child, &status, 0), child));
    free(head);
    cr_assert(not(ok));
    cr_assert(not(zero(ptr, strstr(err, "trailing bytes after the data: shape (2, 3) of float32 "
                                        "needs 24 bytes, the stream goes on"))),
              "%s", err);
}

/* A header that announces far more data than a pipe brings: the data that
 * came, no more, is read and reported short. */
Test(npy, short_stream, .timeout = 30) {
    size_t size;
    float v[3] = {1, 2, 3};
    unsigned char *file = make_npy(1, "{" F32_2 ", 'shape': (1000000, 3), }", v, sizeof v, &size);
    int fds[2];
    cr_assert(eq(int, pipe(fds), 0));
    cr_assert(eq(long, (long)write(fds[1], file, size), (long)size));
    close(fds[1]);
    free(file);
    char err[512], path[64];
    npy_array a;
    snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
    cr_assert(not(npy_read(path, &a, err, sizeof err)));
    close(fds[0]);
    cr_assert(not(zero(ptr, strstr(err, "truncated data: shape (1000000, 3) of float32 needs "
                                        "12000000 bytes, the file has 12"))),
              "%s", err);
}

/* Every prefix of a valid file, and every single-byte corruption of its
 * header, parsed from an exact-size heap copy: an error or a valid array,
 * never a crash or (under ASan) an out-of-bounds read. */
Test(npy, truncations_and_corruptions_never_crash) {
    size_t size;
    unsigned char *file = read_bytes(fixture("v1_f32_2x3.npy"), &size);
    char err[64]; /* small: messages are truncated, not overflowed */
    for (size_t n = 0; n < size; n++) {
        unsigned char *copy = malloc(n > 0 ? n : 1);
        cr_assert(not(zero(ptr, copy)));
        memcpy(copy, file, n);
        npy_array a;
        cr_assert(not(npy_parse(copy, n, "t", &a, err, sizeof err)), "prefix %zu", n);
        cr_assert(lt(sz, strlen(err), sizeof err));
        free(copy);
    }
    static const unsigned char values[] = {0x00, 0x0a, ' ', '\'', '"', '(', ')', ',', ':',
                                           '{',  '}',  '-', '9',  'L', 0x80, 0xff};
    unsigned char *copy = malloc(size);
    cr_assert(not(zero(ptr, copy)));
    for (size_t pos = 0; pos < size - 24; pos++) {
        for (size_t k = 0; k < sizeof values; k++) {
            memcpy(copy, file, size);
            copy[pos] = values[k];
            npy_array a;
            if (npy_parse(copy, size, "c", &a, err, sizeof err)) {
                npy_free(&a);
            }
        }
    }
    free(copy);
    free(file);
}

/* ------------------------------------------------------------------------ */
/* Writer refusals                                                            */
/* ------------------------------------------------------------------------ */

static void expect_write_error(const npy_array *a, const char *fragment) {
    char err[512] = "";
    const char *path = tmp_file("w.npy");
    cr_assert(not(npy_write(path, a, err, sizeof err)), "wanted '%s'", fragment);
    cr_assert(not(zero(ptr, strstr(err, fragment))), "message '%s' lacks '%s'", err, fragment);
    cr_assert(eq(int, strncmp(err, path, strlen(path)), 0), "message '%s' lacks the path", err);
    cr_assert(ne(int, access(path, F_OK), 0), "a file was left behind");
}

Test(npy, write_refusals) {
    uint8_t data[16] = {0};
    npy_array a = {.dtype = PLX_DTYPE_BFLOAT16, .rank = 1, .dims = {2}, .data = data, .bytes = 4};
    expect_write_error(&a, "bfloat16 has no NumPy dtype");
    a.dtype = PLX_DTYPE_INVALID;
    expect_write_error(&a, "invalid dtype 0");
    a.dtype = (plx_dtype)99;
    expect_write_error(&a, "invalid dtype 99");
    a.dtype = PLX_DTYPE_FLOAT32;
    a.rank = 9;
    expect_write_error(&a, "rank 9 exceeds the maximum of 8");
    a.rank = 1;
    a.dims[0] = -1;
    expect_write_error(&a, "dimension 0 is negative");
    a.dims[0] = 3;
    expect_write_error(&a, "shape (3,) of float32 needs 12 bytes, the array has 4");
    a.rank = 2;
    a.dims[0] = INT64_MAX;
    a.dims[1] = 2;
    expect_write_error(&a, "byte size overflows");
    a.rank = 1;
    a.dims[0] = 1;
    a.data = NULL;
    expect_write_error(&a, "array data is NULL");
    data[3] = 7;
    a = (npy_array){.dtype = PLX_DTYPE_BOOL, .rank = 1, .dims = {4}, .data = data, .bytes = 4};
    expect_write_error(&a, "bool element 3 is 7");
}

Test(npy, write_to_missing_directory) {
    float v = 1.0f;
    npy_array a = {.dtype = PLX_DTYPE_FLOAT32, .rank = 0, .data = &v, .bytes = 4};
    char err[512] = "", path[600];
    snprintf(path, sizeof path, "%s/no/such/dir.npy", tmp_dir);
    cr_assert(not(npy_write(path, &a, err, sizeof err)));
    cr_assert(not(zero(ptr, strstr(err, "dir.npy: cannot create"))), "%s", err);
}

Test(npy, null_arguments_and_tiny_error_buffers) {
    npy_array a;
    char err[8];
    cr_assert(not(npy_read(tmp_file("nope.npy"), &a, NULL, 0)));
    cr_assert(not(npy_read(tmp_file("nope.npy"), &a, err, 0)));
    cr_assert(not(npy_read(tmp_file("nope.npy"), &a, err, 1)));
    cr_assert(eq(int, err[0], 0));
    cr_assert(not(npy_read(tmp_file("nope.npy"), &a, err, sizeof err)));
    cr_assert(eq(sz, strlen(err), sizeof err - 1));
    cr_assert(not(npy_read(NULL, &a, err, sizeof err)));
    cr_assert(not(npy_read(tmp_file("x"), NULL, err, sizeof err)));
    cr_assert(not(npy_parse(NULL, 5, "m", &a, err, sizeof err)));
    cr_assert(not(npy_write(NULL, &a, err, sizeof err)));
    cr_assert(not(npy_write(tmp_file("x"), NULL, err, sizeof err)));
    npy_free(NULL);
    memset(&a, 0, sizeof a);
    npy_free(&a);
}
