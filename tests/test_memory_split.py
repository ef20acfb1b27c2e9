"""Memory-aware shards: a shard over the memory budget is split into parts of whole chain
blocks, and the rows equal those of the unsplit run; randomness per chain block (ChainStreams) is what makes
grouping irrelevant, checked kernel by kernel."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pandas as pd
import pytest
import torch

from gradmc.config import fill_defaults
from gradmc.core.streams import ChainStreams, bernoulli, rand, randint
from gradmc.distributed import machine_memory, memory_split
from gradmc.distributed.memory_split import (
    ShardPart,
    ShardTooLargeError,
    resolve_memory_budget,
    split_for_memory,
    unit_names,
    unit_noun,
)
from gradmc.distributed.ray_runner import _label, shard_sizes
from gradmc.distributed.shard_cache import ShardCache
from gradmc.errors import ConfigError, InputError
from gradmc.experiments import ising_sampling
from gradmc.experiments.standard import collect, run_experiment, shard_code_digest
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.targets import LatticeIsing, LatticePotts

SPEC = {"sides": [4], "thetas": [0.3], "samplers": ["GWG", "Gibbs-1", "HB-10-1"], "seeds": [0],
        "num_chains": 8, "num_steps": 40, "burn_in_fraction": 0.1, "chains_per_shard": 8, "chain_block": 2}


def _config(**over) -> dict:
    return fill_defaults({"name": "test", "device": "cpu", "ising_sampling": {**SPEC, **over}})


def _gens(*seeds: int) -> list[torch.Generator]:
    return [torch.Generator().manual_seed(s) for s in seeds]


# --- ChainStreams ----------------------------------------------------------------------------------------

def test_streams_draw_each_block_from_its_own_generator():
    streams = ChainStreams(_gens(1, 2), [2, 3])
    got = rand((5, 4), streams, dtype=torch.float64)
    a, b = _gens(1, 2)
    expected = torch.cat([torch.rand((2, 4), generator=a, dtype=torch.float64),
                          torch.rand((3, 4), generator=b, dtype=torch.float64)])
    assert torch.equal(got, expected)
    ints = randint(7, (5,), ChainStreams(_gens(1, 2), [2, 3]))
    a, b = _gens(1, 2)
    assert torch.equal(ints, torch.cat([torch.randint(7, (2,), generator=a), torch.randint(7, (3,), generator=b)]))
    p = torch.full((5, 3), 0.5)
    bits = bernoulli(p, ChainStreams(_gens(1, 2), [2, 3]))
    a, b = _gens(1, 2)
    assert torch.equal(bits, torch.cat([bernoulli(p[:2], a), bernoulli(p[2:], b)]))
    u = torch.cat([torch.rand((2, 3), generator=_gens(1)[0], dtype=torch.float64),
                   torch.rand((3, 3), generator=_gens(2)[0], dtype=torch.float64)])
    assert torch.equal(bits, (u < p).float())  # each block from its own generator: u < p, u in float64


def test_bernoulli_has_the_law_and_the_errors_of_torch_bernoulli():
    (g,) = _gens(3)
    p = torch.tensor([0.0, 1e-3, 0.25, 0.5, 0.9, 1.0]).repeat(200_000, 1)
    bits = bernoulli(p, g)
    assert bits.dtype == p.dtype and set(bits.unique().tolist()) <= {0.0, 1.0}
    assert bits[:, 0].sum() == 0 and bits[:, -1].sum() == 200_000  # p = 0 never, p = 1 always
    se = (p[0] * (1 - p[0]) / 200_000).sqrt()
    assert ((bits.mean(0) - p[0]).abs() <= 5 * se + 1e-12).all()
    for bad in (torch.tensor([0.5, float("nan")]), torch.tensor([1.5]), torch.tensor([-0.1])):
        with pytest.raises(RuntimeError, match=r"must lie in \[0, 1\]"):
            bernoulli(bad, g)


def test_plain_generator_gives_the_torch_call_it_replaces():
    (g,), (h,) = _gens(5), _gens(5)
    assert torch.equal(rand((3, 2), g), torch.rand((3, 2), generator=h))
    assert torch.equal(randint(4, (6,), g), torch.randint(4, (6,), generator=h))


def test_streams_refuse_a_draw_for_other_chains_and_bad_blocks():
    streams = ChainStreams(_gens(1, 2), [2, 3])
    with pytest.raises(ValueError, match="draw for 4 chains from streams of 5 chains"):
        rand((4, 2), streams)
    with pytest.raises(ValueError, match="one chain count per generator"):
        ChainStreams(_gens(1), [1, 2])
    with pytest.raises(ValueError, match="at least one chain"):
        ChainStreams(_gens(1), [0])


KERNELS = [(n, "binary") for n in ("GWG", "GWG-3", "Gibbs-1", "Gibbs-2", "HB-10-1", "RWM")] + [
    (n, "categorical") for n in ("GWG", "Gibbs-1")]


@pytest.mark.parametrize("name, state", KERNELS)
def test_a_chain_does_not_depend_on_the_chains_batched_with_it(name, state):
    """8 chains in 4 blocks of 2, run as one batch, equal the same blocks run as two batches of 4 (lattice
    Ising, binary; lattice Potts with 3 states, one-hot)."""
    target = LatticeIsing(4, 0.3) if state == "binary" else LatticePotts(4, 3, 0.5)
    sampler = make_sampler(name, state=state)

    def start(streams: ChainStreams) -> torch.Tensor:
        if state == "binary":
            return bernoulli(torch.full((streams.num_chains, 16), 0.5), streams)
        return torch.nn.functional.one_hot(randint(3, (streams.num_chains, 16), streams), 3).float()

    def run(blocks: list[int]) -> torch.Tensor:
        streams = ChainStreams(_gens(*(100 + b for b in blocks)), [2] * len(blocks))
        state = sampler.init(start(streams), target)
        for _ in range(25):
            state, _info = sampler.step(state, target, streams)
        return state.x

    whole = run([0, 1, 2, 3])
    assert torch.equal(whole, torch.cat([run([0, 1]), run([2, 3])]))
    assert not torch.equal(whole[:2], whole[2:4])  # the blocks do differ


# --- splitting a sweep -----------------------------------------------------------------------------------

def test_shards_over_the_budget_split_into_whole_blocks():
    shards = ising_sampling.shards(_config(), {})
    one_block = ising_sampling.shard_memory_bytes(shards[0], 2)
    units, groups = split_for_memory(ising_sampling, shards, 2 * one_block)
    assert len(units) == 2 * len(shards) and all(isinstance(u, ShardPart) for u in units)
    assert [(u.start, u.stop) for u in units[:2]] == [(0, 4), (4, 8)]
    assert groups[1] == [2, 3]
    units, groups = split_for_memory(ising_sampling, shards, ising_sampling.shard_memory_bytes(shards[0], 8))
    assert units == shards and groups == [[0], [1], [2]]
    assert split_for_memory(ising_sampling, shards, None)[0] == shards


def test_one_block_over_the_budget_is_a_clear_error():
    shards = ising_sampling.shards(_config(), {})
    with pytest.raises(ShardTooLargeError, match=r"one chain block of 2 chains.*chain_block"):
        split_for_memory(ising_sampling, shards, ising_sampling.shard_memory_bytes(shards[0], 2) - 1)


def test_split_line_gives_sizes_below_one_mib_in_kib():
    shards = ising_sampling.shards(_config(samplers=["GWG"]), {})
    lines: list[str] = []
    split_for_memory(ising_sampling, shards, ising_sampling.shard_memory_bytes(shards[0], 4), progress=lines.append)
    # 8 chains x (96 x 41 + 4 x 16 x 64) bytes = 64256 bytes; the budget is half of it
    assert lines == ["shard 0 needs about 62.8 KiB, over the budget of 31.4 KiB per shard: split into 2 parts of "
                     "at most 4 chains (2 chain blocks of 2)"]


def test_a_block_larger_than_the_shard_is_the_whole_shard_in_the_error():
    """chain_block 4 over a shard of 3 chains: the only block is the shard's 3 chains, which cannot split."""
    shards = ising_sampling.shards(_config(samplers=["GWG"], num_chains=3, chains_per_shard=3, chain_block=4), {})
    need = ising_sampling.shard_memory_bytes(shards[0], 3)
    with pytest.raises(ShardTooLargeError) as err:
        split_for_memory(ising_sampling, shards, need - 1)
    assert str(err.value) == (
        f"shard 0 {shards[0]!r} needs about {machine_memory.format_bytes(need)}, over the budget of "
        f"{machine_memory.format_bytes(need - 1)} per shard, and cannot be split: its 3 chains are a single chain "
        "block (chain_block 4 >= 3), the smallest part a split can make: give shards more memory "
        "(--shard-memory-mb or GRADMC_SHARD_MEMORY_MB) or lower chain_block (or the problem size) in the config")
    assert split_for_memory(ising_sampling, shards, need)[0] == shards  # at the budget: runs whole


