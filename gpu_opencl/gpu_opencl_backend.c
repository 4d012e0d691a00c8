/* gpu_opencl: the OpenCL backend's plumbing, as a plug-in built with the
 * SDK and the OpenCL ICD loader (never a vendor library directly).
 *
 * What lives here: the entry point, descriptor, options and capabilities;
 * finding the platforms and devices and choosing one; the context and the
 * program (built once per instance, at the first factory, from
 * ocl_program_source() or from the on-disk program cache); factories, tensor
 * handles on cl_mem buffers, and workloads that run the plans the operators
 * build (ocl_ops.h), each on its own in-order command queue.
 *
 * Threads (R-14, R-18 (9), R-20): the instance's device description is
 * read-only after create; the program is built once under a lock and then
 * only read. Every workload owns its queue and its plan's kernels (the one
 * OpenCL call that is not thread-safe on a shared object is clSetKernelArg),
 * so workloads of different working memories run concurrently. Maps go
 * through one queue per factory, which OpenCL makes safe to share; a
 * handle's map state is under the handle's lock, since a constant's handle
 * may be mapped by several executions at once. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <plexus/backend.h>

#include "ocl_ops.h"

#define GPU_OPENCL_ID "gpu_opencl"

/* The least local memory the operators' kernels are written for. */
#define GPU_OPENCL_MIN_LOCAL_MEM (16u * 1024u)
/* The most devices looked at (every platform together). */
#define GPU_OPENCL_MAX_DEVICES 64
/* The largest alignment an import may ask for: the host's planned places are
 * 64-byte aligned and a 1.1 backend cannot ask for more (R-21 (5)). */
#define GPU_OPENCL_MAX_IMPORT_ALIGNMENT 64
/* A program cache file larger than this is not believed. */
#define GPU_OPENCL_MAX_CACHE_FILE ((size_t)512 * 1024 * 1024)

/* ------------------------------------------------------------------------ */
/* Small helpers                                                              */
/* ------------------------------------------------------------------------ */

static char ascii_lower(char c) {
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* Case-insensitive (ASCII) substring test. */
static bool contains_nocase(const char *haystack, const char *needle) {
    size_t n = strlen(needle);
    for (const char *h = haystack; *h; h++) {
        size_t i = 0;
        while (i < n && h[i] && ascii_lower(h[i]) == ascii_lower(needle[i])) {
            i++;
        }
        if (i == n) {
            return true;
        }
    }
    return n == 0;
}

static bool equals_nocase(const char *a, const char *b) {
    while (*a && *b && ascii_lower(*a) == ascii_lower(*b)) {
        a++;
        b++;
    }
    return *a == '\0' && *b == '\0';
}

/* A decimal index ("0", "12"); false for anything else, which is then a
 * name. */
static bool parse_index(const char *s, unsigned *out) {
    if (!*s || strlen(s) > 6) {
        return false;
    }
    unsigned v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') {
            return false;
        }
        v = v * 10u + (unsigned)(*p - '0');
    }
    *out = v;
    return true;
}

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
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void append(char *buf, size_t size, const char *fmt, ...) {
    size_t len = strlen(buf);
    if (len + 1 >= size) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n >= size - len && size > 4) {
        memcpy(buf + size - 4, "...", 4);
    }
}

/* "clCreateBuffer(64 bytes): CL_MEM_OBJECT_ALLOCATION_FAILURE": an OpenCL
 * failure as a status naming the call and the error (R-12 (4)). Running out
 * of memory keeps its own code. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static plx_status cl_failure(const plx_host *host, cl_int rc, plx_status_code code,
                             const char *call_fmt, ...) {
    char call[256], nb[32];
    va_list ap;
    va_start(ap, call_fmt);
    vsnprintf(call, sizeof call, call_fmt, ap);
    va_end(ap);
    if (rc == CL_OUT_OF_HOST_MEMORY || rc == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
        rc == CL_OUT_OF_RESOURCES) {
        code = PLX_OUT_OF_MEMORY;
    }
    return host->status_create(host, code, "%s: %s", call, ocl_error_name(rc, nb, sizeof nb));
}

static const char *device_type_name(cl_device_type t) {
    if (t & CL_DEVICE_TYPE_GPU) {
        return "gpu";
    }
    if (t & CL_DEVICE_TYPE_ACCELERATOR) {
        return "accelerator";
    }
    if (t & CL_DEVICE_TYPE_CPU) {
        return "cpu";
    }
    return "other";
}

/* ------------------------------------------------------------------------ */
/* Platforms and devices                                                      */
/* ------------------------------------------------------------------------ */

/* One device seen while enumerating, with what makes it usable or not. */
typedef struct seen_device {
    cl_platform_id platform;
    cl_device_id device;
    cl_uint platform_index;
    cl_uint index_in_platform;
    cl_device_type type;
    char name[256];
    char platform_name[256];
    char platform_version[256];
    char version[256];   /* CL_DEVICE_VERSION */
    char c_version[128]; /* CL_DEVICE_OPENCL_C_VERSION */
    char driver[256];    /* CL_DRIVER_VERSION */
    cl_ulong local_mem;
    cl_uint base_align_bits;
    size_t max_work_group_size;
    bool has_fp16;
    char problem[192]; /* empty: usable */
} seen_device;

typedef struct device_list {
    seen_device *items; /* from host->alloc */
    size_t count;
    cl_uint platform_count;
    char platform_names[8][128]; /* the first few, for messages */
} device_list;

static void device_list_free(const plx_host *host, device_list *l) {
    host->free(host, l->items);
    l->items = NULL;
    l->count = 0;
}

static void device_string(cl_device_id d, cl_device_info what, char *buf, size_t size) {
    buf[0] = '\0';
    if (clGetDeviceInfo(d, what, size - 1, buf, NULL) != CL_SUCCESS) {
        buf[0] = '\0';
    }
    buf[size - 1] = '\0';
}

static void platform_string(cl_platform_id p, cl_platform_info what, char *buf, size_t size) {
    buf[0] = '\0';
    if (clGetPlatformInfo(p, what, size - 1, buf, NULL) != CL_SUCCESS) {
        buf[0] = '\0';
    }
    buf[size - 1] = '\0';
}

/* Whether the device's extension list names `ext` (a whole word). */
static bool device_has_extension(const plx_host *host, cl_device_id d, const char *ext) {
    size_t size = 0;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &size) != CL_SUCCESS || size == 0) {
        return false;
    }
    char *list = host->alloc(host, size + 1, 0);
    if (!list) {
        return false;
    }
    bool found = false;
    if (clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, size, list, NULL) == CL_SUCCESS) {
        list[size] = '\0';
        size_t n = strlen(ext);
        for (const char *p = strstr(list, ext); p && !found; p = strstr(p + 1, ext)) {
            found = (p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' ');
        }
    }
    host->free(host, list);
    return found;
}

/* "OpenCL 3.0 PoCL ..." (prefix "OpenCL ") or "OpenCL C 1.2 ..." (prefix
 * "OpenCL C "): the version as major * 10 + minor, or -1. */
