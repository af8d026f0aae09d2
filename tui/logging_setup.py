"""Send every log record to `straylight.log` in the data dir, never to the screen."""

from __future__ import annotations

import logging
import logging.handlers
import os
from pathlib import Path

from store.private_files import FILE_MODE, ensure_private_dir


def setup_file_logging(log_file: Path, level: int = logging.INFO) -> None:
    """Route the root logger to a rotating 0600 file; quiet chatty libraries."""
    ensure_private_dir(log_file.parent)
    if not log_file.exists():
        os.close(os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE))
    handler = logging.handlers.RotatingFileHandler(
        log_file, maxBytes=2_000_000, backupCount=3, encoding="utf-8"
    )
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%S")
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("httpx", "httpcore", "asyncio", "markdown_it"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
