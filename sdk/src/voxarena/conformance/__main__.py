"""``python -m voxarena.conformance ADDRESS``: the same as the ``voxarena-conformance`` script."""

import sys

from .cli import main

sys.exit(main())