def _mixed():
    """Shard 0 of 4 chains split into two parts of one block (2 chains); shard 1 of 2 chains whole."""
    shards = ising_sampling.shards(_config(samplers=["GWG"], num_chains=6, chains_per_shard=4), {})
    units, groups = split_for_memory(ising_sampling, shards, ising_sampling.shard_memory_bytes(shards[0], 2))
    return shards, units, groups


def test_parts_are_named_after_their_shard():
    shards, units, groups = _mixed()
    assert units == [ShardPart(shards[0], 0, 2), ShardPart(shards[0], 2, 4), shards[1]]
    assert unit_names(units, groups) == ["shard 0 part 1/2", "shard 0 part 2/2", "shard 1"]
    assert (unit_noun(units), unit_noun(units[:2]), unit_noun(units[2:])) == (
        "whole shards and parts", "parts", "shards")
    assert _label(units[1]) == "(side=4, theta=0.3, sampler=GWG, seed=0, chain_start=0, num_chains=4; chains 2..3)"
    assert shard_sizes(units[1]) == ("side=4, theta=0.3, sampler='GWG', seed=0, chain_start=0, num_chains=4, "
                                     "total_chains=6, num_steps=40, burn_in_fraction=0.1, chain_block=2, "
                                     "device='cpu', start=2, stop=4")


