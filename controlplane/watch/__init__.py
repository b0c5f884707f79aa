"""Watching: follow changes, actions, retrain, postmortems, memory, the cron schedule and scheduler."""
