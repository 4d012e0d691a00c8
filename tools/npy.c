/* NumPy .npy reader and writer (see npy.h). The whole input is parsed from
 * a bounded buffer: every read checks the cursor against the end, so a
 * malformed file can produce an error but never an out-of-bounds read. */
#define _POSIX_C_SOURCE 200809L

#include "npy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64
/* NumPy leaves this many digits' worth of spare spaces after the dict so
 * that the first dimension can grow in place; we write the same bytes. */
#define NPY_GROWTH_AXIS_MAX_DIGITS 21

typedef struct npy_header {
    plx_dtype dtype;
    size_t elem_size;
    bool swap; /* the data's byte order differs from the host's */
    uint32_t rank;
    int64_t dims[PLX_MAX_RANK];
    size_t data_offset;
    size_t bytes;
} npy_header;

static void set_err(char *err, size_t err_size, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void set_err(char *err, size_t err_size, const char *name, const char *fmt, ...) {
    if (err == NULL || err_size == 0) {
        return;
    }
    int n = snprintf(err, err_size, "%s: ", name != NULL ? name : "(null)");
    if (n < 0) {
        err[0] = '\0';
        return;
    }
    if ((size_t)n >= err_size) {
        return; /* snprintf already truncated and terminated */
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, err_size - (size_t)n, fmt, ap);
    va_end(ap);
}

/* strerror's text, but "out of memory" for ENOMEM, in the words of the
 * rest of Plexus (fopen fails so when it cannot allocate its FILE). */
static const char *errno_text(int e) {
    return e == ENOMEM ? "out of memory" : strerror(e);
}

static bool host_is_little_endian(void) {
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

static void swap_elements(unsigned char *p, size_t bytes, size_t elem_size) {
    for (size_t off = 0; off + elem_size <= bytes; off += elem_size) {
        for (size_t i = 0; i < elem_size / 2; i++) {
            unsigned char t = p[off + i];
            p[off + i] = p[off + elem_size - 1 - i];
            p[off + elem_size - 1 - i] = t;
        }
    }
}

/* Copies up to 40 bytes of untrusted text for a message, replacing
 * anything unprintable with '?'. */
static const char *printable(const char *s, size_t n, char out[48]) {
    size_t k = 0;
    for (size_t i = 0; i < n && k < 40; i++) {
        unsigned char c = (unsigned char)s[i];
        out[k++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (n > 40) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k] = '\0';
    return out;
}

/* "(2, 3)", "(5,)" or "()": Python's repr of the shape tuple. */
static void format_shape(uint32_t rank, const int64_t *dims, char *out, size_t out_size) {
    size_t k = 0;
    int n = snprintf(out, out_size, "(");
    k = n > 0 ? (size_t)n : 0;
    for (uint32_t i = 0; i < rank && k < out_size; i++) {
        n = snprintf(out + k, out_size - k, i == 0 ? "%" PRId64 : ", %" PRId64, dims[i]);
        k += n > 0 ? (size_t)n : 0;
    }
    if (k < out_size) {
        snprintf(out + k, out_size - k, rank == 1 ? ",)" : ")");
    }
}

/* Byte size of a dense array; false with a message on a negative
 * dimension or an overflow of size_t. */
static bool array_byte_size(uint32_t rank, const int64_t *dims, size_t elem_size,
                            const char *name, size_t *out_bytes, char *err, size_t err_size) {
    size_t n = elem_size;
    bool zero = false;
    for (uint32_t i = 0; i < rank; i++) {
        int64_t d = dims[i];
        if (d < 0) {
            set_err(err, err_size, name, "dimension %" PRIu32 " is negative (%" PRId64 ")", i, d);
            return false;
        }
        if (d == 0) {
            zero = true; /* still check the other dimensions for overflow */
            continue;
        }
        if ((uint64_t)d > SIZE_MAX / n) {
            char shape[256];
            format_shape(rank, dims, shape, sizeof shape);
            set_err(err, err_size, name, "shape %s is too large (byte size overflows)", shape);
            return false;
        }
        n *= (size_t)d;
    }
    *out_bytes = zero ? 0 : n;
    return true;
}

/* ---- header dict parsing ---- */

typedef struct cursor {
    const char *p;
    const char *end;
} cursor;

static void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r' ||
                             *c->p == '\f' || *c->p == '\v')) {
        c->p++;
    }
}

