"""The bottom layer: errors and exit codes, atomic writes, YAML positions, and the record types.

Imports nothing else of the project.
"""
