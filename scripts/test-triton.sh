#!/usr/bin/env bash
# The Triton server test (tests/triton/test_server.py, docs/triton.md):
# installs Triton (the nvidia-pytriton wheel, pinned in
# tests/triton/requirements.txt) into a virtual environment, then runs the
# pytest suite against BUILD_DIR's libtriton_plexus.so and plexus CLI. The
# suite starts tritonserver on free loopback ports and stops it at the end.
#   scripts/test-triton.sh BUILD_DIR [JUNIT_XML]
# JUNIT_XML: where pytest writes its JUnit report (default
# BUILD_DIR/meson-logs/triton-junit.xml). The venv is BUILD_DIR/triton-venv,
# kept between runs.
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 BUILD_DIR [JUNIT_XML]" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
junit=${2:-$build/meson-logs/triton-junit.xml}
if [ ! -e "$build/triton/libtriton_plexus.so" ]; then
  echo "$build/triton/libtriton_plexus.so is missing: configure with -Dtriton=enabled (needs json-c)" >&2
  exit 1
fi
venv=$build/triton-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check -r "$root/tests/triton/requirements.txt"
mkdir -p "$(dirname "$junit")"
export PLEXUS_BUILD_DIR=$build
exec "$venv/bin/python" -m pytest -v -p no:cacheprovider --junitxml="$junit" "$root/tests/triton"
