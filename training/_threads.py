"""Predictions on one thread.

A fitted tree ensemble predicts tree by tree, each tree an OpenMP parallel region over the rows; every region
ends at a barrier that waits for its slowest thread. On a machine shared with other work a thread is often
descheduled, so each of the hundreds of regions of one prediction waits for a time slice: a 2,000-row
permutation importance of a 150-tree model took 7.5-28.7 s on two busy cores and 0.35-0.46 s on one thread,
a 40,000-row holdout 0.9-2.3 s and 0.3-0.5 s (load average 9.5). Predictions are the same on any number of
threads (rows are independent, trees summed in order); the fit keeps the threads its estimator asks for.
Only OpenMP is limited: its thread count is the calling thread's own, so a fit in another thread keeps its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import threadpool_limits

__all__ = ["one_thread"]


@contextmanager
def one_thread() -> Iterator[None]:
    """Predict on one OpenMP thread inside the block; the earlier limit is restored after it."""
    with threadpool_limits(limits=1, user_api="openmp"):
        yield
