"""Changing what Ollama has: pull a model (its progress records as `PullProgress`, its
failures as `PullFailed` / `PullNameInvalid`) and delete one. Both drop the model's cached
/api/show answer (agent/model_catalog.py `forget_shown`), so the next listing asks again.

Like the catalogue, the functions take an `ollama.AsyncClient` (`OllamaGateway.client()`)
and import `ollama`/`httpx` only when called.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.gateway_errors import EXIT_USAGE, GatewayError, OllamaRedirected, one_line
from agent.model_catalog import forget_shown, named
from memory.secret_masking import mask_secrets

if TYPE_CHECKING:
    import ollama


EXIT_PULL_FAILED = 1


@dataclass(frozen=True, slots=True)
class PullProgress:
    """One progress record of a pull: a status, and for a layer its digest and byte counts."""

    status: str
    digest: str | None = None
    total: int | None = None
    completed: int | None = None

    @property
    def fraction(self) -> float | None:
        """Share of this layer done (0…1), None when the record has no total."""
        if not self.total:
            return None
        return min(1.0, (self.completed or 0) / self.total)


class PullFailed(GatewayError):
    """Ollama refused or broke off a pull; `str()` is Ollama's message."""

    kind = "pull_failed"
    exit_code = EXIT_PULL_FAILED


class PullNameInvalid(PullFailed):
    """Ollama cannot parse the name (HTTP 400 `invalid model name`): a usage error."""

    kind = "pull_name_invalid"
    exit_code = EXIT_USAGE


INVALID_NAME_ERROR = "invalid model name"


async def pull_model(client: ollama.AsyncClient, name: str) -> AsyncIterator[PullProgress]:
    """Pull `name`, yielding Ollama's progress records until "success".

    Raises `PullFailed` with Ollama's message ("pull model manifest: file does not exist"
    for an unknown model) or when the stream breaks off, `OllamaUnreachable` when Ollama is
    down, `OllamaRedirected` when the host answers with a redirect. Closing the iterator
    (Ctrl+C) closes the HTTP stream; Ollama keeps what it has and a later pull resumes."""
    import httpx
    import ollama

    forget_shown(client, name)
    succeeded = False
    try:
        stream = await client.pull(name, stream=True)
        async for record in stream:
            progress = PullProgress(
                status=str(record.status or ""),
                digest=record.digest or None,
                total=record.total,
                completed=record.completed,
            )
            succeeded = succeeded or progress.status == "success"
            yield progress
    except OllamaRedirected:  # the host answered 3xx: exit 3 as for every command, not 1
        raise
    except ollama.ResponseError as error:
        detail = one_line(mask_secrets(str(error.error or "")))  # a proxy's HTML page, too
        if error.status_code == 400 and detail == INVALID_NAME_ERROR:
            raise PullNameInvalid(
                f"Ollama says {name!r} is an invalid model name: a name looks like llama3.2, "
                "qwen3:8b or hf.co/USER/REPO:TAG (letters, digits, _ - ., no spaces)"
            ) from error
        if error.status_code == 403 or (error.status_code == 404 and not detail.strip()):
            raise named(client, error, name) from error  # not Ollama's own: exit 5, as for ask
        raise PullFailed(detail or "Ollama refused the pull") from error
    except (ConnectionError, httpx.ConnectError, httpx.ConnectTimeout) as error:
        raise named(client, error, name) from error
    except httpx.TransportError as error:
        if isinstance(error, httpx.TimeoutException):
            raise PullFailed(str(named(client, error, name))) from error
        raise PullFailed("the connection to Ollama dropped during the pull") from error
    except Exception as error:  # malformed lines and the like
        raise PullFailed(str(named(client, error, name))) from error
    if not succeeded:
        raise PullFailed("Ollama ended the pull without reporting success")


async def delete_model(client: ollama.AsyncClient, name: str) -> None:
    """Delete a pulled model; `ModelNotPulled` when Ollama does not have it."""
    forget_shown(client, name)
    try:
        await client.delete(name)
    except Exception as error:  # classified and re-raised
        raise named(client, error, name) from error
