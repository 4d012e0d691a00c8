/* The one check of a layer view before a backend or the reference kernels
 * see it (validate.c). What it guarantees is the contract of
 * docs/backend-abi.md, "What the host guarantees about a layer view". */
#ifndef PLEXUS_CORE_VALIDATE_H
#define PLEXUS_CORE_VALIDATE_H

#include <plexus/backend.h>
#include <plexus/status.h>

/* NULL when `view` keeps the contract: a known op; input and output counts
 * within the op's arity (op_table.c); a descriptor of at least the op's
 * descriptor size when it has one; non-NULL input and output arrays; and
 * every tensor info with a known dtype, rank <= PLX_MAX_RANK, dims >= 0
 * and a byte size of at most INT64_MAX / 8. Otherwise a PLX_INVALID_ARGUMENT
 * status "layer '<name>' (<op>): <fault>". */
plx_status plxi_layer_view_validate(const plx_layer_view *view);

#endif /* PLEXUS_CORE_VALIDATE_H */
