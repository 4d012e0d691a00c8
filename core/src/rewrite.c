/* Backend-independent rewrites of the optimiser's working copy, before
 * layers are assigned (network.h, plx_optimize_options.graph_rewrites).
 *
 * Each rewrite is always right: the network computes the same values (a
 * folded batch-norm up to float rounding, as when its arithmetic runs in
 * the convolution's weights; a QDQ group to one quantization step of its
 * output, rounded once instead of twice). Each adds a note naming the
 * layers it changed:
 *   - first, dequantize -> conv, matmul or gemm -> quantize, every scale and zero
 *     point constant, the weights an int8/uint8 constant (per tensor or per
 *     output channel) and a conv's bias an int32 constant whose scale is
 *     X's times W's, becomes one conv or matmul on the quantized tensors
 *     (plexus/ops.h), when one of the preferred backends accepts it: the
 *     only rewrite that asks the backends; without one, the float layers
 *     stay and are folded like any other; likewise max pooling and the
 *     reshape-like layers between a dequantize and a quantize of the same
 *     parameters run on the 8-bit values, an average pool (global or
 *     windowed) between them whatever their parameters as a quantized
 *     average, and add, sub and mul of two
 *     dequantized tensors before a quantize become one binary layer on
 *     the quantized tensors, and a concat of dequantized tensors before a
 *     quantize one concat on them (requantizing the inputs whose
 *     parameters are not the quantize's);
 *   - batch_norm folded into the conv before it, whose output only it reads
 *     (weights and bias constant float32, read by nothing else);
 *   - transposes that cancel are removed; two in a row become one;
 *   - x * clip(x + 3, 0, 6) / 6, hard-swish written out, becomes one
 *     hard_swish activation;
 *   - reshape, flatten, squeeze, unsqueeze and transpose of a constant read
 *     by nothing else become that constant;
 *   - any other layer with one output whose inputs are all constants is
 *     evaluated once by constant folding (fold.h, the same code that folds
 *     an ONNX model's constant subgraphs at import), and becomes a
 *     constant holding its result (up to PLXI_FOLD_MAX_BYTES of it);
 *   - identity layers are removed: reshape-like layers, expand, tile and
 *     single-input concat whose output equals their input, cast to the same
 *     dtype, pad with no padding, identity transposes;
 *   - constants that nothing reads any more are dropped.
 * A layer is never removed when that would connect a network output
 * straight to a network input or a constant (the loader runs no layer
 * there), nor is a network input, output or a layer with more outputs.
 * Layer names stay those of the layers kept. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <plexus/geometry.h>

#include "fold.h"
#include "network_internal.h"
#include "assign.h"
#include "rewrite.h"
#include "shape_infer.h"

typedef struct rewriter {
    plx_optimized_network *o;
    plxi_layer **layers; /* NULL: removed */
    size_t count;
    plxi_backend_record *const *prefs; /* the backends by preference (fold_qdq asks them) */
    size_t pref_count;
} rewriter;

static plx_status oom(void) {
    return plxi_status_create(PLX_OUT_OF_MEMORY, "out of memory while rewriting the network");
}

/* Readers of output `slot` of layer `index`; *to_output: one is a network
 * output. */
static size_t readers(const rewriter *w, uint32_t index, uint32_t slot, bool *to_output) {
    size_t n = 0;
    if (to_output) {
        *to_output = false;
    }
    for (size_t i = 0; i < w->count; i++) {
        const plxi_layer *l = w->layers[i];
        for (uint32_t k = 0; l && k < l->input_count; k++) {
            if (l->inputs[k].layer == index && l->inputs[k].slot == slot) {
                n++;
                if (to_output && l->op == PLX_OP_OUTPUT) {
                    *to_output = true;
                }
            }
        }
    }
    return n;
}

/* Every reader of `from` reads `to` instead. */
static void redirect(rewriter *w, plxi_source from, plxi_source to) {
    for (size_t i = 0; i < w->count; i++) {
        plxi_layer *l = w->layers[i];
        for (uint32_t k = 0; l && k < l->input_count; k++) {
            if (l->inputs[k].layer == from.layer && l->inputs[k].slot == from.slot) {
                l->inputs[k] = to;
            }
        }
    }
}

static void drop(rewriter *w, uint32_t index) {
    plxi_layer_free(w->layers[index]);
    w->layers[index] = NULL;
}

static plxi_layer *source_layer(const rewriter *w, const plxi_layer *l, uint32_t input) {
    return input < l->input_count ? w->layers[l->inputs[input].layer] : NULL;
}

/* Would `l`'s readers, moved to `src`, make a network output read an
 * input or a constant directly? */
static bool output_would_skip_compute(const rewriter *w, uint32_t index, const plxi_layer *src) {
    bool to_output;
    readers(w, index, 0, &to_output);
    return to_output && (src->op == PLX_OP_INPUT || src->op == PLX_OP_CONSTANT);
}

static bool same_info(const plx_tensor_info *a, const plx_tensor_info *b) {
    if (a->dtype != b->dtype || a->rank != b->rank || a->quant.kind != b->quant.kind ||
        a->quant.kind == PLX_QUANT_PER_AXIS ||
        (a->quant.kind == PLX_QUANT_PER_TENSOR &&
         (a->quant.scale != b->quant.scale || a->quant.zero_point != b->quant.zero_point))) {
        return false;
    }
    for (uint32_t i = 0; i < a->rank; i++) {
        if (a->dims[i] != b->dims[i]) {
            return false;
        }
    }
    return true;
}

/* The permutation a transpose applies, explicit (no perm: reversed). */
static void transpose_perm(const plxi_layer *l, uint32_t rank, uint32_t perm[PLX_MAX_RANK]) {
    const plx_transpose_desc *d = l->desc;
    for (uint32_t i = 0; i < rank; i++) {
        perm[i] = d && d->perm_count ? d->perm[i] : rank - 1 - i;
    }
}

static bool is_identity_perm(const uint32_t *perm, uint32_t rank) {
    for (uint32_t i = 0; i < rank; i++) {
        if (perm[i] != i) {
            return false;
        }
    }
    return true;
}

/* A layer whose output equals its input 0, element for element. */
static bool is_identity(const plxi_layer *l, const plxi_layer *src) {
    if (l->output_count != 1 || l->input_count < 1 || !src) {
        return false;
    }
    const plx_tensor_info *in = &src->outputs[l->inputs[0].slot], *out = &l->outputs[0];
    if (!same_info(in, out)) {
        return false;
    }
    switch (l->op) {
    case PLX_OP_RESHAPE:
    case PLX_OP_FLATTEN:
    case PLX_OP_SQUEEZE:
    case PLX_OP_UNSQUEEZE:
    case PLX_OP_EXPAND:
    case PLX_OP_TILE:
    case PLX_OP_CAST:
        return true;
    case PLX_OP_CONCAT:
        return l->input_count == 1;
    case PLX_OP_PAD: {
        const plx_pad_desc *d = l->desc;
        for (uint32_t i = 0; i < out->rank; i++) {
            if (d->pads_begin[i] || d->pads_end[i]) {
                return false;
            }
        }
        return true;
    }
    case PLX_OP_TRANSPOSE: {
        uint32_t perm[PLX_MAX_RANK];
        transpose_perm(l, out->rank, perm);
        return is_identity_perm(perm, out->rank);
    }
    default:
        return false;
    }
}

/* Gives a constant layer its own copy of its data (the network's may be
 * borrowed from the application), to rewrite in place. */
static float *own_floats(plxi_layer *c) {
    plx_constant_desc *d = c->desc;
    size_t bytes = 0;
    plx_tensor_info_byte_size(&c->outputs[0], &bytes);
    if (d->data != c->owned_data) {
        void *copy = malloc(bytes ? bytes : 1);
        if (!copy) {
            return NULL;
        }
        memcpy(copy, d->data, bytes);
        free(c->owned_data);
        c->owned_data = copy;
        d->data = copy;
    }
    return c->owned_data;
}

static bool private_f32_constant(const rewriter *w, const plxi_layer *l, uint32_t input,
                                 int64_t count) {
    const plxi_layer *c = source_layer(w, l, input);
    size_t n = 0;
    return c && c->op == PLX_OP_CONSTANT && c->outputs[0].dtype == PLX_DTYPE_FLOAT32 &&
           readers(w, l->inputs[input].layer, 0, NULL) == 1 &&
           plx_tensor_info_element_count(&c->outputs[0], &n) && (int64_t)n == count;
}

/* conv -> batch_norm, as conv with scaled weights and a shifted bias:
 * f = scale / sqrt(var + eps); W' = W * f (per output channel);
 * B' = (B - mean) * f + bias. The batch-norm's bias constant becomes the
 * conv's bias when it had none. */
