#!/usr/bin/env bash
# The gpu_cuda device check (docs/gpu_cuda.md, "Checking on a GPU"): one
# script, in steps, for a GPU machine on which nothing can be installed.
#
#   bench/device-check.sh prepare [BUILD]   here, where the CUDA toolkit and
#       the project's dependencies are: configures and builds BUILD
#       (default build-devcheck, which .gitignore's /build*/ ignores) with
#       gpu_cuda required and only what the check runs, then copies into
#       BUILD/devcheck-lib the shared libraries those programs link that are
#       neither the C library's nor CUDA's (found with ldd), so that the
#       directory travels on its own. Prints its size.
#
#   bench/device-check.sh run [BUILD] [REPORT_DIR]   on the GPU machine,
#       from the repository root, with BUILD carried there: finds the CUDA
#       runtime, cuBLAS(Lt), cuDNN 9 and NVRTC (which cuDNN's runtime-
#       compiled engines load) libraries of that machine (the toolkit's, or
#       the nvidia-* Python packages': nvidia/cudnn/lib for cuDNN), then,
#       with PLEXUS_REQUIRE_CUDA=1 so that a missing device fails instead of
#       skipping:
#         1. nvidia-smi -L and `plexus info` (gpu_cuda available, its
#            capabilities);
#         2. test_gpu_cuda (tests/test_gpu_cuda.c);
#         3. test_ops_network on gpu_cuda (every operator against the
#            suite's references; what gpu_cuda refuses is skipped with its
#            reason);
#         4. `plexus conformance` on gpu_cuda.so;
#         5. `plexus run` of the digits model on gpu_cuda,cpu_ref and on
#            cpu_ref alone (same top classes);
#         6. bench/cuda_vs_torch.py with the machine's python3 (PyTorch):
#            ResNet-18, MobileNet-v2 and a BERT-base-sized encoder at batch
#            1 and 32 in fp32, tf32 and fp16, gpu_cuda against PyTorch eager
#            on the same exported weights, and the GEMM's TFLOP/s
#            (plexus-bench-cuda-gemm) beside torch.matmul. torch.compile is
#            left to the next mode: each compilation takes tens of seconds.
#
#   bench/device-check.sh bench-compile [BUILD] [REPORT_DIR]   on the GPU
#       machine, after `run` (a second call, when device time is left):
#       bench/cuda_vs_torch.py again with torch.compile in fp16 and fp32.
#
#   bench/device-check.sh sanitize [BUILD] [REPORT_DIR]   on the GPU
#       machine, when device time is left: test_gpu_cuda under
#       compute-sanitizer's memcheck (out-of-bounds and misaligned device
#       accesses, leaks of device memory), for the kernels' first runs.
#
#   Each step's output goes to a log; REPORT_DIR (default $OUT when set,
#   else BUILD/devcheck-report) receives report.txt, which ends with one
#   line per step and 'device-check: N passed, N failed', the benchmark's
#   tables (bench.txt) and JSON (bench.json), and every log in logs.tar.gz
#   (the device tool brings back few files). Exit status 1 when a step
#   failed.
#
# The build directory's programs name their plug-in directories by absolute
# path (the tests' CPU_REF_DIR, GPU_CUDA_DIR): when BUILD lies elsewhere on
# the GPU machine, `run` links the path it was built at to where it is.
# shellcheck disable=SC2016 # the sh -c scripts expand their own arguments
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD
mode=${1:-}
build=${2:-build-devcheck}

# What the check runs: the tests, the CLI and the two plug-ins.
targets=(tests/test_gpu_cuda tests/test_ops_network tools/plexus
         gpu_cuda/gpu_cuda.so cpu_ref/cpu_ref.so bench/plexus-bench-cuda-gemm)

# Libraries the GPU machine has of its own, never replaced by older
# copies from here (the directory is on LD_LIBRARY_PATH, searched before
# the system's): the C and C++ runtimes, CUDA's and cuDNN's.
is_system_lib() {
  case "$1" in
    linux-vdso.so.*|ld-linux*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*) return 0 ;;
    libresolv.so.*|libanl.so.*|libutil.so.*|libnsl.so.*|libnss_*) return 0 ;; # glibc's too
    libstdc++.so.*|libgcc_s.so.*) return 0 ;;
    libcuda.so.*|libcudart.so.*|libcublas.so.*|libcublasLt.so.*) return 0 ;;
    libcudnn*.so*|libnvrtc*.so*) return 0 ;;
  esac
  return 1
}

