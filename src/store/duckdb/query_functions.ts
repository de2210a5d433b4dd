/**
 * The functions a client's read-only query may call: an allow-list, chosen by category.
 *
 * Why a list rather than "every scalar function minus the dangerous ones": DuckDB adds
 * functions with each release and extension, and a deny-list lets each new one in unseen
 * (1.5 brought `getvariable`, `write_log`, `json_execute_serialized_sql`, `sleep_ms`...).
 * Here a new function stays refused until someone reads what it does and adds it.
 *
 * Left out on purpose, whatever the category:
 * - anything that reads or lists files, the network or the environment (`read_*`, `glob`,
 *   `parquet_*`, `sniff_csv`, `getenv`), even where `enable_external_access=false` would stop
 *   it: the spool directory stays allowed, and holds other clients' uploads;
 * - settings, variables and session state (`current_setting`, `getvariable`, `setseed`,
 *   `nextval`/`currval`, which also advance a sequence);
 * - the catalogue and its PostgreSQL mirrors (`duckdb_*`, `pg_*`, `has_*_privilege`,
 *   `current_schemas`, `col_description`...), which would name other schemas;
 * - anything that runs SQL given as text (`query`, `query_table`, `json_execute_serialized_sql`),
 *   since that text would escape the check;
 * - waiting and logging (`sleep_ms`, `pg_sleep`, `write_log`), internal helpers
 *   (`__internal_*`, `constant_or_null`, `finalize`, `combine`), and path parsing
 *   (`parse_path`...), harmless but no analytic need.
 *
 * @module
 */

/** Arithmetic, rounding, trigonometry, bits. */
// deno-fmt-ignore
const MATH = [
  "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bit_count",
  "bit_length", "bit_position", "cbrt", "ceil", "ceiling", "cos", "cosh", "cot", "degrees",
  "divide", "even", "exp", "factorial", "fdiv", "floor", "fmod", "gamma", "gcd", "get_bit",
  "greatest", "greatest_common_divisor", "isfinite", "isinf", "isnan", "lcm", "least",
  "least_common_multiple", "lgamma", "ln", "log", "log10", "log2", "mod", "multiply",
  "nextafter", "pi", "pow", "power", "radians", "random", "round", "round_even",
  "roundbankers", "set_bit", "sign", "signbit", "sin", "sinh", "sqrt", "subtract", "tan",
  "tanh", "trunc", "xor", "equi_width_bins",
];

/**
 * The operators the parser turns into function calls (`a + b` is `"+"(a, b)`). `->` is a
 * lambda's arrow the parser leaves as an operator when a comment precedes it, for the
 * binder to make a lambda of, or JSON's extraction when its left side is JSON.
 */
// deno-fmt-ignore
const OPERATORS = [
  "+", "-", "*", "/", "//", "%", "**", "^", "&", "|", "<<", ">>", "~", "!__postfix",
  "||", "~~", "!~~", "~~*", "!~~*", "~~~", "^@", "->", "->>", "@>", "<@", "&&", "<->", "<=>", "@",
];

/** Text: case, padding, search, similarity, encoding, hashing. */
// deno-fmt-ignore
const STRING = [
  "ascii", "bar", "base64", "bin", "char_length", "character_length", "chr", "concat",
  "concat_ws", "contains", "damerau_levenshtein", "decode", "editdist3", "encode", "ends_with",
  "format", "format_bytes", "formatReadableDecimalSize", "formatReadableSize", "from_base64",
  "from_binary", "from_hex", "hamming", "hash", "hex", "ilike_escape", "instr", "jaccard",
  "jaro_similarity", "jaro_winkler_similarity", "lcase", "left", "left_grapheme", "len",
  "length", "length_grapheme", "levenshtein", "like_escape", "lower", "lpad", "ltrim", "md5",
  "md5_number", "md5_number_lower", "md5_number_upper", "mismatches", "nfc_normalize",
  "not_ilike_escape", "not_like_escape", "nullif", "octet_length", "ord",
  "parse_formatted_bytes", "position", "prefix", "printf", "repeat", "replace", "reverse",
  "right", "right_grapheme", "rpad", "rtrim", "sha1", "sha256", "split", "split_part",
  "starts_with", "str_split", "string_split", "string_to_array", "strip_accents", "strlen",
  "strpos", "substr", "substring", "substring_grapheme", "suffix", "to_base", "to_base64",
  "to_binary", "to_hex", "translate", "trim", "ucase", "unbin", "unhex", "unicode", "upper",
  "url_decode", "url_encode", "typeof",
];

