"""Non-finite values never corrupt a chain, in any sampler (gradmc.samplers.base, "Non-finite values").

- NaN/inf log_prob, gradient or conditional logits at a CURRENT state raise NonFiniteError naming the
  sampler, the step and the chains (not IndexError, a silently frozen chain or all-zero bits);
- a PROPOSAL of NaN/+inf log_prob is rejected and the chain stays at a valid state; -inf is an
  ordinary rejection (and a zero pseudo-marginal estimate is allowed at the current state).

Targets put the bad value on chain 2 only: binary rows with more than half their entries 1 (chain 2
starts at all ones, the others at all zeros, and no kernel moves that far in one step), one-hot rows
with more than half their sites at value 0, continuous rows with x_0 > 50.
"""

from __future__ import annotations

import math
import pickle

import pytest
import torch
from _nan_rbm import NaNRowsBlockGibbs

from gradmc import sampler_catalog
from gradmc.samplers import NonFiniteError, check_finite
from gradmc.samplers.continuous import (
    HABC,
    HMC,
    KAMH,
    KMC,
    AdaptiveMetropolis,
    GaussianRandomWalkProposal,
    PseudoMarginalMH,
)
from gradmc.samplers.continuous import GaussianRandomWalkMetropolis as ContinuousRWM
from gradmc.samplers.discrete import make_sampler
from gradmc.targets import RBM

DIM, HIDDEN, CHAINS, BAD = 8, 3, 6, 2
SITES, VALUES = 5, 3
NAN, INF = math.nan, math.inf
# hyper-parameters for registry names that need them (a new sampler needing some fails loudly here)
HYPER = {"R-MALA": {"step_size": 0.1, "temperature": 1.0}, "R-HMC": {"step_size": 0.1, "temperature": 1.0},
         "D-SVGD": {"learning_rate": 0.1, "temperature": 1.0}}
RELAXED = ("R-MALA", "R-HMC", "D-SVGD")


#: small values of the name templates' fields (the targets here have few sites)
SMALL_FIELDS = {"block_size": 2, "radius": 1}


def concrete(spec: sampler_catalog.SamplerSpec) -> str:
    """A declared name with small numbers: Gibbs-{block_size} -> Gibbs-2, HB-{block_size}-{radius} -> HB-2-1,
    GWG-{num_draws} -> GWG-3, PAS-{path_length} -> PAS-3."""
    return spec.name.format(**{f: SMALL_FIELDS.get(f, 3) for f in spec.fields})


#: every sampler the catalog declares (plugins loaded from the environment included)
BINARY_NAMES = [concrete(s) for s in sampler_catalog.specs("binary")]
CATEGORICAL_NAMES = [concrete(s) for s in sampler_catalog.specs("categorical")]


class _NaNGrad(torch.autograd.Function):
    """Identity whose backward pass puts NaN on the rows in ``mask``: a finite value with a NaN gradient."""

    @staticmethod
    def forward(ctx, x, mask):
        ctx.save_for_backward(mask)
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return torch.where(mask.reshape(-1, *[1] * (g.dim() - 1)), torch.full_like(g, NAN), g), None


class MarkedRBM(NaNRowsBlockGibbs):
    """A small RBM whose value (mode "value") or gradient (mode "grad") is ``bad`` on marked rows.

    Marked rows: more than half the entries are 1 (``binary_only``: and the row is exactly binary, so
    relaxed inputs in (0, 1) stay clean). Offers what the registry's kernels need: ``blocks()`` for
    Block-HB, ``sample_hidden``/``sample_visible``/``hidden_probs``/``visible_probs`` for BlockGibbs
    (the hidden probabilities are NaN on marked rows while active).
    """

    def __init__(self, mode="value", bad=NAN, binary_only=False):
        self.rbm = RBM(DIM, HIDDEN, weight_std=0.5, generator=torch.Generator().manual_seed(0))
        self.mode, self.bad, self.binary_only, self.active = mode, bad, binary_only, True

    def mask(self, x):
        m = x.sum(-1) > DIM / 2
        if self.binary_only:
            m = m & ((x == 0) | (x == 1)).all(-1)
        return m & self.active

    def __call__(self, x):
        m = self.mask(x.detach())
        if self.mode == "grad":
            return self.rbm(_NaNGrad.apply(x, m))
        return torch.where(m, torch.full((), self.bad, dtype=x.dtype), self.rbm(x))

    def nan_rows(self, x):
        return self.mask(x)


