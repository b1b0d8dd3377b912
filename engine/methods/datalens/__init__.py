"""DataLens: teacher discriminators, top-k stochastic sign votes, a student generator."""
