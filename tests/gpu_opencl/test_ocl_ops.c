/* gpu_opencl's operators called directly, without the backend plumbing:
 * for each case, shape inference (the core's plxi_infer_layer) gives the
 * output infos, cpu_ref's kernel computes the expected outputs, and
 * ocl_op_check + ocl_op_prepare + ocl_plan_enqueue run the layer on the
 * first OpenCL device (the program built here from ocl_program_source()).
 * Float32 outputs agree within a relative tolerance (1e-4; 1e-3 for long
 * sums), everything else exactly. Refused cases must come with a reason.
 *
 * Without an OpenCL platform every test skips with the reason, unless
 * PLEXUS_REQUIRE_OPENCL=1 makes that a failure. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plexus/plexus.h>

#include "kernels.h"
#include "ocl_ops.h"
#include "shape_infer.h"

/* ---- the device --------------------------------------------------------- */

static ocl_device dev;
static cl_command_queue queue;

static bool open_device(char *why, size_t size) {
    cl_uint np = 0;
    cl_platform_id platform;
    if (clGetPlatformIDs(1, &platform, &np) != CL_SUCCESS || np == 0) {
        snprintf(why, size, "no OpenCL platform");
        return false;
    }
    cl_device_id device;
    cl_uint nd = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, &nd) != CL_SUCCESS || nd == 0) {
        snprintf(why, size, "the first OpenCL platform has no device");
        return false;
    }
    cl_int rc = CL_SUCCESS;
    memset(&dev, 0, sizeof dev);
    dev.platform = platform;
    dev.device = device;
    dev.context = clCreateContext(NULL, 1, &device, NULL, NULL, &rc);
    if (rc != CL_SUCCESS) {
        snprintf(why, size, "clCreateContext failed (%d)", (int)rc);
        return false;
    }
    clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof dev.max_work_group_size,
                    &dev.max_work_group_size, NULL);
    clGetDeviceInfo(device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof dev.local_mem_size,
                    &dev.local_mem_size, NULL);
    clGetDeviceInfo(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof dev.mem_base_addr_align,
                    &dev.mem_base_addr_align, NULL);
    const char *src = ocl_program_source();
    dev.program = clCreateProgramWithSource(dev.context, 1, &src, NULL, &rc);
    cr_assert(rc == CL_SUCCESS, "clCreateProgramWithSource: %d", (int)rc);
    const char *opts = "-cl-std=CL1.2";
    rc = clBuildProgram(dev.program, 1, &device, opts, NULL, NULL);
    if (rc != CL_SUCCESS) {
        static char log[65536];
        log[0] = '\0';
        clGetProgramBuildInfo(dev.program, device, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        cr_fatal("the kernels do not build (%d):\n%s", (int)rc, log);
    }
    queue = clCreateCommandQueue(dev.context, device, 0, &rc);
    cr_assert(rc == CL_SUCCESS, "clCreateCommandQueue: %d", (int)rc);
    return true;
}

/* Opens the device or skips the test (fails it with PLEXUS_REQUIRE_OPENCL=1). */
static void need_device(void) {
    char why[128];
    if (open_device(why, sizeof why)) {
        return;
    }
    const char *req = getenv("PLEXUS_REQUIRE_OPENCL");
    if (req && strcmp(req, "1") == 0) {
        cr_fatal("PLEXUS_REQUIRE_OPENCL=1, but %s", why);
    }
    cr_skip_test("%s", why);
}

/* ---- random data -------------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint32_t next_u32(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

static float uniform(float lo, float hi) {
    return lo + (hi - lo) * (float)(next_u32() & 0xffffff) / 16777216.0f;
}

/* ---- cases -------------------------------------------------------------- */

#define MAX_SLOTS 8

typedef struct tcase {
    const char *name;
    plx_op op;
    const void *desc;
    uint32_t nin, nout;
    plx_tensor_info in[MAX_SLOTS];
    void *data[MAX_SLOTS];
    const void *constants[MAX_SLOTS];
    bool any_constant;
    double rtol;
} tcase;

static tcase tc_new(const char *name, plx_op op, const void *desc, uint32_t nout) {
    tcase t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.op = op;
    t.desc = desc;
    t.nout = nout;
    t.rtol = 1e-4;
    return t;
}

static size_t count_of(const plx_tensor_info *t) {
    size_t n = 1;
    for (uint32_t i = 0; i < t->rank; i++) {
        n *= (size_t)t->dims[i];
    }
    return n;
}

/* Adds an input with random data: floats uniform in [lo, hi], integers in
 * [lo, hi] (bool 0/1); returns the data to adjust. */
static void *add_input_range(tcase *t, plx_dtype dt, uint32_t rank, const int64_t *dims,
                             float lo, float hi) {
    cr_assert(t->nin < MAX_SLOTS);
    plx_tensor_info *ti = &t->in[t->nin];
    memset(ti, 0, sizeof *ti);
    ti->dtype = dt;
    ti->rank = rank;
    for (uint32_t i = 0; i < rank; i++) {
        ti->dims[i] = dims[i];
    }
    size_t n = count_of(ti), es = plx_dtype_size(dt);
    unsigned char *p = calloc(n ? n : 1, es);
    cr_assert(p != NULL);
    for (size_t i = 0; i < n; i++) {
        float f = uniform(lo, hi);
        int64_t v = (int64_t)floorf(f + 0.5f);
        switch (dt) {
        case PLX_DTYPE_FLOAT32: ((float *)p)[i] = f; break;
        case PLX_DTYPE_FLOAT16: ((uint16_t *)p)[i] = plx_float32_to_float16(f); break;
        case PLX_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
        case PLX_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
        case PLX_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
        case PLX_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
        case PLX_DTYPE_INT64: ((int64_t *)p)[i] = v; break;
        case PLX_DTYPE_BOOL: ((uint8_t *)p)[i] = (uint8_t)(next_u32() & 1u); break;
        case PLX_DTYPE_FLOAT64: ((double *)p)[i] = (double)f + (double)next_u32() * 1e-15; break;
        case PLX_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)next_u32(); break;
        case PLX_DTYPE_UINT32: ((uint32_t *)p)[i] = next_u32(); break;
        case PLX_DTYPE_UINT64:
            ((uint64_t *)p)[i] = (uint64_t)next_u32() << 32 | next_u32();
            break;
        default: break;
        }
    }
    t->data[t->nin++] = p;
    return p;
}

static void *add_input(tcase *t, plx_dtype dt, uint32_t rank, const int64_t *dims) {
    bool is_int = dt != PLX_DTYPE_FLOAT32 && dt != PLX_DTYPE_FLOAT16;
    return add_input_range(t, dt, rank, dims, is_int ? -20.0f : -1.0f, is_int ? 20.0f : 1.0f);
}

/* Marks the last input as fed by a constant layer. */
static void last_constant(tcase *t) {
    t->constants[t->nin - 1] = t->data[t->nin - 1];
    t->any_constant = true;
}

#define DIMS(...) (uint32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (const int64_t[]){__VA_ARGS__}

static void free_case(tcase *t) {
    for (uint32_t i = 0; i < t->nin; i++) {
        free(t->data[i]);
    }
}

static plx_layer_view view_of(const tcase *t, const plx_tensor_info *outs) {
    plx_layer_view v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.name = t->name;
    v.op = t->op;
    v.desc = t->desc;
    v.inputs = t->in;
    v.input_count = t->nin;
    v.outputs = outs;
    v.output_count = t->nout;
    v.input_constants = t->any_constant ? t->constants : NULL;
    return v;
}

static void infer(const tcase *t, plx_tensor_info *outs) {
    memset(outs, 0, sizeof(plx_tensor_info) * MAX_SLOTS);
    plx_status st = plxi_infer_layer(t->name, t->op, t->desc, t->in, t->nin, outs, t->nout);
    if (st) {
        cr_fatal("%s: shape inference failed: %s", t->name, plx_status_get_message(st));
    }
}

static bool close_enough(float got, float want, double rtol) {
    if (isnan(want)) {
        return isnan(got);
    }
    if (isinf(want)) {
        return got == want;
    }
    return fabs((double)got - (double)want) <= rtol * fabs((double)want) + rtol / 100.0;
}

static cl_mem buffer_of(const void *data, size_t bytes, bool writable) {
    cl_int rc = CL_SUCCESS;
    cl_mem m = clCreateBuffer(dev.context,
                              (writable ? CL_MEM_READ_WRITE : CL_MEM_READ_ONLY) |
                                  (data && bytes ? CL_MEM_COPY_HOST_PTR : 0),
                              bytes ? bytes : 16, data && bytes ? (void *)(uintptr_t)data : NULL,
                              &rc);
    cr_assert(rc == CL_SUCCESS, "clCreateBuffer: %d", (int)rc);
    return m;
}

/* Runs the case on cpu_ref and on the device and compares; frees it. */
static void run_case(tcase *t) {
    plx_tensor_info outs[MAX_SLOTS];
    infer(t, outs);
    plx_layer_view v = view_of(t, outs);

    plxk_check_fn ref_check;
    plxk_run_fn ref_run;
    cr_assert(plxk_kernel_lookup(t->op, &ref_check, &ref_run), "%s: no cpu_ref kernel", t->name);
    char why[256];
    const char *ref_why = ref_check(&v, why, sizeof why);
    cr_assert(ref_why == NULL, "%s: cpu_ref refuses: %s", t->name, ref_why);
    void *expect[MAX_SLOTS], *got[MAX_SLOTS];
    size_t bytes[MAX_SLOTS];
    for (uint32_t i = 0; i < t->nout; i++) {
        bytes[i] = count_of(&outs[i]) * plx_dtype_size(outs[i].dtype);
        expect[i] = calloc(bytes[i] ? bytes[i] : 1, 1);
        got[i] = malloc(bytes[i] ? bytes[i] : 1);
        cr_assert(expect[i] && got[i]);
    }
    char err[256] = "";
    plxk_kernel_args args = {.layer = &v,
                                .inputs = (const void *const *)t->data,
                                .outputs = expect,
                                .error = err,
                                .error_size = sizeof err};
    cr_assert(plxk_kernel_run_once(ref_run, &args), "%s: cpu_ref fails: %s", t->name, err);

    const char *ocl_why = ocl_op_check(&dev, &v, why, sizeof why);
    cr_assert(ocl_why == NULL, "%s: gpu_opencl refuses: %s", t->name, ocl_why);
    ocl_plan plan;
    cr_assert(ocl_op_prepare(&dev, &v, &plan, err, sizeof err), "%s: prepare failed: %s", t->name,
              err);

    cl_mem in[MAX_SLOTS], out[MAX_SLOTS];
    for (uint32_t i = 0; i < t->nin; i++) {
        in[i] = buffer_of(t->data[i], count_of(&t->in[i]) * plx_dtype_size(t->in[i].dtype), false);
    }
    for (uint32_t i = 0; i < t->nout; i++) {
        /* poisoned, so that an element never written shows */
        memset(got[i], 0xa5, bytes[i]);
        out[i] = buffer_of(got[i], bytes[i], true);
    }
    cl_int rc = ocl_plan_enqueue(&plan, queue, in, out, err, sizeof err);
    cr_assert(rc == CL_SUCCESS, "%s: enqueue failed: %s", t->name, err);
    rc = clFinish(queue);
    cr_assert(rc == CL_SUCCESS, "%s: clFinish: %d", t->name, (int)rc);
    cr_assert(ocl_plan_check(&plan, queue, in, err, sizeof err), "%s: index check: %s", t->name,
              err);
    for (uint32_t i = 0; i < t->nout; i++) {
        if (bytes[i]) {
            rc = clEnqueueReadBuffer(queue, out[i], CL_TRUE, 0, bytes[i], got[i], 0, NULL, NULL);
            cr_assert(rc == CL_SUCCESS, "%s: read: %d", t->name, (int)rc);
        }
        if (outs[i].dtype == PLX_DTYPE_FLOAT32) {
            const float *g = got[i], *e = expect[i];
            for (size_t j = 0; j < bytes[i] / 4; j++) {
                if (!close_enough(g[j], e[j], t->rtol)) {
                    cr_fatal("%s: output %u element %zu of %zu: got %.9g, expected %.9g", t->name,
                             i, j, bytes[i] / 4, (double)g[j], (double)e[j]);
                }
            }
        } else {
            const unsigned char *g = got[i], *e = expect[i];
            size_t es = plx_dtype_size(outs[i].dtype);
            for (size_t j = 0; j < bytes[i]; j++) {
                if (g[j] != e[j]) {
                    cr_fatal("%s: output %u (%s) element %zu differs (byte %zu: %u, expected %u)",
                             t->name, i, plx_dtype_name(outs[i].dtype), j / es, j % es,
                             (unsigned)g[j], (unsigned)e[j]);
                }
            }
        }
    }
    for (uint32_t i = 0; i < t->nin; i++) {
        clReleaseMemObject(in[i]);
    }
    for (uint32_t i = 0; i < t->nout; i++) {
        clReleaseMemObject(out[i]);
        free(expect[i]);
        free(got[i]);
    }
    ocl_plan_release(&plan);
    free_case(t);
}

/* The case must be refused with a reason containing `needle`; frees it. */
static void expect_refused(tcase *t, const plx_tensor_info *outs, const char *needle) {
    plx_layer_view v = view_of(t, outs);
    char why[256];
    const char *r = ocl_op_check(&dev, &v, why, sizeof why);
    cr_assert(r != NULL, "%s: accepted, expected a refusal with '%s'", t->name, needle);
    cr_assert(strstr(r, needle) != NULL, "%s: reason '%s' lacks '%s'", t->name, r, needle);
    ocl_plan plan;
    char err[256] = "";
    cr_assert(ocl_op_prepare(&dev, &v, &plan, err, sizeof err) == false,
              "%s: prepare accepted a refused layer", t->name);
    cr_assert(strstr(err, needle) != NULL, "%s: prepare's error '%s' lacks '%s'", t->name, err,
              needle);
    free_case(t);
}

static void refused_inferred(tcase *t, const char *needle) {
    plx_tensor_info outs[MAX_SLOTS];
    infer(t, outs);
    expect_refused(t, outs, needle);
}

TestSuite(ocl_ops, .timeout = 300);

/* ---- runtime ------------------------------------------------------------ */

Test(ocl_ops, error_names) {
    char buf[32];
    cr_assert(strcmp(ocl_error_name(CL_SUCCESS, buf, sizeof buf), "CL_SUCCESS") == 0);
    cr_assert(strcmp(ocl_error_name(CL_INVALID_WORK_GROUP_SIZE, buf, sizeof buf),
                     "CL_INVALID_WORK_GROUP_SIZE") == 0);
    cr_assert(strcmp(ocl_error_name(CL_INVALID_DEVICE_PARTITION_COUNT, buf, sizeof buf),
                     "CL_INVALID_DEVICE_PARTITION_COUNT") == 0);
    cr_assert(strcmp(ocl_error_name(CL_KERNEL_ARG_INFO_NOT_AVAILABLE, buf, sizeof buf),
                     "CL_KERNEL_ARG_INFO_NOT_AVAILABLE") == 0);
    cr_assert(strcmp(ocl_error_name(-9999, buf, sizeof buf), "CL error -9999") == 0);
    /* every CL 1.2 code has a name */
    for (cl_int c = 0; c >= -68; c--) {
        if (c < -19 && c > -30) {
            continue; /* unassigned */
        }
        const char *n = ocl_error_name(c, buf, sizeof buf);
        cr_assert(strncmp(n, "CL_", 3) == 0, "code %d has no name (%s)", (int)c, n);
    }
}