static int parse_version(const char *text, const char *prefix) {
    size_t n = strlen(prefix);
    if (strncmp(text, prefix, n) != 0) {
        return -1;
    }
    int major = 0, minor = 0;
    if (sscanf(text + n, "%d.%d", &major, &minor) != 2 || major < 0 || minor < 0 || minor > 9) {
        return -1;
    }
    return major * 10 + minor;
}

/* Fills in a device and says what would keep it from running our kernels:
 * OpenCL 1.2 (device and OpenCL C), a compiler, 16 KiB of local memory. */
static void describe_device(const plx_host *host, seen_device *s) {
    device_string(s->device, CL_DEVICE_NAME, s->name, sizeof s->name);
    device_string(s->device, CL_DEVICE_VERSION, s->version, sizeof s->version);
    device_string(s->device, CL_DEVICE_OPENCL_C_VERSION, s->c_version, sizeof s->c_version);
    device_string(s->device, CL_DRIVER_VERSION, s->driver, sizeof s->driver);
    s->type = 0;
    clGetDeviceInfo(s->device, CL_DEVICE_TYPE, sizeof s->type, &s->type, NULL);
    s->local_mem = 0;
    clGetDeviceInfo(s->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof s->local_mem, &s->local_mem, NULL);
    s->base_align_bits = 0;
    clGetDeviceInfo(s->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof s->base_align_bits,
                    &s->base_align_bits, NULL);
    s->max_work_group_size = 0;
    clGetDeviceInfo(s->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof s->max_work_group_size,
                    &s->max_work_group_size, NULL);
    cl_bool available = CL_FALSE, compiler = CL_FALSE;
    clGetDeviceInfo(s->device, CL_DEVICE_AVAILABLE, sizeof available, &available, NULL);
    clGetDeviceInfo(s->device, CL_DEVICE_COMPILER_AVAILABLE, sizeof compiler, &compiler, NULL);
    s->has_fp16 = device_has_extension(host, s->device, "cl_khr_fp16");

    int v = parse_version(s->version, "OpenCL ");
    int cv = parse_version(s->c_version, "OpenCL C ");
    s->problem[0] = '\0';
    if (v < 12) {
        snprintf(s->problem, sizeof s->problem, "'%.120s' is not OpenCL 1.2 or later", s->version);
    } else if (cv < 12) {
        snprintf(s->problem, sizeof s->problem, "OpenCL C version '%.100s' is older than 1.2",
                 s->c_version);
    } else if (!available) {
        snprintf(s->problem, sizeof s->problem, "not available (CL_DEVICE_AVAILABLE is false)");
    } else if (!compiler) {
        snprintf(s->problem, sizeof s->problem,
                 "no compiler (CL_DEVICE_COMPILER_AVAILABLE is false)");
    } else if (s->local_mem < GPU_OPENCL_MIN_LOCAL_MEM) {
        snprintf(s->problem, sizeof s->problem,
                 "%" PRIu64 " bytes of local memory, fewer than the %u the kernels need",
                 (uint64_t)s->local_mem, GPU_OPENCL_MIN_LOCAL_MEM);
    } else if (s->base_align_bits < 8 || (s->base_align_bits & (s->base_align_bits - 1))) {
        snprintf(s->problem, sizeof s->problem, "unusable base address alignment of %u bits",
                 s->base_align_bits);
    }
}

/* Why the ICD loader found no platform, for the availability reason. */
static void no_platform_reason(char *buf, size_t size, cl_int rc) {
    const char *vendors = getenv("OCL_ICD_VENDORS");
    char nb[32];
    if (rc == CL_SUCCESS || rc == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */) {
        if (vendors) {
            snprintf(buf, size, "no OpenCL platform (the ICD loader found none: "
                                "OCL_ICD_VENDORS=%s)", vendors);
        } else {
            snprintf(buf, size, "no OpenCL platform (the ICD loader found none: no usable "
                                ".icd file in /etc/OpenCL/vendors; Debian: install "
                                "pocl-opencl-icd or a GPU's ICD)");
        }
    } else {
        snprintf(buf, size, "no OpenCL platform: clGetPlatformIDs: %s",
                 ocl_error_name(rc, nb, sizeof nb));
    }
}

/* Every device of every platform, in platform order then device order.
 * Returns NULL, or a PLX_UNAVAILABLE / PLX_OUT_OF_MEMORY status. */
