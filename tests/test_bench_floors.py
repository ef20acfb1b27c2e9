"""The opt-in floors suite: operation counts, the one-evaluation floor and the rows' arithmetic."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pytest
import torch

from gradmc.bench.catalog import FLOORS_SUITE, ISING_SUITE, RBM_SUITE, select_suites
from gradmc.bench.floors import FLOORS_SAMPLERS, count_ops, evaluation_floor_ms
from gradmc.bench.samplers import build_rbm, run_benchmark


@dataclass(frozen=True)
class TwoOps:
    """A kernel whose step makes exactly two top-level operations: a cast (aten::to, which calls _to_copy and
    copy_ inside) and an add."""

    def init(self, x, log_prob):
        return x

    def step(self, state, log_prob, generator):
        return state.double().add(1.0), None


def test_count_ops_counts_top_level_operations_only():
    gen = torch.Generator().manual_seed(0)
    assert count_ops(TwoOps(), None, torch.zeros(2, 3), gen, steps=4) == 2.0
    with pytest.raises(ValueError, match="steps must be >= 1"):
        count_ops(TwoOps(), None, torch.zeros(2, 3), gen, steps=0)


def test_evaluation_floor_is_one_flip_evaluation():
    gen = torch.Generator().manual_seed(1)
    target, x0 = build_rbm(gen, num_visible=12, num_hidden=5, num_chains=3)
    ms = evaluation_floor_ms(target, x0, gen, repeats=2, number=3)
    assert math.isfinite(ms) and ms > 0
    with pytest.raises(ValueError, match="repeats and number"):
        evaluation_floor_ms(target, x0, gen, repeats=0)


def test_floors_suite_is_opt_in_and_its_rows_add_up(tmp_path):
    assert FLOORS_SUITE not in select_suites(None) and select_suites([FLOORS_SUITE]) == (FLOORS_SUITE,)
    lines: list[str] = []
    out = tmp_path / "samplers.json"
    run_benchmark(out, threads=1, steps=2, repeats=1, warmup=0, suites=[FLOORS_SUITE], progress=lines.append)
    rows = json.loads(out.read_text())["suites"][FLOORS_SUITE]
    assert set(rows) == {f"{setting} {name}" for setting in (RBM_SUITE, ISING_SUITE) for name in FLOORS_SAMPLERS}
    for row in rows.values():
        assert row["rest_ms"] == pytest.approx(row["ms_per_step"] - row["evaluation_ms"] - row["fixed_ms"])
        assert row["ops_per_step"] >= 10 and row["fixed_ms"] > 0 and row["evaluation_ms"] > 0
    assert sum(line.startswith("[bench] floors ") for line in lines) == len(rows)
