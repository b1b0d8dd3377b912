"""The run store (SQLite + artifact folders) and what reads its rows: records, queue, labels, timings, estimates."""
