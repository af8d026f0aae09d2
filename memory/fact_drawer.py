"""Layer 4, the fact drawer: exact-key facts, the approval gate, injection and decay.

Writes reach the drawer two ways only:

1. explicitly, by the user (`set`: `/fact set`, `straylight facts set`), applied at once;
2. through the gate (`memory.fact_gate`): `propose` turns a `FactProposal` (a model's
   `memory_write`, a promoted success event, the reflection pass) into a *candidate*; only
   `approve` makes it a fact. `reject` is remembered: the same key and body are not proposed
   again.

Every prompt gets a `## Known facts` block (`for_prompt`), without the model asking; which
facts and how they rank is `memory.fact_injection`.

Stale and retired facts are never injected; injection updates `last_seen`. An explicit read
(`get`, `memory_read` with a key) revives a stale fact. `decay` applies the status rules:
decisions and facts go stale 90 days after they were last seen and retire after 180;
capabilities, rules and procedures never decay. Secrets are masked in every body and proof.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from memory import fact_gate
from memory.embedding_check import usable_vector
from memory.fact_injection import FactRanking
from memory.fact_injection import InjectedFacts as InjectedFacts
from memory.fact_types import (
    BODY_MAX_CHARS,
    EMPTY_BODY,
    NON_DECAYING,
    PROOF_MAX_CHARS,
    FactError,
    check_scope,
    check_status,
    check_type,
    normalise_key,
)
from memory.model_names import same_model
from memory.secret_masking import find_secrets, mask_secrets
from memory.settings_models import FactsConfig
from memory.text.words import clip
from store.database import Database
from store.fact_records import Fact, FactVersion, FactWrite
from store.fact_store import FactStore

# Secret kinds found by a keyword (`password = …`): in a key like `password:db` they are names.
KEYWORD_KINDS = frozenset({"password", "secret", "token", "api_key", "connection_string"})
STALE_AFTER = timedelta(days=90)
RETIRE_AFTER = timedelta(days=180)
USER_RETIRE_REASON = "retired by the user"  # `retire` by hand: the one status change `undo` undoes


@dataclass(frozen=True, slots=True)
class DecayReport:
    stale: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)


def clean_text(text: str) -> str:
    """Text that can be stored and printed: undecodable bytes (lone surrogates from a non-UTF-8
    argument or file) become U+FFFD, control characters (NUL, ESC …) are dropped."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch) != "Cc")


def _one_line(text: str) -> str:
    """Facts are data in the prompt: one line each, no heading can start inside them."""
    return " ".join(clean_text(text).split())


