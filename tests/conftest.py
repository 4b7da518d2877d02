import os
import sys

# shared test helpers (program_strategies.py) live beside this file
sys.path.insert(0, os.path.dirname(__file__))

# Compiled programs go to a disk cache of this test session only (never the user's).
import os as _os  # noqa: E402
import tempfile as _tempfile  # noqa: E402

_os.environ["AXLE_CACHE_DIR"] = _tempfile.mkdtemp(prefix="axle-test-cache-")
