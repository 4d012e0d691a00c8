/* TensorProto decoding: dtypes, typed and raw data, external data files,
 * and the public reader of .pb tensor files. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_internal.h"

/* TensorProto.DataType values. */
enum {
    T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_UINT16 = 4, T_INT16 = 5, T_INT32 = 6,
    T_INT64 = 7, T_STRING = 8, T_BOOL = 9, T_FLOAT16 = 10, T_DOUBLE = 11, T_UINT32 = 12,
    T_UINT64 = 13, T_COMPLEX64 = 14, T_COMPLEX128 = 15, T_BFLOAT16 = 16,
    T_FLOAT8E4M3FN = 17, T_FLOAT8E4M3FNUZ = 18, T_FLOAT8E5M2 = 19, T_FLOAT8E5M2FNUZ = 20,
    T_UINT4 = 21, T_INT4 = 22
};

plx_dtype onnxi_dtype(int32_t t) {
    switch (t) {
    case T_FLOAT: return PLX_DTYPE_FLOAT32;
    case T_UINT8: return PLX_DTYPE_UINT8;
    case T_INT8: return PLX_DTYPE_INT8;
    case T_INT16: return PLX_DTYPE_INT16;
    case T_INT32: return PLX_DTYPE_INT32;
    case T_INT64: return PLX_DTYPE_INT64;
    case T_BOOL: return PLX_DTYPE_BOOL;
    case T_FLOAT16: return PLX_DTYPE_FLOAT16;
    case T_BFLOAT16: return PLX_DTYPE_BFLOAT16;
    case T_DOUBLE: return PLX_DTYPE_FLOAT64;
    case T_UINT16: return PLX_DTYPE_UINT16;
    case T_UINT32: return PLX_DTYPE_UINT32;
    case T_UINT64: return PLX_DTYPE_UINT64;
    case T_FLOAT8E4M3FN: return PLX_DTYPE_FLOAT8E4M3FN;
    case T_FLOAT8E4M3FNUZ: return PLX_DTYPE_FLOAT8E4M3FNUZ;
    case T_FLOAT8E5M2: return PLX_DTYPE_FLOAT8E5M2;
    case T_FLOAT8E5M2FNUZ: return PLX_DTYPE_FLOAT8E5M2FNUZ;
    case T_UINT4: return PLX_DTYPE_UINT4;
    case T_INT4: return PLX_DTYPE_INT4;
    default: return PLX_DTYPE_INVALID;
    }
}

const char *onnxi_dtype_name(int32_t t, char *buf, size_t size) {
    static const char *const names[] = {
        "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING",
        "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
        "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4"};
    if (t >= 0 && (size_t)t < sizeof names / sizeof names[0]) {
        return names[t];
    }
    snprintf(buf, size, "type %d", (int)t);
    return buf;
}

static void *pb_alloc(void *data, size_t size) {
    void *p = malloc(size);
    if (!p) {
        ((onnxi_pb_allocator *)data)->failed = true;
    }
    return p;
}

static void pb_free(void *data, void *p) {
    (void)data;
    free(p);
}

void onnxi_pb_allocator_init(onnxi_pb_allocator *a) {
    a->base = (ProtobufCAllocator){.alloc = pb_alloc, .free = pb_free, .allocator_data = a};
    a->failed = false;
}

