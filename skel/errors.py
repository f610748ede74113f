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

# `skel verify`: one code per verdict, so a script can tell the outcomes apart. 1 stays
# "no suggestion" (suggest's) and 2 stays "error", for every command.
EXIT_NO_EFFECT = 3  # same results, speed difference inside the noise floor
EXIT_SLOWER = 4  # same results, slower beyond the noise floor
EXIT_WRONG = 5  # different results from the reference, or a cheat caught
EXIT_NOT_APPLIED = 6  # the change is not there: does not parse, technique absent, or a no-op
EXIT_TESTS_FAILED = 7  # the project's own tests fail with the candidate in place
EXIT_FAILED = 8  # the candidate does not compile or launch

# `skel apply`: why no candidate was written, one code each (0 = written, 2 = error).
EXIT_NOT_APPLICABLE = 9  # the technique is already present, or the kernel has nothing the codemod rewrites
EXIT_NO_CODEMOD = 10  # the skeleton has no mechanical codemod: apply its template by hand
EXIT_NO_SUCH_KERNEL = 11  # the file has no Triton kernel of that name

#: verdict (skel.store.evidence.VERDICTS) -> exit code of `skel verify`
VERDICT_EXIT = {
    "faster": EXIT_OK, "correct": EXIT_OK, "no-effect": EXIT_NO_EFFECT, "slower": EXIT_SLOWER,
    "wrong": EXIT_WRONG, "not-applied": EXIT_NOT_APPLIED, "no-op": EXIT_NOT_APPLIED,
    "tests-failed": EXIT_TESTS_FAILED, "failed": EXIT_FAILED,
}


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


class NoKernelError(SuggestError):
    """The file parses but holds no kernel to judge: ordinary for most files a pre-commit
    hook sees, so ``skel hook`` skips it where it reports the other errors."""

    kind = "no-kernel"


class StoreError(SkelError):
    """The store is missing, unreadable, of another schema, or unreachable."""

    kind = "store"


class NotFoundError(SkelError):
    """A named thing (a skeleton id) does not exist."""

    kind = "not-found"


class VerifyError(SkelError):
    """A verification that cannot conclude: nothing could be checked (say why), or the
    harness itself is inconsistent (the original fails its own reference everywhere)."""

    kind = "verify"


class SkeletonError(SkelError):
    """A skeleton folder is incomplete or inconsistent."""

    kind = "catalog"


class NotApplicableError(SkelError):
    """``skel apply``: the codemod has nothing to do on this kernel (``EXIT_NOT_APPLICABLE``)."""

    kind = "not-applicable"
    exit_code = EXIT_NOT_APPLICABLE


class AlreadyPresentError(NotApplicableError):
    """``skel apply``: the skeleton's own detector already sees the technique in the kernel."""

    kind = "already-present"


class NothingToRewriteError(NotApplicableError):
    """``skel apply``: the kernel holds nothing the codemod rewrites (no `tl.exp`, no
    `acc += tl.dot(...)`, ...)."""

    kind = "nothing-to-rewrite"


class NoCodemodError(NotFoundError):
    """``skel apply``: the skeleton has no ``codemod.py``; its template is applied by hand."""

    kind = "no-codemod"
    exit_code = EXIT_NO_CODEMOD


class NoSuchKernelError(InputError):
    """``skel apply``: the file parses but holds no Triton kernel of the name asked for."""

    kind = "no-such-kernel"
    exit_code = EXIT_NO_SUCH_KERNEL
