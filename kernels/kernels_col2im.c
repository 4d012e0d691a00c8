/* The reference kernels that scatter values into images: col2im (ONNX
 * Col2Im; plexus/ops.h, plx_col2im_desc, gives the contract), over 1 to
 * PLX_COL2IM_MAX_SPATIAL spatial dims, and max_unpool (ONNX MaxUnpool,
 * plx_max_unpool_desc) below.
 *
 * Y starts at 0; each row of X (one channel and one offset inside the
 * block) walks the L blocks in row-major order and adds each value to the
 * pixel the offset lands on in that block, unless it lands in the
 * padding. Per dim the pixel is block_index * stride - pad_begin +
 * offset * dilation, so a row's pixels along a dim step by the stride:
 * the walk keeps one counter per dim. Sums are in the tensor's type
 * (float32 or float64), in X's row order. */
#include "kernels_compute.h"

#include <inttypes.h>
#include <string.h>

typedef struct c2i_geom {
    uint32_t r;
    int64_t n, c, block, blocks, plane;
    int64_t image[PLX_COL2IM_MAX_SPATIAL], nblk[PLX_COL2IM_MAX_SPATIAL];
    int64_t kdims[PLX_COL2IM_MAX_SPATIAL];
} c2i_geom;

/* The host validated the layer (core/src/infer_conv.c); checked again so
 * that the loops never trust an inconsistent view. */
static const char *c2i_prepare(const plx_layer_view *l, c2i_geom *g, char *buf, size_t size) {
    const plx_col2im_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *y = &l->outputs[0];
    if ((x->dtype != PLX_DTYPE_FLOAT32 && x->dtype != PLX_DTYPE_FLOAT64) ||
        y->dtype != x->dtype) {
        return plxk_refuse(buf, size, "col2im: X of dtype %s (float32 and float64 only)",
                           plx_dtype_name(x->dtype));
    }
    const uint32_t r = d->spatial;
    if (r < 1 || r > PLX_COL2IM_MAX_SPATIAL || x->rank != 3 || y->rank != r + 2) {
        return plxk_refuse(buf, size, "col2im: X must be [N, C * block, L] and Y "
                           "[N, C, image...] over 1 to %d spatial dims", PLX_COL2IM_MAX_SPATIAL);
    }
    g->r = r;
    g->block = 1;
    g->blocks = 1;
    g->plane = 1;
    for (uint32_t i = 0; i < r; i++) {
        const int64_t span = d->dilations[i] * (d->block_shape[i] - 1) + 1;
        const int64_t padded = d->image_shape[i] + d->pads_begin[i] + d->pads_end[i];
        if (d->image_shape[i] < 1 || d->block_shape[i] < 1 || d->strides[i] < 1 ||
            d->dilations[i] < 1 || d->pads_begin[i] < 0 || d->pads_end[i] < 0 ||
            padded < span || y->dims[2 + i] != d->image_shape[i]) {
            return plxk_refuse(buf, size, "col2im: the geometry of dim %u does not "
                               "match Y", (unsigned)i);
        }
        g->image[i] = d->image_shape[i];
        g->kdims[i] = d->block_shape[i];
        g->nblk[i] = (padded - span) / d->strides[i] + 1;
        g->block *= d->block_shape[i];
        g->blocks *= g->nblk[i];
        g->plane *= d->image_shape[i];
    }
    g->n = x->dims[0];
    g->c = y->dims[1];
    if (y->dims[0] != g->n || x->dims[1] != g->c * g->block || x->dims[2] != g->blocks) {
        return plxk_refuse(buf, size, "col2im: X's dims are not Y's channels times the "
                           "block and the block count");
    }
    return NULL;
}

const char *plxk_check_col2im(const plx_layer_view *layer, char *buf, size_t size) {
    c2i_geom g = {0};
    return c2i_prepare(layer, &g, buf, size);
}

