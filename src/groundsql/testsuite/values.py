"""Believable synthetic values for one column, chosen from its name, its table and its type.

Two sources of values, both returning plain Python values already coerced to the column's type:
- `fresh_values(spec)`: the first rule of the RULES table whose column pattern, table pattern
  and value kind fit the column (a pilot's Age is 18-90, an aircraft's Max_Disk_Loading a few
  lb/ft², a manufacturer's Name a car brand), else a fallback for the declared type;
- `observed_values(spec, values, fresh)`: values that follow a column's original rows
  (categories sampled with their frequencies, numbers drawn within the observed range with the
  observed precision, ISO dates within the observed span, codes redrawn in the same shape).
`derive_values` then makes columns that are functions of others agree (feet from metres).
"""

from __future__ import annotations

import datetime as dt
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from random import Random

Draw = Callable[[Random], object]

# -- column types -----------------------------------------------------------------------------


def column_kind(declared: str) -> str:
    """The kind of values a declared SQLite type holds, for Spider's and LogicCat's spellings
    too ("int", "bool", "number", "varchar(255)", "DECIMAL(19,4)", "DATETIME", "")."""
    t = declared.upper()
    if not t.strip():
        return "any"
    if "BOOL" in t or re.search(r"\bBIT\b", t):
        return "bool"
    if "DATETIME" in t or "TIMESTAMP" in t:
        return "datetime"
    if "DATE" in t:
        return "date"
    if re.search(r"\bTIME\b", t):
        return "time"
    if "INT" in t:  # SQLite's own first rule: any type containing INT has integer affinity
        return "int"
    if any(word in t for word in ("CHAR", "CLOB", "TEXT", "STRING")):
        return "text"
    if "BLOB" in t:
        return "blob"
    if any(word in t for word in ("REAL", "FLOA", "DOUB")):
        return "real"
    if "YEAR" in t:
        return "int"
    return "numeric"  # NUMERIC, DECIMAL(p,s), NUMBER, MONEY and whatever else SQLite takes


def words(name: str) -> str:
    """A name as lower-case words: "Max_Gross_Weight" -> "max gross weight",
    "AirportCode" -> "airport code", "LName" -> "l name", "R&D_Spending" -> "r d spending"."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", spaced)
    return " ".join(re.findall(r"[a-z0-9]+", spaced.lower()))


@dataclass(frozen=True)
class ColumnSpec:
    table: str
    column: str
    declared: str = ""

    @cached_property
    def kind(self) -> str:
        return column_kind(self.declared)

    @cached_property
    def max_len(self) -> int | None:
        found = re.search(r"CHAR\s*\(\s*(\d+)", self.declared.upper())
        return int(found.group(1)) if found else None

    @cached_property
    def words(self) -> str:
        return words(self.column)

    @cached_property
    def table_words(self) -> str:
        return words(self.table)


# -- generators -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gen:
    """A draw function and the kind of value it makes: "text", "number", "date", "bool"."""

    draw: Draw
    out: str
    text_format: str = "{}"  # how a number reads in a TEXT column ("{}%" for a change)


# Which column kinds each kind of generated value may go into.
_FITS = {
    "text": {"text", "any", "blob"},
    "number": {"int", "real", "numeric", "text", "any"},
    "date": {"date", "datetime", "text", "any"},
    "bool": {"bool", "int", "numeric", "text", "any"},
}


def num(lo: float, hi: float, digits: int = 0) -> Gen:
    """Uniform numbers in [lo, hi]: ints when digits == 0, else rounded to `digits` places."""
    if digits == 0:
        return Gen(lambda r: r.randint(int(lo), int(hi)), "number")
    return Gen(lambda r: round(r.uniform(lo, hi), digits), "number")


def pct(lo: float, hi: float, digits: int = 1) -> Gen:
    """A percentage; in a TEXT column it reads "12.5%", as Spider's airport changes do."""
    return Gen(num(lo, hi, digits).draw, "number", "{}%")


def pick_num(*values: float) -> Gen:
    return Gen(lambda r: r.choice(values), "number")


def pick(*values: str) -> Gen:
    return Gen(lambda r: r.choice(values), "text")


def text(draw: Draw) -> Gen:
    return Gen(draw, "text")


def dates(first_year: int = 1990, last_year: int = 2024) -> Gen:
    """Moments between two years; formatted as a date or a datetime by the column's type."""
    start = dt.datetime(first_year, 1, 1)
    span = int((dt.datetime(last_year, 12, 31, 23, 59, 59) - start).total_seconds())
    return Gen(lambda r: start + dt.timedelta(seconds=r.randint(0, span)), "date")


BOOLEAN = Gen(lambda r: r.random() < 0.5, "bool")

# -- word lists -------------------------------------------------------------------------------

