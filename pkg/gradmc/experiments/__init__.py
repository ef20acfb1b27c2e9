"""One module per paper figure/table: ``shards(config, ...)`` and ``run(shard) -> tidy DataFrame``."""

__all__: list[str] = []
