#!/usr/bin/env python3
"""Writes the Results section of docs/conformance.md from run_conformance's
TAP output, so that the document says what the runner printed.

    build/tests/run_conformance --backend-path build/cpu_ref \\
        --expected-failures tests/conformance/expected_failures.txt NODE_DIR > conf.tap
    .venv-conformance/bin/python scripts/conformance-report.py conf.tap NODE_DIR

NODE_DIR is read for the operators of the passing cases (needs the onnx
package). Prints Markdown on stdout.
"""
import collections
import os
import re
import sys

import onnx

LINE = re.compile(r"^(ok|not ok) \d+ - (\S+) \[([^\]]+)\](.*)$")


def generalise(reason):
    """'input 'x' has ...' and numbers vary from case to case."""
    reason = re.sub(r"input '[^']*'", "input '…'", reason)
    reason = re.sub(r"input \d+ \(", "input N (", reason)
    return reason


def group(reason):
    if "element type" in reason or "cast to" in reason or "not a tensor" in reason:
        return "Data types and kinds Plexus does not have"
    if "operator not supported" in reason:
        return "Operators the importer does not convert"
    if "domain" in reason or "opset" in reason and "Plexus imports" in reason:
        return "Other domains and old opsets"
    if "must be known at import" in reason:
        return "Values needed at import that no small input gives"
    if reason.startswith("refused by"):
        return "Refused by the backend"
    if reason.startswith("every input valued"):
        return "Folded whole at import (every input valued)"
    return "Attributes, modes and variants not supported"


def main():
    tap, node_dir = sys.argv[1], sys.argv[2]
    results = collections.defaultdict(dict)  # backend -> case -> (kind, text)
    for line in open(tap, encoding="utf-8"):
        m = LINE.match(line.rstrip("\n"))
        if not m:
            continue
        ok, case, backend, rest = m.groups()
        if ok == "not ok":
            results[backend][case] = ("fail", rest.lstrip(": ").split(" # TODO")[0])
        elif "# SKIP" in rest:
            results[backend][case] = ("skip", rest.split("# SKIP", 1)[1].strip())
        elif "(specialised on the values of" in rest:
            results[backend][case] = ("valued", rest.strip()[1:-1])
        else:
            results[backend][case] = ("pass", "")

    out = []
    out.append("| backend | cases | passed | of which specialised on input values | failed | "
               "skipped |")
    out.append("|---|---|---|---|---|---|")
    for backend, cases in sorted(results.items()):
        kinds = collections.Counter(k for k, _ in cases.values())
        passed = kinds["pass"] + kinds["valued"]
        out.append(f"| {backend} | {len(cases)} | {passed} | {kinds['valued']} | "
                   f"{kinds['fail']} | {kinds['skip']} |")
    out.append("")

    for backend, cases in sorted(results.items()):
        ops = set()
        for case, (kind, _) in cases.items():
            if kind in ("pass", "valued") and not case.endswith("_expanded"):
                model = onnx.load(os.path.join(node_dir, case, "model.onnx"),
                                  load_external_data=False)
                ops.update(n.op_type for n in model.graph.node)
        out.append(f"On {backend}, the passing cases (leaving out `_expanded` ones) "
                   f"exercise {len(ops)} ONNX operators: {', '.join(sorted(ops))}.")
        out.append("")

        fails = [(c, t) for c, (k, t) in sorted(cases.items()) if k == "fail"]
        out.append(f"### Failures on {backend} ({len(fails)})")
        out.append("")
        if fails:
            out.append("| case | message |")
            out.append("|---|---|")
            for case, text in fails:
                out.append(f"| {case} | `{text}` |")
        else:
            out.append("None.")
        out.append("")

        skips = collections.defaultdict(collections.Counter)
        for case, (kind, text) in cases.items():
            if kind != "skip":
                continue
            text = text.removeprefix("unsupported: ")
            for reason in text.split("; "):
                reason = generalise(reason)
                skips[group(reason)][reason] += 1
        out.append(f"### Skip reasons on {backend}")
        out.append("")
        out.append("A case skipped for several reasons counts under each.")
        out.append("")
        for title, counts in sorted(skips.items(), key=lambda kv: -sum(kv[1].values())):
            out.append(f"#### {title} ({sum(counts.values())})")
            out.append("")
            out.append("| reason | cases |")
            out.append("|---|---|")
            for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
                out.append(f"| {reason} | {n} |")
            out.append("")
    print("\n".join(out))


if __name__ == "__main__":
    main()
