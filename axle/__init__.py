"""axle: an ML compiler and runtime for StableHLO, written in Python."""
__version__ = "0.1.0"
