"""The measures and the qrels in words: what ``manage.py scores_show`` prints as its legend and what the
leaderboard page shows as its measure names and its legend, written once so that the two say the same.

The words follow "Assessing top-k preferences" (Clarke, Vtyurina and Smucker): compatibility is section 3,
its persistence p and the analogy p = 0.8/0.85/0.9/0.95 to NDCG@3/5/10/20 are section 5 (Table 1), the
combined qrels (the preferred top-k above the grades) are sections 5 and 6.
"""

from __future__ import annotations

from metrics.core.evaluate import parse_measure

__all__ = [
    "BINARY_FAMILIES",
    "COMPAT_MEANING",
    "FAMILY_MEANING",
    "KIND_MEANING",
    "PERSISTENCE_MEANING",
    "QRELS_MEANING",
    "legend_entries",
    "measure_label",
    "measure_title",
    "qrels_difference",
    "relevance_note",
]

# What each preference qrels kind puts in the ideal ranking (sections 5 and 6).
KIND_MEANING = {
    "combined": "the campaign's top-k above the grades",
    "top_k": "the campaign's top-k only",
    "best": "the campaign's best item only",
}
# The two qrels every leaderboard measure is scored against.
QRELS_MEANING = {
    "preferences": "the preference top-k: the passages the campaign's judges preferred, in their order, "
    "above the rest of the graded passages",
    "graded": "the graded judgments: every passage of a grade counts as equally good",
}
QRELS_TITLE = {"preferences": "the preference top-k", "graded": "the graded judgments"}

COMPAT_MEANING = (
    "how close a run's ranking comes to the ideal ranking its judgments allow, as rank-biased overlap "
    "normalised so that an ideal ranking scores 1"
)
PERSISTENCE_MEANING = (
    "the chance that a reader goes on from one passage to the next, so the top ranks weigh "
    "most; p = 0.8, 0.85, 0.9, 0.95 are the analogues of ndcg@3, @5, @10, @20"
)
# One phrase per measure family; a family not listed is shown by its name alone.
FAMILY_MEANING = {
    "compat": f"compatibility ({COMPAT_MEANING}; persistence p = {PERSISTENCE_MEANING})",
    "ndcg": "NDCG with the qrels value as gain (discounted by log2 of the rank, 1 for the ideal order)",
    "ap": "average precision (the precision at each relevant passage, averaged)",
    "rr": "reciprocal rank (1 / the rank of the first relevant passage)",
    "p": "precision (the share of relevant passages in the top k)",
    "rbp": "rank-biased precision",
    "esl": "expected search length",
}
# Families that count a passage as relevant or not (a value at or above the threshold).
BINARY_FAMILIES = ("ap", "rr", "p", "rbp", "esl")
_FAMILY_TITLE = {
    "compat": "Compatibility",
    "ndcg": "NDCG",
    "ap": "Average precision",
    "rr": "Reciprocal rank",
    "p": "Precision",
    "rbp": "Rank-biased precision",
    "esl": "Expected search length",
}


def relevance_note(families: list[str], threshold: float) -> str:
    """ "ap and rr count a value of 1 or more as relevant" for the binary families among ``families``."""
    binary = [family for family in dict.fromkeys(families) if family in BINARY_FAMILIES]
    if not binary:
        return ""
    return f"{' and '.join(binary)} count a value of {threshold:g} or more as relevant"


def qrels_difference(kind: str = "preference") -> str:
    """The sentence that tells scores against the preference qrels from scores against the grades."""
    return (
        "The difference: the graded qrels treat every passage of a grade as equally good, so any grade-4 "
        f"passage at rank 1 is perfect; the {kind} qrels also require the passages the campaign's judges "
        "preferred, in their order, so a run that misses them scores lower against the preferences only "
        "(Assessing top-k preferences, section 6)."
    )


def measure_title(measure: str, qrels: str | None = None) -> str:
    """A measure's name for a newcomer, e.g. ``compat@0.95`` under ``preferences``: "Compatibility with the
    preference top-k, persistence 0.95"; ``ndcg@10``: "NDCG to rank 10 with ..."; an unknown qrels is left
    out. Raises ``ValueError`` for a measure ``parse_measure`` does not know."""
    parsed = parse_measure(measure)
    family = parsed.family.name
    title = _FAMILY_TITLE.get(family, family)
    against = f" with {QRELS_TITLE[qrels]}" if qrels in QRELS_TITLE else ""
    if parsed.parameter is None:
        return f"{title}{against}"
    if parsed.family.parameter == "float":
        return f"{title}{against}, persistence {parsed.parameter:g}"
    return f"{title} to rank {parsed.parameter}{against}"


def measure_label(measure: str, qrels: str) -> str:
    """The title with the code name beside it: "Compatibility with the preference top-k, persistence 0.95
    (compat@0.95:preferences)"."""
    return f"{measure_title(measure, qrels)} ({measure}:{qrels})"


def legend_entries(measures: list[str]) -> list[tuple[str, str]]:
    """(term, meaning) for the families among ``measures`` (compatibility's persistence as its own entry),
    then the two qrels: the leaderboard page's legend."""
    families = {parse_measure(name).family.name: parse_measure(name).family for name in measures}
    entries: list[tuple[str, str]] = []
    for name, family in families.items():
        if name == "compat":
            entries.append(("Compatibility (compat@p)", COMPAT_MEANING))
            entries.append(("Persistence (the p of compat@p)", PERSISTENCE_MEANING))
        elif name in FAMILY_MEANING:
            spelled = {"int": f"{name}@k", "float": f"{name}@p"}.get(family.parameter or "", name)
            entries.append((f"{_FAMILY_TITLE[name]} ({spelled})", FAMILY_MEANING[name]))
    entries.append(("Preferences (:preferences)", QRELS_MEANING["preferences"]))
    entries.append(("Graded (:graded)", QRELS_MEANING["graded"]))
    return entries
