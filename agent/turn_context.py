"""The context budget in a turn: the window per model, the prompt's parts, what Ollama said.

`TurnContext` belongs to one `TurnEngine`. It chooses each model's window once (from the
`num_ctx` setting and `/api/show`, `agent.context_window.choose_window`), fits the turn's
material into it (`agent.context_budget.budget_prompt`), gives the `options.num_ctx` every chat
request carries, and after the reply calibrates the token estimator or names a truncation.
The calibration and the last turn's report are kept in the `meta` table through
`memory.context_meta` when the memory is open (`status` reads the report).
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent.context_budget import BudgetedPrompt, HistoryMessage, PromptParts, budget_prompt
from agent.context_window import (
    Overflow,
    WindowChoice,
    detect_filled_window,
    detect_smaller_window,
    detect_truncation,
    is_short_count,
    parse_context_error,
    reply_reserve,
)
from agent.gateway_errors import ContextOverflow, GatewayError
from agent.gateway_values import ChatDone
from agent.ollama_gateway import OllamaGateway
from agent.token_estimate import TokenEstimator
from agent.turn_events import ContextBudgeted
from memory.model_names import normalise_name

if TYPE_CHECKING:
    from memory.fact_drawer import InjectedFacts
    from memory.memory_store import RecallResult
    from memory.turn_memory import TurnMemory
    from store.daily_log import LogMessage

log = logging.getLogger("straylight.context")

IMAGE_TOKENS = 768
"""What one image on a message costs in the window: Ollama's own estimate for a CLIP image
in its truncation heuristic (models differ: llava's 576 patches, gemma3's 256, plus their
markers); the budget reserves it, and calibration takes it off `prompt_eval_count`."""


def fact_lines(injected: InjectedFacts | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`## Known facts` as (rules, facts): rules and capabilities (and the cap's note) are
    never cut, the other facts one a line, most relevant first. A block whose lines do not
    match its facts one to one is kept whole, as rules."""
    from memory.fact_injection import ALWAYS_TYPES

    if injected is None or not injected.block:
        return (), ()
    lines = injected.block.split("\n")
    facts = injected.facts
    if len(lines) != len(facts) + (1 if injected.cut else 0):
        return (injected.block,), ()
    rules = [line for line, fact in zip(lines, facts, strict=False) if fact.type in ALWAYS_TYPES]
    others = [
        line for line, fact in zip(lines, facts, strict=False) if fact.type not in ALWAYS_TYPES
    ]
    rules += lines[len(facts) :]  # the cap's note
    return tuple(rules), tuple(others)


def prompt_parts(
    *,
    persona: str,
    user: LogMessage,
    history: Sequence[LogMessage],
    longterm: str,
    injected: InjectedFacts | None,
    recall: RecallResult | None,
    tools: Sequence[dict[str, Any]] | None,
) -> PromptParts:
    """The turn's material as the budget's plain data."""
    from memory.recall_block import RECALL_PREAMBLE

    rules, facts = fact_lines(injected)
    return PromptParts(
        system=persona,
        user=user.content,
        rules=rules,
        longterm=longterm,
        facts=facts,
        recall=recall.entries if recall is not None else (),
        recall_head=RECALL_PREAMBLE,
        history=tuple(HistoryMessage(m.role, m.content) for m in history),
        tools=json.dumps(list(tools)) if tools else "",
    )


