/* gpu_opencl: the program holding every kernel, built once per instance at
 * the first factory, and its on-disk cache of compiled binaries (keyed by
 * device, driver, source and options, so a stale binary is never used). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ocl_backend.h"

/* A program cache file larger than this is not believed. */
#define GPU_OPENCL_MAX_CACHE_FILE ((size_t)512 * 1024 * 1024)

/* FNV-1a, 64 bits: the program cache's key and its files' checksum. */
#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
static uint64_t fnv1a(uint64_t h, const void *data, size_t size) {
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* A string and its terminating NUL, so that consecutive fields stay apart. */
static uint64_t fnv1a_str(uint64_t h, const char *s) {
    return fnv1a(h, s, strlen(s) + 1);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Appends printf output to buf (size bytes, NUL-terminated), truncating
 * with "..." when full. */
uint64_t ocl_program_key(const plx_backend *b) {
    uint64_t h = FNV_OFFSET;
    h = fnv1a_str(h, "gpu_opencl program cache 1");
    h = fnv1a_str(h, b->device_name);
    h = fnv1a_str(h, b->driver_version);
    h = fnv1a_str(h, b->platform_name);
    h = fnv1a_str(h, b->platform_version);
    h = fnv1a_str(h, b->device_version);
    h = fnv1a_str(h, b->build_options);
    return fnv1a_str(h, ocl_program_source());
}

/* ------------------------------------------------------------------------ */
/* The program and its cache                                                  */
/* ------------------------------------------------------------------------ */

/* Cache file: this header, then `size` bytes of CL_PROGRAM_BINARIES. */
#define CACHE_MAGIC "PLXOCLB1"
typedef struct cache_header {
    char magic[8];
    uint64_t key;
    uint64_t size;
    uint64_t checksum; /* FNV-1a of the binary */
} cache_header;

static void cache_path(const plx_backend *b, char *buf, size_t size) {
    snprintf(buf, size, "%s/gpu_opencl-%016" PRIx64 ".bin", b->cache_dir, b->program_key);
}

/* Reads a cache file whole into host memory; NULL with a reason. */
static unsigned char *read_cache_file(const plx_host *host, const char *path, size_t *out_size,
                                      char *why, size_t why_size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_size, "%s", errno == ENOENT ? "no cache file" : strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(cache_header) ||
        (uint64_t)st.st_size > GPU_OPENCL_MAX_CACHE_FILE) {
        snprintf(why, why_size, "not a regular file of a plausible size");
        close(fd);
        return NULL;
    }
    size_t size = (size_t)st.st_size;
    unsigned char *data = host->alloc(host, size, 0);
    if (!data) {
        snprintf(why, why_size, "out of memory reading %zu bytes", size);
        close(fd);
        return NULL;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, data + got, size - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            snprintf(why, why_size, "short read: %s", n < 0 ? strerror(errno) : "end of file");
            host->free(host, data);
            close(fd);
            return NULL;
        }
        got += (size_t)n;
    }
    close(fd);
    *out_size = size;
    return data;
}

/* The program from the cache file, or NULL with why (a missing file, a
 * file for another key, a damaged one, a binary the driver refuses). */
static cl_program load_cached_program(plx_backend *b, const char *path, char *why,
                                      size_t why_size) {
    const plx_host *host = b->host;
    size_t size = 0;
    unsigned char *data = read_cache_file(host, path, &size, why, why_size);
    if (!data) {
        return NULL;
    }
    cache_header h;
    memcpy(&h, data, sizeof h);
    cl_program program = NULL;
    if (memcmp(h.magic, CACHE_MAGIC, sizeof h.magic) != 0) {
        snprintf(why, why_size, "not a gpu_opencl program cache file");
    } else if (h.key != b->program_key) {
        snprintf(why, why_size, "written for another device, driver or source");
    } else if (h.size != size - sizeof h || h.size == 0) {
        snprintf(why, why_size, "truncated or padded (%zu bytes of binary, header says %" PRIu64
                 ")", size - sizeof h, h.size);
    } else if (fnv1a(FNV_OFFSET, data + sizeof h, (size_t)h.size) != h.checksum) {
        snprintf(why, why_size, "checksum mismatch (damaged)");
    } else {
        const unsigned char *bin = data + sizeof h;
        size_t bin_size = (size_t)h.size;
        cl_int status = CL_SUCCESS, rc = CL_SUCCESS;
        char nb[32];
        program = clCreateProgramWithBinary(b->dev.context, 1, &b->dev.device, &bin_size, &bin,
                                            &status, &rc);
        if (rc != CL_SUCCESS || status != CL_SUCCESS || !program) {
            snprintf(why, why_size, "clCreateProgramWithBinary: %s",
                     ocl_error_name(rc != CL_SUCCESS ? rc : status, nb, sizeof nb));
            if (program) {
                clReleaseProgram(program);
            }
            program = NULL;
        } else {
            rc = clBuildProgram(program, 1, &b->dev.device, b->build_options, NULL, NULL);
            if (rc != CL_SUCCESS) {
                snprintf(why, why_size, "clBuildProgram(binary): %s",
                         ocl_error_name(rc, nb, sizeof nb));
                clReleaseProgram(program);
                program = NULL;
            }
        }
    }
    host->free(host, data);
    return program;
}

static bool write_all(int fd, const void *data, size_t size) {
    const unsigned char *p = data;
    while (size) {
        ssize_t n = write(fd, p, size);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        p += n;
        size -= (size_t)n;
    }
    return true;
}

