"""The audit's judgement: every difference between two snapshots gets one verdict, by the SPEC's
rules."""
