"""The StableHLO conformance suites through the reference interpreter.

Every case of ../shared/conformance (testdata, testdata/dynamic, testdata/quantized and
interpret, split on `// -----`) must pass; nothing may be skipped silently. The sweep
runs in a couple of processes and takes about a quarter of a minute.
"""
import os

import pytest

from axle.tools.conformance import collect_cases, run_all

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "conformance")
pytestmark = pytest.mark.skipif(not os.path.isdir(ROOT), reason="../shared/conformance is not beside the project")


def test_interpreter_passes_every_conformance_case():
    cases = collect_cases([ROOT])
    assert len(cases) > 2300, "the conformance tree looks incomplete"
    results = run_all(cases, "interpreter", "none", jobs=2, timeout=120, progress=False)
    failed = [f"{r.name}: {r.message}" for r in results if r.status == "failed"]
    skipped = [f"{r.name}: {r.message}" for r in results if r.status == "skipped"]
    assert not failed, f"{len(failed)} failed:\n" + "\n".join(failed[:50])
    assert len(skipped) <= len(results) // 100, "more than 1% skipped:\n" + "\n".join(skipped)


def test_a_failing_check_fails_the_case(tmp_path):
    """The runner must not count a case whose check fails as passed."""
    bad = tmp_path / "bad.mlir"
    bad.write_text("""
func.func @main() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %b = stablehlo.add %a, %a : tensor<2xi32>
  check.expect_eq_const %b, dense<[2, 5]> : tensor<2xi32>
  func.return
}
""")
    results = run_all(collect_cases([str(bad)]), "interpreter", "none", jobs=1, timeout=30, progress=False)
    assert [r.status for r in results] == ["failed"]
    assert "expect_eq_const" in results[0].message or "differ" in results[0].message


def test_default_passes_keep_every_sampled_case_passing():
    """--passes default: inputs become arguments, the pipeline runs, checks run on the host.
    A third of the cases (every third one) keeps CI short; `-m slow` runs them all."""
    cases = collect_cases([ROOT])[::3]
    results = run_all(cases, "interpreter", "default", jobs=2, timeout=120, progress=False)
    failed = [f"{r.name}: {r.message}" for r in results if r.status == "failed"]
    assert not failed, f"{len(failed)} failed:\n" + "\n".join(failed[:50])


def test_cpu_backend_never_gives_a_wrong_answer_on_sampled_cases():
    """Every sampled case either passes on the CPU backend or is refused at compile time
    with a message naming what is not supported yet: never a wrong result or a crash."""
    cases = collect_cases([ROOT])[::4]
    results = run_all(cases, "cpu", "default", jobs=2, timeout=120, progress=False)
    wrong = [f"{r.name}: {r.message}" for r in results
             if r.status == "failed" and not r.message.startswith("unsupported: ")]
    assert not wrong, "\n".join(wrong[:30])
    passed = sum(r.status == "passed" for r in results)
    assert passed >= 0.75 * len(results), f"only {passed} of {len(results)} passed"


@pytest.mark.slow
def test_default_passes_keep_every_case_passing():
    results = run_all(collect_cases([ROOT]), "interpreter", "default", jobs=2, timeout=120, progress=False)
    assert not [r for r in results if r.status == "failed"]
