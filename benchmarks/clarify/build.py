"""Writes `questions.jsonl`: the ask-back set on the demo database (issue "Constrain what the
model writes, and ask back"). Each question is one of

- `ambiguous`: it names something two or more rows or measures fit (a part of two companies'
  names, "income", "profit", "biggest"); `reply` is what a person would answer to the
  clarifying question, and `gold_sql` answers the question as clarified;
- `out-of-scope`: the database holds nothing that answers it (`lacks` says what); no gold;
- `clear`: one reading, with its `gold_sql` (several are the ambiguous ones with the full name
  or the measure spelled out: a trigger must not fire on them).

Every gold query is run on the demo database when the file is written.

    .venv/bin/python benchmarks/clarify/build.py
"""

from __future__ import annotations

import json
from pathlib import Path

from groundsql.api import demo_database_url
from groundsql.db import Database

FIGURE = ("SELECT fd.data_value * ru.multiplier FROM financial_data AS fd JOIN financial_period AS fp "
          "ON fd.financial_period_id = fp.financial_period_id JOIN company AS c ON fp.company_id = c.company_id "
          "JOIN ref_period_type AS pt ON fp.period_type_id = pt.period_type_id JOIN ref_data_item AS di "
          "ON fd.data_item_id = di.data_item_id JOIN ref_unit AS ru ON fd.unit_id = ru.unit_id "
          "WHERE c.company_name = '{company}' AND pt.period_type_name = 'Annual' AND fp.fiscal_year = {year} "
          "AND di.data_item_name = '{item}'")
NET_MARGIN = ("SELECT SUM(CASE WHEN di.data_item_name = 'Net Income' THEN fd.data_value * ru.multiplier END) * 100.0 "
              "/ SUM(CASE WHEN di.data_item_name = 'Total Revenue' THEN fd.data_value * ru.multiplier END) "
              "FROM financial_data AS fd JOIN financial_period AS fp ON fd.financial_period_id = fp.financial_period_id "
              "JOIN company AS c ON fp.company_id = c.company_id JOIN ref_period_type AS pt "
              "ON fp.period_type_id = pt.period_type_id JOIN ref_data_item AS di ON fd.data_item_id = di.data_item_id "
              "JOIN ref_unit AS ru ON fd.unit_id = ru.unit_id WHERE c.company_name = '{company}' "
              "AND pt.period_type_name = 'Annual' AND fp.fiscal_year = {year}")
EMPLOYEES = "SELECT employees FROM company WHERE company_name = '{company}'"
COUNTRY = ("SELECT rc.country_name FROM company AS c JOIN ref_country AS rc ON c.country_id = rc.country_id "
           "WHERE c.company_name = '{company}'")
INDUSTRY = ("SELECT ri.industry_name FROM company AS c JOIN ref_industry AS ri ON c.industry_id = ri.industry_id "
            "WHERE c.company_name = '{company}'")
FOUNDED = "SELECT founded_year FROM company WHERE company_name = '{company}'"
PRIMARY_TICKER = ("SELECT ti.ticker_symbol FROM trading_item AS ti JOIN security AS s ON ti.security_id = s.security_id "
                  "JOIN company AS c ON s.company_id = c.company_id WHERE c.company_name = '{company}' "
                  "AND ti.is_primary_listing = 1")
LARGEST_BY_EMPLOYEES = ("SELECT c.company_name FROM company AS c JOIN ref_country AS rc ON c.country_id = rc.country_id "
                        "WHERE rc.country_name = '{country}' ORDER BY c.employees DESC LIMIT 1")


def item(category: str, question: str, gold: str | None = None, **extra: str) -> dict:
    return {"question": question, "category": category, **({"gold_sql": gold} if gold else {}), **extra}


def pair(ambiguous: str, clear: str | None, gold: str, reply: str, why: str) -> tuple[dict, dict | None]:
    """An ambiguous question and, where given, its clear twin (the name or measure spelled
    out): the clarified question's gold is the twin's."""
    return item("ambiguous", ambiguous, gold, reply=reply, why=why), clear and item("clear", clear, gold)


