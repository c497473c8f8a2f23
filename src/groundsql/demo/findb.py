"""Deterministic generator of the embedded demo financial database.

The layout imitates the production schema FLINT works against (S&P Capital IQ style): facts such
as "quarterly EBITDA in millions of euros" are stored against opaque integer keys for the
metric, the period type, the unit and the currency, so a text-to-SQL system has to ground every
word of the question in a lookup table before it can write the query. Everything is fictitious
but internally consistent (annual figures equal the sum of their quarters, equity equals assets
minus liabilities, acquired companies stop trading and reporting on the closing date, ...).

Only the standard library is used, and all randomness flows from one `random.Random(seed)`, so
the same seed always yields a byte-identical SQLite file.
"""

from __future__ import annotations

import calendar
import contextlib
import math
import os
import random
import re
import sqlite3
import tempfile
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from groundsql.demo import findb_data as D

DEMO_DB_FILENAME = "findemo.sqlite"
# Stored as PRAGMA user_version; bump it whenever the generated content changes, so that a
# cached copy can be recognised as stale.
DEMO_SCHEMA_VERSION = 1

AS_OF = date(2024, 6, 30)  # the "today" of the data set: nothing is announced or closed later
PRICE_YEAR = 2023

PERIOD_TYPES = {"Annual": 1, "Quarterly": 2, "YTD": 3, "LTM": 4, "Semi-Annual": 10}
UNITS = {"Units": (1, 1), "Thousands": (2, 10**3), "Millions": (3, 10**6), "Billions": (4, 10**9)}
SECURITY_TYPES = {"Common Stock": 1, "Preferred Stock": 2, "American Depositary Receipt": 6,
                  "Corporate Bond": 9, "Warrant": 11}
TRANSACTION_TYPES = {"Merger": 1, "Acquisition": 2, "Minority Stake Purchase": 3,
                     "Asset Acquisition": 5, "Spin-off": 7, "Leveraged Buyout": 9}
TRANSACTION_STATUSES = {"Announced": 1, "Pending Regulatory Approval": 2, "Completed": 3,
                        "Terminated": 4, "Withdrawn": 5}
ROLES = {"Target": 1, "Buyer": 2, "Seller": 3, "Financial Advisor": 4, "Legal Advisor": 5}
COMPANY_TYPES = {"Public Company": 1, "Private Company": 2, "Subsidiary": 3,
                 "Private Equity Firm": 4}
COMPANY_STATUSES = {"Operating": 1, "Operating Subsidiary": 2, "Acquired": 3,
                    "Out of Business": 4, "Reorganizing": 5}

# name -> (data_item_id, category, description). Sign conventions are spelled out because they
# are exactly what a model gets wrong (capital expenditure is a negative cash flow, as in CIQ).
DATA_ITEMS = {
    "Total Revenue": (28, "Income Statement", "Total revenue for the period"),
    "Gross Profit": (10, "Income Statement", "Revenue minus cost of goods sold; not reported by "
                     "banks and insurers"),
    "EBITDA": (4051, "Income Statement", "Earnings before interest, taxes, depreciation and "
               "amortization; not reported by banks and insurers"),
    "Operating Income": (21, "Income Statement", "Earnings before interest and taxes"),
    "Interest Expense": (82, "Income Statement", "Interest paid on debt, as a positive number"),
    "Net Income": (15, "Income Statement", "Net income attributable to common shareholders; "
                   "negative for a loss"),
    "Diluted EPS": (142, "Per Share", "Diluted earnings per share, in currency units per share"),
    "Dividends per Share": (3058, "Per Share", "Dividends declared per share, in currency units"),
    "Total Assets": (1007, "Balance Sheet", "Total assets at the end of the period"),
    "Total Liabilities": (1276, "Balance Sheet", "Total liabilities at the end of the period"),
    "Total Equity": (1275, "Balance Sheet", "Total assets minus total liabilities"),
    "Total Debt": (4173, "Balance Sheet", "Short- and long-term borrowings"),
    "Cash and Equivalents": (1096, "Balance Sheet", "Cash and short-term investments"),
    "Cash from Operations": (2006, "Cash Flow", "Net cash provided by operating activities"),
    "Capital Expenditure": (2021, "Cash Flow", "Purchases of property, plant and equipment; "
                            "reported as a negative number (cash outflow)"),
    "Free Cash Flow": (4423, "Cash Flow", "Cash from operations plus capital expenditure"),
    "Shares Outstanding": (1100, "Share Data", "Weighted average diluted shares outstanding; "
                           "no currency"),
}
FLOW_ITEMS = ["Total Revenue", "Gross Profit", "EBITDA", "Operating Income", "Interest Expense",
              "Net Income", "Cash from Operations", "Capital Expenditure", "Free Cash Flow"]
BALANCE_ITEMS = ["Total Assets", "Total Liabilities", "Total Equity", "Total Debt",
                 "Cash and Equivalents"]

DEMO_QUESTIONS: list[tuple[str, str]] = [
    (
        "How many companies are headquartered in Germany?",
        "SELECT COUNT(*) FROM company AS c "
        "JOIN ref_country AS rc ON c.country_id = rc.country_id "
        "WHERE rc.country_name = 'Germany'",
    ),
    (
        "What are the names of the companies in the Biotechnology industry?",
        "SELECT c.company_name FROM company AS c "
        "JOIN ref_industry AS ri ON c.industry_id = ri.industry_id "
        "WHERE ri.industry_name = 'Biotechnology' ORDER BY c.company_name",
    ),
    (
        "What was the closing price of the stock with ticker NWL on 2023-12-29?",
        "SELECT pd.close_price FROM price_daily AS pd "
        "JOIN trading_item AS ti ON pd.trading_item_id = ti.trading_item_id "
        "WHERE ti.ticker_symbol = 'NWL' AND pd.price_date = '2023-12-29'",
    ),
    (
        "What was the total revenue of Northwind Logistics Inc. in fiscal year 2023, "
        "in millions?",
        "SELECT fd.data_value * ru.multiplier / 1000000.0 AS total_revenue_millions "
        "FROM financial_data AS fd "
        "JOIN financial_period AS fp ON fd.financial_period_id = fp.financial_period_id "
        "JOIN company AS c ON fp.company_id = c.company_id "
        "JOIN ref_period_type AS pt ON fp.period_type_id = pt.period_type_id "
        "JOIN ref_data_item AS di ON fd.data_item_id = di.data_item_id "
        "JOIN ref_unit AS ru ON fd.unit_id = ru.unit_id "
        "WHERE c.company_name = 'Northwind Logistics Inc.' AND pt.period_type_name = 'Annual' "
        "AND fp.fiscal_year = 2023 AND di.data_item_name = 'Total Revenue'",
    ),
    (
        "What was the quarterly EBITDA of Helios Energy AG in fiscal year 2023, "
        "in millions of euros?",
        "SELECT fp.fiscal_quarter, "
        "fd.data_value * ru.multiplier / 1000000.0 AS ebitda_eur_millions "
        "FROM financial_data AS fd "
        "JOIN financial_period AS fp ON fd.financial_period_id = fp.financial_period_id "
        "JOIN company AS c ON fp.company_id = c.company_id "
        "JOIN ref_period_type AS pt ON fp.period_type_id = pt.period_type_id "
        "JOIN ref_data_item AS di ON fd.data_item_id = di.data_item_id "
        "JOIN ref_unit AS ru ON fd.unit_id = ru.unit_id "
        "JOIN ref_currency AS cur ON fd.currency_id = cur.currency_id "
        "WHERE c.company_name = 'Helios Energy AG' AND pt.period_type_name = 'Quarterly' "
        "AND fp.fiscal_year = 2023 AND di.data_item_name = 'EBITDA' AND cur.iso_code = 'EUR' "
        "ORDER BY fp.fiscal_quarter",
    ),
]

