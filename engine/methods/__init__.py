"""The method registry, what methods share (knobs, events, preview, tabular bins), one folder per method."""
