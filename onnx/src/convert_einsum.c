/* The ONNX converter of Einsum, imported as a composition of existing
 * layers: the equation is parsed at import, a label repeated within one
 * operand takes a diagonal (transpose, reshape, gather), a label no other
 * operand or the output reads is summed (reduce), and the operands are
 * folded left to right, each pair as one batched matmul between
 * transposes and reshapes: the labels both read and the output keeps are
 * the batch, the ones both read and nothing later keeps the contraction. */
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* Labels: 'A'..'Z' are 0..25 and 'a'..'z' 26..51 (ASCII order, the order
 * of an implicit output), the dims an ellipsis covers 52.. (the first of
 * the broadcast ellipsis dims being 52). */
#define EIN_LETTERS 52
#define EIN_LABELS (EIN_LETTERS + PLX_MAX_RANK)
/* The longest equation read. */
#define EIN_MAX_EQUATION 1024

/* One operand while the equation is reduced: its value and one label per
 * dim. */
typedef struct ein_term {
    onnxi_value *v;
    uint32_t rank;
    uint8_t lab[PLX_MAX_RANK];
} ein_term;

static int letter_label(char ch) {
    if (ch >= 'A' && ch <= 'Z') {
        return ch - 'A';
    }
    if (ch >= 'a' && ch <= 'z') {
        return 26 + (ch - 'a');
    }
    return -1;
}

/* Parses one subscript (spaces already removed) into letter labels, -1
 * marking where the ellipsis stands. */
static plx_status parse_subscript(const onnxi_ctx *c, const onnxi_node *n, const char *s,
                                  size_t len, int *out, size_t *count, bool *ellipsis) {
    *count = 0;
    *ellipsis = false;
    for (size_t i = 0; i < len;) {
        if (s[i] == '.') {
            if (*ellipsis || len - i < 3 || s[i + 1] != '.' || s[i + 2] != '.') {
                return onnxi_invalid(c, n, "equation: a '.' that is not one '...' per operand");
            }
            *ellipsis = true;
            if (*count >= PLX_MAX_RANK + 1) {
                return onnxi_invalid(c, n, "equation: a subscript has more than %d labels",
                                     PLX_MAX_RANK);
            }
            out[(*count)++] = -1;
            i += 3;
            continue;
        }
        int l = letter_label(s[i]);
        if (l < 0) {
            return onnxi_invalid(c, n, "equation: '%c' is not a letter, ',', '->' or '...'", s[i]);
        }
        if (*count >= PLX_MAX_RANK + 1) {
            return onnxi_invalid(c, n, "equation: a subscript has more than %d labels",
                                 PLX_MAX_RANK);
        }
        out[(*count)++] = l;
        i++;
    }
    return NULL;
}

/* Emits a transpose of t into the label order `order` (a permutation of
 * t's labels); nothing when it is the identity. */
static plx_status transpose_to(onnxi_ctx *c, onnxi_node *n, ein_term *t, const uint8_t *order) {
    plx_transpose_desc d = PLX_TRANSPOSE_DESC_INIT;
    bool identity = true;
    bool used[PLX_MAX_RANK] = {false};
    for (uint32_t i = 0; i < t->rank; i++) {
        uint32_t j = 0;
        while (j < t->rank && (used[j] || t->lab[j] != order[i])) {
            j++;
        }
        used[j] = true; /* order is a permutation of t->lab */
        d.perm[i] = j;
        identity = identity && j == i;
    }
    if (identity) {
        return NULL;
    }
    d.perm_count = t->rank;
    onnxi_value *out;
    plx_status st = onnxi_emit(c, n, PLX_OP_TRANSPOSE, &d, &t->v, 1, 1, &out);
    if (st) {
        return st;
    }
    t->v = out;
    memcpy(t->lab, order, t->rank);
    return NULL;
}

/* Emits a reshape of v to dims; nothing when the shape is already that. */
static plx_status reshape(onnxi_ctx *c, onnxi_node *n, onnxi_value **v, uint32_t rank,
                          const int64_t *dims) {
    bool same = (*v)->info.rank == rank;
    for (uint32_t i = 0; same && i < rank; i++) {
        same = (*v)->info.dims[i] == dims[i];
    }
    if (same) {
        return NULL;
    }
    plx_tensor_info shape = (*v)->info;
    shape.rank = rank;
    for (uint32_t i = 0; i < PLX_MAX_RANK; i++) {
        shape.dims[i] = i < rank ? dims[i] : 0;
    }
    return onnxi_reshape_to(c, n, *v, &shape, v);
}

