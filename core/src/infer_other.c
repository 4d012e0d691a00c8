/* Shape inference of the graph boundary (input, output, constant), the
 * optimiser's copies, quantization, recurrent layers, signal
 * processing (dft, stft) and det. */
#include <math.h>

#include "infer_internal.h"
#include "shape_infer.h"

/* ------------------------------------------------------------------------ */
/* Graph boundary                                                           */

static plx_status plxi_infer_input(const layer_ctx *c) {
    /* The caller sets the info; it only has to be valid. */
    return plxi_check_info(c, &c->out[0], "output 0");
}

static plx_status plxi_infer_constant(const layer_ctx *c) {
    const plx_constant_desc *d = c->desc;
    if (!d->data) {
        return plxi_fail(c, "descriptor data is NULL");
    }
    return plxi_check_info(c, &c->out[0], "output 0");
}

/* ------------------------------------------------------------------------ */
/* Quantization                                                             */

/* The quantized dtypes of quantize and dequantize (ONNX's 4-, 8- and
 * 16-bit integers and the float8 types). */
#define DT_QUANT (DT_I4 | DT(INT8) | DT(UINT8) | DT(INT16) | DT(UINT16) | DT_F8)

static plx_status plxi_infer_quantize(const layer_ctx *c) {
    const plx_quantize_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0], *scale = &c->in[1];
    bool quantize = c->op == PLX_OP_QUANTIZE;
    plx_status s;
    if (quantize) {
        if ((s = plxi_check_dtype(c, 0, DT_QFLOAT, NULL)) || (s = plxi_check_same_dtype(c, 1, 0))) {
            return s;
        }
    } else if ((s = plxi_check_dtype(c, 0, DT_QUANT | DT(INT32), NULL)) ||
               (s = plxi_check_dtype(c, 1, DT_QFLOAT, NULL))) {
        return s;
    }
    /* Blocked (block_size > 0): the scale has X's shape but ceil(dim /
     * block_size) along `axis`. Per tensor: a scalar scale (or one
     * element, as ONNX Runtime accepts); per axis: 1-D along `axis`, which
     * is only checked then, as in ONNX. */
    if (d->block_size < 0) {
        return plxi_fail(c, "block_size %" PRId64 " must be >= 0", d->block_size);
    }
    if (d->block_size > 0) {
        uint32_t axis = 0;
        if ((s = plxi_check_axis(c, "axis", d->axis, 0, false, &axis))) {
            return s;
        }
        int64_t blocks = (x->dims[axis] + d->block_size - 1) / d->block_size;
        bool fits = scale->rank == x->rank;
        for (uint32_t k = 0; fits && k < x->rank; k++) {
            fits = scale->dims[k] == (k == axis ? blocks : x->dims[k]);
        }
        if (!fits) {
            return plxi_fail(c,
                             "scale %s must have X's shape %s with ceil(%" PRId64 " / %" PRId64
                             ") = %" PRId64 " along axis %" PRIu32 " (blocked quantization)",
                             SHP(scale), SHP(x), x->dims[axis], d->block_size, blocks, axis);
        }
    } else if (scale->rank > 1) {
        return plxi_fail(c, "scale %s must be a scalar or 1-D", SHP(scale));
    }
    if (scale->rank == 1 && scale->dims[0] != 1) {
        uint32_t axis = 0;
        if ((s = plxi_check_axis(c, "axis", d->axis, 0, false, &axis))) {
            return s;
        }
        if (scale->dims[0] != x->dims[axis]) {
            return plxi_fail(c,
                             "scale %s must have one entry per index of axis %" PRIu32 " of X %s",
                             SHP(scale), axis, SHP(x));
        }
    }
    plx_dtype out;
    if (c->n_in > 2) {
        const plx_tensor_info *zp = &c->in[2];
        if (quantize && (s = plxi_check_dtype(c, 2, DT_QUANT, NULL))) {
            return s;
        }
        if (!quantize && (s = plxi_check_same_dtype(c, 2, 0))) {
            return s;
        }
        /* One value each may be a scalar and a [1] (ONNX Runtime's
         * quantizer writes such pairs). */
        size_t zn = 0, sn = 0;
        plx_tensor_info_element_count(zp, &zn);
        plx_tensor_info_element_count(scale, &sn);
        bool same = zp->rank == scale->rank;
        for (uint32_t k = 0; same && k < zp->rank; k++) {
            same = zp->dims[k] == scale->dims[k];
        }
        same = same || (zn == 1 && sn == 1);
        if (!same) {
            return plxi_fail(c, "zero_point %s must have the shape of scale %s", SHP(zp),
                             SHP(scale));
        }
    }
    if (quantize) {
        if (!plxi_dtype_in(d->output_dtype, DT_QUANT)) {
            char buf[160];
            return plxi_fail(c, "output_dtype %s must be %s", plx_dtype_name(d->output_dtype),
                             plxi_dtype_list(DT_QUANT, buf, sizeof buf));
        }
        if (c->n_in > 2 && c->in[2].dtype != d->output_dtype) {
            return plxi_fail(c, "output_dtype %s differs from zero_point's dtype %s",
                             plx_dtype_name(d->output_dtype), plx_dtype_name(c->in[2].dtype));
        }
        out = d->output_dtype;
    } else {
        if (d->output_dtype != scale->dtype) {
            return plxi_fail(c, "output_dtype %s differs from scale's dtype %s",
                             plx_dtype_name(d->output_dtype), plx_dtype_name(scale->dtype));
        }
        out = scale->dtype;
    }
    plxi_same_as_input(c, out);
    return NULL;
}

