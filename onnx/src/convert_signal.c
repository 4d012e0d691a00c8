/* The ONNX converters of signal processing: DFT and STFT, one dft or stft
 * layer each (their lengths, steps and axes must be known at import), and
 * the signal-processing constants: HannWindow,
 * HammingWindow, BlackmanWindow and MelWeightMatrix (opset 17). Their
 * outputs depend only on inputs that must be known at import (a window's
 * size; the mel matrix's bins, DFT length, sample rate and edges), so each
 * becomes a constant: computed in double as ONNX defines it, stored as
 * float32 and cast to `output_datatype` (folded at import). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* The most values a window or mel matrix may have (a constant's limit). */
#define SIGNAL_MAX_VALUES ((int64_t)1 << 24)

/* A float32 constant of `dims` from `v` (taken), cast to the node's
 * output_datatype (default float32) and bound to output 0. */
static plx_status bind_values(onnxi_ctx *c, onnxi_node *n, const int64_t *dims, uint32_t rank,
                              float *v) {
    int32_t onnx_type = onnxi_attr_i32(n, "output_datatype", 1);
    plx_dtype to = onnxi_dtype(onnx_type);
    if (to == PLX_DTYPE_INVALID || to == PLX_DTYPE_BOOL) {
        free(v);
        char buf[32];
        return ONNXI_UNSUPPORTED("output_datatype %s",
                                 onnxi_dtype_name(onnx_type, buf, sizeof buf));
    }
    plx_tensor_info info;
    memset(&info, 0, sizeof info);
    info.dtype = PLX_DTYPE_FLOAT32;
    info.rank = rank;
    for (uint32_t i = 0; i < rank; i++) {
        info.dims[i] = dims[i];
    }
    onnxi_value *f;
    plx_status st = onnxi_const_take(c, &info, v, &f);
    if (st || to == PLX_DTYPE_FLOAT32) {
        return st ? st : onnxi_bind_out(c, n, 0, f);
    }
    plx_cast_desc d = PLX_CAST_DESC_INIT(to);
    return onnxi_emit1(c, n, PLX_OP_CAST, &d, &f, 1);
}

/* One scalar input known at import, as an integer or a float. */
static plx_status scalar_input(onnxi_node *n, size_t i, const char *role, double *out) {
    plx_status st = onnxi_need_const(n, i, role);
    if (st) {
        return st;
    }
    if (onnxi_elem_count(&n->in[i]->info) != 1) {
        return ONNXI_UNSUPPORTED("input %s must hold one value", role);
    }
    *out = onnxi_const_f64(n->in[i], 0);
    return NULL;
}

/* HannWindow, HammingWindow, BlackmanWindow: size values w[k], k < size,
 * over N = size (periodic, the default) or size - 1 (symmetric):
 *   Hann      sin^2(pi k / N)
 *   Hamming   a - (1 - a) cos(2 pi k / N), a = 25/46
 *   Blackman  0.42 - 0.5 cos(2 pi k / N) + 0.08 cos(4 pi k / N) */
plx_status onnxi_conv_window(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    double size_f;
    if (st || (st = scalar_input(n, 0, "size", &size_f))) {
        return st;
    }
    int64_t size = (int64_t)size_f;
    if (size < 0 || size > SIGNAL_MAX_VALUES) {
        return onnxi_invalid(c, n, "size %lld must be 0 to %lld", (long long)size,
                             (long long)SIGNAL_MAX_VALUES);
    }
    const char *op = n->proto->op_type;
    int kind = strcmp(op, "HannWindow") == 0 ? 0 : strcmp(op, "HammingWindow") == 0 ? 1 : 2;
    double period = onnxi_attr_i(n, "periodic", 1) ? (double)size : (double)size - 1;
    float *v = malloc((size_t)(size ? size : 1) * sizeof *v);
    if (!v) {
        return plx_status_create(PLX_OUT_OF_MEMORY, "out of memory");
    }
    for (int64_t k = 0; k < size; k++) {
        double x = (double)k * M_PI / period, w;
        if (kind == 0) {
            w = sin(x) * sin(x);
        } else if (kind == 1) {
            const double a = 25.0 / 46.0;
            w = a - cos(2.0 * x) * (1.0 - a);
        } else {
            w = 0.42 - 0.5 * cos(2.0 * x) + 0.08 * cos(4.0 * x);
        }
        v[k] = (float)w;
    }
    return bind_values(c, n, (const int64_t[]){size}, 1, v);
}

/* MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] triangular filters
 * between mel-spaced points from lower_edge_hertz to upper_edge_hertz
 * (mel = 2595 log10(1 + hz / 700)), each point mapped to the spectrogram
 * bin floor((dft_length + 1) hz / sample_rate), as ONNX defines it. */
