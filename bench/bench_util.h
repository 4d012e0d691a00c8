/* What the benchmark programs that run networks share: a monotonic clock,
 * the median, and the runtime and backend list from their common options
 * (--backend-path, --backends, --option ID.KEY=VALUE). */
#ifndef PLEXUS_BENCH_UTIL_H
#define PLEXUS_BENCH_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include <plexus/plexus.h>

/* CLOCK_MONOTONIC in nanoseconds. */
double bench_now_ns(void);

/* The median of v[0..n-1], n >= 1; sorts v. */
double bench_median(double *v, size_t n);

/* "ID.KEY=VALUE" split in place into *out (pointers into text); false when
 * malformed. */
bool bench_parse_option(char *text, plx_backend_option *out);

/* "a,b,c" copied into buf (size bytes) and split: up to max ids into
 * ids; the count (0 for a NULL list). */
size_t bench_split_ids(const char *list, char *buf, size_t size, const char **ids, size_t max);

/* A runtime that searches `paths` only (no environment, no installed
 * directory), or the build's cpu_ref when path_count is 0, with the
 * backend options given. */
plx_status bench_runtime(const char *const *paths, size_t path_count,
                         const plx_backend_option *options, size_t option_count,
                         plx_runtime **out_runtime);

#endif /* PLEXUS_BENCH_UTIL_H */
