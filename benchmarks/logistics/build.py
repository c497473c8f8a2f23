"""Deterministic generator of the logistics benchmark database (SQLite).

A fictitious freight-forwarding company, Meridian Cargo Group: its customers book shipments
by road, rail, sea and air between seaports, airports, rail terminals and warehouses; each
shipment names its parties (shipper, consignee, notify party), records its weight in a per-row
unit of weight and its declared value in a currency, and is billed in the customer's currency.
Daily exchange rates to the US dollar exist for the weekdays of 2023 only.

Like groundsql's demo database, facts are stored against opaque integer keys (reference ids are
small and non-sequential, entity and fact ids random 4-7 digit numbers), so every word of a
question has to be grounded in a lookup table. Everything is fictitious but consistent: only
delivered shipments have a delivery date, never before pickup; cancelled shipments were never
picked up or billed; invoice amounts follow the weight, the mode and the service level.

Standard library only; all randomness flows from one `random.Random(SEED)`, so the same seed
always gives the same content.

    python benchmarks/logistics/build.py OUT.sqlite
"""

from __future__ import annotations

import math
import os
import random
import sqlite3
import sys
from datetime import date, timedelta

SEED = 2024
AS_OF = date(2024, 6, 30)  # the data set's "today": nothing happens later
FIRST_BOOKING = date(2022, 1, 3)
RATE_YEAR = 2023

# iso -> (currency_id, name, rate_to_usd on 2023-01-02, on 2023-12-29, daily volatility)
CURRENCIES = {
    "USD": (112, "US Dollar", 1.0, 1.0, 0.0),
    "EUR": (37, "Euro", 1.0665, 1.1039, 0.0040),
    "GBP": (58, "Pound Sterling", 1.2085, 1.2730, 0.0045),
    "CAD": (23, "Canadian Dollar", 0.7380, 0.7551, 0.0030),
    "MXN": (131, "Mexican Peso", 0.05130, 0.05890, 0.0060),
    "PLN": (86, "Polish Zloty", 0.22790, 0.25420, 0.0050),
    "CNY": (14, "Chinese Yuan Renminbi", 0.14500, 0.14100, 0.0020),
    "JPY": (69, "Japanese Yen", 0.007618, 0.007092, 0.0055),
    "SGD": (95, "Singapore Dollar", 0.7458, 0.7576, 0.0020),
    "AUD": (8, "Australian Dollar", 0.6810, 0.6819, 0.0060),
    "AED": (41, "UAE Dirham", 0.27229, 0.27229, 0.0001),
}

# iso -> (country_id, name, region, currency)
COUNTRIES = {
    "US": (303, "United States", "North America", "USD"),
    "CA": (118, "Canada", "North America", "CAD"),
    "MX": (247, "Mexico", "North America", "MXN"),
    "GB": (526, "United Kingdom", "Europe", "GBP"),
    "DE": (412, "Germany", "Europe", "EUR"),
    "NL": (433, "Netherlands", "Europe", "EUR"),
    "FR": (405, "France", "Europe", "EUR"),
    "PL": (461, "Poland", "Europe", "PLN"),
    "CN": (702, "China", "Asia-Pacific", "CNY"),
    "JP": (719, "Japan", "Asia-Pacific", "JPY"),
    "SG": (754, "Singapore", "Asia-Pacific", "SGD"),
    "AU": (836, "Australia", "Asia-Pacific", "AUD"),
    "AE": (915, "United Arab Emirates", "Middle East", "AED"),
}

# code -> (unit_id, name, kilograms per unit)
WEIGHT_UNITS = {"kg": (4, "Kilogram", 1.0), "t": (9, "Tonne", 1000.0), "lb": (17, "Pound", 0.45359237)}

# name -> (mode_id, typical transit days)
MODES = {"Road": (3, 3), "Rail": (7, 12), "Sea": (12, 30), "Air": (15, 3)}

STATUSES = {"Booked": 21, "In Transit": 24, "Held at Customs": 26, "Delivered": 30, "Cancelled": 38}

# name -> (service_level_id, transit-time factor, price factor)
SERVICE_LEVELS = {"Economy": (5, 1.3, 0.85), "Standard": (6, 1.0, 1.0), "Express": (8, 0.7, 1.45)}

LOCATION_TYPES = {"Seaport": 51, "Airport": 52, "Rail Terminal": 55, "Warehouse": 58,
                  "Distribution Centre": 59}

# name -> (cargo_type_id, is_hazardous, requires_temperature_control)
CARGO_TYPES = {
    "General Cargo": (101, 0, 0), "Refrigerated": (104, 0, 1), "Dangerous Goods": (107, 1, 0),
    "High Value": (109, 0, 0), "Oversized": (113, 0, 0), "Bulk": (116, 0, 0),
}

EU_CUSTOMS_UNION = {"DE", "NL", "FR", "PL"}  # no customs between them

ROLES = {"Shipper": 2, "Consignee": 3, "Notify Party": 5}

CHARGE_TYPES = {"Base Freight": 201, "Fuel Surcharge": 203, "Customs Clearance": 207,
                "Cargo Insurance": 211, "Special Handling": 214, "Storage": 218, "Demurrage": 222}

