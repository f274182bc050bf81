"""The seals of a run's evidence: the arm record, the sealed push log, the transport
fingerprint, and the ledger that holds them (SPEC "Evidence the run cannot make")."""
