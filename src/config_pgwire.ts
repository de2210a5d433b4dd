/**
 * The PostgreSQL protocol listener's part of the configuration: its settings, and when it is
 * on (config.ts parses and checks the variables).
 *
 * @module
 */

/** The PostgreSQL protocol listener's settings. */
export interface PgwireConfig {
  /** On {@link Config.host}; 0 for any free port. */
  readonly port: number;
  /** PEM texts, or paths to them, of the certificate chain and its key. */
  readonly tls?: { readonly cert: string; readonly key: string };
  readonly maxConnections: number;
  /** A connection with no message for this long is closed. */
  readonly idleMs: number;
  /** A longer message closes its connection (08P01). */
  readonly maxMessageBytes: number;
}

/** The port the PostgreSQL protocol listens on by default, on a loopback `HOST`. */
export const DEFAULT_PGWIRE_PORT = 5433;

/**
 * Whether `host` is a loopback address, where the PostgreSQL protocol may go without TLS.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isLoopback } from "./config_pgwire.ts";
 *
 * assert.equal(isLoopback("127.0.0.1"), true);
 * assert.equal(isLoopback("[::1]"), true);
 * assert.equal(isLoopback("0.0.0.0"), false);
 * ```
 */
export function isLoopback(host: string): boolean {
  return /^(localhost|127(\.\d{1,3}){3}|\[?::1\]?)$/i.test(host);
}

/** The parsed variables {@link pgwireConfig} reads. */
export interface PgwireVariables {
  readonly HOST: string;
  readonly PORT: number;
  readonly PGWIRE_PORT?: number | "off";
  readonly PGWIRE_TLS_CERT?: string;
  readonly PGWIRE_TLS_KEY?: string;
  readonly PGWIRE_MAX_CONNECTIONS: number;
  readonly PGWIRE_IDLE_TIMEOUT_SECONDS: number;
  readonly PGWIRE_MAX_MESSAGE_BYTES: number;
}

/**
 * The listener's settings: on when `PGWIRE_PORT` names a port, or by default on a loopback
 * `HOST` (port 5433); off with `PGWIRE_PORT=off` and by default elsewhere.
 */
export function pgwireConfig(vars: PgwireVariables): { pgwire?: PgwireConfig } {
  // With PORT=0 (any free port, as tests ask), the listener takes any free port too, so that
  // services side by side do not contend for 5433.
  const port = vars.PGWIRE_PORT ??
    (isLoopback(vars.HOST) || vars.PGWIRE_TLS_CERT !== undefined
      ? (vars.PORT === 0 ? 0 : DEFAULT_PGWIRE_PORT)
      : "off");
  if (port === "off") return {};
  const tls = vars.PGWIRE_TLS_CERT !== undefined && vars.PGWIRE_TLS_KEY !== undefined
    ? { cert: vars.PGWIRE_TLS_CERT, key: vars.PGWIRE_TLS_KEY }
    : undefined;
  return {
    pgwire: Object.freeze({
      port,
      ...(tls ? { tls } : {}),
      maxConnections: vars.PGWIRE_MAX_CONNECTIONS,
      idleMs: vars.PGWIRE_IDLE_TIMEOUT_SECONDS,
      maxMessageBytes: vars.PGWIRE_MAX_MESSAGE_BYTES,
    }),
  };
}
