/**
 * Test support: one `POST /query` to a {@link TestServer}, as the query tests of both
 * engines send it.
 *
 * @module
 */

import type { Answer, TestServer } from "./server.ts";

/** What a test may add to its query: bound parameters, a token, a query string. */
export interface QueryOptions {
  readonly params?: readonly unknown[];
  readonly token?: string;
  /** Appended to `query` as is, `?` included (`"?format=csv"`). */
  readonly search?: string;
}

/**
 * Sends `sql` to `POST /query` and answers the service's answer, whatever its status.
 *
 * @example
 * ```ts ignore
 * const answer = await query(server, "SELECT 1 AS one", { search: "?format=csv" });
 * ```
 */
export async function query(
  server: TestServer,
  sql: string,
  options: QueryOptions = {},
): Promise<Answer> {
  return await server.request("POST", `query${options.search ?? ""}`, {
    body: options.params ? { sql, params: options.params } : { sql },
    token: options.token,
  });
}
