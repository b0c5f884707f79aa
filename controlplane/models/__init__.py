"""Models: the store, the promotion gate, the passport and its signing, champion health, impact."""
