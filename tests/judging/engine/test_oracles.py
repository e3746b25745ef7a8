import random

import pytest
from scipy.stats import norm

from judging.engine import JudgmentLogError, NoisyOracle, PerfectOracle, ReplayOracle, read_judgment_log
from judging.engine.judgment_log import JudgmentRecord

VALUES = {"t": {"a": 50.0, "b": 40.0, "c": 4.0, "d": 4.0, "z": 0.0}}


def test_perfect_oracle_prefers_higher_value_then_smaller_docid():
    oracle = PerfectOracle(VALUES)
    assert oracle.prefer("t", "b", "a") == "a"
    assert oracle.prefer("t", "d", "c") == "c"  # equal values: smaller docid
    assert oracle.prefer("t", "z", "unjudged") == "unjudged"  # both 0: smaller docid
    assert oracle.prefer("t", "c", "unjudged") == "c"
    assert oracle.ranking("t", ["z", "d", "c", "b", "a"]) == ["a", "b", "c", "d", "z"]


def test_noisy_oracle_with_constant_error_rate_flips_that_often():
    oracle = NoisyOracle(VALUES, rng=random.Random(3), error_rate=0.2)
    trials = 5000
    flips = sum(oracle.prefer("t", "a", "b") == "b" for _ in range(trials))
    assert abs(flips / trials - 0.2) < 4 * (0.2 * 0.8 / trials) ** 0.5


def test_noisy_oracle_error_rate_zero_is_perfect_and_one_is_reversed():
    assert NoisyOracle(VALUES, rng=random.Random(0), error_rate=0.0).prefer("t", "b", "a") == "a"
    assert NoisyOracle(VALUES, rng=random.Random(0), error_rate=1.0).prefer("t", "b", "a") == "b"


def test_gap_dependent_error_follows_the_signal_detection_model():
    # levels: z 0, c/d 1 (value 4), b 2 (40), a 3 (50); P(error) = Phi(-d * gap / sqrt 2)
    oracle = NoisyOracle(VALUES, rng=random.Random(0), discriminability=1.5)
    assert oracle.error_probability("t", "a", "b") == pytest.approx(norm.cdf(-1.5 / 2**0.5))
    assert oracle.error_probability("t", "a", "z") == pytest.approx(norm.cdf(-4.5 / 2**0.5))
    assert oracle.error_probability("t", "c", "d") == pytest.approx(0.5)


def test_noisy_oracle_needs_exactly_one_model():
    with pytest.raises(ValueError, match="exactly one"):
        NoisyOracle(VALUES, rng=random.Random(0))
    with pytest.raises(ValueError, match="exactly one"):
        NoisyOracle(VALUES, rng=random.Random(0), error_rate=0.1, discriminability=1.0)
    with pytest.raises(ValueError, match=r"error_rate must be in \[0, 1\]"):
        NoisyOracle(VALUES, rng=random.Random(0), error_rate=1.5)


def test_replay_oracle_answers_in_log_order_then_repeats_the_last_then_falls_back():
    log = [JudgmentRecord("t", "x", "y"), JudgmentRecord("t", "y", "x")]
    oracle = ReplayOracle(log, fallback=PerfectOracle(VALUES))
    assert [oracle.prefer("t", "x", "y"), oracle.prefer("t", "y", "x"), oracle.prefer("t", "x", "y")] == [
        "x",
        "y",
        "y",
    ]
    assert oracle.prefer("t", "b", "a") == "a"
    assert (oracle.replayed, oracle.fallen_back) == (3, 1)
    with pytest.raises(KeyError, match="no judgment"):
        ReplayOracle(log).prefer("t", "a", "b")


def test_read_judgment_log_of_the_released_crowd_judgments(cast_dir):
    records = read_judgment_log(cast_dir / "judgments.crowd.txt")
    assert len(records) == 14573
    assert records[0] == JudgmentRecord(
        "31_1", "MARCO_1373522", "CAR_d37891cd657001a45ae65a1864b6af96a9b4543c"
    )


def test_read_judgment_log_names_file_and_line(tmp_path):
    path = tmp_path / "log.txt"
    path.write_text("t a b a\n\nt a b c\n")
    with pytest.raises(JudgmentLogError, match=rf"^{path}:3: winner c is neither a nor b$"):
        read_judgment_log(path)
    path.write_text("t a b\n")
    with pytest.raises(JudgmentLogError, match=rf"^{path}:1: expected 4 fields"):
        read_judgment_log(path)
    path.write_text("t a a a\n")
    with pytest.raises(JudgmentLogError, match="paired with itself"):
        read_judgment_log(path)
