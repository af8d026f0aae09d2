"""Issue 15 §3, §4, §5, §8: an embedding server that returns garbage, an index file from
somewhere else, read-only commands that must not write, and embedding-model changes.

Each case runs the real CLI against the stand-in (tests/reliability/fault_support.py) and
checks what the data dir holds afterwards.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.reliability import fault_support
from tests.reliability.fault_support import (
    Workspace,
    assert_ok,
    points,
    vectorless,
)
from tests.support.ollama_standin import embed_text

seeded_template = fault_support.seeded_template
world = fault_support.world

NOTE = "the spare key to the garden shed hangs behind the calendar"


def nan_embedder(texts: Sequence[str]) -> list[list[float]]:
    return [[math.nan] * 768 for _ in texts]


def inf_embedder(texts: Sequence[str]) -> list[list[float]]:
    return [[math.inf, *embed_text(text, 767)] for text in texts]


def huge_embedder(texts: Sequence[str]) -> list[list[float]]:
    """Finite, but the float32 cosine overflows: 1e38 in every component."""
    return [[1e38 * (1 if v >= 0 else -1) for v in embed_text(text, 768)] for text in texts]


# ------------------------------------------------------------------- §3 NaN and friends


def test_a_nan_embedding_is_a_failed_embedding_remember_keeps_the_point(
    world: Workspace,
) -> None:
    world.standin.embedder = nan_embedder
    proc = world.run("remember", NOTE)
    assert_ok(proc)
    assert "no vector yet" in proc.stdout
    assert [p[2] for p in points(world.home)][-1] == NOTE
    assert vectorless(world.home) == [3]
    world.standin.embedder = None
    assert "embedded 1 of 1" in world.run("jobs", "run", "backfill").stdout
    assert vectorless(world.home) == []


def test_an_infinite_embedding_does_not_stop_the_turn(world: Workspace) -> None:
    world.standin.embedder = inf_embedder
    world.standin.script_reply("The spare key hangs behind the calendar in the garden shed.")
    proc = world.run("ask", f"where is it? {NOTE}")
    assert_ok(proc)
    assert [p[1] for p in points(world.home)] == ["user", "assistant", "user", "assistant"]
    assert vectorless(world.home) == [3, 4]


def test_recall_with_a_nan_query_vector_falls_back_to_words(world: Workspace) -> None:
    assert_ok(world.run("remember", NOTE))
    world.standin.embedder = nan_embedder
    proc = world.run("recall", "spare key garden shed", "--json")
    assert_ok(proc)
    hits = json.loads(proc.stdout)["hits"]
    assert NOTE in [hit["content"] for hit in hits]


def test_recall_names_a_nan_query_vector_not_an_unreachable_ollama(world: Workspace) -> None:
    """The words-only note says why there is no query vector: Ollama answered, with NaN."""
    assert_ok(world.run("remember", NOTE))
    world.standin.embedder = nan_embedder
    proc = world.run("recall", "spare key garden shed")
    assert_ok(proc)
    assert "NaN or infinity" in proc.stderr
    assert "unreachable" not in proc.stderr


def test_recall_names_a_query_vector_of_another_dimension(world: Workspace) -> None:
    """A query vector the index cannot use (3 numbers against 768) is no query vector: the
    search goes on by words, and the note says why, as it does for a NaN vector."""
    assert_ok(world.run("remember", NOTE))
    world.standin.fail_next("embed_dim", dim=3, count=None, path="/api/embed")
    proc = world.run("recall", "spare key garden shed")
    assert_ok(proc)
    assert NOTE in proc.stdout
    assert proc.stderr == (
        "straylight: note: no query vector (nomic-embed-text now gives vectors of 3 numbers, "
        "the memory holds 768; `straylight jobs run backfill` re-embeds): words only\n"
    )


def test_absurd_components_never_put_nan_scores_into_recall(world: Workspace) -> None:
    assert_ok(world.run("remember", NOTE))
    world.standin.embedder = huge_embedder
    assert_ok(world.run("remember", "the blue notebook on the shelf holds the router password"))
    assert vectorless(world.home) == [4]
    proc = world.run("recall", "spare key garden shed")
    assert_ok(proc)
    assert "nan" not in proc.stdout.lower()
    data = json.loads(world.run("recall", "spare key garden shed", "--json").stdout)
    assert all(math.isfinite(hit["score"]) for hit in data["hits"]), data


def tiny_embedder(texts: Sequence[str]) -> list[list[float]]:
    """Finite and not zero, but every component below what the f16 index can hold."""
    return [[1e-30 * v for v in embed_text(text, 768)] for text in texts]


def test_a_vector_too_small_for_the_index_is_a_failed_embedding(world: Workspace) -> None:
    """Stored, such a vector made the index stale for good: f16 turns it into zeros, so the
    sample check failed at every open and every writing command rebuilt the index."""
    assert_ok(world.run("remember", NOTE))
    world.standin.embedder = tiny_embedder
    proc = world.run("remember", "the blue notebook on the shelf holds the router password")
    assert_ok(proc)
    assert "no vector yet" in proc.stdout
    assert vectorless(world.home) == [4]
    assert status_json(world)["index"]["state"] == "in_sync"


# ------------------------------------------------------------------ §4 index identity

BANK = "my bank PIN reminder is written in the blue notebook on the shelf"
KUBE = "kubernetes cluster upgrade procedure for the staging environment"


def other_home(world: Workspace, text: str) -> Path:
    """A second data dir with one remembered point (id 1, like the first one's)."""
    home = world.root / "other"
    env = {**world.env, "STRAYLIGHT_HOME": str(home)}
    assert_ok(world.run("remember", text, env=env))
    return home


def status_json(world: Workspace, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = world.run("status", "--json", env=env)
    assert_ok(proc)
    return json.loads(proc.stdout)


def test_an_index_from_another_data_dir_is_not_in_sync_and_is_rebuilt(world: Workspace) -> None:
    assert_ok(world.run("remember", BANK))
    other = other_home(world, KUBE)
    shutil.copy(other / "vectors.usearch", world.home / "vectors.usearch")
    memory = status_json(world)
    assert memory["index"]["state"] == "stale", memory["index"]
    proc = world.run("recall", "kubernetes cluster upgrade procedure staging", "--json")
    assert_ok(proc)
    assert BANK not in [hit["content"] for hit in json.loads(proc.stdout)["hits"]]
    assert_ok(world.run("jobs", "run", "index-upkeep"))  # any writing command rebuilds it
    memory = status_json(world)
    assert memory["index"] == {"state": "in_sync", "size": 3}


def test_an_index_whose_vectors_differ_from_the_database_is_rebuilt(world: Workspace) -> None:
    """Same identity, same ids, other vectors: the spot check on load catches it."""
    from store.vector_index import VectorIndex
    from store.vector_index_file import read_index_file

    path = world.home / "vectors.usearch"
    _payload, identity = read_index_file(path)
    forged = VectorIndex(path, 768, identity=identity)
    forged.add([1, 2], [embed_text(KUBE, 768), embed_text(BANK, 768)])
    forged.save()
    assert status_json(world)["index"]["state"] == "stale"
    assert_ok(world.run("remember", NOTE))
    assert status_json(world)["index"] == {"state": "in_sync", "size": 3}


# ------------------------------------------------------ §5 read-only commands, model change


def files(home: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(path.relative_to(home)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(home.rglob("*"))
        if path.is_file()
    }


READ_ONLY = [
    ("status",),
    ("status", "--json"),
    ("recall", "blue service staging"),
    ("recall", "blue service staging", "--json"),
    ("history",),
    ("history", "--json"),
    ("facts", "list"),
    ("candidates", "list"),
    ("jobs", "list"),
    ("jobs", "list", "--json"),
    ("hypotheses", "list"),
    ("conversations",),
    ("conversations", "list", "--json"),
    ("facts", "history", "staging-host"),
]


def test_read_only_commands_leave_every_byte_and_mtime_of_the_data_dir(world: Workspace) -> None:
    assert_ok(world.run("jobs", "run", "index-upkeep"))  # lock file, log, index: all there
    assert_ok(world.run("conversations"))  # its summary file, written while it is new
    before = files(world.home)
    assert {"straylight.lock", "straylight.log", "vectors.usearch"} <= set(before)
    changed_model = {**world.env, "STRAYLIGHT_EMBED_MODEL": "nomic-embed-tex"}
    for env in (world.env, changed_model):
        for command in READ_ONLY:
            proc = world.run(*command, env=env)
            assert proc.returncode in (0, 1), (command, proc.stderr)
            assert files(world.home) == before, command
    memory = status_json(world, changed_model)
    assert memory["embedding"] == {
        "model": "nomic-embed-tex",
        "dim": None,
        "changed_from": "nomic-embed-text",
        "to_embed": 2,
    }


def test_a_mistyped_embedding_model_wipes_nothing(world: Workspace) -> None:
    typo = {**world.env, "STRAYLIGHT_EMBED_MODEL": "nomic-embed-tex"}
    world.standin.script_reply("Noted: the spare key hangs behind the calendar.")
    assert_ok(world.run("ask", NOTE, env=typo))  # a writing command: the embedding fails
    new = [p[0] for p in points(world.home)[2:]]
    assert new and vectorless(world.home) == new
    memory = status_json(world)  # back to the right name
    assert memory["index"] == {"state": "in_sync", "size": 2}
    assert memory["embedding"]["to_embed"] == len(new)
    backfill = world.run("jobs", "run", "backfill").stdout
    assert f"embedded {len(new)} of {len(new)}" in backfill
    assert status_json(world)["index"] == {"state": "in_sync", "size": 2 + len(new)}


def test_a_real_embedding_model_change_re_embeds_and_rebuilds(world: Workspace) -> None:
    new = {**world.env, "STRAYLIGHT_EMBED_MODEL": "mxbai-embed-large"}
    world.standin.set_models(["llama3.2", "nomic-embed-text", "mxbai-embed-large"])
    world.standin.embed_dim = 1024
    memory = status_json(world, new)
    assert memory["embedding"]["changed_from"] == "nomic-embed-text"
    assert memory["embedding"]["to_embed"] == 2
    assert memory["points"]["without_vector"] == 2  # the old model's vectors do not count
    hits = json.loads(world.run("recall", "blue service staging", "--json", env=new).stdout)
    assert hits["hits"], "recall falls back to words"
    proc = world.run("jobs", "run", "backfill", env=new)
    assert "embedded 2 of 2" in proc.stdout, proc.stdout
    memory = status_json(world, new)
    assert memory["index"] == {"state": "in_sync", "size": 2}
    assert memory["embedding"] == {
        "model": "mxbai-embed-large",
        "dim": 1024,
        "changed_from": None,
        "to_embed": 0,
    }
    assert memory["points"]["without_vector"] == 0
    world.standin.embed_dim = 768  # and back: one vector a point, so re-embedded again
    assert status_json(world)["embedding"]["to_embed"] == 2
    assert "embedded 2 of 2" in world.run("jobs", "run", "backfill").stdout
    assert_ok(world.run("remember", NOTE))
    assert status_json(world)["index"] == {"state": "in_sync", "size": 3}


# ------------------------------------------------------ §8 a new dimension, same model name


def test_a_new_dimension_under_the_same_model_name_is_re_embedded(world: Workspace) -> None:
    world.standin.embed_dim = 384
    proc = world.run("remember", NOTE)
    assert_ok(proc)
    assert "384" in proc.stdout and "backfill" in proc.stdout, proc.stdout
    assert "not reachable" not in proc.stdout
    proc = world.run("jobs", "run", "backfill")
    assert_ok(proc)
    assert "now gives vectors of 384 numbers (was 768): re-embedded 3 of 3" in proc.stdout
    assert vectorless(world.home) == []
    memory = status_json(world)
    assert memory["index"] == {"state": "in_sync", "size": 3}
    assert memory["embedding"]["dim"] == 384
    hits = json.loads(world.run("recall", "spare key garden shed", "--json").stdout)["hits"]
    assert hits[0]["content"] == NOTE
