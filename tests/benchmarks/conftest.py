"""benchmarks/ is not installed: its tests import it from the repository root, put on the path here
(pytest's importlib mode does not), before any test module of this folder is imported."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