def figure(company: str, year: int, item: str) -> str:
    """One annual figure of one company."""
    return FIGURE.format(company=company, year=year, item=item)


PAIRS = [
    # -- a name part two or more companies share ------------------------------------------------
    pair("What was Power & Light's net income in fiscal 2023?",
         "What was Osprey Power & Light Holdings, Inc.'s net income in fiscal 2023?",
         figure("Osprey Power & Light Holdings, Inc.", 2023, "Net Income"),
         "Osprey Power & Light Holdings, Inc.", "Osprey Power & Light, Taunus Power & Light"),
    pair("How many employees does Defense Systems have?", "How many employees does Kohinata Defense Systems K.K. have?",
         EMPLOYEES.format(company="Kohinata Defense Systems K.K."),
         "Kohinata Defense Systems K.K.", "Kazeyama and Kohinata Defense Systems"),
    pair("In which country is Asset Management based?", "In which country is Vauban Asset Management S.A. based?",
         COUNTRY.format(company="Vauban Asset Management S.A."),
         "Vauban Asset Management S.A.", "Konark and Vauban Asset Management"),
    pair("What was the total revenue of Photonics in fiscal 2022?",
         "What was the total revenue of Kroonstad Photonics N.V. in fiscal 2022?",
         figure("Kroonstad Photonics N.V.", 2022, "Total Revenue"),
         "Kroonstad Photonics N.V.", "Belcourt Photonics, Kroonstad Photonics"),
    pair("When was Reinsurance founded?", "When was Marlow Reinsurance plc founded?",
         FOUNDED.format(company="Marlow Reinsurance plc"),
         "Marlow Reinsurance plc", "Banksia Reinsurance, Marlow Reinsurance"),
    pair("Which industry is Dairy in?", "Which industry is Morgenrot Dairy SE in?",
         INDUSTRY.format(company="Morgenrot Dairy SE"), "Morgenrot Dairy SE", "four companies named Dairy"),
    pair("What is the primary ticker of Mobility?", "What is the primary ticker of Ticino Mobility AG?",
         PRIMARY_TICKER.format(company="Ticino Mobility AG"), "Ticino Mobility AG", "Kitano, Severnside and Ticino Mobility"),
    pair("How many people work at Machinery?", "How many people work at Saentis Machinery AG?",
         EMPLOYEES.format(company="Saentis Machinery AG"), "Saentis Machinery AG", "Ironbridge, Malaren and Saentis Machinery"),
    pair("What was the EBITDA of Nutrition in fiscal 2023?", "What was the EBITDA of Deccan Nutrition Limited in fiscal 2023?",
         figure("Deccan Nutrition Limited", 2023, "EBITDA"),
         "Deccan Nutrition Limited", "Copperfield, Deccan and Evergreen Nutrition"),
    pair("In which country is Studios based?", None, COUNTRY.format(company="Nipigon Studios Ltd."),
         "Nipigon Studios Ltd.", "Isarwerk Studios, Nipigon Studios"),
    # -- a word several measures fit ------------------------------------------------------------
    pair("What was Hikari Telecom K.K.'s income in fiscal 2023?", "What was Hikari Telecom K.K.'s net income in fiscal 2023?",
         figure("Hikari Telecom K.K.", 2023, "Net Income"), "Net Income", "net income or operating income"),
    pair("What was Lindenhof Engineering AG's profit in fiscal 2023?",
         "What was Lindenhof Engineering AG's gross profit in fiscal 2023?",
         figure("Lindenhof Engineering AG", 2023, "Gross Profit"),
         "Gross Profit", "gross profit, operating income or net income"),
    pair("How much cash did Helios Energy AG generate in fiscal 2023?",
         "How much cash from operations did Helios Energy AG generate in fiscal 2023?",
         figure("Helios Energy AG", 2023, "Cash from Operations"),
         "Cash from Operations", "cash from operations or free cash flow"),
    pair("What was the margin of Sakura Semiconductor K.K. in fiscal 2023?",
         "What was the net profit margin of Sakura Semiconductor K.K. in fiscal 2023?",
         NET_MARGIN.format(company="Sakura Semiconductor K.K.", year=2023),
         "net profit margin", "gross, operating, EBITDA, net or free-cash-flow margin"),
    pair("Which Japanese company is the biggest?", "Which Japanese company has the most employees?",
         LARGEST_BY_EMPLOYEES.format(country="Japan"),
         "by number of employees", "by employees, revenue, assets or market value"),
    pair("Which is the largest company in Germany?", "Which company in Germany has the most employees?",
         LARGEST_BY_EMPLOYEES.format(country="Germany"),
         "by number of employees", "by employees, revenue, assets or market value"),
    pair("What were the earnings of Nordvik Medical AB (publ) in fiscal 2022?",
         "What was the net income of Nordvik Medical AB (publ) in fiscal 2022?",
         figure("Nordvik Medical AB (publ)", 2022, "Net Income"), "Net Income", "net income, EBITDA or EPS"),
]