static plx_status enumerate_devices(const plx_host *host, device_list *out) {
    memset(out, 0, sizeof *out);
    cl_uint np = 0;
    cl_int rc = clGetPlatformIDs(0, NULL, &np);
    if (rc != CL_SUCCESS || np == 0) {
        char reason[512];
        no_platform_reason(reason, sizeof reason, rc);
        return host->status_create(host, PLX_UNAVAILABLE, "%s", reason);
    }
    if (np > 32) {
        np = 32;
    }
    cl_platform_id platforms[32];
    rc = clGetPlatformIDs(np, platforms, NULL);
    if (rc != CL_SUCCESS) {
        char reason[512];
        no_platform_reason(reason, sizeof reason, rc);
        return host->status_create(host, PLX_UNAVAILABLE, "%s", reason);
    }
    out->platform_count = np;
    out->items = host->alloc(host, GPU_OPENCL_MAX_DEVICES * sizeof *out->items, 0);
    if (!out->items) {
        return host->status_create(host, PLX_OUT_OF_MEMORY,
                                   "cannot allocate the OpenCL device list");
    }
    for (cl_uint p = 0; p < np; p++) {
        char pname[256], pversion[256];
        platform_string(platforms[p], CL_PLATFORM_NAME, pname, sizeof pname);
        platform_string(platforms[p], CL_PLATFORM_VERSION, pversion, sizeof pversion);
        if (p < 8) {
            snprintf(out->platform_names[p], sizeof out->platform_names[p], "%.127s", pname);
        }
        cl_uint nd = 0;
        rc = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
        if (rc != CL_SUCCESS || nd == 0) {
            continue; /* CL_DEVICE_NOT_FOUND: a platform with no device */
        }
        cl_device_id devices[GPU_OPENCL_MAX_DEVICES];
        if (nd > GPU_OPENCL_MAX_DEVICES) {
            nd = GPU_OPENCL_MAX_DEVICES;
        }
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, nd, devices, NULL) != CL_SUCCESS) {
            continue;
        }
        for (cl_uint d = 0; d < nd && out->count < GPU_OPENCL_MAX_DEVICES; d++) {
            seen_device *s = &out->items[out->count++];
            memset(s, 0, sizeof *s);
            s->platform = platforms[p];
            s->device = devices[d];
            s->platform_index = p;
            s->index_in_platform = d;
            snprintf(s->platform_name, sizeof s->platform_name, "%s", pname);
            snprintf(s->platform_version, sizeof s->platform_version, "%s", pversion);
            describe_device(host, s);
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Availability                                                         */
/* ------------------------------------------------------------------------ */

/* Without options: is there any device our kernels can run on? Which one
 * is used, and whether the options find it, is create's business. */
static plx_status gpu_opencl_check_available(const plx_host *host) {
    device_list l;
    plx_status s = enumerate_devices(host, &l);
    if (s) {
        return s;
    }
    if (l.count == 0) {
        char names[512] = "";
        for (cl_uint p = 0; p < l.platform_count && p < 8; p++) {
            append(names, sizeof names, "%s'%s'", p ? ", " : "", l.platform_names[p]);
        }
        device_list_free(host, &l);
        return host->status_create(host, PLX_UNAVAILABLE,
                                   "no OpenCL device (%u platform%s: %s, none with a device)",
                                   l.platform_count, l.platform_count == 1 ? "" : "s", names);
    }
    char why[1024] = "";
    for (size_t i = 0; i < l.count; i++) {
        if (!l.items[i].problem[0]) {
            host->log(host, PLX_LOG_DEBUG, "gpu_opencl: available: device %zu '%s' (%s)", i,
                      l.items[i].name, l.items[i].platform_name);
            device_list_free(host, &l);
            return NULL;
        }
        append(why, sizeof why, "%s%zu '%s': %s", i ? "; " : "", i, l.items[i].name,
               l.items[i].problem);
    }
    device_list_free(host, &l);
    return host->status_create(host, PLX_UNAVAILABLE, "no usable OpenCL device (%s)", why);
}

/* ------------------------------------------------------------------------ */
/* Options                                                              */
/* ------------------------------------------------------------------------ */

static const plx_option_info gpu_opencl_options[] = {
    {"platform", "OpenCL platform: index, or a case-insensitive substring of its name", NULL},
    {"device", "index (in the platform when 'platform' is given, else among every device, "
               "as gpu_opencl.devices lists them), or a case-insensitive substring of the "
               "device's name", NULL},
    {"device_type", "gpu, cpu, accelerator or all; unset: a GPU when there is one, else any "
                    "device", NULL},
    {"cache_dir", "directory for compiled program binaries (created when missing); unset: no "
                  "cache", NULL},
};
#define GPU_OPENCL_OPTION_COUNT (sizeof gpu_opencl_options / sizeof gpu_opencl_options[0])

typedef enum type_choice {
    TYPE_DEFAULT = 0, /* a GPU if there is one, else any */
    TYPE_GPU,
    TYPE_CPU,
    TYPE_ACCELERATOR,
    TYPE_ALL
} type_choice;

typedef struct parsed_options {
    const char *platform; /* NULL: any; the host's string, valid during create */
    const char *device;
    type_choice type;
    const char *type_text;
    const char *cache_dir;
} parsed_options;

static plx_status bad_option(const plx_host *host, const char *key, const char *value,
                             const char *expected) {
    return host->status_create(host, PLX_INVALID_ARGUMENT,
                               "invalid value '%s' for option '%s' of backend '" GPU_OPENCL_ID
                               "': expected %s", value, key, expected);
}

static plx_status parse_options(const plx_host *host, const plx_option *options, size_t count,
                                parsed_options *out) {
    memset(out, 0, sizeof *out);
    out->type = TYPE_DEFAULT;
    out->type_text = "default";
    for (size_t i = 0; i < count; i++) {
        const char *k = options[i].key, *v = options[i].value ? options[i].value : "";
        if (strcmp(k, "platform") == 0 || strcmp(k, "device") == 0) {
            if (!*v) {
                return bad_option(host, k, v, "an index or a non-empty name substring");
            }
            *(k[0] == 'p' ? &out->platform : &out->device) = v;
        } else if (strcmp(k, "device_type") == 0) {
            static const struct {
                const char *name;
                type_choice type;
            } types[] = {{"default", TYPE_DEFAULT}, {"gpu", TYPE_GPU}, {"cpu", TYPE_CPU},
                         {"accelerator", TYPE_ACCELERATOR}, {"all", TYPE_ALL}};
            bool ok = false;
            for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
                if (equals_nocase(v, types[t].name)) {
                    out->type = types[t].type;
                    out->type_text = types[t].name;
                    ok = true;
                }
            }
            if (!ok) {
                return bad_option(host, k, v, "gpu, cpu, accelerator, all or default");
            }
        } else if (strcmp(k, "cache_dir") == 0) {
            if (!*v) {
                return bad_option(host, k, v, "a directory path");
            }
            struct stat st;
            if (stat(v, &st) == 0 && !S_ISDIR(st.st_mode)) {
                return bad_option(host, k, v, "a directory (this path is not one)");
            }
            out->cache_dir = v;
        }
        /* The host passes declared keys only (R-9 (3)). */
    }
    return NULL;
}

static bool type_matches(type_choice t, cl_device_type dt) {
    switch (t) {
    case TYPE_GPU:
        return (dt & CL_DEVICE_TYPE_GPU) != 0;
    case TYPE_CPU:
        return (dt & CL_DEVICE_TYPE_CPU) != 0;
    case TYPE_ACCELERATOR:
        return (dt & CL_DEVICE_TYPE_ACCELERATOR) != 0;
    case TYPE_DEFAULT:
    case TYPE_ALL:
        return true;
    }
    return false;
}

/* Lists devices as "0 'name' (cpu)", for messages. */
static void list_devices(const device_list *l, const bool *in, char *buf, size_t size) {
    buf[0] = '\0';
    bool first = true;
    for (size_t i = 0; i < l->count; i++) {
        if (!in || in[i]) {
            append(buf, size, "%s%zu '%s' (%s)", first ? "" : ", ", i, l->items[i].name,
                   device_type_name(l->items[i].type));
            first = false;
        }
    }
    if (first) {
        append(buf, size, "none");
    }
}

/* Chooses the device: writes its index and why, or returns a status naming
 * the option that found nothing (PLX_UNAVAILABLE: the options are well
 * formed, this machine has no such device). */
