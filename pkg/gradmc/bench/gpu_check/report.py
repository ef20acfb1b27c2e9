"""The gpu-check report: its markdown table (:func:`format_table`), the table of every comparison
(:func:`format_details`), and the strict-JSON form of the report dict."""

from __future__ import annotations

import math

from gradmc.bench.gpu_check.compare import _DEVICES, _plain

__all__ = ["format_table", "format_details"]


def _fmt(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}g}"


def _rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _row(*cells) -> str:
    """One markdown table row; a "|" inside a cell is escaped, an empty cell is written "-"."""
    return "| " + " | ".join(str(c).replace("|", "\\|") if str(c) else "-" for c in cells) + " |"


def _smoke_rows(smoke: dict, max_failures: int) -> list[str]:
    runs = smoke["runs"]
    seconds = ["-" if runs.get(d) is None else f"{runs[d]['seconds']:.0f} s" for d in _DEVICES]
    status = []
    for dev in _DEVICES:
        run = runs.get(dev)
        if run is not None and run["timed_out"]:
            status.append(f"{dev} TIMEOUT (log {run['log']})")
        elif run is not None and run["returncode"] != 0:
            status.append(f"{dev} FAILED, exit {run['returncode']} (log {run['log']})")
    if smoke.get("prefetch_error"):
        status.append(f"data fetch FAILED: {smoke['prefetch_error']}")
    lines = [_row("smoke DAG", f"config/smoke.yaml, device cpu vs cuda -> {smoke['folder']}/{{cpu,cuda}}",
                  *seconds, "; ".join(status) or "ok")]
    comparison = smoke.get("comparison")
    if comparison is None:
        return lines
    if comparison.get("error"):
        lines.append(_row("same statistics", comparison["error"], "", "", "FAIL"))
    elif not comparison["files"]:
        lines.append(_row("same statistics", "no per-chain statistics found in both folders", "", "", "FAIL"))
    for name, part in comparison["files"].items():
        chains = "/".join(str(c) for c in part["chains"]) or "-"
        verdict = "PASS" if part["failed"] == 0 else f"FAIL ({part['failed']} of {part['comparisons']})"
        lines.append(_row("same statistics", f"{name}: {', '.join(part['metrics']) or '-'}; {part['comparisons']} "
                          f"shard statistics over {chains} chains", "", "",
                          f"{verdict}, max t/t_crit {_fmt(part['max_ratio'], 2)}"))
    failed = [r for r in comparison["rows"] if not r["passed"]]
    for r in failed[:max_failures]:
        why = r.get("note") or ""
        if r.get("t") is not None:
            why = f"t = {_fmt(r['t'])} > t_crit {_fmt(r['critical'])} (df {_fmt(r['df'], 2)})"
        lines.append(_row("FAILED", f"{r['file']} {r['metric']} {r.get('group', '')}".strip(),
                          *(f"{_fmt(r.get(f'mean_{d}'), 4)} ± {_fmt(r.get(f'se_{d}'), 2)}" for d in _DEVICES), why))
    if len(failed) > max_failures:
        lines.append(_row("FAILED", f"{len(failed) - max_failures} more, see gpu_check.md", "", "", ""))
    lines.append(_row("same statistics", f"test: two-sided two-sample t per statistic, Bonferroni over m = "
                      f"{comparison['m']}, family-wise alpha {comparison['family_alpha']}", "", "",
                      "PASS" if comparison["passed"] else "FAIL"))
    return lines


def format_table(report: dict, *, max_failures: int = 10) -> str:
    """The markdown table of a gpu-check ``report`` (the dict :func:`main` writes as JSON): one row for the
    two smoke DAGs, one per result file compared (plus one per failed comparison, at most ``max_failures``),
    one per GWG timing, and a total. Columns: check, setting, CPU, CUDA, result."""
    lines = ["| check | setting | CPU | CUDA | result |", "| --- | --- | --- | --- | --- |"]
    smoke = report.get("smoke") or {"skipped": True}
    if smoke.get("skipped"):
        lines.append(_row("smoke DAG", smoke.get("reason", "skipped"), "", "", "skipped"))
    else:
        lines += _smoke_rows(smoke, max_failures)
    by_chains: dict[int, dict] = {}
    for row in report.get("bench", []):
        by_chains.setdefault(row["chains"], {})[row["device"]] = row
    for chains in sorted(by_chains):
        cpu, cuda = by_chains[chains].get("cpu"), by_chains[chains].get("cuda")
        result = []
        if cpu and cuda:
            result.append(f"CUDA/CPU {cuda['steps_per_s'] / cpu['steps_per_s']:.1f}x")
        if cuda:
            result.append(f"{cuda['chain_steps_per_s']:.3g} chain-steps/s on CUDA")
        lines.append(_row("GWG steps/s", f"RBM 784x500, W ~ N(0, 0.1^2), {chains:,} chains",
                          "" if cpu is None else f"{_rate(cpu['steps_per_s'])} ({cpu['threads']} threads)",
                          "" if cuda is None else _rate(cuda["steps_per_s"]), ", ".join(result)))
    for failure in report.get("bench_errors", []):
        lines.append(_row("GWG steps/s", failure, "", "", "FAILED"))
    total = report.get("elapsed_s")
    if total is not None:
        over = " (over the time bound)" if total > report["time_limit_s"] else ""
        lines.append(_row("total", f"{report.get('gpu', '?')}, torch {report.get('torch', '?')}, time bound "
                          f"{report['time_limit_s']:.0f} s", "", "",
                          f"{total:.0f} s, {'PASS' if report.get('passed') else 'FAIL'}{over}"))
    return "\n".join(lines) + "\n"


def format_details(report: dict) -> str:
    """Markdown table of every comparison of ``report`` (file, group, metric, both means with their standard
    errors and chain counts, t, df, t_crit, passed), for gpu_check.md; "" when there is none."""
    comparison = (report.get("smoke") or {}).get("comparison")
    if not comparison or not comparison["rows"]:
        return ""
    lines = ["| file | group | metric | CPU mean ± se (n) | CUDA mean ± se (n) | t | df | t_crit | passed |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in comparison["rows"]:
        means = [f"{_fmt(r.get(f'mean_{d}'), 4)} ± {_fmt(r.get(f'se_{d}'), 2)} ({r.get(f'n_{d}') or '-'})"
                 for d in _DEVICES]
        lines.append(_row(r["file"], r.get("group", ""), r["metric"], *means, _fmt(r.get("t")), _fmt(r.get("df")),
                          _fmt(r.get("critical")), "yes" if r["passed"] else "NO: " + (r.get("note") or "")))
    return "\n".join(lines) + "\n"


def _json_safe(value):
    """``value`` with numpy scalars made Python and NaN/inf floats made None (strict JSON)."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    value = _plain(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
