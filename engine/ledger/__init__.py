"""The privacy budget across runs: what each run charges and what a dataset has left."""
