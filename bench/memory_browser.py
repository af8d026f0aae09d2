"""The memory browser at scale: time to first paint and scrolling with 100k points.

    python -m bench.memory_browser [--points 100000] [--rows 2000] [--opens 5]
                                   [--json [OUT]] [--home DIR] [--tmpdir DIR]

1. build: a store of N synthetic chat points (the texts of `bench.memory_scale.Synthetic`,
   one every ~5 minutes back from now, user/assistant turns, one pinned `doc` in 2,000),
   loaded with `PointStore.add_many` and word-indexed with one `lexical_index.reindex_all`,
   like `bench.memory_scale` does. The points carry no vectors: the browser never reads
   them, and without an embedding dimension the app builds no HNSW index (~75 s at 100k) to
   compete with the measurement. `--home DIR` reuses (or first builds) a store in DIR.
2. measure, in one headless app (`App.run_test`, 120×40, Ollama unreachable, no jobs), after
   the memory is open and its word cache loaded:
   - first paint: from `push_screen(MemoryBrowserScreen)` until the first page of rows is in
     the table (`rows_ms`) and until the frame after it is composed (`paint_ms`); `--opens`
     times (the browser is closed in between; the first open is the cold one);
   - opening on a point in the middle of the store (`point_id=N/2`), to the highlighted row;
   - scrolling: Down ×200, then PageDown until the cursor is `--rows` rows down; each
     step is one key press plus the frame after it (pages are fetched in a worker thread
     as the cursor nears the end). Reported: p50/p95/max ms per step, steps per second
     ("fps": every step paints one frame), and stalls (a press that could not move the
     cursor because the next page was not in yet);
   - one search (words only: Ollama is away, so the query is not embedded), to the hits.

Results print as a table; `--json` alone prints JSON instead; `--json OUT` writes JSON to OUT
as well. ~1–2 minutes at 100k on 2 cores (building the store is most of it).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bench._common import JsonDict, format_machine, machine_info, write_json

if TYPE_CHECKING:
    from textual.pilot import Pilot

    from tui.app import StraylightApp
    from tui.screens.memory_browser import MemoryBrowserScreen

SIZE = (120, 40)
BULK_BATCH = 10_000
PIN_EVERY = 2_000
SPACING = timedelta(minutes=5)
DOWN_STEPS = 200
MIN_POINTS = 2 * DOWN_STEPS  # room for the Down steps and some PageDowns
SEARCH_QUERY = "meeting tomorrow project plan"
FIRST_PAINT_TARGET_MS = 500.0  # the browser must feel instant even at 100k points
STEP_P95_TARGET_MS = 50.0  # 20 frames a second while holding a key
WAIT_TIMEOUT_S = 120.0
STEP_TIMEOUT_S = 0.5  # a key that has not moved the cursor by then met the end of the rows


# --------------------------------------------------------------------------- the store


def build_store(home: Path, n: int) -> JsonDict:
    """N synthetic points without vectors, word-indexed as the store would index them."""
    from bench.memory_scale import Synthetic
    from memory.memory_store import MemoryConfig, MemoryStore, lexical_text
    from memory.point_traits import point_traits
    from store import lexical_index
    from store.clock import Clock
    from store.database import database_path, open_database
    from store.point_store import NewPoint, PointStore

    started = time.perf_counter()
    data = Synthetic(seed=1)
    texts = data.texts(data.topics(n))
    generated = time.perf_counter()
    now = datetime.now(UTC)
    created = [now - SPACING * (n - i) for i in range(n)]
    # The first point through the real save path: the schema and the word analyzer's name.
    with MemoryStore.open(home, MemoryConfig(), clock=Clock()) as store:
        store.save("user", texts[0], created_at=created[0], use_filter=False)
    db = open_database(database_path(home), clock=Clock())
    points = PointStore(db)
    for start in range(1, n, BULK_BATCH):
        points.add_many(
            _new_point(NewPoint, i, texts[i], created[i])
            for i in range(start, min(n, start + BULK_BATCH))
        )
    loaded = time.perf_counter()
    with db.transaction() as cur:
        rows = cur.execute("SELECT id, created_at FROM points ORDER BY id").fetchall()
        lexical_index.reindex_all(
            cur,
            ((int(pid), lexical_text(texts[i], when=when)) for i, (pid, when) in enumerate(rows)),
            traits={int(pid): point_traits(texts[i], when) for i, (pid, when) in enumerate(rows)},
        )
    with db.cursor() as cur:
        cur.execute("CHECKPOINT")
    db.close()
    done = time.perf_counter()
    return {
        "points": n,
        "generate_s": round(generated - started, 2),
        "add_many_s": round(loaded - generated, 2),
        "lexical_reindex_s": round(done - loaded, 2),
        "total_s": round(done - started, 2),
    }


def _new_point(cls: Callable[..., Any], i: int, text: str, when: datetime) -> Any:
    doc = i % PIN_EVERY == 0
    return cls(
        role="doc" if doc else ("user", "assistant")[i % 2],
        content=text,
        source=f"doc:bench.md#{i}" if doc else "turn",
        conversation_id="" if doc else f"bulk-{i // 10}",
        channel="doc" if doc else "tui",
        pinned=doc,
        created_at=when,
    )


def stored_points(home: Path) -> int:
    """How many points a store in `home` holds (0 when there is none)."""
    from store.clock import Clock
    from store.database import database_path, open_database

    if not database_path(home).exists():
        return 0
    with open_database(database_path(home), clock=Clock()) as db, db.cursor() as cur:
        return int(cur.execute("SELECT count(*) FROM points").fetchall()[0][0])


# --------------------------------------------------------------------------- measuring


def ms_stats(values: Sequence[float]) -> JsonDict:
    arr = np.asarray(values, dtype=np.float64)
    return {
        "n": len(arr),
        "p50_ms": round(float(np.percentile(arr, 50)), 2),
        "p95_ms": round(float(np.percentile(arr, 95)), 2),
        "max_ms": round(float(arr.max()), 2),
        "mean_ms": round(float(arr.mean()), 2),
    }


async def until(pilot: Pilot, condition: Callable[[], bool], what: str) -> None:
    """Poll `condition` every millisecond (finer than the tests' `wait_until`)."""
    deadline = time.monotonic() + WAIT_TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.001)