static plx_status choose_device(const plx_host *host, const device_list *l,
                                const parsed_options *o, size_t *out_index, char *why,
                                size_t why_size) {
    bool in[GPU_OPENCL_MAX_DEVICES];
    char text[1024];
    for (size_t i = 0; i < l->count; i++) {
        in[i] = true;
    }
    if (o->platform) {
        unsigned idx;
        bool by_index = parse_index(o->platform, &idx);
        bool any = false;
        for (cl_uint p = 0; p < l->platform_count; p++) {
            const char *pname = p < 8 ? l->platform_names[p] : "";
            bool match = by_index ? p == idx : contains_nocase(pname, o->platform);
            if (match && !any) {
                any = true;
                for (size_t i = 0; i < l->count; i++) {
                    in[i] = l->items[i].platform_index == p;
                }
            }
        }
        if (!any) {
            text[0] = '\0';
            for (cl_uint p = 0; p < l->platform_count && p < 8; p++) {
                append(text, sizeof text, "%s%u '%s'", p ? ", " : "", p, l->platform_names[p]);
            }
            return host->status_create(host, PLX_UNAVAILABLE,
                                       "option 'platform': no platform %s%s%s (platforms: %s)",
                                       by_index ? "" : "name contains '", o->platform,
                                       by_index ? "" : "'", text);
        }
    }
    if (o->device) {
        unsigned idx;
        bool by_index = parse_index(o->device, &idx);
        size_t found = SIZE_MAX;
        size_t position = 0;
        for (size_t i = 0; i < l->count && found == SIZE_MAX; i++) {
            if (!in[i]) {
                continue;
            }
            if (by_index ? position == idx : contains_nocase(l->items[i].name, o->device)) {
                found = i;
            }
            position++;
        }
        if (found == SIZE_MAX) {
            list_devices(l, in, text, sizeof text);
            return host->status_create(host, PLX_UNAVAILABLE,
                                       "option 'device': no device %s%s%s%s (devices: %s)",
                                       by_index ? "" : "name contains '", o->device,
                                       by_index ? "" : "'",
                                       o->platform ? " in the platform chosen" : "", text);
        }
        const seen_device *s = &l->items[found];
        if (!type_matches(o->type, s->type)) {
            return host->status_create(host, PLX_UNAVAILABLE,
                                       "option 'device_type': device '%s' (option device=%s) is "
                                       "a %s device, not %s", s->name, o->device,
                                       device_type_name(s->type), o->type_text);
        }
        const char *problem = s->problem;
        if (*problem) {
            return host->status_create(host, PLX_UNAVAILABLE,
                                       "device %zu '%s' (option device=%s) cannot be used: %s",
                                       found, s->name, o->device, problem);
        }
        *out_index = found;
        snprintf(why, why_size, "option device=%s", o->device);
        return NULL;
    }
    /* By type: the first usable device of the type; by default GPUs first. */
    type_choice order[2] = {o->type, TYPE_ALL};
    size_t passes = 1;
    if (o->type == TYPE_DEFAULT) {
        order[0] = TYPE_GPU;
        passes = 2;
    }
    for (size_t pass = 0; pass < passes; pass++) {
        for (size_t i = 0; i < l->count; i++) {
            if (in[i] && type_matches(order[pass], l->items[i].type) &&
                !*l->items[i].problem) {
                *out_index = i;
                if (o->type == TYPE_DEFAULT) {
                    snprintf(why, why_size, pass == 0 ? "the first usable GPU (default)"
                                                      : "no usable GPU: the first usable "
                                                        "device of any type (default)");
                } else {
                    snprintf(why, why_size, "the first usable %s device (option device_type=%s)",
                             o->type_text, o->type_text);
                }
                if (o->platform) {
                    append(why, why_size, " of platform %s", o->platform);
                }
                return NULL;
            }
        }
    }
    text[0] = '\0';
    bool any_of_type = false;
    for (size_t i = 0; i < l->count; i++) {
        if (in[i] && type_matches(o->type, l->items[i].type)) {
            append(text, sizeof text, "%s%zu '%s' (%s): %s", any_of_type ? "; " : "", i,
                   l->items[i].name, device_type_name(l->items[i].type),
                   l->items[i].problem);
            any_of_type = true;
        }
    }
    if (!any_of_type) {
        list_devices(l, in, text, sizeof text);
        return host->status_create(host, PLX_UNAVAILABLE,
                                   "option 'device_type': no %s device%s (devices: %s)",
                                   o->type_text, o->platform ? " in the platform chosen" : "",
                                   text);
    }
    return host->status_create(host, PLX_UNAVAILABLE, "no usable OpenCL device%s%s (%s)",
                               o->type == TYPE_DEFAULT ? "" : " of type ",
                               o->type == TYPE_DEFAULT ? "" : o->type_text, text);
}

/* ------------------------------------------------------------------------ */
/* The instance                                                               */
/* ------------------------------------------------------------------------ */

#define GPU_OPENCL_MAX_CAPS 20

struct plx_backend {
    const plx_host *host; /* valid until destroy (backend.h, plx_host) */
    /* The device, context and flags; `dev.program` stays NULL: factories
     * get a copy with the program (so that check_layer, which may run
     * beside the first create_factory, reads only what never changes). */
    ocl_device dev;
    size_t import_alignment; /* bytes */

    pthread_mutex_t program_lock;
    cl_program program; /* built at the first create_factory, under program_lock */

    char *cache_dir; /* from host->alloc; NULL: no program cache */
    char build_options[64];
    uint64_t program_key; /* FNV-1a of the device, driver, source and options */

    /* Capability values (strings live here until destroy). */
    plx_capability caps[GPU_OPENCL_MAX_CAPS];
    size_t cap_count;
    char device_name[256];
    char platform_name[256];
    char platform_version[256];
    char device_version[256];
    char driver_version[256];
    char choice[256];
    char devices_text[2048];
};

static void add_cap_bool(plx_backend *b, const char *key, bool v) {
    if (b->cap_count < GPU_OPENCL_MAX_CAPS) {
        plx_capability *c = &b->caps[b->cap_count++];
        memset(c, 0, sizeof *c);
        c->key = key;
        c->type = PLX_VALUE_BOOL;
        c->bool_value = v;
    }
}

static void add_cap_int(plx_backend *b, const char *key, int64_t v) {
    if (b->cap_count < GPU_OPENCL_MAX_CAPS) {
        plx_capability *c = &b->caps[b->cap_count++];
        memset(c, 0, sizeof *c);
        c->key = key;
        c->type = PLX_VALUE_INT;
        c->int_value = v;
    }
}

static void add_cap_string(plx_backend *b, const char *key, const char *v) {
    if (b->cap_count < GPU_OPENCL_MAX_CAPS) {
        plx_capability *c = &b->caps[b->cap_count++];
        memset(c, 0, sizeof *c);
        c->key = key;
        c->type = PLX_VALUE_STRING;
        c->string_value = v;
    }
}

static void gpu_opencl_destroy(plx_backend *b) {
    if (!b) {
        return;
    }
    const plx_host *host = b->host;
    if (b->program) {
        clReleaseProgram(b->program);
    }
    if (b->dev.context) {
        clReleaseContext(b->dev.context);
    }
    pthread_mutex_destroy(&b->program_lock);
    host->free(host, b->cache_dir);
    host->free(host, b);
}