static plx_status fold_batch_norm(rewriter *w, uint32_t index, bool *changed) {
    plxi_layer *bn = w->layers[index];
    plxi_layer *conv = source_layer(w, bn, 0);
    uint32_t ci = bn->inputs[0].layer;
    if (!conv || conv->op != PLX_OP_CONV || conv->outputs[0].dtype != PLX_DTYPE_FLOAT32 ||
        readers(w, ci, 0, NULL) != 1 || bn->input_count != 5) {
        return NULL;
    }
    const plx_tensor_info *wi = &conv->outputs[0];
    int64_t m = wi->rank >= 2 ? wi->dims[1] : 0;
    size_t wn = 0;
    plxi_layer *wl = source_layer(w, conv, 1);
    if (m <= 0 || !wl || !plx_tensor_info_element_count(&wl->outputs[0], &wn) ||
        !private_f32_constant(w, conv, 1, (int64_t)wn) || wl->outputs[0].dims[0] != m) {
        return NULL;
    }
    bool has_bias = conv->input_count == 3;
    if (has_bias && !private_f32_constant(w, conv, 2, m)) {
        return NULL;
    }
    for (uint32_t k = 1; k < 5; k++) {
        const plxi_layer *c = source_layer(w, bn, k);
        size_t n = 0;
        if (!c || c->op != PLX_OP_CONSTANT || c->outputs[0].dtype != PLX_DTYPE_FLOAT32 ||
            !plx_tensor_info_element_count(&c->outputs[0], &n) || (int64_t)n != m) {
            return NULL;
        }
    }
    /* Without a bias of its own the conv takes the batch-norm's, rewritten. */
    if (!has_bias && !private_f32_constant(w, bn, 2, m)) {
        return NULL;
    }
    const float *scale = plxi_constant_data(source_layer(w, bn, 1));
    const float *shift = plxi_constant_data(source_layer(w, bn, 2));
    const float *mean = plxi_constant_data(source_layer(w, bn, 3));
    const float *var = plxi_constant_data(source_layer(w, bn, 4));
    double eps = ((const plx_batch_norm_desc *)bn->desc)->epsilon;
    plxi_layer *bl = has_bias ? source_layer(w, conv, 2) : source_layer(w, bn, 2);
    plxi_source *grown = NULL;
    if (!has_bias) {
        grown = realloc(conv->inputs, 3 * sizeof *conv->inputs);
        if (!grown) {
            return oom();
        }
        conv->inputs = grown;
    }
    /* Read shift before own_floats may replace the bias layer's data. */
    float *f = malloc((size_t)m * sizeof *f), *b0 = malloc((size_t)m * sizeof *b0);
    if (!f || !b0) {
        free(f);
        free(b0);
        return oom();
    }
    const float *old_bias = has_bias ? plxi_constant_data(bl) : NULL;
    for (int64_t j = 0; j < m; j++) {
        double g = (double)scale[j] / sqrt((double)var[j] + eps);
        f[j] = (float)g;
        b0[j] = (float)(((old_bias ? (double)old_bias[j] : 0.0) - mean[j]) * g + shift[j]);
    }
    float *wd = own_floats(wl), *bd = own_floats(bl);
    if (!wd || !bd) {
        free(f);
        free(b0);
        return oom();
    }
    size_t per = wn / (size_t)m;
    for (int64_t j = 0; j < m; j++) {
        for (size_t e = 0; e < per; e++) {
            wd[(size_t)j * per + e] *= f[j];
        }
        bd[j] = b0[j];
    }
    free(f);
    free(b0);
    if (!has_bias) {
        conv->inputs[2] = bn->inputs[2];
        conv->input_count = 3;
    }
    if (!plxi_layer_fuse(conv, bn) ||
        !plxi_optimizer_note(w->o, "folded batch_norm '%s' into conv '%s'", bn->name,
                             conv->name)) {
        return oom();
    }
    redirect(w, (plxi_source){index, 0}, (plxi_source){ci, 0});
    drop(w, index);
    *changed = true;
    return NULL;
}

/* transpose -> transpose: one transpose, or none when they cancel. */
static plx_status merge_transposes(rewriter *w, uint32_t index, bool *changed) {
    plxi_layer *t2 = w->layers[index];
    plxi_layer *t1 = source_layer(w, t2, 0);
    uint32_t i1 = t2->inputs[0].layer;
    if (!t1 || t1->op != PLX_OP_TRANSPOSE || readers(w, i1, 0, NULL) != 1) {
        return NULL;
    }
    plxi_layer *src = source_layer(w, t1, 0);
    uint32_t rank = t2->outputs[0].rank;
    uint32_t p[PLX_MAX_RANK], q[PLX_MAX_RANK], r[PLX_MAX_RANK];
    transpose_perm(t1, rank, p);
    transpose_perm(t2, rank, q);
    for (uint32_t i = 0; i < rank; i++) {
        r[i] = p[q[i]];
    }
    if (is_identity_perm(r, rank)) {
        if (output_would_skip_compute(w, index, src)) {
            return NULL;
        }
        if (!plxi_optimizer_note(w->o, "removed transposes '%s' and '%s', which cancel",
                                 t1->name, t2->name)) {
            return oom();
        }
        redirect(w, (plxi_source){index, 0}, t1->inputs[0]);
        drop(w, index);
    } else {
        if (!plxi_optimizer_note(w->o, "merged transpose '%s' into transpose '%s'", t1->name,
                                 t2->name)) {
            return oom();
        }
        plx_transpose_desc *d = t2->desc;
        memcpy(d->perm, r, sizeof r);
        d->perm_count = rank;
        t2->inputs[0] = t1->inputs[0];
    }
    drop(w, i1);
    *changed = true;
    return NULL;
}

/* A reshape-like layer or transpose of a private constant: the constant,
 * reshaped or permuted. */
static plx_status fold_into_constant(rewriter *w, uint32_t index, bool *changed) {
    plxi_layer *l = w->layers[index];
    bool reshape_like = l->op == PLX_OP_RESHAPE || l->op == PLX_OP_FLATTEN ||
                        l->op == PLX_OP_SQUEEZE || l->op == PLX_OP_UNSQUEEZE;
    if ((!reshape_like && l->op != PLX_OP_TRANSPOSE) || l->input_count != 1) {
        return NULL;
    }
    plxi_layer *c = source_layer(w, l, 0);
    uint32_t ci = l->inputs[0].layer;
    if (!c || c->op != PLX_OP_CONSTANT || readers(w, ci, 0, NULL) != 1 ||
        output_would_skip_compute(w, index, c) || c->outputs[0].quant.kind != PLX_QUANT_NONE) {
        return NULL;
    }
    if (l->op == PLX_OP_TRANSPOSE) {
        const plx_tensor_info *in = &c->outputs[0], *out = &l->outputs[0];
        size_t n = 0, elem = plx_dtype_size(in->dtype);
        if (!plx_tensor_info_element_count(in, &n) || elem == 0) {
            return NULL;
        }
        uint32_t perm[PLX_MAX_RANK];
        transpose_perm(l, out->rank, perm);
        unsigned char *dst = malloc(n * elem > 0 ? n * elem : 1);
        if (!dst) {
            return oom();
        }
        const unsigned char *srcd = plxi_constant_data(c);
        /* Output index -> input offset, walking the output in order. */
        int64_t in_stride[PLX_MAX_RANK], idx[PLX_MAX_RANK] = {0};
        int64_t acc = 1;
        for (uint32_t i = in->rank; i-- > 0;) {
            in_stride[i] = acc;
            acc *= in->dims[i];
        }
        for (size_t e = 0; e < n; e++) {
            int64_t off = 0;
            for (uint32_t i = 0; i < out->rank; i++) {
                off += idx[i] * in_stride[perm[i]];
            }
            memcpy(dst + e * elem, srcd + (size_t)off * elem, elem);
            for (uint32_t i = out->rank; i-- > 0;) {
                if (++idx[i] < out->dims[i]) {
                    break;
                }
                idx[i] = 0;
            }
        }
        free(c->owned_data);
        c->owned_data = dst;
        ((plx_constant_desc *)c->desc)->data = dst;
    }
    plx_quant_params keep = c->outputs[0].quant;
    c->outputs[0] = l->outputs[0];
    c->outputs[0].quant = keep;
    if (!plxi_optimizer_note(w->o, "folded %s '%s' into constant '%s'", plx_op_name(l->op),
                             l->name, c->name)) {
        return oom();
    }
    redirect(w, (plxi_source){index, 0}, (plxi_source){ci, 0});
    drop(w, index);
    *changed = true;
    return NULL;
}

/* A layer whose inputs are all constants, evaluated by constant folding
 * (fold.h) into a constant: the layer itself becomes that constant (same
 * name, same output info), its inputs dropped when nothing else reads
 * them. Not done when a network output reads the layer (the loader runs no
 * layer between a constant and an output), when the reference kernels
 * have no kernel for it or refuse it, or when evaluating it fails: then it
 * runs at load time as any layer, and reports its error there. */
static plx_status fold_constant_layer(rewriter *w, uint32_t index, bool *changed) {
    plxi_layer *l = w->layers[index];
    if (l->op == PLX_OP_INPUT || l->op == PLX_OP_OUTPUT || l->op == PLX_OP_CONSTANT ||
        l->op == PLX_OP_PRECOMPILED || l->output_count != 1 || l->input_count == 0 ||
        l->input_count > 64) {
        return NULL;
    }
    for (uint32_t k = 0; k < l->input_count; k++) {
        const plxi_layer *c = source_layer(w, l, k);
        if (!c || c->op != PLX_OP_CONSTANT) {
            return NULL;
        }
    }
    bool to_output;
    readers(w, index, 0, &to_output);
    if (to_output) {
        return NULL;
    }
    plx_tensor_info infos[64];
    const void *consts[64];
    plx_layer_view view;
    plxi_layer_view(l, w->layers, infos, consts, &view);
    void *data;
    char err[256] = "";
    plxi_fold_result r = plxi_fold_layer(&view, PLXI_FOLD_MAX_BYTES, &data, err, sizeof err);
    if (r == PLXI_FOLD_NO_MEMORY) {
        return oom();
    }
    if (r != PLXI_FOLDED) {
        return NULL;
    }
    plx_constant_desc *d = calloc(1, sizeof *d);
    if (!d) {
        free(data);
        return oom();
    }
    if (!plxi_optimizer_note(w->o, "folded %s '%s' into a constant: its inputs are constants",
                             plx_op_name(l->op), l->name)) {
        free(data);
        free(d);
        return oom();
    }
    d->struct_size = (uint32_t)sizeof *d;
    d->data = data;
    free(l->desc);
    free(l->inputs);
    free(l->owned_data);
    free(l->split_sizes);
    l->split_sizes = NULL;
    l->desc = d;
    l->owned_data = data;
    l->inputs = NULL;
    l->input_count = 0;
    l->op = PLX_OP_CONSTANT;
    *changed = true;
    return NULL;
}

