"""`python -m tui` is `straylight`."""

from tui.entry import main

main()
