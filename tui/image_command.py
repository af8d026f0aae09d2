"""`/image PATH`: an image for the next message, when the chat model can see (`vision` in its
`/api/show` capabilities). The file is read and checked in a thread; a missing, unreadable or
non-image file is named in one line, and so is a model without vision. `/image` alone says
what is attached; `/image off` drops it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.image_attachment import ImageAttachment
    from tui.screens.chat_screen import ChatScreen
    from tui.screens.chat_turn import ChatTurn

OFF_WORDS = frozenset({"off", "none", "clear"})


async def vision_refusal(chat: ChatTurn, model: str) -> str | None:
    """None when `model` can see images; otherwise the one line that says it cannot."""
    capabilities = await chat.engine.gateway.capabilities(model)
    if capabilities is None:
        return (
            f"Cannot attach an image: Ollama did not say what {model} can do "
            "(is it pulled, is Ollama up?)."
        )
    if "vision" not in capabilities:
        shown = ", ".join(capabilities) or "none"
        return (
            f"{model} cannot see images (capabilities: {shown}); switch to a vision model "
            "(e.g. `/model llava`) first."
        )
    return None


async def run_image_command(chat: ChatScreen, argument: str) -> None:
    """Attach, show or drop the image of the next message."""
    from agent.image_attachment import ImageError, read_image
    from tui.commands import usage

    pending = chat.pending_image
    if not argument:
        if pending is None:
            await chat.notice(f"No image attached. Usage: {usage('/image')}")
        else:
            await chat.notice(f"📎 {_described(pending)} goes with your next message.")
        return
    if argument.lower() in OFF_WORDS:
        chat.pending_image = None
        await chat.notice("Image dropped." if pending else "No image was attached.")
        return
    refusal = await vision_refusal(chat, chat.model)
    if refusal is not None:
        await chat.notice(refusal, kind="error")
        return
    try:
        image = await asyncio.to_thread(read_image, argument)
    except ImageError as error:
        await chat.notice(f"Cannot attach the image: {error}", kind="error")
        return
    chat.pending_image = image
    replaced = " (it replaces the one attached before)" if pending is not None else ""
    await chat.notice(
        f"📎 {_described(image)} goes with your next message{replaced}; `/image off` drops it."
    )


async def image_for_turn(chat: ChatTurn) -> ImageAttachment | None:
    """The attached image, taken for the message being sent; dropped with a notice when the
    chat model changed to one that cannot see."""
    image, chat.pending_image = chat.pending_image, None
    if image is None:
        return None
    refusal = await vision_refusal(chat, chat.model)
    if refusal is not None:
        await chat.notice(f"The image {image.path.name} was not sent: {refusal}", kind="error")
        return None
    return image


def _described(image: ImageAttachment) -> str:
    from tui.cli_models import human_bytes

    return f"{image.path} ({image.kind}, {human_bytes(image.size)})"
