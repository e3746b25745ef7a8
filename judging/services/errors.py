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


class AssignmentSubmittedError(JudgingError):
    def __init__(self, *, assignment_id: int) -> None:
        super().__init__(f"assignment {assignment_id} was already submitted")
        self.assignment_id = assignment_id


class PairAlreadyJudgedError(JudgingError):
    """The worker already judged a pair of this HIT (in an earlier, expired or discarded, assignment)."""

    def __init__(self, *, hit_id: int, worker_id: int) -> None:
        super().__init__(f"worker {worker_id} already judged a pair of HIT {hit_id}")
        self.hit_id, self.worker_id = hit_id, worker_id
