"""Sampler throughput benchmark (``make bench``): steps/s and ESS/s, written to samplers.json.

The suites and their reference numbers are in :mod:`gradmc.bench.catalog`; every suite runs on CPU with at
most ``threads`` torch threads (2 on the reference machine), fewer when cores are busy at the start
(:mod:`gradmc.threads`; ``threads_requested`` and ``busy_cores_at_start`` record the choice).

JSON layout (``samplers.json``)::

    {"created_utc", "gradmc_version", "torch_version", "git_commit", "git_dirty", "threads",
     "threads_requested", "busy_cores_at_start", "cpu", "cpu_count", "steps_per_run", "repeats",
     "warmup",                                                     # settings of the latest invocation
     "suites": {suite: {sampler: {"steps_per_s": median, "steps_per_s_runs": [...], "steps_per_s_min",
                                  "steps_per_s_max", "steps_per_s_rel_spread": (max - min) / median,
                                  "repeats", "ms_per_step", "ms_per_step_iqr", ...}}        # or "skipped: <reason>"
     "suite_settings": {suite: {"created_utc", "git_commit", "seconds", "steps_per_run", "repeats",
                                "warmup", "params", "loadavg_before", "loadavg_after", ...}},
     "authors_reference": {suite: {sampler: steps/s}}, "targets": {suite: {sampler: steps/s}}}

Every entry of ``suites.<suite>`` is a sampler (for KMC / GPC a batch size, for compile a setting) whose
row has ``steps_per_s`` and its spread; the ESS suite's rows add ``ess_per_s``, ``ess``, ``steps``,
``seconds`` (:func:`gradmc.bench.rbm_ess.ess_run`). ``suite_settings`` holds each suite's own settings: a
run of a subset (``suites=``) updates only those suites of an existing file.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import platform
import statistics
import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from gradmc import __version__
from gradmc.atomic import atomic_path
from gradmc.bench.catalog import (
    AUTHORS_REFERENCE,
    COMPILE_SUITE,
    DEFAULT_ESS_BURN_IN,
    DEFAULT_ESS_STEPS,
    DEFAULT_REPEATS,
    DEFAULT_STEPS,
    DEFAULT_WARMUP,
    FLOORS_SUITE,
    GPC_SUITE,
    ISING_SUITE,
    KMC_SUITE,
    LATER_BINARY,
    LATER_CATEGORICAL,
    LATTICE_POTTS_SUITE,
    MIN_REPEATS,
    POTTS_SUITE,
    PROCESS_BENCHES,
    RBM_ESS_SUITE,
    RBM_SAMPLERS,
    RBM_SUITE,
    SUITE_NAMES,
    TARGETS,
    TEXT_EBM_SUITE,
    select_suites,
)
from gradmc.errors import InputError
from gradmc.evaluation.timing import spread, time_sampler
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from
from gradmc.targets.ising import LatticeIsing
from gradmc.targets.potts import LatticePotts, Potts
from gradmc.targets.rbm import RBM
from gradmc.threads import apply_thread_policy

__all__ = ["SamplerSuite", "SUITES", "build_rbm", "build_ising", "build_potts", "build_lattice_potts", "build_text_ebm",
           "kmc_finite_suite", "gpc_estimate_suite", "compile_suite", "run_benchmark"]


def build_rbm(generator: torch.Generator, *, num_visible: int = 784, num_hidden: int = 500,
              num_chains: int = 100, weight_std: float = 0.1) -> tuple[RBM, torch.Tensor]:
    """RBM (num_visible x num_hidden, W ~ N(0, weight_std^2), zero biases) and x0 ~ Bernoulli(0.5),
    (num_chains, num_visible) float."""
    rbm = RBM(num_visible, num_hidden, weight_std=weight_std, generator=generator).requires_grad_(False)
    x0 = torch.bernoulli(torch.full((num_chains, num_visible), 0.5), generator=generator)
    return rbm, x0


def build_ising(generator: torch.Generator, *, side: int = 40, theta: float = 0.25,
                num_chains: int = 32) -> tuple[LatticeIsing, torch.Tensor]:
    """Cyclic side x side lattice Ising and x0 ~ Bernoulli(0.5), (num_chains, side**2) float."""
    target = LatticeIsing(side=side, theta=theta)
    x0 = torch.bernoulli(torch.full((num_chains, side * side), 0.5), generator=generator)
    return target, x0


def _uniform_onehot(generator: torch.Generator, num_chains: int, num_sites: int, num_states: int) -> torch.Tensor:
    """(num_chains, num_sites, num_states) float one-hot states with independent uniform categories."""
    labels = torch.randint(num_states, (num_chains, num_sites), generator=generator)
    return F.one_hot(labels, num_states).to(torch.get_default_dtype())


def build_potts(generator: torch.Generator, *, num_sites: int = 48, num_states: int = 21, num_chains: int = 100,
                coupling_std: float = 0.1, field_std: float = 1.0) -> tuple[Potts, torch.Tensor]:
    """Dense Potts with random parameters (default: the protein size of GWG Sec. 5.4) and uniform one-hot x0.

    Returns:
        (Potts with h (D, K) ~ N(0, field_std^2) and J_ij = (W_ij + W_ji^T) / sqrt(2), W entries
        N(0, coupling_std^2), so J_ji = J_ij^T with N(0, coupling_std^2) entries, J_ii = 0; x0 (num_chains,
        D, K) float one-hot), D = num_sites, K = num_states.
    """
    D, K = num_sites, num_states
    W = torch.randn(D, D, K, K, generator=generator) * coupling_std
    J = (W + W.permute(1, 0, 3, 2)) / math.sqrt(2.0)  # exactly symmetric: J[j, i] = J[i, j]^T
    J[torch.arange(D), torch.arange(D)] = 0.0
    h = torch.randn(D, K, generator=generator) * field_std
    return Potts(h, J), _uniform_onehot(generator, num_chains, D, K)


def build_lattice_potts(generator: torch.Generator, *, side: int = 20, num_states: int = 3, theta: float = 1.0,
                        num_chains: int = 100) -> tuple[LatticePotts, torch.Tensor]:
    """Cyclic side x side lattice Potts (zero field; theta 1.0 sits near the critical log(1 + sqrt 3) of the
    3-state lattice) and uniform one-hot x0, (num_chains, side**2, num_states)."""
    target = LatticePotts(side=side, num_states=num_states, theta=theta)
    return target, _uniform_onehot(generator, num_chains, side * side, num_states)


def build_text_ebm(generator: torch.Generator, *, vocab_size: int = 10000, max_length: int = 20,
                   embed_dim: int = 256, hidden: int = 512, proj: int = 512,
                   num_chains: int = 100) -> tuple[torch.nn.Module, torch.Tensor]:
    """The text EBM's BiLSTM energy (GWG App. J sizes) with random weights (parameters frozen) and uniform
    one-hot sentences x0 (num_chains, max_length, vocab_size) float."""
    from gradmc.models.text import BiLSTMEnergy

    with torch.random.fork_rng(devices=[]):  # nn's initialisation draws from the global stream
        torch.manual_seed(int(torch.randint(2**31, (), generator=generator)))
        net = BiLSTMEnergy(vocab_size, embed_dim=embed_dim, hidden=hidden, proj=proj).requires_grad_(False)
    return net, _uniform_onehot(generator, num_chains, max_length, vocab_size)


def energy_grad_ms(log_prob, x0: torch.Tensor, repeats: int) -> float:
    """Median ms of one f(x) + grad_x f(x) at x0 (one forward and backward pass), after one untimed call."""
    def forward_backward():
        x = x0.clone().requires_grad_(True)
        torch.autograd.grad(log_prob(x).sum(), x)

    times = timeit.repeat(forward_backward, number=1, repeat=repeats + 1)
    return 1000.0 * sorted(times[1:])[repeats // 2]


@dataclass(frozen=True)
class SamplerSuite:
    """A steps/s suite: ``build(generator, **params) -> (target, x0)``, the sampler names to time and their
    ``make_sampler`` state kind."""

    build: Callable[..., tuple[object, torch.Tensor]]
    samplers: tuple[str, ...]
    state: str = "binary"
    max_steps: int | None = None  # caps the steps per timed run (and the warm-up at max_steps // 2): slow steps
    time_energy: bool = False  # also record the target's own forward + backward (energy_grad_ms)


#: steps/s suites: name -> SamplerSuite (the ESS, KMC, GPC and compile suites have their own functions)
SUITES: dict[str, SamplerSuite] = {
    RBM_SUITE: SamplerSuite(build_rbm, RBM_SAMPLERS),
    ISING_SUITE: SamplerSuite(build_ising, ("GWG", "Gibbs-1", *LATER_BINARY)),
    POTTS_SUITE: SamplerSuite(build_potts, ("GWG", "Gibbs-1", *LATER_CATEGORICAL), "categorical"),
    LATTICE_POTTS_SUITE: SamplerSuite(build_lattice_potts, ("GWG", "Gibbs-1", *LATER_CATEGORICAL), "categorical"),
    TEXT_EBM_SUITE: SamplerSuite(build_text_ebm, ("GWG",), "categorical", max_steps=5, time_energy=True),
}


def kmc_finite_suite(*, steps: int, repeats: int) -> dict:
    """Iterations per second of KMC finite on the 8-D banana (V = 100, b = 0.03) for 1 and 32 chains.

    m = 1,000 Gaussian random Fourier features (length scale 5, lambda 1e-3) fitted on 1,000 target draws,
    L ~ U{10..100}, eps ~ U[0.6, 1.3] (the authors' NumPy code: 11-16 ms per iteration). The batched leapfrog
    always runs 100 steps (chains past their own L are frozen), the worst case of that range.

    Returns:
        {"<c>_chains": time_sampler's row with ``iterations_per_s`` (chain-iterations per second) in place of
        ``steps_per_s`` and ``ms_per_iteration`` in place of ``ms_per_step``}.
    """
    from gradmc.samplers.continuous import KMC
    from gradmc.surrogates import fit_finite, gaussian_random_features
    from gradmc.targets import Banana

    gen = make_generator(seed_from("bench", "kmc_finite"))
    target = Banana(8, 100.0, 0.03)
    features = gaussian_random_features(8, 1000, 5.0, gen, torch.float64)
    surrogate = fit_finite(target.sample(1000, gen), features, 1e-3)
    kernel = KMC(surrogate, step_size_range=(0.6, 1.3), num_steps_range=(10, 100))
    out = {}
    for c in (1, 32):
        row = time_sampler(kernel, target, target.sample(c, gen), gen, steps=steps, repeats=repeats, warmup=5)
        row["iterations_per_s"] = row.pop("steps_per_s") * c
        row["ms_per_iteration"] = row.pop("ms_per_step")
        out[f"{c}_chains"] = row
    return out


def gpc_estimate_suite(*, repeats: int, data_dir=None) -> dict | str:
    """One importance-sampled GP-classification log marginal-likelihood estimate on UCI Glass (100 samples
    from the Laplace approximation) for 1 and 8 chains at once, after one untimed estimate.

    Returns:
        {"<c>_chains": {"ms_per_estimate" (median) and its spread (:func:`~gradmc.evaluation.timing.spread`),
        "ms_per_chain_estimate", "ms_runs", and estimates per second as ``steps_per_s`` with its spread}}
        (one estimate is one pseudo-marginal MH step), or "skipped: <reason>" without glass.data.
    """
    from gradmc.data import registry
    from gradmc.data.glass import load_glass
    from gradmc.targets import GPClassificationPosterior

    try:
        X, y = load_glass(data_dir)
    except FileNotFoundError:
        folder = data_dir if data_dir is not None else registry.data_dir()
        return f"skipped: glass.data missing (glass/glass.data not in the data folder {folder}, GRADMC_DATA_DIR)"
    target = GPClassificationPosterior(torch.from_numpy(X), torch.from_numpy(y), num_importance_samples=100)
    gen = make_generator(seed_from("bench", "gpc"))
    out = {}
    for c in (1, 8):
        theta = torch.randn(c, X.shape[1], generator=gen, dtype=torch.float64)
        target.log_prob(theta, gen)  # warm-up
        ms = [1000.0 * t for t in timeit.repeat(partial(target.log_prob, theta, gen), number=1, repeat=repeats)]
        out[f"{c}_chains"] = {**spread(ms, "ms_per_estimate"), "ms_per_chain_estimate": statistics.median(ms) / c,
                              "ms_runs": ms, **spread([1000.0 / t for t in ms], "steps_per_s")}
    return out


def compile_suite(builders: dict, *, steps: int, repeats: int, warmup: int) -> dict | str:
    """Eager against ``torch.compile(kernel.step)`` GWG steps/s per setting (opt-in: ``--suite compile``).

    The compiled step warms up untimed for 2 * REFRESH_EVERY + 2 steps, which compiles every path (the
    cached step and the periodic refresh); that wall time is ``compile_s``.

    Args:
        builders: setting name -> ``build(generator) -> (target, x0)`` (the steps/s suites' builders).
        steps, repeats, warmup: as :func:`~gradmc.evaluation.timing.time_sampler`.

    Returns:
        {setting: {"eager": row, "compiled": row, "compile_s", "speedup": compiled / eager, "steps_per_s":
        compiled}} with time_sampler's rows, or "skipped: <reason>" when compilation fails (no C++ compiler).
    """
    from gradmc.core.incremental import REFRESH_EVERY

    out = {}
    for name, build in builders.items():
        gen = make_generator(seed_from("bench", "compile", name))
        target, x0 = build(gen)
        eager = time_sampler(make_sampler("GWG"), target, x0, gen, steps=steps, repeats=repeats, warmup=warmup)
        kernel = make_sampler("GWG")
        compiled = SimpleNamespace(init=kernel.init, step=torch.compile(kernel.step))  # init stays eager
        start = time.perf_counter()
        try:
            state = compiled.init(x0, target)
            for _ in range(2 * REFRESH_EVERY + 2):
                state, _ = compiled.step(state, target, gen)
        except Exception as err:  # noqa: BLE001 -- any compiler failure means "not available here"
            return f"skipped: torch.compile failed ({type(err).__name__}: {str(err).splitlines()[0][:200]})"
        compile_s = time.perf_counter() - start
        row = time_sampler(compiled, target, x0, gen, steps=steps, repeats=repeats, warmup=warmup)
        out[name] = {"eager": eager, "compiled": row, "compile_s": compile_s,
                     "speedup": row["steps_per_s"] / eager["steps_per_s"], "steps_per_s": row["steps_per_s"]}
    return out


def _loadavg() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


def _compare(suite: str, sampler: str, rate: float) -> str:
    """", authors 64 (4.5x), target 640" for the progress line (empty when there is no reference)."""
    text = ""
    if (ref := AUTHORS_REFERENCE.get(suite, {}).get(sampler)) is not None:
        text += f", authors {ref:g} ({rate / ref:.1f}x)"
    if (target := TARGETS.get(suite, {}).get(sampler)) is not None:
        text += f", target {target:g}"
    return text


def _steps_suite(suite: str, params: dict, steps: int, warmup: int, repeats: int, say) -> tuple[dict, dict]:
    spec = SUITES[suite]
    gen = make_generator(seed_from("bench", suite))  # builds the target, then drives every sampler in turn
    defaults = {k: p.default for k, p in inspect.signature(spec.build).parameters.items()
                if p.kind is inspect.Parameter.KEYWORD_ONLY}
    if unknown := sorted(set(params) - set(defaults)):
        raise ValueError(f"suite {suite!r} takes no parameters {unknown}; it takes {sorted(defaults)}")
    target, x0 = spec.build(gen, **params)
    if spec.max_steps is not None and (steps > spec.max_steps or warmup > spec.max_steps // 2):
        steps, warmup = min(steps, spec.max_steps), min(warmup, spec.max_steps // 2)
        say(f"[bench] {suite}: a step takes about a second, so {steps} steps per run after {warmup} warm-up "
            "steps (capped)")
    out = {}
    for name in spec.samplers:
        row = out[name] = time_sampler(make_sampler(name, state=spec.state), target, x0, gen, steps=steps,
                                       repeats=repeats, warmup=warmup)
        say(f"[bench] {suite} {name}: {row['steps_per_s']:.1f} steps/s ({row['ms_per_step']:.2f} ms/step; "
            f"runs {row['steps_per_s_min']:.0f}-{row['steps_per_s_max']:.0f}, spread "
            f"{100 * row['steps_per_s_rel_spread']:.0f}%{_compare(suite, name, row['steps_per_s'])})")
    name = repr(target).splitlines()[0]
    extra = {"params": {**defaults, **params, "x0_shape": list(x0.shape),
                        "target": type(target).__name__ if name.endswith("(") else name},
             "samplers": list(spec.samplers), "state": spec.state, "steps_per_run": steps, "warmup": warmup}
    if spec.time_energy:
        extra["energy_grad_ms"] = energy_grad_ms(target, x0, repeats)
        say(f"[bench] {suite} energy forward + backward alone: {extra['energy_grad_ms']:.0f} ms")
    return out, extra


def _run_suite(suite: str, *, steps: int, repeats: int, warmup: int, ess_steps: int, ess_burn_in: int,
               params: dict, data_dir, say: Callable[[str], None]) -> tuple[dict | str, dict]:
    """(results, extra settings) of one suite."""
    if suite in SUITES:
        return _steps_suite(suite, params, steps, warmup, repeats, say)
    if suite == RBM_ESS_SUITE:
        from gradmc.bench.rbm_ess import rbm_ess_suite

        kwargs = {"steps": ess_steps, "burn_in": ess_burn_in, "repeats": repeats, **params}
        out, extra = rbm_ess_suite(data_dir=data_dir, progress=say, **kwargs)
        # its timed runs are the `repeats` segments of the kept steps, its warm-up the burn-in
        extra.update(steps_per_run=kwargs["steps"] // repeats, warmup=kwargs["burn_in"])
    elif params:
        raise ValueError(f"suite {suite!r} takes no parameters, got {sorted(params)}")
    elif suite == COMPILE_SUITE:
        out = compile_suite({RBM_SUITE: build_rbm, ISING_SUITE: build_ising}, steps=steps, repeats=repeats,
                            warmup=warmup)
        for key, row in ({} if isinstance(out, str) else out).items():
            say(f"[bench] compile {key} GWG: eager {row['eager']['steps_per_s']:.0f}, compiled "
                f"{row['compiled']['steps_per_s']:.0f} steps/s (x{row['speedup']:.2f}; "
                f"compile {row['compile_s']:.0f} s)")
        extra = {"kernel": "GWG", "settings": [RBM_SUITE, ISING_SUITE]}
    elif suite == FLOORS_SUITE:
        from gradmc.bench.floors import floors_suite

        tiny = {RBM_SUITE: partial(build_rbm, num_visible=8, num_hidden=4, num_chains=2),
                ISING_SUITE: partial(build_ising, side=3, num_chains=2)}
        out = floors_suite({RBM_SUITE: (build_rbm, tiny[RBM_SUITE]), ISING_SUITE: (build_ising, tiny[ISING_SUITE])},
                           steps=steps, repeats=repeats, warmup=warmup)
        for key, row in out.items():
            say(f"[bench] floors {key}: {row['ms_per_step']:.2f} ms/step = evaluation {row['evaluation_ms']:.2f} + "
                f"fixed {row['fixed_ms']:.2f} ({row['ops_per_step']:.0f} operations) + rest {row['rest_ms']:.2f}")
        extra = {"tiny": {"rbm": "8 x 4, 2 chains", "ising": "3 x 3, 2 chains"}}
    elif suite == KMC_SUITE:
        out = kmc_finite_suite(steps=max(steps // 5, 5), repeats=repeats)
        for key, row in out.items():  # chain-iterations/s above; the layout wants batch steps/s too
            row.update(spread(row["steps_per_s_runs"], "steps_per_s"))
            say(f"[bench] KMC finite banana {key}: {row['ms_per_iteration']:.2f} ms/iteration, "
                f"{row['iterations_per_s']:.0f} chain-iterations/s (spread {100 * row['steps_per_s_rel_spread']:.0f}%)")
        extra = {"steps_per_run": max(steps // 5, 5), "warmup": 5}
    elif suite == GPC_SUITE:
        out = gpc_estimate_suite(repeats=repeats, data_dir=data_dir)
        for key, row in ({} if isinstance(out, str) else out).items():
            say(f"[bench] GPC estimate {key}: {row['ms_per_estimate']:.1f} ms "
                f"(spread {100 * row['ms_per_estimate_rel_spread']:.0f}%)")
        extra = {"warmup": 1}
    else:
        raise ValueError(f"unknown suite {suite!r}")  # select_suites() refuses it first
    if isinstance(out, str):
        say(f"[bench] {suite} {out}")
    return out, extra


def _existing(out_path: Path, say) -> dict:
    """The samplers.json already at ``out_path``, or {} (with a note when it is unreadable or foreign)."""
    if not out_path.is_file():
        return {}
    try:
        old = json.loads(out_path.read_text())
    except (OSError, ValueError) as err:
        say(f"[bench] {out_path} is unreadable ({err}); writing a fresh file")
        return {}
    if not isinstance(old, dict) or not isinstance(old.get("suites"), dict):
        say(f"[bench] {out_path} is not a samplers.json (no 'suites'); writing a fresh file")
        return {}
    return old


def run_benchmark(out_path: str | Path, *, threads: int = 2, steps: int = DEFAULT_STEPS,
                  repeats: int = DEFAULT_REPEATS, warmup: int = DEFAULT_WARMUP, suites=None,
                  ess_steps: int = DEFAULT_ESS_STEPS, ess_burn_in: int = DEFAULT_ESS_BURN_IN,
                  suite_params: dict[str, dict] | None = None, data_dir=None,
                  progress: Callable[[str], None] | None = print) -> dict:
    """Run the benchmark suites; write the results as JSON to ``out_path`` atomically; return them.

    Args:
        out_path: the JSON file (``results/bench/samplers.json`` under ``make bench``).
        threads: the most torch threads (2 on the reference machine); fewer when cores are busy at start, by
            the thread policy of :mod:`gradmc.threads` (the count used and the busy cores are recorded).
        steps: steps per timed run of the steps/s suites (KMC: steps // 5, at least 5).
        repeats: timed runs per sampler (>= 5 for a meaningful spread; fewer are allowed but
            flagged); the ESS suite splits its kept steps into this many timed segments.
        warmup: untimed steps before the timed runs of the steps/s suites.
        suites: names of :data:`gradmc.bench.catalog.SUITE_NAMES` to run (None: all). With a subset, the
            other suites of an existing ``out_path`` are kept (each suite's settings are in ``suite_settings``).
            "scaling" is accepted and ignored here (the CLI runs :mod:`gradmc.bench.scaling`).
        ess_steps, ess_burn_in: timed and untimed steps of the ESS suite.
        suite_params: {suite: keyword arguments} for the builders (sizes, e.g. ``{"potts_48x21_100chains":
            {"num_sites": 6}}``) or for :func:`gradmc.bench.rbm_ess.rbm_ess_suite`; for tests and experiments
            (the suite names then no longer describe the sizes: ``suite_settings.<suite>.params`` does).
        data_dir: data folder of the ESS and GPC suites (default ``$GRADMC_DATA_DIR``).
        progress: called with one line per measurement (None: silent).

    Returns:
        The JSON's content (see the module docstring).

    Raises:
        InputError: (a UserError) an unknown suite name, or steps, repeats, ess_steps < 1, warmup,
            ess_burn_in < 0, threads < 1, or ess_steps < repeats (or < 4) when the ESS suite runs.
        ValueError: suite_params naming a suite that is not run, or parameters a suite does not take.
    """
    say = progress or (lambda line: None)
    selected = [s for s in select_suites(suites) if s not in PROCESS_BENCHES]
    for name, value, minimum in (("threads", threads, 1), ("steps", steps, 1), ("repeats", repeats, 1),
                                 ("warmup", warmup, 0), ("ess_steps", ess_steps, 1), ("ess_burn_in", ess_burn_in, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise InputError(f"bench {name} must be an integer >= {minimum}, got {value!r}")
    if RBM_ESS_SUITE in selected and ess_steps < max(4, repeats):
        raise InputError(f"the ESS suite needs ess_steps >= max(4, repeats) (it times `repeats` segments), got "
                         f"ess_steps {ess_steps}, repeats {repeats}")
    suite_params = dict(suite_params or {})
    if unused := sorted(set(suite_params) - set(selected)):
        raise ValueError(f"suite_params for suites that do not run: {unused}")
    if repeats < MIN_REPEATS:
        say(f"[bench] note: repeats {repeats} < {MIN_REPEATS}: the spread of so few runs says little")
    out_path = Path(out_path)
    choice = apply_thread_policy(threads)
    say(f"[bench] {choice.describe()}")
    threads = choice.threads
    from gradmc.results.provenance import git_state

    commit, dirty = git_state()
    now = datetime.now(UTC).isoformat(timespec="seconds")
    header = {
        "created_utc": now, "gradmc_version": __version__, "torch_version": torch.__version__,
        "git_commit": commit, "git_dirty": dirty, "threads": threads, "threads_requested": choice.requested,
        "busy_cores_at_start": choice.busy, "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "steps_per_run": steps, "repeats": repeats, "warmup": warmup,
    }
    old = _existing(out_path, say) if suites else {}
    results: dict = {**old, **header, "suites": dict(old.get("suites", {})),
                     "suite_settings": dict(old.get("suite_settings") or {}),
                     "authors_reference": AUTHORS_REFERENCE, "targets": TARGETS}
    for suite in selected:
        before, start = _loadavg(), time.perf_counter()
        out, extra = _run_suite(suite, steps=steps, repeats=repeats, warmup=warmup, ess_steps=ess_steps,
                                ess_burn_in=ess_burn_in, params=suite_params.get(suite, {}), data_dir=data_dir, say=say)
        results["suites"][suite] = out
        results["suite_settings"][suite] = {
            "created_utc": now, "gradmc_version": __version__, "git_commit": commit, "git_dirty": dirty,
            "threads": threads, "steps_per_run": steps, "repeats": repeats, "warmup": warmup, **extra,
            "seconds": time.perf_counter() - start, "loadavg_before": before, "loadavg_after": _loadavg()}
    results["suites"] = {s: results["suites"][s] for s in (*SUITE_NAMES, *results["suites"])
                         if s in results["suites"]}  # catalogue order, then any older suites
    with atomic_path(out_path) as tmp:
        tmp.write_text(json.dumps(results, indent=2) + "\n")
    return results