#define C2I_RUN(type)                                                                        \
    static void c2i_##type(const c2i_geom *g, const plx_col2im_desc *d, const type *x,      \
                           type *y) {                                                        \
        const uint32_t r = g->r;                                                             \
        for (int64_t nc = 0; nc < g->n * g->c; nc++) {                                       \
            type *plane = y + nc * g->plane;                                                 \
            for (int64_t b = 0; b < g->block; b++) {                                         \
                /* the offset inside the block, per dim; the first pixel (block 0) */        \
                int64_t first[PLX_COL2IM_MAX_SPATIAL], at[PLX_COL2IM_MAX_SPATIAL];           \
                int64_t rest = b;                                                            \
                for (uint32_t i = r; i-- > 0;) {                                             \
                    first[i] = (rest % g->kdims[i]) * d->dilations[i] - d->pads_begin[i];    \
                    rest /= g->kdims[i];                                                     \
                    at[i] = 0;                                                               \
                }                                                                            \
                const type *row = x + (nc * g->block + b) * g->blocks;                       \
                for (int64_t k = 0; k < g->blocks; k++) {                                    \
                    int64_t off = 0;                                                         \
                    bool inside = true;                                                      \
                    for (uint32_t i = 0; i < r; i++) {                                       \
                        const int64_t p = first[i] + at[i] * d->strides[i];                  \
                        inside = inside && p >= 0 && p < g->image[i];                        \
                        off = off * g->image[i] + p;                                         \
                    }                                                                        \
                    if (inside) {                                                            \
                        plane[off] += row[k];                                                \
                    }                                                                        \
                    for (uint32_t i = r; i-- > 0 && ++at[i] == g->nblk[i];) {                \
                        at[i] = 0;                                                           \
                    }                                                                        \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    }
C2I_RUN(float)
C2I_RUN(double)

bool plxk_run_col2im(const plxk_kernel_args *args) {
    char why[256];
    c2i_geom g = {0};
    const plx_layer_view *l = args->layer;
    if (c2i_prepare(l, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const size_t elem = plx_dtype_size(l->outputs[0].dtype);
    memset(args->outputs[0], 0, (size_t)(g.n * g.c * g.plane) * elem);
    if (l->inputs[0].dtype == PLX_DTYPE_FLOAT64) {
        c2i_double(&g, l->desc, args->inputs[0], args->outputs[0]);
    } else {
        c2i_float(&g, l->desc, args->inputs[0], args->outputs[0]);
    }
    return true;
}

/* ---- max_unpool ----------------------------------------------------------- */

/* The pool input's shape S (full[]) and Y's, over N, C and r spatial
 * dims; elements move as plx_dtype_size bytes, so every dtype works. */
typedef struct unpool_geom {
    uint32_t rank;
    int64_t full[PLX_MAX_RANK], out[PLX_MAX_RANK];
    int64_t full_count, x_count;
} unpool_geom;

static const char *unpool_prepare(const plx_layer_view *l, unpool_geom *g, char *buf,
                                  size_t size) {
    const plx_max_unpool_desc *d = l->desc;
    const plx_tensor_info *x = &l->inputs[0], *ind = &l->inputs[1], *y = &l->outputs[0];
    const uint32_t r = d->spatial;
    if (r < 1 || r > PLX_COL2IM_MAX_SPATIAL || x->rank != r + 2 || y->rank != r + 2 ||
        ind->dtype != PLX_DTYPE_INT64 || !plxk_same_dims(x, ind) || y->dtype != x->dtype ||
        plx_dtype_size(x->dtype) == 0 || y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1]) {
        return plxk_refuse(buf, size, "max_unpool: X [N, C, D1..Dr], I (int64, X's "
                           "shape) and Y [N, C, O1..Or] of X's dtype expected");
    }
    g->rank = r + 2;
    g->full_count = x->dims[0] * x->dims[1];
    g->full[0] = g->out[0] = x->dims[0];
    g->full[1] = g->out[1] = x->dims[1];
    for (uint32_t i = 0; i < r; i++) {
        const int64_t full = (x->dims[2 + i] > 0 ? x->dims[2 + i] - 1 : 0) * d->strides[i] +
                             d->kernel[i] - d->pads_begin[i] - d->pads_end[i];
        if (d->kernel[i] < 1 || d->strides[i] < 1 || full < 1 || y->dims[2 + i] < 1) {
            return plxk_refuse(buf, size, "max_unpool: dim %u of the pool's input is "
                               "empty", (unsigned)i);
        }
        g->full[2 + i] = full;
        g->out[2 + i] = y->dims[2 + i];
        g->full_count *= full;
    }
    g->x_count = plxk_numel(x);
    return NULL;
}

const char *plxk_check_max_unpool(const plx_layer_view *layer, char *buf, size_t size) {
    unpool_geom g = {0};
    return unpool_prepare(layer, &g, buf, size);
}

bool plxk_run_max_unpool(const plxk_kernel_args *args) {
    char why[256];
    unpool_geom g = {0};
    const plx_layer_view *l = args->layer;
    if (unpool_prepare(l, &g, why, sizeof why)) {
        return plxk_fail(args, "%s", why);
    }
    const size_t elem = plx_dtype_size(l->inputs[0].dtype);
    memset(args->outputs[0], 0, plxk_element_count(&l->outputs[0]) * elem);
    const unsigned char *x = args->inputs[0];
    const int64_t *ind = args->inputs[1];
    unsigned char *y = args->outputs[0];
    for (int64_t e = 0; e < g.x_count; e++) {
        const int64_t at = ind[e];
        if (at < 0 || at >= g.full_count) {
            return plxk_fail(args, "layer '%s' (max_unpool): index %" PRId64 " (I element %"
                             PRId64 ") is outside the %" PRId64 " positions of the pool's "
                             "input", plxk_layer_name(l), at, e, g.full_count);
        }
        /* at's coordinates in S, then its offset in Y when it lies there */
        int64_t rest = at, off = 0, unit = 1;
        bool inside = true;
        for (uint32_t i = g.rank; i-- > 0;) {
            const int64_t k = rest % g.full[i];
            rest /= g.full[i];
            inside = inside && k < g.out[i];
            off += k * unit;
            unit *= g.out[i];
        }
        if (inside) {
            memcpy(y + (size_t)off * elem, x + (size_t)e * elem, elem);
        }
    }
    return true;
}

/* The kernel table's rows (kernels.h, PLXK_ROW). */
PLXK_ROW(COL2IM, col2im);
PLXK_ROW(MAX_UNPOOL, max_unpool);
