"""Statistics of a table: engines (arrow, spark), profiler, sketches, snapshot, batches, hashing, the kept reference."""
