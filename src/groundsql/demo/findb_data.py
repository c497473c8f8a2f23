"""Static reference content and word lists for the demo financial database (see findb.py).

Identifiers of the reference rows are deliberately opaque and non-sequential (as in S&P Capital
IQ / FLINT): a text-to-SQL model has to resolve "EBITDA" or "euros" through the lookup tables
instead of guessing that the first row has id 1. All names here are fictitious.
"""

from __future__ import annotations

# iso -> (currency_id, name, rate_to_usd on 2023-01-02, rate_to_usd on 2023-12-29, daily vol)
CURRENCIES: dict[str, tuple[int, str, float, float, float]] = {
    "USD": (160, "US Dollar", 1.0, 1.0, 0.0),
    "EUR": (49, "Euro", 1.0665, 1.1039, 0.0040),
    "GBP": (134, "British Pound Sterling", 1.2085, 1.2730, 0.0045),
    "JPY": (79, "Japanese Yen", 0.007618, 0.007092, 0.0055),
    "CHF": (24, "Swiss Franc", 1.0823, 1.1882, 0.0032),
    "CAD": (21, "Canadian Dollar", 0.7380, 0.7551, 0.0030),
    "AUD": (9, "Australian Dollar", 0.6810, 0.6819, 0.0060),
    "SEK": (141, "Swedish Krona", 0.09580, 0.09930, 0.0055),
    "INR": (74, "Indian Rupee", 0.012090, 0.012020, 0.0018),
    "SGD": (143, "Singapore Dollar", 0.7458, 0.7576, 0.0020),
    "BRL": (16, "Brazilian Real", 0.18910, 0.20580, 0.0060),
}

# iso -> (country_id, name, region, currency, web domain, name pool, people pool,
#         public legal suffixes, private legal suffixes)
COUNTRIES: dict[str, tuple] = {
    "US": (213, "United States", "North America", "USD", ".com", "US", "anglo",
           ["Inc.", "Corp.", "Corporation", "Holdings, Inc."], ["LLC", "Inc."]),
    "CA": (37, "Canada", "North America", "CAD", ".ca", "CA", "anglo",
           ["Inc.", "Ltd.", "Corp."], ["Inc.", "Ltd."]),
    "GB": (212, "United Kingdom", "Europe", "GBP", ".co.uk", "GB", "anglo",
           ["plc", "Group plc"], ["Ltd", "Limited"]),
    "DE": (78, "Germany", "Europe", "EUR", ".de", "DE", "german", ["AG", "SE"], ["GmbH"]),
    "FR": (71, "France", "Europe", "EUR", ".fr", "FR", "french", ["S.A.", "SE"], ["SAS"]),
    "NL": (145, "Netherlands", "Europe", "EUR", ".nl", "NL", "dutch", ["N.V."], ["B.V."]),
    "CH": (199, "Switzerland", "Europe", "CHF", ".ch", "CH", "swiss", ["AG", "SA"], ["AG", "GmbH"]),
    "SE": (198, "Sweden", "Europe", "SEK", ".se", "SE", "swedish", ["AB (publ)"], ["AB"]),
    "JP": (104, "Japan", "Asia-Pacific", "JPY", ".co.jp", "JP", "japanese",
           ["K.K.", "Corporation", "Co., Ltd."], ["K.K."]),
    "AU": (12, "Australia", "Asia-Pacific", "AUD", ".com.au", "AU", "anglo",
           ["Limited", "Ltd"], ["Pty Ltd"]),
    "SG": (187, "Singapore", "Asia-Pacific", "SGD", ".com.sg", "SG", "singapore",
           ["Ltd.", "Limited"], ["Pte. Ltd."]),
    "IN": (96, "India", "Asia-Pacific", "INR", ".co.in", "IN", "indian", ["Limited", "Ltd."],
           ["Private Limited"]),
    "BR": (29, "Brazil", "Latin America", "BRL", ".com.br", "BR", "brazilian", ["S.A."], ["Ltda."]),
}

