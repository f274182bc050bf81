"""`loop-verify review`: the ledger read (query), judged (model) and laid out (html, markdown)."""
