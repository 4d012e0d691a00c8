/* gpu_cuda_failure (cuda_backend.h): a CUDA runtime failure as a status.
 * On its own so that tests/test_gpu_cuda_queue.c builds the queue with it
 * against its model of the CUDA runtime. */
#include <stdarg.h>
#include <stdio.h>

#include "cuda_backend.h"

plx_status gpu_cuda_failure(const plx_host *host, cudaError_t rc, plx_status_code code,
                            const char *call_fmt, ...) {
    char call[256];
    va_list ap;
    va_start(ap, call_fmt);
    vsnprintf(call, sizeof call, call_fmt, ap);
    va_end(ap);
    if (rc == cudaErrorMemoryAllocation) {
        code = PLX_OUT_OF_MEMORY;
    }
    return host->status_create(host, code, "%s: %s (%s)", call, cudaGetErrorString(rc),
                               cudaGetErrorName(rc));
}