# (name, type, country, code)
LOCATIONS = [
    ("Port of Rotterdam", "Seaport", "NL", "NLRTM"),
    ("Port of Hamburg", "Seaport", "DE", "DEHAM"),
    ("Port of Felixstowe", "Seaport", "GB", "GBFXT"),
    ("Port of Le Havre", "Seaport", "FR", "FRLEH"),
    ("Port of Gdansk", "Seaport", "PL", "PLGDN"),
    ("Port of Los Angeles", "Seaport", "US", "USLAX"),
    ("Port of New York and New Jersey", "Seaport", "US", "USNYC"),
    ("Port of Savannah", "Seaport", "US", "USSAV"),
    ("Port of Vancouver", "Seaport", "CA", "CAVAN"),
    ("Port of Manzanillo", "Seaport", "MX", "MXZLO"),
    ("Port of Shanghai", "Seaport", "CN", "CNSHA"),
    ("Port of Shenzhen", "Seaport", "CN", "CNSZX"),
    ("Port of Singapore", "Seaport", "SG", "SGSIN"),
    ("Port of Yokohama", "Seaport", "JP", "JPYOK"),
    ("Port of Melbourne", "Seaport", "AU", "AUMEL"),
    ("Jebel Ali Port", "Seaport", "AE", "AEJEA"),
    ("Frankfurt Air Cargo Centre", "Airport", "DE", "FRA"),
    ("Heathrow Cargo Terminal", "Airport", "GB", "LHR"),
    ("Schiphol Cargo Terminal", "Airport", "NL", "AMS"),
    ("Paris-Charles de Gaulle Cargo", "Airport", "FR", "CDG"),
    ("Chicago O'Hare Cargo", "Airport", "US", "ORD"),
    ("Memphis Air Cargo Hub", "Airport", "US", "MEM"),
    ("Toronto Pearson Cargo", "Airport", "CA", "YYZ"),
    ("Mexico City Air Cargo", "Airport", "MX", "MEX"),
    ("Shanghai Pudong Cargo", "Airport", "CN", "PVG"),
    ("Singapore Changi Cargo", "Airport", "SG", "SIN"),
    ("Tokyo Narita Cargo", "Airport", "JP", "NRT"),
    ("Sydney Air Cargo", "Airport", "AU", "SYD"),
    ("Dubai World Central Cargo", "Airport", "AE", "DWC"),
    ("Duisburg Intermodal Terminal", "Rail Terminal", "DE", "DEDUI"),
    ("Malaszewicze Rail Terminal", "Rail Terminal", "PL", "PLMAL"),
    ("Chongqing Rail Terminal", "Rail Terminal", "CN", "CNCKG"),
    ("Xi'an Rail Port", "Rail Terminal", "CN", "CNXIY"),
    ("Chicago Intermodal Terminal", "Rail Terminal", "US", "USCHI"),
    ("Kansas City Intermodal Terminal", "Rail Terminal", "US", "USMKC"),
    ("Montreal Rail Terminal", "Rail Terminal", "CA", "CAMTR"),
    ("Tilbury Warehouse", "Warehouse", "GB", "GBTIL"),
    ("Lyon Warehouse", "Warehouse", "FR", "FRLYS"),
    ("Poznan Warehouse", "Warehouse", "PL", "PLPOZ"),
    ("Newark Warehouse", "Warehouse", "US", "USEWR"),
    ("Monterrey Warehouse", "Warehouse", "MX", "MXMTY"),
    ("Toronto Warehouse", "Warehouse", "CA", "CATOR"),
    ("Venlo Distribution Centre", "Distribution Centre", "NL", "NLVEN"),
    ("Leipzig Distribution Centre", "Distribution Centre", "DE", "DELEJ"),
    ("Dallas Distribution Centre", "Distribution Centre", "US", "USDFW"),
    ("Atlanta Distribution Centre", "Distribution Centre", "US", "USATL"),
]

# (name, mode, country, SCAC-like code, on-time propensity)
CARRIERS = [
    ("Bluewake Shipping Lines", "Sea", "SG", "BWSL", 0.70),
    ("Northgate Ocean Carriers", "Sea", "DE", "NGOC", 0.78),
    ("Pacific Meridian Line", "Sea", "CN", "PMLN", 0.64),
    ("Saltmarsh Container Line", "Sea", "GB", "SMCL", 0.82),
    ("Coralbay Maritime", "Sea", "AU", "CBMA", 0.72),
    ("Atlas Reefer Lines", "Sea", "NL", "ATRL", 0.75),
    ("Skybridge Air Cargo", "Air", "US", "SBAC", 0.90),
    ("Aerolink Freight", "Air", "DE", "ALFR", 0.86),
    ("Falcon Crest Airfreight", "Air", "AE", "FCAF", 0.93),
    ("Cirrus Cargo Airways", "Air", "SG", "CCAW", 0.84),
    ("Northern Lights Air Logistics", "Air", "CA", "NLAL", 0.80),
    ("Ironvale Rail Freight", "Rail", "DE", "IVRF", 0.74),
    ("Silk Corridor Rail", "Rail", "CN", "SCRL", 0.61),
    ("Prairie Line Railroad", "Rail", "US", "PLRR", 0.79),
    ("Vistula Rail Cargo", "Rail", "PL", "VRCG", 0.70),
    ("Laurentian Rail Services", "Rail", "CA", "LRSV", 0.83),
    ("Kestrel Road Transport", "Road", "GB", "KSRT", 0.88),
    ("Blackthorn Haulage", "Road", "GB", "BTHL", 0.81),
    ("Rheinland Spedition", "Road", "DE", "RHSP", 0.91),
    ("Polder Trucking", "Road", "NL", "PLTR", 0.86),
    ("Loire Express Routier", "Road", "FR", "LERT", 0.77),
    ("Baltic Road Lines", "Road", "PL", "BRLN", 0.83),
    ("Lone Star Freight Lines", "Road", "US", "LSFL", 0.85),
    ("Great Lakes Carriers", "Road", "US", "GLCR", 0.89),
    ("Sierra Madre Transportes", "Road", "MX", "SMTR", 0.73),
]

