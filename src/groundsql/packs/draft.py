"""Drafting a domain pack from any database (`groundsql init`): the files.

Writing a pack by hand takes a team weeks; the draft makes sure nobody starts from a blank
page. What the database holds is detected in packs/detect.py; from it this module writes
pack.yaml, schema.yaml, a README, drafted solved examples (packs/bank_draft.py) and a drafted
semantic model (semantic/draft.py).

Writing is careful with untrusted names and values: YAML data is always written by
`yaml.safe_dump`; comments are single lines of printable characters.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import yaml

from groundsql.db import Database
from groundsql.errors import ConfigError, GroundsqlError
from groundsql.files import reason, writable_folder, write_text_atomic
from groundsql.packs.load import BANK_FILE, PACK_FILE, SCHEMA_FILE, SEMANTIC_FILE
from groundsql.packs.bank_draft import DraftedExample, draft_bank
from groundsql.packs.detect import (MIN_FILLED, NAME_MIN_DISTINCT, REFERENCE_MAX_ROWS, Draft, Join, TableProfile,
                                    _examples, _listed, _one_line, _plural, detect)
from groundsql.packs.model import EntityTable, PackFile, SchemaDocs
from groundsql.schema.model import Column, Table
from groundsql.semantic.catalog import build_catalog
from groundsql.semantic.decompile import attach_requests
from groundsql.semantic.draft import SemanticDraft, draft_semantic, render_semantic_yaml
from groundsql.semantic.load import check_data
from groundsql.semantic.model import SemanticModel

README_FILE, BANK_EXAMPLE_FILE = "README.md", "bank.example.jsonl"


@dataclass(frozen=True)
class DraftSummary:
    folder: Path
    name: str
    tables: int
    references: tuple[str, ...]
    entities: tuple[str, ...]
    joins: int
    inferred_joins: int
    files: tuple[Path, ...]
    kept: tuple[Path, ...] = ()  # files that existed and were left alone (a filled bank)
    notes: tuple[str, ...] = ()  # what could not be drafted, and why
    drafted: int = 0  # solved examples drafted into a new bank.jsonl, for a person to review
    semantic: bool = False  # a semantic.yaml was drafted (none existed)


# -- the entry point ---------------------------------------------------------------------


def draft_pack(db: Database, out: Path, *, force: bool = False) -> DraftSummary:
    """Write a first draft of a domain pack for `db` into the folder `out`."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out} is a file; give a folder for the pack")
    existing = [out / f for f in (PACK_FILE, SCHEMA_FILE) if (out / f).exists()]
    if existing and not force:
        raise ConfigError(
            f"{existing[0]} already exists; use --force (force=True) to overwrite the draft "
            f"(a bank.jsonl that exists is kept)"
        )
    draft = detect(db)
    name = draft.schema.name or out.resolve().name or "pack"
    # A bank that exists is a person's work, always kept: draft one only for a new bank.
    drafted = () if (out / BANK_FILE).exists() else draft_bank(db, draft)
    semantic = None if (out / SEMANTIC_FILE).exists() else draft_semantic(db, draft)
    if semantic is not None and drafted:
        drafted = _with_requests(drafted, semantic, db, draft)
    texts = {
        PACK_FILE: render_pack_yaml(name, draft),
        SCHEMA_FILE: render_schema_yaml(name, draft),
        README_FILE: render_readme(name, len(drafted)),
        BANK_EXAMPLE_FILE: render_bank_example(db, draft),
        # ASCII JSON: a name with a line separator in it must not split a line.
        BANK_FILE: "".join(json.dumps(example.to_json()) + "\n" for example in drafted),
        SEMANTIC_FILE: render_semantic_yaml(semantic) if semantic is not None else "",
    }
    writable_folder(out, "the pack (--out)")
    written, kept = [], []
    for filename, text in texts.items():
        path = out / filename
        # A bank and a semantic model that exist are a person's work: always kept.
        if path.exists() and (filename in (BANK_FILE, SEMANTIC_FILE)
                              or filename in (README_FILE, BANK_EXAMPLE_FILE) and not force):
            kept.append(path)
            continue
        try:
            write_text_atomic(path, text)
        except OSError as err:
            raise GroundsqlError(f"cannot write {path}: {reason(err)}") from None
        written.append(path)
    return DraftSummary(
        folder=out,
        name=name,
        tables=len(draft.schema.tables),
        references=tuple(r.table for r in draft.references),
        entities=tuple(e.table for e in draft.entities),
        joins=len(draft.joins),
        inferred_joins=sum(j.inferred for j in draft.joins),
        files=tuple(written),
        kept=tuple(kept),
        notes=draft.notes + tuple(semantic.notes if semantic is not None else ()),
        drafted=len(drafted),
        semantic=semantic is not None,
    )


