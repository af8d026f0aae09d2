"""The speakers and event kinds the classifier speaks of, and the confidence each speaker's
proposals get."""

from __future__ import annotations

from typing import Literal

Speaker = Literal["user", "assistant"]
Kind = Literal["deploy", "build", "test", "ssh", "db", "auth"]
USER_CONFIDENCE = 0.9
REPLY_CONFIDENCE = 0.7
WORKSPACE = "workspace"
WORK_KINDS: frozenset[Kind] = frozenset(("deploy", "build", "test"))
ALL_KINDS: frozenset[Kind] = frozenset(("deploy", "build", "test", "ssh", "db", "auth"))
BUILD_TEST: frozenset[Kind] = frozenset(("build", "test"))
REMOTE: frozenset[Kind] = frozenset(("ssh", "db"))
