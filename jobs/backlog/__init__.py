"""Backlog.md on disk: task files read as its CLI reads them, edited byte for byte as it does."""
