"""The sampler catalog: kernels declare themselves (gradmc.sampler_catalog.register_sampler), everything else
derives from the declarations, and a sampler from outside the package (tests/plugins/gradmc_toy_sampler.py)
reaches the experiments, the bench, the figures and the exactness check with no edit to gradmc."""

from __future__ import annotations

import importlib
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from gradmc import sampler_catalog as catalog
from gradmc.config import validate_config
from gradmc.errors import ConfigError, InputError
from gradmc.samplers.adaptation import Adapted
from gradmc.samplers.discrete.registry import make_sampler, sampler_modules
from gradmc.samplers.exactness import check_sampler

REPO = Path(__file__).resolve().parents[1]
PLUGINS = Path(__file__).resolve().parent / "plugins"
PLUGIN = "gradmc_toy_sampler"

#: every concrete name the catalog's examples give, with its state (the exactness parametrisation)
INSTANCES = [(s.state, name, s.exact) for s in catalog.specs() if not s.required for name in s.instances]


def test_source_declarations_match_the_import_time_registry():
    """The declarations read from source (no import) are exactly those the decorators register on import."""
    for module in catalog.builtin_modules():
        importlib.import_module(module)
    runtime = {key: spec for key, spec in catalog._RUNTIME.items() if spec.module.startswith("gradmc.")}
    scanned = {(s.name, s.state): s for s in catalog.scan()}
    assert runtime == scanned
    assert len(scanned) >= 22


@pytest.mark.parametrize("state,name,exact", INSTANCES)
def test_every_instance_builds_its_declared_class(state, name, exact):
    spec, _, _ = catalog.resolve(name, state)
    sampler = make_sampler(name, state=state, target=_Blocks())
    assert type(sampler).__module__ == spec.module and type(sampler).__qualname__ == spec.qualname
    assert spec.module in sampler_modules(name)


class _Blocks:
    def blocks(self):
        return [[0, 1], [2, 3]]


@pytest.mark.parametrize("state,name", [(st, n) for st, n, exact in INSTANCES if exact] + [("binary", "Block-HB")])
def test_every_exact_kernel_passes_the_enumeration_check(state, name):
    """Three steps from pi on an enumerable target: chi-square p >= 1e-4, and at least 1% of the chains moved."""
    result = check_sampler(name, state, num_chains=100_000)
    assert result.passed, result


@pytest.mark.parametrize("state,name,adjusted", [("binary", "DULA", "DMALA"),
                                                 ("categorical", "DULA(step_size=1.0)", "DMALA(step_size=1.0)")])
def test_the_enumeration_check_rejects_the_unadjusted_kernel(state, name, adjusted):
    """Teeth: DULA (declared not exact) fails where DMALA, the same proposal with the MH step, passes. On the
    27-state categorical target DULA at its default step moves under 10% of the chains in three steps, too few
    to see its bias, so both run at step 1.0 there."""
    assert not check_sampler(name, state, num_chains=100_000).passed
    assert check_sampler(adjusted, state, num_chains=100_000).passed
    assert not catalog.resolve(name, state)[0].exact and catalog.resolve(adjusted, state)[0].exact


def test_options_in_the_name_are_validated_against_the_declaration():
    assert make_sampler("DMALA(step_size=0.1)") == make_sampler("DMALA", step_size=0.1)
    assert make_sampler("DLMC(tau=0.5)").tau == 0.5
    assert make_sampler("ACS(cycle_length=10, burn_in=0)").cycle_length == 10
    with pytest.raises(InputError, match=r"DMALA \(binary\) takes only the options \['step_size', 'adapt'\]"):
        make_sampler("DMALA(tau=0.1)")
    with pytest.raises(InputError, match="GWG .* takes no options"):
        make_sampler("GWG(step_size=0.1)")
    with pytest.raises(InputError, match="both in the name and as keywords"):
        make_sampler("DMALA(step_size=0.1)", step_size=0.2)
    with pytest.raises(InputError, match="option step_size = x is not a plain literal"):
        make_sampler("DMALA(step_size=x)")
    with pytest.raises(InputError, match="unknown categorical sampler 'PAS-3'"):
        make_sampler("PAS-3", state="categorical")
    with pytest.raises(InputError, match="step_size must be"):
        make_sampler("DMALA(step_size=-1.0)")


