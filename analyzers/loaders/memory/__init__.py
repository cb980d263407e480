"""Loaders of memory inputs: torch snapshot pickles, Kineto traces with profile_memory."""
