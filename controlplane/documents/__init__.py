"""What a team writes and Kintsugi reads: YAML, loaded safely; ODCS data contracts, validated and turned into the
guard's contract. Below the spec and the stages, which read both."""
