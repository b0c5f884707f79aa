"""The heal plans applied on Spark: the same playbooks, the sandbox, the copy."""
