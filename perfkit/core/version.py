"""The version of perfkit (one place; perfkit.__version__ re-exports it)."""

__version__ = "0.1.0"