Test(ocl_ops, plans) {
    need_device();
    ocl_plan plan;
    memset(&plan, 0, sizeof plan);
    char err[256];
    ocl_launch *l;
    cr_assert(ocl_plan_kernel(&plan, &dev, "no_such_kernel", &l, err, sizeof err) == false);
    cr_assert(strstr(err, "clCreateKernel(no_such_kernel): CL_INVALID_KERNEL_NAME") != NULL, "%s", err);
    cr_assert(ocl_plan_kernel(&plan, &dev, "conv2d_direct", &l, err, sizeof err), "%s", err);
    size_t global = 10, local = 4;
    ocl_launch_range(l, 1, &global, &local);
    cr_assert(l->global[0] == 12 && l->local[0] == 4 && l->has_local);
    /* a work-group size that does not divide the global size */
    l->global[0] = 8;
    l->local[0] = 3;
    cl_int rc = ocl_plan_enqueue(&plan, queue, NULL, NULL, err, sizeof err);
    cr_assert(rc != CL_SUCCESS);
    /* arguments are set first: a missing buffer fails there */
    ocl_plan_release(&plan);
    cr_assert(plan.count == 0 && plan.aux_count == 0);

    /* full plans */
    for (int i = 0; i < OCL_MAX_LAUNCHES; i++) {
        cr_assert(ocl_plan_copy(&plan, 0, 0, 4, err, sizeof err));
    }
    cr_assert(ocl_plan_copy(&plan, 0, 0, 4, err, sizeof err) == false);
    cr_assert(strstr(err, "plan full") != NULL, "%s", err);
    ocl_plan_release(&plan);

    /* the enqueue error names the kernel and the code */
    int32_t zero = 0;
    uint32_t slot;
    cr_assert(ocl_plan_aux(&plan, &dev, &zero, sizeof zero, &slot, err, sizeof err), "%s", err);
    cr_assert(ocl_plan_kernel(&plan, &dev, "conv2d_direct", &l, err, sizeof err), "%s", err);
    for (int i = 0; i < 4; i++) {
        ocl_arg_aux(l, slot);
    }
    ocl_arg_int(l, 0);
    cl_int16 g;
    memset(&g, 0, sizeof g);
    ocl_arg_value(l, &g, sizeof g);
    global = 8;
    local = 4;
    ocl_launch_range(l, 1, &global, &local);
    l->local[0] = 3; /* does not divide 8 */
    rc = ocl_plan_enqueue(&plan, queue, NULL, NULL, err, sizeof err);
    cr_assert(rc == CL_INVALID_WORK_GROUP_SIZE, "%d: %s", (int)rc, err);
    cr_assert(strcmp(err, "clEnqueueNDRangeKernel(conv2d_direct): CL_INVALID_WORK_GROUP_SIZE") == 0,
              "%s", err);
    ocl_plan_release(&plan);
}

/* A plan binds its buffers at enqueue time: one plan runs on other
 * buffers, and a copy whose output is its input is skipped. */
Test(ocl_ops, plan_reuse) {
    need_device();
    plx_binary_desc d = PLX_BINARY_DESC_INIT(PLX_BINARY_SUB);
    tcase t = tc_new("sub", PLX_OP_BINARY, &d, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4, 5));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(5));
    plx_tensor_info outs[MAX_SLOTS];
    infer(&t, outs);
    plx_layer_view v = view_of(&t, outs);
    ocl_plan plan;
    char err[256];
    cr_assert(ocl_op_prepare(&dev, &v, &plan, err, sizeof err), "%s", err);
    for (int round = 0; round < 3; round++) {
        float a[20], b[5], y[20];
        for (int i = 0; i < 20; i++) {
            a[i] = uniform(-5.0f, 5.0f);
        }
        for (int i = 0; i < 5; i++) {
            b[i] = uniform(-5.0f, 5.0f);
        }
        cl_mem in[2] = {buffer_of(a, sizeof a, false), buffer_of(b, sizeof b, false)};
        cl_mem out = buffer_of(NULL, sizeof y, true);
        cl_int rc = ocl_plan_enqueue(&plan, queue, in, &out, err, sizeof err);
        cr_assert(rc == CL_SUCCESS, "%s", err);
        rc = clEnqueueReadBuffer(queue, out, CL_TRUE, 0, sizeof y, y, 0, NULL, NULL);
        cr_assert(rc == CL_SUCCESS);
        for (int i = 0; i < 20; i++) {
            cr_assert(y[i] == a[i] - b[i % 5], "round %d element %d", round, i);
        }
        clReleaseMemObject(in[0]);
        clReleaseMemObject(in[1]);
        clReleaseMemObject(out);
    }
    ocl_plan_release(&plan);
    free_case(&t);

    /* reshape in place: the copy is skipped */
    plx_reshape_desc rd = PLX_RESHAPE_DESC_INIT;
    rd.rank = 1;
    rd.dims[0] = -1;
    t = tc_new("reshape", PLX_OP_RESHAPE, &rd, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3));
    infer(&t, outs);
    v = view_of(&t, outs);
    cr_assert(ocl_op_prepare(&dev, &v, &plan, err, sizeof err), "%s", err);
    cl_mem m = buffer_of(t.data[0], 6 * sizeof(float), true);
    cr_assert(ocl_plan_enqueue(&plan, queue, &m, &m, err, sizeof err) == CL_SUCCESS, "%s", err);
    float back[6];
    cr_assert(clEnqueueReadBuffer(queue, m, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL) == CL_SUCCESS);
    cr_assert(memcmp(back, t.data[0], sizeof back) == 0);
    clReleaseMemObject(m);
    ocl_plan_release(&plan);
    free_case(&t);
}

/* ---- data movement as copies --------------------------------------------- */

Test(ocl_ops, reshape_family) {
    need_device();
    static const plx_dtype types[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_INT64, PLX_DTYPE_UINT8,
                                      PLX_DTYPE_FLOAT16, PLX_DTYPE_BOOL};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        plx_reshape_desc rd = PLX_RESHAPE_DESC_INIT;
        rd.rank = 2;
        rd.dims[0] = 6;
        rd.dims[1] = -1;
        tcase t = tc_new("reshape", PLX_OP_RESHAPE, &rd, 1);
        add_input(&t, types[i], DIMS(2, 3, 4));
        run_case(&t);

        plx_axis_desc fd = PLX_AXIS_DESC_INIT(2);
        t = tc_new("flatten", PLX_OP_FLATTEN, &fd, 1);
        add_input(&t, types[i], DIMS(2, 3, 4, 5));
        run_case(&t);

        plx_axes_desc sd = PLX_AXES_DESC_INIT;
        t = tc_new("squeeze", PLX_OP_SQUEEZE, &sd, 1);
        add_input(&t, types[i], DIMS(1, 3, 1, 5));
        run_case(&t);

        plx_axes_desc ud = PLX_AXES_DESC_INIT;
        ud.axis_count = 2;
        ud.axes[0] = 0;
        ud.axes[1] = -1;
        t = tc_new("unsqueeze", PLX_OP_UNSQUEEZE, &ud, 1);
        add_input(&t, types[i], DIMS(3, 5));
        run_case(&t);
    }
    /* empty */
    plx_reshape_desc rd = PLX_RESHAPE_DESC_INIT;
    rd.rank = 2;
    rd.dims[0] = 0;
    rd.dims[1] = 3;
    rd.allow_zero = true;
    tcase t = tc_new("reshape_empty", PLX_OP_RESHAPE, &rd, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(3, 0));
    run_case(&t);
}

/* ---- elementwise ------------------------------------------------------- */

Test(ocl_ops, activation) {
    need_device();
    for (int f = PLX_ACT_RELU; f <= PLX_ACT_SCALED_TANH; f++) {
        plx_activation_desc d = PLX_ACTIVATION_DESC_INIT((plx_activation_func)f);
        if (f == PLX_ACT_CLIP) {
            d.alpha = -0.5f;
            d.beta = 0.75f;
        }
        if (f == PLX_ACT_SCALED_TANH) {
            d.alpha = 1.5f;
            d.beta = 0.5f;
        }
        if (f == PLX_ACT_AFFINE) {
            d.alpha = 2.0f;
            d.beta = -0.25f;
        }
        char name[32];
        snprintf(name, sizeof name, "activation_%d", f);
        tcase t = tc_new(name, PLX_OP_ACTIVATION, &d, 1);
        float *x = add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(3, 7, 11), -6.0f, 6.0f);
        x[0] = 0.0f;
        x[1] = NAN;
        x[2] = INFINITY;
        x[3] = -INFINITY;
        x[4] = 40.0f;
        x[5] = -40.0f;
        run_case(&t);
    }
    plx_activation_desc d = PLX_ACTIVATION_DESC_INIT(PLX_ACT_GELU);
    d.alpha = 1.0f; /* tanh approximation */
    tcase t = tc_new("gelu_tanh", PLX_OP_ACTIVATION, &d, 1);
    add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(1000), -5.0f, 5.0f);
    run_case(&t);
    /* empty */
    plx_activation_desc r = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    t = tc_new("relu_empty", PLX_OP_ACTIVATION, &r, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(0, 3));
    run_case(&t);
}

Test(ocl_ops, unary) {
    need_device();
    for (int f = PLX_UNARY_ABS; f <= PLX_UNARY_SIGN; f++) {
        plx_unary_desc d = PLX_UNARY_DESC_INIT((plx_unary_func)f);
        char name[32];
        snprintf(name, sizeof name, "unary_%d", f);
        tcase t = tc_new(name, PLX_OP_UNARY, &d, 1);
        if (f == PLX_UNARY_NOT) {
            add_input(&t, PLX_DTYPE_BOOL, DIMS(4, 33));
            run_case(&t);
            continue;
        }
        float lo = -3.0f, hi = 3.0f;
        switch (f) {
        case PLX_UNARY_SQRT:
        case PLX_UNARY_LOG: lo = 0.01f; hi = 10.0f; break;
        case PLX_UNARY_ASIN:
        case PLX_UNARY_ACOS:
        case PLX_UNARY_ATANH: lo = -0.99f; hi = 0.99f; break;
        case PLX_UNARY_ACOSH: lo = 1.0f; hi = 10.0f; break;
        case PLX_UNARY_TAN: lo = -1.4f; hi = 1.4f; break;
        default: break;
        }
        float *x = add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(4, 33), lo, hi);
        if (f == PLX_UNARY_ROUND) {
            x[0] = 0.5f;
            x[1] = 1.5f;
            x[2] = 2.5f;
            x[3] = -0.5f;
            x[4] = -2.5f;
        }
        if (f == PLX_UNARY_SIGN || f == PLX_UNARY_ABS || f == PLX_UNARY_NEG) {
            x[0] = 0.0f;
            x[1] = -0.0f;
            x[2] = NAN;
        }
        run_case(&t);
    }
}

Test(ocl_ops, binary) {
    need_device();
    static const int64_t shapes[][2][5] = {
        /* rank a, dims a..., | rank b, dims b... */
        {{3, 2, 3, 4}, {3, 2, 3, 4}},
        {{3, 2, 3, 4}, {1, 4}},
        {{3, 2, 1, 4}, {2, 3, 1}},
        {{1, 1}, {4, 2, 3, 4, 5}},
        {{0}, {2, 5, 7}},
    };
    for (int f = PLX_BINARY_ADD; f <= PLX_BINARY_MOD; f++) {
        if (f == PLX_BINARY_AND || f == PLX_BINARY_OR || f == PLX_BINARY_XOR) {
            continue;
        }
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            if (f == PLX_BINARY_PRELU && s != 1 && s != 0) {
                continue; /* the slope broadcasts to A */
            }
            plx_binary_desc d = PLX_BINARY_DESC_INIT((plx_binary_func)f);
            char name[32];
            snprintf(name, sizeof name, "binary_%d_%zu", f, s);
            tcase t = tc_new(name, PLX_OP_BINARY, &d, 1);
            bool cmp = f == PLX_BINARY_EQUAL || f == PLX_BINARY_LESS || f == PLX_BINARY_GREATER ||
                       f == PLX_BINARY_GREATER_EQUAL || f == PLX_BINARY_LESS_EQUAL;
            for (int k = 0; k < 2; k++) {
                uint32_t rank = (uint32_t)shapes[s][k][0];
                float lo = f == PLX_BINARY_POW && k == 0 ? 0.1f : -2.0f;
                float *p = add_input_range(&t, PLX_DTYPE_FLOAT32, rank, &shapes[s][k][1], lo, 2.0f);
                size_t n = count_of(&t.in[k]);
                for (size_t j = 0; j < n; j++) {
                    if (cmp) {
                        p[j] = floorf(p[j] * 2.0f) / 2.0f; /* equal values happen */
                    }
                    if ((f == PLX_BINARY_DIV || f == PLX_BINARY_MOD) && k == 1 && fabsf(p[j]) < 0.1f) {
                        p[j] = 0.5f;
                    }
                }
                if (n > 3 && (f == PLX_BINARY_MAX || f == PLX_BINARY_MIN || cmp)) {
                    p[1] = NAN;
                }
            }
            run_case(&t);
        }
    }
    static const plx_binary_func logic[] = {PLX_BINARY_AND, PLX_BINARY_OR, PLX_BINARY_XOR,
                                            PLX_BINARY_EQUAL};
    for (size_t i = 0; i < 4; i++) {
        plx_binary_desc d = PLX_BINARY_DESC_INIT(logic[i]);
        tcase t = tc_new("logic", PLX_OP_BINARY, &d, 1);
        add_input(&t, PLX_DTYPE_BOOL, DIMS(3, 1, 5));
        uint8_t *b = add_input(&t, PLX_DTYPE_BOOL, DIMS(4, 5));
        b[0] = 7; /* any non-zero byte is true */
        run_case(&t);
    }
}

Test(ocl_ops, where) {
    need_device();
    static const plx_dtype types[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_INT64, PLX_DTYPE_UINT8,
                                      PLX_DTYPE_FLOAT16};
    for (size_t i = 0; i < 4; i++) {
        tcase t = tc_new("where", PLX_OP_WHERE, NULL, 1);
        add_input(&t, PLX_DTYPE_BOOL, DIMS(2, 1, 6));
        add_input(&t, types[i], DIMS(3, 6));
        add_input(&t, types[i], DIMS(2, 3, 1));
        run_case(&t);
    }
}