plx_status onnxi_read_file(const char *path, size_t max, void **out_data, size_t *out_size) {
    /* O_NONBLOCK: opening a FIFO must not wait for a writer (it is then
     * refused as not a regular file); reads of a regular file ignore it. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return plx_status_create(PLX_IO_ERROR, "%s: cannot open: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return plx_status_create(PLX_IO_ERROR, "%s: not a regular file", path);
    }
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return plx_status_create(PLX_INVALID_ARGUMENT, "%s: %lld bytes, more than the %zu allowed",
                                 path, (long long)st.st_size, max);
    }
    size_t size = (size_t)st.st_size;
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) {
        close(fd);
        return plx_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", path, size);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            free(buf);
            close(fd);
            return plx_status_create(PLX_IO_ERROR, "%s: read failed: %s", path,
                                     e ? strerror(e) : "file shrank while reading");
        }
        got += (size_t)r;
    }
    close(fd);
    *out_data = buf;
    *out_size = size;
    return NULL;
}

/* Reads `length` bytes at `offset` of the external file `location`,
 * resolved inside base_dir, into dst; with dst NULL, only checks that the
 * file is inside base_dir and long enough. */
static plx_status read_external(const char *what, const char *base_dir, const char *location,
                                uint64_t offset, size_t length, void *dst) {
    if (!base_dir) {
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "%s: external data '%s' cannot be read: the model was not "
                                 "loaded from a file (no directory to resolve it in)",
                                 what, location);
    }
    if (location[0] == '\0' || location[0] == '/') {
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "%s: external data location '%s' must be a relative path "
                                 "inside the model's directory", what, location);
    }
    char base_real[PATH_MAX], file_real[PATH_MAX];
    if (!realpath(base_dir, base_real)) {
        return plx_status_create(PLX_IO_ERROR, "%s: model directory '%s': %s", what, base_dir,
                                 strerror(errno));
    }
    char *joined = onnxi_asprintf("%s/%s", base_real, location);
    if (!joined) {
        return plx_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", what);
    }
    if (!realpath(joined, file_real)) {
        plx_status st = plx_status_create(PLX_IO_ERROR, "%s: external data file '%s': %s", what,
                                          joined, strerror(errno));
        free(joined);
        return st;
    }
    free(joined);
    size_t blen = strlen(base_real);
    bool inside = strncmp(file_real, base_real, blen) == 0 &&
                  (file_real[blen] == '/' || (blen == 1 && base_real[0] == '/'));
    if (!inside) {
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "%s: external data location '%s' leaves the model's directory "
                                 "'%s' (it resolves to '%s')", what, location, base_real,
                                 file_real);
    }
    int fd = open(file_real, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO: no wait */
    if (fd < 0) {
        return plx_status_create(PLX_IO_ERROR, "%s: external data file '%s': %s", what,
                                 file_real, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "%s: external data file '%s' is not a regular file", what,
                                 file_real);
    }
    if (offset > (uint64_t)st.st_size || length > (uint64_t)st.st_size - offset) {
        close(fd);
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "%s: external data file '%s' is too short: needs %zu bytes at "
                                 "offset %llu", what, file_real, length,
                                 (unsigned long long)offset);
    }
    size_t got = dst ? 0 : length; /* no destination: only validate */
    while (got < length) {
        ssize_t r = pread(fd, (char *)dst + got, length - got, (off_t)(offset + got));
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            close(fd);
            return plx_status_create(PLX_IO_ERROR, "%s: reading '%s' failed", what, file_real);
        }
        got += (size_t)r;
    }
    close(fd);
    return NULL;
}

static bool parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s) {
        return false;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || s[0] == '-') {
        return false;
    }
    *out = v;
    return true;
}

static plx_status decode_external(const Onnx__TensorProto *t, const char *what,
                                  const char *base_dir, size_t bytes, void *dst) {
    const char *location = NULL;
    uint64_t offset = 0, length = bytes;
    bool has_length = false;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (!e->key || !e->value) {
            continue;
        }
        if (strcmp(e->key, "location") == 0) {
            location = e->value;
        } else if (strcmp(e->key, "offset") == 0) {
            if (!parse_u64(e->value, &offset)) {
                return plx_status_create(PLX_INVALID_ARGUMENT,
                                         "%s: external data offset '%s' is not a number", what,
                                         e->value);
            }
        } else if (strcmp(e->key, "length") == 0) {
            if (!parse_u64(e->value, &length)) {
                return plx_status_create(PLX_INVALID_ARGUMENT,
                                         "%s: external data length '%s' is not a number", what,
                                         e->value);
            }
            has_length = true;
        }
    }
    if (!location) {
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "%s: external data without a 'location'", what);
    }
    if (has_length && length != bytes) {
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "%s: external data length %llu, but the shape needs %zu bytes",
                                 what, (unsigned long long)length, bytes);
    }
    return read_external(what, base_dir, location, offset, bytes, dst);
}

