"""Deterministic generator of the warehouse benchmark: about 500 tables of opaque keys.

The enterprise data warehouse of a fictitious industrial group, Halvard Industries: twelve
subject areas (sales, purchasing, inventory, manufacturing, logistics, finance, human
resources, marketing, customer service, quality, facilities, risk), each with its own table
prefix, reference tables (`ref_<area>_<concept>`: small, non-sequential integer keys and a
label), its subject dimension, its core facts and the budgets, forecasts, adjustments, monthly
snapshots, event logs and audits a real warehouse accumulates around them, and bridge tables;
plus conformed dimensions every area shares (countries, currencies, sites, products, a million
customers, suppliers, employees). Facts hold keys only: every word of a question has to be
grounded in a reference table or a name.

Standard library only; all randomness from one `random.Random(seed)`. `--scale` multiplies the
big row counts (customers, the sales orders and their lines) for quick test builds; the tables
and the reference rows are the same at every scale, and so is every row a question names.

    python benchmarks/warehouse/build.py OUT.sqlite [--scale 1.0] [--seed 7]
    python benchmarks/warehouse/build.py OUT.sqlite --questions benchmarks/warehouse/questions.jsonl
    python benchmarks/warehouse/build.py OUT.sqlite --postgres postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from datetime import date, timedelta

SEED = 7
FIRST_DAY, DAYS = date(2022, 1, 1), 3 * 365  # facts fall in 2022-2024

# -- the schema, as data ----------------------------------------------------------------------


@dataclass
class Table:
    name: str
    columns: list[tuple[str, str]]  # (name, SQL type)
    key: tuple[str, ...]
    refs: dict[str, str] = field(default_factory=dict)  # column -> referenced table (its key)

    def ddl(self, keys: dict[str, str]) -> str:
        parts = [f"{c} {t}" for c, t in self.columns]
        parts.append(f"PRIMARY KEY ({', '.join(self.key)})")
        parts += [f"FOREIGN KEY ({c}) REFERENCES {t} ({keys[t]})" for c, t in self.refs.items()]
        return f"CREATE TABLE {self.name} ({', '.join(parts)})"


@dataclass(frozen=True)
class Area:
    prefix: str
    name: str
    subject: str  # the area's own dimension ("campaign"); None-like "" when it has none
    entity: str  # the shared dimension its core fact is about: customer, supplier, product, employee, site
    fact: str  # the core fact's noun ("order"), its table <prefix>_<fact>
    facts: str  # plural, for questions
    amount: str  # the core fact's amount column
    amount_words: str  # how a question says it
    category: tuple[str, ...]  # labels of ref_<prefix>_category
    extra_refs: tuple[str, ...]  # more reference concepts of the area
    subjects: tuple[str, ...]  # what its pattern facts are about


STATUSES = ("Open", "In Progress", "On Hold", "Closed", "Cancelled")
PRIORITIES = ("Low", "Medium", "High", "Critical")
PATTERNS = ("budget", "forecast", "adjustment", "snapshot_monthly", "event_log", "audit")
GENERIC_LABELS = ("Standard", "Expedited", "Internal", "External", "Manual", "Automatic", "Legacy", "Other")

AREAS = (
    Area("sls", "sales", "sales_channel", "customer", "order", "sales orders", "net_amount", "net sales amount",
         ("Fasteners", "Bearings", "Hydraulics", "Pneumatics", "Electrical", "Safety Equipment"),
         ("payment_term", "incoterm", "discount_type", "return_reason", "price_list", "sales_region", "promotion_type"),
         ("order", "quote", "commission", "target")),
    Area("pur", "purchasing", "buyer_group", "supplier", "purchase_order", "purchase orders", "order_value", "order value",
         ("Raw Materials", "Components", "Packaging", "MRO Supplies", "Services", "Capital Goods"),
         ("payment_term", "approval_level", "sourcing_type", "contract_type", "rejection_reason", "tax_code", "spend_class"),
         ("requisition", "contract", "invoice", "rebate")),
    Area("inv", "inventory", "storage_zone", "product", "stock_movement", "stock movements", "quantity", "quantity moved",
         ("Receipt", "Issue", "Transfer", "Adjustment", "Return to Vendor", "Scrap"),
         ("bin_type", "valuation_method", "lot_status", "count_method", "hold_reason", "abc_class", "unit_of_measure"),
         ("stock_count", "reservation", "valuation", "replenishment")),
    Area("mfg", "manufacturing", "work_center", "product", "work_order", "work orders", "produced_quantity",
         "quantity produced", ("Machining", "Assembly", "Welding", "Painting", "Testing", "Packaging"),
         ("shift", "downtime_reason", "routing_type", "scrap_reason", "machine_type", "maintenance_type", "yield_class"),
         ("operation", "downtime", "scrap", "maintenance")),
    Area("lgs", "logistics", "carrier", "customer", "shipment", "shipments", "freight_cost", "freight cost",
         ("Road", "Rail", "Sea", "Air", "Courier", "Intermodal"),
         ("service_level", "incoterm", "delay_reason", "packaging_type", "route_type", "hazard_class", "customs_status"),
         ("shipment", "delivery", "freight_invoice", "claim")),
    Area("fin", "finance", "cost_center", "customer", "invoice", "customer invoices", "invoice_amount", "invoiced amount",
         ("Product Sales", "Service Fees", "Licences", "Rentals", "Freight Recharge", "Penalties"),
         ("payment_method", "dunning_level", "tax_code", "write_off_reason", "ledger_account", "fiscal_period_type", "journal_type"),
         ("journal", "payment", "accrual", "write_off")),
    Area("hr", "human resources", "department", "employee", "absence", "absences", "days_absent", "days of absence",
         ("Sick Leave", "Annual Leave", "Parental Leave", "Training", "Unpaid Leave", "Compassionate Leave"),
         ("contract_type", "grade", "job_family", "termination_reason", "training_type", "benefit_type", "work_pattern"),
         ("payroll", "training", "headcount", "overtime")),
    Area("mkt", "marketing", "campaign", "customer", "lead", "marketing leads", "lead_score", "lead score",
         ("Webinar", "Trade Show", "Email", "Paid Search", "Referral", "Social Media"),
         ("lead_stage", "audience", "content_type", "budget_owner", "attribution_model", "market_segment", "offer_type"),
         ("campaign", "spend", "response", "event")),
    Area("svc", "customer service", "support_team", "customer", "ticket", "support tickets", "handling_minutes",
         "handling time in minutes", ("Billing", "Delivery", "Product Defect", "Installation", "Warranty", "General Enquiry"),
         ("channel", "resolution_code", "sla_tier", "escalation_level", "satisfaction_band", "contact_reason", "warranty_type"),
         ("ticket", "warranty_claim", "visit", "survey")),
    Area("qa", "quality", "inspection_plan", "supplier", "inspection", "quality inspections", "defect_count",
         "number of defects", ("Incoming", "In-Process", "Final", "Audit", "Field Return", "Calibration"),
         ("defect_type", "severity", "disposition", "standard", "sampling_plan", "test_method", "root_cause"),
         ("inspection", "nonconformance", "capa", "calibration")),
    Area("fac", "facilities", "meter", "site", "meter_reading", "meter readings", "consumption", "energy consumption",
         ("Electricity", "Natural Gas", "Water", "Steam", "Compressed Air", "Diesel"),
         ("tariff", "building_type", "asset_class", "work_request_type", "lease_type", "emission_scope", "cleaning_level"),
         ("energy", "lease", "work_request", "emission")),
    Area("rsk", "risk and compliance", "control", "supplier", "incident", "compliance incidents", "loss_amount",
         "loss amount", ("Fraud", "Data Protection", "Health and Safety", "Environmental", "Sanctions", "Anti-Bribery"),
         ("risk_rating", "control_type", "finding_status", "regulation", "likelihood", "impact_level", "remediation_type"),
         ("incident", "finding", "assessment", "policy")),
)

COUNTRIES = ("Germany", "France", "Italy", "Spain", "Netherlands", "Belgium", "Poland", "Sweden", "Norway",
             "Denmark", "Finland", "Austria", "Switzerland", "Czech Republic", "United Kingdom", "Ireland",
             "Portugal", "United States", "Canada", "Mexico", "Brazil", "Argentina", "Chile", "Japan",
             "South Korea", "China", "India", "Singapore", "Australia", "South Africa")
REGIONS = ("Europe", "North America", "Latin America", "Asia-Pacific", "Africa")
CURRENCIES = ("EUR", "USD", "GBP", "CHF", "SEK", "NOK", "DKK", "PLN", "JPY", "CNY", "INR", "BRL")
CITIES = ("Aachen", "Bergen", "Cork", "Dijon", "Eindhoven", "Faro", "Ghent", "Hamar", "Innsbruck", "Jonkoping",
          "Krakow", "Lyon", "Malmo", "Nantes", "Oulu", "Porto", "Quebec", "Rennes", "Sevilla", "Turin")
SITE_KINDS = ("Plant", "Warehouse", "Distribution Centre", "Office", "Service Hub")

NAME_A = ("Alder Amber Ash Aster Beacon Birch Bright Brook Cedar Clear Cobalt Copper Crest Crown Delta Dun Eagle "
          "East Elm Ember Fair Falcon Fern Flint Glen Gold Granite Green Harbor Hazel Heron High Iron Juniper Kings "
          "Lark Linden Maple Marsh Meadow Mill North Oak Orchard Pine Quarry Raven Red Ridge River Rowan Silver "
          "Stone Summit Thorn Upland Vale West Willow Yarrow").split()
NAME_B = ("water field wood ford gate stone bridge brook haven ridge moor crest dale wick ton bury mere port "
          "vale hurst land mark point view side well worth combe leigh shaw stead thorpe holm beck cliff hall "
          "burn garth lea fold").split()
TRADES = ("Logistics Timber Foods Systems Metals Chemicals Textiles Motors Energy Pharma Plastics Glass Paper "
          "Tools Electronics Apparel Marine Aerospace Robotics Grain Engineering Construction Packaging Dairy "
          "Furniture Instruments Minerals Coatings Fabrication Trading").split()
FORMS = ("GmbH", "Ltd", "Inc.", "S.A.", "Holdings", "AB", "B.V.", "plc", "S.p.A.", "A/S", "Oy", "AG", "LLC",
         "Group", "S.r.l.")
FIRST_NAMES = ("Anna Ben Clara David Elena Felix Greta Hugo Ines Jonas Karin Lukas Marta Nils Olga Paul Rosa "
               "Simon Tessa Victor Wiebke Yusuf Zoe Ahmed Bianca Carlos Dora Emil Fatima Georg").split()
LAST_NAMES = ("Andersen Becker Costa Dubois Eriksen Fischer Garcia Hansen Ivanova Jansen Keller Larsen Moreau "
              "Novak Olsen Petrov Quinn Rossi Schmidt Tanaka Unger Vidal Weber Xu Young Zimmermann Berg Lund "
              "Meyer Nowak").split()
PRODUCT_WORDS = ("Hex Bolt", "Ball Bearing", "Hydraulic Pump", "Air Valve", "Cable Gland", "Safety Helmet",
                 "Gear Motor", "Pressure Sensor", "Drive Belt", "Flange Seal", "Control Relay", "Torque Wrench")

N_CUSTOMERS, N_ORDERS, LINES_PER_ORDER = 1_000_000, 600_000, 5
N_SUPPLIERS, N_EMPLOYEES, N_PRODUCTS, N_SITES = 20_000, 20_000, 3_000, 60
N_SUBJECTS, N_CORE, N_PATTERN, N_BRIDGE = 40, 20_000, 400, 300  # per area
NAMED = 2_000  # the first customers, suppliers, employees: present at every scale, named by questions


def schema() -> list[Table]:
    """Every table, referenced tables first."""
    t: list[Table] = []
    ref = lambda name, extra=(): Table(name, [(f"{_concept(name)}_id", "INTEGER"), (f"{_concept(name)}_code", "TEXT"),
                                               (f"{_concept(name)}_name", "TEXT"), *extra], (f"{_concept(name)}_id",))
    t += [ref("ref_region"), ref("ref_currency"),
          Table("ref_country", [("country_id", "INTEGER"), ("country_code", "TEXT"), ("country_name", "TEXT"),
                                ("region_id", "INTEGER"), ("currency_id", "INTEGER")], ("country_id",),
                {"region_id": "ref_region", "currency_id": "ref_currency"}),
          ref("ref_site_type"), ref("ref_product_category"), ref("ref_customer_segment"), ref("ref_supplier_tier"),
          ref("ref_employee_grade"),
          Table("site", [("site_id", "INTEGER"), ("site_name", "TEXT"), ("site_type_id", "INTEGER"),
                         ("country_id", "INTEGER"), ("opened_on", "TEXT")], ("site_id",),
                {"site_type_id": "ref_site_type", "country_id": "ref_country"}),
          Table("product", [("product_id", "INTEGER"), ("product_name", "TEXT"), ("product_category_id", "INTEGER"),
                            ("list_price", "REAL"), ("launched_on", "TEXT")], ("product_id",),
                {"product_category_id": "ref_product_category"}),
          Table("customer", [("customer_id", "INTEGER"), ("customer_name", "TEXT"), ("country_id", "INTEGER"),
                             ("customer_segment_id", "INTEGER"), ("credit_limit", "REAL"), ("customer_since", "TEXT")],
                ("customer_id",), {"country_id": "ref_country", "customer_segment_id": "ref_customer_segment"}),
          Table("supplier", [("supplier_id", "INTEGER"), ("supplier_name", "TEXT"), ("country_id", "INTEGER"),
                             ("supplier_tier_id", "INTEGER"), ("approved_on", "TEXT")], ("supplier_id",),
                {"country_id": "ref_country", "supplier_tier_id": "ref_supplier_tier"}),
          Table("employee", [("employee_id", "INTEGER"), ("first_name", "TEXT"), ("last_name", "TEXT"),
                             ("site_id", "INTEGER"), ("employee_grade_id", "INTEGER"), ("hired_on", "TEXT")],
                ("employee_id",), {"site_id": "site", "employee_grade_id": "ref_employee_grade"})]
    for a in AREAS:
        p = a.prefix
        t += [ref(f"ref_{p}_status"), ref(f"ref_{p}_priority"), ref(f"ref_{p}_category")]
        t += [ref(f"ref_{p}_{c}") for c in a.extra_refs]
        subject = f"{p}_{a.subject}"
        t.append(Table(subject, [(f"{a.subject}_id", "INTEGER"), (f"{a.subject}_name", "TEXT"), ("site_id", "INTEGER"),
                                 ("owner_employee_id", "INTEGER"), ("active_from", "TEXT")], (f"{a.subject}_id",),
                       {"site_id": "site", "owner_employee_id": "employee"}))
        core = f"{p}_{a.fact}"
        own = f"{a.entity}_id"
        refs = {own: a.entity, f"{p}_status_id": f"ref_{p}_status", f"{p}_category_id": f"ref_{p}_category",
                f"{p}_priority_id": f"ref_{p}_priority", f"{a.subject}_id": subject, "currency_id": "ref_currency"}
        if a.entity != "site":
            refs["site_id"] = "site"
        t.append(Table(core, [(f"{a.fact}_id", "INTEGER"), (own, "INTEGER"), *(
            (c, "INTEGER") for c in refs if c != own), (f"{a.fact}_date", "TEXT"), (a.amount, "REAL")],
            (f"{a.fact}_id",), refs))
        if p == "sls":
            t.append(Table("sls_order_line", [("order_line_id", "INTEGER"), ("order_id", "INTEGER"),
                                              ("product_id", "INTEGER"), ("quantity", "INTEGER"),
                                              ("unit_price", "REAL"), ("line_net_amount", "REAL")],
                           ("order_line_id",), {"order_id": "sls_order", "product_id": "product"}))
        extra = [f"ref_{p}_{c}" for c in a.extra_refs]
        for i, s in enumerate(a.subjects):
            for j, pattern in enumerate(PATTERNS):
                name = f"{p}_{s}_{pattern}"
                if name == core:
                    continue
                kind = extra[(i * len(PATTERNS) + j) % len(extra)]
                refs = {f"{a.subject}_id": subject, f"{_concept(kind)}_id": kind, "site_id": "site"}
                measure = {"budget": "budget_amount", "forecast": "forecast_amount", "adjustment": "adjusted_amount",
                           "snapshot_monthly": "closing_balance", "event_log": "event_count",
                           "audit": "findings_count"}[pattern]
                day = "month_start" if pattern in ("budget", "forecast", "snapshot_monthly") else "recorded_on"
                t.append(Table(name, [(f"{s}_{pattern}_id", "INTEGER"), *((c, "INTEGER") for c in refs),
                                      (day, "TEXT"), (measure, "REAL")], (f"{s}_{pattern}_id",), refs))
        # Bridges: many-to-many between the area's subject and two of its concepts.
        for other in (a.extra_refs[0], a.extra_refs[1], a.extra_refs[2]):
            t.append(Table(f"{p}_{a.subject}_{other}", [(f"{a.subject}_id", "INTEGER"), (f"{other}_id", "INTEGER"),
                                                         ("valid_from", "TEXT")],
                           (f"{a.subject}_id", f"{other}_id"), {f"{a.subject}_id": subject,
                                                               f"{other}_id": f"ref_{p}_{other}"}))
    return t


def _concept(ref_table: str) -> str:
    """ref_sls_payment_term -> sls_payment_term; ref_country -> country."""
    return ref_table[4:]


# -- the rows ---------------------------------------------------------------------------------


class Generator:
    def __init__(self, seed: int, scale: float) -> None:
        self.rng = random.Random(seed)
        self.scale = scale
        self.tables = schema()
        self.keys = {t.name: t.key[0] for t in self.tables}
        self.rows: dict[str, list[tuple]] = {t.name: [] for t in self.tables}
        self.ids: dict[str, list[int]] = {}
        self.labels: dict[str, dict[str, int]] = {}  # reference table -> label -> id

    def n(self, count: int) -> int:
        return max(NAMED, int(count * self.scale))

    def day(self) -> str:
        return (FIRST_DAY + timedelta(self.rng.randrange(DAYS))).isoformat()

    def keyed(self, count: int) -> list[int]:
        """Opaque keys: distinct, random, not in order."""
        return self.rng.sample(range(100_000, 100_000 + 20 * count), count)

    def reference(self, table: str, labels: tuple[str, ...]) -> None:
        ids = self.rng.sample(range(3, 997), len(labels))
        self.rows[table] = [(i, label.upper().replace(" ", "_")[:12], label) for i, label in zip(ids, labels)]
        self.ids[table] = ids
        self.labels[table] = dict(zip(labels, ids))

    def generate(self) -> None:
        rng = self.rng
        self.reference("ref_region", REGIONS)
        self.reference("ref_currency", CURRENCIES)
        regions, currencies = self.ids["ref_region"], self.ids["ref_currency"]
        ids = rng.sample(range(10, 999), len(COUNTRIES))
        self.rows["ref_country"] = [(i, name[:3].upper(), name, regions[k % len(regions)], currencies[k % len(currencies)])
                                    for k, (i, name) in enumerate(zip(ids, COUNTRIES))]
        self.ids["ref_country"] = ids
        self.labels["ref_country"] = dict(zip(COUNTRIES, ids))
        self.reference("ref_site_type", SITE_KINDS)
        self.reference("ref_product_category", tuple(w.split()[-1] + "s" for w in PRODUCT_WORDS))
        self.reference("ref_customer_segment", ("Enterprise", "Mid-Market", "Small Business", "Public Sector", "Distributor"))
        self.reference("ref_supplier_tier", ("Strategic", "Preferred", "Approved", "Probation"))
        self.reference("ref_employee_grade", ("Associate", "Specialist", "Senior Specialist", "Manager", "Director"))
        for a in AREAS:
            self.reference(f"ref_{a.prefix}_status", STATUSES)
            self.reference(f"ref_{a.prefix}_priority", PRIORITIES)
            self.reference(f"ref_{a.prefix}_category", a.category)
            for c in a.extra_refs:
                words = c.replace("_", " ").title()
                self.reference(f"ref_{a.prefix}_{c}", tuple(f"{g} {words}" for g in GENERIC_LABELS[:rng.randint(3, 8)]))
        self.entities()
        for a in AREAS:
            self.area(a)

    def entities(self) -> None:
        rng, r = self.rng, self.rows
        countries = self.ids["ref_country"]
        site_ids = self.keyed(N_SITES)
        r["site"] = [(s, f"{CITIES[k % len(CITIES)]} {SITE_KINDS[k % len(SITE_KINDS)]}" + (f" {k // 20 + 1}" if k >= 20 else ""),
                      self.ids["ref_site_type"][k % len(SITE_KINDS)], rng.choice(countries), self.day())
                     for k, s in enumerate(site_ids)]
        self.ids["site"] = site_ids
        product_ids = self.keyed(N_PRODUCTS)
        categories = self.ids["ref_product_category"]
        r["product"] = [(p, f"{PRODUCT_WORDS[k % len(PRODUCT_WORDS)]} {chr(65 + k // 260 % 26)}{k % 260:03d}",
                         categories[k % len(PRODUCT_WORDS)], round(rng.uniform(2, 900), 2), self.day())
                        for k, p in enumerate(product_ids)]
        self.ids["product"] = product_ids
        # A million distinct company names drawn from every combination of the word lists; the
        # first NAMED customers and suppliers (those questions name) the same at every scale.
        combos = len(NAME_A) * len(NAME_B) * len(TRADES) * len(FORMS)
        n_customers, n_suppliers = self.n(N_CUSTOMERS), self.n(N_SUPPLIERS)
        fixed = random.Random(SEED + 2).sample(range(combos), 2 * NAMED)
        taken = set(fixed)
        rest = [i for i in rng.sample(range(combos), n_customers + n_suppliers) if i not in taken]
        picks = [*fixed[:NAMED], *rest[:n_customers - NAMED], *fixed[NAMED:],
                 *rest[n_customers - NAMED:n_customers + n_suppliers - 2 * NAMED]]
        names = [self.company(i) for i in picks]
        customer_ids = self.keyed(n_customers)
        segments = self.ids["ref_customer_segment"]
        r["customer"] = [(c, names[k], countries[k % len(countries)], segments[k % len(segments)],
                          float(rng.randrange(5, 500) * 1000), self.day()) for k, c in enumerate(customer_ids)]
        self.ids["customer"] = customer_ids
        supplier_ids = self.keyed(self.n(N_SUPPLIERS))
        tiers = self.ids["ref_supplier_tier"]
        r["supplier"] = [(s, names[n_customers + k], countries[(k * 7) % len(countries)], tiers[k % len(tiers)],
                          self.day()) for k, s in enumerate(supplier_ids)]
        self.ids["supplier"] = supplier_ids
        employee_ids = self.keyed(self.n(N_EMPLOYEES))
        grades = self.ids["ref_employee_grade"]
        r["employee"] = [(e, FIRST_NAMES[k % len(FIRST_NAMES)], LAST_NAMES[(k // len(FIRST_NAMES)) % len(LAST_NAMES)],
                          site_ids[k % len(site_ids)], grades[k % len(grades)], self.day())
                         for k, e in enumerate(employee_ids)]
        self.ids["employee"] = employee_ids

    @staticmethod
    def company(i: int) -> str:
        i, form = divmod(i, len(FORMS))
        i, trade = divmod(i, len(TRADES))
        a, b = divmod(i, len(NAME_B))
        return f"{NAME_A[a % len(NAME_A)]}{NAME_B[b]} {TRADES[trade]} {FORMS[form]}"

    def area(self, a: Area) -> None:
        rng, r, p = self.rng, self.rows, a.prefix
        subject = f"{p}_{a.subject}"
        subject_ids = self.keyed(N_SUBJECTS)
        r[subject] = [(s, f"{a.subject.replace('_', ' ').title()} {chr(65 + k % 26)}{k // 26 + 1}",
                       rng.choice(self.ids["site"]), rng.choice(self.ids["employee"][:NAMED]), self.day())
                      for k, s in enumerate(subject_ids)]
        self.ids[subject] = subject_ids
        core = next(t for t in self.tables if t.name == f"{p}_{a.fact}")
        count = self.n(N_ORDERS) if p == "sls" else N_CORE
        # The named rows (the first NAMED of the entity) hold most of the facts a question asks about.
        entity_ids = self.ids[a.entity]
        named = entity_ids[:min(NAMED, len(entity_ids))]
        fact_ids = self.keyed(count)
        rows = []
        for k, f in enumerate(fact_ids):
            own = named[k % len(named)] if k % 3 == 0 else rng.choice(entity_ids)
            values = []
            for column, _ in core.columns[1:-2]:
                target = core.refs[column]
                values.append(own if target == a.entity else rng.choice(self.ids[target]))
            rows.append((f, *values, self.day(), round(rng.lognormvariate(6, 1.1), 2)))
        r[core.name] = rows
        self.ids[core.name] = fact_ids
        if p == "sls":
            products = self.ids["product"]
            lines, line_id = [], 1_000_000
            for f in fact_ids:
                for _ in range(rng.randint(1, 2 * LINES_PER_ORDER - 1)):
                    quantity, price = rng.randint(1, 40), round(rng.uniform(2, 400), 2)
                    line_id += rng.randint(1, 3)
                    lines.append((line_id, f, rng.choice(products), quantity, price, round(quantity * price * 0.97, 2)))
            r["sls_order_line"] = lines
        for t in self.tables:
            if not t.name.startswith(f"{p}_") or t.name in (subject, core.name, "sls_order_line"):
                continue
            n = N_BRIDGE if len(t.key) > 1 else N_PATTERN
            if len(t.key) > 1:
                pairs = {(rng.choice(subject_ids), rng.choice(self.ids[t.refs[t.key[1]]])) for _ in range(n)}
                r[t.name] = [(s, o, self.day()) for s, o in sorted(pairs)]
                continue
            keys = self.keyed(n)
            r[t.name] = [(k, *(rng.choice(self.ids[t.refs[c]]) for c, _ in t.columns[1:-2]),
                          self.day()[:8] + "01" if t.columns[-2][0] == "month_start" else self.day(),
                          round(rng.lognormvariate(7, 1.0), 2) if "amount" in t.columns[-1][0]
                          or "balance" in t.columns[-1][0] else float(rng.randint(0, 40)))
                         for k in keys]


def write_sqlite(path: str, gen: Generator) -> None:
    if os.path.exists(path):
        os.remove(path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("BEGIN")
        for table in gen.tables:
            conn.execute(table.ddl(gen.keys))
            rows = gen.rows[table.name]
            if rows:
                conn.executemany(f"INSERT INTO {table.name} VALUES ({', '.join('?' * len(rows[0]))})", rows)
        conn.execute("COMMIT")
        conn.execute("PRAGMA foreign_keys = ON")
        problems = conn.execute("PRAGMA foreign_key_check").fetchmany(5)
        if problems:
            raise RuntimeError(f"foreign keys violated: {problems}")
    finally:
        conn.close()


# -- the questions ----------------------------------------------------------------------------

_ENTITY = {  # the shared dimension -> (its name expression over alias e, how a question calls one)
    "customer": ("e.customer_name", "customer"), "supplier": ("e.supplier_name", "supplier"),
    "product": ("e.product_name", "product"), "employee": ("e.first_name || ' ' || e.last_name", "employee"),
    "site": ("e.site_name", "site"),
}


def _year(year: int, column: str) -> str:
    return f"{column} >= '{year}-01-01' AND {column} < '{year + 1}-01-01'"


def candidates(gen: Generator) -> list[dict]:
    """Questions by template, several per area and template, in a fixed order; `pick` keeps
    the first of each whose gold answers something."""
    rng = random.Random(SEED + 1)
    found: list[dict] = []
    for k, a in enumerate(AREAS):
        p, core, f = a.prefix, f"{a.prefix}_{a.fact}", "f"
        status, date_col = f"ref_{p}_status", f"f.{a.fact}_date"
        name_expr, kind = _ENTITY[a.entity]
        join_status = f"JOIN {status} AS s ON f.{p}_status_id = s.{p}_status_id"
        for st in ("Closed", "Open", "Cancelled"):
            found.append(dict(template="S1", area=p, category="simple",
                              question=f"How many {a.facts} are {st.lower()}?",
                              gold=f"SELECT COUNT(*) FROM {core} AS f {join_status} WHERE s.{p}_status_name = '{st}'"))
        for year in (2023, 2024, 2022):
            found.append(dict(template="S2", area=p, category="simple",
                              question=f"What was the total {a.amount_words} of {a.facts} in {year}?",
                              gold=f"SELECT SUM(f.{a.amount}) FROM {core} AS f WHERE {_year(year, date_col)}"))
        named = gen.rows[a.entity][:50]
        for row in rng.sample(named, 5):
            label = f"{row[1]} {row[2]}" if a.entity == "employee" else row[1]
            found.append(dict(template="M1", area=p, category="moderate",
                              question=f"What is the total {a.amount_words} of all {a.facts} of the {kind} {label}?",
                              gold=f"SELECT SUM(f.{a.amount}) FROM {core} AS f JOIN {a.entity} AS e ON "
                                   f"f.{a.entity}_id = e.{a.entity}_id WHERE {name_expr} = '{label}'"))
        for cat in a.category[:3]:
            for site in rng.sample(gen.rows["site"][:20], 2):
                found.append(dict(template="M2", area=p, category="moderate",
                                  question=f"How many {a.facts} in the category '{cat}' were recorded at {site[1]}?",
                                  gold=f"SELECT COUNT(*) FROM {core} AS f JOIN ref_{p}_category AS c ON "
                                       f"f.{p}_category_id = c.{p}_category_id JOIN site AS si ON f.site_id = si.site_id WHERE "
                                       f"c.{p}_category_name = '{cat}' AND si.site_name = '{site[1]}'"))
        for country in ("Germany", "France", "United States", "Japan"):
            for year in (2023, 2024):
                if a.entity in ("customer", "supplier", "site"):  # the rows hold their country
                    where_country = "JOIN ref_country AS co ON e.country_id = co.country_id"
                    words = f"Which 3 {kind}s in {country}"
                else:
                    where_country = ("JOIN site AS si ON f.site_id = si.site_id "
                                     "JOIN ref_country AS co ON si.country_id = co.country_id")
                    words = f"Which 3 {kind}s, at sites in {country},"
                found.append(dict(
                    template="C1", area=p, category="complex",
                    question=f"{words} had the highest total {a.amount_words} of closed {a.facts} in {year}?",
                    gold=f"SELECT {name_expr} AS name, SUM(f.{a.amount}) AS total FROM {core} AS f JOIN {a.entity} AS e "
                         f"ON f.{a.entity}_id = e.{a.entity}_id {where_country} {join_status} WHERE "
                         f"co.country_name = '{country}' AND s.{p}_status_name = 'Closed' AND {_year(year, date_col)} "
                         f"GROUP BY e.{a.entity}_id, {name_expr} ORDER BY total DESC, name LIMIT 3"))
    for category, country, year in (("Bearings", "Germany", 2024), ("Pumps", "Italy", 2023),
                                    ("Sensors", "Sweden", 2024), ("Helmets", "Poland", 2023)):
        found.append(dict(
            template="C2", area="sls", category="complex",
            question=f"What was the total line net amount of sales order lines for {category.lower()} ordered by "
                     f"customers in {country} in {year}?",
            gold="SELECT SUM(l.line_net_amount) FROM sls_order_line AS l JOIN sls_order AS f ON l.order_id = f.order_id "
                 "JOIN product AS pr ON l.product_id = pr.product_id JOIN ref_product_category AS pc ON "
                 "pr.product_category_id = pc.product_category_id JOIN customer AS e ON f.customer_id = e.customer_id "
                 f"JOIN ref_country AS co ON e.country_id = co.country_id WHERE pc.product_category_name = '{category}' "
                 f"AND co.country_name = '{country}' AND {_year(year, 'f.order_date')}"))
    return found


# How many questions of each template, and the areas they take turns over.
QUOTAS = {"S1": 7, "S2": 7, "M1": 7, "M2": 7, "C1": 10, "C2": 2}


def pick(path: str, gen: Generator) -> list[dict]:
    """40 questions: per template its quota, the areas taking turns (each template starting
    where the last left off), each the area's next candidate whose gold returns rows that are
    not all empty, NULL or zero."""
    conn = sqlite3.connect(path)

    def answers(gold: str) -> bool:
        rows = conn.execute(gold).fetchall()
        return any(v not in (None, 0, 0.0) for row in rows for v in row)

    chosen: list[dict] = []
    start = 0
    for template, quota in QUOTAS.items():
        pool = [c for c in candidates(gen) if c["template"] == template]
        areas = list(dict.fromkeys(c["area"] for c in pool))
        areas = areas[start % len(areas):] + areas[:start % len(areas)]
        start += quota
        taken, turn = 0, 0
        while taken < quota and any(pool):
            area = areas[turn % len(areas)]
            turn += 1
            for i, c in enumerate(pool):
                if c is not None and c["area"] == area:
                    pool[i] = None
                    if answers(c["gold"]):
                        chosen.append(c)
                        taken += 1
                        break
    conn.close()
    return [{"id": f"warehouse/{i}", "db": "warehouse.sqlite", "question": c["question"], "gold_sql": c["gold"],
             "category": c["category"]} for i, c in enumerate(chosen, 1)]


def to_postgres(path: str, admin_url: str, database: str = "warehouse") -> None:
    """Copy a built warehouse into a new PostgreSQL database (dropped first if it exists) with
    the same tables, keys and rows, and a login role `warehouse_reader` that may only read it."""
    import psycopg

    source = sqlite3.connect(path)
    tables = schema()
    keys = {t.name: t.key[0] for t in tables}
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{database}"')
        if not admin.execute("SELECT 1 FROM pg_roles WHERE rolname = 'warehouse_reader'").fetchone():
            admin.execute("CREATE ROLE warehouse_reader LOGIN")
    with psycopg.connect(admin_url.rsplit("/", 1)[0] + f"/{database}", autocommit=True) as conn:
        for table in tables:  # referenced tables first, as schema() lists them
            conn.execute(table.ddl(keys).replace(" REAL", " DOUBLE PRECISION"))
            with conn.cursor().copy(f"COPY {table.name} FROM STDIN") as copy:
                for row in source.execute(f"SELECT * FROM {table.name}"):
                    copy.write_row(row)
        conn.execute(f'REVOKE ALL ON DATABASE "{database}" FROM PUBLIC')
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute(f'GRANT CONNECT ON DATABASE "{database}" TO warehouse_reader')
        conn.execute("GRANT USAGE ON SCHEMA public TO warehouse_reader")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO warehouse_reader")
    source.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="the SQLite file to write")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--questions", help="also (re)write the question set to this JSONL file")
    parser.add_argument("--postgres", metavar="ADMIN_URL",
                        help="copy OUT (already built) into the database 'warehouse' of this PostgreSQL server")
    args = parser.parse_args(argv[1:])
    if args.postgres:
        start = time.perf_counter()
        to_postgres(args.out, args.postgres)
        print(f"copied {args.out} into PostgreSQL database 'warehouse' in {time.perf_counter() - start:.0f} s; "
              "read it as postgresql://warehouse_reader@HOST/warehouse")
        return 0
    start = time.perf_counter()
    gen = Generator(args.seed, args.scale)
    gen.generate()
    write_sqlite(args.out, gen)
    biggest = sorted(gen.rows, key=lambda t: -len(gen.rows[t]))[:3]
    print(f"wrote {args.out}: {len(gen.tables)} tables, " + ", ".join(f"{t} {len(gen.rows[t]):,}" for t in biggest)
          + f" rows; {os.path.getsize(args.out) / 2**20:.0f} MiB in {time.perf_counter() - start:.0f} s")
    if args.questions:
        items = pick(args.out, gen)
        with open(args.questions, "w") as out:
            out.writelines(json.dumps(item) + "\n" for item in items)
        print(f"wrote {args.questions}: {len(items)} questions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