Test(ocl_ops, cast) {
    need_device();
    static const plx_dtype types[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_INT8,  PLX_DTYPE_UINT8,
                                      PLX_DTYPE_INT32,   PLX_DTYPE_INT64, PLX_DTYPE_BOOL,
                                      PLX_DTYPE_FLOAT16};
    for (size_t a = 0; a < 7; a++) {
        for (size_t b = 0; b < 7; b++) {
            plx_cast_desc d = PLX_CAST_DESC_INIT(types[b]);
            char name[48];
            snprintf(name, sizeof name, "cast_%s_%s", plx_dtype_name(types[a]),
                     plx_dtype_name(types[b]));
            tcase t = tc_new(name, PLX_OP_CAST, &d, 1);
            void *p = add_input_range(&t, types[a], DIMS(5, 41), -300.0f, 300.0f);
            if (types[a] == PLX_DTYPE_FLOAT32) {
                float *x = p;
                x[0] = NAN;
                x[1] = INFINITY;
                x[2] = -INFINITY;
                x[3] = 3e9f;
                x[4] = -3e9f;
                x[5] = 1e20f;
                x[6] = -0.99f;
                x[7] = 255.9f;
                x[8] = -128.5f;
                x[9] = 65520.0f;             /* rounds to float16 inf */
                x[10] = 65519.0f;            /* rounds to 65504 */
                x[11] = 5.9604645e-8f;       /* float16's smallest subnormal */
                x[12] = 2.9802322e-8f;       /* half of it: ties to 0 */
                x[13] = 1.0009765625f;       /* 1 + 2^-10: exact */
                x[14] = 1.00048828125f;      /* a tie to even */
                x[15] = -NAN;
            } else if (types[a] == PLX_DTYPE_INT64) {
                int64_t *x = p;
                x[0] = INT64_MAX;
                x[1] = INT64_MIN;
                x[2] = 0x123456789abll;
                x[3] = (int64_t)1 << 40;
                x[4] = 65519;
                x[5] = 65520;
                x[6] = 2049; /* a float16 tie */
            } else if (types[a] == PLX_DTYPE_INT32) {
                int32_t *x = p;
                x[0] = INT32_MAX;
                x[1] = INT32_MIN;
                x[2] = 16777217;
            } else if (types[a] == PLX_DTYPE_FLOAT16) {
                uint16_t *x = p;
                x[0] = 0x7e00;  /* NaN */
                x[1] = 0x7c00;  /* inf */
                x[2] = 0xfc00;  /* -inf */
                x[3] = 0x7bff;  /* 65504 */
                x[4] = 0x0001;  /* the smallest subnormal */
                x[5] = 0x8000;  /* -0 */
                x[6] = 0xd800;  /* -128 */
                x[7] = 0x5bff;  /* 255.875 */
            } else if (types[a] == PLX_DTYPE_BOOL) {
                ((uint8_t *)p)[0] = 9; /* non-zero byte reads true */
            }
            run_case(&t);
        }
    }
}

/* ---- compute ------------------------------------------------------------ */

typedef struct conv_case {
    int64_t n, c, h, w, m, kh, kw;
    int64_t sh, sw, dh, dw, pt, pl, pb, pr, group;
    plx_auto_pad ap;
    bool bias, one_d;
} conv_case;

Test(ocl_ops, conv) {
    need_device();
    static const conv_case cases[] = {
        {1, 3, 9, 11, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, PLX_AUTO_PAD_NOTSET, true, false},
        {2, 4, 10, 9, 6, 3, 2, 2, 1, 1, 1, 0, 1, 2, 0, 1, PLX_AUTO_PAD_NOTSET, false, false},
        {1, 4, 12, 12, 8, 3, 3, 1, 2, 2, 2, 2, 1, 2, 1, 2, PLX_AUTO_PAD_NOTSET, true, false},
        {2, 6, 8, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6, PLX_AUTO_PAD_NOTSET, true, false}, /* depthwise */
        {1, 4, 7, 7, 8, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 4, PLX_AUTO_PAD_SAME_UPPER, true, false}, /* depthwise x2 */
        {2, 8, 6, 5, 16, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, PLX_AUTO_PAD_NOTSET, true, false}, /* 1x1 */
        {1, 8, 6, 5, 12, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, PLX_AUTO_PAD_NOTSET, false, false}, /* 1x1 groups */
        {1, 16, 20, 20, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, PLX_AUTO_PAD_NOTSET, true, false}, /* tiled GEMM */
        {1, 3, 9, 10, 5, 4, 3, 2, 3, 1, 1, 0, 0, 0, 0, 1, PLX_AUTO_PAD_SAME_UPPER, true, false},
        {1, 3, 9, 10, 5, 4, 3, 2, 3, 1, 1, 0, 0, 0, 0, 1, PLX_AUTO_PAD_SAME_LOWER, true, false},
        {1, 3, 9, 10, 5, 4, 3, 2, 3, 1, 1, 0, 0, 0, 0, 1, PLX_AUTO_PAD_VALID, false, false},
        {2, 4, 1, 17, 6, 1, 5, 1, 2, 1, 3, 0, 2, 0, 1, 2, PLX_AUTO_PAD_NOTSET, true, true}, /* 1-D */
        {1, 1, 1, 30, 1, 1, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, PLX_AUTO_PAD_SAME_UPPER, true, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const conv_case *c = &cases[i];
        plx_conv_desc d = PLX_CONV_DESC_INIT;
        d.group = c->group;
        d.auto_pad = c->ap;
        if (c->one_d) {
            d.strides[0] = c->sw;
            d.dilations[0] = c->dw;
            d.pads_begin[0] = c->pl;
            d.pads_end[0] = c->pr;
        } else {
            d.strides[0] = c->sh;
            d.strides[1] = c->sw;
            d.dilations[0] = c->dh;
            d.dilations[1] = c->dw;
            d.pads_begin[0] = c->pt;
            d.pads_begin[1] = c->pl;
            d.pads_end[0] = c->pb;
            d.pads_end[1] = c->pr;
        }
        char name[32];
        snprintf(name, sizeof name, "conv_%zu", i);
        tcase t = tc_new(name, PLX_OP_CONV, &d, 1);
        t.rtol = 1e-3;
        if (c->one_d) {
            add_input(&t, PLX_DTYPE_FLOAT32, DIMS(c->n, c->c, c->w));
            add_input(&t, PLX_DTYPE_FLOAT32, DIMS(c->m, c->c / c->group, c->kw));
        } else {
            add_input(&t, PLX_DTYPE_FLOAT32, DIMS(c->n, c->c, c->h, c->w));
            add_input(&t, PLX_DTYPE_FLOAT32, DIMS(c->m, c->c / c->group, c->kh, c->kw));
        }
        last_constant(&t);
        if (c->bias) {
            add_input(&t, PLX_DTYPE_FLOAT32, DIMS(c->m));
        }
        run_case(&t);
    }
}

Test(ocl_ops, conv_transpose) {
    need_device();
    typedef struct {
        int64_t n, c, h, w, mg, kh, kw, s, d, pb, pe, op, os, group;
        plx_auto_pad ap;
        bool bias, one_d;
    } ct_case;
    static const ct_case cases[] = {
        {1, 3, 5, 6, 4, 3, 3, 2, 1, 1, 1, 1, 0, 1, PLX_AUTO_PAD_NOTSET, true, false},
        {2, 4, 4, 4, 3, 2, 3, 1, 2, 0, 0, 0, 0, 2, PLX_AUTO_PAD_NOTSET, false, false},
        {1, 2, 5, 5, 2, 3, 3, 2, 1, 0, 0, 0, 0, 1, PLX_AUTO_PAD_SAME_UPPER, true, false},
        {1, 2, 5, 5, 2, 3, 3, 2, 1, 0, 0, 0, 0, 1, PLX_AUTO_PAD_SAME_LOWER, true, false},
        {1, 2, 5, 5, 2, 3, 3, 2, 1, 0, 0, 0, 10, 1, PLX_AUTO_PAD_NOTSET, true, false},
        {2, 4, 1, 9, 2, 1, 4, 3, 1, 1, 2, 2, 0, 2, PLX_AUTO_PAD_NOTSET, true, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const ct_case *c = &cases[i];
        plx_conv_transpose_desc d = PLX_CONV_TRANSPOSE_DESC_INIT;
        d.group = c->group;
        d.auto_pad = c->ap;
        int sp = c->one_d ? 1 : 2;
        for (int k = 0; k < sp; k++) {
            d.strides[k] = c->s;
            d.dilations[k] = c->d;
            d.pads_begin[k] = c->pb;
            d.pads_end[k] = c->pe;
            d.output_padding[k] = c->op;
            d.output_shape[k] = c->os;
        }
        char name[32];
        snprintf(name, sizeof name, "conv_transpose_%zu", i);
        tcase t = tc_new(name, PLX_OP_CONV_TRANSPOSE, &d, 1);
        t.rtol = 1e-3;
        if (c->one_d) {
            add_input(&t, PLX_DTYPE_FLOAT32, DIMS(c->n, c->c, c->w));
            add_input(&t, PLX_DTYPE_FLOAT32, DIMS(c->c, c->mg, c->kw));
        } else {
            add_input(&t, PLX_DTYPE_FLOAT32, DIMS(c->n, c->c, c->h, c->w));
            add_input(&t, PLX_DTYPE_FLOAT32, DIMS(c->c, c->mg, c->kh, c->kw));
        }
        if (c->bias) {
            add_input(&t, PLX_DTYPE_FLOAT32, DIMS(c->mg * c->group));
        }
        run_case(&t);
    }
}

Test(ocl_ops, matmul) {
    need_device();
    static const int64_t shapes[][2][6] = {
        {{2, 5, 7}, {2, 7, 3}},
        {{2, 70, 130}, {2, 130, 65}},       /* tiled */
        {{3, 2, 17, 33}, {2, 33, 20}},      /* batch broadcast */
        {{4, 2, 1, 9, 4}, {3, 3, 4, 18}},   /* both broadcast */
        {{1, 6}, {2, 6, 5}},                /* 1-D A */
        {{3, 2, 4, 6}, {1, 6}},             /* 1-D B */
        {{1, 6}, {1, 6}},                   /* dot */
        {{2, 40, 0}, {2, 0, 30}},           /* K = 0 */
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        char name[32];
        snprintf(name, sizeof name, "matmul_%zu", s);
        tcase t = tc_new(name, PLX_OP_MATMUL, NULL, 1);
        t.rtol = 1e-3;
        add_input(&t, PLX_DTYPE_FLOAT32, (uint32_t)shapes[s][0][0], &shapes[s][0][1]);
        add_input(&t, PLX_DTYPE_FLOAT32, (uint32_t)shapes[s][1][0], &shapes[s][1][1]);
        run_case(&t);
    }
}

Test(ocl_ops, gemm) {
    need_device();
    for (int ta = 0; ta < 2; ta++) {
        for (int tb = 0; tb < 2; tb++) {
            for (int c = 0; c < 4; c++) {
                plx_gemm_desc d = PLX_GEMM_DESC_INIT;
                d.trans_a = ta;
                d.trans_b = tb;
                d.alpha = 0.75f;
                d.beta = c == 3 ? 1.0f : -1.5f;
                int64_t m = 67, n = 35, k = 41;
                char name[32];
                snprintf(name, sizeof name, "gemm_%d%d%d", ta, tb, c);
                tcase t = tc_new(name, PLX_OP_GEMM, &d, 1);
                t.rtol = 1e-3;
                if (ta) {
                    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(k, m));
                } else {
                    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(m, k));
                }
                if (tb) {
                    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(n, k));
                } else {
                    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(k, n));
                }
                if (c == 0) {
                    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(m, n));
                } else if (c == 1) {
                    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(n));
                } else if (c == 2) {
                    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(m, 1));
                }
                run_case(&t);
            }
        }
    }
    plx_gemm_desc d = PLX_GEMM_DESC_INIT;
    tcase t = tc_new("gemm_small", PLX_OP_GEMM, &d, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 9));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(9, 4));
    add_input(&t, PLX_DTYPE_FLOAT32, 0, NULL);
    run_case(&t);
}

Test(ocl_ops, fully_connected) {
    need_device();
    for (int tr = 0; tr < 2; tr++) {
        for (int b = 0; b < 2; b++) {
            plx_fully_connected_desc d = PLX_FULLY_CONNECTED_DESC_INIT;
            d.weights_transposed = tr;
            tcase t = tc_new("fc", PLX_OP_FULLY_CONNECTED, &d, 1);
            t.rtol = 1e-3;
            add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 9, 50));
            if (tr) {
                add_input(&t, PLX_DTYPE_FLOAT32, DIMS(33, 50));
            } else {
                add_input(&t, PLX_DTYPE_FLOAT32, DIMS(50, 33));
            }
            last_constant(&t);
            if (b) {
                add_input(&t, PLX_DTYPE_FLOAT32, DIMS(33));
            }
            run_case(&t);
        }
    }
    plx_fully_connected_desc d = PLX_FULLY_CONNECTED_DESC_INIT;
    tcase t = tc_new("fc_vec", PLX_OP_FULLY_CONNECTED, &d, 1);
    t.rtol = 1e-3;
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 300));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(300, 10));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(10));
    run_case(&t);
}

Test(ocl_ops, pool) {
    need_device();
    typedef struct {
        plx_pool_kind kind;
        int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
        plx_auto_pad ap;
        bool ceil, cip, one_d;
    } pcase;
    static const pcase cases[] = {
        {PLX_POOL_MAX, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, PLX_AUTO_PAD_NOTSET, false, false, false},
        {PLX_POOL_MAX, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, PLX_AUTO_PAD_NOTSET, true, false, false},
        {PLX_POOL_MAX, 3, 2, 1, 2, 2, 2, 1, 0, 2, 1, PLX_AUTO_PAD_NOTSET, false, false, false},
        {PLX_POOL_AVERAGE, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, PLX_AUTO_PAD_NOTSET, false, false, false},
        {PLX_POOL_AVERAGE, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, PLX_AUTO_PAD_NOTSET, false, true, false},
        {PLX_POOL_AVERAGE, 3, 3, 2, 2, 1, 1, 1, 0, 1, 0, PLX_AUTO_PAD_NOTSET, true, true, false},
        {PLX_POOL_AVERAGE, 2, 3, 2, 2, 1, 1, 0, 0, 0, 0, PLX_AUTO_PAD_SAME_UPPER, false, true, false},
        {PLX_POOL_MAX, 2, 3, 2, 2, 1, 1, 0, 0, 0, 0, PLX_AUTO_PAD_SAME_LOWER, false, false, false},
        {PLX_POOL_MAX, 1, 3, 1, 2, 1, 1, 0, 1, 0, 1, PLX_AUTO_PAD_NOTSET, true, false, true},
        {PLX_POOL_AVERAGE, 1, 4, 1, 3, 1, 1, 0, 2, 0, 2, PLX_AUTO_PAD_NOTSET, true, false, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const pcase *c = &cases[i];
        plx_pool_desc d = PLX_POOL_DESC_INIT(c->kind);
        d.auto_pad = c->ap;
        d.ceil_mode = c->ceil;
        d.count_include_pad = c->cip;
        if (c->one_d) {
            d.kernel[0] = c->kw;
            d.strides[0] = c->sw;
            d.dilations[0] = c->dw;
            d.pads_begin[0] = c->pl;
            d.pads_end[0] = c->pr;
        } else {
            int64_t k[2] = {c->kh, c->kw}, s[2] = {c->sh, c->sw}, dl[2] = {c->dh, c->dw},
                    b[2] = {c->pt, c->pl}, e[2] = {c->pb, c->pr};
            memcpy(d.kernel, k, sizeof k);
            memcpy(d.strides, s, sizeof s);
            memcpy(d.dilations, dl, sizeof dl);
            memcpy(d.pads_begin, b, sizeof b);
            memcpy(d.pads_end, e, sizeof e);
        }
        char name[32];
        snprintf(name, sizeof name, "pool_%zu", i);
        tcase t = tc_new(name, PLX_OP_POOL, &d, 1);
        float *x;
        if (c->one_d) {
            x = add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3, 13));
        } else {
            x = add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3, 11, 10));
        }
        x[5] = NAN;
        run_case(&t);
    }
    for (int k = 0; k < 2; k++) {
        plx_global_pool_desc d = PLX_GLOBAL_POOL_DESC_INIT(k ? PLX_POOL_AVERAGE : PLX_POOL_MAX);
        tcase t = tc_new("global_pool", PLX_OP_GLOBAL_POOL, &d, 1);
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 5, 13, 17));
        run_case(&t);
        t = tc_new("global_pool_1d", PLX_OP_GLOBAL_POOL, &d, 1);
        float *x = add_input(&t, PLX_DTYPE_FLOAT32, DIMS(3, 4, 300));
        x[7] = NAN;
        run_case(&t);
    }
}

