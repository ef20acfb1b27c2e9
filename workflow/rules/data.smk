# Data stage: prepared data sets as cached outputs with a JSON manifest.


rule prepare_mnist:
    output:
        npz=f"{RESULTS}/data/mnist.npz",
        manifest=f"{RESULTS}/data/mnist.npz.json",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.data.prepare"),
        spec=config["data"]["mnist"],
    log:
        f"{LOGS}/prepare_mnist.log",
    message:
        "Preparing binarized MNIST from source '{params.spec[source]}'"
    conda:
        ENV_FILE
    shell:
        "gradmc data prepare mnist --config {params.config} --out {output.npz} > {log} 2>&1"


rule prepare_image_dataset:
    output:
        npz=f"{RESULTS}/data/images/{{dataset}}.npz",
        manifest=f"{RESULTS}/data/images/{{dataset}}.npz.json",
    wildcard_constraints:
        dataset="static_mnist|dynamic_mnist|omniglot|caltech|frey|histopathology",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.data.prepare_images"),
        spec=lambda wildcards: config["data"]["images"][wildcards.dataset],
        download="--download" if config["data"].get("download", False) else "",
    log:
        f"{LOGS}/prepare_image_{{dataset}}.log",
    message:
        "Preparing image data set {wildcards.dataset} (GWG Table 2) with {params.spec}"
    conda:
        ENV_FILE
    shell:
        "gradmc data prepare {wildcards.dataset} --config {params.config} {params.download} --out {output.npz} "
        "> {log} 2>&1"
