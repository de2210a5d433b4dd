/**
 * Queries for the read-only guard's tests, as data: hostile ones it must refuse, legitimate
 * analytic ones it must pass. They assume the fixture of query_guard_test.ts: schemas
 * `public` (orders, customers, events, the view big_orders), `sales` (targets), `secret`
 * (salaries), `_table_service` (tables), a table `main.leak`, and a temporary `customers`.
 *
 * @module
 */

/** A query the guard must refuse, why it is hostile, and the status expected (400 unless said). */
export interface Hostile {
  readonly sql: string;
  readonly why: string;
  readonly status?: 400 | 403;
  /** The token's `schemas` claim; every schema when absent. */
  readonly schemas?: readonly string[];
}

/** A query the guard must pass, and the parameters it runs with. */
export interface Legitimate {
  readonly sql: string;
  readonly why: string;
  readonly params?: readonly (string | number | boolean)[];
  /**
   * Why the rewrite's column names differ from the original's: DuckDB names an unaliased
   * computed column after the expression's text, and the rewrite's text differs where a
   * renamed CTE appears, or where the parse tree does not print back as written.
   */
  readonly renamesColumns?: string;
}

const FILE = "/etc/passwd";

/** Statements that are not queries: the parser never gives a tree for them. */
const STATEMENTS: Hostile[] = [
  { sql: "DROP TABLE orders", why: "DDL: drop" },
  { sql: "DROP SCHEMA public CASCADE", why: "DDL: drop schema" },
  { sql: "CREATE TABLE x (a INT)", why: "DDL: create" },
  { sql: "CREATE TABLE x AS SELECT * FROM orders", why: "DDL: create as select" },
  { sql: "CREATE OR REPLACE VIEW public.v AS SELECT 1", why: "DDL: view" },
  { sql: "CREATE MACRO m(a) AS a + 1", why: "DDL: macro" },
  { sql: "CREATE MACRO t() AS TABLE SELECT * FROM _table_service.tables", why: "table macro" },
  { sql: "CREATE SEQUENCE s", why: "DDL: sequence" },
  { sql: "CREATE TYPE mood AS ENUM ('a')", why: "DDL: type" },
  { sql: "CREATE INDEX i ON orders(id)", why: "DDL: index" },
  { sql: "CREATE SECRET (TYPE s3, KEY_ID 'x', SECRET 'y')", why: "DDL: secret" },
  { sql: "CREATE TEMP TABLE t AS SELECT 1", why: "temporary table" },
  { sql: "ALTER TABLE orders ADD COLUMN z INT", why: "DDL: alter" },
  { sql: "ALTER TABLE orders RENAME TO o2", why: "DDL: rename" },
  { sql: "COMMENT ON TABLE orders IS 'x'", why: "DDL: comment" },
  { sql: "INSERT INTO orders (id) VALUES (99)", why: "DML: insert" },
  { sql: "INSERT INTO orders SELECT * FROM orders", why: "DML: insert select" },
  { sql: "UPDATE orders SET amount = 0", why: "DML: update" },
  { sql: "DELETE FROM orders", why: "DML: delete" },
  { sql: "TRUNCATE orders", why: "DML: truncate" },
  {
    sql: "MERGE INTO orders USING customers ON false WHEN NOT MATCHED THEN INSERT (id) VALUES (1)",
    why: "DML: merge",
  },
  { sql: "WITH x AS (SELECT 1) DELETE FROM orders", why: "DML behind WITH" },
  {
    sql: "WITH x AS (SELECT 1) INSERT INTO orders (id) SELECT 1 FROM x",
    why: "insert behind WITH",
  },
  {
    sql: "INSERT INTO orders (id) VALUES (1) RETURNING *",
    why: "RETURNING makes a write look like a read",
  },
  { sql: "PRAGMA version", why: "PRAGMA" },
  { sql: "PRAGMA table_info('orders')", why: "PRAGMA table_info" },
  { sql: "PRAGMA show_tables", why: "PRAGMA lists tables" },
  { sql: "PRAGMA database_list", why: "PRAGMA lists databases" },
  { sql: "PRAGMA enable_profiling", why: "PRAGMA changes settings" },
  { sql: "PRAGMA memory_limit='1TB'", why: "PRAGMA setting" },
  { sql: "SET enable_external_access = true", why: "SET" },
  { sql: "SET GLOBAL threads = 1", why: "SET GLOBAL" },
  { sql: "SET search_path = '_table_service'", why: "SET search_path to the metadata schema" },
  { sql: "SET VARIABLE v = 1", why: "SET VARIABLE" },
  { sql: "RESET threads", why: "RESET" },
  { sql: "USE _table_service", why: "USE" },
  { sql: "ATTACH 'other.duckdb' AS o", why: "ATTACH a file" },
  {
    sql: "ATTACH ':memory:' AS o",
    why: "ATTACH in memory (allowed even with external access off)",
  },
  { sql: "DETACH memory", why: "DETACH" },
  { sql: "COPY orders TO '/tmp/orders.csv'", why: "COPY out" },
  { sql: "COPY orders FROM '/tmp/orders.csv'", why: "COPY in" },
  {
    sql: "COPY (SELECT * FROM orders) TO '/tmp/x.parquet' (FORMAT parquet)",
    why: "COPY query out",
  },
  { sql: "COPY FROM DATABASE memory TO other", why: "COPY database" },
  { sql: "EXPORT DATABASE '/tmp/dump'", why: "EXPORT DATABASE" },
  { sql: "IMPORT DATABASE '/tmp/dump'", why: "IMPORT DATABASE" },
  { sql: "INSTALL httpfs", why: "INSTALL" },
  { sql: "LOAD httpfs", why: "LOAD" },
  { sql: "FORCE INSTALL httpfs FROM community", why: "FORCE INSTALL" },
  { sql: "UPDATE EXTENSIONS", why: "UPDATE EXTENSIONS" },
  { sql: "CALL pragma_version()", why: "CALL" },
  { sql: "CALL duckdb_tables()", why: "CALL a catalogue function" },
  { sql: "CHECKPOINT", why: "CHECKPOINT" },
  { sql: "FORCE CHECKPOINT", why: "FORCE CHECKPOINT" },
  { sql: "VACUUM", why: "VACUUM" },
  { sql: "ANALYZE", why: "ANALYZE" },
  { sql: "BEGIN TRANSACTION", why: "transaction control" },
  { sql: "COMMIT", why: "transaction control" },
  { sql: "ROLLBACK", why: "transaction control" },
  { sql: "PREPARE p AS SELECT 1", why: "PREPARE" },
  { sql: "EXECUTE p", why: "EXECUTE" },
  { sql: "DEALLOCATE p", why: "DEALLOCATE" },
  { sql: "EXPLAIN SELECT 1", why: "EXPLAIN" },
  { sql: "EXPLAIN ANALYZE SELECT * FROM orders", why: "EXPLAIN ANALYZE runs the query" },
  { sql: "SHOW TABLES", why: "SHOW lists the catalogue" },
  { sql: "SHOW ALL TABLES", why: "SHOW ALL TABLES lists every schema" },
  { sql: "SHOW DATABASES", why: "SHOW DATABASES" },
  {
    sql: "SHOW _table_service.tables",
    why: "SHOW of a table is DESCRIBE: its schema is checked",
    status: 403,
  },
  { sql: "DESCRIBE _table_service.tables", why: "DESCRIBE of a metadata table", status: 403 },
  {
    sql: "SUMMARIZE secret.salaries",
    why: "SUMMARIZE outside the claim",
    status: 403,
    schemas: ["public"],
  },
  {
    sql: "PIVOT orders ON status USING sum(amount)",
    why: "PIVOT without IN creates an enum first",
  },
  { sql: "SET lock_configuration = false", why: "unlocking the configuration" },
  { sql: "DROP SECRET s", why: "DDL: secret" },
];

