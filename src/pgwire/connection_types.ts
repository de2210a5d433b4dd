/**
 * What a PostgreSQL-protocol connection (connection.ts) needs of its listener and reports to
 * it, and the statements and portals it holds.
 *
 * @module
 */

import type { Socket } from "node:net";
import type { Principal } from "../auth/jwt.ts";
import type { QueryParam, WireColumn, WireRows, WireSession } from "../service/wire.ts";
import type { Connection } from "./connection.ts";
import type { StatementKind } from "./statements.ts";

/** What a connection needs of the listener. */
export interface ConnectionDeps {
  /** The principal of a token, or a failure (an ApiError 401) for a bad one. */
  authenticate(token: string): Promise<Principal>;
  /** An engine session; `single`: for one statement alone (a simple query of one statement). */
  openSession(single: boolean): Promise<WireSession>;
  /** The service's query timeout: the default and the most of `statement_timeout`. */
  readonly queryTimeoutMs: number;
  /** Most bytes of one message. */
  readonly maxMessageBytes: number;
  /** Closed when no message comes for this long (and none runs). */
  readonly idleMs: number;
  /** Closed when start-up and authentication take longer than this. */
  readonly startupMs: number;
  /** Turns the socket into a TLS one, when TLS is configured. */
  readonly tls?: (socket: Socket) => Socket;
  /** Whether another client may connect now; false answers 53300. */
  admit(): boolean;
  /** Notes this connection's cancel key (answered once authenticated). */
  register(connection: Connection): void;
  /** Runs a CancelRequest against the connection with that key. */
  cancel(pid: number, secret: number): void;
  /** Log lines and metrics. */
  readonly observe: ConnectionObserver;
}

/** Where a connection reports what it does. */
export interface ConnectionObserver {
  connected(connection: Connection): void;
  query(connection: Connection, record: QueryRecord): void;
  closed(connection: Connection, reason: string): void;
}

/** One statement as the log and metrics see it. */
export interface QueryRecord {
  readonly sql: string;
  readonly code: string;
  readonly rows: number;
  readonly seconds: number;
}

/** A prepared statement: its text, kind and declared parameter types. */
export interface Prepared {
  readonly sql: string;
  readonly kind: StatementKind;
  readonly paramTypes: number[];
  described?: { columns: readonly WireColumn[]; params: readonly number[] };
}

/** A bound statement, and its result once it has begun. */
export interface Portal {
  readonly statement: Prepared;
  readonly params: QueryParam[];
  /** Result formats as Bind gave them: none (all text), one for all, or one per column. */
  readonly formats: number[];
  rows?: WireRows;
  /** Whether its result has been read to the end. */
  done: boolean;
}
