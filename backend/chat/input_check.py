"""Whether a user's message can be sent as it is (no Chainlit here: the page shows the words)."""

from __future__ import annotations

from backend.chat.conversation import Conversation
from backend.chat.sampling import Sampling
from backend.settings import Settings


def input_problem(text: str, settings: Settings, sampling: Sampling) -> str | None:
    """Why a user message can't be sent as it is, in words; None if it can."""
    if not text.strip():
        return "Your message is empty: type a question, or pick one of the examples."
    if len(text) > settings.max_message_chars:
        return (
            f"Your message is {len(text):,} characters long; the limit is {settings.max_message_chars:,} "
            "(RCHAT_MAX_MESSAGE_CHARS). Please shorten it."
        )
    if not Conversation().fits(text, context_tokens=settings.context_tokens, answer_tokens=sampling.max_tokens):
        return (
            f"Your message is too long for the model's context ({settings.context_tokens} tokens, "
            f"{sampling.max_tokens} of them kept for the answer). Shorten it or lower *Max tokens*."
        )
    return None
