/* The ONNX converters for the bit-level and test operators that map to
 * functions of existing Plexus operators: IsInf (unary is_inf,
 * is_pos_inf, is_neg_inf) and BitShift (binary shift_left, shift_right);
 * and LpPool's and GlobalLpPool's p (onnxi_lp_p, for convert_dense.c).
 * IsNaN, BitwiseNot, BitwiseAnd/Or/Xor and Shrink are rows of the tables
 * in convert_elementwise.c. */
#include <string.h>

#include "onnx_internal.h"

/* IsInf (10, 20): detect_positive and detect_negative (default 1) pick
 * is_inf, is_pos_inf or is_neg_inf; both 0 detects nothing: an all-false
 * result, computed as is_pos_inf(x) and is_neg_inf(x), so that it needs
 * no shape known at import. */
plx_status onnxi_conv_isinf(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 1);
    if (st) {
        return st;
    }
    bool pos = onnxi_attr_i(n, "detect_positive", 1) != 0;
    bool neg = onnxi_attr_i(n, "detect_negative", 1) != 0;
    if (pos || neg) {
        plx_unary_desc d = PLX_UNARY_DESC_INIT(pos && neg ? PLX_UNARY_IS_INF
                                               : pos      ? PLX_UNARY_IS_POS_INF
                                                          : PLX_UNARY_IS_NEG_INF);
        return onnxi_emit1(c, n, PLX_OP_UNARY, &d, n->in, 1);
    }
    onnxi_value *tests[2];
    for (int k = 0; k < 2; k++) {
        plx_unary_desc d = PLX_UNARY_DESC_INIT(k == 0 ? PLX_UNARY_IS_POS_INF : PLX_UNARY_IS_NEG_INF);
        if ((st = onnxi_emit(c, n, PLX_OP_UNARY, &d, n->in, 1, 1, &tests[k]))) {
            return st;
        }
    }
    plx_binary_desc both = PLX_BINARY_DESC_INIT(PLX_BINARY_AND);
    return onnxi_emit1(c, n, PLX_OP_BINARY, &both, tests, 2);
}

/* BitShift (11): direction "LEFT" or "RIGHT" (required). */
plx_status onnxi_conv_bitshift(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    char buf[16];
    const char *dir = onnxi_attr_s(n, "direction", NULL, buf, sizeof buf);
    if (!dir) {
        return onnxi_invalid(c, n, "the attribute direction (LEFT or RIGHT) is required");
    }
    bool left = strcmp(dir, "LEFT") == 0;
    if (!left && strcmp(dir, "RIGHT") != 0) {
        return onnxi_invalid(c, n, "direction '%s' is neither LEFT nor RIGHT", dir);
    }
    plx_binary_desc d = PLX_BINARY_DESC_INIT(left ? PLX_BINARY_SHIFT_LEFT : PLX_BINARY_SHIFT_RIGHT);
    return onnxi_emit1(c, n, PLX_OP_BINARY, &d, n->in, 2);
}

/* LpPool's and GlobalLpPool's p: an int (opset 2 on; Plexus imports
 * opset 7 and newer), default 2, at least 1. */
plx_status onnxi_lp_p(const onnxi_ctx *c, const onnxi_node *n, int64_t *p) {
    *p = onnxi_attr_i(n, "p", 2);
    if (*p < 1) {
        return onnxi_invalid(c, n, "p = %lld must be at least 1", (long long)*p);
    }
    return NULL;
}
