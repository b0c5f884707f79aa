"""One module per playbook; importing this package registers them all."""
from remediations.playbooks import unit_rescale  # noqa: F401
