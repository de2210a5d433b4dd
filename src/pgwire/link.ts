/**
 * What every PostgreSQL-protocol connection does before and around its queries: reads its
 * socket's messages one at a time, answers SSL and GSS requests (turning to TLS when it is
 * configured), takes a CancelRequest, checks the start-up packet's protocol version and the
 * cleartext password as a bearer token, and ends on FATAL errors and timeouts. Its queries
 * are connection.ts's.
 *
 * @module
 */

import type { Socket } from "node:net";
import type { Principal } from "../auth/jwt.ts";
import { errorResponse } from "./backend.ts";
import type { ConnectionDeps } from "./connection_types.ts";
import { asWireError, WireError } from "./errors.ts";
import {
  BodyReader,
  CANCEL_REQUEST,
  GSSENC_REQUEST,
  type Message,
  MessageReader,
  MessageTooLarge,
  MessageWriter,
  SSL_REQUEST,
} from "./messages.ts";
import { Settings } from "./settings.ts";

/** The protocol version 3.0. */
const PROTOCOL_3 = 196608;

let nextPid = 1;

/** A client connection's transport, start-up and authentication. */
export abstract class Link {
  readonly pid = nextPid++;
  readonly secret = crypto.getRandomValues(new Uint32Array(1))[0]! | 0;
  readonly remote: string;
  user = "";
  database = "";
  principal?: Principal;
  settings?: Settings;
  /** Statements run, for the closing log line. */
  queries = 0;
  readonly opened = performance.now();

  #socket: Socket;
  readonly #reader: MessageReader;
  /** Backend messages not yet sent. */
  protected readonly out = new MessageWriter();
  #phase: "startup" | "password" | "ready" | "closed" = "startup";
  /** I idle, T in a transaction block, E in a failed one. */
  protected status: "I" | "T" | "E" = "I";
  #running = false;
  #idle?: ReturnType<typeof setTimeout>;
  #startup?: ReturnType<typeof setTimeout>;
  #drained?: PromiseWithResolvers<void>;
  #startupParams = new Map<string, string>();

