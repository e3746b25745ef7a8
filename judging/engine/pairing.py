"""Stage-1 pairing graphs: random simple graphs in which every candidate has P or P+1 opponents."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

import networkx as nx


def pairing_graph(candidates: Sequence[str], opponents: int, rng: random.Random) -> list[tuple[str, str]]:
    """The pairs of one stage-1 round (Clarke, Vtyurina and Smucker, "Assessing top-k preferences", section 4.3;
    docs/decisions.md "Pairing graph").

    A random simple graph on ``candidates`` in which every candidate has ``opponents`` (P) or P+1
    opponents, with no self-pair and no pair repeated, and with as few P+1 candidates as parity allows:
    none when |C|*P is even, exactly one when it is odd (the degree sum must be even).

    Construction: when |C|*P is even, a uniformly random P-regular graph (networkx
    ``random_regular_graph``). When it is odd (|C| and P both odd), a random P-regular graph on all
    candidates but one, v; then (P+1)/2 of its edges forming a random matching are each split, a-b
    becoming a-v and v-b, which keeps every other degree at P and gives v degree P+1.

    Returns pairs ``(a, b)`` with a before b in ``candidates`` order, sorted in that order, so the
    result is reproducible for a given ``rng`` state. Raises ``ValueError`` if |C| < P+1 (no such
    graph exists), P < 1, or the candidates are not distinct.
    """
    n = len(candidates)
    if opponents < 1:
        raise ValueError(f"opponents per candidate must be at least 1 (got {opponents})")
    if len(set(candidates)) != n:
        raise ValueError("candidates must be distinct")
    if n < opponents + 1:
        raise ValueError(
            f"a pairing graph with {opponents} opponents each needs at least {opponents + 1} candidates (got {n})"
        )
    order = list(range(n))
    rng.shuffle(order)
    if n * opponents % 2 == 0:
        graph = nx.random_regular_graph(opponents, n, seed=rng)
    else:
        graph = nx.random_regular_graph(opponents, n - 1, seed=rng)
        extra = n - 1
        split = _random_matching(graph, (opponents + 1) // 2, rng)
        graph.remove_edges_from(split)
        for a, b in split:
            graph.add_edge(a, extra)
            graph.add_edge(extra, b)
    edges = [(order[a], order[b]) for a, b in graph.edges()]
    pairs = sorted((min(a, b), max(a, b)) for a, b in edges)
    _check_pairing(n, pairs, opponents)
    return [(candidates[a], candidates[b]) for a, b in pairs]


def _random_matching(graph: nx.Graph, size: int, rng: random.Random) -> list[tuple[int, int]]:
    """``size`` pairwise-disjoint edges of ``graph``; greedy over a shuffled edge list, restarting on a
    dead end (in a P-regular graph on >= P+1 vertices a matching of (P+1)/2 edges always exists)."""
    edges = sorted(graph.edges())
    for _attempt in range(1000):
        rng.shuffle(edges)
        used: set[int] = set()
        matching = []
        for a, b in edges:
            if a not in used and b not in used:
                matching.append((a, b))
                used.update((a, b))
                if len(matching) == size:
                    return matching
    raise RuntimeError(f"no matching of {size} edges found")  # unreachable for regular graphs


def _check_pairing(n: int, pairs: list[tuple[int, int]], opponents: int) -> None:
    """Guard the generator's promise; a failure here is a bug, not bad input."""
    degrees = Counter(v for pair in pairs for v in pair)
    extra = sum(1 for v in range(n) if degrees[v] == opponents + 1)
    if (
        any(a == b for a, b in pairs)
        or len(set(pairs)) != len(pairs)
        or any(degrees[v] not in (opponents, opponents + 1) for v in range(n))
        or extra != n * opponents % 2
    ):
        raise RuntimeError(f"pairing graph violates its degree constraints (n={n}, P={opponents})")
