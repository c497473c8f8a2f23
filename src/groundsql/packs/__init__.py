"""Domain packs: a database described as data (schema docs, lookups, rules, query bank)."""
