/* The ONNX converters that fit no other family: the recurrent layers (RNN,
 * GRU, LSTM). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* ---- recurrent ---------------------------------------------------------- */

static plx_status rnn_activation(const char *name, float alpha, float beta, bool has_alpha,
                                 bool has_beta, plx_rnn_activation *out) {
    static const struct {
        const char *name;
        plx_activation_func f;
    } acts[] = {{"Relu", PLX_ACT_RELU}, {"Tanh", PLX_ACT_TANH}, {"Sigmoid", PLX_ACT_SIGMOID},
                {"Affine", PLX_ACT_AFFINE}, {"LeakyRelu", PLX_ACT_LEAKY_RELU},
                {"ThresholdedRelu", PLX_ACT_THRESHOLDED_RELU},
                {"ScaledTanh", PLX_ACT_SCALED_TANH}, {"HardSigmoid", PLX_ACT_HARD_SIGMOID},
                {"Elu", PLX_ACT_ELU}, {"Softsign", PLX_ACT_SOFTSIGN},
                {"Softplus", PLX_ACT_SOFTPLUS}};
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        if (strcmp(acts[i].name, name) == 0) {
            out->func = acts[i].f;
            out->alpha = has_alpha ? alpha : plx_activation_default_alpha(acts[i].f);
            out->beta = has_beta ? beta : plx_activation_default_beta(acts[i].f);
            return NULL;
        }
    }
    return ONNXI_UNSUPPORTED("activation '%s'", name);
}


/* Emits a transpose of v by perm (rank entries). */
static plx_status transpose(onnxi_ctx *c, onnxi_node *n, onnxi_value *v, const uint32_t *perm,
                            uint32_t rank, onnxi_value **out) {
    plx_transpose_desc d = PLX_TRANSPOSE_DESC_INIT;
    memcpy(d.perm, perm, rank * sizeof *perm);
    d.perm_count = rank;
    return onnxi_emit(c, n, PLX_OP_TRANSPOSE, &d, &v, 1, 1, out);
}

/* LSTM, GRU and RNN. layout 1 (batch first: X [batch, seq, input], the
 * states [batch, D, H], Y [batch, seq, D, H]) is imported as transposes
 * around the layer, which runs layout 0. */
