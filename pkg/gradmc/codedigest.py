"""Digests of the gradmc code a pipeline stage or a shard runs, so a rerun recomputes exactly what an edit affects.

Snakemake reruns a job when its params change but does not see edits to imported library code. Each
rule therefore carries ``source_digest(<stage module>)`` as a param: a SHA-256 over the stage module
and every gradmc module it imports, transitively (found by parsing ``import`` statements, not by
importing). A package's ``__init__`` counts only when code imports from the package itself, so
``from gradmc.samplers.discrete.block_gibbs import X`` does not pull in every other sampler.

Digests are of meaning, not bytes: each module enters as its normalised syntax tree
(:func:`normalised_source`): comments, docstrings, other bare string statements and formatting do not
change it, so a typo fixed in a comment reruns nothing and keeps every cached shard. Any change to code
(a name, a constant, an operator, an import) changes it.

``opaque`` modules are hashed themselves but their imports are not followed. The shard cache uses this for
the sampler registry (:func:`gradmc.samplers.discrete.registry.sampler_modules`): a shard's key covers the
experiment's code with the registry itself, plus the modules of the samplers that shard declares, not every
sampler the registry could build.

:func:`code_manifest` gives the per-file digests behind a digest (``gradmc why`` names the files whose
code changed between two runs from them).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path

__all__ = ["PACKAGE_ROOT", "DIGEST_PREFIX", "code_manifest", "digest_of_manifest", "load_manifest", "module_file",
           "normalised_source", "record_manifest", "source_digest", "stage_modules"]

PACKAGE_ROOT = Path(__file__).resolve().parent  # .../pkg/gradmc
#: Prefix of every code digest string (``code:<16 hex>``), so a digest is recognisable among a rule's params.
DIGEST_PREFIX = "code:"


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


def _is_string_statement(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _dump(node) -> object:
    """A JSON-ready form of an AST node: its type and its non-empty fields, positions left out. Empty fields are
    omitted so that a field a newer Python adds empty (``type_params``) does not change the digest."""
    if isinstance(node, ast.AST):
        fields = {}
        for name, value in ast.iter_fields(node):
            if isinstance(value, list):
                value = [v for v in value if not _is_string_statement(v)] if name in ("body", "orelse",
                                                                                        "finalbody") else value
            if value is None or (isinstance(value, list) and not value):
                continue
            fields[name] = _dump(value)
        return [type(node).__name__, fields]
    if isinstance(node, list):
        return [_dump(v) for v in node]
    if isinstance(node, (bytes, complex, float)) or node is Ellipsis:
        return [type(node).__name__, repr(node)]  # JSON cannot hold these exactly; repr keeps 1 != 1.0
    return node


def normalised_source(text: str, filename: str = "<source>") -> bytes:
    """The meaning of Python source ``text``, as bytes: its syntax tree without comments, docstrings and other
    bare string statements (no-ops), positions or formatting.

    Raises:
        SyntaxError: ``text`` is not valid Python.
    """
    tree = ast.parse(text, filename=filename)
    return json.dumps(_dump(tree), separators=(",", ":")).encode("utf-8")


@functools.lru_cache(maxsize=4096)
def _parsed(data: bytes, filename: str) -> tuple[str, tuple[ast.stmt, ...]]:
    """(SHA-256 of the normalised source, the module's statements) of a file's bytes, memoised on the bytes (not
    on the mtime, which a quick edit of the same size may leave unchanged)."""
    text = data.decode("utf-8")
    tree = ast.parse(text, filename=filename)
    return hashlib.sha256(normalised_source(text, filename)).hexdigest(), tuple(tree.body)


def _file_info(path: Path) -> tuple[str, tuple[ast.stmt, ...]]:
    return _parsed(path.read_bytes(), str(path))


#: Modules that import kernel modules by name at run time (``make_sampler``): their dependencies are every
#: module under ``samplers/`` that declares a sampler (:func:`gradmc.sampler_catalog.builtin_modules`).
DYNAMIC_IMPORTERS = ("gradmc.samplers.discrete.registry",)


def _imports(path: Path, root: Path) -> set[str]:
    name = _module_name(path, root)
    package = name.rsplit(".", 1)[0] if path.name != "__init__.py" else name
    found: set[str] = set()
    for statement in _file_info(path)[1]:
        for node in ast.walk(statement):
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
    if name in DYNAMIC_IMPORTERS:  # builds kernels by name: depends on every module that declares one
        from gradmc.sampler_catalog import builtin_modules

        found.update(builtin_modules(root / "samplers"))
    return {name for name in found if name == "gradmc" or name.startswith("gradmc.")}


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = ["gradmc", *rel.parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def stage_modules(*modules: str, root: Path = PACKAGE_ROOT, opaque: Iterable[str] = ()) -> list[Path]:
    """All gradmc source files under ``root`` that ``modules`` depend on (themselves included), sorted.

    Args:
        modules: dotted gradmc module names, the roots.
        root: the gradmc package folder to read.
        opaque: dotted module names whose own file counts but whose imports are not followed.

    Raises:
        ValueError: if a named module is not a gradmc source file.
    """
    root = Path(root)
    stop = {path for name in opaque if (path := module_file(name, root)) is not None}
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
        if path in stop:
            continue
        for name in _imports(path, root):
            dep = module_file(name, root)
            if dep is not None and dep not in seen:
                todo.append(dep)
    return sorted(seen)


def code_manifest(*modules: str, root: Path = PACKAGE_ROOT, opaque: Iterable[str] = (),
                  extra: Iterable[str] = ()) -> dict[str, str]:
    """Relative path -> first 16 hex digits of the normalised-source SHA-256 of each file that
    :func:`stage_modules` finds for ``modules`` (with ``opaque``), plus the full closures of ``extra``; a name
    in ``extra`` outside gradmc (a sampler plugin's module) adds its own file, as ``plugin:<name>``.

    Raises:
        ValueError: a named module is not a gradmc source file.
        SyntaxError: a file that is not valid Python.
    """
    root = Path(root)
    files = set(stage_modules(*modules, root=root, opaque=opaque))
    foreign = sorted(name for name in extra if name != "gradmc" and not name.startswith("gradmc."))
    if extra:
        files |= set(stage_modules(*(name for name in extra if name not in foreign), root=root))
    manifest = {path.relative_to(root).as_posix(): _file_info(path)[0][:16] for path in sorted(files)}
    for name in foreign:  # a sampler plugin's module: its own file
        manifest[f"plugin:{name}"] = _file_info(_foreign_file(name))[0][:16]
    return manifest


def _foreign_file(name: str) -> Path:
    """The source file of module ``name`` outside gradmc (a sampler plugin), found without importing it.

    Raises:
        ValueError: no such module, or one without a Python source file.
    """
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise ValueError(f"{name!r} is not a Python module with a source file (a sampler plugin must be one)")
    return Path(spec.origin)


def digest_of_manifest(manifest: dict[str, str]) -> str:
    """``code:`` and the first 16 hex digits of a SHA-256 over a :func:`code_manifest` (sorted paths)."""
    h = hashlib.sha256()
    for rel in sorted(manifest):
        h.update(rel.encode())
        h.update(b"\0")
        h.update(manifest[rel].encode())
        h.update(b"\0")
    return DIGEST_PREFIX + h.hexdigest()[:16]


def source_digest(*modules: str, root: Path = PACKAGE_ROOT, opaque: Iterable[str] = (),
                  extra: Iterable[str] = ()) -> str:
    """The digest (``code:<16 hex>``) of the code of ``modules``: :func:`digest_of_manifest` of
    :func:`code_manifest`. Equal for any two trees whose files differ only in comments, docstrings or layout.

    ``root`` is the gradmc package folder to read (default: the imported package's own).
    """
    return digest_of_manifest(code_manifest(*modules, root=root, opaque=opaque, extra=extra))


_DIGEST = re.compile(r"code:[0-9a-f]{16}")


def record_manifest(folder: str | Path, manifest: dict[str, str]) -> str | None:
    """Store ``manifest`` as ``<folder>/<digest>.json`` (atomically, once per digest) and return its digest; None
    when it cannot be written (the record only explains later reruns: a read-only folder costs nothing else)."""
    from gradmc.atomic import atomic_path

    digest = digest_of_manifest(manifest)
    path = Path(folder) / f"{digest}.json"
    if path.is_file():
        return digest
    try:
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps(manifest, sort_keys=True, indent=0), encoding="utf-8")
    except OSError:
        return None
    return digest


def load_manifest(folder: str | Path, digest: str) -> dict[str, str] | None:
    """The manifest :func:`record_manifest` stored for ``digest``; None if there is none or it is damaged (its
    content no longer gives ``digest``)."""
    if not _DIGEST.fullmatch(digest):
        return None
    try:
        manifest = json.loads((Path(folder) / f"{digest}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or digest_of_manifest(manifest) != digest:
        return None
    return manifest
