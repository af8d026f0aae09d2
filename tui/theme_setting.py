"""The Textual theme chosen in the palette, kept in config.toml as `theme = "NAME"`.

Only that one line is written: the rest of the file, its order and its comments stay byte for
byte. tomlkit (a format-preserving TOML library) is not a dependency, and one top-level key
needs no new one, so this is a careful line edit: replace the existing top-level `theme =`
line (keeping a trailing comment), or add one before the first `[table]` (top-level keys must
come before any table), or at the end. The result is parsed back with `tomllib` before it
replaces the file (temp file, then `os.replace`); a file that would not parse is left alone.
A config.toml that is a symbolic link (a dotfiles repo) is edited where the link points, so the
link stays a link.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

_TABLE_RE = re.compile(r"^\s*\[")
# the setting's keys: `theme` or its environment name, any case (settings.read_config_file
# accepts both, and refuses a file that has both)
_THEME_KEY = r"(?i:theme|straylight_theme)"
_THEME_RE = re.compile(rf"^(\s*){_THEME_KEY}\s*=")
_VALUE_AND_COMMENT_RE = re.compile(
    rf"""^\s*{_THEME_KEY}\s*=\s*(?:"(?:[^"\\]|\\.)*"|'[^']*'|[^#\s]*)\s*(#.*)?$"""
)


class ThemeSaveError(Exception):
    """The config file could not be read, parsed or written; the message is one line."""


def with_theme(text: str, name: str) -> str:
    """`text` (a config.toml) with its top-level `theme` set to `name`, nothing else changed."""
    line = f"theme = {json.dumps(name)}"
    lines = text.splitlines(keepends=True)
    first_table = next((i for i, raw in enumerate(lines) if _TABLE_RE.match(raw)), len(lines))
    for index in range(first_table):
        match = _THEME_RE.match(lines[index])
        if match is None:
            continue
        ending = "\n" if lines[index].endswith("\n") else ""
        kept = _VALUE_AND_COMMENT_RE.match(lines[index].rstrip("\r\n"))
        comment = f"  {kept.group(1)}" if kept is not None and kept.group(1) else ""
        lines[index] = f"{match.group(1)}{line}{comment}{ending}"
        return "".join(lines)
    if first_table < len(lines):
        return "".join([*lines[:first_table], line + "\n", *lines[first_table:]])
    if text and not text.endswith("\n"):
        text += "\n"
    return f"{text}{line}\n"


def save_theme(config_path: Path, name: str) -> None:
    """Write `theme = "name"` into `config_path` (created if missing, mode 0600); through a
    symbolic link, into the file it names."""
    config_path = Path(os.path.realpath(config_path))
    try:
        text = config_path.read_text(encoding="utf-8") if config_path.exists() else ""
    except (OSError, UnicodeDecodeError) as error:
        raise ThemeSaveError(f"cannot read {config_path}: {error}") from None
    updated = with_theme(text, name)
    try:
        parsed = tomllib.loads(updated)
    except tomllib.TOMLDecodeError as error:
        raise ThemeSaveError(f"{config_path} is not valid TOML; theme not saved: {error}") from None
    if parsed.get("theme") != name:
        raise ThemeSaveError(f"{config_path}: could not set the theme line; theme not saved")
    try:
        config_path.parent.mkdir(parents=True, exist_ok=True)
        mode = config_path.stat().st_mode & 0o777 if config_path.exists() else 0o600
        temp = config_path.with_name(f".{config_path.name}.theme-tmp")
        descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        os.fchmod(descriptor, mode)  # the file's own mode, whatever the umask (the data dir's
        # database narrows this process's umask: `keep_new_files_private`)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(updated)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, config_path)
    except OSError as error:
        raise ThemeSaveError(f"cannot write {config_path}: {error.strerror or error}") from None
