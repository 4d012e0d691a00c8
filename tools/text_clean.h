/* What the plexus CLI prints of text it does not control (model, node and
 * tensor names, producer strings, plug-in file names, capability values,
 * backend log lines, environment values) reaches a terminal or a log
 * collector: tools/text_clean.c makes it safe to show. */
#ifndef PLEXUS_TOOLS_TEXT_CLEAN_H
#define PLEXUS_TOOLS_TEXT_CLEAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The length (1 to 4) of the valid UTF-8 sequence that starts at p[0], of
 * at most `avail` bytes, writing its code point to *cp; 0 when the bytes
 * there are not one (RFC 3629: no overlong forms, surrogates or code points
 * past U+10FFFF). *incomplete is set when they are a valid sequence's first
 * `avail` bytes only (more may follow). */
size_t utf8_sequence(const unsigned char *p, size_t avail, uint32_t *cp, bool *incomplete);

/* A stream that writes to `raw` what is written to it, cleaned: every
 * control character but newline and tab (and carriage return when
 * keep_cr), C1 controls included, and every byte that is not part of valid
 * UTF-8 become the four characters \xNN; valid UTF-8 passes as is, also
 * when a write cuts a sequence (its start is held until the next write or
 * fclose). Its writes flush `raw`, and fail when `raw` fails. fclose closes
 * it, not `raw`. NULL when out of memory. */
FILE *text_clean_open(FILE *raw, bool keep_cr);

/* Replaces the process's stdout and stderr (glibc lets a program set them)
 * by text_clean_open streams over them (carriage return kept on stderr,
 * for progress lines; stdout line-buffered on a terminal). Everything
 * the process prints then goes through it: the CLI's own output, the core's
 * log lines, a plug-in's printf. False (nothing replaced) when memory runs
 * out for a stream (fopencookie's only failure). */
bool text_clean_std_streams(void);

#endif /* PLEXUS_TOOLS_TEXT_CLEAN_H */
