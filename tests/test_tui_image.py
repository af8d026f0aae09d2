"""`/image PATH` against the Ollama stand-in: the image rides on the next message to a vision
model (base64 in `images`), the daily log keeps its path and sha256 but not its bytes; a
model without vision, and a missing, unreadable or non-image file, are named in one line."""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent.image_attachment import ImageError, image_kind, read_image
from agent.settings import Settings
from tests.support.ollama_standin import OllamaStandIn
from tests.support.pilot_helpers import notices, type_text, wait_until
from tui.app import StraylightApp
from tui.widgets.chat_message import ChatMessage

SIZE = (110, 32)
# A real 1x1 PNG (its bytes are what the request must carry)
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture
def srv() -> Iterator[OllamaStandIn]:
    with OllamaStandIn(models=("llava", "llama3.2", "nomic-embed-text"), embed_dim=8) as server:
        yield server


@pytest.fixture
def picture(tmp_path: Path) -> Path:
    path = tmp_path / "pictures" / "cat.png"
    path.parent.mkdir()
    path.write_bytes(PNG)
    return path


async def command(pilot, line: str) -> None:
    await type_text(pilot, line)
    await pilot.press("enter")


def settings_for(make_settings: Callable[..., Settings], srv: OllamaStandIn, model: str):
    return make_settings(ollama_host=srv.host, jobs_enabled=False, model=model)


async def test_the_image_goes_with_the_next_message_and_the_log_keeps_path_and_hash(
    make_settings: Callable[..., Settings], srv: OllamaStandIn, picture: Path, home: Path
) -> None:
    app = StraylightApp(settings_for(make_settings, srv, "llava"))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.chat.ollama_status is not None, what="status")
        await command(pilot, f"/image {picture}")
        await wait_until(pilot, lambda: app.chat.pending_image is not None, what="attached")
        assert any("cat.png (png, 70 B) goes with your next message" in n for n in notices(app))
        srv.script_reply("A single pixel.")
        await command(pilot, "what is in this picture")
        await wait_until(
            pilot, lambda: [m.status for m in app.query(ChatMessage)][-1:] == ["complete"]
        )
        assert app.chat.pending_image is None  # one message only
        request = srv.chat_requests()[-1]
        user = request["messages"][-1]
        assert user["content"] == "what is in this picture"
        assert user["images"] == [base64.b64encode(PNG).decode()]
        assert srv.chat_outcomes()[-1].images == 1
        srv.clear_requests()
        await command(pilot, "and now")  # the next message carries no image
        await wait_until(pilot, lambda: bool(srv.chat_requests()) and not app.replying)
        assert all("images" not in m for m in srv.chat_requests()[-1]["messages"])
    log_text = "".join(p.read_text() for p in (home / "conversation").glob("*.md"))
    assert str(picture) in log_text
    assert hashlib.sha256(PNG).hexdigest() in log_text
    assert base64.b64encode(PNG).decode() not in log_text


async def test_a_model_without_vision_gets_a_one_line_refusal(
    make_settings: Callable[..., Settings], srv: OllamaStandIn, picture: Path
) -> None:
    app = StraylightApp(settings_for(make_settings, srv, "llama3.2"))
    async with app.run_test(size=SIZE) as pilot:
        await command(pilot, f"/image {picture}")
        await wait_until(pilot, lambda: any("cannot see" in n for n in notices(app)))
        refusal = next(n for n in notices(app) if "cannot see" in n)
        assert refusal == (
            "llama3.2 cannot see images (capabilities: completion, tools); switch to a "
            "vision model (e.g. `/model llava`) first."
        )
        assert app.chat.pending_image is None


async def test_switching_to_a_blind_model_drops_the_image_with_a_notice(
    make_settings: Callable[..., Settings], srv: OllamaStandIn, picture: Path
) -> None:
    app = StraylightApp(settings_for(make_settings, srv, "llava"))
    async with app.run_test(size=SIZE) as pilot:
        await command(pilot, f"/image {picture}")
        await wait_until(pilot, lambda: app.chat.pending_image is not None, what="attached")
        await command(pilot, "/model llama3.2")
        await command(pilot, "hello")
        await wait_until(pilot, lambda: bool(srv.chat_requests()) and not app.replying)
        assert all("images" not in m for m in srv.chat_requests()[-1]["messages"])
        assert any(n.startswith("The image cat.png was not sent: llama3.2") for n in notices(app))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("missing.png", "no such file: {path}"),
        ("folder", "{path} is a folder, not an image"),
        ("notes.txt", "{path} is not an image (PNG, JPEG, GIF, WebP or BMP)"),
    ],
)
async def test_a_bad_file_is_named(
    make_settings: Callable[..., Settings],
    srv: OllamaStandIn,
    tmp_path: Path,
    name: str,
    expected: str,
) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "notes.txt").write_text("not a picture")
    path = tmp_path / name
    app = StraylightApp(settings_for(make_settings, srv, "llava"))
    async with app.run_test(size=SIZE) as pilot:
        await command(pilot, f"/image {path}")
        line = "Cannot attach the image: " + expected.format(path=path)
        await wait_until(pilot, lambda: line in notices(app), what=line)
        assert app.chat.pending_image is None