def test_chains_per_shard_must_hold_whole_blocks():
    with pytest.raises(ConfigError, match=r"chains_per_shard \(3\) must be a multiple of ising_sampling.chain_block"):
        ising_sampling.shards(_config(chains_per_shard=3), {})
    assert len(ising_sampling.shards(_config(chains_per_shard=12, chain_block=5), {})) == 3  # one chunk: any block


def test_split_sweep_rows_equal_the_unsplit_sweep(ray_session, tmp_path):
    """The acceptance test: a tiny budget splits every shard (2 and 4 parts); rows equal the unsplit run's
    (all but the timings), also through the shard cache, which stores each part on its own."""
    config = _config()
    shard = ising_sampling.shards(config, {})[0]

    def sweep(budget, cache=None) -> tuple[pd.DataFrame, list[str]]:
        lines: list[str] = []
        df = run_experiment("ising_sampling", config, {}, workers=2, progress=lines.append, memory_budget=budget,
                            shard_cache=cache)
        return df, lines

    def untimed(df: pd.DataFrame) -> pd.DataFrame:
        return df[df["metric"] != "ess_per_second"].drop(columns="wall_time_s").reset_index(drop=True)

    whole, lines = sweep(None, tmp_path / "whole")
    assert not any("split into" in line for line in lines)
    assert f"[ising_sampling] shard cache {tmp_path / 'whole'}: 0 of 3 shards stored, 3 to run" in lines
    # one path for both: unsplit shards run through run_unit, are stored under the shard's own key (as when
    # they ran through the module's run), and give the module's own rows
    cache = ShardCache(tmp_path / "whole", "ising_sampling", shard_code_digest("ising_sampling"))
    shards = ising_sampling.shards(config, {})
    assert {p.stem for p in (tmp_path / "whole").glob("*.parquet")} == {cache.key(s) for s in shards}
    in_process = collect("ising_sampling", [ising_sampling.run(s) for s in shards])
    pd.testing.assert_frame_equal(untimed(whole), untimed(in_process))
    for blocks, parts in ((2, 2), (1, 4)):
        split, lines = sweep(ising_sampling.shard_memory_bytes(shard, 2 * blocks), tmp_path / f"cache{blocks}")
        assert sum(f"split into {parts} parts" in line for line in lines) == 3
        pd.testing.assert_frame_equal(untimed(split), untimed(whole))
        assert len(list((tmp_path / f"cache{blocks}").glob("*.parquet"))) == 3 * parts
    assert set(whole["metric"]) >= {"ess", "ess_all_chains"} and "kept_statistic" not in set(split["metric"])
    again, _ = sweep(ising_sampling.shard_memory_bytes(shard, 2), tmp_path / "cache1")  # all parts from the cache
    pd.testing.assert_frame_equal(untimed(again), untimed(whole))


