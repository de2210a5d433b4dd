/**
 * The errors of the JSON rows pass, and the nesting limit behind one of them.
 *
 * @module
 */

import { ApiError } from "../errors.ts";

/** Deepest nesting accepted; DuckDB and clients choke long before 10,000 levels. */
export const MAX_DEPTH = 512;

/** 400: the body is not valid JSON, for the reason `why`. */
export function malformed(why: string): ApiError {
  return ApiError.badRequest(`The request body is not valid JSON: ${why}`);
}

/** 400: the body is JSON but not the shape asked for, for the reason `why`. */
export function badShape(why: string): ApiError {
  return ApiError.badRequest(`Wrong request body: ${why}`);
}

/** 400: the body is nested deeper than {@link MAX_DEPTH}. */
export function tooDeep(): ApiError {
  return ApiError.badRequest(`The request body is nested deeper than ${MAX_DEPTH} levels`);
}