static uint64_t program_key(const plx_backend *b) {
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

static plx_status gpu_opencl_create(const plx_host *host, const plx_option *options,
                                    size_t option_count, plx_backend **out_backend) {
    parsed_options o;
    plx_status s = parse_options(host, options, option_count, &o);
    if (s) {
        return s;
    }
    device_list l;
    s = enumerate_devices(host, &l);
    if (s) {
        return s;
    }
    size_t chosen = 0;
    char why[256];
    s = choose_device(host, &l, &o, &chosen, why, sizeof why);
    if (s) {
        device_list_free(host, &l);
        return s;
    }
    plx_backend *b = host->alloc(host, sizeof *b, 0);
    if (!b) {
        device_list_free(host, &l);
        return host->status_create(host, PLX_OUT_OF_MEMORY,
                                   "cannot allocate the backend instance");
    }
    memset(b, 0, sizeof *b);
    b->host = host;
    if (pthread_mutex_init(&b->program_lock, NULL) != 0) {
        host->free(host, b);
        device_list_free(host, &l);
        return host->status_create(host, PLX_INTERNAL, "pthread_mutex_init failed");
    }
    const seen_device *d = &l.items[chosen];
    b->dev.platform = d->platform;
    b->dev.device = d->device;
    b->dev.max_work_group_size = d->max_work_group_size;
    b->dev.local_mem_size = d->local_mem;
    b->dev.mem_base_addr_align = d->base_align_bits;
    size_t base_align = d->base_align_bits / 8u;
    b->import_alignment = base_align < GPU_OPENCL_MAX_IMPORT_ALIGNMENT
                              ? base_align
                              : GPU_OPENCL_MAX_IMPORT_ALIGNMENT;
    snprintf(b->device_name, sizeof b->device_name, "%s", d->name);
    snprintf(b->platform_name, sizeof b->platform_name, "%s", d->platform_name);
    snprintf(b->platform_version, sizeof b->platform_version, "%s", d->platform_version);
    snprintf(b->device_version, sizeof b->device_version, "%s", d->version);
    snprintf(b->driver_version, sizeof b->driver_version, "%s", d->driver);
    snprintf(b->choice, sizeof b->choice, "device %zu: %.200s", chosen, why);
    snprintf(b->build_options, sizeof b->build_options, "-cl-std=CL1.2");
    b->program_key = program_key(b);

    /* `plexus info` shows every device seen, the one chosen and why: as
     * vendor capabilities (R-10 (4): strings are allowed) and in the log. */
    for (size_t i = 0; i < l.count; i++) {
        const seen_device *e = &l.items[i];
        const char *problem = e->problem;
        append(b->devices_text, sizeof b->devices_text, "%s%zu: '%s' (platform %u '%s', %s, %s)%s%s",
               i ? "; " : "", i, e->name, e->platform_index, e->platform_name,
               device_type_name(e->type), e->version, *problem ? ": unusable: " : "",
               i == chosen ? " [chosen]" : problem);
        host->log(host, PLX_LOG_INFO,
                  "gpu_opencl: device %zu: '%s' (platform %u '%s', %s, %s, driver %s, %" PRIu64
                  " KiB local memory%s)%s%s", i, e->name, e->platform_index, e->platform_name,
                  device_type_name(e->type), e->version, e->driver,
                  (uint64_t)(e->local_mem / 1024), e->has_fp16 ? ", cl_khr_fp16" : "",
                  *problem ? ": unusable: " : "", problem);
    }
    host->log(host, PLX_LOG_INFO, "gpu_opencl: chose device %zu '%s': %s", chosen, d->name, why);

    if (o.cache_dir) {
        size_t n = strlen(o.cache_dir);
        b->cache_dir = host->alloc(host, n + 1, 0);
        if (!b->cache_dir) {
            device_list_free(host, &l);
            gpu_opencl_destroy(b);
            return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
        }
        memcpy(b->cache_dir, o.cache_dir, n + 1);
    }
    bool has_fp16 = d->has_fp16;
    device_list_free(host, &l);

    cl_int rc = CL_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)b->dev.platform,
                                     0};
    /* No notification callback: errors reach the caller through each call's
     * return code, and a driver thread must not log after destroy. */
    b->dev.context = clCreateContext(props, 1, &b->dev.device, NULL, NULL, &rc);
    if (rc != CL_SUCCESS || !b->dev.context) {
        b->dev.context = NULL;
        s = cl_failure(host, rc, PLX_UNAVAILABLE, "clCreateContext(device '%s')",
                       b->device_name);
        gpu_opencl_destroy(b);
        return s;
    }

    add_cap_bool(b, PLX_CAP_ASYNC_EXECUTION, true);
    add_cap_bool(b, PLX_CAP_EXTERNALLY_MANAGED_MEMORY, true);
    add_cap_bool(b, PLX_CAP_PREIMPORT_IO_TENSORS, true);
    add_cap_bool(b, PLX_CAP_IMPORT_MALLOC, true);
    add_cap_string(b, "gpu_opencl.device", b->device_name);
    add_cap_string(b, "gpu_opencl.platform", b->platform_name);
    add_cap_string(b, "gpu_opencl.device_version", b->device_version);
    add_cap_string(b, "gpu_opencl.driver_version", b->driver_version);
    add_cap_string(b, "gpu_opencl.choice", b->choice);
    add_cap_string(b, "gpu_opencl.devices", b->devices_text);
    add_cap_int(b, "gpu_opencl.local_memory_bytes", (int64_t)b->dev.local_mem_size);
    add_cap_int(b, PLX_CAP_IMPORT_ALIGNMENT, (int64_t)b->import_alignment);
    add_cap_bool(b, "gpu_opencl.cl_khr_fp16", has_fp16);
    add_cap_string(b, "gpu_opencl.program_cache", b->cache_dir ? b->cache_dir : "off");
    *out_backend = b;
    return NULL;
}

