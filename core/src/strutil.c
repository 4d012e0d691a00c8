/* Small string and container helpers for the core. */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

size_t plxi_hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    }
    return (size_t)h;
}

char *plxi_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy) {
        memcpy(copy, s, n);
    }
    return copy;
}

char *plxi_vasprintf(const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        return NULL;
    }
    char *buf = malloc((size_t)n + 1);
    if (buf) {
        vsnprintf(buf, (size_t)n + 1, fmt, ap);
    }
    return buf;
}

char *plxi_asprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = plxi_vasprintf(fmt, ap);
    va_end(ap);
    return s;
}

char *plxi_sanitize(const char *s, size_t max_len) {
    size_t len = strnlen(s, max_len);
    char *out = malloc(len * 4 + 1);
    if (!out) {
        return NULL;
    }
    char *p = out;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            *p++ = (char)c;
        } else {
            p += sprintf(p, "\\x%02x", c);
        }
    }
    *p = '\0';
    return out;
}

bool plxi_ptr_vec_push(plxi_ptr_vec *vec, void *item) {
    if (vec->count == vec->capacity) {
        size_t cap = vec->capacity ? vec->capacity * 2 : 8;
        void **items = realloc(vec->items, cap * sizeof *items);
        if (!items) {
            return false;
        }
        vec->items = items;
        vec->capacity = cap;
    }
    vec->items[vec->count++] = item;
    return true;
}

void plxi_ptr_vec_release(plxi_ptr_vec *vec) {
    free(vec->items);
    vec->items = NULL;
    vec->count = vec->capacity = 0;
}
