"""The chat's keys and slash commands, each declared once.

`CHAT_KEYS` becomes the chat screen's bindings (and their palette entries); `SLASH_COMMANDS`
becomes the router's table (tui/screens/chat_screen.py), the palette entries, the usage
lines the commands print, and the help screen's "Slash commands" section. What a binding id
means for `[keymap]` is in tui/keymap.py (every screen's ids, not only the chat's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from textual.binding import Binding

Runner = Literal[
    "help",
    "new",
    "model",
    "think",
    "dream",
    "memory",
    "fact",
    "hypothesis",
    "conversation",
    "image",
]


@dataclass(frozen=True, slots=True)
class ChatKey:
    """A key of the chat screen: its binding id (remappable), key, action and Footer label;
    `palette` is its (title, help) in Ctrl+P, if it has an entry there."""

    id: str
    key: str
    action: str
    label: str
    show: bool = True
    priority: bool = False
    palette: tuple[str, str] | None = None

    def binding(self) -> Binding:
        return Binding(
            self.key, self.action, self.label, show=self.show, priority=self.priority, id=self.id
        )


@dataclass(frozen=True, slots=True)
class SlashCommand:
    """A slash command: `usage` is its one line (usage errors quote it); `opens` is the chat
    action it runs without an argument; `runs` what runs it otherwise (None: with an argument
    it is unknown); `palette` its (title, help) in Ctrl+P; `help` its lines on the help
    screen (empty where another command's lines cover it, in the help's order); `bare` a
    command that takes no argument (one given is refused, the text kept in the box); `verbs`
    the words an argument must start with (another is refused, the text kept in the box;
    `list` takes nothing after it)."""

    name: str
    usage: str
    runs: Runner | None = None
    opens: str | None = None
    palette: tuple[str, str] | None = None
    help: str = ""
    bare: bool = False
    verbs: tuple[str, ...] = ()


CHAT_KEYS: tuple[ChatKey, ...] = (
    # quit and help are the app's (every screen has them); here too, for the Footer's order
    ChatKey("quit", "ctrl+q", "app.quit", "Quit", priority=True),
    ChatKey(
        "cancel_reply",
        "escape",
        "cancel_reply",
        "Cancel",
        palette=("Cancel reply", "Stop the reply that is streaming"),
    ),
    ChatKey(
        "new_conversation",
        "ctrl+n",
        "new_conversation",
        "New chat",
        palette=("New conversation", "Start a new conversation"),
    ),
    ChatKey(
        "toggle_sidebar",
        "ctrl+b",
        "toggle_sidebar",
        "Sidebar",
        palette=("Toggle sidebar", "Show or hide the status sidebar"),
    ),
    ChatKey("help", "f1", "app.help", "Help"),
    ChatKey("select_message", "ctrl+up", "select_message(0)", "Select message", show=False),
    ChatKey("open_memory_browser", "f2", "open_memory_browser", "Memory"),
    ChatKey("open_facts", "f3", "open_facts", "Facts"),
    ChatKey("open_candidates", "f4", "open_candidates", "Candidates", show=False),
    ChatKey("open_hypotheses", "f5", "open_hypotheses", "Hypotheses", show=False),
    ChatKey(
        "open_models",
        "f8",
        "open_models",
        "Models",
        show=False,
        palette=("Models", "Pulled models: pull, delete, use for chat or embeddings (F8)"),
    ),
    ChatKey("open_conversations", "ctrl+o", "open_conversations", "Chats", show=False),
    ChatKey("edit_longterm", "ctrl+g", "edit_longterm", "longterm.md", show=False),
    ChatKey(
        "focus_recalled",
        "ctrl+r",
        "focus_recalled",
        "Recalled hits",
        show=False,
        palette=("Recalled hits", "Go to the last prompt's recalled hits (Ctrl+R)"),
    ),
)

_COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand(
        "/help", "show keys and commands", "help", help="- `/help` — this help", bare=True
    ),
    SlashCommand(
        "/new",
        "start a new conversation",
        "new",
        help="- `/new` — start a new conversation (the log keeps the old one)",
        bare=True,
    ),
    SlashCommand(
        "/model",
        "/model NAME switches the chat model; /model alone lists pulled models",
        "model",
        help="- `/model NAME` — chat with another model for this session; `/model` alone lists "
        "the pulled ones;\n  `/think true|false|low|medium|high` — thinking "
        "(**t** on a reply shows it)",
    ),
    SlashCommand(
        "/think",
        "/think true|false|low|medium|high sets thinking for this session; /think alone shows it",
        "think",
    ),
    SlashCommand(
        "/image",
        "/image PATH attaches an image to your next message (vision models); /image off drops it",
        "image",
        help="- `/image PATH` — an image for your next message, for models that can see "
        "(`/image off` drops it)",
    ),
    SlashCommand(
        "/remember",
        "/remember TEXT pins a memory",
        "memory",
        help="- `/remember TEXT` · `/forget ID` · `/recall QUERY` · `/memstatus` · "
        "`/import PATH` — memories;\n  `/recall` alone opens the memory browser",
    ),
    SlashCommand("/forget", "/forget ID deletes a memory point", "memory"),
    SlashCommand(
        "/recall",
        "/recall QUERY shows what would be recalled; /recall alone opens the browser",
        "memory",
        opens="open_memory_browser",
        palette=("Memory browser", "Search, filter, pin and forget memory points (F2)"),
    ),
    SlashCommand(
        "/memstatus",
        "memory counts, index and RAM headroom",
        "memory",
        palette=("Memory status", "Points, index, RAM estimate and headroom"),
        bare=True,
    ),
    SlashCommand(
        "/import", "/import PATH ingests a Markdown file as pinned doc memories", "memory"
    ),
    SlashCommand(
        "/fact",
        "/fact set KEY TYPE BODY [--scope global] [--proof TEXT]; /fact get|retire|undo KEY",
        "fact",
        help="- `/fact set KEY TYPE BODY [--scope global] [--proof TEXT]` — write a fact now\n"
        "- `/fact get|retire|undo KEY` — read, retire, undo; `/facts` opens the facts screen,\n"
        "  `/facts list` prints them here",
    ),
    SlashCommand(
        "/facts",
        "opens the facts screen; /facts list prints this workspace's and the global ones",
        "fact",
        opens="open_facts",
        verbs=("list",),
        palette=("Facts", "Facts by type, status and workspace: edit, retire, revive (F3)"),
    ),
    SlashCommand(
        "/candidates",
        "opens the candidates screen; /candidates list | approve ID [BODY] | reject ID",
        "fact",
        opens="open_candidates",
        verbs=("list", "approve", "reject"),
        palette=("Fact candidates", "Approve, edit or reject what waits for approval (F4)"),
        help="- `/candidates` — the candidates screen; `/candidates list`, `approve ID [BODY]`, "
        "`reject ID`",
    ),
    SlashCommand(
        "/hypotheses",
        "opens the hypotheses screen; /hypotheses list | validate|refute|delete ID",
        "hypothesis",
        opens="open_hypotheses",
        verbs=("list", "validate", "refute", "delete"),
        palette=("Hypotheses", "The dream's cards, overdue first: validate, refute (F5)"),
        # the help names /dream first: the cards come from it
        help="- `/dream` — run the dream now: at most one hypothesis card\n"
        "- `/hypotheses` — the cards' screen, overdue first; "
        "`/hypotheses list|validate|refute|delete ID`",
    ),
    SlashCommand(
        "/dream",
        "run the dream now: at most one hypothesis card from related memories",
        "dream",
        palette=("Dream now", "At most one hypothesis card from related memories"),
        bare=True,
    ),
    SlashCommand(
        "/conversations",
        "the daily logs by day and conversation: read one, continue it",
        opens="open_conversations",
        palette=("Conversations", "The daily logs: read one, continue it (Ctrl+O)"),
        help="- `/conversations` — the daily logs by day: read one, continue it · `/longterm` "
        "— edit\n  longterm.md",
    ),
    SlashCommand(
        "/title",
        "/title TEXT names this conversation; /title alone shows its title",
        "conversation",
        help="- `/title TEXT` · `/system TEXT` (`--clear`) — this conversation's title and system\n"
        "  prompt · `/retry` (or **r** on the last reply) regenerates the last reply; **Up** in\n"
        "  an empty box (or **e** on your last message) edits and resends it",
    ),
    SlashCommand(
        "/system",
        "/system TEXT sets this conversation's system prompt; /system alone shows it; "
        "/system --clear removes it",
        "conversation",
    ),
    SlashCommand(
        "/retry",
        "regenerate the last reply (the old one stays in the log, marked superseded)",
        "conversation",
        palette=("Retry", "Regenerate the last reply"),
        bare=True,
    ),
    SlashCommand(
        "/longterm",
        "edit longterm.md in $VISUAL / $EDITOR (the TUI waits)",
        opens="edit_longterm",
        palette=("Edit longterm.md", "Open longterm.md in $VISUAL / $EDITOR (Ctrl+G)"),
    ),
)
SLASH_COMMANDS: dict[str, SlashCommand] = {command.name: command for command in _COMMANDS}
CHAT_ONLY_ACTIONS = frozenset(  # the chat screen's own: off (and not in its Footer) under others
    key.action.partition("(")[0] for key in CHAT_KEYS if not key.action.startswith("app.")
)


def usage(name: str) -> str:
    """The usage line of a slash command (`Usage: …` errors quote it)."""
    return SLASH_COMMANDS[name].usage


def slash_help() -> str:
    """The help screen's "Slash commands" section, in the commands' order."""
    return "\n".join(command.help for command in _COMMANDS if command.help)


def palette_commands() -> tuple[tuple[str, str, str], ...]:
    """(command, title, help) of every slash command with a palette entry."""
    return tuple(
        (command.name, *command.palette) for command in _COMMANDS if command.palette is not None
    )
