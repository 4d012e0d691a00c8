#!/bin/sh
# Runs one Criterion test program and fails it when a checker complained in
# any of its processes.
#
#   checked_run.sh [--valgrind] PROGRAM ARGS...
#
# Why a script: Criterion runs every test in a worker process, and with
# --tap=- it points the workers' stdout and stderr at /dev/null and ignores
# a worker's exit status once the test has reported. Valgrind's and
# LeakSanitizer's reports, and their error exit codes, would be lost. So each
# checker writes one log per process into a scratch directory, and this
# script prints the logs that hold errors to stderr (meson shows it with
# --print-errorlogs) and turns them into a failing exit status.
#
# Used by tests/meson.build: always in sanitizer builds, and as the
# exe_wrapper of `meson test --setup valgrind`.
set -u

valgrind=no
if [ "${1:-}" = "--valgrind" ]; then
    valgrind=yes
    shift
fi

logs=$(mktemp -d "${TMPDIR:-/tmp}/plexus-checks.XXXXXX") || exit 99
# World-writable (sticky), so that a test child that drops privileges can
# still write its log.
chmod 1777 "$logs"

# Sanitizer reports go to files; UndefinedBehaviorSanitizer stops the
# process at the first error, so that the test is reported as crashed too.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$logs/asan"
UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$logs/ubsan:print_stacktrace=1:halt_on_error=1"
TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}log_path=$logs/tsan"
export ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS

if [ "$valgrind" = yes ]; then
    # The plug-in probe (tools/plugin_probe.c) runs natively: valgrind's
    # start-up would eat the probe's time limit, and the sanitizer builds
    # check it.
    valgrind --trace-children=yes --trace-children-skip='*/plexus-plugin-probe' \
        --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite \
        --error-exitcode=1 --log-file="$logs/valgrind.%p" "$@"
else
    "$@"
fi
rc=$?

bad=0
for f in "$logs"/*; do
    [ -f "$f" ] || continue
    case "$f" in
    */valgrind.*)
        # Every process writes a log; only those with errors matter.
        grep -q 'ERROR SUMMARY: [1-9]' "$f" || continue
        ;;
    esac
    echo "==== $(basename "$f") ====" >&2
    cat "$f" >&2
    bad=1
done
rm -rf "$logs"

if [ "$rc" -ne 0 ]; then
    exit "$rc"
fi
if [ "$bad" -ne 0 ]; then
    echo "checked_run.sh: a checker reported errors (logs above)" >&2
    exit 1
fi
exit 0
