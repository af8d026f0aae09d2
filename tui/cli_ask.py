"""`straylight ask TEXT`: one turn from the shell, consuming the same turn events as the TUI.

The reply goes to stdout as it streams; notices (what the context budget left out, memstatus
on escalation, candidates waiting for approval) are one line each on stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from agent.gateway_errors import EXIT_MODEL_ERROR, EXIT_OK, EXIT_USAGE
from agent.settings import Settings
from tui.cli_output import EXIT_UNEXPECTED, PROG, cannot_write, fail, for_terminal

if TYPE_CHECKING:
    from agent.turn import TurnEngine
    from tui.stop_signals import StopSignals

log = logging.getLogger("straylight.cli")


def conversation_option(text: str) -> str:
    """`ask --conversation ID` checked before anything is logged: the id's format
    (store/conversation_id.py), and a name the masker would change is refused too (a pasted
    token must not become a conversation id in the log, the database and straylight.log)."""
    from memory.secret_masking import mask_secrets
    from store.conversation_id import ID_FORMAT, check_conversation_id

    checked = check_conversation_id(text)
    if mask_secrets(checked) != checked:
        raise ValueError(f"--conversation wants {ID_FORMAT} (the value is not repeated here)")
    return checked


class SignalStop:
    """SIGTERM and SIGHUP during `ask` stop it the way Ctrl-C does: the turn is cancelled, so
    what arrived is logged, marked `cancelled` with the signal as the reason; the exit code
    is 128 + the signal (143, 129). Once the reply is logged (`finishing`), the signal only
    sets the exit code: the background save of its points is not cut short."""

    SIGNALS = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.engine: Any = None  # the TurnEngine, once there is one
        self.received: signal.Signals | None = None
        self.finishing = False
        self._signals: StopSignals | None = None

    def _stop(self, signum: signal.Signals) -> None:
        if self._signals is not None:
            self._signals.taken()
        if self.received is None:
            self.received = signum
            if self.finishing:
                return
            if self.engine is not None:
                self.engine.stop_reason = f"stopped by {signum.name}"
            self.task.cancel()

    @contextmanager
    def installed(self) -> Iterator[None]:
        """The signals handed to `_stop` on the loop; a process whose loop does not take
        them (stdout blocked on a full pipe) ends anyway (`tui.stop_signals`). Run by the data
        dir's owner for a client (not the main thread): the client's signals end it."""
        from tui.stop_signals import StopSignals

        self._signals = StopSignals(asyncio.get_running_loop(), self.SIGNALS, self._stop)
        installed = self._signals.install()
        try:
            yield
        finally:
            if installed:
                self._signals.uninstall()


async def ask(
    settings: Settings,
    text: str,
    conversation: str | None,
    show_thinking: bool = False,
    *,
    system: str | None = None,
) -> int:
    """One turn (`_ask`), stopped by SIGTERM or SIGHUP like Ctrl-C (see `SignalStop`)."""
    task = asyncio.current_task()
    assert task is not None
    stop = SignalStop(task)
    with stop.installed():
        try:
            code = await _ask(settings, text, conversation, show_thinking, stop, system)
        except asyncio.CancelledError:
            if stop.received is None:
                raise
            task.uncancel()
        else:
            if stop.received is None:
                return code
            log.warning("ask got %s after the reply was logged", stop.received.name)
            return fail(
                f"stopped by {stop.received.name} after the reply was logged",
                128 + stop.received,
            )
    log.warning("ask stopped by %s", stop.received.name)
    return fail(
        f"stopped by {stop.received.name} (what arrived is kept in the log, marked cancelled)",
        128 + stop.received,
    )


async def _ask(
    settings: Settings,
    text: str,
    conversation: str | None,
    show_thinking: bool,
    stop: SignalStop,
    system: str | None,
) -> int:
    from agent.gateway_errors import ContextOverflow
    from agent.ollama_gateway import OllamaGateway
    from agent.turn import TurnEngine, new_conversation_id
    from agent.turn_events import (
        AfterTurnEvent,
        CandidatesProposed,
        CapabilityReminder,
        ContextBudgeted,
        ContextNotice,
        LimitNotice,
        LongtermWarning,
        MemstatusDue,
        ReplyDelta,
        ReplyFailed,
        ReplyFinished,
        ThinkingDelta,
    )
    from tui.cli_output import ThinkingEcho
    from tui.memory_session import MemorySession
    from tui.open_chat import open_conversation

    if conversation is not None and conversation == open_conversation(settings.home):
        # run inside the TUI for another client: the chat writes this conversation (as
        # `conversations delete` refuses it; two writers would interleave one exchange)
        return fail(
            f"{conversation} is the conversation open in the chat: write to it there, "
            "or continue another one",
            EXIT_USAGE,
        )
    gateway = OllamaGateway.from_config(settings.ollama)
    refusal = await chat_model_refusal(gateway, settings.ollama.model)
    if refusal is not None:
        await gateway.aclose()
        return fail(refusal, EXIT_USAGE)
    session = MemorySession(settings, gateway, channel="cli")
    try:
        memory = session.open()
    except BaseException:
        await gateway.aclose()
        raise
    engine = TurnEngine(settings, gateway, memory)
    stop.engine = engine
    from tui.owner_run import current_run

    if (served := current_run()) is not None:  # an owner that ends cuts it: its reason
        served.on_cancel.append(lambda why: setattr(engine, "stop_reason", why))
    after_turn: list[AfterTurnEvent] = []  # what the background save reports, read after drain
    engine.after_turn = after_turn.append
    engine.longterm.ensure_template()
    conversation_id = conversation or new_conversation_id(settings.clock)
    system_prompt = conversation_system_prompt(memory, conversation_id, system)
    code = EXIT_MODEL_ERROR
    wrote_text = False
    pending = 0
    reminders: list[str] = []
    warned: list[str] = []  # the turn's warnings, as printed
    thinking = ThinkingEcho()
    # what the prompt left out, said once the prompt is sent: a message too long for the
    # window is not sent, and its one line says so (the cut of a prompt never sent is noise)
    budget_line: str | None = None
    try:
        async for event in engine.run(
            text, conversation_id=conversation_id, model=settings.ollama.model, system=system_prompt
        ):
            if budget_line is not None and isinstance(
                event, ThinkingDelta | ReplyDelta | ReplyFinished | ReplyFailed
            ):
                if not (
                    isinstance(event, ReplyFailed) and isinstance(event.error, ContextOverflow)
                ):
                    print(budget_line, file=sys.stderr)
                budget_line = None
            if isinstance(event, ThinkingDelta):
                if show_thinking:  # stdout carries only the answer
                    thinking.write(event.text)
                continue
            thinking.close()
            if isinstance(event, ReplyDelta):
                _write_reply(engine, event.text)
                wrote_text = True
            elif isinstance(event, ReplyFinished):
                code = EXIT_OK
                stop.finishing = True  # logged: a signal no longer cuts the save short
                if wrote_text:  # the answer is whole: a warning after it starts its own line
                    sys.stdout.write("\n")
                    sys.stdout.flush()
                    wrote_text = False
            elif isinstance(event, ReplyFailed):
                code = event.error.exit_code
                stop.finishing = True
                if wrote_text:
                    sys.stdout.write("\n")
                kept = " (the partial reply is kept in the log, marked cut off)"
                fail(str(event.error) + (kept if event.partial else ""), code)
                wrote_text = False
            elif isinstance(event, LongtermWarning | ContextNotice | LimitNotice):
                print(f"{PROG}: warning: {event.text}", file=sys.stderr)
                warned.append(event.text)
            elif isinstance(event, ContextBudgeted) and event.notes:
                budget_line = f"{PROG}: {event.summary()}: {'; '.join(event.notes)}"
            elif isinstance(event, CandidatesProposed):
                pending += len(event.candidates)
            elif isinstance(event, CapabilityReminder):
                keys = ", ".join(f.key for f in event.facts)
                reminders.append(f"{PROG}: known fact: this was done from here before ({keys})")
        failures = await _drain_saying_so(engine)  # the points are saved before the end
        if failures and code == EXIT_OK:  # (a failed reply has its line already)
            from store.database import database_path
            from store.database_errors import as_os_error

            inside = as_os_error(failures[0])  # a full disk at the commit: the file, the reason
            disk = cannot_write(inside) if inside else None
            cause = disk or " ".join(str(failures[0]).split()) or type(failures[0]).__name__
            code = fail(
                f"the turn is in the daily log, but its memory points were not saved to "
                f"{database_path(settings.home)}: {cause}",
                EXIT_UNEXPECTED,
            )
        problem = getattr(memory, "embed_problem", None)
        said = problem is not None and any(problem in line for line in warned)  # a stall's
        if code == EXIT_OK and problem is not None and not said:  # e.g. a model not pulled
            later = (
                "" if "backfill" in problem else "; `straylight jobs run backfill` adds them later"
            )
            from memory.turn_memory import REPLY_EMBEDDING

            if REPLY_EMBEDDING in problem:  # the search had its vector: only the reply not
                reminders.append(f"{PROG}: note: the reply was saved without a vector ({problem})")
            else:
                reminders.append(
                    f"{PROG}: note: no embedding this turn ({problem}): memory was searched "
                    f"and saved by its words only{later}"
                )
        if code == EXIT_OK and any(isinstance(event, MemstatusDue) for event in after_turn):
            reminders += await run_memstatus(settings, memory, gateway)
    except BaseException:
        # Ctrl-C or a signal mid-reply: its error line must not run on from the partial reply
        # (or thinking) it interrupted; a reader gone (a closed pipe, a served client that
        # hung up) keeps the error already on its way
        with contextlib.suppress(OSError, ValueError):
            thinking.close()
            if wrote_text:
                sys.stdout.write("\n")
                sys.stdout.flush()
        raise
    finally:
        session.close()
        await gateway.aclose()
    if wrote_text:
        sys.stdout.write("\n")
        sys.stdout.flush()
    for line in reminders:
        print(line, file=sys.stderr)
    if pending:
        plural = "candidate waits" if pending == 1 else "candidates wait"
        print(
            f"{PROG}: {pending} fact {plural} for approval (straylight candidates list)",
            file=sys.stderr,
        )
    log.info("ask finished in conversation %s with exit code %d", conversation_id, code)
    return code


PRECHECK_SECONDS = 0.5
"""How long `ask` waits for /api/show before the turn to learn whether the model can chat;
longer, it does not know and the turn runs (and names any problem). A stalled server is
then reported at the turn's timeout plus at most this, not plus the metadata timeout."""


