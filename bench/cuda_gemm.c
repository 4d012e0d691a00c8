/* plexus-bench-cuda-gemm: TFLOP/s of gpu_cuda's matrix product through the
 * whole runtime, in each precision.
 *
 * A one-layer network Y = A x B (matmul; B a constant, A the input) is
 * optimised for gpu_cuda alone and loaded with planned device memory; A and
 * Y are bound to device memory of this program's (cudaMalloc, the
 * `gpu_cuda.device_ptr` external memory kind), so a run moves nothing
 * between host and device and its time is the product's plus the runtime's
 * own cost per execution. Each size and precision (the backend option
 * precision: fp32, tf32, fp16, bf16 compute on float32 tensors) is run
 * `--runs` times after 3 warm-up runs; the median gives TFLOP/s = 2 M N K /
 * time. 64 entries of Y are checked against a double-precision product on
 * the host (the largest relative error is printed), so that a fast wrong
 * product does not pass for a result.
 *
 * bench/cuda_vs_torch.py --gemm-bench runs it beside torch.matmul on the
 * same sizes (the device's practical peak); docs/gpu_cuda.md says how.
 *
 * usage: plexus-bench-cuda-gemm --backend-path DIR [--sizes 1024,4096,8192]
 *            [--precisions fp32,tf32,fp16,bf16] [--runs N] [--json]
 * Needs a CUDA device: without one it says why and exits 1. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <plexus/network.h>

#include "bench_util.h"

#define MAX_SIZES 8

static void usage(void) {
    fprintf(stderr, "usage: plexus-bench-cuda-gemm --backend-path DIR [--sizes N,...] "
                    "[--precisions fp32,tf32,fp16,bf16] [--runs N] [--json]\n");
}

static int fail(const char *what, plx_status s) {
    fprintf(stderr, "plexus-bench-cuda-gemm: %s: %s\n", what, plx_status_get_message(s));
    plx_status_free(s);
    return 1;
}

/* Deterministic values in [-1, 1). */
static void fill(float *v, size_t n, unsigned seed) {
    unsigned x = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        v[i] = (float)(x >> 8) / 8388608.0f - 1.0f;
    }
}

typedef struct result {
    double ms, tflops, max_rel_err;
} result;

/* One size in one precision on `rt`. */
static int run_size(plx_runtime *rt, int64_t n, int runs, result *out) {
    size_t count = (size_t)n * (size_t)n;
    float *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b),
          *y = malloc(count * sizeof *y);
    double *times = malloc((size_t)runs * sizeof *times);
    if (!a || !b || !y || !times) {
        fprintf(stderr, "plexus-bench-cuda-gemm: out of host memory for n=%lld\n", (long long)n);
        free(a), free(b), free(y), free(times);
        return 1;
    }
    fill(a, count, 1);
    fill(b, count, 2);
    int rc = 1;
    plx_network *net = NULL;
    plx_optimized_network *on = NULL;
    plx_loaded_network *ln = NULL;
    void *da = NULL, *dy = NULL;
    plx_status s;
    int64_t dims[2] = {n, n};
    plx_tensor_info t;
    memset(&t, 0, sizeof t);
    t.dtype = PLX_DTYPE_FLOAT32;
    t.rank = 2;
    t.dims[0] = dims[0];
    t.dims[1] = dims[1];
    plx_layer_id in, cb, mm, outl;
    if ((s = plx_network_create(&net)) || (s = plx_network_add_input(net, "a", 0, &t, &in)) ||
        (s = plx_network_add_constant(net, "b", &t, b, PLX_CONSTANT_BORROW, &cb)) ||
        (s = plx_network_add_layer(net, "matmul", PLX_OP_MATMUL, NULL, 2, 1, &mm)) ||
        (s = plx_network_add_output(net, "y", 0, &outl)) ||
        (s = plx_network_connect(net, in, 0, mm, 0)) ||
        (s = plx_network_connect(net, cb, 0, mm, 1)) ||
        (s = plx_network_connect(net, mm, 0, outl, 0))) {
        rc = fail("building the network", s);
        goto done;
    }
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *ids[] = {"gpu_cuda"};
    oo.backends = ids;
    oo.backend_count = 1;
    oo.allow_fallback = false;
    if ((s = plx_optimize(rt, net, &oo, &on))) {
        rc = fail("optimising for gpu_cuda", s);
        goto done;
    }
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.externally_managed_memory = true;
    if ((s = plx_runtime_load_network(rt, &on, &lo, &ln))) {
        rc = fail("loading", s);
        goto done;
    }
    if (cudaMalloc(&da, count * sizeof *a) != cudaSuccess ||
        cudaMalloc(&dy, count * sizeof *y) != cudaSuccess ||
        cudaMemcpy(da, a, count * sizeof *a, cudaMemcpyHostToDevice) != cudaSuccess) {
        fprintf(stderr, "plexus-bench-cuda-gemm: device memory for n=%lld: %s\n", (long long)n,
                cudaGetErrorString(cudaGetLastError()));
        goto done;
    }
    plx_external_memory ea = {sizeof ea, "gpu_cuda.device_ptr", da, -1, 0,
                              count * sizeof *a, NULL, NULL};
    plx_external_memory ey = {sizeof ey, "gpu_cuda.device_ptr", dy, -1, 0,
                              count * sizeof *y, NULL, NULL};
    plx_tensor_binding ib = {0, &ea, count * sizeof *a, PLX_MEMORY_SOURCE_EXTERNAL};
    plx_tensor_binding ob = {0, &ey, count * sizeof *y, PLX_MEMORY_SOURCE_EXTERNAL};
    plx_execute_args args;
    plx_execute_args_init(&args);
    args.inputs = &ib;
    args.input_count = 1;
    args.outputs = &ob;
    args.output_count = 1;
    for (int i = 0; i < 3 + runs; i++) {
        double t0 = bench_now_ns();
        if ((s = plx_loaded_network_execute_with(ln, NULL, &args))) {
            rc = fail("executing", s);
            goto done;
        }
        if (i >= 3) {
            times[i - 3] = (bench_now_ns() - t0) / 1e6;
        }
    }
    if (cudaMemcpy(y, dy, count * sizeof *y, cudaMemcpyDeviceToHost) != cudaSuccess) {
        fprintf(stderr, "plexus-bench-cuda-gemm: reading Y back failed\n");
        goto done;
    }
    out->max_rel_err = 0.0;
    for (int k = 0; k < 64; k++) {
        int64_t r = (int64_t)((unsigned)k * 2654435761u % (unsigned)n);
        int64_t c = (int64_t)((unsigned)k * 40503u % (unsigned)n);
        double want = 0.0, scale = 0.0;
        for (int64_t j = 0; j < n; j++) {
            double p = (double)a[r * n + j] * (double)b[j * n + c];
            want += p;
            scale += fabs(p);
        }
        double err = fabs((double)y[r * n + c] - want) / (scale > 0.0 ? scale : 1.0);
        if (err > out->max_rel_err) {
            out->max_rel_err = err;
        }
    }
    out->ms = bench_median(times, (size_t)runs);
    out->tflops = 2.0 * (double)n * (double)n * (double)n / (out->ms * 1e-3) / 1e12;
    rc = 0;