  constructor(socket: Socket, protected readonly deps: ConnectionDeps) {
    this.#socket = socket;
    this.remote = `${socket.remoteAddress}:${socket.remotePort}`;
    this.#reader = new MessageReader(deps.maxMessageBytes);
    this.#listen(socket);
    this.#startup = setTimeout(
      () => this.fatal(new WireError("08P01", "start-up took too long", "FATAL")),
      deps.startupMs,
    );
  }

  /** Handles a message after authentication. */
  protected abstract message(message: Message): Promise<void>;
  /** Ends the transaction under way and gives its engine session back. */
  protected abstract endSession(): Promise<void>;
  /** Interrupts the statement under way. */
  protected abstract interrupt(): void;
  /** Called once the client is authenticated, before it is told so. */
  protected abstract authenticated(): void;
  /** Called once the client has been told it is authenticated. */
  protected abstract connected(): void;
  /** Called once when a connection that was authenticated closes. */
  protected abstract closed(reason: string): void;

  #listen(socket: Socket): void {
    socket.setNoDelay?.(true);
    socket.on("data", (bytes: Uint8Array) => {
      this.#reader.push(bytes);
      void this.#pump();
    });
    socket.on("drain", () => this.#drained?.resolve());
    socket.on("error", () => this.close("socket error"));
    socket.on("close", () => this.close("client closed"));
  }

  /** Handles the messages read so far, one at a time, in order. */
  async #pump(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      while (this.#phase !== "closed") {
        let message: Message | undefined;
        try {
          message = this.#reader.next();
        } catch (error) {
          if (error instanceof MessageTooLarge) {
            return this.fatal(new WireError("08P01", error.message, "FATAL"));
          }
          throw error;
        }
        if (message === undefined) break;
        clearTimeout(this.#idle);
        await this.#handle(message);
      }
    } catch (error) {
      this.fatal(new WireError("08P01", `invalid message: ${(error as Error).message}`, "FATAL"));
    } finally {
      this.#running = false;
    }
    // Closed while a statement ran: its session goes back now that nothing uses it.
    if (this.#phase === "closed") {
      await this.endSession().catch(() => {});
      this.#ended.resolve();
      return;
    }
    if (this.#phase === "ready") {
      clearTimeout(this.#idle);
      this.#idle = setTimeout(
        () =>
          this.fatal(
            new WireError("57P05", "terminating connection due to idle-session timeout", "FATAL"),
          ),
        this.deps.idleMs,
      );
    }
  }

  async #handle(message: Message): Promise<void> {
    switch (this.#phase) {
      case "startup":
        return await this.#startupPacket(message);
      case "password":
        return await this.#password(message);
      case "ready":
        return await this.message(message);
    }
  }

  async #startupPacket({ body }: Message): Promise<void> {
    const reader = new BodyReader(body);
    const code = reader.int32();
    if (code === SSL_REQUEST) {
      const tls = this.deps.tls;
      await this.#send(new TextEncoder().encode(tls ? "S" : "N"));
      if (tls) {
        this.#socket.removeAllListeners("data");
        this.#socket.removeAllListeners("close");
        this.#socket.removeAllListeners("error");
        this.#socket.removeAllListeners("drain");
        this.#socket = tls(this.#socket);
        this.#listen(this.#socket);
      }
      return;
    }
    if (code === GSSENC_REQUEST) return await this.#send(new TextEncoder().encode("N"));
    if (code === CANCEL_REQUEST) {
      this.deps.cancel(reader.int32(), reader.int32());
      return this.close("cancel request");
    }
    if (code >> 16 !== 3) {
      return this.fatal(
        new WireError(
          "0A000",
          `unsupported frontend protocol ${code >> 16}.${code & 0xffff}`,
          "FATAL",
        ),
      );
    }
    const params = new Map<string, string>();
    while (reader.left > 1) {
      const name = reader.cstring();
      params.set(name, reader.cstring());
    }
    if (!this.deps.admit()) {
      return this.fatal(new WireError("53300", "sorry, too many clients already", "FATAL"));
    }
    this.user = params.get("user") ?? "";
    this.database = params.get("database") ?? this.user;
    const options = [...params.keys()].filter((name) => name.startsWith("_pq_."));
    if (code !== PROTOCOL_3 || options.length > 0) {
      this.out.begin("v").int32(PROTOCOL_3).int32(options.length);
      for (const option of options) this.out.cstring(option);
      this.out.end();
    }
    this.#startupParams = params;
    this.#reader.started = true;
    this.#phase = "password";
    // AuthenticationCleartextPassword.
    this.out.begin("R").int32(3).end();
    await this.flush();
  }

  async #password({ type, body }: Message): Promise<void> {
    if (type !== "p".charCodeAt(0)) {
      return this.fatal(new WireError("08P01", "expected a password message", "FATAL"));
    }
    const token = new BodyReader(body).cstring();
    let principal: Principal;
    try {
      principal = await this.deps.authenticate(token);
    } catch {
      return this.fatal(
        new WireError("28P01", `password authentication failed for user "${this.user}"`, "FATAL"),
      );
    }
    this.principal = principal;
    const settings = new Settings(this.user, principal.schemas, this.deps.queryTimeoutMs);
    this.settings = settings;
    for (const [name, value] of this.#startupParams) {
      if (name === "user" || name === "database" || name.startsWith("_pq_")) continue;
      if (name === "options") continue;
      try {
        settings.set(name, value, true);
      } catch (error) {
        return this.fatal(asWireError(error));
      }
    }
    clearTimeout(this.#startup);
    this.#phase = "ready";
    this.authenticated();
    this.out.begin("R").int32(0).end();
    for (const [name, value] of settings.reported()) this.parameterStatus(name, value);
    this.out.begin("K").int32(this.pid).int32(this.secret).end();
    this.ready();
    await this.flush();
    this.connected();
  }

  protected parameterStatus(name: string, value: string): void {
    this.out.begin("S").cstring(name).cstring(value).end();
  }

  protected ready(): void {
    this.out.begin("Z").byte(this.status.charCodeAt(0)).end();
  }

  async #send(bytes: Uint8Array): Promise<void> {
    if (this.#phase === "closed") return;
    if (!this.#socket.write(bytes)) {
      this.#drained = Promise.withResolvers<void>();
      await this.#drained.promise;
    }
  }

  protected async flush(): Promise<void> {
    if (this.out.length === 0) return;
    await this.#send(this.out.take());
  }

  /** Sends a FATAL error and closes. */
  terminate(error: WireError): void {
    this.fatal(error);
  }

  protected fatal(error: WireError): void {
    if (this.#phase === "closed") return;
    errorResponse(this.out, error);
    const bytes = this.out.take();
    this.#socket.end(bytes);
    this.close(error.message);
  }

  /** Closes the connection and lets its session go. */
  close(reason: string): void {
    if (this.#phase === "closed") return;
    const wasReady = this.#phase === "ready";
    this.#phase = "closed";
    clearTimeout(this.#idle);
    clearTimeout(this.#startup);
    this.#drained?.resolve();
    this.#socket.destroySoon?.();
    if (this.#running) this.interrupt();
    else void this.endSession().catch(() => {}).then(() => this.#ended.resolve());
    if (wasReady) this.closed(reason);
    this.onClose?.();
  }

  /** Called once when the connection closes. */
  onClose?: () => void;

  readonly #ended = Promise.withResolvers<void>();

  /** Settles once the connection is closed and its engine session given back. */
  get ended(): Promise<void> {
    return this.#ended.promise;
  }
}
