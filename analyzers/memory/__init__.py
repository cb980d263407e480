"""Memory analyses over typed records (model.py): replay, peak, fragmentation, OOM, diff."""
