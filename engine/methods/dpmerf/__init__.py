"""DP-MERF: random-feature mean embeddings released once, a generator trained on them."""