static bool at(const cursor *c, char ch) {
    return c->p < c->end && *c->p == ch;
}

/* A Python string literal in single or double quotes (no escapes: no key
 * or supported descr needs one). */
static bool parse_string(cursor *c, const char **out_s, size_t *out_n, const char *name,
                         char *err, size_t err_size) {
    if (c->p >= c->end) {
        set_err(err, err_size, name, "unterminated header dict (ends where a string was expected)");
        return false;
    }
    char quote = *c->p;
    if (quote != '\'' && quote != '"') {
        char buf[48];
        set_err(err, err_size, name, "malformed header dict: expected a string at '%s'",
                printable(c->p, (size_t)(c->end - c->p), buf));
        return false;
    }
    const char *start = c->p + 1;
    const char *q = memchr(start, quote, (size_t)(c->end - start));
    if (q == NULL) {
        set_err(err, err_size, name, "unterminated string in the header dict");
        return false;
    }
    *out_s = start;
    *out_n = (size_t)(q - start);
    c->p = q + 1;
    return true;
}

static bool token_is(const cursor *c, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) {
        return false;
    }
    /* the word must end there: "Truex" is not True */
    const char *after = c->p + n;
    return after == c->end ||
           !((*after >= 'a' && *after <= 'z') || (*after >= 'A' && *after <= 'Z') ||
             (*after >= '0' && *after <= '9') || *after == '_');
}

static bool parse_bool(cursor *c, bool *out, const char *name, char *err, size_t err_size) {
    if (token_is(c, "True")) {
        c->p += 4;
        *out = true;
        return true;
    }
    if (token_is(c, "False")) {
        c->p += 5;
        *out = false;
        return true;
    }
    char buf[48];
    set_err(err, err_size, name, "'fortran_order' is not True or False (found '%s')",
            c->p < c->end ? printable(c->p, (size_t)(c->end - c->p), buf) : "end of header");
    return false;
}

/* A tuple of non-negative integers: "()", "(3,)", "(2, 3)", "(2, 3,)";
 * Python 2's "3L" suffix is accepted. */
static bool parse_shape(cursor *c, npy_header *h, const char *name, char *err, size_t err_size) {
    if (!at(c, '(')) {
        set_err(err, err_size, name, "'shape' is not a tuple");
        return false;
    }
    c->p++;
    uint32_t rank = 0;
    bool trailing_comma = false;
    for (;;) {
        skip_ws(c);
        if (c->p >= c->end) {
            set_err(err, err_size, name, "unterminated 'shape' tuple in the header");
            return false;
        }
        if (*c->p == ')') {
            c->p++;
            break;
        }
        if (rank > 0 && !trailing_comma) {
            set_err(err, err_size, name, "malformed 'shape' tuple: expected ',' or ')'");
            return false;
        }
        bool negative = false;
        if (*c->p == '-') {
            negative = true;
            c->p++;
        }
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') {
            set_err(err, err_size, name, "malformed 'shape' tuple: expected an integer");
            return false;
        }
        uint64_t v = 0;
        bool too_big = false;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            unsigned digit = (unsigned)(*c->p - '0');
            if (v > ((uint64_t)INT64_MAX - digit) / 10) {
                too_big = true;
            } else {
                v = v * 10 + digit;
            }
            c->p++;
        }
        if (at(c, 'L') || at(c, 'l')) {
            c->p++;
        }
        if (rank >= PLX_MAX_RANK) {
            set_err(err, err_size, name, "rank exceeds the maximum of %d", PLX_MAX_RANK);
            return false;
        }
        if (too_big) {
            set_err(err, err_size, name, "dimension %" PRIu32 " is too large (over %" PRId64 ")",
                    rank, INT64_MAX);
            return false;
        }
        if (negative && v != 0) {
            set_err(err, err_size, name, "dimension %" PRIu32 " is negative (-%" PRIu64 ")", rank,
                    v);
            return false;
        }
        h->dims[rank++] = (int64_t)v;
        skip_ws(c);
        trailing_comma = at(c, ',');
        if (trailing_comma) {
            c->p++;
        }
    }
    if (rank == 1 && !trailing_comma) {
        /* "(3)" is the integer 3 in Python, not a tuple */
        set_err(err, err_size, name, "'shape' is not a tuple (a 1-D shape is written '(n,)')");
        return false;
    }
    h->rank = rank;
    return true;
}

