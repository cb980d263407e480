"""`perfkit replay`: from one op or kernel of a trace to a spec that runs it alone (shapes.py)."""