def test_adapt_wraps_the_kernel_and_starts_from_the_given_or_default_value():
    adapted = make_sampler("DMALA(adapt=100)")
    assert isinstance(adapted, Adapted) and adapted.burn_in == 100 and adapted.initial == 0.2
    assert adapted.kind == "log" and adapted.target_acceptance == 0.574 and adapted.name == "DMALA(adapt=100)"
    assert make_sampler("DMALA(step_size=0.05, adapt=10)").initial == 0.05
    pas = make_sampler("PAS-5(adapt=20)")
    assert pas.kind == "int" and pas.initial == 5 and pas.factory(2).path_length == 2
    dlmc = make_sampler("DLMC(adapt=100)")  # no tau: it starts at the kernel's e / D
    assert dlmc.initial is None
    x = torch.zeros(4, 8)
    assert dlmc.init(x, lambda y: -y.sum(1)).value == pytest.approx(math.e / 8)
    assert make_sampler("DLMC(tau=0.3, adapt=100)").init(x, lambda y: -y.sum(1)).value == 0.3
    assert "gradmc.samplers.adaptation" in sampler_modules("DMALA(adapt=100)")


def test_parse_splits_names_and_options():
    assert catalog.parse("GWG") == ("GWG", {})
    assert catalog.parse(" DMALA( step_size=0.1 , adapt=5 ) ") == ("DMALA", {"step_size": 0.1, "adapt": 5})
    for bad in ("GWG(", "DMALA(0.1)", "", "a b"):
        with pytest.raises(InputError, match="expected a name|key=literal"):
            catalog.parse(bad)


def test_option_values_are_checked_against_their_declared_kinds_when_the_config_is_read():
    for bad, message in (("DMALA(step_size=0)", "step_size must be a finite number > 0, got 0"),
                         ("DMALA(adapt=0.5)", "adapt must be an integer >= 1, got 0.5"),
                         ("ACS(burn_in=-1)", "burn_in must be an integer >= 0"),
                         ("ACS(target_acceptance=1.0)", r"target_acceptance must be a number in \(0, 1\)"),
                         ("DLMC(tau=True)", "tau must be a finite number > 0, got True"),
                         ("DMALA(step_size=0.1, step_size=0.2)", "option step_size is given twice")):
        with pytest.raises(InputError, match=message):
            catalog.resolve(bad)
    config = _smoke()
    config["ising_sampling"]["samplers"] = ["DMALA(step_size=-0.1)"]
    with pytest.raises(ConfigError, match=re.escape("config key 'ising_sampling.samplers.0': ") + ".*> 0"):
        validate_config(config)


def test_references_are_spelt_one_way_in_the_resolved_config():
    assert catalog.canonical(" DMALA( step_size = 1e-1 ) ") == "DMALA(step_size=0.1)"
    assert catalog.canonical("ACS(rate=1, burn_in=0)") == catalog.canonical("ACS(burn_in=0,rate=1)")
    assert catalog.canonical("DMALA(step_size=1)") == "DMALA(step_size=1.0)"  # a real option is a float
    assert catalog.canonical("ACS(beta_max=-0.0)") == catalog.canonical("ACS(beta_max=0)") == "ACS(beta_max=0.0)"
    assert catalog.canonical("DMALA(adapt=0x10)") == "DMALA(adapt=16)"
    config = _smoke()
    config["ising_sampling"]["samplers"] = ["GWG", "DMALA( adapt = 500 )", "DMALA(adapt=500)"]
    assert validate_config(config)["ising_sampling"]["samplers"] == ["GWG", "DMALA(adapt=500)"]


