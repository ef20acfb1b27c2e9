"""The sampler leaderboard's sources: the experiments whose metrics it ranks. Torch- and matplotlib-free, so the
workflow reads the rule's inputs from here at parse time and the figure checks its inputs against the same list."""

__all__ = ["SOURCES"]

#: experiments whose metrics feed the leaderboard (each writes the ``ess_rows`` of :mod:`gradmc.experiments.runner`)
SOURCES = ("rbm_sampling", "ising_sampling")