/** Several statements, comments and quoting meant to smuggle a second statement or a name. */
const SMUGGLING: Hostile[] = [
  { sql: "SELECT 1; DROP TABLE orders", why: "a write after a query" },
  { sql: "SELECT 1; SELECT 2", why: "two queries" },
  { sql: "SELECT 1;SELECT * FROM _table_service.tables", why: "a second query on metadata" },
  { sql: "SELECT 1 /* ; */ ; DELETE FROM orders", why: "semicolon after a block comment" },
  { sql: "SELECT 1 -- comment\n; DROP TABLE orders", why: "semicolon after a line comment" },
  { sql: "SELECT '1;'; DROP TABLE orders", why: "semicolon in a string, then another" },
  { sql: "/* SELECT */ DROP TABLE orders", why: "a write behind a comment" },
  { sql: "-- SELECT\nDROP TABLE orders", why: "a write behind a line comment" },
  { sql: ";;DROP TABLE orders", why: "empty statements first" },
  { sql: "SELECT 1;\n\nDROP TABLE orders;", why: "newlines between" },
  { sql: "", why: "nothing" },
  { sql: "   ", why: "only spaces" },
  { sql: "-- only a comment", why: "only a comment" },
  { sql: ";", why: "only a semicolon" },
  { sql: "SELEC 1", why: "not SQL" },
  { sql: "SELECT * FROM", why: "incomplete" },
  { sql: "SELECT 'unterminated", why: "open string" },
  { sql: 'SELECT * FROM "_table_service".tables', why: "quoted metadata schema", status: 403 },
  {
    sql: 'SELECT * FROM "_TABLE_SERVICE"."TABLES"',
    why: "metadata schema in other case",
    status: 403,
  },
  { sql: "SELECT * FROM _Table_Service.tables", why: "mixed case metadata schema", status: 403 },
  { sql: 'SELECT * FROM "_table_service"."tables" AS t', why: "quoted and aliased", status: 403 },
  {
    sql: 'SELECT * FROM U&"_table_servic\\0065".tables',
    why: "unicode escape naming the metadata schema (DuckDB: not implemented)",
  },
  { sql: 'SELECT * FROM "_table_service\u0000".tables', why: "NUL inside a quoted name" },
  { sql: "SELECT * FROM _table_service . tables", why: "spaces around the dot", status: 403 },
  { sql: "SELECT * FROM/**/_table_service.tables", why: "comment as separator", status: 403 },
  {
    sql: "SELECT * FROM orders, _table_service.tables",
    why: "metadata in a cross join",
    status: 403,
  },
  {
    sql: "SELECT (SELECT count(*) FROM _table_service.tables)",
    why: "metadata in a scalar subquery",
    status: 403,
  },
  {
    sql: "SELECT * FROM orders WHERE id IN (SELECT 1 FROM _table_service.tables)",
    why: "metadata in IN",
    status: 403,
  },
  {
    sql: "SELECT * FROM orders WHERE EXISTS (SELECT 1 FROM _table_service.tables)",
    why: "metadata in EXISTS",
    status: 403,
  },
  {
    sql: "WITH t AS (SELECT * FROM _table_service.tables) SELECT * FROM t",
    why: "metadata in a CTE",
    status: 403,
  },
  {
    sql: "SELECT * FROM orders UNION ALL SELECT * FROM _table_service.tables",
    why: "metadata in a union",
    status: 403,
  },
  {
    sql: "SELECT * FROM orders, LATERAL (SELECT * FROM _table_service.tables) x",
    why: "metadata in LATERAL",
    status: 403,
  },
  {
    sql: "SELECT list_transform([1], x -> (SELECT count(*) FROM _table_service.tables))",
    why: "metadata in a lambda",
    status: 403,
  },
  {
    sql: "SELECT * FROM (FROM _table_service.tables)",
    why: "metadata in FROM-first subquery",
    status: 403,
  },
  {
    sql: "SELECT * FROM orders JOIN _table_service.tables USING (id)",
    why: "metadata in JOIN USING",
    status: 403,
  },
  {
    sql: "SELECT * FROM orders ASOF JOIN _table_service.tables t ON true",
    why: "metadata in ASOF join",
    status: 403,
  },
  {
    sql: "SELECT * FROM orders POSITIONAL JOIN _table_service.tables",
    why: "metadata in POSITIONAL join",
    status: 403,
  },
  {
    sql: "SELECT * FROM _table_service.tables PIVOT (count(*) FOR name IN ('x'))",
    why: "metadata under PIVOT",
    status: 403,
  },
  {
    sql: "SELECT * FROM range((SELECT count(*) FROM _table_service.tables))",
    why: "metadata in a table function argument",
    status: 403,
  },
  {
    sql: "SELECT * FROM memory._table_service.tables",
    why: "metadata with its catalogue",
    status: 403,
  },
  { sql: "SELECT * FROM main.leak", why: "DuckDB's main schema", status: 403 },
  { sql: "SELECT * FROM memory.main.leak", why: "main schema with its catalogue", status: 403 },
  { sql: "SELECT * FROM memory.leak", why: "catalogue.table falls back to main in DuckDB" },
  { sql: "SELECT * FROM leak", why: "an unqualified name resolves in public only" },
  { sql: "SELECT * FROM temp.main.customers", why: "the temporary catalogue", status: 403 },
  { sql: "SELECT * FROM temp.customers", why: "the temporary schema", status: 403 },
  { sql: "SELECT * FROM system.main.duckdb_tables", why: "the system catalogue", status: 403 },
  { sql: "SELECT * FROM other_db.public.orders", why: "another database", status: 403 },
  { sql: "SELECT * FROM nope", why: "a table that does not exist" },
  { sql: "SELECT * FROM public.nope", why: "a qualified table that does not exist" },
  { sql: "SELECT * FROM nope_schema.orders", why: "a schema that does not exist" },
  {
    sql: "WITH x AS (SELECT 1) SELECT * FROM (SELECT * FROM y)",
    why: "an unknown name beside a CTE",
  },
  {
    sql: "SELECT * FROM (WITH pg_tables AS (SELECT 1) SELECT 1), pg_tables",
    why: "a CTE name used out of its scope",
  },
  {
    sql: "WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a",
    why: "a CTE used before it is defined",
  },
  { sql: "SELECT * FROM orders AT (VERSION => 1)", why: "time travel clause" },
  { sql: "SELECT 1::_table_service.mood", why: "a type of the metadata schema" },
  { sql: "SELECT 'x'::memory.public.mood", why: "a qualified user type" },
  {
    sql: "SELECT main.abs(1) FROM _table_service.tables",
    why: "allowed function, forbidden table",
    status: 403,
  },
  {
    sql: "SELECT * FROM secret.salaries",
    why: "a schema outside the claim",
    status: 403,
    schemas: ["public", "sales"],
  },
  {
    sql: "SELECT * FROM sales.targets",
    why: "a schema outside the claim",
    status: 403,
    schemas: ["public"],
  },
  {
    sql: "SELECT * FROM orders",
    why: "the default schema outside the claim",
    status: 403,
    schemas: ["sales"],
  },
  {
    sql: "SELECT * FROM SALES.TARGETS",
    why: "claim matched ignoring case, still outside",
    status: 403,
    schemas: ["public"],
  },
  {
    sql: "SELECT * FROM orders JOIN secret.salaries ON true",
    why: "one table outside the claim",
    status: 403,
    schemas: ["public"],
  },
  {
    sql: "WITH s AS (SELECT * FROM secret.salaries) SELECT * FROM orders",
    why: "an unused CTE outside the claim",
    status: 403,
    schemas: ["public"],
  },
  {
    sql: "SELECT * FROM secret.nope",
    why: "outside the claim: 403 before existence",
    status: 403,
    schemas: ["public"],
  },
  {
    sql: "DESCRIBE secret.salaries",
    why: "DESCRIBE outside the claim",
    status: 403,
    schemas: ["public"],
  },
];

