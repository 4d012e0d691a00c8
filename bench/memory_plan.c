/* plexus-bench-memory-plan: how much memory the built-in memory strategies
 * need for networks' intermediate tensors.
 *
 * Plans synthetic block profiles shaped like CNN activations (float32,
 * batch 1, 224x224 inputs, 64-byte alignment): a VGG-16 conv chain, ResNet-18
 * and ResNet-50 (skip connections keep a tensor alive across the residual
 * branch), MobileNet v1 (depthwise/pointwise chain) and v2 (inverted
 * residuals), and seeded random DAGs. For each, prints the bytes "none" (one
 * buffer per tensor) and "greedy" (one shared arena) need, the lower bound
 * (the most bytes alive at one step), the ratios to it, and the median time
 * to make and check the greedy plan. Byte counts are deterministic; only the
 * time varies between runs.
 *
 * usage: plexus-bench-memory-plan [--json] */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <plexus/plexus.h>

#include "memory_plan.h"

#define ALIGNMENT 64
#define NO_TENSOR SIZE_MAX /* a network input: imported, not planned */

/* A profile under construction: one step per layer, one block per layer
 * output, each block's last step moved forward by every consumer. */
typedef struct profile {
    plx_memory_block *blocks;
    size_t count;
    size_t capacity;
    uint32_t step;
} profile;

static void die(const char *what) {
    fprintf(stderr, "plexus-bench-memory-plan: %s\n", what);
    exit(1);
}

static size_t f32(size_t h, size_t w, size_t c) {
    return h * w * c * 4;
}

/* Adds a layer reading `inputs` (NO_TENSOR entries are network inputs) and
 * producing one tensor of `size` bytes; returns the tensor. */
static size_t layer(profile *p, const size_t *inputs, size_t input_count, size_t size) {
    for (size_t i = 0; i < input_count; i++) {
        if (inputs[i] != NO_TENSOR) {
            p->blocks[inputs[i]].last_step = p->step;
        }
    }
    if (p->count == p->capacity) {
        p->capacity = p->capacity ? p->capacity * 2 : 64;
        p->blocks = realloc(p->blocks, p->capacity * sizeof *p->blocks);
        if (!p->blocks) {
            die("out of memory");
        }
    }
    p->blocks[p->count] = (plx_memory_block){p->step, p->step, size, ALIGNMENT};
    p->step++;
    return p->count++;
}

static size_t layer1(profile *p, size_t input, size_t size) {
    return layer(p, &input, 1, size);
}

static size_t layer2(profile *p, size_t a, size_t b, size_t size) {
    size_t inputs[2] = {a, b};
    return layer(p, inputs, 2, size);
}

/* VGG-16: 13 convolutions in 5 stages, each ended by a 2x2 max pool, then
 * three fully connected layers and a softmax. A pure chain. */
static void gen_vgg16(profile *p) {
    static const size_t stages[][2] = {{2, 64}, {2, 128}, {3, 256}, {3, 512}, {3, 512}};
    size_t x = NO_TENSOR, hw = 224;
    for (size_t s = 0; s < 5; s++) {
        for (size_t i = 0; i < stages[s][0]; i++) {
            x = layer1(p, x, f32(hw, hw, stages[s][1]));
        }
        hw /= 2;
        x = layer1(p, x, f32(hw, hw, stages[s][1]));
    }
    x = layer1(p, x, f32(1, 1, 4096));
    x = layer1(p, x, f32(1, 1, 4096));
    x = layer1(p, x, f32(1, 1, 1000));
    layer1(p, x, f32(1, 1, 1000));
}

/* The ResNet stem: 7x7/2 convolution to 112x112x64, 3x3/2 max pool. */
static size_t resnet_stem(profile *p) {
    size_t x = layer1(p, NO_TENSOR, f32(112, 112, 64));
    return layer1(p, x, f32(56, 56, 64));
}

static void resnet_head(profile *p, size_t x, size_t channels) {
    x = layer1(p, x, f32(1, 1, channels));
    x = layer1(p, x, f32(1, 1, 1000));
    layer1(p, x, f32(1, 1, 1000));
}

/* ResNet-18: basic blocks (3x3, 3x3, add); the block's input stays alive
 * across the branch until the add, 2 steps (3 with a projection). */
static void gen_resnet18(profile *p) {
    size_t x = resnet_stem(p), hw = 56, channels = 64;
    for (size_t stage = 0; stage < 4; stage++) {
        for (size_t block = 0; block < 2; block++) {
            bool down = stage > 0 && block == 0;
            size_t out_hw = down ? hw / 2 : hw, out_c = 64u << stage;
            size_t shortcut = x;
            if (down) {
                shortcut = layer1(p, x, f32(out_hw, out_hw, out_c)); /* 1x1/2 projection */
            }
            size_t a = layer1(p, x, f32(out_hw, out_hw, out_c));
            size_t b = layer1(p, a, f32(out_hw, out_hw, out_c));
            x = layer2(p, b, shortcut, f32(out_hw, out_hw, out_c));
            hw = out_hw;
            channels = out_c;
        }
    }
    resnet_head(p, x, channels);
}