SCHEMA = """
CREATE TABLE ref_currency (
    currency_id INTEGER PRIMARY KEY,
    iso_code TEXT NOT NULL UNIQUE,
    currency_name TEXT NOT NULL
);
CREATE TABLE ref_country (
    country_id INTEGER PRIMARY KEY,
    iso_code TEXT NOT NULL UNIQUE,
    country_name TEXT NOT NULL UNIQUE,
    region TEXT NOT NULL,
    currency_id INTEGER NOT NULL,
    FOREIGN KEY (currency_id) REFERENCES ref_currency (currency_id)
);
CREATE TABLE ref_exchange (
    exchange_id INTEGER PRIMARY KEY,
    exchange_code TEXT NOT NULL UNIQUE,
    exchange_name TEXT NOT NULL,
    country_id INTEGER NOT NULL,
    FOREIGN KEY (country_id) REFERENCES ref_country (country_id)
);
CREATE TABLE ref_industry (
    industry_id INTEGER PRIMARY KEY,
    industry_name TEXT NOT NULL UNIQUE,
    sector_name TEXT NOT NULL
);
CREATE TABLE ref_security_type (
    security_type_id INTEGER PRIMARY KEY,
    security_type_name TEXT NOT NULL UNIQUE
);
CREATE TABLE ref_data_item (
    data_item_id INTEGER PRIMARY KEY,
    data_item_name TEXT NOT NULL UNIQUE,
    category TEXT NOT NULL,
    description TEXT NOT NULL
);
CREATE TABLE ref_period_type (
    period_type_id INTEGER PRIMARY KEY,
    period_type_name TEXT NOT NULL UNIQUE
);
CREATE TABLE ref_unit (
    unit_id INTEGER PRIMARY KEY,
    unit_name TEXT NOT NULL UNIQUE,
    multiplier INTEGER NOT NULL
);
CREATE TABLE ref_transaction_type (
    transaction_type_id INTEGER PRIMARY KEY,
    transaction_type_name TEXT NOT NULL UNIQUE
);
CREATE TABLE ref_transaction_status (
    transaction_status_id INTEGER PRIMARY KEY,
    status_name TEXT NOT NULL UNIQUE
);
CREATE TABLE ref_transaction_role (
    role_id INTEGER PRIMARY KEY,
    role_name TEXT NOT NULL UNIQUE
);
CREATE TABLE ref_company_type (
    company_type_id INTEGER PRIMARY KEY,
    company_type_name TEXT NOT NULL UNIQUE
);
CREATE TABLE ref_company_status (
    company_status_id INTEGER PRIMARY KEY,
    status_name TEXT NOT NULL UNIQUE
);
CREATE TABLE company (
    company_id INTEGER PRIMARY KEY,
    company_name TEXT NOT NULL UNIQUE,
    company_type_id INTEGER NOT NULL,
    company_status_id INTEGER NOT NULL,
    industry_id INTEGER NOT NULL,
    country_id INTEGER NOT NULL,
    parent_company_id INTEGER,
    founded_year INTEGER,
    employees INTEGER,
    website TEXT,
    FOREIGN KEY (company_type_id) REFERENCES ref_company_type (company_type_id),
    FOREIGN KEY (company_status_id) REFERENCES ref_company_status (company_status_id),
    FOREIGN KEY (industry_id) REFERENCES ref_industry (industry_id),
    FOREIGN KEY (country_id) REFERENCES ref_country (country_id),
    FOREIGN KEY (parent_company_id) REFERENCES company (company_id)
);
CREATE TABLE security (
    security_id INTEGER PRIMARY KEY,
    company_id INTEGER NOT NULL,
    security_type_id INTEGER NOT NULL,
    security_name TEXT NOT NULL,
    is_primary INTEGER NOT NULL DEFAULT 0 CHECK (is_primary IN (0, 1)),
    FOREIGN KEY (company_id) REFERENCES company (company_id),
    FOREIGN KEY (security_type_id) REFERENCES ref_security_type (security_type_id)
);
CREATE TABLE trading_item (
    trading_item_id INTEGER PRIMARY KEY,
    security_id INTEGER NOT NULL,
    exchange_id INTEGER NOT NULL,
    ticker_symbol TEXT NOT NULL,
    currency_id INTEGER NOT NULL,
    is_primary_listing INTEGER NOT NULL DEFAULT 0 CHECK (is_primary_listing IN (0, 1)),
    listed_date DATE,
    delisted_date DATE,
    UNIQUE (exchange_id, ticker_symbol),
    FOREIGN KEY (security_id) REFERENCES security (security_id),
    FOREIGN KEY (exchange_id) REFERENCES ref_exchange (exchange_id),
    FOREIGN KEY (currency_id) REFERENCES ref_currency (currency_id)
);
CREATE TABLE price_daily (
    trading_item_id INTEGER NOT NULL,
    price_date DATE NOT NULL,
    open_price REAL NOT NULL,
    high_price REAL NOT NULL,
    low_price REAL NOT NULL,
    close_price REAL NOT NULL CHECK (close_price > 0),
    volume INTEGER NOT NULL,
    PRIMARY KEY (trading_item_id, price_date),
    FOREIGN KEY (trading_item_id) REFERENCES trading_item (trading_item_id)
);
CREATE TABLE exchange_rate (
    currency_id INTEGER NOT NULL,
    rate_date DATE NOT NULL,
    rate_to_usd REAL NOT NULL CHECK (rate_to_usd > 0),
    PRIMARY KEY (currency_id, rate_date),
    FOREIGN KEY (currency_id) REFERENCES ref_currency (currency_id)
);
CREATE TABLE financial_period (
    financial_period_id INTEGER PRIMARY KEY,
    company_id INTEGER NOT NULL,
    period_type_id INTEGER NOT NULL,
    fiscal_year INTEGER NOT NULL,
    fiscal_quarter INTEGER CHECK (fiscal_quarter BETWEEN 1 AND 4),
    period_end_date DATE NOT NULL,
    filing_date DATE NOT NULL,
    UNIQUE (company_id, period_type_id, fiscal_year, fiscal_quarter),
    FOREIGN KEY (company_id) REFERENCES company (company_id),
    FOREIGN KEY (period_type_id) REFERENCES ref_period_type (period_type_id)
);
CREATE TABLE financial_data (
    financial_period_id INTEGER NOT NULL,
    data_item_id INTEGER NOT NULL,
    data_value REAL NOT NULL,
    unit_id INTEGER NOT NULL,
    currency_id INTEGER,
    PRIMARY KEY (financial_period_id, data_item_id),
    FOREIGN KEY (financial_period_id) REFERENCES financial_period (financial_period_id),
    FOREIGN KEY (data_item_id) REFERENCES ref_data_item (data_item_id),
    FOREIGN KEY (unit_id) REFERENCES ref_unit (unit_id),
    FOREIGN KEY (currency_id) REFERENCES ref_currency (currency_id)
);
CREATE TABLE ma_transaction (
    transaction_id INTEGER PRIMARY KEY,
    transaction_type_id INTEGER NOT NULL,
    transaction_status_id INTEGER NOT NULL,
    announced_date DATE NOT NULL,
    closed_date DATE CHECK (closed_date IS NULL OR closed_date >= announced_date),
    transaction_value REAL,
    currency_id INTEGER,
    unit_id INTEGER,
    percent_acquired REAL CHECK (percent_acquired > 0 AND percent_acquired <= 100),
    FOREIGN KEY (transaction_type_id) REFERENCES ref_transaction_type (transaction_type_id),
    FOREIGN KEY (transaction_status_id) REFERENCES ref_transaction_status (transaction_status_id),
    FOREIGN KEY (currency_id) REFERENCES ref_currency (currency_id),
    FOREIGN KEY (unit_id) REFERENCES ref_unit (unit_id)
);
CREATE TABLE transaction_participant (
    transaction_id INTEGER NOT NULL,
    company_id INTEGER NOT NULL,
    role_id INTEGER NOT NULL,
    PRIMARY KEY (transaction_id, company_id, role_id),
    FOREIGN KEY (transaction_id) REFERENCES ma_transaction (transaction_id),
    FOREIGN KEY (company_id) REFERENCES company (company_id),
    FOREIGN KEY (role_id) REFERENCES ref_transaction_role (role_id)
);
CREATE TABLE person (
    person_id INTEGER PRIMARY KEY,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    birth_year INTEGER
);
CREATE TABLE company_professional (
    person_id INTEGER NOT NULL,
    company_id INTEGER NOT NULL,
    title TEXT NOT NULL,
    start_year INTEGER NOT NULL,
    end_year INTEGER,
    PRIMARY KEY (person_id, company_id, title),
    FOREIGN KEY (person_id) REFERENCES person (person_id),
    FOREIGN KEY (company_id) REFERENCES company (company_id),
    CHECK (end_year IS NULL OR end_year >= start_year)
);
CREATE INDEX ix_company_country ON company (country_id);
CREATE INDEX ix_company_industry ON company (industry_id);
CREATE INDEX ix_security_company ON security (company_id);
CREATE INDEX ix_trading_item_security ON trading_item (security_id);
CREATE INDEX ix_financial_period_company ON financial_period (company_id, fiscal_year);
CREATE INDEX ix_financial_data_item ON financial_data (data_item_id);
CREATE INDEX ix_participant_company ON transaction_participant (company_id);
CREATE INDEX ix_professional_company ON company_professional (company_id);
"""

