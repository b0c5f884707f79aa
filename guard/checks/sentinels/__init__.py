"""Placeholders written where a measurement belongs (`sentinel`): one check, a file per mechanism.

`check`: a value's mass in one column judged against the reference (impossible, new, grown, frozen); `runs`: a
value's longest run in event-time order and its chance, which the frozen rule reads; `zeros`: zeros in columns that
never held one, weighed across columns.
"""

from guard.checks.sentinels.check import check_sentinels, looks_like_placeholder

__all__ = ["check_sentinels", "looks_like_placeholder"]
