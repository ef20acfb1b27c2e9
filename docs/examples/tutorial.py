# --8<-- [start:target]
import torch

D = 12
gen = torch.Generator().manual_seed(1)
J = torch.randn(D, D, generator=gen) * 0.3
J = torch.triu(J, 1) + torch.triu(J, 1).T        # symmetric couplings, zero diagonal
h = torch.randn(D, generator=gen) * 0.2

def log_prob(x):
    """Unnormalised log-density of a dense Ising model on {0, 1}^D: x is (C, D), the result (C,)."""
    s = (2 * x - 1).to(J.dtype)                  # spins in {-1, +1}
    return 0.5 * ((s @ J) * s).sum(-1) + s @ h
# --8<-- [end:target]

# --8<-- [start:sample]
from gradmc.samplers.discrete import make_sampler
from gradmc.evaluation.ess import ess, ess_per_chain

def run(name, num_chains=32, num_steps=2000, seed=0):
    """Run ``num_chains`` chains of sampler ``name``; return the bit-count trace (C, T) and the evaluations."""
    kernel = make_sampler(name)
    g = torch.Generator().manual_seed(seed)
    state = kernel.init(torch.randint(0, 2, (num_chains, D), generator=g).float(), log_prob)
    trace, evals = [], 0
    for _ in range(num_steps):
        state, info = kernel.step(state, log_prob, g)
        trace.append(state.x.sum(-1))
        evals += info.energy_evals
    return torch.stack(trace, 1), evals

for name in ("Gibbs-1", "GWG"):
    trace, evals = run(name)
    kept = trace[:, 500:]                        # drop burn-in
    print(f"{name:8s} ESS {ess(kept):7.0f}  mean per chain {ess_per_chain(kept).mean():6.1f}  "
          f"ESS per 1000 evaluations {1000 * ess(kept) / evals:5.1f}")
# --8<-- [end:sample]

# --8<-- [start:exact]
from scipy.stats import chisquare
from gradmc.core.exact import exact_distribution

states, pi = exact_distribution(log_prob, D)     # all 2**D states and their probabilities
num_chains = 200_000
g = torch.Generator().manual_seed(2)
x = states[torch.multinomial(pi, num_chains, replacement=True, generator=g)].float()  # exact draws from pi
kernel = make_sampler("GWG")
state = kernel.init(x, log_prob)
for _ in range(3):                               # pi is invariant: after any number of steps, still pi
    state, _ = kernel.step(state, log_prob, g)
index = (state.x.long() * (2 ** torch.arange(D - 1, -1, -1))).sum(-1)
counts = torch.bincount(index, minlength=2 ** D).double()
expected = pi * num_chains
keep = expected > 5                              # chi-square needs enough expected counts per cell
rest = [counts[~keep].sum(), expected[~keep].sum()]
observed = torch.cat([counts[keep], rest[0][None]]).numpy()
expected = torch.cat([expected[keep], rest[1][None]]).numpy()
print(f"moved: {(state.x != x).any(-1).float().mean():.0%} of chains; "
      f"chi-square p = {chisquare(observed, expected * observed.sum() / expected.sum()).pvalue:.3f}")
# --8<-- [end:exact]
