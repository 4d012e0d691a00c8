/* Helpers shared by the registry tests: runtimes that never see the
 * system's plug-ins (tests/meson.build says how), lookups in a runtime's
 * lists, and scratch directories
 * under /tmp. Paths to build outputs come from meson as compile definitions:
 * FAKE_PLUGIN_DIR, CPU_REF_MODULE, SAMPLE_MODULE. */
#ifndef PLEXUS_TEST_UTIL_H
#define PLEXUS_TEST_UTIL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include <plexus/network.h>
#include <plexus/plexus.h>

#ifndef FAKE_PLUGIN_DIR
#error "FAKE_PLUGIN_DIR must be defined by the build"
#endif

/* Options that see nothing of the system: environment ignored, default
 * directory skipped, logging to a quiet sink (PLEXUS_TEST_LOG=1 shows it). */
void tu_options(plx_runtime_options *options);

/* Creates a runtime with `options` and asserts that it succeeded. */
plx_runtime *tu_create(const plx_runtime_options *options);

/* A runtime over `count` search paths, isolated as tu_options. */
plx_runtime *tu_runtime(const char *const *paths, size_t count);

/* A runtime over one search path, isolated as tu_options, with `count`
 * backend options (none when 0). */
plx_runtime *tu_runtime_with(const char *path, const plx_backend_option *opts, size_t count);

/* A runtime over the directory of fake plug-ins. */
plx_runtime *tu_fake_runtime(void);

/* Writes FAKE_PLUGIN_DIR/<name>.so into buf (PATH_MAX bytes). */
const char *tu_fake_path(char *buf, const char *name);
/* realpath() of FAKE_PLUGIN_DIR/<name>.so into buf (PATH_MAX bytes); asserts. */
const char *tu_fake_realpath(char *buf, const char *name);

/* The first rejection whose path is `path`, or NULL. */
const plx_rejection *tu_rejection_at(const plx_runtime *rt, const char *path);
/* The rejection of fake plug-in file <name>.so (its resolved path); asserts
 * that there is one. */
const plx_rejection *tu_fake_rejection(const plx_runtime *rt, const char *name);
/* The first rejection whose reason contains `needle`, or NULL. */
const plx_rejection *tu_rejection_containing(const plx_runtime *rt, const char *needle);
/* The first skipped backend with `id`, or NULL. */
const plx_rejection *tu_skipped_id(const plx_runtime *rt, const char *id);
/* How many listed backends have `id`. */
size_t tu_backend_id_count(const plx_runtime *rt, const char *id);
/* The index of backend `id` in the listing, or (size_t)-1. */
size_t tu_backend_index(const plx_runtime *rt, const char *id);
/* true when some note contains `needle`. */
bool tu_has_note(const plx_runtime *rt, const char *needle);
/* true when some optimiser note of `on` contains `needle`. */
bool tu_noted(const plx_optimized_network *on, const char *needle);
/* A float32 tensor info of `rank` dims. */
plx_tensor_info tu_f32(uint32_t rank, const int64_t *dims);

/* Asserts that the good fakes beside a broken one still load: fake_good
 * (fake_good.so) and fake_zulu (fake_first.so), available, from their files. */
void tu_assert_good_fakes_loaded(const plx_runtime *rt);

/* The runtime's lists as text, for assertion messages (Criterion discards
 * what workers print under --tap=-). A static buffer, overwritten by the
 * next call. */
const char *tu_dump(const plx_runtime *rt);

/* A fresh world-searchable directory under /tmp, into buf (PATH_MAX); its
 * path is fully resolved. Remove with tu_rmtree. */
const char *tu_mkdtemp(char *buf);
/* Removes a directory tree made by a test (does not follow links). */
void tu_rmtree(const char *dir);
/* Joins dir and name into buf (PATH_MAX). */
const char *tu_join(char *buf, const char *dir, const char *name);
/* Creates dir/name as a symbolic link to target; asserts. */
void tu_symlink(const char *target, const char *dir, const char *name);
/* Links fake plug-in <fake>.so into dir as <link_name>; asserts. */
void tu_link_fake(const char *dir, const char *fake, const char *link_name);
/* Writes `size` bytes of `data` to dir/name with `mode`; asserts. */
void tu_write_file(const char *dir, const char *name, const void *data, size_t size,
                   unsigned mode);
/* Copies file src to dir/name; asserts. */
void tu_copy_file(const char *src, const char *dir, const char *name);