class TurnContext:
    """One engine's windows, token estimator and last context report."""

    def __init__(
        self,
        num_ctx: int | None,
        gateway: OllamaGateway,
        memory: Callable[[], TurnMemory | None],
    ) -> None:
        self.num_ctx = num_ctx
        self.gateway = gateway
        self._memory = memory  # the engine's, read each time: the TUI opens it after start-up
        self._windows: dict[str, WindowChoice] = {}  # the last choice per model
        self._learnt: dict[str, WindowChoice] = {}  # what Ollama showed it really runs
        self._estimator = TokenEstimator()
        self._loaded = False  # the stored calibration was read
        self._stored_windows: dict[str, int] | None = None  # learnt by earlier processes
        self._new_windows: dict[str, int] = {}  # learnt here, not saved yet
        self._checked: set[str] = set()  # models whose stored window /api/ps was asked about
        self._last_refusal: tuple[GatewayError, Overflow | None] | None = None  # read once

    async def window(self, model: str) -> WindowChoice:
        """The model's window, chosen once per model by the gateway (the same `num_ctx` on
        every request: a different one makes Ollama reload the model), unless Ollama showed
        it runs a smaller one (`/api/ps`, an HTTP 400) after a guess."""
        choice = self._learnt.get(model)
        if choice is None:
            choice = await self.gateway.context_window(model, self.num_ctx)
            stored = (await self._learnt_before()).get(normalise_name(model))
            if choice.model_max is None and stored is not None and stored < choice.window:
                choice = WindowChoice(stored, "loaded", stored)  # a guess again: what it ran
            elif stored is not None and stored < choice.window and model not in self._checked:
                # /api/show told the maximum, yet an earlier process saw Ollama run less (a
                # server that does not apply num_ctx): every `ask` was cut again. Asked once
                # a process: what the model runs now (a server fixed since: not kept)
                self._checked.add(model)
                loaded = await self._loaded_window(model)
                runs = stored if loaded is None else loaded
                if runs < choice.window:
                    self._learn(model, runs)
                    choice = self._learnt[model]
        self._windows[model] = choice
        return choice

    def _learn(self, model: str, window: int) -> None:
        """Ollama runs `model` with `window` (the guess was larger): the next turns use it,
        and the next processes too (`save`) while /api/show does not tell the maximum."""
        self._learnt[model] = self._windows[model] = WindowChoice(window, "loaded", window)
        self._new_windows[normalise_name(model)] = window

    async def _learnt_before(self) -> dict[str, int]:
        """The windows earlier processes learnt, read once the memory is open."""
        memory = self._memory()
        if self._stored_windows is None and memory is not None:
            from memory.context_meta import load_learnt_windows

            try:
                self._stored_windows = await asyncio.to_thread(load_learnt_windows, memory.store.db)
            except Exception:  # never in the way of the turn: guess again
                log.exception("reading the learnt context windows failed")
                self._stored_windows = {}
        return self._stored_windows or {}

    async def options(self, model: str) -> dict[str, Any]:
        """What every chat request of this model sends in `options`."""
        return {"num_ctx": (await self.window(model)).window}

    async def estimator(self) -> TokenEstimator:
        """The calibration, read from the memory once it is open (what this process learnt
        before that is kept for the models the stored state does not know)."""
        memory = self._memory()
        if not self._loaded and memory is not None:
            from memory.context_meta import load_calibration

            self._loaded = True
            try:
                state = await asyncio.to_thread(load_calibration, memory.store.db)
            except Exception:  # never in the way of the turn: start afresh
                log.exception("reading the token calibration failed")
                state = None
            stored = TokenEstimator.from_json(state)
            self._estimator = TokenEstimator({**self._estimator.models, **stored.models})
        return self._estimator

    async def budget(
        self, model: str, parts: PromptParts, *, images: int = 0
    ) -> tuple[BudgetedPrompt, ContextBudgeted]:
        """Fit `parts` into the model's window; the budget and its event. Each of `images`
        (on the user's message) is counted as `IMAGE_TOKENS` on top of the reply reserve."""
        choice = await self.window(model)
        estimator = await self.estimator()
        predict = (self.gateway.request_options(model) or {}).get("num_predict")
        reserve = reply_reserve(choice.window, predict if isinstance(predict, int) else None)
        # in a thread: a prompt of megabytes (a huge longterm.md, a paste) takes seconds
        budgeted = await asyncio.to_thread(
            functools.partial(
                budget_prompt,
                parts,
                window=choice.window,
                reply_reserve=reserve + IMAGE_TOKENS * images,
                factor=estimator.factor(model),
                margin=estimator.margin(model),
            )
        )
        event = ContextBudgeted(
            model=model,
            window=choice.window,
            model_max=choice.model_max,
            tokens=budgeted.total,
            reply_reserve=reserve,
            cut=dict(budgeted.cut),
            notes=budgeted.notes,
            headroom=budgeted.headroom,
        )
        return budgeted, event

    async def after_reply(
        self, model: str, budgeted: BudgetedPrompt, done: ChatDone, *, images: int = 0
    ) -> Overflow | None:
        """Ollama's `prompt_eval_count` against the estimate: a truncation (named, and the
        estimate raised) or one more calibration observation. The images' tokens are taken
        off Ollama's count first: the estimate is of the text."""
        choice = await self.window(model)
        estimator = await self.estimator()
        evaluated = done.prompt_eval_count
        if evaluated is not None and images:
            evaluated = max(0, evaluated - IMAGE_TOKENS * images)
            done = replace(done, prompt_eval_count=evaluated)
        overflow = detect_truncation(
            budgeted.total, done.prompt_eval_count, choice.window, choice.model_max
        )
        # the window was a guess, or the count fell short of the estimate (a cut, or the
        # prompt cache): ask what Ollama really runs (a server may not apply num_ctx)
        short = is_short_count(budgeted.total, done.prompt_eval_count)
        if choice.model_max is None or short:
            loaded = await self._loaded_window(model)
            if loaded is not None and loaded < choice.window:
                self._learn(model, loaded)  # also after a cut: the next turns fit
                smaller = detect_smaller_window(
                    budgeted.total,
                    choice.window,
                    loaded,
                    maximum_known=choice.model_max is not None,
                ) or detect_truncation(budgeted.total, done.prompt_eval_count, loaded, loaded)
                named = smaller or overflow
                if named is not None:
                    log.warning("%s", named.message)
                    return named  # a cut prompt's count says nothing of the estimate
        if overflow is not None:
            log.warning("%s", overflow.message)
            estimator.note_truncation(model)
            return overflow
        filled = detect_filled_window(
            budgeted.total, done.prompt_eval_count, choice.window, choice.model_max
        )
        if filled is not None and done.prompt_eval_count is not None:
            log.warning("%s", filled.message)
            estimator.note_counted(model, budgeted.estimate, done.prompt_eval_count)
            return filled
        estimator.observe(model, budgeted.estimate, done.prompt_eval_count)
        return reply_ran_past(done, choice.window)

    async def _loaded_window(self, model: str) -> int | None:
        """The window Ollama loaded `model` with (`/api/ps`), None when it cannot say."""
        from agent.model_catalog import running_models

        try:
            running = await asyncio.wait_for(
                running_models(self.gateway.client()), self.gateway.metadata_timeout
            )
        except (GatewayError, TimeoutError) as error:
            log.info("could not read /api/ps for %s's window: %s", model, error)
            return None
        entry = running.get(normalise_name(model))
        return entry.context_length if entry is not None else None

    def refused(self, error: GatewayError, model: str) -> GatewayError:
        """An HTTP 400 that names the context becomes its one line with the fix; any other
        error is returned as it was."""
        overflow, _smaller = self._context_refusal(error, model)
        return error if overflow is None else ContextOverflow(overflow.message)

    async def refit(
        self,
        error: GatewayError,
        model: str,
        budgeted: BudgetedPrompt,
        parts: PromptParts,
        *,
        images: int = 0,
    ) -> tuple[BudgetedPrompt, ContextBudgeted, str] | None:
        """Ollama refused `budgeted` as longer than its window: the estimate learns how long
        the prompt was (the size the refusal names, else more than the window) or the smaller
        window it names, and `parts` are fitted again — the new budget, its event and one
        line saying so. None when the new fit does not fit or leaves out nothing more."""
        overflow, smaller = self._context_refusal(error, model)
        if overflow is None:
            return None
        estimator = await self.estimator()
        # Ollama's own refusal names no size: the prompt was longer than the window, at least
        window = overflow.window or self._windows[model].window
        at_least = overflow.prompt_tokens or window + 1
        counted = at_least - IMAGE_TOKENS * images
        learnt = counted > 0 and estimator.note_counted(model, budgeted.estimate, counted)
        if not (learnt or smaller):
            return None
        again, event = await self.budget(model, parts, images=images)
        if not again.fits or again.estimate.content >= budgeted.estimate.content:
            return None
        size = f" ({overflow.prompt_tokens:,} tokens)" if overflow.prompt_tokens else ""
        room = f" of {overflow.window:,}" if overflow.window else ""
        left_out = f": {'; '.join(again.notes)}" if again.notes else ""
        told = (
            f"Ollama refused the prompt{size} as longer than its window{room}; "
            f"Straylight counts this model's tokens higher now and sent it again{left_out}"
        )
        log.warning("%s", told)
        return again, event, told

    def _context_refusal(self, error: GatewayError, model: str) -> tuple[Overflow | None, bool]:
        """The overflow an HTTP 400 names (None for any other error), and whether it taught
        a smaller window than the one sent (the model's maximum, which /api/show hid). Read
        once per error: a second look (`refused` after `refit`) would see the learnt window."""
        if self._last_refusal is not None and self._last_refusal[0] is error:
            return self._last_refusal[1], False
        found = self._read_refusal(error, model)
        self._last_refusal = (error, found[0])
        return found

    def _read_refusal(self, error: GatewayError, model: str) -> tuple[Overflow | None, bool]:
        cause = error.__cause__
        text = str(getattr(cause, "error", "") or "") if cause is not None else ""
        choice = self._windows.get(model)
        overflow = parse_context_error(
            text or str(error),
            window=choice.window if choice else None,
            model_max=choice.model_max if choice else None,
        )
        if overflow is None:
            return None, False
        real = overflow.window
        # a window smaller than the one sent: the model's maximum, which /api/show hid, or a
        # server that does not apply num_ctx (its default runs whatever was sent)
        if choice is not None and real and real < choice.window:
            self._learn(model, real)  # the next turns fit
            return overflow, True
        return overflow, False

    async def save(self, report: ContextBudgeted | None) -> None:
        """Persist the calibration and the last report (for `status`), when the memory is
        open; never raises."""
        memory = self._memory()
        if memory is None:
            return
        from memory.context_meta import save_turn_context

        calibration = self._estimator.to_json() if self._loaded else None
        saved = {**report.to_json(), "notes": list(report.notes)} if report else None
        windows = None
        if self._new_windows:
            windows = {**await self._learnt_before(), **self._new_windows}
            self._stored_windows, self._new_windows = windows, {}
        try:
            await asyncio.to_thread(save_turn_context, memory.store.db, calibration, saved, windows)
        except Exception:
            log.exception("saving the context report failed")


def reply_ran_past(done: ChatDone, window: int) -> Overflow | None:
    """The prompt fitted, but the prompt and the reply together (a thinking model's long
    reasoning counts in `eval_count`) took more than the window: Ollama shifts the context
    then, dropping part of what came first (the persona, longterm.md, the memory) while the
    model still answers — without a word, where the issue wants one."""
    prompt, reply = done.prompt_eval_count or 0, done.eval_count or 0
    if not prompt or prompt + reply <= window:
        return None
    message = (
        f"the prompt ({prompt:,} tokens) and the reply ({reply:,}, thinking included) took "
        f"more than the {window:,}-token window: Ollama dropped part of the context while "
        "the model answered (the persona and memory at its start among it); raise num_ctx, "
        "or set think lower for a thinking model"
    )
    log.warning("%s", message)
    return Overflow("truncated", message, prompt + reply, window)
