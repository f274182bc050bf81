"""git, as both programs run it: one runner, and the commands built on it."""
