"""Digests of the gradmc source a pipeline stage uses, so Snakemake reruns exactly what a code edit affects.

Snakemake reruns a job when its params change but does not see edits to imported library code. Each
rule therefore carries ``source_digest(<stage module>)`` as a param: a SHA-256 over the stage module
and every gradmc module it imports, transitively (found by parsing ``import`` statements, not by
importing). A package's ``__init__`` counts only when code imports from the package itself, so
``from gradmc.samplers.discrete.block_gibbs import X`` does not pull in every other sampler.
Touching a file without changing its content changes nothing.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

__all__ = ["PACKAGE_ROOT", "module_file", "stage_modules", "source_digest"]

PACKAGE_ROOT = Path(__file__).resolve().parent  # .../pkg/gradmc


def module_file(name: str, root: Path = PACKAGE_ROOT) -> Path | None:
    """Source file of gradmc module ``name`` (``gradmc.a.b``), or None if it is not a gradmc module."""
    parts = name.split(".")
    if parts[0] != "gradmc":
        return None
    base = root.joinpath(*parts[1:])
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _imports(path: Path, root: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    name = _module_name(path, root)
    package = name.rsplit(".", 1)[0] if path.name != "__init__.py" else name
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # submodules imported by name
    return {name for name in found if name == "gradmc" or name.startswith("gradmc.")}


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = ["gradmc", *rel.parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def stage_modules(*modules: str, root: Path = PACKAGE_ROOT) -> list[Path]:
    """All gradmc source files under ``root`` that ``modules`` depend on (themselves included), sorted.

    Raises:
        ValueError: if a named module is not a gradmc source file.
    """
    todo, seen = [], set()
    for name in modules:
        path = module_file(name, root)
        if path is None:
            raise ValueError(f"{name!r} is not a module under {root}")
        todo.append(path)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _imports(path, root):
            dep = module_file(name, root)
            if dep is not None and dep not in seen:
                todo.append(dep)
    return sorted(seen)


def source_digest(*modules: str, root: Path = PACKAGE_ROOT) -> str:
    """First 16 hex digits of a SHA-256 over the relative paths and contents of :func:`stage_modules`.

    ``root`` is the gradmc package folder to read (default: the imported package's own).
    """
    root = Path(root)
    h = hashlib.sha256()
    for path in stage_modules(*modules, root=root):
        h.update(str(path.relative_to(root)).encode())
        h.update(b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]
