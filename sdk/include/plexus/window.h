/* Plexus sliding-window arithmetic: ONNX's rules for the padding and the
 * output size of convolution, pooling and transposed convolution along one
 * spatial dimension, for backends to compute their kernels' geometry the
 * way the host's shape inference does; and, built on them, the whole
 * geometry of a 1-D, 2-D or (the _nd functions) 3-D conv, conv_transpose
 * or pool layer, checked.
 *
 * Header-only helpers (static inline): nothing crosses the ABI, a backend
 * compiles them in, and they keep no state (thread-safe). plx_window_dim
 * and plx_conv_transpose_dim do not bound their inputs: the caller checks
 * each size first (at least 1 for kernel, stride and dilation, at least 0
 * for the input and the pads, and each at most 2^30, which keeps every sum
 * and product below 2^62), because what counts as too large is the
 * backend's own limit (its index type, its kernels). The layer-level
 * plx_window_geom_* functions make those checks themselves, against a
 * limit the backend passes, and word the refusal for the backend to
 * prefix with its name. */
#ifndef PLEXUS_WINDOW_H
#define PLEXUS_WINDOW_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <plexus/ops.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum plx_window_status {
    PLX_WINDOW_OK = 0,
    /* auto_pad is not a plx_auto_pad value. */
    PLX_WINDOW_BAD_AUTO_PAD = 1,
    /* No output: the dilated kernel is larger than the padded input (conv,
     * pool), or an output_shape larger than the full output or pads larger
     * than it (conv_transpose). */
    PLX_WINDOW_NO_OUTPUT = 2
} plx_window_status;

