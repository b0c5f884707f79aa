"""Onboarding a table: init, infer, unit guesses, land, accept, contracts (applying ODCS documents)."""
