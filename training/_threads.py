"""Predictions on one OpenMP thread, a part of the rows in each of the machine's cores.

A fitted tree ensemble predicts tree by tree, each tree an OpenMP parallel region over the rows; every region
ends at a barrier that waits for its slowest thread. On a machine shared with other work a thread is often
descheduled, so each of the hundreds of regions of one prediction waits for a time slice: a 2,000-row
permutation importance of a 150-tree model took 7.5-28.7 s on two busy cores and 0.35-0.46 s on one thread,
a 40,000-row holdout 0.9-2.3 s and 0.3-0.5 s (load average 9.5). Predictions are the same on any number of
threads (rows are independent, trees summed in order); the fit keeps the threads its estimator asks for.
Only OpenMP is limited: its thread count is the calling thread's own, so a fit in another thread keeps its own.

A large holdout is cut into one contiguous part per core (`in_parts`), each predicted in its own thread on one
OpenMP thread: a quiet machine's cores all predict (a 205k-row holdout in 0.34-0.40 s instead of 0.64 s on two
cores), and a busy one waits once, at the end, for a descheduled part, never at every tree.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

__all__ = ["one_thread", "in_parts", "cores", "PART_ROWS"]

PART_ROWS = 50_000  # fewer rows a part would cost more in threads than they give


@contextmanager
def one_thread() -> Iterator[None]:
    """Predict on one OpenMP thread inside the block; the earlier limit is restored after it."""
    with threadpool_limits(limits=1, user_api="openmp"):
        yield


def cores() -> int:
    """The cores this process may run on (its affinity, where the platform says it)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def in_parts(method: Callable[[pd.DataFrame], Any], rows: pd.DataFrame) -> np.ndarray:
    """``method(rows)`` (a model's predict or predict_proba), each part of the rows in its own thread on one OpenMP
    thread, the parts' answers in row order: the same array, since a row's prediction is its own."""
    parts = min(cores(), len(rows) // PART_ROWS)
    if parts <= 1:
        with one_thread():
            return np.asarray(method(rows))
    bounds = np.linspace(0, len(rows), parts + 1).astype(int)

    def part(index: int) -> np.ndarray:
        with one_thread():
            return np.asarray(method(rows.iloc[bounds[index] : bounds[index + 1]]))

    with ThreadPoolExecutor(max_workers=parts, thread_name_prefix="predict") as pool:
        return np.concatenate(list(pool.map(part, range(parts))))