/* Status assertions for Criterion tests (expand only where
 * <criterion/new/assert.h> is included): OK(expr) asserts that expr returns
 * no status; FAILS_WITH(expr, needle) that it fails with a message
 * containing needle, and frees the status. */
#define OK(expr)                                                                       \
    do {                                                                               \
        plx_status ok_status_ = (expr);                                                \
        cr_assert(zero(ptr, ok_status_), "%s: %s", #expr, plx_status_get_message(ok_status_)); \
    } while (0)

/* Asserts that `expr` fails with a message containing `needle`. */
#define FAILS_WITH(expr, needle)                                                       \
    do {                                                                               \
        plx_status st_ = (expr);                                                       \
        cr_assert(not(zero(ptr, st_)), "%s succeeded", #expr);                          \
        cr_assert(not(zero(ptr, strstr(plx_status_get_message(st_), (needle)))),        \
                  "%s: message '%s' lacks '%s'", #expr, plx_status_get_message(st_), (needle)); \
        plx_status_free(st_);                                                          \
    } while (0)

/* A validated network of one layer `op` (descriptor `desc`) for running
 * an operator on its own: its input slot 0 is the network's input "x"
 * (binding 0, of infos[0]), slots 1 to input_count - 1 are constants of
 * infos[i] holding data[i] (borrowed: they must outlive the network and
 * what is optimised and loaded from it), and its output goes to the
 * network's output "y" (binding 0), through an activation layer when
 * `act` is not NULL. The inferred info of the layer's output into *out_y.
 * Asserts. */
plx_network *tu_layer_network(plx_op op, const void *desc, const plx_tensor_info *infos,
                              const void *const *data, uint32_t input_count,
                              const plx_activation_desc *act, plx_tensor_info *out_y);

/* Optimises `n` for backend `id` alone (no fallback: every layer must run
 * there) and loads it; the optimiser's summary into `summary`
 * (summary_size bytes) when it is not NULL. Asserts. */
plx_loaded_network *tu_load_on(plx_runtime *rt, plx_network *n, const char *id, char *summary,
                               size_t summary_size);

/* tu_load_on, then runs the network once, x (float32, x_bytes) in and y
 * (y_bytes) out; the optimiser's summary into `summary` (summary_size
 * bytes) when it is not NULL. Asserts. */
void tu_run_network_on(plx_runtime *rt, plx_network *n, const char *id, const float *x,
                       size_t x_bytes, float *y, size_t y_bytes, char *summary,
                       size_t summary_size);

/* One input of tu_run_layer: a network input holding `data`. */
typedef struct tu_input {
    plx_dtype dtype;
    uint32_t rank;
    const int64_t *dims;
    const void *data;
} tu_input;

/* Runs one layer: inputs -> `op` (`desc`) -> n_out network outputs,
 * optimised for `backend` of `rt` alone without fallback, loaded and
 * executed once; asserts every step. Output j's info goes to infos[j] and
 * its data, malloc'd (free it), to outs[j]. */
void tu_run_layer(plx_runtime *rt, const char *backend, plx_op op, const void *desc,
                  const tu_input *ins, uint32_t n_in, uint32_t n_out, plx_tensor_info *infos,
                  void **outs);

/* true when built with AddressSanitizer. */
/* "key=value" strings as options of backend `id`: opts[i] points into
 * options[i] and into keys[i] (the key, copied); at most `max`. Asserts. */
typedef char tu_option_key[64];
void tu_backend_options(const char *id, const char *const *options, size_t count,
                        plx_backend_option *opts, tu_option_key *keys, size_t max);

/* Backend `id` of *rt when it is available. When it is not, *rt is
 * destroyed (nothing leaks) and the test skips with the backend's reason,
 * or fails when the environment variable `require_var` is "1" (a machine
 * that must have the device: PLEXUS_REQUIRE_OPENCL, PLEXUS_REQUIRE_CUDA). */
const plx_backend_info *tu_require_backend(plx_runtime **rt, const char *id,
                                           const char *require_var);

/* The runtime's trace (plx_runtime_write_trace) as text in buf ("" when it
 * cannot be read back), through a temporary file. */
void tu_trace_text(plx_runtime *rt, char *buf, size_t size);

bool tu_under_asan(void);
/* true when the test setup runs the tests under valgrind. */
bool tu_under_valgrind(void);

#endif /* PLEXUS_TEST_UTIL_H */
