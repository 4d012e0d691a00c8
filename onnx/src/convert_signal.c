/* The ONNX converters of the signal-processing constants: HannWindow,
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
    int64_t onnx_type = onnxi_attr_i(n, "output_datatype", 1);
    plx_dtype to = onnxi_dtype((int32_t)onnx_type);
    if (to == PLX_DTYPE_INVALID || to == PLX_DTYPE_BOOL) {
        free(v);
        char buf[32];
        return ONNXI_UNSUPPORTED("output_datatype %s",
                                 onnxi_dtype_name((int32_t)onnx_type, buf, sizeof buf));
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