CUSTOMER_STEMS = [
    "Harrow", "Ashby", "Brightwater", "Calder", "Dunmore", "Elmstead", "Fairholt", "Glenrock",
    "Hawthorne", "Ivybridge", "Juniper", "Kingsley", "Larkfield", "Marlow", "Northcote",
    "Oakhurst", "Pembury", "Redfern", "Stanwick", "Thornbury", "Upton", "Westbrook", "Yardley",
    "Alderney", "Birchwood", "Copperfield", "Dalton", "Everly", "Foxley", "Granby", "Holloway",
    "Inglewood", "Jarrow", "Kelso", "Lindley", "Moorgate", "Newland", "Orchard", "Prescott",
    "Ravenscroft", "Selby", "Tamworth", "Ullswater", "Verity", "Whitcombe", "Amberly", "Bramley",
    "Crestwood", "Denholm", "Eastleigh", "Fernhill", "Goldcrest", "Highmoor", "Kirkwood",
    "Lowther", "Millbrook", "Norwood", "Oldfield", "Pinewood", "Rosedale", "Silverton",
    "Tidewell", "Wexford", "Ashgrove", "Blackmore", "Castleton", "Driftwood", "Evergreen",
    "Falconer", "Greystone", "Hollybrook", "Ironside", "Kingfisher", "Lambourne", "Nettleton",
    "Overton", "Penrose", "Stonegate", "Tallis", "Weybridge", "Quenby", "Rainford", "Sutherby",
]

# industry -> (name words, usual cargo types)
INDUSTRIES = {
    "Retail": (["Home Stores", "Retail", "Homeware", "Trading"], ["General Cargo"]),
    "Apparel": (["Textiles", "Apparel", "Clothing"], ["General Cargo"]),
    "Automotive": (["Motors", "Auto Parts", "Automotive"], ["General Cargo", "Oversized"]),
    "Electronics": (["Electronics", "Devices", "Components"], ["High Value", "General Cargo"]),
    "Food & Beverage": (["Foods", "Beverages", "Fresh Produce"], ["Refrigerated", "General Cargo"]),
    "Pharmaceuticals": (["Pharma", "Life Sciences", "Healthcare"], ["Refrigerated", "High Value"]),
    "Chemicals": (["Chemicals", "Coatings", "Polymers"], ["Dangerous Goods", "Bulk"]),
    "Industrial Machinery": (["Machinery", "Engineering", "Industrial"], ["Oversized", "General Cargo"]),
    "Freight Forwarding": (["Freightways", "Forwarding", "Logistics"], ["General Cargo", "Bulk"]),
}

LEGAL_SUFFIX = {
    "US": ["Inc.", "LLC", "Corp."], "CA": ["Ltd.", "Inc."], "MX": ["S.A. de C.V."],
    "GB": ["Ltd", "plc"], "DE": ["GmbH", "AG"], "NL": ["B.V."], "FR": ["S.A.S.", "S.A."],
    "PL": ["Sp. z o.o.", "S.A."], "CN": ["Co., Ltd."], "JP": ["K.K."], "SG": ["Pte. Ltd."],
    "AU": ["Pty Ltd"], "AE": ["FZE", "LLC"],
}
CUSTOMER_COUNTRY_WEIGHTS = {"US": 16, "GB": 11, "DE": 11, "NL": 7, "FR": 6, "PL": 5, "CA": 5,
                            "MX": 4, "CN": 6, "JP": 3, "SG": 3, "AU": 2, "AE": 2}

