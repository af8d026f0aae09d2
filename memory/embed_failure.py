"""How an embedding fails, as the memory's turn and ingest see it: the embedder's type, the
error an embedder raises for a reason it named, and the note for one it did not
(memory/turn_memory.py uses them; tui/memory_session.embedder_for raises the error)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

EmbedFn = Callable[[Sequence[str]], Awaitable[list[list[float]]]]


class EmbeddingFailed(Exception):
    """The embedding gave no vectors for a reason the embedder named (the model is not
    pulled, Ollama refused the connection, the request timed out…); `str()` is the one line
    naming it and the fix, which the notes repeat (tui/memory_session.embedder_for).
    `reached`: whether the request got to Ollama (False: no connection), for the count."""

    def __init__(self, message: str, *, reached: bool = True) -> None:
        super().__init__(message)
        self.reached = reached


def unnamed_embed_problem(error: Exception) -> str:
    """The note for an embedder's error it did not name: a timeout says so, a refused
    connection says that; anything else points to the log."""
    if isinstance(error, TimeoutError):
        return "the embedding request timed out"
    if isinstance(error, ConnectionError):
        return "Ollama was not reachable"
    return f"the embedding request failed ({type(error).__name__}; details in straylight.log)"
