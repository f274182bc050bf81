"""loop-verify's own work: a run over every repository, one task start to finish, the verdicts an
earlier run left, and the claims that make each verification run once across machines."""
