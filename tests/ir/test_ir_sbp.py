"""The SBP IR: printing, parsing, JSON round trips, and OneFlow's balanced splitter."""

import pytest

from flowlab.ir import (
    BROADCAST,
    PARTIAL_SUM,
    Job,
    SbpParallel,
    SbpSignature,
    balanced_split,
    from_json,
    parse_sbp,
    split,
    to_json,
)


def test_prints_and_parses():
    assert [str(s) for s in (split(1), BROADCAST, PARTIAL_SUM)] == ["S(1)", "B", "P"]
    for sbp in (split(0), split(3), BROADCAST, PARTIAL_SUM):
        assert parse_sbp(str(sbp)) == sbp
    with pytest.raises(ValueError, match="S\\(<axis>\\)"):
        parse_sbp("S(x)")
    with pytest.raises(ValueError, match="only split takes an axis"):
        SbpParallel("broadcast", 0)


def test_signature_in_job_round_trips_through_json():
    sig = SbpSignature({"x_0": split(0), "weight_0": BROADCAST, "out_0": split(0)})
    assert str(sig) == "{x_0: S(0), weight_0: B, out_0: S(0)}"
    job = Job("j", "user", (), {}, sbp_signatures={"matmul": sig})
    back = from_json(to_json(job))
    assert back == job and back.sbp_signatures["matmul"]["weight_0"] == BROADCAST


def test_balanced_split_follows_oneflow():
    assert balanced_split(10, 3) == (4, 3, 3)
    assert balanced_split(200, 2) == (100, 100)
    assert sum(balanced_split(7, 4)) == 7
    with pytest.raises(ValueError, match="at least one"):
        balanced_split(1, 2)