static plx_status gpu_opencl_get_capabilities(plx_backend *b,
                                              const plx_capability **out_capabilities,
                                              size_t *out_count) {
    *out_capabilities = b->caps;
    *out_count = b->cap_count;
    return NULL;
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
static plx_status build_program(plx_backend *b) {
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
        return cl_failure(host, rc, PLX_INTERNAL, "clCreateProgramWithSource(%zu bytes)",
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

/* ------------------------------------------------------------------------ */
/* Layers                                                              */
/* ------------------------------------------------------------------------ */

/* Constants are the backend's own: their workload writes the constant's
 * bytes into its buffer once, at load (R-18 (5)); any dtype is bytes. The
 * other operators are the operators' (ocl_op_check). */
static plx_status gpu_opencl_check_layer(plx_backend *b, const plx_layer_view *layer) {
    if (layer->op == PLX_OP_CONSTANT) {
        if (layer->output_count != 1 || !layer->desc ||
            plx_dtype_size(layer->outputs[0].dtype) == 0) {
            return b->host->status_create(b->host, PLX_UNSUPPORTED,
                                          "gpu_opencl: a constant needs one output of a known "
                                          "dtype and its data");
        }
        return NULL;
    }
    char buf[256];
    buf[0] = '\0';
    const char *reason = ocl_op_check(&b->dev, layer, buf, sizeof buf);
    if (!reason) {
        return NULL;
    }
    /* The host names the backend already ("layer 'x' (conv): gpu_opencl:
     * ..."): its prefix on the operators' reasons, which also serve as load
     * errors, is dropped here. */
    static const char prefix[] = GPU_OPENCL_ID ": ";
    if (strncmp(reason, prefix, sizeof prefix - 1) == 0) {
        reason += sizeof prefix - 1;
    }
    return b->host->status_create(b->host, PLX_UNSUPPORTED, "%s", reason);
}

struct plx_factory {
    plx_backend *backend;
    const plx_host *host;
    ocl_device dev;              /* the instance's, with the program */
    cl_command_queue map_queue;  /* map/unmap of every handle of the factory */
    cl_mem empty;                /* what tensors of 0 bytes are bound to */
    size_t import_alignment;
    uint32_t network_id;
};

static void gpu_opencl_destroy_factory(plx_factory *f) {
    if (f->map_queue) {
        clReleaseCommandQueue(f->map_queue);
    }
    if (f->empty) {
        clReleaseMemObject(f->empty);
    }
    f->host->free(f->host, f);
}

static plx_status gpu_opencl_create_factory(plx_backend *b, const plx_factory_params *params,
                                            plx_factory **out_factory) {
    const plx_host *host = b->host;
    plx_status s = NULL;
    pthread_mutex_lock(&b->program_lock);
    if (!b->program) {
        s = build_program(b);
    }
    cl_program program = b->program;
    pthread_mutex_unlock(&b->program_lock);
    if (s) {
        return s;
    }
    plx_factory *f = host->alloc(host, sizeof *f, 0);
    if (!f) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    memset(f, 0, sizeof *f);
    f->backend = b;
    f->host = host;
    f->dev = b->dev;
    f->dev.program = program;
    f->import_alignment = b->import_alignment;
    f->network_id = params->network_id;
    cl_int rc = CL_SUCCESS;
    f->map_queue = clCreateCommandQueue(f->dev.context, f->dev.device, 0, &rc);
    if (rc != CL_SUCCESS || !f->map_queue) {
        f->map_queue = NULL;
        gpu_opencl_destroy_factory(f);
        return cl_failure(host, rc, PLX_INTERNAL, "clCreateCommandQueue");
    }
    f->empty = clCreateBuffer(f->dev.context, CL_MEM_READ_WRITE, 64, NULL, &rc);
    if (rc != CL_SUCCESS || !f->empty) {
        f->empty = NULL;
        gpu_opencl_destroy_factory(f);
        return cl_failure(host, rc, PLX_INTERNAL, "clCreateBuffer(64 bytes)");
    }
    *out_factory = f;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Tensor handles                                                      */
/* ------------------------------------------------------------------------ */

/* A handle's memory is a cl_mem: one it created (managed), or a
 * CL_MEM_USE_HOST_PTR wrapper of imported host memory, so that kernels use
 * the caller's (or the host's planned) bytes in place. A tensor of 0 bytes
 * is bound to the factory's small `empty` buffer, since OpenCL has no empty
 * buffers; nothing reads or writes it. No sub-tensors: a sub-buffer's origin
 * must be a multiple of the device's base address alignment, which a
 * concat's parts are not, so the host runs concat and split as layers. */
struct plx_tensor_handle {
    plx_factory *factory;
    size_t bytes;
    size_t element_size;
    bool managed;
    bool has_memory;
    bool owns_mem;      /* mem is released with the memory */
    bool imported;      /* mem wraps imported host memory */
    bool written;       /* some workload writes it: unimport copies back */
    bool constant;      /* a constant's output: read-only once computed */
    cl_mem mem;
    void *import_ptr;

    pthread_mutex_t lock; /* map state: several executions may map a constant */
    unsigned map_count;
    void *map_ptr;
    unsigned char empty_view[8]; /* what mapping a tensor of 0 bytes gives */
};

static plx_status gpu_opencl_create_tensor_handle(plx_factory *f, const plx_tensor_info *info,
                                                  const plx_tensor_handle_params *params,
                                                  plx_tensor_handle **out_handle) {
    const plx_host *host = f->host;
    size_t bytes = 0;
    if (!plx_tensor_info_byte_size(info, &bytes)) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "invalid tensor info (dtype %d, rank %u)", (int)info->dtype,
                                   info->rank);
    }
    plx_tensor_handle *h = host->alloc(host, sizeof *h, 0);
    if (!h) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    memset(h, 0, sizeof *h);
    if (pthread_mutex_init(&h->lock, NULL) != 0) {
        host->free(host, h);
        return host->status_create(host, PLX_INTERNAL, "pthread_mutex_init failed");
    }
    h->factory = f;
    h->bytes = bytes;
    h->element_size = plx_dtype_size(info->dtype);
    h->managed = params->managed;
    *out_handle = h;
    return NULL;
}

static void drop_memory(plx_tensor_handle *h) {
    if (h->owns_mem && h->mem) {
        clReleaseMemObject(h->mem);
    }
    h->mem = NULL;
    h->owns_mem = false;
    h->has_memory = false;
    h->imported = false;
    h->import_ptr = NULL;
    h->map_count = 0;
    h->map_ptr = NULL;
}

static plx_status gpu_opencl_allocate_tensor_handle(plx_tensor_handle *h) {
    plx_factory *f = h->factory;
    if (h->has_memory) {
        return NULL;
    }
    if (h->bytes == 0) {
        h->mem = f->empty;
        h->owns_mem = false;
        h->has_memory = true;
        return NULL;
    }
    cl_int rc = CL_SUCCESS;
    cl_mem m = clCreateBuffer(f->dev.context, CL_MEM_READ_WRITE, h->bytes, NULL, &rc);
    if (rc != CL_SUCCESS || !m) {
        return cl_failure(f->host, rc, PLX_INTERNAL, "clCreateBuffer(%zu bytes)", h->bytes);
    }
    h->mem = m;
    h->owns_mem = true;
    h->has_memory = true;
    return NULL;
}

static void gpu_opencl_release_tensor_handle(plx_tensor_handle *h) {
    if (h->has_memory && !h->imported) {
        drop_memory(h);
    }
}

static plx_status gpu_opencl_map_tensor_handle(plx_tensor_handle *h, void **out_data) {
    plx_factory *f = h->factory;
    plx_status s = NULL;
    pthread_mutex_lock(&h->lock);
    if (!h->has_memory) {
        s = f->host->status_create(f->host, PLX_FAILED_PRECONDITION,
                                   "the tensor has no memory (neither allocated nor imported)");
    } else if (h->bytes == 0) {
        h->map_count++;
        *out_data = h->empty_view;
    } else {
        if (h->map_count == 0) {
            /* Workloads finish (clFinish) before execute_workload returns,
             * and the host maps only between them (R-17 (5)): the blocking
             * map sees every result. A constant is only read once computed
             * (R-20 (4)), so mapping it never blocks kernels reading it. */
            cl_map_flags flags = h->constant ? CL_MAP_READ : (CL_MAP_READ | CL_MAP_WRITE);
            cl_int rc = CL_SUCCESS;
            void *p = clEnqueueMapBuffer(f->map_queue, h->mem, CL_TRUE, flags, 0, h->bytes, 0,
                                         NULL, NULL, &rc);
            if (rc != CL_SUCCESS || !p) {
                s = cl_failure(f->host, rc, PLX_INTERNAL, "clEnqueueMapBuffer(%zu bytes)",
                               h->bytes);
            } else {
                h->map_ptr = p;
            }
        }
        if (!s) {
            h->map_count++;
            *out_data = h->map_ptr;
        }
    }
    pthread_mutex_unlock(&h->lock);
    return s;
}

/* Ends a mapping and waits for it, so that what the host wrote is what the
 * next kernel reads, on whichever queue it runs. */
static cl_int unmap_now(plx_tensor_handle *h, void *ptr) {
    plx_factory *f = h->factory;
    cl_event ev = NULL;
    cl_int rc = clEnqueueUnmapMemObject(f->map_queue, h->mem, ptr, 0, NULL, &ev);
    if (rc == CL_SUCCESS) {
        rc = clWaitForEvents(1, &ev);
    }
    if (ev) {
        clReleaseEvent(ev);
    }
    return rc;
}

static void gpu_opencl_unmap_tensor_handle(plx_tensor_handle *h) {
    pthread_mutex_lock(&h->lock);
    if (h->map_count > 0 && --h->map_count == 0 && h->bytes > 0 && h->map_ptr) {
        cl_int rc = unmap_now(h, h->map_ptr);
        if (rc != CL_SUCCESS) {
            char nb[32];
            h->factory->host->log(h->factory->host, PLX_LOG_WARN,
                                  "gpu_opencl: clEnqueueUnmapMemObject(%zu bytes): %s", h->bytes,
                                  ocl_error_name(rc, nb, sizeof nb));
        }
        h->map_ptr = NULL;
    }
    pthread_mutex_unlock(&h->lock);
}

/* Ends an import: when a workload wrote the handle (an exported output, a
 * planned tensor), maps and unmaps the wrapper first, which is where OpenCL
 * makes a CL_MEM_USE_HOST_PTR buffer's contents visible in the host memory
 * (R-17 (7)); a device that computes in place (PoCL, integrated GPUs) does
 * nothing then. */
static void gpu_opencl_unimport_tensor_handle(plx_tensor_handle *h) {
    plx_factory *f = h->factory;
    if (!h->imported) {
        return;
    }
    if (h->written && h->bytes > 0 && h->mem) {
        cl_int rc = CL_SUCCESS;
        void *p = clEnqueueMapBuffer(f->map_queue, h->mem, CL_TRUE, CL_MAP_READ, 0, h->bytes, 0,
                                     NULL, NULL, &rc);
        if (rc == CL_SUCCESS && p) {
            rc = unmap_now(h, p);
        }
        if (rc != CL_SUCCESS) {
            char nb[32];
            f->host->log(f->host, PLX_LOG_WARN,
                         "gpu_opencl: unimport: synchronising %zu bytes at %p: %s", h->bytes,
                         h->import_ptr, ocl_error_name(rc, nb, sizeof nb));
        }
    }
    drop_memory(h);
}

/* Imports host memory in place with CL_MEM_USE_HOST_PTR. The pointer must be
 * aligned to the device's base address alignment, capped at the 64 bytes
 * the host's plans guarantee (R-21 (5)): such memory is used in place by
 * devices that share host memory. Less aligned memory is refused
 * (PLX_INVALID_ARGUMENT), never copied (R-17 (6)). */
static plx_status gpu_opencl_import_tensor_handle(plx_tensor_handle *h, void *memory, size_t size,
                                                  plx_memory_source source) {
    plx_factory *f = h->factory;
    const plx_host *host = f->host;
    gpu_opencl_unimport_tensor_handle(h);
    if (h->has_memory) {
        /* The host imports into unmanaged handles only (R-17 (3)). */
        return host->status_create(host, PLX_FAILED_PRECONDITION,
                                   "cannot import into a tensor that holds allocated memory");
    }
    if (source != PLX_MEMORY_SOURCE_MALLOC) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "gpu_opencl imports malloc memory only, not source %d",
                                   (int)source);
    }
    if (!memory || size < h->bytes) {
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "imported memory of %zu bytes is smaller than the tensor's %zu",
                                   memory ? size : 0, h->bytes);
    }
    size_t align = f->import_alignment > h->element_size ? f->import_alignment : h->element_size;
    if (align > 1 && (uintptr_t)memory % align != 0) {
        size_t has = 1;
        while (has < align && (uintptr_t)memory % (has * 2) == 0) {
            has *= 2;
        }
        return host->status_create(host, PLX_INVALID_ARGUMENT,
                                   "imported memory at %p is aligned to %zu bytes; gpu_opencl "
                                   "imports memory aligned to %zu (import_alignment)",
                                   memory, has, align);
    }
    if (h->bytes == 0) {
        h->mem = f->empty;
        h->owns_mem = false;
    } else {
        cl_int rc = CL_SUCCESS;
        cl_mem m = clCreateBuffer(f->dev.context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                                  h->bytes, memory, &rc);
        if (rc != CL_SUCCESS || !m) {
            plx_status s = cl_failure(host, rc, PLX_INVALID_ARGUMENT,
                                      "clCreateBuffer(%zu bytes, CL_MEM_USE_HOST_PTR %p)",
                                      h->bytes, memory);
            return s;
        }
        h->mem = m;
        h->owns_mem = true;
    }
    h->imported = true;
    h->import_ptr = memory;
    h->has_memory = true;
    return NULL;
}