# code -> (exchange_id, name, country iso, ticker style)
EXCHANGES: dict[str, tuple[int, str, str, str]] = {
    "NYSE": (458, "New York Stock Exchange", "US", "alpha3"),
    "NasdaqGS": (462, "Nasdaq Global Select Market", "US", "alpha4"),
    "TSX": (421, "Toronto Stock Exchange", "CA", "alpha3"),
    "LSE": (392, "London Stock Exchange", "GB", "alpha4"),
    "XTRA": (227, "Deutsche Boerse Xetra", "DE", "alpha3"),
    "ENXTPA": (214, "Euronext Paris", "FR", "alpha3"),
    "ENXTAM": (215, "Euronext Amsterdam", "NL", "alpha4"),
    "SWX": (410, "SIX Swiss Exchange", "CH", "alpha4"),
    "OM": (313, "Nasdaq Stockholm", "SE", "sweden"),
    "TSE": (424, "Tokyo Stock Exchange", "JP", "digits4"),
    "ASX": (25, "Australian Securities Exchange", "AU", "alpha3"),
    "SGX": (366, "Singapore Exchange", "SG", "sgx"),
    "NSEI": (317, "National Stock Exchange of India", "IN", "long"),
    "BOVESPA": (72, "B3 Brasil Bolsa Balcao", "BR", "brazil"),
}

HOME_EXCHANGE = {
    "CA": "TSX", "GB": "LSE", "DE": "XTRA", "FR": "ENXTPA", "NL": "ENXTAM", "CH": "SWX",
    "SE": "OM", "JP": "TSE", "AU": "ASX", "SG": "SGX", "IN": "NSEI", "BR": "BOVESPA",
}

# 2023 exchange holidays (weekdays only); approximate but plausible, so calendars differ
# between exchanges the way they do in real price tables.
_US = ["01-02", "01-16", "02-20", "04-07", "05-29", "06-19", "07-04", "09-04", "11-23", "12-25"]
_EU = ["04-07", "04-10", "05-01", "12-25", "12-26"]
HOLIDAYS_2023: dict[str, list[str]] = {
    "NYSE": _US,
    "NasdaqGS": _US,
    "TSX": ["01-02", "02-20", "04-07", "05-22", "07-03", "08-07", "09-04", "10-09", "12-25",
            "12-26"],
    "LSE": ["01-02", "04-07", "04-10", "05-01", "05-08", "05-29", "08-28", "12-25", "12-26"],
    "XTRA": _EU,
    "ENXTPA": _EU,
    "ENXTAM": _EU,
    "SWX": ["01-02", "04-07", "04-10", "05-01", "05-18", "05-29", "08-01", "12-25", "12-26"],
    "OM": ["01-06", "04-07", "04-10", "05-01", "05-18", "06-06", "06-23", "12-25", "12-26"],
    "TSE": ["01-02", "01-03", "01-09", "02-23", "03-21", "05-03", "05-04", "05-05", "07-17",
            "09-18", "10-09", "11-03", "11-23"],
    "ASX": ["01-02", "01-26", "04-07", "04-10", "04-25", "06-12", "12-25", "12-26"],
    "SGX": ["01-02", "01-23", "01-24", "04-07", "05-01", "06-02", "06-29", "08-09", "11-13",
            "12-25"],
    "NSEI": ["01-26", "03-07", "03-30", "04-04", "04-07", "04-14", "05-01", "06-28", "08-15",
             "09-19", "10-02", "10-24", "11-14", "11-27", "12-25"],
    "BOVESPA": ["02-20", "02-21", "04-07", "04-21", "05-01", "06-08", "09-07", "10-12", "11-02",
                "11-15", "12-25", "12-29"],
}