/** Regular expressions (RE2: linear time, no backtracking bombs). */
// deno-fmt-ignore
const REGEX = [
  "regexp_escape", "regexp_extract", "regexp_extract_all", "regexp_full_match",
  "regexp_matches", "regexp_replace", "regexp_split_to_array", "regexp_split_to_table",
  "str_split_regex", "string_split_regex",
];

/** Dates, times, intervals, time zones (ICU). */
// deno-fmt-ignore
const DATE_TIME = [
  "age", "ago", "century", "current_date", "current_localtime", "current_localtimestamp",
  "date_add", "date_diff", "date_part", "date_sub", "date_trunc", "datediff", "datepart",
  "datesub", "datetrunc", "day", "dayname", "dayofmonth", "dayofweek", "dayofyear",
  "days_in_month", "decade", "epoch", "epoch_ms", "epoch_ns", "epoch_us", "era",
  "get_current_time", "get_current_timestamp", "hour", "isodow", "isoyear", "julian",
  "last_day", "make_date", "make_time", "make_timestamp", "make_timestamp_ms",
  "make_timestamp_ns", "make_timestamptz", "microsecond", "millennium", "millisecond",
  "minute", "month", "monthname", "nanosecond", "normalized_interval", "now", "quarter",
  "second", "strftime", "strptime", "time_bucket", "timezone", "timezone_hour",
  "timezone_minute", "to_centuries", "to_days", "to_decades", "to_hours", "to_microseconds",
  "to_millennia", "to_milliseconds", "to_minutes", "to_months", "to_quarters", "to_seconds",
  "to_timestamp", "to_weeks", "to_years", "today", "transaction_timestamp", "try_strptime",
  "week", "weekday", "weekofyear", "year", "yearweek",
];

/** Lists and arrays, with their lambdas (`list_transform(l, x -> x + 1)`). */
// deno-fmt-ignore
const LIST = [
  "aggregate", "apply", "array_aggr", "array_aggregate", "array_append", "array_apply",
  "array_cat", "array_concat", "array_contains", "array_cosine_distance",
  "array_cosine_similarity", "array_cross_product", "array_distance", "array_distinct",
  "array_dot_product", "array_extract", "array_filter", "array_grade_up", "array_has",
  "array_has_all", "array_has_any", "array_indexof", "array_inner_product",
  "array_intersect", "array_length", "array_negative_dot_product",
  "array_negative_inner_product", "array_pop_back", "array_pop_front", "array_position",
  "array_prepend", "array_push_back", "array_push_front", "array_reduce", "array_resize",
  "array_reverse", "array_reverse_sort", "array_select", "array_slice", "array_sort",
  "array_to_string", "array_transform", "array_unique", "array_value", "array_where",
  "array_zip", "cardinality", "filter", "flatten", "generate_series", "grade_up",
  "list_aggr", "list_aggregate", "list_any_value", "list_append", "list_apply",
  "list_approx_count_distinct", "list_avg", "list_bit_and", "list_bit_or", "list_bit_xor",
  "list_bool_and", "list_bool_or", "list_cat", "list_concat", "list_contains",
  "list_cosine_distance", "list_cosine_similarity", "list_count", "list_distance",
  "list_distinct", "list_dot_product", "list_element", "list_entropy", "list_extract",
  "list_filter", "list_first", "list_grade_up", "list_has", "list_has_all", "list_has_any",
  "list_histogram", "list_indexof", "list_inner_product", "list_intersect", "list_kurtosis",
  "list_kurtosis_pop", "list_last", "list_mad", "list_max", "list_median", "list_min",
  "list_mode", "list_negative_dot_product", "list_negative_inner_product", "list_pack",
  "list_position", "list_prepend", "list_product", "list_reduce", "list_resize",
  "list_reverse", "list_reverse_sort", "list_select", "list_sem", "list_skewness",
  "list_slice", "list_sort", "list_stddev_pop", "list_stddev_samp", "list_string_agg",
  "list_sum", "list_transform", "list_unique", "list_value", "list_var_pop", "list_var_samp",
  "list_where", "list_zip", "range", "reduce", "unnest",
];

/** Structs, maps and unions. */
// deno-fmt-ignore
const NESTED = [
  "element_at", "map", "map_concat", "map_contains", "map_contains_entry",
  "map_contains_value", "map_entries", "map_extract", "map_extract_value", "map_from_entries",
  "map_keys", "map_values", "row", "struct_concat", "struct_contains", "struct_extract",
  "struct_extract_at", "struct_has", "struct_indexof", "struct_insert", "struct_keys",
  "struct_pack", "struct_position", "struct_update", "struct_values", "union_extract",
  "union_tag", "union_value",
];

