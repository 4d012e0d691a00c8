/* cpu_onednn: the recurrent layers lstm, gru and rnn (ONNX LSTM, GRU, RNN;
 * sdk/include/plexus/ops.h's plx_lstm_desc, plx_gru_desc, plx_rnn_desc) on
 * oneDNN's RNN primitives: LSTM (with peepholes), GRU, linear-before-reset
 * GRU and the vanilla RNN, forward, reverse and bidirectional (concat).
 *
 * The plan, one layer:
 *  1. The weights and bias into oneDNN's plain layouts (ldigo for W and R:
 *     [layers 1, D, input, gates, hidden]; ldgo for the bias and the
 *     peepholes), gate by gate, because the gate orders differ (ONNX LSTM
 *     i, o, f, c, oneDNN i, f, c, o; GRU z, r, h is oneDNN's u, r, o):
 *     reorders between strided views of the inputs and of internal buffers
 *     (runs of gates in the same order are one reorder). ONNX's bias is Wb
 *     and Rb apart, oneDNN's one per gate: a binary add of the two views;
 *     linear-before-reset GRU's has a fourth gate, Rb of h, apart.
 *  2. The RNN primitive: X [seq, batch, input] is oneDNN's tnc src_layer,
 *     initial_h and initial_c [D, batch, H] its ldnc src_iter(_c), Y_h and
 *     Y_c its dst_iter(_c), the same bytes.
 *  3. Y [seq, D, batch, H]: one direction, it is dst_layer [seq, batch, H]
 *     itself; bidirectional, dst_layer [seq, batch, 2H] is internal and a
 *     reorder transposes it into Y.
 * Constant weights, bias and peepholes (as in real models) skip step 1:
 * they are rearranged once, at workload creation (odn_rnn_unpack, into the
 * same plain layouts), and shared by every working memory
 * (ODN_BIND_PACKED). Step 1 is for those that are
 * inputs computed at run time (ONNX's node tests feed them so): it costs
 * one pass over them per execution, against seq_length passes of the
 * recurrence.
 *
 * Refused, with the reason: a clip, LSTM's input_forget, activations other
 * than oneDNN's fixed ones (LSTM sigmoid, tanh, tanh; GRU sigmoid, tanh;
 * RNN one of tanh, relu, sigmoid, the same in both directions), and
 * sequence_lens that is not a constant equal to seq_length for every batch
 * entry (oneDNN runs every entry over the whole sequence). */
#include <string.h>

#include "onednn_internal.h"

/* A strided float32 view of `nd` dims starting `offset` elements into its
 * buffer. */
static plx_status view_md(const odn_context *ctx, dnnl_memory_desc_t *md, int nd,
                          const dnnl_dim_t *dims, const dnnl_dim_t *strides, dnnl_dim_t offset) {
    dnnl_dims_t d, st; /* full arrays: the API takes dnnl_dims_t */
    memset(d, 0, sizeof d);
    memset(st, 0, sizeof st);
    memcpy(d, dims, (size_t)nd * sizeof *dims);
    memcpy(st, strides, (size_t)nd * sizeof *strides);
    ODN_PLAN_CALL(dnnl_memory_desc_init_by_strides(md, nd, d, dnnl_f32, st));
    md->offset0 = offset;
    return NULL;
}

/* Adds a view (`md`) of plan memory `base`: the memory itself when it is
 * bound to the layer (an input's or output's buffer seen another way),
 * else an alias of the internal buffer. */
static int view_of(const odn_context *ctx, odn_plan *plan, int base,
                   const dnnl_memory_desc_t *md) {
    const odn_mem *b = &plan->mems[base];
    if (b->binding == ODN_BIND_INPUT || b->binding == ODN_BIND_OUTPUT) {
        return odn_plan_add_mem(ctx, plan, b->binding, b->slot, md);
    }
    return odn_plan_add_mem(ctx, plan, ODN_BIND_ALIAS, (unsigned)base, md);
}

/* A reorder from view `src_md` of the layer's input `slot` into view
 * `dst_md` of plan memory `dst_base`. */
