"""The fuzz harness in the test suite: every past finding (tests/fuzz/corpus) replayed, and a
short run of each campaign (`make fuzz` runs long ones). Cases run in worker subprocesses,
so a crash or a hang is a failure here, not a dead test session."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fuzz_harness as harness  # noqa: E402


def test_corpus_of_past_findings_replays_clean():
    results = harness.replay([os.path.join(HERE, "corpus")], timeout=120)
    assert len(results) >= 20
    bad = [r for r in results if r["outcome"] != "ok"]
    assert not bad, bad


@pytest.mark.parametrize("campaign,cases", [("parse", 60), ("diff", 12), ("badargs", 8), ("cache", 3),
                                            ("threads", 2)])
def test_short_campaign(campaign, cases):
    seed = int(os.environ.get("AXLE_FUZZ_SEED", "7"))
    r = harness.run_campaign(campaign, cases, seed, timeout=120, deadline=float("inf"), out=None,
                             do_minimize=True)
    assert r["cases"] == cases
    assert r["ok"] == cases, r["findings"]


def test_ddmin_finds_a_minimal_failing_subset():
    items = list(range(40))
    small = harness.ddmin(items, lambda xs: 7 in xs and 23 in xs)
    assert small == [7, 23]


def test_worker_counts_crashes_and_hangs():
    """A case that kills the worker is a crash, one that never answers a hang; the worker
    is replaced and the next case runs."""
    w = harness.Worker(timeout=3)
    ok = {"kind": "parse", "text": "func.func @main() {"}
    try:
        assert w.run(ok)[0] == "ok"
        outcome, detail = w.run({"kind": "selftest", "action": "crash"})
        assert outcome == "crash" and "signal 6" in detail, detail
        assert w.run(ok)[0] == "ok"
        outcome, detail = w.run({"kind": "selftest", "action": "hang"})
        assert outcome == "hang", detail
        assert w.run(ok)[0] == "ok"
    finally:
        w.close()


def test_harness_command_line_short_run(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(HERE, "fuzz_harness.py"), "--campaigns", "parse,badargs",
                        "--cases", "5", "--seed", "3", "--json", str(tmp_path / "s.json")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "fuzz: 10 cases" in r.stdout
