"""The `skel` console script: a Ctrl-C while skel is still starting is an exit 130 too.

``skel.cli`` turns a Ctrl-C into one line and exit 130 once a command runs, but starting
takes a while (click, the service API, the error family; more with a cold disk cache),
and a Ctrl-C in that window surfaced as a Python traceback from the middle of an import.
This module is all the console script imports first, and it imports nothing of its own
but the test-only hook, so the window left is Python's own start-up.
"""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130  # as skel.errors says; importing skel.errors here would widen the window


def main() -> None:
    try:
        # imported inside the try on purpose: a Ctrl-C during these imports is caught here
        from skel.store import faults

        faults.slow_start()
        from skel.cli import main as cli_main  # inside the guard too: the CLI's imports are most of the start-up
    except KeyboardInterrupt:
        sys.stderr.write("skel: interrupted while starting; nothing was done.\n")
        raise SystemExit(EXIT_INTERRUPTED) from None
    cli_main()


if __name__ == "__main__":
    main()
