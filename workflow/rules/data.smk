# Data stage: every registered data file has a fetch rule (gradmc data fetch, pooch, checksummed) writing into
# the data folder ($GRADMC_DATA_DIR, else the user cache); prepared data sets are cached outputs with a JSON
# manifest. A file already in the data folder (fetched earlier, or placed by hand) is not fetched again, and an
# accepted alternative that is present (binarized_mnist_static.npz, frey_faces_uint8.npz) is read instead.
for _remote in _catalog.fetchable_files():

    rule:
        name:
            f"fetch_{_remote.name}"
        output:
            str(DATA_DIR / _remote.relpath),
        params:
            name=_remote.name,
        log:
            f"{LOGS}/fetch_{_remote.name}.log",
        message:
            f"Fetching {_remote.filename} into {DATA_DIR} (checksummed)"
        priority: DATA_PRIORITY
        shell:
            "gradmc data fetch {params.name} 2>&1 | joblog {log} fetch {params.name}"


rule prepare_mnist:
    input:
        data_inputs(*_catalog.config_datasets({"data": {"mnist": config["data"]["mnist"]}})),
    output:
        npz=f"{RESULTS}/data/mnist.npz",
        manifest=f"{RESULTS}/data/mnist.npz.json",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.data.prepare"),
        spec=config["data"]["mnist"],
    benchmark:
        f"{RESULTS}/benchmarks/prepare_mnist.tsv"
    log:
        f"{LOGS}/prepare_mnist.log",
    message:
        "Preparing binarized MNIST from source '{params.spec[source]}'"
    priority: DATA_PRIORITY
    shell:
        "gradmc data prepare mnist --config {params.config} --out {output.npz} 2>&1 | joblog {log} prepare_mnist"


rule prepare_image_dataset:
    input:
        lambda wildcards: data_inputs(
            *_catalog.image_datasets(wildcards.dataset, config["data"]["images"].get(wildcards.dataset, {}))
        ),
    output:
        npz=f"{RESULTS}/data/images/{{dataset}}.npz",
        manifest=f"{RESULTS}/data/images/{{dataset}}.npz.json",
    wildcard_constraints:
        dataset="static_mnist|dynamic_mnist|omniglot|caltech|frey|histopathology",
    params:
        config=CONFIG_FILE,
        code=digest("gradmc.data.prepare_images"),
        spec=lambda wildcards: config["data"]["images"][wildcards.dataset],
    benchmark:
        f"{RESULTS}/benchmarks/prepare_image_dataset_{{dataset}}.tsv"
    log:
        f"{LOGS}/prepare_image_{{dataset}}.log",
    message:
        "Preparing image data set {wildcards.dataset} (GWG Table 2) with {params.spec}"
    priority: DATA_PRIORITY
    shell:
        "gradmc data prepare {wildcards.dataset} --config {params.config} --out {output.npz} "
        "2>&1 | joblog {log} prepare_image_dataset {wildcards.dataset}"
