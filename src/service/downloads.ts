/**
 * Download tickets: a link that streams one export without the bearer token in its URL. A
 * token holder asks for a ticket for an export (its table, format, filters, columns and
 * order); the ticket is a random secret, valid for {@link TICKET_SECONDS} and for one
 * download, kept in the database (as a kept answer, under its SHA-256, so every instance of
 * the service can redeem it and one only) with the export it stands for and the rights of
 * the token that asked, which the download is checked against again.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import type { TableRef } from "../catalog/model.ts";
import { nameKey } from "../catalog/names.ts";
import { ApiError } from "../errors.ts";
import type { KeyedWrite, ResultFormat } from "../store/store.ts";
import type { RowsDeps } from "./bodies.ts";
import { exportFileName, exportQuery, exportRecords } from "./records.ts";

/** How long a ticket may wait to be redeemed. */
export const TICKET_SECONDS = 60;

/** The scope tickets are kept under, beside `Idempotency-Key` answers (whose scopes have a path). */
const TICKETS = "download ticket";

/** Who asks for a ticket: the token's subject, scopes and `schemas` claim. */
export interface Holder {
  readonly subject: string;
  readonly scopes: readonly string[];
  readonly schemas?: readonly string[];
}

/** A ticket as its holder gets it. */
export interface DownloadTicket {
  /** The secret itself, 43 base64url characters. */
  readonly ticket: string;
  /** The path that redeems it: `GET` it, without a token. */
  readonly url: string;
  /** When it stops working, ISO 8601 UTC. */
  readonly expires_at: string;
}

/** What a ticket stands for, as kept. */
interface Kept {
  readonly ref: TableRef;
  readonly format: ResultFormat;
  /** The export's query parameters, in order. */
  readonly query: [string, string][];
  readonly offsetHours: number;
  readonly holder: Holder;
  /** Milliseconds since the epoch. */
  readonly expires: number;
}

/**
 * Issues a ticket for the export of the table at `ref` in `format` that `params` describe
 * (filters, `select`, `order`, `timezone_offset`), checked now as the export would check
 * them, for `holder`, whose access to the schema the route has checked.
 *
 * @throws {ApiError} 400 for parameters the export refuses; 404 for no such table.
 */
export async function issueTicket(
  deps: Pick<RowsDeps, "store" | "now">,
  holder: Holder,
  ref: TableRef,
  format: ResultFormat,
  params: URLSearchParams,
  offsetHours: number,
): Promise<DownloadTicket> {
  const now = (deps.now ?? Date.now)();
  await exportQuery(deps, ref, params);
  // A table named by a parameter-free export is looked up here, so a ticket names a table.
  await deps.store.tables.get(ref);
  const ticket = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
  const expires = now + TICKET_SECONDS * 1000;
  const kept: Kept = {
    ref,
    format,
    query: [...params].filter(([key]) => key !== "schema"),
    offsetHours,
    holder,
    expires,
  };
  const keyed: KeyedWrite<Kept> = {
    scope: TICKETS,
    key: digest(ticket),
    at: now,
    since: now - TICKET_SECONDS * 1000,
    fingerprint: () => "",
    answer: (body) => ({ status: 200, body }),
  };
  await deps.store.answers.keep(keyed, kept);
  return {
    ticket,
    url: `/api/v1/download/${ticket}`,
    expires_at: new Date(expires).toISOString(),
  };
}

/**
 * Redeems a ticket: it is used up, and the export it stands for streams, checked against the
 * rights of the token that asked for it. With `peek` (a `HEAD`) it is looked at, not used.
 *
 * @throws {ApiError} 404 for a ticket that is unknown, used or expired; what the export
 * throws.
 */
export async function redeemTicket(
  deps: Pick<RowsDeps, "store" | "now">,
  ticket: string,
  peek = false,
): Promise<{ stream?: ReadableStream<Uint8Array>; fileName: string; format: ResultFormat }> {
  const now = (deps.now ?? Date.now)();
  const gone = () =>
    ApiError.notFound(
      "This download ticket is unknown, used or expired; ask for a new one (it works once, " +
        `for ${TICKET_SECONDS} seconds)`,
    );
  if (!/^[A-Za-z0-9_-]{43}$/.test(ticket)) throw gone();
  const since = now - TICKET_SECONDS * 1000;
  const answer = peek
    ? (await deps.store.answers.find(TICKETS, digest(ticket), since))?.answer
    : await deps.store.answers.take(TICKETS, digest(ticket), since);
  const kept = answer?.body as Kept | undefined;
  if (!kept || kept.expires < now) throw gone();
  const { ref, holder } = kept;
  const readable = holder.scopes.includes("tables:read") || holder.scopes.includes("tables:write");
  if (!readable || (holder.schemas && !holder.schemas.includes(nameKey(ref.schema)))) {
    throw ApiError.forbidden(`The ticket's token does not grant reading schema "${ref.schema}"`);
  }
  const params = new URLSearchParams(kept.query);
  if (peek) {
    await exportQuery(deps, ref, params);
    const { name } = await deps.store.tables.get(ref);
    return {
      fileName: exportFileName(name, now, kept.offsetHours, kept.format),
      format: kept.format,
    };
  }
  const { stream, fileName } = await exportRecords(
    deps,
    ref,
    kept.format,
    params,
    kept.offsetHours,
  );
  return { stream, fileName, format: kept.format };
}

/** The ticket as kept: its SHA-256, so that the database holds no usable ticket. */
function digest(ticket: string): string {
  return createHash("sha256").update(ticket).digest("hex");
}
