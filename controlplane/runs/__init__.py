"""A run: its journal, locks, identity, context, checkpoint and profile engine."""
