/**
 * Pages of records out of PostgreSQL tables, as JSON text PostgreSQL renders (filtered,
 * selected, ordered, walked by cursor), with the count of the rows the filters let through.
 *
 * @module
 */

import type { Table, TableRef } from "../../catalog/model.ts";
import { ALL_RECORDS, checkRowCounts, chosen, keyAlias } from "../shared/record_pages.ts";
import { BoundValues, uncertainChecks } from "../shared/record_filters.ts";
import {
  type PageDialect,
  pageOf,
  type PagePlan,
  pageStatement,
  planPage,
} from "../shared/record_reads.ts";
import type { RecordsChoice, RecordsPage, RecordsQuery } from "../store.ts";
import { estimatedTotal, withEstimate } from "../shared/estimates.ts";
import { POSTGRES_ESTIMATES } from "./estimates.ts";
import type { StoreContext } from "./context.ts";
import type { Batched, Param, Session } from "./database.ts";
import { lockStatement, schemaLock, tableLock } from "./locks.ts";
import { boundedTransaction } from "./read_bounds.ts";
import type { KnownDescriptions } from "./descriptions.ts";
import { checkValues, keyText, LiteralValues, POSTGRES } from "./record_filters.ts";
import { jsonObject } from "./record_values.ts";
import { quoteIdent } from "./sql.ts";

/**
 * Runs `work` on table `ref` as described in `session`'s open transaction, under the table's
 * shared lock (and its schema's): a definition change, which takes the table's lock
 * exclusively on any instance, waits for the work, and the work for it, so the description
 * holds until the transaction ends. The description is remembered in `descriptions`. 404
 * when the schema or the table does not exist.
 */
export async function onDescribedTable<T>(
  session: Session,
  descriptions: KnownDescriptions,
  ref: TableRef,
  work: (table: Table) => Promise<T>,
): Promise<T> {
  return await work(await descriptions.locked(session, ref, readLocks(ref)));
}

/** The locks a read of `ref` holds: its table's and its schema's, shared. */
function readLocks(ref: TableRef): Batched {
  return lockStatement([schemaLock(ref.schema, "shared"), tableLock(ref, "shared")])!;
}

/**
 * One page of records as a JSON array text, the number of records the filters let through
 * (unless the read asks for none) and, for a cursor walk, the next cursor: one transaction,
 * and the count and the page in one statement, so they agree. Each statement runs under the
 * store's deadline (read_bounds.ts). One round trip when the table's description is known
 * and holds ({@link knownPage}); else two: `BEGIN`, the bounds, the locks and the
 * description; then the page, its values written as literals, with `COMMIT`.
 *
 * @throws {ApiError} 400 for a filter or cursor value its column's type cannot take, or a
 * cursor of another order; 404 for no such table; 408 past the deadline.
 */
export async function readRecords(
  context: StoreContext,
  ref: TableRef,
  offset: number,
  limit: number,
  query: RecordsQuery | RecordsChoice = { read: ALL_RECORDS },
): Promise<RecordsPage> {
  checkRowCounts(offset, limit);
  return await knownPage(context, ref, offset, limit, query) ??
    await boundedTransaction(
      context,
      (session) =>
        onDescribedTable(
          session,
          context.descriptions,
          ref,
          (table) => readPage(session, table, offset, limit, chosen(query, table), true),
        ),
    );
}

/**
 * A page of the table as this process last described it, when the read needs no statement
 * before its page (no value to check, no estimated count): `BEGIN`, the bounds, the locks,
 * the check that the description holds, and the page with `COMMIT` in one round trip.
 * Undefined, having read nothing, when no description is known, when the read is planned
 * otherwise or fails to plan by it (the long way then says why), or when the description no
 * longer holds (then forgotten).
 */
async function knownPage(
  context: StoreContext,
  ref: TableRef,
  offset: number,
  limit: number,
  query: RecordsQuery | RecordsChoice,
): Promise<RecordsPage | undefined> {
  const known = context.descriptions.get(ref);
  const planned = known && plannedInOne(known.table, offset, query);
  if (!planned) return undefined;
  return await context.descriptions.holding(
    ref,
    known,
    (work, opening) => boundedTransaction(context, work, opening),
    readLocks(ref),
    (session) => readPlanned(session, planned, limit),
  );
}

/**
 * The plan of a page of `table` that needs no statement before its own, so that it can go
 * with the transaction's opening: undefined when a filter or cursor value needs the engine's
 * word that it converts (an integer's or a text's does not), when the count is estimated, or
 * when the read fails to choose or to plan by `table` (which may be stale: the long way then
 * says why, by the table as it is).
 */
export function plannedInOne(
  table: Table,
  offset: number,
  query: RecordsQuery | RecordsChoice,
): PlannedPage | undefined {
  let planned: PlannedPage;
  try {
    planned = plannedPage(table, offset, chosen(query, table), true);
  } catch {
    return undefined;
  }
  const checked = uncertainChecks(POSTGRES, planned.plan.checks).length > 0;
  return checked || planned.query.read.count === "estimated" ? undefined : planned;
}

/**
 * {@link readRecords} of a described table, in the caller's transaction; with `last`, the
 * transaction's last statement, which commits it in the same round trip.
 */
export async function readPage(
  session: Session,
  table: Table,
  offset: number,
  limit: number,
  query: RecordsQuery,
  last = false,
): Promise<RecordsPage> {
  return await readPlanned(session, plannedPage(table, offset, query, last), limit);
}

/** A page's plan, and what reading it needs besides. */
export interface PlannedPage {
  readonly table: Table;
  readonly query: RecordsQuery;
  readonly plan: PagePlan;
  readonly bound: BoundValues<Param>;
  /** Whether the page is the transaction's last statement, committing it. */
  readonly last: boolean;
}

function plannedPage(
  table: Table,
  offset: number,
  query: RecordsQuery,
  last: boolean,
): PlannedPage {
  // Committed with the page, the statement is text: its values are literals.
  const bound: BoundValues<Param> = last ? new LiteralValues() : new BoundValues<Param>();
  return { table, query, plan: planPage(POSTGRES, table, offset, query, bound), bound, last };
}

async function readPlanned(
  session: Session,
  { table, query, plan, bound, last }: PlannedPage,
  limit: number,
): Promise<RecordsPage> {
  await checkValues(session, plan.checks);
  const filterValues = bound.values.slice(0, plan.filterValues);
  // The estimate first, so that the page can be the last statement.
  const counted = query.read.count === "estimated"
    ? await estimatedTotal(POSTGRES_ESTIMATES, session, {
      table,
      filtered: query.read.filters.length > 0,
      matching: plan.matching,
      values: filterValues,
      count: async () =>
        Number((await session.rows(`SELECT ${plan.exactCount} AS n`, filterValues))[0]?.n ?? 0),
    })
    : undefined;
  const statement = pageStatement(PAGES, plan, limit, query.after !== undefined);
  const [row] = last
    ? (await session.runAndCommit(statement)).rows
    : await session.rows(statement, bound.values);
  const page = pageOf(plan, row, limit, query.after);
  return counted ? withEstimate(page, counted) : page;
}

/** How PostgreSQL renders a page: each row by jsonObject, a row's key texts in JSON. */
const PAGES: PageDialect = {
  jsonRow: (columns) =>
    jsonObject(
      columns.map((c) => ({ name: c.name, type: c.type, ref: `page.${quoteIdent(c.name)}` })),
    ),
  keyTexts: (keys) =>
    `to_json(ARRAY[${
      keys.map((k, i) => keyText(k, `page.${keyAlias(i)}`)).join(", ")
    }]::text[])::text`,
};
