/* plexus-bench-loaded-memory: memory plans of real loaded networks.
 *
 * Builds CNNs through the public API (random weights, realistic shapes),
 * loads each on cpu_ref with externally managed memory once per built-in
 * strategy, and prints the bytes each plan allocates against the lower
 * bound (the largest total size of tensors alive at one step). Also runs
 * each network once to check the plan works. Where plexus-bench-memory-plan
 * plans synthetic block profiles, this one plans what the loader builds.
 *
 * usage: plexus-bench-loaded-memory [--json] [--backend-path DIR] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plexus/network.h>

typedef struct builder {
    plx_network *net;
    int counter;
    unsigned seed;
    float **weights; /* kept until the network is loaded (borrowed constants) */
    size_t weight_count;
} builder;

static void die(plx_status s, const char *what) {
    fprintf(stderr, "plexus-bench-loaded-memory: %s: %s\n", what, plx_status_get_message(s));
    exit(1);
}

#define CHECK(expr, what)                     \
    do {                                      \
        plx_status s_ = (expr);               \
        if (s_) {                             \
            die(s_, what);                    \
        }                                     \
    } while (0)

static float next_random(builder *b) {
    b->seed = b->seed * 1664525u + 1013904223u;
    return ((float)(b->seed >> 8) / 16777216.0f - 0.5f) * 0.2f;
}

static plx_layer_id constant(builder *b, uint32_t rank, const int64_t *dims) {
    plx_tensor_info t = {.dtype = PLX_DTYPE_FLOAT32, .rank = rank};
    size_t n = 1;
    for (uint32_t i = 0; i < rank; i++) {
        t.dims[i] = dims[i];
        n *= (size_t)dims[i];
    }
    float *w = malloc(n * sizeof *w);
    float **list = realloc(b->weights, (b->weight_count + 1) * sizeof *list);
    if (!w || !list) {
        fprintf(stderr, "plexus-bench-loaded-memory: out of memory\n");
        exit(1);
    }
    b->weights = list;
    b->weights[b->weight_count++] = w;
    for (size_t i = 0; i < n; i++) {
        w[i] = next_random(b);
    }
    char name[32];
    snprintf(name, sizeof name, "w%d", b->counter++);
    plx_layer_id id;
    CHECK(plx_network_add_constant(b->net, name, &t, w, PLX_CONSTANT_BORROW, &id), "constant");
    return id;
}

static plx_layer_id layer(builder *b, plx_op op, const void *desc, const plx_layer_id *inputs,
                          uint32_t count) {
    char name[32];
    snprintf(name, sizeof name, "%s%d", plx_op_name(op), b->counter++);
    plx_layer_id id;
    CHECK(plx_network_add_layer(b->net, name, op, desc, count, 1, &id), name);
    for (uint32_t i = 0; i < count; i++) {
        CHECK(plx_network_connect(b->net, inputs[i], 0, id, i), name);
    }
    return id;
}

/* conv (k x k, stride, groups) + bias, then relu when asked. */
static plx_layer_id conv(builder *b, plx_layer_id x, int64_t cin, int64_t cout, int64_t k,
                         int64_t stride, int64_t groups, bool relu) {
    plx_conv_desc d = PLX_CONV_DESC_INIT;
    d.strides[0] = d.strides[1] = stride;
    d.pads_begin[0] = d.pads_begin[1] = d.pads_end[0] = d.pads_end[1] = k / 2;
    d.group = groups;
    const int64_t wd[] = {cout, cin / groups, k, k}, bd[] = {cout};
    plx_layer_id in[] = {x, constant(b, 4, wd), constant(b, 1, bd)};
    plx_layer_id y = layer(b, PLX_OP_CONV, &d, in, 3);
    if (relu) {
        plx_activation_desc r = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
        y = layer(b, PLX_OP_ACTIVATION, &r, &y, 1);
    }
    return y;
}

static plx_layer_id head(builder *b, plx_layer_id x, int64_t channels) {
    plx_global_pool_desc gp = PLX_GLOBAL_POOL_DESC_INIT(PLX_POOL_AVERAGE);
    x = layer(b, PLX_OP_GLOBAL_POOL, &gp, &x, 1);
    plx_axis_desc fl = PLX_AXIS_DESC_INIT(1);
    x = layer(b, PLX_OP_FLATTEN, &fl, &x, 1);
    plx_fully_connected_desc fc = PLX_FULLY_CONNECTED_DESC_INIT;
    fc.weights_transposed = true;
    const int64_t wd[] = {10, channels}, bd[] = {10};
    plx_layer_id in[] = {x, constant(b, 2, wd), constant(b, 1, bd)};
    return layer(b, PLX_OP_FULLY_CONNECTED, &fc, in, 3);
}

/* ResNet-like: stem, three stages of two basic residual blocks. */
static plx_layer_id resnet(builder *b, plx_layer_id x) {
    x = conv(b, x, 3, 16, 3, 1, 1, true);
    int64_t c = 16;
    for (int stage = 0; stage < 3; stage++) {
        int64_t cout = 16 << stage;
        for (int block = 0; block < 2; block++) {
            int64_t stride = stage > 0 && block == 0 ? 2 : 1;
            plx_layer_id y = conv(b, x, c, cout, 3, stride, 1, true);
            y = conv(b, y, cout, cout, 3, 1, 1, false);
            plx_layer_id skip = stride == 1 && c == cout ? x : conv(b, x, c, cout, 1, stride, 1, false);
            plx_binary_desc add = PLX_BINARY_DESC_INIT(PLX_BINARY_ADD);
            plx_layer_id in[] = {y, skip};
            y = layer(b, PLX_OP_BINARY, &add, in, 2);
            plx_activation_desc r = PLX_ACTIVATION_DESC_INIT(PLX_ACT_RELU);
            x = layer(b, PLX_OP_ACTIVATION, &r, &y, 1);
            c = cout;
        }
    }
    return head(b, x, c);
}

