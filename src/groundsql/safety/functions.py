"""Which functions a query may call: an allow-list per dialect.

A question needs aggregates, window functions and the scalar math, string, date and
conditional functions; it never needs a function that administers the server, reads a file,
runs SQL held in a string, opens a connection, sleeps, takes a lock or advances a sequence.
Enumerating those is a race against every release and extension (crosstab, dblink_exec,
xpath_table, brin_summarize_new_values ...), so the rule is the other way round: a function
runs only if its name is listed here for the dialect (or added in `SafetyConfig.extra_functions`),
and never if the database defines a function of that name itself (a user-defined function or
macro can shadow or overload a built-in).

The name checked is the name the database will call: sqlglot reads `instr(a, b)` as a typed
node that PostgreSQL renders `POSITION(b IN a)`, so each call is rendered in the dialect (with
its arguments replaced by placeholders, which keeps the check linear) and every name the
rendering calls is looked up.
"""

from __future__ import annotations

import re
from functools import lru_cache

from sqlglot import exp

_AGGREGATES = """
count sum avg min max total group_concat string_agg array_agg listagg stddev stddev_pop
stddev_samp variance var_pop var_samp corr covar_pop covar_samp regr_slope regr_intercept
regr_r2 regr_count regr_avgx regr_avgy bool_and bool_or every bit_and bit_or percentile_cont
percentile_disc mode
"""
_WINDOW = "row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value"
_MATH = """
abs ceil ceiling floor round trunc sign sqrt cbrt power pow exp ln log log10 log2 mod pi
degrees radians sin cos tan asin acos atan atan2 cot greatest least random div gcd lcm
"""
_STRING = """
length char_length character_length octet_length lower upper trim ltrim rtrim substr substring
replace concat concat_ws left right reverse position strpos instr ascii chr char unicode
initcap translate split_part starts_with ends_with regexp_replace format printf lpad rpad md5
"""
_CONDITIONAL = "coalesce nullif ifnull iif nvl"
# Syntax that renders like a call; the database runs no function for it.
_SYNTAX = "cast try_cast extract exists in any all some filter over within"

_COMMON = " ".join((_AGGREGATES, _WINDOW, _MATH, _STRING, _CONDITIONAL, _SYNTAX))
#: The names above that are syntax, not functions (a grammar writes them as keywords).
SYNTAX = frozenset(_SYNTAX.split())

# Per dialect, what its date handling, regular expressions and JSON need on top; and where
# it has ROLLUP and CUBE, GROUPING() (GROUPING_ID() in DuckDB and Spark; MySQL 8 has GROUPING,
# MariaDB neither, which then says so itself).
_DIALECT_EXTRA = {
    "sqlite": """
        date time datetime julianday unixepoch strftime timediff typeof hex quote like glob
        likelihood likely unlikely sqlite_version json json_extract json_array_length json_type
        json_valid json_each json_tree json_object json_array char zeroblob randomblob
        regexp
    """,
    "postgres": """
        date_part date_trunc age now current_date current_timestamp make_date make_time
        make_timestamp make_interval to_char to_date to_timestamp to_number justify_days
        justify_hours justify_interval isfinite clock_timestamp statement_timestamp
        timezone date_bin regexp_match regexp_matches regexp_like regexp_substr regexp_count
        regexp_split_to_array string_to_array array_to_string array_length cardinality
        unnest generate_series jsonb_extract_path_text json_extract_path_text jsonb_typeof
        json_typeof jsonb_array_length json_array_length to_json to_jsonb row_to_json
        width_bucket scale factorial pg_typeof btrim bit_length encode decode grouping
    """,
    "duckdb": """
        date_part datepart date_trunc datetrunc date_diff datediff date_sub date_add age now
        current_date current_timestamp today make_date make_time make_timestamp strftime
        strptime epoch epoch_ms year month day hour minute second quarter week weekday
        dayofweek dayofyear dayofmonth monthname dayname last_day to_timestamp
        regexp_matches regexp_extract regexp_full_match contains string_split str_split
        list_element array_length len unnest generate_series typeof isnan isinf
        json_extract json_extract_string json_array_length median quantile_cont quantile_disc
        arg_min arg_max argmin argmax min_by max_by count_if any_value first last
        approx_count_distinct fsum favg list list_value struct_pack round_even even factorial
        bit_length range list_transform list_filter list_sort list_distinct list_contains
        list_has list_sum list_aggregate array_to_string grouping grouping_id
    """,
    # MySQL and MariaDB (sqlglot's "mysql"). Not listed, so refused: LOAD_FILE, SLEEP,
    # BENCHMARK, GET_LOCK and the other lock functions, MASTER_POS_WAIT and its kin,
    # NEXTVAL/SETVAL, and any loadable function (sys_exec ...).
    "mysql": """
        date time timestamp now curdate curtime current_date current_time current_timestamp
        localtime localtimestamp utc_timestamp date_format time_format str_to_date year month
        day dayofmonth dayofweek dayofyear week weekday weekofyear yearweek quarter hour minute
        second microsecond dayname monthname last_day makedate maketime from_days to_days
        to_seconds from_unixtime unix_timestamp sec_to_time time_to_sec datediff timediff
        timestampdiff timestampadd date_add date_sub adddate subdate addtime subtime period_add
        period_diff convert_tz if isnull interval substring_index locate lcase ucase mid repeat
        space insert field find_in_set elt hex unhex bin oct conv ord soundex strcmp quote sha
        sha1 sha2 crc32 to_base64 from_base64 regexp_like regexp_replace regexp_substr
        regexp_instr truncate rand log2 log10 std stddev variance bit_xor json_arrayagg
        json_objectagg json_extract json_unquote json_length json_keys json_contains
        json_contains_path json_type json_valid json_object json_array json_search json_value
        json_query json_depth grouping
    """,
    # Spark SQL (and Databricks SQL, largely the same). Not listed, so refused: reflect,
    # java_method and try_reflect (they call Java methods), input_file_name and its kin (the
    # server's file paths), and anything a session registers (CREATE FUNCTION is never sent).
    "spark": """
        date_format date_add date_sub datediff months_between add_months last_day next_day
        trunc date_trunc to_date to_timestamp unix_timestamp from_unixtime current_date
        current_timestamp now make_date date_part year month day dayofmonth dayofweek
        dayofyear weekofyear weekday quarter hour minute second timestampadd timestampdiff
        date_diff dateadd try_to_timestamp instr locate lcase ucase substring_index
        regexp_extract regexp_like regexp_substr regexp_count rlike split split_part
        format_number format_string nvl nvl2 if isnull isnotnull nanvl try_divide
        try_add try_subtract try_multiply collect_list collect_set approx_count_distinct
        percentile percentile_approx median first last any_value count_if max_by min_by std
        bround log1p expm1 hypot pmod rint signum size array_contains element_at array
        sort_array array_join array_distinct explode posexplode struct named_struct map
        coalesce hex unhex sha1 sha2 crc32 hash base64 unbase64 bit_length char_length
        elt repeat space startswith endswith contains btrim len grouping grouping_id
    """,
}

