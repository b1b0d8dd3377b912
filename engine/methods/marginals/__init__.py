"""The independent-marginals baseline."""
