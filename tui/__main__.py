"""`python -m tui` is `straylight`."""

from tui.cli import entry

entry()
