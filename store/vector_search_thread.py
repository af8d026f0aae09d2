"""One long-lived thread that runs a vector search beside the thread that asked for it.

A recall ranks by vectors and by words, one after the other on one thread, yet usearch's
`Index.search` releases the GIL while it walks the graph, and the word ranking is mostly
Python that holds it: on a second core the two overlap (docs/recall-latency.md, "Seventh
session"). `SearchThread.submit` hands the work to the thread and returns once the thread
has taken it up, so the GIL is free again when the caller goes on with the words (without
that wait the thread would wait for the GIL until the caller's ranking let it go, and the
search would not overlap); `Pending.result` waits for the answer, or re-raises what the
work raised.

One job at a time: `submit` returns None while the thread is busy (another caller's search)
or stopped, while the machine has no core to spare (`CoreCheck`: the load average is within
half a core of the cores this process may use), or when the thread did not start the job
within `start_wait`, and the caller runs the work itself — a search is never queued behind
another. Without a spare core the hand-over only costs: the caller's thread, once it waits,
waits for the scheduler to give it a core back (measured, docs/recall-latency.md).
`stop` lets the job in flight finish and ends the thread; `submit` then returns None.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Pending(Generic[T]):
    """The answer of one job, once the thread ran it."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self.started = threading.Event()
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None

    def run(self) -> None:
        self.started.set()
        try:
            self._value = self._work()
        except BaseException as error:  # noqa: BLE001 - the caller raises it (`result`)
            self._error = error
        finally:
            self._done.set()

    def result(self) -> T:
        """The work's return value (after waiting for it); what it raised is raised here."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set when no error was


class CoreCheck:
    """Whether this machine has a core to spare: the 1-minute load average below the cores
    this process may use minus `margin`; read at most every `every` seconds (~1.5 µs a
    read). True where there is no load average to read."""

    def __init__(self, margin: float = 0.5, every: float = 1.0) -> None:
        self.margin = margin
        self.every = every
        self._checked = -every
        self._free = True

    def free(self) -> bool:
        now = time.monotonic()
        if now - self._checked >= self.every:
            self._checked = now
            self._free = _load() < _cores() - self.margin
        return self._free


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average here
        return 0.0


class SearchThread:
    """A daemon thread, started by the first `submit`, that runs one job at a time."""

    def __init__(self, name: str, start_wait: float, cores: CoreCheck | None = None) -> None:
        self.name = name
        self.start_wait = start_wait  # seconds the thread has to take a job up
        self.cores = cores or CoreCheck()
        self._cond = threading.Condition()
        self._job: Pending[object] | None = None
        self._busy = False  # a job handed over and not finished
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.stats = {"ahead": 0, "late": 0, "busy": 0, "no_core": 0}  # how submits ended

    def submit(self, work: Callable[[], T]) -> Pending[T] | None:
        """Run `work` in the thread; None (run it yourself) when busy or stopped, when no
        core is free, or when the thread did not take the job up within `start_wait`
        (waiting longer would cost more than the overlap gives). Returns once the job
        started."""
        if not self.cores.free():
            self.stats["no_core"] += 1
            return None
        job = Pending(work)
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
        if not job.started.wait(self.start_wait):
            with self._cond:
                if self._job is job:  # not taken up in time (no free core): take it back
                    self._job = None
                    self._busy = False
                    self._cond.notify_all()
                    self.stats["late"] += 1
                    return None
            job.started.wait()  # taken up meanwhile: it starts now
        self.stats["ahead"] += 1
        return job

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._job is None and not self._stopped:
                    self._cond.wait()
                job, self._job = self._job, None
            if job is None:  # stopped, nothing left
                return
            job.run()
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def stop(self) -> None:
        """Finish the job in flight, end the thread; later `submit`s return None."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