plx_status onnxi_conv_rnn(onnxi_ctx *c, onnxi_node *n) {
    bool lstm = strcmp(n->proto->op_type, "LSTM") == 0;
    bool gru = strcmp(n->proto->op_type, "GRU") == 0;
    plx_status st = onnxi_need_inputs(c, n, 3);
    if (st) {
        return st;
    }
    int64_t layout = onnxi_attr_i(n, "layout", 0);
    if (layout != 0 && layout != 1) {
        return onnxi_invalid(c, n, "layout = %lld must be 0 or 1", (long long)layout);
    }
    if (n->in[0]->info.rank != 3) {
        return onnxi_invalid(c, n, "X has rank %u, expected 3", n->in[0]->info.rank);
    }
    static const uint32_t swap01[3] = {1, 0, 2};
    onnxi_value *x_seq = n->in[0];
    if (layout == 1 && (st = transpose(c, n, n->in[0], swap01, 3, &x_seq))) {
        return st;
    }
    const plx_tensor_info *x = &x_seq->info;
    char dbuf[32];
    const char *dir = onnxi_attr_s(n, "direction", "forward", dbuf, sizeof dbuf);
    plx_rnn_direction direction;
    if (strcmp(dir, "forward") == 0) {
        direction = PLX_RNN_FORWARD;
    } else if (strcmp(dir, "reverse") == 0) {
        direction = PLX_RNN_REVERSE;
    } else if (strcmp(dir, "bidirectional") == 0) {
        direction = PLX_RNN_BIDIRECTIONAL;
    } else {
        return onnxi_invalid(c, n, "direction '%s'", dir);
    }
    int64_t num_dir = direction == PLX_RNN_BIDIRECTIONAL ? 2 : 1;
    int64_t hidden = onnxi_attr_i(n, "hidden_size", 0);
    if (hidden <= 0 && n->in[2]->info.rank == 3) {
        hidden = n->in[2]->info.dims[2];
    }
    if (hidden <= 0) {
        return onnxi_invalid(c, n, "hidden_size is required");
    }
    uint32_t per_dir = lstm ? 3 : gru ? 2 : 1;
    /* Both directions' activations in a row, as the descriptors hold them. */
    plx_rnn_activation acts[6];
    if (per_dir > 1) {
        plx_rnn_default_activations(acts, per_dir);
    } else {
        for (size_t k = 0; k < 2; k++) {
            plx_rnn_activation tanh_act = {PLX_ACT_TANH, plx_activation_default_alpha(PLX_ACT_TANH),
                                           plx_activation_default_beta(PLX_ACT_TANH)};
            acts[k] = tanh_act;
        }
    }
    const Onnx__AttributeProto *an = onnxi_attr(n, "activations");
    if (an && an->n_strings) {
        if (an->n_strings != per_dir * (size_t)num_dir) {
            return onnxi_invalid(c, n, "activations has %zu names, expected %u", an->n_strings,
                                 (unsigned)(per_dir * num_dir));
        }
        const Onnx__AttributeProto *aa = onnxi_attr(n, "activation_alpha");
        const Onnx__AttributeProto *ab = onnxi_attr(n, "activation_beta");
        for (size_t k = 0; k < an->n_strings; k++) {
            char name[32];
            size_t len =
                an->strings[k].len < sizeof name - 1 ? an->strings[k].len : sizeof name - 1;
            memcpy(name, an->strings[k].data, len);
            name[len] = '\0';
            bool ha = aa && k < aa->n_floats, hb = ab && k < ab->n_floats;
            st = rnn_activation(name, ha ? aa->floats[k] : 0, hb ? ab->floats[k] : 0, ha, hb,
                                &acts[k]);
            if (st) {
                return st;
            }
        }
    }
    int64_t seq = x->dims[0], batch = x->dims[1];
    /* Absent optional inputs get ONNX's defaults. */
    onnxi_value *ins[8];
    for (size_t i = 0; i < 8; i++) {
        ins[i] = onnxi_has_in(n, i) ? n->in[i] : NULL;
    }
    ins[0] = x_seq;
    for (size_t i = 5; i < 7 && layout == 1; i++) {
        if (ins[i] && ins[i]->info.rank == 3 &&
            (st = transpose(c, n, ins[i], swap01, 3, &ins[i]))) {
            return st;
        }
    }
    int64_t gates = lstm ? 4 : gru ? 3 : 1;
    if (!ins[3]) {
        int64_t dims[2] = {num_dir, 2 * gates * hidden};
        st = onnxi_zeros(c, n, PLX_DTYPE_FLOAT32, 2, dims, &ins[3]);
    }
    if (!st && !ins[4]) {
        int64_t dims[1] = {batch};
        st = onnxi_zeros(c, n, PLX_DTYPE_INT32, 1, dims, &ins[4]);
        if (!st) {
            for (int64_t b = 0; b < batch; b++) {
                ((int32_t *)ins[4]->data)[b] = (int32_t)seq;
            }
        }
    } else if (!st && ins[4]->info.dtype != PLX_DTYPE_INT32) {
        plx_cast_desc cd = PLX_CAST_DESC_INIT(PLX_DTYPE_INT32);
        st = onnxi_emit(c, n, PLX_OP_CAST, &cd, &n->in[4], 1, 1, &ins[4]);
    }
    int64_t state_dims[3] = {num_dir, batch, hidden};
    if (!st && !ins[5]) {
        st = onnxi_zeros(c, n, PLX_DTYPE_FLOAT32, 3, state_dims, &ins[5]);
    }
    if (!st && lstm && !ins[6]) {
        st = onnxi_zeros(c, n, PLX_DTYPE_FLOAT32, 3, state_dims, &ins[6]);
    }
    if (!st && lstm && !ins[7]) {
        int64_t dims[2] = {num_dir, 3 * hidden};
        st = onnxi_zeros(c, n, PLX_DTYPE_FLOAT32, 2, dims, &ins[7]);
    }
    if (st) {
        return st;
    }
    onnxi_value *outs[3];
    if (lstm) {
        plx_lstm_desc d;
        memset(&d, 0, sizeof d);
        d.struct_size = sizeof d;
        d.direction = direction;
        d.hidden_size = hidden;
        memcpy(d.activations, acts, sizeof d.activations); /* [2][3] */
        d.clip = onnxi_attr_f(n, "clip", 0.0f);
        d.input_forget = onnxi_attr_i(n, "input_forget", 0) != 0;
        st = onnxi_emit(c, n, PLX_OP_LSTM, &d, ins, 8, 3, outs);
    } else if (gru) {
        plx_gru_desc d;
        memset(&d, 0, sizeof d);
        d.struct_size = sizeof d;
        d.direction = direction;
        d.hidden_size = hidden;
        memcpy(d.activations, acts, sizeof d.activations); /* [2][2] */
        d.clip = onnxi_attr_f(n, "clip", 0.0f);
        d.linear_before_reset = onnxi_attr_i(n, "linear_before_reset", 0) != 0;
        st = onnxi_emit(c, n, PLX_OP_GRU, &d, ins, 6, 2, outs);
    } else {
        plx_rnn_desc d;
        memset(&d, 0, sizeof d);
        d.struct_size = sizeof d;
        d.direction = direction;
        d.hidden_size = hidden;
        memcpy(d.activations, acts, sizeof d.activations); /* [2][1] */
        d.clip = onnxi_attr_f(n, "clip", 0.0f);
        st = onnxi_emit(c, n, PLX_OP_RNN, &d, ins, 6, 2, outs);
    }
    static const uint32_t y_batch_first[4] = {2, 0, 1, 3};
    for (size_t i = 0; i < (lstm ? 3u : 2u) && !st; i++) {
        onnxi_value *o = outs[i];
        if (layout == 1 && i < n->n_out && n->proto->output[i][0]) {
            st = i == 0 ? transpose(c, n, o, y_batch_first, 4, &o)
                        : transpose(c, n, o, swap01, 3, &o);
        }
        if (!st) {
            st = onnxi_bind_out(c, n, i, o);
        }
    }
    return st;
}
