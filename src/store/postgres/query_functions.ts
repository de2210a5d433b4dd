/**
 * The functions a client's read-only query may call on PostgreSQL: an allow-list, chosen by
 * category, as on DuckDB (../duckdb/query_functions.ts) and for the same reason: each release
 * and extension adds functions, and a deny-list would let each new one in unseen.
 *
 * Left out on purpose, whatever the category:
 * - files, large objects, the network and other databases (`pg_read_file`, `pg_ls_dir`,
 *   `lo_import`, `lo_get`, `dblink`, `pg_stat_file`...), even though a role without those
 *   grants could not run them: the check should not depend on how the role was set up;
 * - settings and session state (`current_setting`, `set_config`, `setseed`, `nextval`,
 *   `pg_advisory_lock`, `pg_notify`, `txid_current`, `pg_backend_pid`...);
 * - the catalogue and who is asking (every `pg_*`, `has_*_privilege`, `to_reg*`, `obj_description`,
 *   `format_type`, `version`, `current_schemas`, `inet_server_addr`...), which name other
 *   schemas, roles or the server;
 * - anything that runs SQL given as text (`query_to_xml`, `table_to_xml`, `cursor_to_xml`,
 *   `schema_to_xml`, `database_to_xml` and their `_xmlschema` kin), which would escape the check;
 * - waiting (`pg_sleep`, `pg_sleep_for`, `pg_sleep_until`).
 *
 * `greatest`, `least`, `coalesce`, `nullif`, `CASE`, `ARRAY[...]` and `ROW(...)` are syntax,
 * not calls: the parser gives them nodes of their own. SQL's special forms (`EXTRACT`,
 * `TRIM`, `SUBSTRING ... FROM`, `AT TIME ZONE`, `OVERLAPS`, `SIMILAR TO`, `LIKE ... ESCAPE`,
 * `IS NORMALIZED`) come out of the parser as calls of `pg_catalog.<name>`, so those names are
 * listed too.
 *
 * @module
 */

/** Arithmetic, rounding, trigonometry. */
// deno-fmt-ignore
const MATH = [
  "abs", "acos", "acosd", "acosh", "asin", "asind", "asinh", "atan", "atan2", "atan2d", "atand",
  "atanh", "cbrt", "ceil", "ceiling", "cos", "cosd", "cosh", "cot", "cotd", "degrees", "div",
  "exp", "factorial", "floor", "gcd", "lcm", "ln", "log", "log10", "min_scale", "mod", "pi",
  "pow", "power", "radians", "random", "round", "scale", "sign", "sin", "sind", "sinh", "sqrt",
  "tan", "tand", "tanh", "trim_scale", "trunc", "width_bucket", "num_nonnulls", "num_nulls",
  "gen_random_uuid",
];

/** Text and bytes: case, padding, search, regular expressions, encoding, hashing. */
// deno-fmt-ignore
const STRING = [
  "ascii", "bit_count", "bit_length", "btrim", "char_length", "character_length", "chr",
  "concat", "concat_ws", "convert", "convert_from", "convert_to", "decode", "encode", "format",
  "get_bit", "get_byte", "initcap", "is_normalized", "left", "length", "like_escape", "lower",
  "lpad", "ltrim", "md5", "normalize", "octet_length", "overlay", "parse_ident", "position",
  "quote_ident", "quote_literal", "quote_nullable", "regexp_count", "regexp_instr",
  "regexp_like", "regexp_match", "regexp_matches", "regexp_replace", "regexp_split_to_array",
  "regexp_split_to_table", "regexp_substr", "repeat", "replace", "reverse", "right", "rpad",
  "rtrim", "set_bit", "set_byte", "sha224", "sha256", "sha384", "sha512", "similar_to_escape",
  "split_part", "starts_with", "string_to_array", "string_to_table", "strpos", "substr",
  "substring", "to_ascii", "to_hex", "translate", "unistr", "upper",
  // Formatting to and from text.
  "to_char", "to_date", "to_number", "to_timestamp",
  // Full-text search over a value; the configuration is named as text.
  "to_tsvector", "to_tsquery", "plainto_tsquery", "phraseto_tsquery", "websearch_to_tsquery",
  "ts_rank", "ts_rank_cd", "ts_headline", "setweight",
  // XPath over an XML value; PostgreSQL loads no external entities.
  "xpath", "xpath_exists",
];

/**
 * Casts written as calls, `date(ts)`, `text(id)`: PostgreSQL's functions of a type's name
 * that convert a value to it, as `CAST` does (which the guard already lets through).
 */
// deno-fmt-ignore
const CASTS = [
  "bool", "date", "float4", "float8", "int2", "int4", "int8", "interval", "text",
  "time", "timestamp", "timestamptz", "varchar",
];

/** Dates, times, intervals, time zones; `CURRENT_DATE` and its kin are syntax (see guard). */
// deno-fmt-ignore
const DATE_TIME = [
  "age", "clock_timestamp", "date_bin", "date_part", "date_trunc", "extract", "isfinite",
  "justify_days", "justify_hours", "justify_interval", "make_date", "make_interval",
  "make_time", "make_timestamp", "make_timestamptz", "now", "overlaps", "statement_timestamp",
  "timeofday", "timezone", "transaction_timestamp",
];

