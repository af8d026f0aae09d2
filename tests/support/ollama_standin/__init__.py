"""A real HTTP stand-in for the Ollama server, for tests and benchmarks.

`OllamaStandIn` serves the subset of the Ollama REST API that Straylight uses
(``/api/version``, ``/api/tags``, ``/api/show``, ``/api/ps``, ``/api/chat``,
``/api/embed`` and the legacy ``/api/embeddings``) on ``127.0.0.1`` from a
daemon thread, so tests can drive the *real* ``ollama`` python client (and the
``httpx`` transport under it) without mocks.

Only the standard library is used. Replies are deterministic:

* chat replies come from a FIFO queue filled with `OllamaStandIn.script_reply`,
  falling back to ``"Stand-in reply to: " + <last user message>``;
* embeddings are a hashed bag of lowercase words plus a small sha256-seeded
  component, L2-normalised, so texts sharing words are more similar than
  unrelated texts; an ``embedder`` callable (``list[str] -> list[list[float]]``,
  e.g. `bench.minilm_embedder.load_minilm`) replaces them with real vectors.

Faults are injected with `OllamaStandIn.fail_next` (``status``, ``delay``,
``stall``, ``drop``, ``malformed``, ``error_line``, ``embed_dim``), and
`OllamaStandIn.stop` really closes the listening socket (connections are
refused) while `OllamaStandIn.start` brings the server back on the same port.

Run it by hand with::

    python -m tests.support.ollama_standin --port 11434 [--embed-dim 768] [--token-delay 0.02]
        [--embedder minilm]

Modules: `server` (the public class), `handler` (HTTP plumbing), `routes` (the endpoints),
`replies` (chat chunks), `models` (names, capabilities, details), `faults`, `embeddings`,
`wire` (JSON helpers) and `cli`.
"""

from .catalog import LoadedModel
from .cli import main
from .context import CONTEXT_MODES, DEFAULT_NUM_CTX, ContextMode, context_error
from .embeddings import Embedder, cosine_similarity, embed_text
from .faults import FAULT_KINDS, Fault, FaultKind
from .models import ModelSpec, normalize_model_name
from .replies import DEFAULT_REPLY_PREFIX, DEFAULT_THINKING_PREFIX, ScriptedReply, split_tokens
from .server import OllamaStandIn
from .tokens import estimate_tokens, prompt_tokens
from .wire import ChatOutcome, RecordedRequest

__all__ = [
    "CONTEXT_MODES",
    "DEFAULT_NUM_CTX",
    "DEFAULT_REPLY_PREFIX",
    "DEFAULT_THINKING_PREFIX",
    "FAULT_KINDS",
    "ChatOutcome",
    "ContextMode",
    "Embedder",
    "Fault",
    "FaultKind",
    "LoadedModel",
    "ModelSpec",
    "OllamaStandIn",
    "RecordedRequest",
    "ScriptedReply",
    "context_error",
    "cosine_similarity",
    "embed_text",
    "estimate_tokens",
    "main",
    "normalize_model_name",
    "prompt_tokens",
    "split_tokens",
]
