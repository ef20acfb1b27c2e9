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