FIRST_NAMES = (
    "James", "Mary", "John", "Patricia", "Robert", "Jennifer", "Michael", "Linda", "David",
    "Elizabeth", "William", "Susan", "Ahmed", "Fatima", "Wei", "Mei", "Hiroshi", "Yuki", "Carlos",
    "Sofia", "Luca", "Giulia", "Pierre", "Camille", "Hans", "Anna", "Olga", "Ivan", "Priya",
    "Arjun", "Kwame", "Amara", "Lars", "Ingrid", "Diego", "Lucia", "Noah", "Emma", "Liam", "Olivia",
)
LAST_NAMES = (
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Martinez",
    "Lopez", "Wilson", "Anderson", "Taylor", "Thomas", "Moore", "Martin", "Lee", "Walker", "Hall",
    "Young", "King", "Wright", "Chen", "Wang", "Tanaka", "Sato", "Kim", "Park", "Mueller",
    "Schmidt", "Rossi", "Bianchi", "Dubois", "Laurent", "Ivanov", "Novak", "Patel", "Singh",
    "Okafor", "Hansen",
)
CITIES = (
    ("London", "United Kingdom"), ("Paris", "France"), ("Berlin", "Germany"), ("Madrid", "Spain"),
    ("Rome", "Italy"), ("Amsterdam", "Netherlands"), ("Vienna", "Austria"),
    ("Zurich", "Switzerland"),
    ("Stockholm", "Sweden"), ("Oslo", "Norway"), ("New York", "United States"),
    ("Chicago", "United States"), ("San Francisco", "United States"), ("Toronto", "Canada"),
    ("Mexico City", "Mexico"), ("Sao Paulo", "Brazil"), ("Buenos Aires", "Argentina"),
    ("Tokyo", "Japan"), ("Osaka", "Japan"), ("Seoul", "South Korea"), ("Beijing", "China"),
    ("Shanghai", "China"), ("Mumbai", "India"), ("Sydney", "Australia"), ("Cairo", "Egypt"),
    ("Lagos", "Nigeria"), ("Dubai", "United Arab Emirates"), ("Istanbul", "Turkey"),
)
NATIONALITIES = (
    "American", "British", "French", "German", "Spanish", "Italian", "Dutch", "Swiss", "Swedish",
    "Japanese", "Chinese", "Korean", "Indian", "Brazilian", "Canadian", "Australian", "Mexican",
)
CONTINENTS = ("Europe", "Asia", "Africa", "North America", "South America", "Oceania")
US_STATES = (
    "California", "Texas", "New York", "Florida", "Illinois", "Ohio", "Georgia", "Washington",
    "Oregon", "Colorado", "Arizona", "Massachusetts",
)
PLACE_WORDS = (
    "Riverside", "Golden", "Northgate", "Oakwood", "Harbor", "Kingston", "Westfield", "Maple",
    "Stonebridge", "Eastbrook", "Silver Lake", "Highland", "Lakeside", "Fairview", "Granite",
    "Cedar", "Pinecrest", "Meadow", "Summit", "Bayview",
)
ADJECTIVES = (
    "Blue", "Silent", "Golden", "Wild", "Bright", "Hidden", "Electric", "Broken", "Endless",
    "Crimson", "Lonely", "Sweet", "Midnight", "Sunny", "Frozen", "Velvet",
)
NOUNS = (
    "River", "Dream", "Heart", "Sky", "Road", "Fire", "Night", "Garden", "Ocean", "Light",
    "Storm", "Mountain", "Echo", "Shadow", "Harbor", "Horizon",
)
CAR_MAKES = (
    "Toyota", "BMW", "Tesla", "Ford", "Honda", "Volkswagen", "Mercedes-Benz", "Audi", "Nissan",
    "Hyundai", "Kia", "Volvo", "Mazda", "Subaru", "Chevrolet", "Porsche",
)
CAR_MODELS = (
    "Corolla", "Camry", "Civic", "Accord", "Model S", "Model 3", "Golf", "Passat", "Mustang",
    "F-150", "X5", "3 Series", "A4", "Q7", "C-Class", "Leaf", "Outback", "CX-5", "Prius", "Ioniq 5",
)
AIRCRAFT = (
    "Robinson R-22", "Bell 206B3 JetRanger", "CH-47D Chinook", "Mil Mi-26", "CH-53E Super Stallion",
    "Sikorsky S-76", "Airbus H135", "AgustaWestland AW139", "Eurocopter EC145", "Bell 412",
)
AIRLINES = (
    "United Airlines", "Delta Air Lines", "American Airlines", "Lufthansa", "Air France",
    "British Airways", "Emirates", "Qantas", "Japan Airlines", "KLM", "Southwest Airlines",
)
COMPANY_SUFFIXES = ("Group", "Holdings", "Industries", "Corp", "Ltd", "Partners", "Systems")
SUBJECTS = (
    "Math", "Physics", "Chemistry", "Biology", "History", "Geography", "Language Arts", "Art",
    "Music", "Computer Science", "Economics", "Philosophy",
)
OCCUPATIONS = (
    "Engineer", "Teacher", "Manager", "Analyst", "Designer", "Accountant", "Nurse", "Consultant",
    "Technician", "Architect",
)
SENTENCES = (
    "Regular inspection recommended.", "Recently renovated.", "Listed as a heritage site.",
    "Operated by the city council.", "Open to visitors on weekends.", "Under review.",
    "Scheduled for maintenance next year.", "No known issues.", "Designed for heavy loads.",
    "Popular with tourists.", "Built on reclaimed land.", "Awarded for its design.",
)


