#!/usr/bin/env python3
"""Prints 'N passed, N failed, N skipped, N expected failures' from meson test
logs (an expected failure is a TAP 'not ok ... # TODO' line, listed in
tests/conformance/expected_failures.txt and docs/conformance.md).

Reads each meson JSON test log given (BUILD/meson-logs/testlog.json, or
the LOGBASE.json of `meson test --logbase LOGBASE`). A TAP test (Criterion
suites) counts each of its TAP results; any other test counts once. A log
whose name ends in .xml is a JUnit XML report (pytest --junitxml, the Python
package's tests): each testcase counts once, as failed when it has a
failure or error, skipped when skipped.
usage: count-tests.py LOG.json|REPORT.xml [LOG.json|REPORT.xml...]
"""
import json
import re
import sys
import xml.etree.ElementTree as ET

TAP_LINE = re.compile(r"^(not ok|ok)\b(.*)$")


def count_junit(path, totals):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"count-tests: {path}: {e}; counted as one failure", file=sys.stderr)
        totals["failed"] += 1
        return
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            totals["failed"] += 1
        elif case.find("skipped") is not None:
            totals["skipped"] += 1
        else:
            totals["passed"] += 1


def count(path, totals):
    if path.endswith(".xml"):
        count_junit(path, totals)
        return
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        # The run that should have written it did not get that far.
        print(f"count-tests: {path}: {e.strerror}; counted as one failure", file=sys.stderr)
        totals["failed"] += 1
        return
    with f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            entry = json.loads(line)
            result = entry.get("result", "")
            stdout = entry.get("stdout") or ""
            tap = [TAP_LINE.match(l.strip()) for l in stdout.splitlines()]
            tap = [m for m in tap if m]
            # Meson 1.0 does not record the protocol: a TAP stream says so itself.
            is_tap = stdout.lstrip().startswith("TAP version") or \
                re.search(r"^1\.\.\d+\s*$", stdout, re.M) is not None
            if is_tap and tap:
                for m in tap:
                    rest = m.group(2)
                    if rest.endswith("# SKIP test was skipped"):
                        # A test that --filter left out (tests/meson.build
                        # splits gpu_opencl so), counted where it runs.
                        continue
                    if "# SKIP" in rest.upper():
                        totals["skipped"] += 1
                    elif m.group(1) == "not ok" and "# TODO" in rest.upper():
                        totals["expected failures"] += 1
                    elif m.group(1) == "ok":
                        totals["passed"] += 1
                    else:
                        totals["failed"] += 1
                # A crash after the last TAP line still fails the test.
                if result not in ("OK", "SKIP", "EXPECTEDFAIL") and \
                        all(m.group(1) == "ok" for m in tap):
                    totals["failed"] += 1
            elif result == "SKIP":
                totals["skipped"] += 1
            elif result in ("OK", "EXPECTEDFAIL"):
                totals["passed"] += 1
            else:
                totals["failed"] += 1


def main():
    totals = {"passed": 0, "failed": 0, "skipped": 0, "expected failures": 0}
    for log in sys.argv[1:]:
        count(log, totals)
    print(f"{totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped, "
          f"{totals['expected failures']} expected failures")
    return 1 if totals["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