/* ResNet-50: bottleneck blocks (1x1 reduce, 3x3, 1x1 expand, add), stages
 * of 3, 4, 6 and 3 blocks at 56, 28, 14 and 7 pixels; the input stays alive
 * for 3 steps, or the projection does. */
static void gen_resnet50(profile *p) {
    static const size_t blocks[4] = {3, 4, 6, 3};
    size_t x = resnet_stem(p), hw = 56, channels = 64;
    for (size_t stage = 0; stage < 4; stage++) {
        size_t mid = 64u << stage, out_c = mid * 4;
        for (size_t block = 0; block < blocks[stage]; block++) {
            size_t out_hw = stage > 0 && block == 0 ? hw / 2 : hw;
            size_t shortcut = x;
            if (block == 0) {
                shortcut = layer1(p, x, f32(out_hw, out_hw, out_c));
            }
            size_t a = layer1(p, x, f32(hw, hw, mid));
            size_t b = layer1(p, a, f32(out_hw, out_hw, mid));
            size_t c = layer1(p, b, f32(out_hw, out_hw, out_c));
            x = layer2(p, c, shortcut, f32(out_hw, out_hw, out_c));
            hw = out_hw;
            channels = out_c;
        }
    }
    resnet_head(p, x, channels);
}

/* MobileNet v1: a 3x3/2 convolution, then 13 depthwise/pointwise pairs. */
static void gen_mobilenet_v1(profile *p) {
    static const size_t pairs[][2] = {{1, 64},  {2, 128}, {1, 128}, {2, 256}, {1, 256},
                                      {2, 512}, {1, 512}, {1, 512}, {1, 512}, {1, 512},
                                      {1, 512}, {2, 1024}, {1, 1024}};
    size_t hw = 112, channels = 32;
    size_t x = layer1(p, NO_TENSOR, f32(hw, hw, channels));
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        hw /= pairs[i][0];
        x = layer1(p, x, f32(hw, hw, channels)); /* depthwise 3x3 */
        channels = pairs[i][1];
        x = layer1(p, x, f32(hw, hw, channels)); /* pointwise 1x1 */
    }
    resnet_head(p, x, channels);
}

/* MobileNet v2: inverted residuals (1x1 expand, 3x3 depthwise, 1x1
 * project, add when the shape is kept). */
static void gen_mobilenet_v2(profile *p) {
    static const size_t settings[][4] = {/* expansion, channels, repeats, stride */
                                         {1, 16, 1, 1},  {6, 24, 2, 2},  {6, 32, 3, 2},
                                         {6, 64, 4, 2},  {6, 96, 3, 1},  {6, 160, 3, 2},
                                         {6, 320, 1, 1}};
    size_t hw = 112, channels = 32;
    size_t x = layer1(p, NO_TENSOR, f32(hw, hw, channels));
    for (size_t s = 0; s < sizeof settings / sizeof settings[0]; s++) {
        for (size_t r = 0; r < settings[s][2]; r++) {
            size_t stride = r == 0 ? settings[s][3] : 1, out_c = settings[s][1];
            size_t hidden = channels * settings[s][0], out_hw = hw / stride;
            size_t y = x;
            if (settings[s][0] != 1) {
                y = layer1(p, y, f32(hw, hw, hidden));
            }
            y = layer1(p, y, f32(out_hw, out_hw, hidden));
            y = layer1(p, y, f32(out_hw, out_hw, out_c));
            if (stride == 1 && channels == out_c) {
                y = layer2(p, y, x, f32(out_hw, out_hw, out_c));
            }
            x = y;
            hw = out_hw;
            channels = out_c;
        }
    }
    x = layer1(p, x, f32(7, 7, 1280));
    resnet_head(p, x, 1280);
}