/* 3-D (NCDHW) convolutions, transposed convolutions and pools against
 * cpu_ref: im2col + GEMM, the direct kernel (one channel per group), 1x1x1
 * over X itself, strides, dilations and pads per dim; max (with Indices),
 * average and lp pools; column-major Indices refused in 3-D. */
Test(ocl_ops, window_3d) {
    need_device();
    for (int v = 0; v < 3; v++) {
        plx_conv_desc d = PLX_CONV_DESC_INIT;
        int64_t c = 4, m = 6, k = 3;
        if (v == 0) { /* im2col */
            d.strides[0] = 2;
            d.dilations[1] = 2;
            d.pads_begin[0] = d.pads_end[2] = 1;
            d.pads_begin[2] = 2;
        } else if (v == 1) { /* direct: one channel per group */
            d.group = 4;
            m = 4;
            d.pads_begin[1] = d.pads_end[1] = 1;
        } else { /* pointwise */
            k = 1;
            d.group = 2;
        }
        tcase t = tc_new("conv3d", PLX_OP_CONV, &d, 1);
        t.rtol = 1e-3;
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, c, 5, 7, 6));
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(m, c / d.group, k, k, v == 0 ? 2 : k));
        last_constant(&t);
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(m));
        run_case(&t);
    }
    plx_conv_transpose_desc ct = PLX_CONV_TRANSPOSE_DESC_INIT;
    ct.strides[0] = 2;
    ct.strides[2] = 2;
    ct.dilations[1] = 2;
    ct.pads_begin[0] = 1;
    ct.pads_end[2] = 1;
    ct.group = 2;
    tcase t = tc_new("conv_transpose3d", PLX_OP_CONV_TRANSPOSE, &ct, 1);
    t.rtol = 1e-3;
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 4, 3, 4, 5));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4, 3, 2, 3, 2));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(6));
    run_case(&t);
    const plx_pool_kind kinds[4] = {PLX_POOL_MAX, PLX_POOL_AVERAGE, PLX_POOL_AVERAGE, PLX_POOL_LP};
    for (int v = 0; v < 5; v++) {
        plx_pool_desc d = PLX_POOL_DESC_INIT(kinds[v % 4]);
        d.kernel[0] = 2, d.kernel[1] = 3, d.kernel[2] = 2;
        d.strides[0] = 2, d.strides[2] = 2;
        d.dilations[1] = 2;
        d.pads_begin[0] = d.pads_end[0] = 1, d.pads_end[1] = 1;
        d.ceil_mode = v == 2;
        d.count_include_pad = v == 2;
        tcase p = tc_new("pool3d", PLX_OP_POOL, &d, v == 4 ? 2 : 1);
        float *x = add_input(&p, PLX_DTYPE_FLOAT32, DIMS(2, 3, 8, 8, 9));
        x[11] = NAN;
        run_case(&p);
    }
    plx_pool_desc cm = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    cm.kernel[0] = cm.kernel[1] = cm.kernel[2] = 2;
    cm.indices_column_major = true;
    tcase r = tc_new("pool3d_column_major", PLX_OP_POOL, &cm, 2);
    add_input(&r, PLX_DTYPE_FLOAT32, DIMS(1, 1, 4, 4, 4));
    refused_inferred(&r, "column-major Indices are for 1-D and 2-D pools");
}

Test(ocl_ops, norms) {
    need_device();
    plx_batch_norm_desc bd = PLX_BATCH_NORM_DESC_INIT;
    tcase t = tc_new("batch_norm", PLX_OP_BATCH_NORM, &bd, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 5, 6, 7));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(5));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(5));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(5));
    add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(5), 0.1f, 2.0f);
    run_case(&t);
    t = tc_new("batch_norm_2d", PLX_OP_BATCH_NORM, &bd, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4, 3));
    for (int i = 0; i < 3; i++) {
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(3));
    }
    add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(3), 0.1f, 2.0f);
    run_case(&t);

    static const int32_t axes[] = {-1, -2, 1, 0};
    for (size_t a = 0; a < 4; a++) {
        for (int bias = 0; bias < 2; bias++) {
            plx_layer_norm_desc d = PLX_LAYER_NORM_DESC_INIT;
            d.axis = axes[a];
            tcase l = tc_new("layer_norm", PLX_OP_LAYER_NORM, &d, 1);
            add_input_range(&l, PLX_DTYPE_FLOAT32, DIMS(3, 4, 50), -3.0f, 5.0f);
            if (axes[a] == -2 || axes[a] == 1) {
                add_input(&l, PLX_DTYPE_FLOAT32, DIMS(1, 50)); /* broadcast scale */
            } else if (axes[a] == 0) {
                add_input(&l, PLX_DTYPE_FLOAT32, DIMS(3, 4, 50));
            } else {
                add_input(&l, PLX_DTYPE_FLOAT32, DIMS(50));
            }
            if (bias) {
                add_input(&l, PLX_DTYPE_FLOAT32, DIMS(50));
            }
            run_case(&l);
        }
    }
    plx_layer_norm_desc d = PLX_LAYER_NORM_DESC_INIT;
    tcase l = tc_new("layer_norm_long", PLX_OP_LAYER_NORM, &d, 1);
    add_input_range(&l, PLX_DTYPE_FLOAT32, DIMS(2, 3000), 0.0f, 4.0f);
    add_input(&l, PLX_DTYPE_FLOAT32, DIMS(3000));
    add_input(&l, PLX_DTYPE_FLOAT32, DIMS(3000));
    l.rtol = 1e-3;
    run_case(&l);

    plx_instance_norm_desc id = PLX_INSTANCE_NORM_DESC_INIT;
    t = tc_new("instance_norm", PLX_OP_INSTANCE_NORM, &id, 1);
    add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3, 9, 11), -2.0f, 3.0f);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(3));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(3));
    run_case(&t);
    t = tc_new("instance_norm_1d", PLX_OP_INSTANCE_NORM, &id, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 4, 7));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4));
    run_case(&t);
}

Test(ocl_ops, softmax) {
    need_device();
    static const int32_t axes[] = {-1, 0, 1, 2};
    for (size_t a = 0; a < 4; a++) {
        for (int lg = 0; lg < 2; lg++) {
            plx_softmax_desc d = PLX_SOFTMAX_DESC_INIT;
            d.axis = axes[a];
            d.log = lg;
            tcase t = tc_new("softmax", PLX_OP_SOFTMAX, &d, 1);
            add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(3, 7, 40), -10.0f, 10.0f);
            run_case(&t);
        }
    }
    plx_softmax_desc d = PLX_SOFTMAX_DESC_INIT;
    tcase t = tc_new("softmax_long", PLX_OP_SOFTMAX, &d, 1);
    add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(2, 5000), -5.0f, 5.0f);
    run_case(&t);
}

Test(ocl_ops, reduce) {
    need_device();
    typedef struct {
        uint32_t count;
        int32_t axes[3];
        bool keep;
    } rcase;
    static const rcase cases[] = {
        {0, {0}, true},  {1, {-1}, false}, {1, {1}, true},      {2, {0, 2}, false},
        {2, {3, 1}, true}, {3, {0, 1, 3}, false}, {1, {0}, true},
    };
    for (int f = PLX_REDUCE_MEAN; f <= PLX_REDUCE_LOG_SUM_EXP; f++) {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            plx_reduce_desc d = PLX_REDUCE_DESC_INIT((plx_reduce_func)f);
            d.axis_count = cases[c].count;
            memcpy(d.axes, cases[c].axes, sizeof cases[c].axes);
            d.keepdims = cases[c].keep;
            char name[32];
            snprintf(name, sizeof name, "reduce_%d_%zu", f, c);
            tcase t = tc_new(name, PLX_OP_REDUCE, &d, 1);
            t.rtol = 1e-3;
            bool positive = f == PLX_REDUCE_LOG_SUM;
            bool near_one = f == PLX_REDUCE_PROD;
            add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(3, 4, 5, 6), positive || near_one ? 0.5f : -2.0f,
                            positive || near_one ? 1.5f : 2.0f);
            run_case(&t);
        }
    }
    plx_reduce_desc d = PLX_REDUCE_DESC_INIT(PLX_REDUCE_SUM);
    d.noop_with_empty_axes = true;
    tcase t = tc_new("reduce_noop", PLX_OP_REDUCE, &d, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(3, 4));
    run_case(&t);
    /* NaN and infinities */
    plx_reduce_desc m = PLX_REDUCE_DESC_INIT(PLX_REDUCE_MAX);
    m.axis_count = 1;
    m.axes[0] = 1;
    t = tc_new("reduce_max_nan", PLX_OP_REDUCE, &m, 1);
    float *x = add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4, 100));
    x[150] = NAN;
    run_case(&t);
    plx_reduce_desc lse = PLX_REDUCE_DESC_INIT(PLX_REDUCE_LOG_SUM_EXP);
    t = tc_new("reduce_lse_inf", PLX_OP_REDUCE, &lse, 1);
    x = add_input(&t, PLX_DTYPE_FLOAT32, DIMS(50));
    x[3] = INFINITY;
    run_case(&t);
    /* an empty reduced axis */
    plx_reduce_desc e = PLX_REDUCE_DESC_INIT(PLX_REDUCE_MEAN);
    e.axis_count = 1;
    e.axes[0] = 1;
    t = tc_new("reduce_empty", PLX_OP_REDUCE, &e, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(3, 0));
    run_case(&t);
    /* long sums */
    plx_reduce_desc s = PLX_REDUCE_DESC_INIT(PLX_REDUCE_SUM);
    t = tc_new("reduce_long", PLX_OP_REDUCE, &s, 1);
    t.rtol = 1e-3;
    add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(100000), 0.0f, 1.0f);
    run_case(&t);
}

Test(ocl_ops, arg_reduce) {
    need_device();
    for (int mn = 0; mn < 2; mn++) {
        for (int last = 0; last < 2; last++) {
            for (int axis = -1; axis < 3; axis++) {
                plx_arg_reduce_desc d = PLX_ARG_REDUCE_DESC_INIT(mn);
                d.select_last_index = last;
                d.axis = axis;
                d.keepdims = axis != 1;
                tcase t = tc_new("arg_reduce", PLX_OP_ARG_REDUCE, &d, 1);
                float *x = add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4, 6, 5));
                for (size_t i = 0; i < 120; i++) {
                    x[i] = floorf(x[i] * 2.0f); /* ties */
                }
                x[17] = NAN;
                run_case(&t);
            }
        }
    }
}

Test(ocl_ops, resize) {
    need_device();
    for (int mode = 0; mode < 2; mode++) {
        for (int coord = 0; coord <= PLX_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN; coord++) {
            for (int near = 0; near <= (mode ? 0 : PLX_RESIZE_NEAREST_CEIL); near++) {
                for (int sz = 0; sz < 4; sz++) {
                    plx_resize_desc d = PLX_RESIZE_DESC_INIT((plx_resize_mode)mode);
                    d.coord = (plx_resize_coord)coord;
                    d.nearest = (plx_resize_nearest)near;
                    if (sz == 0) {
                        d.scales[0] = 2.0f;
                        d.scales[1] = 1.5f;
                    } else if (sz == 1) {
                        d.sizes[0] = 3;
                        d.sizes[1] = 7;
                    } else if (sz == 2) {
                        d.sizes[0] = 1;
                        d.sizes[1] = 13;
                    } else {
                        /* ABI 1.3: sizes with the one scale that maps
                         * coordinates (ONNX's keep_aspect_ratio_policy) */
                        d.sizes[0] = 4;
                        d.sizes[1] = 5;
                        d.scales[0] = d.scales[1] = 0.75f;
                    }
                    char name[40];
                    snprintf(name, sizeof name, "resize_%d_%d_%d_%d", mode, coord, near, sz);
                    tcase t = tc_new(name, PLX_OP_RESIZE, &d, 1);
                    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3, 5, 6));
                    run_case(&t);
                }
            }
        }
    }
}

/* The modes and coordinate transformations of ABI 1.3 other than sizes
 * with a scale are cpu_ref's: refused, with the reason. */
Test(ocl_ops, resize_abi_1_3_refused) {
    need_device();
    for (int mode = PLX_RESIZE_CUBIC; mode <= PLX_RESIZE_CUBIC_ANTIALIAS; mode++) {
        plx_resize_desc d = PLX_RESIZE_DESC_INIT((plx_resize_mode)mode);
        d.scales[0] = d.scales[1] = 0.5f;
        tcase t = tc_new("resize_mode", PLX_OP_RESIZE, &d, 1);
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 2, 4, 4));
        char needle[96];
        snprintf(needle, sizeof needle, "resize runs nearest and linear modes only, not %s",
                 plx_resize_mode_name((plx_resize_mode)mode));
        refused_inferred(&t, needle);
    }
    for (int coord = PLX_RESIZE_COORD_HALF_PIXEL_SYMMETRIC;
         coord <= PLX_RESIZE_COORD_TF_CROP_AND_RESIZE; coord++) {
        plx_resize_desc d = PLX_RESIZE_DESC_INIT(PLX_RESIZE_LINEAR);
        d.coord = (plx_resize_coord)coord;
        d.sizes[0] = d.sizes[1] = 3;
        tcase t = tc_new("resize_coord", PLX_OP_RESIZE, &d, 1);
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 2, 4, 4));
        refused_inferred(&t, coord == PLX_RESIZE_COORD_TF_CROP_AND_RESIZE
                                 ? "resize does not run tf_crop_and_resize coordinates"
                                 : "resize does not run half_pixel_symmetric coordinates");
    }
}

/* ---- data movement with layout changes ---------------------------------- */

Test(ocl_ops, transpose) {
    need_device();
    static const plx_dtype types[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_INT64, PLX_DTYPE_UINT8,
                                      PLX_DTYPE_FLOAT16};
    for (size_t i = 0; i < 4; i++) {
        plx_transpose_desc d = PLX_TRANSPOSE_DESC_INIT;
        d.perm_count = 4;
        uint32_t perm[4] = {0, 2, 3, 1};
        memcpy(d.perm, perm, sizeof perm);
        tcase t = tc_new("transpose", PLX_OP_TRANSPOSE, &d, 1);
        add_input(&t, types[i], DIMS(2, 3, 4, 5));
        run_case(&t);
        plx_transpose_desc r = PLX_TRANSPOSE_DESC_INIT;
        t = tc_new("transpose_rev", PLX_OP_TRANSPOSE, &r, 1);
        add_input(&t, types[i], DIMS(2, 1, 3, 4, 2, 3));
        run_case(&t);
    }
}

