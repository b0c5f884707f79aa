"""The corpus benches' support: the development corpus of real tables, the real datasets the guard is kept
honest on, and the false-alarm walk over their clean batches."""
