"""The conversation as the model sees it, kept by us (never Chainlit's context, which holds UI notices).

Reasoning is not sent back. Before each request the oldest turns are dropped until the prompt and the
answer budget fit the model's context; the caller tells the user when that happened.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from backend.records import RECORD_KEY

# A conservative estimate (real tokenizers average 3.5-4.5 chars per token on English text); a turn
# is a few tokens of chat-template framing on top. Erring high means we trim a little early, and a
# server 400 for an overlong prompt still ends in a clear message.
CHARS_PER_TOKEN = 3.0
TOKENS_PER_TURN = 8
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def estimate_tokens(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + TOKENS_PER_TURN


def clean_user_text(text: str) -> tuple[str, int]:
    """Strip control characters (not tabs or newlines) and unpaired surrogates; return text and count."""
    cleaned = CONTROL_CHARS.sub("", text)
    cleaned = "".join(ch for ch in cleaned if unicodedata.category(ch) != "Cs")
    return cleaned, len(text) - len(cleaned)


@dataclass
class Turn:
    role: str  # "user" or "assistant"
    content: str
    message_id: str = ""  # the Chainlit message id, so an edited question replaces what followed it


@dataclass
class Conversation:
    turns: list[Turn] = field(default_factory=list)

    def add_user(self, content: str, message_id: str = "") -> None:
        if message_id:
            self.truncate_at(message_id)
        self.turns.append(Turn("user", content, message_id))

    def add_assistant(self, content: str) -> None:
        self.turns.append(Turn("assistant", content))

    def truncate_at(self, message_id: str) -> None:
        """An edited message: forget it and everything after it (Chainlit removed them from the page)."""
        for i, turn in enumerate(self.turns):
            if turn.message_id == message_id:
                del self.turns[i:]
                return

    def messages(self, *, system_prompt: str, context_tokens: int, answer_tokens: int) -> tuple[list[dict], int]:
        """OpenAI messages that fit the context, and how many earlier turns were left out."""
        budget = context_tokens - answer_tokens - (estimate_tokens(system_prompt) if system_prompt else 0)
        kept: list[Turn] = []
        for turn in reversed(self.turns):
            cost = estimate_tokens(turn.content)
            if kept and cost > budget:
                break
            kept.append(turn)
            budget -= cost
        kept.reverse()
        while len(kept) > 1 and kept[0].role != "user":  # a conversation starts with a question
            kept.pop(0)
        dropped = len(self.turns) - len(kept)
        system = [{"role": "system", "content": system_prompt}] if system_prompt else []
        return system + [{"role": t.role, "content": t.content} for t in kept], dropped

    @classmethod
    def from_steps(cls, steps: list[dict]) -> Conversation:
        """The conversation of a stored thread (resume): questions and, per question, its last answer."""
        conversation = cls()
        for step in sorted(steps, key=lambda s: s.get("createdAt") or ""):
            record = (step.get("metadata") or {}).get(RECORD_KEY) or {}
            if step.get("type") == "user_message":
                conversation.add_user(clean_user_text(step.get("output") or "")[0], step["id"])
            elif record.get("kind") == "battle" and conversation.turns and conversation.turns[-1].role == "user":
                conversation.turns.pop()  # a compared question was asked on its own, outside the conversation
            elif record.get("kind") == "answer" and record.get("answer"):
                last = conversation.turns[-1] if conversation.turns else None
                if last and last.role == "assistant":  # a regenerated sample replaces the one before
                    conversation.turns.pop()
                conversation.add_assistant(record["answer"])
        return conversation

    def fits(self, text: str, *, context_tokens: int, answer_tokens: int) -> bool:
        """Whether one message alone can fit beside the answer budget."""
        return estimate_tokens(text) + answer_tokens <= context_tokens
