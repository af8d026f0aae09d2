"""How long since this process started — for the "first frame after N ms" log line."""

from __future__ import annotations

import os
import time

_IMPORTED_AT = time.monotonic()


def seconds_since_start() -> float:
    """Process age from Linux /proc (10 ms resolution); else since this module loaded."""
    try:
        with open("/proc/self/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        start_ticks = int(fields[19])  # field 22 of stat(5), counted after the comm field
        with open("/proc/uptime", encoding="ascii") as handle:
            uptime = float(handle.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return time.monotonic() - _IMPORTED_AT