async def open_browser(
    pilot: Pilot, app: StraylightApp, point_id: int | None = None
) -> tuple[MemoryBrowserScreen, float, float]:
    """Push the browser; (screen, ms until its rows are in, ms until the frame after)."""
    from tui.screens.memory_browser import MemoryBrowserScreen

    assert app.engine.memory is not None
    started = time.perf_counter()
    screen = MemoryBrowserScreen(app.engine.memory, point_id=point_id)
    app.push_screen(screen)
    await until(pilot, lambda: app.screen is screen and not screen.fetching, "the first page")
    if point_id is not None:
        await until(pilot, lambda: screen.cursor_point_id() == point_id, "the point's row")
    rows_in = time.perf_counter()
    await pilot.pause(0)  # the frame that shows them
    painted = time.perf_counter()
    return screen, (rows_in - started) * 1000, (painted - started) * 1000


async def close_browser(pilot: Pilot, app: StraylightApp, screen: MemoryBrowserScreen) -> None:
    app.pop_screen()
    await until(pilot, lambda: app.screen is not screen, "the browser to close")
    await pilot.pause()


async def press_and_paint(pilot: Pilot, screen: MemoryBrowserScreen, key: str) -> bool:
    """Send one key as the terminal driver would, wait until the cursor moved (False: it
    could not, within STEP_TIMEOUT_S) and the frame after it is composed.

    `Pilot.press` would add `wait_for_idle`'s sleeps (20 ms slices until the process looks
    idle): a test harness's settling time, not the app's."""
    from textual import events

    table = screen.table
    before = table.cursor_row
    driver = pilot.app._driver
    assert driver is not None
    driver.send_message(events.Key(key, None))
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while table.cursor_row == before and time.monotonic() < deadline:
        await asyncio.sleep(0)
    await pilot.pause(0)  # pending messages handled, then one frame composed
    return table.cursor_row != before