Test(ocl_ops, concat_split) {
    need_device();
    for (int axis = -3; axis < 3; axis++) {
        plx_axis_desc d = PLX_AXIS_DESC_INIT(axis);
        tcase t = tc_new("concat", PLX_OP_CONCAT, &d, 1);
        int64_t dims[3][3] = {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}};
        uint32_t a = (uint32_t)(axis < 0 ? axis + 3 : axis);
        dims[1][a] = 1;
        dims[2][a] = 5;
        for (int k = 0; k < 3; k++) {
            add_input(&t, PLX_DTYPE_FLOAT32, 3, dims[k]);
        }
        run_case(&t);
        t = tc_new("concat_i64", PLX_OP_CONCAT, &d, 1);
        add_input(&t, PLX_DTYPE_INT64, 3, dims[0]);
        add_input(&t, PLX_DTYPE_INT64, 3, dims[2]);
        run_case(&t);
    }
    static const int64_t sizes[3] = {1, 4, 2};
    for (int axis = 0; axis < 3; axis++) {
        plx_split_desc d = PLX_SPLIT_DESC_INIT(axis);
        d.sizes = sizes;
        tcase t = tc_new("split", PLX_OP_SPLIT, &d, 3);
        int64_t dims[3] = {7, 7, 7};
        add_input(&t, PLX_DTYPE_FLOAT32, 3, dims);
        run_case(&t);
        plx_split_desc e = PLX_SPLIT_DESC_INIT(axis - 3);
        t = tc_new("split_equal", PLX_OP_SPLIT, &e, 3);
        add_input(&t, PLX_DTYPE_UINT8, 3, dims);
        run_case(&t);
    }
}

Test(ocl_ops, slice) {
    need_device();
    typedef struct {
        int64_t start, end, step;
        int32_t axis;
    } sc;
    static const sc cases[][2] = {
        {{1, 4, 1, 0}, {0, 100, 2, 2}},
        {{-1, -100, -1, 1}, {5, 0, -2, -1}},
        {{2, 3, 1, 0}, {-3, -1, 1, 1}},
        {{0, 10, 3, 2}, {10, -10, -4, 0}},
        {{3, 3, 1, 1}, {0, 1, 1, 2}}, /* empty */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        plx_slice_desc d = PLX_SLICE_DESC_INIT;
        d.count = 2;
        for (int k = 0; k < 2; k++) {
            d.starts[k] = cases[i][k].start;
            d.ends[k] = cases[i][k].end;
            d.steps[k] = cases[i][k].step;
            d.axes[k] = cases[i][k].axis;
        }
        tcase t = tc_new("slice", PLX_OP_SLICE, &d, 1);
        add_input(&t, i % 2 ? PLX_DTYPE_INT32 : PLX_DTYPE_FLOAT32, DIMS(5, 6, 7));
        run_case(&t);
    }
}

Test(ocl_ops, pad) {
    need_device();
    static const plx_dtype types[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_INT64, PLX_DTYPE_UINT8,
                                      PLX_DTYPE_INT32, PLX_DTYPE_FLOAT16};
    for (int mode = 0; mode < 3; mode++) {
        for (size_t i = 0; i < 5; i++) {
            plx_pad_desc d = PLX_PAD_DESC_INIT((plx_pad_mode)mode);
            /* reflect pads must be smaller than the dim */
            int64_t pb[3] = {1, 0, mode == PLX_PAD_REFLECT ? 2 : 7};
            int64_t pe[3] = {2, -1, mode == PLX_PAD_REFLECT ? 1 : 3};
            memcpy(d.pads_begin, pb, sizeof pb);
            memcpy(d.pads_end, pe, sizeof pe);
            d.value = -3.75;
            tcase t = tc_new("pad", PLX_OP_PAD, &d, 1);
            add_input(&t, types[i], DIMS(3, 4, 3));
            run_case(&t);
        }
    }
    plx_pad_desc d = PLX_PAD_DESC_INIT(PLX_PAD_EDGE);
    d.pads_begin[0] = 3;
    d.pads_end[0] = 1;
    tcase t = tc_new("pad_one", PLX_OP_PAD, &d, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1));
    run_case(&t);
    plx_pad_desc r = PLX_PAD_DESC_INIT(PLX_PAD_REFLECT);
    r.pads_begin[0] = 2;
    r.pads_end[0] = 2;
    r.pads_begin[1] = -1;
    t = tc_new("pad_reflect", PLX_OP_PAD, &r, 1);
    add_input(&t, PLX_DTYPE_INT64, DIMS(3, 4));
    run_case(&t);
}

Test(ocl_ops, gather) {
    need_device();
    for (int axis = -1; axis < 3; axis++) {
        for (int it = 0; it < 2; it++) {
            plx_axis_desc d = PLX_AXIS_DESC_INIT(axis);
            tcase t = tc_new("gather", PLX_OP_GATHER, &d, 1);
            add_input(&t, it ? PLX_DTYPE_FLOAT32 : PLX_DTYPE_INT64, DIMS(4, 5, 6));
            int64_t dim = axis == 0 ? 4 : axis == 1 ? 5 : 6;
            void *p = add_input_range(&t, it ? PLX_DTYPE_INT32 : PLX_DTYPE_INT64, DIMS(2, 3),
                                      (float)-dim, (float)(dim - 1));
            for (int j = 0; j < 6; j++) {
                int64_t v = it ? ((int32_t *)p)[j] : ((int64_t *)p)[j];
                v = v < -dim ? -dim : v >= dim ? dim - 1 : v;
                if (it) {
                    ((int32_t *)p)[j] = (int32_t)v;
                } else {
                    ((int64_t *)p)[j] = v;
                }
            }
            last_constant(&t);
            run_case(&t);
        }
    }
    plx_axis_desc d = PLX_AXIS_DESC_INIT(0);
    tcase t = tc_new("gather_scalar", PLX_OP_GATHER, &d, 1);
    add_input(&t, PLX_DTYPE_UINT8, DIMS(5, 3));
    int32_t *i = add_input(&t, PLX_DTYPE_INT32, 0, NULL);
    *i = -2;
    last_constant(&t);
    run_case(&t);
}

/* ---- indexing and scans (ocl_ops_index.c) ------------------------------- */

/* n indices of dtype dt (int32 or int64), element j in [-dims[j % k],
 * dims[j % k] - 1]. */
static void fill_indices(void *p, plx_dtype dt, size_t n, const int64_t *dims, size_t k) {
    for (size_t j = 0; j < n; j++) {
        int64_t d = dims[j % k];
        int64_t v = (int64_t)(next_u32() % (uint32_t)(2 * d)) - d;
        if (dt == PLX_DTYPE_INT32) {
            ((int32_t *)p)[j] = (int32_t)v;
        } else {
            ((int64_t *)p)[j] = v;
        }
    }
}

static void *add_indices(tcase *t, plx_dtype dt, uint32_t rank, const int64_t *idims,
                         const int64_t *dims, size_t k) {
    void *p = add_input(t, dt, rank, idims);
    fill_indices(p, dt, count_of(&t->in[t->nin - 1]), dims, k);
    return p;
}

Test(ocl_ops, gather_dynamic_indices) {
    need_device();
    for (int axis = -1; axis < 3; axis++) {
        for (int it = 0; it < 2; it++) {
            plx_axis_desc d = PLX_AXIS_DESC_INIT(axis);
            tcase t = tc_new("gather_dyn", PLX_OP_GATHER, &d, 1);
            add_input(&t, it ? PLX_DTYPE_FLOAT32 : PLX_DTYPE_INT64, DIMS(4, 5, 6));
            int64_t dim = axis == 0 ? 4 : axis == 1 ? 5 : 6;
            add_indices(&t, it ? PLX_DTYPE_INT32 : PLX_DTYPE_INT64, DIMS(2, 3), &dim, 1);
            run_case(&t);
        }
    }
}

Test(ocl_ops, gather_elements) {
    need_device();
    const plx_dtype types[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_INT64, PLX_DTYPE_UINT8,
                               PLX_DTYPE_FLOAT16};
    for (int axis = -1; axis < 3; axis++) {
        uint32_t a = axis < 0 ? 2u : (uint32_t)axis;
        for (int ty = 0; ty < 4; ty++) {
            plx_axis_desc d = PLX_AXIS_DESC_INIT(axis);
            tcase t = tc_new("gather_elements", PLX_OP_GATHER_ELEMENTS, &d, 1);
            int64_t xd[3] = {3, 4, 5}, id[3] = {2, 4, 3};
            id[a] = 6;
            add_input(&t, types[ty], 3, xd);
            add_indices(&t, ty & 1 ? PLX_DTYPE_INT32 : PLX_DTYPE_INT64, 3, id, &xd[a], 1);
            run_case(&t);
        }
    }
    /* rank 1 */
    plx_axis_desc d = PLX_AXIS_DESC_INIT(0);
    tcase t = tc_new("gather_elements_1d", PLX_OP_GATHER_ELEMENTS, &d, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(7));
    add_indices(&t, PLX_DTYPE_INT64, DIMS(9), (const int64_t[]){7}, 1);
    run_case(&t);
}

Test(ocl_ops, scatter_elements) {
    need_device();
    for (int axis = -1; axis < 3; axis++) {
        uint32_t a = axis < 0 ? 2u : (uint32_t)axis;
        for (int red = 0; red <= 4; red++) {
            plx_scatter_desc d = PLX_SCATTER_DESC_INIT;
            d.axis = axis;
            d.reduction = (plx_scatter_reduction)red;
            tcase t = tc_new("scatter_elements", PLX_OP_SCATTER_ELEMENTS, &d, 1);
            int64_t xd[3] = {4, 5, 3}, id[3] = {3, 5, 2};
            id[a] = 7; /* more updates than the axis holds: duplicates */
            add_input(&t, PLX_DTYPE_FLOAT32, 3, xd);
            add_indices(&t, red & 1 ? PLX_DTYPE_INT32 : PLX_DTYPE_INT64, 3, id, &xd[a], 1);
            add_input(&t, PLX_DTYPE_FLOAT32, 3, id);
            if (red == 3) {
                ((float *)t.data[2])[1] = NAN; /* a NaN wins max */
            }
            run_case(&t);
        }
        /* reduction none moves any dtype */
        plx_scatter_desc d = PLX_SCATTER_DESC_INIT;
        d.axis = axis;
        tcase t = tc_new("scatter_elements_i64", PLX_OP_SCATTER_ELEMENTS, &d, 1);
        int64_t xd[3] = {4, 5, 3}, id[3] = {2, 3, 3};
        add_input(&t, PLX_DTYPE_INT64, 3, xd);
        add_indices(&t, PLX_DTYPE_INT64, 3, id, &xd[a], 1);
        add_input(&t, PLX_DTYPE_INT64, 3, id);
        run_case(&t);
    }
}

Test(ocl_ops, gather_nd) {
    need_device();
    const int64_t xd[4] = {2, 3, 4, 5};
    for (int b = 0; b < 2; b++) {
        for (int64_t k = 1; k <= 4 - b; k++) {
            for (int ty = 0; ty < 2; ty++) {
                plx_gather_nd_desc d = PLX_GATHER_ND_DESC_INIT;
                d.batch_dims = b;
                tcase t = tc_new("gather_nd", PLX_OP_GATHER_ND, &d, 1);
                add_input(&t, ty ? PLX_DTYPE_FLOAT32 : PLX_DTYPE_INT32, 4, xd);
                add_indices(&t, ty ? PLX_DTYPE_INT64 : PLX_DTYPE_INT32, DIMS(2, 3, k), xd + b,
                            (size_t)k);
                run_case(&t);
            }
        }
    }
}

Test(ocl_ops, scatter_nd) {
    need_device();
    const int64_t xd[3] = {4, 3, 5};
    for (int64_t k = 1; k <= 3; k++) {
        for (int red = 0; red <= 4; red++) {
            plx_scatter_desc d = PLX_SCATTER_DESC_INIT;
            d.reduction = (plx_scatter_reduction)red;
            tcase t = tc_new("scatter_nd", PLX_OP_SCATTER_ND, &d, 1);
            add_input(&t, PLX_DTYPE_FLOAT32, 3, xd);
            add_indices(&t, red & 1 ? PLX_DTYPE_INT32 : PLX_DTYPE_INT64, DIMS(2, 3, k), xd,
                        (size_t)k);
            int64_t ud[5] = {2, 3, 0, 0, 0};
            uint32_t ur = 2;
            for (uint32_t i = (uint32_t)k; i < 3; i++) {
                ud[ur++] = xd[i];
            }
            add_input(&t, PLX_DTYPE_FLOAT32, ur, ud);
            run_case(&t);
        }
    }
    plx_scatter_desc d = PLX_SCATTER_DESC_INIT;
    tcase t = tc_new("scatter_nd_u8", PLX_OP_SCATTER_ND, &d, 1);
    add_input(&t, PLX_DTYPE_UINT8, 3, xd);
    add_indices(&t, PLX_DTYPE_INT64, DIMS(5, 2), xd, 2);
    add_input(&t, PLX_DTYPE_UINT8, DIMS(5, 5));
    run_case(&t);
}

Test(ocl_ops, trilu) {
    need_device();
    const int64_t ks[] = {0, 1, -1, 2, -3, 7, -9, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        for (int upper = 0; upper < 2; upper++) {
            plx_trilu_desc d = PLX_TRILU_DESC_INIT;
            d.upper = upper != 0;
            d.k = ks[i];
            tcase t = tc_new("trilu", PLX_OP_TRILU, &d, 1);
            add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3, 4, 5));
            run_case(&t);
            t = tc_new("trilu_i64", PLX_OP_TRILU, &d, 1);
            add_input(&t, PLX_DTYPE_INT64, DIMS(5, 3));
            run_case(&t);
            t = tc_new("trilu_u8", PLX_OP_TRILU, &d, 1);
            add_input(&t, PLX_DTYPE_UINT8, DIMS(1, 4));
            run_case(&t);
        }
    }
}

Test(ocl_ops, one_hot) {
    need_device();
    const int32_t axes[] = {-1, 0, 1, 2, -3};
    const plx_dtype itypes[] = {PLX_DTYPE_INT64, PLX_DTYPE_INT32, PLX_DTYPE_FLOAT32};
    for (size_t a = 0; a < sizeof axes / sizeof axes[0]; a++) {
        for (int it = 0; it < 3; it++) {
            plx_one_hot_desc d = PLX_ONE_HOT_DESC_INIT(5);
            d.axis = axes[a];
            tcase t = tc_new("one_hot", PLX_OP_ONE_HOT, &d, 1);
            /* some indices out of range (a line of off) */
            float *p = add_input_range(&t, itypes[it], DIMS(2, 3), -7.0f, 7.0f);
            if (itypes[it] == PLX_DTYPE_FLOAT32) {
                p[0] = NAN;
                p[1] = -INFINITY;
                p[2] = 3.7f;
                p[3] = -4.9f;
            }
            add_input(&t, it == 1 ? PLX_DTYPE_INT64 : PLX_DTYPE_FLOAT32, DIMS(2));
            run_case(&t);
        }
    }
}