typedef struct descr_entry {
    const char *code;
    plx_dtype dtype;
} descr_entry;

static const descr_entry descr_table[] = {
    {"f4", PLX_DTYPE_FLOAT32}, {"f2", PLX_DTYPE_FLOAT16}, {"f8", PLX_DTYPE_FLOAT64},
    {"i1", PLX_DTYPE_INT8},    {"u1", PLX_DTYPE_UINT8},   {"i2", PLX_DTYPE_INT16},
    {"u2", PLX_DTYPE_UINT16},  {"i4", PLX_DTYPE_INT32},   {"u4", PLX_DTYPE_UINT32},
    {"i8", PLX_DTYPE_INT64},   {"u8", PLX_DTYPE_UINT64},  {"b1", PLX_DTYPE_BOOL},
};

static const char supported_descrs[] =
    "supported: '<f4' float32, '<f2' float16, '<f8' float64, '|i1' int8, '|u1' uint8, "
    "'<i2' int16, '<u2' uint16, '<i4' int32, '<u4' uint32, '<i8' int64, '<u8' uint64, "
    "'|b1' bool; bfloat16 has no NumPy dtype";

static bool parse_descr(const char *s, size_t n, npy_header *h, const char *name, char *err,
                        size_t err_size) {
    char buf[48];
    if (n == 3 && strchr("<>|=", s[0]) != NULL && s[0] != '\0') {
        for (size_t i = 0; i < sizeof descr_table / sizeof descr_table[0]; i++) {
            if (memcmp(s + 1, descr_table[i].code, 2) != 0) {
                continue;
            }
            h->dtype = descr_table[i].dtype;
            h->elem_size = plx_dtype_size(h->dtype);
            if (h->elem_size > 1) {
                if (s[0] == '|') {
                    set_err(err, err_size, name,
                            "descr '%s' has no byte order ('|') but a multi-byte type",
                            printable(s, n, buf));
                    return false;
                }
                bool little = host_is_little_endian();
                h->swap = (s[0] == '>' && little) || (s[0] == '<' && !little);
            }
            return true;
        }
    }
    set_err(err, err_size, name, "unsupported descr '%s' (%s)", printable(s, n, buf),
            supported_descrs);
    return false;
}