def first_name(r: Random) -> str:
    return r.choice(FIRST_NAMES)


def last_name(r: Random) -> str:
    return r.choice(LAST_NAMES)


def person_name(r: Random) -> str:
    return f"{first_name(r)} {last_name(r)}"


def city(r: Random) -> str:
    return r.choice(CITIES)[0]


def country(r: Random) -> str:
    return r.choice(CITIES)[1]


def location(r: Random) -> str:
    name, land = r.choice(CITIES)
    return f"{name}, {land}"


def company(r: Random) -> str:
    return f"{last_name(r)} {r.choice(COMPANY_SUFFIXES)}"


def email(r: Random) -> str:
    domain = r.choice(("example.com", "mail.com", "corp.net", "uni.edu"))
    return f"{first_name(r).lower()}.{last_name(r).lower()}@{domain}"


def phone(r: Random) -> str:
    return f"+1-{r.randint(201, 989)}-555-{r.randint(0, 9999):04d}"


def url(r: Random) -> str:
    return f"https://www.{r.choice(NOUNS).lower()}{r.choice(NOUNS).lower()}.com"


def street_address(r: Random) -> str:
    kind = r.choice(("Street", "Avenue", "Road", "Lane"))
    return f"{r.randint(1, 999)} {r.choice(PLACE_WORDS)} {kind}"


def airport_name(r: Random) -> str:
    return f"{city(r)} {r.choice(('International', 'Regional', 'Municipal'))}"


def title(r: Random) -> str:
    return f"{r.choice(ADJECTIVES)} {r.choice(NOUNS)}"


def sentence(r: Random) -> str:
    return r.choice(SENTENCES)


def letters(r: Random, n: int) -> str:
    return "".join(r.choice(string.ascii_uppercase) for _ in range(n))


def code(r: Random) -> str:
    """A generic code such as 'AB12'."""
    return letters(r, 2) + f"{r.randint(0, 99):02d}"


def numeric_id(r: Random) -> str:
    """Text ids read as numbers ('17'), like Spider's: sorting them as text is a classic slip."""
    return str(r.randint(1, 999))


def entity_name(spec: ColumnSpec) -> Gen:
    """'Harbor Bridge', 'Oakwood Mill': a place word and the table's own noun."""
    noun = (spec.table_words.split() or ["item"])[-1]
    if noun.endswith("ies"):
        noun = noun[:-3] + "y"  # properties -> property
    elif noun.endswith("s") and not noun.endswith("ss"):
        noun = noun[:-1]
    return text(lambda r: f"{r.choice(PLACE_WORDS)} {noun.capitalize()}")


# -- the rule table ---------------------------------------------------------------------------

_PERSON_TABLES = (
    r"\b(people|person|persons|employees?|staff|students?|teachers?|singers?|pilots?|architects?|"
    r"drivers?|authors?|customers?|visitors?|players?|artists?|actors?|directors?|managers?|"
    r"members?|users?|doctors?|physicians?|nurses?|patients?|writers?|editors?|candidates?|"
    r"hosts?|judges?|coach(es)?|musicians?|engineers?|scientists?|owners?|agents?|officers?|"
    r"captains?|instructors?|professors?|faculty|climbers?|gymnasts?|wrestlers?|journalists?|"
    r"perpetrators?|swimmers?|conductors?|entrepreneurs?|investors?|passengers?|guests?|"
    r"clients?|friends?|representatives?)\b"
)
_COMPANY_TABLES = (
    r"\b(compan(y|ies)|firms?|enterprises?|suppliers?|vendors?|banks?|publishers?|shops?|"
    r"stores?|brands?|operators?)\b"
)
_CAR_TABLES = r"\b(cars?|vehicles?|automobiles?|dimensions|engine|performance|prices|safety)\b"
_STRUCTURE_TABLES = r"\b(bridges?|towers?|mills?|structures?|buildings?|dams?|stadiums?)\b"
_ANIMAL = r"\b(pets?|animals?|dogs?|cats?)\b"


@dataclass(frozen=True)
class Rule:
    column: str  # regex over the column's words ("max gross weight")
    gen: Gen | Callable[[ColumnSpec], Gen]  # a factory when the value depends on the column
    table: str | None = None  # regex over the table's words, when the meaning depends on it
    kinds: frozenset[str] | None = None  # column kinds it applies to, when narrower than the gen


_DATE_KINDS = frozenset({"date", "datetime"})
_CATEGORY = pick("Standard", "Premium", "Basic", "Deluxe", "Compact")
_NAME = r"^(full )?name$"

