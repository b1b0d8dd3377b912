"""The Learn page's live demos and the membership game."""
