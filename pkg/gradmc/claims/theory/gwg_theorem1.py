"""GWG Theorem 1 (Sec. 4, App. B), checked exactly on small models: the Metropolis-Hastings kernel Q_grad of the
GWG proposal against the kernel Q of the locally balanced proposal it approximates.

The theorem: for an L-smooth log-probability f, with c = exp(-L D_H) and D_H = sup ||x - x'|| over the proposal's
Hamming ball H(x),

- (a) var_p(h, Q_grad) <= var_p(h, Q) / c + (1 - c) / c var_p(h) for every h;
- (b) Gap(Q_grad) >= c Gap(Q).

The models are binary RBMs, D = :data:`DIM` visible and :data:`HIDDEN` hidden units, f(x) = b^T x +
sum_j softplus(W_j x + c_j) (:class:`gradmc.targets.rbm.RBM`), with W i.i.d. normal of standard deviation sigma in
:data:`SIGMAS` (weak couplings, where c is near 1 and the bound is tight, to strong ones) and b, c i.i.d. normal of
standard deviation :data:`BIAS_SD`; :data:`SEEDS` seeds each. Extended to R^D, the Hessian of f is
W^T diag(sigmoid'(W x + c)) W with sigmoid' <= 1/4, so L = ||W||_2^2 / 4 is a smoothness constant; one flip moves x
by 1, so D_H = 1 and c = exp(-L). (Not Ising models: there f(x) = s^T J s + b^T s with a zero diagonal, so
GWG's first-order estimate of f(x') - f(x) is exact for one flip, Q_grad = Q, and the theorem is trivially true.)

Everything is exact, with no sampling: Q_grad is our GWG kernel enumerated one step from every state
(:meth:`gradmc.samplers.discrete.gwg.GradientFlipMH.transition_probabilities`), Q the locally balanced kernel
(:func:`gradmc.samplers.efficiency.locally_balanced_kernel`), the gaps and asymptotic variances are computed from
the matrices (:mod:`gradmc.samplers.efficiency`). The "interval" of each claim is therefore the exact value
itself (zero width); a replicate is a model, and the effect is the minimum over models (and functions h): the
theorem holds on every model exactly when it is > 0. It tests our GWG kernel as much as the theorem: a kernel
that drew from the wrong proposal would break (a) or (b) on the weakly coupled models.

These claims read no metrics and need no size from the config: they are computed whenever the claims are
(about a second).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from gradmc.claims.base import Claim
from gradmc.claims.stats import Interval

__all__ = ["claims", "kernels", "theorem_terms", "DIM", "HIDDEN", "SIGMAS", "SEEDS", "QUOTES"]

EXPERIMENT = "gwg_theorem1"
PAPER = "GWG Theorem 1"
DIM = 8
HIDDEN = 8
SIGMAS = (0.1, 0.3, 1.0, 2.0)
BIAS_SD = 0.5
SEEDS = (0, 1, 2, 3, 4)

QUOTES = {
    "theorem": "Then it holds(a) var p ( h, Q ∇ ) ≤ var p ( h,Q ) c + − cc · var p ( h ) (b) Gap ( Q ∇ ) ≥ c · Gap "
               "( Q ) where c = e − LD H and D H = sup x (cid:48) ∈ H ( x ) || x − x (cid:48) || .",
}
"""The theorem's statement, verbatim from the stored text (its fractions and superscripts are flattened there:
"var p ( h,Q ) c + − cc · var p ( h )" is var_p(h, Q) / c + (1 - c) / c var_p(h); "e − LD H" is exp(-L D_H))."""


def _model(sigma: float, seed: int) -> torch.nn.Module:
    from gradmc.targets.rbm import RBM

    g = torch.Generator().manual_seed(10_000 * SIGMAS.index(sigma) + seed)
    rbm = RBM(DIM, HIDDEN).double()
    with torch.no_grad():
        rbm.W.copy_(torch.randn(HIDDEN, DIM, generator=g, dtype=torch.float64) * sigma)
        rbm.b.copy_(torch.randn(DIM, generator=g, dtype=torch.float64) * BIAS_SD)
        rbm.c.copy_(torch.randn(HIDDEN, generator=g, dtype=torch.float64) * BIAS_SD)
    return rbm.requires_grad_(False)


def kernels(model: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(states (S, D), pi (S,), Q_grad (S, S), Q (S, S)) of an RBM on D <= 12 visible units: the exact target,
    our GWG kernel (temperature 2, one flip) and the locally balanced single-flip kernel, all float64."""
    from gradmc.core.exact import enumerate_binary
    from gradmc.samplers.discrete.gwg import GWG
    from gradmc.samplers.efficiency import locally_balanced_kernel
    from gradmc.samplers.enumerate import transition_matrix

    dim = int(model.num_visible)
    states = enumerate_binary(dim, torch.float64)
    with torch.no_grad():
        f = model(states)
    pi = torch.softmax(f, 0)
    gwg = GWG()
    q_grad = transition_matrix(lambda x: gwg.transition_probabilities(x, model), states)
    return states, pi, q_grad, locally_balanced_kernel(f, dim)


