"""Test helpers for real data: where ../shared/data is, and a local HTTP server for download tests.

Download tests only ever reach 127.0.0.1 (this server). The one exception is conftest's ``real_data`` on a
machine WITHOUT ../shared/data (a user's clone): it fetches the real files through gradmc's fetch layer, from
their public URLs (or ``$GRADMC_DATA_BASE_URL``) as the pipeline would, and skips the tests when that fails.
CI has ../shared/data, so it never fetches.

``python tests/_localdata.py MIRROR_DIR`` writes a canonical mirror of ../shared/data (see
:func:`write_canonical_mirror`) and serves it on 127.0.0.1, printing its URL: a stand-in for the internet.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(directory: Path):
    """Serve ``directory`` over HTTP on 127.0.0.1 (a free port); yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def write_canonical_mirror(source: Path, dest: Path, *, convert: bool = True) -> Path:
    """Lay out ``dest`` as the data files' upstream homes would serve them, from ``source`` (../shared/data).

    Files that ``source`` holds in canonical form are copied; the two it holds only as our conversions
    are written back in their canonical formats from the decoded arrays: ``frey_rawface.mat`` (key ``ff``,
    (560, N) uint8) from ``frey_faces_uint8.npz`` and the three ``binarized_mnist_*.amat`` from
    ``binarized_mnist_static.npz``. Their bytes differ from upstream's, their decoded arrays do not:
    exactly what the registry's decoded digests check (``convert=False`` skips them). Returns ``dest``.
    """
    import shutil

    import numpy as np
    from scipy.io import savemat

    dest.mkdir(parents=True, exist_ok=True)
    for rel in ("glass", "mnist", "protein", "omniglot", "ptb"):
        if (source / rel).is_dir():
            shutil.copytree(source / rel, dest / rel, dirs_exist_ok=True)
    if not convert:
        return dest
    with np.load(source / "frey_faces_uint8.npz", allow_pickle=False) as npz:
        images = npz["images"]
    savemat(dest / "frey_rawface.mat", {"ff": images.reshape(images.shape[0], -1).T})
    with np.load(source / "binarized_mnist_static.npz", allow_pickle=False) as npz:
        for split in ("train", "valid", "test"):
            rows = npz[split]
            lines = np.where(rows.astype(bool), "1", "0")
            (dest / f"binarized_mnist_{split}.amat").write_text("\n".join(" ".join(r) for r in lines) + "\n")
    return dest


if __name__ == "__main__":  # python tests/_localdata.py MIRROR_DIR: serve a canonical mirror of ../shared/data
    import sys
    import time

    mirror = write_canonical_mirror(SHARED_DATA, Path(sys.argv[1]))
    with serve(mirror) as url:
        print(url, flush=True)
        while True:
            time.sleep(3600)