static uint64_t rng_next(uint64_t *state) { /* splitmix64 */
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* A random DAG: each layer reads its predecessor and, one time in three,
 * one or two more of the 8 layers before it (skips, concatenations);
 * output sizes from 4 KiB to 4 MiB, log-uniform, in multiples of 64. */
static void gen_random_dag(profile *p, size_t layers, uint64_t seed) {
    uint64_t rng = seed;
    size_t x = NO_TENSOR;
    for (size_t i = 0; i < layers; i++) {
        size_t inputs[3] = {x, NO_TENSOR, NO_TENSOR};
        size_t input_count = 1;
        if (i > 1 && rng_next(&rng) % 3 == 0) {
            size_t extra = 1 + rng_next(&rng) % 2;
            for (size_t e = 0; e < extra; e++) {
                size_t back = 2 + rng_next(&rng) % 7;
                inputs[input_count++] = back <= i ? i - back : NO_TENSOR;
            }
        }
        size_t shift = 12 + rng_next(&rng) % 11; /* 4 KiB .. 4 MiB */
        size_t size = ((size_t)1 << shift) + (rng_next(&rng) % ((size_t)1 << shift));
        size = (size + 63) / 64 * 64;
        x = layer(p, inputs, input_count, size);
    }
}

typedef struct result {
    char name[32];
    size_t blocks;
    uint32_t steps;
    size_t none_bytes;
    size_t greedy_bytes;
    size_t lower_bound;
    double greedy_us;
} result;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static size_t plan_bytes(const char *strategy, const profile *p, double *out_us) {
    enum { RUNS = 7 };
    double times[RUNS];
    size_t total = 0;
    for (int r = 0; r < RUNS; r++) {
        plxi_memory_plan plan;
        double t0 = now_us();
        plx_status s =
            plxi_memory_plan_create(plxi_memory_strategy_builtin(strategy), p->blocks, p->count,
                                    &plan);
        times[r] = now_us() - t0;
        if (s) {
            fprintf(stderr, "plexus-bench-memory-plan: %s\n", plx_status_get_message(s));
            exit(1);
        }
        total = plan.total_bytes;
        plxi_memory_plan_release(&plan);
    }
    qsort(times, RUNS, sizeof times[0], compare_doubles);
    if (out_us) {
        *out_us = times[RUNS / 2];
    }
    return total;
}

static result measure(const char *name, void (*gen)(profile *), size_t layers, uint64_t seed) {
    profile p = {0};
    if (gen) {
        gen(&p);
    } else {
        gen_random_dag(&p, layers, seed);
    }
    result r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "%s", name);
    r.blocks = p.count;
    r.steps = p.step;
    r.none_bytes = plan_bytes("none", &p, NULL);
    r.greedy_bytes = plan_bytes("greedy", &p, &r.greedy_us);
    r.lower_bound = plxi_memory_lower_bound(p.blocks, p.count);
    free(p.blocks);
    return r;
}

static double ratio(size_t a, size_t b) {
    return b ? (double)a / (double)b : 0.0;
}

int main(int argc, char **argv) {
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else {
            fprintf(stderr, "usage: plexus-bench-memory-plan [--json]\n");
            return 2;
        }
    }
    result results[] = {
        measure("vgg16", gen_vgg16, 0, 0),
        measure("resnet18", gen_resnet18, 0, 0),
        measure("resnet50", gen_resnet50, 0, 0),
        measure("mobilenet_v1", gen_mobilenet_v1, 0, 0),
        measure("mobilenet_v2", gen_mobilenet_v2, 0, 0),
        measure("random_dag_50", NULL, 50, 1),
        measure("random_dag_200", NULL, 200, 2),
        measure("random_dag_1000", NULL, 1000, 3),
    };
    size_t n = sizeof results / sizeof results[0];
    if (json) {
        printf("[\n");
        for (size_t i = 0; i < n; i++) {
            const result *r = &results[i];
            printf("  {\"network\": \"%s\", \"blocks\": %zu, \"steps\": %" PRIu32
                   ", \"none_bytes\": %zu, \"greedy_bytes\": %zu, \"lower_bound_bytes\": %zu, "
                   "\"greedy_over_lower_bound\": %.4f, \"none_over_lower_bound\": %.4f, "
                   "\"greedy_plan_us\": %.1f}%s\n",
                   r->name, r->blocks, r->steps, r->none_bytes, r->greedy_bytes, r->lower_bound,
                   ratio(r->greedy_bytes, r->lower_bound), ratio(r->none_bytes, r->lower_bound),
                   r->greedy_us, i + 1 < n ? "," : "");
        }
        printf("]\n");
        return 0;
    }
    printf("%-16s %6s %11s %11s %11s %9s %9s %10s\n", "network", "blocks", "none MiB",
           "greedy MiB", "bound MiB", "greedy/lb", "none/lb", "greedy us");
    for (size_t i = 0; i < n; i++) {
        const result *r = &results[i];
        printf("%-16s %6zu %11.2f %11.2f %11.2f %9.4f %9.4f %10.1f\n", r->name, r->blocks,
               (double)r->none_bytes / 1048576.0, (double)r->greedy_bytes / 1048576.0,
               (double)r->lower_bound / 1048576.0, ratio(r->greedy_bytes, r->lower_bound),
               ratio(r->none_bytes, r->lower_bound), r->greedy_us);
    }
    return 0;
}
