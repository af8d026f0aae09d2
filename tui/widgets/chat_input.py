"""The message box: multi-line; Enter sends, Ctrl+J (or Shift+Enter) starts a new line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea

from tui.keymap import binding_keys, key_label, split_keymap

SEND_KEYS = frozenset({"enter"})
NEWLINE_KEYS = frozenset({"ctrl+j", "shift+enter", "alt+enter"})


def key_hints(app: object) -> tuple[str, str, str]:
    """(send, new line, help) as the hints name them, the app's `[keymap]` applied (read
    from its settings: the hints are made before the app's mount applies it): a remapped
    send key is not "Enter" any more."""
    settings = getattr(app, "settings", None)
    keymap = split_keymap(settings.keymap)[0] if settings is not None else {}
    return (
        key_label(keymap, "send", "Enter"),
        key_label(keymap, "newline", "Ctrl+J"),
        key_label(keymap, "help", "F1"),
    )


def input_hint(app: object) -> str:
    """The empty message box's placeholder."""
    send, newline, help_key = key_hints(app)
    return f"Message — {send} sends, {newline} new line, {help_key} help"


class ChatInput(TextArea):
    """A TextArea that submits on Enter."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # First in the Footer, so that at 80 columns, where the Footer is cut, F1 (every key
        # and screen: F2–F5, Ctrl+O, Ctrl+R) is still there; the same id as the chat's F1.
        Binding("f1", "app.help", "Keys", id="help"),
        Binding("enter", "submit", "Send", id="send", show=True, priority=False),
        Binding("ctrl+j", "newline", "New line", id="newline", show=False),
    ]

    @dataclass
    class Submitted(Message):
        """The user pressed Enter with this text; the receiver clears the box if it accepts it."""

        input: ChatInput
        text: str

    @dataclass
    class EditLast(Message):
        """Up in an empty box: the user wants their last message back, to edit and resend."""

        input: ChatInput

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            placeholder=input_hint(None),
        )

    def on_mount(self) -> None:
        self.placeholder = input_hint(self.app)

    def _keys_of(self, binding_id: str, default: frozenset[str]) -> frozenset[str]:
        """The keys of `send` or `newline`: config.toml's [keymap] as the app applied it
        (Textual keeps it in `App._keymap`; it has no public getter), else the defaults."""
        keys = self.app._keymap.get(binding_id)
        return frozenset(binding_keys(keys)) if keys else default

    async def _on_key(self, event: events.Key) -> None:
        # TextArea takes Enter for a newline before any binding sees it: the box's own keys
        # are handled here first, as the keymap says.
        if event.key in self._keys_of("send", SEND_KEYS):
            event.stop()
            event.prevent_default()
            self.action_submit()
            return
        if event.key == "up" and not self.text:
            event.stop()
            event.prevent_default()
            self.post_message(self.EditLast(self))
            return
        if event.key in self._keys_of("newline", NEWLINE_KEYS):
            event.stop()
            event.prevent_default()
            self.action_newline()
            return
        await super()._on_key(event)

    @classmethod
    def own_keys(cls) -> list[tuple[str, str]]:
        """(name, keys) of every binding of the box, TextArea's editing keys included: it has
        the focus while you type and its keys come first, so a chat key remapped onto one of
        them (Ctrl+K, F6) would never run. Named by id where it has one, else by action."""
        return [
            (binding.id or f"the message box's {binding.action.split('(')[0]}", binding.key)
            for binding in (*TextArea.BINDINGS, *cls.BINDINGS)
            if isinstance(binding, Binding)
        ]

    def action_submit(self) -> None:
        text = self.text
        if text.strip():
            self.post_message(self.Submitted(self, text))

    def action_newline(self) -> None:
        start, end = self.selection
        self.replace("\n", start, end, maintain_selection_offset=False)