def _write_reply(engine: TurnEngine, text: str) -> None:
    """A piece of the reply on stdout; a reader that went away (`ask … | head`, exit 141)
    ends the turn, and the log's cancelled reply says so rather than blaming the user."""
    try:
        sys.stdout.write(for_terminal(text))
        sys.stdout.flush()
    except BrokenPipeError:
        engine.stop_reason = "the reader of the output went away"
        raise
    except OSError as error:  # stdout on a full disk, or a device failing: not a cancel
        engine.stop_reason = f"the output could not be written ({error.strerror or error})"
        raise


async def chat_model_refusal(gateway: Any, model: str) -> str | None:
    """The line that refuses `--model` (or the configured model) before anything is logged
    when Ollama says it cannot chat (an embedding model): the `/model` rule
    (agent/model_catalog.py `cannot_chat`). The /api/show answer is cached for the turn; a
    failure or a slow answer is not known (not counted as a stall: the turn asks again)."""
    from agent.gateway_errors import GatewayError
    from agent.model_catalog import cannot_chat, fetch_show

    timeout = min(PRECHECK_SECONDS, gateway.metadata_timeout)
    try:
        shown = await fetch_show(gateway.client(), model, timeout=timeout)
    except GatewayError:
        return None
    capabilities = getattr(shown, "capabilities", None)
    refusal = cannot_chat(model, tuple(str(c) for c in capabilities or ()))
    if refusal is None:
        return None
    return f"{refusal}; `straylight models` lists the pulled models that can"


