/* The ONNX backend node tests, run on Plexus (docs/conformance.md): the
 * runner itself is tools/node_tests.c, which `plexus conformance
 * --onnx-node-tests` shares.
 *
 *   run_conformance [options] NODE_DATA_DIR */
#include <stdio.h>

#include "node_tests.h"

int main(int argc, char **argv) {
    return node_tests_run(argc, argv, stdout);
}
