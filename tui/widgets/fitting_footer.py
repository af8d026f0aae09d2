"""The Footer of every screen, showing only the keys whose labels fit whole.

Textual's Footer lays the keys out in a row and cuts the row at the screen's edge, under
the command palette's key docked on the right: at 80 columns the chat's footer ended in
`f2 M` (issue 16). This one hides the keys that do not fit whole, from the end: the order
is the Footer's (the focused widget's keys first, so the chat box's `f1 Keys`, which opens
the help with every key, always stays; then the screen's, then the app's). The palette's
key stays on the right. Like oterm and posting, what does not fit is left to the help
screen (F1) and the palette (Ctrl+P), rather than shortened beyond reading.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

PALETTE_CLASS = "-command-palette"


class FittingFooter(Footer):
    """A Footer that drops the keys it cannot show whole (see the module's docstring)."""

    async def recompose(self) -> None:
        await super().recompose()
        self.fit_keys()

    def on_resize(self) -> None:
        self.fit_keys()

    def fit_keys(self) -> None:
        """Show the keys in order while they fit beside the palette's key; hide the rest."""
        width = self.size.width
        if width <= 0:
            return  # not laid out yet: the first Resize fits them
        room = width
        keys: list[Widget] = []
        for child in self.children:
            if isinstance(child, FooterKey) and child.has_class(PALETTE_CLASS):
                room -= _outer_width(child, self.size)
            else:
                keys.append(child)
        used = 0
        for key in keys:
            used += _outer_width(key, self.size)
            key.display = used <= room


def _outer_width(widget: Widget, container: Size) -> int:
    """The columns a width-auto widget takes in the row: its content, padding, border and
    margin."""
    content = widget.get_content_width(container, container)
    return content + widget.styles.gutter.width + widget.styles.margin.width
