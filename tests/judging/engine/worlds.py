"""Small simulated worlds for the engine's tests of rounds."""

import random


def shuffled_world(topics: int, size: int, seed: int):
    """``topics`` topics of ``size`` items with distinct values in a random order (drawn from ``seed``), each
    topic's pool sorted, one non-relevant passage ``zz`` per topic for the challenges: (values, pools,
    nonrelevant)."""
    rng = random.Random(seed)
    values = {}
    for t in range(topics):
        scores = list(range(size))
        rng.shuffle(scores)
        values[f"t{t}"] = {f"d{i:02d}": float(v) for i, v in enumerate(scores)}
    pools = {topic: sorted(v) for topic, v in values.items()}
    nonrelevant = {topic: ["zz"] for topic in values}
    return values, pools, nonrelevant
