"""Datasets: the catalog of loaders, the Dataset shape, the user's CSV and NPZ, column kinds."""
