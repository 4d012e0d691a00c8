/* How deeply an ONNX file nests its messages, measured on the wire before
 * libprotobuf-c decodes it (onnx_internal.h, onnxi_check_nesting).
 *
 * libprotobuf-c decodes a nested message by recursion and has no depth
 * limit, so a file of a few kilobytes holding thousands of nested graph
 * attributes (Graph > Node > Attribute > Graph > ...) or nested types
 * (TypeProto > Sequence > TypeProto > ...) overflows the stack. Google's
 * protobuf stops at 100 nested messages by default (its recursion limit),
 * so no file deeper than that loads in ONNX's own tools or in ONNX
 * Runtime; the same limit here refuses nothing they accept.
 *
 * The walk follows only the fields of onnx.proto whose messages can nest
 * without bound (the table below); every other field is stepped over by
 * its length. It allocates nothing and recurses at most
 * ONNXI_MAX_NESTING levels. A file that is not valid protobuf is not
 * judged here: the walk stops where the wire format breaks, and the
 * decoder reports it. */
#include <stddef.h>
#include <stdint.h>

#include "onnx_internal.h"

typedef enum kind {
    K_NONE,
    K_MODEL,
    K_TRAINING,
    K_FUNCTION,
    K_GRAPH,
    K_NODE,
    K_ATTRIBUTE,
    K_VALUE_INFO,
    K_TYPE,
    K_TYPE_SEQUENCE, /* TypeProto.Sequence, .Optional: elem_type = 1 */
    K_TYPE_MAP,      /* TypeProto.Map: value_type = 2 */
} kind;

/* The message kind of field `field` of a `k` message, or K_NONE when it is
 * not one that can lead back to itself (field numbers: onnx.proto). */
static kind child_kind(kind k, uint64_t field) {
    switch (k) {
    case K_MODEL:
        return field == 7 ? K_GRAPH : field == 20 ? K_TRAINING : field == 25 ? K_FUNCTION : K_NONE;
    case K_TRAINING: /* initialization, algorithm */
        return field == 1 || field == 2 ? K_GRAPH : K_NONE;
    case K_FUNCTION:
        return field == 7 ? K_NODE : K_NONE;
    case K_GRAPH: /* node; input, output, value_info */
        return field == 1 ? K_NODE : field >= 11 && field <= 13 ? K_VALUE_INFO : K_NONE;
    case K_NODE:
        return field == 5 ? K_ATTRIBUTE : K_NONE;
    case K_ATTRIBUTE: /* g, graphs; tp, type_protos */
        return field == 6 || field == 11 ? K_GRAPH : field == 14 || field == 15 ? K_TYPE : K_NONE;
    case K_VALUE_INFO:
        return field == 2 ? K_TYPE : K_NONE;
    case K_TYPE: /* sequence_type, map_type, optional_type */
        return field == 4 || field == 9 ? K_TYPE_SEQUENCE : field == 5 ? K_TYPE_MAP : K_NONE;
    case K_TYPE_SEQUENCE:
        return field == 1 ? K_TYPE : K_NONE;
    case K_TYPE_MAP:
        return field == 2 ? K_TYPE : K_NONE;
    case K_NONE:
        break;
    }
    return K_NONE;
}

/* Reads a varint at *p (< end); false when it is cut off or too long. */
static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* The deepest nesting below a `k` message held in [p, end), `depth` being
 * its own; stops early once past the limit. */
static unsigned walk(const uint8_t *p, const uint8_t *end, kind k, unsigned depth) {
    unsigned deepest = depth;
    while (p < end && deepest <= ONNXI_MAX_NESTING) {
        uint64_t tag, len;
        if (!read_varint(&p, end, &tag)) {
            break;
        }
        switch (tag & 7) {
        case 0: /* varint */
            if (!read_varint(&p, end, &len)) {
                return deepest;
            }
            break;
        case 1: /* 64-bit */
            if ((size_t)(end - p) < 8) {
                return deepest;
            }
            p += 8;
            break;
        case 5: /* 32-bit */
            if ((size_t)(end - p) < 4) {
                return deepest;
            }
            p += 4;
            break;
        case 2: { /* length-delimited */
            if (!read_varint(&p, end, &len) || len > (uint64_t)(end - p)) {
                return deepest;
            }
            kind child = child_kind(k, tag >> 3);
            if (child != K_NONE) {
                unsigned d = walk(p, p + len, child, depth + 1);
                deepest = d > deepest ? d : deepest;
            }
            p += len;
            break;
        }
        default: /* groups and invalid wire types: the decoder's to report */
            return deepest;
        }
    }
    return deepest;
}

plx_status onnxi_check_nesting(const void *data, size_t size, const char *name) {
    const uint8_t *p = data;
    unsigned deepest = walk(p, p + size, K_MODEL, 0);
    if (deepest > ONNXI_MAX_NESTING) {
        return plx_status_create(PLX_INVALID_ARGUMENT,
                                 "%s: messages nested more than %d deep (subgraphs in graph "
                                 "attributes, or sequence, map and optional types): the limit "
                                 "of protobuf's decoders, which no ONNX tool reads past",
                                 name, ONNXI_MAX_NESTING);
    }
    return NULL;
}