/** Names that mean something else than they seem once the database defines them. */
const SHADOWED: Hostile[] = [
  { sql: "SELECT ucase(name) FROM customers", why: "an allowed name a temporary macro hides" },
  { sql: "SELECT lcase(name) FROM customers", why: "an allowed name a macro of main hides" },
  {
    sql: "SELECT * FROM orders PIVOT (sum(amount) FOR status IN mood)",
    why: "PIVOT over an enum's values",
  },
  { sql: 'WITH a AS (SELECT 1) SELECT * FROM "a#1"', why: "a name like a renamed CTE is no CTE" },
];

/** Table functions and replacement scans that read files or the network. */
const FILES: Hostile[] = [
  ...[
    "read_csv",
    "read_csv_auto",
    "read_json",
    "read_json_auto",
    "read_json_objects",
    "read_json_objects_auto",
    "read_ndjson",
    "read_ndjson_auto",
    "read_ndjson_objects",
    "read_parquet",
    "parquet_scan",
    "parquet_metadata",
    "parquet_schema",
    "parquet_file_metadata",
    "parquet_kv_metadata",
    "parquet_full_metadata",
    "parquet_bloom_probe",
    "read_text",
    "read_blob",
    "glob",
    "sniff_csv",
    "read_duckdb",
    "read_xlsx",
    "sqlite_scan",
    "postgres_scan",
    "iceberg_scan",
    "delta_scan",
  ].map((fn) => ({ sql: `SELECT * FROM ${fn}('${FILE}')`, why: `${fn} reads files` })),
  { sql: "SELECT * FROM read_csv(['/etc/passwd', '/etc/hosts'])", why: "a list of files" },
  { sql: "SELECT * FROM read_csv('/etc/passwd', header = false)", why: "named parameters" },
  { sql: "SELECT * FROM read_csv('https://example.com/x.csv')", why: "network" },
  { sql: "SELECT * FROM read_parquet('s3://bucket/x.parquet')", why: "object storage" },
  {
    sql: "SELECT * FROM read_json('http://169.254.169.254/latest/meta-data/')",
    why: "cloud metadata endpoint",
  },
  { sql: "SELECT * FROM glob('/*')", why: "lists the file system" },
  { sql: "SELECT * FROM glob('data/spool/*')", why: "lists the spool directory" },
  { sql: "SELECT * FROM orders JOIN read_csv('/etc/passwd') ON true", why: "file in a join" },
  { sql: "SELECT (SELECT count(*) FROM read_text('/etc/passwd'))", why: "file in a subquery" },
  {
    sql: "WITH f AS (SELECT * FROM read_text('/etc/passwd')) SELECT * FROM f",
    why: "file in a CTE",
  },
  { sql: "SELECT * FROM orders, LATERAL read_csv(status)", why: "lateral file read from a column" },
  { sql: "SELECT * FROM READ_CSV('/etc/passwd')", why: "upper case" },
  { sql: "SELECT * FROM \"read_csv\"('/etc/passwd')", why: "quoted function name" },
  { sql: "SELECT * FROM main.read_csv('/etc/passwd')", why: "schema-qualified" },
  { sql: "SELECT * FROM system.main.read_csv('/etc/passwd')", why: "catalogue-qualified" },
  { sql: "SELECT * FROM '/etc/passwd'", why: "replacement scan of a path" },
  { sql: "FROM 'orders.csv'", why: "replacement scan, FROM first" },
  { sql: "SELECT * FROM 'data.parquet'", why: "replacement scan of parquet" },
  { sql: "SELECT * FROM 'https://example.com/x.csv'", why: "replacement scan of a URL" },
  { sql: 'SELECT * FROM "/etc/passwd"', why: "replacement scan with a quoted identifier" },
  { sql: "SELECT * FROM 'data/spool/upload-1.json'", why: "another client's spooled upload" },
  { sql: "SELECT * FROM 's3://bucket/*.parquet'", why: "replacement scan with a glob" },
  { sql: "SELECT * FROM public.'x.csv'", why: "qualified replacement scan" },
  {
    sql: 'SELECT * FROM memory.public."x.csv"',
    why: "DuckDB tries a qualified name as a file too",
  },
  { sql: "SELECT * FROM orders, '/etc/passwd'", why: "replacement scan in a cross join" },
  { sql: "SELECT * FROM (SELECT * FROM 'x.csv')", why: "replacement scan in a subquery" },
  {
    sql: "SELECT * FROM query('SELECT * FROM read_csv(''/etc/passwd'')')",
    why: "query() runs SQL text",
  },
  {
    sql: "SELECT * FROM query_table('_table_service.tables')",
    why: "query_table() names a table in text",
  },
  { sql: "SELECT * FROM json_execute_serialized_sql('{}')", why: "runs a serialised plan" },
  { sql: "SELECT * FROM json_each('{\"a\":1}')", why: "table function outside the list" },
  { sql: "SELECT * FROM arrow_scan(0, 0, 0)", why: "reads memory by address" },
  { sql: "SELECT * FROM seq_scan()", why: "internal scan" },
  { sql: "SELECT * FROM test_all_types()", why: "test function" },
  { sql: "SELECT * FROM repeat_row(1, num_rows := 1000000000)", why: "row bomb outside the list" },
  { sql: "SELECT * FROM checkpoint()", why: "checkpoint as a table function" },
  { sql: "SELECT * FROM force_checkpoint()", why: "force_checkpoint" },
  { sql: "SELECT * FROM enable_logging()", why: "turns on logging" },
  { sql: "SELECT * FROM truncate_duckdb_logs()", why: "clears logs" },
  { sql: "SELECT * FROM enable_profiling()", why: "changes profiling" },
  { sql: "SELECT * FROM summary(orders)", why: "summary table function" },
  { sql: "SELECT * FROM histogram_values(orders, amount)", why: "a table macro" },
  { sql: "SELECT * FROM sql_auto_complete('SEL')", why: "autocomplete" },
  { sql: "SELECT * FROM icu_calendar_names()", why: "table function outside the list" },
  { sql: "SELECT * FROM pg_timezone_names()", why: "table function outside the list" },
];

