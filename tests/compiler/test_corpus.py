"""The corpus check (tools/corpus_check.py) on a sample of the standard library; the full run is
`python tools/corpus_check.py` (about a minute for identity, longer with --appended-limit 1)."""

import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "corpus_check.py"


def test_stdlib_sample_is_untouched_and_survives_an_appended_event_class():
    out = subprocess.run([sys.executable, str(TOOL), "--limit", "7", "--appended-limit", "90"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert " 0 failure(s)" in out.stdout
