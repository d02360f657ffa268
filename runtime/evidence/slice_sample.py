"""Which row slices of a sliced launch are launched, and in what order (docs/pypto.md §10).

Shared by the job (runtime.evidence.row_slices, which launches them) and the harness (runtime.evidence.dumps, which
accepts a job's claim of the rows it verified only when they are such a sample).
"""
from __future__ import annotations

import math
import random

# A package's launch cut into row slices launches the first slice, the last (the tail), then others in an order drawn
# with the case's seed, while the next one is predicted to end within this share of the case timeout (from the job's
# start). Every slice is the same program on the same shapes (the loop makes rows independent), so the slices not
# launched add no structure; their rows get no graph evidence, and the report names the rows that did
# (docs/pypto.md §10). A script's or test module's asserts read every row: all its slices are launched.
TIME_SHARE = 0.6


def sample(slices: int, count: int | None, seed: int) -> list[int]:
    """The order slices are launched in: the first, the last, then the others as `seed` shuffles them; at most
    `count` of them (None: all), never fewer than the first and the last."""
    rest = list(range(1, slices - 1))
    random.Random(seed).shuffle(rest)
    order = [0, slices - 1, *rest] if slices > 1 else [0]
    return order if count is None else order[:max(count, min(2, slices))]


def spans(slices: list[int], rows: int) -> list[list[int]]:
    """The row ranges [start, stop) of these slices of `rows` rows, adjacent ones merged."""
    ranges: list[list[int]] = []
    for k in sorted(slices):
        if ranges and ranges[-1][1] == k * rows:
            ranges[-1][1] += rows
        else:
            ranges.append([k * rows, k * rows + rows])
    return ranges


def sampled(ranges: list[list[int]], total: int, count: int | None, seed: int) -> bool:
    """Whether `ranges` are the first two or more slices of `sample`'s order (as many as the time allowed), of
    `total` rows cut into slices of some size (one dividing every bound of the ranges)."""
    bound = math.gcd(total, *(a for r in ranges for a in r))
    verified = sum(b - a for a, b in ranges)
    for rows in (r for r in range(1, bound + 1) if bound % r == 0 and verified % r == 0):
        order = sample(total // rows, count, seed)
        k = verified // rows
        if min(2, len(order)) <= k <= len(order) and spans(order[:k], rows) == ranges:
            return True
    return False