/* MobileNet-like: depthwise 3x3 + pointwise 1x1 pairs. */
static plx_layer_id mobilenet(builder *b, plx_layer_id x) {
    x = conv(b, x, 3, 16, 3, 2, 1, true);
    int64_t c = 16;
    const int64_t outs[] = {32, 64, 64, 128, 128, 256};
    const int64_t strides[] = {1, 2, 1, 2, 1, 2};
    for (int i = 0; i < 6; i++) {
        x = conv(b, x, c, c, 3, strides[i], c, true);
        x = conv(b, x, c, outs[i], 1, 1, 1, true);
        c = outs[i];
    }
    return head(b, x, c);
}

typedef struct result {
    const char *network;
    const char *strategy;
    size_t bytes, lower_bound, tensors;
} result;

static result measure(const char *backend_path, const char *name,
                      plx_layer_id (*body)(builder *, plx_layer_id), int64_t size,
                      const char *strategy) {
    plx_runtime_options o;
    plx_runtime_options_init(&o);
    o.search_paths = &backend_path;
    o.search_path_count = 1;
    o.ignore_environment = true;
    o.skip_default_dir = true;
    plx_backend_memory_strategy m = {"cpu_ref", strategy, NULL};
    o.memory_strategies = &m;
    o.memory_strategy_count = 1;
    plx_runtime *rt;
    CHECK(plx_runtime_create(&o, &rt), "runtime");
    builder b = {NULL, 0, 12345u, NULL, 0};
    CHECK(plx_network_create(&b.net), "network");
    plx_tensor_info t = {.dtype = PLX_DTYPE_FLOAT32, .rank = 4, .dims = {1, 3, size, size}};
    plx_layer_id x, y;
    CHECK(plx_network_add_input(b.net, "image", 0, &t, &x), "input");
    plx_layer_id logits = body(&b, x);
    CHECK(plx_network_add_output(b.net, "logits", 0, &y), "output");
    CHECK(plx_network_connect(b.net, logits, 0, y, 0), "output");
    plx_optimize_options oo;
    plx_optimize_options_init(&oo);
    const char *backends[] = {"cpu_ref"};
    oo.backends = backends;
    oo.backend_count = 1;
    oo.allow_fallback = false;
    plx_optimized_network *on;
    CHECK(plx_optimize(rt, b.net, &oo, &on), "optimize");
    plx_load_options lo;
    plx_load_options_init(&lo);
    lo.externally_managed_memory = true;
    plx_loaded_network *ln;
    CHECK(plx_runtime_load_network(rt, &on, &lo, &ln), "load");
    size_t n = (size_t)(3 * size * size);
    float *image = calloc(n, sizeof *image), logit[10];
    for (size_t i = 0; image && i < n; i++) {
        image[i] = (float)(i % 17) / 17.0f;
    }
    plx_tensor_binding in = {0, image, n * sizeof *image, 0}, out = {0, logit, sizeof logit, 0};
    CHECK(plx_loaded_network_execute(ln, &in, 1, &out, 1), "execute");
    const plx_memory_report *r = plx_loaded_network_memory_report(ln, 0);
    result res = {name, strategy, r->bytes, r->lower_bound, r->tensor_count};
    free(image);
    plx_loaded_network_unload(&ln);
    plx_network_destroy(&b.net);
    for (size_t i = 0; i < b.weight_count; i++) {
        free(b.weights[i]);
    }
    free(b.weights);
    plx_runtime_destroy(&rt);
    return res;
}

int main(int argc, char **argv) {
    bool json = false;
    const char *path = BENCH_CPU_REF_DIR;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--backend-path") == 0 && i + 1 < argc) {
            path = argv[++i];
        } else {
            fprintf(stderr, "usage: plexus-bench-loaded-memory [--json] [--backend-path DIR]\n");
            return 2;
        }
    }
    struct {
        const char *name;
        plx_layer_id (*body)(builder *, plx_layer_id);
        int64_t size;
    } nets[] = {{"resnet_like_64", resnet, 64}, {"mobilenet_like_96", mobilenet, 96}};
    const char *strategies[] = {"none", "greedy"};
    if (json) {
        printf("[");
    } else {
        printf("%-20s %-8s %8s %12s %12s %8s\n", "network", "strategy", "tensors", "bytes",
               "lower bound", "ratio");
    }
    bool first = true;
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++) {
        for (size_t k = 0; k < 2; k++) {
            result r = measure(path, nets[i].name, nets[i].body, nets[i].size, strategies[k]);
            double ratio = r.lower_bound ? (double)r.bytes / (double)r.lower_bound : 0.0;
            if (json) {
                printf("%s{\"network\": \"%s\", \"strategy\": \"%s\", \"tensors\": %zu, "
                       "\"bytes\": %zu, \"lower_bound\": %zu, \"ratio\": %.4f}",
                       first ? "" : ", ", r.network, r.strategy, r.tensors, r.bytes,
                       r.lower_bound, ratio);
            } else {
                printf("%-20s %-8s %8zu %12zu %12zu %8.4f\n", r.network, r.strategy, r.tensors,
                       r.bytes, r.lower_bound, ratio);
            }
            first = false;
        }
    }
    if (json) {
        printf("]\n");
    }
    return 0;
}