# key -> (industry_id, industry name, sector, name words, model parameters)
# model: kind, gross margin range, EBITDA margin range, D&A/revenue, assets/revenue,
#        revenue per employee (USD thousands), market cap/revenue, 2019 revenue range (USD m),
#        mean growth, 2020 shock, daily price volatility
INDUSTRIES: dict[str, tuple] = {
    "oil": (4021, "Oil and Gas Exploration and Production", "Energy",
            ["Energy", "Petroleum", "Resources"],
            dict(kind="normal", gm=(0.35, 0.55), em=(0.30, 0.50), da=0.12, assets=1.8, rpe=2500,
                 mcap=1.6, size=(800, 40000), growth=0.03, shock=-0.30, vol=0.021)),
    "renew": (4607, "Renewable Electricity", "Utilities", ["Renewables", "Power", "Clean Energy"],
              dict(kind="normal", gm=(0.40, 0.60), em=(0.45, 0.65), da=0.25, assets=5.0,
                   rpe=1200, mcap=5.0, size=(200, 6000), growth=0.12, shock=0.02, vol=0.020)),
    "util": (4603, "Electric Utilities", "Utilities", ["Utilities", "Electric", "Power & Light"],
             dict(kind="normal", gm=(0.35, 0.50), em=(0.25, 0.38), da=0.12, assets=3.5, rpe=900,
                  mcap=2.5, size=(1500, 25000), growth=0.03, shock=-0.02, vol=0.011)),
    "bank": (4112, "Banks", "Financials", ["Bancorp", "Bank", "Financial", "Banking Group"],
             dict(kind="bank", om=(0.30, 0.45), assets=12.0, rpe=400, mcap=2.2,
                  size=(500, 50000), growth=0.04, shock=-0.06, vol=0.015)),
    "insur": (4131, "Insurance", "Financials", ["Insurance", "Assurance", "Reinsurance"],
              dict(kind="insurance", om=(0.08, 0.15), assets=5.0, rpe=700, mcap=1.1,
                   size=(800, 40000), growth=0.04, shock=-0.03, vol=0.013)),
    "asset": (4125, "Asset Management", "Financials",
              ["Asset Management", "Investments", "Capital Management"],
              dict(kind="asset", em=(0.28, 0.45), da=0.02, assets=3.0, rpe=900, mcap=3.5,
                   size=(200, 8000), growth=0.06, shock=0.00, vol=0.018)),
    "ib": (4127, "Investment Banking and Brokerage", "Financials", [],
           dict(kind="bank", om=(0.20, 0.32), assets=8.0, rpe=600, mcap=1.8,
                size=(4000, 30000), growth=0.04, shock=0.05, vol=0.017)),
    "pe": (4129, "Private Equity", "Financials", [],
           dict(kind="none", size=(50, 500), rpe=2000)),
    "pharma": (5012, "Pharmaceuticals", "Health Care",
               ["Pharmaceuticals", "Pharma", "Laboratories"],
               dict(kind="normal", gm=(0.65, 0.80), em=(0.25, 0.40), da=0.06, assets=1.8,
                    rpe=600, mcap=4.0, size=(500, 40000), growth=0.05, shock=0.01, vol=0.014)),
    "biotech": (5021, "Biotechnology", "Health Care", ["Therapeutics", "Biosciences", "Genomics"],
                dict(kind="normal", gm=(0.60, 0.88), em=(-0.60, 0.25), da=0.05, assets=2.5,
                     rpe=500, mcap=7.0, size=(20, 2500), growth=0.22, shock=0.05, vol=0.034)),
    "medtech": (5031, "Health Care Equipment", "Health Care", ["Medical", "MedTech", "Diagnostics"],
                dict(kind="normal", gm=(0.55, 0.70), em=(0.18, 0.32), da=0.06, assets=1.6,
                     rpe=350, mcap=4.5, size=(200, 20000), growth=0.07, shock=-0.04, vol=0.016)),
    "software": (6011, "Application Software", "Information Technology",
                 ["Software", "Systems", "Analytics", "Cloud"],
                 dict(kind="normal", gm=(0.70, 0.85), em=(0.05, 0.38), da=0.04, assets=1.5,
                      rpe=300, mcap=7.0, size=(60, 15000), growth=0.13, shock=0.05, vol=0.022)),
    "semis": (6031, "Semiconductors", "Information Technology",
              ["Semiconductor", "Microsystems", "Silicon", "Photonics"],
              dict(kind="normal", gm=(0.45, 0.65), em=(0.25, 0.45), da=0.10, assets=1.7, rpe=500,
                   mcap=5.5, size=(300, 30000), growth=0.10, shock=0.04, vol=0.024)),
    "itserv": (6021, "IT Consulting and Services", "Information Technology",
               ["Technologies", "Digital", "Consulting"],
               dict(kind="normal", gm=(0.25, 0.38), em=(0.12, 0.22), da=0.03, assets=0.8,
                    rpe=100, mcap=2.0, size=(200, 20000), growth=0.08, shock=0.00, vol=0.016)),
    "aero": (2011, "Aerospace and Defense", "Industrials",
             ["Aerospace", "Defense Systems", "Avionics"],
             dict(kind="normal", gm=(0.18, 0.28), em=(0.10, 0.18), da=0.04, assets=1.4, rpe=300,
                  mcap=1.8, size=(500, 40000), growth=0.04, shock=-0.22, vol=0.016)),
    "logistics": (2033, "Air Freight and Logistics", "Industrials",
                  ["Logistics", "Freight", "Shipping", "Express"],
                  dict(kind="normal", gm=(0.15, 0.25), em=(0.08, 0.15), da=0.04, assets=0.9,
                       rpe=250, mcap=1.0, size=(300, 30000), growth=0.05, shock=0.08, vol=0.017)),
    "machinery": (2014, "Industrial Machinery", "Industrials",
                  ["Industries", "Machinery", "Engineering", "Automation"],
                  dict(kind="normal", gm=(0.28, 0.38), em=(0.12, 0.20), da=0.04, assets=1.2,
                       rpe=280, mcap=2.0, size=(300, 25000), growth=0.04, shock=-0.10, vol=0.016)),
    "auto": (3011, "Automobile Manufacturers", "Consumer Discretionary",
             ["Motors", "Automotive", "Mobility"],
             dict(kind="normal", gm=(0.12, 0.22), em=(0.08, 0.14), da=0.05, assets=1.4, rpe=500,
                  mcap=0.6, size=(2000, 60000), growth=0.04, shock=-0.15, vol=0.019)),
    "retail": (3041, "Specialty Retail", "Consumer Discretionary",
               ["Retail", "Stores", "Brands", "Outfitters"],
               dict(kind="normal", gm=(0.30, 0.45), em=(0.07, 0.14), da=0.03, assets=0.7, rpe=200,
                    mcap=0.9, size=(300, 25000), growth=0.04, shock=-0.12, vol=0.019)),
    "foods": (3021, "Packaged Foods and Meats", "Consumer Staples", ["Foods", "Nutrition", "Dairy"],
              dict(kind="normal", gm=(0.28, 0.40), em=(0.13, 0.20), da=0.03, assets=1.1, rpe=350,
                   mcap=1.8, size=(400, 30000), growth=0.04, shock=0.02, vol=0.011)),
    "bev": (3024, "Beverages", "Consumer Staples", ["Beverages", "Brewing", "Drinks"],
            dict(kind="normal", gm=(0.45, 0.60), em=(0.20, 0.30), da=0.05, assets=1.5, rpe=400,
                 mcap=3.5, size=(300, 25000), growth=0.05, shock=-0.06, vol=0.012)),
    "chem": (1511, "Specialty Chemicals", "Materials", ["Chemicals", "Materials", "Coatings"],
             dict(kind="normal", gm=(0.25, 0.38), em=(0.14, 0.22), da=0.05, assets=1.3, rpe=450,
                  mcap=1.8, size=(400, 25000), growth=0.04, shock=-0.08, vol=0.016)),
    "mining": (1521, "Diversified Metals and Mining", "Materials", ["Mining", "Metals", "Minerals"],
               dict(kind="normal", gm=(0.30, 0.45), em=(0.25, 0.45), da=0.10, assets=2.0, rpe=700,
                    mcap=2.0, size=(500, 40000), growth=0.05, shock=-0.08, vol=0.021)),
    "telecom": (5511, "Telecommunication Services", "Communication Services",
                ["Telecom", "Communications", "Networks"],
                dict(kind="normal", gm=(0.50, 0.65), em=(0.30, 0.42), da=0.18, assets=2.5,
                     rpe=450, mcap=2.0, size=(1000, 40000), growth=0.02, shock=-0.02, vol=0.012)),
    "media": (5521, "Media and Entertainment", "Communication Services",
              ["Media", "Entertainment", "Studios"],
              dict(kind="normal", gm=(0.40, 0.55), em=(0.12, 0.25), da=0.06, assets=1.8, rpe=500,
                   mcap=2.5, size=(200, 20000), growth=0.05, shock=-0.10, vol=0.019)),
    "reit": (6041, "Diversified REITs", "Real Estate", ["Properties", "Realty", "Real Estate"],
             dict(kind="normal", gm=(0.60, 0.72), em=(0.50, 0.65), da=0.28, assets=12.0,
                  rpe=1500, mcap=8.0, size=(150, 5000), growth=0.03, shock=-0.08, vol=0.015)),
    "legal": (2071, "Legal Services", "Industrials", [],
              dict(kind="none", size=(300, 2500), rpe=700)),
}

