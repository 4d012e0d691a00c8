/* The functions of existing operators that have kernels of their own
 * (kernels_bitwise.c, kernels_lppool.c): unary is_nan, is_inf,
 * is_pos_inf, is_neg_inf and bitwise_not; binary bitwise_and, bitwise_or,
 * bitwise_xor, shift_left and shift_right; activation shrink; pool and
 * global_pool kind lp. The operators' own check and run functions
 * (kernels_elementwise.c, kernels_pool.c) hand these functions over to
 * the pairs below, which have the contract of a kernel's pair
 * (kernels.h): the check says why a layer is refused or NULL, the run
 * checks again and allocates nothing. Internal to the library. */
#ifndef PLXK_KERNELS_FUNCS_H
#define PLXK_KERNELS_FUNCS_H

#include "kernels.h"

/* unary, for func >= PLX_UNARY_IS_NAN */
const char *plxk_check_unary_funcs(const plx_layer_view *layer, char *buf, size_t size);
bool plxk_run_unary_funcs(const plxk_kernel_args *args);

/* binary, for plx_binary_func_is_bitwise(func) */
const char *plxk_check_binary_bitwise(const plx_layer_view *layer, char *buf, size_t size);
bool plxk_run_binary_bitwise(const plxk_kernel_args *args);

/* activation, for PLX_ACT_SHRINK */
const char *plxk_check_shrink(const plx_layer_view *layer, char *buf, size_t size);
bool plxk_run_shrink(const plxk_kernel_args *args);

/* pool and global_pool, for PLX_POOL_LP */
const char *plxk_check_lp_pool(const plx_layer_view *layer, char *buf, size_t size);
bool plxk_run_lp_pool(const plxk_kernel_args *args);
const char *plxk_check_global_lp_pool(const plx_layer_view *layer, char *buf, size_t size);
bool plxk_run_global_lp_pool(const plxk_kernel_args *args);

#endif
