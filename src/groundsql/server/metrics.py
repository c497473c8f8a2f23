"""Prometheus metrics for `GET /metrics`: requests, latency per route and per stage, model
tokens, refusals and errors. One registry per app, so tests and several apps in one process
do not share counts."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from groundsql.strategies import Answer

# Questions take seconds to minutes on a CPU; SQL and metadata take milliseconds.
_BUCKETS = (0.005, 0.02, 0.1, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160, 320)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("groundsql_requests", "HTTP requests by route and status",
                                ["route", "status"], registry=self.registry)
        self.latency = Histogram("groundsql_request_seconds", "HTTP request latency by route",
                                 ["route"], buckets=_BUCKETS, registry=self.registry)
        self.stages = Histogram("groundsql_stage_seconds", "Time per stage of a question",
                                ["stage"], buckets=_BUCKETS, registry=self.registry)
        self.tokens = Counter("groundsql_model_tokens", "Model tokens (prompt, cached prompt, generated)",
                              ["kind"], registry=self.registry)
        self.refusals = Counter("groundsql_refusals", "Statements the validator refused, by route",
                                ["route"], registry=self.registry)
        self.errors = Counter("groundsql_errors", "Requests that failed inside the service, by route",
                              ["route"], registry=self.registry)

    def observe_answer(self, answer: Answer) -> None:
        for step in answer.steps:
            self.stages.labels(step.name).observe(step.elapsed_s)
            error = step.detail.get("error")
            if isinstance(error, str) and error.startswith("refused "):
                self.refusals.labels("/v1/ask").inc()
        for call in answer.calls:
            self.tokens.labels("prompt").inc(call.prompt_tokens)
            self.tokens.labels("cached_prompt").inc(call.cached_prompt_tokens)
            self.tokens.labels("generated").inc(call.completion_tokens)

    def render(self) -> bytes:
        return generate_latest(self.registry)