# First matching rule wins: specific patterns before general ones. Ranges are the ones a reader
# would believe for the quantity (LogicCat asks physics questions over them: disk loading is
# weight over disk area, kinetic energy needs a car's mass in kg and speed in km/h).
RULES: tuple[Rule, ...] = (
    # contact details and web
    Rule(r"\be ?mail\b", text(email)),
    Rule(r"\b(phone|telephone|tel|mobile|cell|fax)\b", text(phone)),
    Rule(r"\b(url|website|web site|homepage|link)\b", text(url)),
    Rule(r"\b(zip|postcode|postal code)\b", text(lambda r: f"{r.randint(1000, 99999):05d}")),
    Rule(r"\b(address|street)\b", text(street_address)),
    # codes and identifiers
    Rule(r"\b(country|state) (code|abbrev)\b", text(lambda r: letters(r, 2))),
    Rule(r"\b(icao)\b", text(lambda r: letters(r, 4))),
    Rule(r"\b(abbr|abbrev|abbreviation|iso|iata)\b|\b(airport|city|currency|language) code\b",
         text(lambda r: letters(r, 3))),
    Rule(r"\bcode\b", lambda spec: text(
        (lambda r: letters(r, spec.max_len)) if spec.max_len and spec.max_len < 4 else code)),
    Rule(r"\b(id|uid|guid)$", text(numeric_id)),
    Rule(r"\b(no|id|uid)$", num(1, 9999)),
    Rule(r"^((source|dest|destination|origin|departure|arrival) )?airport$",
         text(lambda r: letters(r, 3))),
    # dates and years
    Rule(r"\b(birth|born|dob) year\b|\byear of birth\b", num(1940, 2005)),
    Rule(r"\b(birth|dob|birthday|born)\b", dates(1950, 2005)),
    Rule(r"\b(date|datetime|timestamp|dt)\b", dates()),
    Rule(r"\b(day|time|on|at|since|from|to|until|start|end|opened|closed|effective|released?)\b",
         dates(), kinds=_DATE_KINDS),
    Rule(r"\byears? (of|working|experience|service|in)\b|\bexperience\b", num(0, 40)),
    Rule(r"\b(year|yr)\b", num(1995, 2025), table=_CAR_TABLES),
    Rule(r"\b(year|yr)\b|\b(built|established|founded|opened)\b|^(start|end|since)( from)?$",
         num(1950, 2025)),
    # ages
    Rule(r"\bage\b", num(1, 15), table=_ANIMAL),
    Rule(r"\b(pet|animal|dog|cat) age\b", num(1, 15)),
    Rule(r"\bage\b", num(18, 90)),
    # people
    Rule(r"\b(first|given|f) ?name\b|\bfname\b|\bforename\b", text(first_name)),
    Rule(r"\b(last|family|sur|l) ?name\b|\blname\b|\bsurname\b", text(last_name)),
    Rule(r"\bnationality\b", pick(*NATIONALITIES)),
    Rule(r"\b(gender|sex)\b", lambda spec: pick("M", "F")
         if (spec.max_len == 1 or spec.words == "sex") else pick("male", "female")),
    Rule(r"\b(occupation|job|profession|role)\b", pick(*OCCUPATIONS)),
    # free text; before the person-ish column names ("customer details" is a text)
    Rule(r"\b(description|notes?|details?|comments?|remarks?|summary|review|bio|content|message|"
         r"reason|disposition|text|field \d+)\b|\bfeatures?( \d+)?$", text(sentence)),
    # names of things, by what the table holds
    # (a bare "Name": its table says what it names; "Song_Name" in a singer table is a song)
    Rule(_NAME, pick(*CAR_MAKES), table=r"\b(manufacturers?|makers?|car makers)\b"),
    Rule(_NAME, pick(*AIRLINES), table=r"\b(airlines?|carriers?)\b"),
    Rule(_NAME, text(company), table=_COMPANY_TABLES),
    Rule(_NAME, text(person_name), table=_PERSON_TABLES),
    Rule(r"\bairport name\b", text(airport_name)),
    Rule(r"\b(manager|commander|pilot|author|director|owner|captain|driver|leader|host|coach|"
         r"artist|president|ceo|founder|winner|player|teacher|advisor|contact|qualifying|"
         r"candidate|person|employee|customer|student|singer)\b", text(person_name)),
    Rule(r"^aircraft$|\baircraft (name|model|type)\b", pick(*AIRCRAFT)),
    Rule(r"\bmodel\b", pick(*CAR_MODELS)),
    Rule(r"\b(make|maker|brand|manufacturer)\b", pick(*CAR_MAKES)),
    Rule(r"\b(airline|carrier)\b", pick(*AIRLINES)),
    Rule(r"\b(company|firm|employer|publisher|vendor|supplier|shop|store|bank)\b", text(company)),
    Rule(r"\b(course|subject|major|department)\b", pick(*SUBJECTS)),
    Rule(r"\b(song|track|album|title|theme|concert name|event|slogan)\b", text(title)),
    # places
    Rule(r"\b(city|town|hometown|home town|birthplace)\b", text(city)),
    Rule(r"\b(country|citizenship|nation)\b", text(country)),
    Rule(r"\bcontinent\b", pick(*CONTINENTS)),
    Rule(r"\b(location|place|venue|headquarters?|hq)\b", text(location)),
    Rule(r"\b(district|region|province|county|neighbou?rhood)\b",
         text(lambda r: f"{r.choice(PLACE_WORDS)} District")),
    Rule(r"^state$", pick(*US_STATES)),
    Rule(r"\bfeature name\b", pick("Pool", "Garden", "Garage", "Balcony", "Fireplace", "Gym")),
    Rule(r"\b(type|category|kind|class) name\b", _CATEGORY),
    Rule(r"\bname\b", entity_name),
    # categories
    Rule(r"\bmaterial\b", pick("Steel", "Concrete", "Wood", "Stone", "Iron", "Brick", "Composite")),
    Rule(r"\bshape\b", pick("Parabolic", "Semicircular", "Elliptical", "Segmental", "Pointed")),
    Rule(r"\btype\b", pick("Tower mill", "Post mill", "Smock mill", "Watermill"),
         table=r"\bmills?\b"),
    Rule(r"\btype\b", pick("dog", "cat", "bird", "rabbit", "hamster"), table=_ANIMAL),
    Rule(r"\bstructure type\b", pick("Dam", "Tunnel", "Skyscraper", "Stadium", "Lighthouse")),
    Rule(r"\bship type\b", pick("Brig", "Frigate", "Galleon", "Sloop", "Caravel")),
    Rule(r"\bfuel type\b", pick("Petrol", "Diesel", "Electric", "Hybrid")),
    Rule(r"\bpurpose\b", pick("Telecommunication", "Observation", "Power transmission",
                              "Broadcasting", "Tourism")),
    Rule(r"\bstatus\b", pick("active", "inactive", "pending", "closed")),
    Rule(r"\b(result|outcome)\b", pick("Won", "Lost", "Draw")),
    Rule(r"\bcolou?r\b", pick("Red", "Blue", "Black", "White", "Silver", "Green")),
    Rule(r"\blanguage\b", pick("English", "French", "Spanish", "German", "Chinese", "Japanese")),
    Rule(r"\b(type|category|kind|class|genre|grade level)\b", _CATEGORY),
    # booleans
    Rule(r"^(is|has|can|was|does|should|if)\b|\b(flag|enabled|yes no|full time|part time)\b",
         BOOLEAN),
    # money
    Rule(r"\b(salary|wages?|income|earnings)\b", num(25_000, 250_000)),
    Rule(r"\bbonus\b", num(500, 10_000)),
    Rule(r"\b(revenue|turnover)\b", num(10**7, 3 * 10**11)),
    Rule(r"\bmarket cap", num(10**8, 10**12)),
    Rule(r"\br ?d\b|\bresearch\b", num(10**7, 2 * 10**10)),
    Rule(r"\bnet worth\b", num(1, 500, 1)),
    Rule(r"\b(profit )?margin\b", num(1, 30, 1)),
    Rule(r"\b(tax|vat) rate\b", num(5, 25, 1)),
    Rule(r"\bdepreciation\b", num(5, 25, 1)),
    Rule(r"\binterest rate\b", num(0.5, 12, 2)),
    Rule(r"\bannual sales\b|\bsales volume\b", num(10_000, 5_000_000)),
    Rule(r"\bsales\b", num(1_000, 10_000_000)),
    Rule(r"\bproduction volume total\b", num(100_000, 10_000_000)),
    Rule(r"\bproduction volume\b", num(1_000, 500_000)),
    Rule(r"\boptional features? price\b", num(500, 15_000, 2)),
    Rule(r"\binsurance cost\b", num(500, 4_000, 2)),
    Rule(r"\bmaintenance cost\b", num(300, 3_000, 2), table=_CAR_TABLES),
    Rule(r"\bmaintenance cost\b", num(1_000, 100_000, 2), table=r"\bmills?\b"),
    Rule(r"\bmaintenance cost\b", num(10_000, 10_000_000, 2)),
    Rule(r"\b(cost usd|construction cost|build cost)\b", num(50_000, 5_000_000, 2),
         table=r"\bmills?\b"),
    Rule(r"\b(cost usd|construction cost|build cost)\b", num(10**6, 5 * 10**9, 2)),
    Rule(r"\b(price|resale value)\b", num(15_000, 120_000, 2),
         table=_CAR_TABLES + "|manufacturers?"),
    Rule(r"\b(price|cost|fee|fare|charge|rent|amount|payment|spent|spend|spending|budget|funding|"
         r"balance|value|paid|expenses?)\b", num(5, 5_000, 2)),
    # shares and ratios
    Rule(r"\b(accuracy|effectiveness|reliability|success rate)\b", num(60, 99.9, 1)),
    Rule(r"\bfuel efficiency\b", num(6, 25, 1)),
    Rule(r"\befficiency\b", num(20, 60, 1)),
    Rule(r"\b(percent|percentage|pct|share|proportion)\b", pct(0, 100)),
    Rule(r"\bchange\b", pct(-20, 40)),
    Rule(r"\bpower to weight\b", num(0.03, 0.4, 3)),
    Rule(r"\bcompression ratio\b", num(8, 14, 1)),
    Rule(r"\brate\b", pct(0, 100)),
    # ratings, ranks, scores
    Rule(r"\b(rating|stars)\b", num(1, 5)),
    Rule(r"\b(rank|ranking|position|place|seed)\b", num(1, 50)),
    Rule(r"\b(score|points)\b", num(0, 100)),
    Rule(r"\bgrade\b", num(1, 12)),
    Rule(r"\blevel\b", num(1, 10)),
    # counts
    Rule(r"\bpassengers\b", num(100_000, 40_000_000)),
    Rule(r"\b(aircraft )?movements\b", num(10_000, 500_000)),
    Rule(r"\b(freight|tonnes)\b", num(1_000, 2_000_000)),
    Rule(r"\b(seating capacity|seats)\b", num(2, 9), table=_CAR_TABLES),
    Rule(r"\bairbags?\b", num(2, 12)),
    Rule(r"\bcylinders?\b", pick_num(3, 4, 4, 4, 6, 6, 8, 8, 12)),
    Rule(r"\b(employees?|employee count|staff|workforce|headcount)\b", num(1_000, 600_000),
         table=r"\b(manufacturers?|compan(y|ies)|airlines?)\b"),
    Rule(r"\b(employees?|employee count|staff|workforce|headcount)\b", num(5, 500)),
    Rule(r"\b(killed|injured|deaths|casualties|wounded)\b", num(0, 300)),
    Rule(r"\battendance\b|^(highest|lowest|average)$", num(100, 50_000),
         table=r"\b(stadiums?|arenas?|venues?)\b"),
    Rule(r"\btickets?\b", num(1, 20)),
    Rule(r"\b(products|items|copies|units|quantity|qty)\b", num(1, 500)),
    Rule(r"\b(population|inhabitants)\b", num(1_000, 10_000_000)),
    # physical quantities
    Rule(r"\bmax(imum)? gross weight\b", num(1_300, 125_000, 1)),
    Rule(r"\bdisk loading\b", num(2.5, 15, 1)),
    Rule(r"\bdisk area\b", num(400, 9_000, 1)),
    Rule(r"\bcurb weight\b", num(1_000, 2_600)),
    Rule(r"\bgross weight\b", num(1_400, 3_500)),
    Rule(r"\bweight\b", num(900, 2_800), table=_CAR_TABLES),
    Rule(r"\bweight\b", num(100_000, 10_000_000, 1), table=_STRUCTURE_TABLES),
    Rule(r"\bweight\b", num(1, 40, 1), table=_ANIMAL),
    Rule(r"\bweight\b", num(45, 120, 1), table=_PERSON_TABLES),
    Rule(r"\bweight\b", num(1, 1_000, 1)),
    Rule(r"\bheight\b", num(5, 40, 1), table=r"\bmills?\b"),
    Rule(r"\bheight\b", num(5, 600, 1), table=_STRUCTURE_TABLES),
    Rule(r"\bheight\b", num(1.3, 2.0, 2), table=_CAR_TABLES),
    Rule(r"\bheight\b", num(1.5, 2.1, 2), table=_PERSON_TABLES),
    Rule(r"\bheight\b", num(1, 100, 1)),
    Rule(r"\bblade length\b", num(5, 60, 1)),
    Rule(r"\bspan\b", num(20, 1_500, 1)),
    Rule(r"\blength\b", num(50, 3_000, 1), table=_STRUCTURE_TABLES),
    Rule(r"\blength\b", num(3.5, 5.5, 2), table=_CAR_TABLES),
    Rule(r"\blength\b", num(1, 100, 1)),
    Rule(r"\bbase width\b", num(5, 120, 1)),
    Rule(r"\bwidth\b", num(1.6, 2.1, 2), table=_CAR_TABLES),
    Rule(r"\bwidth\b", num(1, 50, 1)),
    Rule(r"\bwheelbase\b", num(2.3, 3.2, 2)),
    Rule(r"\bground clearance\b", num(100, 250)),
    Rule(r"\bfuel tank\b", num(35, 100, 1)),
    Rule(r"\bbattery capacity\b", num(20, 120, 1)),
    Rule(r"\b(trunk|boot) capacity\b", num(200, 800)),
    Rule(r"\bcargo capacity\b", num(200, 2_000)),
    Rule(r"\bload capacity\b", num(10_000, 10_000_000)),
    Rule(r"\bcapacity\b", num(1_000, 100_000)),
    Rule(r"\b(top|max|maximum) speed\b", num(120, 350)),
    Rule(r"\bwind speed\b", num(3, 25, 1)),
    Rule(r"\b(max )?rpm\b", num(4_500, 9_000)),
    Rule(r"\brotation speed\b", num(5, 40, 1)),
    Rule(r"\bwind resistance\b", num(20, 80, 1)),
    Rule(r"\bspeed\b", num(10, 300, 1)),
    Rule(r"\b(horsepower|hp|bhp)\b", num(70, 800)),
    Rule(r"\btorque\b", num(100, 900)),
    Rule(r"\bpower\b", num(50, 5_000, 1)),
    Rule(r"\b(displacement|edispl)\b", num(1.0, 6.5, 1)),
    Rule(r"\bco2\b", num(80, 350, 1)),
    Rule(r"\bfuel consumption\b", num(4, 15, 1)),
    Rule(r"\bmpg\b", num(10, 50, 1)),
    Rule(r"\baccelerat", num(2.5, 15, 1)),
    Rule(r"\bbraking distance\b", num(30, 55, 1)),
    Rule(r"\bdrag coefficient\b", num(0.2, 0.4, 2)),
    Rule(r"\bturning radius\b", num(4.5, 6.5, 1)),
    Rule(r"\bresponse time\b", num(0.1, 1.5, 2)),
    Rule(r"\bnight vision\b", num(50, 300)),
    Rule(r"\brange electric\b", num(50, 600)),
    Rule(r"\brange hybrid\b", num(500, 1_100)),
    Rule(r"\brange gasoline\b", num(400, 900)),
    Rule(r"\brange\b", num(200, 800)),
    Rule(r"\bfrequency\b", num(0.1, 10, 2)),
    Rule(r"\barea\b", num(10, 10_000, 1)),
    Rule(r"\btonnage\b", num(100, 50_000)),
    Rule(r"\b(temperature|temp)\b", num(-20, 45, 1)),
    Rule(r"\b(latitude|lat)\b", num(-90, 90, 4)),
    Rule(r"\b(longitude|lon|lng)\b", num(-180, 180, 4)),
    Rule(r"\b(elevation|altitude)\b", num(0, 4_000)),
    Rule(r"\b(distance|km|miles)\b", num(1, 5_000, 1)),
    Rule(r"\b(duration|minutes|mins|hours|seconds)\b", num(1, 300)),
    Rule(r"\b(volume|density|pressure|voltage|energy|mass|depth|diameter|radius|thickness)\b",
         num(0.5, 500, 2)),
    # generic counts last: "number of ..." and "total ..." are mostly counts
    Rule(r"\b(count|num|number|total|n)\b", num(0, 50)),
)

