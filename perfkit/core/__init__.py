"""The bottom layer: errors and exit codes, atomic writes, YAML positions, and the record types
(record: Run / PointResult / Numerics; measurement; cost; env: the typed environment), with one
codec for their JSON form (codec) and the run record's schema versions (migrate).

Imports nothing else of the project.
"""
