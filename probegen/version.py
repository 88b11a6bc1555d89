"""probegen's version (its own module, so the library reads it without importing the package facade)."""

__version__ = "0.1.0"
