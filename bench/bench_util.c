/* bench_util.h: helpers of the benchmark programs. */
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, size_t n) {
    qsort(v, n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

bool bench_parse_option(char *text, plx_backend_option *out) {
    char *dot = strchr(text, '.'), *eq = strchr(text, '=');
    if (!dot || !eq || eq < dot || dot == text || eq == dot + 1) {
        return false;
    }
    *dot = '\0';
    *eq = '\0';
    *out = (plx_backend_option){text, dot + 1, eq + 1};
    return true;
}

size_t bench_split_ids(const char *list, char *buf, size_t size, const char **ids, size_t max) {
    size_t n = 0;
    if (!list) {
        return 0;
    }
    snprintf(buf, size, "%s", list);
    for (char *tok = strtok(buf, ","); tok && n < max; tok = strtok(NULL, ",")) {
        ids[n++] = tok;
    }
    return n;
}

plx_status bench_runtime(const char *const *paths, size_t path_count,
                         const plx_backend_option *options, size_t option_count,
                         plx_runtime **out_runtime) {
    plx_runtime_options ro;
    plx_runtime_options_init(&ro);
    ro.ignore_environment = true;
    ro.skip_default_dir = true;
    static const char *const build_cpu_ref[] = {BENCH_CPU_REF_DIR};
    ro.search_paths = path_count ? paths : build_cpu_ref;
    ro.search_path_count = path_count ? path_count : 1;
    ro.backend_options = options;
    ro.backend_option_count = option_count;
    return plx_runtime_create(&ro, out_runtime);
}
