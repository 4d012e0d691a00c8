/* NumPy .npy files: read one array from a file, write one array to a file.
 *
 * Self-contained: needs only the SDK's <plexus/tensor.h> for plx_dtype and
 * PLX_MAX_RANK, nothing from libplexus. Errors are reported as a false
 * return plus a message, always starting with the file path (or the name
 * given to npy_parse), written into a caller buffer.
 *
 * Format (NumPy's format.py, versions 1.0, 2.0 and 3.0): the magic
 * "\x93NUMPY", a major and a minor version byte, the header length
 * (uint16 little-endian for 1.x, uint32 for 2.x and 3.x), then a Python
 * dict literal with exactly the keys 'descr', 'fortran_order' and 'shape'
 * (ASCII; UTF-8 in 3.0), padded with spaces and ended by '\n'; the data
 * follows in C order.
 *
 * Element types (descr), with the byte-order character '<', '|', '>' or '=':
 *   f4 float32, f2 float16, f8 float64, i1 int8, u1 uint8, i2 int16,
 *   u2 uint16, i4 int32, u4 uint32, i8 int64, u8 uint64, b1 bool.
 * Big-endian data ('>f4', ...) is accepted and byte-swapped into host
 * order on reading; arrays are always written little-endian. bfloat16 has
 * no NumPy dtype (ml_dtypes' bfloat16 saves as an opaque void type), so
 * bfloat16 arrays can be neither read nor written: convert to float32.
 * Fortran-ordered arrays, structured dtypes and the other NumPy types
 * (complex, strings, ...) are refused with a message that says so.
 *
 * Thread-safety: the functions keep no state; distinct arrays may be used
 * from distinct threads. */
#ifndef PLEXUS_TOOLS_NPY_H
#define PLEXUS_TOOLS_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plexus/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One dense, C-ordered array. dims[0..rank-1] >= 0, the rest 0; rank 0 is
 * a scalar (one element). `data` holds `bytes` bytes in host byte order;
 * bool elements are bytes 0 or 1. Arrays filled by npy_read / npy_parse
 * own `data` (malloc'd; never NULL on success, even when bytes is 0):
 * release it with npy_free. */
typedef struct npy_array {
    plx_dtype dtype;
    uint32_t rank;
    int64_t dims[PLX_MAX_RANK];
    void *data;
    size_t bytes;
} npy_array;

/* Reads the whole file at `path` into `out`. `out` is zeroed on entry and
 * filled only on success. On failure returns false and, when `err` is not
 * NULL and `err_size` > 0, writes a NUL-terminated message
 * "PATH: what is wrong" (truncated to fit). Refuses: a bad magic or
 * version, a header length past the end of the file, a malformed or
 * incomplete dict, an unsupported descr, fortran_order True, a rank over
 * PLX_MAX_RANK, a negative dimension or a byte size that overflows, data
 * shorter or longer than the shape needs, bool bytes other than 0 or 1. */
bool npy_read(const char *path, npy_array *out, char *err, size_t err_size);

/* As npy_read, on the `size` bytes at `buf` (an in-memory .npy file);
 * `name` stands for the path in messages. The data is copied: `buf` may be
 * freed afterwards. */
bool npy_parse(const void *buf, size_t size, const char *name, npy_array *out, char *err,
               size_t err_size);

/* Writes `array` to `path` (created or truncated) as a .npy file: format
 * 1.0, or 2.0 when the header would exceed 65535 bytes; little-endian
 * descr; fortran_order False; the data 64-byte aligned. The header is the
 * one NumPy's np.save writes, byte for byte. Refuses (false and a message
 * as for npy_read) an invalid or bfloat16 dtype, a rank over PLX_MAX_RANK,
 * a negative dimension, `bytes` not equal to the shape's byte size, NULL
 * data with bytes > 0, and bool bytes other than 0 or 1. On a write error
 * the partial file is removed. `array` is not modified. */
bool npy_write(const char *path, const npy_array *array, char *err, size_t err_size);

/* Frees `array->data` and zeroes the array. NULL and zeroed arrays are
 * fine. */
void npy_free(npy_array *array);

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_TOOLS_NPY_H */
