"""Every finding id the diagnose package writes has its row in docs/rules.md (read, not run)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_every_finding_id_is_in_docs_rules_md():
    doc = (ROOT / "docs" / "rules.md").read_text("utf-8")
    ids = set()
    # pipeline_rules.py: pipeline_bubble is documented with the pipeline analysis (docs/collectives.md)
    for f in sorted(set((ROOT / "src" / "trainprof" / "diagnose").glob("*.py")) - {ROOT / "src/trainprof/diagnose/pipeline_rules.py"}):
        text = f.read_text("utf-8")
        ids |= set(re.findall(r'_make\(\s*"([a-z_]+)"', text)) | set(re.findall(r'id="([a-z_]+)"', text))
        ids |= set(re.findall(r'Finding\(\s*"([a-z_]+)"', text))
    assert "busy_but_slow" in ids and "data_loading" in ids  # the pattern still finds them
    missing = sorted(i for i in ids if f"`{i}`" not in doc)
    assert missing == []
