"""``python -m evaldelta``: the same as the ``evaldelta`` command."""

from __future__ import annotations

import sys

from evaldelta.cli import main

if __name__ == "__main__":
    sys.exit(main())
