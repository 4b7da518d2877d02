"""axle's version (base layer: the AOT artifacts and the disk cache stamp it without
importing the package's API)."""
__version__ = "0.1.0"
