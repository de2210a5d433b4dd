/**
 * The query of a records change (`PATCH` and `DELETE /table/{name}/records`): which rows, by
 * the filters of the records read (`<column>=[not.]<op>.<value>`, see filters.ts), and the
 * rule that a change to every row must say so (`all=true`).
 *
 * @module
 */

import { ApiError } from "../errors.ts";
import { type ColumnInfo, type Filter, parseReadQuery, RESERVED_PARAMETERS } from "./filters.ts";

/** The parameter that lets a change apply to every row without a filter. */
const ALL = "all";

/** Parameters of the query besides the filters. */
const OWN_PARAMETERS: ReadonlySet<string> = new Set(["schema", ALL]);

/** What a change's query says before the table's columns are known. */
export interface ChangeQuery {
  /** `all=true`: the change may apply to every row. Filters given with it still apply. */
  readonly all: boolean;
  /** The query's parameters, for {@link changeFilters} once the columns are known. */
  readonly params: readonly (readonly [string, string])[];
}

/**
 * Checks a change's query: the read's parameters that choose no rows (`select`, `order`,
 * `after`, `count`, `offset`, `limit`, `timezone_offset`) are refused, as is a change with
 * no filter unless `all=true`.
 *
 * @throws {ApiError} 400 for such a parameter, `all` given twice or not true or false, or no
 * filter without `all=true`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkChangeQuery } from "./changes.ts";
 *
 * assert.equal(checkChangeQuery(new URLSearchParams("id=eq.3")).all, false);
 * assert.equal(checkChangeQuery(new URLSearchParams("all=true")).all, true);
 * assert.throws(() => checkChangeQuery(new URLSearchParams("schema=public")), /filter/);
 * assert.throws(() => checkChangeQuery(new URLSearchParams("id=eq.3&limit=1")), /limit/);
 * ```
 */
export function checkChangeQuery(
  params: URLSearchParams | readonly (readonly [string, string])[],
): ChangeQuery {
  const entries = [...params];
  let all: boolean | undefined;
  let filters = 0;
  for (const [key, value] of entries) {
    if (key === ALL) {
      if (all !== undefined) {
        throw ApiError.badRequest(`Query parameter ${ALL} is given more than once`);
      }
      all = parseAll(value);
    } else if (RESERVED_PARAMETERS.has(key) && !OWN_PARAMETERS.has(key)) {
      throw ApiError.badRequest(
        `Query parameter ${key} does not apply to a change of records; choose the rows with ` +
          "filters such as id=eq.3",
      );
    } else if (!OWN_PARAMETERS.has(key)) {
      filters++;
    }
  }
  if (filters === 0 && !all) {
    throw ApiError.badRequest(
      "A change of records needs a filter, such as id=eq.3, to choose its rows; to change " +
        "every row, say so with all=true",
    );
  }
  return { all: all ?? false, params: entries };
}

/**
 * The filters of a checked change query against the table's columns, all ANDed.
 *
 * @throws {ApiError} 400 as {@link parseReadQuery} does: a column the table lacks, an unknown
 * operator, a malformed value.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { changeFilters, checkChangeQuery } from "./changes.ts";
 *
 * const query = checkChangeQuery(new URLSearchParams("schema=public&age=gte.18"));
 * assert.deepEqual(changeFilters(query, [{ name: "age", type: "INTEGER" }]), [
 *   { column: "age", op: "gte", negated: false, value: "18" },
 * ]);
 * ```
 */
export function changeFilters(query: ChangeQuery, columns: readonly ColumnInfo[]): Filter[] {
  return [...parseReadQuery(query.params, columns, [ALL]).filters];
}

function parseAll(value: string): boolean {
  const lower = value.toLowerCase();
  if (lower === "true" || lower === "1") return true;
  if (lower === "false" || lower === "0" || lower === "") return false;
  throw ApiError.badRequest(`Query parameter ${ALL} must be true or false, not "${value}"`);
}