/* Whether input `input` of l is a float32 constant of one element equal to
 * v (a scalar operand of an elementwise chain). */
static bool scalar_input(const rewriter *w, const plxi_layer *l, uint32_t input, float v) {
    const plxi_layer *c = source_layer(w, l, input);
    size_t n = 0;
    return c && c->op == PLX_OP_CONSTANT && c->outputs[0].dtype == PLX_DTYPE_FLOAT32 &&
           c->outputs[0].quant.kind == PLX_QUANT_NONE &&
           plx_tensor_info_element_count(&c->outputs[0], &n) && n == 1 &&
           *(const float *)plxi_constant_data(c) == v;
}

static bool is_binary(const plxi_layer *l, plx_binary_func f) {
    return l && l->op == PLX_OP_BINARY && l->input_count == 2 &&
           ((const plx_binary_desc *)l->desc)->func == f &&
           l->outputs[0].dtype == PLX_DTYPE_FLOAT32;
}

/* Of binary layer l, the input that is not the scalar constant v: 0 or 1,
 * -1 when neither input is v. */
static int other_than_scalar(const rewriter *w, const plxi_layer *l, float v) {
    return scalar_input(w, l, 1, v) ? 0 : scalar_input(w, l, 0, v) ? 1 : -1;
}

/* x * clip(x + 3, 0, 6) / 6 (or * (1/6)), the hard-swish that exporters
 * write out (paddle2onnx does, for every PP-LCNet and PP-OCR block), as one
 * hard_swish activation: one pass over the tensor instead of four. The
 * rewrite happens at the division; the add, the clip and the product must
 * have no other reader, and x the output's info (no broadcasting). */
static plx_status fuse_hard_swish(rewriter *w, uint32_t index, bool *changed) {
    plxi_layer *l = w->layers[index];
    int hi = is_binary(l, PLX_BINARY_DIV) && scalar_input(w, l, 1, 6.0f) ? 0
             : is_binary(l, PLX_BINARY_MUL) ? other_than_scalar(w, l, 1.0f / 6.0f)
                                           : -1;
    if (hi < 0) {
        return NULL;
    }
    uint32_t h_index = l->inputs[hi].layer;
    plxi_layer *h = w->layers[h_index];
    if (!is_binary(h, PLX_BINARY_MUL) || l->inputs[hi].slot != 0 ||
        readers(w, h_index, 0, NULL) != 1) {
        return NULL;
    }
    for (uint32_t k = 0; k < 2; k++) {
        uint32_t k_index = h->inputs[k].layer;
        plxi_layer *clip = w->layers[k_index];
        if (!clip || clip->op != PLX_OP_ACTIVATION || h->inputs[k].slot != 0 ||
            readers(w, k_index, 0, NULL) != 1) {
            continue;
        }
        const plx_activation_desc *cd = clip->desc;
        if (cd->func != PLX_ACT_CLIP || cd->alpha != 0.0f || cd->beta != 6.0f) {
            continue;
        }
        uint32_t a_index = clip->inputs[0].layer;
        plxi_layer *add = w->layers[a_index];
        int xi = is_binary(add, PLX_BINARY_ADD) && clip->inputs[0].slot == 0 &&
                         readers(w, a_index, 0, NULL) == 1
                     ? other_than_scalar(w, add, 3.0f)
                     : -1;
        plxi_source x = h->inputs[1 - k];
        if (xi < 0 || add->inputs[xi].layer != x.layer || add->inputs[xi].slot != x.slot ||
            !same_info(&w->layers[x.layer]->outputs[x.slot], &l->outputs[0])) {
            continue;
        }
        plx_activation_desc *d = calloc(1, sizeof *d);
        if (!d) {
            return oom();
        }
        if (!plxi_layer_fuse(l, add) || !plxi_layer_fuse(l, clip) || !plxi_layer_fuse(l, h) ||
            !plxi_optimizer_note(w->o, "fused '%s', '%s', '%s' and '%s' into a hard_swish",
                                 add->name, clip->name, h->name, l->name)) {
            free(d);
            return oom();
        }
        d->struct_size = (uint32_t)sizeof *d;
        d->func = PLX_ACT_HARD_SWISH;
        free(l->desc);
        l->desc = d;
        l->op = PLX_OP_ACTIVATION;
        l->inputs[0] = x;
        l->input_count = 1;
        drop(w, h_index);
        drop(w, k_index);
        drop(w, a_index);
        *changed = true;
        return NULL;
    }
    return NULL;
}

/* Whether input `input` of l is a float32 constant of one element within
 * a few ulps of v (exporters write 1/sqrt(2) and sqrt(2) rounded from
 * double in more than one way). */
static bool scalar_near(const rewriter *w, const plxi_layer *l, uint32_t input, float v) {
    const plxi_layer *c = source_layer(w, l, input);
    size_t n = 0;
    if ((l->op == PLX_OP_QUANTIZE || l->op == PLX_OP_DEQUANTIZE) &&
        ((const plx_quantize_desc *)l->desc)->block_size != 0) {
        return NULL; /* blocked: neither per tensor nor per channel */
    }
    if (!c || c->op != PLX_OP_CONSTANT || c->outputs[0].dtype != PLX_DTYPE_FLOAT32 ||
        c->outputs[0].quant.kind != PLX_QUANT_NONE ||
        !plx_tensor_info_element_count(&c->outputs[0], &n) || n != 1) {
        return false;
    }
    float got = *(const float *)plxi_constant_data(c);
    return fabsf(got - v) <= 1e-6f * fabsf(v);
}

/* The layer producing output 0 read at input `k` of l, when only l reads
 * it; else UINT32_MAX. */
static uint32_t sole_source(const rewriter *w, const plxi_layer *l, uint32_t k) {
    if (k >= l->input_count || l->inputs[k].slot != 0 || !w->layers[l->inputs[k].layer] ||
        readers(w, l->inputs[k].layer, 0, NULL) != 1) {
        return UINT32_MAX;
    }
    return l->inputs[k].layer;
}

static bool same_source(plxi_source a, plxi_source b) {
    return a.layer == b.layer && a.slot == b.slot;
}

/* e = erf(x / sqrt 2) + 1 (or erf(x * (1 / sqrt 2)) + 1), the layers under
 * `e_index` each read by the next alone: x into *x, the three layers into
 * chain[0 .. 3) (the add, the erf, the scaling). */
static bool gelu_erf_term(const rewriter *w, uint32_t e_index, plxi_source *x, uint32_t *chain) {
    const plxi_layer *add = w->layers[e_index];
    int ei = is_binary(add, PLX_BINARY_ADD) ? other_than_scalar(w, add, 1.0f) : -1;
    uint32_t erf_index = ei < 0 ? UINT32_MAX : sole_source(w, add, (uint32_t)ei);
    const plxi_layer *erf = erf_index == UINT32_MAX ? NULL : w->layers[erf_index];
    if (!erf || erf->op != PLX_OP_UNARY || erf->input_count != 1 ||
        ((const plx_unary_desc *)erf->desc)->func != PLX_UNARY_ERF) {
        return false;
    }
    uint32_t q_index = sole_source(w, erf, 0);
    const plxi_layer *q = q_index == UINT32_MAX ? NULL : w->layers[q_index];
    int xi = -1;
    if (is_binary(q, PLX_BINARY_DIV) && scalar_near(w, q, 1, 1.41421356f)) {
        xi = 0;
    } else if (is_binary(q, PLX_BINARY_MUL)) {
        xi = scalar_near(w, q, 1, 0.70710678f) ? 0 : scalar_near(w, q, 0, 0.70710678f) ? 1 : -1;
    }
    if (xi < 0) {
        return false;
    }
    *x = q->inputs[xi];
    chain[0] = e_index;
    chain[1] = erf_index;
    chain[2] = q_index;
    return true;
}

/* The exact GELU that exporters write out (PyTorch's nn.GELU, Hugging
 * Face's BERT-family models) as one gelu activation: one pass over the
 * tensor instead of five, and one oneDNN post-op. Matched at the last
 * product, in the two orders exporters use:
 *   (x * e) * 0.5   and   (x * 0.5) * e,   e = erf(x / sqrt 2) + 1,
 * every intermediate read by the next layer alone and x of the output's
 * info (no broadcasting). */
