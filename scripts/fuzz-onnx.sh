#!/bin/sh
# Fuzzes the ONNX importer for a bounded time with libFuzzer (clang).
#
#   scripts/fuzz-onnx.sh BUILD_DIR [SECONDS [SEED_DIR...]]
#
# BUILD_DIR is configured (or created) with clang, -Dfuzz=true and
# ASan+UBSan; the seed corpus is every .onnx model of the repository and of
# the SEED_DIRs (CI adds the ONNX backend node tests' models). Exits
# non-zero when libFuzzer finds a crash, a leak, undefined behaviour, an
# allocation over 1.1 GB or a timeout; the input that did it is left in
# BUILD_DIR/fuzz-artifacts/ and printed as a reproduction command.
set -eu
build=${1:?usage: fuzz-onnx.sh BUILD_DIR [SECONDS [SEED_DIR...]]}
seconds=${2:-60}
shift $(( $# < 2 ? $# : 2 ))
src=$(cd "$(dirname "$0")/.." && pwd)

if [ ! -f "$build/build.ninja" ]; then
  CC=clang meson setup "$build" "$src" -Dfuzz=true -Dtests=false \
    -Db_sanitize=address,undefined -Db_lundef=false
fi
ninja -C "$build" onnx/fuzz_onnx_import

corpus="$build/fuzz-corpus"
artifacts="$build/fuzz-artifacts"
mkdir -p "$corpus" "$artifacts"
# Seeds named by content, so that models of the same name do not collide.
find "$src/onnx/models" "$src/tests/data" "$@" -name '*.onnx' -size -64k | while read -r f; do
  cp "$f" "$corpus/$(sha1sum "$f" | cut -c1-16).onnx"
done

echo "fuzz-onnx: $(ls "$corpus" | wc -l) seed inputs, ${seconds}s"
if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$build/onnx/fuzz_onnx_import" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=4096 -malloc_limit_mb=1100 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" 2>"$build/fuzz.log"; then
  tail -n 60 "$build/fuzz.log"
  for f in "$artifacts"/*; do
    [ -e "$f" ] && echo "fuzz-onnx: reproduce with: $build/onnx/fuzz_onnx_import $f"
  done
  exit 1
fi
grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$build/fuzz.log" || true
echo "fuzz-onnx: no crash in ${seconds}s"
