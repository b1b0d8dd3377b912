"""`python -m engine`: one sub-command per module."""
