"""Peak memory and time of reading records and journals of 100 MB (issue #45, item 5).

    python benchmarks/record_memory.py [--mb 100] [--cap-gib 6] [--out benchmarks/results/record_memory.json]

Each shape is written to a temp folder and read by the command that reads it (`report DIR`
for run.json, `ettr DIR` for journal.jsonl) in a fresh process whose address space is capped
(benchmarks/attack_memory.run_attack); prints exit code, peak RSS, wall time and the stderr
line. The shapes: a valid run.json of many steps, a run.json holding an untyped field
(`environment`) of `{}` / of floats / of 8-letter strings, the `{}` one with a bad field (the
refusal path), journals of real-looking step lines, of `{}` lines and of `{"event":0}` lines.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from _common import write_json  # noqa: E402
from attack_memory import run_attack  # noqa: E402

BASE = json.loads((REPO / "tests/data/reports/cpu_run/run.json").read_text())


def _run_json(folder: Path, n: int, unit: str | None = None, bad: bool = False) -> Path:
    folder.mkdir()
    doc = dict(BASE)
    if unit is None:  # many real steps
        step = json.dumps(BASE["steps"][1])
        doc["steps"] = "@@"
        body = "[" + ",".join([step] * (n // (len(step) + 1))) + "]"
    else:
        doc["environment"] = {"x": "@@"}
        body = "[" + ",".join([unit] * (n // (len(unit) + 1))) + "]"
    if bad:
        doc["world_size"] = "x"
    (folder / "run.json").write_text(json.dumps(doc).replace('"@@"', body))
    return folder


def _journal(folder: Path, n: int, line: str) -> Path:
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps(BASE))
    (folder / "journal.jsonl").write_text(line * (n // len(line)))
    return folder


STEP_LINE = json.dumps({"event": "step", "pid": 4242, "step": 17, "step_time_s": 0.1234567, "t": 1764371234.567},
                       sort_keys=True, separators=(",", ":")) + "\n"
SHAPES = {
    "run.json: real steps": (lambda f, n: _run_json(f, n), "report"),
    "run.json: {} in environment": (lambda f, n: _run_json(f, n, "{}"), "report"),
    "run.json: {} and a bad field": (lambda f, n: _run_json(f, n, "{}", bad=True), "report"),
    "run.json: floats in environment": (lambda f, n: _run_json(f, n, "1e5"), "report"),
    "run.json: strings in environment": (lambda f, n: _run_json(f, n, '"abcdefgh"'), "report"),
    "journal: real step lines": (lambda f, n: _journal(f, n, STEP_LINE), "ettr"),
    "journal: {} lines": (lambda f, n: _journal(f, n, "{}\n"), "ettr"),
    'journal: {"event":0} lines': (lambda f, n: _journal(f, n, '{"event":0}\n'), "ettr"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=100)
    ap.add_argument("--cap-gib", type=float, default=6.0)
    ap.add_argument("--out")
    args = ap.parse_args()
    n, cap = int(args.mb * 2**20), int(args.cap_gib * 2**30)
    results = {}
    with tempfile.TemporaryDirectory() as d:
        for i, (name, (write, cmd)) in enumerate(SHAPES.items()):
            folder = write(Path(d) / str(i), n)
            argv = [sys.executable, "-m", "trainprof", cmd, str(folder)] + (["--format", "md"] if cmd == "report" else [])
            r = run_attack(argv, cap)
            r["file_mb"] = round(sum(p.stat().st_size for p in folder.iterdir()) / 2**20)
            results[name] = r
            print(f"{name:34} {r['file_mb']:>4} MB  rc {r['rc']}  peak {r['peak_rss_mb']:>5} MB  {r['wall_s']:>5} s  "
                  f"{r['last_stderr_line'][:110] if r['rc'] else ''}", flush=True)
    if args.out:
        write_json(args.out, results)


if __name__ == "__main__":
    main()
