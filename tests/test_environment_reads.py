"""The environment is read only in axle/flags.py: every other module asks flags.py
(`flag`, `env`, `flags_text`), so that `axle flags` lists everything a user can set."""
from __future__ import annotations

import ast
import os

import pytest

import axle
from axle import flags

ROOT = os.path.dirname(axle.__file__)


def _environment_reads(source: str) -> list:
    """(line, what) of every os.environ / os.getenv / os.putenv / os.unsetenv use and every
    `from os import environ/getenv` in `source`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "environb", "getenv", "getenvb",
                                                                 "putenv", "unsetenv"):
            found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            for a in node.names:
                if a.name in ("environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"):
                    found.append((node.lineno, f"from os import {a.name}"))
        elif isinstance(node, ast.Name) and node.id in ("environ", "getenv"):
            found.append((node.lineno, node.id))
    return found


def test_the_checker_finds_each_form():
    src = ("import os\nfrom os import getenv\na = os.environ.get('X')\nb = os.getenv('Y')\n"
           "c = dict(os.environ)\nos.environ['Z'] = '1'\nd = getenv('W')\n")
    lines = sorted({line for line, _ in _environment_reads(src)})
    assert lines == [2, 3, 4, 5, 6, 7]
    assert _environment_reads("import os\nx = os.path.join('a', 'b')\n") == []


def test_environment_is_read_only_in_flags_py():
    offenders = []
    for folder, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(folder, f)
            if os.path.relpath(path, ROOT) == "flags.py":
                continue
            with open(path, encoding="utf-8") as fh:
                for line, what in _environment_reads(fh.read()):
                    offenders.append(f"{os.path.relpath(path, ROOT)}:{line}: {what}")
    assert not offenders, "read the environment through axle/flags.py:\n" + "\n".join(offenders)


def test_every_variable_read_has_help_and_unknown_ones_are_refused(monkeypatch):
    text = flags.describe()
    for name, var in flags.ENVIRONMENT.items():
        assert var.help and name in text
    monkeypatch.setenv("AXLE_NUM_THREADS", "3")
    assert flags.env("AXLE_NUM_THREADS") == "3"
    monkeypatch.delenv("AXLE_NUM_THREADS")
    assert flags.env("AXLE_NUM_THREADS") is None
    with pytest.raises(KeyError, match="ENVIRONMENT"):
        flags.env("HOME")


def test_scoped_env_restores(monkeypatch):
    monkeypatch.setenv("AXLE_FLAGS", "--verify_each_pass")
    with flags.scoped_env(AXLE_FLAGS="--dump_to=/nowhere"):
        assert flags.flag("dump_to") == "/nowhere"
    assert flags.flags_text() == "--verify_each_pass" and flags.flag("dump_to") is None
    monkeypatch.delenv("AXLE_FLAGS")
    with flags.scoped_env(AXLE_FLAGS="--cpu_device_count=2"):
        assert flags.flag("cpu_device_count") == 2
    assert flags.flag("cpu_device_count") == 1


def test_axle_flags_command_lists_flags_and_variables(capsys):
    from axle.tools.cli import main
    assert main(["flags"]) == 0
    out = capsys.readouterr().out
    assert "--dump_to" in out and "AXLE_CACHE_DIR" in out and "--memory_cache_programs" in out