class MarkedPotts:
    """A random pairwise model on one-hot (C, SITES, VALUES); ``bad`` value or gradient on rows with more
    than half their sites at value 0."""

    def __init__(self, mode="value", bad=NAN):
        g = torch.Generator().manual_seed(1)
        M = SITES * VALUES
        self.h = torch.randn(M, generator=g, dtype=torch.float64)
        J = 0.3 * torch.randn(M, M, generator=g, dtype=torch.float64)
        self.J = (J + J.T) / 2
        self.mode, self.bad, self.active = mode, bad, True

    def __call__(self, x):
        m = (x.detach()[:, :, 0].sum(-1) > SITES / 2) & self.active
        if self.mode == "grad":
            x = _NaNGrad.apply(x, m)
        xf = x.flatten(1)
        f = xf @ self.h + ((xf @ self.J) * xf).sum(1)
        return f if self.mode == "grad" else torch.where(m, torch.full((), self.bad, dtype=f.dtype), f)


def binary_start():
    x = torch.zeros(CHAINS, DIM)
    x[BAD] = 1.0
    return x


def categorical_start():
    idx = torch.ones(CHAINS, SITES, dtype=torch.long)
    idx[BAD] = 0
    return torch.nn.functional.one_hot(idx, VALUES).double()


def init(kernel, name, x, target):
    if name in RELAXED:
        return kernel.init(x, target, torch.Generator().manual_seed(3))
    return kernel.init(x, target)


def assert_names(err: NonFiniteError, name: str, step: int, chains=(BAD,)):
    msg = str(err)
    assert err.sampler == name and msg.startswith(f"{name}: non-finite"), msg
    assert err.chains == list(chains) and f"[{', '.join(map(str, chains))}]" in msg, msg
    assert err.step == step and ("at init" if step == 0 else f"in step {step} since init") in msg, msg
    assert isinstance(err, ValueError)


# ---------------------------------------------------------------------------------------------------
# every registry kernel: NaN at the current state, at init and when it appears after init


@pytest.mark.parametrize("name", BINARY_NAMES)
def test_registry_name_round_trips(name):
    kernel = make_sampler(name, target=MarkedRBM(), **HYPER.get(name, {}))
    assert kernel.name == name


@pytest.mark.parametrize("name", CATEGORICAL_NAMES)
def test_categorical_registry_name_round_trips(name):
    assert make_sampler(name, state="categorical").name == name


@pytest.mark.parametrize("name", BINARY_NAMES)
def test_nan_log_prob_at_init_raises_naming_sampler_and_chain(name):
    target = MarkedRBM()
    kernel = make_sampler(name, target=target, **HYPER.get(name, {}))
    with pytest.raises(NonFiniteError) as info:
        init(kernel, name, binary_start(), target)
    assert_names(info.value, name, 0)


@pytest.mark.parametrize("name", BINARY_NAMES)
def test_nan_appearing_after_init_raises_in_step(name):
    """The target changes between steps (AIS, PCD): GWG, RWM, R-MALA and R-HMC used to freeze chain 2
    silently, Gibbs-X and HB-X-Y to raise IndexError, D-SVGD to return all-zero bits."""
    target = MarkedRBM()
    kernel = make_sampler(name, target=target, **HYPER.get(name, {}))
    target.active = False
    state = init(kernel, name, binary_start(), target)
    target.active = True
    with pytest.raises(NonFiniteError) as info:
        kernel.step(state, target, torch.Generator().manual_seed(4))
    assert_names(info.value, name, 1)


