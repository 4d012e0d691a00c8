#!/bin/sh
# Installs what Plexus needs to build and test on Debian 12. Idempotent:
# packages already present are left alone, and apt's lists are refreshed only
# when something is missing. Runs apt-get through sudo when not root.
set -eu

packages="
  build-essential
  meson
  ninja-build
  pkg-config
  python3
  python3-venv
  python3-dev
  protobuf-c-compiler
  libprotobuf-c-dev
  libonnx-dev
  libcriterion-dev
  libjson-c-dev
  valgrind
  ocl-icd-opencl-dev
  opencl-headers
  pocl-opencl-icd
  clinfo
  libdnnl-dev
  libopenblas-dev
"

missing=""
for p in $packages; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done

if [ -z "$missing" ]; then
  echo "install-deps: all packages present"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  sudo=""
else
  sudo="sudo"
fi
echo "install-deps: installing$missing"
$sudo apt-get update -qq
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
