"""One module per check kind; importing this package registers them all, in this order."""

# The registration order is the order the checks run in (the root causes last): not sorted.
# isort: off
from guard.checks import domain, drift, duplicates, freshness, leakage, lineage, nulls, schema, units, volume  # noqa: F401
from guard.checks import relations, sentinels, swaps, timeshift  # noqa: F401  (root causes, branch guard-causes)
# isort: on
