"""DP Synth Lab engine: datasets, DP generators, accounting, evaluation, jobs.

Nothing in this package imports Streamlit: the app, the CLI and the tests all drive
the same code through `engine.methods.registry.get_method(name)` and `engine.runs.runner.execute`.
"""

__all__ = ["__version__"]
__version__ = "0.1.0"