Test(ocl_ops, hardmax) {
    need_device();
    for (int axis = -3; axis < 3; axis++) {
        plx_axis_desc d = PLX_AXIS_DESC_INIT(axis);
        tcase t = tc_new("hardmax", PLX_OP_HARDMAX, &d, 1);
        /* few distinct values: ties, where the first wins */
        float *p = add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(3, 4, 5), -2.0f, 2.0f);
        for (int i = 0; i < 60; i++) {
            p[i] = floorf(p[i]);
        }
        p[7] = NAN;
        p[31] = NAN;
        p[32] = NAN;
        run_case(&t);
    }
}

Test(ocl_ops, cum_sum) {
    need_device();
    const plx_dtype types[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_INT32, PLX_DTYPE_INT64,
                               PLX_DTYPE_UINT32};
    for (int axis = -1; axis < 3; axis++) {
        for (int ty = 0; ty < 4; ty++) {
            for (int mode = 0; mode < 4; mode++) {
                plx_cum_sum_desc d = PLX_CUM_SUM_DESC_INIT(axis);
                d.exclusive = mode & 1;
                d.reverse = (mode & 2) != 0;
                tcase t = tc_new("cum_sum", PLX_OP_CUM_SUM, &d, 1);
                add_input(&t, types[ty], DIMS(3, 4, 5));
                if (types[ty] == PLX_DTYPE_INT32) {
                    ((int32_t *)t.data[0])[0] = INT32_MAX; /* wraps */
                }
                run_case(&t);
            }
        }
    }
}

Test(ocl_ops, grid_sample) {
    need_device();
    for (int r = 1; r <= 3; r++) {
        for (int mode = 0; mode < 3; mode++) {
            for (int pad = 0; pad < 3; pad++) {
                for (int align = 0; align < 2; align++) {
                    plx_grid_sample_desc d = PLX_GRID_SAMPLE_DESC_INIT;
                    d.mode = (plx_grid_sample_mode)mode;
                    d.padding = (plx_grid_sample_padding)pad;
                    d.align_corners = align != 0;
                    tcase t = tc_new("grid_sample", PLX_OP_GRID_SAMPLE, &d, 1);
                    int64_t xd[5] = {2, 3, 4, 5, 3}, gd[5] = {2, 3, 2, 4, 0};
                    xd[2 + r - 1] = r == 1 ? 6 : xd[2 + r - 1];
                    gd[r + 1] = r;
                    if (r == 3) {
                        xd[2] = 1; /* a dim of size 1 (reflects to 0 with align_corners) */
                    }
                    add_input(&t, PLX_DTYPE_FLOAT32, 2 + (uint32_t)r, xd);
                    /* past the borders too, far past a few times */
                    float *g = add_input_range(&t, PLX_DTYPE_FLOAT32, 2 + (uint32_t)r, gd,
                                               -1.4f, 1.4f);
                    g[0] = -1.0f;
                    g[1] = 1.0f;
                    g[2] = 7.25f;
                    g[3] = -5.5f;
                    if (r > 1) {
                        g[4] = 0.0f;
                        g[5] = NAN;
                    }
                    run_case(&t);
                }
            }
        }
    }
}

Test(ocl_ops, col2im) {
    need_device();
    for (uint32_t r = 1; r <= 3; r++) {
        for (int v = 0; v < 3; v++) {
            plx_col2im_desc d = PLX_COL2IM_DESC_INIT;
            d.spatial = r;
            int64_t block = 1, blocks = 1;
            for (uint32_t i = 0; i < r; i++) {
                d.image_shape[i] = 5 + (int64_t)i;
                d.block_shape[i] = 2 + (int64_t)((i + (uint32_t)v) % 2);
                d.strides[i] = v == 1 ? 2 : 1;
                d.dilations[i] = v == 2 ? 2 : 1;
                d.pads_begin[i] = v == 1 ? 1 : 0;
                d.pads_end[i] = v >= 1 ? (int64_t)i : 0;
                int64_t span = d.dilations[i] * (d.block_shape[i] - 1) + 1;
                block *= d.block_shape[i];
                blocks *= (d.image_shape[i] + d.pads_begin[i] + d.pads_end[i] - span) /
                              d.strides[i] + 1;
            }
            tcase t = tc_new("col2im", PLX_OP_COL2IM, &d, 1);
            add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3 * block, blocks));
            run_case(&t);
        }
    }
}

Test(ocl_ops, reverse_sequence) {
    need_device();
    for (int ba = 0; ba < 2; ba++) {
        for (int ty = 0; ty < 3; ty++) {
            plx_reverse_sequence_desc d = PLX_REVERSE_SEQUENCE_DESC_INIT;
            d.batch_axis = ba;
            d.time_axis = 1 - ba;
            tcase t = tc_new("reverse_sequence", PLX_OP_REVERSE_SEQUENCE, &d, 1);
            const plx_dtype types[] = {PLX_DTYPE_FLOAT32, PLX_DTYPE_INT64, PLX_DTYPE_UINT8};
            int64_t xd[3] = {4, 6, 3};
            add_input(&t, types[ty], 3, xd);
            int64_t nb = xd[ba], steps = xd[1 - ba];
            add_input_range(&t, ty == 1 ? PLX_DTYPE_INT32 : PLX_DTYPE_INT64, 1, &nb, 0.0f,
                            (float)steps);
            run_case(&t);
        }
    }
}

Test(ocl_ops, max_unpool) {
    need_device();
    for (int v = 0; v < 3; v++) {
        plx_max_unpool_desc d = PLX_MAX_UNPOOL_DESC_INIT;
        d.spatial = 2;
        d.kernel[0] = d.kernel[1] = 2;
        d.strides[0] = d.strides[1] = 2;
        d.pads_begin[0] = v == 2 ? 1 : 0;
        if (v == 1) { /* Y larger than the pool's input S [2, 3, 6, 8] */
            d.output_shape[0] = 7;
            d.output_shape[1] = 9;
        } else if (v == 2) { /* smaller: S is [2, 3, 5, 8], Y drops a row */
            d.output_shape[0] = 4;
            d.output_shape[1] = 8;
        }
        tcase t = tc_new("max_unpool", PLX_OP_MAX_UNPOOL, &d, 1);
        add_input(&t, v == 1 ? PLX_DTYPE_INT32 : PLX_DTYPE_FLOAT32, DIMS(2, 3, 3, 4));
        int64_t full = 2 * 3 * (v == 2 ? 5 : 6) * 8;
        int64_t *ind = add_input(&t, PLX_DTYPE_INT64, DIMS(2, 3, 3, 4));
        for (int i = 0; i < 72; i++) {
            /* few positions: duplicates, where the later element wins */
            ind[i] = (int64_t)(next_u32() % (uint32_t)(i % 3 ? full : 7));
        }
        run_case(&t);
    }
}

Test(ocl_ops, det) {
    need_device();
    for (int64_t m = 1; m <= 6; m++) {
        tcase t = tc_new("det", PLX_OP_DET, NULL, 1);
        float *p = add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3, m, m));
        if (m >= 2) {
            /* matrix 1 singular (two equal rows), matrix 2 with a NaN */
            for (int64_t j = 0; j < m; j++) {
                p[m * m + m + j] = p[m * m + j];
            }
            p[2 * m * m + 1] = NAN;
        }
        run_case(&t);
    }
    tcase t = tc_new("det_2d", PLX_OP_DET, NULL, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(5, 5));
    run_case(&t);
}

Test(ocl_ops, topk) {
    need_device();
    for (int axis = -3; axis < 3; axis++) {
        for (int largest = 0; largest < 2; largest++) {
            for (int64_t k = 0; k <= 5; k += 2) {
                plx_topk_desc d = PLX_TOPK_DESC_INIT(k);
                d.axis = axis;
                d.largest = largest != 0;
                tcase t = tc_new("topk", PLX_OP_TOPK, &d, 2);
                /* few distinct values (ties by position) and NaNs */
                float *p = add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(5, 6, 5), -3.0f, 3.0f);
                for (int i = 0; i < 150; i++) {
                    p[i] = floorf(p[i]);
                }
                p[3] = NAN;
                p[40] = NAN;
                p[41] = NAN;
                p[77] = INFINITY;
                run_case(&t);
            }
        }
    }
    plx_topk_desc d = PLX_TOPK_DESC_INIT(2);
    tcase t = tc_new("topk_i32", PLX_OP_TOPK, &d, 2);
    add_input(&t, PLX_DTYPE_INT32, DIMS(3, 4));
    refused_inferred(&t, "topk needs float32 X and values and int64 indices, got int32");
}

Test(ocl_ops, roi_align) {
    need_device();
    for (int mode = 0; mode < 2; mode++) {
        for (int half = 0; half < 2; half++) {
            for (int ratio = 0; ratio <= 2; ratio += 2) {
                plx_roi_align_desc d = PLX_ROI_ALIGN_DESC_INIT;
                d.mode = (plx_roi_align_mode)mode;
                d.half_pixel = half != 0;
                d.output_height = 3;
                d.output_width = 4;
                d.sampling_ratio = ratio;
                d.spatial_scale = 0.5f;
                tcase t = tc_new("roi_align", PLX_OP_ROI_ALIGN, &d, 1);
                add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3, 10, 9));
                float *r = add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4, 4));
                const float rois[16] = {0, 0, 9, 9, 2.5f, 1, 14, 19, -6, -3, 5, 4, 15, 17, 30, 40};
                memcpy(r, rois, sizeof rois);
                add_input_range(&t, half ? PLX_DTYPE_INT64 : PLX_DTYPE_INT32, DIMS(4), 0.0f, 1.0f);
                run_case(&t);
            }
        }
    }
}

/* dft and stft sum in float32 where cpu_ref's FFT works in double: a
 * looser tolerance. */
Test(ocl_ops, dft_stft) {
    need_device();
    for (int axis = 0; axis < 2; axis++) {
        for (int comp = 1; comp <= 2; comp++) {
            for (int v = 0; v < 4; v++) {
                plx_dft_desc d = PLX_DFT_DESC_INIT;
                d.axis = axis;
                d.inverse = v == 1;
                d.onesided = v == 2;
                d.length = v == 3 ? 9 : 0; /* padded past X's 7 along axis 0, cut to 5 else */
                if (v == 3 && axis == 1) {
                    d.length = 5;
                }
                tcase t = tc_new("dft", PLX_OP_DFT, &d, 1);
                add_input(&t, PLX_DTYPE_FLOAT32, DIMS(7, 8, comp));
                t.rtol = 1e-3;
                run_case(&t);
            }
        }
    }
    for (int comp = 1; comp <= 2; comp++) {
        for (int win = 0; win < 2; win++) {
            plx_stft_desc d = PLX_STFT_DESC_INIT(3, 8);
            d.onesided = comp == 1;
            tcase t = tc_new("stft", PLX_OP_STFT, &d, 1);
            add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 20, comp));
            if (win) {
                add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(8), 0.0f, 1.0f);
            }
            t.rtol = 1e-3;
            run_case(&t);
        }
    }
}

Test(ocl_ops, deform_conv) {
    need_device();
    for (int v = 0; v < 4; v++) {
        plx_deform_conv_desc d = PLX_DEFORM_CONV_DESC_INIT;
        d.group = v == 2 ? 2 : 1;
        d.offset_group = v >= 1 ? 2 : 1;
        d.strides[0] = v == 3 ? 2 : 1;
        d.dilations[1] = v == 1 ? 2 : 1;
        d.pads_begin[0] = d.pads_end[1] = v == 0 ? 0 : 1;
        d.pads_begin[1] = v == 3 ? 2 : 0;
        int64_t C = 4, M = 6, kh = 3, kw = 2, H = 7, W = 6;
        int64_t oh = (H + d.pads_begin[0] + d.pads_end[0] - ((kh - 1) * d.dilations[0] + 1)) /
                         d.strides[0] + 1;
        int64_t ow = (W + d.pads_begin[1] + d.pads_end[1] - ((kw - 1) * d.dilations[1] + 1)) /
                         d.strides[1] + 1;
        int64_t taps = d.offset_group * kh * kw;
        tcase t = tc_new("deform_conv", PLX_OP_DEFORM_CONV, &d, 1);
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, C, H, W));
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(M, C / d.group, kh, kw));
        float *off = add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(2, 2 * taps, oh, ow), -2.5f, 2.5f);
        off[0] = NAN;
        off[1] = 40.0f; /* far outside: reads 0 */
        off[2] = 1.0f;  /* whole: one neighbour */
        if (v >= 1) {
            add_input(&t, PLX_DTYPE_FLOAT32, DIMS(M));
        }
        if (v >= 2) {
            add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(2, taps, oh, ow), 0.0f, 1.0f);
        }
        run_case(&t);
    }
}

/* lstm (gates 4), gru (3), rnn (1): random weights, lengths in [1, S],
 * every direction, the variants' attributes. */
static void rnn_case(int64_t gates, plx_rnn_direction dir, int64_t H, int variant) {
    plx_lstm_desc ld;
    plx_gru_desc gd;
    plx_rnn_desc rd;
    memset(&ld, 0, sizeof ld);
    memset(&gd, 0, sizeof gd);
    memset(&rd, 0, sizeof rd);
    ld.struct_size = sizeof ld;
    gd.struct_size = sizeof gd;
    rd.struct_size = sizeof rd;
    ld.direction = gd.direction = rd.direction = dir;
    ld.hidden_size = gd.hidden_size = rd.hidden_size = H;
    plx_rnn_default_activations(&ld.activations[0][0], 3);
    plx_rnn_default_activations(&gd.activations[0][0], 2);
    rd.activations[0][0] = rd.activations[1][0] =
        (plx_rnn_activation){PLX_ACT_TANH, plx_activation_default_alpha(PLX_ACT_TANH),
                             plx_activation_default_beta(PLX_ACT_TANH)};
    if (variant == 1) {
        ld.clip = gd.clip = rd.clip = 0.75f;
        ld.input_forget = true;
        gd.linear_before_reset = true;
    } else if (variant == 2) {
        plx_rnn_activation hs = {PLX_ACT_HARD_SIGMOID, 0.3f, 0.4f};
        plx_rnn_activation st = {PLX_ACT_SCALED_TANH, 0.9f, 1.1f};
        plx_rnn_activation sp = {PLX_ACT_SOFTPLUS, 0.0f, 0.0f};
        ld.activations[1][0] = hs;
        ld.activations[0][2] = st;
        gd.activations[1][1] = sp;
        rd.activations[0][0] = (plx_rnn_activation){PLX_ACT_RELU, 0.0f, 0.0f};
        rd.activations[1][0] = hs;
    }
    const void *desc = gates == 4 ? (const void *)&ld : gates == 3 ? (const void *)&gd : (const void *)&rd;
    plx_op op = gates == 4 ? PLX_OP_LSTM : gates == 3 ? PLX_OP_GRU : PLX_OP_RNN;
    int64_t S = 5, B = 3, In = 4, D = dir == PLX_RNN_BIDIRECTIONAL ? 2 : 1;
    tcase t = tc_new(plx_op_name(op), op, desc, gates == 4 ? 3 : 2);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(S, B, In));
    add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(D, gates * H, In), -0.5f, 0.5f);
    add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(D, gates * H, H), -0.5f, 0.5f);
    add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(D, 2 * gates * H), -0.5f, 0.5f);
    int32_t *lens = add_input(&t, PLX_DTYPE_INT32, DIMS(B));
    lens[0] = 5;
    lens[1] = 2;
    lens[2] = 1;
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(D, B, H));
    if (gates == 4) {
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(D, B, H));
        add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(D, 3 * H), -0.5f, 0.5f);
    }
    t.rtol = 1e-3;
    run_case(&t);
}