@pytest.mark.parametrize("name", CATEGORICAL_NAMES)
def test_categorical_nan_at_init_raises(name):
    target = MarkedPotts()
    with pytest.raises(NonFiniteError) as info:
        make_sampler(name, state="categorical").init(categorical_start(), target)
    assert_names(info.value, name, 0)


@pytest.mark.parametrize("name", CATEGORICAL_NAMES)
def test_categorical_nan_in_step_raises_named_error_not_index_error(name):
    target = MarkedPotts()
    kernel = make_sampler(name, state="categorical")
    target.active = False
    state = kernel.init(categorical_start(), target)
    target.active = True
    with pytest.raises(NonFiniteError) as info:
        kernel.step(state, target, torch.Generator().manual_seed(4))
    assert_names(info.value, name, 1)


@pytest.mark.parametrize("name", ["RWM", "Gibbs-1", "GWG"])
def test_step_number_counts_steps_since_init(name):
    target = MarkedRBM()
    kernel = make_sampler(name)
    target.active = False
    state = kernel.init(binary_start(), target)
    gen = torch.Generator().manual_seed(5)
    for _ in range(2):  # one flip per step: chain 2 keeps more than half of its bits at 1
        state, _ = kernel.step(state, target, gen)
    assert state.num_steps == 2
    target.active = True
    with pytest.raises(NonFiniteError) as info:
        kernel.step(state, target, gen)
    assert_names(info.value, name, 3)


def test_dsvgd_one_nan_energy_raises_instead_of_zero_bits():
    target = MarkedRBM()
    kernel = make_sampler("D-SVGD", **HYPER["D-SVGD"])
    x = binary_start()
    target.active = False
    state = init(kernel, "D-SVGD", x, target)
    state, _ = kernel.step(state, target)
    assert bool(state.x.any()) and bool(torch.isfinite(state.z).all())
    target.active = True
    with pytest.raises(NonFiniteError, match=r"D-SVGD: non-finite .* in step 2 since init .*\[2\]"):
        kernel.step(state, target)


def test_block_gibbs_nan_conditional_is_named_not_runtime_error():
    target = MarkedRBM()
    kernel = make_sampler("BlockGibbs")
    target.active = False
    state = kernel.init(binary_start(), target)
    target.active = True
    with pytest.raises(NonFiniteError, match=r"p\(h \| x\)") as info:
        kernel.step(state, target, torch.Generator().manual_seed(0))
    assert_names(info.value, "BlockGibbs", 1)


# ---------------------------------------------------------------------------------------------------
# NaN gradient with a finite energy


@pytest.mark.parametrize("name", ["GWG", "GWG-3", "PAS-3", "R-MALA", "R-HMC", "D-SVGD", "DMALA", "DULA", "DLMC",
                                  "DLMC-Euler"])
def test_nan_gradient_with_finite_energy_raises(name):
    target = MarkedRBM(mode="grad")
    kernel = make_sampler(name, **HYPER.get(name, {}))
    state = init(kernel, name, binary_start(), target)  # the energy is finite: init passes
    with pytest.raises(NonFiniteError, match="gradient") as info:
        kernel.step(state, target, torch.Generator().manual_seed(0))
    assert_names(info.value, name, 1)


@pytest.mark.parametrize("name", ["GWG", "DMALA", "DULA"])
def test_categorical_gradient_kernels_nan_gradient_raises(name):
    target = MarkedPotts(mode="grad")
    kernel = make_sampler(name, state="categorical")
    state = kernel.init(categorical_start(), target)
    with pytest.raises(NonFiniteError, match="gradient") as info:
        kernel.step(state, target, torch.Generator().manual_seed(0))
    assert_names(info.value, name, 1)


# ---------------------------------------------------------------------------------------------------
# proposals: NaN/+inf rejected, -inf an ordinary rejection; the chain stays valid and keeps moving


@pytest.mark.parametrize("bad", [NAN, INF, -INF])
@pytest.mark.parametrize("name", ["RWM", "GWG", "GWG-3", "PAS-3", "R-MALA", "R-HMC", "DMALA", "DULA", "DLMC",
                                  "DLMC-Euler"])
