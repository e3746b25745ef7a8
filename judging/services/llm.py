"""A campaign's language model as a judge: it takes the campaign's open HITs as a worker (pairs and hidden
challenges alike), each question asked in both orders through ``judging.crowd.llm``, every answer stored as it
arrives and never bought twice, within the campaign's budget.

- Questions: a HIT's slots, each asked with the left passage first and with the right passage first. A question
  is asked once per campaign (``LlmRequest``, unique per topic and order) and once per endpoint, model, prompt
  and texts (``LlmAnswer``, the cache): a re-asked pair, a restarted task, a second campaign on the same
  collection or a re-run reads the stored answer and costs nothing.
- Calls run in a pool of ``Campaign.llm_max_concurrency`` threads; only the calls do (the database is written
  by the calling thread as each answer comes back), so a worker killed mid-call loses nothing stored and the
  next run asks only what has no answer.
- Once a HIT's questions all have answers, the model takes the HIT and submits it (``assignment_submit``):
  its challenges are checked as anyone's, a failed one excludes it under the campaign owner's exclusion rule,
  and a pair it leaves position-inconsistent (or failed) goes back to the queue for people.
"""

from __future__ import annotations

import logging
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q

from judging import crowd
from judging.crowd import CrowdError
from judging.crowd.llm import (
    DEFAULT_PROMPT,
    ESTIMATED_REPLY_TOKENS,
    POSITION_INCONSISTENT,
    PREFERENCE,
    SYSTEM_MESSAGE,
    Answer,
    LlmProvider,
    answer_key,
    cost_usd,
    estimate_tokens,
    pair_outcome,
    prompt_hash,
    prompt_render,
)
from judging.models import (
    LLM_WORKER_PROVIDER,
    Assignment,
    Campaign,
    Hit,
    HitSlot,
    Judgment,
    LlmAnswer,
    LlmRequest,
    Worker,
)
from judging.services.errors import CampaignStateError, JudgingError
from judging.services.exclusions import worker_is_excluded
from judging.services.judgments import (
    assignment_start,
    assignment_submit,
    hits_open_for,
    worker_get_or_create,
)

logger = logging.getLogger(__name__)

# HITs a run holds in hand, their questions queued for the pool: enough to keep every concurrent call busy
# across HITs (a HIT of 10 pairs and 3 challenges is 26 questions), few enough that a stop wastes little.
HITS_PER_BATCH = 40


@dataclass(frozen=True)
class Question:
    """One question in one order: ``first`` is shown as passage 1."""

    topic_id: int
    first_id: int
    second_id: int
    question: str
    first: str
    second: str

    @property
    def order_key(self) -> tuple[int, int, int]:
        return (self.topic_id, self.first_id, self.second_id)


@dataclass
class LlmRun:
    """What one ``campaign_llm_judge`` did: questions sent to the server, read from the cache, HITs submitted,
    and why it stopped short (budget, exclusion), if it did."""

    sent: int = 0
    cached: int = 0
    hits: int = 0
    note: str = ""


@dataclass(frozen=True)
class LlmEstimate:
    """``campaign_publish --dry-run``: what the model would be asked now (the open HITs it may take), from the
    passage lengths; ``cached`` questions cost nothing."""

    questions: int
    cached: int
    tokens_in: int
    tokens_out: int
    cost_usd: Decimal

    def lines(self, *, model: str) -> list[str]:
        return [
            f"model {model}: would ask {self.questions} question(s) ({self.cached} answered from the cache), "
            f"about {self.tokens_in} tokens in and {self.tokens_out} out, about ${self.cost_usd:.4f}"
        ]


@dataclass
class _Progress:
    callback: Callable[[int, int], None] | None
    done: int = 0
    total: int = 0

    def grow(self, count: int) -> None:
        self.total += count
        self._tell()

    def step(self) -> None:
        self.done += 1
        self._tell()

    def _tell(self) -> None:
        if self.callback is not None:
            self.callback(self.done, self.total)


