#!/usr/bin/env bash
# The C scanner (src/trainprof/trace/_scan.c) and the graph loops (analysis/graph/_loops.c) under
# AddressSanitizer and UndefinedBehaviorSanitizer:
# a copy of src/ and tests/ in a temp dir, the extension rebuilt there with -fsanitize, then the
# trace and fuzz tests and N randomly mutated event batches (tests/fuzz/mutate_batches.py) run
# against it. Not part of the suite (a sanitized build and LD_PRELOAD); run by hand after
# changing either C file:   bash tests/fuzz/sanitize_scanner.sh [N=100000]
# 2026-11-25: found a memcpy/memmove of 0 bytes from a NULL buffer (fixed); then clean, both
# extensions: 254 tests and 100,000 batches (19,749 of them taken by the scanner); again clean
# after the word-at-a-time strings, keys and growth helper: 260 tests, 100,000 batches.
# 2026-11-26 (issue #33: lone surrogates refused in every string): clean, 299 tests (the new
# fuzz file included) and 30,000 batches (5,949 taken by the scanner).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
n="${1:-100000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$repo/src" "$repo/tests" "$work/"
for ext in trace/_scan analysis/graph/_loops; do  # both C extensions (the graph loops take our own arrays)
    rm -f "$work"/src/trainprof/$ext*.so
    gcc -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -fPIC -shared \
        $(python3-config --includes) "$work/src/trainprof/$ext.c" \
        -o "$work/src/trainprof/$ext$(python3-config --extension-suffix)"
done
export ASAN_OPTIONS=detect_leaks=0  # CPython's own allocations at exit are not ours
export LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
export PYTHONPATH="$work/src"
cd "$work"
python3 -m pytest -q -p no:cacheprovider tests/unit/trace tests/fuzz/test_fuzz_trace.py tests/fuzz/test_fuzz_paths.py \
    tests/unit/analysis/test_loops.py \
    tests/unit/analysis/test_critical_path.py tests/unit/analysis/test_whatif.py
python3 tests/fuzz/mutate_batches.py "$n"
