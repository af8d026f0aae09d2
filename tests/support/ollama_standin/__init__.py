"""A real HTTP stand-in for the Ollama server, for tests and benchmarks.

`OllamaStandIn` serves the subset of the Ollama REST API that Straylight uses
(``/api/version``, ``/api/tags``, ``/api/show``, ``/api/ps``, ``/api/chat``,
``/api/embed``, the legacy ``/api/embeddings``, ``/api/pull`` and ``/api/delete``)
on ``127.0.0.1`` from a daemon thread, so tests can drive the *real* ``ollama``
python client (and the ``httpx`` transport under it) without mocks.

Only the standard library is used. Replies are deterministic:

* chat replies come from a FIFO queue filled with `OllamaStandIn.script_reply`,
  falling back to ``"Stand-in reply to: " + <last user message>``; one streamed
  chunk is one token, so ``eval_count`` counts the chunks;
* ``prompt_eval_count`` is the stand-in's token estimate of the prompt the model
  saw (`tokens`: about 4 characters a token for prose, fewer for German and code,
  plus a llama3-like chat template);
* embeddings are a hashed bag of lowercase words plus a small sha256-seeded
  component, L2-normalised, so texts sharing words are more similar than
  unrelated texts; an ``embedder`` callable (``list[str] -> list[list[float]]``,
  e.g. `bench.minilm_embedder.load_minilm`) replaces them with real vectors.

What Ollama does, learnt from its API docs and source (each module says where):

* context window (`context`): a request without ``options.num_ctx`` runs with the
  model's ``num_ctx`` parameter or the server default (4,096), capped at the model's
  ``context_length``. ``context_mode`` "truncate" (the default, as Ollama does it)
  drops the oldest non-system messages silently; "error" answers HTTP 400 naming the
  window; "unlimited" accepts every prompt whole (no Ollama does).
  `OllamaStandIn.chat_outcomes` (and ``RecordedRequest.chat``) tell what the model kept;
  ``RecordedRequest.options`` / ``keep_alive`` / ``think`` what was sent
  (``received``: when);
* thinking (`chat`, `replies`): models with the ``thinking`` capability (qwen3,
  deepseek-r1, gpt-oss, … by name, or configured) stream ``message.thinking`` before
  the answer; ``think`` is validated as Ollama does; inline ``<think>`` thinkers too;
* models (`models`, `catalog`): `ModelSpec` per model (capabilities, architecture,
  context length, parameters, details, size); ``/api/ps`` lists the models that served
  a request, with their window and ``keep_alive`` expiry; ``/api/pull`` streams
  Ollama's progress records from a registry of known families; ``/api/delete``;
* images on chat messages for models with the ``vision`` capability;
* ``options.num_predict`` (``done_reason`` "length") and ``options.stop``.

Faults are injected with `OllamaStandIn.fail_next` (``status``, ``delay``,
``stall``, ``drop``, ``malformed``, ``error_line``, ``embed_dim``; stream faults
with ``path="/api/pull"`` break a pull), and `OllamaStandIn.stop` really closes the
listening socket (connections are refused) while `OllamaStandIn.start` brings the
server back on the same port.

Run it by hand with::

    python -m tests.support.ollama_standin --port 11434 [--embed-dim 768] [--token-delay 0.02]
        [--embedder minilm] [--context-mode truncate] [--num-ctx 4096]
        [--context-length llama3.2=8192]

Modules: `server` (the public class), `script` (replies, faults, request log),
`handler` (HTTP plumbing), `routes` (the table and small endpoints), `chat`, `embed`,
`pull`, `context`, `tokens`, `replies`, `models`, `catalog`, `faults`, `embeddings`,
`wire` (JSON helpers and records) and `cli`.
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