async def scroll(pilot: Pilot, screen: MemoryBrowserScreen, rows: int) -> JsonDict:
    """Down ×DOWN_STEPS, then PageDown until the cursor is `rows` down or on the last row
    (a store of fewer points: a key that cannot move the cursor and loads nothing more ends
    the scroll); per-step times."""
    table = screen.table
    table.focus()
    await pilot.pause()
    steps: list[float] = []
    by_key: dict[str, list[float]] = {"down": [], "pagedown": []}
    stalls = 0
    started = time.perf_counter()
    while table.cursor_row < rows:
        key = "down" if len(steps) < DOWN_STEPS else "pagedown"
        t0 = time.perf_counter()
        if await press_and_paint(pilot, screen, key):
            steps.append((time.perf_counter() - t0) * 1000)
            by_key[key].append(steps[-1])
            continue
        stalls += 1
        loaded = table.row_count
        await until(pilot, lambda: not screen.fetching, "the next page")
        if table.row_count == loaded and table.cursor_row >= loaded - 1:
            break  # the last row: the store holds fewer than `rows` points
    elapsed = time.perf_counter() - started
    result = ms_stats(steps)
    result.update(
        {
            "rows_scrolled": table.cursor_row,
            "rows_loaded": table.row_count,
            "stalls": stalls,
            "elapsed_s": round(elapsed, 2),
            "fps": round(len(steps) / elapsed, 1),
            "fps_p50": round(1000 / result["p50_ms"], 1) if result["p50_ms"] else None,
            "down": ms_stats(by_key["down"]),
            "pagedown": ms_stats(by_key["pagedown"]),
        }
    )
    return result


async def search(pilot: Pilot, screen: MemoryBrowserScreen) -> JsonDict:
    """One words-only search from the box, to the hits in the table."""
    from textual.widgets import Input

    box = screen.query_one("#browser-search", Input)
    box.focus()
    box.value = SEARCH_QUERY
    started = time.perf_counter()
    await pilot.press("enter")
    await until(
        pilot, lambda: screen.query_text == SEARCH_QUERY and not screen.fetching, "the hits"
    )
    await pilot.pause(0)
    return {
        "query": SEARCH_QUERY,
        "ms": round((time.perf_counter() - started) * 1000, 1),
        "hits": screen.table.row_count,
    }


async def measure(home: Path, n: int, rows: int, opens: int) -> JsonDict:
    from agent.settings import load_settings
    from bench._common import closed_port
    from tui.app import StraylightApp

    flags = {"home": str(home), "ollama_host": f"127.0.0.1:{closed_port()}", "jobs_enabled": False}
    settings = load_settings(flags=flags, environ={}).settings
    app = StraylightApp(settings, poll_offline_seconds=3600)
    result: JsonDict = {}
    async with app.run_test(size=SIZE) as pilot:
        started = time.perf_counter()
        await until(pilot, lambda: app.engine.memory is not None, "the memory to open")
        memory = app.engine.memory
        assert memory is not None
        await asyncio.to_thread(memory.store.wait_until_ready)
        result["memory_ready_s"] = round(time.perf_counter() - started, 2)
        gc.collect()
        rows_ms: list[float] = []
        paint_ms: list[float] = []
        for _ in range(opens):
            screen, rows_in, painted = await open_browser(pilot, app)
            rows_ms.append(rows_in)
            paint_ms.append(painted)
            await close_browser(pilot, app, screen)
        result["first_paint"] = {
            "cold_rows_ms": round(rows_ms[0], 1),
            "cold_paint_ms": round(paint_ms[0], 1),
            "rows": ms_stats(rows_ms),
            "paint": ms_stats(paint_ms),
        }
        middle = n // 2
        screen, rows_in, painted = await open_browser(pilot, app, point_id=middle)
        result["open_at_point"] = {
            "point_id": middle,
            "rows_ms": round(rows_in, 1),
            "paint_ms": round(painted, 1),
            "rows_loaded": screen.table.row_count,
        }
        await close_browser(pilot, app, screen)
        screen, _rows_in, _painted = await open_browser(pilot, app)
        result["scroll"] = await scroll(pilot, screen, rows)
        result["search"] = await search(pilot, screen)
    return result