/* dynamic_quantize: X float32 -> Y uint8 of X's shape, Y_scale float32
 * and Y_zero_point uint8 scalars (rank 0). */
static plx_status plxi_infer_dynamic_quantize(const layer_ctx *c) {
    plx_status s = plxi_check_dtype(c, 0, DT(FLOAT32), NULL);
    if (s) {
        return s;
    }
    plxi_info_init(&c->out[0], PLX_DTYPE_UINT8, c->in[0].rank);
    plxi_info_set_dims(&c->out[0], c->in[0].dims, c->in[0].rank);
    plxi_info_init(&c->out[1], PLX_DTYPE_FLOAT32, 0);
    plxi_info_init(&c->out[2], PLX_DTYPE_UINT8, 0);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Recurrent layers                                                         */

/* Input i must be exactly `dims` (rank r), whose meaning `what` spells. */
static plx_status check_exact_shape(const layer_ctx *c, uint32_t i, const int64_t *dims, uint32_t r,
                                    const char *what) {
    const plx_tensor_info *t = &c->in[i];
    bool same = t->rank == r;
    for (uint32_t k = 0; same && k < r; k++) {
        same = t->dims[k] == dims[k];
    }
    if (same) {
        return NULL;
    }
    plx_tensor_info want;
    plxi_info_init(&want, t->dtype, 0);
    plxi_info_set_dims(&want, dims, r);
    return plxi_fail(c, "%s %s must be %s (%s)", ROLE(c, i), SHP(t), SHP(&want), what);
}

/* activations[dir][k] of a recurrent cell: one of the functions ONNX
 * lists for RNN, LSTM and GRU, with finite parameters. */
static plx_status check_rnn_activation(const layer_ctx *c, const plx_rnn_activation *a,
                                       uint32_t dir, uint32_t k) {
    switch (a->func) {
    case PLX_ACT_RELU:
    case PLX_ACT_TANH:
    case PLX_ACT_SIGMOID:
    case PLX_ACT_AFFINE:
    case PLX_ACT_LEAKY_RELU:
    case PLX_ACT_THRESHOLDED_RELU:
    case PLX_ACT_SCALED_TANH:
    case PLX_ACT_HARD_SIGMOID:
    case PLX_ACT_ELU:
    case PLX_ACT_SOFTSIGN:
    case PLX_ACT_SOFTPLUS: break;
    default:
        return plxi_fail(c,
                         "activations[%" PRIu32 "][%" PRIu32 "].func %d is not a recurrent activation "
                         "(relu, tanh, sigmoid, affine, leaky_relu, thresholded_relu, scaled_tanh, "
                         "hard_sigmoid, elu, softsign or softplus)", dir, k, (int)a->func);
    }
    if (!isfinite(a->alpha) || !isfinite(a->beta)) {
        return plxi_fail(c,
                         "activations[%" PRIu32 "][%" PRIu32 "] has alpha %g and beta %g; both must "
                         "be finite", dir, k, (double)a->alpha, (double)a->beta);
    }
    return NULL;
}

/* lstm, gru and rnn (ONNX, layout 0): X [seq_length, batch, input_size]
 * and the weights of `gates` gates per direction; see plexus/ops.h. */
static plx_status plxi_infer_rnn(const layer_ctx *c) {
    bool lstm = c->op == PLX_OP_LSTM, gru = c->op == PLX_OP_GRU;
    const plx_lstm_desc *ld = c->desc;
    const plx_gru_desc *gd = c->desc;
    const plx_rnn_desc *rd = c->desc;
    plx_rnn_direction direction = lstm ? ld->direction : gru ? gd->direction : rd->direction;
    int64_t h = lstm ? ld->hidden_size : gru ? gd->hidden_size : rd->hidden_size;
    float clip = lstm ? ld->clip : gru ? gd->clip : rd->clip;
    int64_t gates = lstm ? 4 : gru ? 3 : 1;
    uint32_t per_dir = lstm ? 3u : gru ? 2u : 1u;
    const plx_tensor_info *x = &c->in[0];
    plx_status s;
    if ((unsigned)direction > PLX_RNN_BIDIRECTIONAL) {
        return plxi_fail(c, "direction %d is not a plx_rnn_direction", (int)direction);
    }
    if (h < 1) {
        return plxi_fail(c, "hidden_size " I64 " must be >= 1", h);
    }
    if (!(clip >= 0.0f) || !isfinite(clip)) {
        return plxi_fail(c, "clip %g must be finite and >= 0 (0: no clipping)", (double)clip);
    }
    int64_t d = direction == PLX_RNN_BIDIRECTIONAL ? 2 : 1, gh, gh2, ph;
    if (!plxi_mul_nonneg(h, 2 * gates, &gh2)) {
        return plxi_fail(c, "hidden_size " I64 " is too large", h);
    }
    gh = gh2 / 2;
    ph = lstm ? 3 * h : 0; /* lstm: <= gh */
    for (uint32_t dir = 0; dir < (uint32_t)d; dir++) {
        for (uint32_t k = 0; k < per_dir; k++) {
            const plx_rnn_activation *a = lstm  ? &ld->activations[dir][k]
                                          : gru ? &gd->activations[dir][k]
                                                : &rd->activations[dir][k];
            if ((s = check_rnn_activation(c, a, dir, k))) {
                return s;
            }
        }
    }
    if ((s = plxi_check_dtype(c, 0, DT(FLOAT32), NULL)) || (s = plxi_check_rank(c, 0, 3, 3)) ||
        (s = plxi_check_dtype(c, 4, DT(INT32), NULL))) {
        return s;
    }
    for (uint32_t i = 1; i < c->n_in; i++) {
        if (i != 4 && (s = plxi_check_same_dtype(c, i, 0))) {
            return s;
        }
    }
    int64_t seq = x->dims[0], batch = x->dims[1], in = x->dims[2];
    const int64_t w[3] = {d, gh, in}, r[3] = {d, gh, h}, b[2] = {d, gh2}, lens[1] = {batch};
    const int64_t state[3] = {d, batch, h}, p[2] = {d, ph};
    if ((s = check_exact_shape(c, 1, w, 3, lstm  ? "[num_directions, 4*hidden_size, input_size]"
                                           : gru ? "[num_directions, 3*hidden_size, input_size]"
                                                 : "[num_directions, hidden_size, input_size]")) ||
        (s = check_exact_shape(c, 2, r, 3, lstm  ? "[num_directions, 4*hidden_size, hidden_size]"
                                           : gru ? "[num_directions, 3*hidden_size, hidden_size]"
                                                 : "[num_directions, hidden_size, hidden_size]")) ||
        (s = check_exact_shape(c, 3, b, 2, lstm  ? "[num_directions, 8*hidden_size]"
                                           : gru ? "[num_directions, 6*hidden_size]"
                                                 : "[num_directions, 2*hidden_size]")) ||
        (s = check_exact_shape(c, 4, lens, 1, "[batch_size]")) ||
        (s = check_exact_shape(c, 5, state, 3, "[num_directions, batch_size, hidden_size]")) ||
        (lstm && (s = check_exact_shape(c, 6, state, 3,
                                        "[num_directions, batch_size, hidden_size]"))) ||
        (lstm && (s = check_exact_shape(c, 7, p, 2, "[num_directions, 3*hidden_size]")))) {
        return s;
    }
    /* Every output is checked before any is written. */
    const int64_t y[4] = {seq, d, batch, h};
    plx_tensor_info outs[3];
    plxi_info_init(&outs[0], x->dtype, 4);
    plxi_info_set_dims(&outs[0], y, 4);
    for (uint32_t i = 1; i < c->n_out; i++) {
        plxi_info_init(&outs[i], x->dtype, 3);
        plxi_info_set_dims(&outs[i], state, 3);
    }
    for (uint32_t i = 0; i < c->n_out; i++) {
        size_t bytes;
        if (!plx_tensor_info_byte_size(&outs[i], &bytes)) {
            return plxi_fail(c, "%s %s (%s) is too large: its byte size overflows size_t",
                             OUT_ROLE(c, i), SHP(&outs[i]), plx_dtype_name(outs[i].dtype));
        }
    }
    for (uint32_t i = 0; i < c->n_out; i++) {
        c->out[i] = outs[i];
    }
    return NULL;
}

/* Output and the optimiser's copies have nothing to infer: outputs have no
 * output slot, copies are their input's tensor in other memory. */
static plx_status plxi_infer_output(const layer_ctx *c) {
    (void)c;
    return NULL;
}

static plx_status plxi_infer_mem_copy(const layer_ctx *c) {
    *c->out = c->in[0];
    return NULL;
}

static plx_status plxi_infer_precompiled(const layer_ctx *c) {
    return plxi_fail(c, "precompiled layers come from backends, which give their outputs");
}

/* ------------------------------------------------------------------------ */
/* Signal processing: dft, stft                                             */

/* The largest transform length: the kernel's Bluestein plan takes a
 * power of two of up to 4 L, whose index arithmetic must stay in int64. */
#define PLXI_DFT_MAX_LENGTH ((int64_t)1 << 40)

/* X [.., n, .., 1 or 2] (a float type) -> Y [.., L or L/2+1, .., 2]. */
static plx_status plxi_infer_dft(const layer_ctx *c) {
    const plx_dft_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    plx_status s;
    uint32_t axis;
    if ((s = plxi_check_dtype(c, 0, DT_FLOAT, NULL)) || (s = plxi_check_rank(c, 0, 2, PLX_MAX_RANK))) {
        return s;
    }
    if (x->dims[x->rank - 1] != 1 && x->dims[x->rank - 1] != 2) {
        return plxi_fail(c, "X %s must end in a dim of 1 (real) or 2 (complex)", SHP(x));
    }
    if ((s = plxi_check_axis(c, "axis", d->axis, 0, false, &axis))) {
        return s;
    }
    if (axis == x->rank - 1) {
        return plxi_fail(c, "axis %" PRId32 " is X %s's last dim, which holds the complex parts",
                         d->axis, SHP(x));
    }
    if (d->length < 0 || d->length > PLXI_DFT_MAX_LENGTH) {
        return plxi_fail(c, "length " I64 " must be 0 (X's dim) to " I64, d->length,
                         PLXI_DFT_MAX_LENGTH);
    }
    int64_t len = d->length ? d->length : x->dims[axis];
    if (len < 1) {
        return plxi_fail(c, "the transform along axis %" PRIu32 " of X %s has no length", axis,
                         SHP(x));
    }
    if (d->inverse && d->onesided) {
        return plxi_fail(c, "onesided is not defined with inverse");
    }
    int64_t dims[PLX_MAX_RANK], n;
    for (uint32_t i = 0; i < x->rank; i++) {
        dims[i] = x->dims[i];
    }
    dims[axis] = d->onesided ? len / 2 + 1 : len;
    dims[x->rank - 1] = 2;
    if (!plxi_dims_product(dims, 0, x->rank, &n) || n > (int64_t)1 << 48) {
        return plxi_fail(c, "Y of X %s and length " I64 " has too many elements", SHP(x), len);
    }
    plxi_info_init(c->out, x->dtype, x->rank);
    plxi_info_set_dims(c->out, dims, x->rank);
    return NULL;
}

/* signal [B, len, 1 or 2], [window [L]] -> Y [B, frames, L or L/2+1, 2]. */
static plx_status plxi_infer_stft(const layer_ctx *c) {
    const plx_stft_desc *d = c->desc;
    const plx_tensor_info *x = &c->in[0];
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, DT_FLOAT, NULL)) || (s = plxi_check_rank(c, 0, 3, 3))) {
        return s;
    }
    if (x->dims[2] != 1 && x->dims[2] != 2) {
        return plxi_fail(c, "signal %s must end in a dim of 1 (real) or 2 (complex)", SHP(x));
    }
    if (d->frame_step < 1) {
        return plxi_fail(c, "frame_step " I64 " must be 1 or more", d->frame_step);
    }
    if (d->frame_length < 1 || d->frame_length > x->dims[1] ||
        d->frame_length > PLXI_DFT_MAX_LENGTH) {
        return plxi_fail(c, "frame_length " I64 " must be 1 to signal %s's length", d->frame_length,
                         SHP(x));
    }
    if (c->n_in > 1) {
        const plx_tensor_info *w = &c->in[1];
        if ((s = plxi_check_same_dtype(c, 1, 0))) {
            return s;
        }
        if (w->rank != 1 || w->dims[0] != d->frame_length) {
            return plxi_fail(c, "window %s must be [" I64 "] (frame_length)", SHP(w),
                             d->frame_length);
        }
    }
    int64_t dims[4] = {x->dims[0], 1 + (x->dims[1] - d->frame_length) / d->frame_step,
                       d->onesided ? d->frame_length / 2 + 1 : d->frame_length, 2};
    int64_t n;
    if (!plxi_dims_product(dims, 0, 4, &n) || n > (int64_t)1 << 48) {
        return plxi_fail(c, "Y of signal %s and frame_length " I64 " has too many elements",
                         SHP(x), d->frame_length);
    }
    plxi_info_init(c->out, x->dtype, 4);
    plxi_info_set_dims(c->out, dims, 4);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* det                                                                      */

