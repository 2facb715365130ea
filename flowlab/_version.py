"""flowlab's version, in a module of its own: modules deep in the package (the Numba cache directory is named
by it) read it without importing the half-initialized ``flowlab`` package."""

__version__ = "0.1.0"