/* floor(a / b) and ceil(a / b) for b > 0 and any a. */
static inline int64_t plx_floor_div(int64_t a, int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

static inline int64_t plx_ceil_div(int64_t a, int64_t b) {
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/* Convolution and pooling along one spatial dimension of size `in`, with
 * kernel k, stride s, dilation d: the padding before and after, and the
 * number of windows. auto_pad SAME_UPPER and SAME_LOWER pad a total of
 * max(0, (ceil(in / s) - 1) * s + (k - 1) * d + 1 - in), the odd one at the
 * end for SAME_UPPER and at the start for SAME_LOWER; VALID pads nothing;
 * NOTSET takes pads_begin and pads_end (read for NOTSET only). ceil_mode
 * (pooling, with NOTSET) rounds the count up, but drops a last window that
 * would start in the right padding. */
static inline plx_window_status plx_window_dim(plx_auto_pad auto_pad, int64_t in, int64_t k,
                                               int64_t s, int64_t d, int64_t pads_begin,
                                               int64_t pads_end, bool ceil_mode,
                                               int64_t *out_pad_begin, int64_t *out_pad_end,
                                               int64_t *out_count) {
    int64_t dk = (k - 1) * d + 1, pb = 0, pe = 0, n;
    switch (auto_pad) {
    case PLX_AUTO_PAD_SAME_UPPER:
    case PLX_AUTO_PAD_SAME_LOWER: {
        n = plx_ceil_div(in, s);
        int64_t total = (n - 1) * s + dk - in;
        if (total < 0) {
            total = 0;
        }
        pb = auto_pad == PLX_AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
        pe = total - pb;
        break;
    }
    case PLX_AUTO_PAD_NOTSET:
    case PLX_AUTO_PAD_VALID: {
        if (auto_pad == PLX_AUTO_PAD_NOTSET) {
            pb = pads_begin;
            pe = pads_end;
        }
        int64_t span = in + pb + pe - dk;
        if (span < 0) {
            return PLX_WINDOW_NO_OUTPUT;
        }
        /* For VALID, ONNX's ceil((in - dk + 1) / s) equals
         * floor((in - dk) / s) + 1: ceil_mode only matters with pads. */
        bool ceil_now = ceil_mode && auto_pad == PLX_AUTO_PAD_NOTSET;
        n = (ceil_now ? plx_ceil_div(span, s) : span / s) + 1;
        if (ceil_now && (n - 1) * s >= in + pb) {
            n--;
        }
        break;
    }
    default:
        return PLX_WINDOW_BAD_AUTO_PAD;
    }
    *out_pad_begin = pb;
    *out_pad_end = pe;
    *out_count = n;
    return PLX_WINDOW_OK;
}

/* Transposed convolution along one spatial dimension of size `in`: the
 * output size and the padding at its start (output position o receives
 * input i through kernel tap t when i * s + t * d - pad_begin == o). The
 * full output is s * (in - 1) + output_padding + (k - 1) * d + 1. A given
 * output_shape (0: not given) sets the size and derives the padding, the
 * odd one at the start unless auto_pad is SAME_UPPER; else SAME_UPPER and
 * SAME_LOWER give in * s, VALID the full output, and NOTSET the full output
 * less pads_begin and pads_end. */
static inline plx_window_status plx_conv_transpose_dim(plx_auto_pad auto_pad, int64_t in,
                                                       int64_t k, int64_t s, int64_t d,
                                                       int64_t output_padding,
                                                       int64_t output_shape, int64_t pads_begin,
                                                       int64_t pads_end, int64_t *out_pad_begin,
                                                       int64_t *out_size) {
    int64_t full = s * (in - 1) + output_padding + (k - 1) * d + 1, out, pb;
    switch (auto_pad) {
    case PLX_AUTO_PAD_SAME_UPPER:
    case PLX_AUTO_PAD_SAME_LOWER: {
        out = output_shape ? output_shape : in * s;
        int64_t total = full - out;
        pb = auto_pad == PLX_AUTO_PAD_SAME_UPPER ? plx_floor_div(total, 2)
                                                 : total - plx_floor_div(total, 2);
        break;
    }
    case PLX_AUTO_PAD_NOTSET:
    case PLX_AUTO_PAD_VALID: {
        int64_t pe = 0;
        pb = 0;
        if (auto_pad == PLX_AUTO_PAD_NOTSET) {
            pb = pads_begin;
            pe = pads_end;
        }
        out = full - pb - pe;
        if (output_shape) {
            int64_t total = full - output_shape;
            if (total < 0) {
                return PLX_WINDOW_NO_OUTPUT;
            }
            out = output_shape;
            pb = total - plx_floor_div(total, 2);
        }
        break;
    }
    default:
        return PLX_WINDOW_BAD_AUTO_PAD;
    }
    if (out < 0) {
        return PLX_WINDOW_NO_OUTPUT;
    }
    *out_pad_begin = pb;
    *out_size = out;
    return PLX_WINDOW_OK;
}

/* ---- a layer's window geometry ------------------------------------------ */

/* The geometry of a conv, conv_transpose or pool layer (X of rank 3, 4
 * or 5: NCW, NCHW or NCDHW) in three slots: a 2-D layer's spatial dims 0
 * and 1 (H, W) in slots 0 and 1; a 1-D layer's one spatial dim in slot 1;
 * a 3-D layer's dims 0, 1 and 2 (D, H, W) in slots 2, 0 and 1. A slot a
 * layer does not use is trivial (in, out, k, s, d 1; pads 0), so that a
 * kernel's loops over slots 0 and 1 serve 1-D and 2-D layers alike, and a
 * kernel that also runs 3-D ones adds the outer slot 2 (the depth). Slot
 * 2 is always trivial in the geometry of the functions without _nd, which
 * refuse 3-D layers: a backend opts into them by calling the _nd ones. */
typedef struct plx_window_geom {
    uint32_t spatial_rank; /* 1, 2 or (the _nd functions) 3 */
    int64_t n, c, m;       /* batch, input channels, output channels */
    int64_t group;         /* conv, conv_transpose: the descriptor's; pool: c */
    int64_t in[3], out[3]; /* input and output size */
    int64_t k[3], s[3], d[3]; /* kernel, stride, dilation */
    /* Padding before and after, as plx_window_dim gives it (conv, pool).
     * conv_transpose: pb as plx_conv_transpose_dim gives it (output o
     * receives input i through tap t when i * s + t * d - pb == o), pe 0. */
    int64_t pb[3], pe[3];
} plx_window_geom;

/* Internal to this header. */
#if defined(__GNUC__)
#define PLX_WINDOW_PRINTF_ __attribute__((format(printf, 3, 4)))
#else
#define PLX_WINDOW_PRINTF_
#endif

static inline PLX_WINDOW_PRINTF_ const char *plx_window_refuse_(char *buf, size_t size,
                                                               const char *fmt, ...) {
    if (!buf || size == 0) {
        return "the layer's window geometry is not valid";
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return buf;
}

/* The limit clamped to 1..2^30, and its text: "2^24", or the number. */
static inline int64_t plx_window_limit_(int64_t limit, char text[24]) {
    if (limit > ((int64_t)1 << 30)) {
        limit = (int64_t)1 << 30;
    }
    if (limit < 1) {
        limit = 1;
    }
    int p = 0;
    while (((int64_t)1 << p) < limit) {
        p++;
    }
    if (((int64_t)1 << p) == limit && p > 0) {
        snprintf(text, 24, "2^%d", p);
    } else {
        snprintf(text, 24, "%lld", (long long)limit);
    }
    return limit;
}

/* The geometry slot of spatial dim `dim`. */
static inline int plx_window_slot_(const plx_window_geom *g, int dim) {
    switch (g->spatial_rank) {
    case 3:
        return dim == 0 ? 2 : dim - 1;
    case 2:
        return dim;
    default:
        return 1;
    }
}

/* Element count of a shape, -1 when it has none (a bad rank or dim). */
static inline int64_t plx_window_numel_(const plx_tensor_info *t) {
    size_t n = 0;
    if (!plx_tensor_info_element_count(t, &n) || (uint64_t)n > (uint64_t)INT64_MAX) {
        return -1;
    }
    return (int64_t)n;
}

/* The slots and descriptor a windowed layer reads; X's rank (and W's, the
 * second input, when min_in is 2) and X's batch, channels and input sizes
 * into g; *limit clamped and worded into lim. */
static inline const char *plx_window_input_(const plx_layer_view *l, const char *op,
                                            uint32_t min_in, size_t desc_size, uint32_t max_rank,
                                            int64_t *limit, char lim[24], plx_window_geom *g,
                                            char *buf, size_t size) {
    *limit = plx_window_limit_(*limit, lim);
    uint32_t ss = 0;
    if (l && l->desc) {
        memcpy(&ss, l->desc, sizeof ss);
    }
    if (!l || l->input_count < min_in || !l->inputs || l->output_count < 1 || !l->outputs ||
        ss < desc_size) {
        return plx_window_refuse_(buf, size,
                                  "%s: the layer lacks an input, its output or its descriptor",
                                  op);
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank < 3 || x->rank > max_rank) {
        return plx_window_refuse_(buf, size,
                                  max_rank == 5
                                      ? "%s takes 1-D, 2-D or 3-D inputs (rank 3 to 5), not rank %u"
                                      : "%s takes 1-D or 2-D inputs (rank 3 or 4), not rank %u",
                                  op, x->rank);
    }
    if (min_in > 1 && l->inputs[1].rank != x->rank) {
        return plx_window_refuse_(buf, size, "%s: W has rank %u, X has rank %u", op,
                                  l->inputs[1].rank, x->rank);
    }
    memset(g, 0, sizeof *g);
    g->spatial_rank = x->rank - 2;
    g->n = x->dims[0];
    g->c = x->dims[1];
    for (int slot = 0; slot < 3; slot++) {
        g->in[slot] = g->out[slot] = g->k[slot] = g->s[slot] = g->d[slot] = 1;
    }
    for (uint32_t dim = 0; dim < g->spatial_rank; dim++) {
        g->in[plx_window_slot_(g, (int)dim)] = x->dims[2 + dim];
    }
    return NULL;
}

/* Spatial dim `dim` of conv or pool: sizes within the limit, then
 * plx_window_dim into the dim's slot of g. */
static inline const char *plx_window_conv_dim_(const char *op, int dim, int64_t limit,
                                               const char *lim, plx_auto_pad ap, int64_t k,
                                               int64_t s, int64_t d, int64_t pads_begin,
                                               int64_t pads_end, bool ceil_mode,
                                               plx_window_geom *g, char *buf, size_t size) {
    int slot = plx_window_slot_(g, dim);
    int64_t in = g->in[slot];
    if (k < 1 || k > limit || s < 1 || s > limit || d < 1 || d > limit) {
        return plx_window_refuse_(buf, size,
                                  "%s: spatial dim %d has kernel %lld, stride %lld, dilation "
                                  "%lld (each must be 1 to %s)",
                                  op, dim, (long long)k, (long long)s, (long long)d, lim);
    }
    int64_t dk = (k - 1) * d + 1;
    if (in < 0 || in > limit || dk > limit) {
        return plx_window_refuse_(buf, size,
                                  "%s: spatial dim %d has input %lld and a dilated kernel of "
                                  "%lld (each at most %s)",
                                  op, dim, (long long)in, (long long)dk, lim);
    }
    if (ap == PLX_AUTO_PAD_NOTSET &&
        (pads_begin < 0 || pads_begin > limit || pads_end < 0 || pads_end > limit)) {
        return plx_window_refuse_(buf, size, "%s: spatial dim %d has pads %lld/%lld (0 to %s)",
                                  op, dim, (long long)pads_begin, (long long)pads_end, lim);
    }
    switch (plx_window_dim(ap, in, k, s, d, pads_begin, pads_end, ceil_mode, &g->pb[slot],
                           &g->pe[slot], &g->out[slot])) {
    case PLX_WINDOW_OK:
        g->k[slot] = k;
        g->s[slot] = s;
        g->d[slot] = d;
        return NULL;
    case PLX_WINDOW_NO_OUTPUT:
        return plx_window_refuse_(buf, size,
                                  "%s: spatial dim %d: the window (%lld with dilation) is larger "
                                  "than the padded input (%lld)",
                                  op, dim, (long long)dk,
                                  (long long)(ap == PLX_AUTO_PAD_NOTSET ? in + pads_begin + pads_end
                                                                        : in));
    case PLX_WINDOW_BAD_AUTO_PAD:
    default:
        return plx_window_refuse_(buf, size, "%s: auto_pad %d is not implemented", op, (int)ap);
    }
}

/* The output info against [n, m, out...]. */
static inline const char *plx_window_output_(const plx_layer_view *l, const char *op,
                                             const plx_window_geom *g, char *buf, size_t size) {
    uint32_t rank = g->spatial_rank + 2;
    int64_t dims[5] = {g->n, g->m};
    for (uint32_t dim = 0; dim < g->spatial_rank; dim++) {
        dims[2 + dim] = g->out[plx_window_slot_(g, (int)dim)];
    }
    const plx_tensor_info *y = &l->outputs[0];
    bool same = y->rank == rank;
    for (uint32_t i = 0; same && i < rank; i++) {
        same = y->dims[i] == dims[i];
    }
    if (same) {
        return NULL;
    }
    char want[100] = "";
    size_t at = 0;
    for (uint32_t i = 0; i < rank && at < sizeof want; i++) {
        int n = snprintf(want + at, sizeof want - at, "%s%lld", i ? "," : "", (long long)dims[i]);
        at += n > 0 ? (size_t)n : 0;
    }
    return plx_window_refuse_(buf, size,
                              "%s: the output info disagrees with the inputs (expected [%s])", op,
                              want);
}

/* The geometry of a conv layer (PLX_OP_CONV: X [N, C, (D,) (H,) W], W [M,
 * C / group, (kD,) (kH,) kW], optional B [M], Y [N, M, (oD,) (oH,) oW]),
 * checked by plx_window_geom_conv (below) and plx_window_geom_conv_nd: X of
 * rank 3 or 4 (plx_window_geom_conv), or 3 to 5 (the _nd one, for a
 * backend that runs 3-D layers), and W of X's rank; group within
 * 1..limit, dividing C and M, with W's second dim C / group; B, when
 * given (a third input), of M elements;
 * per spatial dim the kernel (W's), stride and dilation within 1..limit,
 * the input and the dilated kernel (k - 1) * d + 1 at most limit, the pads
 * (auto_pad NOTSET) within 0..limit, a known auto_pad and a window that
 * fits the padded input; and Y's shape. Fills g on success.
 *
 * The caller has checked what is its own: the slot counts (2 or 3 inputs,
 * 1 output; this function refuses fewer, and reads no more), that every
 * info has a valid shape (plx_tensor_info_byte_size succeeds), the dtypes,
 * and that l->desc is a plx_conv_desc (its struct_size is checked here).
 * `limit` is the largest size the backend's kernels index with (1 to
 * 2^30; larger values are taken as 2^30, which keeps the arithmetic here
 * and in int64_t loops over the geometry from overflowing).
 *
 * Returns NULL, or the reason for refusing written into buf (size bytes,
 * truncated to fit) and returned: "conv: spatial dim 0 has kernel 0, stride
 * 1, dilation 1 (each must be 1 to 2^30)"; without the backend's name,
 * which the caller adds in its own style. With no buf (NULL or size 0) it
 * returns a fixed text. Pure: reads l, writes g and buf only
 * (thread-safe). */
static inline const char *plx_window_conv_geom_(const plx_layer_view *l, uint32_t max_rank,
                                                int64_t limit, plx_window_geom *g,
                                                char *buf, size_t size) {
    static const char op[] = "conv";
    char lim[24];
    const char *why =
        plx_window_input_(l, op, 2, sizeof(plx_conv_desc), max_rank, &limit, lim, g, buf,
                          size);
    if (why) {
        return why;
    }
    const plx_conv_desc *desc = (const plx_conv_desc *)l->desc;
    const plx_tensor_info *w = &l->inputs[1];
    g->group = desc->group;
    g->m = w->dims[0];
    if (g->group < 1 || g->group > limit || g->c % g->group || g->m % g->group ||
        w->dims[1] != g->c / g->group) {
        return plx_window_refuse_(buf, size,
                                  "%s: group %lld does not fit X's %lld channels and W "
                                  "[%lld,%lld,...]",
                                  op, (long long)g->group, (long long)g->c,
                                  (long long)w->dims[0], (long long)w->dims[1]);
    }
    if (l->input_count > 2 && plx_window_numel_(&l->inputs[2]) != g->m) {
        return plx_window_refuse_(buf, size, "%s: B has %lld elements, W has %lld output channels",
                                  op, (long long)plx_window_numel_(&l->inputs[2]),
                                  (long long)g->m);
    }
    for (int dim = 0; dim < (int)g->spatial_rank; dim++) {
        if ((why = plx_window_conv_dim_(op, dim, limit, lim, desc->auto_pad, w->dims[2 + dim],
                                        desc->strides[dim], desc->dilations[dim],
                                        desc->pads_begin[dim], desc->pads_end[dim], false, g,
                                        buf, size))) {
            return why;
        }
    }
    return plx_window_output_(l, op, g, buf, size);
}

static inline const char *plx_window_geom_conv(const plx_layer_view *l, int64_t limit,
                                               plx_window_geom *g, char *buf, size_t size) {
    return plx_window_conv_geom_(l, 4, limit, g, buf, size);
}

static inline const char *plx_window_geom_conv_nd(const plx_layer_view *l, int64_t limit,
                                                  plx_window_geom *g, char *buf, size_t size) {
    return plx_window_conv_geom_(l, 5, limit, g, buf, size);
}

/* The geometry of a pool layer (PLX_OP_POOL: X [N, C, (D,) (H,) W], Y [N,
 * C, (oD,) (oH,) oW]; m and group are C), by plx_window_geom_pool (rank 3
 * or 4) and plx_window_geom_pool_nd (3 to 5), checked as plx_window_geom_conv checks a
 * conv's, the kernel, strides, dilations, pads, auto_pad and ceil_mode
 * from the plx_pool_desc. The pool kind (max, average) and the dtypes are
 * the caller's to check. Same contract, limit, return value, buffer use
 * and purity as plx_window_geom_conv; messages start "pool". */
static inline const char *plx_window_pool_geom_(const plx_layer_view *l, uint32_t max_rank,
                                                int64_t limit, plx_window_geom *g,
                                                char *buf, size_t size) {
    static const char op[] = "pool";
    char lim[24];
    const char *why =
        plx_window_input_(l, op, 1, sizeof(plx_pool_desc), max_rank, &limit, lim, g, buf,
                          size);
    if (why) {
        return why;
    }
    const plx_pool_desc *desc = (const plx_pool_desc *)l->desc;
    g->m = g->c;
    g->group = g->c;
    for (int dim = 0; dim < (int)g->spatial_rank; dim++) {
        if ((why = plx_window_conv_dim_(op, dim, limit, lim, desc->auto_pad, desc->kernel[dim],
                                        desc->strides[dim], desc->dilations[dim],
                                        desc->pads_begin[dim], desc->pads_end[dim],
                                        desc->ceil_mode, g, buf, size))) {
            return why;
        }
    }
    return plx_window_output_(l, op, g, buf, size);
}

static inline const char *plx_window_geom_pool(const plx_layer_view *l, int64_t limit,
                                               plx_window_geom *g, char *buf, size_t size) {
    return plx_window_pool_geom_(l, 4, limit, g, buf, size);
}

static inline const char *plx_window_geom_pool_nd(const plx_layer_view *l, int64_t limit,
                                                  plx_window_geom *g, char *buf, size_t size) {
    return plx_window_pool_geom_(l, 5, limit, g, buf, size);
}

/* The geometry of a conv_transpose layer (PLX_OP_CONV_TRANSPOSE: X [N, C,
 * (D,) (H,) W], W [C, M / group, (kD,) (kH,) kW], optional B [M], Y [N, M,
 * (oD,) (oH,) oW]), by plx_window_geom_conv_transpose (rank 3 or 4) and
 * plx_window_geom_conv_transpose_nd (3 to 5), checked: X of such a rank
 * and W of X's rank; group within
 * 1..limit dividing C, W's first dim C and its second at most limit; B,
 * when given, of M elements; per spatial dim the kernel, stride and
 * dilation within 1..limit, output_padding and output_shape within
 * 0..limit, the input, the dilated kernel and stride * input at most
 * limit, the pads (auto_pad NOTSET) within 0..limit, a known auto_pad, and
 * an output_shape or pads that fit the full output
 * (plx_conv_transpose_dim); and Y's shape. Same contract (l->desc a
 * plx_conv_transpose_desc), limit, return value, buffer use and purity as
 * plx_window_geom_conv; messages start "conv_transpose". */
static inline const char *plx_window_conv_transpose_geom_(const plx_layer_view *l,
                                                          uint32_t max_rank, int64_t limit,
                                                          plx_window_geom *g, char *buf,
                                                          size_t size) {
    static const char op[] = "conv_transpose";
    char lim[24];
    const char *why =
        plx_window_input_(l, op, 2, sizeof(plx_conv_transpose_desc), max_rank, &limit, lim, g, buf,
                          size);
    if (why) {
        return why;
    }
    const plx_conv_transpose_desc *desc = (const plx_conv_transpose_desc *)l->desc;
    const plx_tensor_info *w = &l->inputs[1];
    g->group = desc->group;
    if (g->group < 1 || g->group > limit || g->c % g->group || w->dims[0] != g->c ||
        w->dims[1] < 0 || w->dims[1] > limit) {
        return plx_window_refuse_(buf, size,
                                  "%s: group %lld does not fit X's %lld channels and W "
                                  "[%lld,%lld,...]",
                                  op, (long long)g->group, (long long)g->c,
                                  (long long)w->dims[0], (long long)w->dims[1]);
    }
    g->m = w->dims[1] * g->group;
    if (l->input_count > 2 && plx_window_numel_(&l->inputs[2]) != g->m) {
        return plx_window_refuse_(buf, size,
                                  "%s: B has %lld elements, the output has %lld channels", op,
                                  (long long)plx_window_numel_(&l->inputs[2]), (long long)g->m);
    }
    for (int dim = 0; dim < (int)g->spatial_rank; dim++) {
        int slot = plx_window_slot_(g, dim);
        int64_t in = g->in[slot], k = w->dims[2 + dim], s = desc->strides[dim],
                d = desc->dilations[dim], op_pad = desc->output_padding[dim],
                os = desc->output_shape[dim];
        if (k < 1 || k > limit || s < 1 || s > limit || d < 1 || d > limit || op_pad < 0 ||
            op_pad > limit || os < 0 || os > limit) {
            return plx_window_refuse_(buf, size,
                                      "%s: spatial dim %d has kernel %lld, stride %lld, dilation "
                                      "%lld, output_padding %lld, output_shape %lld out of range "
                                      "(1 to %s for the first three, 0 to %s for the others)",
                                      op, dim, (long long)k, (long long)s, (long long)d,
                                      (long long)op_pad, (long long)os, lim, lim);
        }
        int64_t dk = (k - 1) * d + 1;
        if (in < 0 || in > limit || dk > limit || s * in > limit) {
            return plx_window_refuse_(buf, size,
                                      "%s: spatial dim %d has input %lld, a dilated kernel of "
                                      "%lld and stride * input %lld (each at most %s)",
                                      op, dim, (long long)in, (long long)dk, (long long)(s * in),
                                      lim);
        }
        int64_t pads_begin = desc->pads_begin[dim], pads_end = desc->pads_end[dim];
        if (desc->auto_pad == PLX_AUTO_PAD_NOTSET &&
            (pads_begin < 0 || pads_begin > limit || pads_end < 0 || pads_end > limit)) {
            return plx_window_refuse_(buf, size,
                                      "%s: spatial dim %d has pads %lld/%lld (0 to %s)", op, dim,
                                      (long long)pads_begin, (long long)pads_end, lim);
        }
        switch (plx_conv_transpose_dim(desc->auto_pad, in, k, s, d, op_pad, os, pads_begin,
                                       pads_end, &g->pb[slot], &g->out[slot])) {
        case PLX_WINDOW_OK:
            break;
        case PLX_WINDOW_NO_OUTPUT:
            return plx_window_refuse_(buf, size,
                                      "%s: spatial dim %d: output_shape %lld or pads %lld/%lld "
                                      "do not fit the full output %lld",
                                      op, dim, (long long)os, (long long)pads_begin,
                                      (long long)pads_end, (long long)(s * (in - 1) + op_pad + dk));
        case PLX_WINDOW_BAD_AUTO_PAD:
        default:
            return plx_window_refuse_(buf, size, "%s: auto_pad %d is not implemented", op,
                                      (int)desc->auto_pad);
        }
        g->k[slot] = k;
        g->s[slot] = s;
        g->d[slot] = d;
        g->pe[slot] = 0;
    }
    return plx_window_output_(l, op, g, buf, size);
}

static inline const char *plx_window_geom_conv_transpose(const plx_layer_view *l, int64_t limit,
                                                         plx_window_geom *g, char *buf,
                                                         size_t size) {
    return plx_window_conv_transpose_geom_(l, 4, limit, g, buf, size);
}

static inline const char *plx_window_geom_conv_transpose_nd(const plx_layer_view *l,
                                                            int64_t limit, plx_window_geom *g,
                                                            char *buf, size_t size) {
    return plx_window_conv_transpose_geom_(l, 5, limit, g, buf, size);
}

#undef PLX_WINDOW_PRINTF_

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_WINDOW_H */