@pytest.mark.slow
def test_killed_split_sweep_reruns_only_the_missing_part(ray_session, tmp_path):
    """Shard 0 split in two parts, shard 1 whole: progress names each part after its shard; with one part's
    file lost (as after a kill), the rerun runs just that part, and the rows are the in-process unsplit rows."""
    shards, units, _ = _mixed()
    config = _config(samplers=["GWG"], num_chains=6, chains_per_shard=4)
    budget = ising_sampling.shard_memory_bytes(shards[0], 2)
    folder = tmp_path / "cache"

    def sweep() -> tuple[pd.DataFrame, list[str]]:
        lines: list[str] = []
        df = run_experiment("ising_sampling", config, {}, workers=2, progress=lines.append, memory_budget=budget,
                            memory_source="a test", shard_cache=folder)
        return df.drop(columns="wall_time_s")[df["metric"] != "ess_per_second"].reset_index(drop=True), lines

    first, lines = sweep()
    assert f"[ising_sampling] memory budget: {machine_memory.format_bytes(budget)} per shard (a test)" in lines
    assert f"[ising_sampling] shard cache {folder}: 0 of 3 whole shards and parts stored, 3 to run" in lines
    assert "[ising_sampling] 3 whole shards and parts, 2 at a time" in lines
    finished = sorted(line.split(" finished in ")[0] for line in lines if " finished in " in line)
    assert finished == ["[ising_sampling] shard 0 part 1/2 (side=4, theta=0.3, sampler=GWG, seed=0, chain_start=0, "
                        "num_chains=4; chains 0..1)",
                        "[ising_sampling] shard 0 part 2/2 (side=4, theta=0.3, sampler=GWG, seed=0, chain_start=0, "
                        "num_chains=4; chains 2..3)",
                        "[ising_sampling] shard 1 (side=4, theta=0.3, sampler=GWG, seed=0, chain_start=4, "
                        "num_chains=2)"]
    cache = ShardCache(folder, "ising_sampling", shard_code_digest("ising_sampling"))
    assert {p.stem for p in folder.glob("*.parquet")} == {cache.key(u) for u in units}
    cache.path(units[1]).unlink()
    again, lines = sweep()
    assert f"[ising_sampling] shard cache {folder}: 2 of 3 whole shards and parts stored, 1 to run" in lines
    assert [line.split(" (")[0] for line in lines if " finished in " in line] == ["[ising_sampling] shard 0 part 2/2"]
    pd.testing.assert_frame_equal(again, first)
    whole = collect("ising_sampling", [ising_sampling.run(s) for s in shards])
    pd.testing.assert_frame_equal(first, whole.drop(columns="wall_time_s")[whole["metric"] != "ess_per_second"]
                                  .reset_index(drop=True))


def test_shards_of_a_type_from_another_module_are_refused(monkeypatch):
    """run_unit finds a whole shard's run through its type's module: a shard type defined elsewhere would run
    another module's run, so run_experiment refuses it before any work."""
    from gradmc.distributed.selftest import ToyShard

    monkeypatch.setattr(ising_sampling, "shards", lambda config, inputs: [ToyShard(seed=0)])
    with pytest.raises(TypeError, match=r"shards of types defined in \['gradmc.distributed.selftest'\]"):
        run_experiment("ising_sampling", _config(), {}, progress=None)


def test_merge_refuses_parts_that_miss_chains():
    shard = dataclasses.replace(ising_sampling.shards(_config(num_steps=12), {})[0])
    first = ising_sampling.run_part(ShardPart(shard, 0, 4))
    with pytest.raises(ValueError, match="hold chains"):
        ising_sampling.merge_parts(shard, [first])


# --- the budget --------------------------------------------------------------------------------------------

def test_budget_from_option_environment_or_machine(monkeypatch):
    monkeypatch.delenv(memory_split.MEMORY_ENV_VAR, raising=False)
    assert resolve_memory_budget(64) == 64 << 20
    monkeypatch.setattr(machine_memory, "memory_limit", lambda: (10 << 30, "physical memory"))
    assert resolve_memory_budget(None, workers=4) == int(0.8 * (10 << 30) / 4)
    monkeypatch.setenv(memory_split.MEMORY_ENV_VAR, "512")
    assert resolve_memory_budget(None, workers=4) == 512 << 20
    assert resolve_memory_budget(2, workers=4) == 2 << 20  # the option wins
    monkeypatch.setenv(memory_split.MEMORY_ENV_VAR, "lots")
    with pytest.raises(InputError, match="GRADMC_SHARD_MEMORY_MB='lots' is not a number"):
        resolve_memory_budget(None)
    for bad in (0, -3, float("nan"), float("inf")):
        with pytest.raises(InputError, match="positive, finite"):
            resolve_memory_budget(bad)


def test_gradmc_run_refuses_a_bad_budget_before_any_work(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "gradmc.cli", "run", "ising_sampling", "--config",
                           "config/smoke.yaml", "--out", str(tmp_path / "m.parquet"), "--shard-memory-mb", "-1"],
                          capture_output=True, text=True, timeout=120)
    # refused at parsing (the option's type), like the other numeric options
    assert proc.returncode == 2 and "argument --shard-memory-mb: expected a finite number > 0, got '-1'" in proc.stderr
    assert not (tmp_path / "m.parquet").exists()
