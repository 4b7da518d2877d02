import os
import sys

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build", "inductor-cache"))
sys.path.insert(0, os.path.dirname(__file__))  # models.py
