"""The papers' claims, measured as effects with 95% intervals (``results/<config>/claims.md``).

Each experiment has a claims module (``claims.py`` in its folder ``gradmc.experiments.<experiment>``, or
``gradmc.claims.<stage>`` for a hand-written stage: :func:`gradmc.claims.base.claims_modules`) with
``claims(df: pandas.DataFrame, config) -> list[Claim]`` reading that experiment's tidy metrics. This package holds
what they share (:mod:`gradmc.claims.base`, :mod:`gradmc.claims.stats`). A claim holds its
effect's interval over replicates (:mod:`gradmc.claims.stats`); the verdict PASS / FAIL / INCONCLUSIVE is
computed from it, never set by hand. A FAIL is reported, never hidden.
"""

from gradmc.claims.base import Claim, agreement, claims_frame, summary, write_claims
from gradmc.claims.stats import Interval, bootstrap_interval, decide, paired_t_interval, t_interval

__all__ = ["Claim", "Interval", "agreement", "bootstrap_interval", "claims_frame", "decide", "paired_t_interval",
           "summary", "t_interval", "write_claims"]
