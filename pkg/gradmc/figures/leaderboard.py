"""Sampler leaderboard: ESS per second and per energy evaluation of every sampler on every target
of the sampling experiments, with 95% intervals over seeds, under two protocols.

Reads the metrics Parquets of the experiments in :data:`SOURCES` (RBM sampling, GWG Fig. 3; lattice Ising
sampling, Fig. 4); every sampler those runs hold gets a row, so a sampler added to an experiment's config
appears here without code. One replicate is one seed (its chains run as one batch, or in chunks).

- **ours**: the GWG paper's statistic (Hamming distance to a fixed random state) after burn-in, ArviZ
  rank-normalised bulk ESS pooled over ALL chains (``ess_all_chains``, or the sum of the chunks'
  ``ess_chunk_chains`` when the chains ran in chunks). Per seed: ESS per second = total ESS / total sampler
  seconds; ESS per energy evaluation = total ESS / (batched evaluations x chains), i.e. per evaluation of one
  chain's state.
- **DISCS** (Goshvadi et al. 2023): per chain, the ESS of the second half of the run (NaN set to 1;
  ``ess_discs`` rows, :func:`gradmc.evaluation.ess.ess_discs_per_chain`), averaged over chains. Per seed:
  ESS per second = mean over chains of ESS / the sampler seconds of the chain's batch; ESS per energy
  evaluation = mean over chains of ESS / batched evaluations. These are per-chain numbers, as DISCS's tables.

Intervals: the claims' t interval over seeds (:func:`gradmc.claims.stats.t_interval`: Student t union bootstrap-t,
the claims' own rule: at least :data:`~gradmc.claims.stats.MIN_T_REPLICATES` seeds, else the interval is unbounded
and the table says so).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from gradmc.claims.stats import MIN_T_REPLICATES, t_interval
from gradmc.errors import InputError, check_writable_folder, unknown_name
from gradmc.figures.style import plt, sampler_color, save_figure, save_table
from gradmc.results import read_parquet
from gradmc.specs.leaderboard import SOURCES

__all__ = ["SOURCES", "PROTOCOLS", "MEASURES", "checked_metrics", "per_seed", "leaderboard_table", "figure"]

PROTOCOLS = ("ours", "DISCS")
MEASURES = ("ess_per_second", "ess_per_energy_eval")
_POOLED = ("ess_all_chains", "ess_chunk_chains")
_REQUIRED = ("target", "sampler", "seed", "metric", "value", "energy_evals", "wall_time_s")


def checked_metrics(name: str, df: pd.DataFrame, path: str | Path = "") -> pd.DataFrame:
    """``df`` if it is the finished metrics of sampling experiment ``name``, else a clear error.

    Raises:
        InputError: ``name`` outside :data:`SOURCES`; a missing column of :data:`_REQUIRED`; rows of another
            experiment (the ``experiment`` column); no pooled (``ess_all_chains`` / ``ess_chunk_chains``) or
            no DISCS (``ess_discs``) ESS rows (another stage's file, or one written before the DISCS protocol).
    """
    where = f"{path} ({name})" if path else name
    if name not in SOURCES:
        raise InputError("leaderboard: " + unknown_name("experiment", name, SOURCES))
    missing = [c for c in _REQUIRED if c not in df.columns]
    if missing:
        raise InputError(f"leaderboard: {where} lacks the column(s) {', '.join(missing)}; expected the metrics "
                         f"Parquet of the {name} stage (columns {', '.join(_REQUIRED)})")
    if "experiment" in df.columns:
        other = sorted(set(df["experiment"].astype(str)) - {name})
        if other:
            raise InputError(f"leaderboard: {where} holds metrics of {', '.join(other)}, not {name}; "
                             "give each experiment its own metrics file")
    for kind, metrics in (("pooled ESS", _POOLED), ("DISCS ESS", ("ess_discs",))):
        if not df["metric"].isin(metrics).any():
            raise InputError(f"leaderboard: {where} has no {kind} rows ({' / '.join(metrics)}); expected the "
                             f"metrics of a finished {name} stage (one written before the DISCS protocol was added "
                             "must be rerun)")
    return df


def _target_label(df: pd.DataFrame) -> pd.Series:
    """The target of each row: the experiment's target name, with theta where the experiment sweeps it."""
    label = df["target"].astype(str)
    if "theta" in df.columns:
        theta = df["theta"]
        label = label.where(theta.isna(), label + " theta " + theta.map(lambda t: f"{t:g}"))
    return label


def per_seed(df: pd.DataFrame) -> pd.DataFrame:
    """The leaderboard's replicates: one row per (target, sampler, seed, protocol) with both measures.

    Args:
        df: tidy metrics of one sampling experiment (``ess_all_chains`` / ``ess_chunk_chains``, ``ess_discs``
            and ``ess`` rows with their ``energy_evals`` and ``wall_time_s`` columns).

    Returns:
        DataFrame with columns target, sampler, seed, protocol, ess_per_second, ess_per_energy_eval.

    A seed whose pooled ESS is NaN (ArviZ: the statistic never moved) gets NaN measures under "ours"; the table
    leaves such seeds out and says so.

    Raises:
        InputError: no ``ess_discs`` rows (metrics written before the DISCS protocol existed: rerun the stage);
            a non-positive sampler time or evaluation count (names the target, sampler and seed).
    """
    df = df.assign(label=_target_label(df))
    if not (df["metric"] == "ess_discs").any():
        raise InputError("the metrics have no ess_discs rows (written before the DISCS protocol was added): "
                         "rerun the sampling stage")
    rows = []
    for (label, sampler, seed), d in df.groupby(["label", "sampler", "seed"], sort=False):
        chains = d[d["metric"] == "ess"]
        discs = d[d["metric"] == "ess_discs"]
        pooled = d[d["metric"].isin(_POOLED)]
        if discs.empty or pooled.empty:
            continue  # e.g. the RBM experiment's "Target" reference rows
        ess_total = float(pooled["value"].to_numpy(dtype=float).sum())  # one row per batch (all, or a chunk); NaN stays
        chain_evals = float(chains["energy_evals"].sum())  # each chain's row carries its batch's evaluations
        seconds = float(pooled["wall_time_s"].sum())
        if not (seconds > 0 and chain_evals > 0 and (discs["wall_time_s"] > 0).all()
                and (discs["energy_evals"] > 0).all()):
            raise InputError(f"leaderboard: {label} / {sampler} / seed {seed}: sampler time {seconds:g} s and "
                             f"{chain_evals:g} energy evaluations over its chains; expected both > 0 (a corrupt "
                             "or hand-made metrics file?)")
        rows.append((label, sampler, int(seed), "ours", ess_total / seconds, ess_total / chain_evals))
        rows.append((label, sampler, int(seed), "DISCS", float((discs["value"] / discs["wall_time_s"]).mean()),
                     float((discs["value"] / discs["energy_evals"]).mean())))
    return pd.DataFrame(rows, columns=["target", "sampler", "seed", "protocol", *MEASURES])


def leaderboard_table(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Mean and 95% t interval over seeds of each measure, per target, sampler and protocol.

    Args:
        frames: experiment name -> its tidy metrics.

    Returns:
        DataFrame sorted by target, protocol and descending ESS per second, with columns target, sampler,
        protocol, seeds, and per measure M: M, M_ci_low, M_ci_high; plus ``rank`` (1 = highest ESS per second
        within target and protocol) and ``note`` (why an interval is unbounded).
    """
    parts = [per_seed(df) for df in frames.values()]
    seeds = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["target"])
    rows = []
    for (target, sampler, protocol), d in seeds.groupby(["target", "sampler", "protocol"], sort=False):
        values = {m: d[m].to_numpy(dtype=float) for m in MEASURES}
        finite = np.isfinite(values[MEASURES[0]]) & np.isfinite(values[MEASURES[1]])
        n = int(finite.sum())
        row = {"target": target, "sampler": sampler, "protocol": protocol, "seeds": n}
        notes = []
        if n < len(d):
            notes.append(f"{len(d) - n} seed(s) left out: NaN ESS (the statistic never moved)")
        for measure in MEASURES:
            if n:
                interval = t_interval(values[measure][finite], "seeds")
                row[measure], row[f"{measure}_ci_low"], row[f"{measure}_ci_high"] = (
                    interval.effect, interval.low, interval.high)
            else:
                row[measure] = row[f"{measure}_ci_low"] = row[f"{measure}_ci_high"] = math.nan
        if n < MIN_T_REPLICATES:
            notes.append(f"{n} seed{'' if n == 1 else 's'}: t needs >= {MIN_T_REPLICATES}, interval unbounded")
        row["note"] = "; ".join(notes)
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["rank"] = table.groupby(["target", "protocol"])["ess_per_second"].rank(ascending=False, method="min",
                                                                                na_option="bottom").astype(int)
    return table.sort_values(["target", "protocol", "rank"], ignore_index=True)


CAPTION = ("Sampler leaderboard: ESS per second (sampler time only) and per energy evaluation of the Hamming "
           "statistic, mean and 95% t interval over seeds. ours = bulk ESS pooled over all chains after burn-in "
           "(totals over chains; per evaluation of one chain's state); DISCS = per-chain ESS of the second half "
           "(NaN = 1), mean over chains (per-chain numbers, as DISCS's tables). Rank 1 = most ESS per second.")


def figure(metrics: dict[str, str | Path], out_prefix: str | Path, table_prefix: str | Path | None = None,
           config_name: str = "") -> list[Path]:
    """Draw the leaderboard (one panel per protocol and measure; a row per target and sampler, its mean and
    95% interval over seeds on a log axis) and write the table.

    Args:
        metrics: experiment name (one of :data:`SOURCES`) -> its metrics Parquet.
        out_prefix: writes ``out_prefix``.{pdf,png}; table_prefix: ``.csv`` / ``.md`` (default: next to it).

    Returns:
        The written paths.

    Raises:
        InputError: an experiment outside :data:`SOURCES`, a file that is not that experiment's finished metrics
            (:func:`checked_metrics`), or an output folder that does not exist or is not writable; checked
            before anything is written.
    """
    unknown = sorted(set(metrics) - set(SOURCES))
    if unknown:
        raise InputError(f"leaderboard: unknown experiment(s) {unknown}; expected some of {', '.join(SOURCES)}")
    for prefix, what in ((out_prefix, "--out (the figure)"), (table_prefix or out_prefix, "--table-out")):
        check_writable_folder(os.path.dirname(os.path.abspath(prefix)), what)
    table = leaderboard_table({name: checked_metrics(name, read_parquet(path)[0], path)
                               for name, path in metrics.items()})
    if table.empty:
        raise InputError(f"leaderboard: no sampler rows with ESS in {', '.join(map(str, metrics.values()))}")
    ours = table[table["protocol"] == "ours"].reset_index(drop=True)
    pairs = list(zip(ours["target"], ours["sampler"], strict=True))
    labels = [f"{t} | {s}" for t, s in pairs]
    fig, axes = plt.subplots(2, 2, figsize=(12, 1.2 + 0.28 * max(len(labels), 1)), layout="constrained",
                             sharey=True)
    y = np.arange(len(labels))[::-1]
    for col, protocol in enumerate(PROTOCOLS):
        part = table[table["protocol"] == protocol].set_index(["target", "sampler"])
        for row, measure in enumerate(MEASURES):
            ax = axes[row][col]
            for yi, (target, sampler) in zip(y, pairs, strict=True):
                r = part.loc[(target, sampler)]
                low, high = r[f"{measure}_ci_low"], r[f"{measure}_ci_high"]
                mean = r[measure]
                if math.isfinite(low) and math.isfinite(high) and low > 0:
                    ax.plot([low, high], [yi, yi], color=sampler_color(sampler), lw=2)
                ax.plot([mean], [yi], "o", color=sampler_color(sampler), ms=5)
            ax.set_xscale("log")
            unit = "per second" if measure == "ess_per_second" else "per energy evaluation"
            scale = "all chains" if protocol == "ours" else "per chain"
            ax.set_title(f"{protocol}: ESS {unit} ({scale})", fontsize=9)
            ax.grid(axis="x", alpha=0.3)
            ax.set_yticks(y, labels, fontsize=7)
    fig.suptitle(f"Sampler leaderboard{f' ({config_name} config)' if config_name else ''}: mean and 95% t "
                 "interval over seeds (no bar: fewer than 5 seeds, or an interval reaching 0 on the log axis)",
                 fontsize=10)
    paths = save_figure(fig, out_prefix)
    return paths + save_table(table, table_prefix or out_prefix, CAPTION)
