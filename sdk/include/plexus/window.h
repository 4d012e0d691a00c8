/* Plexus sliding-window arithmetic: ONNX's rules for the padding and the
 * output size of convolution, pooling and transposed convolution along one
 * spatial dimension, for backends to compute their kernels' geometry the
 * way the host's shape inference does.
 *
 * Header-only helpers (static inline): nothing crosses the ABI, a backend
 * compiles them in, and they keep no state (thread-safe). They do not bound
 * their inputs: the caller checks each size first (at least 1 for kernel,
 * stride and dilation, at least 0 for the input and the pads, and each at
 * most 2^30, which keeps every sum and product below 2^62), because what
 * counts as too large is the backend's own limit (its index type, its
 * kernels), and the message that says so is the backend's too. */
#ifndef PLEXUS_WINDOW_H
#define PLEXUS_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

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

#ifdef __cplusplus
}
#endif

#endif /* PLEXUS_WINDOW_H */