async def test_image_alone_and_off(
    make_settings: Callable[..., Settings], srv: OllamaStandIn, picture: Path
) -> None:
    app = StraylightApp(settings_for(make_settings, srv, "llava"))
    async with app.run_test(size=SIZE) as pilot:
        await command(pilot, "/image")
        await wait_until(pilot, lambda: any("No image attached" in n for n in notices(app)))
        await command(pilot, f"/image {picture}")
        await wait_until(pilot, lambda: app.chat.pending_image is not None)
        await command(pilot, "/image off")
        await wait_until(pilot, lambda: "Image dropped." in notices(app))
        assert app.chat.pending_image is None


def test_read_image_hashes_and_checks_the_bytes(tmp_path: Path, picture: Path) -> None:
    image = read_image(str(picture))
    assert (image.kind, image.size, image.data) == ("png", len(PNG), PNG)
    assert image.log_extra() == {
        "image": str(picture),
        "image_sha256": hashlib.sha256(PNG).hexdigest(),
    }
    relative = read_image("'pictures/cat.png'", base=tmp_path)  # quotes of a pasted path
    assert relative.path == picture
    assert image_kind(b"\xff\xd8\xff\xe0rest") == "jpeg"
    assert image_kind(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "webp"
    assert image_kind(b"%PDF-1.7") is None


def test_a_fifo_or_a_device_is_refused_without_reading_it(tmp_path: Path) -> None:
    """`/image` of a FIFO blocked its read for good; of /dev/zero it read until memory ran
    out. Only a regular file is read, and at most the size limit of it."""
    import threading

    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    said: list[str] = []

    def attach() -> None:
        try:
            read_image(str(fifo))
        except ImageError as error:
            said.append(str(error))

    reader = threading.Thread(target=attach, daemon=True)
    reader.start()
    reader.join(timeout=3)
    if reader.is_alive():  # blocked on the FIFO: let it go before failing
        with fifo.open("wb"):
            pass
        reader.join(timeout=3)
        pytest.fail("read_image blocked on a FIFO")
    assert said == [f"{fifo} is not a regular file, not an image"]
    with pytest.raises(ImageError, match="not a regular file"):
        read_image("/dev/zero")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_named(picture: Path) -> None:
    picture.chmod(0)
    try:
        with pytest.raises(ImageError, match="permission denied"):
            read_image(str(picture))
    finally:
        picture.chmod(0o600)


async def test_a_retry_shows_the_model_the_same_image_again(
    make_settings: Callable[..., Settings], srv: OllamaStandIn, picture: Path
) -> None:
    """/retry (and an edit) sent the message again without its picture: the model was asked
    about an image it never got. The log's path and hash bring it back; a changed file not."""
    app = StraylightApp(settings_for(make_settings, srv, "llava"))
    async with app.run_test(size=SIZE) as pilot:
        await command(pilot, f"/image {picture}")
        await wait_until(pilot, lambda: app.chat.pending_image is not None, what="attached")
        await command(pilot, "what is in this picture")
        await wait_until(pilot, lambda: len(srv.chat_requests()) == 1 and not app.replying)
        await app.engine.drain()
        await command(pilot, "/retry")
        await wait_until(pilot, lambda: len(srv.chat_requests()) == 2 and not app.replying)
        sent = srv.chat_requests()[-1]["messages"][-1]
        assert sent["content"] == "what is in this picture"
        assert sent["images"] == [base64.b64encode(PNG).decode()]
        assert app.chat.pending_image is None
        await app.engine.drain()
        picture.write_bytes(PNG + b"\0")  # changed on disk since: not sent as if it were
        await command(pilot, "/retry")
        await wait_until(pilot, lambda: len(srv.chat_requests()) == 3 and not app.replying)
        assert "images" not in srv.chat_requests()[-1]["messages"][-1]
        assert any("changed since it was sent" in n for n in notices(app))


def test_an_image_over_the_cap_is_refused_with_its_size(tmp_path: Path) -> None:
    big = tmp_path / "huge.png"
    with big.open("wb") as file:
        file.truncate(25 * 2**20)  # sparse: 25 MiB on paper, nothing on disk
    with pytest.raises(ImageError) as refused:
        read_image(str(big))
    assert str(refused.value) == f"{big} is 25.0 MiB; images up to 20 MiB can be attached"