/* X [.., M, M] (a float type) -> Y [..]. */
static plx_status plxi_infer_det(const layer_ctx *c) {
    const plx_tensor_info *x = &c->in[0];
    plx_status s;
    if ((s = plxi_check_dtype(c, 0, DT_FLOAT, NULL)) || (s = plxi_check_rank(c, 0, 2, PLX_MAX_RANK))) {
        return s;
    }
    if (x->dims[x->rank - 1] != x->dims[x->rank - 2]) {
        return plxi_fail(c, "X %s must end in a square matrix [.., M, M]", SHP(x));
    }
    plxi_info_init(c->out, x->dtype, x->rank - 2);
    plxi_info_set_dims(c->out, x->dims, x->rank - 2);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* The operator table's rows (infer_internal.h, PLXI_OP_ROW)                */

/* gru's and rnn's inputs, the first six of lstm's */
#define GRU_ROLES "X", "W", "R", "B", "sequence_lens", "initial_h"

PLXI_OP_ROW(INPUT, 0, 0, 1, 1, ROLES("X"), plxi_infer_input);
PLXI_OP_ROW(OUTPUT, 1, 1, 0, 0, ROLES("X"), plxi_infer_output);
PLXI_OP_ROW(CONSTANT, 0, 0, 1, 1, ROLES("X"), plxi_infer_constant);
PLXI_OP_ROW(QUANTIZE, 2, 3, 1, 1, ROLES("X", "scale", "zero_point"), plxi_infer_quantize);
PLXI_OP_ROW(DYNAMIC_QUANTIZE, 1, 1, 3, 3, ROLES("X"), plxi_infer_dynamic_quantize);
PLXI_OP_ROW(DEQUANTIZE, 2, 3, 1, 1, ROLES("X", "scale", "zero_point"), plxi_infer_quantize);
PLXI_OP_ROW(LSTM, 8, 8, 3, 3, ROLES(GRU_ROLES, "initial_c", "P"), plxi_infer_rnn);
PLXI_OP_ROW(GRU, 6, 6, 2, 2, ROLES(GRU_ROLES), plxi_infer_rnn);
PLXI_OP_ROW(RNN, 6, 6, 2, 2, ROLES(GRU_ROLES), plxi_infer_rnn);
PLXI_OP_ROW(MEM_COPY, 1, 1, 1, 1, ROLES("X"), plxi_infer_mem_copy);
PLXI_OP_ROW(MEM_IMPORT, 1, 1, 1, 1, ROLES("X"), plxi_infer_mem_copy);
/* a backend's replacement of other layers (backend.h): any count */
PLXI_OP_ROW(PRECOMPILED, 0, ANY, 1, ANY, ROLES("X"), plxi_infer_precompiled);
PLXI_OP_ROW(DFT, 1, 1, 1, 1, ROLES("X"), plxi_infer_dft);
PLXI_OP_ROW(STFT, 1, 2, 1, 1, ROLES("signal", "window"), plxi_infer_stft);
PLXI_OP_ROW(DET, 1, 1, 1, 1, ROLES("X"), plxi_infer_det);
