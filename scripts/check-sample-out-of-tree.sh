#!/bin/sh
# Proves that a third party can build a backend from what `meson install`
# installs, and nothing else: installs Plexus into a staging prefix, checks
# that the documentation was installed, copies the sample backend's sources
# from the installed share/plexus/sample (found through the staged
# plexus-backend.pc, as plugins/sample/README.md says), builds the copy
# against that .pc with pkg-config only, drops the result into a fresh
# directory, checks that the staged `plexus info` lists it as available and
# that the staged `plexus conformance` passes it, and runs a small model with the staged `plexus run --backends sample,cpu_ref`:
# the sample runs the Add, the Gather it refuses falls back to cpu_ref with
# its reason, and the output equals a run on cpu_ref alone.
#
# usage: scripts/check-sample-out-of-tree.sh [WORKDIR]
set -eu

src=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d /tmp/plexus-sample-check.XXXXXX)}
stage="$work/stage"
rm -rf "$work/plexus-build" "$stage" "$work/sample-src" "$work/sample-build" "$work/drop" \
  "$work/out-sample" "$work/out-cpu_ref"
mkdir -p "$work"

fail() {
  echo "check-sample: $*" >&2
  exit 1
}

meson setup "$work/plexus-build" "$src" --prefix="$stage" -Dtests=false >/dev/null
meson install -C "$work/plexus-build" >/dev/null

pcdir=$(dirname "$(find "$stage" -name plexus-backend.pc | head -n 1)")
[ -n "$pcdir" ] || fail "plexus-backend.pc was not installed"

docdir="$stage/share/doc/plexus"
for doc in README.md docs/backend-abi.md docs/onnx-import.md; do
  [ -f "$docdir/$doc" ] || fail "$doc was not installed under $docdir"
done

sampledir=$(PKG_CONFIG_PATH="$pcdir" pkg-config --variable=sampledir plexus-backend)
[ -f "$sampledir/sample_backend.c" ] || fail "the sample was not installed in '$sampledir'"
case "$sampledir" in
  "$stage"/*) ;;
  *) fail "sampledir '$sampledir' is not under the staging prefix $stage" ;;
esac

cp -r "$sampledir" "$work/sample-src"
PKG_CONFIG_PATH="$pcdir" meson setup "$work/sample-build" "$work/sample-src" \
  -Dbackenddir="$work/drop" >/dev/null
meson compile -C "$work/sample-build" >/dev/null
meson install -C "$work/sample-build" >/dev/null

exports=$(nm -D --defined-only "$work/drop/sample.so" | awk '{print $3}')
if [ "$exports" != "plx_backend_entry" ]; then
  echo "check-sample: sample.so exports more than its entry point:" >&2
  echo "$exports" >&2
  exit 1
fi

json=$("$stage/bin/plexus" info --json --no-env --no-default-dir --backend-path "$work/drop")
printf '%s' "$json" | python3 -c '
import json, sys
doc = json.load(sys.stdin)
found = [b for b in doc["backends"] if b["id"] == "sample"]
if not found or not found[0]["available"]:
    sys.exit("check-sample: plexus info does not list an available sample backend:\n" + json.dumps(doc, indent=1))
print("check-sample: ok: %s %s loaded from %s" % (found[0]["name"], found[0]["version"], found[0]["path"]))
'
"$stage/bin/plexus" info --no-env --no-default-dir --backend-path "$work/drop"

# The vendor's copy passes the staged `plexus conformance`: every check a
# program can make of the ABI, and its layers' results against the
# reference kernels (docs/conformance.md, "Checking a backend").
if ! report=$("$stage/bin/plexus" conformance "$work/drop/sample.so"); then
  printf '%s\n' "$report" >&2
  fail "plexus conformance fails the sample built out of tree"
fi
printf '%s\n' "$report" | tail -n 1

# The staged cpu_ref (in the default directory) beside the sample's drop.
model="$src/tests/data/onnx/two_inputs.onnx"
"$stage/bin/plexus" run "$model" --no-env --backend-path "$work/drop" \
  --backends sample,cpu_ref --iterations 1 --output-dir "$work/out-sample"
json=$("$stage/bin/plexus" run "$model" --no-env --backend-path "$work/drop" \
  --backends sample,cpu_ref --iterations 1 --json)
printf '%s' "$json" | python3 -c '
import json, sys
a = json.load(sys.stdin)["assignment"]
if not a["layers"].get("sample"):
    sys.exit("check-sample: no layer ran on the sample:\n" + json.dumps(a, indent=1))
fell = [f for f in a["fallbacks"] if f["layer"] == "gather" and f["from"] == "sample" and f["to"] == "cpu_ref"]
if not fell:
    sys.exit("check-sample: the gather did not fall back from sample to cpu_ref:\n" + json.dumps(a, indent=1))
print("check-sample: ok: %d layers on sample, gather fell back to cpu_ref: %s" % (a["layers"]["sample"], fell[0]["reason"]))
'
"$stage/bin/plexus" run "$model" --no-env --backends cpu_ref --iterations 1 \
  --output-dir "$work/out-cpu_ref" >/dev/null
cmp "$work/out-sample/y.npy" "$work/out-cpu_ref/y.npy" ||
  fail "the output on sample,cpu_ref differs from the output on cpu_ref alone"
echo "check-sample: ok: the output on sample,cpu_ref equals the output on cpu_ref"