Test(ocl_ops, recurrent) {
    need_device();
    for (int64_t gates = 1; gates <= 4; gates++) {
        if (gates == 2) {
            continue;
        }
        for (int dir = 0; dir < 3; dir++) {
            for (int variant = 0; variant < 3; variant++) {
                rnn_case(gates, (plx_rnn_direction)dir, 5, variant);
            }
        }
        /* more gate rows than a work-group has work-items */
        rnn_case(gates, PLX_RNN_BIDIRECTIONAL, 70, 0);
    }
}

/* The case's plan runs and must fail its index check with an error
 * containing `needle`; frees it. */
static void expect_index_error(tcase *t, const char *needle) {
    plx_tensor_info outs[MAX_SLOTS];
    infer(t, outs);
    plx_layer_view v = view_of(t, outs);
    char why[256], err[256] = "";
    const char *r = ocl_op_check(&dev, &v, why, sizeof why);
    cr_assert(r == NULL, "%s: refused: %s", t->name, r);
    ocl_plan plan;
    cr_assert(ocl_op_prepare(&dev, &v, &plan, err, sizeof err), "%s: %s", t->name, err);
    cl_mem in[MAX_SLOTS], out[MAX_SLOTS];
    for (uint32_t i = 0; i < t->nin; i++) {
        in[i] = buffer_of(t->data[i], count_of(&t->in[i]) * plx_dtype_size(t->in[i].dtype), false);
    }
    for (uint32_t i = 0; i < t->nout; i++) {
        out[i] = buffer_of(NULL, count_of(&outs[i]) * plx_dtype_size(outs[i].dtype), true);
    }
    for (int run = 0; run < 2; run++) { /* the flag is reset for every run */
        cl_int rc = ocl_plan_enqueue(&plan, queue, in, out, err, sizeof err);
        cr_assert(rc == CL_SUCCESS, "%s: enqueue: %s", t->name, err);
        cr_assert(clFinish(queue) == CL_SUCCESS);
        err[0] = '\0';
        cr_assert(ocl_plan_check(&plan, queue, in, err, sizeof err) == false,
                  "%s: an index out of range went unreported", t->name);
        cr_assert(strstr(err, needle) != NULL, "%s: error '%s' lacks '%s'", t->name, err, needle);
    }
    for (uint32_t i = 0; i < t->nin; i++) {
        clReleaseMemObject(in[i]);
    }
    for (uint32_t i = 0; i < t->nout; i++) {
        clReleaseMemObject(out[i]);
    }
    ocl_plan_release(&plan);
    free_case(t);
}

Test(ocl_ops, index_out_of_range) {
    need_device();
    plx_axis_desc ad = PLX_AXIS_DESC_INIT(1);
    tcase t = tc_new("ge", PLX_OP_GATHER_ELEMENTS, &ad, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3));
    int64_t *i64 = add_input(&t, PLX_DTYPE_INT64, DIMS(2, 2));
    memcpy(i64, (const int64_t[]){0, -3, 2, 3}, 4 * sizeof *i64);
    expect_index_error(&t, "layer 'ge' (gather_elements): index 3 (indices element 3) is out of range");

    t = tc_new("ge_neg", PLX_OP_GATHER_ELEMENTS, &ad, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3));
    int32_t *i32 = add_input(&t, PLX_DTYPE_INT32, DIMS(2, 2));
    memcpy(i32, (const int32_t[]){0, -4, 2, 9}, 4 * sizeof *i32);
    expect_index_error(&t, "index -4 (indices element 1) is out of range"); /* the first */

    plx_axis_desc g0 = PLX_AXIS_DESC_INIT(0);
    t = tc_new("g", PLX_OP_GATHER, &g0, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4, 3));
    i64 = add_input(&t, PLX_DTYPE_INT64, DIMS(3));
    memcpy(i64, (const int64_t[]){1, 2, 4}, 3 * sizeof *i64);
    expect_index_error(&t, "layer 'g' (gather): index 4 (indices element 2) is out of range");

    plx_scatter_desc sd = PLX_SCATTER_DESC_INIT;
    sd.axis = 0;
    sd.reduction = PLX_SCATTER_ADD;
    t = tc_new("se", PLX_OP_SCATTER_ELEMENTS, &sd, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(3, 2));
    i64 = add_input(&t, PLX_DTYPE_INT64, DIMS(2, 2));
    memcpy(i64, (const int64_t[]){0, 1, INT64_MIN, 2}, 4 * sizeof *i64);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 2));
    expect_index_error(&t, "(scatter_elements): index -9223372036854775808 (indices element 2)");

    plx_gather_nd_desc gnd = PLX_GATHER_ND_DESC_INIT;
    t = tc_new("gnd", PLX_OP_GATHER_ND, &gnd, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(3, 4));
    i64 = add_input(&t, PLX_DTYPE_INT64, DIMS(2, 2));
    memcpy(i64, (const int64_t[]){2, 3, 1, 4}, 4 * sizeof *i64);
    expect_index_error(&t, "(gather_nd): index 4 (indices element 3) is out of range");

    plx_scatter_desc snd = PLX_SCATTER_DESC_INIT;
    t = tc_new("snd", PLX_OP_SCATTER_ND, &snd, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(3, 4));
    i32 = add_input(&t, PLX_DTYPE_INT32, DIMS(2, 1));
    memcpy(i32, (const int32_t[]){-3, 3}, 2 * sizeof *i32);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 4));
    expect_index_error(&t, "(scatter_nd): index 3 (indices element 1) is out of range");

    plx_reverse_sequence_desc rd = PLX_REVERSE_SEQUENCE_DESC_INIT;
    t = tc_new("rs", PLX_OP_REVERSE_SEQUENCE, &rd, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4, 3, 2));
    i64 = add_input(&t, PLX_DTYPE_INT64, DIMS(3));
    memcpy(i64, (const int64_t[]){4, 5, -1}, 3 * sizeof *i64);
    expect_index_error(&t, "layer 'rs' (reverse_sequence): length 5 (sequence_lens element 1) "
                           "is out of range");

    plx_max_unpool_desc ud = PLX_MAX_UNPOOL_DESC_INIT;
    ud.spatial = 1;
    ud.kernel[0] = 2;
    ud.strides[0] = 2;
    t = tc_new("mu", PLX_OP_MAX_UNPOOL, &ud, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 2, 3));
    i64 = add_input(&t, PLX_DTYPE_INT64, DIMS(1, 2, 3));
    memcpy(i64, (const int64_t[]){0, 3, 5, 6, 12, 11}, 6 * sizeof *i64);
    expect_index_error(&t, "layer 'mu' (max_unpool): index 12 (I element 4) is out of range");

    plx_rnn_desc rnd;
    memset(&rnd, 0, sizeof rnd);
    rnd.struct_size = sizeof rnd;
    rnd.hidden_size = 2;
    rnd.activations[0][0] = (plx_rnn_activation){PLX_ACT_TANH, 0.0f, 0.0f};
    t = tc_new("rn", PLX_OP_RNN, &rnd, 2);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(3, 2, 2));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 2, 2));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 2, 2));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 4));
    i32 = add_input(&t, PLX_DTYPE_INT32, DIMS(2));
    i32[0] = 3;
    i32[1] = 4;
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 2, 2));
    expect_index_error(&t, "layer 'rn' (rnn): length 4 (sequence_lens element 1) is out of range");

    plx_roi_align_desc rad = PLX_ROI_ALIGN_DESC_INIT;
    for (int bad = 0; bad < 2; bad++) {
        t = tc_new("ra", PLX_OP_ROI_ALIGN, &rad, 1);
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 1, 4, 4));
        float *r = add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 4));
        const float rois[8] = {0, 0, 3, 3, 1, 1, bad ? INFINITY : 2, 2};
        memcpy(r, rois, sizeof rois);
        i32 = add_input(&t, PLX_DTYPE_INT32, DIMS(2));
        i32[0] = bad ? 1 : 2;
        i32[1] = 0;
        expect_index_error(&t, bad ? "layer 'ra' (roi_align): roi 1 is not finite"
                                   : "layer 'ra' (roi_align): index 2 (batch_indices element 0) "
                                     "is out of range");
    }
}

Test(ocl_ops, index_ops_refused) {
    need_device();
    plx_scatter_desc sd = PLX_SCATTER_DESC_INIT;
    sd.reduction = PLX_SCATTER_MUL;
    tcase t = tc_new("se_int", PLX_OP_SCATTER_ELEMENTS, &sd, 1);
    add_input(&t, PLX_DTYPE_INT32, DIMS(3, 2));
    add_input_range(&t, PLX_DTYPE_INT64, DIMS(2, 2), 0.0f, 2.0f);
    add_input(&t, PLX_DTYPE_INT32, DIMS(2, 2));
    refused_inferred(&t, "scatter_elements: reduction mul needs float32, got int32");

    plx_cum_sum_desc cd = PLX_CUM_SUM_DESC_INIT(0);
    t = tc_new("cs_f64", PLX_OP_CUM_SUM, &cd, 1);
    add_input(&t, PLX_DTYPE_FLOAT64, DIMS(3));
    refused_inferred(&t, "cum_sum: dtype float64 is not supported");

    plx_axis_desc hd = PLX_AXIS_DESC_INIT(-1);
    t = tc_new("hm_f16", PLX_OP_HARDMAX, &hd, 1);
    add_input(&t, PLX_DTYPE_FLOAT16, DIMS(2, 3));
    refused_inferred(&t, "hardmax needs float32, got float16");

    plx_one_hot_desc od = PLX_ONE_HOT_DESC_INIT(3);
    t = tc_new("oh_u8", PLX_OP_ONE_HOT, &od, 1);
    add_input(&t, PLX_DTYPE_UINT8, DIMS(2));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2));
    refused_inferred(&t, "one_hot: indices of dtype uint8 are not supported");
}

Test(ocl_ops, expand_tile) {
    need_device();
    plx_shape_desc d = PLX_SHAPE_DESC_INIT;
    d.rank = 4;
    int64_t dims[4] = {2, 3, 1, 5};
    memcpy(d.dims, dims, sizeof dims);
    tcase t = tc_new("expand", PLX_OP_EXPAND, &d, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(3, 4, 1));
    run_case(&t);
    t = tc_new("expand_bool", PLX_OP_EXPAND, &d, 1);
    add_input(&t, PLX_DTYPE_BOOL, DIMS(1, 5));
    run_case(&t);

    plx_tile_desc td = PLX_TILE_DESC_INIT;
    td.repeats[0] = 2;
    td.repeats[1] = 1;
    td.repeats[2] = 3;
    t = tc_new("tile", PLX_OP_TILE, &td, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3, 4));
    run_case(&t);
    t = tc_new("tile_i64", PLX_OP_TILE, &td, 1);
    add_input(&t, PLX_DTYPE_INT64, DIMS(3, 1, 2));
    run_case(&t);
    td.repeats[1] = 0;
    t = tc_new("tile_empty", PLX_OP_TILE, &td, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3, 4));
    run_case(&t);
}

Test(ocl_ops, depth_space) {
    need_device();
    for (int mode = 0; mode < 2; mode++) {
        plx_depth_space_desc d = PLX_DEPTH_SPACE_DESC_INIT(2);
        d.mode = (plx_depth_space_mode)mode;
        tcase t = tc_new("depth_to_space", PLX_OP_DEPTH_TO_SPACE, &d, 1);
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 12, 3, 4));
        run_case(&t);
    }
    plx_depth_space_desc d = PLX_DEPTH_SPACE_DESC_INIT(3);
    tcase t = tc_new("space_to_depth", PLX_OP_SPACE_TO_DEPTH, &d, 1);
    add_input(&t, PLX_DTYPE_INT32, DIMS(2, 2, 6, 9));
    run_case(&t);
}

/* ---- refusals ----------------------------------------------------------- */