def endpoint() -> str:
    """The model server's base URL, as the cache keys name it."""
    return settings.TOPPREF_LLM_BASE_URL.rstrip("/")


def campaign_llm_template(campaign: Campaign) -> str:
    """The campaign's prompt template: its own, or the published preference prompt."""
    return campaign.llm_prompt or DEFAULT_PROMPT


def llm_worker(*, campaign: Campaign) -> Worker:
    """The Worker row of the campaign's model (``model@host`` of the endpoint): one row per model and
    server, shared by the campaigns that use it, so its exclusions follow it as a person's do."""
    host = urlsplit(endpoint()).netloc or endpoint() or "unset"
    return worker_get_or_create(
        provider=LLM_WORKER_PROVIDER, external_id=f"{campaign.llm_model}@{host}"[:200]
    )


def campaign_llm_judge(
    *,
    campaign: Campaign,
    provider: LlmProvider | None = None,
    progress: Callable[[int, int], None] | None = None,
    max_hits: int | None = None,
) -> LlmRun:
    """Let the campaign's model judge every open HIT it may take, until none is left (in the embedded default
    the rounds its HITs complete close at once, and the HITs of the next rounds join the run as they are
    built), the budget stops it, it is excluded, or it has taken ``max_hits`` HITs. ``progress(done,
    total)`` is told of each answered question. Raises ``CampaignStateError`` for a campaign without a model
    or not running, ``CrowdConfigError`` without ``TOPPREF_LLM_BASE_URL``, ``CrowdRequestError`` when the
    server refuses, ``CrowdTransientError`` when it stays unreachable (the task retries; nothing answered is
    asked again)."""
    campaign.refresh_from_db()
    if not campaign.has_llm:
        raise CampaignStateError(f"campaign {campaign.name!r} has no model (--llm-model)")
    if campaign.status != Campaign.Status.RUNNING:
        raise CampaignStateError(f"campaign {campaign.name!r} is {campaign.status}: only a running campaign")
    provider = provider or crowd.llm_provider_build(campaign.llm_model)
    judging = _Judging(
        campaign=campaign,
        worker=llm_worker(campaign=campaign),
        provider=provider,
        tracker=_Progress(progress),
        max_hits=max_hits,
    )
    with ThreadPoolExecutor(max_workers=max(1, campaign.llm_max_concurrency)) as pool:
        try:
            judging.go(pool)
        except BaseException:
            # An error, a Ctrl-C or a task's time limit: the pool must not go on buying the questions queued.
            judging.stop()
            raise
    _campaign_note(campaign=campaign, note=judging.run.note)
    return judging.run


Key = tuple[int, int, int]  # a question: topic, the item shown first, the item shown second