/** Scalar functions reading settings, the environment, state, or files. */
const SCALARS: Hostile[] = [
  { sql: "SELECT current_setting('allowed_directories')", why: "reads a setting: the spool path" },
  { sql: "SELECT current_setting('temp_directory')", why: "reads a setting" },
  { sql: "SELECT getenv('HOME')", why: "reads the environment" },
  { sql: "SELECT getvariable('v')", why: "reads a variable" },
  { sql: "SELECT nextval('s')", why: "advances a sequence" },
  { sql: "SELECT currval('s')", why: "reads a sequence" },
  { sql: "SELECT setseed(0.5)", why: "changes session state" },
  { sql: "SELECT current_schemas(true)", why: "lists the search path" },
  { sql: "SELECT current_database()", why: "names the database" },
  { sql: "SELECT current_schema()", why: "catalogue function called" },
  { sql: "SELECT current_query()", why: "session introspection" },
  { sql: "SELECT current_connection_id()", why: "session introspection" },
  { sql: "SELECT current_transaction_id()", why: "session introspection" },
  { sql: "SELECT txid_current()", why: "session introspection" },
  { sql: "SELECT version()", why: "engine introspection" },
  { sql: "SELECT in_search_path('memory', '_table_service')", why: "probes the catalogue" },
  { sql: "SELECT sleep_ms(100000)", why: "sleeps" },
  { sql: "SELECT pg_sleep(100)", why: "sleeps" },
  { sql: "SELECT write_log('x')", why: "writes the log" },
  { sql: "SELECT error('x')", why: "raises on demand" },
  { sql: "SELECT stats(id) FROM orders", why: "engine internals" },
  { sql: "SELECT json_serialize_sql('SELECT 1')", why: "parser access" },
  { sql: "SELECT json_deserialize_sql('{}')", why: "parser access" },
  {
    sql: "SELECT json_serialize_plan('SELECT * FROM _table_service.tables')",
    why: "plans any text, names tables",
  },
  {
    sql: "SELECT has_table_privilege('_table_service.tables', 'select')",
    why: "probes the catalogue",
  },
  { sql: "SELECT has_schema_privilege('_table_service', 'usage')", why: "probes the catalogue" },
  { sql: "SELECT pg_get_viewdef('big_orders')", why: "reads a view's definition" },
  { sql: "SELECT pg_get_constraintdef(1)", why: "reads the catalogue" },
  { sql: "SELECT col_description(1, 1)", why: "reads the catalogue" },
  { sql: "SELECT obj_description(1, 'pg_class')", why: "reads the catalogue" },
  { sql: "SELECT pg_table_is_visible(1)", why: "probes the catalogue" },
  { sql: "SELECT pg_typeof(1)", why: "pg_catalog function" },
  { sql: "SELECT format_pg_type('INTEGER', NULL)", why: "pg_catalog function" },
  { sql: "SELECT pg_catalog.abs(1)", why: "an allowed name in another schema" },
  { sql: "SELECT system.main.abs(1)", why: "an allowed name with a catalogue" },
  { sql: "SELECT _table_service.f(1)", why: "a function of the metadata schema" },
  { sql: "SELECT public.f(1)", why: "a user schema's function" },
  { sql: "SELECT enum_range(NULL::mood)", why: "reads a type's values" },
  { sql: "SELECT __internal_compress_string_ubigint('a')", why: "internal function" },
  { sql: "SELECT constant_or_null(1, 2)", why: "internal function" },
  { sql: "SELECT parse_path('/etc/passwd')", why: "path parsing, not on the list" },
  { sql: "SELECT finalize(sum(1) EXPORT_STATE)", why: "aggregate state internals" },
  { sql: "SELECT make_type('INTEGER')", why: "type constructors" },
  { sql: "SELECT inet_client_addr()", why: "connection introspection" },
  { sql: "SELECT pg_postmaster_start_time()", why: "server introspection" },
  { sql: "SELECT get_block_size('memory')", why: "storage introspection" },
  { sql: "SELECT icu_sort_key('a', 'en')", why: "not on the list" },
  { sql: "SELECT vector_type(1)", why: "engine internals" },
  { sql: "SELECT alias(id) FROM orders", why: "not on the list" },
  { sql: "SELECT list_transform([1], x -> getenv('HOME'))", why: "refused function in a lambda" },
  {
    sql: "SELECT [current_setting('threads') FOR x IN [1]]",
    why: "refused function in a list comprehension",
  },
  {
    sql: "SELECT COLUMNS(c -> current_setting('x') = c) FROM orders",
    why: "refused function in COLUMNS",
  },
  {
    sql: "SELECT sum(id) FILTER (WHERE getenv('x') = '') FROM orders",
    why: "refused function in FILTER",
  },
  { sql: "SELECT * FROM orders ORDER BY getenv('x')", why: "refused function in ORDER BY" },
  {
    sql: "SELECT * FROM orders LIMIT (SELECT length(getenv('HOME')))",
    why: "refused function in LIMIT",
  },
  {
    sql: "SELECT * FROM orders QUALIFY current_setting('x') = ''",
    why: "refused function in QUALIFY",
  },
  {
    sql: "SELECT id FROM orders GROUP BY id HAVING getenv('x') = ''",
    why: "refused function in HAVING",
  },
  { sql: "SELECT CASE WHEN true THEN current_setting('x') END", why: "refused function in CASE" },
  { sql: "SELECT CAST(current_setting('x') AS INT)", why: "refused function in CAST" },
  {
    sql: "SELECT 1 WHERE current_setting('x') BETWEEN 'a' AND 'z'",
    why: "refused function in BETWEEN",
  },
  { sql: "SELECT row_number() OVER (ORDER BY getenv('x'))", why: "refused function in a window" },
  { sql: "SELECT getvariable('x') OVER ()", why: "refused window function" },
  {
    sql: "SELECT * FROM range(10) WHERE range IN (SELECT length(getenv('x')))",
    why: "refused in IN subquery",
  },
  { sql: "VALUES (current_setting('x'))", why: "refused function in VALUES" },
  {
    sql: "SELECT * FROM orders PIVOT (sum(length(getenv('x'))) FOR status IN ('a'))",
    why: "refused function in PIVOT",
  },
];