/* mkdir -p, for the cache directory. */
static bool make_dirs(const char *path) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) {
        return false;
    }
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
                return false;
            }
            buf[i] = c;
        }
    }
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Writes the program's binary to the cache, atomically (a temporary file in
 * the same directory, then rename), so that a reader never sees half a
 * file. Failures are logged; the program works without its cache. */
static void save_cached_program(plx_backend *b, cl_program program, const char *path) {
    const plx_host *host = b->host;
    size_t size = 0;
    cl_int rc = clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL);
    char nb[32];
    if (rc != CL_SUCCESS || size == 0) {
        host->log(host, PLX_LOG_WARN, "gpu_opencl: program cache: no binary to save (%s)",
                  rc != CL_SUCCESS ? ocl_error_name(rc, nb, sizeof nb) : "size 0");
        return;
    }
    unsigned char *bin = host->alloc(host, size, 0);
    if (!bin) {
        host->log(host, PLX_LOG_WARN, "gpu_opencl: program cache: out of memory");
        return;
    }
    unsigned char *ptrs[1] = {bin};
    rc = clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof ptrs, ptrs, NULL);
    if (rc != CL_SUCCESS) {
        host->log(host, PLX_LOG_WARN, "gpu_opencl: program cache: clGetProgramInfo: %s",
                  ocl_error_name(rc, nb, sizeof nb));
        host->free(host, bin);
        return;
    }
    cache_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, CACHE_MAGIC, sizeof h.magic);
    h.key = b->program_key;
    h.size = size;
    h.checksum = fnv1a(FNV_OFFSET, bin, size);

    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/.gpu_opencl-%016" PRIx64 ".XXXXXX", b->cache_dir,
             b->program_key);
    int fd = -1;
    if (!make_dirs(b->cache_dir) || (fd = mkstemp(tmp)) < 0) {
        host->log(host, PLX_LOG_WARN, "gpu_opencl: program cache: cannot write in '%s': %s",
                  b->cache_dir, strerror(errno));
        host->free(host, bin);
        return;
    }
    bool ok = write_all(fd, &h, sizeof h) && write_all(fd, bin, size) && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    /* mkstemp makes the file 0600; a cache is as readable as its directory. */
    chmod(tmp, 0644);
    if (!ok || rename(tmp, path) != 0) {
        host->log(host, PLX_LOG_WARN, "gpu_opencl: program cache: cannot write '%s': %s", path,
                  strerror(errno));
        unlink(tmp);
    } else {
        host->log(host, PLX_LOG_INFO, "gpu_opencl: program cache: wrote %s (%zu bytes)", path,
                  size);
    }
    host->free(host, bin);
}

/* clBuildProgram's failure, with the build log (R-12 (4)). */
static plx_status build_failure(const plx_backend *b, cl_program program, cl_int rc) {
    const plx_host *host = b->host;
    size_t size = 0;
    char *log = NULL;
    if (clGetProgramBuildInfo(program, b->dev.device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) ==
            CL_SUCCESS &&
        size > 0) {
        log = host->alloc(host, size + 1, 0);
        if (log && clGetProgramBuildInfo(program, b->dev.device, CL_PROGRAM_BUILD_LOG, size, log,
                                         NULL) == CL_SUCCESS) {
            log[size] = '\0';
        } else if (log) {
            log[0] = '\0';
        }
    }
    char nb[32];
    /* The log may be long; the first 8 KiB say what went wrong. */
    plx_status s = host->status_create(host, PLX_INTERNAL,
                                       "clBuildProgram(%s, device '%s'): %s; build log:\n%.8192s",
                                       b->build_options, b->device_name,
                                       ocl_error_name(rc, nb, sizeof nb),
                                       log && log[0] ? log : "(empty)");
    host->free(host, log);
    return s;
}

/* Builds (or loads) the program; called with program_lock held. */
plx_status ocl_build_program(plx_backend *b) {
    const plx_host *host = b->host;
    double t0 = now_ms();
    char path[4200] = "";
    if (b->cache_dir) {
        char why[256];
        cache_path(b, path, sizeof path);
        cl_program p = load_cached_program(b, path, why, sizeof why);
        if (p) {
            b->program = p;
            host->log(host, PLX_LOG_INFO,
                      "gpu_opencl: program loaded from the cache file %s in %.1f ms", path,
                      now_ms() - t0);
            return NULL;
        }
        host->log(host, strstr(why, "no cache file") ? PLX_LOG_INFO : PLX_LOG_WARN,
                  "gpu_opencl: program cache: %s: %s; building from source", path, why);
    }
    const char *src = ocl_program_source();
    cl_int rc = CL_SUCCESS;
    cl_program p = clCreateProgramWithSource(b->dev.context, 1, &src, NULL, &rc);
    if (rc != CL_SUCCESS || !p) {
        return ocl_cl_failure(host, rc, PLX_INTERNAL, "clCreateProgramWithSource(%zu bytes)",
                          strlen(src));
    }
    rc = clBuildProgram(p, 1, &b->dev.device, b->build_options, NULL, NULL);
    if (rc != CL_SUCCESS) {
        plx_status s = build_failure(b, p, rc);
        clReleaseProgram(p);
        return s;
    }
    b->program = p;
    host->log(host, PLX_LOG_INFO, "gpu_opencl: program built from source (%s) in %.1f ms",
              b->build_options, now_ms() - t0);
    if (b->cache_dir) {
        save_cached_program(b, p, path);
    }
    return NULL;
}

