"""Regressions (issue 21): a disk-cache entry that is a FIFO blocked compilation forever,
one that is a symlink to /dev/zero exhausted memory. Each test runs the compile in a child
with a timeout and an address-space limit, so a hang or a runaway read fails the test
instead of the test session."""
import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import os, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    import numpy as np
    import axle
    from axle.backends.cpu import disk_cache
    from axle.backends.cpu import executable as cpu_exe
    TEXT = '''func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
      %0 = stablehlo.exponential %x : tensor<8xf32>
      return %0 : tensor<8xf32>
    }'''
    d, fault = sys.argv[1], sys.argv[2]
    x = np.arange(8, dtype=np.float32)
    with disk_cache.using(d):
        axle.compile(TEXT)
        (path,) = [os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs if f.endswith(".axc")]
        os.remove(path)
        if fault == "fifo":
            os.mkfifo(path)
        elif fault == "dev_zero":
            os.symlink("/dev/zero", path)
        elif fault == "dangling":
            os.symlink(path + ".nowhere", path)
        elif fault == "directory":
            os.mkdir(path)
        elif fault == "huge_sparse":
            with open(path, "wb") as fh:
                fh.truncate(8 << 30)
        cpu_exe.clear_memory_cache()
        again = axle.compile(TEXT)
        assert not again.loaded_from_disk
        np.testing.assert_allclose(again(x), np.exp(x), rtol=1e-6)
        if fault != "directory":  # the bad entry was replaced by a regular file axle wrote
            assert os.path.isfile(path) and not os.path.islink(path)
            cpu_exe.clear_memory_cache()
            assert axle.compile(TEXT).loaded_from_disk
    print("ok")
""")


@pytest.mark.parametrize("fault", ["fifo", "dev_zero", "dangling", "directory", "huge_sparse"])
def test_bad_cache_entry_is_a_miss(tmp_path, fault):
    env = dict(os.environ, AXLE_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path), fault], capture_output=True,
                       text=True, timeout=120, env=env)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr[-3000:]