/* Sums t over the dims whose labels are marked in `drop` (kept as size 1
 * when keepdims). */
static plx_status reduce_sum(onnxi_ctx *c, onnxi_node *n, ein_term *t, const bool *drop,
                             bool keepdims) {
    plx_reduce_desc d = PLX_REDUCE_DESC_INIT(PLX_REDUCE_SUM);
    d.keepdims = keepdims;
    uint32_t r = 0;
    for (uint32_t i = 0; i < t->rank; i++) {
        if (drop[t->lab[i]]) {
            d.axes[d.axis_count++] = (int32_t)i;
        } else {
            t->lab[r++] = t->lab[i];
        }
    }
    if (d.axis_count == 0) {
        return NULL;
    }
    onnxi_value *out;
    plx_status st = onnxi_emit(c, n, PLX_OP_REDUCE, &d, &t->v, 1, 1, &out);
    if (st) {
        return st;
    }
    t->v = out;
    if (keepdims) {
        return NULL; /* the labels stay, their dims now 1 */
    }
    t->rank = r;
    return NULL;
}

/* Replaces the first label t reads twice by its diagonal: the two dims
 * moved last and merged into one of size s * s, whose elements 0, s + 1,
 * 2 (s + 1), ... a gather takes. *found false: no label repeats. */
static plx_status take_diagonal(onnxi_ctx *c, onnxi_node *n, ein_term *t, bool *found) {
    *found = false;
    uint32_t p = 0, q = 0;
    for (uint32_t i = 0; i < t->rank && !*found; i++) {
        for (uint32_t j = i + 1; j < t->rank && !*found; j++) {
            if (t->lab[i] == t->lab[j]) {
                p = i, q = j, *found = true;
            }
        }
    }
    if (!*found) {
        return NULL;
    }
    int64_t s = t->v->info.dims[p];
    if (t->v->info.dims[q] != s) {
        return onnxi_invalid(c, n, "equation: a label repeated in one operand has dims %lld "
                             "and %lld", (long long)s, (long long)t->v->info.dims[q]);
    }
    uint8_t lab = t->lab[p], order[PLX_MAX_RANK];
    uint32_t r = 0;
    for (uint32_t i = 0; i < t->rank; i++) {
        if (i != p && i != q) {
            order[r++] = t->lab[i];
        }
    }
    order[r] = lab;
    order[r + 1] = lab;
    plx_status st = transpose_to(c, n, t, order);
    if (st) {
        return st;
    }
    int64_t dims[PLX_MAX_RANK];
    for (uint32_t i = 0; i < r; i++) {
        dims[i] = t->v->info.dims[i];
    }
    if (s > INT64_MAX / (s > 0 ? s : 1)) {
        return onnxi_invalid(c, n, "a diagonal of size %lld overflows", (long long)s);
    }
    dims[r] = s * s;
    if ((st = reshape(c, n, &t->v, r + 1, dims))) {
        return st;
    }
    plx_tensor_info ii;
    memset(&ii, 0, sizeof ii);
    ii.dtype = PLX_DTYPE_INT64;
    ii.rank = 1;
    ii.dims[0] = s;
    int64_t *idx;
    if ((st = onnxi_alloc_const(c, n, &ii, (void **)&idx))) {
        return st;
    }
    for (int64_t i = 0; i < s; i++) {
        idx[i] = i * (s + 1);
    }
    onnxi_value *iv, *out;
    if ((st = onnxi_const_take(c, &ii, idx, &iv))) {
        return st;
    }
    plx_axis_desc d = PLX_AXIS_DESC_INIT((int32_t)r);
    onnxi_value *ins[2] = {t->v, iv};
    if ((st = onnxi_emit(c, n, PLX_OP_GATHER, &d, ins, 2, 1, &out))) {
        return st;
    }
    t->v = out;
    t->rank = r + 1;
    memcpy(t->lab, order, r + 1);
    return NULL;
}

static bool has_label(const ein_term *t, uint8_t l) {
    for (uint32_t i = 0; i < t->rank; i++) {
        if (t->lab[i] == l) {
            return true;
        }
    }
    return false;
}

