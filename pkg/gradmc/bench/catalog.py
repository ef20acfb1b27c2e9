"""Names, defaults and reference numbers of the ``make bench`` suites (no torch import: the CLI's ``--help``
and its argument checks read this module). Reference numbers and targets are steps per second of the whole
batch of chains on the reference machine (2 threads, CPU, idle).
"""

from __future__ import annotations

from collections.abc import Iterable

from gradmc import sampler_catalog
from gradmc.errors import InputError

__all__ = ["RBM_SUITE", "ISING_SUITE", "POTTS_SUITE", "LATTICE_POTTS_SUITE", "TEXT_EBM_SUITE", "RBM_ESS_SUITE",
           "KMC_SUITE", "GPC_SUITE", "COMPILE_SUITE", "FLOORS_SUITE", "OPT_IN_HELP", "SCALING", "THREADS", "PEERS",
           "PROCESS_BENCHES", "SUITES_HELP", "SUITE_NAMES",
           "AUTHORS_REFERENCE", "TARGETS", "DEFAULT_STEPS", "DEFAULT_REPEATS", "DEFAULT_WARMUP", "DEFAULT_ESS_STEPS",
           "DEFAULT_ESS_BURN_IN", "MIN_REPEATS", "LATER_BINARY", "LATER_CATEGORICAL", "RBM_SAMPLERS", "select_suites"]

#: the samplers after GWG and those of plugins (the config groups ``later`` and ``plugins``), at their declared
#: defaults: timed in every binary suite (and the RBM ESS suite); the categorical ones in the Potts suites
LATER_BINARY = tuple(sampler_catalog.expand(["later", "plugins"], "binary", empty_groups=True))
LATER_CATEGORICAL = tuple(sampler_catalog.expand(["later", "plugins"], "categorical", empty_groups=True))
#: the samplers of the RBM steps/s suite and of the RBM ESS suite
RBM_SAMPLERS = ("GWG", "Gibbs-1", "Gibbs-2", "HB-10-1", "GWG-3", "BlockGibbs", *LATER_BINARY, "PAS-3-wor")

RBM_SUITE = "rbm_784x500_100chains"
ISING_SUITE = "ising_40x40_theta0.25_32chains"
POTTS_SUITE = "potts_48x21_100chains"
LATTICE_POTTS_SUITE = "lattice_potts_20x20x3_theta1.0_100chains"
TEXT_EBM_SUITE = "text_ebm_bilstm_20x10000_100chains"
RBM_ESS_SUITE = "rbm_trained_784x500_ess"
KMC_SUITE = "kmc_finite_banana8_m1000_L10-100"
GPC_SUITE = "gpc_glass_estimate_100samples"
#: opt-in (not run by a plain ``make bench``): eager against torch.compile'd GWG steps
COMPILE_SUITE = "compile"
#: opt-in: where a step's time goes (full-size step, one-evaluation floor, fixed dispatch cost, operations)
FLOORS_SUITE = "floors"
#: not suites of samplers.json: benchmarks with their own files, selectable with ``--suite NAME``
SCALING = "scaling"  # Ray scaling (scaling.json) and Ray tasks against actors (executors.json)
THREADS = "threads"  # torch thread settings idle and beside a busy process (threads.json)
PEERS = "peers"  # side by side with Google's DISCS, when a JAX venv is given (peers.json, peers.md)
#: those benchmarks -> their help line, in the order they run (after the suites)
PROCESS_BENCHES: dict[str, str] = {
    SCALING: "Ray scaling of a sweep over 1 and 2 workers (OUT/scaling.json), and Ray tasks against actors: "
             "start-up, cost per shard, throughput (OUT/executors.json)",
    THREADS: "RBM GWG steps/s under torch's default threads, OMP_WAIT_POLICY=PASSIVE, a bounded spin, one "
             "thread and gradmc's thread policy, each on an idle machine and beside a busy process "
             "(OUT/threads.json)",
    PEERS: "steps/s side by side with Google's DISCS (JAX) on the same targets and samplers, 1 and 2 threads "
           "(OUT/peers.json, OUT/peers.md); needs --discs-python (or DISCS_PYTHON), else skipped with a note",
}

