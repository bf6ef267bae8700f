"""Write the test suite's counts into README.md from a pytest JUnit XML report.

    python -m pytest -q --junitxml=/tmp/suite.xml        # or: bash .ci/run (add the flag)
    python scripts/readme_counts.py /tmp/suite.xml [--readme README.md] [--check]

The README's figures live between markers, so no one types them:

    <!-- counts:summary -->1039 passed, 4 skipped (3 need a CUDA GPU, ...) in 4 min 57 s<!-- /counts -->
    <!-- counts:when -->2026-11-25 18:40 UTC<!-- /counts -->

`--check` rewrites nothing and exits 1 when the README differs from the XML (for CI).
Skips are grouped by their reason (what a reader can install or provide to run them);
xfails (pytest.xfail in the XML) are counted apart from skips.
"""

from __future__ import annotations

import argparse
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

# skip message (regex) -> what the skipped tests need, in the README's words
REASONS = (
    (r"CUDA GPU", "a CUDA GPU"),
    (r"PERFETTO_TP|trace_processor", "Perfetto's trace_processor_shell"),
    (r"tensorboard", "tensorboard (the [integrations] extra)"),
    (r"transformers|accelerate", "transformers (the [integrations] extra)"),
    (r"lightning", "lightning (the [integrations] extra)"),
    (r"\bray\b|\[cluster\]", "ray (the [cluster] extra)"),
    (r"Chromium", "Chromium (the OS package)"),
    (r"C compiler", "a C compiler"),
)
MARK = re.compile(r"<!-- counts:(\w+) -->(.*?)<!-- /counts -->", re.DOTALL)


def _reason(message: str) -> str:
    for pattern, words in REASONS:
        if re.search(pattern, message, re.IGNORECASE):
            return words
    return message.strip().split("\n")[0][:80] or "skipped"


def read(xml_path: Path) -> dict:
    """passed, failed, errors, skipped (by reason), xfailed, seconds and start time of one run."""
    root = ET.parse(xml_path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = Counter()
    skips: Counter = Counter()
    seconds = 0.0
    started = None
    for suite in suites:
        seconds += float(suite.get("time") or 0.0)
        started = started or suite.get("timestamp")
        for case in suite.iter("testcase"):
            kinds = {child.tag: child for child in case}
            if "failure" in kinds:
                counts["failed"] += 1
            elif "error" in kinds:
                counts["errors"] += 1
            elif "skipped" in kinds:
                s = kinds["skipped"]
                if (s.get("type") or "") == "pytest.xfail":
                    counts["xfailed"] += 1
                else:
                    counts["skipped"] += 1
                    skips[_reason(s.get("message") or "")] += 1
            else:
                counts["passed"] += 1
    return {"counts": counts, "skips": skips, "seconds": seconds, "started": started}


def _duration(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s} s" if m else f"{s} s"


def texts(run: dict) -> dict[str, str]:
    """The text of each README marker."""
    c, skips = run["counts"], run["skips"]
    parts = [f"{c['passed']:,} passed"]
    for key in ("failed", "errors"):
        if c[key]:
            parts.append(f"{c[key]:,} {key}")
    if c["xfailed"]:
        parts.append(f"{c['xfailed']:,} xfailed (inconsistencies at their source, each test naming the analyser)")
    if c["skipped"]:
        why = ", ".join(f"{n} {'needs' if n == 1 else 'need'} {r}"
                        for r, n in sorted(skips.items(), key=lambda kv: (-kv[1], kv[0])))
        parts.append(f"{c['skipped']:,} skipped ({why})")
    when = "unknown time"
    if run["started"]:
        t = datetime.fromisoformat(run["started"])
        t = t if t.tzinfo else t.astimezone()  # pytest writes local time without a zone
        when = t.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return {"summary": ", ".join(parts) + f" in {_duration(run['seconds'])}", "when": when}


def rewrite(readme: str, values: dict[str, str]) -> str:
    """`readme` with each known marker's text replaced; unknown markers are an error."""
    def sub(m: re.Match) -> str:
        name = m.group(1)
        if name not in values:
            raise KeyError(name)
        return f"<!-- counts:{name} -->{values[name]}<!-- /counts -->"

    return MARK.sub(sub, readme)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("junit_xml", type=Path, help="pytest --junitxml output of the whole suite")
    ap.add_argument("--readme", type=Path, default=Path(__file__).resolve().parents[1] / "README.md")
    ap.add_argument("--check", action="store_true", help="exit 1 if README.md differs; write nothing")
    args = ap.parse_args(argv)
    try:
        run = read(args.junit_xml)
    except (OSError, ET.ParseError) as e:
        print(f"readme_counts: {args.junit_xml}: {e}", file=sys.stderr)
        return 2
    old = args.readme.read_text(encoding="utf-8")
    if not MARK.search(old):
        print(f"readme_counts: {args.readme}: no <!-- counts:NAME --> markers", file=sys.stderr)
        return 2
    try:
        new = rewrite(old, texts(run))
    except KeyError as e:
        print(f"readme_counts: {args.readme}: unknown marker counts:{e.args[0]}", file=sys.stderr)
        return 2
    if args.check:
        return 0 if new == old else 1
    if new != old:
        tmp = args.readme.with_name(f".{args.readme.name}.tmp")
        tmp.write_text(new, encoding="utf-8")
        tmp.replace(args.readme)  # atomic: a reader never sees half a README
    print(texts(run)["summary"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