plx_status onnxi_tensor_decode(const Onnx__TensorProto *t, const char *what,
                               const char *base_dir, plx_tensor_info *out_info,
                               void **out_data) {
    char tbuf[32];
    int32_t type = t->has_data_type ? t->data_type : 0;
    plx_dtype dt = onnxi_dtype(type);
    if (dt == PLX_DTYPE_INVALID) {
        return plx_status_create(type == 0 ? PLX_INVALID_ARGUMENT : PLX_UNSUPPORTED,
                                 "%s has data type %s, which Plexus does not have", what,
                                 onnxi_dtype_name(type, tbuf, sizeof tbuf));
    }
    if (t->segment) {
        return plx_status_create(PLX_UNSUPPORTED, "%s is segmented, which is not supported",
                                 what);
    }
    if (t->n_dims > PLX_MAX_RANK) {
        return plx_status_create(PLX_UNSUPPORTED, "%s has rank %zu; Plexus allows at most %d",
                                 what, t->n_dims, PLX_MAX_RANK);
    }
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = dt;
    info.rank = (uint32_t)t->n_dims;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0) {
            return plx_status_create(PLX_INVALID_ARGUMENT, "%s: dims[%zu] = %lld is negative",
                                     what, i, (long long)t->dims[i]);
        }
        info.dims[i] = t->dims[i];
    }
    size_t bytes, count;
    if (!plx_tensor_info_byte_size(&info, &bytes) ||
        !plx_tensor_info_element_count(&info, &count)) {
        return plx_status_create(PLX_INVALID_ARGUMENT, "%s: its shape's size overflows", what);
    }
    if (bytes > ONNXI_MAX_TENSOR_BYTES) {
        return plx_status_create(PLX_INVALID_ARGUMENT, "%s: %zu bytes, more than the %zu a "
                                 "tensor may hold", what, bytes, ONNXI_MAX_TENSOR_BYTES);
    }
    /* ONNX packs int4 and uint4 two to a byte (the first element in the
     * low nibble; an odd count leaves the last high nibble unused), in
     * raw_data, external data and int32_data (one packed byte per int32);
     * Plexus holds one element per byte, unpacked below. */
    bool packed4 = dt == PLX_DTYPE_INT4 || dt == PLX_DTYPE_UINT4;
    size_t stored = packed4 ? count / 2 + count % 2 : bytes; /* bytes in the file */
    size_t stored_count = packed4 ? stored : count;           /* values in a typed field */
    /* Check that the data is there before allocating what the shape says. */
    bool external =
        t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    size_t have; /* elements found in the field used */
    const char *field = NULL;
    if (external) {
        plx_status st = decode_external(t, what, base_dir, stored, NULL);
        if (st) {
            return st;
        }
        have = stored_count;
    } else if (t->has_raw_data) {
        if (t->raw_data.len != stored) {
            return plx_status_create(PLX_INVALID_ARGUMENT,
                                     "%s: raw_data has %zu bytes, the shape needs %zu", what,
                                     t->raw_data.len, stored);
        }
        have = stored_count;
    } else if (dt == PLX_DTYPE_FLOAT32) {
        field = "float_data";
        have = t->n_float_data;
    } else if (dt == PLX_DTYPE_INT64) {
        field = "int64_data";
        have = t->n_int64_data;
    } else if (dt == PLX_DTYPE_FLOAT64) {
        field = "double_data";
        have = t->n_double_data;
    } else if (dt == PLX_DTYPE_UINT32 || dt == PLX_DTYPE_UINT64) {
        field = "uint64_data"; /* onnx.proto: uint64_data holds uint32 and uint64 */
        have = t->n_uint64_data;
    } else {
        field = "int32_data";
        have = t->n_int32_data;
    }
    if (have != stored_count) {
        return plx_status_create(PLX_INVALID_ARGUMENT, "%s: %s has %zu values, the shape needs %zu",
                                 what, field ? field : "data", have, stored_count);
    }
    unsigned char *data = calloc(1, bytes ? bytes : 1);
    if (!data) {
        return plx_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", what,
                                 bytes);
    }
    plx_status st = NULL;
    if (external) {
        st = decode_external(t, what, base_dir, stored, data);
    } else if (t->has_raw_data) {
        if (stored) {
            memcpy(data, t->raw_data.data, stored); /* little-endian, as the host */
        }
    } else if (dt == PLX_DTYPE_FLOAT32) {
        if (count) {
            memcpy(data, t->float_data, bytes);
        }
    } else if (dt == PLX_DTYPE_INT64) {
        if (count) {
            memcpy(data, t->int64_data, bytes);
        }
    } else if (dt == PLX_DTYPE_FLOAT64) {
        if (count) {
            memcpy(data, t->double_data, bytes);
        }
    } else if (dt == PLX_DTYPE_UINT64) {
        if (count) {
            memcpy(data, t->uint64_data, bytes);
        }
    } else if (dt == PLX_DTYPE_UINT32) {
        /* the low 32 bits, as onnx.numpy_helper reads them */
        for (size_t i = 0; i < count; i++) {
            ((uint32_t *)(void *)data)[i] = (uint32_t)(t->uint64_data[i] & 0xffffffffu);
        }
    } else {
        /* int32_data carries int32, int16, uint16, int8, uint8, bool,
         * float16 and bfloat16 (the bits of the 16-bit types) and the
         * float8 types (the byte's bits, one element per int32). */
        {
            for (size_t i = 0; i < stored_count; i++) {
                int32_t v = t->int32_data[i];
                switch (dt) {
                case PLX_DTYPE_INT32: ((int32_t *)(void *)data)[i] = v; break;
                case PLX_DTYPE_INT16: ((int16_t *)(void *)data)[i] = (int16_t)v; break;
                case PLX_DTYPE_UINT16:
                case PLX_DTYPE_FLOAT16:
                case PLX_DTYPE_BFLOAT16: ((uint16_t *)(void *)data)[i] = (uint16_t)v; break;
                case PLX_DTYPE_INT8: ((int8_t *)data)[i] = (int8_t)v; break;
                case PLX_DTYPE_FLOAT8E4M3FN:
                case PLX_DTYPE_FLOAT8E4M3FNUZ:
                case PLX_DTYPE_FLOAT8E5M2:
                case PLX_DTYPE_FLOAT8E5M2FNUZ:
                case PLX_DTYPE_INT4: /* a packed pair, unpacked below */
                case PLX_DTYPE_UINT4: ((uint8_t *)data)[i] = (uint8_t)v; break;
                case PLX_DTYPE_UINT8: data[i] = (uint8_t)v; break;
                case PLX_DTYPE_BOOL: data[i] = v != 0; break;
                default: break;
                }
            }
        }
    }
    if (!st && packed4) {
        /* from the last element down: element i's byte i / 2 <= i is read
         * before anything overwrites it */
        for (size_t i = count; i-- > 0;) {
            unsigned nib = (i & 1u) ? data[i / 2] >> 4 : data[i / 2] & 0x0fu;
            data[i] = (unsigned char)(dt == PLX_DTYPE_INT4 && nib >= 8 ? nib | 0xf0u : nib);
        }
    }
    if (!st && dt == PLX_DTYPE_BOOL) {
        for (size_t i = 0; i < count; i++) {
            if (data[i] > 1) {
                data[i] = 1;
            }
        }
    }
    if (st) {
        free(data);
        return st;
    }
    *out_info = info;
    *out_data = data;
    return NULL;
}

