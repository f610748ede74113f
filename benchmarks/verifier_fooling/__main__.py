"""``python -m benchmarks.verifier_fooling``: see runner.py."""

import sys

from benchmarks.verifier_fooling.runner import main

sys.exit(main())
