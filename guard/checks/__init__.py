"""One module per check kind; importing this package registers them all, in this order."""
from guard.checks import freshness, lineage, nulls, schema, units, volume, duplicates, domain, drift, leakage  # noqa: F401
