"""Cancelling a served command as `asyncio.run` is shutting its loop down (the client read
one line and went: `straylight status | head -1` while the chat owns the data dir) logs no
traceback in the owner: Python 3.11's `shutdown_default_executor`, if cancelled, still has
its thread set the result of the future it waited on, and the loop then logs an
`InvalidStateError` at ERROR."""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest

from tui.owner_run import _cancel_all_tasks


def test_a_cancel_during_the_loops_shutdown_lets_the_shutdown_finish(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="asyncio")
    loop = asyncio.new_event_loop()
    shutting_down = threading.Event()
    finished: list[str] = []

    def command_thread() -> None:  # what `asyncio.run` does after the command's main task
        try:
            loop.run_in_executor(None, time.sleep, 0.5)  # a thread the executor must join
            shutting_down.set()
            loop.run_until_complete(loop.shutdown_default_executor())
            finished.append("shut down")
        except asyncio.CancelledError:
            finished.append("cancelled")
        finally:
            loop.close()

    thread = threading.Thread(target=command_thread)
    thread.start()
    assert shutting_down.wait(5)
    # what `CommandRun.cancel` sends: run by the loop at the shutdown's first step or while
    # it waits for the executor's thread (0.5 s), the shutdown task is there either way
    loop.call_soon_threadsafe(_cancel_all_tasks, loop)
    thread.join(5)
    assert finished == ["shut down"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
