"""Every remappable key binding by its id (config.toml `[keymap]`), and applying a keymap.

    [keymap]
    new_conversation = "ctrl+t"
    toggle_sidebar = "f12,ctrl+b"

Textual replaces the keys of each binding whose id is in the keymap (`App.set_keymap`);
an unknown id is reported once, in the chat, and ignored, and so is a key two of the chat's
bindings would share (only one of them would run).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

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
    "message_thinking": "open or fold the selected reply's thinking (t)",
    "message_done": "back to the message box (Esc)",
    "message_retry": "on the last reply: regenerate it (r)",
    "message_edit": "on the last user message: edit and resend it (e)",
    "confirm_yes": "answer yes to a question (y)",
    "confirm_no": "answer no (n)",
    "candidate_approve": "approve a fact the model wants to remember (a)",
    "candidate_edit": "edit it first (e)",
    "candidate_reject": "reject it (r)",
    "candidate_later": "leave it for later (l)",
    "open_memory_browser": "the memory browser (F2)",
    "open_facts": "the facts screen (F3)",
    "open_candidates": "the candidates screen (F4)",
    "open_hypotheses": "the hypotheses screen (F5)",
    "open_conversations": "the conversations screen (Ctrl+O)",
    "edit_longterm": "edit longterm.md in $VISUAL / $EDITOR (Ctrl+G)",
    "focus_recalled": "go to the last prompt's recalled hits in the sidebar (Ctrl+R)",
    "hit_open": "on a recalled hit: open it in the memory browser (Enter)",
    "hit_forget": "on a recalled hit: forget it, after a yes (f)",
    "screen_close": "close a memory screen (Esc)",
    "browser_search": "memory browser: focus the search box (/)",
    "browser_pin": "memory browser: pin or unpin the point (p)",
    "browser_forget": "memory browser: forget the point, after a yes (f)",
    "browser_role": "memory browser: cycle the role filter (r)",
    "browser_pinned": "memory browser: pinned only on/off (o)",
    "browser_dates": "memory browser: edit the date range (d)",
    "facts_edit": "facts: edit the highlighted fact's body and type (e)",
    "facts_retire": "facts: retire it, after a yes (r)",
    "facts_revive": "facts: make a retired or stale fact active again (v)",
    "facts_type": "facts: cycle the type filter (t)",
    "facts_status": "facts: cycle the status filter (s)",
    "facts_workspace": "facts: cycle the workspace filter (w)",
    "facts_change_type": "facts: change the highlighted fact's type (Ctrl+T)",
    "edit_cancel": "facts, candidates: leave the one-line editor without saving (Esc)",
    "hypothesis_validate": "hypotheses: validate the card (v)",
    "hypothesis_refute": "hypotheses: refute it (x)",
    "hypothesis_delete": "hypotheses: delete it, after a yes (d)",
    "conversation_open": "conversations: read the highlighted one full-width (Enter)",
    "conversation_continue": "conversations: continue it in the chat (c)",
    "conversation_rename": "conversations: rename the highlighted one (r)",
    "conversation_delete": "conversations: delete it, after a yes (d)",
    "conversation_export": "conversations: export it as Markdown (e)",
    "open_models": "the models screen (F8)",
    "models_pull": "models: type a model name to pull (p)",
    "models_delete": "models: delete the highlighted model, after a yes (d)",
    "models_use_chat": "models: chat with the highlighted model this session (c)",
    "models_use_embedding": "models: embed with it this session, after a yes (e)",
    "models_refresh": "models: read the list again (r)",
}


def binding_keys(keys: str) -> list[str]:
    """The keys of one `[keymap]` entry or binding, `"f2, ctrl+b"` → `["f2", "ctrl+b"]`."""
    return [part.strip() for part in keys.split(",") if part.strip()]


def key_label(keymap: Mapping[str, str], binding_id: str, default: str) -> str:
    """How a hint names the key of `binding_id`: the first key `[keymap]` gives it
    (`"ctrl+s"` → `Ctrl+S`), else `default` (the hint's own words for the default keys)."""
    keys = binding_keys(keymap.get(binding_id, ""))
    if not keys:
        return default
    return "+".join(_key_part(part) for part in keys[0].split("+"))


def _key_part(part: str) -> str:
    if len(part) == 1 or (part[:1] == "f" and part[1:].isdigit()):
        return part.upper()
    return part.capitalize()


def split_keymap(keymap: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """(the entries Textual should apply, the unknown ids), keys normalised (no spaces)."""
    known = {
        binding: ",".join(binding_keys(keys))
        for binding, keys in keymap.items()
        if binding in BINDING_IDS
    }
    unknown = sorted(binding for binding in keymap if binding not in BINDING_IDS)
    return known, unknown


def key_conflicts(defaults: Iterable[tuple[str, str]], keymap: Mapping[str, str]) -> list[str]:
    """`KEY: id, id` for each key that two of these bindings ((id, default keys), one
    screen's) would share once `keymap` (as `split_keymap` keeps it) is applied."""
    owners: dict[str, list[str]] = {}
    for binding, default in defaults:
        for key in (key.lower() for key in binding_keys(keymap.get(binding, default))):
            if binding not in owners.setdefault(key, []):
                owners[key].append(binding)
    return [f"{key}: {', '.join(ids)}" for key, ids in owners.items() if len(ids) > 1]