async def run_memstatus(settings: Settings, memory: Any, gateway: Any) -> list[str]:
    """The engine said memstatus is due (every MEMORY_STATUS_EVERY_N turns): run the job; its
    notice (only on escalation) becomes one stderr line."""
    from jobs.background_jobs import JobContext
    from jobs.runner import JobRunner

    try:
        runner = JobRunner(JobContext(settings, memory, gateway, settings.ollama.model))
        result = await runner.run("memstatus")
    except Exception:  # never in the way of the reply
        log.exception("memstatus after the turn failed")
        return []
    return [f"{PROG}: {notice.text}" for notice in result.notices]


def conversation_system_prompt(memory: Any, conversation_id: str, given: str | None) -> str | None:
    """`--system TEXT` sets the conversation's system prompt (blank clears it); without it,
    the one the conversation kept (None: the persona)."""
    from memory.conversation_notes import ConversationNotes

    notes = ConversationNotes(memory.store)
    if given is not None:
        notes.set_system_prompt(conversation_id, given.strip() or None)
    return notes.get(conversation_id).system_prompt


SAVE_NOTE_AFTER = 5.0
"""Seconds the turn's save may take before `ask` says what it waits for."""


async def _drain_saying_so(engine: Any) -> list[BaseException]:
    """`engine.drain()`, with one stderr line when the save takes longer than
    `SAVE_NOTE_AFTER` (its embedding stalled: `ask` then waited up to 30 s without a word)."""
    draining = asyncio.ensure_future(engine.drain())
    done, _ = await asyncio.wait({draining}, timeout=SAVE_NOTE_AFTER)
    if not done:
        print(
            f"{PROG}: note: saving this turn's memory (waiting up to 30 s for its embedding; "
            "the reply is in the log)",
            file=sys.stderr,
            flush=True,
        )
    return await draining
