/* gpu_opencl: finding the platforms and devices, the backend options, and
 * choosing the device from them; apart from the instance so that every rule
 * of the choice (and every refusal message) reads in one place. */
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

/* The least local memory the operators' kernels are written for. */
#define GPU_OPENCL_MIN_LOCAL_MEM (16u * 1024u)
/* The most devices looked at (every platform together). */
#define GPU_OPENCL_MAX_DEVICES 64

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

const char *ocl_device_type_name(cl_device_type t) {
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
void ocl_device_list_free(const plx_host *host, device_list *l) {
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

static pthread_mutex_t platform_lock = PTHREAD_MUTEX_INITIALIZER;

void ocl_platform_lock(void) {
    pthread_mutex_lock(&platform_lock);
}

void ocl_platform_unlock(void) {
    pthread_mutex_unlock(&platform_lock);
}

/* ocl_enumerate_devices without the lock. */
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

/* Every device of every platform, in platform order then device order.
 * Returns NULL, or a PLX_UNAVAILABLE / PLX_OUT_OF_MEMORY status. */
plx_status ocl_enumerate_devices(const plx_host *host, device_list *out) {
    ocl_platform_lock();
    plx_status s = enumerate_devices(host, out);
    ocl_platform_unlock();
    return s;
}

/* ------------------------------------------------------------------------ */
/* Options                                                              */
/* ------------------------------------------------------------------------ */

const plx_option_info ocl_options[] = {
    {"platform", "OpenCL platform: index, or a case-insensitive substring of its name", NULL},
    {"device", "index (in the platform when 'platform' is given, else among every device, "
               "as gpu_opencl.devices lists them), or a case-insensitive substring of the "
               "device's name", NULL},
    {"device_type", "gpu, cpu, accelerator or all; unset: a GPU when there is one, else any "
                    "device", NULL},
    {"cache_dir", "directory for compiled program binaries (created when missing); unset: no "
                  "cache", NULL},
    {"queued", "on: report queued_execution, so the host enqueues a working memory's layers on "
               "one in-order queue and waits only where results leave the device (R-24); off: "
               "every layer waits for its kernels (clFinish), as before ABI 1.4", "on"},
    {"planned_memory", "device: report allocates_planned_memory, so the planned intermediate "
                       "tensors of externally managed memory live in cl_mem buffers the "
                       "backend allocates (R-26); host: in host memory the host allocates "
                       "and the backend wraps (CL_MEM_USE_HOST_PTR), as before ABI 1.4",
     "device"},
};

static plx_status bad_option(const plx_host *host, const char *key, const char *value,
                             const char *expected) {
    return host->status_create(host, PLX_INVALID_ARGUMENT,
                               "invalid value '%s' for option '%s' of backend '" GPU_OPENCL_ID
                               "': expected %s", value, key, expected);
}

plx_status ocl_parse_options(const plx_host *host, const plx_option *options, size_t count,
                                parsed_options *out) {
    memset(out, 0, sizeof *out);
    out->type = TYPE_DEFAULT;
    out->type_text = "default";
    out->queued = true;
    out->planned_device = true;
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
        } else if (strcmp(k, "queued") == 0) {
            if (equals_nocase(v, "on")) {
                out->queued = true;
            } else if (equals_nocase(v, "off")) {
                out->queued = false;
            } else {
                return bad_option(host, k, v, "on or off");
            }
        } else if (strcmp(k, "planned_memory") == 0) {
            if (equals_nocase(v, "device")) {
                out->planned_device = true;
            } else if (equals_nocase(v, "host")) {
                out->planned_device = false;
            } else {
                return bad_option(host, k, v, "device or host");
            }
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
            ocl_append(buf, size, "%s%zu '%s' (%s)", first ? "" : ", ", i, l->items[i].name,
                   ocl_device_type_name(l->items[i].type));
            first = false;
        }
    }
    if (first) {
        ocl_append(buf, size, "none");
    }
}

/* Chooses the device: writes its index and why, or returns a status naming
 * the option that found nothing (PLX_UNAVAILABLE: the options are well
 * formed, this machine has no such device). */
plx_status ocl_choose_device(const plx_host *host, const device_list *l,
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
                ocl_append(text, sizeof text, "%s%u '%s'", p ? ", " : "", p, l->platform_names[p]);
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
                                       ocl_device_type_name(s->type), o->type_text);
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
                    ocl_append(why, why_size, " of platform %s", o->platform);
                }
                return NULL;
            }
        }
    }
    text[0] = '\0';
    bool any_of_type = false;
    for (size_t i = 0; i < l->count; i++) {
        if (in[i] && type_matches(o->type, l->items[i].type)) {
            ocl_append(text, sizeof text, "%s%zu '%s' (%s): %s", any_of_type ? "; " : "", i,
                   l->items[i].name, ocl_device_type_name(l->items[i].type),
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

