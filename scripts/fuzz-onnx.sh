#!/bin/sh
# Fuzzes the ONNX importer for a bounded time with libFuzzer (clang).
#
#   scripts/fuzz-onnx.sh BUILD_DIR [SECONDS [SEED_DIR...]]
#
# BUILD_DIR is configured (or created) with clang, -Dfuzz=true and
# ASan+UBSan; the seed corpus is every .onnx model of the repository and of
# the SEED_DIRs (CI adds the ONNX backend node tests' models), plus deeply
# nested ones made below; inputs grow to 256 KiB (-max_len). Exits
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

# Deeply nested seeds (If graphs in graph attributes, sequence types in type
# attributes), at, past and far past the importer's nesting limit of 100
# messages (onnx/src/nesting.c), written on the wire directly: the fuzzer
# starts from inputs that reach the recursive decoder's depths.
python3 - "$corpus" <<'PY'
import sys
def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)
def field(n, payload):
    return varint(n << 3 | 2) + varint(len(payload)) + payload
def model(graph):
    return varint(1 << 3) + varint(8) + field(7, graph) + field(8, varint(2 << 3) + varint(17))
def graphs(levels):
    g = b""
    for _ in range(levels):
        g = field(1, field(5, field(6, g) + field(1, b"then_branch")) + field(4, b"If"))
    return model(g)
def types(levels):
    t = b""
    for _ in range(levels):
        t = field(4, field(1, t))
    return model(field(1, field(5, field(14, t))))
for name, data in [("nested_graphs_33", graphs(33)), ("nested_graphs_34", graphs(34)),
                   ("nested_graphs_3000", graphs(3000)), ("nested_types_48", types(48)), ("nested_types_49", types(49)),
                   ("nested_types_3000", types(3000))]:
    with open(f"{sys.argv[1]}/{name}.onnx", "wb") as f:
        f.write(data)
PY

echo "fuzz-onnx: $(ls "$corpus" | wc -l) seed inputs, ${seconds}s"
if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$build/onnx/fuzz_onnx_import" -max_total_time="$seconds" -timeout=10 -max_len=262144 \
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