static plx_status fuse_gelu(rewriter *w, uint32_t index, bool *changed) {
    plxi_layer *l = w->layers[index];
    if (!is_binary(l, PLX_BINARY_MUL)) {
        return NULL;
    }
    uint32_t chain[4];
    plxi_source x;
    bool found = false;
    int pi = other_than_scalar(w, l, 0.5f);
    if (pi >= 0) { /* (x * e) * 0.5 */
        uint32_t p_index = sole_source(w, l, (uint32_t)pi);
        const plxi_layer *p = p_index == UINT32_MAX ? NULL : w->layers[p_index];
        for (uint32_t k = 0; !found && is_binary(p, PLX_BINARY_MUL) && k < 2; k++) {
            uint32_t e_index = sole_source(w, p, k);
            found = e_index != UINT32_MAX && gelu_erf_term(w, e_index, &x, chain) &&
                    same_source(x, p->inputs[1 - k]);
        }
        chain[3] = p_index;
    } else { /* (x * 0.5) * e */
        for (uint32_t k = 0; !found && k < 2; k++) {
            uint32_t h_index = sole_source(w, l, 1 - k), e_index = sole_source(w, l, k);
            const plxi_layer *h = h_index == UINT32_MAX ? NULL : w->layers[h_index];
            int xi = is_binary(h, PLX_BINARY_MUL) ? other_than_scalar(w, h, 0.5f) : -1;
            found = xi >= 0 && e_index != UINT32_MAX &&
                    gelu_erf_term(w, e_index, &x, chain) && same_source(x, h->inputs[xi]);
            chain[3] = h_index;
        }
    }
    if (!found || !same_info(&w->layers[x.layer]->outputs[x.slot], &l->outputs[0])) {
        return NULL;
    }
    plx_activation_desc *d = calloc(1, sizeof *d);
    if (!d) {
        return oom();
    }
    if (!plxi_layer_fuse(l, w->layers[chain[2]]) || !plxi_layer_fuse(l, w->layers[chain[1]]) ||
        !plxi_layer_fuse(l, w->layers[chain[0]]) || !plxi_layer_fuse(l, w->layers[chain[3]]) ||
        !plxi_optimizer_note(w->o, "fused '%s', '%s', '%s', '%s' and '%s' into a gelu",
                             w->layers[chain[2]]->name, w->layers[chain[1]]->name,
                             w->layers[chain[0]]->name, w->layers[chain[3]]->name, l->name)) {
        free(d);
        return oom();
    }
    d->struct_size = (uint32_t)sizeof *d;
    d->func = PLX_ACT_GELU; /* alpha 0: the exact (erf) form */
    free(l->desc);
    l->desc = d;
    l->op = PLX_OP_ACTIVATION;
    l->inputs[0] = x;
    l->input_count = 1;
    for (int i = 0; i < 4; i++) {
        drop(w, chain[i]);
    }
    *changed = true;
    return NULL;
}

static plx_status remove_identity(rewriter *w, uint32_t index, bool *changed) {
    plxi_layer *l = w->layers[index];
    plxi_layer *src = source_layer(w, l, 0);
    if (!is_identity(l, src) || output_would_skip_compute(w, index, src)) {
        return NULL;
    }
    if (!plxi_optimizer_note(w->o, "removed %s '%s', whose output equals its input",
                             plx_op_name(l->op), l->name)) {
        return oom();
    }
    redirect(w, (plxi_source){index, 0}, l->inputs[0]);
    drop(w, index);
    *changed = true;
    return NULL;
}

/* ---- dequantize -> conv/matmul -> quantize as one quantized layer ------ */

/* The float32 data of a constant with 1 or `per` values (per > 0), or NULL. */
static const float *const_scales(const rewriter *w, const plxi_layer *l, uint32_t input,
                                 int64_t per, size_t *out_count) {
    const plxi_layer *c = source_layer(w, l, input);
    size_t n = 0;
    if ((l->op == PLX_OP_QUANTIZE || l->op == PLX_OP_DEQUANTIZE) &&
        ((const plx_quantize_desc *)l->desc)->block_size != 0) {
        return NULL; /* blocked: neither per tensor nor per channel */
    }
    if (!c || c->op != PLX_OP_CONSTANT || c->outputs[0].dtype != PLX_DTYPE_FLOAT32 ||
        !plx_tensor_info_element_count(&c->outputs[0], &n) || c->outputs[0].rank > 1 ||
        (n != 1 && (int64_t)n != per)) {
        return NULL;
    }
    const float *v = plxi_constant_data(c);
    for (size_t i = 0; v && i < n; i++) {
        if (!(v[i] > 0.0f) || !isfinite(v[i])) {
            return NULL;
        }
    }
    *out_count = n;
    return v;
}

/* The zero points of a (de)quantize: its constant input 2 of `dtype` with
 * `count` values, or 0 when absent. false when not constant. */
static bool const_zero_points(const rewriter *w, const plxi_layer *l, plx_dtype dtype,
                              size_t count, int32_t *out) {
    if (l->input_count < 3) {
        memset(out, 0, count * sizeof *out);
        return true;
    }
    const plxi_layer *c = source_layer(w, l, 2);
    size_t n = 0;
    if (!c || c->op != PLX_OP_CONSTANT || c->outputs[0].dtype != dtype ||
        !plx_tensor_info_element_count(&c->outputs[0], &n) || (n != 1 && n != count)) {
        return false;
    }
    const void *d = plxi_constant_data(c);
    for (size_t i = 0; i < count; i++) {
        size_t k = n == 1 ? 0 : i;
        out[i] = dtype == PLX_DTYPE_INT8 ? ((const int8_t *)d)[k] : ((const uint8_t *)d)[k];
    }
    return true;
}

static bool is_q8(plx_dtype d) {
    return d == PLX_DTYPE_INT8 || d == PLX_DTYPE_UINT8;
}

/* A per-tensor (de)quantize with constant parameters: scale and zero
 * point into *q. */
static bool per_tensor_params(const rewriter *w, const plxi_layer *l, plx_dtype q8,
                              plx_quant_params *q) {
    size_t n;
    const float *scale = const_scales(w, l, 1, 1, &n);
    int32_t zp;
    if (!scale || !const_zero_points(w, l, q8, 1, &zp)) {
        return false;
    }
    memset(q, 0, sizeof *q);
    q->kind = PLX_QUANT_PER_TENSOR;
    q->scale = scale[0];
    q->zero_point = zp;
    return true;
}

static bool same_quant(const plx_quant_params *a, const plx_quant_params *b) {
    return a->kind == b->kind && a->kind == PLX_QUANT_PER_TENSOR && a->scale == b->scale &&
           a->zero_point == b->zero_point;
}

/* What fold_qdq found around a conv or matmul. */
typedef struct qdq_match {
    plxi_layer *dx, *dw, *db, *q; /* dequantize of X, W, B; the quantize after */
    uint32_t q_index;
    plxi_source x;                /* the quantized X */
    plxi_layer *wl, *bl;          /* the int8 weights, the int32 bias (or NULL) */
    plx_quant_params xq, yq;
    plx_quant_params wq;          /* per-axis arrays in scales/zps below */
    float *w_scales;
    int32_t *w_zps;
} qdq_match;

/* The weights: a dequantize of an int8/uint8 constant along `axis` (per
 * tensor or per output channel, `m` of them). */
static bool match_weights(const rewriter *w, plxi_layer *l, uint32_t axis, int64_t m,
                          qdq_match *mt) {
    mt->dw = source_layer(w, l, 1);
    if (!mt->dw || mt->dw->op != PLX_OP_DEQUANTIZE) {
        return false;
    }
    mt->wl = source_layer(w, mt->dw, 0);
    if (!mt->wl || mt->wl->op != PLX_OP_CONSTANT || !is_q8(mt->wl->outputs[0].dtype) ||
        mt->wl->outputs[0].quant.kind != PLX_QUANT_NONE || m <= 0) {
        return false;
    }
    const plx_quantize_desc *d = mt->dw->desc;
    uint32_t rank = mt->wl->outputs[0].rank;
    int64_t ax = d->axis < 0 ? d->axis + (int64_t)rank : d->axis;
    size_t n;
    const float *scales = const_scales(w, mt->dw, 1, m, &n);
    if (!scales || (n > 1 && ax != (int64_t)axis)) {
        return false;
    }
    mt->w_scales = malloc((size_t)m * sizeof *mt->w_scales);
    mt->w_zps = malloc((size_t)m * sizeof *mt->w_zps);
    if (!mt->w_scales || !mt->w_zps ||
        !const_zero_points(w, mt->dw, mt->wl->outputs[0].dtype, n, mt->w_zps)) {
        return false;
    }
    for (int64_t j = 0; j < m; j++) {
        mt->w_scales[j] = scales[n == 1 ? 0 : j];
        mt->w_zps[j] = mt->w_zps[n == 1 ? 0 : j];
    }
    memset(&mt->wq, 0, sizeof mt->wq);
    if (n == 1) {
        mt->wq.kind = PLX_QUANT_PER_TENSOR;
        mt->wq.scale = scales[0];
        mt->wq.zero_point = mt->w_zps[0];
    } else {
        mt->wq.kind = PLX_QUANT_PER_AXIS;
        mt->wq.axis = (int32_t)axis;
        mt->wq.scales = mt->w_scales;
        mt->wq.zero_points = mt->w_zps;
    }
    return true;
}

/* The bias: a dequantize of an int32 constant whose scale is X's times
 * W's (per channel, to float rounding) and zero point 0. */
