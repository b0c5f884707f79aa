"""The failures a drill injects: our own seeded injectors (table and upstream metadata), the third-party
generators of `badgers`, and the registries of scenarios that bind them to a pipeline's columns."""