Test(ocl_ops, refusals) {
    need_device();
    plx_tensor_info outs[MAX_SLOTS];

    /* not implemented */
    plx_lstm_desc ld;
    memset(&ld, 0, sizeof ld);
    ld.struct_size = sizeof ld;
    tcase t = tc_new("lstm", PLX_OP_LSTM, &ld, 3);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 1, 3));
    memset(outs, 0, sizeof outs);
    expect_refused(&t, outs, "lstm needs 8 inputs and 3 outputs");
    static const plx_op absent[] = {PLX_OP_QUANTIZE, PLX_OP_DEQUANTIZE, PLX_OP_CONSTANT,
                                    PLX_OP_INPUT, PLX_OP_MEM_COPY};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++) {
        t = tc_new(plx_op_name(absent[i]), absent[i], NULL, 1);
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2));
        char needle[64];
        snprintf(needle, sizeof needle, "%s is not implemented", plx_op_name(absent[i]));
        expect_refused(&t, outs, needle);
    }
    /* an unknown op is the host's to refuse (tests/test_validate.c) */

    /* dtypes */
    plx_conv_desc cd = PLX_CONV_DESC_INIT;
    t = tc_new("conv_f16", PLX_OP_CONV, &cd, 1);
    add_input(&t, PLX_DTYPE_FLOAT16, DIMS(1, 2, 5, 5));
    add_input(&t, PLX_DTYPE_FLOAT16, DIMS(3, 2, 3, 3));
    refused_inferred(&t, "conv needs float32, got float16");
    t = tc_new("matmul_i64", PLX_OP_MATMUL, NULL, 1);
    add_input(&t, PLX_DTYPE_INT64, DIMS(2, 3));
    add_input(&t, PLX_DTYPE_INT64, DIMS(3, 2));
    refused_inferred(&t, "matmul needs float32, got int64");
    plx_binary_desc bd = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    t = tc_new("add_i32", PLX_OP_BINARY, &bd, 1);
    add_input(&t, PLX_DTYPE_INT32, DIMS(2, 3));
    add_input(&t, PLX_DTYPE_INT32, DIMS(3));
    refused_inferred(&t, "binary add needs float32, got int32");
    plx_reduce_desc rd = PLX_REDUCE_DESC_INIT(PLX_REDUCE_SUM);
    t = tc_new("reduce_i32", PLX_OP_REDUCE, &rd, 1);
    add_input(&t, PLX_DTYPE_INT32, DIMS(2, 3));
    refused_inferred(&t, "reduce needs float32, got int32");
    plx_activation_desc ad = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    t = tc_new("relu_i32", PLX_OP_ACTIVATION, &ad, 1);
    add_input(&t, PLX_DTYPE_INT32, DIMS(2, 3));
    refused_inferred(&t, "activation needs float32, got int32");
    plx_pool_desc pd = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    pd.kernel[0] = pd.kernel[1] = 2;
    t = tc_new("pool_u8", PLX_OP_POOL, &pd, 1);
    add_input(&t, PLX_DTYPE_UINT8, DIMS(1, 1, 4, 4));
    refused_inferred(&t, "pool needs float32, got uint8");
    plx_cast_desc castd = PLX_CAST_DESC_INIT(PLX_DTYPE_BFLOAT16);
    t = tc_new("cast_bf16", PLX_OP_CAST, &castd, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4));
    refused_inferred(&t, "cast from float32 to bfloat16 is not implemented");
    plx_arg_reduce_desc ard = PLX_ARG_REDUCE_DESC_INIT(false);
    t = tc_new("argmax_i32", PLX_OP_ARG_REDUCE, &ard, 1);
    add_input(&t, PLX_DTYPE_INT32, DIMS(4, 2));
    refused_inferred(&t, "arg_reduce needs float32, got int32");

    /* enum values past the end */
    plx_activation_desc bad = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    bad.func = (plx_activation_func)77;
    t = tc_new("act_77", PLX_OP_ACTIVATION, &bad, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4));
    outs[0] = t.in[0];
    expect_refused(&t, outs, "unknown func 77");
    plx_unary_desc ub = PLX_UNARY_DESC_INIT(PLX_UNARY_ABS);
    ub.func = (plx_unary_func)40;
    t = tc_new("unary_40", PLX_OP_UNARY, &ub, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4));
    outs[0] = t.in[0];
    expect_refused(&t, outs, "unknown func 40");
    plx_pool_desc pk = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
    pk.kind = (plx_pool_kind)5;
    t = tc_new("pool_kind", PLX_OP_POOL, &pk, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 1, 4, 4));
    outs[0] = t.in[0];
    expect_refused(&t, outs, "kind 5 is not implemented");
    plx_conv_desc ap = PLX_CONV_DESC_INIT;
    ap.auto_pad = (plx_auto_pad)9;
    t = tc_new("conv_autopad", PLX_OP_CONV, &ap, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 1, 4, 4));
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 1, 3, 3));
    outs[0] = t.in[0];
    expect_refused(&t, outs, "auto_pad 9 is not implemented");

    /* constant indices are checked at load (those read at run time on the
     * device: index_out_of_range) */
    plx_axis_desc gd = PLX_AXIS_DESC_INIT(0);
    t = tc_new("gather_range", PLX_OP_GATHER, &gd, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4, 3));
    int64_t *gi = add_input(&t, PLX_DTYPE_INT64, DIMS(2));
    gi[0] = 0;
    gi[1] = 4;
    last_constant(&t);
    refused_inferred(&t, "index 4 (element 1) is out of range");

    /* too many parts */
    plx_axis_desc cc = PLX_AXIS_DESC_INIT(0);
    t = tc_new("concat_7", PLX_OP_CONCAT, &cc, 1);
    for (int i = 0; i < 7; i++) {
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 2));
    }
    refused_inferred(&t, "concat of 7 parts is not implemented");

    /* an output info that disagrees */
    plx_transpose_desc trd = PLX_TRANSPOSE_DESC_INIT;
    t = tc_new("transpose_bad", PLX_OP_TRANSPOSE, &trd, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3));
    outs[0] = t.in[0];
    expect_refused(&t, outs, "shape disagrees");

    /* more elements than kernels index */
    plx_activation_desc relu = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    t = tc_new("huge", PLX_OP_ACTIVATION, &relu, 1);
    t.nin = 1;
    t.in[0].dtype = PLX_DTYPE_FLOAT32;
    t.in[0].rank = 2;
    t.in[0].dims[0] = 65536;
    t.in[0].dims[1] = 32768;
    outs[0] = t.in[0];
    expect_refused(&t, outs, "too many elements");
    /* a too small descriptor is the host's to refuse (tests/test_validate.c) */
}

/* R-19 (3): the values appended to existing operators' enums, which the
 * OpenCL kernels' switches do not know, are refused by name (their output
 * infos from shape inference), never run as another function. */
Test(ocl_ops, new_function_values_refused) {
    need_device();
    tcase t;
    plx_unary_desc bn = PLX_UNARY_DESC_INIT(PLX_UNARY_BITWISE_NOT);
    t = tc_new("bitwise_not", PLX_OP_UNARY, &bn, 1);
    add_input(&t, PLX_DTYPE_INT32, DIMS(2, 3));
    refused_inferred(&t, "unary bitwise_not is not implemented");
    plx_unary_desc isn = PLX_UNARY_DESC_INIT(PLX_UNARY_IS_NAN);
    t = tc_new("is_nan_f16", PLX_OP_UNARY, &isn, 1);
    add_input(&t, PLX_DTYPE_FLOAT16, DIMS(2, 3));
    refused_inferred(&t, "unary is_nan needs float32, got float16");
    for (int f = PLX_BINARY_BITWISE_AND; f <= PLX_BINARY_SHIFT_RIGHT; f++) {
        plx_binary_desc d = PLX_BINARY_DESC_INIT((plx_binary_func)f);
        plx_dtype dt = f >= PLX_BINARY_SHIFT_LEFT ? PLX_DTYPE_UINT8 : PLX_DTYPE_INT32;
        t = tc_new(plx_binary_func_name(d.func), PLX_OP_BINARY, &d, 1);
        add_input(&t, dt, DIMS(2, 3));
        add_input(&t, dt, DIMS(3));
        char needle[64];
        snprintf(needle, sizeof needle, "binary %s is not implemented",
                 plx_binary_func_name(d.func));
        refused_inferred(&t, needle);
    }
    plx_activation_desc ad = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SHRINK);
    ad.alpha = NAN;
    t = tc_new("shrink_nan", PLX_OP_ACTIVATION, &ad, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3));
    plx_tensor_info outs[MAX_SLOTS];
    memset(outs, 0, sizeof outs);
    outs[0] = t.in[0]; /* shape inference refuses it too */
    expect_refused(&t, outs, "activation shrink: lambd (alpha) and bias (beta) must not be NaN");
    plx_global_pool_desc gd = PLX_GLOBAL_POOL_DESC_INIT(PLX_POOL_LP);
    gd.p = 3;
    t = tc_new("global_lp_pool", PLX_OP_GLOBAL_POOL, &gd, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 2, 4, 4));
    refused_inferred(&t, "global_pool: lp with p 3 is not implemented");
    plx_pool_desc ap = PLX_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    ap.kernel[0] = ap.kernel[1] = 2;
    t = tc_new("avg_pool_indices", PLX_OP_POOL, &ap, 2);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 2, 4, 4));
    memset(outs, 0, sizeof outs);
    outs[0] = t.in[0];
    outs[0].dims[2] = outs[0].dims[3] = 3;
    outs[1] = outs[0];
    outs[1].dtype = PLX_DTYPE_INT64;
    expect_refused(&t, outs, "Indices come with float32 max pools only");
}

/* The functions appended after the kernels were first written: unary
 * is_nan, is_inf, is_pos_inf, is_neg_inf (float32 to bool), activation
 * shrink, lp pools (and global ones with p 1 and 2), a max pool's Indices. */
Test(ocl_ops, later_functions) {
    need_device();
    for (int f = PLX_UNARY_IS_NAN; f <= PLX_UNARY_IS_NEG_INF; f++) {
        plx_unary_desc d = PLX_UNARY_DESC_INIT((plx_unary_func)f);
        tcase t = tc_new(plx_unary_func_name(d.func), PLX_OP_UNARY, &d, 1);
        float *p = add_input(&t, PLX_DTYPE_FLOAT32, DIMS(3, 4));
        p[0] = NAN;
        p[1] = -NAN;
        p[2] = INFINITY;
        p[3] = -INFINITY;
        p[4] = FLT_MAX;
        p[5] = -0.0f;
        run_case(&t);
    }
    const float lambds[] = {0.5f, 0.0f, 1.5f}, biases[] = {0.0f, 0.25f, -1.0f};
    for (int i = 0; i < 3; i++) {
        plx_activation_desc ad = PLX_ACTIVATION_DESC_INIT(PLX_ACT_SHRINK);
        ad.alpha = lambds[i];
        ad.beta = biases[i];
        tcase t = tc_new("shrink", PLX_OP_ACTIVATION, &ad, 1);
        float *p = add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(4, 5), -3.0f, 3.0f);
        p[0] = NAN;
        p[1] = lambds[i];
        p[2] = -lambds[i];
        p[3] = -INFINITY;
        run_case(&t);
    }
    for (int64_t pw = 1; pw <= 3; pw++) {
        for (int pads = 0; pads < 2; pads++) {
            plx_pool_desc pd = PLX_POOL_DESC_INIT(PLX_POOL_LP);
            pd.p = pw;
            pd.kernel[0] = 3;
            pd.kernel[1] = 2;
            pd.strides[0] = 2;
            pd.pads_begin[0] = pd.pads_end[1] = pads;
            tcase t = tc_new("lp_pool", PLX_OP_POOL, &pd, 1);
            add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3, 7, 6));
            run_case(&t);
        }
        plx_pool_desc p1 = PLX_POOL_DESC_INIT(PLX_POOL_LP);
        p1.p = pw;
        p1.kernel[0] = 3;
        p1.strides[0] = 2;
        tcase t = tc_new("lp_pool_1d", PLX_OP_POOL, &p1, 1);
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3, 9));
        run_case(&t);
    }
    for (int64_t pw = 1; pw <= 2; pw++) {
        plx_global_pool_desc gd = PLX_GLOBAL_POOL_DESC_INIT(PLX_POOL_LP);
        gd.p = pw;
        tcase t = tc_new("global_lp_pool", PLX_OP_GLOBAL_POOL, &gd, 1);
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3, 5, 4));
        run_case(&t);
    }
    for (int cm = 0; cm < 2; cm++) {
        for (int pads = 0; pads < 2; pads++) {
            plx_pool_desc pd = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
            pd.kernel[0] = pd.kernel[1] = 3;
            pd.strides[0] = pd.strides[1] = 2;
            pd.dilations[1] = 2;
            pd.pads_begin[0] = pd.pads_begin[1] = pads;
            pd.pads_end[0] = pads;
            pd.indices_column_major = cm != 0;
            tcase t = tc_new("max_pool_indices", PLX_OP_POOL, &pd, 2);
            float *p = add_input_range(&t, PLX_DTYPE_FLOAT32, DIMS(2, 3, 7, 8), -2.0f, 2.0f);
            for (int i = 0; i < 2 * 3 * 7 * 8; i++) {
                p[i] = floorf(p[i]); /* ties: the first wins */
            }
            p[9] = NAN;
            p[10] = NAN;
            run_case(&t);
        }
        plx_pool_desc p1 = PLX_POOL_DESC_INIT(PLX_POOL_MAX);
        p1.kernel[0] = 2;
        p1.indices_column_major = cm != 0;
        tcase t = tc_new("max_pool_indices_1d", PLX_OP_POOL, &p1, 2);
        add_input(&t, PLX_DTYPE_FLOAT32, DIMS(1, 2, 7));
        run_case(&t);
    }
}

/* ---- the dtypes of ABI 1.3 ------------------------------------------------ */

/* float64 and uint16/32/64 (ABI 1.3): the copies that move whole
 * elements by size (transpose, concat) run them as cpu_ref does; every
 * layer that computes on them is refused with its reason, never run. */
Test(ocl_ops, abi13_dtypes) {
    need_device();
    static const plx_dtype types[] = {PLX_DTYPE_FLOAT64, PLX_DTYPE_UINT16, PLX_DTYPE_UINT32,
                                      PLX_DTYPE_UINT64};
    for (size_t i = 0; i < 4; i++) {
        plx_transpose_desc d = PLX_TRANSPOSE_DESC_INIT;
        tcase t = tc_new("transpose_new_dtype", PLX_OP_TRANSPOSE, &d, 1);
        add_input(&t, types[i], DIMS(2, 3, 5));
        run_case(&t);
        plx_axis_desc cd = PLX_AXIS_DESC_INIT(1);
        t = tc_new("concat_new_dtype", PLX_OP_CONCAT, &cd, 1);
        add_input(&t, types[i], DIMS(2, 3, 4));
        add_input(&t, types[i], DIMS(2, 1, 4));
        run_case(&t);
    }
    plx_binary_desc bd = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
    tcase t = tc_new("add_f64", PLX_OP_BINARY, &bd, 1);
    add_input(&t, PLX_DTYPE_FLOAT64, DIMS(2, 3));
    add_input(&t, PLX_DTYPE_FLOAT64, DIMS(3));
    refused_inferred(&t, "binary add needs float32, got float64");
    plx_binary_desc sd = PLX_BINARY_DESC_INIT(PLX_BINARY_SHIFT_LEFT);
    t = tc_new("shl_u64", PLX_OP_BINARY, &sd, 1);
    add_input(&t, PLX_DTYPE_UINT64, DIMS(4));
    add_input(&t, PLX_DTYPE_UINT64, DIMS(4));
    refused_inferred(&t, "binary shift_left");
    plx_unary_desc ud = PLX_UNARY_DESC_INIT(PLX_UNARY_EXP);
    t = tc_new("exp_f64", PLX_OP_UNARY, &ud, 1);
    add_input(&t, PLX_DTYPE_FLOAT64, DIMS(4));
    refused_inferred(&t, "float64");
    plx_reduce_desc rd = PLX_REDUCE_DESC_INIT(PLX_REDUCE_LOG_SUM_EXP);
    t = tc_new("lse_f64", PLX_OP_REDUCE, &rd, 1);
    add_input(&t, PLX_DTYPE_FLOAT64, DIMS(2, 3));
    refused_inferred(&t, "reduce needs float32, got float64");
    plx_cast_desc c1 = PLX_CAST_DESC_INIT(PLX_DTYPE_FLOAT32);
    t = tc_new("cast_f64_f32", PLX_OP_CAST, &c1, 1);
    add_input(&t, PLX_DTYPE_FLOAT64, DIMS(4));
    refused_inferred(&t, "cast from float64 to float32 is not implemented");
    plx_cast_desc c2 = PLX_CAST_DESC_INIT(PLX_DTYPE_UINT16);
    t = tc_new("cast_f32_u16", PLX_OP_CAST, &c2, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4));
    refused_inferred(&t, "cast from float32 to uint16 is not implemented");
    plx_activation_desc ad = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
    t = tc_new("relu_f64", PLX_OP_ACTIVATION, &ad, 1);
    add_input(&t, PLX_DTYPE_FLOAT64, DIMS(4));
    refused_inferred(&t, "activation needs float32, got float64");
    /* the float8 types: no cast to or from them, no quantize */
    plx_cast_desc c3 = PLX_CAST_DESC_INIT(PLX_DTYPE_FLOAT8E4M3FN);
    t = tc_new("cast_f32_f8", PLX_OP_CAST, &c3, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4));
    refused_inferred(&t, "cast from float32 to float8e4m3fn is not implemented");
    plx_quantize_desc qd = PLX_QUANTIZE_DESC_INIT(PLX_DTYPE_FLOAT8E5M2);
    t = tc_new("quantize_f8", PLX_OP_QUANTIZE, &qd, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4));
    add_input(&t, PLX_DTYPE_FLOAT32, 0, NULL);
    refused_inferred(&t, "quantize is not implemented");
    /* int4 and uint4 likewise */
    plx_cast_desc c4 = PLX_CAST_DESC_INIT(PLX_DTYPE_INT4);
    t = tc_new("cast_f32_i4", PLX_OP_CAST, &c4, 1);
    add_input(&t, PLX_DTYPE_FLOAT32, DIMS(4));
    refused_inferred(&t, "cast from float32 to int4 is not implemented");
}