static bool match_bias(const rewriter *w, plxi_layer *l, int64_t m, qdq_match *mt) {
    mt->db = source_layer(w, l, 2);
    if (!mt->db || mt->db->op != PLX_OP_DEQUANTIZE) {
        return false;
    }
    mt->bl = source_layer(w, mt->db, 0);
    size_t n;
    const float *scales = const_scales(w, mt->db, 1, m, &n);
    int32_t zp = 0;
    if (!mt->bl || mt->bl->op != PLX_OP_CONSTANT || mt->bl->outputs[0].dtype != PLX_DTYPE_INT32 ||
        !scales || (mt->db->input_count > 2 && source_layer(w, mt->db, 2)->outputs[0].dtype !=
                                                   PLX_DTYPE_INT32)) {
        return false;
    }
    if (mt->db->input_count > 2) {
        const plxi_layer *z = source_layer(w, mt->db, 2);
        size_t zn = 0;
        if (z->op != PLX_OP_CONSTANT || !plx_tensor_info_element_count(&z->outputs[0], &zn)) {
            return false;
        }
        for (size_t i = 0; i < zn; i++) {
            zp |= ((const int32_t *)plxi_constant_data(z))[i];
        }
    }
    for (int64_t j = 0; zp == 0 && j < m; j++) {
        double want = (double)mt->xq.scale * mt->w_scales[j], got = scales[n == 1 ? 0 : j];
        if (fabs(got - want) > 1e-6 * want) {
            return false;
        }
    }
    return zp == 0;
}

/* Layers that move or select values, whose output has their input's
 * per-tensor quantization (core/src/shape_infer.c): between a dequantize
 * and a quantize of the same parameters they run on the int8 values. */
static bool moves_values(const plxi_layer *l) {
    switch (l->op) {
    case PLX_OP_RESHAPE:
    case PLX_OP_FLATTEN:
    case PLX_OP_TRANSPOSE:
    case PLX_OP_SQUEEZE:
    case PLX_OP_UNSQUEEZE:
    case PLX_OP_DEPTH_TO_SPACE:
    case PLX_OP_SPACE_TO_DEPTH:
    case PLX_OP_SLICE:
    case PLX_OP_TILE:
    case PLX_OP_EXPAND:
        return l->input_count == 1;
    case PLX_OP_RESIZE:
        return l->input_count == 1 &&
               ((const plx_resize_desc *)l->desc)->mode == PLX_RESIZE_NEAREST &&
               ((const plx_resize_desc *)l->desc)->coord != PLX_RESIZE_COORD_TF_CROP_AND_RESIZE;
    case PLX_OP_POOL:
        return ((const plx_pool_desc *)l->desc)->kind == PLX_POOL_MAX && l->output_count == 1;
    case PLX_OP_GLOBAL_POOL:
        return ((const plx_global_pool_desc *)l->desc)->kind == PLX_POOL_MAX;
    default:
        return false;
    }
}

/* A global or windowed average pool between a dequantize and a quantize,
 * of any parameters: the quantized average (plexus/ops.h). */
static bool averages_values(const plxi_layer *l) {
    return (l->op == PLX_OP_GLOBAL_POOL &&
            ((const plx_global_pool_desc *)l->desc)->kind == PLX_POOL_AVERAGE) ||
           (l->op == PLX_OP_POOL && l->output_count == 1 &&
            ((const plx_pool_desc *)l->desc)->kind == PLX_POOL_AVERAGE);
}

/* The one reader of layer `index`'s output that is a per-tensor 8-bit
 * quantize with constant parameters (set in *yq), or NULL. */
static plxi_layer *quantize_reader(const rewriter *w, uint32_t index, plx_quant_params *yq,
                                   uint32_t *q_index) {
    for (uint32_t i = index + 1; i < w->count; i++) {
        plxi_layer *r = w->layers[i];
        if (r && r->input_count > 0 && r->inputs[0].layer == index && r->op == PLX_OP_QUANTIZE &&
            is_q8(r->outputs[0].dtype) && per_tensor_params(w, r, r->outputs[0].dtype, yq)) {
            *q_index = i;
            return r;
        }
    }
    return NULL;
}

/* Whether one of the preferred backends takes the candidate layer;
 * *failed on an allocation failure. */
static bool preferred_take(const rewriter *w, const plxi_layer *cand, bool *failed) {
    *failed = false;
    for (size_t b = 0; b < w->pref_count && !*failed; b++) {
        char *reason = plxi_optimizer_ask(w->prefs[b], cand, w->layers, failed);
        bool taken = !reason && !*failed;
        free(reason);
        if (taken) {
            return true;
        }
    }
    return false;
}

/* A fold taken: `cand` replaces layer `index`, whose quantize (q_index)
 * it stands for, and the dequantizes in `dead` that nothing else reads
 * go. */
static void commit_qdq(rewriter *w, uint32_t index, plxi_layer *cand, uint32_t q_index,
                       plxi_layer *const *dead, size_t dead_count) {
    plxi_layer_free(w->layers[index]);
    w->layers[index] = cand;
    redirect(w, (plxi_source){q_index, 0}, (plxi_source){index, 0});
    drop(w, q_index);
    for (size_t k = 0; k < dead_count; k++) {
        for (uint32_t i = 0; dead[k] && i < w->count; i++) {
            if (w->layers[i] == dead[k] && readers(w, i, 0, NULL) == 0) {
                drop(w, i);
            }
        }
    }
}

/* dequantize(X) -> conv (dequantize(W), [dequantize(B)]) -> quantize, or
 * the same around a matmul or a gemm (alpha and beta 1, C the bias), all
 * parameters constant: one conv or matmul on
 * the quantized tensors (plexus/ops.h), when one of the preferred backends
 * takes it; else the float layers stay. Likewise a layer that moves values
 * (moves_values) between a dequantize and a quantize of the same
 * parameters runs on the 8-bit values. */
static plx_status fold_qdq(rewriter *w, uint32_t index, bool *changed) {
    plxi_layer *l = w->layers[index];
    bool averages = averages_values(l);
    bool moves = moves_values(l) || averages;
    const plx_gemm_desc *gd = l->op == PLX_OP_GEMM ? l->desc : NULL;
    if ((l->op != PLX_OP_CONV && l->op != PLX_OP_MATMUL && !moves &&
         !(gd && gd->alpha == 1.0f && gd->beta == 1.0f)) ||
        l->outputs[0].dtype != PLX_DTYPE_FLOAT32 || w->pref_count == 0) {
        return NULL;
    }
    bool conv = l->op == PLX_OP_CONV;
    qdq_match mt;
    memset(&mt, 0, sizeof mt);
    mt.dx = source_layer(w, l, 0);
    if (!mt.dx || mt.dx->op != PLX_OP_DEQUANTIZE) {
        return NULL;
    }
    mt.x = mt.dx->inputs[0];
    plx_tensor_info *xi = &w->layers[mt.x.layer]->outputs[mt.x.slot];
    const plx_tensor_info *bi = NULL;
    bool to_output;
    if (!is_q8(xi->dtype) || !per_tensor_params(w, mt.dx, xi->dtype, &mt.xq) ||
        (xi->quant.kind != PLX_QUANT_NONE && !same_quant(&xi->quant, &mt.xq)) ||
        readers(w, index, 0, &to_output) != 1 || to_output) {
        return NULL;
    }
    mt.q = quantize_reader(w, index, &mt.yq, &mt.q_index);
    if (moves && !averages &&
        (!mt.q || !same_quant(&mt.xq, &mt.yq) || mt.q->outputs[0].dtype != xi->dtype)) {
        return NULL;
    }
    if (averages && !mt.q) {
        return NULL;
    }
    const plxi_layer *wsrc = moves ? NULL : source_layer(w, l, 1);
    const plxi_layer *wconst = wsrc && wsrc->input_count ? source_layer(w, wsrc, 0) : NULL;
    uint32_t wrank = wconst ? wconst->outputs[0].rank : 0;
    /* the output channels: conv's W axis 0, matmul's B last, gemm's N */
    uint32_t axis = conv ? 0 : gd ? (gd->trans_b ? 0 : 1) : wrank - 1;
    int64_t m = wrank > 0 ? wconst->outputs[0].dims[axis] : 0;
    plx_status s = NULL;
    if (!moves && (!mt.q || wrank < 2 || !match_weights(w, l, axis, m, &mt) ||
                   ((conv || gd) && l->input_count > 2 && !match_bias(w, l, m, &mt)))) {
        goto out;
    }
    if (mt.bl) {
        bi = &mt.bl->outputs[0];
        if (bi->rank != 1 || bi->dims[0] != m) {
            goto out;
        }
    }
    /* Try it: the quantization on the tensors, a candidate layer asked of
     * each preferred backend. */
    plx_quant_params old_x = xi->quant;
    xi->quant = mt.xq;
    if (mt.wl) {
        mt.wl->outputs[0].quant = mt.wq;
    }
    plxi_layer *cand = NULL;
    if ((mt.wl && !plxi_layer_own_quant(mt.wl, &mt.wl->outputs[0])) ||
        !(cand = plxi_layer_clone(l))) {
        xi->quant = old_x;
        if (mt.wl) {
            mt.wl->outputs[0].quant.kind = PLX_QUANT_NONE;
        }
        s = oom();
        goto out;
    }
    cand->inputs[0] = mt.x;
    if (mt.dw) {
        cand->inputs[1] = mt.dw->inputs[0];
    }
    if (mt.db) {
        cand->inputs[2] = mt.db->inputs[0];
    }
    cand->outputs[0] = mt.q->outputs[0];
    cand->outputs[0].quant = mt.yq;
    bool failed;
    if (!preferred_take(w, cand, &failed)) {
        xi->quant = old_x;
        if (mt.wl) {
            mt.wl->outputs[0].quant.kind = PLX_QUANT_NONE;
        }
        plxi_layer_free(cand);
        s = failed ? oom() : NULL;
        goto out;
    }
    if (!plxi_layer_fuse(cand, mt.q) ||
        !plxi_optimizer_note(w->o, "quantized %s '%s': dequantize, %s and quantize '%s' run as "
                             "one int8 layer", plx_op_name(l->op), l->name, plx_op_name(l->op),
                             mt.q->name)) {
        plxi_layer_free(cand);
        s = oom();
        goto out;
    }
    plxi_layer *dead[3] = {mt.dx, mt.dw, mt.db};
    commit_qdq(w, index, cand, mt.q_index, dead, 3);
    *changed = true;
out:
    free(mt.w_scales);
    free(mt.w_zps);
    return s;
}

