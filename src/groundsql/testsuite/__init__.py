"""Test suites: populated database variants that tell a correct query from its near misses."""
