"""Every script in examples/ runs (in its own process) and ends with 'ok'."""
import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = sorted(glob.glob(os.path.join(ROOT, "examples", "*.py")))


def test_there_are_examples():
    assert len(SCRIPTS) >= 7


@pytest.mark.parametrize("script", SCRIPTS, ids=os.path.basename)
def test_example_runs(script, tmp_path):
    env = dict(os.environ, AXLE_CACHE_DIR=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, script], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    last = r.stdout.strip().splitlines()[-1]
    if last.startswith("skipped"):
        pytest.skip(last)
    assert last == "ok", r.stdout
