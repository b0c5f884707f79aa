"""One module per playbook; importing this package registers them all."""

from remediations.playbooks import (  # noqa: F401
    cast_types,
    category_casing,
    dedupe_keys,
    label_window,
    quarantine_rows,
    rename_columns,
    shift_timestamps,
    swap_columns,
    unit_rescale,
)
