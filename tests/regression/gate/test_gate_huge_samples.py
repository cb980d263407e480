"""Stored samples near the float limit (1e308, 1e-308 beside 1.7e308, +-1e308 alternating) through
`perfkit gate`, `compare` and `history`: a verdict or a clear reason for each measurement, the
JSON views free of NaN / Infinity tokens, and nothing on stderr (numpy's overflow warnings were
printed there: the median and sample statistics now scale, the detectable change and the history
band saturate)."""

from __future__ import annotations

import json
import random
import warnings
from pathlib import Path

import pytest

from perfkit.cli import main
from perfkit.core.measurement import median, sample_stats

HEADER = "commit,metric,value,unit,direction,gpu,timestamp,branch"


def _store(tmp_path: Path, commits: int) -> str:
    rng = random.Random(0)
    rows = [HEADER]
    for k in range(commits):
        when = f"2024-01-{k + 1:02d}T00:00:00Z"
        for i in range(10):
            rows.append(f"c{k},lat,{1.7e308 * (0.3 + 0.7 * rng.random())!r},s,lower,g1,{when},main")
            rows.append(f"c{k},tiny,{(1e-308 if k % 2 == 0 else 1.7e308) * (1 + 0.05 * rng.random())!r},s,lower,"
                        f"g1,{when},main")
            rows.append(f"c{k},mix,{-1e308 if i % 2 else 1e308!r},s,higher,g1,{when},main")
    csv = tmp_path / "huge.csv"
    csv.write_text("\n".join(rows) + "\n")
    db = str(tmp_path / "perfkit.db")
    assert main(["ingest", "--format", "csv", "--db", db, str(csv)]) == 0
    return db


@pytest.mark.slow
@pytest.mark.parametrize("commits", [2, 8], ids=["two-runs", "with-history"])
def test_samples_near_the_float_limit_warn_nothing_on_stderr(commits: int, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    db = _store(tmp_path, commits)
    last, before = f"c{commits - 1}", f"c{commits - 2}"
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning is an error here: none may reach stderr
        for argv in (["gate", "--baseline", before, "--candidate", last, "--no-step-summary"],
                     ["gate", "--baseline", before, "--candidate", last, "--no-step-summary", "--format", "json"],
                     ["compare", "c0", last, "--format", "json"],
                     ["history", "tiny", "--format", "json"], ["history", "lat"], ["history", "mix"]):
            rc = main([*argv, "--db", db])
            out, err = capsys.readouterr()
            assert rc in (0, 1) and err == "", (argv, err)
            assert "Infinity" not in out and "NaN" not in out, (argv, out[:400])
            if "--format" in argv:
                json.loads(out)
    rc = main(["gate", "--baseline", before, "--candidate", last, "--no-step-summary", "--db", db])
    out = capsys.readouterr().out
    assert "mix" in out and "values must be finite and > 0" in out  # the reason, not a number
    assert "1797693134862315" not in out  # a saturated ratio is shown as 1.8e+308x, never 309 digits


def test_median_and_stats_of_samples_near_the_float_limit() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert median([1.7e308, 1.7e308]) == 1.7e308
        assert median([-1.7e308, 1.7e308, 1.7e308, -1.7e308]) == 0.0
        stats = sample_stats([1.7e308, 1.5e308, 1.6e308, 1.7e308])
        assert stats.mean_s == pytest.approx(1.625e308) and stats.median_s == pytest.approx(1.65e308)
        assert stats.iqr_s == pytest.approx(0.125e308) and stats.std_s == pytest.approx(0.0957e308, rel=1e-2)
        assert sample_stats([1.0, 2.0, 3.0, 4.0]).iqr_s == 1.5  # ordinary samples unchanged
