"""An image for a vision model (`/image PATH`): read once, checked to be an image, hashed.

The bytes go only into the chat request (Ollama's `images`, base64 on the wire); the daily
log keeps the path and the sha256 in the message's metadata (`image`, `image_sha256`), so
the log says what was shown without holding a copy of it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""Larger files are refused: a vision model scales images down to a few hundred pixels, and
the request (base64, a third larger) would hold the whole file in memory twice."""

_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
    (b"BM", "bmp"),
)


class ImageError(ValueError):
    """The file cannot be attached; `str()` is one line naming the path and why."""


@dataclass(frozen=True, slots=True)
class ImageAttachment:
    """One image file, read: where it came from, its hash and kind, and its bytes."""

    path: Path
    sha256: str
    kind: str
    data: bytes = field(repr=False)

    @property
    def size(self) -> int:
        return len(self.data)

    def log_extra(self) -> dict[str, str]:
        """What the daily log keeps of it (the message's metadata): path and hash."""
        return {"image": str(self.path), "image_sha256": self.sha256}


def image_kind(data: bytes) -> str | None:
    """`png`, `jpeg`, `gif`, `webp` or `bmp` from the file's first bytes; None otherwise."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    for signature, kind in _SIGNATURES:
        if data.startswith(signature):
            return kind
    return None


def read_image(raw_path: str, *, base: Path | None = None) -> ImageAttachment:
    """Read `raw_path` (`~` expanded, relative to `base` or the working directory).

    Raises `ImageError` for a missing, unreadable, too large or non-image file."""
    text = raw_path.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]  # a path pasted with quotes
    if not text:
        raise ImageError("no image path given")
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    try:
        if not path.exists():
            raise ImageError(f"no such file: {path}")
        if path.is_dir():
            raise ImageError(f"{path} is a folder, not an image")
        if not path.is_file():  # a FIFO blocked the read, /dev/zero filled the memory
            raise ImageError(f"{path} is not a regular file, not an image")
        with path.open("rb") as file:
            data = file.read(MAX_IMAGE_BYTES + 1)  # bounded: a huge file is not read whole
            size = max(len(data), os.fstat(file.fileno()).st_size)
        if len(data) > MAX_IMAGE_BYTES:
            raise ImageError(
                f"{path} is {size / 2**20:.1f} MiB; images up to "
                f"{MAX_IMAGE_BYTES // 2**20} MiB can be attached"
            )
    except PermissionError as error:
        raise ImageError(f"cannot read {path}: permission denied") from error
    except OSError as error:
        raise ImageError(f"cannot read {path}: {error.strerror or error}") from error
    kind = image_kind(data)
    if kind is None:
        raise ImageError(f"{path} is not an image (PNG, JPEG, GIF, WebP or BMP)")
    return ImageAttachment(path, hashlib.sha256(data).hexdigest(), kind, data)
