"""The `straylight` console script: `tui.cli.entry`, with Ctrl+C during start-up (while the
modules load, before the command's own handling) ending in one line and exit 130 instead of
a traceback."""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130


def main() -> None:
    try:
        from tui.cli import entry

        entry()
    except KeyboardInterrupt:
        sys.stderr.write("straylight: interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
