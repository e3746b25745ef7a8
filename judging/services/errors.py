"""Errors the judging services raise: each names the object and the rule it broke."""


class JudgingError(Exception):
    """Base of every refusal by a judging service; nothing was changed when it is raised."""


class CampaignConfigError(JudgingError, ValueError):
    """The campaign's parameters break a rule (F > P > k >= 1, HIT shape, prices)."""


class CampaignStateError(JudgingError):
    """The campaign is not in a state that allows the request (e.g. starting one without topics)."""


class HitNotOpenError(JudgingError):
    def __init__(self, *, hit_id: int, status: str) -> None:
        super().__init__(f"HIT {hit_id} is {status}, not open")
        self.hit_id, self.status = hit_id, status


class HitTakenError(JudgingError):
    def __init__(self, *, hit_id: int) -> None:
        super().__init__(f"HIT {hit_id} is already assigned to another worker")
        self.hit_id = hit_id


class WorkerExcludedError(JudgingError):
    def __init__(self, *, worker_id: int) -> None:
        super().__init__(f"worker {worker_id} is excluded from further work")
        self.worker_id = worker_id


class AssignmentClosedError(JudgingError):
    def __init__(self, *, assignment_id: int, status: str) -> None:
        super().__init__(f"assignment {assignment_id} is {status}; it takes no more judgments")
        self.assignment_id, self.status = assignment_id, status


class InvalidWinnerError(JudgingError, ValueError):
    def __init__(self, *, slot_id: int, winner_id: int) -> None:
        super().__init__(f"item {winner_id} is not one of the two items of slot {slot_id}")
        self.slot_id, self.winner_id = slot_id, winner_id


class SlotMismatchError(JudgingError, ValueError):
    """A submitted answer names a slot of another HIT, or a HIT submit does not answer every slot."""


class TournamentPairError(JudgingError, ValueError):
    """The judged pair is not the pair the topic's tournament is waiting for."""


class TopicLeasedError(JudgingError):
    """Another dedicated assessor holds the topic."""


class HitLifetimeOverError(HitNotOpenError):
    """The HIT is past its lifetime (``Hit.expires_at``): it is no longer handed out, even before the overdue
    sweep marks it expired."""

    def __init__(self, *, hit_id: int) -> None:
        JudgingError.__init__(self, f"HIT {hit_id} is past its lifetime and is no longer handed out")
        self.hit_id, self.status = hit_id, "expired"


class WorkerBusyError(JudgingError):
    """The worker already holds an assignment in progress in this campaign (one at a time, so a double click
    or a retry never hoards HITs)."""

    def __init__(self, *, worker_id: int, assignment_id: int, hit_id: int) -> None:
        super().__init__(
            f"worker {worker_id} already holds assignment {assignment_id} (HIT {hit_id}) in this campaign;"
            " submit it or let it expire first"
        )
        self.worker_id, self.assignment_id, self.hit_id = worker_id, assignment_id, hit_id


class SessionWaitsError(JudgingError):
    """Another session of the same participant holds an assignment that the provider confirmed or that is
    still being worked on: this session's claim waits (it may be a forger's who knows the participant's id)
    until the provider's listing says which session is theirs."""

    def __init__(self, *, worker_id: int, assignment_id: int) -> None:
        super().__init__(
            f"worker {worker_id} holds assignment {assignment_id} under another session, confirmed or still live;"
            " this session waits for the provider's confirmation"
        )
        self.worker_id, self.assignment_id = worker_id, assignment_id


class AssignmentOverdueError(AssignmentClosedError):
    """The assignment's duration is over (``Assignment.deadline_at`` passed): its work is no longer accepted.
    Nothing is changed; the overdue sweep expires it and gives its HIT to another worker."""

    def __init__(self, *, assignment_id: int) -> None:
        JudgingError.__init__(
            self, f"assignment {assignment_id} is past its deadline; it takes no more judgments"
        )
        self.assignment_id, self.status = assignment_id, "expired"


class InvalidTimingError(JudgingError, ValueError):
    """A judgment's ``milliseconds`` is not a whole number of milliseconds from 0 to 2**31 - 1 (the range of
    the PositiveIntegerField on PostgreSQL, checked here so that SQLite refuses the same values)."""

    MAX_MILLISECONDS = 2**31 - 1

    @classmethod
    def check(cls, milliseconds: object, *, what: str) -> None:
        """Raise unless ``milliseconds`` is None or a whole number in range; ``what`` names the judged thing."""
        if milliseconds is None:
            return
        if isinstance(milliseconds, bool) or not isinstance(milliseconds, int):
            raise cls(f"{what}: milliseconds must be a whole number, not {milliseconds!r}")
        if not 0 <= milliseconds <= cls.MAX_MILLISECONDS:
            raise cls(f"{what}: milliseconds must be from 0 to {cls.MAX_MILLISECONDS}, not {milliseconds}")


class AssignmentSubmittedError(JudgingError):
    def __init__(self, *, assignment_id: int) -> None:
        super().__init__(f"assignment {assignment_id} was already submitted")
        self.assignment_id = assignment_id


class PairAlreadyJudgedError(JudgingError):
    """The worker already judged a pair of this HIT (in an earlier, expired or discarded, assignment)."""

    def __init__(self, *, hit_id: int, worker_id: int) -> None:
        super().__init__(f"worker {worker_id} already judged a pair of HIT {hit_id}")
        self.hit_id, self.worker_id = hit_id, worker_id


class UndoRefusedError(JudgingError):
    """The answer cannot be taken back: it is not the judge's last answer, or it counts already (its HIT
    submitted, its topic finished, its round closed)."""
