"""asv results with numbers out of range, through `perfkit ingest --format asv`: a date of 1e300 ms
(past any datetime), a 400-digit date or result, a result past a float: one line naming the file
and the field, exit 2, nothing stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfkit.cli import main
from tests.ingest.asv.test_ingest_asv import GOOD, results_dir

BIG = "9" * 400


@pytest.mark.parametrize(("old", "new", "needle"), [
    ('"date": 1700000000000', '"date": 1e300', "'date' is 1e+300, not milliseconds since the epoch (1970 to 9999)"),
    ('"date": 1700000000000', '"date": -1e300', "'date' is -1e+300"),
    ('"date": 1700000000000', f'"date": {BIG}', "'date' is an integer of 400 digits"),
    ('"b.peakmem_load": [[1048576]', f'"b.peakmem_load": [[{BIG}]', "is an integer of 400 digits, not a number"),
    ("[[0.4, 0.5, 0.6]", f"[[0.4, {BIG}, 0.6]", "samples[0][1] is an integer of 400 digits, not a finite number"),
], ids=["date-1e300", "date-minus-1e300", "date-400-digits", "result-400-digits", "sample-400-digits"])
def test_a_number_out_of_range_is_one_line(old: str, new: str, needle: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    results = results_dir(tmp_path, GOOD)
    (f,) = (results / "box").glob("c0*.json")
    text = f.read_text()
    assert old in text
    f.write_text(text.replace(old, new, 1))
    db = tmp_path / "perfkit.db"
    rc = main(["ingest", "--format", "asv", "--db", str(db), str(results)])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert rc == 2 and "Traceback" not in err and len(lines) == 1, err
    assert lines[0].startswith(f"perfkit: error: {f}") and needle in lines[0], lines
    assert not db.exists() and "stored" not in out