_TIME_WORDS = re.compile(r"\b(time|timestamp|datetime|at)\b")


def _fallback(spec: ColumnSpec) -> Gen:
    """What a column gets when no rule fits: plausible values of its declared type."""
    if spec.kind == "int":
        return num(1, 100)
    if spec.kind in ("real", "numeric"):
        return num(1, 1_000, 2)
    if spec.kind in ("date", "datetime"):
        return dates()
    if spec.kind == "time":
        return text(lambda r: f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:00")
    if spec.kind == "bool":
        return BOOLEAN
    return text(title)


def rule_for(spec: ColumnSpec) -> Gen | None:
    """The generator of the first rule that fits the column, or None."""
    for rule in RULES:
        if rule.kinds is not None and spec.kind not in rule.kinds:
            continue
        if rule.table is not None and not re.search(rule.table, spec.table_words):
            continue
        if not re.search(rule.column, spec.words):
            continue
        gen = rule.gen if isinstance(rule.gen, Gen) else rule.gen(spec)
        if spec.kind in _FITS[gen.out]:
            return gen
    return None


def fresh_values(spec: ColumnSpec) -> Draw:
    """New values for the column, from the rule table (else its type), coerced to its type."""
    gen = rule_for(spec) or _fallback(spec)
    return lambda r: coerce(gen.draw(r), spec, gen.text_format)


# -- coercion ---------------------------------------------------------------------------------


def _number_text(value: float | int) -> str:
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".")
    return str(value)


