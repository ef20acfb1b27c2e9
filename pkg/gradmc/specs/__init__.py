"""Torch-free tables and rules that the config check (:mod:`gradmc.config`), the workflow's rules and the
experiments share, below all of them: :mod:`gradmc.specs.ebm_samplers` (which samplers train the deep EBMs,
on which data, for how many steps) and :mod:`gradmc.specs.leaderboard` (the experiments the leaderboard ranks)."""

__all__: list[str] = []
