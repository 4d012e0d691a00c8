/* A small streaming JSON writer for the CLI's machine-readable output. */
#ifndef PLEXUS_TOOLS_JSON_WRITER_H
#define PLEXUS_TOOLS_JSON_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 32

/* Writes one JSON document to `out`. Commas are placed automatically: each
 * value inside an array, or each key inside an object, is preceded by one
 * when it is not the first. The writer does not check the document's
 * shape beyond that; callers nest begin/end calls correctly. */
typedef struct json_writer {
    FILE *out;
    int depth;
    bool first[JSON_MAX_DEPTH];
    bool after_key;
} json_writer;

void json_init(json_writer *w, FILE *out);
void json_begin_object(json_writer *w);
void json_end_object(json_writer *w);
void json_begin_array(json_writer *w);
void json_end_array(json_writer *w);
void json_key(json_writer *w, const char *key);
void json_string(json_writer *w, const char *s); /* NULL writes null */
void json_int(json_writer *w, int64_t v);
void json_double(json_writer *w, double v); /* %.9g; NaN and infinities write null */
void json_bool(json_writer *w, bool v);
void json_null(json_writer *w);

#endif
