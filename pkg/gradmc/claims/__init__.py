"""The papers' claims, checked against our measured numbers (``results/<config>/claims.md``).

Each experiment family has a module ``gradmc.claims.<experiment>`` with
``claims(df: pandas.DataFrame) -> list[Claim]`` reading that experiment's tidy metrics. A FAIL is
reported, never hidden; quick-config sizes can cause one, which the claim's ``note`` says.
"""

from gradmc.claims.base import Claim, claims_frame, write_claims

__all__ = ["Claim", "claims_frame", "write_claims"]
