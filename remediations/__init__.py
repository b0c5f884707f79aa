"""Remediation playbooks (pure table transforms keyed by finding kind) and the sandbox that applies them."""
