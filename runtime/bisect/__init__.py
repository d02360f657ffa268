"""`crosscheck bisect`: from a regression to the commit that caused it (docs/bisect.md)."""