def test_non_finite_proposals_are_rejected_and_chain_stays_valid(name, bad):
    """Chains start at 4 ones of 8: every proposal with 5 or more ones has log_prob ``bad``."""
    target = MarkedRBM(bad=bad, binary_only=True)
    kernel = make_sampler(name, **HYPER.get(name, {}))
    x = torch.zeros(16, DIM)
    x[:, :4] = 1.0
    state = init(kernel, name, x, target)
    gen = torch.Generator().manual_seed(6)
    accepted = 0
    for _ in range(30):
        state, info = kernel.step(state, target, gen)
        accepted += int(info.accepted.sum())
        assert bool((state.x.sum(-1) <= DIM / 2).all())  # never at a state of non-finite log_prob
        assert bool(torch.isfinite(state.log_prob).all())
    assert accepted > 0  # not frozen: moves to finite states are still taken


@pytest.mark.parametrize("name", ["GWG", "GWG-3", "PAS-3", "DMALA", "DULA", "DLMC", "DLMC-Euler", "ACS"])
def test_proposals_with_nan_gradient_are_rejected(name):
    """A proposal of finite log_prob but NaN gradient never enters the chain (the unadjusted DULA included):
    accepted, the next step would raise at the current state."""
    target = MarkedRBM(mode="grad", binary_only=True)
    kernel = make_sampler(name)
    x = torch.zeros(16, DIM)
    x[:, :4] = 1.0
    state = kernel.init(x, target)
    gen = torch.Generator().manual_seed(8)
    accepted = 0
    for _ in range(30):
        state, info = kernel.step(state, target, gen)  # raises if a NaN-gradient state was accepted
        accepted += int(info.accepted.sum())
        assert bool((state.x.sum(-1) <= DIM / 2).all())
    assert accepted > 0


@pytest.mark.parametrize("name", ["Gibbs-1", "HB-2-1", "Block-HB"])
def test_gibbs_type_kernels_allow_zero_probability_candidates(name):
    target = MarkedRBM(bad=-INF, binary_only=True)
    kernel = make_sampler(name, target=target)
    x = torch.zeros(16, DIM)
    x[:, :4] = 1.0
    state = kernel.init(x, target)
    gen = torch.Generator().manual_seed(7)
    for _ in range(20):
        state, _ = kernel.step(state, target, gen)
        assert bool((state.x.sum(-1) <= DIM / 2).all())


# ---------------------------------------------------------------------------------------------------
# continuous kernels


def gauss(bad=NAN, mode="value"):
    """N(0, I) log density with ``bad`` value (or a NaN gradient) on rows with x_0 > 50."""

    def log_prob(x):
        m = x.detach()[:, 0] > 50
        if mode == "grad":
            return -0.5 * (_NaNGrad.apply(x, m) ** 2).sum(-1)
        return torch.where(m, torch.full((), bad, dtype=x.dtype), -0.5 * (x * x).sum(-1))

    return log_prob


class LinearSurrogate:
    """grad f(x) = -x (the Gaussian's), NaN on rows with x_0 > 50 if ``nan``."""

    def __init__(self, nan=False):
        self.nan = nan

    def grad(self, x):
        g = -x
        return torch.where((x[:, :1] > 50) & self.nan, torch.full_like(g, NAN), g)


def continuous_start():
    x = torch.zeros(CHAINS, 2, dtype=torch.float64)
    x[BAD, 0] = 100.0
    return x


def _simulator(theta, generator):
    return theta[:, None, :] + torch.randn((theta.shape[0], 10, theta.shape[1]), generator=generator,
                                           dtype=theta.dtype)


