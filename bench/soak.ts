/**
 * `deno task bench soak [minutes] [rate] [kinds]`: mixed traffic against a spawned service for
 * `minutes` (60 by default) at `rate` requests a second (200): pages at random filters
 * (`filters`), pages by cursor (`cursors`), 10-row inserts (`inserts`), summaries (`summaries`)
 * and `POST /query` (`queries`), or only the `kinds` named (comma-separated); `floor`, named
 * only, asks for a route that is not there, which the HTTP layer and the token check answer
 * alone. Each minute it prints the
 * service's RSS, DuckDB's own count of its memory (`table_service_storage_memory_bytes`, which a
 * growing table legitimately fills up to `DUCKDB_MEMORY_LIMIT`) and the rest, RSS less DuckDB's;
 * at the end, the rest's growth from minute 10 (a third of the run when shorter) to the last, in
 * MB and in bytes per request, against the target of 50 MB over an hour.
 *
 * @module
 */

import { mint, TestServer } from "../tests/helpers/server.ts";
import { memory } from "./measure.ts";

/** Most requests in flight: past it a tick's requests are counted as missed, not queued. */
const MAX_IN_FLIGHT = 64;
const MB = 1e6;

interface Minute {
  readonly minute: number;
  readonly requests: number;
  readonly rss: number;
  readonly duckdb: number;
  readonly rest: number;
}

/** DuckDB's own count of its memory, from the service's metrics, in bytes. */
async function duckdbMemory(server: TestServer): Promise<number> {
  const metrics = await server.request("GET", "/metrics");
  return Number(/^table_service_storage_memory_bytes (\d+)/m.exec(metrics.text)?.[1] ?? NaN);
}

