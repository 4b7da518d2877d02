"""Backends: a compile pipeline + code emission + an executable format, one folder each."""
