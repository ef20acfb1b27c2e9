"""The plan's job specs: for every rule the plan costs, which config keys are *lengths* (shortened in the slice)
and which are *sizes* (everything else: chains, dimensions, model widths, data sets; kept at the config's value).
A standard experiment's spec comes from its registry entry (``META['plan']``, documented in
:mod:`gradmc.registry`); :data:`STAGES` holds the hand-written rules'. Which jobs exist, what they read and what
they wait for is Snakemake's DAG (:mod:`gradmc.plan.dag`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gradmc.registry import Experiment, experiments, standard

__all__ = ["JobSpec", "JOBS", "STAGES", "job_spec", "known_rules", "shard_units", "ebm_levels", "ebm_evals", "on_gpu",
           "holds_gpu"]


@dataclass(frozen=True)
class JobSpec:
    """One pipeline rule's slice.

    Attributes:
        name: the Snakemake rule.
        kind: ``"standard"`` (a registry experiment: shards), ``"stage"`` (a hand-written rule, probed by
            :mod:`gradmc.plan.probe`) or ``"once"`` (no length to shorten: run once at full size by Snakemake,
            its time and memory read from the rule's ``benchmark:``).
        unit: what one unit is, in words.
        lengths: dotted config key -> (level-1 value, level-2 value); the slice runs the job at both levels (level
            2 twice as long), so the difference of their times is the cost of the extra units, without start-up.
        schedule: dotted config key -> value at both levels: how often something is recorded or logged, which
            must fit inside the short slice (so the per-unit cost is, if anything, an over-estimate).
        classes: shard attributes that change the cost of a unit (sampler, lattice side, data set); one probe
            runs per distinct class, on the ``pick`` (``first`` or ``last``) shard of the class.
        units: shard (standard) or config (stage) -> units of one task at the config's sizes.
        gpu: whether its work runs on a GPU when the planned config says ``device: cuda`` (see :func:`on_gpu`).
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
    gpu: bool = True
    note: str = ""


def _read(shard, path: str):
    """The value at ``path`` of ``shard``: an attribute, then keys of a dict (``plm.max_iterations``)."""
    first, *rest = path.split(".")
    value = getattr(shard, first)
    for key in rest:
        value = dict(value)[key]
    return value


def shard_units(spec, shard) -> int:
    """Units of one shard by a registry ``META['plan']['units']`` spec (see :mod:`gradmc.registry`): a term
    ``"a"`` / ``"a.b"`` / ``"a*b"`` (attribute values multiplied), a list of terms (summed), or ``{"by": attr,
    value: term}`` (the term of the shard's ``attr``); None: 1.

    Raises:
        AttributeError, KeyError: the shard lacks an attribute or key the spec names, or has a ``by`` value
            the spec does not list.
    """
    if spec is None:
        return 1
    if isinstance(spec, dict):
        value = str(_read(shard, spec["by"]))
        if value not in spec:
            raise KeyError(f"plan units: no term for {spec['by']} = {value!r} in {spec!r}")
        return shard_units(spec[value], shard)
    if isinstance(spec, list):
        return sum(shard_units(term, shard) for term in spec)
    out = 1
    for factor in spec.split("*"):
        out *= int(_read(shard, factor.strip()))
    return out


def _from_registry(exp: Experiment) -> JobSpec:
    """The spec of a standard experiment from its ``META['plan']``; without one, a probe at full length."""
    plan = exp.plan
    units = plan.get("units")
    return JobSpec(exp.name, "standard", plan.get("unit", "shard (full length: no META['plan'] lengths)"),
                   lengths={k: tuple(v) for k, v in plan.get("lengths", {}).items()},
                   schedule=dict(plan.get("schedule", {})), classes=tuple(plan.get("classes", ())),
                   pick=plan.get("pick", "first"), units=lambda shard: shard_units(units, shard),
                   gpu=not exp.cpu_only, note=plan.get("note", ""))


def job_spec(name: str) -> JobSpec:
    """The spec of rule ``name``: a hand-written rule's (:data:`STAGES`), else its registry entry's.

    Raises:
        KeyError: neither a hand-written rule of the plan nor a standard experiment.
    """
    if name in STAGES:
        return STAGES[name]
    return _from_registry(standard(name))


def known_rules() -> list[str]:
    """Every rule the plan can cost: the hand-written ones (:data:`STAGES`) and every standard experiment of the
    registry (read now: a module added since import counts)."""
    return [*STAGES, *(name for name in experiments() if name not in STAGES)]


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
    return job_spec(name).gpu and config.get("device") == "cuda"


def holds_gpu(name: str, config: dict) -> bool:
    """Whether job ``name``'s SLURM job must hold a GPU under ``config``: it computes on one (:func:`on_gpu`), or
    it is a sharded job, not ``cpu_only`` in the registry, whose shards ask Ray for ``gpus_per_shard`` GPUs
    because ``device`` is ``cuda`` (as :func:`gradmc.experiments.standard.run_experiment` does)."""
    if on_gpu(name, config):
        return True
    return (job_spec(name).kind == "standard" and not standard(name).cpu_only and config.get("device") == "cuda"
            and float(config.get("gpus_per_shard", 0) or 0) > 0)


#: The hand-written rules the plan costs (their runners: :mod:`gradmc.plan.probe`); where they sit in the DAG is
#: Snakemake's.
STAGES: dict[str, JobSpec] = {j.name: j for j in (
    JobSpec("prepare_mnist", "once", "job (full size)", gpu=False),
    JobSpec("prepare_image_dataset", "once", "job (full size)", gpu=False),
    JobSpec("train_rbm", "once", "job (full size: 1 epoch of CD)"),
    JobSpec("rbm_reference", "stage", "block-Gibbs sweep (2 x num_samples chains)",
            lengths={"rbm_sampling.reference.num_steps": (10, 20)},
            units=lambda c: c["rbm_sampling"]["reference"]["num_steps"]),
    JobSpec("sampler_cost", "stage", "timed step (every sampler, RBM and Ising, one repeat)",
            lengths={"sampler_cost.steps": (10, 20)}, schedule={"sampler_cost.repeats": 1},
            units=lambda c: c["sampler_cost"]["steps"] * c["sampler_cost"]["repeats"]),
    JobSpec("ising_pcd_data", "stage", "single-site update (every chain of every true model)",
            lengths={"ising_pcd.data.site_updates": (2000, 4000)},
            units=lambda c: c["ising_pcd"]["data"]["site_updates"]),
    JobSpec("train_ebm", "stage", "PCD iteration (num_steps sampler steps + one update; validation AIS added)",
            units=lambda c: c["ebm"]["train"]["iterations"]),
    JobSpec("ais_ebm", "stage", "AIS level (num_chains chains; test and bound rows added)",
            units=lambda c: ebm_levels(c["ebm"]["ais"])),
    JobSpec("prepare_ptb", "once", "job (full size)", gpu=False),
    JobSpec("train_text_ebm", "stage", "PCD iteration (num_steps categorical GWG steps + one update)",
            units=lambda c: c["text_ebm"]["train"]["iterations"]),
    JobSpec("train_text_lm", "stage", "Adam iteration (batch_size sentences)",
            lengths={"text_ebm.lm_train.iterations": (5, 10)},
            units=lambda c: c["text_ebm"]["lm_train"]["iterations"]),
    JobSpec("eval_text_ebm", "stage", "AIS level (num_chains chains; the test rows, LM and baselines fixed)",
            lengths={"text_ebm.ais.num_intermediate": (4, 8), "text_ebm.ais.convergence": ([2, 4], [4, 8])},
            units=lambda c: ebm_levels(c["text_ebm"]["ais"])),
)}
#: Every rule the plan knows how to cost: the hand-written ones and every standard experiment of the registry.
JOBS: dict[str, JobSpec] = {**STAGES, **{name: _from_registry(exp) for name, exp in experiments().items()}}