class _Judging:
    """One run of a campaign's model. The questions of the open HITs it may take (at most ``HITS_PER_BATCH``
    in hand) go to the pool as soon as they are known, so its threads never wait for this one; each answer is
    stored as it comes back, and a HIT is submitted once its last question has its answer and every HIT taken
    before it is submitted, while the pool goes on with the others (a submit's database work overlaps the
    model's latency). Submitting in the order taken keeps the campaign the same however the server's replies
    interleave: a submit closes rounds and builds the next HITs (their pairs and challenges), so a run that
    submitted in the order of its replies built other HITs, and a second identical campaign asked questions
    the first never had (seen under load). A submit may close
    rounds and build the next HITs: they join the run at once. Questions are handed to the pool only while
    their estimated cost fits the budget."""

    def __init__(
        self,
        *,
        campaign: Campaign,
        worker: Worker,
        provider: LlmProvider,
        tracker: _Progress,
        max_hits: int | None,
    ) -> None:
        self.campaign, self.worker, self.provider, self.tracker = campaign, worker, provider, tracker
        self.max_hits = max_hits
        self.run = LlmRun()
        self.template = campaign_llm_template(campaign)
        self.room = _budget_room(campaign)
        self.reserved = Decimal("0")
        self.seen: set[int] = set()
        self.in_hand: dict[int, Hit] = {}
        # HITs in hand in the order taken, and those of them whose every question has its answer
        self.taken: deque[int] = deque()
        self.ready: set[int] = set()
        self.slots: dict[int, list[_Slot]] = {}
        self.waiting: dict[int, set[Key]] = {}
        self.hits_of: dict[Key, list[int]] = defaultdict(list)
        self.answers: dict[Key, LlmAnswer] = {}
        self.asking: set[Key] = set()
        self.futures: dict[Future[Answer], Question] = {}
        self.is_stopped = self.is_full = False
        self.error: CrowdError | None = None

    def go(self, pool: ThreadPoolExecutor) -> None:
        self.pool = pool
        self.refill()
        while self.futures or (not self.is_stopped and self.flush()):
            done, _ = wait(self.futures, return_when=FIRST_COMPLETED)
            submitted = self.run.hits
            for future in done:
                question = self.futures.pop(future)
                if future.cancelled():
                    continue
                try:
                    answer = future.result()
                except CrowdError as failure:
                    self.error = self.error or failure
                    self.stop()
                    continue
                stored = _answer_store(
                    campaign=self.campaign,
                    question=question,
                    key=_key(self.campaign, self.template, question),
                    template=self.template,
                    answer=answer,
                )
                self.run.sent += answer.attempts
                self.tracker.step()
                self.answered(question.order_key, stored)
            if self.run.hits != submitted:
                self.refill()
        if self.error is not None:
            raise self.error

    def flush(self) -> bool:
        """With no reply left to come, submit the HITs whose questions all have their answers though one taken
        before them waits for a question the budget kept back, then take in what their submits opened; whether
        any was submitted."""
        submitted = self.run.hits
        for hit_id in [hit_id for hit_id in self.taken if hit_id in self.ready]:
            if self.is_stopped:
                break
            self.taken.remove(hit_id)
            self.ready.discard(hit_id)
            self.submit(hit_id)
        if self.run.hits == submitted:
            return False
        self.refill()
        return True

    def stop(self) -> None:
        self.is_stopped = True
        for future in self.futures:
            future.cancel()

    def refill(self) -> None:
        """Take in the open HITs not seen yet, while there is room in hand, budget, and the model may judge."""
        while not (self.is_stopped or self.is_full):
            room = HITS_PER_BATCH - len(self.in_hand)
            if self.max_hits is not None:
                room = min(room, self.max_hits - len(self.seen))
            if room <= 0:
                return
            self.campaign.refresh_from_db(fields=["status"])
            if self.campaign.status != Campaign.Status.RUNNING:
                return
            if worker_is_excluded(worker=self.worker, campaign=self.campaign):
                self.excluded()
                return
            hits = list(
                hits_open_for(campaign=self.campaign, worker=self.worker).exclude(pk__in=self.seen)[:room]
            )
            if not hits:
                return
            self.add(hits)

    def add(self, hits: Sequence[Hit]) -> None:
        slots = _slots(hits)
        ready = []
        for hit in hits:
            self.seen.add(hit.pk)
            self.in_hand[hit.pk] = hit
            self.slots[hit.pk] = slots[hit.pk]
            needed = {q for _, t, a, b, *_ in slots[hit.pk] for q in ((t, a, b), (t, b, a))}
            self.waiting[hit.pk] = {key for key in needed if key not in self.answers}
            for key in self.waiting[hit.pk]:
                self.hits_of[key].append(hit.pk)
            self.taken.append(hit.pk)
            if not self.waiting[hit.pk]:
                ready.append(hit.pk)
        self.ready.update(ready)
        self.submit_ready()
        questions = [
            q
            for q in _questions(slots.values())
            if q.order_key not in self.answers and q.order_key not in self.asking
        ]
        asked = _answered(campaign=self.campaign, questions=questions)
        pending = [q for q in questions if q.order_key not in asked]
        self.tracker.grow(len(pending))
        for key, answer in asked.items():
            self.answered(key, answer)
        keys = {q.order_key: _key(self.campaign, self.template, q) for q in pending}
        cached = {a.key: a for a in LlmAnswer.objects.filter(key__in=list(keys.values()))}
        stored = _requests_store_cached(
            campaign=self.campaign,
            answers=[(q, cached[keys[q.order_key]]) for q in pending if keys[q.order_key] in cached],
        )
        self.run.cached += len(stored)
        for question, answer in stored:
            self.tracker.step()
            self.answered(question.order_key, answer)
        to_send = [q for q in pending if keys[q.order_key] not in cached]
        for position, question in enumerate(to_send):
            if self.is_stopped:
                return
            estimate = _estimate_cost(self.campaign, self.template, question)
            if self.room is not None and self.reserved + estimate > self.room:
                self.run.note = (
                    f"budget ${self.campaign.budget_usd:.2f} reached: {len(to_send) - position} question(s) "
                    "of the model wait for more budget"
                )
                self.is_full = True
                return
            self.reserved += estimate
            self.asking.add(question.order_key)
            future = self.pool.submit(
                self.provider.ask,
                template=self.template,
                question=question.question,
                first=question.first,
                second=question.second,
            )
            self.futures[future] = question

    def answered(self, key: Key, answer: LlmAnswer) -> None:
        self.answers[key] = answer
        self.asking.discard(key)
        for hit_id in self.hits_of.pop(key, ()):
            self.waiting[hit_id].discard(key)
            if not self.waiting[hit_id]:
                self.ready.add(hit_id)
        self.submit_ready()

    def submit_ready(self) -> None:
        """Submit the HITs taken first whose questions all have their answers, in the order taken."""
        while self.taken and self.taken[0] in self.ready and not self.is_stopped:
            hit_id = self.taken.popleft()
            self.ready.discard(hit_id)
            self.submit(hit_id)

    def submit(self, hit_id: int) -> None:
        if self.is_stopped:
            return
        hit = self.in_hand.pop(hit_id)
        status = _hit_submit(hit=hit, worker=self.worker, slots=self.slots.pop(hit_id), answered=self.answers)
        self.run.hits += status is not None
        if status == Assignment.Status.DISCARDED:
            self.excluded()

    def excluded(self) -> None:
        """A failed challenge excluded the model: asking on would buy answers that cannot count."""
        self.run.note = f"the model ({self.worker.external_id}) is excluded: it failed a challenge"
        self.stop()