@pytest.mark.parametrize("bad,message", [
    ("DMALA(step_size=0.1)(adapt=5)", "in one pair of parentheses"),  # the second group was dropped silently
    ("DMALA(adapt=5)(adapt=6)", "in one pair of parentheses"),
    ("DMALA(step_size=0.1).x(adapt=5)", "in one pair of parentheses"),
    ("D-SVGD(learning_rate=0.1, temperature=1.0, betas={0.9, 0.99})", "not a plain literal"),  # set order varies
    ("DMALA(step_size=[0.1])", "not a plain literal"),
    ("DMALA(step_size=" + "-" * 3000 + "1)", "too deeply nested"),
    ("DMALA(adapt=0x" + "f" * 4000 + ")", "not a plain literal"),
    ("paper(x=1)", "group 'paper' takes no options"),
])
def test_malformed_references_are_one_line_errors(bad, message):
    with pytest.raises(InputError, match=re.escape(message)) as err:
        catalog.expand([bad])
    assert len(str(err.value)) < 400  # a huge reference is shortened in the message


def test_what_the_experiment_cannot_build_is_refused_when_the_config_is_read():
    for key, samplers, message in (
            ("ising_sampling", ["R-MALA"], "needs the options ['step_size', 'temperature']"),
            ("rbm_sampling", ["GWG", "Block-HB"], "needs a target with blocks()"),
            ("ising_sampling", ["Block-HB"], "needs a target with blocks()")):
        config = _smoke()
        config[key]["samplers"] = samplers
        with pytest.raises(ConfigError, match=re.escape(f"config key '{key}.samplers.") + ".*" + re.escape(message)):
            validate_config(config)
    config = _smoke()
    config["fhmm_sampling"]["samplers"] = ["Block-HB", "R-MALA(step_size=0.1, temperature=2.0)"]
    assert validate_config(config)["fhmm_sampling"]["samplers"][0] == "Block-HB"  # the FHMM offers blocks()
    config = _smoke()
    config["plugins"] = [123]
    with pytest.raises(InputError, match="sampler plugins must be module names"):
        validate_config(config)


def test_an_empty_group_is_an_error_that_says_how_to_fill_it():
    with pytest.raises(InputError, match="group 'plugins' has no binary sampler; load one with a config's plugins:"):
        catalog.expand(["plugins"])


@pytest.mark.parametrize("name,message", [("GWG", "already answers to as 'GWG'"),
                                          ("Gibbs-7", "already answers to as 'Gibbs-{block_size}'"),
                                          ("HB-{a}-{b}", "already answers to as 'HB-{block_size}-{radius}'"),
                                          ("later", "no group name"), ("My MH", "a name is letters")])
def test_a_plugin_cannot_take_a_builtin_name_or_a_group_name(name, message):
    class Kernel:
        pass

    Kernel.__module__ = "my_plugin"
    with pytest.raises((InputError, TypeError), match=re.escape(message)):
        catalog.register_sampler(name, examples=("HB-3-1",) if "{" in name else ())(Kernel)
    assert all(s.module != "my_plugin" for s in catalog.specs())


def test_two_plugins_cannot_share_a_concrete_name(monkeypatch):
    monkeypatch.setattr(catalog, "_RUNTIME", dict(catalog._RUNTIME))  # registrations end with the test

    def kernel(module: str):
        return type("Kernel", (), {"__module__": module})

    catalog.register_sampler("Xs-{n}5", examples=("Xs-15",))(kernel("plugin_a"))
    with pytest.raises(InputError, match="already answers to as 'Xs-{n}5'"):  # both would answer to Xs-45
        catalog.register_sampler("Xs-4{m}", examples=("Xs-41",))(kernel("plugin_b"))


