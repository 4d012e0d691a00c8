/* Converters of ONNX's indexing by tensors: GatherElements, Scatter
 * (deprecated, opset 9-10) and ScatterElements, ScatterND, GatherND. Each
 * maps to the layer of the same name (plexus/ops.h); indices stay
 * run-time inputs. */
#include <string.h>

#include "onnx_internal.h"

plx_status onnxi_conv_gather_elements(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    plx_axis_desc d = PLX_AXIS_DESC_INIT(onnxi_attr_i32(n, "axis", 0));
    return onnxi_emit1(c, n, PLX_OP_GATHER_ELEMENTS, &d, n->in, 2);
}

/* ONNX's `reduction`: none, add and mul from opset 16, max and min from
 * 18 (Scatter and ScatterElements before 16 have none). */
static plx_status read_reduction(const onnxi_ctx *c, const onnxi_node *n,
                                 plx_scatter_reduction *out) {
    char buf[16];
    const char *s = onnxi_attr_s(n, "reduction", "none", buf, sizeof buf);
    static const struct {
        const char *name;
        plx_scatter_reduction red;
        int64_t since;
    } table[] = {{"none", PLX_SCATTER_NONE, 1}, {"add", PLX_SCATTER_ADD, 16},
                 {"mul", PLX_SCATTER_MUL, 16},  {"max", PLX_SCATTER_MAX, 18},
                 {"min", PLX_SCATTER_MIN, 18}};
    bool old_scatter = strcmp(n->proto->op_type, "Scatter") == 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(s, table[i].name) == 0) {
            if (c->opset < table[i].since || (old_scatter && table[i].red != PLX_SCATTER_NONE)) {
                return ONNXI_UNSUPPORTED("reduction='%s' does not exist in opset %lld", s,
                                         (long long)c->opset);
            }
            *out = table[i].red;
            return NULL;
        }
    }
    return ONNXI_UNSUPPORTED("reduction='%s'", s);
}

/* ScatterElements and the deprecated Scatter (the same operator). */
plx_status onnxi_conv_scatter_elements(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 3);
    plx_scatter_desc d = PLX_SCATTER_DESC_INIT;
    if (!st) {
        st = read_reduction(c, n, &d.reduction);
    }
    if (st) {
        return st;
    }
    d.axis = onnxi_attr_i32(n, "axis", 0);
    return onnxi_emit1(c, n, PLX_OP_SCATTER_ELEMENTS, &d, n->in, 3);
}

plx_status onnxi_conv_scatter_nd(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 3);
    plx_scatter_desc d = PLX_SCATTER_DESC_INIT;
    if (!st) {
        st = read_reduction(c, n, &d.reduction);
    }
    return st ? st : onnxi_emit1(c, n, PLX_OP_SCATTER_ND, &d, n->in, 3);
}

plx_status onnxi_conv_gather_nd(onnxi_ctx *c, onnxi_node *n) {
    plx_status st = onnxi_need_inputs(c, n, 2);
    if (st) {
        return st;
    }
    plx_gather_nd_desc d = PLX_GATHER_ND_DESC_INIT;
    d.batch_dims = onnxi_attr_i32(n, "batch_dims", 0);
    return onnxi_emit1(c, n, PLX_OP_GATHER_ND, &d, n->in, 2);
}