def coerce(value: object, spec: ColumnSpec, text_format: str = "{}") -> object:
    """A generated value as the column's type stores it (ints in INTEGER columns, '1995' in a
    TEXT year, 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS' for dates, 0/1 for booleans)."""
    kind = spec.kind
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        with_time = kind == "datetime" or (kind != "date" and _TIME_WORDS.search(spec.words))
        return value.strftime("%Y-%m-%d %H:%M:%S" if with_time else "%Y-%m-%d")
    if isinstance(value, bool):
        if kind == "text":
            return "T" if value else "F"
        return int(value)
    if isinstance(value, (int, float)):
        if kind == "int":
            return int(round(value))
        if kind == "real":
            return float(value)
        if kind == "text":
            return _truncate(text_format.format(_number_text(value)), spec)
        return value
    if isinstance(value, str):
        return _truncate(value, spec)
    return value


def _truncate(value: str, spec: ColumnSpec) -> str:
    # SQLite ignores VARCHAR(n), but a value longer than the column says would not be believable.
    return value[: spec.max_len] if spec.max_len else value


# -- following original values ----------------------------------------------------------------

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}$")
# Codes: upper-case ('APG', 'PPT') or letters with digits ('ua-101'); 'Lahti' is a name.
_CODE = re.compile(r"^[A-Z][A-Z0-9\-_./]{0,7}$|^(?=.*\d)[A-Za-z0-9][A-Za-z0-9\-_./]{0,11}$")
_NUMBER_TEXT = re.compile(r"^\s*-?\d+(\.\d+)?\s*$")
_CATEGORY_MAX = 20  # at most this many distinct values, each seen twice on average


