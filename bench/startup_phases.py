"""An instrumented copy of `straylight`'s TUI start path, for a start-up breakdown.

Does what `tui.cli.main` does with no subcommand (parse flags, resolve settings, set up the
log file, import and run `StraylightApp`) and notes when each phase ends. At the first
frame (and again once the status check has made its Ollama client) it writes the phases
as JSON to `$STRAYLIGHT_BENCH_PHASES`; it keeps running until quit. Only `bench.startup`
runs it (on a pty); it is not the product's entry point.

The app is a subclass that only adds timestamps in `compose` and `_after_first_frame`, and
its gateway's `_get_client` is wrapped to time the first (lazy) import of httpx + ollama.
"""

from __future__ import annotations

import time
from typing import Any

_STARTED = time.perf_counter()


def main() -> int:
    import json
    import os
    import sys
    from pathlib import Path

    from tui.startup_timer import seconds_since_start

    age_at_main = seconds_since_start()
    origin = time.perf_counter() - age_at_main  # perf_counter() value at process start
    marks: dict[str, float] = {"interpreter and runpy": _STARTED - origin}

    def mark(name: str) -> None:
        marks[name] = time.perf_counter() - origin

    mark("main() reached")
    import tui.cli

    mark("import tui.cli")
    args = tui.cli.build_parser().parse_args(sys.argv[1:])
    from agent.settings import load_settings

    flags = {"home": args.home, "ollama_host": args.ollama_host, "model": args.model}
    settings = load_settings(flags=flags).settings
    from tui.logging_setup import setup_file_logging

    setup_file_logging(settings.log_file)
    mark("flags, settings, log file")
    from textual.app import ComposeResult

    import tui.app
    from tui.app import StraylightApp

    mark("import tui.app")
    out = Path(os.environ["STRAYLIGHT_BENCH_PHASES"])

    class PhaseApp(StraylightApp):
        CSS_PATH = str(Path(tui.app.__file__).with_name("app.tcss"))  # resolved from tui/

        def compose(self) -> ComposeResult:
            mark("App.run() until compose (driver, CSS)")
            yield from super().compose()

        def _after_first_frame(self) -> None:
            mark("until the first frame (mount, layout, paint)")
            super()._after_first_frame()
            out.write_text(json.dumps(marks), encoding="utf-8")

    app = PhaseApp(settings)
    mark("StraylightApp(settings)")
    gateway = app.gateway
    make_client = gateway._get_client

    def timed_get_client() -> Any:
        if gateway._client is not None:
            return make_client()
        mark("until the status check asks for the Ollama client")
        client = make_client()
        mark("import httpx + ollama, make the client (on the event loop)")
        out.write_text(json.dumps(marks), encoding="utf-8")
        return client

    gateway._get_client = timed_get_client  # type: ignore[method-assign]
    app.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
