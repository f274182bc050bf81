"""The configuration file: where it is, what it may hold, and how each value is checked."""
