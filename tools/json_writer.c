#include "json_writer.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "text_clean.h"

void json_init(json_writer *w, FILE *out) {
    w->out = out;
    w->depth = 0;
    w->first[0] = true;
    w->after_key = false;
}

/* Emits the separator a new value needs at the current position. */
static void before_value(json_writer *w) {
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->depth > 0 && !w->first[w->depth]) {
        fputc(',', w->out);
    }
    w->first[w->depth] = false;
}

static void open(json_writer *w, char c) {
    before_value(w);
    fputc(c, w->out);
    if (w->depth + 1 < JSON_MAX_DEPTH) {
        w->depth++;
    }
    w->first[w->depth] = true;
}

static void close_(json_writer *w, char c) {
    fputc(c, w->out);
    if (w->depth > 0) {
        w->depth--;
    }
    if (w->depth == 0) {
        fputc('\n', w->out);
    }
}

void json_begin_object(json_writer *w) { open(w, '{'); }
void json_end_object(json_writer *w) { close_(w, '}'); }
void json_begin_array(json_writer *w) { open(w, '['); }
void json_end_array(json_writer *w) { close_(w, ']'); }

/* A JSON string of untrusted text, always valid UTF-8: control characters
 * (C0, DEL and C1) escaped as \uXXXX, each byte that does not start a valid
 * UTF-8 sequence written as U+FFFD (README.md, `--json`). */
static void write_escaped(FILE *out, const char *s) {
    fputc('"', out);
    const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
    while (p < end) {
        uint32_t cp;
        bool incomplete;
        size_t n = utf8_sequence(p, (size_t)(end - p), &cp, &incomplete);
        if (n == 0) {
            fputs("\\ufffd", out);
            p++;
            continue;
        }
        switch (cp) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        case '\b': fputs("\\b", out); break;
        case '\f': fputs("\\f", out); break;
        default:
            if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
                fprintf(out, "\\u%04x", (unsigned)cp);
            } else {
                fwrite(p, 1, n, out);
            }
        }
        p += n;
    }
    fputc('"', out);
}

void json_key(json_writer *w, const char *key) {
    before_value(w);
    write_escaped(w->out, key);
    fputc(':', w->out);
    w->after_key = true;
}

void json_string(json_writer *w, const char *s) {
    if (!s) {
        json_null(w);
        return;
    }
    before_value(w);
    write_escaped(w->out, s);
}

void json_int(json_writer *w, int64_t v) {
    before_value(w);
    fprintf(w->out, "%" PRId64, v);
}

void json_double(json_writer *w, double v) {
    if (!isfinite(v)) {
        json_null(w); /* JSON has no NaN or infinity */
        return;
    }
    before_value(w);
    fprintf(w->out, "%.9g", v);
}

void json_bool(json_writer *w, bool v) {
    before_value(w);
    fputs(v ? "true" : "false", w->out);
}

void json_null(json_writer *w) {
    before_value(w);
    fputs("null", w->out);
}
