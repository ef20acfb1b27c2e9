# GWG paper Sec. 5.4, Fig. 7, 12, 13, Appendix H (EXPERIMENTS.md A6): Potts models of protein alignments by
# PLM, PCD-Gibbs and PCD-GWG; contact precision / recall from ||J_ij||, coupling-norm maps. Every (protein,
# method) shard loads its alignment from the data folder ($GRADMC_DATA_DIR, checked before any work); Ray.
POTTS_PROTEINS_DIR = f"{RESULTS}/potts_proteins"
ALL_TARGETS += [
    f"{RESULTS}/figures/fig7_potts_contacts.pdf",
    f"{RESULTS}/figures/fig7_potts_contacts_couplings.pdf",
    f"{RESULTS}/tables/fig7_potts_contacts.md",
    f"{POTTS_PROTEINS_DIR}/metrics.parquet",
]
CLAIMS_INPUTS["potts_proteins"] = f"{POTTS_PROTEINS_DIR}/metrics.parquet"


rule potts_proteins:
    input:
        config_data_inputs("potts_proteins"),
    output:
        f"{POTTS_PROTEINS_DIR}/metrics.parquet",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.experiments.potts_proteins", "gradmc.distributed", "gradmc.results"),
        spec=config["potts_proteins"],
        device=config["device"],
    log:
        f"{LOGS}/potts_proteins.log",
    message:
        "Fitting Potts models to {params.spec[proteins]} with {params.spec[methods]}: PCD "
        "{params.spec[pcd][num_iterations]} iterations x {params.spec[pcd][num_steps]} steps on Ray"
    threads: workflow.cores
    resources:
        ray_drivers=1,  # capped by the ray-cluster profile
    shell:
        "gradmc run potts_proteins --config {params.config} --workers {threads} --out {output} "
        "2>&1 | joblog {log} potts_proteins"


rule figure_potts_proteins:
    input:
        rules.potts_proteins.output[0],
    output:
        pdf=f"{RESULTS}/figures/fig7_potts_contacts.pdf",
        png=report(f"{RESULTS}/figures/fig7_potts_contacts.png", caption="../report/fig7_potts_contacts.rst",
                   category="GWG paper"),
        couplings_pdf=f"{RESULTS}/figures/fig7_potts_contacts_couplings.pdf",
        couplings_png=report(f"{RESULTS}/figures/fig7_potts_contacts_couplings.png",
                             caption="../report/fig7_potts_contacts.rst", category="GWG paper"),
        csv=f"{RESULTS}/tables/fig7_potts_contacts.csv",
        md=report(f"{RESULTS}/tables/fig7_potts_contacts.md", caption="../report/fig7_potts_contacts.rst",
                  category="Tables"),
    params:
        code=digest("gradmc.figures.potts_proteins"),
        prefix=lambda wildcards, output: output.pdf.removesuffix(".pdf"),
        table=lambda wildcards, output: output.csv.removesuffix(".csv"),
        name=config["name"],
    log:
        f"{LOGS}/figure_potts_proteins.log",
    message:
        "Drawing GWG Fig. 7 / 12 (contact recall and precision) and Fig. 13 (coupling norms)"
    shell:
        "gradmc figure potts_proteins --metrics {input} --config-name {params.name} --out {params.prefix} "
        "--table-out {params.table} 2>&1 | joblog {log} figure_potts_proteins"
