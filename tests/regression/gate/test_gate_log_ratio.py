"""perfkit/regression/gate/log_ratio.py: a ratio from its log saturates instead of overflowing."""

from __future__ import annotations

import math
import sys

from perfkit.regression.gate.log_ratio import ratio_of


def test_a_log_ratio_past_the_largest_float_saturates() -> None:
    huge = ratio_of(math.log(1e308) - math.log(1e-3))  # math.exp would raise OverflowError
    assert math.isfinite(huge) and huge > sys.float_info.max / 1.001
    assert 0.0 < ratio_of(-1000.0) < 1.001 / sys.float_info.max
    assert ratio_of(math.log(2.0)) == 2.0 and math.isnan(ratio_of(math.nan))