# --------------------------------------------------------------------------- reporting


def rows_for(result: JsonDict) -> list[tuple[str, str, str]]:
    """(metric, value, target) lines of the table."""
    n = result["points"]
    first, scroll_, point = result["first_paint"], result["scroll"], result["open_at_point"]
    return [
        (
            f"browser {n:,} pts: first paint (push → rows painted), median / cold",
            f"{first['paint']['p50_ms']:.0f} / {first['cold_paint_ms']:.0f} ms",
            f"<= {FIRST_PAINT_TARGET_MS:.0f} ms",
        ),
        (
            f"browser {n:,} pts: opened on #{point['point_id']:,} (middle), to its row",
            f"{point['paint_ms']:.0f} ms",
            "",
        ),
        (
            f"browser {n:,} pts: scroll {scroll_['rows_scrolled']:,} rows, per step p50 / p95",
            f"{scroll_['p50_ms']:.1f} / {scroll_['p95_ms']:.1f} ms (max {scroll_['max_ms']:.0f})",
            f"p95 <= {STEP_P95_TARGET_MS:.0f} ms",
        ),
        (
            f"browser {n:,} pts: Down / PageDown, p50 / p95",
            f"{scroll_['down']['p50_ms']:.1f} / {scroll_['down']['p95_ms']:.1f} ms, "
            f"{scroll_['pagedown']['p50_ms']:.1f} / {scroll_['pagedown']['p95_ms']:.1f} ms",
            "",
        ),
        (
            f"browser {n:,} pts: scroll frames per second, stalls",
            f"{scroll_['fps']:.0f} fps, {scroll_['stalls']} stalls,"
            f" {scroll_['rows_loaded']:,} rows loaded",
            "",
        ),
        (
            f"browser {n:,} pts: search (words only) to hits",
            f"{result['search']['ms']:.0f} ms, {result['search']['hits']} hits",
            "",
        ),
    ]


def print_table(result: JsonDict) -> None:
    lines = rows_for(result)
    widths = [max(len(line[i]) for line in lines) for i in range(3)]
    for line in lines:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=2_000, help="rows to scroll through")
    parser.add_argument("--opens", type=int, default=5, help="times the browser is opened")
    parser.add_argument("--json", nargs="?", const="-", help="JSON to stdout, or to this file")
    parser.add_argument("--home", type=Path, help="build the store here once and reuse it")
    parser.add_argument("--tmpdir", type=Path, help="where a temporary store goes")
    args = parser.parse_args(argv)
    if args.points < MIN_POINTS:
        parser.error(f"--points must be at least {MIN_POINTS} (room to scroll)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    json_only = args.json == "-"
    info = machine_info()
    if not json_only:
        print(format_machine(info), flush=True)
    with tempfile.TemporaryDirectory(prefix="straylight-browser-", dir=args.tmpdir) as raw:
        tmp = Path(raw)
        os.environ["XDG_CONFIG_HOME"] = str(tmp / "xdg-config")  # no user config.toml
        os.environ["XDG_DATA_HOME"] = str(tmp / "xdg-data")
        home = args.home or tmp / "home"
        result: JsonDict = {"points": args.points, "machine": info}
        have = stored_points(home)
        if have == 0:
            result["build"] = build_store(home, args.points)
        elif have != args.points:
            print(f"{home} holds {have} points, not {args.points}", file=sys.stderr)
            return 2
        else:
            result["build"] = {"reused": str(home)}
        if not json_only:
            print(f"store: {json.dumps(result['build'])}", flush=True)
        result.update(asyncio.run(measure(home, args.points, args.rows, args.opens)))
    result["targets"] = {
        "first_paint_ms": FIRST_PAINT_TARGET_MS,
        "step_p95_ms": STEP_P95_TARGET_MS,
    }
    if json_only:
        print(json.dumps(result, indent=2))
        return 0
    print_table(result)
    if args.json:
        write_json(Path(args.json), result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
