/**
 * What the service tells about its requests: one JSON log line each, and the counters behind
 * `GET /metrics` (Prometheus text format).
 *
 * @module
 */

import type { Context, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { AuthVariables } from "./auth/middleware.ts";
import { ApiError } from "./errors.ts";
import type { Logger } from "./log.ts";

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
 * Routes that probes and scrapers call every few seconds. Their answers below 400 are logged at
 * debug, so that a health check every 10 s does not bury the requests at info; their failures
 * stay at info.
 */
const PROBE_ROUTES = new Set(["/healthz", "/readyz", "/metrics"]);

interface Histogram {
  readonly counts: number[];
  sum: number;
  count: number;
}

/**
 * Counters over finished requests, rendered in the Prometheus text format.
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
 * const text = metrics.render({
 *   openTransactions: 0,
 *   storageMemory: new Map([["base_table", 2048]]),
 * });
 * assert.match(text, /^table_service_rows_loaded_total\{route="[^"]+records"\} 10$/m);
 * assert.match(text, /^table_service_uploaded_bytes_total\{route="[^"]+records"\} 512$/m);
 * assert.match(text, /^table_service_storage_memory_bytes 2048$/m);
 * assert.match(text, /^table_service_storage_memory_by_use_bytes\{use="base_table"\} 2048$/m);
 * ```
 */
export class Metrics {
  readonly #requests = new Map<string, number>();
  readonly #latency = new Map<string, Histogram>();
  readonly #sent = new Map<string, number>();
  readonly #rows = new Map<string, number>();
  readonly #uploaded = new Map<string, number>();

  /** Counts one finished request. */
  observe(record: RequestRecord): void {
    const method = METHODS.has(record.method) ? record.method : "OTHER";
    const route = labels({ method, route: record.route });
    add(this.#requests, `${route},${labels({ status: String(record.status) })}`, 1);
    let histogram = this.#latency.get(route);
    if (histogram === undefined) {
      histogram = { counts: BUCKETS.map(() => 0), sum: 0, count: 0 };
      this.#latency.set(route, histogram);
    }
    const bucket = BUCKETS.findIndex((bound) => record.seconds <= bound);
    if (bucket >= 0) histogram.counts[bucket]!++;
    histogram.sum += record.seconds;
    histogram.count++;
    add(this.#sent, route, record.bytesOut);
    const path = labels({ route: record.route });
    if (record.rowsLoaded > 0) add(this.#rows, path, record.rowsLoaded);
    if (record.uploaded && record.bytesIn > 0) {
      add(this.#uploaded, path, record.bytesIn);
    }
  }

  /** The Prometheus text exposition of every counter, plus the gauges given. */
  render(
    gauges: { openTransactions: number; storageMemory: ReadonlyMap<string, number> },
  ): string {
    const out: string[] = [];
    const family = (name: string, type: string, help: string, series?: Map<string, number>) => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      for (const [key, value] of series ?? []) out.push(`${name}{${key}} ${value}`);
    };

    family(
      "table_service_http_requests_total",
      "counter",
      "Requests answered, by route and status.",
      this.#requests,
    );
    const latency = "table_service_http_request_duration_seconds";
    family(latency, "histogram", "Time from a request's arrival to its last byte sent.");
    for (const [key, histogram] of this.#latency) {
      let cumulative = 0;
      BUCKETS.forEach((bound, i) => {
        cumulative += histogram.counts[i]!;
        out.push(`${latency}_bucket{${key},le="${bound}"} ${cumulative}`);
      });
      out.push(
        `${latency}_bucket{${key},le="+Inf"} ${histogram.count}`,
        `${latency}_sum{${key}} ${histogram.sum}`,
        `${latency}_count{${key}} ${histogram.count}`,
      );
    }
    family(
      "table_service_http_response_bytes_total",
      "counter",
      "Response body bytes sent, as sent: compressed when the answer was.",
      this.#sent,
    );
    family(
      "table_service_rows_loaded_total",
      "counter",
      "Rows stored by uploads and record inserts.",
      this.#rows,
    );
    family(
      "table_service_uploaded_bytes_total",
      "counter",
      "Request body bytes received by the load routes.",
      this.#uploaded,
    );
    family("table_service_open_transactions", "gauge", "Database transactions open now.");
    out.push(`table_service_open_transactions ${gauges.openTransactions}`);
    family(
      "table_service_storage_memory_bytes",
      "gauge",
      "Memory the database engine holds by its own count, its cache of table data included.",
    );
    let storageTotal = 0;
    for (const bytes of gauges.storageMemory.values()) storageTotal += bytes;
    out.push(`table_service_storage_memory_bytes ${storageTotal}`);
    family(
      "table_service_storage_memory_by_use_bytes",
      "gauge",
      "The same by what the engine holds it for; base_table is its cache of table data.",
      new Map([...gauges.storageMemory].map(([use, bytes]) => [labels({ use }), bytes])),
    );
    const memory = Deno.memoryUsage();
    family("table_service_js_heap_bytes", "gauge", "JavaScript heap in use.");
    out.push(`table_service_js_heap_bytes ${memory.heapUsed}`);
    family("process_resident_memory_bytes", "gauge", "Resident memory of the process.");
    out.push(`process_resident_memory_bytes ${memory.rss}`);
    return out.join("\n") + "\n";
  }
}

function add(map: Map<string, number>, key: string, amount: number): void {
  map.set(key, (map.get(key) ?? 0) + amount);
}

/** Prometheus label pairs, values escaped. */
function labels(pairs: Record<string, string>): string {
  return Object.entries(pairs)
    .map(([name, value]) =>
      `${name}="${value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n")}"`
    )
    .join(",");
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
        path: c.req.path,
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
