"""A claim of a paper, the numbers we measured for it, and the verdict; assembled into claims.md."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from gradmc.atomic import atomic_path
from gradmc.errors import InputError
from gradmc.results import read_parquet

__all__ = ["Claim", "claims_frame", "write_claims"]


@dataclass(frozen=True)
class Claim:
    """One checkable statement.

    Attributes:
        experiment: the experiment family (module name under gradmc.claims).
        paper: "GWG" or "KMC", and the figure, e.g. "GWG Fig. 3".
        claim: the statement, e.g. "GWG ESS > Gibbs-1 ESS on the MNIST RBM".
        measured: the numbers behind the verdict, as text, e.g. "GWG 22.5 vs Gibbs-1 7.0 (median ESS)".
        passed: the verdict.
        note: context, e.g. that quick sizes are too small for the claim.
    """

    experiment: str
    paper: str
    claim: str
    measured: str
    passed: bool
    note: str = ""


def claims_frame(metrics: dict[str, str | Path]) -> pd.DataFrame:
    """Evaluate ``gradmc.claims.<experiment>.claims`` on each experiment's metrics Parquet.

    Args:
        metrics: experiment name -> metrics Parquet path.

    Returns:
        One row per claim, columns of :class:`Claim` plus ``status`` ("PASS"/"FAIL").

    Raises:
        ValueError: an experiment without a claims module (the message lists the known ones), or a file that
            holds another experiment's metrics.
    """
    rows = []
    known = sorted(m.name for m in pkgutil.iter_modules(importlib.import_module("gradmc.claims").__path__)
                   if m.name != "base")
    for experiment, path in metrics.items():
        if experiment not in known:
            raise InputError(f"no claims for experiment {experiment!r}; known: {', '.join(known)}")
        module = importlib.import_module(f"gradmc.claims.{experiment}")
        df, _ = read_parquet(path)
        found = sorted(set(df["experiment"].astype(str))) if "experiment" in df else []
        if found != [experiment]:
            raise InputError(f"{path} holds metrics of {found}, not of {experiment!r}")
        rows += [asdict(c) for c in module.claims(df)]
    frame = pd.DataFrame(rows, columns=["experiment", "paper", "claim", "measured", "passed", "note"])
    frame["status"] = frame["passed"].map({True: "PASS", False: "FAIL"})
    return frame


def write_claims(frame: pd.DataFrame, out_prefix: str | Path, config_name: str) -> list[Path]:
    """Write ``out_prefix``.md (a table per paper), .csv and .parquet atomically; return the paths."""
    md, csv, parquet = Path(f"{out_prefix}.md"), Path(f"{out_prefix}.csv"), Path(f"{out_prefix}.parquet")
    label = f" ({config_name} config)" if config_name else ""
    lines = [f"# Claims of the papers, measured{label}", "",
             f"{int(frame['passed'].sum())} of {len(frame)} claims pass. A FAIL is reported as measured; "
             "the note says when the config's sizes are too small for the claim.", ""]
    for paper, part in frame.groupby(frame["paper"].str.split().str[0], sort=True):
        lines += [f"## {paper}", "", part[["paper", "claim", "measured", "status", "note"]].rename(
            columns={"paper": "figure"}).to_markdown(index=False), ""]
    with atomic_path(md) as tmp:
        tmp.write_text("\n".join(lines) + "\n")
    with atomic_path(csv) as tmp:
        frame.to_csv(tmp, index=False)
    with atomic_path(parquet) as tmp:
        frame.to_parquet(tmp, index=False)
    return [md, csv, parquet]