done:
    cudaFree(da);
    cudaFree(dy);
    plx_loaded_network_unload(&ln);
    plx_optimized_network_destroy(&on);
    plx_network_destroy(&net);
    free(a), free(b), free(y), free(times);
    return rc;
}

int main(int argc, char **argv) {
    const char *paths[8];
    size_t path_count = 0;
    const char *sizes_text = "1024,4096,8192", *precisions_text = "fp32,tf32,fp16,bf16";
    int runs = 20;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--backend-path") == 0 && i + 1 < argc && path_count < 8) {
            paths[path_count++] = argv[++i];
        } else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            sizes_text = argv[++i];
        } else if (strcmp(argv[i], "--precisions") == 0 && i + 1 < argc) {
            precisions_text = argv[++i];
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else {
            usage();
            return 2;
        }
    }
    if (path_count == 0 || runs < 1) {
        usage();
        return 2;
    }
    char size_buf[256], prec_buf[256];
    const char *size_ids[MAX_SIZES], *precisions[8];
    size_t size_count = bench_split_ids(sizes_text, size_buf, sizeof size_buf, size_ids, MAX_SIZES);
    size_t prec_count = bench_split_ids(precisions_text, prec_buf, sizeof prec_buf, precisions, 8);
    if (json) {
        printf("{\"runs\": %d, \"results\": [", runs);
    } else {
        printf("%-6s %6s %10s %9s %12s\n", "prec", "n", "ms", "TFLOP/s", "max rel err");
    }
    bool first = true;
    for (size_t p = 0; p < prec_count; p++) {
        plx_backend_option opt = {"gpu_cuda", "precision", precisions[p]};
        plx_runtime *rt = NULL;
        plx_status s = bench_runtime(paths, path_count, &opt, 1, &rt);
        if (s) {
            return fail("creating the runtime", s);
        }
        const plx_backend_info *b = plx_runtime_find_backend(rt, "gpu_cuda");
        if (!b || !b->available) {
            fprintf(stderr, "plexus-bench-cuda-gemm: gpu_cuda is not available: %s\n",
                    b ? b->reason : "not found in the paths given");
            plx_runtime_destroy(&rt);
            return 1;
        }
        for (size_t k = 0; k < size_count; k++) {
            int64_t n = atoll(size_ids[k]);
            result r = {0.0, 0.0, 0.0};
            if (n < 1 || run_size(rt, n, runs, &r) != 0) {
                plx_runtime_destroy(&rt);
                return 1;
            }
            if (json) {
                printf("%s{\"precision\": \"%s\", \"n\": %lld, \"ms\": %.6f, \"tflops\": %.3f, "
                       "\"max_rel_err\": %.3g}",
                       first ? "" : ", ", precisions[p], (long long)n, r.ms, r.tflops,
                       r.max_rel_err);
            } else {
                printf("%-6s %6lld %10.3f %9.2f %12.2e\n", precisions[p], (long long)n, r.ms,
                       r.tflops, r.max_rel_err);
            }
            first = false;
            fflush(stdout);
        }
        plx_runtime_destroy(&rt);
    }
    if (json) {
        printf("]}\n");
    }
    return 0;
}
