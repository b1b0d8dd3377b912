"""Utility of a synthetic set: classifiers trained on it and tested on real data, fidelity."""
