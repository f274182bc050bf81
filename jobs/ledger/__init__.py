"""The ledger: every attempt, claim and audit run in one database (SQLite or PostgreSQL), and the
local spool that keeps writes while it cannot be reached."""
