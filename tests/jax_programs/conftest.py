import os
import sys

# the program tables (programs_*.py) and the harness live beside the test
sys.path.insert(0, os.path.dirname(__file__))