static bool parse_dict(const char *text, size_t len, npy_header *h, const char *name, char *err,
                       size_t err_size) {
    cursor c = {text, text + len};
    bool have_descr = false, have_order = false, have_shape = false;
    skip_ws(&c);
    if (!at(&c, '{')) {
        set_err(err, err_size, name, "malformed header: does not start with a dict ('{')");
        return false;
    }
    c.p++;
    for (;;) {
        skip_ws(&c);
        if (c.p >= c.end) {
            set_err(err, err_size, name, "unterminated header dict (no closing '}')");
            return false;
        }
        if (*c.p == '}') {
            c.p++;
            break;
        }
        const char *key;
        size_t key_len;
        if (!parse_string(&c, &key, &key_len, name, err, err_size)) {
            return false;
        }
        skip_ws(&c);
        if (!at(&c, ':')) {
            set_err(err, err_size, name, c.p >= c.end ? "unterminated header dict (no closing '}')"
                                                      : "malformed header dict: expected ':'");
            return false;
        }
        c.p++;
        skip_ws(&c);
        if (c.p >= c.end) {
            set_err(err, err_size, name, "unterminated header dict (no closing '}')");
            return false;
        }
        bool *seen;
        if (key_len == 5 && memcmp(key, "descr", 5) == 0) {
            seen = &have_descr;
        } else if (key_len == 13 && memcmp(key, "fortran_order", 13) == 0) {
            seen = &have_order;
        } else if (key_len == 5 && memcmp(key, "shape", 5) == 0) {
            seen = &have_shape;
        } else {
            char buf[48];
            set_err(err, err_size, name, "unexpected key '%s' in the header dict",
                    printable(key, key_len, buf));
            return false;
        }
        if (*seen) {
            char buf[48];
            set_err(err, err_size, name, "duplicate key '%s' in the header dict",
                    printable(key, key_len, buf));
            return false;
        }
        *seen = true;
        if (seen == &have_descr) {
            if (!at(&c, '\'') && !at(&c, '"')) {
                set_err(err, err_size, name,
                        "'descr' is not a string (structured dtypes are not supported)");
                return false;
            }
            const char *d;
            size_t d_len;
            if (!parse_string(&c, &d, &d_len, name, err, err_size) ||
                !parse_descr(d, d_len, h, name, err, err_size)) {
                return false;
            }
        } else if (seen == &have_order) {
            bool fortran;
            if (!parse_bool(&c, &fortran, name, err, err_size)) {
                return false;
            }
            if (fortran) {
                set_err(err, err_size, name,
                        "Fortran-ordered arrays are not supported (save with order='C')");
                return false;
            }
        } else if (!parse_shape(&c, h, name, err, err_size)) {
            return false;
        }
        skip_ws(&c);
        if (at(&c, ',')) {
            c.p++;
        } else if (c.p >= c.end) {
            set_err(err, err_size, name, "unterminated header dict (no closing '}')");
            return false;
        } else if (!at(&c, '}')) {
            set_err(err, err_size, name, "malformed header dict: expected ',' or '}'");
            return false;
        }
    }
    skip_ws(&c);
    /* NumPy tolerates NULs in old padding; so do we, but nothing else */
    while (c.p < c.end && (*c.p == '\0' || *c.p == ' ' || *c.p == '\n')) {
        c.p++;
    }
    if (c.p < c.end) {
        set_err(err, err_size, name, "unexpected characters after the header dict");
        return false;
    }
    const char *missing = !have_descr ? "descr" : !have_order ? "fortran_order"
                                                : !have_shape ? "shape" : NULL;
    if (missing != NULL) {
        set_err(err, err_size, name, "header dict has no '%s' key", missing);
        return false;
    }
    return true;
}

/* Validates a whole in-memory .npy file: header, data length, bool bytes. */
/* The prefix of a .npy file: its length (10 or 12 bytes) and the header
 * length it announces. False when the first `size` bytes are not a whole,
 * valid prefix (parse_header then says why). */
