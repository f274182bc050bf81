"""What the audit reads before it judges: snapshots of remotes, tags and releases, the push log and
its hook, the charter, the run directory, and what git says of history."""
