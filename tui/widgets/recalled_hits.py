"""The last prompt's recalled hits in the sidebar, one option each: Enter opens a hit in the
memory browser, f forgets it (after a yes). Ctrl+R reaches the list from the message box."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option


@dataclass(frozen=True, slots=True)
class RecalledLine:
    """One recalled hit as the sidebar shows it: `#12 0.82 the first words…`."""

    point_id: int
    text: str


class RecalledHits(OptionList):
    """The hits of the last prompt; the option ids are the point ids."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.state_lines: tuple[RecalledLine, ...] = ()  # what the options show now

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open_hit", "Open", id="hit_open"),
        Binding("f", "forget_hit", "Forget", id="hit_forget"),
        Binding("escape", "leave", "Back", show=False),
    ]

    @dataclass
    class OpenHit(Message):
        """Show this point in the memory browser."""

        point_id: int

    @dataclass
    class ForgetHit(Message):
        """Forget this point, after asking."""

        point_id: int

    @dataclass
    class Leave(Message):
        """Go back to the message box."""

    def show_lines(self, lines: tuple[RecalledLine, ...]) -> None:
        """Replace the options with these hits (the highlight moves to the first)."""
        self.clear_options()
        self.add_options([Option(Text(line.text), id=str(line.point_id)) for line in lines])

    def _highlighted_point(self) -> int | None:
        index = self.highlighted
        if index is None:
            return None
        option = self.get_option_at_index(index)
        return int(option.id) if option.id is not None else None

    def action_open_hit(self) -> None:
        point_id = self._highlighted_point()
        if point_id is not None:
            self.post_message(self.OpenHit(point_id))

    def action_forget_hit(self) -> None:
        point_id = self._highlighted_point()
        if point_id is not None:
            self.post_message(self.ForgetHit(point_id))

    def action_leave(self) -> None:
        self.post_message(self.Leave())

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """A click (or Enter) on a hit opens it."""
        event.stop()
        if event.option.id is not None:
            self.post_message(self.OpenHit(int(event.option.id)))
