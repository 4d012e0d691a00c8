/* The geometry of gpu_cuda's data-movement, pooling and normalisation
 * layers (cuda_geometry.c): from a layer's shapes and descriptor, whether
 * gpu_cuda runs it and, when it does, the structs of cuda_index.h its
 * kernels index with. Plain C (no CUDA), so that the host test
 * tests/test_gpu_cuda_index.c compiles it as it is. Each function returns
 * NULL, or why the layer is refused, written into buf. Not exported. */
#ifndef GPU_CUDA_CUDA_GEOMETRY_H
#define GPU_CUDA_CUDA_GEOMETRY_H

#include <stddef.h>

#include <plexus/backend.h>

#include "cuda_index.h"

/* How many views ck_geom_views writes for a layer: one per input of a
 * concat, one per output of a split, else one. */
uint32_t ck_view_count(const plx_layer_view *l);

/* transpose, slice, expand, tile, concat, split, depth_to_space and
 * space_to_depth, of any dtype of 1, 2, 4 or 8 bytes, as strided copies:
 * ck_view_count(l) views into `views` (NULL: only checks). */
const char *ck_geom_views(const plx_layer_view *l, ck_view *views, char *buf, size_t size);

/* reshape, flatten, squeeze and unsqueeze: the input's bytes as they are. */
const char *ck_geom_same_bytes(const plx_layer_view *l, char *buf, size_t size);

const char *ck_geom_pad(const plx_layer_view *l, ck_pad *g, char *buf, size_t size);
const char *ck_geom_gather(const plx_layer_view *l, ck_gather *g, char *buf, size_t size);
const char *ck_geom_where(const plx_layer_view *l, ck_where *g, char *buf, size_t size);
/* pool: max (with its Indices output or without) and average, float32. */
const char *ck_geom_pool(const plx_layer_view *l, ck_pool *g, char *buf, size_t size);
/* global_pool, float32: checks the shapes and the kind; with g, the pool
 * as one window over the whole input (3 spatial dims at most). */
const char *ck_geom_global_pool(const plx_layer_view *l, ck_pool *g, char *buf, size_t size);
/* layer_norm and instance_norm, float32. */
const char *ck_geom_norm(const plx_layer_view *l, ck_norm *g, char *buf, size_t size);
const char *ck_geom_batch_norm(const plx_layer_view *l, ck_batch_norm *g, char *buf,
                               size_t size);
/* resize: nearest, linear and cubic with every coordinate transformation,
 * float32. taps (NULL: only checks) receives the
 * taps of the output's rows, then of its columns: out_h + out_w entries. */
const char *ck_geom_resize(const plx_layer_view *l, ck_resize *g, ck_resize_tap *taps, char *buf,
                           size_t size);
/* cast between float32, float16, int32, int64 and bool. */
const char *ck_geom_cast(const plx_layer_view *l, char *buf, size_t size);

/* The element size of a dtype the data-movement kernels copy (1, 2, 4 or
 * 8 bytes); 0 for one they do not (the 4-bit integers). */
size_t ck_copy_size(plx_dtype dtype);

#endif /* GPU_CUDA_CUDA_GEOMETRY_H */