static plx_status copy_views(const odn_context *ctx, odn_plan *plan, unsigned slot,
                             const dnnl_memory_desc_t *src_md, int dst_base,
                             const dnnl_memory_desc_t *dst_md) {
    int from = odn_plan_add_mem(ctx, plan, ODN_BIND_INPUT, slot, src_md);
    int to = from < 0 ? -1 : view_of(ctx, plan, dst_base, dst_md);
    if (to < 0) {
        return odn_out_of_memory(ctx);
    }
    return odn_plan_reorder(ctx, plan, from, to);
}

/* The gate maps, oneDNN gate g taken from ONNX gate perm[g]. */
static const int lstm_perm[4] = {0, 2, 3, 1}; /* oneDNN i f c o <- ONNX i o f c */
static const int gru_perm[3] = {0, 1, 2};     /* oneDNN u r o <- ONNX z r h */
static const int rnn_perm[1] = {0};
/* Peepholes: oneDNN i f o <- ONNX P's Pi Po Pf. */
static const int peephole_perm[3] = {0, 2, 1};

/* The length of the run of gates from g0 that are consecutive in both
 * orders (below `end`). */
static int gate_run(const int *perm, int g0, int end) {
    int n = 1;
    while (g0 + n < end && perm[g0 + n] == perm[g0] + n) {
        n++;
    }
    return n;
}

/* W or R (input `slot`, [D, G*H, K]) into `dst` (internal, plain ldigo [1,
 * D, K, G, H]), a reorder per run of gates. */
static plx_status plan_weights(const odn_context *ctx, odn_plan *plan, unsigned slot,
                               int dst, const int *perm, int64_t D, int64_t G, int64_t H,
                               int64_t K) {
    for (int g = 0; g < (int)G;) {
        int n = gate_run(perm, g, (int)G);
        dnnl_dim_t dims[5] = {1, D, K, n, H};
        dnnl_dim_t ss[5] = {D * G * H * K, G * H * K, 1, H * K, K};
        dnnl_dim_t ds[5] = {D * K * G * H, K * G * H, G * H, H, 1};
        dnnl_memory_desc_t smd, dmd;
        plx_status s = view_md(ctx, &smd, 5, dims, ss, perm[g] * H * K);
        if (!s) {
            s = view_md(ctx, &dmd, 5, dims, ds, g * H);
        }
        if (!s) {
            s = copy_views(ctx, plan, slot, &smd, dst, &dmd);
        }
        if (s) {
            return s;
        }
        g += n;
    }
    return NULL;
}

/* Gates [g, g + n) of ldgo buffer `dst` ([1, D, Gd, H]) as a view. */
static plx_status ldgo_view(const odn_context *ctx, dnnl_memory_desc_t *md, int64_t D,
                            int64_t Gd, int64_t H, int g, int n) {
    dnnl_dim_t dims[4] = {1, D, n, H};
    dnnl_dim_t st[4] = {D * Gd * H, Gd * H, H, 1};
    return view_md(ctx, md, 4, dims, st, g * H);
}

/* Gates [p, p + n) of a per-direction row [D, width] (B or P) as a view
 * of dims [1, D, n, H], starting at element `at` of the row. */
static plx_status row_view(const odn_context *ctx, dnnl_memory_desc_t *md, int64_t D,
                           int64_t width, int64_t H, int n, int64_t at) {
    dnnl_dim_t dims[4] = {1, D, n, H};
    dnnl_dim_t st[4] = {D * width, width, H, 1};
    return view_md(ctx, md, 4, dims, st, at);
}

/* The bias (input 3, [D, 2GH]: Wb then Rb) into `dst` (internal, ldgo [1,
 * D, Gd, H]): Wb + Rb per run of gates; with `lbr` (Gd = G + 1), gate 2 is
 * Wb of h alone and gate 3 Rb of h. */
