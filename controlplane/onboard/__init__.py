"""Onboarding a table: init, infer, unit guesses, land, accept, contracts (ODCS), safe YAML."""
