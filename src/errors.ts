/**
 * The one error type of the API and the only place HTTP statuses are chosen.
 *
 * @module
 */

/** The statuses the contract uses for failures: the only ones an error is answered with. */
export type ErrorStatus =
  | 400
  | 401
  | 403
  | 404
  | 405
  | 408
  | 409
  | 413
  | 415
  | 422
  | 429
  | 500
  | 501
  | 503
  | 507;

/**
 * What the log and metrics record of a failure: its status, or 499 (nginx's "client closed
 * request") for a request whose client closed the connection before its body was in.
 */
export type LoggedStatus = ErrorStatus | 499;

/** One entry of `error.details`: where a problem is and what it is. */
export interface ErrorDetail {
  readonly message: string;
  readonly row?: number;
  readonly column?: string;
  readonly field?: string;
  readonly [key: string]: unknown;
}

/** The body of every failure response. */
export interface ErrorBody {
  readonly error: {
    readonly code: ErrorStatus;
    readonly type: string;
    readonly message: string;
    readonly details?: readonly ErrorDetail[];
  };
}

/** The contract caps `details` at this many entries. */
export const MAX_DETAILS = 100;

/**
 * The first problem's message, and how many more there are: the sentence a failure with
 * several details opens with.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { summarise } from "./errors.ts";
 *
 * assert.equal(summarise([{ message: "a" }]), "a");
 * assert.equal(summarise([{ message: "a" }, { message: "b" }]), "a (and 1 more problems)");
 * ```
 */
export function summarise(problems: readonly ErrorDetail[]): string {
  return problems[0]!.message +
    (problems.length > 1 ? ` (and ${problems.length - 1} more problems)` : "");
}

/**
 * A failure with its ready response: status, a snake_case kind, one human sentence and
 * optional details.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ApiError } from "./errors.ts";
 *
 * const error = ApiError.notFound(`Table "public.users" does not exist`);
 * assert.equal(error.status, 404);
 * assert.equal(error.toBody().error.type, "not_found");
 * ```
 */
export class ApiError extends Error {
  readonly details?: readonly ErrorDetail[];
  /** Extra response headers, e.g. `WWW-Authenticate` on 401 or `Allow` on 405. */
  readonly headers: Readonly<Record<string, string>>;
  /** The status the log and metrics record; `status` unless the client went away (499). */
  readonly loggedStatus: LoggedStatus;

  constructor(
    readonly status: ErrorStatus,
    readonly type: string,
    message: string,
    options: {
      details?: readonly ErrorDetail[];
      headers?: Record<string, string>;
      loggedStatus?: LoggedStatus;
    } = {},
  ) {
    super(message);
    this.name = "ApiError";
    this.details = options.details?.slice(0, MAX_DETAILS);
    this.headers = options.headers ?? {};
    this.loggedStatus = options.loggedStatus ?? status;
  }

  /** The JSON body the contract prescribes. */
  toBody(): ErrorBody {
    return {
      error: {
        code: this.status,
        type: this.type,
        message: this.message,
        ...(this.details && this.details.length > 0 ? { details: this.details } : {}),
      },
    };
  }

  /** The complete response. */
  toResponse(): Response {
    return new Response(JSON.stringify(this.toBody()), {
      status: this.status,
      headers: { "content-type": "application/json; charset=utf-8", ...this.headers },
    });
  }

  /** 400: malformed request, wrong JSON shape, unknown query value. */
  static badRequest(message: string, details?: readonly ErrorDetail[]): ApiError {
    return new ApiError(400, "bad_request", message, { details });
  }

  /** 400: a row of JSON rows names one key twice, so which value wins is left open. */
  static repeatedKey(row: number, key: string): ApiError {
    return ApiError.badRequest(`Row ${row} has the key "${key}" more than once`, [
      { row, column: key, message: `Key "${key}" appears more than once in the row` },
    ]);
  }

  /** 400: a schema, table or template name that breaks the naming rule. */
  static invalidName(message: string): ApiError {
    return new ApiError(400, "invalid_name", message);
  }

