/* Logging: a level threshold and a sink, fixed when the runtime is created. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

static const char *const level_names[] = {"error", "warn", "info", "debug"};

PLX_API const char *plx_log_level_name(plx_log_level level) {
    return (unsigned)level <= PLX_LOG_DEBUG ? level_names[level] : "unknown";
}

PLX_API bool plx_log_level_parse(const char *text, plx_log_level *out_level) {
    if (!text || !out_level) {
        return false;
    }
    for (int i = 0; i <= PLX_LOG_DEBUG; i++) {
        if (strcasecmp(text, level_names[i]) == 0) {
            *out_level = (plx_log_level)i;
            return true;
        }
    }
    if (strcasecmp(text, "warning") == 0) {
        *out_level = PLX_LOG_WARN;
        return true;
    }
    return false;
}

static void stderr_sink(void *user_data, plx_log_level level, const char *source,
                        const char *message) {
    (void)user_data;
    /* One fprintf per line keeps lines from concurrent threads whole. */
    fprintf(stderr, "plexus[%s] %s: %s\n", source, plx_log_level_name(level), message);
}

void plxi_logger_init(plxi_logger *logger, int level, plx_log_fn fn, void *user_data) {
    logger->level = PLX_LOG_WARN;
    logger->fn = fn ? fn : stderr_sink;
    logger->user_data = fn ? user_data : NULL;
    if (level >= PLX_LOG_ERROR && level <= PLX_LOG_DEBUG) {
        logger->level = (plx_log_level)level;
        return;
    }
    /* PLEXUS_LOG only changes verbosity, so it is honoured even when the
     * application asked to ignore the backend environment variables. */
    const char *env = secure_getenv("PLEXUS_LOG");
    plx_log_level parsed;
    if (env && plx_log_level_parse(env, &parsed)) {
        logger->level = parsed;
    } else if (env && *env) {
        /* shown escaped and cut: the environment is not ours to print raw */
        char *shown = plxi_sanitize(env, 32);
        plxi_log(logger, PLX_LOG_WARN, "plexus",
                 "PLEXUS_LOG='%s%s' is not one of error, warn, info, debug; using warn",
                 shown ? shown : "?", strlen(env) > 32 ? "..." : "");
        free(shown);
    }
}

void plxi_vlog(const plxi_logger *logger, plx_log_level level, const char *source,
               const char *fmt, va_list ap) {
    if (!plxi_log_enabled(logger, level)) {
        return;
    }
    char stack[512];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(stack, sizeof stack, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        return;
    }
    if ((size_t)n < sizeof stack) {
        logger->fn(logger->user_data, level, source, stack);
        return;
    }
    char *heap = plxi_vasprintf(fmt, ap);
    logger->fn(logger->user_data, level, source, heap ? heap : stack);
    free(heap);
}

void plxi_log(const plxi_logger *logger, plx_log_level level, const char *source,
              const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    plxi_vlog(logger, level, source, fmt, ap);
    va_end(ap);
}
