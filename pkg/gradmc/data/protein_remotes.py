"""Registry entries (``RemoteFile``) for the protein data sets of the GWG paper's A6 experiment (Sec. 5.4,
Appendix H): the public persistent-vi files that :mod:`gradmc.proteins.loaders` reads.

``PROTEIN_FILES`` maps each entry's key to it; :mod:`gradmc.data.catalog` merges them into
``registry.REGISTRY`` for ``gradmc data`` downloads.
"""

from __future__ import annotations

from gradmc.data.registry import RemoteFile

__all__ = ["PROTEIN_FILES"]

_PVI = "https://raw.githubusercontent.com/debbiemarkslab/persistent-vi/master/potts"
_PVI_GITHUB = "https://github.com/debbiemarkslab/persistent-vi/raw/master/potts"
_NOTE = "Ingraham & Marks 2017 (persistent-vi repository); sha256 and size from ../shared/data/MANIFEST.tsv"


def _remote(name: str, filename: str, url_path: str, sha256: str, size: int) -> RemoteFile:
    return RemoteFile(name=name, relpath=f"protein/persistent-vi/{filename}", url=f"{_PVI}/{url_path}",
                      mirrors=(f"{_PVI_GITHUB}/{url_path}",),
                      sha256=sha256, size=size, source_note=_NOTE)


#: Canonical files (add to gradmc.data.registry.REGISTRY for `gradmc data` downloads).
PROTEIN_FILES: dict[str, RemoteFile] = {
    "pf00018_a2m": _remote("pf00018_a2m", "PF00018.a2m", "protein_data/PF00018.a2m",
                           "7756c08bb3fd71cda6823d95e0a6c2cb0491c61248cc74ab0630332e2eb0e484", 720066),
    "pf00018_summary": _remote("pf00018_summary", "PF00018_summary.txt", "protein_data/PF00018_summary.txt",
                               "cdc21f7906c9777f3393e872a8326ad97c77c2906f2b95e5c52740596eff315b", 184184),
    "potts_synthetic": _remote("potts_synthetic", "original_dataset.mat", "original_dataset.mat",
                               "99dc9c243e909e59054e1455b6ecd7a6f2b27040972ba0cf56108b55739c6bb2", 3650997),
    "potts_chain": _remote("potts_chain", "chain_50.mat", "chain_50.mat",
                           "7a3537ae268ec092db87367fb91a561bfb856e58de57751e3ab299f12703ee5a", 17831),
}