/** Catalogue views and functions that would name other schemas. */
const CATALOGUE: Hostile[] = [
  ...[
    "duckdb_tables",
    "duckdb_columns",
    "duckdb_schemas",
    "duckdb_views",
    "duckdb_databases",
    "duckdb_functions",
    "duckdb_settings",
    "duckdb_constraints",
    "duckdb_indexes",
    "duckdb_sequences",
    "duckdb_types",
    "duckdb_dependencies",
    "duckdb_extensions",
    "duckdb_secrets",
    "duckdb_memory",
    "duckdb_temporary_files",
    "duckdb_variables",
    "duckdb_keywords",
    "duckdb_optimizers",
    "duckdb_logs",
    "duckdb_prepared_statements",
    "pragma_table_info",
    "pragma_storage_info",
    "pragma_database_size",
    "pragma_metadata_info",
    "pragma_version",
    "pragma_platform",
    "pragma_show",
    "pragma_collations",
    "pragma_user_agent",
  ].map((fn) => ({
    sql: fn.startsWith("pragma_table") || fn === "pragma_storage_info" || fn === "pragma_show"
      ? `SELECT * FROM ${fn}('orders')`
      : `SELECT * FROM ${fn}()`,
    why: `${fn} reads the catalogue, settings or state`,
  })),
  { sql: "SELECT * FROM duckdb_tables", why: "catalogue view without parentheses" },
  { sql: "SELECT * FROM duckdb_columns", why: "catalogue view without parentheses" },
  { sql: "SELECT * FROM duckdb_indexes", why: "catalogue view without parentheses" },
  { sql: "SELECT * FROM sqlite_master", why: "SQLite mirror" },
  { sql: "SELECT * FROM sqlite_schema", why: "SQLite mirror" },
  { sql: "SELECT * FROM sqlite_temp_master", why: "SQLite mirror" },
  { sql: "SELECT * FROM information_schema.tables", why: "information_schema", status: 403 },
  { sql: "SELECT * FROM information_schema.columns", why: "information_schema", status: 403 },
  { sql: "SELECT * FROM information_schema.schemata", why: "information_schema", status: 403 },
  {
    sql: "SELECT * FROM INFORMATION_SCHEMA.TABLES",
    why: "information_schema upper case",
    status: 403,
  },
  {
    sql: "SELECT * FROM system.information_schema.tables",
    why: "information_schema with catalogue",
    status: 403,
  },
  { sql: "SELECT * FROM pg_catalog.pg_tables", why: "pg_catalog", status: 403 },
  { sql: "SELECT * FROM pg_catalog.pg_namespace", why: "pg_catalog", status: 403 },
  { sql: "SELECT * FROM pg_catalog.pg_class", why: "pg_catalog", status: 403 },
  { sql: "SELECT * FROM pg_tables", why: "pg_catalog view through the search path" },
  { sql: "SELECT * FROM pg_namespace", why: "pg_catalog view through the search path" },
  { sql: "SELECT * FROM pg_class", why: "pg_catalog view through the search path" },
  { sql: "SELECT * FROM pg_settings", why: "pg_catalog settings view" },
  { sql: "SELECT * FROM pg_views", why: "pg_catalog views" },
  { sql: "SELECT * FROM system.pg_catalog.pg_proc", why: "pg_catalog with catalogue", status: 403 },
  {
    sql: "SELECT * FROM tables.public.orders",
    why: "the service's catalogue name, not this database's",
    status: 403,
  },
  { sql: "SELECT * FROM tables.orders", why: "the reserved schema name tables", status: 403 },
  {
    sql: "WITH duckdb_tables AS (SELECT 1) SELECT * FROM duckdb_tables()",
    why: "a CTE does not make a function a table",
  },
];

