"""The SPEC's rules for loop-verify as plain functions of plain data: which tasks are due, what a
verdict writes, what counts as drift, when a repository is ready, and what to do with a pending
edit. Nothing here starts a process or writes the ledger (import-linter keeps it so)."""
