"""skel as a Model Context Protocol server (`skel serve`): an adapter over ``skel.api``,
like the command line beside it.

``server`` builds the server with the official ``mcp`` SDK, ``tools`` answers each tool
from the service API, ``roots`` keeps every file read under the directories the server was
given, and ``verify`` runs `skel verify` in a child process (kernel code never runs in the
server). Importing this package imports nothing heavy; ``mcp`` is imported by ``server``.
"""
