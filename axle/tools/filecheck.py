"""A small FileCheck: checks text against `// CHECK...` lines of a test file.

Directives (in order of the file):
  CHECK: text        the next match of `text` at or after the current position
  CHECK-NEXT: text   a match on the line right after the previous match
  CHECK-SAME: text   a match on the same line as the previous match, after it
  CHECK-NOT: text    no match between the previous match and the next positive one
  CHECK-LABEL: text  like CHECK, and starts a new section
`{{regex}}` inside text is a regular expression; the rest is literal; runs of spaces
match any whitespace run.
"""
from __future__ import annotations

import re


class CheckFailure(AssertionError):
    pass


def _pattern(text: str) -> re.Pattern:
    parts = re.split(r"(\{\{.*?\}\})", text.strip())
    out = []
    for p in parts:
        if p.startswith("{{") and p.endswith("}}"):
            out.append("(?:" + p[2:-2] + ")")
        else:
            words = r"\s+".join(re.escape(w) for w in p.split())
            lead = r"\s+" if p[:1].isspace() and out else ""
            trail = r"\s+" if p[-1:].isspace() and p.strip() else ""
            out.append(lead + words + trail if p.strip() else (r"\s+" if p else ""))
    return re.compile("".join(out))


def directives(test_text: str, prefix: str = "CHECK") -> list[tuple[str, str, int]]:
    out = []
    rx = re.compile(r"//\s*" + re.escape(prefix) + r"(-NEXT|-SAME|-NOT|-LABEL)?:(.*)$")
    for n, line in enumerate(test_text.splitlines(), 1):
        m = rx.search(line)
        if m:
            out.append(((m.group(1) or "")[1:] or "CHECK", m.group(2), n))
    return out


def filecheck(output: str, checks: list[tuple[str, str, int]]) -> None:
    pos = 0
    last_line_end = 0
    pending_not: list[tuple[re.Pattern, str, int]] = []
    for kind, text, line in checks:
        rx = _pattern(text)
        if kind == "NOT":
            pending_not.append((rx, text, line))
            continue
        if kind == "NEXT":
            start = output.find("\n", pos)
            if start < 0:
                raise CheckFailure(f"line {line}: CHECK-NEXT: no line after the previous match: {text.strip()}")
            end = output.find("\n", start + 1)
            m = rx.search(output, start + 1, end if end >= 0 else len(output))
        elif kind == "SAME":
            end = output.find("\n", pos)
            m = rx.search(output, pos, end if end >= 0 else len(output))
        else:
            m = rx.search(output, pos)
        if m is None:
            context = output[pos:pos + 300]
            raise CheckFailure(f"line {line}: CHECK{'' if kind == 'CHECK' else '-' + kind}: "
                               f"'{text.strip()}' not found after:\n{context}")
        for nrx, ntext, nline in pending_not:
            bad = nrx.search(output, pos, m.start())
            if bad:
                raise CheckFailure(f"line {nline}: CHECK-NOT: '{ntext.strip()}' found: {bad.group(0)!r}")
        pending_not = []
        pos = m.end()
    for nrx, ntext, nline in pending_not:
        bad = nrx.search(output, pos)
        if bad:
            raise CheckFailure(f"line {nline}: CHECK-NOT: '{ntext.strip()}' found: {bad.group(0)!r}")
