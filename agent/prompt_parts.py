"""The prompt's material as plain data: the persona or system prompt, the rules, long-term
memory, known facts, recalled context, the history and the new message, and how they become
the chat request's messages. `agent.context_budget` fits them into the window."""

from __future__ import annotations

from dataclasses import dataclass

from agent.prompt import PromptSection, build_system_prompt


@dataclass(frozen=True, slots=True)
class HistoryMessage:
    role: str
    content: str


@dataclass(frozen=True, slots=True)
class PromptParts:
    """The prompt's material as plain data (also what `BudgetedPrompt.kept` returns)."""

    system: str
    """The persona, or this conversation's own system prompt."""
    user: str
    """The new message."""
    rules: tuple[str, ...] = ()
    """Active rule lines for `## Known facts`: never cut."""
    longterm: str = ""
    facts: tuple[str, ...] = ()
    """Fact lines, most relevant first."""
    recall: tuple[str, ...] = ()
    """Recalled entries (one a hit), most relevant first."""
    recall_head: str = ""
    """The recall block's preamble, sent only with at least one hit."""
    history: tuple[HistoryMessage, ...] = ()
    """This conversation's messages before the new one, oldest first."""
    tools: str = ""
    """The tool definitions as sent (their JSON): Ollama renders them into the prompt. Never cut
    here; the turn decides whether to send tools at all."""

    def known_facts_block(self) -> str:
        """The `## Known facts` body: rules first, then facts, one a line."""
        return "\n".join([*self.rules, *self.facts])

    def recall_block(self) -> str:
        """The `## Recalled context` body, "" without hits."""
        if not self.recall:
            return ""
        return "\n\n".join([self.recall_head, *self.recall] if self.recall_head else self.recall)

    def chat_messages(self) -> list[dict[str, str]]:
        """The chat request's messages, as `agent.turn` assembles them: the system prompt
        (persona, long-term memory, known facts, recalled context), the history, the message."""
        system = build_system_prompt(
            [
                PromptSection("persona", self.system),
                PromptSection("longterm", self.longterm),
                PromptSection("known_facts", self.known_facts_block()),
                PromptSection("recalled_context", self.recall_block()),
            ]
        )
        history = [{"role": m.role, "content": m.content} for m in self.history]
        return [
            {"role": "system", "content": system},
            *history,
            {"role": "user", "content": self.user},
        ]
