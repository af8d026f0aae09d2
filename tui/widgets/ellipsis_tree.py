"""A `Tree` whose labels end in `…` where they are cut: Textual crops a line at the widget's
edge without a mark, so a long title read as if it ended there."""

from __future__ import annotations

from typing import TypeVar

from rich.style import Style
from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

NodeData = TypeVar("NodeData")


class EllipsisTree(Tree[NodeData]):
    """A tree (no horizontal scrolling) that fits each label to the room beside its guides."""

    def render_label(self, node: TreeNode[NodeData], base_style: Style, style: Style) -> Text:
        label = super().render_label(node, base_style, style)
        room = self.scrollable_content_region.width - self._guide_width(node)
        if room > 0 and label.cell_len > room:
            label.truncate(room, overflow="ellipsis")
        return label

    def _guide_width(self, node: TreeNode[NodeData]) -> int:
        """The cells of guides before `node`'s label: `guide_depth` per level under the root
        (and the root's own level when it is shown), as Textual draws them."""
        depth = 0
        parent = node.parent
        while parent is not None:
            depth += 1
            parent = parent.parent
        levels = depth if self.show_root else max(0, depth - 1)
        return levels * self.guide_depth