static plx_status plan_bias(const odn_context *ctx, odn_plan *plan, int dst, const int *perm,
                            int64_t D, int64_t G, int64_t H, bool lbr) {
    int64_t Gd = lbr ? G + 1 : G, width = 2 * G * H;
    int summed = lbr ? 2 : (int)G;
    for (int g = 0; g < summed;) {
        int n = gate_run(perm, g, summed);
        dnnl_memory_desc_t wb, rb, out;
        plx_status s = row_view(ctx, &wb, D, width, H, n, perm[g] * H);
        if (!s) {
            s = row_view(ctx, &rb, D, width, H, n, (G + perm[g]) * H);
        }
        if (!s) {
            s = ldgo_view(ctx, &out, D, Gd, H, g, n);
        }
        if (s) {
            return s;
        }
        dnnl_binary_desc_t bd;
        ODN_PLAN_CALL(dnnl_binary_desc_init(&bd, dnnl_binary_add, &wb, &rb, &out));
        /* a few elements per execution: oneDNN's reference loop is fine */
        odn_context any = *ctx;
        any.reference = true;
        if ((s = odn_add_step(&any, plan, &bd, NULL))) {
            return s;
        }
        int a = odn_plan_add_mem(ctx, plan, ODN_BIND_INPUT, 3, &wb);
        int b = a < 0 ? -1 : odn_plan_add_mem(ctx, plan, ODN_BIND_INPUT, 3, &rb);
        int o = b < 0 ? -1 : view_of(ctx, plan, dst, &out);
        if (o < 0) {
            return odn_out_of_memory(ctx);
        }
        odn_step_set_arg(plan, DNNL_ARG_SRC_0, a);
        odn_step_set_arg(plan, DNNL_ARG_SRC_1, b);
        odn_step_set_arg(plan, DNNL_ARG_DST, o);
        g += n;
    }
    if (lbr) {
        for (int k = 0; k < 2; k++) { /* Wb of h into gate 2, Rb of h into gate 3 */
            dnnl_memory_desc_t src, out;
            plx_status s = row_view(ctx, &src, D, width, H, 1, (k * G + perm[2]) * H);
            if (!s) {
                s = ldgo_view(ctx, &out, D, Gd, H, 2 + k, 1);
            }
            if (!s) {
                s = copy_views(ctx, plan, 3, &src, dst, &out);
            }
            if (s) {
                return s;
            }
        }
    }
    return NULL;
}

/* The peepholes (input 7, [D, 3H]: Pi, Po, Pf) into `dst` (internal, ldgo
 * [1, D, 3, H]: i, f, o). */
static plx_status plan_peepholes(const odn_context *ctx, odn_plan *plan, int dst, int64_t D,
                                 int64_t H) {
    for (int g = 0; g < 3;) {
        int n = gate_run(peephole_perm, g, 3);
        dnnl_memory_desc_t src, out;
        plx_status s = row_view(ctx, &src, D, 3 * H, H, n, peephole_perm[g] * H);
        if (!s) {
            s = ldgo_view(ctx, &out, D, 3, H, g, n);
        }
        if (!s) {
            s = copy_views(ctx, plan, 7, &src, dst, &out);
        }
        if (s) {
            return s;
        }
        g += n;
    }
    return NULL;
}

void odn_rnn_unpack(const odn_unpack *u, const float *in, float *out) {
    int64_t D = u->dirs, G = u->gates, H = u->hidden, K = u->k;
    switch ((odn_unpack_kind)u->kind) {
    case ODN_UNPACK_RNN_WEIGHTS: /* [D, G*H, K] -> [1, D, K, G, H] */
        for (int64_t d = 0; d < D; d++) {
            for (int64_t g = 0; g < G; g++) {
                const float *src = in + (d * G + u->perm[g]) * H * K;
                for (int64_t h = 0; h < H; h++) {
                    for (int64_t k = 0; k < K; k++) {
                        out[((d * K + k) * G + g) * H + h] = src[h * K + k];
                    }
                }
            }
        }
        break;
    case ODN_UNPACK_RNN_BIAS: { /* [D, 2GH] -> [1, D, Gd, H] */
        int64_t Gd = u->lbr ? G + 1 : G;
        for (int64_t d = 0; d < D; d++) {
            const float *wb = in + d * 2 * G * H, *rb = wb + G * H;
            float *o = out + d * Gd * H;
            for (int64_t g = 0; g < G; g++) {
                const float *w = wb + u->perm[g] * H, *r = rb + u->perm[g] * H;
                for (int64_t h = 0; h < H; h++) {
                    if (u->lbr && g == 2) {
                        o[2 * H + h] = w[h];
                        o[3 * H + h] = r[h];
                    } else {
                        o[g * H + h] = w[h] + r[h];
                    }
                }
            }
        }
        break;
    }
    case ODN_UNPACK_RNN_PEEPHOLE: /* [D, 3H] -> [1, D, 3, H] */
        for (int64_t d = 0; d < D; d++) {
            for (int64_t g = 0; g < 3; g++) {
                for (int64_t h = 0; h < H; h++) {
                    out[(d * 3 + g) * H + h] = in[d * 3 * H + u->perm[g] * H + h];
                }
            }
        }
        break;
    case ODN_UNPACK_NONE:
        break;
    }
}