/** Runs the soak and prints its minutes and the growth of what is not DuckDB's. */
export async function soak(
  minutes: number,
  rate: number,
  only: readonly string[] = [],
): Promise<void> {
  const server = await TestServer.spawn({ LOG_LEVEL: "error" });
  try {
    const created = await server.request("POST", "table/events", {
      body: {
        table: {
          columns: [
            { name: "id", type: "bigserial" },
            { name: "k", type: "integer" },
            { name: "s", type: "varchar" },
            { name: "v", type: "double" },
          ],
          constraints: { primary_key: { columns: ["id"] } },
        },
      },
    });
    if (created.status !== 200) throw new Error(`Cannot create the table: ${created.text}`);
    let next = 0;
    const rows = (count: number) =>
      Array.from({ length: count }, () => {
        const n = next++;
        return { k: n % 1000, s: `event ${n} ${"x".repeat(n % 40)}`, v: (n * 7919) % 10007 };
      });
    for (let i = 0; i < 20; i++) {
      const loaded = await server.request("POST", "table/events/records", { body: rows(5000) });
      if (loaded.status !== 200) throw new Error(`Cannot load: ${loaded.text}`);
    }

    const random = (n: number) => Math.floor(Math.random() * n);
    // Queries come from several clients, as dashboards' do: one token's are capped at 4.
    const queryTokens = await Promise.all(
      Array.from({ length: 16 }, (_, i) => mint({ scope: "tables:read", sub: `dashboard-${i}` })),
    );
    let cursor: string | null = null;
    const every: [string, number, () => Promise<{ status: number }>][] = [
      ["filters", 30, async () => {
        const filter = [`k=eq.${random(1000)}`, `v=gt.${random(10000)}`, `s=like.*${random(99)}*`][
          random(3)
        ];
        return await server.request(
          "GET",
          `table/events/records?${filter}&limit=20&offset=${random(50)}`,
        );
      }],
      ["cursors", 15, async () => {
        const page = await server.request(
          "GET",
          `table/events/records?limit=50&after=${encodeURIComponent(cursor ?? "")}`,
        );
        cursor = page.body?.next ?? null;
        return page;
      }],
      ["inserts", 30, () => server.request("POST", "table/events/records", { body: rows(10) })],
      // Not in the default mix: a route that is not there, answered by the HTTP layer and the
      // token check alone, so what the rest keep can be told from what serving keeps.
      ["floor", 0, async () => {
        const answer = await server.request("GET", "no-such-route");
        return { status: answer.status === 404 ? 200 : answer.status };
      }],
      ["summaries", 5, () => server.request("GET", "table/events/summary")],
      ["queries", 20, () =>
        server.request("POST", "query", {
          token: queryTokens[random(queryTokens.length)],
          body: {
            sql: "SELECT k, count(*) AS n, avg(v) AS v FROM events WHERE k BETWEEN $1 AND $1 + 9 " +
              "GROUP BY k ORDER BY k",
            params: [random(990)],
          },
        })],
    ];
    const unknown = only.filter((name) => !every.some(([kind]) => kind === name));
    if (unknown.length > 0) throw new Error(`Unknown kinds ${unknown.join(", ")}`);
    const chosen = every.filter(([kind, weight]) =>
      only.length === 0 ? weight > 0 : only.includes(kind)
    ).map(([kind, weight, send]) => [kind, weight || 10, send] as const);
    const kinds = chosen.map(([, weight, send]) => [weight, send] as const);
    const total = kinds.reduce((sum, [weight]) => sum + weight, 0);
    const pick = () => {
      let at = random(total);
      for (const [weight, send] of kinds) {
        if ((at -= weight) < 0) return send;
      }
      return kinds[0]![1];
    };

    let done = 0;
    let failed = 0;
    const failures = new Map<number, number>();
    let missed = 0;
    let inFlight = 0;
    const tickMs = 10;
    const perTick = rate * tickMs / 1000;
    let owed = 0;
    const ticker = setInterval(() => {
      owed += perTick;
      for (; owed >= 1; owed--) {
        if (inFlight >= MAX_IN_FLIGHT) {
          missed++;
          continue;
        }
        inFlight++;
        pick()().then(
          (answer) => {
            if (answer.status === 200) return done++;
            failed++;
            failures.set(answer.status, (failures.get(answer.status) ?? 0) + 1);
          },
          () => failed++,
        ).finally(() => inFlight--);
      }
    }, tickMs);

    const log: Minute[] = [];
    console.log(
      `\nSoak: ${minutes} min at ${rate} requests/s (${
        chosen.map(([kind, weight]) => `${kind} ${Math.round(weight / total * 100)}%`).join(", ")
      })`,
    );
    console.log("minute  requests   RSS MB  DuckDB MB  rest MB");
    try {
      for (let minute = 1; minute <= minutes; minute++) {
        await new Promise((resolve) => setTimeout(resolve, 60_000));
        const rss = memory(server.pid, "VmRSS") * 1024 ** 2;
        const duckdb = await duckdbMemory(server);
        const entry = { minute, requests: done, rss, duckdb, rest: rss - duckdb };
        log.push(entry);
        console.log(
          `${String(minute).padStart(6)} ${String(done).padStart(9)} ${
            (rss / MB).toFixed(0).padStart(8)
          } ${(duckdb / MB).toFixed(0).padStart(10)} ${(entry.rest / MB).toFixed(0).padStart(8)}`,
        );
      }
    } finally {
      clearInterval(ticker);
    }
    while (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 50));
    const from = log[Math.min(9, Math.floor(minutes / 3))]!;
    const to = log.at(-1)!;
    const growth = to.rest - from.rest;
    const requests = to.requests - from.requests;
    console.log(
      `rest from minute ${from.minute} to ${to.minute}: ${(growth / MB).toFixed(1)} MB over ` +
        `${requests} requests, ${(growth / Math.max(1, requests)).toFixed(0)} bytes a request ` +
        `(target: at most 50 MB an hour, ${(50 * MB / (rate * 3600)).toFixed(0)} bytes a ` +
        `request at ${rate}/s); ${failed} requests failed (${
          [...failures].map(([status, n]) => `${n}× ${status}`).join(", ") || "none"
        }), ${missed} not sent (${MAX_IN_FLIGHT} in flight)`,
    );
  } finally {
    await server.dispose();
  }
}
