"""Game days on a real workspace: a pipeline's feature table (or its upstreams' metadata) corrupted by hand,
then put back."""
