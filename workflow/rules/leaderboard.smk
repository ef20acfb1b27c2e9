# The sampler leaderboard: ESS per second and per energy evaluation of every sampler that the sampling
# experiments ran, under our protocol and DISCS's, with 95% intervals over seeds. Inputs: the metrics of the
# experiments in gradmc.specs.leaderboard.SOURCES, the list the figure checks them by (a sampler added to their
# config appears without code; the module imports no matplotlib).
from gradmc.specs.leaderboard import SOURCES as _LEADERBOARD_SOURCES  # noqa: E402

_LEADERBOARD_INPUTS = {name: f"{RESULTS}/{name}/metrics.parquet" for name in _LEADERBOARD_SOURCES}


rule figure_leaderboard:
    input:
        **_LEADERBOARD_INPUTS,
    output:
        pdf=f"{RESULTS}/figures/sampler_leaderboard.pdf",
        png=report(f"{RESULTS}/figures/sampler_leaderboard.png", caption="../report/sampler_leaderboard.rst",
                   category="Samplers after GWG"),
        csv=f"{RESULTS}/tables/sampler_leaderboard.csv",
        md=report(f"{RESULTS}/tables/sampler_leaderboard.md", caption="../report/sampler_leaderboard.rst",
                  category="Tables"),
    params:
        code=digest("gradmc.figures.leaderboard", "gradmc.claims.stats"),
        prefix=lambda wildcards, output: output.pdf.removesuffix(".pdf"),
        table=lambda wildcards, output: output.csv.removesuffix(".csv"),
        metrics=lambda wildcards, input: " ".join(f"{name}={path}" for name, path in input.items()),
        config_name=config["name"],
    log:
        f"{LOGS}/figure_leaderboard.log",
    message:
        "Ranking the samplers (ESS per second and per energy evaluation, ours and DISCS's protocol)"
    shell:
        "gradmc figure leaderboard --metrics {params.metrics} --config-name {params.config_name} "
        "--out {params.prefix} --table-out {params.table} 2>&1 | joblog {log} figure_leaderboard"