/** JSON built and taken apart (the json extension's pure functions). */
// deno-fmt-ignore
const JSON_FUNCTIONS = [
  "array_to_json", "from_json", "from_json_strict", "json", "json_array", "json_array_length",
  "json_contains", "json_exists", "json_extract", "json_extract_path",
  "json_extract_path_text", "json_extract_string", "json_keys", "json_merge_patch",
  "json_object", "json_pretty", "json_quote", "json_structure", "json_transform",
  "json_transform_strict", "json_type", "json_valid", "json_value", "row_to_json", "to_json",
];

/** UUIDs. */
// deno-fmt-ignore
const UUID = [
  "gen_random_uuid", "uuid", "uuid_extract_timestamp", "uuid_extract_version", "uuidv4",
  "uuidv7",
];

/** Aggregates (also usable as window functions). */
// deno-fmt-ignore
const AGGREGATES = [
  "any_value", "approx_count_distinct", "approx_quantile", "approx_top_k", "arbitrary",
  "arg_max", "arg_max_null", "arg_max_nulls_last", "arg_min", "arg_min_null",
  "arg_min_nulls_last", "argmax", "argmin", "array_agg", "avg", "bit_and", "bit_or", "bit_xor",
  "bitstring_agg", "bool_and", "bool_or", "corr", "count", "count_if", "count_star", "countif",
  "covar_pop", "covar_samp", "entropy", "favg", "first", "fsum", "geomean", "geometric_mean",
  "group_concat", "histogram", "histogram_exact", "json_group_array", "json_group_object",
  "json_group_structure", "kahan_sum", "kurtosis", "kurtosis_pop", "last", "list", "listagg",
  "mad", "max", "max_by", "mean", "median", "min", "min_by", "mode", "product", "quantile",
  "quantile_cont", "quantile_disc", "regr_avgx", "regr_avgy", "regr_count", "regr_intercept",
  "regr_r2", "regr_slope", "regr_sxx", "regr_sxy", "regr_syy", "reservoir_quantile", "sem",
  "skewness", "stddev", "stddev_pop", "stddev_samp", "string_agg", "sum", "sum_no_overflow",
  "sumkahan", "var_pop", "var_samp", "variance", "wavg", "weighted_avg",
];

/** Functions only a window (`OVER (...)`) computes. */
// deno-fmt-ignore
const WINDOW_ONLY = [
  "cume_dist", "dense_rank", "fill", "first_value", "lag", "last_value", "lead", "nth_value",
  "ntile", "percent_rank", "rank", "rank_dense", "row_number",
];

/**
 * Every function a query may call, lower case (DuckDB matches names ignoring case).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ALLOWED_FUNCTIONS } from "./query_functions.ts";
 *
 * assert.ok(ALLOWED_FUNCTIONS.has("regexp_extract"));
 * assert.ok(!ALLOWED_FUNCTIONS.has("current_setting"));
 * ```
 */
export const ALLOWED_FUNCTIONS: ReadonlySet<string> = new Set(
  [
    ...MATH,
    ...OPERATORS,
    ...STRING,
    ...REGEX,
    ...DATE_TIME,
    ...LIST,
    ...NESTED,
    ...JSON_FUNCTIONS,
    ...UUID,
    ...AGGREGATES,
  ].map((name) => name.toLowerCase()),
);

/**
 * What a window expression (`f(...) OVER (...)`) may compute.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ALLOWED_WINDOW_FUNCTIONS } from "./query_functions.ts";
 *
 * assert.ok(ALLOWED_WINDOW_FUNCTIONS.has("row_number") && ALLOWED_WINDOW_FUNCTIONS.has("sum"));
 * ```
 */
export const ALLOWED_WINDOW_FUNCTIONS: ReadonlySet<string> = new Set(
  [...WINDOW_ONLY, ...AGGREGATES].map((name) => name.toLowerCase()),
);

/**
 * Table functions a query may read from: those that make rows out of their arguments alone.
 * Every other table function reads files, the catalogue or settings, or runs SQL text.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ALLOWED_TABLE_FUNCTIONS } from "./query_functions.ts";
 *
 * assert.ok(ALLOWED_TABLE_FUNCTIONS.has("range") && !ALLOWED_TABLE_FUNCTIONS.has("read_csv"));
 * ```
 */
export const ALLOWED_TABLE_FUNCTIONS: ReadonlySet<string> = new Set([
  "range",
  "generate_series",
  "unnest",
]);