# Insert order respects the foreign keys (checked while inserting).
TABLE_ORDER = [
    "ref_currency", "ref_country", "ref_exchange", "ref_industry", "ref_security_type",
    "ref_data_item", "ref_period_type", "ref_unit", "ref_transaction_type",
    "ref_transaction_status", "ref_transaction_role", "ref_company_type", "ref_company_status",
    "company", "security", "trading_item", "price_daily", "exchange_rate", "financial_period",
    "financial_data", "ma_transaction", "transaction_participant", "person",
    "company_professional",
]

CONTROL_TYPES = ("Merger", "Acquisition", "Leveraged Buyout")
_FIN_KINDS = ("public", "ib", "spin")  # companies that are (or become) listed and report


def build_demo_database(path: Path, seed: int = 7) -> Path:
    """Write the demo database to `path` atomically and return the path.

    The file appears complete or not at all: it is written next to its destination and moved
    into place with os.replace, so a reader never sees a half-built database.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = _Generator(seed).generate()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        _write_sqlite(tmp, rows)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return path


def _write_sqlite(target: Path, rows: dict[str, list[tuple]]) -> None:
    conn = sqlite3.connect(target, isolation_level=None)
    try:
        # The file is private until os.replace, so durability on crash is irrelevant here; a
        # fixed page size keeps the bytes independent of the library's compile-time default.
        conn.execute("PRAGMA page_size = 4096")
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.executescript(SCHEMA)
        conn.execute("BEGIN")
        # company.parent_company_id points into its own table, so checks wait until COMMIT.
        conn.execute("PRAGMA defer_foreign_keys = ON")
        for table in TABLE_ORDER:
            data = sorted(rows[table], key=lambda r: r[:3])
            if data:
                marks = ", ".join("?" * len(data[0]))
                conn.executemany(f"INSERT INTO {table} VALUES ({marks})", data)
        conn.execute("COMMIT")
        problems = conn.execute("PRAGMA foreign_key_check").fetchall()
        if problems:
            raise RuntimeError(f"demo database violates foreign keys: {problems[:5]}")
        conn.execute(f"PRAGMA user_version = {DEMO_SCHEMA_VERSION}")
    finally:
        conn.close()
    with open(target, "rb") as fh:
        os.fsync(fh.fileno())


# --------------------------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------------------------


@dataclass
class _Company:
    company_id: int
    name: str
    stem: str
    word: str
    country: str
    industry: str
    kind: str  # public | private | subsidiary | spin | pe | ib | legal
    founded: int
    size: float  # 2019 revenue, USD millions
    company_type: str
    status: str = "Operating"
    parent: "_Company | None" = None
    anchor: bool = False
    protected: bool = False  # never a target, so fixed demo questions stay answerable
    public_from: date | None = None
    gone: date | None = None  # stops trading and reporting on this date
    locked: bool = False  # already the target of a live control transaction
    busy_until: date | None = None  # closing of the last deal in which it is the buyer
    in_deal: bool = False
    fin: dict = field(default_factory=dict)
    ticker: str | None = None
    exchange: str | None = None


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def _weekday_on_or_after(d: date) -> date:
    while d.weekday() >= 5:
        d += timedelta(days=1)
    return d


def _sig(x: float, digits: int = 6) -> float:
    return float(f"{x:.{digits}g}")


class _Generator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.companies: list[_Company] = []
        self.used_stems: set[str] = set()
        self.used_names: set[str] = set()
        self.used_ids: set[int] = set()
        self.tickers: set[str] = set()
        self.rows: dict[str, list[tuple]] = {t: [] for t in TABLE_ORDER}
        self.weekdays = [
            d for d in (date(PRICE_YEAR, 1, 1) + timedelta(days=i) for i in range(365))
            if d.weekday() < 5
        ]
        self.fx_mid = {iso: math.sqrt(v[2] * v[3]) for iso, v in D.CURRENCIES.items()}

    # -- helpers -----------------------------------------------------------------------------

    def _new_id(self, lo: int, hi: int) -> int:
        while True:
            value = self.rng.randint(lo, hi)
            if value not in self.used_ids:
                self.used_ids.add(value)
                return value

    def _stem(self, country: str) -> str:
        for pool in (country, "US"):
            free = [s for s in D.NAME_STEMS[pool] if s not in self.used_stems]
            if free:
                stem = self.rng.choice(free)
                self.used_stems.add(stem)
                return stem
        raise RuntimeError("ran out of company name stems")

    def _add_company(self, country: str, industry: str, kind: str, company_type: str,
                     size: float | None = None, name: str | None = None,
                     stem: str | None = None, founded: int | None = None) -> _Company:
        rng = self.rng
        spec = D.INDUSTRIES[industry]
        word = ""
        if name is None:
            stem = self._stem(country)
            word = rng.choice(spec[3])
            legal = D.COUNTRIES[country][7 if kind in ("public", "spin") else 8]
            name = f"{stem} {word} {rng.choice(legal)}"
        if name in self.used_names:
            raise RuntimeError(f"duplicate company name {name}")
        self.used_names.add(name)
        if size is None:
            lo, hi = spec[4]["size"]
            size = math.exp(rng.uniform(math.log(lo), math.log(hi)))
        if founded is None:
            young = {"biotech": (1994, 2014), "software": (1982, 2012), "renew": (1998, 2012),
                     "semis": (1968, 2008)}
            if kind == "private":
                founded = rng.randint(1950, 2016)
            elif kind == "subsidiary":
                founded = rng.randint(1960, 2015)
            elif industry in young:
                founded = rng.randint(*young[industry])
            else:
                founded = int(rng.triangular(1870, 2010, 1975))
        co = _Company(
            company_id=self._new_id(100_000, 9_999_999), name=name, stem=stem or name.split()[0],
            word=word, country=country, industry=industry, kind=kind, founded=founded,
            size=size, company_type=company_type,
        )
        if kind in ("public", "ib"):
            co.public_from = date(1900, 1, 1)
        self.companies.append(co)
        return co

    # -- companies ---------------------------------------------------------------------------

    def _make_companies(self) -> None:
        rng = self.rng
        for name, stem, country, industry, ticker, exchange, _ccy, _unit in D.ANCHORS:
            self.used_stems.add(stem)
            co = self._add_company(country, industry, "public", "Public Company", name=name,
                                   stem=stem)
            co.word = name.split()[1]
            co.anchor = co.protected = True
            co.ticker, co.exchange = ticker, exchange
            self.tickers.add(ticker)

        public_counts = {"US": 16, "CA": 5, "GB": 6, "DE": 5, "FR": 5, "NL": 3, "CH": 4,
                         "SE": 3, "JP": 5, "AU": 4, "SG": 3, "IN": 4, "BR": 3}
        for country, count in public_counts.items():
            for _ in range(count):
                self._add_company(country, rng.choice(D.OPERATING_INDUSTRIES), "public",
                                  "Public Company")

        for country in ["US", "US", "US", "US", "GB", "GB", "DE", "DE", "FR", "CA", "JP", "SE",
                        "AU", "NL", "IN"]:
            self._add_company(country, rng.choice(D.OPERATING_INDUSTRIES), "private",
                              "Private Company")

        operating_public = [c for c in self.companies if c.kind == "public"]
        for _ in range(9):
            parent = rng.choice(operating_public)
            country = parent.country if rng.random() < 0.7 else rng.choice(list(D.COUNTRIES))
            sub = self._add_company(country, parent.industry, "subsidiary", "Subsidiary",
                                    size=min(parent.size * rng.uniform(0.03, 0.15), 2500.0))
            sub.status = "Operating Subsidiary"
            sub.parent = parent

        # Future spin-offs start life as subsidiaries of a parent that must survive until then.
        spin_parents = rng.sample(
            [c for c in operating_public if not c.anchor and c.industry not in ("bank", "insur")
             and c.size > 1000], 3)
        for parent in spin_parents:
            parent.protected = True
            child = self._add_company(parent.country, parent.industry, "spin", "Subsidiary",
                                      size=parent.size * rng.uniform(0.15, 0.3))
            child.status = "Operating Subsidiary"
            child.parent = parent

        for name, country, kind in D.ADVISERS_AND_SPONSORS:
            ctype = {"ib": "Public Company", "legal": "Private Company",
                     "pe": "Private Equity Firm"}[kind]
            founded = rng.randint(*{"ib": (1850, 1985), "legal": (1870, 1990),
                                    "pe": (1984, 2010)}[kind])
            co = self._add_company(country, kind, kind, ctype, name=name, founded=founded)
            co.protected = True

    # -- financial parameters ----------------------------------------------------------------

    def _assign_financial_profile(self, co: _Company) -> None:
        rng = self.rng
        m = D.INDUSTRIES[co.industry][4]
        if m["kind"] == "none":
            return
        country = co.country
        local = D.COUNTRIES[country][3]
        reporting = local
        if co.anchor:
            spec = next(a for a in D.ANCHORS if a[0] == co.name)
            reporting, unit = spec[6], spec[7]
        elif country == "CH" and rng.random() < 0.3:
            reporting = rng.choice(["USD", "EUR"])
        elif country != "US" and rng.random() < 0.08:
            reporting = "USD"
        rev_local_m = co.size / self.fx_mid[reporting]
        if not co.anchor:
            unit = "Millions"
            if rev_local_m < 400 and rng.random() < 0.7:
                unit = "Thousands"
            elif rev_local_m > 40_000 and rng.random() < 0.5:
                unit = "Billions"
        if country in ("JP", "IN"):
            fye = 3
        elif country == "AU":
            fye = 6
        elif country == "US" and not co.anchor:
            fye = rng.choices([12, 9, 6], weights=[85, 8, 7])[0]
        else:
            fye = 12
        if country in ("GB", "AU") or (country == "FR" and rng.random() < 0.5):
            freq = 2
        else:
            freq = 4
        kind = m["kind"]
        fin = dict(
            kind=kind, reporting=reporting, unit=unit, fye=fye, freq=freq,
            growth=m["growth"], shock=m["shock"], vol=m["vol"] * rng.uniform(0.8, 1.25),
            assets=m["assets"] * rng.uniform(0.8, 1.25), tax=rng.uniform(0.19, 0.30),
            rate=rng.uniform(0.025, 0.06), cash=rng.uniform(0.04, 0.14),
            payout=rng.choice([0.0, 0.0, 0.25, 0.35, 0.45, 0.6]),
            shares_drift=rng.uniform(-0.025, 0.02), mcap=m["mcap"],
        )
        if kind in ("bank", "insurance"):
            fin["om"] = rng.uniform(*m["om"])
            fin["liab"] = rng.uniform(0.88, 0.93) if kind == "bank" else rng.uniform(0.80, 0.88)
            fin["debt"] = rng.uniform(0.06, 0.14) if kind == "bank" else rng.uniform(0.03, 0.07)
            fin["cash"] = rng.uniform(0.04, 0.10)
        else:
            fin["gm"] = rng.uniform(*m.get("gm", (0.5, 0.6)))
            fin["em"] = rng.uniform(*m["em"])
            fin["em_drift"] = 0.05 if co.industry == "biotech" else rng.gauss(0, 0.008)
            fin["da"] = m["da"] * rng.uniform(0.8, 1.2)
            fin["capex"] = fin["da"] * rng.uniform(0.9, 1.4)
            fin["liab"] = rng.uniform(0.40, 0.68)
            fin["debt"] = rng.uniform(0.12, 0.38)
            if co.industry == "biotech":
                fin["payout"] = 0.0
        if co.anchor and "em" in fin:
            # Anchors are profitable so that the demo questions show meaningful figures.
            fin["em"] = max(fin["em"], 0.12)
            fin["em_drift"] = max(fin["em_drift"], 0.0)
        # Annual revenue path, USD millions, fiscal years 2018-2023.
        rev = {2019: co.size}
        for year in range(2020, 2024):
            g = fin["growth"] + rng.gauss(0, 0.06)
            if year == 2020:
                g += fin["shock"] + rng.gauss(0, 0.04)
            elif year == 2021:
                g -= 0.7 * fin["shock"]
            rev[year] = rev[year - 1] * (1 + max(g, -0.45))
        rev[2018] = co.size / (1 + fin["growth"])
        fin["rev_usd"] = rev
        co.fin = fin

    def _assign_share_profile(self, co: _Company) -> None:
        """Share count and price level, chosen so that market cap/revenue looks right."""
        rng = self.rng
        fin = co.fin
        trade_ccy = D.COUNTRIES[D.EXCHANGES[co.exchange][2]][3]
        lo, hi = {"USD": (15, 250), "CAD": (10, 120), "GBP": (1, 40), "EUR": (10, 200),
                  "CHF": (20, 400), "SEK": (50, 500), "JPY": (500, 9000), "AUD": (2, 60),
                  "SGD": (1, 15), "INR": (100, 3000), "BRL": (5, 60)}[trade_ccy]
        price = math.exp(rng.uniform(math.log(lo), math.log(hi)))
        # Value the equity the way analysts would, so that P/E ratios come out plausible:
        # a multiple of earnings for financials, of EBITDA less net debt for profitable
        # operating companies, and of revenue only for loss-makers.
        revenue = fin["rev_usd"][2022] * 1e6
        if fin["kind"] in ("bank", "insurance"):
            mcap_usd = revenue * fin["om"] * (1 - fin["tax"]) * rng.uniform(8, 14)
        elif fin["em"] + 3 * fin["em_drift"] > 0.06:
            growth = co.industry in ("software", "biotech", "semis", "medtech")
            ev = revenue * (fin["em"] + 3 * fin["em_drift"]) * (
                rng.uniform(12, 22) if growth else rng.uniform(6, 12))
            net_debt = revenue * fin["assets"] * (fin["debt"] - fin["cash"])
            mcap_usd = max(ev - net_debt, 0.3 * ev)
        else:
            mcap_usd = fin["mcap"] * revenue * math.exp(rng.gauss(0, 0.25))
        shares_2022 = mcap_usd / self.fx_mid[trade_ccy] / price
        fin["trade_ccy"] = trade_ccy
        fin["price0"] = price
        fin["shares"] = {
            y: shares_2022 * (1 + fin["shares_drift"]) ** (y - 2022) for y in range(2019, 2024)
        }

    # -- tickers -----------------------------------------------------------------------------

    def _ticker(self, co: _Company, exchange: str) -> str:
        rng = self.rng
        style = D.EXCHANGES[exchange][3]
        s = re.sub(r"[^A-Z]", "", co.stem.upper())
        w = re.sub(r"[^A-Z]", "", (co.word or co.name.split()[1]).upper()) or "X"
        candidates: list[str]
        if style == "digits4":
            candidates = [str(rng.randint(1300, 9999)) for _ in range(50)]
        elif style == "sgx":
            candidates = [f"{s[0]}{rng.randint(10, 99)}" for _ in range(50)]
        elif style == "long":
            candidates = [s[:10], (s + w)[:10], s[:7] + w[:3]]
        else:
            three = [s[0] + w[0] + s[1], s[:3], s[:2] + w[0], s[0] + w[:2], s[0] + s[2] + w[0]]
            four = [s[:4], s[:3] + w[0], s[:2] + w[:2], s[0] + w[:3], s[:2] + w[0] + s[2]]
            candidates = {"alpha3": three + four, "alpha4": four + three,
                          "sweden": [c + " B" for c in four + three],
                          "brazil": [c + "3" for c in four]}[style]
        for cand in candidates + ["".join(rng.choice(s + w) for _ in range(4)) for _ in range(50)]:
            if cand not in self.tickers and len(cand) >= 2:
                self.tickers.add(cand)
                return cand
        raise RuntimeError(f"no ticker for {co.name}")

    # -- transactions ------------------------------------------------------------------------

    def _alive(self, co: _Company, d: date) -> bool:
        return co.founded <= d.year and (co.gone is None or co.gone > d)

    def _is_public(self, co: _Company, d: date) -> bool:
        return (co.public_from is not None and co.public_from <= d and self._alive(co, d)
                and co.kind in ("public", "spin"))

    def _deal_value(self, target: _Company, d: date, pct: float, may_hide: bool = True) -> tuple:
        rng = self.rng
        spec = D.INDUSTRIES[target.industry][4]
        years = (d.year - 2019) + (d.month - 1) / 12
        revenue = target.size * (1 + spec.get("growth", 0.04)) ** years
        ev = revenue * spec.get("mcap", 1.5) * 1.3 * math.exp(rng.gauss(0, 0.3)) * pct / 100
        undisclosed = 0.35 if target.kind in ("private", "subsidiary") else 0.1
        if may_hide and rng.random() < undisclosed:
            return None, None, None
        ccy = D.COUNTRIES[target.country][3]
        value_m = ev / self.fx_mid[ccy]
        unit = "Millions"
        if value_m >= 10_000 and rng.random() < 0.5:
            unit = "Billions"
        elif value_m < 100 and rng.random() < 0.4:
            unit = "Thousands"
        value = round(value_m * 10**6 / UNITS[unit][1], 3 if unit == "Billions" else 2)
        return value, D.CURRENCIES[ccy][0], UNITS[unit][0]

    def _make_transactions(self) -> None:
        rng = self.rng
        events: list[tuple[date, str, _Company | None]] = []
        start = date(2019, 1, 7)
        span = (date(2024, 6, 14) - start).days
        for _ in range(rng.randint(52, 60)):
            d = _weekday_on_or_after(start + timedelta(days=rng.randrange(span)))
            kind = rng.choices(
                ["Acquisition", "Merger", "Minority Stake Purchase", "Asset Acquisition",
                 "Leveraged Buyout"], weights=[40, 10, 16, 12, 12])[0]
            events.append((d, kind, None))
        windows = [(date(2020, 2, 3), 200), (date(2021, 9, 1), 180), (date(2022, 11, 1), 100)]
        spins = [c for c in self.companies if c.kind == "spin"]
        for (w_start, w_len), child in zip(windows, spins):
            d = _weekday_on_or_after(w_start + timedelta(days=rng.randrange(w_len)))
            events.append((d, "Spin-off", child))
        events.sort(key=lambda e: (e[0], e[1]))

        pe_firms = [c for c in self.companies if c.kind == "pe"]
        banks = [c for c in self.companies if c.kind == "ib"]
        law_firms = [c for c in self.companies if c.kind == "legal"]

        for announced, kind, spin_child in events:
            parties = self._pick_parties(kind, announced, spin_child, pe_firms)
            if parties is None:
                parties = self._pick_parties("Acquisition", announced, None, pe_firms)
                kind = "Acquisition"
                if parties is None:
                    continue
            target, buyers, sellers, pct = parties
            lag_lo, lag_hi = {"Merger": (150, 400), "Acquisition": (45, 270),
                              "Minority Stake Purchase": (20, 120),
                              "Asset Acquisition": (30, 180), "Leveraged Buyout": (90, 240),
                              "Spin-off": (120, 200)}[kind]
            closing = _weekday_on_or_after(announced + timedelta(days=rng.randint(lag_lo, lag_hi)))
            outcome = "Completed" if kind == "Spin-off" else rng.choices(
                ["Completed", "Terminated", "Withdrawn"], weights=[80, 11, 9])[0]
            closed = None
            if outcome == "Completed" and closing <= AS_OF:
                status, closed = "Completed", closing
            elif outcome != "Completed" and announced + timedelta(days=75) < AS_OF:
                status = outcome
            else:
                status = ("Pending Regulatory Approval"
                          if kind in ("Merger", "Acquisition") and lag_hi > 120
                          and (AS_OF - announced).days > 60 else "Announced")
            # A spin-off is valued in its listing prospectus, so its value is always known.
            value = self._deal_value(target, announced, pct, may_hide=kind != "Spin-off")

            tid = self._new_id(10_000_000, 99_999_999)
            self.rows["ma_transaction"].append((
                tid, TRANSACTION_TYPES[kind], TRANSACTION_STATUSES[status], announced.isoformat(),
                closed.isoformat() if closed else None, value[0], value[1], value[2],
                float(pct),
            ))
            participants = [(target, "Target")] + [(b, "Buyer") for b in buyers] + [
                (s, "Seller") for s in sellers]
            size_usd = target.size * pct / 100
            n_fin = 0 if size_usd < 80 else (1 if size_usd < 600 else rng.randint(2, 3))
            n_fin = min(len(banks), max(0, n_fin - (rng.random() < 0.25)))
            participants += [(b, "Financial Advisor") for b in rng.sample(banks, n_fin)]
            n_law = rng.randint(0, 2) if size_usd > 150 else 0
            participants += [(f, "Legal Advisor") for f in rng.sample(law_firms, n_law)]
            for co, role in participants:
                co.in_deal = True
                self.rows["transaction_participant"].append((tid, co.company_id, ROLES[role]))

            if status not in ("Terminated", "Withdrawn"):
                for buyer in buyers:
                    buyer.busy_until = max(buyer.busy_until or closing, closing)
                if kind in CONTROL_TYPES + ("Asset Acquisition",):
                    target.locked = True
            if status != "Completed":
                continue
            if kind in CONTROL_TYPES:
                target.gone = closed
                if kind == "Leveraged Buyout":
                    target.company_type, target.status, target.parent = (
                        "Private Company", "Operating", None)
                else:
                    target.company_type = "Subsidiary"
                    target.status = "Acquired" if kind == "Merger" else "Operating Subsidiary"
                    target.parent = buyers[0]
            elif kind == "Asset Acquisition":
                target.parent = buyers[0]
            elif kind == "Spin-off":
                target.company_type, target.status, target.parent = (
                    "Public Company", "Operating", None)
                target.public_from = closed
                target.founded = closed.year

    def _pick_parties(self, kind: str, d: date, spin_child: _Company | None,
                      pe_firms: list[_Company]):
        """Target, buyers, sellers and percentage for a deal announced on `d` (None if none fit)."""
        rng = self.rng
        cos = self.companies
        if kind == "Spin-off":
            return spin_child, [], [spin_child.parent], 100

        def free_target(c: _Company) -> bool:
            # A company that is still closing a purchase of its own is not sold meanwhile.
            return (not c.protected and not c.locked and self._alive(c, d)
                    and (c.busy_until is None or c.busy_until < d))

        def corporate_buyer(target: _Company, min_size: float) -> list[_Company]:
            # Acquirers buy within their industry or sector; a conglomerate deal is the rare
            # exception, so the deal list reads like real M&A news.
            sector = D.INDUSTRIES[target.industry][2]
            eligible = [c for c in cos if self._is_public(c, d) and c is not target
                        and c is not target.parent and c.size >= min_size and c.kind != "ib"
                        and not c.locked]
            near = [c for c in eligible if D.INDUSTRIES[c.industry][2] == sector]
            if near:
                weights = [3 if c.industry == target.industry else 1 for c in near]
                return rng.choices(near, weights=weights)
            if eligible and rng.random() < 0.1:
                return [rng.choice(eligible)]
            return []

        if kind == "Asset Acquisition":
            pool = [c for c in cos if c.kind == "subsidiary" and free_target(c)
                    and c.parent is not None and self._alive(c.parent, d)]
        elif kind == "Merger":
            pool = [c for c in cos if self._is_public(c, d) and free_target(c)]
        elif kind == "Leveraged Buyout":
            pool = [c for c in cos if free_target(c) and c.size < 8000
                    and (self._is_public(c, d) or c.kind == "private")]
        elif kind == "Minority Stake Purchase":
            pool = [c for c in cos if free_target(c)
                    and (self._is_public(c, d) or c.kind == "private")]
        else:  # Acquisition
            pool = [c for c in cos if free_target(c) and (
                self._is_public(c, d) or c.kind == "private"
                or (c.kind == "subsidiary" and c.parent is not None
                    and self._alive(c.parent, d)))]
        if not pool:
            return None
        # Private companies and carve-outs are the common acquisition targets.
        weights = [1 if c.kind == "public" else 2 for c in pool]

        for _attempt in range(12):
            target = rng.choices(pool, weights=weights)[0]
            sellers: list[_Company] = []
            pct: float = 100
            if kind == "Leveraged Buyout":
                buyers = rng.sample(pe_firms, 2 if rng.random() < 0.25 else 1)
                if target.kind == "private" and rng.random() < 0.3:
                    sellers = [rng.choice([p for p in pe_firms if p not in buyers])]
                return target, buyers, sellers, pct
            if kind == "Minority Stake Purchase":
                buyers = [rng.choice(pe_firms)] if rng.random() < 0.5 \
                    else corporate_buyer(target, 0)
                if rng.random() < 0.25:
                    sellers = [rng.choice([p for p in pe_firms if p not in buyers])]
                pct = rng.choice([5, 7.5, 9.9, 10, 12.5, 15, 19.9, 20, 24.9, 25, 30, 33, 40, 45,
                                  49])
            elif kind == "Merger":
                buyers = corporate_buyer(target, target.size * 0.8)
            else:
                buyers = corporate_buyer(target, target.size * 1.2)
                if target.kind == "subsidiary":
                    sellers = [target.parent]
                elif target.kind == "private" and rng.random() < 0.3:
                    sellers = [rng.choice(pe_firms)]
            if buyers:
                return target, buyers, sellers, pct
        return None

    def _distress(self) -> None:
        """One listed company goes bust in 2023 and one is in restructuring."""
        rng = self.rng
        pool = [c for c in self.companies if c.kind == "public" and not c.protected
                and not c.in_deal and c.gone is None]
        pool.sort(key=lambda c: (c.industry not in ("biotech", "retail"), c.company_id))
        if len(pool) < 2:
            return
        bust = pool[0]
        bust.status = "Out of Business"
        bust.gone = _weekday_on_or_after(date(2023, 5, 1) + timedelta(days=rng.randrange(170)))
        restructuring = rng.choice(pool[1:])
        restructuring.status = "Reorganizing"

    # -- reference and company rows ----------------------------------------------------------

    def _emit_reference(self) -> None:
        r = self.rows
        for iso, (cid, name, *_rest) in D.CURRENCIES.items():
            r["ref_currency"].append((cid, iso, name))
        for iso, spec in D.COUNTRIES.items():
            r["ref_country"].append((spec[0], iso, spec[1], spec[2], D.CURRENCIES[spec[3]][0]))
        for code, (eid, name, country, _style) in D.EXCHANGES.items():
            r["ref_exchange"].append((eid, code, name, D.COUNTRIES[country][0]))
        for _key, (iid, name, sector, *_rest) in D.INDUSTRIES.items():
            r["ref_industry"].append((iid, name, sector))
        r["ref_security_type"] += [(i, n) for n, i in SECURITY_TYPES.items()]
        r["ref_data_item"] += [(i, n, c, desc) for n, (i, c, desc) in DATA_ITEMS.items()]
        r["ref_period_type"] += [(i, n) for n, i in PERIOD_TYPES.items()]
        r["ref_unit"] += [(i, n, m) for n, (i, m) in UNITS.items()]
        r["ref_transaction_type"] += [(i, n) for n, i in TRANSACTION_TYPES.items()]
        r["ref_transaction_status"] += [(i, n) for n, i in TRANSACTION_STATUSES.items()]
        r["ref_transaction_role"] += [(i, n) for n, i in ROLES.items()]
        r["ref_company_type"] += [(i, n) for n, i in COMPANY_TYPES.items()]
        r["ref_company_status"] += [(i, n) for n, i in COMPANY_STATUSES.items()]

    def _emit_companies(self) -> None:
        rng = self.rng
        for co in self.companies:
            spec = D.INDUSTRIES[co.industry][4]
            if co.kind in ("pe", "legal"):
                employees = int(round(co.size * rng.uniform(0.4, 1.0), -1))
            else:
                revenue = co.fin.get("rev_usd", {}).get(2023, co.size * 1.2)
                employees = max(12, int(round(revenue * 1000 / spec["rpe"]
                                              * math.exp(rng.gauss(0, 0.2)), -1)))
            tokens = [t for t in re.split(r"[^A-Za-z]+", co.name) if t][:2]
            website = "www." + "".join(tokens).lower() + (
                ".com" if co.kind in ("pe", "ib", "legal") else D.COUNTRIES[co.country][4])
            self.rows["company"].append((
                co.company_id, co.name, COMPANY_TYPES[co.company_type],
                COMPANY_STATUSES[co.status], D.INDUSTRIES[co.industry][0],
                D.COUNTRIES[co.country][0], co.parent.company_id if co.parent else None,
                co.founded, employees, website,
            ))

    # -- securities, listings and prices -----------------------------------------------------

    def _make_fx(self) -> dict[str, dict[date, float]]:
        rng = self.rng
        n = len(self.weekdays) - 1
        fx: dict[str, dict[date, float]] = {}
        for iso, (cid, _name, first, last, vol) in D.CURRENCIES.items():
            walk = [0.0]
            for _ in range(n):
                walk.append(walk[-1] + rng.gauss(0, vol))
            series = {}
            for i, d in enumerate(self.weekdays):
                # Brownian bridge: a random walk pinned to the known start and end levels.
                log_rate = (math.log(first) + (math.log(last) - math.log(first)) * i / n
                            + walk[i] - walk[-1] * i / n)
                rate = 1.0 if iso == "USD" else _sig(math.exp(log_rate))
                series[d] = rate
                self.rows["exchange_rate"].append((cid, d.isoformat(), rate))
            fx[iso] = series
        return fx

    def _make_listings_and_prices(self, fx: dict[str, dict[date, float]]) -> None:
        rng = self.rng
        listed = [c for c in self.companies if c.kind in _FIN_KINDS and c.public_from]
        region_of = {iso: spec[2] for iso, spec in D.COUNTRIES.items()}
        market = {reg: [rng.gauss(0.0003, 0.008) for _ in self.weekdays]
                  for reg in sorted(set(region_of.values()))}
        calendars = {
            ex: [d for d in self.weekdays
                 if f"{d.month:02d}-{d.day:02d}" not in D.HOLIDAYS_2023[ex]]
            for ex in D.EXCHANGES
        }
        adr_pool = sorted((c for c in listed if c.country not in ("US", "CA") and c.size > 1500
                           and c.kind == "public"), key=lambda c: -c.size)
        adrs = {c.company_id for c in rng.sample(adr_pool[:20], min(7, len(adr_pool[:20])))}
        xetra_pool = [c for c in listed if c.country in ("CH", "SE", "GB", "NL", "FR")
                      and c.kind == "public"]
        xetra = {c.company_id for c in rng.sample(xetra_pool, min(3, len(xetra_pool)))}

        for co in listed:
            fin = co.fin
            if co.exchange is None:
                if co.country == "US":
                    tech = co.industry in ("software", "biotech", "semis", "medtech")
                    co.exchange = "NasdaqGS" if rng.random() < (0.75 if tech else 0.2) else "NYSE"
                else:
                    co.exchange = D.HOME_EXCHANGE[co.country]
                co.ticker = self._ticker(co, co.exchange)
            self._assign_share_profile(co)
            if co.kind == "spin":
                ipo = co.public_from
            else:
                first = max(co.founded + 2, 1982)
                ipo = date(min(first, 2017), 1, 1) + timedelta(
                    days=rng.randrange(max(1, (2018 - min(first, 2017)) * 365)))
                ipo = _weekday_on_or_after(ipo)
                co.public_from = ipo
            # Underlying daily price path in the primary trading currency.
            # The daily walk is bent to end at a sampled full-year return, so daily noise stays
            # realistic without letting a stock triple in a year by chance.
            beta = rng.uniform(0.6, 1.4)
            mkt = market[region_of[co.country]]
            steps = [beta * m + rng.gauss(0, fin["vol"]) for m in mkt]
            walk, total = [], 0.0
            for step in steps:
                total += step
                walk.append(total)
            year_return = rng.gauss(0.07, 0.22)
            n = len(walk)
            path = {
                d: fin["price0"] * math.exp(walk[i] + (year_return - walk[-1]) * (i + 1) / n)
                for i, d in enumerate(self.weekdays)
            }
            shares = fin["shares"][2023]

            common = self._security(co, "Common Stock", "Common Stock" if co.country != "SE"
                                    else "Class B Shares", True)
            self._trading_item(co, common, co.exchange, co.ticker, fin["trade_ccy"], True, ipo,
                               path, 1.0, shares * rng.uniform(0.002, 0.007), calendars, fx)
            if co.country == "CA" and rng.random() < 0.6:
                self._trading_item(co, common, "NYSE", co.ticker, "USD", False,
                                   max(ipo, date(1995, 3, 1)), path, 1.0,
                                   shares * rng.uniform(0.001, 0.003), calendars, fx)
            if co.company_id in xetra:
                self._trading_item(co, common, "XTRA", self._ticker(co, "XTRA"), "EUR", False,
                                   max(ipo, date(2001, 6, 1)), path, 1.0,
                                   shares * rng.uniform(0.0001, 0.0005), calendars, fx)
            if co.company_id in adrs:
                usd_price = fin["price0"] * self.fx_mid[fin["trade_ccy"]]
                ratio = min((0.1, 0.2, 0.25, 0.5, 1, 2, 4, 5, 10),
                            key=lambda r: abs(math.log(usd_price * r / 35)))
                label = (f"{ratio:g} ordinary shares" if ratio >= 1
                         else f"1/{round(1 / ratio)} ordinary share")
                adr = self._security(co, "American Depositary Receipt",
                                     f"American Depositary Receipt (1 ADR = {label})", False)
                ex = "NasdaqGS" if co.industry in ("software", "biotech", "semis") else "NYSE"
                self._trading_item(co, adr, ex, self._ticker(co, "NYSE"), "USD", False,
                                   max(ipo, date(1998, 1, 5)), path, ratio,
                                   shares / ratio * rng.uniform(0.0003, 0.001), calendars, fx)
            if co.industry in ("bank", "insur") and co.country == "US":
                pref = self._security(co, "Preferred Stock",
                                      f"Series A {rng.choice([4.75, 5.25, 5.75, 6.125])}% "
                                      "Non-Cumulative Preferred Stock", False)
                pref_path, p = {}, 25.0 * rng.uniform(0.9, 1.05)
                for d in self.weekdays:
                    p *= math.exp(rng.gauss(0, 0.003))
                    pref_path[d] = p
                pref_listed = max(ipo, _weekday_on_or_after(date(rng.randint(2012, 2018), 3, 1)))
                self._trading_item(co, pref, "NYSE", co.ticker + ".PRA", "USD", False,
                                   pref_listed, pref_path, 1.0,
                                   rng.uniform(20_000, 120_000), calendars, fx)
            if co.industry == "biotech" and co.country == "US" and co.size < 1000 \
                    and (co.gone is None or co.gone.year >= 2022):
                warrant = self._security(co, "Warrant",
                                         f"Warrants (expiring {rng.randint(2025, 2028)})", False)
                strike = fin["price0"] * rng.uniform(1.1, 1.6)
                w_path = {d: max(0.02, path[d] - strike) + 0.18 * path[d] for d in path}
                self._trading_item(co, warrant, co.exchange, co.ticker + "W", "USD", False,
                                   max(ipo, _weekday_on_or_after(
                                       date(2020, rng.randint(1, 12), 10))),
                                   w_path, 1.0, shares * 0.0004, calendars, fx)
            if co.size > 3000 and rng.random() < 0.45:
                for _ in range(rng.choice([1, 1, 2])):
                    coupon = rng.choice([1.5, 2.25, 2.875, 3.5, 4.125, 4.25, 4.75, 5.375, 6.0])
                    self._security(co, "Corporate Bond",
                                   f"{coupon:.3f}% Senior Notes due {rng.randint(2025, 2040)}",
                                   False)

    def _security(self, co: _Company, type_name: str, name: str, primary: bool) -> int:
        sid = self._new_id(1_000_000, 99_999_999)
        self.rows["security"].append(
            (sid, co.company_id, SECURITY_TYPES[type_name], name, int(primary)))
        return sid

    def _trading_item(self, co: _Company, security_id: int, exchange: str, ticker: str,
                      ccy: str, primary: bool, listed: date, path: dict[date, float],
                      ratio: float, base_volume: float, calendars: dict, fx: dict) -> None:
        rng = self.rng
        tid = self._new_id(1_000_000, 99_999_999)
        delisted = co.gone
        self.rows["trading_item"].append((
            tid, security_id, D.EXCHANGES[exchange][0], ticker, D.CURRENCIES[ccy][0],
            int(primary), listed.isoformat(), delisted.isoformat() if delisted else None,
        ))
        source_ccy = co.fin["trade_ccy"]
        digits = {"JPY": 0, "SGD": 3}.get(ccy, 2)
        vol = co.fin["vol"]
        prev = None
        for d in calendars[exchange]:
            if d < listed or (delisted is not None and d >= delisted):
                continue
            close = path[d] * ratio * fx[source_ccy][d] / fx[ccy][d]
            if not primary:
                close *= math.exp(rng.gauss(0, 0.002))  # secondary lines trade near parity
            if prev is None:
                prev = close * math.exp(rng.gauss(0, vol))
            open_ = prev * math.exp(rng.gauss(0, vol * 0.4))
            high = max(open_, close) * math.exp(abs(rng.gauss(0, vol * 0.5)))
            low = min(open_, close) * math.exp(-abs(rng.gauss(0, vol * 0.5)))
            # Rounding can break low <= open/close <= high (and zero a penny price): repair it.
            tick = 10.0 ** -digits
            o, h, lo_, c = (max(round(x, digits), tick) for x in (open_, high, low, close))
            h, lo_ = max(h, o, c), min(lo_, o, c)
            move = abs(math.log(close / prev))
            volume = int(base_volume * math.exp(rng.gauss(0, 0.45)) * (1 + 8 * move))
            if ccy == "JPY":
                volume = max(100, volume // 100 * 100)
            self.rows["price_daily"].append(
                (tid, d.isoformat(), float(o), float(h), float(lo_), float(c), max(volume, 1)))
            prev = close

    # -- financial statements ----------------------------------------------------------------

    def _period_end(self, fiscal_year: int, fye: int, sub: int, n: int) -> date:
        total = fiscal_year * 12 + (fye - 1) - (n - sub) * (12 // n)
        year, month0 = divmod(total, 12)
        return _month_end(year, month0 + 1)

    def _flows(self, fin: dict, revenue: float, year: int, frac: float, debt_open: float) -> dict:
        rng = self.rng
        out = {"Total Revenue": revenue}
        if fin["kind"] in ("bank", "insurance"):
            op = revenue * (fin["om"] + rng.gauss(0, 0.012))
            ni = op * (1 - fin["tax"]) + revenue * rng.gauss(0, 0.01)
            out.update({"Operating Income": op, "Net Income": ni,
                        "Cash from Operations": ni * (1 + rng.gauss(0.2, 0.4))})
            return out
        em = fin["em"] + fin["em_drift"] * (year - 2019) + rng.gauss(0, 0.012)
        em = min(max(em, -0.9), 0.85)
        ebitda = revenue * em
        da = revenue * fin["da"] * (1 + rng.gauss(0, 0.05))
        op = ebitda - da
        interest = debt_open * fin["rate"] * frac
        pretax = op - interest + revenue * rng.gauss(0, 0.01)
        ni = pretax * (1 - fin["tax"]) if pretax > 0 else pretax
        cfo = ni + da + revenue * rng.gauss(0, 0.03)
        capex = -revenue * fin["capex"] * (1 + rng.gauss(0, 0.1))
        if fin["kind"] != "asset":
            gm = max(fin["gm"] + rng.gauss(0, 0.01), em + 0.04)
            out["Gross Profit"] = revenue * min(gm, 0.97)
        out.update({"EBITDA": ebitda, "Operating Income": op, "Interest Expense": interest,
                    "Net Income": ni, "Cash from Operations": cfo,
                    "Capital Expenditure": capex, "Free Cash Flow": cfo + capex})
        return out

    def _balance(self, fin: dict, assets: float) -> dict:
        rng = self.rng
        # Noise goes on equity, not liabilities: for a bank 1% of assets is 10% of equity.
        equity = assets * (1 - fin["liab"]) * (1 + rng.gauss(0, 0.02))
        debt = assets * fin["debt"] * (1 + rng.gauss(0, 0.03))
        liab = min(max(assets - equity, debt * 1.05), assets * 0.97)
        return {"Total Assets": assets, "Total Liabilities": liab, "Total Equity": assets - liab,
                "Total Debt": debt, "Cash and Equivalents": assets * fin["cash"]
                * (1 + rng.gauss(0, 0.08))}

    def _make_financials(self) -> None:
        rng = self.rng
        next_period_id = 4_100_001
        for co in self.companies:
            if co.kind not in _FIN_KINDS or not co.fin or not co.public_from:
                continue
            fin = co.fin
            ccy_id = D.CURRENCIES[fin["reporting"]][0]
            unit_id, unit_mult = UNITS[fin["unit"]]
            share_unit = "Thousands" if fin["unit"] == "Thousands" else "Millions"
            to_local = 1e6 / self.fx_mid[fin["reporting"]]
            rev = {y: v * to_local for y, v in fin["rev_usd"].items()}
            assets = {y: rev[y] * fin["assets"] * (1 + rng.gauss(0, 0.03)) for y in rev}
            first_year = co.founded if co.kind == "spin" else 2019

            def emit(ptype: str, year: int, quarter: int | None, end: date, values: dict,
                     shares: float, lag: tuple[int, int]) -> int | None:
                nonlocal next_period_id
                filed = _weekday_on_or_after(end + timedelta(days=rng.randint(*lag)))
                if year < first_year or filed > AS_OF or (co.gone and filed >= co.gone):
                    return None
                pid = next_period_id
                next_period_id += 1
                self.rows["financial_period"].append((
                    pid, co.company_id, PERIOD_TYPES[ptype], year, quarter, end.isoformat(),
                    filed.isoformat()))
                for item, value in values.items():
                    self.rows["financial_data"].append(
                        (pid, DATA_ITEMS[item][0], value, unit_id, ccy_id))
                ni = values["Net Income"] * unit_mult
                eps = round(ni / shares, 2)
                self.rows["financial_data"].append(
                    (pid, DATA_ITEMS["Diluted EPS"][0], eps, UNITS["Units"][0], ccy_id))
                if fin["payout"]:
                    dps = round(max(ni, 0) * fin["payout"] / shares, 2)
                    self.rows["financial_data"].append(
                        (pid, DATA_ITEMS["Dividends per Share"][0], dps, UNITS["Units"][0],
                         ccy_id))
                self.rows["financial_data"].append((
                    pid, DATA_ITEMS["Shares Outstanding"][0],
                    round(shares / UNITS[share_unit][1], 3), UNITS[share_unit][0], None))
                return pid

            def scaled(raw: dict) -> dict:
                return {k: round(v / unit_mult, 3) for k, v in raw.items()}

            annual_lag = (40, 50) if co.country == "JP" else (50, 85)
            for year in range(2019, 2024):
                shares = fin["shares"][year]
                year_end = self._period_end(year, fin["fye"], 1, 1)
                debt_open = assets[year - 1] * fin["debt"]
                if year < 2022:
                    values = scaled(self._flows(fin, rev[year], year, 1.0, debt_open))
                    values.update(scaled(self._balance(fin, assets[year])))
                    emit("Annual", year, None, year_end, values, shares, annual_lag)
                    continue
                n = fin["freq"]
                weights = [1 + rng.gauss(0, 0.03) for _ in range(n)]
                if co.industry == "retail":
                    weights[-1] += 0.25  # holiday quarter
                total_w = sum(weights)
                subs = []
                for k in range(1, n + 1):
                    a = assets[year - 1] + (assets[year] - assets[year - 1]) * k / n
                    if k < n:
                        a *= 1 + rng.gauss(0, 0.01)
                    values = scaled(self._flows(fin, rev[year] * weights[k - 1] / total_w, year,
                                                1 / n, debt_open))
                    values.update(scaled(self._balance(fin, a)))
                    subs.append(values)
                    end = self._period_end(year, fin["fye"], k, n)
                    quarter = k * (4 // n)  # half-years are tagged with their closing quarter
                    emit("Quarterly" if n == 4 else "Semi-Annual", year, quarter, end, values,
                         shares, (28, 45) if n == 4 else (45, 75))
                annual = {item: round(sum(s[item] for s in subs), 3)
                          for item in FLOW_ITEMS if item in subs[0]}
                annual.update({item: subs[-1][item] for item in BALANCE_ITEMS})
                emit("Annual", year, None, year_end, annual, shares, annual_lag)

    # -- people ------------------------------------------------------------------------------

    def _make_people(self) -> None:
        rng = self.rng
        used: set[tuple[str, str]] = set()
        by_pool: dict[str, list[int]] = {}
        people_rows = self.rows["person"]
        roles = self.rows["company_professional"]

        def new_person(pool: str) -> int:
            if rng.random() < 0.08:
                pool = "anglo"  # executives move across borders
            firsts, lasts = D.PEOPLE[pool]
            for attempt in range(400):
                if attempt == 200:  # a small pool is exhausted: fall back to the largest one
                    pool, (firsts, lasts) = "anglo", D.PEOPLE["anglo"]
                first, last = rng.choice(firsts), rng.choice(lasts)
                if (first, last) not in used:
                    break
            else:
                raise RuntimeError("ran out of person names")
            used.add((first, last))
            pid = self._new_id(100_000_000, 999_999_999)
            people_rows.append((pid, first, last, rng.randint(1952, 1986)))
            by_pool.setdefault(pool, []).append(pid)
            return pid

        for co in self.companies:
            pool = D.COUNTRIES[co.country][6]
            end = co.gone.year if co.status == "Acquired" and co.gone else None
            since = max(co.founded, 1995)

            def hold(pid: int, title: str, start: int, stop: int | None = end) -> None:
                start = min(max(start, since), 2024)
                if stop is not None:
                    start = min(start, stop)
                roles.append((pid, co.company_id, title, start, stop))

            if co.kind in ("pe", "legal"):
                hold(new_person(pool), "Managing Partner", rng.randint(2000, 2020))
                for _ in range(2 if co.kind == "pe" else 1):
                    hold(new_person(pool), "Partner", rng.randint(1998, 2022))
                continue
            ceo_start = rng.randint(2008, 2023)
            ceo = new_person(pool)
            hold(ceo, "Chief Executive Officer", ceo_start)
            if co.kind in ("public", "ib") and rng.random() < 0.3 and ceo_start - since > 3:
                former = new_person(pool)
                hold(former, "Chief Executive Officer", ceo_start - rng.randint(4, 12), ceo_start)
            hold(new_person(pool), "Chief Financial Officer", rng.randint(2010, 2023))
            listed = co.kind in ("public", "ib", "spin")
            if listed or rng.random() < 0.5:
                chair = ceo if (co.country == "US" and rng.random() < 0.35) else new_person(pool)
                hold(chair, "Chair of the Board", rng.randint(2008, 2022))
            if rng.random() < 0.35:
                hold(new_person(pool), "Chief Operating Officer", rng.randint(2012, 2023))
            if co.industry in ("software", "semis", "itserv", "biotech", "pharma", "telecom") \
                    and rng.random() < 0.5:
                hold(new_person(pool), "Chief Technology Officer", rng.randint(2012, 2023))
            if listed and rng.random() < 0.3:
                hold(new_person(pool), "General Counsel", rng.randint(2010, 2023))
            if listed:
                for _ in range(rng.randint(1, 3)):
                    # Board interlocks: some directors already hold a seat elsewhere.
                    existing = [p for p in by_pool.get(pool, []) if p != ceo]
                    if existing and rng.random() < 0.3:
                        director = rng.choice(existing)
                        if any(r[0] == director and r[1] == co.company_id for r in roles):
                            continue
                    else:
                        director = new_person(pool)
                    hold(director, "Independent Director", rng.randint(2010, 2023))

    # -- driver ------------------------------------------------------------------------------

    def generate(self) -> dict[str, list[tuple]]:
        self._make_companies()
        for co in self.companies:
            self._assign_financial_profile(co)
        self._make_transactions()
        self._distress()
        self._emit_reference()
        fx = self._make_fx()
        self._make_listings_and_prices(fx)
        self._make_financials()
        self._emit_companies()
        self._make_people()
        return self.rows