static bool parse_prefix(const unsigned char *buf, size_t size, size_t *prefix,
                         size_t *header_len) {
    if (size < NPY_MAGIC_LEN + 2 || memcmp(buf, NPY_MAGIC, NPY_MAGIC_LEN) != 0) {
        return false;
    }
    unsigned major = buf[6], minor = buf[7];
    if (major < 1 || major > 3 || minor != 0) {
        return false;
    }
    *prefix = major == 1 ? 10 : 12;
    if (size < *prefix) {
        return false;
    }
    *header_len = major == 1 ? (size_t)buf[8] | (size_t)buf[9] << 8
                             : (size_t)buf[8] | (size_t)buf[9] << 8 |
                                   (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
    return true;
}

/* The prefix and the header dictionary, from the first `size` bytes of a
 * file (the whole file, or at least its prefix and header): fills h up to
 * data_offset and bytes. */
static bool parse_header(const unsigned char *buf, size_t size, const char *name, npy_header *h,
                         char *err, size_t err_size) {
    memset(h, 0, sizeof *h);
    if (size == 0) {
        set_err(err, err_size, name, "empty file (not a .npy file)");
        return false;
    }
    size_t cmp = size < NPY_MAGIC_LEN ? size : NPY_MAGIC_LEN;
    if (memcmp(buf, NPY_MAGIC, cmp) != 0) {
        set_err(err, err_size, name, "not a .npy file (bad magic; expected \\x93NUMPY)");
        return false;
    }
    if (size < NPY_MAGIC_LEN + 2) {
        set_err(err, err_size, name, "truncated .npy header (file has only %zu bytes)", size);
        return false;
    }
    unsigned major = buf[6], minor = buf[7];
    if (major < 1 || major > 3 || minor != 0) {
        set_err(err, err_size, name,
                "unsupported .npy format version %u.%u (supported: 1.0, 2.0, 3.0)", major, minor);
        return false;
    }
    size_t prefix, header_len;
    if (!parse_prefix(buf, size, &prefix, &header_len)) {
        set_err(err, err_size, name, "truncated .npy header (file has only %zu bytes)", size);
        return false;
    }
    if (header_len > size - prefix) {
        set_err(err, err_size, name,
                "header length %zu runs past the end of the file (%zu bytes after the "
                "%zu-byte prefix)",
                header_len, size - prefix, prefix);
        return false;
    }
    if (!parse_dict((const char *)buf + prefix, header_len, h, name, err, err_size) ||
        !array_byte_size(h->rank, h->dims, h->elem_size, name, &h->bytes, err, err_size)) {
        return false;
    }
    h->data_offset = prefix + header_len;
    return true;
}

/* The error for `actual` data bytes where h needs h->bytes (they differ). */
static void data_size_error(const npy_header *h, size_t actual, const char *name, char *err,
                            size_t err_size) {
    char shape[256];
    format_shape(h->rank, h->dims, shape, sizeof shape);
    if (actual < h->bytes) {
        set_err(err, err_size, name,
                "truncated data: shape %s of %s needs %zu bytes, the file has %zu", shape,
                plx_dtype_name(h->dtype), h->bytes, actual);
    } else {
        set_err(err, err_size, name,
                "%zu trailing bytes after the data: shape %s of %s needs %zu bytes, the "
                "file has %zu",
                actual - h->bytes, shape, plx_dtype_name(h->dtype), h->bytes, actual);
    }
}

/* The data after h's header in buf[0..size): exactly the bytes h
 * announces, and bools 0 or 1. */
static bool check_data(const npy_header *h, const unsigned char *buf, size_t size,
                       const char *name, char *err, size_t err_size) {
    size_t actual = size - h->data_offset;
    if (actual != h->bytes) {
        data_size_error(h, actual, name, err, err_size);
        return false;
    }
    if (h->dtype == PLX_DTYPE_BOOL) {
        const unsigned char *d = buf + h->data_offset;
        for (size_t i = 0; i < h->bytes; i++) {
            if (d[i] > 1) {
                set_err(err, err_size, name, "bool element %zu is %u (must be 0 or 1)", i, d[i]);
                return false;
            }
        }
    }
    return true;
}

/* A whole file in memory: the header, then exactly the data it announces. */
static bool parse_file(const unsigned char *buf, size_t size, const char *name, npy_header *h,
                       char *err, size_t err_size) {
    return parse_header(buf, size, name, h, err, err_size) &&
           check_data(h, buf, size, name, err, err_size);
}

static void fill_array(const npy_header *h, void *data, npy_array *out) {
    memset(out, 0, sizeof *out);
    out->dtype = h->dtype;
    out->rank = h->rank;
    memcpy(out->dims, h->dims, sizeof out->dims);
    out->data = data;
    out->bytes = h->bytes;
    if (h->swap) {
        swap_elements(data, h->bytes, h->elem_size);
    }
}

bool npy_parse(const void *buf, size_t size, const char *name, npy_array *out, char *err,
               size_t err_size) {
    if (out == NULL) {
        set_err(err, err_size, name, "no output array given");
        return false;
    }
    memset(out, 0, sizeof *out);
    if (buf == NULL && size > 0) {
        set_err(err, err_size, name, "no input buffer given");
        return false;
    }
    npy_header h;
    if (!parse_file(buf, size, name, &h, err, err_size)) {
        return false;
    }
    void *data = malloc(h.bytes > 0 ? h.bytes : 1);
    if (data == NULL) {
        set_err(err, err_size, name, "out of memory (%zu bytes of data)", h.bytes);
        return false;
    }
    if (h.bytes > 0) {
        memcpy(data, (const unsigned char *)buf + h.data_offset, h.bytes);
    }
    fill_array(&h, data, out);
    return true;
}

/* Reads until buf holds `want` bytes or the stream ends, growing buf
 * (*cap bytes) as it goes, by doubling from what is there: a stream that
 * ends early costs no more than it held. False on a read error or out of
 * memory (err set). */
static bool read_to(FILE *f, const char *path, unsigned char **buf, size_t *cap, size_t *have,
                    size_t want, char *err, size_t err_size) {
    while (*have < want) {
        if (*cap < want) {
            size_t next = *cap > want / 2 ? want : *cap * 2;
            unsigned char *bigger = realloc(*buf, next);
            if (!bigger) {
                set_err(err, err_size, path, "out of memory reading the file (%zu bytes)", next);
                return false;
            }
            *buf = bigger;
            *cap = next;
        }
        size_t got = fread(*buf + *have, 1, (*cap < want ? *cap : want) - *have, f);
        *have += got;
        if (got == 0 || ferror(f)) {
            if (ferror(f)) {
                set_err(err, err_size, path, "read error: %s", errno_text(errno));
                return false;
            }
            return true; /* EOF */
        }
    }
    return true;
}

/* Reads a .npy stream header first: the prefix, then the header it
 * announces, then the data the header's shape and dtype announce and one
 * byte more (to see trailing data), never more; so a device or pipe that
 * never ends (/dev/zero) is refused from its first bytes, and a header
 * that announces more data than arrives costs only what arrived. Regular
 * files, pipes and character devices alike; `st` is the stream's fstat
 * (st_size used for regular files only). */
static bool read_npy(FILE *f, const char *path, const struct stat *st, unsigned char **out_buf,
                     size_t *out_size, npy_header *h, char *err, size_t err_size) {
    size_t cap = 4096, have = 0;
    unsigned char *buf = malloc(cap);
    if (!buf) {
        set_err(err, err_size, path, "out of memory reading the file (%zu bytes)", cap);
        return false;
    }
    size_t prefix = 0, header_len = 0;
    bool ok = read_to(f, path, &buf, &cap, &have, 12, err, err_size);
    if (ok && parse_prefix(buf, have, &prefix, &header_len)) {
        ok = read_to(f, path, &buf, &cap, &have, prefix + header_len, err, err_size);
    }
    ok = ok && parse_header(buf, have, path, h, err, err_size);
    if (ok) {
        size_t end = h->data_offset + h->bytes; /* array_byte_size bounds h->bytes */
        bool regular = S_ISREG(st->st_mode);
        if (regular && (uintmax_t)st->st_size != (uintmax_t)end) {
            /* known from the size: no need to read a byte of it */
            size_t actual = (uintmax_t)st->st_size > h->data_offset
                                ? (size_t)((uintmax_t)st->st_size - h->data_offset)
                                : 0;
            data_size_error(h, actual, path, err, err_size);
            ok = false;
        } else if (end == SIZE_MAX) {
            set_err(err, err_size, path, "file too large");
            ok = false;
        } else {
            ok = read_to(f, path, &buf, &cap, &have, end + 1, err, err_size);
            if (ok && have > end) {
                char shape[256];
                format_shape(h->rank, h->dims, shape, sizeof shape);
                set_err(err, err_size, path,
                        "trailing bytes after the data: shape %s of %s needs %zu bytes, the "
                        "stream goes on",
                        shape, plx_dtype_name(h->dtype), h->bytes);
                ok = false;
            }
            ok = ok && check_data(h, buf, have, path, err, err_size);
        }
    }
    if (!ok) {
        free(buf);
        return false;
    }
    *out_buf = buf;
    *out_size = have;
    return true;
}

bool npy_read(const char *path, npy_array *out, char *err, size_t err_size) {
    if (out == NULL) {
        set_err(err, err_size, path, "no output array given");
        return false;
    }
    memset(out, 0, sizeof *out);
    if (path == NULL) {
        set_err(err, err_size, path, "no path given");
        return false;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        set_err(err, err_size, path, "cannot open: %s", errno_text(errno));
        return false;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        set_err(err, err_size, path, "cannot stat: %s", errno_text(errno));
        fclose(f);
        return false;
    }
    if (S_ISDIR(st.st_mode)) {
        set_err(err, err_size, path, "is a directory");
        fclose(f);
        return false;
    }
    unsigned char *buf;
    size_t size;
    npy_header h;
    bool ok = read_npy(f, path, &st, &buf, &size, &h, err, err_size);
    fclose(f);
    if (!ok) {
        return false;
    }
    /* Reuse the file buffer for the data rather than holding two copies. */
    memmove(buf, buf + h.data_offset, h.bytes);
    unsigned char *data = realloc(buf, h.bytes > 0 ? h.bytes : 1);
    if (data == NULL) {
        data = buf; /* shrinking failed: keep the larger block */
    }
    fill_array(&h, data, out);
    return true;
}

/* ---- writing ---- */

static const char *descr_for(plx_dtype dtype) {
    switch (dtype) {
    case PLX_DTYPE_FLOAT32: return "<f4";
    case PLX_DTYPE_FLOAT16: return "<f2";
    case PLX_DTYPE_INT8: return "|i1";
    case PLX_DTYPE_UINT8: return "|u1";
    case PLX_DTYPE_INT16: return "<i2";
    case PLX_DTYPE_INT32: return "<i4";
    case PLX_DTYPE_INT64: return "<i8";
    case PLX_DTYPE_BOOL: return "|b1";
    case PLX_DTYPE_FLOAT64: return "<f8";
    case PLX_DTYPE_UINT16: return "<u2";
    case PLX_DTYPE_UINT32: return "<u4";
    case PLX_DTYPE_UINT64: return "<u8";
    case PLX_DTYPE_BFLOAT16:
    case PLX_DTYPE_FLOAT8E4M3FN:
    case PLX_DTYPE_FLOAT8E4M3FNUZ:
    case PLX_DTYPE_FLOAT8E5M2:
    case PLX_DTYPE_FLOAT8E5M2FNUZ:
    case PLX_DTYPE_INT4:
    case PLX_DTYPE_UINT4:
    case PLX_DTYPE_INVALID: break;
    }
    return NULL;
}

static bool check_array(const npy_array *a, const char *path, size_t *out_elem, char *err,
                        size_t err_size) {
    if (a->dtype == PLX_DTYPE_BFLOAT16 || plx_dtype_is_float8(a->dtype)) {
        set_err(err, err_size, path, "%s has no NumPy dtype; convert the array to float32 to save it",
                plx_dtype_name(a->dtype));
        return false;
    }
    if (a->dtype == PLX_DTYPE_INT4 || a->dtype == PLX_DTYPE_UINT4) {
        set_err(err, err_size, path, "%s has no NumPy dtype; save it as %s (same bytes)",
                plx_dtype_name(a->dtype), a->dtype == PLX_DTYPE_INT4 ? "int8" : "uint8");
        return false;
    }
    if (descr_for(a->dtype) == NULL) {
        set_err(err, err_size, path, "invalid dtype %d", (int)a->dtype);
        return false;
    }
    if (a->rank > PLX_MAX_RANK) {
        set_err(err, err_size, path, "rank %" PRIu32 " exceeds the maximum of %d", a->rank,
                PLX_MAX_RANK);
        return false;
    }
    size_t elem = plx_dtype_size(a->dtype), bytes;
    if (!array_byte_size(a->rank, a->dims, elem, path, &bytes, err, err_size)) {
        return false;
    }
    if (bytes != a->bytes) {
        char shape[256];
        format_shape(a->rank, a->dims, shape, sizeof shape);
        set_err(err, err_size, path, "shape %s of %s needs %zu bytes, the array has %zu", shape,
                plx_dtype_name(a->dtype), bytes, a->bytes);
        return false;
    }
    if (a->data == NULL && bytes > 0) {
        set_err(err, err_size, path, "array data is NULL");
        return false;
    }
    if (a->dtype == PLX_DTYPE_BOOL) {
        const unsigned char *d = a->data;
        for (size_t i = 0; i < bytes; i++) {
            if (d[i] > 1) {
                set_err(err, err_size, path, "bool element %zu is %u (must be 0 or 1)", i, d[i]);
                return false;
            }
        }
    }
    *out_elem = elem;
    return true;
}

/* Builds prefix + dict + padding + '\n' exactly as NumPy's
 * _write_array_header does. Returns the total length, 0 if it does not fit
 * `out`. */
static size_t build_header(const npy_array *a, unsigned char *out, size_t out_size) {
    char dict[512], shape[256];
    format_shape(a->rank, a->dims, shape, sizeof shape);
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descr_for(a->dtype), shape);
    if (n < 0 || (size_t)n >= sizeof dict) {
        return 0;
    }
    size_t dict_len = (size_t)n;
    if (a->rank > 0) {
        char first[32];
        int digits = snprintf(first, sizeof first, "%" PRId64, a->dims[0]);
        size_t spare = digits > 0 && digits < NPY_GROWTH_AXIS_MAX_DIGITS
                           ? (size_t)(NPY_GROWTH_AXIS_MAX_DIGITS - digits)
                           : 0;
        if (dict_len + spare >= sizeof dict) {
            return 0;
        }
        memset(dict + dict_len, ' ', spare);
        dict_len += spare;
    }
    size_t hlen = dict_len + 1; /* + '\n' */
    unsigned major = 1;
    size_t prefix = 10;
    size_t pad = NPY_ALIGN - (prefix + hlen) % NPY_ALIGN;
    if (hlen + pad > 0xffff) {
        major = 2;
        prefix = 12;
        pad = NPY_ALIGN - (prefix + hlen) % NPY_ALIGN;
    }
    size_t total = prefix + hlen + pad;
    if (total > out_size) {
        return 0;
    }
    size_t field = hlen + pad;
    memcpy(out, NPY_MAGIC, NPY_MAGIC_LEN);
    out[6] = (unsigned char)major;
    out[7] = 0;
    out[8] = (unsigned char)(field & 0xff);
    out[9] = (unsigned char)(field >> 8 & 0xff);
    if (major == 2) {
        out[10] = (unsigned char)(field >> 16 & 0xff);
        out[11] = (unsigned char)(field >> 24 & 0xff);
    }
    memcpy(out + prefix, dict, dict_len);
    memset(out + prefix + dict_len, ' ', pad);
    out[total - 1] = '\n';
    return total;
}

