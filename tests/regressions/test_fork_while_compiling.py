"""Regression (issue 21): os.fork() while another thread is inside LLVM left the child's
first compile deadlocked (the LLVM lock had no fork handler). Every lock of axle is now made
by axle/forks.py: the LLVM lock is held across fork() by the parent and every lock is reset
in the child. The stress runs in a child process with a deadline per forked grandchild, so
a deadlock is a failure, not a hung test session."""
import os
import subprocess
import sys

import pytest

STRESS = os.path.join(os.path.dirname(__file__), "..", "fuzz", "fork_stress.py")


@pytest.mark.parametrize("forks", [6])
def test_fork_while_another_thread_compiles(forks):
    r = subprocess.run([sys.executable, STRESS, "--forks", str(forks), "--child-timeout", "60"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert f"forks={forks} hung=0 failed=0" in r.stdout, r.stdout


def test_locks_are_reset_in_a_forked_child():
    """A lock held by another thread at fork() is unlocked in the child."""
    code = """
import os, threading, time
from axle import forks
held = forks.lock()
entered = threading.Event()
def hold():
    with held:
        entered.set()
        time.sleep(5)
threading.Thread(target=hold, daemon=True).start()
entered.wait()
pid = os.fork()
if pid == 0:
    os._exit(0 if held.acquire(timeout=2) else 1)
_, st = os.waitpid(pid, 0)
print("child", os.waitstatus_to_exitcode(st))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "child 0", r.stderr