plx_status onnxi_conv_mel_weight_matrix(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 5);
    double bins_f, dft_f, rate, lo_hz, hi_hz;
    if (st || (st = scalar_input(n, 0, "num_mel_bins", &bins_f)) ||
        (st = scalar_input(n, 1, "dft_length", &dft_f)) ||
        (st = scalar_input(n, 2, "sample_rate", &rate)) ||
        (st = scalar_input(n, 3, "lower_edge_hertz", &lo_hz)) ||
        (st = scalar_input(n, 4, "upper_edge_hertz", &hi_hz))) {
        return st;
    }
    int64_t bins = (int64_t)bins_f, dft = (int64_t)dft_f;
    if (bins < 1 || dft < 1 || !(rate > 0) || bins > 65536 || dft > SIGNAL_MAX_VALUES ||
        !(lo_hz >= 0) || !(hi_hz > lo_hz)) {
        return onnxi_invalid(c, n, "num_mel_bins %lld, dft_length %lld, sample_rate %g and "
                             "edges %g to %g Hz do not make a mel matrix", (long long)bins,
                             (long long)dft, rate, lo_hz, hi_hz);
    }
    int64_t rows = dft / 2 + 1;
    if (rows * bins > SIGNAL_MAX_VALUES) {
        return onnxi_invalid(c, n, "the mel matrix of %lld x %lld values is too large",
                             (long long)rows, (long long)bins);
    }
    int64_t *point = malloc((size_t)(bins + 2) * sizeof *point);
    float *v = calloc((size_t)(rows * bins), sizeof *v);
    if (!point || !v) {
        free(point);
        free(v);
        return plx_status_create(PLX_OUT_OF_MEMORY, "out of memory");
    }
    double lo_mel = 2595.0 * log10(1.0 + lo_hz / 700.0);
    double hi_mel = 2595.0 * log10(1.0 + hi_hz / 700.0);
    double step = (hi_mel - lo_mel) / (double)(bins + 2);
    bool ok = true;
    for (int64_t i = 0; i < bins + 2; i++) {
        double hz = 700.0 * (pow(10.0, (lo_mel + (double)i * step) / 2595.0) - 1.0);
        point[i] = (int64_t)floor((double)(dft + 1) * hz / rate);
        ok = ok && point[i] >= 0 && point[i] < rows;
    }
    for (int64_t i = 0; ok && i < bins; i++) {
        int64_t left = point[i], center = point[i + 1], right = point[i + 2];
        if (center == left) {
            v[center * bins + i] = 1.0f;
        } else {
            for (int64_t j = left; j <= center; j++) {
                v[j * bins + i] = (float)((double)(j - left) / (double)(center - left));
            }
        }
        for (int64_t j = center; j < right; j++) {
            v[j * bins + i] = (float)((double)(right - j) / (double)(right - center));
        }
    }
    free(point);
    if (!ok) {
        free(v);
        return onnxi_invalid(c, n, "upper_edge_hertz %g maps past the %lld spectrogram bins",
                             hi_hz, (long long)rows);
    }
    return bind_values(c, n, (const int64_t[]){rows, bins}, 2, v);
}

/* A scalar input known at import that must be a whole number in
 * [lo, hi]. */
static plx_status int_input(onnxi_ctx *c, onnxi_node *n, size_t i, const char *role, int64_t lo,
                            int64_t hi, int64_t *out) {
    double v;
    plx_status st = scalar_input(n, i, role, &v);
    if (st) {
        return st;
    }
    if (!(v >= (double)lo && v <= (double)hi) || v != floor(v)) {
        return onnxi_invalid(c, n, "%s %g must be a whole number from %lld to %lld", role, v,
                             (long long)lo, (long long)hi);
    }
    *out = (int64_t)v;
    return NULL;
}

/* DFT (opsets 17, 20): dft_length is input 1 at both; the axis is an
 * attribute (default 1) before opset 20 and input 2 (default -2) from it.
 * An inverse onesided transform is refused: ONNX leaves its input's
 * missing half undefined. */
plx_status onnxi_conv_dft(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    plx_dft_desc d = PLX_DFT_DESC_INIT;
    if (onnxi_has_in(n, 1) &&
        (st = int_input(c, n, 1, "dft_length", 1, SIGNAL_MAX_VALUES, &d.length))) {
        return st;
    }
    int64_t axis = c->opset < 20 ? onnxi_attr_i(n, "axis", 1) : -2;
    if (c->opset >= 20 && onnxi_has_in(n, 2) &&
        (st = int_input(c, n, 2, "axis", -PLX_MAX_RANK, PLX_MAX_RANK, &axis))) {
        return st;
    }
    if (axis < -PLX_MAX_RANK || axis > PLX_MAX_RANK) {
        return onnxi_invalid(c, n, "axis %lld is out of range", (long long)axis);
    }
    d.axis = (int32_t)axis;
    d.inverse = onnxi_attr_i(n, "inverse", 0) != 0;
    d.onesided = onnxi_attr_i(n, "onesided", 0) != 0;
    if (d.inverse && d.onesided) {
        return ONNXI_UNSUPPORTED("an inverse onesided DFT (its input's other half is not given)");
    }
    return onnxi_emit1(c, n, PLX_OP_DFT, &d, n->in, 1);
}

/* STFT (opset 17): signal, frame_step, [window], [frame_length]. The
 * frame length is frame_length, else the window's size, else the
 * signal's length; the window stays a tensor input of the layer. */
plx_status onnxi_conv_stft(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    const plx_tensor_info *x = &n->in[0]->info;
    if (x->rank != 3) {
        return onnxi_invalid(c, n, "signal has rank %u; STFT takes [batch, length, 1 or 2]",
                             x->rank);
    }
    int64_t step, length = 0;
    if ((st = int_input(c, n, 1, "frame_step", 1, INT64_C(1) << 40, &step))) {
        return st;
    }
    bool window = onnxi_has_in(n, 2);
    if (window && n->in[2]->info.rank != 1) {
        return onnxi_invalid(c, n, "window has rank %u; it must be 1-D [frame_length]",
                             n->in[2]->info.rank);
    }
    if (onnxi_has_in(n, 3)) {
        if ((st = int_input(c, n, 3, "frame_length", 1, SIGNAL_MAX_VALUES, &length))) {
            return st;
        }
    } else if (window) {
        length = n->in[2]->info.dims[0];
    } else {
        length = x->dims[1];
    }
    plx_stft_desc d = PLX_STFT_DESC_INIT(step, length);
    d.onesided = onnxi_attr_i(n, "onesided", 1) != 0;
    onnxi_value *ins[2] = {n->in[0], window ? n->in[2] : NULL};
    return onnxi_emit1(c, n, PLX_OP_STFT, &d, ins, window ? 2 : 1);
}
