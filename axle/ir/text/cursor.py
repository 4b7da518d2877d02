"""A position in MLIR text with the small lexical helpers the parser is built on.

The parser works directly on the string with anchored regular expressions; this is
fast in CPython and lets type and attribute syntax (`4x?xf32`, `[b, 0, f]x[...]`)
be read without a separate token stream.
"""
from __future__ import annotations

import re
from typing import Optional


class ParseError(Exception):
    """Malformed MLIR text. The message names file:line:col and shows the line."""

    def __init__(self, message: str, filename: Optional[str] = None, line: int = 0, col: int = 0,
                 source_line: str = ""):
        self.message = message
        self.filename = filename or "<string>"
        self.line = line
        self.col = col
        self.source_line = source_line
        text = f"{self.filename}:{line}:{col}: error: {message}"
        if source_line:
            text += f"\n{source_line}\n{' ' * (col - 1)}^"
        super().__init__(text)


_WS = re.compile(r"(?:\s+|//[^\n]*)*")
_BARE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_$.\-]*")
_SUFFIX_ID = re.compile(r"(?:[0-9]+|[A-Za-z_$.\-][A-Za-z0-9_$.\-]*)")
_INT = re.compile(r"-?(?:0x[0-9A-Fa-f]+|[0-9]+)")
_FLOAT = re.compile(r"[-+]?[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+")
_NUMBER = re.compile(r"[-+]?(?:0x[0-9A-Fa-f]+|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_HEX_ESC = re.compile(r"\\([0-9A-Fa-f]{2})|\\(.)")


class Cursor:
    def __init__(self, text: str, filename: Optional[str] = None):
        self.text = text
        self.pos = 0
        self.filename = filename

    # -- errors
    def error(self, message: str, pos: Optional[int] = None) -> ParseError:
        pos = self.pos if pos is None else pos
        pos = max(0, min(pos, len(self.text)))
        line = self.text.count("\n", 0, pos) + 1
        start = self.text.rfind("\n", 0, pos) + 1
        end = self.text.find("\n", pos)
        if end < 0:
            end = len(self.text)
        return ParseError(message, self.filename, line, pos - start + 1, self.text[start:end])

    def describe(self) -> str:
        """What is at the cursor, for 'expected X, found Y' messages."""
        self.ws()
        if self.pos >= len(self.text):
            return "end of input"
        m = _BARE_ID.match(self.text, self.pos) or _NUMBER.match(self.text, self.pos)
        tok = m.group(0) if m else self.text[self.pos]
        return f"'{tok[:30]}'"

    # -- lexing
    def ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()

    def at_end(self) -> bool:
        self.ws()
        return self.pos >= len(self.text)

    def peek(self, s: str) -> bool:
        self.ws()
        return self.text.startswith(s, self.pos)

    def peek_char(self) -> str:
        self.ws()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def accept(self, s: str) -> bool:
        self.ws()
        if self.text.startswith(s, self.pos):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, what: Optional[str] = None) -> None:
        if not self.accept(s):
            raise self.error(f"expected '{s}'{' ' + what if what else ''}, found {self.describe()}")

    def accept_keyword(self, word: str) -> bool:
        """Accept `word` only as a whole identifier."""
        self.ws()
        m = _BARE_ID.match(self.text, self.pos)
        if m and m.group(0) == word:
            self.pos = m.end()
            return True
        return False

    def peek_keyword(self, word: str) -> bool:
        self.ws()
        m = _BARE_ID.match(self.text, self.pos)
        return bool(m and m.group(0) == word)

    def bare_id(self, what: str = "identifier") -> str:
        self.ws()
        m = _BARE_ID.match(self.text, self.pos)
        if not m:
            raise self.error(f"expected {what}, found {self.describe()}")
        self.pos = m.end()
        return m.group(0)

    def try_bare_id(self) -> Optional[str]:
        self.ws()
        m = _BARE_ID.match(self.text, self.pos)
        if not m:
            return None
        self.pos = m.end()
        return m.group(0)

    def suffix_id(self, sigil: str, what: str) -> str:
        """`%name`, `@name`, `^bb0`, `#alias` (after the sigil; quoted names allowed for @)."""
        self.ws()
        if not self.text.startswith(sigil, self.pos):
            raise self.error(f"expected {what}, found {self.describe()}")
        self.pos += 1
        if sigil == "@" and self.text.startswith('"', self.pos):
            return self.string()
        m = _SUFFIX_ID.match(self.text, self.pos)
        if not m:
            raise self.error(f"expected {what} name after '{sigil}'")
        self.pos = m.end()
        return m.group(0)

    def integer(self, what: str = "integer") -> int:
        self.ws()
        m = _INT.match(self.text, self.pos)
        if not m or (m.end() < len(self.text) and self.text[m.end()] in ".eE" and
                     _FLOAT.match(self.text, self.pos)):
            raise self.error(f"expected {what}, found {self.describe()}")
        self.pos = m.end()
        return int(m.group(0), 0) if "x" in m.group(0) else int(m.group(0))

    def try_integer(self) -> Optional[int]:
        self.ws()
        m = _INT.match(self.text, self.pos)
        if not m:
            return None
        f = _FLOAT.match(self.text, self.pos)
        if f and f.end() > m.end():
            return None
        self.pos = m.end()
        t = m.group(0)
        return int(t, 16) if "x" in t else int(t)

    def number_text(self) -> Optional[str]:
        self.ws()
        m = _NUMBER.match(self.text, self.pos)
        if not m:
            return None
        self.pos = m.end()
        return m.group(0)

    def string(self) -> str:
        self.ws()
        m = _STRING.match(self.text, self.pos)
        if not m:
            raise self.error(f"expected string literal, found {self.describe()}")
        self.pos = m.end()
        body = m.group(0)[1:-1]
        if "\\" not in body:
            return body
        return _unescape(body)

    def string_bytes_hex(self) -> Optional[str]:
        """If a string literal holding `0x...` hex follows, consume it and return the hex."""
        self.ws()
        if self.text.startswith('"0x', self.pos):
            end = self.text.find('"', self.pos + 1)
            if end > 0:
                hexpart = self.text[self.pos + 3:end]
                self.pos = end + 1
                return hexpart
        return None

    def balanced(self, open_: str = "<", close: str = ">") -> str:
        """Consume a balanced `<...>` (nesting of ()[]{}<> and strings respected); return its text."""
        self.ws()
        start = self.pos
        if not self.text.startswith(open_, self.pos):
            raise self.error(f"expected '{open_}'")
        pairs = {"<": ">", "(": ")", "[": "]", "{": "}"}
        stack = []
        i = self.pos
        n = len(self.text)
        while i < n:
            c = self.text[i]
            if c == '"':
                m = _STRING.match(self.text, i)
                if not m:
                    raise self.error("unterminated string", i)
                i = m.end()
                continue
            if c in pairs:
                stack.append(pairs[c])
            elif c in ")]}>":
                if c == ">" and i > 0 and self.text[i - 1] == "-":  # '->' inside
                    i += 1
                    continue
                if not stack or stack[-1] != c:
                    raise self.error(f"unbalanced '{c}'", i)
                stack.pop()
                if not stack:
                    self.pos = i + 1
                    return self.text[start:self.pos]
            i += 1
        raise self.error(f"unterminated '{open_}'", start)


def _unescape(body: str) -> str:
    def rep(m):
        if m.group(1) is not None:
            return chr(int(m.group(1), 16))
        c = m.group(2)
        return {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(c, c)

    return _HEX_ESC.sub(rep, body)
