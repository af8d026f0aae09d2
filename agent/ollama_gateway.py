"""The one door to Ollama: the official async client with explicit timeouts. What it answers
with (`OllamaStatus`, the chat stream's events) is in agent/gateway_values.py, how it fails in
agent/gateway_errors.py.

`ollama` and `httpx` are imported on first use, never at module import, so the TUI paints
its first frame before they load.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent.context_window import WindowChoice, choose_window
from agent.gateway_errors import (
    GatewayError,
    ModelError,
    ModelNotPulled,
    ModelTimeout,
    OllamaRedirected,
    OllamaUnreachable,
    StreamCutOff,
    classify,
    proxy_unusable,
)
from agent.gateway_values import (
    ChatDelta,
    ChatDone,
    ChatEvent,
    ChatThinking,
    ChatToolCalls,
    OllamaStatus,
    ToolCall,
)
from agent.model_options import options_for
from agent.ollama_host import is_loopback_host, is_plain_loopback
from agent.ollama_import import import_ollama
from agent.think_splitter import ThinkSplitter
from memory.model_names import normalise_name
from memory.secret_masking import replace_lone_surrogates

if TYPE_CHECKING:
    import httpx
    import ollama

    from agent.settings_models import OllamaConfig

log = logging.getLogger("straylight.gateway")

SHOW_RETRY_SECONDS = 60.0
"""A model's /api/show that timed out is not asked again for this long (one turn asks for
its capabilities and its window before and after the reply: 5 s each)."""


def answer_text(content: str) -> str:
    """`content` without an inline `<think>…</think>` at its start (a whole reply)."""
    splitter = ThinkSplitter()
    pieces = splitter.feed(content) + splitter.flush()
    return "".join(text for kind, text in pieces if kind == "answer")


def _tool_calls(raw: Sequence[Any]) -> tuple[ToolCall, ...]:
    calls = []
    for call in raw:
        function = getattr(call, "function", None)
        name = str(getattr(function, "name", "") or "")
        arguments = getattr(function, "arguments", None)
        calls.append(ToolCall(name, dict(arguments) if isinstance(arguments, Mapping) else {}))
    return tuple(calls)


def timed_out(error: GatewayError) -> bool:
    """A request that got no answer in time: a read timeout, or a connection not accepted
    in time (either way the next metadata calls would wait as long again)."""
    if isinstance(error, OllamaUnreachable):
        return error.connect_timed_out is not None
    return isinstance(error, ModelTimeout)


CONNECT_FAILURE_SECONDS = 10.0
"""How long a connect timeout is taken as the answer for the next chat or embedding request
of the same process, rather than waited for again."""


class OllamaGateway:
    """Chat and health checks against one Ollama host."""

    def __init__(
        self,
        host: str,
        *,
        read_timeout: float = 300.0,
        connect_timeout: float = 5.0,
        model_options: Mapping[str, Any] | None = None,
        keep_alive: str | float | None = None,
        num_ctx: int | None = None,
    ) -> None:
        self.host = host
        self.num_ctx = num_ctx  # the `num_ctx` setting (None: chosen per model)
        self.read_timeout = read_timeout
        self.connect_timeout = connect_timeout
        self.model_options = dict(model_options or {})  # config.toml [model_options]
        self.keep_alive = keep_alive  # None: Ollama's default
        self._client: ollama.AsyncClient | None = None
        self._windows: dict[tuple[str, int | None], WindowChoice] = {}
        self._stalled = False  # a request timed out and Ollama has not answered since
        self._connect_timed_out: tuple[float, OllamaUnreachable] | None = None
        self._show_timed_out: dict[str, float] = {}  # model → when its /api/show timed out
        self.not_pulled: set[str] = set()  # models /api/show last said Ollama does not have

    @classmethod
    def from_config(cls, config: OllamaConfig) -> OllamaGateway:
        """The gateway to the configured host with the configured timeouts."""
        return cls(
            config.host,
            read_timeout=config.http_timeout_seconds,
            connect_timeout=config.connect_timeout_seconds,
            model_options=config.model_options,
            keep_alive=config.keep_alive,
            num_ctx=config.num_ctx,
        )

    def request_options(
        self, model: str, options: Mapping[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """The `options` of a chat request: the model options of config.toml for `model`,
        then `options` (the caller's, e.g. num_ctx) over them; None when there are none."""
        merged = options_for(self.model_options, model) | dict(options or {})
        return merged or None

    def _get_client(self) -> ollama.AsyncClient:
        """The client, made on first use: no redirect is followed, and a loopback host is
        reached directly even when HTTP_PROXY & co. are set (a remote host still honours
        them: the environment is how a user configures a proxy for a remote Ollama)."""
        if self._client is None:
            import httpx

            ollama = import_ollama()
            host = self.host or os.environ.get("OLLAMA_HOST") or ""
            timeout = httpx.Timeout(self.read_timeout, connect=self.connect_timeout)
            try:
                self._client = self._new_client(ollama, host, timeout)
            except (ImportError, ValueError) as error:  # the proxy of the environment
                raise proxy_unusable(host, error) from error
        return self._client

    def _new_client(self, module: Any, host: str, timeout: Any) -> ollama.AsyncClient:
        client: ollama.AsyncClient = module.AsyncClient(
            host=host,
            timeout=timeout,
            follow_redirects=False,
            trust_env=not is_loopback_host(host),
            # This machine over plain HTTP (the usual Ollama) never speaks TLS: no proxy,
            # no redirect followed. Its client skips loading the certificate store (20-40
            # ms of every command's start); any other host verifies certificates.
            verify=not is_plain_loopback(host),
            event_hooks={"response": [self._on_response]},
        )
        return client

    def client(self) -> ollama.AsyncClient:
        """The underlying client, for the model catalogue (agent/model_catalog.py)."""
        return self._get_client()

    @property
    def metadata_timeout(self) -> float:
        """Seconds a metadata call (/api/version, /api/tags, /api/show) may take: the connect
        timeout, never more than the read timeout. Ollama answers them from memory; the read
        timeout is for a model's reply (a slow /api/show once delayed every ask by 41 s)."""
        return min(self.connect_timeout, self.read_timeout)

    def _named(
        self,
        error: BaseException,
        *,
        model: str,
        timeout: float,
        streamed: bool,
        metadata: bool = False,
    ) -> GatewayError:
        """`classify`, and remember a timeout: until Ollama answers again, metadata calls are
        skipped rather than waited for (a hung server is reported after one timeout, not
        after the timeouts of every call before the chat). `metadata`: a call limited by
        `metadata_timeout`, so a timeout names the setting that limit comes from."""
        named = classify(
            error,
            host=self.host,
            model=model,
            timeout=timeout,
            streamed=streamed,
            connect_timeout=min(self.connect_timeout, timeout),
            metadata=metadata,
        )
        if timed_out(named):
            self._stalled = True
        if isinstance(named, OllamaUnreachable) and named.connect_timed_out is not None:
            self._connect_timed_out = (time.monotonic(), named)
        return named

    def _raise_if_just_unreachable(self) -> None:
        """A host that did not take a connection a moment ago (`CONNECT_FAILURE_SECONDS`) is
        named again at once: `ask` waited the connect timeout for the query's embedding,
        then again for the chat (12 s for a 5 s limit). Any answer clears it; the status
        check always tries."""
        if self._connect_timed_out is None:
            return
        when, error = self._connect_timed_out
        if time.monotonic() - when < CONNECT_FAILURE_SECONDS:
            raise error
        self._connect_timed_out = None

    async def _on_response(self, response: httpx.Response) -> None:
        """Every answer ends a stall; a 3xx answer is refused (see `_refuse_redirect`)."""
        self._stalled = False
        self._connect_timed_out = None
        self._refuse_redirect(response)

    def _refuse_redirect(self, response: httpx.Response) -> None:
        """A 3xx answer is an error that names where it pointed; the request is not re-sent."""
        if 300 <= response.status_code < 400:
            location = response.headers.get("location")
            target = str(response.url.join(location)) if location else None
            raise OllamaRedirected(self.host, target)

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def check(self) -> OllamaStatus:
        """Version and pulled models; never raises."""
        ollama = import_ollama()

        timeout = self.metadata_timeout
        version: str | None = None
        answered = False  # /api/version came back: a server is there
        try:
            client = self._get_client()  # (a proxy it cannot use: a status line too)
            response = await client._client.get("/api/version", timeout=timeout)
            response.raise_for_status()
            answered = True
            version = str(response.json().get("version", "")) or None
            # `client.list()` takes no timeout: the same request through the client's
            # `_request` (its errors, its parsing) with the metadata timeout.
            listed = await client._request(ollama.ListResponse, "GET", "/api/tags", timeout=timeout)
            models = tuple(m.model for m in listed.models if m.model)
        except Exception as error:  # noqa: BLE001 - any failure is a status line
            metadata = self.connect_timeout <= self.read_timeout  # the limit it came from
            named = self._named(error, model="", timeout=timeout, streamed=False, metadata=metadata)
            log.info("ollama check failed: %r", error)
            kind = named.kind
            if answered and kind in ("unreachable", "timeout"):
                kind = "model_error"  # it answered /api/version: up, its list failing, not offline
            return OllamaStatus(
                self.host, reachable=False, version=version, error=str(named), error_kind=kind
            )
        return OllamaStatus(self.host, reachable=True, version=version, models=models)

    async def check_with_capabilities(self) -> OllamaStatus:
        """`check`, plus what each pulled model can do (one /api/show per model, kept for the
        process): for the chat's model choice. `status` and the jobs need only `check`."""
        status = await self.check()
        if not status.reachable:
            return status
        capabilities = await asyncio.gather(*(self.capabilities(m) for m in status.models))
        return replace(status, capabilities=tuple(capabilities))

    async def stream_chat(
        self,
        model: str,
        messages: Sequence[dict[str, Any]],
        *,
        options: dict[str, Any] | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
        think: bool | str | None = None,
    ) -> AsyncIterator[ChatEvent]:
        """Yield reply text as it arrives (thinking as `ChatThinking`), then one `ChatDone`.

        `think` is sent only when not None (the caller knows whether the model thinks).
        Raises a `GatewayError`; a stream that ends without Ollama's final chunk raises
        `StreamCutOff`. Cancelling the consumer closes the HTTP stream.
        """
        self._raise_if_just_unreachable()
        client = self._get_client()
        streamed = False
        finished = False
        splitter = ThinkSplitter()  # models that inline <think>…</think> in content
        try:
            stream = await client.chat(
                model=model,
                messages=list(messages),
                stream=True,
                options=self.request_options(model, options),
                tools=list(tools) if tools else None,
                think=think,
                keep_alive=self.keep_alive,
            )
            async for part in stream:
                thought = replace_lone_surrogates(getattr(part.message, "thinking", None) or "")
                if thought:
                    streamed = True
                    yield ChatThinking(thought)
                text = part.message.content or ""
                # a "\ud800" escape is not writable; a NUL would make the log a binary file
                text = replace_lone_surrogates(text).replace("\0", "")
                pieces = splitter.feed(text) if text else []
                if part.done:
                    pieces += splitter.flush()
                for kind, piece in pieces:
                    streamed = True
                    yield ChatDelta(piece) if kind == "answer" else ChatThinking(piece)
                if part.message.tool_calls:
                    yield ChatToolCalls(_tool_calls(part.message.tool_calls))
                if part.done:
                    finished = True
                    yield ChatDone(
                        eval_count=part.eval_count,
                        prompt_eval_count=part.prompt_eval_count,
                        total_duration_ns=part.total_duration,
                        eval_duration_ns=part.eval_duration,
                        done_reason=part.done_reason,
                    )
                    break
        except GatewayError:
            raise
        except Exception as error:
            named = self._named(error, model=model, timeout=self.read_timeout, streamed=streamed)
            log.warning("chat with %s failed: %s (%r)", model, named, error, exc_info=error)
            raise named from error
        if not finished:
            log.warning("chat with %s ended without a final chunk", model)
            raise StreamCutOff("Ollama closed the stream before the reply finished")

    async def context_window(self, model: str, setting: int | None = None) -> WindowChoice:
        """The window every request of `model` sends as `options.num_ctx`: the `setting`
        (default: this gateway's `num_ctx`), else the Modelfile's, else the model's maximum
        capped (`agent.context_window.choose_window`). Chosen once per model and setting: a
        request with another `num_ctx` would make Ollama reload the model. A choice made
        without /api/show's answer (the model not pulled yet, Ollama down) is not kept: the
        next request asks again, so a model pulled later gets its real window."""
        chosen = setting if setting is not None else self.num_ctx
        key = (normalise_name(model), chosen)
        choice = self._windows.get(key)
        if choice is None:
            shown = await self.show(model)
            choice = choose_window(chosen, shown)
            log.info("context window of %s: %s", model, choice.describe())
            if shown is not None:
                self._windows[key] = choice
        return choice

    async def chat_structured(
        self, model: str, messages: Sequence[dict[str, Any]], schema: dict[str, Any]
    ) -> str:
        """One non-streamed reply constrained to a JSON schema (Ollama's `format`); the raw
        text. It carries the model options of config.toml and the same `num_ctx` as the chat
        (the reflection and the dream: without it Ollama's default window cuts their prompt,
        and a different window would reload the model). Raises a named `GatewayError`."""
        client = self._get_client()
        window = {"num_ctx": (await self.context_window(model)).window}
        try:
            response = await client.chat(
                model=model,
                messages=list(messages),
                stream=False,
                format=schema,
                options=self.request_options(model, window),
                keep_alive=self.keep_alive,
            )
        except Exception as error:  # classified and re-raised
            named = self._named(error, model=model, timeout=self.read_timeout, streamed=False)
            log.warning("structured chat with %s failed: %s (%r)", model, named, error)
            raise named from error
        content = response.message.content or ""
        answer = answer_text(content)
        if not answer.strip():  # a thinking model that only thought: named as the chat names it
            thought = len(response.message.thinking or "") + len(content) - len(answer)
            raise ModelError(
                f"{model} gave no answer, only {thought:,} characters of thinking (not kept)"
                if thought
                else f"{model} gave no answer (an empty reply)"
            )
        return answer

    async def show(self, model: str) -> Any | None:
        """The raw /api/show answer (the client's ShowResponse: `model_info`, `parameters`,
        `capabilities`) with the metadata timeout, skipped while Ollama is stalled. Kept in
        the model catalogue's cache of this gateway's client (agent/model_catalog.py), which
        the models list and screen read too; a failure is not kept."""
        from agent.model_catalog import cached_show, fetch_show

        client = self._get_client()
        known = cached_show(client, model)
        if known is not None:
            return known
        if self._stalled:
            log.info("/api/show of %s not asked: Ollama timed out and has not answered", model)
            return None
        timed_out_at = self._show_timed_out.get(normalise_name(model))
        if timed_out_at is not None and time.monotonic() - timed_out_at < SHOW_RETRY_SECONDS:
            log.info("/api/show of %s not asked again: it timed out a moment ago", model)
            return None
        try:
            shown = await fetch_show(client, model, timeout=self.metadata_timeout)
        except GatewayError as error:  # unknown, not fatal
            if timed_out(error):
                self._stalled = True
                # the chat's own answer ends the stall, but not this one's: the turn's
                # later asks (its window after the reply) would wait the limit again
                self._show_timed_out[normalise_name(model)] = time.monotonic()
            if isinstance(error, ModelNotPulled):  # the chat names it: nothing else to say
                self.not_pulled.add(model)
            log.info("could not read /api/show of %s: %s", model, error)
            return None
        self.not_pulled.discard(model)
        return shown

    async def capabilities(self, model: str) -> tuple[str, ...] | None:
        """The model's capabilities from /api/show ("completion", "tools", …); None when
        Ollama does not say (old servers) or cannot be asked in `metadata_timeout` seconds.
        Read from `show`, so an answer is kept for the life of the gateway; a failure is not."""
        shown = await self.show(model)
        capabilities = getattr(shown, "capabilities", None) if shown is not None else None
        return tuple(str(c) for c in capabilities) if capabilities is not None else None

    async def embed(self, model: str, texts: Sequence[str]) -> list[list[float]]:
        """One /api/embed request for all `texts`; raises a named `GatewayError`.

        Vectors come back in input order; a reply with the wrong count is a `ModelError`.
        It carries `keep_alive` as the chat does: the setting is for both models.
        """
        self._raise_if_just_unreachable()
        client = self._get_client()
        try:
            response = await client.embed(
                model=model, input=list(texts), keep_alive=self.keep_alive
            )
        except Exception as error:  # classified and re-raised
            named = self._named(error, model=model, timeout=self.read_timeout, streamed=False)
            log.warning("embedding with %s failed: %s (%r)", model, named, error)
            raise named from error
        vectors = [list(vector) for vector in response.embeddings]
        if len(vectors) != len(texts):
            raise ModelError(f"Ollama returned {len(vectors)} embeddings for {len(texts)} texts")
        return vectors
