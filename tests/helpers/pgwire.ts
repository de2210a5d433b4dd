/**
 * Talking to the service's PostgreSQL protocol listener in tests: its port as the service
 * printed it, a raw connection for the protocol's own messages, and npm:pg clients.
 *
 * @module
 */

// @ts-types="@types/pg"
import pg from "pg";
import type { TestServer } from "./server.ts";

/** The listener's port, from the line the service printed at start. */
export function pgwirePort(server: TestServer): number {
  const match = /PostgreSQL protocol on [^\s]+:(\d+)/.exec(server.stdout);
  if (!match) throw new Error(`The service printed no PostgreSQL port:\n${server.stdout}`);
  return Number(match[1]);
}

/** Whether the tests must find the protocol's clients (CI sets it): a missing one fails. */
export const REQUIRED = Deno.env.get("REQUIRE_PGWIRE_CLIENTS") !== undefined;

/** Whether `path` exists, or, when the clients are required, a failure saying it is missing. */
export function installed(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    if (REQUIRED) throw new Error(`${path} is missing, and REQUIRE_PGWIRE_CLIENTS is set`);
    return false;
  }
}

/** An npm:pg client connected with `token` as its password. */
export async function pgClient(
  server: TestServer,
  token = server.token,
  options: pg.ClientConfig = {},
): Promise<pg.Client> {
  const client = new pg.Client({
    host: "127.0.0.1",
    port: pgwirePort(server),
    user: "analyst",
    database: "tables",
    password: token,
    ...options,
  });
  // A connection the server ends (the service stopping) is an event, not a crash of the test.
  client.on("error", () => {});
  await client.connect();
  return client;
}

/** The SQLSTATE a promise fails with, or "none". */
export async function sqlstate(work: Promise<unknown>): Promise<string> {
  try {
    await work;
    return "none";
  } catch (error) {
    return String((error as { code?: unknown }).code ?? (error as Error).message);
  }
}

/** A backend message as read raw: its type character and body. */
export interface RawMessage {
  readonly type: string;
  readonly body: Uint8Array;
}

const encoder = new TextEncoder();

/** A connection speaking the protocol byte by byte, for what no driver lets a test send. */
export class RawConnection {
  #buffer = new Uint8Array(0);

  private constructor(readonly conn: Deno.Conn) {}

  static async open(port: number): Promise<RawConnection> {
    return new RawConnection(await Deno.connect({ hostname: "127.0.0.1", port }));
  }

  /** Writes `bytes` whole. */
  async write(bytes: Uint8Array): Promise<void> {
    let written = 0;
    while (written < bytes.length) written += await this.conn.write(bytes.subarray(written));
  }

  /** A start-up packet: `code` (a protocol version or a request code) and parameters. */
  async startup(code: number, params: Record<string, string> = {}): Promise<void> {
    const body = [
      ...Object.entries(params).flatMap((
        [k, v],
      ) => [...encoder.encode(k), 0, ...encoder.encode(v), 0]),
      ...(Object.keys(params).length ? [0] : []),
    ];
    const bytes = new Uint8Array(8 + body.length);
    const view = new DataView(bytes.buffer);
    view.setInt32(0, bytes.length);
    view.setInt32(4, code);
    bytes.set(body, 8);
    await this.write(bytes);
  }

  /** A typed message. */
  async send(type: string, body: Uint8Array | number[] = []): Promise<void> {
    const bytes = new Uint8Array(5 + body.length);
    bytes[0] = type.charCodeAt(0);
    new DataView(bytes.buffer).setInt32(1, 4 + body.length);
    bytes.set(body, 5);
    await this.write(bytes);
  }

  /** A string and its NUL, as message bodies carry them. */
  static cstring(text: string): number[] {
    return [...encoder.encode(text), 0];
  }

  async #fill(): Promise<boolean> {
    const chunk = new Uint8Array(64 * 1024);
    const n = await this.conn.read(chunk);
    if (n === null) return false;
    const joined = new Uint8Array(this.#buffer.length + n);
    joined.set(this.#buffer);
    joined.set(chunk.subarray(0, n), this.#buffer.length);
    this.#buffer = joined;
    return true;
  }

  /** One byte, as the answer to an SSLRequest or GSSENCRequest; null at the end. */
  async byte(): Promise<string | null> {
    while (this.#buffer.length < 1) if (!await this.#fill()) return null;
    const byte = this.#buffer[0]!;
    this.#buffer = this.#buffer.slice(1);
    return String.fromCharCode(byte);
  }

  /** The next message, or null when the server closed the connection. */
  async message(): Promise<RawMessage | null> {
    while (true) {
      if (this.#buffer.length >= 5) {
        const length = new DataView(this.#buffer.buffer).getInt32(1);
        if (this.#buffer.length >= 1 + length) {
          const message = {
            type: String.fromCharCode(this.#buffer[0]!),
            body: this.#buffer.slice(5, 1 + length),
          };
          this.#buffer = this.#buffer.slice(1 + length);
          return message;
        }
      }
      if (!await this.#fill()) return null;
    }
  }

  /** Messages up to and including `type`, or to the connection's end. */
  async until(type: string): Promise<RawMessage[]> {
    const messages: RawMessage[] = [];
    while (true) {
      const message = await this.message();
      if (message === null) return messages;
      messages.push(message);
      if (message.type === type) return messages;
    }
  }

  close(): void {
    try {
      this.conn.close();
    } catch {
      // Closed by the server.
    }
  }
}

/** The fields of an ErrorResponse or NoticeResponse body, by their code letter. */
export function errorFields(body: Uint8Array): Record<string, string> {
  const fields: Record<string, string> = {};
  const decoder = new TextDecoder();
  let at = 0;
  while (at < body.length && body[at] !== 0) {
    const code = String.fromCharCode(body[at]!);
    const end = body.indexOf(0, at + 1);
    fields[code] = decoder.decode(body.subarray(at + 1, end));
    at = end + 1;
  }
  return fields;
}

/** The name and value of a ParameterStatus body. */
export function parameterStatus(body: Uint8Array): [string, string] {
  const [name, value] = new TextDecoder().decode(body).split("\0");
  return [name!, value!];
}
