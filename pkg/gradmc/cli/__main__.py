"""``python -m gradmc.cli``: the same as the ``gradmc`` console script."""

import sys

from gradmc.cli import main

sys.exit(main())
