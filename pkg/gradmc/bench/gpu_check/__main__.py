"""``python -m gradmc.bench.gpu_check`` (``make gpu-check``): see :mod:`gradmc.bench.gpu_check`."""

import sys

from gradmc.bench.gpu_check.cli import main

sys.exit(main())