CONTINUOUS = {
    "HMC": lambda: HMC((0.05, 0.1), (1, 3)),
    "KMC": lambda: KMC(LinearSurrogate(), (0.05, 0.1), (1, 3)),
    "RWM": lambda: ContinuousRWM(0.5),
    "AM": lambda: AdaptiveMetropolis(initial_scale=0.5, adapt_start=5),
    "KAMH": lambda: KAMH(torch.randn(20, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64),
                         sigma=1.0, gamma=0.2, nu=1.0),
    "HABC": lambda: HABC(_simulator, torch.zeros(2, dtype=torch.float64), (0.05, 0.1), (1, 3)),
}
PSEUDO_MARGINAL = {
    "PM-MH": lambda: PseudoMarginalMH(GaussianRandomWalkProposal(0.5)),
    "KMC": lambda: KMC(LinearSurrogate(), (0.05, 0.1), (1, 3), pseudo_marginal=True),
    "KAMH": lambda: KAMH(torch.randn(20, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64),
                         sigma=1.0, gamma=0.2, nu=1.0, pseudo_marginal=True),
}


def _estimator(log_prob):
    return lambda x, generator: log_prob(x)


@pytest.mark.parametrize("bad", [NAN, INF, -INF])
@pytest.mark.parametrize("name", list(CONTINUOUS))
def test_continuous_non_finite_log_prob_at_init_raises(name, bad):
    kernel = CONTINUOUS[name]()
    with pytest.raises(NonFiniteError) as info:
        kernel.init(continuous_start(), gauss(bad))
    assert_names(info.value, name, 0)


@pytest.mark.parametrize("name", list(CONTINUOUS))
def test_continuous_nan_appearing_after_init_raises_in_step(name):
    kernel = CONTINUOUS[name]()
    state = kernel.init(continuous_start(), gauss(-1e3))  # finite everywhere
    with pytest.raises(NonFiniteError) as info:
        kernel.step(state, gauss(NAN), torch.Generator().manual_seed(0))
    assert_names(info.value, name, 1)


@pytest.mark.parametrize("name", ["HMC", "HABC"])
def test_continuous_nan_gradient_with_finite_energy_raises(name):
    kernel = CONTINUOUS[name]()
    target = gauss(mode="grad")
    state = kernel.init(continuous_start(), target)
    with pytest.raises(NonFiniteError, match="gradient") as info:
        kernel.step(state, target, torch.Generator().manual_seed(0))
    assert_names(info.value, name, 1)


def test_kmc_nan_surrogate_gradient_at_current_state_raises():
    kernel = KMC(LinearSurrogate(nan=True), (0.05, 0.1), (1, 3))
    state = kernel.init(continuous_start(), gauss(-1e3))
    with pytest.raises(NonFiniteError, match="surrogate gradient") as info:
        kernel.step(state, gauss(-1e3), torch.Generator().manual_seed(0))
    assert_names(info.value, "KMC", 1)


@pytest.mark.parametrize("bad", [NAN, INF, -INF])
@pytest.mark.parametrize("name", ["HMC", "KMC", "RWM", "AM", "KAMH"])
def test_continuous_non_finite_proposals_are_rejected(name, bad):
    """Chains start at x_0 = 0.5 and every proposal with x_0 > 1 has log_prob ``bad``."""

    def log_prob(x):
        return torch.where(x[:, 0] > 1, torch.full((), bad, dtype=x.dtype), -0.5 * (x * x).sum(-1))

    kernel = CONTINUOUS[name]()
    state = kernel.init(torch.full((16, 2), 0.5, dtype=torch.float64), log_prob)
    gen = torch.Generator().manual_seed(8)
    accepted = 0
    for _ in range(30):
        state, info = kernel.step(state, log_prob, gen)
        accepted += int(info.accepted.sum())
        assert bool((state.x[:, 0] <= 1).all()) and bool(torch.isfinite(state.log_prob).all())
    assert accepted > 0


@pytest.mark.parametrize("bad", [NAN, INF])
@pytest.mark.parametrize("name", list(PSEUDO_MARGINAL))
def test_pseudo_marginal_nan_or_inf_estimate_at_current_state_raises(name, bad):
    kernel = PSEUDO_MARGINAL[name]()
    with pytest.raises(NonFiniteError, match="estimate") as info:
        kernel.init(continuous_start(), _estimator(gauss(bad)), torch.Generator().manual_seed(0))
    assert_names(info.value, name, 0)