static int64_t label_dim(const ein_term *t, uint8_t l) {
    for (uint32_t i = 0; i < t->rank; i++) {
        if (t->lab[i] == l) {
            return t->v->info.dims[i];
        }
    }
    return 1;
}

/* Folds b into a: the labels both read that `keep` marks are the batch of
 * one matmul, the others both read its contraction; the result reads the
 * batch, then a's other labels, then b's. */
static plx_status combine(onnxi_ctx *c, onnxi_node *n, ein_term *a, ein_term *b,
                          const bool *keep) {
    plx_status st;
    /* a label summed away that one side broadcasts (dim 1): sum the other
     * side over it first, so that both have dim 1 there */
    bool drop_a[EIN_LABELS] = {false}, drop_b[EIN_LABELS] = {false};
    bool any_a = false, any_b = false;
    for (uint32_t i = 0; i < a->rank; i++) {
        uint8_t l = a->lab[i];
        if (keep[l] || !has_label(b, l)) {
            continue;
        }
        int64_t da = a->v->info.dims[i], db = label_dim(b, l);
        if (da != db && db == 1) {
            drop_a[l] = any_a = true;
        } else if (da != db && da == 1) {
            drop_b[l] = any_b = true;
        }
    }
    if ((any_a && (st = reduce_sum(c, n, a, drop_a, true))) ||
        (any_b && (st = reduce_sum(c, n, b, drop_b, true)))) {
        return st;
    }
    uint8_t batch[PLX_MAX_RANK], aonly[PLX_MAX_RANK], bonly[PLX_MAX_RANK], con[PLX_MAX_RANK];
    uint32_t nb = 0, na = 0, nn = 0, nk = 0;
    for (uint32_t i = 0; i < a->rank; i++) {
        uint8_t l = a->lab[i];
        if (!has_label(b, l)) {
            aonly[na++] = l;
        } else if (keep[l]) {
            batch[nb++] = l;
        } else {
            con[nk++] = l;
        }
    }
    for (uint32_t i = 0; i < b->rank; i++) {
        if (!has_label(a, b->lab[i])) {
            bonly[nn++] = b->lab[i];
        }
    }
    uint8_t order[PLX_MAX_RANK];
    memcpy(order, batch, nb);
    memcpy(order + nb, aonly, na);
    memcpy(order + nb + na, con, nk);
    if ((st = transpose_to(c, n, a, order))) {
        return st;
    }
    memcpy(order, batch, nb);
    memcpy(order + nb, con, nk);
    memcpy(order + nb + nk, bonly, nn);
    if ((st = transpose_to(c, n, b, order))) {
        return st;
    }
    /* the batch as one dim when neither side broadcasts, else one dim per
     * label (matmul broadcasts them) */
    bool same = true;
    int64_t bdims[PLX_MAX_RANK], bsize = 1;
    for (uint32_t i = 0; i < nb; i++) {
        int64_t da = a->v->info.dims[i], db = b->v->info.dims[i];
        same = same && da == db;
        bdims[i] = da > db ? da : db;
        bsize *= bdims[i];
    }
    int64_t m = 1, k = 1, nc = 1;
    for (uint32_t i = 0; i < na; i++) {
        m *= a->v->info.dims[nb + i];
    }
    for (uint32_t i = 0; i < nk; i++) {
        k *= a->v->info.dims[nb + na + i];
    }
    for (uint32_t i = 0; i < nn; i++) {
        nc *= b->v->info.dims[nb + nk + i];
    }
    /* the result's dims, read before the reshapes */
    ein_term r;
    r.rank = nb + na + nn;
    if (r.rank > PLX_MAX_RANK) {
        return ONNXI_UNSUPPORTED("Einsum with an intermediate result of rank %u (at most %d)",
                                 r.rank, PLX_MAX_RANK);
    }
    int64_t rd[PLX_MAX_RANK];
    for (uint32_t i = 0; i < nb; i++) {
        rd[i] = bdims[i];
        r.lab[i] = batch[i];
    }
    for (uint32_t i = 0; i < na; i++) {
        rd[nb + i] = a->v->info.dims[nb + i];
        r.lab[nb + i] = aonly[i];
    }
    for (uint32_t i = 0; i < nn; i++) {
        rd[nb + na + i] = b->v->info.dims[nb + nk + i];
        r.lab[nb + na + i] = bonly[i];
    }
    uint32_t br = same ? (nb > 0 ? 1 : 0) : nb;
    if (br + 2 > PLX_MAX_RANK) {
        return ONNXI_UNSUPPORTED("Einsum with %u broadcast batch labels (at most %d)", nb,
                                 PLX_MAX_RANK - 2);
    }
    int64_t da[PLX_MAX_RANK], db[PLX_MAX_RANK];
    for (uint32_t i = 0; i < br; i++) {
        da[i] = same ? bsize : a->v->info.dims[i];
        db[i] = same ? bsize : b->v->info.dims[i];
    }
    da[br] = m, da[br + 1] = k;
    db[br] = k, db[br + 1] = nc;
    if ((st = reshape(c, n, &a->v, br + 2, da)) || (st = reshape(c, n, &b->v, br + 2, db))) {
        return st;
    }
    onnxi_value *ins[2] = {a->v, b->v}, *y;
    if ((st = onnxi_emit(c, n, PLX_OP_MATMUL, NULL, ins, 2, 1, &y))) {
        return st;
    }
    if ((st = reshape(c, n, &y, r.rank, rd))) {
        return st;
    }
    r.v = y;
    *a = r;
    return NULL;
}