@pytest.mark.parametrize("kwargs,message", [({"order": "zzz"}, "order must be an int"),
                                            ({"colour": 12345}, "colour must be a str"),
                                            ({"family": "bogus"}, "family must be one of"),
                                            ({"exact": "no"}, "exact and in_groups are bools"),
                                            ({"options": {"step": None}}, "shadow init, step"),
                                            ({"adapt": ("nonexistent", "log")}, "adapt must be"),
                                            ({"options": {"a": None}, "required": ("b",)}, "must be declared")])
def test_a_declaration_with_wrong_types_is_refused(kwargs, message):
    kernel = type("Kernel", (), {"__module__": "my_plugin"})
    with pytest.raises(TypeError, match=re.escape(message)):
        catalog.register_sampler("Fresh", **kwargs)(kernel)


def test_groups_and_the_order_come_from_the_declarations():
    assert catalog.expand(["later"]) == ["PAS-3", "DMALA", "DULA", "DLMC", "DLMC-Euler", "ACS"]
    assert catalog.expand(["later"], "categorical") == ["DMALA", "DULA", "DLMC"]
    assert catalog.expand(["paper", "GWG", "DMALA(step_size=0.1)"]) == ["Gibbs-1", "Gibbs-2", "HB-10-1", "GWG",
                                                                        "GWG-3", "DMALA(step_size=0.1)"]
    names = ["ACS", "DMALA", "GWG", "Block-HB", "HB-10-1", "Gibbs-2", "Gibbs-1", "unknown", "DMALA(adapt=5)"]
    assert sorted(names, key=catalog.order_key) == ["Gibbs-1", "Gibbs-2", "HB-10-1", "Block-HB", "GWG", "DMALA",
                                                    "DMALA(adapt=5)", "ACS", "unknown"]
    assert [catalog.is_later(n) for n in ("GWG", "PAS-7", "DLMC(adapt=3)", "Gibbs-1")] == [False, True, True, False]


def test_the_bench_and_the_figures_read_the_catalog():
    from gradmc.bench.catalog import LATER_BINARY, LATER_CATEGORICAL
    from gradmc.figures.style import _COLORS, UNASSIGNED_COLOR, sampler_color

    assert LATER_BINARY[:6] == ("PAS-3", "DMALA", "DULA", "DLMC", "DLMC-Euler", "ACS")
    assert LATER_CATEGORICAL[:3] == ("DMALA", "DULA", "DLMC")
    names = [n for s in catalog.specs("binary") for n in s.instances]
    colours = [sampler_color(n) for n in names]
    assert UNASSIGNED_COLOR not in colours
    assert len(set(colours)) == len(colours)
    assert not set(colours) & set(_COLORS.values())  # no sampler shares a method's colour


def _smoke() -> dict:
    return yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())


def test_config_lists_expand_groups_and_name_the_key_of_a_bad_sampler():
    config = _smoke()
    config["ising_sampling"]["samplers"] = ["later", "GWG", "DMALA(step_size=0.1)"]
    assert validate_config(config)["ising_sampling"]["samplers"][-2:] == ["GWG", "DMALA(step_size=0.1)"]
    for bad, message in (("Nope", "unknown sampler 'Nope'; valid: ACS"),
                         ("DMALA(foo=1)", "takes only the options")):
        config = _smoke()
        config["ising_sampling"]["samplers"] = [bad]
        with pytest.raises(ConfigError, match=re.escape("config key 'ising_sampling.samplers.0': ") + ".*" + message):
            validate_config(config)


def _plugin_env(**extra) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", **extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGINS), env.get("PYTHONPATH", "")) if p)
    return env


