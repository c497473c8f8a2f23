"""The embedded demo financial database: deterministic, normalized, consistent, answerable."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from groundsql.demo import DEMO_DB_FILENAME, build_demo_database
from groundsql.demo.findb import DEMO_QUESTIONS


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo_database(tmp_path_factory.mktemp("demo") / DEMO_DB_FILENAME)


@pytest.fixture
def conn(demo_db: Path):
    connection = sqlite3.connect(f"file:{demo_db}?mode=ro", uri=True)
    yield connection
    connection.close()


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name")]


def test_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    # (How long a build takes is a benchmark matter, not a unit-test assertion.)
    first = build_demo_database(tmp_path / "a" / DEMO_DB_FILENAME)
    second = build_demo_database(tmp_path / "b" / DEMO_DB_FILENAME, seed=7)
    assert first.read_bytes() == second.read_bytes()
    other = build_demo_database(tmp_path / "c" / DEMO_DB_FILENAME, seed=8)
    assert other.read_bytes() != first.read_bytes()


def test_write_is_atomic_and_replaces_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / DEMO_DB_FILENAME
    target.write_bytes(b"stale")
    assert build_demo_database(target) == target
    assert target.read_bytes().startswith(b"SQLite format 3\x00")
    assert [p.name for p in tmp_path.iterdir()] == [DEMO_DB_FILENAME]  # no temp file left


def test_schema_is_normalized_with_declared_keys(conn: sqlite3.Connection) -> None:
    tables = _tables(conn)
    assert len(tables) >= 16
    assert len([t for t in tables if t.startswith("ref_")]) >= 8
    for table in tables:
        columns = conn.execute(f"PRAGMA table_info({table})").fetchall()
        assert any(col[5] for col in columns), f"{table} has no primary key"
    fk_tables = [t for t in tables if conn.execute(f"PRAGMA foreign_key_list({t})").fetchall()]
    assert {"company", "financial_data", "financial_period", "trading_item", "price_daily",
            "transaction_participant", "company_professional"} <= set(fk_tables)
    # Facts are keyed by opaque ids, not by names.
    fd_columns = [c[1] for c in conn.execute("PRAGMA table_info(financial_data)")]
    assert {"data_item_id", "unit_id", "currency_id"} <= set(fd_columns)


def test_foreign_keys_hold_and_sqlalchemy_sees_them(demo_db: Path, conn) -> None:
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    sa = pytest.importorskip("sqlalchemy")
    engine = sa.create_engine(f"sqlite:///{demo_db}")
    try:
        fks = sa.inspect(engine).get_foreign_keys("financial_data")
    finally:
        engine.dispose()
    assert {fk["referred_table"] for fk in fks} == {
        "financial_period", "ref_data_item", "ref_unit", "ref_currency"}


def test_there_is_enough_data(conn: sqlite3.Connection) -> None:
    counts = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in _tables(conn)}
    assert sum(counts.values()) >= 5000
    assert all(counts.values()), f"empty tables: {[t for t, n in counts.items() if not n]}"
    assert 60 <= counts["company"] <= 130
    assert 40 <= counts["ma_transaction"] <= 80
    assert counts["price_daily"] >= 5000


@pytest.mark.parametrize("question,gold_sql", DEMO_QUESTIONS, ids=[q for q, _ in DEMO_QUESTIONS])
def test_demo_questions_have_non_trivial_answers(conn, question: str, gold_sql: str) -> None:
    rows = conn.execute(gold_sql).fetchall()
    assert rows, question
    assert rows not in ([(0,)], [(None,)]), question
    assert all(value is not None for row in rows for value in row), question


def test_first_demo_question_is_simple() -> None:
    question, sql = DEMO_QUESTIONS[0]
    assert len(DEMO_QUESTIONS) == 5
    assert sql.upper().count(" JOIN ") <= 1


def test_ebitda_never_exceeds_revenue(conn: sqlite3.Connection) -> None:
    bad = conn.execute("""
        SELECT COUNT(*) FROM financial_data AS e
        JOIN ref_data_item AS ei ON e.data_item_id = ei.data_item_id
        JOIN ref_unit AS eu ON e.unit_id = eu.unit_id
        JOIN financial_data AS r ON r.financial_period_id = e.financial_period_id
        JOIN ref_data_item AS ri ON r.data_item_id = ri.data_item_id
        JOIN ref_unit AS ru ON r.unit_id = ru.unit_id
        WHERE ei.data_item_name = 'EBITDA' AND ri.data_item_name = 'Total Revenue'
          AND e.data_value * eu.multiplier > r.data_value * ru.multiplier
    """).fetchone()[0]
    pairs = conn.execute("""
        SELECT COUNT(*) FROM financial_data AS e JOIN ref_data_item USING (data_item_id)
        WHERE data_item_name = 'EBITDA'""").fetchone()[0]
    assert pairs > 100 and bad == 0


def test_annual_flows_equal_the_sum_of_their_quarters(conn: sqlite3.Connection) -> None:
    rows = conn.execute("""
        SELECT a.data_value, SUM(q.data_value), COUNT(*)
        FROM financial_period AS fa
        JOIN ref_period_type AS pa ON fa.period_type_id = pa.period_type_id
        JOIN financial_data AS a ON a.financial_period_id = fa.financial_period_id
        JOIN ref_data_item AS di ON a.data_item_id = di.data_item_id
        JOIN financial_period AS fq ON fq.company_id = fa.company_id
             AND fq.fiscal_year = fa.fiscal_year
        JOIN ref_period_type AS pq ON fq.period_type_id = pq.period_type_id
        JOIN financial_data AS q ON q.financial_period_id = fq.financial_period_id
             AND q.data_item_id = a.data_item_id
        WHERE pa.period_type_name = 'Annual' AND pq.period_type_name = 'Quarterly'
          AND di.data_item_name IN ('Total Revenue', 'Net Income')
        GROUP BY a.financial_period_id, a.data_item_id
    """).fetchall()
    assert len(rows) > 50
    for annual, total, quarters in rows:
        assert quarters == 4
        assert annual == pytest.approx(total, abs=0.01)


def test_balance_sheet_balances(conn: sqlite3.Connection) -> None:
    rows = conn.execute("""
        SELECT MAX(CASE WHEN di.data_item_name = 'Total Assets' THEN fd.data_value END),
               MAX(CASE WHEN di.data_item_name = 'Total Liabilities' THEN fd.data_value END),
               MAX(CASE WHEN di.data_item_name = 'Total Equity' THEN fd.data_value END)
        FROM financial_data AS fd JOIN ref_data_item AS di ON fd.data_item_id = di.data_item_id
        GROUP BY fd.financial_period_id
    """).fetchall()
    for assets, liabilities, equity in rows:
        assert assets > 0 and liabilities > 0
        assert assets == pytest.approx(liabilities + equity, abs=0.01)


def test_banks_hold_more_assets_than_revenue(conn: sqlite3.Connection) -> None:
    rows = conn.execute("""
        SELECT MAX(CASE WHEN di.data_item_name = 'Total Assets' THEN fd.data_value END),
               MAX(CASE WHEN di.data_item_name = 'Total Revenue' THEN fd.data_value END)
        FROM financial_data AS fd
        JOIN ref_data_item AS di ON fd.data_item_id = di.data_item_id
        JOIN financial_period AS fp ON fd.financial_period_id = fp.financial_period_id
        JOIN ref_period_type AS pt ON fp.period_type_id = pt.period_type_id
        JOIN company AS c ON fp.company_id = c.company_id
        JOIN ref_industry AS ri ON c.industry_id = ri.industry_id
        WHERE ri.industry_name = 'Banks' AND pt.period_type_name = 'Annual'
        GROUP BY fd.financial_period_id
    """).fetchall()
    assert rows
    assert all(assets > 3 * revenue for assets, revenue in rows)


def test_exchange_rates_are_positive_and_believable(conn: sqlite3.Connection) -> None:
    non_positive = conn.execute("SELECT COUNT(*) FROM exchange_rate WHERE rate_to_usd <= 0")
    assert non_positive.fetchone() == (0,)
    levels = dict(conn.execute("""
        SELECT c.iso_code, AVG(er.rate_to_usd) FROM exchange_rate AS er
        JOIN ref_currency AS c ON er.currency_id = c.currency_id GROUP BY c.iso_code"""))
    assert levels["USD"] == 1.0
    assert 1.0 < levels["EUR"] < 1.2
    assert 1.15 < levels["GBP"] < 1.35
    assert 0.006 < levels["JPY"] < 0.008
    assert 0.68 < levels["CAD"] < 0.8
    # every currency has a rate for every weekday of 2023
    days = conn.execute("SELECT COUNT(DISTINCT rate_date) FROM exchange_rate").fetchone()[0]
    per_currency = conn.execute(
        "SELECT MIN(n), MAX(n) FROM (SELECT COUNT(*) AS n FROM exchange_rate GROUP BY currency_id)"
    ).fetchone()
    assert days == 260 and per_currency == (260, 260)


def test_prices_are_coherent(conn: sqlite3.Connection) -> None:
    assert conn.execute("""
        SELECT COUNT(*) FROM price_daily
        WHERE low_price > MIN(open_price, close_price) OR high_price < MAX(open_price, close_price)
           OR low_price <= 0 OR volume <= 0
    """).fetchone() == (0,)
    assert conn.execute("""
        SELECT COUNT(*) FROM price_daily AS pd
        JOIN trading_item AS ti ON pd.trading_item_id = ti.trading_item_id
        WHERE pd.price_date < ti.listed_date
           OR (ti.delisted_date IS NOT NULL AND pd.price_date >= ti.delisted_date)
           OR strftime('%w', pd.price_date) IN ('0', '6')
    """).fetchone() == (0,)


def test_transactions_are_coherent(conn: sqlite3.Connection) -> None:
    assert conn.execute("""
        SELECT COUNT(*) FROM ma_transaction AS t
        JOIN ref_transaction_status AS s ON t.transaction_status_id = s.transaction_status_id
        WHERE (s.status_name = 'Completed') != (t.closed_date IS NOT NULL)
    """).fetchone() == (0,)
    targets = conn.execute("""
        SELECT t.transaction_id, COUNT(p.company_id) FROM ma_transaction AS t
        LEFT JOIN transaction_participant AS p ON p.transaction_id = t.transaction_id
             AND p.role_id = (SELECT role_id FROM ref_transaction_role WHERE role_name = 'Target')
        GROUP BY t.transaction_id
    """).fetchall()
    assert all(n == 1 for _, n in targets)
    statuses = {r[0] for r in conn.execute("""
        SELECT DISTINCT s.status_name FROM ma_transaction AS t
        JOIN ref_transaction_status AS s ON t.transaction_status_id = s.transaction_status_id""")}
    assert {"Completed", "Terminated"} <= statuses
    years = conn.execute(
        "SELECT MIN(substr(announced_date, 1, 4)), MAX(substr(announced_date, 1, 4)) "
        "FROM ma_transaction").fetchone()
    assert years == ("2019", "2024")