/* dequantize(A), dequantize(B) -> add, sub or mul -> quantize, all
 * parameters per tensor and constant: the binary layer on the quantized
 * tensors (one pass, the same float arithmetic), when a preferred backend
 * takes it. */
static plx_status fold_qdq_binary(rewriter *w, uint32_t index, bool *changed) {
    plxi_layer *l = w->layers[index];
    if (l->op != PLX_OP_BINARY || l->input_count != 2 || w->pref_count == 0 ||
        l->outputs[0].dtype != PLX_DTYPE_FLOAT32) {
        return NULL;
    }
    plx_binary_func f = ((const plx_binary_desc *)l->desc)->func;
    bool to_output;
    if ((f != PLX_BINARY_ADD && f != PLX_BINARY_SUB && f != PLX_BINARY_MUL) ||
        readers(w, index, 0, &to_output) != 1 || to_output) {
        return NULL;
    }
    plxi_layer *dq[2];
    plxi_source src[2];
    plx_tensor_info *info[2];
    plx_quant_params q[2], yq;
    for (int k = 0; k < 2; k++) {
        dq[k] = source_layer(w, l, (uint32_t)k);
        if (!dq[k] || dq[k]->op != PLX_OP_DEQUANTIZE) {
            return NULL;
        }
        src[k] = dq[k]->inputs[0];
        info[k] = &w->layers[src[k].layer]->outputs[src[k].slot];
        if (!is_q8(info[k]->dtype) || !per_tensor_params(w, dq[k], info[k]->dtype, &q[k]) ||
            (info[k]->quant.kind != PLX_QUANT_NONE && !same_quant(&info[k]->quant, &q[k]))) {
            return NULL;
        }
    }
    if (info[0] == info[1] && !same_quant(&q[0], &q[1])) {
        return NULL; /* one tensor read with two quantizations */
    }
    uint32_t q_index = 0;
    plxi_layer *qy = quantize_reader(w, index, &yq, &q_index);
    if (!qy) {
        return NULL;
    }
    plx_quant_params old[2] = {info[0]->quant, info[1]->quant};
    info[0]->quant = q[0];
    info[1]->quant = q[1];
    plxi_layer *cand = plxi_layer_clone(l);
    if (!cand) {
        info[0]->quant = old[0];
        info[1]->quant = old[1];
        return oom();
    }
    cand->inputs[0] = src[0];
    cand->inputs[1] = src[1];
    cand->outputs[0] = qy->outputs[0];
    cand->outputs[0].quant = yq;
    bool failed;
    bool taken = preferred_take(w, cand, &failed);
    if (!taken || !plxi_layer_fuse(cand, qy) ||
        !plxi_optimizer_note(w->o, "quantized binary '%s': dequantize, %s and quantize "
                                       "'%s' run as one int8 layer", l->name,
                                       plx_binary_func_name(f), qy->name)) {
        info[1]->quant = old[1];
        info[0]->quant = old[0];
        plxi_layer_free(cand);
        return failed || taken ? oom() : NULL;
    }
    commit_qdq(w, index, cand, q_index, dq, 2);
    *changed = true;
    return NULL;
}

/* dequantize(X0), .., dequantize(Xn-1) -> concat -> quantize, all
 * parameters per tensor and constant, whatever they are: the concat on the
 * 8-bit tensors with the quantize's dtype and parameters (plexus/ops.h),
 * which copies the inputs that have them and requantizes the others as it
 * copies (the values dequantize, concat and quantize give, ONNX Runtime's
 * QLinearConcat), when a preferred backend takes it. One layer rather than
 * a requantize layer per differing input: the optimiser adds no layers,
 * and each byte is read and written once. */
static plx_status fold_qdq_concat(rewriter *w, uint32_t index, bool *changed) {
    plxi_layer *l = w->layers[index];
    bool to_output;
    if (l->op != PLX_OP_CONCAT || l->input_count == 0 || w->pref_count == 0 ||
        l->outputs[0].dtype != PLX_DTYPE_FLOAT32 || readers(w, index, 0, &to_output) != 1 ||
        to_output) {
        return NULL;
    }
    uint32_t n = l->input_count;
    plxi_layer **dq = calloc(n, sizeof *dq);
    plx_quant_params *q = calloc(n, sizeof *q), *old = calloc(n, sizeof *old);
    plx_status s = NULL;
    plxi_layer *cand = NULL;
    if (!dq || !q || !old) {
        s = oom();
        goto out;
    }
    for (uint32_t k = 0; k < n; k++) {
        dq[k] = source_layer(w, l, k);
        if (!dq[k] || dq[k]->op != PLX_OP_DEQUANTIZE) {
            goto out;
        }
        plxi_source src = dq[k]->inputs[0];
        const plx_tensor_info *info = &w->layers[src.layer]->outputs[src.slot];
        if (!is_q8(info->dtype) || !per_tensor_params(w, dq[k], info->dtype, &q[k]) ||
            (info->quant.kind != PLX_QUANT_NONE && !same_quant(&info->quant, &q[k]))) {
            goto out;
        }
        /* one tensor read with two quantizations */
        for (uint32_t j = 0; j < k; j++) {
            if (same_source(dq[j]->inputs[0], src) && !same_quant(&q[j], &q[k])) {
                goto out;
            }
        }
    }
    plx_quant_params yq;
    uint32_t q_index = 0;
    plxi_layer *qy = quantize_reader(w, index, &yq, &q_index);
    if (!qy) {
        goto out;
    }
    for (uint32_t k = 0; k < n; k++) {
        plxi_source src = dq[k]->inputs[0];
        plx_tensor_info *info = &w->layers[src.layer]->outputs[src.slot];
        old[k] = info->quant;
        info->quant = q[k];
    }
    if (!(cand = plxi_layer_clone(l))) {
        s = oom();
        goto restore;
    }
    for (uint32_t k = 0; k < n; k++) {
        cand->inputs[k] = dq[k]->inputs[0];
    }
    cand->outputs[0] = qy->outputs[0];
    cand->outputs[0].quant = yq;
    bool failed;
    bool taken = preferred_take(w, cand, &failed);
    if (!taken || !plxi_layer_fuse(cand, qy) ||
        !plxi_optimizer_note(w->o, "quantized concat '%s': %u dequantizes, concat and "
                                       "quantize '%s' run as one int8 layer", l->name,
                                       (unsigned)n, qy->name)) {
        s = failed || taken ? oom() : NULL;
        goto restore;
    }
    commit_qdq(w, index, cand, q_index, dq, n);
    cand = NULL;
    *changed = true;
    goto out;
restore:
    for (uint32_t k = n; k-- > 0;) {
        plxi_source src = dq[k]->inputs[0];
        w->layers[src.layer]->outputs[src.slot].quant = old[k];
    }
out:
    plxi_layer_free(cand);
    free(dq);
    free(q);
    free(old);
    return s;
}

/* ---- 8-bit tables ------------------------------------------------------ */

/* Whether c gives a float32 scalar known before the run: a constant, or
 * the dequantize of constants (a QDQ or QOperator model's quantized
 * scalar operand, the 3 of a hard-swish, say). */
static bool scalar_operand(const rewriter *w, const plxi_layer *c) {
    size_t n = 0;
    if (!c || c->output_count != 1 || c->outputs[0].dtype != PLX_DTYPE_FLOAT32 ||
        !plx_tensor_info_element_count(&c->outputs[0], &n) || n != 1) {
        return false;
    }
    if (c->op == PLX_OP_CONSTANT) {
        return true;
    }
    bool all_constant = c->op == PLX_OP_DEQUANTIZE;
    for (uint32_t k = 0; all_constant && k < c->input_count; k++) {
        const plxi_layer *in = source_layer(w, c, k);
        all_constant = in && in->op == PLX_OP_CONSTANT;
    }
    return all_constant;
}

/* Whether l computes its float32 output elementwise from input `*var`
 * alone (found here), every other input a float32 scalar known before the
 * run (scalar_operand), and the output has that input's shape: an
 * activation, a float unary function, or add, sub, mul, div, pow, max or
 * min with a scalar. */