prepare() {
  if [ ! -d "$build" ]; then
    meson setup "$build" -Dcuda=enabled -Dopencl=disabled -Donednn=disabled || return 1
  fi
  ninja -C "$build" -j2 "${targets[@]}" || return 1
  mkdir -p "$build/devcheck-lib"
  local t lib path
  for t in "${targets[@]}"; do
    while read -r lib _ path _; do
      if [ -n "${path:-}" ] && [ -f "$path" ] && ! is_system_lib "$lib" &&
         case "$path" in "$root"/*) false ;; *) true ;; esac; then
        cp -Lu "$path" "$build/devcheck-lib/$lib"
      fi
    done < <(ldd "$build/$t" | grep '=>')
  done
  # Where it was built, for `run` (see the top of the file).
  printf '%s\n' "$root/$build" > "$build/devcheck-origin"
  echo "device-check: prepared $build ($(du -sh "$build" | cut -f1); libraries:" \
       "$(cd "$build/devcheck-lib" && echo *))"
}

# The directories holding the machine's libcudart.so.13, libcublasLt.so.13,
# libcudnn.so.9 (which loads its sub-libraries from its own directory) and
# libnvrtc.so.13.
has_cuda_lib() {
  [ -e "$1/libcudart.so.13" ] || [ -e "$1/libcublasLt.so.13" ] || [ -e "$1/libcudnn.so.9" ] ||
    [ -e "$1/libnvrtc.so.13" ]
}

cuda_lib_dirs() {
  local dirs="" d
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda-*/lib64 /usr/local/cuda-*/lib \
           /usr/lib/x86_64-linux-gnu; do
    if has_cuda_lib "$d"; then dirs="$dirs:$d"; fi
  done
  local py
  py=$(python3 -c 'import nvidia, os; print(os.pathsep.join(nvidia.__path__))' 2>/dev/null) || py=""
  local base
  for base in ${py//:/ }; do
    for d in "$base"/*/lib "$base"/cu13/lib; do
      if has_cuda_lib "$d"; then dirs="$dirs:$d"; fi
    done
  done
  printf '%s' "${dirs#:}"
}

# Sets up the environment of the checks on the GPU machine: the link from
# where BUILD was built, the library path, PLEXUS_REQUIRE_CUDA=1.
setup_run() {
  local origin
  origin=$(cat "$build/devcheck-origin" 2>/dev/null) || { echo "no $build/devcheck-origin: run prepare first"; return 1; }
  if [ "$origin" != "$root/$build" ] && [ ! -e "$origin" ]; then
    mkdir -p "$(dirname "$origin")" && ln -s "$root/$build" "$origin"
  fi
  cuda_dirs=$(cuda_lib_dirs)
  # The machine's own libraries first; the carried ones fill the gaps.
  export LD_LIBRARY_PATH="${cuda_dirs:+$cuda_dirs:}${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$root/$build/devcheck-lib"
  export PLEXUS_REQUIRE_CUDA=1 PLEXUS_BACKENDS='' PLEXUS_SKIP_DEFAULT_DIR=1
  backends="$root/$build/gpu_cuda:$root/$build/cpu_ref"
}

# The benchmark (bench/cuda_vs_torch.py) with the machine's python3; extra
# arguments after the first two go to the script.
run_bench() {
  local logs=$1 name=$2
  shift 2
  python3 "$root/bench/cuda_vs_torch.py" --plexus "$root/$build/tools/plexus" \
    --backend-path "$root/$build/gpu_cuda" --backend-path "$root/$build/cpu_ref" \
    --work "$logs/$name-models" --json "$logs/$name.json" "$@"
}

run_checks() {
  local what=$1 report=${4:-${OUT:-$build/devcheck-report}}
  mkdir -p "$report"
  local logs cuda_dirs backends
  logs=$(mktemp -d)
  setup_run || return 1
  local summary="$report/report${what:+-$what}.txt" passed=0 failed=0
  {
    echo "gpu_cuda device check${what:+ ($what)}, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
    echo "CUDA library directories: ${cuda_dirs:-none found}"
    if command -v nvidia-smi > /dev/null; then nvidia-smi -L 2>&1; else echo "no nvidia-smi"; fi
  } > "$summary"
  step() { # step NAME COMMAND...: its output to NAME.log, its verdict to the report
    local name=$1
    shift
    local start=$SECONDS
    if "$@" > "$logs/$name.log" 2>&1; then
      passed=$((passed + 1))
      echo "PASS $name ($((SECONDS - start)) s)" >> "$summary"
    else
      failed=$((failed + 1))
      echo "FAIL $name ($((SECONDS - start)) s): see $name.log in logs.tar.gz" >> "$summary"
      tail -n 5 "$logs/$name.log" | sed 's/^/    /' >> "$summary"
    fi
  }
  if [ "$what" = "" ]; then
    step info sh -c 'PLEXUS_BACKEND_PATH="$1" "$2"/tools/plexus info &&
                     PLEXUS_BACKEND_PATH="$1" "$2"/tools/plexus info | grep -A2 "^  gpu_cuda:" |
                     grep -q "available: *yes"' sh "$backends" "$build"
    step test_gpu_cuda env PLEXUS_BACKEND_PATH= "$build/tests/test_gpu_cuda" --tap=-
    step ops_gpu_cuda env PLEXUS_BACKEND_PATH= PLEXUS_TEST_OPS_BACKEND=gpu_cuda \
      "$build/tests/test_ops_network" --tap=-
    # Passing on an unavailable backend checks nothing: it must be available.
    step conformance sh -c 'out=$("$1"/tools/plexus conformance "$1"/gpu_cuda/gpu_cuda.so); rc=$?
                            printf "%s\n" "$out"
                            [ $rc -eq 0 ] && ! printf "%s\n" "$out" | grep -q "unavailable here"' \
      sh "$build"
    # gpu_cuda must run some of the model's layers (the rest fall back).
    step digits_gpu_cuda sh -c 'out=$(PLEXUS_BACKEND_PATH="$1" "$2"/tools/plexus run \
                                      onnx/models/digits/digits.onnx \
                                      --input image=onnx/models/digits/inputs/digit-7.npy \
                                      --backends gpu_cuda,cpu_ref --show-layers \
                                      --iterations 100 2>&1); rc=$?
                                printf "%s\n" "$out"
                                [ $rc -eq 0 ] &&
                                  printf "%s\n" "$out" | grep -q "^  gpu_cuda: [1-9][0-9]* layers"' \
      sh "$backends" "$build"
    step digits_cpu_ref env PLEXUS_BACKEND_PATH="$backends" "$build/tools/plexus" run \
      onnx/models/digits/digits.onnx --input image=onnx/models/digits/inputs/digit-7.npy \
      --backends cpu_ref --iterations 100
    # The same top classes on both (the lines of the classifier's report).
    step digits_agree sh -c 'a=$(grep "top-1" "$1/digits_gpu_cuda.log") &&
                             b=$(grep "top-1" "$1/digits_cpu_ref.log") && [ "$a" = "$b" ]' \
      sh "$logs"
    step bench run_bench "$logs" bench --compile-precisions none \
      --gemm-bench "$root/$build/bench/plexus-bench-cuda-gemm"
    grep -h "^ok\|^not ok" "$logs/test_gpu_cuda.log" "$logs/ops_gpu_cuda.log" |
      grep -c "# SKIP" | sed 's/^/tests skipped (refused operators): /' >> "$summary"
    grep -h "^conformance \|Latency" "$logs"/*.log >> "$summary"
  elif [ "$what" = sanitize ]; then
    if command -v compute-sanitizer > /dev/null; then
      step memcheck env PLEXUS_BACKEND_PATH= compute-sanitizer --tool memcheck \
        --leak-check full --error-exitcode 1 "$build/tests/test_gpu_cuda" --tap=- -j1
    else
      echo "no compute-sanitizer on this machine: nothing checked" >> "$summary"
      failed=$((failed + 1))
    fi
  else
    step bench-compile run_bench "$logs" bench-compile --precisions fp16,fp32 \
      --compile-precisions fp16,fp32
  fi
  # The benchmark's tables and JSON on their own; everything in one archive.
  local b
  for b in bench bench-compile; do
    [ -f "$logs/$b.log" ] && grep -v "^\[torch.onnx\]" "$logs/$b.log" > "$report/$b.txt"
    [ -f "$logs/$b.json" ] && cp "$logs/$b.json" "$report/"
  done
  echo "device-check${what:+ ($what)}: $passed passed, $failed failed" >> "$summary"
  tar -czf "$report/logs${what:+-$what}.tar.gz" -C "$logs" --exclude='*-models' .
  rm -rf "$logs"
  cat "$summary"
  [ "$failed" -eq 0 ]
}

case "$mode" in
  prepare) prepare ;;
  run) run_checks "" "$@" ;;
  bench-compile) run_checks bench-compile "$@" ;;
  sanitize) run_checks sanitize "$@" ;;
  *) echo "usage: $0 prepare [BUILD] | run|bench-compile|sanitize [BUILD] [REPORT_DIR]" >&2
     exit 2 ;;
esac
