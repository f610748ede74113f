"""The one error family and the exit codes every front end shares.

This module imports nothing from skel, so every layer (store, catalog, retriever, service,
command line) may raise these without import cycles. A ``SkelError`` is an expected
failure with a message written for the user: the command line prints it as one line and
exits ``EXIT_ERROR``; anything else that escapes is a bug and is reported as an internal
error. ``kind`` lets a front end that is not a terminal (an MCP server, a program) tell the
failures apart without parsing messages.
"""

from __future__ import annotations

EXIT_OK = 0  # success (suggest: at least one suggestion)
EXIT_NO_SUGGESTION = 1  # suggest ran fine and no skeleton applies: not an error
EXIT_ERROR = 2  # any error, expected or internal
EXIT_INTERRUPTED = 130  # Ctrl-C during a mine (the store stays consistent)


class SkelError(Exception):
    """An expected failure whose message is meant for the user."""

    kind = "error"
    exit_code = EXIT_ERROR


class UsageError(SkelError):
    """Options that contradict each other or a malformed option value."""

    kind = "usage"


class InputError(SkelError):
    """A file, folder or package to work on is missing or cannot be read."""

    kind = "input"


class SuggestError(InputError):
    """The kernel file cannot be analysed (missing, unparsable, no Triton kernel)."""


class StoreError(SkelError):
    """The store is missing, unreadable, of another schema, or unreachable."""

    kind = "store"


class NotFoundError(SkelError):
    """A named thing (a skeleton id) does not exist."""

    kind = "not-found"


class SkeletonError(SkelError):
    """A catalog module is incomplete or inconsistent."""

    kind = "catalog"