@pytest.mark.parametrize("name", list(PSEUDO_MARGINAL))
def test_pseudo_marginal_zero_estimates_are_legitimate(name):
    """A zero estimate (-inf) at the current state is allowed and the chain leaves it; zero-estimate
    proposals are rejected."""

    def log_est(x, generator):
        return torch.where(x[:, 0] > 1, torch.full((), -INF, dtype=x.dtype), -0.5 * (x * x).sum(-1))

    kernel = PSEUDO_MARGINAL[name]()
    x = torch.full((16, 2), 0.5, dtype=torch.float64)
    x[BAD, 0] = 1.05  # starts at a zero estimate
    gen = torch.Generator().manual_seed(9)
    state = kernel.init(x, log_est, gen)
    assert float(state.log_prob[BAD]) == -INF
    for _ in range(60):
        state, _ = kernel.step(state, log_est, gen)
    others = torch.arange(16) != BAD
    assert bool((state.x[others, 0] <= 1).all()) and bool(torch.isfinite(state.log_prob[others]).all())
    assert bool(torch.isfinite(state.log_prob).all())  # chain 2 found a positive estimate and moved


# ---------------------------------------------------------------------------------------------------
# the helper


def test_check_finite_message_lists_first_chains_and_count():
    f = torch.zeros(20)
    f[3:15] = NAN
    with pytest.raises(NonFiniteError) as info:
        check_finite("GWG", 7, ("log_prob at the current state", f), ("gradient", torch.zeros(20, 3)))
    err = info.value
    assert err.chains == list(range(3, 15)) and err.num_chains == 20 and math.isnan(err.value)
    assert "in 12 of 20 chains [3, 4, 5, 6, 7, 8, 9, 10, ...]" in str(err) and "in step 7 since init" in str(err)
    again = pickle.loads(pickle.dumps(err))  # e.g. from a worker process
    assert str(again) == str(err) and again.chains == err.chains


def test_check_finite_names_the_failing_tensor_and_allows_neg_inf():
    check_finite("PM-MH", 1, ("estimate", torch.tensor([-INF, 0.0])), allow_neg_inf=True)
    with pytest.raises(NonFiniteError, match="gradient .* 1 of 2 chains \\[1\\]; first: inf"):
        check_finite("HMC", None, ("log_prob", torch.zeros(2)), ("gradient", torch.tensor([[0.0], [INF]])))


@pytest.mark.parametrize("bad", [NAN, INF])
@pytest.mark.parametrize("name", list(PSEUDO_MARGINAL))
def test_pseudo_marginal_nan_or_inf_proposal_estimates_are_rejected(name, bad):
    def log_est(x, generator):
        return torch.where(x[:, 0] > 1, torch.full((), bad, dtype=x.dtype), -0.5 * (x * x).sum(-1))

    kernel = PSEUDO_MARGINAL[name]()
    gen = torch.Generator().manual_seed(10)
    state = kernel.init(torch.full((16, 2), 0.5, dtype=torch.float64), log_est, gen)
    for _ in range(30):
        state, _ = kernel.step(state, log_est, gen)
        assert bool((state.x[:, 0] <= 1).all()) and bool(torch.isfinite(state.log_prob).all())


def test_check_finite_overflowing_sum_of_finite_values_passes():
    """The hot path sums; a sum that overflows float32 sends it to the exact check, which passes."""
    check_finite("GWG", 1, ("log_prob", torch.full((4,), 3e38)), ("gradient", torch.full((4, 2), -3e38)))
    check_finite("PM-MH", 1, ("estimate", torch.tensor([3e38, 3e38, -INF])), allow_neg_inf=True)
    with pytest.raises(NonFiniteError, match=r"\[1\]"):
        check_finite("PM-MH", 1, ("estimate", torch.tensor([-INF, INF, 0.0])), allow_neg_inf=True)
