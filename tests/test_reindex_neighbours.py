"""A re-index on an analyzer change gives every point the words its save gave it: the
conversation points their neighbours (rebuilt from the points table), the others their own
text (memory/neighbour_words.py)."""

from __future__ import annotations

from pathlib import Path

from agent.ollama_gateway import OllamaGateway
from agent.settings import Settings
from agent.turn import TurnEngine
from memory.memory_store import MemoryStore
from memory.neighbour_words import StoredMessage, conversation_contexts
from memory.turn_memory import TurnMemory
from store import meta
from store.lexical_index import ANALYZER_KEY
from tests.support.ollama_standin import OllamaStandIn
from tui.memory_session import embedder_for

Postings = dict[int, list[tuple[str, int]]]

ANSWER = "Booked the tickets for Tuesday morning with my sister and her two kids."


def postings(store: MemoryStore) -> Postings:
    """Each point's indexed (term, tf), straight from the lexical_postings table."""
    found: Postings = {}
    with store.db.cursor() as cur:
        rows = cur.execute(
            "SELECT point_id, term, tf FROM lexical_postings ORDER BY point_id, term"
        ).fetchall()
    for point_id, term, tf in rows:
        found.setdefault(int(point_id), []).append((str(term), int(tf)))
    return found


async def turn(engine: TurnEngine, text: str, conversation: str) -> None:
    async for _event in engine.run(text, conversation_id=conversation, model="llama3.2"):
        pass
    await engine.drain()


async def test_an_analyzer_change_reindexes_each_point_with_its_neighbour_words(
    settings: Settings, standin: OllamaStandIn, home: Path
) -> None:
    gateway = OllamaGateway(settings.ollama.host, read_timeout=5)
    store = MemoryStore.open(settings.home, settings.memory, clock=settings.clock)
    memory = TurnMemory(store, embedder_for(gateway, settings.memory.embed_model))
    engine = TurnEngine(settings, gateway, memory)
    script = [  # two conversations, interleaved: their point ids interleave too
        (
            "trip",
            "Which museum should I visit in Paris next week, do you think?",
            "The Orsay is a fine pick, go early in the morning before the crowds.",
        ),
        (
            "work",
            "The release of the billing service slipped to Friday afternoon.",
            "Noted: the billing release moves to Friday, after the code freeze.",
        ),
        ("trip", ANSWER, "Enjoy the day out with them, and take the metro there and back."),
        (
            "work",
            "Ask Dana to review the migration script before anyone runs it.",
            "I will remind you to ask Dana about the migration script review.",
        ),
        (
            "trip",
            "We will have lunch near the river afterwards, somewhere quiet.",
            "Try the small bistro by the quay, it has a terrace over the water.",
        ),
    ]
    for conversation, text, reply in script:
        standin.script_reply(reply)
        await turn(engine, text, conversation)
    pinned = await memory.remember(
        "My passport expires in March 2031, renew it in good time.", conversation_id="trip"
    )
    saved = postings(store)
    assert len(saved) == 2 * len(script) + 1  # nothing was filtered out
    with store.db.transaction() as cur:  # as if these points were indexed by another analyzer
        meta.put(cur, ANALYZER_KEY, "an-older-analyzer")
    store.close()

    with MemoryStore.open(settings.home, settings.memory, clock=settings.clock) as reopened:
        with reopened.db.cursor() as cur:
            assert meta.get(cur, ANALYZER_KEY) == reopened.lexical.analyzer.name  # re-indexed
        assert postings(reopened) == saved
        hits = reopened.recall("museum in Paris", k=10, mode="lexical").hits
        assert ANSWER in [hit.content for hit in hits]  # only its earlier neighbour says "museum"
        pin_terms = {term for term, _tf in postings(reopened)[pinned]}
        assert "museum" not in pin_terms and "passport" in pin_terms  # its own text only


def m(point_id: int, role: str) -> StoredMessage:
    return StoredMessage(point_id, role, f"{role}{point_id}")


def test_a_point_the_filter_dropped_is_missing_from_its_neighbours_only() -> None:
    """Turns are rebuilt from roles in id order: a user point opens a turn, a reply closes
    it; a reply whose user message was not saved is a turn of its own."""
    contexts = conversation_contexts(
        [m(1, "user"), m(2, "assistant"), m(4, "assistant"), m(5, "user"), m(7, "user")]
    )  # 3 (a user's "thanks") and 6 (a short reply) were dropped by the save filter
    assert contexts == {
        1: "assistant2",  # its reply
        2: "user1",  # its user message
        4: "assistant2",  # the reply before it; its user message is gone
        5: "assistant4",  # the reply it followed (the user message before that is gone)
        7: "user5",  # the user message before the dropped reply it followed
    }