def _distinct(values: Sequence[object]) -> list[object]:
    return list(dict.fromkeys(values))


def _is_category(values: Sequence[object], distinct: Sequence[object]) -> bool:
    few = len(distinct) <= _CATEGORY_MAX and 2 * len(distinct) <= len(values)
    return len(distinct) <= 5 or few


def _decimals(value: object) -> int:
    text_value = str(value)
    if "." not in text_value or "e" in text_value:
        return 0
    return min(len(text_value.split(".", 1)[1]), 4)


def _numbers(values: Sequence[object]) -> list[float] | None:
    """The numeric values when nearly all (90%) are numbers or numeric strings ('18' MPG)."""
    numbers = []
    for value in values:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            numbers.append(float(value))
        elif isinstance(value, str) and _NUMBER_TEXT.match(value):
            numbers.append(float(value))
    return numbers if numbers and len(numbers) >= 0.9 * len(values) else None


def _numeric_draw(values: Sequence[object], numbers: list[float]) -> Draw:
    """Half the time an observed value, else a new one within [min, max] with the observed
    precision and representation (int, float or numeric text)."""
    lo, hi = min(numbers), max(numbers)
    digits = max(_decimals(v) for v in values)
    as_text = sum(isinstance(v, str) for v in values) > len(values) / 2
    as_int = digits == 0 and all(float(n).is_integer() for n in numbers)

    def draw(r: Random) -> object:
        if r.random() < 0.5:
            return r.choice(values)
        if as_int:
            value: float | int = r.randint(int(lo), int(hi))
        else:
            value = round(r.uniform(lo, hi), digits)
        if as_text:
            return str(value) if as_int else f"{value:.{digits}f}"
        return value

    return draw


