#!/usr/bin/env bash
# One prepared pass of trainprof on a lent GPU machine (docs/gpu-validation.md), ordered by value so a
# run cut off by the device budget still pays: the gpu tests, the MFU ladder of the reference
# workload (the compiled rung profiled, its trace kept), bench matmul/bandwidth, profile -- of a
# plain third-party script, analyze of the real trace, the Monitor overhead, then the whole suite.
#
#   OUT=/tmp/gout DEADLINE_S=520 bash scripts/gpu_validation.sh              # on the GPU machine
#   OUT=/tmp/gout DEV=cpu PRESET=tiny DEADLINE_S=300 bash scripts/gpu_validation.sh   # dry run here
#
# Everything lands under $OUT: log.txt (every command, its exit code and seconds), res.tar.gz (the
# small outputs: run.json, report.md, bench.json, analysis.json, rebuilt after each stage) and the
# kept traces. A stage starts only if its budget fits before DEADLINE_S.
set -u
OUT=${OUT:?set OUT}
DEV=${DEV:-cuda}
PRESET=${PRESET:-gpt2-124m}
DEADLINE_S=${DEADLINE_S:-520}
W=${W:-/tmp/gv}
T0=$(date +%s)
mkdir -p "$OUT" "$W/keep"
LOG=$OUT/log.txt
export PYTHONUNBUFFERED=1

left() { echo $(( DEADLINE_S - ($(date +%s) - T0) )); }
say() { echo "=== $*" | tee -a "$LOG"; }
# step NAME BUDGET_S CMD...: runs CMD under a timeout, logs its output, exit code and seconds
step() {
  local name=$1 budget=$2; shift 2
  if [ "$(left)" -lt "$budget" ]; then say "SKIP $name (budget ${budget}s > $(left)s left)"; return 0; fi
  say "BEGIN $name $(date -u +%H:%M:%S) budget ${budget}s: $*"
  local s=$(date +%s)
  timeout -k 5 "$budget" "$@" >>"$LOG" 2>&1
  local rc=$?
  say "END $name rc=$rc $(( $(date +%s) - s ))s"
  return 0
}
keep() {  # the small outputs of every run folder so far, without traces or pickles
  (cd "$W" && find runs -maxdepth 2 -type f \( -name '*.json' -o -name '*.md' -o -name '*.jsonl' -o -name '*.txt' \) \
     -size -4M -print0 2>/dev/null | tar --null -czf "$OUT/res.tar.gz" -T - 2>/dev/null)
}

say "host $(hostname) $(date -u +%FT%TZ) dev=$DEV preset=$PRESET"
if [ "$DEV" = cuda ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv >>"$LOG" 2>&1
  # the machine is bare: msgspec and google-re2 travel as wheels (.whl, README of the device tool)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    >>"$LOG" 2>&1 && export PYTHONPATH=/tmp/site
  # the C scanner and graph loops built for this Python; the pure path is used if this fails
  python3 setup.py -q build_ext --inplace >>"$LOG" 2>&1 || say "build_ext failed: pure-Python paths"
  export PYTHONPATH=$PWD/src:${PYTHONPATH:-}
fi
python3 -c "import torch, trainprof, sys; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available(), \
torch.cuda.get_device_name(0) if torch.cuda.is_available() else '-')" >>"$LOG" 2>&1
TP="python3 -m trainprof"
REPO=$PWD
R=$W/runs
mkdir -p "$R"
COMMON="--preset $PRESET --device $DEV --steps 25 --warmup-steps 5 --eval-batches 1 --rows 12"
[ "$DEV" = cuda ] && DT=bf16 || DT=fp32

# 1. the gpu-marked tests (skipped without CUDA)
step gpu-tests 150 python3 -m pytest -q -n 0 -p no:cacheprovider -m gpu tests/integration/test_gpu.py
# 2. the MFU ladder: each rung adds knobs to the one before; the compiled rung is profiled
step l1-base 70 $TP run $COMMON --dtype $DT --out "$R/l1-base"; keep
step l2-fused-pad 70 $TP run $COMMON --dtype $DT --optimizer fused --pad-vocab --out "$R/l2-fused-pad"; keep
step l3-compile-prof 170 $TP run $COMMON --dtype $DT --optimizer fused --pad-vocab --compile --profile \
  --profile-steps 2 --system-interval 0.2 --out "$R/l3-compile"; keep
cp "$R"/l3-compile/trace.json.gz "$OUT/trace-l3-compile.json.gz" 2>/dev/null
# 3. the machine's ceilings
step bench-matmul 75 $TP bench matmul --dtype $DT --device $DEV --out "$R/bench-matmul"; keep
step bench-bandwidth 45 $TP bench bandwidth --device $DEV --out "$R/bench-bw"; keep
# 4. a plain third-party script (nanoGPT at GPT-2 124M shape, synthetic data) under profile --
NG=$W/nanogpt
python3 tests/data/thirdparty/make_data.py nanogpt "$NG" >/dev/null 2>&1
if [ "$DEV" = cuda ]; then
  NGARGS="--device=cuda --dtype=bfloat16 --n_layer=12 --n_head=12 --n_embd=768 --block_size=1024 --batch_size=8 \
--gradient_accumulation_steps=1 --max_iters=30"
else NGARGS="--max_iters=24"; fi
# shellcheck disable=SC2086
step profile-nanogpt 120 bash -c "cd '$NG' && python3 -m trainprof profile --rows 12 --out '$R/prof-nanogpt' -- \
  python3 train.py --device=cpu --compile=False --dtype=float32 --dataset=synth --n_layer=2 --n_head=2 --n_embd=64 \
  --block_size=64 --batch_size=8 --gradient_accumulation_steps=2 --eval_interval=1000 --eval_iters=1 --log_interval=1 \
  --always_save_checkpoint=False $NGARGS"; keep
cp "$R"/prof-nanogpt/trace.json.gz "$OUT/trace-nanogpt.json.gz" 2>/dev/null
# 5. analyze of the real profiled trace, timed
TR=$(ls "$R"/l3-compile/*trace*.json* 2>/dev/null | head -1)
[ -n "$TR" ] && step analyze 60 $TP analyze "$TR" --out "$R/analyze-l3" --top 15; keep
# 6. the biggest micro-batch rung, then the Monitor's overhead
step l4-compile-mb16 130 $TP run $COMMON --dtype $DT --optimizer fused --pad-vocab --compile --micro-batch 16 \
  --out "$R/l4-compile-mb16"; keep
step monitor-overhead 100 python3 benchmarks/monitor_overhead.py --device $DEV --preset $PRESET --trials 3 --steps 20; keep
step numa 20 $TP numa
# 7. the whole suite with CUDA present (tests assume nothing about the device unless marked)
[ "${SKIP_SUITE:-0}" = 1 ] || # -v: one line per test as it ends, so a run cut off by its budget keeps the failures' names
step suite "$(( $(left) > 60 ? $(left) - 10 : 60 ))" python3 -m pytest -v -rfE -p no:cacheprovider -n 12 \
  --dist loadfile -m "not gpu" tests
keep
say "DONE $(( $(date +%s) - T0 ))s"