PLX_API plx_status plx_onnx_read_tensor_file(const char *path, plx_tensor_info *out_info,
                                             void **out_data, char **out_name) {
    if (!path || !out_info || !out_data || !out_name) {
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "plx_onnx_read_tensor_file: path and out parameters are required");
    }
    void *buf;
    size_t size;
    plx_status st = onnxi_read_file(path, (size_t)1 << 32, &buf, &size);
    if (st) {
        return st;
    }
    onnxi_pb_allocator pa;
    onnxi_pb_allocator_init(&pa);
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(&pa.base, size, (const uint8_t *)buf);
    free(buf);
    if (!t && pa.failed) {
        return plx_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory while decoding the "
                                 "tensor (%zu bytes)", path, size);
    }
    if (!t) {
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "%s: not a TensorProto (protobuf decoding failed: truncated or "
                                 "wrong wire types)", path);
    }
    char *what = onnxi_asprintf("%s: tensor '%s'", path, t->name ? t->name : "");
    char *name = strdup(t->name ? t->name : "");
    if (!what || !name) {
        free(what);
        free(name);
        onnx__tensor_proto__free_unpacked(t, &pa.base);
        return plx_status_create(PLX_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    plx_tensor_info info;
    void *data;
    st = onnxi_tensor_decode(t, what, NULL, &info, &data);
    free(what);
    onnx__tensor_proto__free_unpacked(t, &pa.base);
    if (st) {
        free(name);
        return st;
    }
    *out_info = info;
    *out_data = data;
    *out_name = name;
    return NULL;
}
