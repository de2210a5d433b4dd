/**
 * What the service tells about its requests: one JSON log line each, and the counters behind
 * `GET /metrics` (Prometheus text format, written by `prom-client`).
 *
 * @module
 */

import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { AuthVariables } from "./auth.ts";
import { ApiError } from "../errors.ts";
import type { Logger } from "../log.ts";

/** What a request's handlers tell the observer, besides what it sees itself. */
export interface ObservedVariables {
  requestId: string;
  /** Rows a load stored (uploads and record inserts). */
  rowsLoaded: number;
  /** Set by a handler whose response body is a stream: its bytes are counted as sent. */
  streamedResponse: boolean;
  /** Request body bytes counted by {@link bodyCounter}. */
  bodyBytes: number;
}

/** One finished request. */
export interface RequestRecord {
  readonly method: string;
  /** The route's pattern (`/api/v1/table/:table_name`), or `unmatched`. */
  readonly route: string;
  readonly status: number;
  readonly seconds: number;
  readonly bytesIn: number;
  /** Did a load route read the body, counting it ({@link bodyCounter})? Its bytes are uploads. */
  readonly uploaded: boolean;
  readonly bytesOut: number;
  readonly rowsLoaded: number;
}

/** Upper bounds of the latency histogram's buckets, in seconds. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Methods that get a label of their own; any other is counted as `OTHER`, keeping series few. */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/**
 * `prom-client`'s standard metrics that Deno leaves unfilled: those read from `/proc`, which its
 * sandbox opens only to `--allow-all` (they showed zeros), and those fed by Node internals Deno
 * does not implement (garbage collection events, libuv handles and requests: never a sample).
 */
const UNFILLED_METRICS = [
  "process_resident_memory_bytes",
  "process_virtual_memory_bytes",
  "process_heap_bytes",
  "process_open_fds",
  "process_max_fds",
  "nodejs_gc_duration_seconds",
  "nodejs_active_handles",
  "nodejs_active_handles_total",
  "nodejs_active_requests",
  "nodejs_active_requests_total",
];

/**
 * Routes that probes and scrapers call every few seconds. Their answers below 400 are logged at
 * debug, so that a health check every 10 s does not bury the requests at info; their failures
 * stay at info.
 */
const PROBE_ROUTES = new Set(["/healthz", "/readyz", "/metrics"]);

/** The values the store reports at a scrape, read when `/metrics` is asked. */
export interface StoreGauges {
  readonly openTransactions: number;
  /** Bytes the database engine holds, by what it holds them for. */
  readonly storageMemory: ReadonlyMap<string, number>;
}

/**
 * Counters over finished requests, rendered in the Prometheus text format by `prom-client`,
 * with its standard process metrics (`process_*`, `nodejs_*`). Each instance has a registry of
 * its own, so that several apps in one process (tests) count apart.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Metrics } from "./observe.ts";
 *
 * const metrics = new Metrics();
 * metrics.observe({
 *   method: "POST", route: "/api/v1/table/:table_name/records", status: 200,
 *   seconds: 0.004, bytesIn: 512, uploaded: true, bytesOut: 80, rowsLoaded: 10,
 * });
 * const text = await metrics.render({
 *   openTransactions: 0,
 *   storageMemory: new Map([["base_table", 2048]]),
 * });
 * assert.match(text, /^table_service_rows_loaded_total\{route="[^"]+records"\} 10$/m);
 * assert.match(text, /^table_service_uploaded_bytes_total\{route="[^"]+records"\} 512$/m);
 * assert.match(text, /^table_service_storage_memory_bytes 2048$/m);
 * assert.match(text, /^table_service_storage_memory_by_use_bytes\{use="base_table"\} 2048$/m);
 * assert.match(text, /^process_resident_memory_bytes \d+$/m);
 * ```
 */
export class Metrics {
  /** The `Content-Type` of {@link render}'s text. */
  readonly contentType: string;
  readonly #registry = new Registry();
  readonly #requests: Counter<"method" | "route" | "status">;
  readonly #latency: Histogram<"method" | "route">;
  readonly #sent: Counter<"method" | "route">;
  readonly #rows: Counter<"route">;
  readonly #uploaded: Counter<"route">;
  readonly #openTransactions: Gauge;
  readonly #storageMemory: Gauge;
  readonly #storageMemoryByUse: Gauge<"use">;