  /** 401 with the RFC 6750 challenge. */
  static unauthorized(message: string): ApiError {
    const description = message.replaceAll(/["\\]/g, "'");
    return new ApiError(401, "unauthorized", message, {
      headers: {
        "www-authenticate": `Bearer error="invalid_token", error_description="${description}"`,
      },
    });
  }

  /** 403: valid token without the right scope or schema. */
  static forbidden(message: string): ApiError {
    return new ApiError(403, "forbidden", message);
  }

  /** 404: schema, table, template or route does not exist. */
  static notFound(message: string): ApiError {
    return new ApiError(404, "not_found", message);
  }

  /** 405 with the methods the path does accept. */
  static methodNotAllowed(method: string, path: string, allowed: readonly string[]): ApiError {
    return new ApiError(
      405,
      "method_not_allowed",
      `Method ${method} is not allowed on "${path}"; use ${allowed.join(", ")}`,
      { headers: { allow: allowed.join(", ") } },
    );
  }

  /** 408: the request body stopped arriving. */
  static bodyTimeout(idleMs: number): ApiError {
    return new ApiError(
      408,
      "request_timeout",
      `No part of the request body arrived for ${idleMs / 1000} s; nothing was changed`,
    );
  }

  /** 408: a query ran past QUERY_TIMEOUT_SECONDS and was interrupted. */
  static queryTimeout(seconds: number): ApiError {
    return new ApiError(
      408,
      "request_timeout",
      `The query ran longer than ${seconds} s (QUERY_TIMEOUT_SECONDS) and was interrupted`,
    );
  }

  /** 409: exists already, key conflict, blocked by a dependency. */
  static conflict(message: string, details?: readonly ErrorDetail[]): ApiError {
    return new ApiError(409, "conflict", message, { details });
  }

  /** 409: an `Idempotency-Key` already used on this route for a different request. */
  static idempotencyKeyReused(key: string): ApiError {
    return new ApiError(
      409,
      "idempotency_key_reused",
      `Idempotency key "${key}" was used for a different request; send a new key for new work`,
    );
  }

  /** 409: a request with the same `Idempotency-Key` is still being carried out. */
  static idempotencyKeyInUse(key: string): ApiError {
    return new ApiError(
      409,
      "idempotency_key_in_use",
      `A request with idempotency key "${key}" is still running; retry once it has been answered`,
    );
  }

  /** 413: body or file over its limit. */
  static tooLarge(limit: number): ApiError {
    return new ApiError(413, "payload_too_large", `Request body is larger than ${limit} bytes`);
  }

  /** 415: content type or file format not accepted here. */
  static unsupportedMediaType(message: string): ApiError {
    return new ApiError(415, "unsupported_media_type", message);
  }

  /** 422: well-formed but invalid definition or data. */
  static unprocessable(message: string, details?: readonly ErrorDetail[]): ApiError {
    return new ApiError(422, "invalid_definition", message, { details });
  }

  /** 422: data that does not fit its table (unknown column, bad value, NOT NULL). */
  static invalidData(message: string, details?: readonly ErrorDetail[]): ApiError {
    return new ApiError(422, "invalid_data", message, { details });
  }

  /** 500: never carries internals, only the request id to find them in the log. */
  static internal(requestId: string): ApiError {
    return new ApiError(
      500,
      "internal_error",
      `Internal error; the server log has the details under request id ${requestId}`,
    );
  }

  /**
   * 400, logged as 499: the connection closed before the request's body was in. Whether the
   * client went away or only closed its sending half and still waits cannot be told apart
   * here, so the answer is one a client may receive: nobody is ever sent a 499.
   */
  static clientClosed(): ApiError {
    return new ApiError(
      400,
      "bad_request",
      "The connection closed before the request body was complete; nothing was changed",
      { loggedStatus: 499 },
    );
  }

  /**
   * A request body whose read failed: {@link clientClosed} when the connection closed, else
   * 400 (the body's framing was broken, such as a malformed chunk). Only the connection fails
   * a read.
   */
  static unreadableBody(error: unknown): ApiError {
    if (error instanceof ApiError) return error;
    if (error instanceof Deno.errors.BadResource || error instanceof Deno.errors.ConnectionReset) {
      return ApiError.clientClosed();
    }
    return ApiError.badRequest(
      `The request body could not be read: ${error instanceof Error ? error.message : error}`,
    );
  }

  /** 507: the disk holding the data directory is full; nothing was changed. */
  static insufficientStorage(): ApiError {
    return new ApiError(
      507,
      "insufficient_storage",
      "No space is left on the disk of the data directory, so nothing was changed; free space and try again",
    );
  }

  /**
   * {@link insufficientStorage} for a failure that says the disk is full: `ENOSPC` from the
   * file system, or DuckDB's message quoting it. Undefined for any other failure.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   * import { ApiError } from "./errors.ts";
   *
   * const full = Object.assign(new Error("No space left on device (os error 28)"), { code: "ENOSPC" });
   * assert.equal(ApiError.fromFullDisk(full)?.status, 507);
   * assert.equal(ApiError.fromFullDisk(new Error("Permission denied")), undefined);
   * ```
   */
  static fromFullDisk(error: unknown): ApiError | undefined {
    if (!(error instanceof Error)) return undefined;
    const code = (error as { code?: unknown }).code;
    if (code === "ENOSPC" || error.message.includes("No space left on device")) {
      return ApiError.insufficientStorage();
    }
    return undefined;
  }

  /** 429: the token has `limit` queries under way already; `Retry-After` says when to try again. */
  static tooManyReads(limit: number): ApiError {
    return new ApiError(
      429,
      "too_many_requests",
      `This token already has ${limit} queries under way ` +
        "(QUERY_CONCURRENCY_PER_TOKEN); try again when one has ended",
      { headers: { "retry-after": "1" } },
    );
  }

  /** 501: the engine in use does not do this; the message says what does. */
  static notImplemented(message: string): ApiError {
    return new ApiError(501, "not_implemented", message);
  }

  /** 503: the database cannot serve now; `retryAfterSeconds` says when to try again. */
  static unavailable(message: string, retryAfterSeconds?: number): ApiError {
    return new ApiError(503, "unavailable", message, {
      headers: retryAfterSeconds === undefined ? undefined : {
        "retry-after": String(retryAfterSeconds),
      },
    });
  }
}
