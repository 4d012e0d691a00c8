/* The ONNX backend node-test runner (tools/node_tests.c), shared by
 * tests/conformance/run_conformance and `plexus conformance
 * --onnx-node-tests` (docs/conformance.md). Built only with the ONNX
 * importer. */
#ifndef PLEXUS_TOOLS_NODE_TESTS_H
#define PLEXUS_TOOLS_NODE_TESTS_H

#include <stdio.h>

/* Runs the node tests as run_conformance's command line says (argv[0] is
 * the program's name for messages; the options are those of its --help),
 * printing TAP on `tap` and diagnostics on stderr. Returns the exit
 * status: 0 when no case failed unexpectedly, 1 otherwise, 2 for bad
 * usage. Forks a process per case unless --no-fork; call it before this
 * process starts a driver whose threads would not survive fork(). */
int node_tests_run(int argc, char **argv, FILE *tap);

#endif