static bool elementwise_of_one(const rewriter *w, const plxi_layer *l, uint32_t *var) {
    if (l->output_count != 1 || l->outputs[0].dtype != PLX_DTYPE_FLOAT32 ||
        l->outputs[0].quant.kind != PLX_QUANT_NONE) {
        return false;
    }
    if (l->op == PLX_OP_ACTIVATION || l->op == PLX_OP_UNARY) {
        *var = 0;
        return l->input_count == 1;
    }
    if (l->op != PLX_OP_BINARY || l->input_count != 2) {
        return false;
    }
    plx_binary_func f = ((const plx_binary_desc *)l->desc)->func;
    if (f != PLX_BINARY_ADD && f != PLX_BINARY_SUB && f != PLX_BINARY_MUL &&
        f != PLX_BINARY_DIV && f != PLX_BINARY_POW && f != PLX_BINARY_MAX &&
        f != PLX_BINARY_MIN) {
        return false;
    }
    for (uint32_t k = 0; k < 2; k++) {
        const plx_tensor_info *v = &w->layers[l->inputs[k].layer]->outputs[l->inputs[k].slot];
        if (scalar_operand(w, source_layer(w, l, 1 - k)) &&
            !scalar_operand(w, source_layer(w, l, k)) && same_info(v, &l->outputs[0])) {
            *var = k;
            return true;
        }
    }
    return false;
}

/* Evaluates l (elementwise_of_one, or a dequantize or quantize) on the 256
 * values `in` (of `dtype`) in place of its input `var`, with the reference
 * kernels: *out (heap, 256 values of l's output dtype). */
static plxi_fold_result table_step(const rewriter *w, const plxi_layer *l, uint32_t var,
                                   plx_dtype dtype, const void *in, void **out) {
    plx_tensor_info infos[3]; /* a dequantize's or quantize's three at most */
    const void *consts[3];
    if (l->input_count > 3) {
        return PLXI_FOLD_SKIPPED;
    }
    plx_layer_view view;
    plxi_layer_view(l, w->layers, infos, consts, &view);
    /* a binary's other operand, when a dequantize of constants, by value */
    void *other = NULL;
    const plxi_layer *c = l->op == PLX_OP_BINARY ? source_layer(w, l, 1 - var) : NULL;
    if (c && c->op == PLX_OP_DEQUANTIZE) {
        plx_tensor_info cinfos[3];
        const void *cconsts[3];
        plx_layer_view cview;
        char cerr[128];
        if (c->input_count > 3) {
            return PLXI_FOLD_SKIPPED;
        }
        plxi_layer_view(c, w->layers, cinfos, cconsts, &cview);
        plxi_fold_result r = plxi_fold_layer(&cview, 4096, &other, cerr, sizeof cerr);
        if (r != PLXI_FOLDED) {
            return r;
        }
        consts[1 - var] = other;
    }
    /* the 256 values as the last dim of the input's and the output's rank */
    plx_tensor_info x = infos[var], y = l->outputs[0];
    x.dtype = dtype;
    memset(&x.quant, 0, sizeof x.quant);
    for (uint32_t d = 0; d < x.rank; d++) {
        x.dims[d] = d + 1 == x.rank ? 256 : 1;
    }
    for (uint32_t d = 0; d < y.rank; d++) {
        y.dims[d] = d + 1 == y.rank ? 256 : 1;
    }
    infos[var] = x;
    consts[var] = in;
    view.outputs = &y;
    char err[128];
    plxi_fold_result r = plxi_fold_layer(&view, 4096, out, err, sizeof err);
    free(other);
    return r;
}

/* dequantize -> elementwise layers of one input (elementwise_of_one) ->
 * quantize, all per tensor with constant parameters, the 8-bit tensor X
 * of rank >= 1: the quantize's 256 possible results, computed once with
 * the reference kernels, become a constant table, and the chain one gather
 * of it by X's raw bytes (8-bit indices, plexus/ops.h), which gives
 * exactly what the float layers give; when a preferred backend takes it.
 * The dequantize's slot holds the table. */
static plx_status fold_qdq_table(rewriter *w, uint32_t index, bool *changed) {
    plxi_layer *dq = w->layers[index];
    if (dq->op != PLX_OP_DEQUANTIZE || w->pref_count == 0 || dq->input_count < 2) {
        return NULL;
    }
    plxi_source xs = dq->inputs[0];
    const plx_tensor_info *xi = &w->layers[xs.layer]->outputs[xs.slot];
    plx_quant_params xq, yq;
    if (!is_q8(xi->dtype) || xi->rank == 0 || !per_tensor_params(w, dq, xi->dtype, &xq)) {
        return NULL;
    }
    /* the chain: each link the one reader of the one before */
    enum { MAX_CHAIN = 8 };
    uint32_t chain[MAX_CHAIN], vars[MAX_CHAIN], n = 0, at = index, q_index = 0;
    plxi_layer *q = NULL;
    while (!q) {
        bool to_output;
        if (readers(w, at, 0, &to_output) != 1 || to_output) {
            return NULL;
        }
        uint32_t next = PLXI_NO_LAYER, var = 0;
        for (uint32_t i = at + 1; i < w->count && next == PLXI_NO_LAYER; i++) {
            const plxi_layer *r = w->layers[i];
            for (uint32_t k = 0; r && k < r->input_count; k++) {
                if (r->inputs[k].layer == at && r->inputs[k].slot == 0) {
                    next = i;
                    var = k;
                }
            }
        }
        if (next == PLXI_NO_LAYER) {
            return NULL;
        }
        plxi_layer *r = w->layers[next];
        if (r->op == PLX_OP_QUANTIZE && n > 0 && var == 0 && is_q8(r->outputs[0].dtype) &&
            per_tensor_params(w, r, r->outputs[0].dtype, &yq)) {
            q = r;
            q_index = next;
            break;
        }
        uint32_t v;
        if (n == MAX_CHAIN || !elementwise_of_one(w, r, &v) || v != var) {
            return NULL;
        }
        chain[n] = next;
        vars[n++] = v;
        at = next;
    }
    if (q->outputs[0].rank != xi->rank ||
        memcmp(q->outputs[0].dims, xi->dims, xi->rank * sizeof xi->dims[0]) != 0) {
        return NULL;
    }
    /* the table: X's 256 raw bytes through every layer */
    uint8_t bytes[256];
    for (int i = 0; i < 256; i++) {
        bytes[i] = (uint8_t)i;
    }
    void *cur = NULL, *next = NULL;
    plxi_fold_result r = table_step(w, dq, 0, xi->dtype, bytes, &cur);
    for (uint32_t k = 0; r == PLXI_FOLDED && k < n; k++) {
        r = table_step(w, w->layers[chain[k]], vars[k], PLX_DTYPE_FLOAT32, cur, &next);
        free(cur);
        cur = next;
        next = NULL;
    }
    if (r == PLXI_FOLDED) {
        r = table_step(w, q, 0, PLX_DTYPE_FLOAT32, cur, &next);
        free(cur);
        cur = next;
    }
    if (r != PLXI_FOLDED) {
        free(cur);
        return r == PLXI_FOLD_NO_MEMORY ? oom() : NULL;
    }
    /* the table in the dequantize's slot, the gather in the quantize's */
    plxi_layer *table = plxi_layer_clone(dq), *gather = plxi_layer_clone(q);
    plx_constant_desc *cd = calloc(1, sizeof *cd);
    plx_axis_desc *ad = calloc(1, sizeof *ad);
    plxi_source *ins = calloc(2, sizeof *ins);
    if (!table || !gather || !cd || !ad || !ins) {
        plxi_layer_free(table);
        plxi_layer_free(gather);
        free(cd);
        free(ad);
        free(ins);
        free(cur);
        return oom();
    }
    cd->struct_size = (uint32_t)sizeof *cd;
    cd->data = cur;
    free(table->desc);
    free(table->inputs);
    table->desc = cd;
    table->owned_data = cur;
    table->inputs = NULL;
    table->input_count = 0;
    table->op = PLX_OP_CONSTANT;
    memset(&table->outputs[0], 0, sizeof table->outputs[0]);
    table->outputs[0].dtype = q->outputs[0].dtype;
    table->outputs[0].rank = 1;
    table->outputs[0].dims[0] = 256;
    table->outputs[0].quant = yq;
    *ad = (plx_axis_desc)PLX_AXIS_DESC_INIT(0);
    free(gather->desc);
    free(gather->inputs);
    gather->desc = ad;
    gather->op = PLX_OP_GATHER;
    ins[0] = (plxi_source){index, 0};
    ins[1] = xs;
    gather->inputs = ins;
    gather->input_count = 2;
    gather->outputs[0].quant = yq;
    w->layers[index] = table;
    bool failed;
    bool taken = preferred_take(w, gather, &failed);
    /* the table keeps the dequantize's name, the lookup the quantize's:
     * the lookup stands for the chain between them */
    bool fused = taken;
    for (uint32_t k = 0; fused && k < n; k++) {
        fused = plxi_layer_fuse(gather, w->layers[chain[k]]);
    }
    if (!fused || !plxi_optimizer_note(w->o, "quantized table '%s': dequantize '%s', %u "
                                       "elementwise layer%s and quantize run as one lookup of "
                                       "the 256 results", q->name, dq->name, (unsigned)n,
                                       n == 1 ? "" : "s")) {
        w->layers[index] = dq;
        plxi_layer_free(table);
        plxi_layer_free(gather);
        return failed || taken ? oom() : NULL; /* taken: a fuse or the note failed */
    }
    /* the scales and zero points of the dequantize and the quantize, and
     * each link's scalar, lose a reader */
    plxi_source params[4];
    for (uint32_t k = 0; k < 4; k++) {
        const plxi_layer *from = k < 2 ? dq : q;
        uint32_t slot = 1 + k % 2;
        params[k] = slot < from->input_count ? from->inputs[slot]
                                             : (plxi_source){PLXI_NO_LAYER, 0};
    }
    plxi_layer_free(dq);
    plxi_layer_free(w->layers[q_index]);
    w->layers[q_index] = gather;
    for (uint32_t k = 0; k < n; k++) {
        plxi_source other = {PLXI_NO_LAYER, 0};
        plxi_layer *l = w->layers[chain[k]];
        if (l->input_count == 2) {
            other = l->inputs[1 - vars[k]];
        }
        drop(w, chain[k]);
        if (other.layer != PLXI_NO_LAYER && w->layers[other.layer] &&
            readers(w, other.layer, 0, NULL) == 0) {
            drop(w, other.layer);
        }
    }
    for (uint32_t k = 0; k < 4; k++) {
        if (params[k].layer != PLXI_NO_LAYER && w->layers[params[k].layer] &&
            readers(w, params[k].layer, 0, NULL) == 0) {
            drop(w, params[k].layer);
        }
    }
    *changed = true;
    return NULL;
}