def _with_requests(drafted: Sequence[DraftedExample], semantic: SemanticDraft, db: Database,
                   draft: Draft) -> tuple[DraftedExample, ...]:
    """The drafted examples, each with its request where one gives the example's rows: the
    solved examples the compiled path shows its model."""
    entity_tables = tuple(e.table for e in draft.entities)
    catalog = build_catalog(SemanticModel.model_validate(semantic.model), draft.schema, entity_tables)
    check_data(catalog, db, None)
    return tuple(replace(example, request=request)
                 for example, request in zip(drafted, attach_requests(drafted, catalog, db)))


# -- descriptions ------------------------------------------------------------------------


def _type_word(column: Column) -> str:
    kind = column.type.upper()
    for words, word in (
        (("BOOL",), "boolean"),
        (("INT",), "integer"),
        (("REAL", "FLOAT", "DOUBLE", "NUMERIC", "DECIMAL", "NUMBER", "MONEY"), "number"),
        (("TIMESTAMP", "DATETIME"), "date and time"),
        (("DATE",), "date"),
        (("TIME",), "time"),
        (("CHAR", "TEXT", "CLOB", "STRING"), "text"),
        (("BLOB", "BYTEA", "BINARY"), "binary"),
    ):
        if any(w in kind for w in words):
            return word
    return _one_line(column.type.lower()) if column.type.strip() else "value"


def column_description(table: Table, column: Column, profile: TableProfile,
                       joins: Sequence[Join]) -> str:
    """'integer key; references company.company_id', "text, e.g. 'Germany', 'France'"."""
    lowered = (table.name.lower(), column.name.lower())
    out_joins = [j for j in joins if (j.child.lower(), j.child_column.lower()) == lowered]
    in_joins = [j for j in joins if (j.parent.lower(), j.parent_column.lower()) == lowered]
    word = _type_word(column)
    if column.primary_key:
        head = f"{word} primary key" if len(table.primary_key) == 1 else f"{word}, part of the primary key"
    elif out_joins:
        head = f"{word} key"
    else:
        head = word
    parts = [head]
    for join in out_joins:
        verb = "probably references" if join.inferred else "references"
        parts.append(f"{verb} {join.right}" + (" (inferred)" if join.inferred else ""))
    if in_joins:
        parts.append(f"referenced by {_listed(sorted({j.left for j in in_joins}))}")
    text = "; ".join(parts)
    if not (column.primary_key or out_joins):
        details = _value_details(column, profile)
        if details:
            text += ", " + details
    comment = _one_line(column.description)
    return f"{comment} ({text})" if comment else text


def _value_details(column: Column, profile: TableProfile) -> str:
    stats = profile.column(column.name)
    details = []
    if stats is not None and profile.sampled:
        if stats.non_null == 0:
            return "always empty"
        if stats.non_null / profile.sampled < MIN_FILLED:
            details.append("mostly empty")
        if stats.distinct == stats.non_null and stats.non_null > 1:
            details.append("unique")
        elif stats.distinct <= 12 and stats.non_null >= 2 * stats.distinct:
            details.append(f"{stats.distinct} distinct value{'s' * (stats.distinct != 1)}")
    if column.examples:
        details.append(f"e.g. {_examples(column.examples)}")
    return ", ".join(details)