# Allocate their whole result at once, which a time limit cannot interrupt (SQLite's
# randomblob(1e9) is a gigabyte in one step; Spark's space(2e9) fills the server's memory):
# index of the size argument. Nested ones multiply: repeat(lpad('x', 1000), 1000) is a million.
SIZE_ARGUMENTS = {"randomblob": 0, "zeroblob": 0, "lpad": 1, "rpad": 1, "repeat": 1, "space": 0}
MAX_SIZE = 1_000_000
# repeat() multiplies a value of any length (a column's), so its count is held lower.
MAX_REPEAT = 1_000
# Their format's widths allocate too (printf('%999999999d', 1)): the format must be a literal.
FORMAT_FUNCTIONS = frozenset({"printf", "format", "format_string"})

# Catalog table functions: allowed only where the policy opens the introspection views.
CATALOG_FUNCTIONS = {"duckdb": frozenset({"duckdb_tables", "duckdb_columns"}),
                     "sqlite": frozenset({"pragma_table_info"})}

_CALL = re.compile(r'("(?:[^"]|"")+"|`[^`]+`|[A-Za-z_][\w$]*)\s*\(')


@lru_cache(maxsize=None)
def allowed_functions(dialect: str) -> frozenset[str]:
    return frozenset((_COMMON + " " + _DIALECT_EXTRA.get(dialect, "")).split())


def called_names(node: exp.Func, dialect: str) -> set[str]:
    """The lower-case names of every function the database calls to evaluate `node` itself
    (its arguments are other nodes, checked on their own)."""
    if isinstance(node, exp.Anonymous):
        return {str(node.name).strip('"`').lower()}
    rendered = _shallow(node).sql(dialect=dialect, comments=False)
    return {m.group(1).strip('"`').lower() for m in _CALL.finditer(rendered)
            if not _type_parameters(rendered, m, dialect)}


def _type_parameters(rendered: str, call: re.Match[str], dialect: str) -> bool:
    """A built-in type's parameters, not a call: CAST(x AS DECIMAL(10, 2)). A type of the
    database's own (CAST(x AS evil(1))) stays a call to check: it may run code of its own."""
    if not rendered[:call.start()].upper().endswith(" AS "):
        return False
    try:
        kind = exp.DataType.build(call.group(1), dialect=dialect, udt=True).this
    except Exception:  # noqa: BLE001 - not a type sqlglot knows: checked as a call
        return False
    return kind != exp.DataType.Type.USERDEFINED


def _shallow(node: exp.Func) -> exp.Func:
    """The same call with its argument subtrees replaced by placeholders: rendering it costs
    the same whatever the arguments hold, so a deeply nested query stays linear to check.
    Leaves that steer how a call is written (a date part, a type, a literal) are kept."""
    args: dict[str, object] = {}
    for key, value in node.args.items():
        if isinstance(value, list):
            args[key] = [_placeholder(v) for v in value]
        else:
            args[key] = _placeholder(value)
    return type(node)(**args)


_KEPT_LEAVES = (exp.Literal, exp.Var, exp.DataType, exp.Identifier, exp.Star, exp.Null, exp.Boolean)


def _placeholder(value: object) -> object:
    if not isinstance(value, exp.Expression):
        return value
    if isinstance(value, _KEPT_LEAVES):
        return value.copy()
    if isinstance(value, exp.Distinct):  # COUNT(DISTINCT x) is written differently
        return exp.Distinct(expressions=[exp.Placeholder() for _ in value.expressions])
    return exp.Placeholder()
