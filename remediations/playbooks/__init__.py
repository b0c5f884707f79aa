"""One module per playbook; importing this package registers them all."""
from remediations.playbooks import (  # noqa: F401
    cast_types, category_casing, dedupe_keys, label_window, null_impute, rename_columns, unit_rescale)
