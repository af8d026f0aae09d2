"""The chat screen's model: which one this session talks to (`/model`, the models screen's
choice), whether it can chat, and its thinking (`/think`).

`ChatScreen` (tui/screens/chat_screen.py) builds on this; the sidebar and the memory screens
are `ChatNavigation`'s, the selected message `ChatSelection`'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.screens.chat_selection import ChatSelection

if TYPE_CHECKING:
    from agent.gateway_values import OllamaStatus


class ChatModels(ChatSelection):
    """The session's chat model and thinking setting."""

    model: str  # set by ChatScreen from the settings, changed by `switch_model`
    ollama_status: OllamaStatus | None  # the last check of Ollama, None before the first

    def models_text(self) -> str:
        status = self.ollama_status
        if status is None or not status.reachable:
            return f"Model: {self.model}. Ollama is offline, so the pulled models are unknown."
        chat = ", ".join(status.chat_models) or "none"
        return f"Model: {self.model}. Pulled chat models: {chat}. `/model NAME` switches."

    def _cannot_chat(self, name: str) -> str | None:
        """Why Ollama says model `name` cannot chat (an embedding model), or None."""
        from agent.model_catalog import cannot_chat

        caps = self.ollama_status.capabilities_of(name) if self.ollama_status else None
        return cannot_chat(name, caps)

    def chat_refusal(self) -> str | None:
        """The line that refuses a message when Ollama says this session's model cannot chat
        (an embedding model given by --model, STRAYLIGHT_MODEL or config.toml), or None."""
        refusal = self._cannot_chat(self.model)
        if refusal is None:
            return None
        return f"{refusal}; `/model NAME` switches to one that can (`/model` lists them)."

    async def switch_model(self, name: str) -> None:
        refusal = self._cannot_chat(name)  # like c on the models screen and `ask --model`
        if refusal is not None:
            await self.notice(
                f"{refusal}; `/model` lists the pulled models that can.", kind="error"
            )
            return
        self.model = name
        scheduler = self.straylight.scheduler
        if scheduler is not None:  # the dream (nightly, `/dream`) asks the session's model too
            scheduler.runner.ctx.model = name
        pulled = self.ollama_status.has_model(name) if self.ollama_status else None
        if self.ollama_status is not None and not self.ollama_status.reachable:
            pulled = None
        self.publish_sidebar(model=name, model_pulled=pulled)
        note = f"Model for this session: {name}."
        if pulled is False:
            note += (
                f" It is not pulled: run `ollama pull {name}` or `straylight pull {name}`"
                " (F8 pulls it here)."
            )
        await self.notice(note, kind="warning" if pulled is False else "info")

    async def set_think(self, argument: str) -> None:
        """`/think VALUE` sets the `think` field for this session; `/think` shows it."""
        from agent.settings_models import parse_think
        from tui.commands import usage

        if argument:
            try:
                value = parse_think(argument)
            except ValueError:
                await self.notice(f"Usage: {usage('/think')}", kind="error")
                return
            self.engine.think = value if isinstance(value, bool | str) else None
        await self.notice(_think_text(self.engine.think))


def _think_text(think: bool | str | None) -> str:
    if think is None:
        return "Thinking: unset, the model decides (`/think true|false|low|medium|high`)."
    shown = str(think).lower() if isinstance(think, bool) else think
    return f"Thinking: {shown}, sent to models that can think."