# The industries an ordinary operating company is drawn from (advisers and sponsors are added
# separately with fixed names).
OPERATING_INDUSTRIES = [k for k, v in INDUSTRIES.items() if v[3]]

# Name stems per country; each stem is used at most once across the whole database so that
# LIKE '%stem%' finds exactly one company. Stems that combine with an industry word into the
# name of a well-known real company have been left out.
NAME_STEMS: dict[str, list[str]] = {
    "US": ["Ashgrove", "Cobalt", "Brackenridge", "Harborview", "Corvane", "Dunmore", "Elmhurst",
           "Foxhollow", "Evergreen", "Glenrock", "Hollis Point", "Redwood", "Bluewater",
           "Ironbridge", "Silverline", "Keystone", "Lakeshore", "Westbrook", "Highland",
           "Ironvale", "Oakmont", "Kestrel", "Osprey", "Marston", "Nimbus", "Quillon",
           "Copperfield", "Brightwater", "Clearpath", "Beacon", "Halcyon", "Larkspur",
           "Stonebridge", "Prairie", "Wayfarer", "Millbrook", "Pellston", "Rookwood"],
    "CA": ["Boreal", "Caribou", "Muskoka", "Fundy", "Okanagan", "Tadoussac", "Assiniboine",
           "Kootenay",
           "Nipigon", "Chinook"],
    "GB": ["Thameside", "Pennine", "Cotswold", "Albion", "Severnside", "Ravensworth", "Kingsmere",
           "Ashford", "Marlow", "Wexford", "Hadrian", "Calderbrook"],
    "DE": ["Rheinwerk", "Nordstern", "Elbtal", "Bergmann", "Isarwerk", "Hohenfels", "Weserland",
           "Falkenberg", "Lindenhof", "Morgenrot", "Taunus", "Harzberg"],
    "FR": ["Lumiere", "Sequanor", "Vauban", "Belcourt", "Azuria", "Rochefort", "Valmorel",
           "Chambord", "Saint-Clair", "Garonne"],
    "NL": ["Zuiderzee", "Noordhaven", "Eemland", "Kroonstad", "Waalhaven", "Dijkstra",
           "Polderveld"],
    "CH": ["Alpina", "Jungfrau", "Lemanic", "Engadin", "Ticino", "Glarus", "Brienz", "Saentis"],
    "SE": ["Nordvik", "Vasaholm", "Stenhammar", "Malaren", "Gotaland", "Norrsken", "Ekholm"],
    "JP": ["Hoshino", "Fujimoto", "Kitano", "Tsubasa", "Hikari", "Yamabuki", "Shirakawa",
           "Kazeyama", "Minato", "Kohinata", "Asagiri", "Tenryu"],
    "AU": ["Coral Sea", "Wattle", "Kookaburra", "Eucalypt", "Murray River", "Nullarbor",
           "Banksia", "Gondwana"],
    "SG": ["Merlion", "Lion City", "Straits", "Jurong", "Kallang", "Changi Bay"],
    "IN": ["Ganga", "Sahyadri", "Vayu", "Nilgiri", "Konark", "Shakti", "Deccan", "Kaveri",
           "Prabhat"],
    "BR": ["Cerrado", "Guanabara", "Itapua", "Serra Azul", "Mantiqueira", "Jacaranda",
           "Tocantins", "Pampulha"],
}