def _date_draw(values: Sequence[str], fmt: str) -> Draw:
    moments = [dt.datetime.strptime(v.replace("T", " "), fmt) for v in values]
    lo, hi = min(moments), max(moments)
    span = max(int((hi - lo).total_seconds()), 1)
    separator = "T" if any("T" in v for v in values) else " "

    def draw(r: Random) -> object:
        if r.random() < 0.3:
            return r.choice(values)
        moment = lo + dt.timedelta(seconds=r.randint(0, span))
        return moment.strftime(fmt.replace(" ", separator))

    return draw


def reshape(value: str, r: Random) -> str:
    """A code of the same shape: 'AB12' -> 'QX07', 'ua-101' -> 'kd-664'."""
    out = []
    for ch in value:
        if ch.isdigit():
            out.append(r.choice(string.digits))
        elif ch.isupper():
            out.append(r.choice(string.ascii_uppercase))
        elif ch.islower():
            out.append(r.choice(string.ascii_lowercase))
        else:
            out.append(ch)
    return "".join(out)


def observed_values(spec: ColumnSpec, observed: Sequence[object], fresh: Draw) -> Draw:
    """Values that follow the column's original (non-NULL) values."""
    values = [v for v in observed if v is not None]
    if not values:
        return fresh
    distinct = _distinct(values)
    if _is_category(values, distinct):
        return lambda r: r.choice(values)  # sampling the raw list keeps the frequencies
    numbers = _numbers(values)
    if numbers is not None:
        return _numeric_draw(values, numbers)
    if all(isinstance(v, str) for v in values):
        if all(_ISO_DATE.match(v) for v in values):
            return _date_draw(values, "%Y-%m-%d")
        if all(_ISO_DATETIME.match(v) for v in values):
            return _date_draw(values, "%Y-%m-%d %H:%M:%S")
        if all(_CODE.match(v) for v in values):
            return lambda r: r.choice(values) if r.random() < 0.5 else reshape(r.choice(values), r)
    rule = rule_for(spec)
    if rule is not None and rule.out == "text" and all(isinstance(v, str) for v in values):
        # Names, cities, titles: mostly the originals, some new ones of the same sort.
        return lambda r: r.choice(values) if r.random() < 0.6 else fresh(r)
    return lambda r: r.choice(values)


# -- columns that follow from others ----------------------------------------------------------

_FEET_PER_METRE = 3.28084

# (target column words, input column words, formula): a row where these disagree would not be
# believable, and LogicCat's questions compute one from the others.
DERIVED: tuple[tuple[str, tuple[str, ...], Callable[..., float]], ...] = (
    ("length feet", ("length meters",), lambda m: round(m * _FEET_PER_METRE, 1)),
    ("height feet", ("height meters",), lambda m: round(m * _FEET_PER_METRE, 1)),
    ("total disk area", ("max gross weight", "max disk loading"),
     lambda weight, loading: round(weight / loading, 1)),
    ("total price", ("base price", "optional features price"), lambda b, o: round(b + o, 2)),
    ("total passengers", ("international passengers", "domestic passengers", "transit passengers"),
     lambda a, b, c: a + b + c),
)


def derive_values(specs: Sequence[ColumnSpec], row: dict[str, object], fixed: set[str]) -> None:
    """Overwrite derived columns of `row` (by column name) from their inputs, in place; columns
    in `fixed` (planted, key or reference values) are left alone."""
    by_words = {spec.words: spec for spec in specs}
    for target, inputs, formula in DERIVED:
        spec = by_words.get(target)
        if spec is None or spec.column in fixed or not all(w in by_words for w in inputs):
            continue
        args = [row.get(by_words[w].column) for w in inputs]
        if not all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in args):
            continue
        try:
            row[spec.column] = coerce(formula(*args), spec)
        except ZeroDivisionError:
            continue