SCHEMA = """
CREATE TABLE ref_currency (
    currency_id INTEGER PRIMARY KEY,
    iso_code TEXT NOT NULL UNIQUE,
    currency_name TEXT NOT NULL UNIQUE
);
CREATE TABLE ref_country (
    country_id INTEGER PRIMARY KEY,
    iso_code TEXT NOT NULL UNIQUE,
    country_name TEXT NOT NULL UNIQUE,
    region TEXT NOT NULL,
    currency_id INTEGER NOT NULL,
    FOREIGN KEY (currency_id) REFERENCES ref_currency (currency_id)
);
CREATE TABLE ref_unit_of_weight (
    unit_id INTEGER PRIMARY KEY,
    unit_code TEXT NOT NULL UNIQUE,
    unit_name TEXT NOT NULL UNIQUE,
    kg_factor REAL NOT NULL CHECK (kg_factor > 0)
);
CREATE TABLE ref_transport_mode (
    mode_id INTEGER PRIMARY KEY,
    mode_name TEXT NOT NULL UNIQUE
);
CREATE TABLE ref_shipment_status (
    status_id INTEGER PRIMARY KEY,
    status_name TEXT NOT NULL UNIQUE
);
CREATE TABLE ref_service_level (
    service_level_id INTEGER PRIMARY KEY,
    service_level_name TEXT NOT NULL UNIQUE
);
CREATE TABLE ref_location_type (
    location_type_id INTEGER PRIMARY KEY,
    location_type_name TEXT NOT NULL UNIQUE
);
CREATE TABLE ref_cargo_type (
    cargo_type_id INTEGER PRIMARY KEY,
    cargo_type_name TEXT NOT NULL UNIQUE,
    is_hazardous INTEGER NOT NULL CHECK (is_hazardous IN (0, 1)),
    requires_temperature_control INTEGER NOT NULL CHECK (requires_temperature_control IN (0, 1))
);
CREATE TABLE ref_party_role (
    role_id INTEGER PRIMARY KEY,
    role_name TEXT NOT NULL UNIQUE
);
CREATE TABLE ref_charge_type (
    charge_type_id INTEGER PRIMARY KEY,
    charge_type_name TEXT NOT NULL UNIQUE
);
CREATE TABLE location (
    location_id INTEGER PRIMARY KEY,
    location_name TEXT NOT NULL UNIQUE,
    location_code TEXT NOT NULL UNIQUE,
    location_type_id INTEGER NOT NULL,
    country_id INTEGER NOT NULL,
    FOREIGN KEY (location_type_id) REFERENCES ref_location_type (location_type_id),
    FOREIGN KEY (country_id) REFERENCES ref_country (country_id)
);
CREATE TABLE customer (
    customer_id INTEGER PRIMARY KEY,
    legal_name TEXT NOT NULL UNIQUE,
    industry TEXT NOT NULL,
    country_id INTEGER NOT NULL,
    billing_currency_id INTEGER NOT NULL,
    customer_since DATE NOT NULL,
    credit_limit_usd INTEGER NOT NULL,
    FOREIGN KEY (country_id) REFERENCES ref_country (country_id),
    FOREIGN KEY (billing_currency_id) REFERENCES ref_currency (currency_id)
);
CREATE TABLE carrier (
    carrier_id INTEGER PRIMARY KEY,
    carrier_name TEXT NOT NULL UNIQUE,
    scac_code TEXT NOT NULL UNIQUE,
    mode_id INTEGER NOT NULL,
    country_id INTEGER NOT NULL,
    FOREIGN KEY (mode_id) REFERENCES ref_transport_mode (mode_id),
    FOREIGN KEY (country_id) REFERENCES ref_country (country_id)
);
CREATE TABLE shipment (
    shipment_id INTEGER PRIMARY KEY,
    tracking_number TEXT NOT NULL UNIQUE,
    customer_id INTEGER NOT NULL,
    carrier_id INTEGER NOT NULL,
    mode_id INTEGER NOT NULL,
    service_level_id INTEGER NOT NULL,
    cargo_type_id INTEGER NOT NULL,
    status_id INTEGER NOT NULL,
    origin_location_id INTEGER NOT NULL,
    destination_location_id INTEGER NOT NULL,
    booked_date DATE NOT NULL,
    pickup_date DATE CHECK (pickup_date IS NULL OR pickup_date >= booked_date),
    promised_date DATE NOT NULL CHECK (promised_date > booked_date),
    delivered_date DATE CHECK (delivered_date IS NULL OR delivered_date >= pickup_date),
    weight REAL NOT NULL CHECK (weight > 0),
    weight_unit_id INTEGER NOT NULL,
    declared_value REAL,
    declared_currency_id INTEGER,
    CHECK (origin_location_id <> destination_location_id),
    FOREIGN KEY (customer_id) REFERENCES customer (customer_id),
    FOREIGN KEY (carrier_id) REFERENCES carrier (carrier_id),
    FOREIGN KEY (mode_id) REFERENCES ref_transport_mode (mode_id),
    FOREIGN KEY (service_level_id) REFERENCES ref_service_level (service_level_id),
    FOREIGN KEY (cargo_type_id) REFERENCES ref_cargo_type (cargo_type_id),
    FOREIGN KEY (status_id) REFERENCES ref_shipment_status (status_id),
    FOREIGN KEY (origin_location_id) REFERENCES location (location_id),
    FOREIGN KEY (destination_location_id) REFERENCES location (location_id),
    FOREIGN KEY (weight_unit_id) REFERENCES ref_unit_of_weight (unit_id),
    FOREIGN KEY (declared_currency_id) REFERENCES ref_currency (currency_id)
);
CREATE TABLE shipment_party (
    shipment_id INTEGER NOT NULL,
    customer_id INTEGER NOT NULL,
    role_id INTEGER NOT NULL,
    PRIMARY KEY (shipment_id, role_id),
    FOREIGN KEY (shipment_id) REFERENCES shipment (shipment_id),
    FOREIGN KEY (customer_id) REFERENCES customer (customer_id),
    FOREIGN KEY (role_id) REFERENCES ref_party_role (role_id)
);
CREATE TABLE invoice (
    invoice_id INTEGER PRIMARY KEY,
    invoice_number TEXT NOT NULL UNIQUE,
    shipment_id INTEGER NOT NULL,
    customer_id INTEGER NOT NULL,
    invoice_date DATE NOT NULL,
    due_date DATE NOT NULL CHECK (due_date > invoice_date),
    currency_id INTEGER NOT NULL,
    paid_date DATE CHECK (paid_date IS NULL OR paid_date >= invoice_date),
    FOREIGN KEY (shipment_id) REFERENCES shipment (shipment_id),
    FOREIGN KEY (customer_id) REFERENCES customer (customer_id),
    FOREIGN KEY (currency_id) REFERENCES ref_currency (currency_id)
);
CREATE TABLE invoice_line (
    invoice_id INTEGER NOT NULL,
    line_number INTEGER NOT NULL,
    charge_type_id INTEGER NOT NULL,
    amount REAL NOT NULL CHECK (amount > 0),
    PRIMARY KEY (invoice_id, line_number),
    FOREIGN KEY (invoice_id) REFERENCES invoice (invoice_id),
    FOREIGN KEY (charge_type_id) REFERENCES ref_charge_type (charge_type_id)
);
CREATE TABLE exchange_rate (
    currency_id INTEGER NOT NULL,
    rate_date DATE NOT NULL,
    rate_to_usd REAL NOT NULL CHECK (rate_to_usd > 0),
    PRIMARY KEY (currency_id, rate_date),
    FOREIGN KEY (currency_id) REFERENCES ref_currency (currency_id)
);
CREATE INDEX ix_shipment_customer ON shipment (customer_id);
CREATE INDEX ix_shipment_carrier ON shipment (carrier_id);
CREATE INDEX ix_shipment_booked ON shipment (booked_date);
CREATE INDEX ix_party_customer ON shipment_party (customer_id);
CREATE INDEX ix_invoice_shipment ON invoice (shipment_id);
CREATE INDEX ix_invoice_customer ON invoice (customer_id);
"""