def _hit_submit(
    *, hit: Hit, worker: Worker, slots: Sequence[_Slot], answered: dict[tuple[int, int, int], LlmAnswer]
) -> str | None:
    """Take the HIT and submit the model's answers: the assignment's status after the count, None when the
    HIT could not be taken (taken, closed or past its lifetime meanwhile, or the model excluded)."""
    answers = _hit_answers(slots, answered)
    if answers is None:
        return None
    try:
        assignment = assignment_start(hit=hit, worker=worker)
    except JudgingError:
        return None
    return assignment_submit(assignment=assignment, winners=answers[0], ties=answers[1]).status


def campaign_llm_estimate(*, campaign: Campaign) -> LlmEstimate:
    """Tokens and cost of the questions the model would be asked now, estimated from the passage lengths
    (``estimate_tokens``) before any request; questions already answered for this campaign are left out,
    and those the cache answers cost nothing."""
    template = campaign_llm_template(campaign)
    worker = llm_worker(campaign=campaign)
    hits = list(hits_open_for(campaign=campaign, worker=worker))
    questions = _questions(_slots(hits).values())
    asked = _answered(campaign=campaign, questions=questions)
    pending = [q for q in questions if q.order_key not in asked]
    cached = set(
        LlmAnswer.objects.filter(key__in=[_key(campaign, template, q) for q in pending]).values_list(
            "key", flat=True
        )
    )
    to_send = [q for q in pending if _key(campaign, template, q) not in cached]
    tokens_in = sum(_estimate_in(template, q) for q in to_send)
    tokens_out = ESTIMATED_REPLY_TOKENS * len(to_send)
    return LlmEstimate(
        questions=len(pending),
        cached=len(pending) - len(to_send),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=cost_usd(
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            price_in=campaign.llm_price_in_usd,
            price_out=campaign.llm_price_out_usd,
        ),
    )