/* Binds constant input `slot` as argument `arg` of the last step, packed
 * once: rearranged as `u` says into `plain`, then reordered into the
 * layout the primitive chose. */
static plx_status bind_unpacked(const odn_context *ctx, odn_plan *plan, int arg, unsigned slot,
                                const dnnl_memory_desc_t *plain, const odn_unpack *u) {
    ODN_ADD_MEM(m, ODN_BIND_PACKED, slot, odn_step_md(plan, arg));
    plan->mems[m].user_md = *plain;
    plan->mems[m].unpack = *u;
    odn_step_set_arg(plan, arg, m);
    return NULL;
}

/* Whether `a` is function `f` (tanh, sigmoid and relu take no alpha or
 * beta). */
static bool act_is(const plx_rnn_activation *a, plx_activation_func f) {
    return a->func == f;
}

static const char *act_name(const plx_rnn_activation *a) {
    const char *n = plx_activation_func_name(a->func);
    return n ? n : "an unknown function";
}

/* Whether input `slot` is a constant whose every element is zero (the
 * importer's default for an absent one). */
static bool const_zero(const plx_layer_view *l, unsigned slot) {
    size_t n = 0;
    if (!odn_is_const(l, slot) || !plx_tensor_info_element_count(&l->inputs[slot], &n)) {
        return false;
    }
    const float *p = l->input_constants[slot];
    for (size_t i = 0; i < n; i++) {
        if (p[i] != 0.0f) {
            return false;
        }
    }
    return true;
}