static bool write_data(FILE *f, const npy_array *a, size_t elem) {
    if (a->bytes == 0) {
        return true;
    }
    if (elem == 1 || host_is_little_endian()) {
        return fwrite(a->data, 1, a->bytes, f) == a->bytes;
    }
    unsigned char chunk[4096]; /* a multiple of every element size */
    const unsigned char *src = a->data;
    for (size_t off = 0; off < a->bytes; off += sizeof chunk) {
        size_t n = a->bytes - off < sizeof chunk ? a->bytes - off : sizeof chunk;
        memcpy(chunk, src + off, n);
        swap_elements(chunk, n, elem);
        if (fwrite(chunk, 1, n, f) != n) {
            return false;
        }
    }
    return true;
}

bool npy_write(const char *path, const npy_array *array, char *err, size_t err_size) {
    if (path == NULL) {
        set_err(err, err_size, path, "no path given");
        return false;
    }
    if (array == NULL) {
        set_err(err, err_size, path, "no array given");
        return false;
    }
    size_t elem;
    if (!check_array(array, path, &elem, err, err_size)) {
        return false;
    }
    unsigned char header[1024];
    size_t header_len = build_header(array, header, sizeof header);
    if (header_len == 0) {
        set_err(err, err_size, path, "internal error: header too long");
        return false;
    }
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        set_err(err, err_size, path, "cannot create: %s", errno_text(errno));
        return false;
    }
    bool ok = fwrite(header, 1, header_len, f) == header_len && write_data(f, array, elem);
    int saved = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        set_err(err, err_size, path, "write error: %s", errno_text(saved));
        remove(path);
        return false;
    }
    return true;
}

void npy_free(npy_array *array) {
    if (array == NULL) {
        return;
    }
    free(array->data);
    memset(array, 0, sizeof *array);
}