# Fixed companies the demo questions refer to; they are never acquired, so the questions stay
# answerable whatever the seed. (name, stem, country, industry, ticker, exchange, currency,
# unit name)
ANCHORS = [
    ("Northwind Logistics Inc.", "Northwind", "US", "logistics", "NWL", "NYSE", "USD", "Millions"),
    ("Helios Energy AG", "Helios", "DE", "renew", "HLE", "XTRA", "EUR", "Thousands"),
    ("Granite Bancorp Inc.", "Granite", "US", "bank", "GRB", "NYSE", "USD", "Millions"),
    ("Aurora Therapeutics plc", "Aurora", "GB", "biotech", "AURT", "LSE", "GBP", "Millions"),
    ("Sakura Semiconductor K.K.", "Sakura", "JP", "semis", "6871", "TSE", "JPY", "Millions"),
]

# Deal advisers and financial sponsors: (name, country, kind)
ADVISERS_AND_SPONSORS = [
    ("Whitford Lane & Co., Inc.", "US", "ib"),
    ("Carrington Stone Group, Inc.", "US", "ib"),
    ("Pemberton Hale Securities Corp.", "US", "ib"),
    ("Ashcombe Marsh plc", "GB", "ib"),
    ("Zellweger Kessler Group AG", "CH", "ib"),
    ("Nakamura Omori Securities Co., Ltd.", "JP", "ib"),
    ("Ellison Crane LLP", "US", "legal"),
    ("Hargrove Whitlock & Pryce LLP", "US", "legal"),
    ("Fairbrother Lyle LLP", "GB", "legal"),
    ("Kessler Brandauer PartG mbB", "DE", "legal"),
    ("Ironwood Equity Partners, L.P.", "US", "pe"),
    ("Stonecrest Capital Partners, L.P.", "US", "pe"),
    ("Harrow Peak Capital LLC", "US", "pe"),
    ("Thornbury Partners LLP", "GB", "pe"),
    ("Kingsgate Private Equity LLP", "GB", "pe"),
    ("Nordhav Capital AB", "SE", "pe"),
]

