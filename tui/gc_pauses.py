"""The chat's long-lived objects kept out of the garbage collector's full passes.

Why (issue 16: F1 took 2.6 s late in a long session): a chat log holds ~2,300 objects the
collector tracks per message (each message's widgets, their styles, caches and message-pump
tasks): 1.9 M at 800 messages. CPython's full collection walks every one of them, 2–5 s on
the 2-core test machine, and it comes whenever enough new objects have survived since the
last one, which is what opening a screen (a few thousand new objects) tends to tip over.
`bench/screen_open.py` showed that pause inside the screen opens that took seconds.

`gc.freeze()` moves every object alive now to a generation the collector never walks, in
constant time; the objects made later are collected as before. The chat freezes when a
screen opens over it (its log does not change while covered), so the open, and whatever
the screen does, never meets a full pass over the log. Frozen objects freed by reference
counting are freed at once; only cycles among frozen objects wait, so when the chat log is
emptied or replaced (`/new`, continuing a conversation) and when the app stops, everything
is unfrozen and the next full pass collects the old log (one pause, where it used to come
at random). What leaks until then is the cyclic garbage not yet collected at a freeze
(bench/screen_open.py reports it).
"""

from __future__ import annotations

import gc

ENABLED = True  # bench/screen_open.py --no-freeze sets it False to measure without


def freeze_long_lived() -> None:
    """Freeze what is alive now: constant time, the generations' lists are spliced. (Not
    `gc.get_freeze_count()` here: it walks the list, ~0.3 s at 800 messages.)"""
    if ENABLED:
        gc.freeze()


def unfreeze_all() -> None:
    """Let the collector walk everything again (the old chat log is garbage now)."""
    gc.unfreeze()