def _estimate_in(template: str, question: Question) -> int:
    return estimate_tokens(
        SYSTEM_MESSAGE
        + prompt_render(template, question=question.question, first=question.first, second=question.second)
    )


def _key(campaign: Campaign, template: str, question: Question) -> str:
    return answer_key(
        endpoint=endpoint(),
        model=campaign.llm_model,
        template=template,
        question=question.question,
        first=question.first,
        second=question.second,
    )


# A slot as the model reads it: position, topic, left item, right item, question, left text, right text.
_Slot = tuple[int, int, int, int, str, str, str]


def _slots(hits: Sequence[Hit]) -> dict[int, list[_Slot]]:
    """The slots of ``hits`` with their texts, by HIT (one query)."""
    slots: dict[int, list[_Slot]] = {hit.pk: [] for hit in hits}
    for hit_id, position, topic_id, question, utterance, left, right, left_text, right_text in (
        HitSlot.objects.filter(hit_id__in=list(slots))
        .order_by("hit_id", "position")
        .values_list(
            "hit_id",
            "position",
            "topic_id",
            "topic__question",
            "topic__utterance",
            "left_id",
            "right_id",
            "left__text",
            "right__text",
        )
    ):
        slots[hit_id].append((position, topic_id, left, right, question or utterance, left_text, right_text))
    return slots


def _questions(slot_lists: Iterable[list[_Slot]]) -> list[Question]:
    """Every slot's two orders, each once."""
    questions: dict[tuple[int, int, int], Question] = {}
    for slots in slot_lists:
        for _, topic, left, right, text, left_text, right_text in slots:
            for question in (
                Question(topic, left, right, text, left_text, right_text),
                Question(topic, right, left, text, right_text, left_text),
            ):
                questions.setdefault(question.order_key, question)
    return list(questions.values())


def _answered(*, campaign: Campaign, questions: Sequence[Question]) -> dict[tuple[int, int, int], LlmAnswer]:
    """The stored answers of this campaign to ``questions``, by topic and order."""
    topics = {q.topic_id for q in questions}
    rows = LlmRequest.objects.filter(campaign=campaign, topic_id__in=topics).select_related("answer")
    wanted = {q.order_key for q in questions}
    return {key: row.answer for row in rows if (key := (row.topic_id, row.first_id, row.second_id)) in wanted}


def _budget_room(campaign: Campaign) -> Decimal | None:
    """What the budget still allows (None: no budget); the spend is the one sum (``campaign_spend``)."""
    if campaign.budget_usd is None:
        return None
    from judging.selectors.progress import campaign_spend

    return campaign.budget_usd - campaign_spend(campaign=campaign).total


def _estimate_cost(campaign: Campaign, template: str, question: Question) -> Decimal:
    return cost_usd(
        tokens_in=_estimate_in(template, question),
        tokens_out=ESTIMATED_REPLY_TOKENS,
        price_in=campaign.llm_price_in_usd,
        price_out=campaign.llm_price_out_usd,
    )


