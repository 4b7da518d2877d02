import os
import sys

# shared test helpers (program_strategies.py) live beside this file
sys.path.insert(0, os.path.dirname(__file__))