/** JSON and JSONB: building, reading, path queries, the set-returning readers. */
// deno-fmt-ignore
const JSON_FUNCTIONS = [
  "array_to_json", "json_array_elements", "json_array_elements_text", "json_array_length",
  "json_build_array", "json_build_object", "json_each", "json_each_text", "json_extract_path",
  "json_extract_path_text", "json_object", "json_object_keys", "json_populate_record",
  "json_populate_recordset", "json_strip_nulls", "json_to_record", "json_to_recordset",
  "json_typeof", "jsonb_array_elements", "jsonb_array_elements_text", "jsonb_array_length",
  "jsonb_build_array", "jsonb_build_object", "jsonb_each", "jsonb_each_text",
  "jsonb_extract_path", "jsonb_extract_path_text", "jsonb_insert", "jsonb_object",
  "jsonb_object_keys", "jsonb_path_exists", "jsonb_path_exists_tz", "jsonb_path_match",
  "jsonb_path_match_tz", "jsonb_path_query", "jsonb_path_query_array",
  "jsonb_path_query_array_tz", "jsonb_path_query_first", "jsonb_path_query_first_tz",
  "jsonb_path_query_tz", "jsonb_populate_record", "jsonb_populate_recordset", "jsonb_pretty",
  "jsonb_set", "jsonb_set_lax", "jsonb_strip_nulls", "jsonb_to_record", "jsonb_to_recordset",
  "jsonb_typeof", "row_to_json", "to_json", "to_jsonb",
];

/** Arrays and ranges. */
// deno-fmt-ignore
const ARRAY = [
  "array_append", "array_cat", "array_dims", "array_fill", "array_length", "array_lower",
  "array_ndims", "array_position", "array_positions", "array_prepend", "array_remove",
  "array_replace", "array_to_string", "array_upper", "cardinality", "generate_series",
  "generate_subscripts", "trim_array", "unnest",
  "daterange", "int4range", "int8range", "numrange", "tsrange", "tstzrange", "isempty",
  "lower_inc", "lower_inf", "range_merge", "upper_inc", "upper_inf",
];

/** Aggregates, ordered-set and hypothetical-set aggregates among them. */
// deno-fmt-ignore
const AGGREGATE = [
  "array_agg", "avg", "bit_and", "bit_or", "bit_xor", "bool_and", "bool_or",
  "corr", "count", "covar_pop", "covar_samp", "every", "json_agg", "json_object_agg",
  "jsonb_agg", "jsonb_object_agg", "max", "min", "mode", "percentile_cont", "percentile_disc",
  "range_agg", "range_intersect_agg", "regr_avgx", "regr_avgy", "regr_count",
  "regr_intercept", "regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy", "stddev",
  "stddev_pop", "stddev_samp", "string_agg", "sum", "var_pop", "var_samp", "variance",
];

/** Window functions (any aggregate above may also take `OVER`). */
// deno-fmt-ignore
const WINDOW = [
  "cume_dist", "dense_rank", "first_value", "lag", "last_value", "lead", "nth_value", "ntile",
  "percent_rank", "rank", "row_number",
];

/**
 * Every function a query may call, by the name PostgreSQL folds it to (lower case), called
 * unqualified.
 */
export const ALLOWED_FUNCTIONS: ReadonlySet<string> = new Set([
  ...CASTS,
  ...MATH,
  ...STRING,
  ...DATE_TIME,
  ...JSON_FUNCTIONS,
  ...ARRAY,
  ...AGGREGATE,
  ...WINDOW,
]);

/**
 * The functions the parser itself calls `pg_catalog.<name>` for SQL's special forms
 * (`EXTRACT(… FROM …)`, `TRIM(BOTH …)`, `AT TIME ZONE`, `SIMILAR TO`...): the only ones a query
 * may name with a schema. Every other qualified call is refused, as on DuckDB.
 */
export const SYNTAX_FUNCTIONS: ReadonlySet<string> = new Set([
  "btrim",
  "extract",
  "is_normalized",
  "like_escape",
  "ltrim",
  "normalize",
  "overlaps",
  "overlay",
  "position",
  "rtrim",
  "similar_to_escape",
  "substring",
  "timezone",
]);

/**
 * The `SQLValueFunction`s a query may use: the clock. `CURRENT_USER`, `SESSION_USER`, `USER`,
 * `CURRENT_ROLE`, `CURRENT_CATALOG` and `CURRENT_SCHEMA` name the role, database and search
 * path the service runs with, which a client has no need of and an attacker has.
 */
export const ALLOWED_VALUE_FUNCTIONS: ReadonlySet<string> = new Set([
  "SVFOP_CURRENT_DATE",
  "SVFOP_CURRENT_TIME",
  "SVFOP_CURRENT_TIME_N",
  "SVFOP_CURRENT_TIMESTAMP",
  "SVFOP_CURRENT_TIMESTAMP_N",
  "SVFOP_LOCALTIME",
  "SVFOP_LOCALTIME_N",
  "SVFOP_LOCALTIMESTAMP",
  "SVFOP_LOCALTIMESTAMP_N",
]);

/**
 * Types a cast may not name: the `reg*` types look a name up in the catalogue
 * (`'pg_authid'::regclass` says whether it exists and its oid, `'x'::regproc` lists functions),
 * and `pg_catalog`'s own row types would describe system tables.
 */
export const REFUSED_TYPES: ReadonlySet<string> = new Set([
  "regclass",
  "regcollation",
  "regconfig",
  "regdictionary",
  "regnamespace",
  "regoper",
  "regoperator",
  "regproc",
  "regprocedure",
  "regrole",
  "regtype",
]);

/** `TABLESAMPLE` methods built into PostgreSQL; any other is an extension's function. */
export const SAMPLE_METHODS: ReadonlySet<string> = new Set(["system", "bernoulli"]);
