"""scripts/bands.py: the band of a group's errors and the checks serving_validation.py and
gemm_check_vidur.py run against a recorded bands file. Every value below is worked out by hand."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))

import bands  # noqa: E402


def test_band_of_five_errors():
    # Errors -0.30, -0.10, 0.00, +0.05, +0.20: the median is the middle one, 0.00; the |errors|
    # sorted are 0, 0.05, 0.10, 0.20, 0.30, median 0.10; p90 is the sorted |error| at index
    # int(0.9 * 5) = 4, 0.30; the range -0.30 to +0.20.
    b = bands.band([0.05, -0.30, 0.20, 0.00, -0.10])
    assert b["n"] == 5
    assert b["median"] == 0.0
    assert b["median_abs"] == 0.10
    assert b["p90_abs"] == 0.30
    assert (b["low"], b["high"]) == (-0.30, 0.20)


def test_grown_by_more_than_the_tolerance_fails():
    recorded = {"median_abs": 0.10}
    # 0.14 is within 5 points of 0.10; 0.16 is 6 points past it.
    assert bands.grown("g", {"median_abs": 0.14}, recorded, "f.json", 0.05) is None
    assert "median |error| 16.0% against 10.0% recorded" in bands.grown("g", {"median_abs": 0.16}, recorded, "f.json", 0.05)
    assert "not in f.json" in bands.grown("g", {"median_abs": 0.0}, None, "f.json", 0.05)


def test_a_recorded_group_gone_from_the_run_fails():
    # Two groups recorded, one run: the other is named, and nothing when both are there.
    recorded = {"a ttft": {}, "b tpot": {}}
    assert bands.vanished({"a ttft": {}}, recorded, "f.json") == [
        "b tpot: in f.json, not in this run (rerun with --write if they were removed on purpose)"]
    assert bands.vanished({"a ttft": {}, "b tpot": {}, "c e2e": {}}, recorded, "f.json") == []
