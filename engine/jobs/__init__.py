"""Many runs: the job manager, worker processes, scheduling, the Ray backend."""
