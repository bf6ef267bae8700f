#!/usr/bin/env bash
# The C scanner (src/trainprof/trace/_scan.c) and the graph loops (analysis/graph/_loops.c) under
# AddressSanitizer and UndefinedBehaviorSanitizer:
# a copy of src/ and tests/ in a temp dir, the extensions rebuilt there with -fsanitize, then
# tests and N randomly mutated event batches (tests/fuzz/mutate_batches.py) run against them.
# Not part of the pytest suite (a sanitized build and LD_PRELOAD).
#
#   bash tests/fuzz/sanitize_scanner.sh [N=100000]   by hand after changing either C file: the
#       trace, fuzz and graph tests and N batches (a few minutes on 2 cores)
#   bash tests/fuzz/sanitize_scanner.sh --ci          .ci/run: the two extensions' own tests
#       (test_scanner.py, its Hypothesis cases included, and test_loops.py) and 30,000 batches,
#       ~22 s on 2 cores at load 3; each part under a time limit (35 s, 20 s) so that the whole stays under ~60 s.
#       A machine whose compiler cannot build and load sanitized code skips with a message.
#
# Results by hand: docs/reliability.md ("the reader's C scanner"); the CI timing:
# docs/benchmarks.md ("C sanitizer and fuzz run in CI").
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
ci=0
if [ "${1:-}" = "--ci" ]; then ci=1; shift; fi
n="${1:-$([ $ci = 1 ] && echo 30000 || echo 100000)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

skip() { echo "sanitize_scanner: skipped: $1"; exit 0; }
flags="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -fPIC -shared"
command -v gcc >/dev/null || skip "no gcc on this machine"
command -v python3-config >/dev/null || skip "no python3-config (Python headers) on this machine"
asan="$(gcc -print-file-name=libasan.so)"; ubsan="$(gcc -print-file-name=libubsan.so)"
[ -e "$asan" ] && [ -e "$ubsan" ] || skip "gcc has no libasan/libubsan runtime (package libasan/libubsan)"
echo 'int f(int x) { return x + 1; }' > "$work/probe.c"
gcc $flags "$work/probe.c" -o "$work/probe.so" 2>/dev/null || skip "gcc cannot build with -fsanitize=address,undefined"

cp -r "$repo/src" "$repo/tests" "$work/"
for ext in trace/_scan analysis/graph/_loops; do  # both C extensions (the graph loops take our own arrays)
    rm -f "$work"/src/trainprof/$ext*.so
    gcc $flags $(python3-config --includes) "$work/src/trainprof/$ext.c" \
        -o "$work/src/trainprof/$ext$(python3-config --extension-suffix)"
done
export ASAN_OPTIONS=detect_leaks=0  # CPython's own allocations at exit are not ours
export LD_PRELOAD="$asan:$ubsan"
export PYTHONPATH="$work/src"
cd "$work"
LD_PRELOAD="$LD_PRELOAD" python3 -c pass 2>/dev/null || { unset LD_PRELOAD; skip "the sanitizer runtime does not load into python3"; }
if [ $ci = 1 ]; then
    # 35 s and 20 s limits (2x what they took at load 3): an exit of 124 is a hang (or a machine far slower than ours), a failure
    timed_out() { rc=$?; [ $rc = 124 ] && echo "sanitize_scanner: $1 timed out after $2 s (a hang, or a machine far slower)"; exit $rc; }
    timeout 35 python3 -m pytest -q -p no:cacheprovider tests/unit/trace/test_scanner.py tests/unit/analysis/test_loops.py \
        || timed_out "the tests" 35
    timeout 20 python3 tests/fuzz/mutate_batches.py "$n" || timed_out "the mutated batches" 20
else
    python3 -m pytest -q -p no:cacheprovider tests/unit/trace tests/fuzz/test_fuzz_trace.py tests/fuzz/test_fuzz_paths.py \
        tests/unit/analysis/test_loops.py \
        tests/unit/analysis/test_critical_path.py tests/unit/analysis/test_whatif.py
    python3 tests/fuzz/mutate_batches.py "$n"
fi
