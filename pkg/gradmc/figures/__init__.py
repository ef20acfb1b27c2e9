"""One function per paper figure/table. Figures read Parquet only and write PDF, PNG and a table."""

__all__: list[str] = []