/* ---- gathers of dequantized tables -------------------------------------- */

/* gather(dequantize(T), I), T an 8-bit (or other quantized) constant and
 * the dequantize read by nothing else: dequantize(gather(T, I)), so that
 * only the rows gathered are dequantized at each run and not the whole
 * table (a quantized model's word embeddings: MiniLM's 30,522 x 384 table
 * took 2.5 ms of its 4.6). Per tensor, or per axis along an axis the
 * gather keeps (renumbered in the gather's output). The two layers trade
 * places: the dequantize's slot holds the gather and the gather's the
 * dequantize, which its readers then read; the caller sorts them. */
static plx_status gather_before_dequantize(rewriter *w, uint32_t g_index, bool *changed) {
    plxi_layer *gl = w->layers[g_index];
    if (gl->op != PLX_OP_GATHER || gl->input_count != 2 || gl->inputs[0].slot != 0) {
        return NULL;
    }
    uint32_t d_index = gl->inputs[0].layer;
    plxi_layer *dq = w->layers[d_index];
    const plxi_layer *table = dq ? source_layer(w, dq, 0) : NULL;
    bool to_output;
    if (!dq || dq->op != PLX_OP_DEQUANTIZE || !table || table->op != PLX_OP_CONSTANT ||
        readers(w, d_index, 0, &to_output) != 1 || to_output) {
        return NULL;
    }
    plx_quantize_desc *qd = dq->desc;
    const plx_tensor_info *ti = &table->outputs[0], *si = &source_layer(w, dq, 1)->outputs[0];
    size_t scales = 0;
    if (qd->block_size != 0 || !plx_tensor_info_element_count(si, &scales)) {
        return NULL;
    }
    uint32_t g_axis = 0, q_axis = 0, idx_rank = w->layers[gl->inputs[1].layer]
                                                   ->outputs[gl->inputs[1].slot].rank;
    if (!plx_axis_normalize(((const plx_axis_desc *)gl->desc)->axis, ti->rank, false, &g_axis)) {
        return NULL;
    }
    bool per_axis = si->rank == 1 && scales != 1;
    if (per_axis) {
        if (!plx_axis_normalize(qd->axis, ti->rank, false, &q_axis) || q_axis == g_axis) {
            return NULL;
        }
        q_axis = q_axis < g_axis ? q_axis : q_axis + idx_rank - 1;
    }
    if (!plxi_optimizer_note(w->o, "gather '%s' reads the quantized table before dequantize "
                             "'%s', which dequantizes the rows gathered only",
                             gl->name, dq->name)) {
        return oom();
    }
    plx_tensor_info gathered = gl->outputs[0];
    bool given = gl->output_given ? gl->output_given[0] : false;
    gl->inputs[0] = dq->inputs[0];
    gl->outputs[0].dtype = ti->dtype;
    memset(&gl->outputs[0].quant, 0, sizeof gl->outputs[0].quant);
    if (gl->output_given) {
        gl->output_given[0] = false;
    }
    dq->outputs[0] = gathered;
    if (dq->output_given) {
        dq->output_given[0] = given;
    }
    if (per_axis) {
        qd->axis = (int32_t)q_axis;
    }
    /* trade places: readers of g_index now read the dequantize, which
     * reads the gather in d_index */
    w->layers[d_index] = gl;
    w->layers[g_index] = dq;
    dq->inputs[0] = (plxi_source){d_index, 0};
    *changed = true;
    return NULL;
}

plx_status plxi_layers_sort(plxi_layer **layers, size_t *count) {
    size_t total = 0, all = *count;
    for (size_t i = 0; i < all; i++) {
        total += layers[i] != NULL;
    }
    uint32_t *position = malloc((all ? all : 1) * sizeof *position);
    plxi_layer **order = malloc((all ? all : 1) * sizeof *order);
    if (!position || !order) {
        free(position);
        free(order);
        return oom();
    }
    /* A stable topological sort: each sweep emits, in order, the layers
     * whose producers are all emitted (one sweep when nothing moved). */
    const uint32_t pending = UINT32_MAX;
    for (size_t i = 0; i < all; i++) {
        position[i] = pending;
    }
    size_t n = 0;
    while (n < total) {
        size_t before = n;
        for (size_t i = 0; i < all; i++) {
            plxi_layer *l = layers[i];
            if (!l || position[i] != pending) {
                continue;
            }
            bool ready = true;
            for (uint32_t k = 0; ready && k < l->input_count; k++) {
                ready = position[l->inputs[k].layer] != pending;
            }
            if (ready) {
                position[i] = (uint32_t)n;
                order[n++] = l;
            }
        }
        if (n == before) { /* a cycle: a bug of the rewrites */
            free(position);
            free(order);
            return plxi_status_create(PLX_INTERNAL, "rewriting the network made a cycle");
        }
    }
    for (size_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < order[i]->input_count; k++) {
            order[i]->inputs[k].layer = position[order[i]->inputs[k].layer];
        }
    }
    memcpy(layers, order, n * sizeof *order);
    *count = n;
    free(position);
    free(order);
    return NULL;
}

/* Drops unread constants, then renumbers the rest (plxi_layers_sort). */
static plx_status compact(rewriter *w) {
    for (size_t i = 0; i < w->count; i++) {
        plxi_layer *l = w->layers[i];
        if (l && l->op == PLX_OP_CONSTANT && readers(w, (uint32_t)i, 0, NULL) == 0) {
            drop(w, (uint32_t)i);
        }
    }
    return plxi_layers_sort(w->layers, &w->count);
}

plx_status plxi_rewrite(plx_optimized_network *o, plxi_layer **layers, size_t *count,
                        plxi_backend_record *const *prefs, size_t pref_count) {
    rewriter w = {o, layers, *count, prefs, pref_count};
    bool any = false, changed = true;
    plx_status s = NULL;
    /* Gathers of dequantized tables first: the gather moves before the
     * dequantize (the layers sorted again after). */
    bool moved = false;
    for (uint32_t i = 0; !s && i < w.count; i++) {
        if (w.layers[i] && w.layers[i]->op == PLX_OP_GATHER) {
            s = gather_before_dequantize(&w, i, &moved);
        }
    }
    if (!s && moved) {
        any = true;
        s = plxi_layers_sort(w.layers, &w.count);
    }
    /* Quantized layers, before constant folding dequantizes their
     * weights: the dequantize -> elementwise -> quantize chains as 8-bit
     * tables (an add of a quantized scalar among them, which a lookup
     * does in a tenth of a quantized add's time), then the products, the
     * binary layers of two tensors and the value moves. */
    for (uint32_t i = 0; !s && i < w.count; i++) {
        if (w.layers[i]) {
            s = fold_qdq_table(&w, i, &any);
        }
    }
    for (uint32_t i = 0; !s && i < w.count; i++) {
        if (w.layers[i]) {
            plx_op op = w.layers[i]->op;
            s = op == PLX_OP_BINARY   ? fold_qdq_binary(&w, i, &any)
                : op == PLX_OP_CONCAT ? fold_qdq_concat(&w, i, &any)
                                      : fold_qdq(&w, i, &any);
        }
    }
    /* To a fixed point: a removal can expose another. */
    while (!s && changed) {
        changed = false;
        for (uint32_t i = 0; !s && i < w.count; i++) {
            plxi_layer *l = w.layers[i];
            if (!l) {
                continue;
            }
            if (l->op == PLX_OP_BATCH_NORM) {
                s = fold_batch_norm(&w, i, &changed);
            } else if (l->op == PLX_OP_TRANSPOSE) {
                s = merge_transposes(&w, i, &changed);
            } else if (l->op == PLX_OP_BINARY) {
                s = fuse_hard_swish(&w, i, &changed);
                if (!s && w.layers[i] && w.layers[i]->op == PLX_OP_BINARY) {
                    s = fuse_gelu(&w, i, &changed);
                }
            }
            if (!s && w.layers[i]) {
                s = fold_into_constant(&w, i, &changed);
            }
            if (!s && w.layers[i]) {
                s = remove_identity(&w, i, &changed);
            }
            if (!s && w.layers[i]) {
                s = fold_constant_layer(&w, i, &changed);
            }
        }
        any = any || changed;
    }
    if (!s && any) {
        s = compact(&w);
    }
    *count = w.count;
    return s;
}
