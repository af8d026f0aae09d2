"""One long-lived thread that runs a piece of work beside the thread that handed it over.

A recall ranks by vectors and by words. usearch's `Index.search` releases the GIL while it
walks the graph; the word ranking is mostly Python that holds it. So the recall hands the
words to this thread (`hand`) and searches the vectors itself: while its search runs without
the GIL, this thread ranks the words on the second core (docs/recall-latency.md, "Seventh
session"). The handing thread never waits for this one to start: when it wants the answer
(`Handed.result`) and the work has not started yet — no core was free for this thread — it
takes the work back and runs it itself, so a busy machine costs a wake-up call, not a wait
for the scheduler. (The other way round — the search in this thread, the words in the
caller's — the caller must wait until this thread holds the GIL and is inside the search
before it ranks: on a loaded machine that wait was longer than the search.)

One job at a time: `hand` returns None while a job is handed and not finished (another
caller's recall), when stopped, when `enabled` is off, or while the machine has no core to
spare (`CoreCheck`: the threads runnable at this moment within half a core of the cores
this process may use), and the caller runs the work itself. Without a spare core the two
threads only take turns on one core and the hand-over costs (+0.1–0.4 ms a recall at 100k
under load); with one, a recall took 0.3–0.8 ms less at 100k and 1.3–2.8 ms less at 1M
(p50, paired). `stop` lets a started job finish and ends the thread; a job not started by
then is left to its caller.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Handed(Generic[T]):
    """Work handed to a `SideThread`: its answer, from whichever thread ran it."""

    def __init__(self, work: Callable[[], T], side: SideThread) -> None:
        self._work = work
        self._side = side
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None

    def run(self) -> None:
        """Run the work and keep its answer (`finish` tells the caller)."""
        try:
            self._value = self._work()
        except BaseException as error:  # noqa: BLE001 - the caller raises it (`result`)
            self._error = error

    def finish(self) -> None:
        self._done.set()

    def result(self) -> T:
        """The work's return value, or what it raised raised here. Runs the work in this
        thread when the side thread has not started it yet."""
        if self._side.take_back(self):
            return self._work()
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set when no error was


class CoreCheck:
    """Whether this machine has a core to spare now: the threads runnable at this moment, the
    caller's included (`runnable_now`), below the cores this process may use minus `margin`;
    read at most every `every` seconds (~1.5 µs a read). Where there is no such count, the
    1-minute load average; True where there is neither.

    Not the load average where the count exists: it trails by a minute. After a minute of
    work on every core (a model's reply on a CPU-only machine, a bulk import) it read "no
    core" while the cores stood idle, and back-to-back recalls held it up themselves: at 1M
    points every recall then ranked its words after its vector search (paired right after two
    busy minutes: p50 / p95 4.9 / 7.9 ms, against 3.5 / 5.7 with this check;
    docs/recall-latency.md, "Twentieth session")."""

    def __init__(self, margin: float = 0.5, every: float = 0.0) -> None:
        self.margin = margin
        self.every = every
        self._cores = _cores()
        self._checked = -every
        self._free = True

    def free(self) -> bool:
        now = time.monotonic()
        if now - self._checked >= self.every:
            self._checked = now
            self._free = _busy() < self._cores - self.margin
        return self._free


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


_LOADAVG = "/proc/loadavg"
_loadavg_fd: list[int] = []  # opened once: a pread of it is ~1.5 µs, an open and read ~8 µs
_loadavg_lock = threading.Lock()


def runnable_now() -> int | None:
    """The threads runnable on this machine at this moment, the calling one included (the
    "running" of the fourth field of Linux's /proc/loadavg, "running/total"); None where
    there is no such file."""
    try:
        with _loadavg_lock:
            if not _loadavg_fd:
                _loadavg_fd.append(os.open(_LOADAVG, os.O_RDONLY))
            fd = _loadavg_fd[0]
        return int(os.pread(fd, 128, 0).split()[3].split(b"/")[0])
    except (OSError, IndexError, ValueError):
        return None


def _busy() -> float:
    """The threads runnable now, else the 1-minute load average, else 0."""
    now = runnable_now()
    if now is not None:
        return float(now)
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average here
        return 0.0


class SideThread:
    """A daemon thread, started by the first `hand`, that runs one job at a time."""

    def __init__(self, name: str, cores: CoreCheck | None = None) -> None:
        self.name = name
        self.enabled = True  # False: every `hand` returns None (benchmarks, tests)
        self.cores = cores or CoreCheck()
        self._cond = threading.Condition()
        self._job: Handed[object] | None = None  # handed, not started
        self._busy = False  # a job handed and not finished
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.stats = {"beside": 0, "taken_back": 0, "busy": 0, "no_core": 0}  # (bench)

    def hand(self, work: Callable[[], T]) -> Handed[T] | None:
        """Run `work` in the thread; None (run it yourself) when it is busy, stopped, not
        enabled or no core is free. Returns at once."""
        if not self.enabled:
            return None
        if not self.cores.free():
            self.stats["no_core"] += 1
            return None
        job = Handed(work, self)
        with self._cond:
            if self._busy or self._stopped:
                self.stats["busy"] += 1
                return None
            if self._thread is None:
                thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                try:
                    thread.start()
                except RuntimeError:  # no new threads (the interpreter is shutting down)
                    self._stopped = True
                    return None
                self._thread = thread
            self._busy = True
            self._job = job  # type: ignore[assignment]  # any T: the thread only runs it
            self._cond.notify_all()
        return job

    def take_back(self, job: Handed[T]) -> bool:
        """Withdraw `job` if the thread has not started it (the caller runs it then)."""
        with self._cond:
            if self._job is not job:
                self.stats["beside"] += 1
                return False
            self._job = None
            self._busy = False
            self.stats["taken_back"] += 1
            self._cond.notify_all()
            return True

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._job is None and not self._stopped:
                    self._cond.wait()
                job, self._job = self._job, None
                if self._stopped or job is None:  # a job handed meanwhile: its caller's
                    self._job = job
                    return
            try:
                job.run()
            finally:
                with self._cond:  # free before the caller hears: its next `hand` finds it so
                    self._busy = False
                    self._cond.notify_all()
                job.finish()

    def stop(self) -> None:
        """Finish the job in flight and end the thread; later `hand`s return None. A job
        handed and not started is left to its caller (`Handed.result` takes it back)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
