"""Evaluation: benchmarks, metrics, runs and reports."""