class FactDrawer:
    """The facts of one workspace (plus the global ones). Methods block: run them in threads."""

    def __init__(self, db: Database, workspace: str, config: FactsConfig | None = None) -> None:
        self.db = db
        self.workspace = workspace
        self.config = config or FactsConfig()
        self.store = FactStore(db)
        self.ranking = FactRanking(self.config, lambda: self.db.clock.now())

    def in_workspace(self, workspace: str) -> FactDrawer:
        """The drawer of another workspace, on the same database and config."""
        return self if workspace == self.workspace else FactDrawer(self.db, workspace, self.config)

    # --- explicit writes ------------------------------------------------------------------

    def _write_for(
        self,
        *,
        key: str,
        type: str,
        body: str,
        scope: str,
        proof: str,
        source: str,
        confidence: float,
        requires: Sequence[str],
        verified: bool,
        workspace: str | None = None,
    ) -> FactWrite:
        raw_key = clean_text(key)
        key = normalise_key(raw_key)
        # a credential-shaped key (a token, a key id), or one assigned (`password=hunter2`,
        # which normalises to `password-hunter2`); `password:db` names one, holds none.
        # Checked as typed too: lower-casing hides an AWS key id or a JWT from the masker.
        if any(
            m.kind not in KEYWORD_KINDS or raw_key[: m.start].rstrip().endswith("=")
            for m in find_secrets(raw_key)
        ) or any(m.kind not in KEYWORD_KINDS for m in find_secrets(key)):
            raise FactError("a fact key must not hold a secret")
        body = _one_line(mask_secrets(body))
        if not body:
            raise FactError(EMPTY_BODY)
        if len(body) > BODY_MAX_CHARS:
            raise FactError(f"fact body is {len(body):,} characters; at most {BODY_MAX_CHARS:,}")
        if not 0.0 <= confidence <= 1.0:
            raise FactError(f"confidence must be between 0 and 1, got {confidence}")
        scope = check_scope(scope)
        return FactWrite(
            type=check_type(type),
            scope=scope,
            workspace=(workspace or self.workspace) if scope == "workspace" else "",
            key=key,
            body=body,
            confidence=confidence,
            proof=clip(_one_line(mask_secrets(proof)), PROOF_MAX_CHARS),
            status="active",
            source=source,
            last_verified=self.db.clock.now() if verified else None,
            requires=tuple(normalise_key(r) for r in requires),
        )

    def set(
        self,
        key: str,
        type: str,
        body: str,
        *,
        scope: str = "workspace",
        proof: str = "",
        requires: Sequence[str] = (),
        reason: str = "set by the user",
    ) -> Fact:
        """An explicit write by the user: applied at once, confidence 1.0, verified now."""
        new = self._write_for(
            key=key,
            type=type,
            body=body,
            scope=scope,
            proof=proof,
            source="user",
            confidence=1.0,
            requires=requires,
            verified=True,
        )
        return self.store.write(new, reason=reason)

    # --- reads ----------------------------------------------------------------------------

    def get(self, key: str) -> list[Fact]:
        """An explicit read of a key (workspace first, then global): a stale fact is revived
        to active, and last_seen is updated (on a read-only database: found as it is)."""
        found = self._with_key(key, None)
        found.sort(key=lambda f: f.status == "retired")  # a live fact before a retired one
        if self.db.read_only:
            return found
        result = []
        for fact in found:
            if fact.status == "stale":
                fact = self.store.set_status(fact, "active", reason="revived by an explicit read")
            result.append(fact)
        self.store.touch_seen([f.id for f in result])
        return [self._fresh(f) for f in result]

    def _fresh(self, fact: Fact) -> Fact:
        again = self.store.find(fact.scope, fact.workspace, fact.key)
        return again or fact

    def list_facts(
        self,
        *,
        type: str | None = None,
        status: str | None = None,
        all_workspaces: bool = False,
    ) -> list[Fact]:
        types = [check_type(type)] if type else None
        statuses = [check_status(status)] if status else None
        return self.store.visible(
            self.workspace, types=types, statuses=statuses, all_workspaces=all_workspaces
        )

    def search(self, query: str, query_vector: Sequence[float] | None = None) -> list[Fact]:
        """`memory_read(query=…)`: active facts ranked like injection's matches, then those
        holding every word of the query (top-k in all)."""
        facts = self.store.visible(self.workspace, statuses=["active"])
        limit = max(self.config.top_k, 1)
        hits = [fact for fact, _ in self.ranking.rank(facts, query, query_vector)[:limit]]
        seen = {f.id for f in hits}
        hits += [f for f in self.ranking.covering(facts, query) if f.id not in seen]
        hits = hits[:limit]
        if not self.db.read_only:  # a use is counted where it can be written
            self.store.touch_seen([f.id for f in hits])
        return hits

    def _with_key(self, key: str, scope: str | None) -> list[Fact]:
        """The facts with this key visible here (the workspace one first); only those of
        `scope` when it is given."""
        wanted = check_scope(scope) if scope is not None else None
        found = self.store.by_key(normalise_key(key), self.workspace)
        return [f for f in found if wanted is None or f.scope == wanted]

    def has_key(self, key: str, scope: str | None = None) -> bool:
        """Whether a fact with this key (of `scope`, when given) is visible here, whatever
        its status (a `retire` that found nothing to retire: already retired, or no such
        fact)."""
        return bool(self._with_key(key, scope))

    def retire(
        self, key: str, *, reason: str = USER_RETIRE_REASON, scope: str | None = None
    ) -> list[Fact]:
        """Retire the fact with this key (the workspace one, else the global one; `scope`
        picks one)."""
        live = [f for f in self._with_key(key, scope) if f.status != "retired"]
        if not live:
            return []
        return [self.store.set_status(live[0], "retired", reason=reason)]

    def revive(
        self, key: str, *, reason: str = "revived by the user", scope: str | None = None
    ) -> list[Fact]:
        """Make the retired or stale fact with this key active again (the workspace one, else
        the global one; `scope` picks one). It counts as seen now, so decay starts over.
        Audited like every status change ('fact_status'); not a write, so `undo` skips it.
        [] when there is no such fact or it is already active."""
        dormant = [f for f in self._with_key(key, scope) if f.status != "active"]
        if not dormant:
            return []
        fact = self.store.set_status(dormant[0], "active", reason=reason)
        self.store.touch_seen([fact.id])
        return [self._fresh(fact)]

    def history(self, key: str) -> list[FactVersion]:
        """Every version of the key visible from this workspace (its own and the global)."""
        return [
            v
            for v in self.store.history(normalise_key(key))
            if v.fact.get("scope") == "global" or v.fact.get("workspace") == self.workspace
        ]

    def history_of(self, fact: Fact) -> list[FactVersion]:
        """Every version of exactly this fact (its key, scope and workspace), oldest first."""
        return [
            v
            for v in self.store.history(fact.key)
            if (v.fact.get("scope"), v.fact.get("workspace")) == (fact.scope, fact.workspace)
        ]

    def undo(self, key: str, *, scope: str | None = None) -> Fact | None:
        """Undo the last write of this key (the workspace one, else the global one; `scope`
        picks one): the version written before it comes back (undo again to go further
        back); a first write is removed. Status and confidence changes (decay, revive,
        boost) are not writes, but the user's retirement is undone when it was the last
        thing done to the fact: it is active again (a retire by mistake does not cost it).
        None if the fact was removed or there is nothing to undo."""
        found = self._with_key(key, scope)
        if not found:
            return None
        fact = found[0]
        versions = [
            version
            for version in self.store.history(fact.key)
            if (version.fact.get("scope"), version.fact.get("workspace"))
            == (fact.scope, fact.workspace)
        ]
        last = versions[-1] if versions else None
        retired_by_user = (
            fact.status == "retired"
            and last is not None
            and last.event == "fact_status"
            and last.reason == USER_RETIRE_REASON
        )
        if retired_by_user:
            revived = self.store.set_status(fact, "active", reason="undo of the retirement")
            self.store.touch_seen([revived.id])
            return self._fresh(revived)
        written: list[dict[str, Any]] = []  # the stack of content versions, newest last
        for version in versions:
            if version.event == "fact_set":
                written.append(version.fact)
            elif version.event == "fact_undo" and written:
                written.pop()
            elif version.event == "fact_delete":
                written.clear()
        if len(written) <= 1:
            self.store.delete(fact, reason="undo of the first write")
            return None
        previous = written[-2]
        # the write undone found the fact retired (an approval over a retired key): it goes
        # back to retired, not into every prompt
        status = "retired" if _retired_before_last_write(versions) else "active"
        restored = FactWrite(
            type=previous["type"],
            scope=previous["scope"],
            workspace=previous["workspace"],
            key=previous["key"],
            body=previous["body"],
            confidence=float(previous["confidence"]),
            proof=previous["proof"],
            status=status,
            source=previous["source"],
            last_verified=(
                datetime.fromisoformat(previous["last_verified"])
                if previous["last_verified"]
                else None
            ),
            requires=tuple(previous["requires"]),
        )
        back = self.store.write(restored, reason="undo", event="fact_undo")
        # the version comes back with the confidence it had then: the periods without a
        # verification since its `last_verified` are charged again by the next decay (the
        # count kept said they were, and the fact stayed that much too sure for good)
        from store import confidence_rows

        confidence_rows.set_fact_decay_periods(self.db, back.id, 0)
        return back

    # --- the gate (memory.fact_gate) ------------------------------------------------------
    propose = fact_gate.propose  # a proposal becomes a pending candidate, or is refused
    propose_all = fact_gate.propose_all
    pending = fact_gate.pending  # the candidates waiting for approval
    candidate = fact_gate.candidate
    approve = fact_gate.approve  # a pending candidate becomes a fact
    replaces = fact_gate.replaces  # the fact an approval would overwrite
    reject = fact_gate.reject  # remembered: not proposed again

    # --- injection ------------------------------------------------------------------------

    def for_prompt(
        self,
        message: str,
        query_vector: Sequence[float] | None = None,
        *,
        carry: Sequence[Fact] = (),
        touch: bool = True,
    ) -> InjectedFacts:
        """The `## Known facts` block for this message (see the module docstring and
        `memory.fact_injection`).

        `carry`: facts that must be in this prompt whatever the cap (the "can't" check of the
        previous reply)."""
        active = unshadowed(self.store.visible(self.workspace, statuses=["active"]))
        if not active:
            return InjectedFacts([], "")
        injected = self.ranking.inject(active, message, query_vector, carry=carry)
        if touch and injected.facts:
            self.store.touch_seen([f.id for f in injected.facts])
        return injected

    # --- decay ----------------------------------------------------------------------------

    def decay(self) -> DecayReport:
        """Decisions and facts: stale 90 days after last seen, retired after 180 (all
        workspaces). Capabilities, rules and procedures never decay."""
        now = self.db.clock.now()
        report = DecayReport()
        for fact in self.store.visible(self.workspace, all_workspaces=True):
            if fact.type in NON_DECAYING or fact.status == "retired":
                continue
            unseen = now - fact.last_seen
            if unseen >= RETIRE_AFTER:
                self.store.set_status(fact, "retired", reason="decay: 180 days unseen")
                report.retired.append(fact.key)
            elif unseen >= STALE_AFTER and fact.status == "active":
                self.store.set_status(fact, "stale", reason="decay: 90 days unseen")
                report.stale.append(fact.key)
        return report

    # --- for the "can't" check and status -------------------------------------------------

    def keep_carry(self, conversation_id: str, facts: Sequence[Fact]) -> None:
        """The capability facts `conversation_id`'s next prompt must carry, in whatever
        process runs it (`memory.fact_carry`)."""
        from memory.fact_carry import keep_carry

        keep_carry(self.db, conversation_id, [f.key for f in facts])

    def take_carry(self, conversation_id: str) -> list[Fact]:
        """The facts kept by `keep_carry` for this conversation that are still active
        capabilities, taken (the turn after next no longer carries them)."""
        from memory.fact_carry import take_carry

        keys = take_carry(self.db, conversation_id)
        if not keys:
            return []
        by_key = {f.key: f for f in self.active_capabilities()}
        return [by_key[key] for key in keys if key in by_key]

    def active_capabilities(self) -> list[Fact]:
        return self.store.visible(self.workspace, types=["capability"], statuses=["active"])

    def counts(self) -> dict[str, int]:
        return self.store.counts(self.workspace)

    def needs_vector(self) -> list[Fact]:
        """Active facts without a vector of the configured embedding model."""
        return [
            f
            for f in self.store.visible(self.workspace, statuses=["active"])
            if f.embedding is None or not same_model(f.embed_model, self.config.embed_model)
        ]

    def set_vector(self, fact: Fact, vector: Sequence[float]) -> None:
        """Store a fact's vector; an unusable one (NaN, inf, absurd) is left out: the fact is
        matched by its words and embedded again later."""
        if not usable_vector(vector):
            return
        self.store.set_embedding(
            fact.id, np.asarray(vector, dtype=np.float32), self.config.embed_model
        )


def _retired_before_last_write(versions: Sequence[FactVersion]) -> bool:
    """Whether the fact was retired just before its last content write (`fact_set`)."""
    for index in range(len(versions) - 1, 0, -1):
        if versions[index].event == "fact_set":
            return versions[index - 1].fact.get("status") == "retired"
    return False


def unshadowed(facts: Sequence[Fact]) -> list[Fact]:
    """The facts without a global one whose key this workspace has a fact of its own for:
    the workspace's wins, as `facts get` says (both went into the prompt, the global first,
    with bodies that may contradict)."""
    own = {f.key for f in facts if f.scope != "global"}
    return [f for f in facts if f.scope != "global" or f.key not in own]