def table_description(table: Table, draft: Draft) -> str:
    rows = f"Row count: {table.row_count:,}." if table.row_count is not None else "Row count: unknown."
    role = ""
    reference = next((r for r in draft.references if r.table == table.name), None)
    entity = next((e for e in draft.entities if e.table == table.name), None)
    out_joins = {j.child_column.lower(): j.parent for j in draft.joins
                 if j.child == table.name and j.parent != table.name}
    pk = [c.lower() for c in table.primary_key]
    if reference is not None:
        role = f"Lookup table: one row per {reference.label} value, referenced by its key {reference.key}."
    elif entity is not None:
        role = f"One row per {entity.kind}, named by {', '.join(entity.names)}."
    elif len(pk) > 1 and all(c in out_joins for c in pk):
        grain = " and ".join(sorted({out_joins[c] for c in pk}))
        if all(c.name.lower() in out_joins or c.primary_key for c in table.columns):
            role = f"Links {grain}: one row per combination."
        else:
            role = f"One row per combination of {grain}."
    comment = _one_line(table.description)
    return " ".join(p for p in (comment, role, rows) if p)


def join_description(join: Join) -> str:
    text = f"Each {join.child} row points to one {join.parent} row"
    if join.child == join.parent:
        text = f"A {join.child} row points to another {join.parent} row"
    if join.composite is not None:
        cols, refs = join.composite
        text += (f" (part of the composite foreign key ({', '.join(cols)}) -> "
                 f"{join.parent}({', '.join(refs)}): join on every part)")
    if join.inferred:
        evidence = (f"{join.match:.0%} of sampled values match" if join.match is not None
                    else "no values to check")
        return f"{text}. Inferred, not declared: same column name as {join.parent}'s key; {evidence}. Check it."
    return f"{text} (declared foreign key)."


# -- writing -----------------------------------------------------------------------------


def _comment(*lines: str) -> str:
    """YAML comment lines; a line that starts with spaces is indented under the one before."""
    out = []
    for line in lines:
        indent = "  " if line.startswith(" ") else ""
        out.append(f"# {indent}{_one_line(line)}".rstrip() + "\n")
    return "".join(out)


def _dump(data: Any) -> str:
    # A text on one line however long: an edit through the page (packs/edit.py) then rewrites
    # no line but its own.
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False, width=4096)