TABLE_ORDER = [
    "ref_currency", "ref_country", "ref_unit_of_weight", "ref_transport_mode",
    "ref_shipment_status", "ref_service_level", "ref_location_type", "ref_cargo_type",
    "ref_party_role", "ref_charge_type", "location", "customer", "carrier", "shipment",
    "shipment_party", "invoice", "invoice_line", "exchange_rate",
]


def _sig(x: float, digits: int = 6) -> float:
    return float(f"{x:.{digits}g}")


class Generator:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.used_ids: set[int] = set()
        self.rows: dict[str, list[tuple]] = {t: [] for t in TABLE_ORDER}

    def new_id(self, lo: int, hi: int) -> int:
        while True:
            value = self.rng.randint(lo, hi)
            if value not in self.used_ids:
                self.used_ids.add(value)
                return value

    # -- reference tables --------------------------------------------------------------------

    def reference(self) -> None:
        r = self.rows
        r["ref_currency"] += [(cid, iso, name) for iso, (cid, name, *_x) in CURRENCIES.items()]
        r["ref_country"] += [(cid, iso, name, region, CURRENCIES[cur][0])
                             for iso, (cid, name, region, cur) in COUNTRIES.items()]
        r["ref_unit_of_weight"] += [(uid, code, name, f) for code, (uid, name, f) in WEIGHT_UNITS.items()]
        r["ref_transport_mode"] += [(mid, name) for name, (mid, _d) in MODES.items()]
        r["ref_shipment_status"] += [(sid, name) for name, sid in STATUSES.items()]
        r["ref_service_level"] += [(sid, name) for name, (sid, *_x) in SERVICE_LEVELS.items()]
        r["ref_location_type"] += [(tid, name) for name, tid in LOCATION_TYPES.items()]
        r["ref_cargo_type"] += [(cid, name, h, t) for name, (cid, h, t) in CARGO_TYPES.items()]
        r["ref_party_role"] += [(rid, name) for name, rid in ROLES.items()]
        r["ref_charge_type"] += [(cid, name) for name, cid in CHARGE_TYPES.items()]

    # -- exchange rates (weekdays of 2023) ---------------------------------------------------

    def exchange_rates(self) -> None:
        rng = self.rng
        days = [d for d in (date(RATE_YEAR, 1, 1) + timedelta(i) for i in range(365)) if d.weekday() < 5]
        n = len(days) - 1
        self.fx: dict[str, dict[date, float]] = {}
        for iso, (cid, _name, first, last, vol) in CURRENCIES.items():
            walk = [0.0]
            for _ in range(n):
                walk.append(walk[-1] + rng.gauss(0, vol))
            series = {}
            for i, d in enumerate(days):
                # Brownian bridge pinned to the year's first and last levels.
                log_rate = (math.log(first) + (math.log(last) - math.log(first)) * i / n
                            + walk[i] - walk[-1] * i / n)
                rate = 1.0 if iso == "USD" else _sig(math.exp(log_rate))
                series[d] = rate
                self.rows["exchange_rate"].append((cid, d.isoformat(), rate))
            self.fx[iso] = series
        self.fx_mid = {iso: math.sqrt(v[2] * v[3]) for iso, v in CURRENCIES.items()}

    def rate_to_usd(self, iso: str, d: date) -> float:
        if iso == "USD":
            return 1.0
        if d.year == RATE_YEAR:
            while d not in self.fx[iso]:
                d -= timedelta(days=1)
            return self.fx[iso][d]
        return self.fx_mid[iso] * math.exp(self.rng.gauss(0, 0.02))

    # -- entities ----------------------------------------------------------------------------

    def entities(self) -> None:
        rng = self.rng
        self.locations = []
        for name, ltype, country, code in LOCATIONS:
            lid = self.new_id(1000, 9999)
            self.locations.append({"id": lid, "name": name, "type": ltype, "country": country})
            self.rows["location"].append((lid, name, code, LOCATION_TYPES[ltype], COUNTRIES[country][0]))

        self.carriers = []
        for name, mode, country, scac, on_time in CARRIERS:
            cid = self.new_id(10000, 99999)
            self.carriers.append({"id": cid, "mode": mode, "on_time": on_time,
                                  "share": rng.uniform(0.4, 1.6)})
            self.rows["carrier"].append((cid, name, scac, MODES[mode][0], COUNTRIES[country][0]))

        self.customers = []
        stems = list(CUSTOMER_STEMS)
        rng.shuffle(stems)
        countries = list(CUSTOMER_COUNTRY_WEIGHTS)
        weights = list(CUSTOMER_COUNTRY_WEIGHTS.values())
        industries = list(INDUSTRIES)
        names: set[str] = set()
        for stem in stems[:80]:
            country = rng.choices(countries, weights)[0]
            industry = rng.choice(industries)
            name = f"{stem} {rng.choice(INDUSTRIES[industry][0])} {rng.choice(LEGAL_SUFFIX[country])}"
            assert name not in names
            names.add(name)
            cid = self.new_id(100000, 999999)
            # Billing currency: the home currency, or US dollars for a fifth of the foreign ones.
            home = COUNTRIES[country][3]
            currency = "USD" if home != "USD" and rng.random() < 0.2 else home
            since = date(2008, 1, 1) + timedelta(days=rng.randint(0, 365 * 14 - 10))
            volume = math.exp(rng.gauss(0, 1.0))  # a few large accounts, many small ones
            credit = int(round(20000 + volume * rng.uniform(40000, 120000), -4))
            self.customers.append({"id": cid, "name": name, "country": country,
                                   "industry": industry, "currency": currency, "since": since,
                                   "volume": volume})
            self.rows["customer"].append((cid, name, industry, COUNTRIES[country][0],
                                          CURRENCIES[currency][0], since.isoformat(), credit))

    # -- shipments, parties, invoices --------------------------------------------------------

    def _route(self, mode: str, home: str) -> tuple[dict, dict]:
        rng = self.rng
        region = {iso: spec[2] for iso, spec in COUNTRIES.items()}
        if mode == "Sea":
            pool = [loc for loc in self.locations if loc["type"] == "Seaport"]
        elif mode == "Air":
            pool = [loc for loc in self.locations if loc["type"] == "Airport"]
        elif mode == "Rail":
            pool = [loc for loc in self.locations if loc["type"] in ("Rail Terminal", "Warehouse",
                                                                  "Distribution Centre")
                    and region[loc["country"]] != "Middle East" and loc["country"] not in ("GB", "AU", "JP", "SG")]
        else:
            pool = [loc for loc in self.locations if loc["type"] in ("Warehouse", "Distribution Centre",
                                                                  "Seaport", "Airport", "Rail Terminal")
                    and region[loc["country"]] in ("Europe", "North America")]
        own = [loc for loc in pool if loc["country"] == home]
        for _ in range(200):
            origin = rng.choice(own) if own and rng.random() < 0.55 else rng.choice(pool)
            dest = rng.choice(pool)
            if dest is origin:
                continue
            ro, rd = region[origin["country"]], region[dest["country"]]
            if mode in ("Sea", "Air") and origin["country"] == dest["country"]:
                continue
            if mode == "Road" and ro != rd:
                continue
            if mode == "Rail" and ro != rd and {ro, rd} != {"Europe", "Asia-Pacific"}:
                continue
            if mode == "Rail" and "Asia-Pacific" in (ro, rd) and ro == rd:
                continue
            if mode == "Rail" and {ro, rd} == {"Europe", "Asia-Pacific"} and not (
                    origin["type"] == "Rail Terminal" and dest["type"] == "Rail Terminal"):
                continue
            return origin, dest
        raise RuntimeError(f"no route for {mode} from {home}")

    def shipments(self) -> None:
        rng = self.rng
        cust_weights = [c["volume"] for c in self.customers]
        mode_names = list(MODES)
        tracking_seq = 0
        invoice_seq: dict[int, int] = {}
        day = FIRST_BOOKING
        while day <= AS_OF:
            if day.weekday() < 6:  # bookings Monday to Saturday
                growth = 1.0 + 0.35 * (day - FIRST_BOOKING).days / 900
                seasonal = 1.0 + 0.25 * math.sin(2 * math.pi * (day.timetuple().tm_yday - 200) / 365)
                n = sum(1 for _ in range(8) if rng.random() < 0.65 * growth * seasonal / 1.6)
                for _ in range(n):
                    tracking_seq += 1
                    self._shipment(day, tracking_seq, cust_weights, mode_names, invoice_seq)
            day += timedelta(days=1)

    def _shipment(self, booked: date, seq: int, cust_weights: list[float], mode_names: list[str],
                  invoice_seq: dict[int, int]) -> None:
        rng = self.rng
        cust = rng.choices(self.customers, cust_weights)[0]
        industry = cust["industry"]
        cargo = rng.choice(INDUSTRIES[industry][1]) if rng.random() < 0.85 else rng.choice(list(CARGO_TYPES))
        mode_w = {"Road": 40, "Rail": 10, "Sea": 30, "Air": 20}
        if cargo in ("High Value",) or industry == "Pharmaceuticals":
            mode_w["Air"] += 30
        if cargo in ("Bulk", "Oversized"):
            mode_w["Sea"] += 20
            mode_w["Rail"] += 10
            mode_w["Air"] = 2
        if COUNTRIES[cust["country"]][2] in ("Asia-Pacific", "Middle East"):
            mode_w["Road"] = 5
        mode = rng.choices(mode_names, [mode_w[m] for m in mode_names])[0]
        origin, dest = self._route(mode, cust["country"])
        carriers = [c for c in self.carriers if c["mode"] == mode]
        carrier = rng.choices(carriers, [c["share"] for c in carriers])[0]
        service = rng.choices(list(SERVICE_LEVELS), [25, 55, 20] if mode in ("Road", "Air") else [45, 55, 0])[0]
        _sid, transit_factor, price_factor = SERVICE_LEVELS[service]

        # Weight in kilograms, then stored in the unit this booking office uses.
        kg = {"Air": math.exp(rng.uniform(math.log(40), math.log(4000))),
              "Road": math.exp(rng.uniform(math.log(300), math.log(24000))),
              "Rail": math.exp(rng.uniform(math.log(8000), math.log(60000))),
              "Sea": math.exp(rng.uniform(math.log(4000), math.log(250000)))}[mode]
        if mode in ("Sea", "Rail"):
            unit = "t" if rng.random() < 0.9 else "kg"
        elif origin["country"] in ("US", "CA") or cust["country"] == "US":
            unit = "lb" if rng.random() < 0.7 else "kg"
        else:
            unit = "kg"
        factor = WEIGHT_UNITS[unit][2]
        weight = round(kg / factor, 3 if unit == "t" else 1)
        kg = weight * factor

        # Dates.
        base_days = MODES[mode][1]
        planned = max(1, round(base_days * transit_factor * rng.uniform(0.8, 1.2)))
        lead = rng.randint(1, 4)
        promised = booked + timedelta(days=lead + planned + (2 if mode == "Sea" else 0))
        pickup = booked + timedelta(days=lead + (1 if rng.random() < 0.15 else 0))
        on_time = carrier["on_time"] + (0.05 if service == "Express" else 0.0)
        if rng.random() < on_time:
            transit = max(1, planned - rng.randint(0, max(1, planned // 5)))
        else:
            transit = planned + rng.randint(1, max(2, planned // 2)) + lead
        delivered = pickup + timedelta(days=transit)
        international = origin["country"] != dest["country"]
        cancelled = rng.random() < 0.035
        if cancelled and booked + timedelta(days=1) <= AS_OF:
            status, pickup, delivered = "Cancelled", None, None
        elif pickup > AS_OF:
            status, pickup, delivered = "Booked", None, None
        elif delivered > AS_OF:
            status = "Held at Customs" if international and rng.random() < 0.2 else "In Transit"
            delivered = None
        else:
            status = "Delivered"

        declared_value = declared_cur = None
        if rng.random() < 0.8:
            per_kg = {"High Value": 180, "Refrigerated": 9, "Dangerous Goods": 6, "Bulk": 0.8,
                      "Oversized": 12, "General Cargo": 7}[cargo]
            declared_cur = cust["currency"] if rng.random() < 0.7 else "USD"
            usd = kg * per_kg * math.exp(rng.gauss(0, 0.4))
            declared_value = round(usd / self.rate_to_usd(declared_cur, booked), -1)

        sid = self.new_id(1000000, 9999999)
        tracking = f"MCG{booked:%y}{seq:06d}"
        self.rows["shipment"].append((
            sid, tracking, cust["id"], carrier["id"], MODES[mode][0], SERVICE_LEVELS[service][0],
            CARGO_TYPES[cargo][0], STATUSES[status], origin["id"], dest["id"], booked.isoformat(),
            pickup.isoformat() if pickup else None, promised.isoformat(),
            delivered.isoformat() if delivered else None, weight, WEIGHT_UNITS[unit][0],
            declared_value, CURRENCIES[declared_cur][0] if declared_cur else None,
        ))

        # Parties: the booking customer ships from or receives at its home country.
        if dest["country"] == cust["country"] and origin["country"] != cust["country"]:
            own_role, other_role = "Consignee", "Shipper"
        else:
            own_role, other_role = "Shipper", "Consignee"
        other_country = origin["country"] if other_role == "Shipper" else dest["country"]
        local = [c for c in self.customers if c["country"] == other_country and c is not cust]
        other = rng.choice(local) if local and rng.random() < 0.8 else rng.choice(
            [c for c in self.customers if c is not cust])
        parties = [(sid, cust["id"], ROLES[own_role]), (sid, other["id"], ROLES[other_role])]
        if international and rng.random() < 0.25:
            notify = rng.choice([c for c in self.customers if c is not cust and c is not other])
            parties.append((sid, notify["id"], ROLES["Notify Party"]))
        self.rows["shipment_party"] += parties

        if pickup is None:
            return
        # The freight invoice, issued at pickup, in the customer's billing currency.
        rate_per_kg = {"Air": 4.2, "Road": 0.17, "Rail": 0.11, "Sea": 0.055}[mode]
        base_usd = max({"Air": 150, "Road": 120, "Rail": 600, "Sea": 900}[mode],
                       kg * rate_per_kg * price_factor * math.exp(rng.gauss(0, 0.15)))
        fuel_pct = {2022: 0.19, 2023: 0.15, 2024: 0.12}[pickup.year] * rng.uniform(0.8, 1.2)
        lines = [("Base Freight", base_usd), ("Fuel Surcharge", base_usd * fuel_pct)]
        if international and not {origin["country"], dest["country"]} <= EU_CUSTOMS_UNION:
            lines.append(("Customs Clearance", rng.uniform(120, 450)))
        if declared_value is not None and rng.random() < 0.4:
            lines.append(("Cargo Insurance", max(25.0, 0.003 * declared_value * self.rate_to_usd(declared_cur, booked))))
        if cargo in ("Dangerous Goods", "Refrigerated", "Oversized"):
            lines.append(("Special Handling", rng.uniform(80, 350)))
        inv_date = pickup + timedelta(days=rng.randint(0, 3))
        self._invoice(sid, cust, inv_date, lines, invoice_seq)
        # Now and then a supplementary invoice after delivery: storage or demurrage.
        if delivered is not None and rng.random() < 0.08:
            days = rng.randint(2, 12)
            extra = ("Demurrage", days * rng.uniform(90, 180)) if mode == "Sea" else (
                "Storage", days * rng.uniform(25, 70))
            self._invoice(sid, cust, delivered + timedelta(days=rng.randint(1, 6)), [extra], invoice_seq)

    def _invoice(self, sid: int, cust: dict, inv_date: date, lines: list[tuple[str, float]],
                 invoice_seq: dict[int, int]) -> None:
        rng = self.rng
        if inv_date > AS_OF:
            return
        if inv_date == date(RATE_YEAR, 1, 1):  # no rate on or before it in the table
            inv_date += timedelta(days=1)
        iso = cust["currency"]
        fx = self.rate_to_usd(iso, inv_date)
        invoice_seq[inv_date.year] = invoice_seq.get(inv_date.year, 0) + 1
        iid = self.new_id(1000000, 9999999)
        terms = rng.choice((30, 30, 45, 60))
        due = inv_date + timedelta(days=terms)
        paid = None
        if rng.random() < 0.93:
            paid_on = inv_date + timedelta(days=max(1, round(terms * rng.uniform(0.5, 1.6))))
            paid = paid_on if paid_on <= AS_OF else None
        self.rows["invoice"].append((
            iid, f"INV-{inv_date.year}-{invoice_seq[inv_date.year]:05d}", sid, cust["id"],
            inv_date.isoformat(), due.isoformat(), CURRENCIES[iso][0],
            paid.isoformat() if paid else None,
        ))
        digits = 0 if iso == "JPY" else 2
        for n, (charge, usd) in enumerate(lines, start=1):
            amount = round(usd / fx, digits)
            self.rows["invoice_line"].append((iid, n, CHARGE_TYPES[charge], float(amount)))

    def generate(self) -> dict[str, list[tuple]]:
        self.reference()
        self.exchange_rates()
        self.entities()
        self.shipments()
        return self.rows


def write_sqlite(path: str, rows: dict[str, list[tuple]]) -> None:
    if os.path.exists(path):
        os.remove(path)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA page_size = 4096")
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.executescript(SCHEMA)
        conn.execute("BEGIN")
        for table in TABLE_ORDER:
            data = sorted(rows[table], key=lambda r: tuple((x is None, x) for x in r[:3]))
            marks = ", ".join("?" * len(data[0]))
            conn.executemany(f"INSERT INTO {table} VALUES ({marks})", data)
        conn.execute("COMMIT")
        problems = conn.execute("PRAGMA foreign_key_check").fetchall()
        if problems:
            raise RuntimeError(f"foreign keys violated: {problems[:5]}")
    finally:
        conn.close()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: python {argv[0]} OUT.sqlite", file=sys.stderr)
        return 2
    rows = Generator(SEED).generate()
    write_sqlite(argv[1], rows)
    print(f"wrote {argv[1]}: " + ", ".join(f"{t} {len(rows[t])}" for t in TABLE_ORDER))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