def theorem_terms(model: torch.nn.Module, smoothness: float) -> dict[str, float]:
    """The two sides of Theorem 1 (a) and (b) on one model, with c = exp(-smoothness) (D_H = 1).

    Returns:
        ``c``; ``gap`` and ``gap_grad`` (Gap(Q), Gap(Q_grad)); ``log_b`` = log(Gap(Q_grad) / (c Gap(Q)));
        ``log_a`` = the smallest over h of log(bound / var_p(h, Q_grad)), h each x_i and sum_i x_i.
    """
    from gradmc.samplers.efficiency import asymptotic_variance, spectral_gap

    states, pi, q_grad, q = kernels(model)
    c = math.exp(-smoothness)
    gap, gap_grad = spectral_gap(q, pi), spectral_gap(q_grad, pi)
    h = torch.cat([states, states.sum(1, keepdim=True)], 1)
    var_h = (pi[:, None] * (h - pi @ h) ** 2).sum(0)
    bound = asymptotic_variance(q, pi, h) / c + (1.0 - c) / c * var_h
    var_grad = asymptotic_variance(q_grad, pi, h)
    return {"c": c, "gap": gap, "gap_grad": gap_grad, "log_b": math.log(gap_grad / (c * gap)),
            "log_a": float(torch.log(bound / var_grad).min())}


def _smoothness(model: torch.nn.Module) -> float:
    """L = ||W||_2^2 / 4, a smoothness constant of the RBM's f (module docstring)."""
    return float(torch.linalg.matrix_norm(model.W, ord=2)) ** 2 / 4.0


def claims(config: dict | None = None) -> list[Claim]:
    """Theorem 1 (a) and (b), each as "holds on every model" (module docstring); ``config`` is not read."""
    terms = [theorem_terms(m, _smoothness(m)) for m in (_model(s, seed) for s in SIGMAS for seed in SEEDS)]
    n = len(terms)
    c = np.array([t["c"] for t in terms])
    ratio = np.array([t["gap_grad"] / t["gap"] for t in terms])
    models = (f"{n} RBMs, D = {DIM} (2^{DIM} states), H = {HIDDEN}, weight sd {', '.join(map(str, SIGMAS))} x "
              f"{len(SEEDS)} seeds, bias sd {BIAS_SD}; c = exp(-L) from {c.min():.3g} to {c.max():.3g}")
    gaps = (f"Gap(Q_grad) / Gap(Q) from {ratio.min():.3f} to {ratio.max():.3f} (median {np.median(ratio):.3f}); "
            f"on the weakest couplings (c >= {c[:len(SEEDS)].min():.2f}) from {ratio[:len(SEEDS)].min():.3f} to "
            f"{ratio[:len(SEEDS)].max():.3f}")
    method = f"exact (every state enumerated: no sampling error; the minimum over {n} models)"
    note = ("exact computation on small models: the theorem for any L-smooth f, checked on these; a replicate is a "
            "model")

    def exact(value: float) -> Interval:
        return Interval(value, value, value, n, "models", method)

    log_b = min(t["log_b"] for t in terms)
    log_a = min(t["log_a"] for t in terms)
    return [
        Claim(EXPERIMENT, PAPER, "Theorem 1(b): GWG's spectral gap is at least c times the locally balanced "
              "proposal's, Gap(Q_grad) >= c Gap(Q)",
              "min over models of log(Gap(Q_grad) / (c Gap(Q))); > 0: the bound holds on every model",
              exact(log_b), +1, f"{models}; {gaps}", note, quote=QUOTES["theorem"], origin="GWG",
              test="superiority"),
        Claim(EXPERIMENT, PAPER, "Theorem 1(a): GWG's asymptotic variance is at most var_p(h, Q) / c + (1 - c) / c "
              "var_p(h)",
              "min over models and h (each x_i and sum_i x_i) of log(bound / var_p(h, Q_grad)); > 0: the bound "
              "holds for every model and h",
              exact(log_a), +1, models, note, quote=QUOTES["theorem"], origin="GWG", test="superiority"),
    ]