/** Every hostile query of the catalogue. */
export const HOSTILE: readonly Hostile[] = [
  ...STATEMENTS,
  ...SMUGGLING,
  ...SHADOWED,
  ...FILES,
  ...SCALARS,
  ...CATALOGUE,
];

/**
 * Legitimate analytic queries. Also legitimate, and left to a deadline rather than the guard:
 * `WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r`
 * (never ends) and `SELECT count(*) FROM range(1e6) a, range(1e6) b` (a cross join bomb).
 */
export const LEGITIMATE: readonly Legitimate[] = [
  { sql: "SELECT * FROM orders", why: "everything" },
  {
    sql: "SELECT id, amount FROM public.orders WHERE amount > 10 ORDER BY id",
    why: "qualified, filtered",
  },
  {
    sql: "SELECT count(*), sum(amount), avg(amount), min(created_at), max(created_at) FROM orders",
    why: "aggregates",
  },
  {
    sql:
      "SELECT status, count(*) AS n FROM orders GROUP BY status HAVING count(*) > 0 ORDER BY n DESC",
    why: "group by, having",
  },
  { sql: "SELECT status, count(*) FROM orders GROUP BY ALL ORDER BY ALL", why: "GROUP BY ALL" },
  {
    sql: "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id",
    why: "join (temp customers must not shadow)",
  },
  {
    sql: "SELECT * FROM orders o LEFT JOIN customers c ON c.id = o.customer_id WHERE c.id IS NULL",
    why: "anti join",
  },
  { sql: "SELECT * FROM orders JOIN customers USING (id)", why: "join using" },
  { sql: "SELECT * FROM orders NATURAL JOIN customers", why: "natural join" },
  {
    sql: "SELECT c.name, t.region FROM customers c CROSS JOIN sales.targets t",
    why: "cross join across schemas",
  },
  {
    sql: "SELECT * FROM orders o, LATERAL (SELECT o.amount * 2 AS double_amount) d",
    why: "lateral",
  },
  {
    sql: "SELECT * FROM events e ASOF JOIN orders o ON e.at >= o.created_at ORDER BY e.at",
    why: "asof join",
  },
  {
    sql: "WITH paid AS (SELECT * FROM orders WHERE status = 'paid') SELECT count(*) FROM paid",
    why: "CTE",
  },
  {
    sql:
      "WITH a AS (SELECT id FROM orders), b AS (SELECT a.id FROM a) SELECT b.id FROM b ORDER BY 1",
    why: "CTE over CTE with qualifiers",
  },
  { sql: "WITH orders AS (SELECT 1 AS id) SELECT * FROM orders", why: "a CTE shadowing a table" },
  {
    sql: "WITH x AS (SELECT 1 AS v) SELECT (SELECT v FROM x), * FROM (SELECT * FROM x) s",
    why: "CTE seen in nested subqueries",
    renamesColumns: "the first column is named after its subquery, which reads the renamed CTE",
  },
  {
    sql:
      "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) SELECT sum(n) FROM r",
    why: "recursive CTE",
  },
  {
    sql: "WITH x AS MATERIALIZED (SELECT * FROM orders) SELECT count(*) FROM x",
    why: "materialised CTE",
  },
  { sql: "SELECT id FROM orders UNION SELECT id FROM customers ORDER BY id", why: "union" },
  { sql: "SELECT id FROM orders INTERSECT SELECT id FROM customers", why: "intersect" },
  { sql: "SELECT id FROM orders EXCEPT ALL SELECT id FROM customers", why: "except" },
  { sql: "SELECT * FROM orders UNION ALL BY NAME SELECT * FROM orders", why: "union by name" },
  { sql: "VALUES (1, 'a'), (2, 'b')", why: "VALUES" },
  { sql: "SELECT * FROM (VALUES (1), (2)) v(x) WHERE x > 1", why: "VALUES in FROM" },
  { sql: "FROM orders SELECT id WHERE amount > 0", why: "FROM first" },
  { sql: "FROM orders", why: "FROM alone" },
  {
    sql:
      "SELECT * FROM orders WHERE customer_id IN (SELECT id FROM customers WHERE country = 'NO')",
    why: "IN subquery",
  },
  {
    sql: "SELECT *, (SELECT max(amount) FROM orders) AS top FROM customers",
    why: "scalar subquery",
  },
  {
    sql:
      "SELECT * FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id)",
    why: "correlated EXISTS",
  },
  {
    sql:
      "SELECT id, amount, sum(amount) OVER (ORDER BY created_at ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM orders",
    why: "running total",
  },
  {
    sql:
      "SELECT id, row_number() OVER w, rank() OVER w, lag(amount) OVER w, lead(amount, 1, 0) OVER w FROM orders WINDOW w AS (PARTITION BY status ORDER BY id)",
    why: "window functions",
  },
  {
    sql:
      "SELECT id, ntile(2) OVER (ORDER BY amount), percent_rank() OVER (ORDER BY amount), first_value(id) OVER (ORDER BY id) FROM orders",
    why: "more windows",
  },
  {
    sql:
      "SELECT * FROM orders QUALIFY row_number() OVER (PARTITION BY status ORDER BY amount DESC) = 1",
    why: "QUALIFY",
  },
  {
    sql:
      "SELECT CAST(amount AS DOUBLE), amount::VARCHAR, TRY_CAST(status AS INTEGER), id::BIGINT FROM orders",
    why: "casts",
  },
  {
    sql:
      "SELECT date_trunc('month', created_at), extract(year FROM created_at), strftime(created_at, '%Y-%m'), created_at + INTERVAL 1 DAY, date_diff('day', created_at, TIMESTAMP '2027-01-01') FROM orders",
    why: "date functions",
    renamesColumns: "INTERVAL 1 DAY prints back with DOUBLE quoted",
  },
  {
    sql:
      "SELECT current_date, now() - INTERVAL '1 hour', make_date(2026, 1, 1), last_day(DATE '2026-02-01'), dayname(DATE '2026-01-01')",
    why: "date constants",
  },
  {
    sql:
      "SELECT time_bucket(INTERVAL '1 week', created_at) AS week, count(*) FROM orders GROUP BY week",
    why: "time_bucket",
  },
  {
    sql:
      "SELECT regexp_matches(status, '^p'), regexp_replace(status, 'a', 'b', 'g'), regexp_extract(status, '(.)', 1), status SIMILAR TO 'p.*' FROM orders",
    why: "regex",
  },
  {
    sql:
      "SELECT upper(name), lower(name), length(name), substr(name, 1, 2), concat(name, '!'), name || '?', trim('  x '), lpad(name, 5, '*'), replace(name, 'A', 'a'), split_part('a,b', ',', 2) FROM customers",
    why: "string functions",
  },
  {
    sql:
      "SELECT name LIKE 'A%', name ILIKE 'a%', name NOT LIKE '%z', starts_with(name, 'A'), contains(name, 'n'), levenshtein(name, 'Anna') FROM customers",
    why: "string matching",
  },
  {
    sql:
      "SELECT tags, len(tags), tags[1], list_contains(tags, 'a'), list_transform(tags, t -> upper(t)), list_filter(tags, t -> t <> 'b'), [t || '!' FOR t IN tags], unnest(tags) FROM orders",
    why: "list functions and lambdas",
    renamesColumns: "a list comprehension's lambda prints back in arrow syntax",
  },
  { sql: "SELECT id, unnest(tags) AS tag FROM orders", why: "unnest in select" },
  { sql: "SELECT * FROM unnest([1, 2, 3]) AS u(x)", why: "unnest table function" },
  {
    sql:
      "SELECT list_sort([3, 1, 2]), list_distinct([1, 1]), array_length([1, 2]), list_aggregate([1, 2], 'sum'), flatten([[1], [2]])",
    why: "list utilities",
  },
  {
    sql:
      "SELECT {'a': 1, 'b': 'x'} AS s, ({'a': 1}).a, struct_pack(k := 1), map(['k'], [1])['k'], map_keys(map {'x': 1})",
    why: "structs and maps",
  },
  {
    sql:
      "SELECT meta->>'k', json_extract(meta, '$.k'), json_extract_string(meta, '$.k'), json_keys(meta), json_valid(meta), to_json({'a': 1}) FROM orders",
    why: "JSON extraction",
  },
  { sql: "SELECT * FROM orders WHERE id = $1", why: "positional parameter", params: [1] },
  {
    sql: "SELECT * FROM orders WHERE id = ? AND status = ?",
    why: "question-mark parameters",
    params: [1, "paid"],
  },
  {
    sql: "SELECT $1::INTEGER + $2::INTEGER AS s",
    why: "parameters in expressions",
    params: [1, 2],
  },
  { sql: "SELECT * FROM range(5) r(i) WHERE i % 2 = 0", why: "range table function" },
  {
    sql: "SELECT * FROM generate_series(DATE '2026-01-01', DATE '2026-01-05', INTERVAL 1 DAY)",
    why: "date series",
  },
  { sql: "SELECT generate_series(1, 3), range(3)", why: "scalar series" },
  {
    sql:
      "SELECT COALESCE(NULL, 1), NULLIF(1, 1), IF(true, 'y', 'n'), CASE WHEN 1 > 0 THEN 'pos' ELSE 'neg' END, greatest(1, 2), least(1, 2)",
    why: "conditionals",
  },
  {
    sql:
      "SELECT abs(-1), round(2.567, 2), floor(1.5), ceil(1.5), sqrt(16), power(2, 10), ln(10), log10(100), pi(), 7 // 2, 7 % 2, 2 ** 3",
    why: "math",
  },
  {
    sql:
      "SELECT median(amount), quantile_cont(amount, 0.9), percentile_cont(0.5) WITHIN GROUP (ORDER BY amount), stddev(amount), mode(status), approx_count_distinct(id) FROM orders",
    why: "statistics",
  },
  {
    sql:
      "SELECT string_agg(name, ', ' ORDER BY name), list(name), arg_max(name, id), count(DISTINCT country), bool_and(id > 0), histogram(country) FROM customers",
    why: "more aggregates",
  },
  {
    sql:
      "SELECT sum(amount) FILTER (WHERE status = 'paid'), count(*) FILTER (WHERE status <> 'paid') FROM orders",
    why: "FILTER",
  },
  { sql: "SELECT status, sum(amount) FROM orders GROUP BY ROLLUP (status)", why: "ROLLUP" },
  {
    sql:
      "SELECT status, customer_id, count(*) FROM orders GROUP BY GROUPING SETS ((status), (customer_id), ())",
    why: "grouping sets",
  },
  {
    sql: "SELECT * FROM orders PIVOT (sum(amount) FOR status IN ('paid', 'open'))",
    why: "PIVOT with IN",
  },
  { sql: "UNPIVOT customers ON name, country INTO NAME field VALUE val", why: "UNPIVOT" },
  { sql: "SELECT * EXCLUDE (meta) FROM orders", why: "star EXCLUDE" },
  { sql: "SELECT * REPLACE (amount * 2 AS amount) FROM orders", why: "star REPLACE" },
  { sql: "SELECT COLUMNS('^a.*') FROM orders", why: "COLUMNS regex" },
  { sql: "SELECT max(COLUMNS(* EXCLUDE (tags, meta))) FROM orders", why: "COLUMNS star" },
  { sql: "SELECT * FROM big_orders", why: "a view" },
  { sql: "SELECT * FROM ORDERS WHERE ID = 1", why: "names in other case" },
  { sql: 'SELECT "id" FROM "public"."orders"', why: "quoted names" },
  { sql: "SELECT * FROM memory.public.orders", why: "the database's own catalogue name" },
  {
    sql: "SELECT * FROM orders ORDER BY amount DESC NULLS LAST LIMIT 10 OFFSET 1",
    why: "order, limit, offset",
  },
  {
    sql: "SELECT DISTINCT ON (status) status, id FROM orders ORDER BY status, id",
    why: "DISTINCT ON",
  },
  { sql: "SELECT * FROM orders USING SAMPLE 50 PERCENT (bernoulli)", why: "sample" },
  {
    sql: "SELECT md5(name), sha256(name), hash(name), gen_random_uuid() IS NOT NULL FROM customers",
    why: "hashes",
  },
  { sql: "SELECT #1, #2 FROM customers", why: "positional references" },
  { sql: "DESCRIBE orders", why: "describe a readable table" },
  { sql: "SUMMARIZE SELECT amount FROM orders", why: "summarise a query" },
  { sql: "SELECT current_date AS d, current_timestamp AS ts", why: "SQL value keywords" },
  { sql: "-- a comment\nSELECT 1 /* another */", why: "comments around one query" },
  { sql: "SELECT 1;", why: "a trailing semicolon" },
  {
    sql: "SELECT 9007199254740993 AS big, 123456789012345678901234567890 AS huge, 1.50 AS d",
    why: "numbers kept exact through the rewrite",
  },
];
