"""Every remappable key binding by its id (config.toml `[keymap]`), and applying a keymap.

    [keymap]
    new_conversation = "ctrl+o"
    toggle_sidebar = "f2,ctrl+b"

Textual replaces the keys of each binding whose id is in the keymap (`App.set_keymap`);
an unknown id is reported once, in the chat, and ignored.
"""

from __future__ import annotations

from collections.abc import Mapping

BINDING_IDS: dict[str, str] = {
    "send": "send the message (Enter)",
    "newline": "new line in the message (Ctrl+J)",
    "cancel_reply": "cancel the streaming reply (Esc)",
    "new_conversation": "new conversation (Ctrl+N)",
    "toggle_sidebar": "show or hide the sidebar (Ctrl+B)",
    "help": "help (F1)",
    "quit": "quit (Ctrl+Q)",
    "close_help": "close the help screen (Esc)",
    "select_message": "select the last message (Ctrl+Up)",
    "message_previous": "on a selected message: the previous one (Up)",
    "message_next": "on a selected message: the next one (Down)",
    "message_pin": "pin the selected message as a memory (p)",
    "message_forget": "forget the selected message's memory point, after a yes (f)",
    "message_copy": "copy the selected message to the clipboard (c)",
    "message_done": "back to the message box (Esc)",
    "confirm_yes": "answer yes to a question (y)",
    "confirm_no": "answer no (n)",
    "candidate_approve": "approve a fact the model wants to remember (a)",
    "candidate_edit": "edit it first (e)",
    "candidate_reject": "reject it (r)",
    "candidate_later": "leave it for later (l)",
}


def split_keymap(keymap: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """(the entries Textual should apply, the unknown ids), keys normalised (no spaces)."""
    known = {
        binding: ",".join(part.strip() for part in keys.split(",") if part.strip())
        for binding, keys in keymap.items()
        if binding in BINDING_IDS
    }
    unknown = sorted(binding for binding in keymap if binding not in BINDING_IDS)
    return known, unknown