@transaction.atomic
def _answer_store(
    *, campaign: Campaign, question: Question, key: str, template: str, answer: Answer
) -> LlmAnswer:
    """Store the model's answer in the cache (or read the one another process stored first) and record
    that the campaign asked it, in one transaction: once committed, no run asks it again."""
    stored = LlmAnswer.objects.filter(key=key).first()
    if stored is None:
        try:
            with transaction.atomic():
                stored = LlmAnswer.objects.create(
                    key=key,
                    endpoint=endpoint(),
                    model=campaign.llm_model,
                    prompt_hash=prompt_hash(template),
                    choice=answer.choice,
                    replies=list(answer.replies),
                    attempts=answer.attempts,
                    tokens_in=answer.tokens_in,
                    tokens_out=answer.tokens_out,
                )
        except IntegrityError:
            stored = LlmAnswer.objects.get(key=key)
    # Another process's answer stands in the cache; this campaign paid for its own call all the same.
    LlmRequest.objects.bulk_create(
        [_request(campaign, question, stored, is_cached=False)], ignore_conflicts=True
    )
    return stored


@transaction.atomic
def _requests_store_cached(
    *, campaign: Campaign, answers: Sequence[tuple[Question, LlmAnswer]]
) -> Sequence[tuple[Question, LlmAnswer]]:
    """Record the questions the cache answers for this campaign, free, in one statement (one recorded
    already by another process keeps its record)."""
    LlmRequest.objects.bulk_create(
        [_request(campaign, question, answer, is_cached=True) for question, answer in answers],
        ignore_conflicts=True,
    )
    return answers


def _request(campaign: Campaign, question: Question, answer: LlmAnswer, *, is_cached: bool) -> LlmRequest:
    return LlmRequest(
        campaign=campaign,
        topic_id=question.topic_id,
        first_id=question.first_id,
        second_id=question.second_id,
        answer=answer,
        is_cached=is_cached,
    )


def _hit_answers(
    slots: Sequence[_Slot], answered: dict[tuple[int, int, int], LlmAnswer]
) -> tuple[dict[int, int], dict[int, str]] | None:
    """The model's answer to every slot of a HIT (winners and ties by position), None if a question has no
    answer yet. Both orders naming the same passage: that passage; otherwise no preference, with the shorter
    passage standing in as the winner (the published judge's rule for a tie: "select the simplest and
    clearest"; see ``Judgment``)."""
    winners: dict[int, int] = {}
    ties: dict[int, str] = {}
    for position, topic, left, right, _, left_text, right_text in slots:
        left_first, right_first = answered.get((topic, left, right)), answered.get((topic, right, left))
        if left_first is None or right_first is None:
            return None
        outcome, preferred = pair_outcome(left_first.choice, right_first.choice)
        if outcome == PREFERENCE:
            winners[position] = left if preferred == 0 else right
            continue
        winners[position] = left if len(left_text) <= len(right_text) else right
        ties[position] = (
            Judgment.Tie.POSITION_INCONSISTENT if outcome == POSITION_INCONSISTENT else Judgment.Tie.FAILED
        )
    return winners, ties


@transaction.atomic
def _campaign_note(*, campaign: Campaign, note: str) -> None:
    """Say why the model stopped short where campaign_status and the dashboard show why publishing did."""
    if note:
        logger.warning("campaign %s: the model stopped: %s", campaign.name, note)
    if note or campaign.publish_note.startswith("model:"):
        text = f"model: {note}"[:500] if note else ""
        Campaign.objects.filter(pk=campaign.pk).update(publish_note=text)
        campaign.publish_note = text


def campaign_llm_enqueue(*, campaign: Campaign) -> None:
    """After commit, queue the model's judging of the campaign (its own queue: ``llm``)."""
    from config.celery import enqueue_on_commit

    enqueue_on_commit("judging.tasks.llm_judge_task", campaign.pk)


def campaigns_with_llm_running() -> list[int]:
    """Running campaigns with a model, by id: the sweep queues their judging, which finds HITs built since."""
    return list(
        Campaign.objects.filter(~Q(llm_model=""), status=Campaign.Status.RUNNING).values_list("pk", flat=True)
    )


__all__ = [
    "LlmEstimate",
    "LlmRun",
    "campaign_llm_enqueue",
    "campaign_llm_estimate",
    "campaign_llm_judge",
    "campaigns_with_llm_running",
    "llm_worker",
]
