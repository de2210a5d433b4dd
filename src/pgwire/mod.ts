/**
 * The PostgreSQL protocol listener: read-only SQL for the clients analysts already use
 * (psql, drivers, BI tools), each connection authenticated by a bearer token as its password
 * and confined as `POST /query` is. See docs/pgwire.md.
 *
 * @module
 */

import net from "node:net";
import tls from "node:tls";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { hasScope, type Principal, type TokenVerifier } from "../auth/jwt.ts";
import { ApiError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { openWireSession, type Store } from "../service/wire.ts";
import { Connection, type ConnectionObserver } from "./connection.ts";
import { WireError } from "./errors.ts";
import { statementKind } from "./statements.ts";

/** How the listener is set up. */
export interface PgwireOptions {
  readonly host: string;
  /** 0 for any free port. */
  readonly port: number;
  /** PEM certificate chain and key; without them, clients asking for TLS are told no. */
  readonly tls?: { readonly cert: string; readonly key: string };
  readonly maxConnections: number;
  readonly idleMs: number;
  readonly maxMessageBytes: number;
  readonly queryTimeoutMs: number;
  readonly store: Store;
  readonly verifier: TokenVerifier;
  readonly logger: Logger;
  /** Where the listener's metrics are registered. */
  readonly registry: Registry;
}

/** A running listener. */
export interface Pgwire {
  readonly port: number;
  /** Stops accepting, ends every connection (FATAL 57P01) and waits for them to close. */
  stop(): Promise<void>;
}

/** How long start-up and authentication may take. */
const STARTUP_MS = 15_000;

/** The listener's metrics. */
function pgwireMetrics(registry: Registry) {
  const registers = [registry];
  return {
    connections: new Counter({
      name: "table_service_pgwire_connections_total",
      help: "PostgreSQL-protocol connections authenticated.",
      registers,
    }),
    open: new Gauge({
      name: "table_service_pgwire_open_connections",
      help: "PostgreSQL-protocol connections open now, authenticated or not.",
      registers,
    }),
    statements: new Counter({
      name: "table_service_pgwire_statements_total",
      help: "Statements run over the PostgreSQL protocol, by SQLSTATE (00000 for success).",
      labelNames: ["sqlstate"],
      registers,
    }),
    latency: new Histogram({
      name: "table_service_pgwire_statement_duration_seconds",
      help: "Time of a statement over the PostgreSQL protocol, its rows sent included.",
      buckets: [0.001, 0.005, 0.025, 0.1, 0.5, 2.5, 10, 60],
      registers,
    }),
    rows: new Counter({
      name: "table_service_pgwire_rows_sent_total",
      help: "Rows sent over the PostgreSQL protocol.",
      registers,
    }),
  };
}

/**
 * Starts listening on `options.host`:`options.port`; rejects when the port cannot be bound.
 */
export async function startPgwire(options: PgwireOptions): Promise<Pgwire> {
  const { logger } = options;
  const metrics = pgwireMetrics(options.registry);
  const connections = new Set<Connection>();
  const byPid = new Map<number, Connection>();
  const context = options.tls && tls.createSecureContext(options.tls);
  const observe: ConnectionObserver = {
    connected(c) {
      metrics.connections.inc();
      logger.log("info", "pgwire connection", {
        connection: c.pid,
        user: c.user,
        database: c.database,
        application_name: c.settings?.get("application_name") ?? "",
        remote: c.remote,
      });
    },
    query(c, record) {
      metrics.statements.inc({ sqlstate: record.code });
      metrics.latency.observe(record.seconds);
      metrics.rows.inc(record.rows);
      // The statement's text may hold values: its command at info, the text at debug.
      const kind = statementKind(record.sql);
      const fields = {
        connection: c.pid,
        command: "command" in kind ? kind.command : kind.kind,
        sqlstate: record.code,
        rows: record.rows,
        ms: Math.round(record.seconds * 1000 * 10) / 10,
      };
      logger.log(record.code === "00000" ? "info" : "warn", "pgwire statement", fields);
      logger.log("debug", "pgwire statement text", { connection: c.pid, sql: record.sql });
    },
    closed(c, reason) {
      logger.log("info", "pgwire connection closed", {
        connection: c.pid,
        reason,
        statements: c.queries,
        seconds: Math.round(performance.now() - c.opened) / 1000,
      });
    },
  };
  const authenticate = async (token: string): Promise<Principal> => {
    const principal = await options.verifier.verify(token);
    if (!hasScope(principal, "tables:read")) {
      throw ApiError.forbidden('The token lacks the "tables:read" scope');
    }
    return principal;
  };
  const server = net.createServer((socket) => {
    const connection = new Connection(socket, {
      authenticate,
      openSession: (single) => openWireSession(options, { single }),
      queryTimeoutMs: options.queryTimeoutMs,
      maxMessageBytes: options.maxMessageBytes,
      idleMs: options.idleMs,
      startupMs: STARTUP_MS,
      tls: context &&
        ((plain) =>
          new tls.TLSSocket(plain, { isServer: true, secureContext: context }) as net.Socket),
      // This one is counted already.
      admit: () => connections.size <= options.maxConnections,
      register: (c) => byPid.set(c.pid, c),
      cancel(pid, secret) {
        const target = byPid.get(pid);
        if (target && target.secret === secret) target.cancel();
      },
      observe,
    });
    connections.add(connection);
    metrics.open.inc();
    connection.onClose = () => {
      connections.delete(connection);
      byPid.delete(connection.pid);
      metrics.open.dec();
    };
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as net.AddressInfo).port;
  let stopped: Promise<void> | undefined;
  return {
    port,
    stop: () =>
      stopped ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        const open = [...connections];
        for (const connection of open) {
          connection.terminate(
            new WireError("57P01", "terminating connection due to administrator command", "FATAL"),
          );
        }
        // The store closes next: every engine session must be back by then.
        await Promise.all(open.map((connection) => connection.ended));
        await closed;
      })(),
  };
}