#: suite -> one line of ``gradmc bench --help``, in the order the suites run
SUITES_HELP: dict[str, str] = {
    RBM_SUITE: "steps/s, RBM 784x500, W ~ N(0, 0.1^2): " + ", ".join(RBM_SAMPLERS),
    ISING_SUITE: "steps/s, cyclic lattice Ising 40x40, theta 0.25: GWG, Gibbs-1, " + ", ".join(LATER_BINARY),
    POTTS_SUITE: "steps/s, dense Potts 48 sites x 21 states (protein size), random couplings: "
                 "categorical GWG, Gibbs-1, " + ", ".join(LATER_CATEGORICAL),
    LATTICE_POTTS_SUITE: "steps/s, cyclic lattice Potts 20x20, 3 states, theta 1.0: categorical GWG, Gibbs-1, "
                         + ", ".join(LATER_CATEGORICAL),
    TEXT_EBM_SUITE: "steps/s, categorical GWG on the text EBM's BiLSTM energy at the paper's size (GWG App. J: "
                    "sentences of 20 tokens, 10,000 words, 100 chains; about 1 s a step, so --steps is capped at 5 and "
                    "--warmup at 2; also records the energy's own forward + backward, energy_grad_ms)",
    RBM_ESS_SUITE: "ESS/s of the Hamming statistic on an RBM trained on MNIST (CD-10, 1 epoch; needs "
                   "static_mnist in GRADMC_DATA_DIR), the RBM suite's samplers",
    KMC_SUITE: "one KMC-finite iteration on the 8-D banana (1 and 32 chains)",
    GPC_SUITE: "one GP-classification likelihood estimate on Glass (needs glass in GRADMC_DATA_DIR)",
}
SUITE_NAMES: tuple[str, ...] = tuple(SUITES_HELP)
#: suites run only when named with ``--suite`` -> their help line
OPT_IN_HELP: dict[str, str] = {
    COMPILE_SUITE: "opt-in: GWG steps/s eager against torch.compile(step) on the RBM and Ising settings "
                   "(tens of seconds of compilation; needs a C++ compiler)",
    FLOORS_SUITE: "opt-in: GWG, PAS-3, PAS-3-wor and DMALA on the RBM and Ising settings: ms per step beside the "
                  "one-evaluation floor, the fixed cost of a step on a tiny instance of the target and its tensor "
                  "operations per step",
}

#: suite -> sampler -> the authors' steps/s on the reference machine (median of 3 runs)
AUTHORS_REFERENCE: dict[str, dict[str, float]] = {
    RBM_SUITE: {"GWG": 195.0, "GWG-3": 259.0, "Gibbs-1": 605.0, "HB-10-1": 120.0},
    ISING_SUITE: {"GWG": 94.0},
    POTTS_SUITE: {"GWG": 64.0, "Gibbs-1": 26.0},
    LATTICE_POTTS_SUITE: {"GWG": 68.0},
}
#: suite -> sampler -> our steps/s target (2 threads, CPU, idle machine, ``make bench`` median)
TARGETS: dict[str, dict[str, float]] = {
    RBM_SUITE: {"GWG": 1000.0, "GWG-3": 750.0, "Gibbs-1": 1800.0, "HB-10-1": 360.0},
    ISING_SUITE: {"GWG": 5000.0},
    POTTS_SUITE: {"GWG": 640.0},
    LATTICE_POTTS_SUITE: {"GWG": 680.0},
}

DEFAULT_STEPS = 100  # steps per timed run of the steps/s suites
DEFAULT_REPEATS = 5  # timed runs per sampler: the median and the spread over them are reported
DEFAULT_WARMUP = 20  # untimed steps before the timed runs
DEFAULT_ESS_STEPS = 2000  # steps after burn-in of the ESS suite (split into `repeats` timed segments)
DEFAULT_ESS_BURN_IN = 500  # untimed steps before them (the GWG Fig. 3 runs drop 10% of 5000)
MIN_REPEATS = 5  # fewer repeats are allowed (tests) but flagged: a spread needs >= 5


def select_suites(names: Iterable[str] | None) -> tuple[str, ...]:
    """The suites to run, in :data:`SUITE_NAMES` order (then those of :data:`PROCESS_BENCHES` asked for).

    Args:
        names: suite names as given to ``--suite`` (repeats allowed), or None / empty for all suites and
            every benchmark of :data:`PROCESS_BENCHES`.

    Returns:
        Names from :data:`SUITE_NAMES`, the opt-in suites of :data:`OPT_IN_HELP` only when named, and
        names of :data:`PROCESS_BENCHES`, each once.

    Raises:
        InputError: (a ValueError) for a name that is not a suite, listing the known ones.
    """
    if not names:
        return (*SUITE_NAMES, *PROCESS_BENCHES)
    names = list(names)
    known = (*SUITE_NAMES, *OPT_IN_HELP, *PROCESS_BENCHES)
    if unknown := [n for n in names if n not in known]:
        raise InputError(f"unknown bench suite {', '.join(repr(n) for n in unknown)}; known suites: "
                         f"{', '.join(known)}")
    return tuple(n for n in known if n in names)