ITEMS = [
    *(ambiguous for ambiguous, _ in PAIRS),
    # -- nothing in the database answers it -----------------------------------------------------
    item("out-of-scope", "What is the average salary of Hikari Telecom K.K.'s employees?", lacks="salaries"),
    item("out-of-scope", "What ESG rating does Helios Energy AG have?", lacks="ESG ratings"),
    item("out-of-scope", "What will Kitano Mobility K.K.'s revenue be in fiscal 2027?", lacks="forecasts"),
    item("out-of-scope", "Which analysts cover Sakura Semiconductor K.K.?", lacks="analyst coverage"),
    item("out-of-scope", "What is the weather in Zurich today?", lacks="weather"),
    item("out-of-scope", "How many patents does Itapua Therapeutics S.A. hold?", lacks="patents"),
    item("out-of-scope", "What is the credit rating of Marlow Reinsurance plc?", lacks="credit ratings"),
    item("out-of-scope", "Who are the largest customers of Cobalt Logistics Corporation?", lacks="customers"),
    item("out-of-scope", "How many tonnes of CO2 did Waalhaven Resources B.V. emit in 2023?", lacks="emissions"),
    item("out-of-scope", "What is the Twitter handle of Brienz Networks AG?", lacks="social media accounts"),
    # -- one reading ----------------------------------------------------------------------------
    *(clear for _, clear in PAIRS if clear),
    item("clear", "How many companies are based in Japan?",
         "SELECT COUNT(*) FROM company AS c JOIN ref_country AS rc ON c.country_id = rc.country_id "
         "WHERE rc.country_name = 'Japan'"),
    item("clear", "What was the total debt of Ticino Mobility AG at the end of fiscal 2023?",
         figure("Ticino Mobility AG", 2023, "Total Debt")),
    item("clear", "When was Isarwerk Studios SE founded?", FOUNDED.format(company="Isarwerk Studios SE")),
    item("clear", "How many employees does Taunus Power & Light GmbH have?",
         EMPLOYEES.format(company="Taunus Power & Light GmbH")),
]


def main() -> None:
    out = Path(__file__).with_name("questions.jsonl")
    with Database(demo_database_url()) as db:
        lines = []
        for i, entry in enumerate(ITEMS, 1):
            if entry.get("gold_sql"):
                rows = db.execute(entry["gold_sql"]).rows
                if not rows or rows[0][0] is None:
                    raise SystemExit(f"clarify/{i}: the gold query finds nothing: {entry['gold_sql']}")
            lines.append(json.dumps({"id": f"clarify/{i}", "db": "demo", **entry}, ensure_ascii=False))
    out.write_text("\n".join(lines) + "\n")
    counts = {c: sum(e["category"] == c for e in ITEMS) for c in ("ambiguous", "out-of-scope", "clear")}
    print(f"wrote {out}: {counts}")


if __name__ == "__main__":
    main()
