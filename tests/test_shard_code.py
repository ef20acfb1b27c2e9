"""Shards keyed by their own code: each sampler's modules, an edit to one sampler changes only its shards' keys, and a
shard that builds an undeclared sampler is refused before anything is cached."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from gradmc.codedigest import PACKAGE_ROOT
from gradmc.config import load_config
from gradmc.distributed.memory_split import ShardPart, run_unit
from gradmc.distributed.shard_cache import ShardCache
from gradmc.experiments import ising_sampling
from gradmc.experiments.standard import cache_status, job_config, shard_code_digest
from gradmc.samplers.discrete.registry import (
    UndeclaredSamplerError,
    make_sampler,
    recording_samplers,
    sampler_modules,
)

REPO = Path(__file__).resolve().parents[1]

BINARY = ["Gibbs-1", "Gibbs-2-systematic", "GWG", "GWG-3", "PAS-3", "HB-10-1", "RWM", "BlockGibbs", "DMALA", "DULA",
          "DLMC", "DLMC-Euler", "ACS"]
CATEGORICAL = ["Gibbs-1", "GWG", "DMALA", "DULA", "DLMC"]


class _Blocked:
    def blocks(self):
        return [[0, 1], [2, 3]]


@pytest.mark.parametrize("name", BINARY)
def test_sampler_modules_name_the_module_of_the_binary_kernel(name):
    assert type(make_sampler(name)).__module__ in sampler_modules(name)


@pytest.mark.parametrize("name", CATEGORICAL)
def test_sampler_modules_name_the_module_of_the_categorical_kernel(name):
    assert type(make_sampler(name, state="categorical")).__module__ in sampler_modules(name)


def test_sampler_modules_of_structured_and_relaxed_samplers():
    assert type(make_sampler("Block-HB", target=_Blocked())).__module__ in sampler_modules("Block-HB")
    for name, rate in (("R-MALA", "step_size"), ("R-HMC", "step_size"), ("D-SVGD", "learning_rate")):
        assert type(make_sampler(name, **{rate: 0.1, "temperature": 1.0})).__module__ in sampler_modules(name)
    with pytest.raises(ValueError, match="unknown sampler 'Nope'"):
        sampler_modules("Nope")


def test_recording_sees_every_built_sampler_nested():
    with recording_samplers() as outer:
        make_sampler("GWG")
        with recording_samplers() as inner:
            make_sampler("DMALA", state="categorical")
    make_sampler("RWM")
    assert outer == {"GWG", "DMALA"} and inner == {"DMALA"}


def _smoke_ising_shards():
    config = load_config(REPO / "config" / "smoke.yaml")
    return ising_sampling.shards(job_config("ising_sampling", config), {})


def test_a_sampler_edit_changes_only_its_own_shards_keys(tmp_path):
    root = tmp_path / "gradmc"
    shutil.copytree(PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    shards = _smoke_ising_shards()
    samplers = {shard.sampler for shard in shards}
    assert {"GWG", "DMALA"} <= samplers and len(samplers) >= 3
    before = shard_code_digest("ising_sampling", root=root)
    keys = {shard: before(shard) for shard in shards}
    assert len({keys[s] for s in shards if s.sampler == "GWG"}) == 1  # one digest per sampler
    assert len(set(keys.values())) == len(samplers)
    path = root / "samplers" / "discrete" / "factorised.py"  # DMALA's kernel
    path.write_text(path.read_text() + "\nEDITED = True\n")
    after = shard_code_digest("ising_sampling", root=root)
    changed = {shard.sampler for shard in shards if after(shard) != keys[shard]}
    assert changed == {"DMALA"}
    # a part of a split shard is keyed by its shard's samplers
    dmala = next(s for s in shards if s.sampler == "DMALA")
    assert after(ShardPart(dmala, 0, 1)) == after(dmala)
    # code every shard runs (the experiment module, the registry itself) changes every key
    for rel in ("experiments/ising_sampling/__init__.py", "samplers/discrete/registry.py", "samplers/base.py"):
        path = root / rel
        path.write_text(path.read_text() + "\nEDITED_TOO = True\n")
        edited = shard_code_digest("ising_sampling", root=root)
        assert all(edited(s) != after(s) for s in shards), rel
        after = edited


def test_a_comment_edit_keeps_every_key(tmp_path):
    root = tmp_path / "gradmc"
    shutil.copytree(PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    shards = _smoke_ising_shards()
    before = shard_code_digest("ising_sampling", root=root)
    for rel in ("samplers/discrete/gwg.py", "samplers/discrete/factorised.py",
                "experiments/ising_sampling/__init__.py"):
        path = root / rel
        path.write_text("# a comment at the top\n" + path.read_text() + "\n# and one at the end\n")
    after = shard_code_digest("ising_sampling", root=root)
    assert all(after(s) == before(s) for s in shards)


def test_experiments_without_a_declaration_key_every_shard_by_the_whole_closure():
    from gradmc.codedigest import source_digest

    digest = shard_code_digest("kmc_banana")
    assert digest(object()) == source_digest("gradmc.experiments.kmc_banana")


# A stand-in experiment module (this test module): run_unit imports the module defining the shard's type.
@dataclass(frozen=True)
class Shard:
    sampler: str
    also: str = ""


def shard_samplers(shard: Shard) -> tuple[str, ...]:
    return (shard.sampler,)


def run(shard: Shard) -> pd.DataFrame:
    make_sampler(shard.sampler)
    if shard.also:
        make_sampler(shard.also)
    return pd.DataFrame({"sampler": [shard.sampler]})


def test_a_shard_building_an_undeclared_sampler_fails_before_caching():
    assert run_unit(Shard("GWG"))["sampler"].tolist() == ["GWG"]
    with pytest.raises(UndeclaredSamplerError, match=r"built the samplers \['BlockGibbs', 'GWG'\].*declares \['GWG'\]"):
        run_unit(Shard("GWG", also="BlockGibbs"))


def test_every_declaring_experiment_imports_only_the_registry_functions():
    """The registry is opaque in per-shard digests: a kernel class imported through it would escape the key."""
    import ast

    from gradmc.samplers.discrete import registry

    for path in sorted((PACKAGE_ROOT / "experiments").glob("**/*.py")):
        tree = ast.parse(path.read_text())
        if not any(isinstance(n, ast.FunctionDef) and n.name == "shard_samplers" for n in tree.body):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "gradmc.samplers.discrete.registry":
                assert {a.name for a in node.names} <= set(registry.__all__), path.name
            if isinstance(node, ast.ImportFrom) and node.module in ("gradmc.samplers.discrete", "gradmc.samplers"):
                pytest.fail(f"{path.name} imports from {node.module}: import make_sampler from the registry")


def test_cache_status_counts_stored_shards(tmp_path):
    config = load_config(REPO / "config" / "smoke.yaml")
    out = tmp_path / "ising_sampling" / "metrics.parquet"
    stored, total = cache_status("ising_sampling", config, {}, out, workers=2)
    assert stored == 0 and total == len(_smoke_ising_shards())
    cache = ShardCache(tmp_path / "ising_sampling" / "metrics.shards", "ising_sampling",
                       shard_code_digest("ising_sampling"), progress=None)
    first = _smoke_ising_shards()[0]
    cache.store(first, pd.DataFrame({"x": [1.0]}))
    assert cache_status("ising_sampling", config, {}, out, workers=2) == (1, total)



def test_the_runner_code_every_rule_digests_imports_no_sampler():
    """Every standard experiment's rule digests gradmc.experiments.standard: it must not cover every sampler, or an
    edit to one sampler would rerun the Kernel HMC jobs too."""
    from gradmc.codedigest import stage_modules

    files = {p.relative_to(PACKAGE_ROOT).as_posix() for p in stage_modules("gradmc.experiments.standard")}
    assert not {f for f in files if f.startswith(("samplers/discrete/", "samplers/relaxed/"))}


def test_a_mid_shard_checkpoint_is_named_by_the_shards_code(monkeypatch):
    """A run resumed after a code change must not continue the old code's chains from its checkpoint."""
    from gradmc.experiments import standard

    shard = _smoke_ising_shards()[0]
    tag = standard.checkpoint_tag("ising_pcd", shard)
    assert tag == standard.checkpoint_tag("ising_pcd", shard) and len(tag) == 16
    monkeypatch.setattr(standard, "shard_code_digest", lambda name: lambda unit: "code:0000000000000000")
    assert standard.checkpoint_tag("ising_pcd", shard) != tag
