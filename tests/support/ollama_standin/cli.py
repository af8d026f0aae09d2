"""``python -m tests.support.ollama_standin``: serve the stand-in on a port until Ctrl-C."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from .context import CONTEXT_MODES, DEFAULT_NUM_CTX
from .embeddings import Embedder
from .models import DEFAULT_MODELS, ModelSpec
from .server import OllamaStandIn

__all__ = ["main"]


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Serve a fake Ollama API on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=11434, help="port (0: any free port)")
    parser.add_argument("--embed-dim", type=int, default=768, help="embedding dimension")
    parser.add_argument("--token-delay", type=float, default=0.0, help="seconds between chunks")
    parser.add_argument(
        "--models", nargs="+", default=list(DEFAULT_MODELS), help="installed model names"
    )
    parser.add_argument(
        "--embedder",
        choices=("hash", "minilm"),
        default="hash",
        help="hash: hashed bag of words (default); minilm: real all-MiniLM-L6-v2 vectors "
        "(384-d, needs the 'bench' extra; also installs the model name all-minilm)",
    )
    parser.add_argument(
        "--context-mode",
        choices=CONTEXT_MODES,
        default="truncate",
        help="what an over-long prompt meets: truncate (oldest messages dropped silently, "
        "like Ollama; default), error (HTTP 400) or unlimited (accepted whole)",
    )
    parser.add_argument(
        "--num-ctx",
        type=int,
        default=DEFAULT_NUM_CTX,
        help=f"window of a request without options.num_ctx (default {DEFAULT_NUM_CTX})",
    )
    parser.add_argument(
        "--context-length",
        action="append",
        default=[],
        metavar="MODEL=TOKENS",
        help="a model's maximum window (<arch>.context_length); repeatable",
    )
    return parser.parse_args(argv)


def _context_lengths(pairs: Sequence[str]) -> dict[str, ModelSpec]:
    specs: dict[str, ModelSpec] = {}
    for pair in pairs:
        name, _, tokens = pair.rpartition("=")
        if not name or not tokens.isdigit():
            raise SystemExit(f"error: --context-length wants MODEL=TOKENS, got {pair!r}")
        specs[name] = ModelSpec(context_length=int(tokens))
    return specs


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until Ctrl-C."""
    args = _parse_args(argv)
    embedder: Embedder | None = None
    models = list(args.models)
    if args.embedder == "minilm":
        from bench.minilm_embedder import MiniLMUnavailableError, load_minilm

        try:
            embedder = load_minilm()
        except MiniLMUnavailableError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        models.append("all-minilm")
    standin = OllamaStandIn(
        models,
        port=args.port,
        embed_dim=args.embed_dim,
        token_delay=args.token_delay,
        embedder=embedder,
        specs=_context_lengths(args.context_length),
        context_mode=args.context_mode,
        default_num_ctx=args.num_ctx,
    )
    with standin:
        print(f"Ollama stand-in listening on {standin.url}", flush=True)
        print(
            f"context: {standin.context_mode}, default window {standin.default_num_ctx} tokens",
            file=sys.stderr,
            flush=True,
        )
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0
