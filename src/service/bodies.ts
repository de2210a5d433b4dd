/**
 * Request bodies of rows as the services read them: the body itself with what watches it,
 * the limits it is read under, and how it is spooled.
 *
 * @module
 */

import { ApiError } from "../errors.ts";
import type { BodyDigest, SpoolOptions } from "../ingest/spool.ts";
import type { Store } from "../store/store.ts";

/** Rows whose keys the spool pass collects itself. */
export const KEY_SAMPLE_ROWS = 1000;

/** The limits bodies of rows are read under, and where they are spooled. */
export interface RowsLimits {
  /** Where request bodies of rows are streamed to. */
  readonly spoolDir: string;
  readonly maxUploadBytes: number;
  /** Largest JSON read whole: an upload's envelope, a file upload's definition part. */
  readonly maxJsonBytes: number;
  readonly maxSheetRows: number;
  readonly maxSheetBytes: number;
  /** Longest wait for the next bytes of a body (408 past it). */
  readonly bodyIdleMs: number;
}

/** What the row services need: the store and the limits. */
export interface RowsDeps extends RowsLimits {
  readonly store: Store;
  /** The clock download tickets expire by, in ms since the epoch; tests move it. */
  readonly now?: () => number;
}

/** A request body of rows, as it arrives, with what it declares and what watches it. */
export interface IncomingBody {
  readonly stream: ReadableStream<Uint8Array> | null;
  readonly contentType: string | undefined;
  readonly contentLength: string | undefined;
  /** Called once, as the body starts to be read: gives the counter of its bytes. */
  readonly countBytes?: () => (bytes: number) => void;
  /** Fed the body as it streams by, for the fingerprint of a keyed write. */
  readonly digest?: BodyDigest;
}

/** Throws 415 unless the body is JSON (`application/json` or `application/…+json`). */
export function checkJsonType(body: IncomingBody): void {
  if (!/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(body.contentType ?? "")) {
    throw ApiError.unsupportedMediaType("The request body must be application/json");
  }
}

/**
 * How a JSON body of rows is spooled: with `envelope` an upload's `{"table": …, "data": […]}`
 * (whose rows may be arrays), without it a bare array of records.
 */
export function spoolOptions(
  limits: RowsLimits,
  body: IncomingBody,
  envelope: boolean,
): SpoolOptions {
  return {
    spoolDir: limits.spoolDir,
    maxBytes: limits.maxUploadBytes,
    idleMs: limits.bodyIdleMs,
    onBytes: body.countBytes?.(),
    digest: body.digest,
    envelope,
    allowArrays: envelope,
    maxEnvelopeBytes: limits.maxJsonBytes,
    // Past the sample the spool only checks keys; DuckDB reads any it cannot vouch for.
    keySampleRows: KEY_SAMPLE_ROWS,
  };
}
