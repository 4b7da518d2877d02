"""docs/status.md is generated from the registries; it must match what they say now
(regenerate with `python -m axle.tools.status > docs/status.md`)."""
import contextlib
import io
import os

from axle.tools.status import main

DOC = os.path.join(os.path.dirname(__file__), "..", "docs", "status.md")


def test_status_doc_is_current():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main()
    assert open(DOC, encoding="utf-8").read() == out.getvalue(), "docs/status.md is stale: regenerate it"