PEOPLE: dict[str, tuple[list[str], list[str]]] = {
    "anglo": (
        ["James", "Sarah", "Michael", "Emily", "David", "Jennifer", "Robert", "Laura", "William",
         "Karen", "Thomas", "Rachel", "Daniel", "Megan", "Andrew", "Catherine", "Christopher",
         "Olivia", "Matthew", "Hannah", "Richard", "Elizabeth", "Jonathan", "Alison"],
        ["Whitaker", "Holloway", "Pennington", "Ashworth", "Caldwell", "Harrington", "Mercer",
         "Prescott", "Sullivan", "Donovan", "Fletcher", "Gallagher", "Hartley", "Lancaster",
         "Morrison", "Radcliffe", "Sheridan", "Thornton", "Walsh", "Brennan", "Carver", "Dalton",
         "Everett", "Fairfax", "Garrison", "Hensley", "Langford", "McAllister"],
    ),
    "german": (
        ["Andreas", "Katrin", "Stefan", "Claudia", "Matthias", "Sabine", "Juergen", "Ulrike",
         "Thomas", "Birgit", "Florian", "Anja", "Markus", "Christiane", "Tobias", "Heike",
         "Johannes", "Monika"],
        ["Becker", "Hoffmann", "Schreiber", "Vogel", "Krause", "Lehmann", "Brandt", "Zimmermann",
         "Hartmann", "Wolff", "Kessler", "Baumann", "Lindner", "Seidel", "Franke", "Albrecht",
         "Engel", "Vogt"],
    ),
    "french": (
        ["Antoine", "Camille", "Nicolas", "Isabelle", "Julien", "Sophie", "Philippe", "Claire",
         "Laurent", "Helene", "Mathieu", "Nathalie", "Olivier", "Celine", "Francois", "Amelie"],
        ["Lefebvre", "Moreau", "Girard", "Fontaine", "Chevalier", "Rousseau", "Mercier", "Dupont",
         "Lambert", "Bonnet", "Faure", "Garnier", "Perrin", "Marchand", "Dumas", "Renaud"],
    ),
    "dutch": (
        ["Jeroen", "Marieke", "Pieter", "Sanne", "Bram", "Femke", "Maarten", "Eline", "Joost",
         "Anouk", "Wouter", "Lotte"],
        ["de Vries", "van Dijk", "Bakker", "Visser", "Smit", "Meijer", "de Boer", "Mulder", "Bos",
         "Vos", "Hendriks", "van Leeuwen", "Dekker"],
    ),
    "swedish": (
        ["Erik", "Anna", "Lars", "Karin", "Johan", "Maria", "Anders", "Eva", "Magnus", "Sofia",
         "Per", "Ingrid", "Henrik", "Linnea"],
        ["Lindqvist", "Bergstrom", "Nyberg", "Sandberg", "Holm", "Ekstrom", "Lundgren",
         "Forsberg", "Sjoberg", "Wallin", "Engstrom", "Dahl"],
    ),
    "japanese": (
        ["Hiroshi", "Yuko", "Takeshi", "Keiko", "Kenji", "Naoko", "Satoshi", "Akiko", "Masahiro",
         "Emi", "Daisuke", "Haruka", "Kazuo", "Mariko", "Ryo", "Tomoko"],
        ["Tanaka", "Suzuki", "Watanabe", "Ito", "Yamamoto", "Nakamura", "Kobayashi", "Kato",
         "Yoshida", "Yamada", "Sasaki", "Matsumoto", "Inoue", "Kimura", "Hayashi", "Shimizu"],
    ),
    "indian": (
        ["Rajesh", "Priya", "Anil", "Sunita", "Vikram", "Anjali", "Sanjay", "Kavita", "Arjun",
         "Neha", "Rahul", "Deepa", "Suresh", "Meera", "Amit", "Pooja"],
        ["Sharma", "Iyer", "Mehta", "Reddy", "Nair", "Gupta", "Kapoor", "Rao", "Patel", "Menon",
         "Banerjee", "Joshi", "Kulkarni", "Desai", "Chatterjee", "Pillai"],
    ),
    "brazilian": (
        ["Joao", "Ana", "Carlos", "Mariana", "Pedro", "Fernanda", "Rafael", "Juliana", "Lucas",
         "Beatriz", "Gustavo", "Camila", "Rodrigo", "Patricia"],
        ["Silva", "Santos", "Oliveira", "Souza", "Pereira", "Costa", "Rodrigues", "Almeida",
         "Nascimento", "Carvalho", "Araujo", "Ribeiro", "Barbosa", "Moreira"],
    ),
    "singapore": (
        ["Wei Ming", "Hui Min", "Jun Hao", "Li Ting", "Kian Seng", "Shu Fen", "Boon Keng",
         "Pei Shan", "Zhi Wei", "Xin Yi"],
        ["Tan", "Lim", "Lee", "Ng", "Ong", "Wong", "Goh", "Chua", "Koh", "Teo", "Chan", "Yeo"],
    ),
}
# Switzerland draws from the German- and French-speaking pools.
PEOPLE["swiss"] = (
    PEOPLE["german"][0][:9] + PEOPLE["french"][0][:7],
    ["Keller", "Meier", "Huber", "Gerber", "Brunner", "Favre", "Rochat", "Bolliger", "Zuercher",
     "Baumgartner", "Perret", "Steiner"],
)
