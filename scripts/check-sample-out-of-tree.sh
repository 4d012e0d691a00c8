#!/bin/sh
# Proves that a third party can build a backend with the installed SDK alone:
# installs Plexus into a staging prefix, builds plugins/sample against the
# staged plexus-backend.pc with pkg-config only (from a copy of the directory,
# outside this source tree), drops the result into a fresh directory, and
# checks that the staged `plexus info` lists it as available.
#
# usage: scripts/check-sample-out-of-tree.sh [WORKDIR]
set -eu

src=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d /tmp/plexus-sample-check.XXXXXX)}
stage="$work/stage"
rm -rf "$work/plexus-build" "$stage" "$work/sample-src" "$work/sample-build" "$work/drop"
mkdir -p "$work"

meson setup "$work/plexus-build" "$src" --prefix="$stage" -Dtests=false >/dev/null
meson install -C "$work/plexus-build" >/dev/null

pcdir=$(dirname "$(find "$stage" -name plexus-backend.pc | head -n 1)")
[ -n "$pcdir" ] || { echo "check-sample: plexus-backend.pc was not installed" >&2; exit 1; }

cp -r "$src/plugins/sample" "$work/sample-src"
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
