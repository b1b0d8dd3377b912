"""One error type for bad user input, so the CLI and the app can answer with one line."""


class InputError(ValueError):
    """A value the user gave cannot be used; the message says which and how to fix it."""