/* Einsum (12): the equation's subscripts, one per input, "->" and the
 * output's (implicit: the labels read once, in ASCII order, after the
 * ellipsis dims); an ellipsis covers an operand's remaining dims, aligned
 * right across operands and broadcasting like numpy's. A label the
 * output lacks is summed; a label repeated in one operand takes its
 * diagonal. */
plx_status onnxi_conv_einsum(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_single_output(n, "Einsum has one output");
    if (st) {
        return st;
    }
    char raw[EIN_MAX_EQUATION + 2], eq[EIN_MAX_EQUATION + 2];
    const char *e = onnxi_attr_s(n, "equation", NULL, raw, sizeof raw);
    if (!e) {
        return onnxi_invalid(c, n, "the equation attribute is missing");
    }
    size_t len = 0;
    for (const char *p = e; *p; p++) {
        if (*p != ' ') {
            eq[len++] = *p;
        }
    }
    eq[len] = '\0';
    if (len > EIN_MAX_EQUATION) {
        return ONNXI_UNSUPPORTED("an equation longer than %d characters", EIN_MAX_EQUATION);
    }
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : len;
    /* the operands' subscripts */
    ein_term t[16];
    size_t nt = 0;
    int sub[16][PLX_MAX_RANK + 1];
    size_t sub_count[16];
    bool sub_ell[16];
    uint32_t ell_rank = 0;
    for (size_t start = 0;;) {
        size_t end = start;
        while (end < lhs_len && eq[end] != ',') {
            end++;
        }
        if (nt >= n->n_in || nt >= 16) {
            return onnxi_invalid(c, n, "equation: more subscripts than the %zu inputs", n->n_in);
        }
        if ((st = parse_subscript(c, n, eq + start, end - start, sub[nt], &sub_count[nt],
                                  &sub_ell[nt]))) {
            return st;
        }
        if (!n->in[nt]) {
            return onnxi_invalid(c, n, "input %zu is missing", nt);
        }
        uint32_t rank = n->in[nt]->info.rank;
        size_t letters = sub_count[nt] - (sub_ell[nt] ? 1 : 0);
        if (letters > rank || (!sub_ell[nt] && letters != rank)) {
            return onnxi_invalid(c, n, "equation: subscript %zu has %zu labels for an input of "
                                 "rank %u", nt, letters, rank);
        }
        if (sub_ell[nt] && rank - letters > ell_rank) {
            ell_rank = rank - (uint32_t)letters;
        }
        nt++;
        if (end >= lhs_len) {
            break;
        }
        start = end + 1;
    }
    if (nt != n->n_in) {
        return onnxi_invalid(c, n, "equation: %zu subscripts for %zu inputs", nt, n->n_in);
    }
    /* labels per dim, an ellipsis' dims aligned right */
    int64_t size[EIN_LABELS];
    unsigned uses[EIN_LABELS] = {0};
    for (size_t i = 0; i < EIN_LABELS; i++) {
        size[i] = -1;
    }
    for (size_t k = 0; k < nt; k++) {
        const plx_tensor_info *xi = &n->in[k]->info;
        uint32_t ell = xi->rank - (uint32_t)(sub_count[k] - (sub_ell[k] ? 1 : 0));
        t[k].v = n->in[k];
        t[k].rank = 0;
        for (size_t j = 0; j < sub_count[k]; j++) {
            if (sub[k][j] >= 0) {
                t[k].lab[t[k].rank++] = (uint8_t)sub[k][j];
                continue;
            }
            for (uint32_t q = 0; q < ell; q++) {
                t[k].lab[t[k].rank++] = (uint8_t)(EIN_LETTERS + ell_rank - ell + q);
            }
        }
        for (uint32_t d = 0; d < t[k].rank; d++) {
            uint8_t l = t[k].lab[d];
            int64_t dim = xi->dims[d];
            uses[l]++;
            if (size[l] < 0 || size[l] == 1) {
                size[l] = dim;
            } else if (dim != size[l] && dim != 1) {
                return onnxi_invalid(c, n, "equation: a label has dims %lld and %lld",
                                     (long long)size[l], (long long)dim);
            }
        }
    }
    /* the output's labels */
    uint8_t out[EIN_LABELS];
    uint32_t nout = 0;
    bool in_out[EIN_LABELS] = {false};
    if (arrow) {
        int osub[PLX_MAX_RANK + 1];
        size_t oc;
        bool oell;
        if ((st = parse_subscript(c, n, arrow + 2, len - lhs_len - 2, osub, &oc, &oell))) {
            return st;
        }
        for (size_t j = 0; j < oc; j++) {
            uint32_t from = osub[j] >= 0 ? (uint32_t)osub[j] : EIN_LETTERS;
            uint32_t to = osub[j] >= 0 ? from + 1 : EIN_LETTERS + ell_rank;
            for (uint32_t l = from; l < to; l++) {
                if (in_out[l] || uses[l] == 0 || nout >= PLX_MAX_RANK) {
                    return onnxi_invalid(c, n, "equation: an output label is repeated, not read "
                                         "by any input, or past rank %d", PLX_MAX_RANK);
                }
                in_out[l] = true;
                out[nout++] = (uint8_t)l;
            }
        }
    } else {
        for (uint32_t l = EIN_LETTERS; l < EIN_LETTERS + ell_rank; l++) {
            in_out[l] = true;
            out[nout++] = (uint8_t)l;
        }
        for (uint32_t l = 0; l < EIN_LETTERS; l++) {
            if (uses[l] == 1) {
                if (nout >= PLX_MAX_RANK) {
                    return onnxi_invalid(c, n, "equation: the output has more than %d labels",
                                         PLX_MAX_RANK);
                }
                in_out[l] = true;
                out[nout++] = (uint8_t)l;
            }
        }
    }
    /* each operand: diagonals, then the labels nothing else reads summed */
    for (size_t k = 0; k < nt; k++) {
        for (bool found = true; found;) {
            if ((st = take_diagonal(c, n, &t[k], &found))) {
                return st;
            }
        }
        bool drop[EIN_LABELS] = {false};
        for (uint32_t d = 0; d < t[k].rank; d++) {
            uint8_t l = t[k].lab[d];
            bool elsewhere = in_out[l];
            for (size_t o = 0; o < nt && !elsewhere; o++) {
                elsewhere = o != k && has_label(&t[o], l);
            }
            drop[l] = !elsewhere;
        }
        if ((st = reduce_sum(c, n, &t[k], drop, false))) {
            return st;
        }
    }
    /* fold left to right; a label stays while the output or a later
     * operand reads it */
    for (size_t k = 1; k < nt; k++) {
        bool keep[EIN_LABELS];
        memcpy(keep, in_out, sizeof keep);
        for (size_t o = k + 1; o < nt; o++) {
            for (uint32_t d = 0; d < t[o].rank; d++) {
                keep[t[o].lab[d]] = true;
            }
        }
        if ((st = combine(c, n, &t[0], &t[k], keep))) {
            return st;
        }
    }
    bool drop[EIN_LABELS];
    for (size_t l = 0; l < EIN_LABELS; l++) {
        drop[l] = !in_out[l];
    }
    if ((st = reduce_sum(c, n, &t[0], drop, false)) || (st = transpose_to(c, n, &t[0], out))) {
        return st;
    }
    return onnxi_bind_out(c, n, 0, t[0].v);
}