def _python(code: str, **env) -> str:
    out = subprocess.run([sys.executable, "-c", code], env=_plugin_env(**env), capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_plugin_reaches_the_bench_the_figures_and_the_code_digest():
    out = _python(
        "from gradmc.bench.catalog import LATER_BINARY\n"
        "from gradmc.bench.samplers import SUITES, RBM_SUITE\n"
        "from gradmc.figures.style import sampler_color\n"
        "from gradmc import sampler_catalog as c\n"
        "from gradmc.samplers.discrete.registry import sampler_modules\n"
        "from gradmc.codedigest import code_manifest\n"
        "print('ToyMH-1' in LATER_BINARY, 'ToyMH-1' in SUITES[RBM_SUITE].samplers, sampler_color('ToyMH-3'))\n"
        "print(c.is_later('ToyMH-2'), c.expand(['plugins']), sampler_modules('ToyMH-2'))\n"
        "print(sorted(k for k in code_manifest('gradmc.samplers.base', extra=['gradmc_toy_sampler']) "
        "if k.startswith('plugin:')))\n",
        GRADMC_SAMPLER_PLUGINS=PLUGIN)
    assert out.split("\n")[:3] == ["True True hotpink", f"True ['ToyMH-1'] ('{PLUGIN}',)",
                                   f"['plugin:{PLUGIN}']"]


def test_plugin_passes_the_exactness_check_and_a_broken_one_fails():
    cmd = [sys.executable, "-m", "gradmc.cli", "check-sampler", "ToyMH-1", "ToyMH-2", "--plugin", PLUGIN,
           "--chains", "100000"]
    out = subprocess.run(cmd, env=_plugin_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("PASS ToyMH") == 2
    out = subprocess.run([*cmd[:4], "ToyBroken", "--plugin", PLUGIN], env=_plugin_env(), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 1 and "FAIL ToyBroken" in out.stdout, out.stdout + out.stderr


def test_plugin_runs_in_an_experiment_from_a_config(tmp_path):
    """A config's plugins: list loads the module, its samplers list names the plugin's sampler, and the Ray
    workers of ``gradmc run`` build it: its rows are in the metrics, and the leaderboard gives it a row."""
    config = _smoke()
    config["plugins"] = [PLUGIN]
    config["ising_sampling"].update(sides=[4], thetas=[0.3], samplers=["GWG", "ToyMH-1"], num_steps=20)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "metrics.parquet"
    run = subprocess.run([sys.executable, "-m", "gradmc.cli", "run", "ising_sampling", "--config", str(path),
                          "--out", str(out), "--workers", "1", "--no-shard-cache"],
                         env=_plugin_env(), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    df = pd.read_parquet(out)
    assert set(df["sampler"]) == {"GWG", "ToyMH-1"}
    assert len(df[df["sampler"] == "ToyMH-1"]) == len(df[df["sampler"] == "GWG"]) > 0
    from gradmc.figures.leaderboard import checked_metrics, leaderboard_table

    table = leaderboard_table({"ising_sampling": checked_metrics("ising_sampling", df)})
    assert set(table["sampler"]) == {"GWG", "ToyMH-1"}  # a leaderboard row, with no edit to gradmc


def test_broken_plugin_is_a_one_line_error():
    out = subprocess.run([sys.executable, "-m", "gradmc.cli", "samplers"], capture_output=True, text=True,
                         env=_plugin_env(GRADMC_SAMPLER_PLUGINS="no_such_plugin"), timeout=120)
    assert out.returncode == 2
    assert "sampler plugin module 'no_such_plugin'" in out.stderr and "Traceback" not in out.stderr



def test_fhmm_reports_the_adapted_step_and_the_acceptance_after_burn_in():
    """An adapted sampler's rows add its tuned value and its acceptance after burn-in; other kernels that tune
    themselves (ACS) add nothing."""
    from gradmc.experiments import fhmm_sampling

    def metrics(name):
        shard = fhmm_sampling.Shard(sampler=name, seed=0, L=10, K=4, num_chains=4, num_steps=40, record_every=20,
                                    init="uniform", sigma=0.5, alpha=0.1, beta=0.95, device="cpu")
        return set(fhmm_sampling.run(shard)["metric"])

    extra = {"adapted_value", "acceptance_rate_after_burn_in"}
    assert extra <= metrics("DMALA(adapt=20)")
    assert not extra & metrics("ACS") and not extra & metrics("DMALA")
