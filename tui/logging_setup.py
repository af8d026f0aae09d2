"""Send every log record to `straylight.log` in the data dir, never to the screen."""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
from pathlib import Path

from store.private_files import ensure_private_dir, open_private


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating handler whose new files are 0600 too, after every rollover."""

    def _open(self) -> io.TextIOWrapper:
        fd = open_private(Path(self.baseFilename), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        return os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)

    def handleError(self, record: logging.LogRecord) -> None:
        """A record that cannot be written (disk full, file gone) is dropped. The default
        prints a traceback to stderr for every record, which would land on the user's
        screen; whatever failed for the user is reported by the command itself."""
        self.failed_records += 1

    failed_records = 0  # records dropped because the log file could not be written


class MaskingFormatter(logging.Formatter):
    """Secrets in a record (a server's error text, a traceback's message) are masked before
    the line reaches the file, like every other text Straylight keeps."""

    def format(self, record: logging.LogRecord) -> str:
        from memory.secret_masking import mask_secrets

        return mask_secrets(super().format(record))


def setup_file_logging(log_file: Path, level: int = logging.INFO, *, delay: bool = False) -> None:
    """Route the root logger to a rotating 0600 file; quiet chatty libraries. `delay`: the
    file is opened (and created) only by the first record (a reading command's error)."""
    ensure_private_dir(log_file.parent)
    handler = PrivateRotatingFileHandler(
        log_file, maxBytes=2_000_000, backupCount=3, encoding="utf-8", delay=delay
    )
    handler.setFormatter(
        MaskingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%S")
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("httpx", "httpcore", "asyncio", "markdown_it"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def silence_logging() -> None:
    """No log file (read-only commands without a data dir): drop records, never print them."""
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(logging.NullHandler())
