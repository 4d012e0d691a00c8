/* The reference kernel of det (ONNX Det; plexus/ops.h, PLX_OP_DET): the
 * determinant of each M x M matrix of X [.., M, M], by LU factorisation
 * with partial pivoting in double whatever X's float type: the product
 * of the pivots, negated once per row swap. A singular matrix gives 0
 * (a zero column below the diagonal); NaN inputs give NaN. The matrix
 * is factorised in the workspace (M * M doubles, plxk_workspace_det). */
#include "kernels_compute.h"

#include <math.h>

static bool det_is_float(plx_dtype dt) {
    return dt == PLX_DTYPE_FLOAT32 || dt == PLX_DTYPE_FLOAT64 || dt == PLX_DTYPE_FLOAT16 ||
           dt == PLX_DTYPE_BFLOAT16;
}

static double det_load(plx_dtype dt, const void *p, int64_t i) {
    switch (dt) {
    case PLX_DTYPE_FLOAT64: return ((const double *)p)[i];
    case PLX_DTYPE_FLOAT16: return plx_float16_to_float32(((const uint16_t *)p)[i]);
    case PLX_DTYPE_BFLOAT16: return plx_bfloat16_to_float32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

static void det_store(plx_dtype dt, void *p, int64_t i, double v) {
    switch (dt) {
    case PLX_DTYPE_FLOAT64: ((double *)p)[i] = v; break;
    case PLX_DTYPE_FLOAT16: ((uint16_t *)p)[i] = plx_float64_to_float16(v); break;
    case PLX_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = plx_float64_to_bfloat16(v); break;
    default: ((float *)p)[i] = (float)v; break;
    }
}

/* The host validated the layer (core/src/infer_other.c); checked again so
 * that the loops never trust an inconsistent view. */
static const char *det_prepare(const plx_layer_view *l, int64_t *count, int64_t *m, char *buf,
                               size_t size) {
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    if (!det_is_float(x->dtype) || y->dtype != x->dtype) {
        return plxk_refuse(buf, size, "det: X %s and Y %s must be of one float type",
                           plx_dtype_name(x->dtype), plx_dtype_name(y->dtype));
    }
    if (x->rank < 2 || x->rank > PLX_MAX_RANK || y->rank != x->rank - 2 ||
        x->dims[x->rank - 1] != x->dims[x->rank - 2] ||
        x->dims[x->rank - 1] > ((int64_t)1 << 15)) {
        return plxk_refuse(buf, size, "det: X must be [.., M, M] (M up to 32768) and Y "
                           "[..]");
    }
    *count = 1;
    for (uint32_t i = 0; i + 2 < x->rank; i++) {
        if (y->dims[i] != x->dims[i]) {
            return plxk_refuse(buf, size, "det: Y's dims must be X's leading dims");
        }
        *count *= x->dims[i];
    }
    *m = x->dims[x->rank - 1];
    return NULL;
}

const char *plxk_check_det(const plx_layer_view *layer, char *buf, size_t size) {
    int64_t count, m;
    return det_prepare(layer, &count, &m, buf, size);
}

size_t plxk_workspace_det(const plx_layer_view *layer, const plxk_compute *compute) {
    (void)compute;
    int64_t count = 0, m = 0;
    if (det_prepare(layer, &count, &m, NULL, 0)) {
        return 0;
    }
    return plxk_round_ws((size_t)(m * m) * sizeof(double));
}

bool plxk_run_det(const plxk_kernel_args *args) {
    char why[256];
    int64_t count = 0, m = 0;
    const plx_layer_view *l = args->layer;
    if (det_prepare(l, &count, &m, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const size_t need = plxk_round_ws((size_t)(m * m) * sizeof(double));
    if (count == 0) {
        return true;
    }
    if (need > 0 && (!args->workspace || args->workspace_size < need)) {
        return plxk_fail(args, "det: a workspace of %zu bytes is needed, got %zu", need,
                         args->workspace ? args->workspace_size : (size_t)0);
    }
    const plx_dtype dt = l->inputs[0].dtype;
    double *a = args->workspace;
    for (int64_t b = 0; b < count; b++) {
        for (int64_t i = 0; i < m * m; i++) {
            a[i] = det_load(dt, args->inputs[0], b * m * m + i);
        }
        double det = 1.0;
        for (int64_t k = 0; k < m; k++) {
            int64_t p = k;
            for (int64_t i = k + 1; i < m; i++) {
                if (fabs(a[i * m + k]) > fabs(a[p * m + k])) {
                    p = i;
                }
            }
            if (a[p * m + k] == 0.0) {
                det = 0.0;
                break;
            }
            if (p != k) {
                for (int64_t j = 0; j < m; j++) {
                    const double t = a[k * m + j];
                    a[k * m + j] = a[p * m + j];
                    a[p * m + j] = t;
                }
                det = -det;
            }
            const double pivot = a[k * m + k];
            det *= pivot;
            for (int64_t i = k + 1; i < m; i++) {
                const double f = a[i * m + k] / pivot;
                for (int64_t j = k + 1; j < m; j++) {
                    a[i * m + j] -= f * a[k * m + j];
                }
            }
        }
        det_store(dt, args->outputs[0], b, det);
    }
    return true;
}

/* The kernel table's row (kernels.h, PLXK_ROW_WS). */
PLXK_ROW_WS(DET, det);