  /** `others`: registries whose metrics are rendered with these (the PostgreSQL listener's). */
  constructor(private readonly others: readonly Registry[] = []) {
    const registers = [this.#registry];
    this.contentType = this.#registry.contentType;
    this.#requests = new Counter({
      name: "table_service_http_requests_total",
      help: "Requests answered, by route and status.",
      labelNames: ["method", "route", "status"],
      registers,
    });
    this.#latency = new Histogram({
      name: "table_service_http_request_duration_seconds",
      help: "Time from a request's arrival to its last byte sent.",
      labelNames: ["method", "route"],
      buckets: BUCKETS,
      registers,
    });
    this.#sent = new Counter({
      name: "table_service_http_response_bytes_total",
      help: "Response body bytes sent, as sent: compressed when the answer was.",
      labelNames: ["method", "route"],
      registers,
    });
    this.#rows = new Counter({
      name: "table_service_rows_loaded_total",
      help: "Rows stored by uploads and record inserts.",
      labelNames: ["route"],
      registers,
    });
    this.#uploaded = new Counter({
      name: "table_service_uploaded_bytes_total",
      help: "Request body bytes received by the load routes.",
      labelNames: ["route"],
      registers,
    });
    this.#openTransactions = new Gauge({
      name: "table_service_open_transactions",
      help: "Database transactions open now.",
      registers,
    });
    this.#storageMemory = new Gauge({
      name: "table_service_storage_memory_bytes",
      help: "Memory the database engine holds by its own count, its cache of table data included.",
      registers,
    });
    this.#storageMemoryByUse = new Gauge({
      name: "table_service_storage_memory_by_use_bytes",
      help: "The same by what the engine holds it for; base_table is its cache of table data.",
      labelNames: ["use"],
      registers,
    });
    new Gauge({
      name: "table_service_js_heap_bytes",
      help: "JavaScript heap in use.",
      registers,
      collect() {
        this.set(Deno.memoryUsage().heapUsed);
      },
    });
    collectDefaultMetrics({ register: this.#registry });
    // Left out rather than shown as zeros; the resident memory comes from Deno instead.
    for (const name of UNFILLED_METRICS) this.#registry.removeSingleMetric(name);
    new Gauge({
      name: "process_resident_memory_bytes",
      help: "Resident memory size in bytes.",
      registers,
      collect() {
        this.set(Deno.memoryUsage().rss);
      },
    });
  }

  /** Counts one finished request. */
  observe(record: RequestRecord): void {
    const method = METHODS.has(record.method) ? record.method : "OTHER";
    const route = { method, route: record.route };
    this.#requests.inc({ ...route, status: String(record.status) });
    this.#latency.observe(route, record.seconds);
    this.#sent.inc(route, record.bytesOut);
    if (record.rowsLoaded > 0) this.#rows.inc({ route: record.route }, record.rowsLoaded);
    if (record.uploaded && record.bytesIn > 0) {
      this.#uploaded.inc({ route: record.route }, record.bytesIn);
    }
  }

  /** The Prometheus text exposition of every metric, the store's gauges set to `gauges`. */
  render(gauges: StoreGauges): Promise<string> {
    this.#openTransactions.set(gauges.openTransactions);
    let storageTotal = 0;
    // Reset, so that a use the engine no longer reports is not shown at its last value.
    this.#storageMemoryByUse.reset();
    for (const [use, bytes] of gauges.storageMemory) {
      this.#storageMemoryByUse.set({ use }, bytes);
      storageTotal += bytes;
    }
    this.#storageMemory.set(storageTotal);
    if (this.others.length === 0) return this.#registry.metrics();
    return Registry.merge([this.#registry, ...this.others]).metrics();
  }
}

/** The context variables of every request: its principal and what the observer tracks. */
export type Env = { Variables: AuthVariables & ObservedVariables };

/** Tells the request's log line and metrics how many rows its load stored. */
export function noteRowsLoaded(c: Context, rows: number): void {
  (c as Context<Env>).set("rowsLoaded", rows);
}

/**
 * A counter for a route that reads its body itself: told each chunk's size, it gives the
 * request's log line the bytes that arrived (a chunked body included). Other routes' bodies
 * are logged at their declared `Content-Length`.
 */
export function bodyCounter(c: Context): (bytes: number) => void {
  const observed = c as Context<Env>;
  observed.set("bodyBytes", 0);
  return (bytes) => observed.set("bodyBytes", observed.get("bodyBytes") + bytes);
}

/**
 * Answers with a streamed body, marked so that its bytes are counted as they are sent and
 * its log line is written when it ends (or a HEAD request cancels it).
 */
export function streamedResponse(
  c: Context,
  stream: ReadableStream<Uint8Array>,
  headers: Record<string, string>,
): Response {
  (c as Context<Env>).set("streamedResponse", true);
  return c.body(stream, 200, headers);
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Middleware that gives each request an id (the client's `X-Request-Id` when it is sane),
 * counts the body bytes read and sent, and when the response is over writes one log line
 * and feeds `metrics`.
 */
export function observeRequests(logger: Logger, metrics: Metrics): MiddlewareHandler<Env> {
  return async function observeRequests(c, next) {
    const started = performance.now();
    const given = c.req.header("x-request-id");
    const requestId = given && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    c.set("requestId", requestId);

    await next();
    c.res.headers.set("x-request-id", requestId);

    const bodyBytes = c.get("bodyBytes");
    const finish = (bytesOut: number, completed: boolean) => {
      const record: RequestRecord = {
        method: c.req.method,
        route: matchedRoute(c),
        // A failure may be logged otherwise than answered: a client gone is 499.
        status: c.error instanceof ApiError ? c.error.loggedStatus : c.res.status,
        seconds: (performance.now() - started) / 1000,
        bytesIn: bodyBytes ?? (Number(c.req.header("content-length")) || 0),
        uploaded: bodyBytes !== undefined,
        bytesOut,
        rowsLoaded: c.get("rowsLoaded") ?? 0,
      };
      metrics.observe(record);
      const probe = PROBE_ROUTES.has(record.route) && record.status < 400;
      logger.log(probe ? "debug" : "info", "request", {
        request_id: requestId,
        method: record.method,
        route: record.route,
        path: loggedPath(c.req.path),
        status: record.status,
        duration_ms: Math.round(record.seconds * 10_000) / 10,
        bytes_in: record.bytesIn,
        bytes_out: record.bytesOut,
        subject: c.get("principal")?.subject ?? null,
        rows_loaded: record.rowsLoaded,
        ...(completed ? {} : { aborted: true }),
      });
    };

    // `c.res.body` is read only for a stream: asked of a body given whole, it turns that body
    // into a stream, and Deno then sends some answers chunked instead of with their length.
    const declared = c.res.headers.get("content-length");
    if (c.req.method === "HEAD") {
      // Hono answers HEAD with the GET handler's response minus its body, unread: a stream
      // left so would hold what it holds (an export: a connection and a transaction).
      if (c.get("streamedResponse")) await c.res.body?.cancel();
      finish(0, true);
    } else if (declared !== null) finish(Number(declared), true);
    else if (
      c.res.body !== null && (c.get("streamedResponse") || c.res.headers.has("content-encoding"))
    ) {
      // Logged when the last byte is sent (or the client goes away), not when it starts, and
      // counted as sent: compressed, which the compressor may have read far ahead of.
      let bytesOut = 0;
      const body = counted(c.res.body, (n) => bytesOut += n, (completed) => {
        finish(bytesOut, completed);
      });
      c.res = new Response(body, c.res);
    } else {
      // A body given whole (JSON, text): its length, without turning it into a stream.
      finish((await c.res.clone().arrayBuffer()).byteLength, true);
    }
  };
}

/** A download ticket in a path: a credential, which no log line may carry. */
const TICKET_PATH = /^(\/api\/v1\/download\/)[^/]+/;

/**
 * The path a log line shows: as asked, but a download ticket hidden.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { loggedPath } from "./observe.ts";
 *
 * assert.equal(loggedPath("/api/v1/download/secretTicket"), "/api/v1/download/…");
 * assert.equal(loggedPath("/api/v1/table/t"), "/api/v1/table/t");
 * ```
 */
export function loggedPath(path: string): string {
  return path.replace(TICKET_PATH, "$1…");
}

/** The pattern of the route that answered, not the path asked (bounded label values). */
function matchedRoute(c: Context<Env>): string {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    const route = routes[i]!;
    if (route.method !== "ALL") return route.path;
  }
  return "unmatched";
}

/** `body` passed on unchanged, its chunk sizes told to `count`, its end to `done`. */
function counted(
  body: ReadableStream<Uint8Array>,
  count: (bytes: number) => void,
  done: (completed: boolean) => void,
): ReadableStream<Uint8Array> {
  // Taken on the first read: a body nobody reads stays untouched, for the server to drain.
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  let ended = false;
  const end = (completed: boolean) => {
    if (!ended) done(completed);
    ended = true;
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        reader ??= body.getReader();
        chunk = await reader.read();
      } catch (error) {
        end(false);
        throw error;
      }
      if (chunk.done) {
        end(true);
        controller.close();
        return;
      }
      count(chunk.value.byteLength);
      controller.enqueue(chunk.value);
    },
    cancel(reason) {
      end(false);
      return (reader ?? body).cancel(reason);
    },
  }, { highWaterMark: 0 });
}
