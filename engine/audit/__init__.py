"""Measured privacy: membership attacks on a run, and the empirical audit of every release."""
