"""``python -m tests.support.ollama_standin``: see `cli.main`."""

from .cli import main

raise SystemExit(main())
