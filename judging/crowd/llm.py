"""A language model as a judge, through the OpenAI Chat Completions protocol (the official ``openai``
package), so any server speaking it works: OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp's server, TGI.

The protocol is Arabzadeh and Clarke's, "Benchmarking LLM-based Relevance Judgment Methods" (SIGIR 2025),
who ran the procedure of "Assessing top-k preferences" with GPT-4o in place of the crowd: one system message,
a user message asking which of two passages answers the question better, "1 or 2", at temperature 0, and
every pair asked in both orders. The same passage named in both orders is a preference; different passages is
a tie (position-inconsistent); a reply naming neither passage is asked once more, then the answer has failed.

This module delivers answers (the choice, the raw replies, the tokens); it never decides what an answer is
worth: the judging services record it and the engine weighs it. ``LlmProvider`` also fills the crowd
provider interface, with nothing to publish anywhere (the model takes HITs as a worker of the campaign).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from judging.crowd.base import (
    CampaignInfo,
    CrowdConfigError,
    CrowdRequestError,
    CrowdTransientError,
    HitInfo,
    Published,
)
from judging.crowd.local import LocalProvider

# The preference judge of Arabzadeh and Clarke (SIGIR 2025), as published with their code and data.
SYSTEM_MESSAGE = "You are a highly experienced and accurate assessor for TREC."
DEFAULT_PROMPT = """Select the passage that answers the question better. Just answer 1 or 2, without any \
explanation or extra verbiage.  If both passages are similar, select the simplest and clearest.
Question:
{question}
Passage 1:
{passage_1}
Passage 2:
{passage_2}
"""
PROMPT_FIELDS = ("question", "passage_1", "passage_2")
# A reply of a digit, at most a few tokens: enough for "1", "2" or "Passage 1".
MAX_REPLY_TOKENS = 8
# What a reply to the published prompt costs beyond its text, for estimates: the chat format's own tokens.
CHAT_OVERHEAD_TOKENS = 12
ESTIMATED_REPLY_TOKENS = 2
# An answer's outcomes, as the campaign's counts and the ``llm_log`` export name them.
PREFERENCE, POSITION_INCONSISTENT, FAILED = "preference", "position_inconsistent", "failed"


def prompt_validate(template: str, *, source: str = "prompt") -> None:
    """Raise ``ValueError`` naming ``source`` unless ``template`` uses exactly the fields ``{question}``,
    ``{passage_1}`` and ``{passage_2}`` (each at least once, no other; literal braces doubled)."""
    import string

    try:
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as error:
        raise ValueError(f"{source}: not a prompt template ({error})") from None
    missing, unknown = set(PROMPT_FIELDS) - names, names - set(PROMPT_FIELDS)
    if missing or unknown:
        raise ValueError(
            f"{source}: the template must use {{question}}, {{passage_1}} and {{passage_2}}"
            + (f"; missing {sorted(missing)}" if missing else "")
            + (f"; unknown {sorted(unknown)}" if unknown else "")
        )


def prompt_hash(template: str) -> str:
    """SHA-256 of the prompt template with the system message: what the cache and the log name a prompt by."""
    return hashlib.sha256(f"{SYSTEM_MESSAGE}\n\n{template}".encode()).hexdigest()


def prompt_render(template: str, *, question: str, first: str, second: str) -> str:
    """The user message: the template with the question and the passages, ``first`` shown as passage 1."""
    return template.format(question=question, passage_1=first, passage_2=second)


def answer_key(*, endpoint: str, model: str, template: str, question: str, first: str, second: str) -> str:
    """The cache key of one question in one order: SHA-256 over endpoint, model, prompt, question and both
    passage texts (first shown first), each length-prefixed so no two questions share a key."""
    digest = hashlib.sha256()
    for part in (endpoint.rstrip("/"), model, prompt_hash(template), question, first, second):
        data = part.encode()
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()


def reply_choice(reply: str) -> int:
    """The passage a reply names: 1, 2, or 0 for neither. The published judge's reading: "Passage 1" or
    "Passage 2" named first, else the one digit of the two that appears alone."""
    if "Passage 1" in reply:
        return 1
    if "Passage 2" in reply:
        return 2
    ones, twos = bool(re.search("1", reply)), bool(re.search("2", reply))
    if ones != twos:
        return 1 if ones else 2
    return 0


def pair_outcome(first_order: int, second_order: int) -> tuple[str, int]:
    """Combine the two orders of a pair: ``first_order`` is the choice with item A shown first,
    ``second_order`` with B first. Returns the outcome and the preferred item (0 for A, 1 for B; -1 when
    there is none): the same item in both orders is a preference, different items a position-inconsistent
    tie, and a failed order (choice 0) fails the pair (never counted; unlike the published script, which
    took the other order alone, a pair is held to both orders)."""
    if first_order == 0 or second_order == 0:
        return FAILED, -1
    a_first = first_order == 1
    a_second = second_order == 2
    if a_first == a_second:
        return PREFERENCE, 0 if a_first else 1
    return POSITION_INCONSISTENT, -1


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` for an estimate before any request: a quarter of its characters (the usual ratio
    of English text in the GPT tokenizers), rounded up, plus the chat format's overhead."""
    return -(-len(text) // 4) + CHAT_OVERHEAD_TOKENS


def cost_usd(*, tokens_in: int, tokens_out: int, price_in: Decimal, price_out: Decimal) -> Decimal:
    """Tokens at prices in USD per million tokens (read, written)."""
    return (Decimal(tokens_in) * Decimal(price_in) + Decimal(tokens_out) * Decimal(price_out)) / Decimal(
        1_000_000
    )


@dataclass(frozen=True)
class Answer:
    """The model's answer to one question in one order: ``choice`` 1 or 2, or 0 after a retry that still
    named neither passage; ``replies`` every raw reply; tokens summed over the attempts."""

    choice: int
    replies: tuple[str, ...]
    tokens_in: int
    tokens_out: int

    @property
    def attempts(self) -> int:
        return len(self.replies)


class LlmProvider(LocalProvider):
    """The model behind ``base_url``: asks one question (``ask``); the crowd interface's calls do nothing,
    since the model takes the campaign's HITs itself (``judging.services.llm``)."""

    name = "llm"
    reserves_on_publish = False
    expires_each_hit = False

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        timeout_seconds: float = 60.0,
        max_retries: int = 6,
        client: Any = None,
    ) -> None:
        if not base_url:
            raise CrowdConfigError("TOPPREF_LLM_BASE_URL is not set: the model's endpoint is unknown")
        if not model:
            raise CrowdConfigError("no model named: create the campaign with --llm-model")
        self.base_url, self.model = base_url.rstrip("/"), model
        if client is None:
            import openai

            # The client's own retries, with exponential backoff and jitter, cover 408, 409, 429, 5xx and
            # timeouts (and honour Retry-After); what outlives them is a CrowdTransientError for the task.
            client = openai.OpenAI(
                base_url=self.base_url,
                api_key=api_key or "not-needed",  # local servers (vLLM, Ollama) take any key
                timeout=timeout_seconds,
                max_retries=max_retries,
            )
        self._client = client
        super().__init__()  # the local crowd's interface, at no fee per HIT

    def ask(self, *, template: str, question: str, first: str, second: str) -> Answer:
        """Ask once at temperature 0 (once more when the reply names neither passage). Raises
        ``CrowdTransientError`` on throttling, a 5xx or a timeout that outlived the retries, and
        ``CrowdRequestError`` when the server refuses the request (a 4xx: unknown model, bad key)."""
        message = prompt_render(template, question=question, first=first, second=second)
        replies: list[str] = []
        tokens_in = tokens_out = 0
        for _ in range(2):
            text, used_in, used_out = self._complete(message)
            replies.append(text)
            tokens_in, tokens_out = tokens_in + used_in, tokens_out + used_out
            choice = reply_choice(text)
            if choice:
                return Answer(choice, tuple(replies), tokens_in, tokens_out)
        return Answer(0, tuple(replies), tokens_in, tokens_out)

    def _complete(self, message: str) -> tuple[str, int, int]:
        import openai

        try:
            completion = self._client.chat.completions.create(
                model=self.model,
                messages=[
                    {"role": "system", "content": SYSTEM_MESSAGE},
                    {"role": "user", "content": message},
                ],
                temperature=0,
                max_tokens=MAX_REPLY_TOKENS,
            )
        except (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError) as error:
            raise CrowdTransientError(f"{self.base_url}: {error}") from error
        except openai.APIStatusError as error:
            if error.status_code >= 500:
                raise CrowdTransientError(f"{self.base_url}: {error.status_code} {error}") from error
            raise CrowdRequestError(
                f"{self.base_url} refused the request: {error.status_code} {error}",
                code=str(error.status_code),
            ) from error
        except openai.APIError as error:
            # A body that is no chat completion (a proxy's error page): the reply named no passage.
            return f"<{type(error).__name__}: {error}>", 0, 0
        choices = getattr(completion, "choices", None) or []
        text = ""
        if choices and getattr(choices[0], "message", None) is not None:
            text = choices[0].message.content or ""
        usage = getattr(completion, "usage", None)
        used_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        used_out = int(getattr(usage, "completion_tokens", 0) or 0)
        return text.replace("\n", " "), used_in, used_out

    # -- the crowd provider interface: the local crowd's (nothing to collect, approve or pay outside; the
    # model is paid by the token, never per HIT), except that no HIT is published for it.

    def publish(self, *, campaign: CampaignInfo, hits: Sequence[HitInfo]) -> Iterator[Published]:
        yield from ()