def _items(key: str, items: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """`key:` and a block list, each item after its own comment line."""
    if not items:
        return _dump({key: []})
    return f"{key}:\n" + "".join(_comment(note) + _dump([item]) for note, item in items)


def render_pack_yaml(name: str, draft: Draft) -> str:
    references = []
    for ref in draft.references:
        item = {"table": ref.table, "key": ref.key, "label": ref.label, "description": ref.description}
        if ref.extra:
            item["extra"] = list(ref.extra)
        table = draft.schema.table(ref.table)
        references.append((f"{ref.table}: {table.row_count if table else '?'} rows", item))
    entities = []
    for entity in draft.entities:
        entities.append((f"{entity.table}: {_entity_spread(entity, draft)}", {
            "table": entity.table, "key": entity.key, "names": list(entity.names), "kind": entity.kind,
        }))
    PackFile.model_validate({  # the draft must be a valid pack, whatever the names were
        "name": name, "references": [i for _, i in references], "entities": [i for _, i in entities],
    })
    description = (f"TODO: what this database holds and who asks it questions, in a sentence or "
                   f"two (drafted from {name}, {len(draft.schema.tables)} tables).")
    return "".join([
        _comment(
            f"Domain pack drafted by `groundsql init` from the database {name}.",
            "Every entry is a guess from names and data: check it, correct it, delete what is wrong.",
            "schema.yaml documents the tables and joins; bank.jsonl holds solved questions.",
        ),
        _dump({"name": name, "description": description}),
        "\n",
        _comment(
            "Reference tables: lookups of concepts (metrics, period types, currencies, statuses).",
            "The lookup agent reads their rows and turns phrases of a question into their keys.",
            f"Drafted: tables of at most {REFERENCE_MAX_ROWS} rows that other tables reference by a one-column",
            "key, with a short, nearly unique text column as label (extra: more columns shown next",
            "to it), named like a lookup (ref_*, *_type, *_status) or with at most two other columns.",
        ),
        _items("references", references),
        "\n",
        _comment(
            "Entity tables: named things (companies, people, places) that questions mention by name.",
            "names: the columns holding their names; kind: what to call one in messages.",
            "Drafted: tables with a one-column key and a name-like column (name, *_name, title)",
            f"whose values are at least {NAME_MIN_DISTINCT:.0%} distinct.",
        ),
        _items("entities", entities),
        "\n",
        _comment(
            "Domain rules, in the words of the people who know the data. One sentence a line.",
            "schema_linking: which tables and columns a kind of question needs",
            "  (e.g. 'Revenue is a data item: financial_data joined to ref_data_item').",
            "generation: how to write the SQL",
            "  (e.g. 'Amounts are in the unit of unit_id; convert before comparing companies').",
        ),
        _dump({"rules": {"schema_linking": [], "generation": []}}),
    ])


def _entity_spread(entity: EntityTable, draft: Draft) -> str:
    """'114 distinct company_name in 114 sampled rows'."""
    profile = draft.profiles.get(entity.table.lower(), TableProfile(0))
    stats = profile.column(entity.names[0])
    if stats is None or not profile.sampled:
        return "no rows to look at: guessed from the column names"
    if stats.distinct / profile.sampled >= NAME_MIN_DISTINCT or not profile.names_distinct:
        return f"{stats.distinct:,} distinct {entity.names[0]} in {profile.sampled:,} sampled rows"
    return f"{profile.names_distinct:,} distinct names (name columns together) in {profile.sampled:,} sampled rows"


def render_schema_yaml(name: str, draft: Draft) -> str:
    tables: dict[str, Any] = {}
    for table in draft.schema.tables:
        profile = draft.profiles.get(table.name.lower(), TableProfile(0))
        tables[table.name] = {
            "description": table_description(table, draft),
            "columns": {c.name: column_description(table, c, profile, draft.joins) for c in table.columns},
        }
    joins = [
        (("inferred: " if j.inferred else "") + f"{j.left} = {j.right}",
         {"left": j.left, "right": j.right, "description": join_description(j)})
        for j in draft.joins
    ]
    SchemaDocs.model_validate({"tables": tables, "joins": [j for _, j in joins]})
    return "".join([
        _comment(
            f"Schema documentation drafted by `groundsql init` from {name}: "
            f"{len(tables)} tables, {len(joins)} joins.",
            "Descriptions were drafted from names and sample values. Correct them and add what",
            "only people know: units, periods, codes, which rows to leave out. The model reads them.",
        ),
        _dump({"tables": tables}),
        "\n",
        _comment(
            "Join paths: left is the referencing column, right the referenced key.",
            "Inferred joins were guessed from column names and values, not declared: check them.",
        ),
        _items("joins", joins),
    ])


def render_readme(name: str, drafted: int = 0) -> str:
    template = json.dumps({"question": "...", "reasoning": "...", "sql": "..."})
    start = "It starts empty;" if not drafted else (
        f"It starts with {drafted} drafted example{'s' * (drafted != 1)}, marked\n"
        f"  `\"drafted\": true` (and the `template` they were built from): questions and SQL made\n"
        f"  from the tables, joins, labels and names detected, with values sampled from the\n"
        f"  database. Review every one: reword the question as your users would ask it, check\n"
        f"  that the SQL answers it, delete the ones nobody would ask, and remove the `drafted`\n"
        f"  mark from those you keep, then")
    return f"""# Domain pack: {_one_line(name)}

Drafted by `groundsql init`. A draft, not a finished pack: read every file and correct it.

- `pack.yaml`: name, description, reference tables (lookups of concepts), entity tables
  (named things), domain rules.
- `schema.yaml`: what every table and column means, and the join paths.
- `bank.jsonl`: solved questions, one JSON object a line. {start} add 15-30
  questions your users really ask, with the SQL an expert would write:

      {template}

  `bank.example.jsonl` shows the format with a first example.

Check the pack against the database after every edit: `load_pack(folder)` and
`check_pack(pack, schema, folder)` name the file, line and field of any mistake.
"""


def render_bank_example(db: Database, draft: Draft) -> str:
    lines = [json.dumps({"question": "...", "reasoning": "...", "sql": "..."})]
    target = draft.entities[0].table if draft.entities else (
        draft.schema.tables[0].name if draft.schema.tables else None)
    if target is not None:
        entity = draft.entities[0] if draft.entities else None
        noun = _plural(entity.kind) if entity is not None else "rows of " + _one_line(target)
        lines.append(json.dumps({
            "question": f"How many {noun} are there?",
            "reasoning": f"Each row of {target} is one; count them.",
            "sql": f"SELECT COUNT(*) FROM {db.quote(target)}",
        }))  # ASCII: a name with a line separator in it must not split the JSON line
    return "\n".join(lines) + "\n"
