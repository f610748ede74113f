"""``python -m benchmarks.evidence.verify_suite``: the suite's command line (the code is in ``__init__.py``)."""

import sys

from benchmarks.evidence.verify_suite import main

sys.exit(main())
