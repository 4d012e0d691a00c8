/* Clean text output for the plexus CLI (text_clean.h). */
#include "text_clean.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t utf8_sequence(const unsigned char *p, size_t avail, uint32_t *cp, bool *incomplete) {
    *incomplete = false;
    if (avail == 0) {
        return 0;
    }
    unsigned char b = p[0];
    size_t n;
    uint32_t v, min;
    if (b < 0x80) {
        *cp = b;
        return 1;
    } else if (b >= 0xc2 && b <= 0xdf) {
        n = 2, v = b & 0x1fu, min = 0x80;
    } else if (b >= 0xe0 && b <= 0xef) {
        n = 3, v = b & 0x0fu, min = 0x800;
    } else if (b >= 0xf0 && b <= 0xf4) {
        n = 4, v = b & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    size_t have = avail < n ? avail : n;
    for (size_t i = 1; i < have; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0;
        }
        v = v << 6 | (p[i] & 0x3fu);
    }
    if (have < n) {
        /* the prefix is valid so far; overlong and range checks of the
         * second byte would refuse some prefixes early, the whole check
         * below refuses them once complete */
        *incomplete = true;
        return 0;
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
        return 0;
    }
    *cp = v;
    return n;
}

typedef struct clean_stream {
    FILE *raw;
    bool keep_cr;
    bool owned; /* malloc'd by text_clean_open, freed at close */
    unsigned char pending[3]; /* the start of a sequence cut by a write */
    size_t pending_len;
} clean_stream;

static void put_escaped(FILE *raw, unsigned char b) {
    fprintf(raw, "\\x%02x", b);
}

/* Writes data[0..n) cleaned; returns how many bytes at the end are the
 * valid start of a sequence to complete with the next write (held back),
 * unless `final`. */
static size_t clean_write(clean_stream *s, const unsigned char *data, size_t n, bool final) {
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        bool incomplete;
        size_t len = utf8_sequence(data + i, n - i, &cp, &incomplete);
        if (len == 0 && incomplete && !final) {
            return n - i;
        }
        if (len == 0) {
            put_escaped(s->raw, data[i]);
            i++;
            continue;
        }
        bool control = cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
        if (control && cp != '\n' && cp != '\t' && !(cp == '\r' && s->keep_cr)) {
            for (size_t k = 0; k < len; k++) {
                put_escaped(s->raw, data[i + k]);
            }
        } else {
            fwrite(data + i, 1, len, s->raw);
        }
        i += len;
    }
    return 0;
}

static ssize_t clean_cookie_write(void *cookie, const char *buf, size_t size) {
    clean_stream *s = cookie;
    const unsigned char *data = (const unsigned char *)buf;
    size_t done = 0;
    if (s->pending_len) {
        /* the held bytes and the next few: enough to finish that sequence */
        unsigned char tmp[sizeof s->pending + 4];
        size_t take = size < 4 ? size : 4, len = s->pending_len + take;
        memcpy(tmp, s->pending, s->pending_len);
        memcpy(tmp + s->pending_len, data, take);
        size_t held = clean_write(s, tmp, len, false);
        if (held <= take) {
            s->pending_len = 0;
            done = take - held; /* the held bytes are buf's: read again below */
        } else {
            memmove(s->pending, tmp + len - held, held);
            s->pending_len = held;
            done = size;
        }
    }
    size_t held = clean_write(s, data + done, size - done, false);
    if (held) {
        memcpy(s->pending, data + size - held, held);
        s->pending_len = held;
    }
    /* a write error of the real stream is this one's: fflush(stdout) and
     * the exit status see it (errno is the write's) */
    if (fflush(s->raw) != 0 || ferror(s->raw)) {
        return -1;
    }
    return (ssize_t)size;
}

static int clean_cookie_close(void *cookie) {
    clean_stream *s = cookie;
    if (s->pending_len) {
        clean_write(s, s->pending, s->pending_len, true);
    }
    int rc = fflush(s->raw) == 0 ? 0 : -1;
    if (s->owned) {
        free(s);
    }
    return rc;
}

static FILE *open_on(clean_stream *s, FILE *raw, bool keep_cr, bool owned) {
    *s = (clean_stream){.raw = raw, .keep_cr = keep_cr, .owned = owned};
    cookie_io_functions_t io = {.write = clean_cookie_write, .close = clean_cookie_close};
    return fopencookie(s, "w", io);
}

FILE *text_clean_open(FILE *raw, bool keep_cr) {
    clean_stream *s = malloc(sizeof *s);
    FILE *f = s ? open_on(s, raw, keep_cr, true) : NULL;
    if (!f) {
        free(s);
    }
    return f;
}

bool text_clean_std_streams(void) {
    /* static: the streams live as long as the process, and glibc keeps
     * their state where a leak checker does not look for it */
    static clean_stream std_out, std_err;
    FILE *out = open_on(&std_out, stdout, false, false);
    FILE *err = out ? open_on(&std_err, stderr, true, false) : NULL;
    if (!out || !err) {
        if (out) {
            fclose(out);
        }
        return false;
    }
    setvbuf(out, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
    setvbuf(err, NULL, _IOLBF, BUFSIZ);
    stdout = out;
    stderr = err;
    return true;
}
