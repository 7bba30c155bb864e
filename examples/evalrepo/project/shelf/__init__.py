"""Small helpers for a library's catalogue."""

__version__ = "0.3.1"
