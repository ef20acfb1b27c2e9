"""Bad inputs a user plausibly gives get a specific error naming the file or name (the fault list of
docs/scale-out.md: bad config, missing or corrupt inputs, unknown names)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch

from gradmc.claims import claims_frame
from gradmc.cli import main
from gradmc.evaluation.ais import BernoulliBase
from gradmc.experiments.ebm import read_checkpoint
from gradmc.results import provenance, read_parquet, write_parquet
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.training.ebm import EBMTrainer

SMOKE = str(Path(__file__).resolve().parents[1] / "config" / "smoke.yaml")


def _metrics(tmp_path, experiment: str):
    df = pd.DataFrame([{"experiment": experiment, "target": "t", "sampler": "KMC", "seed": 0, "chain": 0,
                        "step": 1, "metric": "min_ess", "value": 1.0, "energy_evals": 0, "grad_evals": 0,
                        "wall_time_s": 0.0}])
    return write_parquet(df, tmp_path / f"{experiment}.parquet", provenance({"name": "test"}), validate=True)


def test_claims_reject_unknown_experiment_and_foreign_metrics(tmp_path):
    path = _metrics(tmp_path, "kmc_abc")
    with pytest.raises(ValueError, match="did you mean 'kmc_banana'[?] experiments with claims: .*kmc_banana"):
        claims_frame({"kmc_bananna": path})
    with pytest.raises(ValueError, match=r"holds metrics of \['kmc_abc'\], not of 'kmc_banana'"):
        claims_frame({"kmc_banana": path})


@pytest.mark.parametrize("figure", ["kmc_banana", "rbm_sampling", "sampler_cost"])
def test_figure_rejects_foreign_metrics(tmp_path, capsys, figure):
    path = _metrics(tmp_path, "ising_sampling")
    extra = [] if figure == "sampler_cost" else ["--table-out", str(tmp_path / "t")]
    code = main(["figure", figure, "--metrics", str(path), "--out", str(tmp_path / "f"), *extra])
    assert code == 2 and f"holds metrics of ['ising_sampling'], not of '{figure}'" in capsys.readouterr().err
    assert not (tmp_path / "f.pdf").exists() and not (tmp_path / "f.md").exists()


def test_ebm_figure_rejects_foreign_metrics(tmp_path, capsys):
    path = _metrics(tmp_path, "ising_sampling")
    code = main(["figure", "ebm", "--metrics", str(path), "--combined-out", str(tmp_path / "c.parquet"),
                 "--out", str(tmp_path / "f"), "--table-out", str(tmp_path / "t")])
    assert code == 2 and "holds metrics of ['ising_sampling'], not of 'ebm'" in capsys.readouterr().err
    assert not (tmp_path / "c.parquet").exists() and not (tmp_path / "t.md").exists()


def test_user_error_inside_a_shard_stays_a_user_error():
    """An input error met inside run(shard) on Ray keeps its class (one line from the CLI), naming the shard."""
    from gradmc.distributed import ensure_ray, run_shards, shutdown_ray
    from gradmc.distributed.selftest import ToyShard, toy_shard
    from gradmc.errors import InputError

    ensure_ray(num_cpus=1)
    try:
        with pytest.raises(InputError, match=r"shard 0 .*toy user error in shard seed=7"):
            run_shards(toy_shard, [ToyShard(seed=7, user_error=True)], num_workers=1, progress=None)
    finally:
        shutdown_ray()


def test_config_that_is_not_yaml_is_named(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\n  device: [cpu\n")
    assert main(["data", "fetch", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"config file {bad} is not valid YAML" in err and "line" in err and "Traceback" not in err


def test_truncated_npz_is_a_clear_error_not_a_traceback(tmp_path, capsys):
    bad = tmp_path / "data.npz"
    bad.write_bytes(b"PK\x03\x04 truncated")
    code = main(["run", "train_rbm", "--config", "config/smoke.yaml", "--data", str(bad),
                 "--out", str(tmp_path / "rbm.pt")])
    assert code == 2 and "could not be read" in capsys.readouterr().err
    assert not (tmp_path / "rbm.pt").exists()


def test_bad_ebm_checkpoints_are_named(tmp_path):
    text = tmp_path / "model.pt"
    text.write_text("174812789")
    with pytest.raises(ValueError, match="cannot read EBM checkpoint .*model.pt"):
        read_checkpoint(text)
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(2)}, other)
    with pytest.raises(ValueError, match="not an EBM training checkpoint"):
        read_checkpoint(other)


def test_checkpoint_of_another_configuration_is_refused(tmp_path):
    data = torch.bernoulli(torch.full((20, 4), 0.5, dtype=torch.float64), generator=torch.Generator().manual_seed(0))

    class F(torch.nn.Module):  # f(x) (C,) from a linear layer
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 1, dtype=torch.float64)

        def forward(self, x):
            return self.lin(x).squeeze(-1)

    def make(tag):
        return EBMTrainer(F(), make_sampler("Gibbs-1"), data, BernoulliBase(torch.zeros(4)), num_steps=1,
                          batch_size=4, buffer_size=8, lr=0.01, warmup=0, ema_decay=0.9,
                          generator=torch.Generator().manual_seed(1), tag=tag)

    first = make({"iterations": 40})
    first.train(2)
    first.save(tmp_path / "ckpt.pt")
    with pytest.raises(ValueError, match="other settings.*iterations"):
        make({"iterations": 4}).load(tmp_path / "ckpt.pt")
    same = make({"iterations": 40})
    same.load(tmp_path / "ckpt.pt")
    assert same.iteration == 2


def test_claims_cli_refuses_bad_metrics_and_outputs_before_writing_anything(tmp_path, capsys):
    """A file without the schema's columns, an experiment named twice, a folder given as the file, and an
    unwritable dashboard folder: each one error line, exit 2, and no claims file written."""
    good = _metrics(tmp_path, "kmc_abc")
    broken = tmp_path / "broken.parquet"
    write_parquet(pd.DataFrame({"experiment": ["kmc_abc"], "metric": ["min_ess"]}), broken,
                  provenance({"name": "test"}))
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the dashboard folder should be")
    out = tmp_path / "out" / "claims"
    cases = [(["kmc_abc=" + str(broken)], [], "is not a gradmc metrics file"),
             (["kmc_abc=" + str(good), "kmc_abc=" + str(good)], [], "names 'kmc_abc' twice"),
             (["kmc_abc=" + str(tmp_path)], [], "is a folder, not a file"),
             (["kmc_abc=" + str(good)], ["--dashboard", str(blocker / "dash")], "--dashboard: cannot create")]
    for metrics, extra, message in cases:
        assert main(["claims", "--metrics", *metrics, "--config", SMOKE, "--out", str(out), *extra]) == 2
        assert message in capsys.readouterr().err
        assert not list(tmp_path.glob("out/claims.*"))
    # a well-formed file whose claims need rows it lacks: written, with a warning naming the experiment
    assert main(["claims", "--metrics", "kmc_abc=" + str(good), "--config", SMOKE, "--out", str(out)]) == 0
    assert "warning: kmc_abc" in capsys.readouterr().err and (tmp_path / "out" / "claims.md").exists()


def test_run_checks_its_output_folder_before_any_work(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main(["run", "ising_sampling", "--config", "config/smoke.yaml", "--out", str(blocker / "m.parquet")]) == 2
    assert "--out: cannot create the output folder" in capsys.readouterr().err


def test_workers_below_one_is_a_usage_error_for_every_run_subcommand(capsys):
    """--workers 0 or -2 stops at parsing (exit status 2, one line, no traceback), for every subcommand that
    takes --workers; a valid count parses as an int."""
    from gradmc.cli.parser import build_parser
    from gradmc.registry import experiments

    parser = build_parser()
    for name, entry in experiments().items():
        base = ["run", name, "--config", "c.yaml", "--out", "m.parquet",
                *[arg for key in entry.inputs for arg in (f"--{key}", "in.file")]]
        for bad in ("0", "-2"):
            with pytest.raises(SystemExit) as exit_:
                main([*base, "--workers", bad])
            err = capsys.readouterr().err
            expected = f"error: argument --workers: expected a whole number >= 1, got {bad!r}\n"
            assert exit_.value.code == 2 and expected in err, err
            assert "Traceback" not in err
        args = parser.parse_args([*base, "--workers", "3"])
        assert args.workers == 3


@pytest.mark.parametrize("bad", ["abc", "0", "-5", "nan", "inf"])
def test_shard_memory_mb_is_checked_at_parsing(bad, capsys):
    """--shard-memory-mb that is not a finite number > 0 stops at parsing with the option and the value named,
    in the same words as the other numeric options (before: argparse's bare "invalid float value")."""
    with pytest.raises(SystemExit) as exit_:
        main(["run", "ising_sampling", "--config", "c.yaml", "--out", "m.parquet", "--shard-memory-mb", bad])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert f"error: argument --shard-memory-mb: expected a finite number > 0, got {bad!r}" in err, err


def test_a_cpu_only_job_of_a_cuda_config_runs_without_cuda(tmp_path, monkeypatch, capsys):
    """The Kernel HMC sweeps (registry cpu_only) run with device cpu under config/paper.yaml (device: cuda), so their
    SLURM jobs on CPU nodes must not be refused for lacking CUDA; a GPU sweep still is (no CUDA here)."""
    import gradmc.experiments.standard as standard

    if torch.cuda.is_available():
        pytest.skip("this check needs a machine without CUDA")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    reached = []

    def stop(name, config, *args, **kwargs):
        reached.append((name, standard.job_config(name, config)["device"]))
        raise KeyboardInterrupt

    monkeypatch.setattr(standard, "run_experiment", stop)
    out = str(tmp_path / "m.parquet")
    main(["run", "kmc_abc", "--config", "config/paper.yaml", "--out", out, "--no-shard-cache"])
    assert reached == [("kmc_abc", "cpu")]
    assert main(["run", "ising_sampling", "--config", "config/paper.yaml", "--out", out]) == 2
    assert "asks for device: cuda but this machine has no CUDA device" in capsys.readouterr().err


def test_claims_refuse_a_config_the_metrics_were_not_made_with(tmp_path, capsys, monkeypatch):
    """A need's key that the metrics' own provenance config holds must agree with --config; --out may not overwrite
    an input; a claims module's ValueError (e.g. a non-finite replicate) is one line naming the file."""
    from gradmc.claims.base import Claim, _check_run_config, at_least
    from gradmc.claims.stats import Interval
    from gradmc.experiments.kmc_abc import claims as kmc_abc

    config = {"kmc_abc": {"runs": [0, 1, 2, 3, 4], "num_iterations": 5000}}
    claim = Claim("kmc_abc", "KMC Fig. 4 right", "c", "e", Interval(1.0, 0.5, 1.5, 5, "runs", "t"), +1,
                  needs=(at_least(config, "kmc_abc.num_iterations", 5000, "iterations"),))
    _check_run_config([claim], config, {"kmc_abc": {"num_iterations": 5000}}, "m.parquet")  # agrees
    _check_run_config([claim], config, {"kmc_gpc": {}}, "m.parquet")  # the file's config lacks the key: unchecked
    with pytest.raises(ValueError, match="m.parquet was made with kmc_abc.num_iterations = 1000, but the config "
                                         "given holds 5000"):
        _check_run_config([claim], config, {"kmc_abc": {"num_iterations": 1000}}, "m.parquet")

    good = _metrics(tmp_path, "kmc_abc")
    assert main(["claims", "--metrics", f"kmc_abc={good}", "--config", SMOKE, "--out",
                 str(good).removesuffix(".parquet")]) == 2
    assert "would overwrite" in capsys.readouterr().err and read_parquet(good)[0]["metric"].iloc[0] == "min_ess"
    for folder in (f"{tmp_path}/", str(tmp_path)):   # a folder, not a prefix: it would write hidden files ".md"
        for option in ("--out", "--dashboard"):
            argv = ["claims", "--metrics", f"kmc_abc={good}", "--config", SMOKE, "--out", str(tmp_path / "c")]
            argv[argv.index(option) if option in argv else len(argv):] = [option, folder]
            assert main(argv) == 2
            err = capsys.readouterr().err
            assert f"{option} {folder} is a folder" in err and "e.g." in err, err
    assert not list(tmp_path.glob(".*"))

    def non_finite(df, config=None):
        raise ValueError("t interval over runs: 1 non-finite of 5 values")

    monkeypatch.setattr(kmc_abc, "claims", non_finite)
    out = tmp_path / "out" / "claims"
    assert main(["claims", "--metrics", f"kmc_abc={good}", "--config", SMOKE, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "kmc_abc claims cannot be computed" in err and "non-finite" in err and "Traceback" not in err
    assert not list((tmp_path / "out").glob("claims.*"))
