"""Open a file in the user's editor: $VISUAL, then $EDITOR, then nano or vi on PATH.

The caller suspends the TUI around `edit_file`, so the editor owns the terminal."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

FALLBACK_EDITORS = ("nano", "vi")


class EditorError(Exception):
    """No editor to run, or the editor failed; the message is one line for the user."""


def editor_command(environ: Mapping[str, str] | None = None) -> list[str]:
    """The editor's argv: `$VISUAL` or `$EDITOR` split like a shell would (`code -w`)."""
    env = os.environ if environ is None else environ
    for name in ("VISUAL", "EDITOR"):
        value = env.get(name, "").strip()
        if value:
            try:
                argv = shlex.split(value)
            except ValueError as error:
                raise EditorError(f"${name} is not a valid command ({error})") from error
            if argv:
                return argv
    for fallback in FALLBACK_EDITORS:
        if shutil.which(fallback):
            return [fallback]
    raise EditorError("no editor found: set $EDITOR (for example `export EDITOR=nano`)")


def edit_file(path: Path, environ: Mapping[str, str] | None = None) -> None:
    """Run the editor on `path` and wait for it; EditorError when it cannot run or fails."""
    argv = editor_command(environ)
    if shutil.which(argv[0]) is None:
        raise EditorError(f"editor {argv[0]!r} not found on PATH: set $EDITOR")
    try:
        code = subprocess.run([*argv, str(path)], check=False).returncode
    except OSError as error:
        raise EditorError(f"cannot run {argv[0]}: {error.strerror or error}") from error
    if code != 0:
        raise EditorError(f"{argv[0]} exited with status {code}; {path.name} is as it left it")
