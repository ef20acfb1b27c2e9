"""Intervals and verdicts of the claims (gradmc.claims.stats) against closed forms and known cases."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from _t_bounds import bootstrap_t_bounds, t_bounds

import gradmc.claims
import gradmc.figures
from gradmc.claims.stats import (
    MIN_BOOTSTRAP_REPLICATES,
    MIN_T_REPLICATES,
    Interval,
    bootstrap_interval,
    decide,
    difference_of_means,
    log_ratio_of_means,
    paired_robust_t_interval,
    paired_t_interval,
    robust_t_interval,
    student_t_interval,
    t_interval,
)

T_975_4 = 2.7764451051977987  # Student-t 0.975 quantile, 4 degrees of freedom (tables)


def test_student_t_interval_closed_form():
    iv = student_t_interval([1.0, 2.0, 3.0, 4.0, 5.0], "seeds")
    half = T_975_4 * math.sqrt(2.5) / math.sqrt(5)
    assert iv.effect == pytest.approx(3.0)
    assert (iv.low, iv.high) == pytest.approx((3.0 - half, 3.0 + half), rel=1e-12)
    assert iv.replicates == 5 and iv.unit == "seeds" and iv.method == "Student t over 5 seeds"


def test_t_interval_is_the_union_of_student_t_and_bootstrap_t():
    x = [1.0, 2.0, 3.0, 4.0, 5.0]
    iv = t_interval(x, "seeds")
    half = T_975_4 * math.sqrt(2.5) / math.sqrt(5)
    boot = bootstrap_t_bounds(x)  # recomputed resample by resample (tests/_t_bounds.py)
    assert iv.effect == pytest.approx(3.0)
    assert (iv.low, iv.high) == pytest.approx((min(3.0 - half, boot[0]), max(3.0 + half, boot[1])), rel=1e-12)
    assert iv.low < 3.0 - half and iv.high > 3.0 + half  # five replicates: bootstrap-t is the wider on both sides
    assert iv.replicates == 5 and iv.unit == "seeds"
    assert iv.method == "t and bootstrap-t (union) over 5 seeds (4999 resamples)"
    assert iv == robust_t_interval(x, "seeds")
    skewed = np.random.default_rng(7).lognormal(0.0, 0.5, 6)
    assert (t_interval(skewed, "runs").low, t_interval(skewed, "runs").high) == pytest.approx(t_bounds(skewed))


def test_t_interval_needs_five_replicates_else_unbounded():
    iv = t_interval([1.0, 2.0, 3.0, 4.0], "seeds")
    assert iv.effect == pytest.approx(2.5)
    assert iv.low == -math.inf and iv.high == math.inf and iv.replicates == MIN_T_REPLICATES - 1
    assert iv.method == f"t and bootstrap-t (union) needs >= {MIN_T_REPLICATES} seeds, has 4"
    assert decide(iv, +1).status == "INCONCLUSIVE"
    assert f"at least {MIN_T_REPLICATES} seeds" in decide(iv, +1).note
    student = student_t_interval([1.0, 2.0, 3.0, 4.0], "seeds")
    assert student.low == -math.inf and student.high == math.inf


def test_t_interval_zero_spread_is_a_point():
    for interval in (t_interval, student_t_interval):
        iv = interval([2.0] * 6, "runs")
        assert (iv.low, iv.effect, iv.high) == (2.0, 2.0, 2.0)
    # one number along two floating-point paths (0.1 + 0.2 != 0.3): no spread, not an unbounded bootstrap-t
    rounded = t_interval([0.3, 0.1 + 0.2, 0.3, 0.1 + 0.2, 0.3], "runs")
    assert (rounded.low, rounded.high) == pytest.approx((0.3, 0.3), abs=1e-15)


def test_student_t_interval_coverage_is_95_percent():
    rng = np.random.default_rng(1)
    hits = sum(iv.low <= 0.3 <= iv.high for iv in (student_t_interval(rng.normal(0.3, 2.0, 8), "seeds")
                                                   for _ in range(4000)))
    assert 0.94 <= hits / 4000 <= 0.96  # binomial sd of the rate: 0.0034


def test_no_claim_uses_the_plain_student_t():
    """student_t_interval under-covers skewed replicates at 5 seeds: no claims or figure module calls it."""
    folders = (Path(gradmc.claims.__file__).parent, Path(gradmc.figures.__file__).parent)
    experiments = Path(gradmc.claims.__file__).parents[1] / "experiments"
    for path in [*(p for f in folders for p in f.glob("*.py")), *experiments.glob("*/claims.py"),
                 *experiments.glob("*/figure.py")]:
        if path.name != "stats.py":
            assert "student_t_interval" not in path.read_text(), path


def test_paired_t_is_the_t_interval_of_differences():
    a, b = [3.0, 5.0, 4.0, 6.0, 7.0], [1.0, 2.0, 2.5, 3.0, 3.0]
    paired = paired_t_interval(a, b, "seeds")
    direct = t_interval(np.subtract(a, b), "seeds")
    assert (paired.effect, paired.low, paired.high) == pytest.approx((direct.effect, direct.low, direct.high))
    assert (paired.low, paired.high) == pytest.approx(t_bounds(np.subtract(a, b)))
    assert paired == paired_robust_t_interval(a, b, "seeds")
    assert paired.method == "paired t and bootstrap-t (union) over 5 seeds (4999 resamples)"
    with pytest.raises(ValueError, match="equal numbers"):
        paired_t_interval([1.0, 2.0], [1.0], "seeds")


def test_bootstrap_matches_the_normal_interval_of_a_difference_of_means():
    rng = np.random.default_rng(2)
    a, b = rng.normal(1.0, 1.0, 400), rng.normal(0.0, 2.0, 400)
    iv = bootstrap_interval(difference_of_means, (a, b), "chains")
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert iv.effect == pytest.approx(a.mean() - b.mean())
    assert iv.low == pytest.approx(iv.effect - 1.96 * se, abs=0.1 * se)
    assert iv.high == pytest.approx(iv.effect + 1.96 * se, abs=0.1 * se)
    assert iv.replicates == 400 and "bootstrap" in iv.method


def test_bootstrap_is_reproducible_and_degenerate_cases():
    rng = np.random.default_rng(3)
    a, b = rng.exponential(2.0, 50), rng.exponential(1.0, 60)
    first = bootstrap_interval(log_ratio_of_means, (a, b), "chains")
    assert first == bootstrap_interval(log_ratio_of_means, (a, b), "chains")
    assert first.effect == pytest.approx(math.log(a.mean() / b.mean()))
    assert first.replicates == 50
    const = bootstrap_interval(difference_of_means, ([2.0] * 10, [1.0] * 10), "chains")
    assert (const.low, const.effect, const.high) == pytest.approx((1.0, 1.0, 1.0))
    single = bootstrap_interval(difference_of_means, ([2.0], [1.0, 3.0]), "runs")
    assert single.low == -math.inf and single.high == math.inf


def test_an_unbounded_interval_names_its_methods_own_minimum():
    rng = np.random.default_rng(8)
    few = bootstrap_interval(log_ratio_of_means, (rng.lognormal(size=3), rng.lognormal(size=9)), "chains")
    assert f"needs at least {MIN_BOOTSTRAP_REPLICATES} chains (has 3)" in decide(few, +1).note
    stated = Interval(0.1, -math.inf, math.inf, 4, "timed runs", "bootstrap needs >= 5 timed runs per sampler, has 4")
    assert "needs at least 5 timed runs (has 4)" in decide(stated, +1).note
    t_few = t_interval([1.0, 2.0, 3.0], "seeds")
    assert f"needs at least {MIN_T_REPLICATES} seeds (has 3)" in decide(t_few, +1).note


def test_non_finite_and_empty_inputs_raise():
    with pytest.raises(ValueError, match="non-finite"):
        t_interval([1.0, math.nan, 2.0, 3.0, 4.0], "seeds")
    with pytest.raises(ValueError, match="no replicates"):
        t_interval([], "seeds")
    with pytest.raises(ValueError, match="equal numbers"):
        paired_t_interval([1.0, 2.0, 3.0, 4.0, 5.0], [1.0] * 4, "seeds")
    with pytest.raises(ValueError, match="empty"):
        bootstrap_interval(difference_of_means, ([], [1.0]), "chains")


def _iv(effect, low, high, n=5):
    return Interval(effect, low, high, n, "seeds", "test")


@pytest.mark.parametrize(("interval", "direction", "status"), [
    (_iv(1.0, 0.2, 1.8), +1, "PASS"),
    (_iv(-1.0, -1.8, -0.2), +1, "FAIL"),
    (_iv(0.5, -0.5, 1.5), +1, "INCONCLUSIVE"),
    (_iv(-1.0, -1.8, -0.2), -1, "PASS"),
    (_iv(1.0, 0.2, 1.8), -1, "FAIL"),
    (_iv(-0.5, -1.5, 0.5), -1, "INCONCLUSIVE"),
])
def test_direction_verdicts(interval, direction, status):
    assert decide(interval, direction).status == status


def test_nonzero_null():
    assert decide(_iv(1.2, 1.05, 1.3), +1, null=1.0).status == "PASS"
    assert decide(_iv(1.2, 0.9, 1.3), +1, null=1.0).status == "INCONCLUSIVE"


def test_inconclusive_note_estimates_the_replicates_that_would_decide():
    # effect 1, half-width 2, 5 seeds: the half-width must shrink 2x -> 4x the seeds
    verdict = decide(_iv(1.0, -1.0, 3.0), +1)
    assert verdict.status == "INCONCLUSIVE"
    assert "about 4.0x the seeds (about 20 instead of 5)" in verdict.note
    assert "estimate on the paper's side" in verdict.note
    assert "estimate on the other side" in decide(_iv(-1.0, -3.0, 1.0), +1).note
    # effect 0.001 with half-width 2: (2 / 0.001)^2 = 4e6 x -- not "about 4000000.0x", a plain statement
    assert "over 1,000x the seeds" in decide(_iv(0.001, -1.999, 2.001), +1).note
    # a one-sided interval: more replicates alone do not bound the missing side
    assert "one-sided" in decide(_iv(-1.0, -3.0, math.inf), +1).note


@pytest.mark.parametrize(("interval", "status"), [
    (_iv(0.5, -1.0, 1.5), "PASS"),
    (_iv(5.0, 3.0, 7.0), "FAIL"),
    (_iv(-5.0, -7.0, -3.0), "FAIL"),
    (_iv(1.0, -1.0, 3.0), "INCONCLUSIVE"),
])
def test_agreement_verdicts(interval, status):
    assert decide(interval, 0, tolerance=2.0).status == status


def test_agreement_inconclusive_note():
    inside = decide(_iv(1.0, -0.5, 2.5), 0, tolerance=2.0)  # half-width 1.5, 1.0 from the edge: 2.25x
    assert "about 2.2x the seeds" in inside.note or "about 2.3x the seeds" in inside.note
    outside = decide(_iv(2.5, 1.0, 4.0), 0, tolerance=2.0)
    assert outside.status == "INCONCLUSIVE" and "outside the band" in outside.note


def test_bad_verdict_arguments():
    with pytest.raises(ValueError, match="direction"):
        decide(_iv(1.0, 0.0, 2.0), 2)
    with pytest.raises(ValueError, match="tolerance"):
        decide(_iv(1.0, 0.0, 2.0), 0)
    with pytest.raises(ValueError, match="NaN"):
        decide(_iv(math.nan, 0.0, 2.0), 1)
    with pytest.raises(ValueError, match="lower bound above its upper bound"):
        decide(_iv(1.0, 2.0, 0.5), 1)
    with pytest.raises(ValueError, match="superiority test has no margin"):
        decide(_iv(1.0, 0.2, 1.8), 1, tolerance=0.1)
    for margin in (math.inf, 0.0, -1.0):   # an infinite band would PASS every bounded interval
        with pytest.raises(ValueError, match="finite margin"):
            decide(_iv(1.0, 0.2, 1.8), 0, tolerance=margin, test="equivalence")


def test_inconclusive_note_reads_the_bound_that_crosses_the_edge():
    # a lopsided interval (t union bootstrap-t): 1.0 from the null, the lower bound reaches 1.5 below the
    # estimate, the upper only 0.2 above it: (1.5 / 1)^2 = 2.25x, never "1.0x" from the symmetric half-width
    lopsided = decide(_iv(1.0, -0.5, 1.2), +1)
    assert lopsided.status == "INCONCLUSIVE" and "about 2.2x the seeds" in lopsided.note, lopsided.note
    mirrored = decide(_iv(-1.0, -1.2, 0.5), -1)
    assert "about 2.2x the seeds" in mirrored.note, mirrored.note
    # equivalence: only the upper edge (0.5) is crossed, 0.3 from the estimate, reached 0.6 above it: 4x
    upper = decide(_iv(0.2, 0.1, 0.8), 0, tolerance=0.5, test="equivalence")
    assert "about 4.0x the seeds" in upper.note, upper.note
    # an estimate exactly on the decision edge: no replicate count can decide it
    for verdict in (decide(_iv(0.0, -1.0, 1.0), +1), decide(_iv(0.5, 0.0, 1.0), 0, tolerance=0.5, test="equivalence")):
        assert verdict.status == "INCONCLUSIVE" and "the estimate sits on" in verdict.note, verdict.note
        assert "x the seeds" not in verdict.note


@pytest.mark.parametrize(("interval", "status"), [
    (_iv(-0.05, -0.08, 0.1), "PASS"),        # "at least as": within the margin 0.1 below the null
    (_iv(-0.3, -0.4, -0.2), "FAIL"),         # wholly worse than the margin
    (_iv(-0.1, -0.2, 0.0), "INCONCLUSIVE"),  # straddles -0.1
])
def test_non_inferiority_verdicts(interval, status):
    assert decide(interval, +1, tolerance=0.1, test="non-inferiority").status == status
    flipped = _iv(-interval.effect, -interval.high, -interval.low)  # direction -1: the mirror image
    assert decide(flipped, -1, tolerance=0.1, test="non-inferiority").status == status


def test_equivalence_is_two_one_sided_tests_and_superiority_is_unchanged():
    assert decide(_iv(0.006, -0.01, 0.02), 0, tolerance=0.05, test="equivalence").status == "PASS"
    assert decide(_iv(0.2, 0.1, 0.3), 0, tolerance=0.05, test="equivalence").status == "FAIL"
    assert "equivalence margin" in decide(_iv(0.04, 0.0, 0.08), 0, tolerance=0.05, test="equivalence").note
    assert decide(_iv(1.0, 0.2, 1.8), +1, test="superiority") == decide(_iv(1.0, 0.2, 1.8), +1)
    with pytest.raises(ValueError, match="needs direction 0"):
        decide(_iv(1.0, 0.2, 1.8), +1, tolerance=0.1, test="equivalence")
    with pytest.raises(ValueError, match="margin"):
        decide(_iv(1.0, 0.2, 1.8), +1, test="non-inferiority")
    with pytest.raises(ValueError, match="test must be one of"):
        decide(_iv(1.0, 0.2, 1.8), +1, test="comparable")


def test_tied_replicates_keep_a_bounded_interval():
    """Resamples of one repeated value (frequent when 3 of 5 replicates tie, e.g. a recall of k / L) have no
    studentized value and are left out, so ties do not make the interval unbounded."""
    for values in ([0.0, 0.0, 0.0, 0.0, 1 / 56], [-0.2, -0.2, -0.2, -0.3, -0.15]):
        iv = t_interval(values, "seeds")
        assert math.isfinite(iv.low) and math.isfinite(iv.high) and iv.low <= iv.effect <= iv.high, iv
