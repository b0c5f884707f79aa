"""The champion: promote and rollout."""
