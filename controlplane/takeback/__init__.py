"""Taking a run back: undo, recovery, rollback."""