static void gpu_opencl_destroy_tensor_handle(plx_tensor_handle *h) {
    const plx_host *host = h->factory->host;
    if (h->imported) {
        gpu_opencl_unimport_tensor_handle(h);
    }
    drop_memory(h);
    pthread_mutex_destroy(&h->lock);
    host->free(host, h);
}

/* ------------------------------------------------------------------------ */
/* Workloads                                                           */
/* ------------------------------------------------------------------------ */

/* A workload owns its in-order queue, its plan (kernels and auxiliary
 * buffers) and the arrays execute fills, so that executing allocates
 * nothing (R-18 (7)). */
struct plx_workload {
    plx_factory *factory;
    cl_command_queue queue;
    ocl_plan plan;
    bool constant;
    const void *constant_data; /* plx_constant_desc.data: valid while the network lives */
    uint32_t input_count, output_count;
    plx_tensor_handle **inputs;
    plx_tensor_handle **outputs;
    cl_mem *input_mems;
    cl_mem *output_mems;
    char error[512];
};

static void gpu_opencl_destroy_workload(plx_workload *w) {
    const plx_host *host = w->factory->host;
    ocl_plan_release(&w->plan);
    if (w->queue) {
        clReleaseCommandQueue(w->queue);
    }
    host->free(host, w->inputs);
    host->free(host, w->outputs);
    host->free(host, w->input_mems);
    host->free(host, w->output_mems);
    host->free(host, w);
}

