# results/<config>/claims.md: every claim of the papers listed in EXPERIMENTS.md, measured as an effect with a 95%
# interval, PASS/FAIL/INCONCLUSIVE, and the dashboard (forest plot) figures/claims_dashboard.{png,pdf}. One input per
# claims module (gradmc.claims.base.claims_modules: an experiment folder's claims.py, or gradmc.claims.<stage> of a
# hand-written stage): that experiment's results/<config>/<experiment>/metrics.parquet.
from gradmc.claims.base import claims_modules as _claims_modules  # noqa: E402

_CLAIMS_MODULES = _claims_modules()
_CLAIMS_INPUTS = {name: f"{RESULTS}/{name}/metrics.parquet" for name in _CLAIMS_MODULES}
# claims modules that read no metrics (exact computations, e.g. GWG Theorem 1), computed with the others
from gradmc.claims.base import THEORY as _THEORY_CLAIMS  # noqa: E402


rule claims:
    input:
        **_CLAIMS_INPUTS,
    output:
        md=report(f"{RESULTS}/claims.md", caption="../report/claims.rst", category="Claims"),
        csv=f"{RESULTS}/claims.csv",
        parquet=f"{RESULTS}/claims.parquet",
        dashboard=report(f"{RESULTS}/figures/claims_dashboard.png", caption="../report/claims_dashboard.rst",
                         category="Claims"),
        dashboard_pdf=f"{RESULTS}/figures/claims_dashboard.pdf",
    params:
        code=digest("gradmc.claims.base", "gradmc.claims.stats", "gradmc.figures.claims_dashboard",
                    *_CLAIMS_MODULES.values(), *(f"gradmc.claims.{name}" for name in _THEORY_CLAIMS)),
        dashboard=lambda wildcards, output: output.dashboard.removesuffix(".png"),
        prefix=lambda wildcards, output: output.md.removesuffix(".md"),
        metrics=lambda wildcards, input: " ".join(f"{name}={path}" for name, path in input.items()),
        name=config["name"],
        # each claim reads its needs (sizes, hardware) from the config: any config change re-judges them (seconds)
        config=_canonical(config),
    log:
        f"{LOGS}/claims.log",
    message:
        "Checking the papers' claims against the measured metrics"
    shell:
        f"gradmc claims --metrics {{params.metrics}} --config {CONFIG_FILE} --config-name {{params.name}} "
        "--out {params.prefix} "
        "--dashboard {params.dashboard} "
        "2>&1 | joblog {log} claims"
