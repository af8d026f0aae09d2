"""F8 / the palette: the models Ollama has, and what to do with them.

A table of the pulled models (`/api/tags` + `/api/show` + `/api/ps`): capabilities, context
window, size on disk, and for a loaded model the memory it holds. Keys: p pull a model by
name (the box under the table; Enter starts it) · d delete the highlighted model (asks y/n)
· c use it as the chat model · e use it as the embedding model (embedding models only; asks
y/n) · r re-read · Esc closes. A pull runs as an app worker (tui/model_pulls.py): its bar
moves while you chat, and closing this screen does not stop it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import DataTable, Input, ProgressBar, Static

from tui.display_text import counted
from tui.screens.confirm_screen import ConfirmScreen
from tui.screens.memory_screen import MemoryScreen
from tui.screens.model_rows import COLUMNS, capabilities_width, model_cells, name_width

if TYPE_CHECKING:
    from textual.events import Resize

    from agent.model_catalog import ModelRecord
    from tui.app import StraylightApp
    from tui.model_pulls import PullState

log = logging.getLogger("straylight.tui")


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """What the screen closed with: use `name` as the chat or the embedding model."""

    role: Literal["chat", "embedding"]
    name: str


@dataclass
class ModelsListed(Message):
    """The list worker finished: the records, or why Ollama could not list them."""

    records: list[ModelRecord]
    error: str | None


@dataclass
class PullChanged(Message):
    """A pull moved on (posted by the pull's watcher; the widgets change in the handler)."""

    state: PullState


@dataclass
class ModelDeleted(Message):
    name: str
    error: str | None


class ModelsScreen(MemoryScreen[ModelChoice | None]):
    """The pulled models: pull, delete, use as the chat or the embedding model."""

    TITLE_TEXT: ClassVar[str] = "Models"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "pull", "Pull", id="models_pull"),
        Binding("d", "delete", "Delete", id="models_delete"),
        Binding("c", "use_chat", "Use for chat", id="models_use_chat"),
        Binding("e", "use_embedding", "Use for embeddings", id="models_use_embedding"),
        Binding("r", "reload", "Refresh", id="models_refresh"),
    ]
    DEFAULT_CSS = """
    ModelsScreen #models-table {
        height: 1fr;
    }
    ModelsScreen #models-pull {
        height: auto;
        padding: 0 1;
    }
    ModelsScreen #models-pull-name {
        width: 1fr;
    }
    ModelsScreen #models-pull-bar {
        width: 30;
        padding: 1 0 0 1;
    }
    ModelsScreen #models-pull-line {
        height: 1;
        padding: 0 1;
        color: $text-muted;
    }
    """

    def __init__(self, app: StraylightApp, *, pull: str | None = None) -> None:
        super().__init__()
        self.straylight = app
        self.pull_name = pull
        self.records: list[ModelRecord] = []
        self.loaded = False

    # ---- layout ------------------------------------------------------------------------
    def compose_body(self) -> ComposeResult:
        table: DataTable[Text] = DataTable(id="models-table", cursor_type="row", zebra_stripes=True)
        yield table
        with Horizontal(id="models-pull"):
            yield Input(
                value=self.pull_name or "",
                placeholder="p: a model to pull, e.g. qwen3:8b — Enter pulls",
                id="models-pull-name",
            )
            yield ProgressBar(total=100, show_eta=False, id="models-pull-bar")
        yield Static("", id="models-pull-line")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        self.query_one(ProgressBar).display = False
        self.say("Reading the models from Ollama…")
        pulls = self.straylight.model_pulls
        pulls.watch(self._watch_pull)
        running = pulls.running()
        if running:
            self._show_pull(running[-1])
        if self.pull_name:
            self.query_one(Input).focus()
            self.say(f"Enter pulls {self.pull_name} · Esc closes")
        else:
            table.focus()
        self.reload()

    def on_unmount(self) -> None:
        self.straylight.model_pulls.unwatch(self._watch_pull)

    # ---- reading the list -----------------------------------------------------------------
    @work(exclusive=True, group="models-list", exit_on_error=False)
    async def reload(self) -> None:
        from agent.gateway_errors import GatewayError
        from agent.model_catalog import list_models

        try:
            gateway = self.straylight.gateway
            records = await list_models(gateway.client(), timeout=gateway.connect_timeout)
        except GatewayError as error:
            self.post_message(ModelsListed([], str(error)))
            return
        self.post_message(ModelsListed(records, None))

    def on_models_listed(self, message: ModelsListed) -> None:
        self.loaded = True
        if message.error is not None:
            self.say(message.error, error=True)
            return
        self.records = message.records
        self._fill_table()
        if not self.pull_name or self.focused is not self.query_one(Input):
            count = len(self.records)
            self.say(
                f"{counted(count, 'model')} pulled · p pull · d delete · c chat · e embeddings"
                if count
                else "No models pulled yet: p, then a name (e.g. llama3.2), Enter."
            )

    def _fill_table(self) -> None:
        table: DataTable[Text] = self.query_one(DataTable)
        row = table.cursor_row
        chat = self.straylight.chat.model
        embed = self.straylight.settings.memory.embed_model
        width = table.scrollable_content_region.width
        rows = [model_cells(record, chat=chat, embed=embed) for record in self.records]
        narrowed = capabilities_width(rows, width)
        if narrowed is not None:  # too wide: first without `completion`, then cut with …
            rows = [model_cells(r, chat=chat, embed=embed, short=True) for r in self.records]
            narrowed = capabilities_width(rows, width)
        names = name_width(rows, width, narrowed)  # then the long names give way, with …
        widths = {"capabilities": narrowed, "model": names}
        table.clear(columns=True)
        for heading in COLUMNS:
            table.add_column(heading, width=widths.get(heading))
        for record, cells in zip(self.records, rows, strict=True):
            table.add_row(*cells, key=record.name)
        if self.records:
            table.move_cursor(row=min(max(row, 0), len(self.records) - 1))

    def on_resize(self, _event: Resize) -> None:
        if self.records:  # the capabilities column gives way to fit the new width
            self.call_after_refresh(self._fill_table)

    def action_reload(self) -> None:
        self.say("Reading the models from Ollama…")
        self.reload()

    def highlighted(self) -> ModelRecord | None:
        table = self.query_one(DataTable)
        if not self.records or table.cursor_row < 0 or table.cursor_row >= len(self.records):
            return None
        return self.records[table.cursor_row]

    # ---- pulling -------------------------------------------------------------------------
    def action_pull(self) -> None:
        box = self.query_one(Input)
        box.focus()
        self.say("Type a model name, Enter pulls it (it goes on while you chat).")

    @on(Input.Submitted, "#models-pull-name")
    def start_pull(self, event: Input.Submitted) -> None:
        name = event.value.strip()
        if not name:
            self.say("Type a model name to pull, e.g. llama3.2.", error=True)
            return
        if not self.straylight.model_pulls.start(self.straylight, name):
            self.say(f"{name} is being pulled already.")
            return
        event.input.clear()
        self.pull_name = None
        self.query_one(DataTable).focus()
        self.say(f"Pulling {name}: Esc closes this screen, the pull goes on.")

    def _watch_pull(self, state: PullState) -> None:
        self.post_message(PullChanged(state))

    def on_pull_changed(self, message: PullChanged) -> None:
        self._show_pull(message.state)
        if message.state.done:
            if message.state.error is None:
                self.say(f"Pulled {message.state.name}.")
                self.reload()
            else:
                self.say(message.state.line(), error=True)

    def _show_pull(self, state: PullState) -> None:
        bar = self.query_one(ProgressBar)
        bar.display = not state.done
        fraction = state.fraction
        if fraction is None:
            bar.update(total=None)
        else:
            bar.update(total=100, progress=round(fraction * 100))
        self.query_one("#models-pull-line", Static).update(Text(state.line()))

    # ---- deleting ----------------------------------------------------------------------
    def action_delete(self) -> None:
        record = self.highlighted()
        if record is None:
            return
        name = record.name

        def answered(yes: bool | None) -> None:
            if yes:
                self.say(f"Deleting {name}…")
                self.delete_model(name)

        self.app.push_screen(
            ConfirmScreen(f"Delete {name} from Ollama? Its files are removed from disk."),
            answered,
        )

    @work(exclusive=False, group="models-delete", exit_on_error=False)
    async def delete_model(self, name: str) -> None:
        from agent.gateway_errors import GatewayError
        from agent.model_changes import delete_model

        try:
            await delete_model(self.straylight.gateway.client(), name)
        except GatewayError as error:
            self.post_message(ModelDeleted(name, str(error)))
            return
        self.post_message(ModelDeleted(name, None))

    def on_model_deleted(self, message: ModelDeleted) -> None:
        if message.error is not None:
            self.say(f"Could not delete {message.name}: {message.error}", error=True)
            return
        self.say(f"Deleted {message.name}.")
        self.straylight.chat.check_status()
        self.reload()

    # ---- using a model -------------------------------------------------------------------
    def action_use_chat(self) -> None:
        record = self.highlighted()
        if record is None:
            return
        if record.chat_capable is False:
            caps = ", ".join(record.capabilities or ())
            self.say(f"{record.name} cannot chat (capabilities: {caps}).", error=True)
            return
        self.dismiss(ModelChoice("chat", record.name))

    def action_use_embedding(self) -> None:
        record = self.highlighted()
        if record is None:
            return
        if record.embedding is None:  # none listed: not known to embed (c still allows it)
            self.say(
                f"Ollama lists no capabilities for {record.name}: not known to embed.", error=True
            )
            return
        if not record.embedding:
            caps = ", ".join(record.capabilities or ())
            self.say(f"{record.name} is not an embedding model (capabilities: {caps}).", error=True)
            return
        from memory.model_names import normalise_name

        if normalise_name(record.name) == normalise_name(
            self.straylight.settings.memory.embed_model
        ):
            # (Ollama lists `nomic-embed-text:latest` for the default `nomic-embed-text`: taken
            # as another model, every point was marked for re-embedding)
            self.say(f"{record.name} is the embedding model already.")
            return
        name = record.name

        def answered(yes: bool | None) -> None:
            if yes:
                self.dismiss(ModelChoice("embedding", name))

        self.app.push_screen(
            ConfirmScreen(
                f"Embed with {name} for this session? Every memory point is re-embedded in "
                "the background (backfill); recall uses words only until it is done."
            ),
            answered,
        )
