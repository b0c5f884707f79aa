"""The synthetic delivery estate: data generator, DataHub seed, pipeline specs, the demo story."""