plx_status odn_plan_rnn(const odn_context *ctx, const plx_layer_view *l, odn_plan *plan) {
    const char *op = plx_op_name(l->op);
    const char *name = l->name ? l->name : "";
    bool lstm = l->op == PLX_OP_LSTM, gru = l->op == PLX_OP_GRU;
    unsigned nin = lstm ? 8 : 6, nout = lstm ? 3 : 2;
    if (l->input_count != nin || l->output_count != nout || !l->desc) {
        return odn_refuse(ctx, "%s '%s': expected %u inputs and %u outputs", op, name, nin,
                          nout);
    }
    for (unsigned i = 0; i < nin; i++) {
        plx_dtype want = i == 4 ? PLX_DTYPE_INT32 : PLX_DTYPE_FLOAT32;
        if (l->inputs[i].dtype != want) {
            return odn_refuse(ctx, "%s '%s': runs in float32 only, not %s (input %u)",
                              op, name, plx_dtype_name(l->inputs[i].dtype), i);
        }
        size_t n = 0;
        if (!plx_tensor_info_element_count(&l->inputs[i], &n) || n == 0) {
            return odn_refuse(ctx, "%s '%s': runs no tensors without elements "
                              "(input %u)", op, name, i);
        }
    }
    for (unsigned i = 0; i < nout; i++) {
        size_t n = 0;
        if (l->outputs[i].dtype != PLX_DTYPE_FLOAT32 ||
            !plx_tensor_info_element_count(&l->outputs[i], &n) || n == 0) {
            return odn_refuse(ctx, "%s '%s': output %u is not a float32 tensor with elements",
                              op, name, i);
        }
    }
    plx_rnn_direction direction;
    int64_t H;
    float clip;
    const plx_rnn_activation *acts[2];
    unsigned per_dir;
    bool lbr = false;
    if (lstm) {
        const plx_lstm_desc *d = l->desc;
        direction = d->direction;
        H = d->hidden_size;
        clip = d->clip;
        acts[0] = d->activations[0];
        acts[1] = d->activations[1];
        per_dir = 3;
        if (d->input_forget) {
            return odn_refuse(ctx, "lstm '%s': oneDNN's LSTM has no input_forget "
                              "(coupled input and forget gates)", name);
        }
    } else if (gru) {
        const plx_gru_desc *d = l->desc;
        direction = d->direction;
        H = d->hidden_size;
        clip = d->clip;
        acts[0] = d->activations[0];
        acts[1] = d->activations[1];
        per_dir = 2;
        lbr = d->linear_before_reset;
    } else {
        const plx_rnn_desc *d = l->desc;
        direction = d->direction;
        H = d->hidden_size;
        clip = d->clip;
        acts[0] = d->activations[0];
        acts[1] = d->activations[1];
        per_dir = 1;
    }
    int64_t D = direction == PLX_RNN_BIDIRECTIONAL ? 2 : 1;
    if (clip != 0.0f) {
        return odn_refuse(ctx, "%s '%s': oneDNN's RNN primitives have no clip "
                          "(clip = %g)", op, name, (double)clip);
    }
    /* oneDNN's fixed activations */
    dnnl_alg_kind_t rnn_act = dnnl_eltwise_tanh;
    for (int64_t d = 0; d < D; d++) {
        const plx_rnn_activation *a = acts[d];
        bool ok;
        if (lstm) {
            ok = act_is(&a[0], PLX_ACT_SIGMOID) && act_is(&a[1], PLX_ACT_TANH) &&
                 act_is(&a[2], PLX_ACT_TANH);
        } else if (gru) {
            ok = act_is(&a[0], PLX_ACT_SIGMOID) && act_is(&a[1], PLX_ACT_TANH);
        } else {
            ok = act_is(&a[0], PLX_ACT_TANH) || act_is(&a[0], PLX_ACT_RELU) ||
                 act_is(&a[0], PLX_ACT_SIGMOID);
            ok = ok && (d == 0 || acts[1][0].func == acts[0][0].func);
        }
        if (!ok) {
            const char *which = lstm ? "sigmoid, tanh, tanh" : gru ? "sigmoid, tanh"
                                                                   : "tanh, relu or sigmoid, "
                                                                     "the same in both "
                                                                     "directions";
            return odn_refuse(ctx, "%s '%s': oneDNN's %s runs only the "
                              "activations %s, not %s%s%s%s%s (direction %lld)", op, name,
                              lstm ? "LSTM" : gru ? "GRU" : "vanilla RNN", which,
                              act_name(&a[0]), per_dir > 1 ? ", " : "",
                              per_dir > 1 ? act_name(&a[1]) : "", per_dir > 2 ? ", " : "",
                              per_dir > 2 ? act_name(&a[2]) : "", (long long)d);
        }
    }
    if (!lstm && !gru) {
        rnn_act = acts[0][0].func == PLX_ACT_RELU      ? dnnl_eltwise_relu
                  : acts[0][0].func == PLX_ACT_SIGMOID ? dnnl_eltwise_logistic
                                                       : dnnl_eltwise_tanh;
    }
    const plx_tensor_info *x = &l->inputs[0];
    if (x->rank != 3) {
        return odn_refuse(ctx, "%s '%s': X has rank %u, expected 3", op, name, x->rank);
    }
    int64_t T = x->dims[0], N = x->dims[1], I = x->dims[2];
    int64_t G = lstm ? 4 : gru ? 3 : 1;
    const int *perm = lstm ? lstm_perm : gru ? gru_perm : rnn_perm;
    /* sequence_lens: oneDNN runs every batch entry over all T steps */
    const int32_t *lens = odn_is_const(l, 4) ? l->input_constants[4] : NULL;
    if (!lens || l->inputs[4].rank != 1 || l->inputs[4].dims[0] != N) {
        return odn_refuse(ctx, "%s '%s': sequence_lens must be a constant (each "
                          "batch entry's length equal to seq_length): oneDNN's RNN primitives "
                          "run the whole sequence", op, name);
    }
    for (int64_t b = 0; b < N; b++) {
        if (lens[b] != T) {
            return odn_refuse(ctx, "%s '%s': sequence_lens[%lld] = %d is not "
                              "seq_length %lld: oneDNN's RNN primitives run every batch "
                              "entry over the whole sequence", op, name, (long long)b,
                              (int)lens[b], (long long)T);
        }
    }
    bool peephole = lstm && !const_zero(l, 7);

    /* memories */
    dnnl_memory_desc_t src_layer, state, wl, wi, bias, peep, dst_layer;
    int64_t tnc[3] = {T, N, I};
    int64_t st_dims[4] = {1, D, N, H};
    int64_t wl_dims[5] = {1, D, I, G, H};
    int64_t wi_dims[5] = {1, D, H, G, H};
    int64_t b_dims[4] = {1, D, lbr ? G + 1 : G, H};
    int64_t p_dims[4] = {1, D, 3, H};
    int64_t y_dims[3] = {T, N, D * H};
    ODN_PLAN_CALL(odn_plain_md(&src_layer, tnc, 3));
    ODN_PLAN_CALL(odn_plain_md(&state, st_dims, 4));
    ODN_PLAN_CALL(odn_plain_md(&wl, wl_dims, 5));
    ODN_PLAN_CALL(odn_plain_md(&wi, wi_dims, 5));
    ODN_PLAN_CALL(odn_plain_md(&bias, b_dims, 4));
    ODN_PLAN_CALL(odn_plain_md(&peep, p_dims, 4));
    ODN_PLAN_CALL(odn_plain_md(&dst_layer, y_dims, 3));

    /* 1. weights, bias, peepholes computed at run time into oneDNN's
     * layouts (constants are packed at creation instead) */
    bool cwl = odn_is_const(l, 1), cwi = odn_is_const(l, 2), cb = odn_is_const(l, 3);
    bool cp = peephole && odn_is_const(l, 7);
    int m_wl = -1, m_wi = -1, m_b = -1, m_p = -1;
    if ((!cwl && (m_wl = odn_plan_add_mem(ctx, plan, ODN_BIND_INTERNAL, 0, &wl)) < 0) ||
        (!cwi && (m_wi = odn_plan_add_mem(ctx, plan, ODN_BIND_INTERNAL, 0, &wi)) < 0) ||
        (!cb && (m_b = odn_plan_add_mem(ctx, plan, ODN_BIND_INTERNAL, 0, &bias)) < 0) ||
        (peephole && !cp &&
         (m_p = odn_plan_add_mem(ctx, plan, ODN_BIND_INTERNAL, 0, &peep)) < 0)) {
        return odn_out_of_memory(ctx);
    }
    plx_status s = NULL;
    if (!cwl) {
        s = plan_weights(ctx, plan, 1, m_wl, perm, D, G, H, I);
    }
    if (!s && !cwi) {
        s = plan_weights(ctx, plan, 2, m_wi, perm, D, G, H, H);
    }
    if (!s && !cb) {
        s = plan_bias(ctx, plan, m_b, perm, D, G, H, lbr);
    }
    if (!s && peephole && !cp) {
        s = plan_peepholes(ctx, plan, m_p, D, H);
    }
    if (s) {
        return s;
    }
    /* 2. the RNN primitive. Its weights are plain ldigo, constant ones
     * too: with "any", oneDNN 2.6 picks a blocked layout and its brgemm
     * kernels, which took 3.1 ms against 1.9 ms for two bidirectional
     * LSTMs (hidden 128, seq 100, batch 1, one thread, AVX-512; the same
     * at batch 16). */
    dnnl_rnn_direction_t dir = direction == PLX_RNN_FORWARD   ? dnnl_unidirectional_left2right
                               : direction == PLX_RNN_REVERSE ? dnnl_unidirectional_right2left
                                                              : dnnl_bidirectional_concat;
    dnnl_rnn_desc_t rd;
    if (lstm) {
        ODN_PLAN_CALL(dnnl_lstm_forward_desc_init_v3(
            &rd, dnnl_forward_inference, dir, &src_layer, &state, &state, &wl, &wi,
            peephole ? &peep : NULL, NULL, &bias, &dst_layer, &state, &state,
            dnnl_rnn_flags_undef));
    } else if (gru && lbr) {
        ODN_PLAN_CALL(dnnl_lbr_gru_forward_desc_init(&rd, dnnl_forward_inference, dir,
                                                     &src_layer, &state, &wl, &wi, &bias,
                                                     &dst_layer, &state, dnnl_rnn_flags_undef));
    } else if (gru) {
        ODN_PLAN_CALL(dnnl_gru_forward_desc_init(&rd, dnnl_forward_inference, dir, &src_layer,
                                                 &state, &wl, &wi, &bias, &dst_layer, &state,
                                                 dnnl_rnn_flags_undef));
    } else {
        ODN_PLAN_CALL(dnnl_vanilla_rnn_forward_desc_init(
            &rd, dnnl_forward_inference, rnn_act, dir, &src_layer, &state, &wl, &wi, &bias,
            &dst_layer, &state, dnnl_rnn_flags_undef, 0.0f, 0.0f));
    }
    /* oneDNN 2.6 names its RNN implementation on plain weights "ref", yet
     * it runs the cell's products on its optimised GEMM, not plain loops:
     * option `reference` does not apply to it */
    odn_context any = *ctx;
    any.reference = true;
    if ((s = odn_add_step(&any, plan, &rd, NULL))) {
        return s;
    }
    int y = -1;
    if (D == 1) {
        s = odn_bind(ctx, plan, DNNL_ARG_DST_LAYER, ODN_BIND_OUTPUT, 0, &dst_layer);
    } else if ((y = odn_plan_add_mem(ctx, plan, ODN_BIND_INTERNAL, 0, &dst_layer)) < 0) {
        return odn_out_of_memory(ctx);
    } else {
        odn_step_set_arg(plan, DNNL_ARG_DST_LAYER, y);
    }
    odn_unpack u;
    memset(&u, 0, sizeof u);
    u.gates = (int32_t)G;
    u.lbr = lbr;
    u.dirs = D;
    u.hidden = H;
    for (int64_t g = 0; g < G; g++) {
        u.perm[g] = perm[g];
    }
    const struct {
        bool constant;
        int arg, mem;
        unsigned slot;
        odn_unpack_kind kind;
        int64_t k;
        const dnnl_memory_desc_t *plain;
    } params[4] = {
        {cwl, DNNL_ARG_WEIGHTS_LAYER, m_wl, 1, ODN_UNPACK_RNN_WEIGHTS, I, &wl},
        {cwi, DNNL_ARG_WEIGHTS_ITER, m_wi, 2, ODN_UNPACK_RNN_WEIGHTS, H, &wi},
        {cb, DNNL_ARG_BIAS, m_b, 3, ODN_UNPACK_RNN_BIAS, 0, &bias},
        {cp, DNNL_ARG_WEIGHTS_PEEPHOLE, m_p, 7, ODN_UNPACK_RNN_PEEPHOLE, 0, &peep},
    };
    for (int k = 0; !s && k < (peephole ? 4 : 3); k++) {
        if (!params[k].constant) {
            odn_step_set_arg(plan, params[k].arg, params[k].mem);
            continue;
        }
        odn_unpack pu = u;
        pu.kind = params[k].kind;
        pu.k = params[k].k;
        if (pu.kind == ODN_UNPACK_RNN_PEEPHOLE) {
            pu.gates = 3;
            for (int g = 0; g < 4; g++) {
                pu.perm[g] = g < 3 ? peephole_perm[g] : 0;
            }
        }
        s = bind_unpacked(ctx, plan, params[k].arg, params[k].slot, params[k].plain, &pu);
    }
    s = s ? s : odn_bind(ctx, plan, DNNL_ARG_SRC_LAYER, ODN_BIND_INPUT, 0, &src_layer);
    s = s ? s : odn_bind(ctx, plan, DNNL_ARG_SRC_ITER, ODN_BIND_INPUT, 5, &state);
    s = s ? s : odn_bind(ctx, plan, DNNL_ARG_DST_ITER, ODN_BIND_OUTPUT, 1, &state);
    if (lstm) {
        s = s ? s : odn_bind(ctx, plan, DNNL_ARG_SRC_ITER_C, ODN_BIND_INPUT, 6, &state);
        s = s ? s : odn_bind(ctx, plan, DNNL_ARG_DST_ITER_C, ODN_BIND_OUTPUT, 2, &state);
    }
    if (s || D == 1) {
        return s;
    }

    /* 3. bidirectional: [T, N, 2, H] (dst_layer) into Y [T, 2, N, H] */
    dnnl_dim_t dims[4] = {T, N, 2, H};
    dnnl_dim_t from_st[4] = {N * 2 * H, 2 * H, H, 1};
    dnnl_dim_t to_st[4] = {2 * N * H, H, N * H, 1};
    dnnl_memory_desc_t from_md, to_md;
    if ((s = view_md(ctx, &from_md, 4, dims, from_st, 0)) ||
        (s = view_md(ctx, &to_md, 4, dims, to_st, 0))) {
        return s;
    }
    int from = view_of(ctx, plan, y, &from_md);
    int to = from < 0 ? -1 : odn_plan_add_mem(ctx, plan, ODN_BIND_OUTPUT, 0, &to_md);
    if (to < 0) {
        return odn_out_of_memory(ctx);
    }
    return odn_plan_reorder(ctx, plan, from, to);
}
