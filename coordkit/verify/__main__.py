"""``python -m coordkit.verify``: the same as ``coordkit verify``."""

from __future__ import annotations

import sys

from coordkit.verify import main

if __name__ == "__main__":
    sys.exit(main())
