"""One run from config to artifacts: the runner, its slot and cost probe, sweeps, private search, the gallery."""
