"""Value types with the ranges a record's fields must hold, checked where a record is loaded.

They are plain `int` / `float` / `str` to the code (and to mypy); `perfkit.core.codec` reads their
`msgspec.Meta` when it builds a record from JSON, so a loaded run record never holds an infinite
sample, a negative count or a count too large for the store's 64-bit integers. Records made in
code are not checked again.
"""

from __future__ import annotations

import sys
from typing import Annotated

import msgspec

INT64_MAX = 2**63 - 1  # the store's INTEGER columns hold no more
FLOAT_MAX = sys.float_info.max  # a bound only a finite float meets (inf and NaN fail it)

Count = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]  # repetitions, MHz, bytes, indices
PositiveCount = Annotated[int, msgspec.Meta(ge=1, le=INT64_MAX)]  # calls per sample
Finite = Annotated[float, msgspec.Meta(ge=-FLOAT_MAX, le=FLOAT_MAX)]  # any real number, not inf / NaN
NonNegative = Annotated[float, msgspec.Meta(ge=0.0, le=FLOAT_MAX)]  # seconds, flop, bytes

POINT_STATUS = "^(ok|failed|skipped)$"
RUN_STATUS = "^(complete|interrupted|running)$"
# a run id names a directory and a store row: no path separator, no control character, not . or ..
RUN_ID = r"^(?!\.{1,2}$)[^/\\\x00-\x1f\x7f]{1,200}$"

PointStatus = Annotated[str, msgspec.Meta(pattern=POINT_STATUS)]
RunStatus = Annotated[str, msgspec.Meta(pattern=RUN_STATUS)]
RunId = Annotated[str, msgspec.Meta(pattern=RUN_ID)]

# what each pattern above asks for, in the words of a loading error
PATTERN_WORDS = {
    POINT_STATUS: "one of ok, failed, skipped",
    RUN_STATUS: "one of complete, interrupted, running",
    RUN_ID: "a run id (1 to 200 characters, no '/', '\\' or control characters, not '.' or '..')",
}
