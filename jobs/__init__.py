"""loop-verify: run due Backlog.md verifications and record each verdict in its task."""