static plx_status gpu_opencl_create_workload(plx_factory *f, const plx_layer_view *layer,
                                             plx_tensor_handle *const *inputs,
                                             plx_tensor_handle *const *outputs,
                                             plx_workload **out_workload) {
    const plx_host *host = f->host;
    plx_workload *w = host->alloc(host, sizeof *w, 0);
    if (!w) {
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    memset(w, 0, sizeof *w);
    w->factory = f;
    w->input_count = layer->input_count;
    w->output_count = layer->output_count;
    size_t ni = layer->input_count + 1, no = layer->output_count + 1;
    w->inputs = host->alloc(host, ni * sizeof *w->inputs, 0);
    w->outputs = host->alloc(host, no * sizeof *w->outputs, 0);
    w->input_mems = host->alloc(host, ni * sizeof *w->input_mems, 0);
    w->output_mems = host->alloc(host, no * sizeof *w->output_mems, 0);
    if (!w->inputs || !w->outputs || !w->input_mems || !w->output_mems) {
        gpu_opencl_destroy_workload(w);
        return host->status_create(host, PLX_OUT_OF_MEMORY, "out of memory");
    }
    for (uint32_t i = 0; i < layer->input_count; i++) {
        w->inputs[i] = inputs[i];
    }
    for (uint32_t i = 0; i < layer->output_count; i++) {
        w->outputs[i] = outputs[i];
    }
    if (layer->op == PLX_OP_CONSTANT) {
        const plx_constant_desc *d = layer->desc;
        if (layer->output_count != 1 || !d || (!d->data && outputs[0]->bytes)) {
            gpu_opencl_destroy_workload(w);
            return host->status_create(host, PLX_INVALID_ARGUMENT, "a constant without data");
        }
        w->constant = true;
        w->constant_data = d->data;
    } else if (!ocl_op_prepare(&f->dev, layer, &w->plan, w->error, sizeof w->error)) {
        plx_status s = host->status_create(host, PLX_INTERNAL, "%s",
                                           w->error[0] ? w->error : "cannot prepare the layer");
        gpu_opencl_destroy_workload(w);
        return s;
    }
    cl_int rc = CL_SUCCESS;
    w->queue = clCreateCommandQueue(f->dev.context, f->dev.device, 0, &rc);
    if (rc != CL_SUCCESS || !w->queue) {
        w->queue = NULL;
        gpu_opencl_destroy_workload(w);
        return cl_failure(host, rc, PLX_INTERNAL, "clCreateCommandQueue");
    }
    /* Each output handle belongs to this layer of this working memory, so
     * nothing else touches these flags now (R-20 (2)). */
    for (uint32_t i = 0; i < layer->output_count; i++) {
        outputs[i]->written = true;
        outputs[i]->constant = w->constant;
    }
    *out_workload = w;
    return NULL;
}

static plx_status gpu_opencl_execute_workload(plx_workload *w) {
    plx_factory *f = w->factory;
    const plx_host *host = f->host;
    for (uint32_t i = 0; i < w->input_count; i++) {
        if (!w->inputs[i]->has_memory) {
            return host->status_create(host, PLX_FAILED_PRECONDITION, "input %u has no memory",
                                       i);
        }
        w->input_mems[i] = w->inputs[i]->mem;
    }
    for (uint32_t i = 0; i < w->output_count; i++) {
        if (!w->outputs[i]->has_memory) {
            return host->status_create(host, PLX_FAILED_PRECONDITION, "output %u has no memory",
                                       i);
        }
        w->output_mems[i] = w->outputs[i]->mem;
    }
    cl_int rc;
    if (w->constant) {
        size_t bytes = w->outputs[0]->bytes;
        if (bytes == 0) {
            return NULL;
        }
        rc = clEnqueueWriteBuffer(w->queue, w->output_mems[0], CL_TRUE, 0, bytes, w->constant_data,
                                  0, NULL, NULL);
        if (rc != CL_SUCCESS) {
            return cl_failure(host, rc, PLX_INTERNAL, "clEnqueueWriteBuffer(%zu bytes)", bytes);
        }
        return NULL;
    }
    w->error[0] = '\0';
    rc = ocl_plan_enqueue(&w->plan, w->queue, w->input_mems, w->output_mems, w->error,
                          sizeof w->error);
    if (rc != CL_SUCCESS) {
        clFinish(w->queue); /* what was enqueued before the failure */
        plx_status_code code = (rc == CL_OUT_OF_HOST_MEMORY || rc == CL_OUT_OF_RESOURCES ||
                                rc == CL_MEM_OBJECT_ALLOCATION_FAILURE)
                                   ? PLX_OUT_OF_MEMORY
                                   : PLX_INTERNAL;
        char nb[32];
        return host->status_create(host, code, "%s",
                                   w->error[0] ? w->error : ocl_error_name(rc, nb, sizeof nb));
    }
    /* Synchronous (R-18 (7)): the next layer may run on another queue, or
     * be the host mapping the outputs. */
    rc = clFinish(w->queue);
    if (rc != CL_SUCCESS) {
        return cl_failure(host, rc, PLX_INTERNAL, "clFinish");
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Descriptor and entry                                                       */
/* ------------------------------------------------------------------------ */

static const plx_backend_functions gpu_opencl_functions = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_functions, get_memory_strategy),
    .check_available = gpu_opencl_check_available,
    .create = gpu_opencl_create,
    .destroy = gpu_opencl_destroy,
    .get_capabilities = gpu_opencl_get_capabilities,
    .check_layer = gpu_opencl_check_layer,
    .create_factory = gpu_opencl_create_factory,
    .destroy_factory = gpu_opencl_destroy_factory,
    .factory_workloads_created = NULL,
    .create_tensor_handle = gpu_opencl_create_tensor_handle,
    .destroy_tensor_handle = gpu_opencl_destroy_tensor_handle,
    .allocate_tensor_handle = gpu_opencl_allocate_tensor_handle,
    .release_tensor_handle = gpu_opencl_release_tensor_handle,
    .map_tensor_handle = gpu_opencl_map_tensor_handle,
    .unmap_tensor_handle = gpu_opencl_unmap_tensor_handle,
    .import_tensor_handle = gpu_opencl_import_tensor_handle,
    .unimport_tensor_handle = gpu_opencl_unimport_tensor_handle,
    .create_workload = gpu_opencl_create_workload,
    .destroy_workload = gpu_opencl_destroy_workload,
    .configure_workload = NULL,
    .execute_workload = gpu_opencl_execute_workload,
    .create_sub_tensor_handle = NULL, /* see struct plx_tensor_handle */
    .get_memory_strategy = NULL,      /* the host's default, greedy */
};

static const plx_backend_descriptor gpu_opencl_descriptor = {
    .struct_size = PLX_STRUCT_SIZE_UPTO(plx_backend_descriptor, option_count),
    .abi_version = PLX_MAKE_ABI_VERSION(PLX_ABI_VERSION_MAJOR, PLX_ABI_VERSION_MINOR),
    .id = GPU_OPENCL_ID,
    .name = "OpenCL GPU backend",
    .version = "0.1.0",
    .functions = &gpu_opencl_functions,
    .options = gpu_opencl_options,
    .option_count = GPU_OPENCL_OPTION_COUNT,
};

/* the descriptor claims the SDK's minor version; a host older than
 * that refuses it with a clear reason, so only the major needs checking. */
const plx_backend_descriptor *plx_backend_entry(uint32_t host_abi_version, const plx_host *host) {
    if (PLX_ABI_VERSION_GET_MAJOR(host_abi_version) != PLX_ABI_VERSION_MAJOR) {
        host->log(host, PLX_LOG_ERROR,
                  "gpu_opencl implements backend ABI %d.x; the host implements %u.%u",
                  PLX_ABI_VERSION_MAJOR, PLX_ABI_VERSION_GET_MAJOR(host_abi_version),
                  PLX_ABI_VERSION_GET_MINOR(host_abi_version));
        return NULL;
    }
    return &gpu_opencl_descriptor;
}
