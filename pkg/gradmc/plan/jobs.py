"""The plan's job table: for every pipeline job, which config keys are *lengths* (shortened in the slice) and
which are *sizes* (everything else: chains, dimensions, model widths, data sets; kept at the config's value).

A :class:`JobSpec` names, per job (a Snakemake rule):

``lengths``
    dotted config key -> (level-1 value, level-2 value). The slice runs the job at level 1 and at level 2
    (twice as long), so the difference of their times is the cost of the extra units, with no start-up in it.
``schedule``
    dotted config key -> value at both levels: how often something is recorded or logged (``mmd_every``,
    ``record_every``, ``log_every``, ``checkpoint_every``), which must fit inside the short slice. The slice
    records more often than the paper does, so its per-unit cost is, if anything, an over-estimate.
``classes`` / ``pick``
    shard attributes that change the cost of a unit (sampler, lattice side, data set); one probe runs per
    distinct class, on the ``first`` or ``last`` shard of the class in the sweep's order. Attributes not in the
    class (seeds, theta, hyper-parameters) are assumed not to change the cost per unit; a ``last`` pick is the
    class's largest size where the sweep lists sizes in ascending order (an upper bound for the smaller ones).
``units``
    the number of units of one task (shard or rule job) at the config's sizes, from the shard or the config.

``unit`` says what one unit is (a sampler step on all the shard's chains, a training iteration, an AIS level);
``once`` jobs have no length to shorten (data preparation, one epoch of RBM training) and run at full size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gradmc.registry import standard
from gradmc.specs.ebm_samplers import feasible

__all__ = ["JobSpec", "JOBS", "TEXT_JOBS", "ebm_runs", "ebm_levels", "ebm_evals", "on_gpu", "holds_gpu"]


@dataclass(frozen=True)
class JobSpec:
    """One pipeline job's slice (see the module docstring).

    Attributes:
        name: the Snakemake rule.
        kind: ``"standard"`` (a registry experiment: shards), ``"stage"`` (a hand-written rule, measured by
            :mod:`gradmc.plan.measure`) or ``"once"`` (run once at full size).
        unit: what one unit is, in words.
        lengths, schedule, classes, pick: see the module docstring.
        units: shard (standard) or config (stage) -> units of one task at the config's sizes.
        after: jobs whose outputs this one reads (the critical path).
        gpu: whether its work runs on a GPU when the planned config says ``device: cuda`` (its GPU-hours are
            then the assumed speed-up applied to its CPU time); see :func:`on_gpu` and :func:`holds_gpu`.
        note: a known bias of the slice for this job, printed in the plan.
    """

    name: str
    kind: str
    unit: str
    lengths: dict = field(default_factory=dict)
    schedule: dict = field(default_factory=dict)
    classes: tuple[str, ...] = ()
    pick: str = "first"
    units: Callable | None = None
    after: tuple[str, ...] = ()
    gpu: bool = True
    note: str = ""


def ebm_runs(config: dict) -> list[tuple[str, str]]:
    """The (data set, sampler) pairs of ``config['ebm']`` the pipeline trains (as workflow/rules/ebm.smk: the
    feasible ones, :func:`gradmc.specs.ebm_samplers.feasible`).

    Raises:
        InputError: a configured sampler that cannot train EBMs (ACS, an unknown name) or an unknown data set.
    """
    spec = config["ebm"]
    return [(d, s) for d in spec["datasets"] for s in spec["samplers"] if feasible(s, d)]


def ebm_levels(ais: dict) -> int:
    """AIS levels one ``ais_ebm`` job (or ``eval_text_ebm`` job, ``ais`` = ``text_ebm.ais``) runs: the estimate's
    ``num_intermediate`` plus every convergence run of another length (the one equal to ``num_intermediate`` is
    reused, not repeated)."""
    k = int(ais["num_intermediate"])
    return k + sum(int(c) for c in ais["convergence"] if int(c) != k)


def ebm_evals(train: dict) -> int:
    """Validation AIS runs of one ``train_ebm`` job: every ``eval_every`` iterations and at the end."""
    n, every = int(train["iterations"]), int(train["eval_every"])
    return (n // every if every else 0) + (1 if not every or n % every else 0)


def on_gpu(name: str, config: dict) -> bool:
    """Whether job ``name`` computes on a GPU under ``config``: a GPU job (``JobSpec.gpu``) and the config's
    ``device`` is ``cuda``. Its GPU-hours are its CPU time over the assumed speed-up."""
    return JOBS[name].gpu and config.get("device") == "cuda"


def holds_gpu(name: str, config: dict) -> bool:
    """Whether job ``name``'s SLURM job must hold a GPU under ``config``: it computes on one (:func:`on_gpu`), or
    it is a sharded job whose shards ask Ray for ``gpus_per_shard`` GPUs because ``device`` is ``cuda`` (as
    :func:`gradmc.experiments.standard.run_experiment` does), unless its registry entry is ``cpu_only`` (the
    Kernel HMC sweeps: :meth:`gradmc.registry.Experiment.job_config` gives them ``device: cpu``)."""
    if on_gpu(name, config):
        return True
    return (JOBS[name].kind == "standard" and not standard(name).cpu_only and config.get("device") == "cuda"
            and float(config.get("gpus_per_shard", 0) or 0) > 0)


def _steps(shard) -> int:
    return int(shard.num_steps)


JOBS: dict[str, JobSpec] = {j.name: j for j in (
    JobSpec("prepare_mnist", "once", "job (full size)", after=(), gpu=False),
    JobSpec("prepare_image_dataset", "once", "job (full size)", gpu=False),
    JobSpec("train_rbm", "once", "job (full size: 1 epoch of CD)", after=("prepare_mnist",)),
    JobSpec("rbm_reference", "stage", "block-Gibbs sweep (2 x num_samples chains)",
            lengths={"rbm_sampling.reference.num_steps": (10, 20)},
            units=lambda c: c["rbm_sampling"]["reference"]["num_steps"], after=("train_rbm",)),
    JobSpec("rbm_sampling", "standard", "sampler step (num_chains chains)",
            lengths={"rbm_sampling.num_steps": (20, 40)}, schedule={"rbm_sampling.mmd_every": 10},
            classes=("sampler",), units=_steps, after=("rbm_reference",)),
    JobSpec("sampler_cost", "stage", "timed step (every sampler, RBM and Ising, one repeat)",
            lengths={"sampler_cost.steps": (10, 20)}, schedule={"sampler_cost.repeats": 1},
            units=lambda c: c["sampler_cost"]["steps"] * c["sampler_cost"]["repeats"], after=("train_rbm",)),
    JobSpec("rbm_relaxed", "standard", "sampler step (num_chains chains; the reference sweeps scale with it)",
            lengths={"rbm_relaxed.num_steps": (20, 40), "rbm_relaxed.reference.num_steps": (20, 40)},
            schedule={"rbm_relaxed.record_every": 10}, classes=("num_visible", "sampler"), units=_steps),
    JobSpec("fhmm_sampling", "standard", "sampler step (num_chains chains)",
            lengths={"fhmm_sampling.num_steps": (20, 40)}, schedule={"fhmm_sampling.record_every": 10},
            classes=("sampler",), units=_steps),
    JobSpec("ising_sampling", "standard", "sampler step (chains_per_shard chains)",
            lengths={"ising_sampling.num_steps": (200, 400)}, classes=("side", "sampler"), units=_steps),
    JobSpec("kmc_trajectories", "standard", "trial (a surrogate fit on n points and two trajectories)",
            lengths={"kmc_trajectories.trials_per_shard": (1, 2)}, classes=("d", "n"),
            units=lambda s: int(s.num_trials), gpu=False),
    JobSpec("kmc_banana", "standard", "MCMC iteration (burn-in or kept)",
            lengths={"kmc_banana.num_burn_in": (20, 40), "kmc_banana.num_iterations": (10, 20)},
            classes=("sampler", "n"), units=lambda s: int(s.num_burn_in) + int(s.num_iterations), gpu=False,
            note="KMC's history is the burn-in: the slice's 20-40 burn-in states give the cross-validation and fit "
                 "fewer distinct points than the paper's n, so the fixed cost per KMC shard is under-estimated"),
    JobSpec("kmc_abc", "standard", "MCMC iteration (burn-in or kept)",
            lengths={"kmc_abc.num_burn_in": (20, 40), "kmc_abc.num_iterations": (30, 60)},
            schedule={"kmc_abc.max_lag": 5}, classes=("sampler",),
            units=lambda s: int(s.num_burn_in) + int(s.num_iterations), gpu=False),
    JobSpec("kmc_gpc_benchmark", "standard", "pseudo-marginal MH iteration (one chain)",
            lengths={"kmc_gpc.benchmark.num_iterations": (20, 40)},
            schedule={"kmc_gpc.benchmark.num_burn_in": 0, "kmc_gpc.benchmark.thin": 1},
            units=lambda s: int(s.num_iterations), gpu=False),
    JobSpec("kmc_gpc", "standard", "pseudo-marginal MH iteration (one chain)",
            lengths={"kmc_gpc.num_iterations": (20, 40)}, schedule={"kmc_gpc.mmd_every": 10},
            classes=("sampler",), units=lambda s: int(s.num_iterations), after=("kmc_gpc_benchmark",), gpu=False),
    JobSpec("ising_pcd_data", "stage", "single-site update (every chain of every true model)",
            lengths={"ising_pcd.data.site_updates": (2000, 4000)},
            units=lambda c: c["ising_pcd"]["data"]["site_updates"]),
    JobSpec("ising_pcd", "standard", "PCD sampler step (K per iteration, batch_size chains)",
            lengths={"ising_pcd.num_iterations": (2, 4)},
            schedule={"ising_pcd.log_every": 1, "ising_pcd.checkpoint_dir": None},
            classes=("dim", "sampler"), units=lambda s: int(s.num_iterations) * int(s.K), after=("ising_pcd_data",)),
    JobSpec("potts_proteins", "standard", "PLM L-BFGS iteration or PCD iteration",
            lengths={"potts_proteins.plm.max_iterations": (2, 4), "potts_proteins.pcd.num_iterations": (2, 4)},
            schedule={"potts_proteins.pcd.log_every": 1, "potts_proteins.pcd.checkpoint_every": 1000000,
                      "potts_proteins.checkpoint_dir": None},
            classes=("protein", "method"),
            units=lambda s: int(dict(s.plm)["max_iterations"] if s.method == "PLM" else dict(s.pcd)["num_iterations"])),
    JobSpec("train_ebm", "stage", "PCD iteration (num_steps sampler steps + one update; validation AIS added)",
            units=lambda c: c["ebm"]["train"]["iterations"], after=("prepare_image_dataset",)),
    JobSpec("ais_ebm", "stage", "AIS level (num_chains chains; test and bound rows added)",
            units=lambda c: ebm_levels(c["ebm"]["ais"]), after=("train_ebm",)),
    JobSpec("prepare_ptb", "once", "job (full size)", gpu=False),
    JobSpec("train_text_ebm", "stage", "PCD iteration (num_steps categorical GWG steps + one update)",
            units=lambda c: c["text_ebm"]["train"]["iterations"], after=("prepare_ptb",)),
    JobSpec("train_text_lm", "stage", "Adam iteration (batch_size sentences)",
            lengths={"text_ebm.lm_train.iterations": (5, 10)},
            units=lambda c: c["text_ebm"]["lm_train"]["iterations"], after=("prepare_ptb",)),
    JobSpec("eval_text_ebm", "stage", "AIS level (num_chains chains; the test rows, LM and baselines fixed)",
            lengths={"text_ebm.ais.num_intermediate": (4, 8), "text_ebm.ais.convergence": ([2, 4], [4, 8])},
            units=lambda c: ebm_levels(c["text_ebm"]["ais"]), after=("train_text_ebm", "train_text_lm")),
)}
#: The text EBM's rules (GWG App. J; :mod:`gradmc.plan.text_jobs`), upstream first.
TEXT_JOBS = ("prepare_ptb", "train_text_ebm", "train_text_lm", "eval_text_ebm")
