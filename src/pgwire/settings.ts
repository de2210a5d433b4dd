/**
 * A session's settings as `SHOW` answers them and `SET` may change them: the client settings
 * drivers send (`DateStyle`, `client_encoding`, `application_name`, `extra_float_digits`),
 * `search_path` within the token's schemas and `statement_timeout` no longer than the
 * service's. Anything else is refused, and the session goes on.
 *
 * @module
 */

import { DEFAULT_SCHEMA, RESERVED_SCHEMAS } from "../catalog/names.ts";
import { WireError } from "./errors.ts";

/** The version the listener says it speaks as: PostgreSQL 15's protocol and catalog. */
export const SERVER_VERSION = "15.8";

/** The settings a client is told at start-up (`ParameterStatus`) and whenever they change. */
export const REPORTED = [
  "server_version",
  "server_encoding",
  "client_encoding",
  "DateStyle",
  "TimeZone",
  "integer_datetimes",
  "standard_conforming_strings",
  "application_name",
  "default_transaction_read_only",
  "IntervalStyle",
  "is_superuser",
  "session_authorization",
] as const;

/** The UTC spellings `SET TimeZone` accepts: values are always written in UTC. */
const UTC = new Set(["utc", "etc/utc", "gmt", "z", "zulu", "+00", "+00:00", "0", "universal"]);

/** A session's settings. */
export class Settings {
  readonly #values = new Map<string, string>();
  /** The application name the client started with, which `RESET` gives back. */
  #startName = "";
  #record: Readonly<Record<string, string>> | undefined;
  /** Names as clients spell them in `ParameterStatus`, by lower-case name. */
  static readonly #spelled = new Map(REPORTED.map((name) => [name.toLowerCase(), name]));

  /**
   * `visibleSchemas`: the token's schemas (all when absent); `timeoutMs`: the service's
   * query timeout, the most `statement_timeout` may be.
   */
  constructor(
    readonly user: string,
    private readonly visibleSchemas: readonly string[] | undefined,
    private readonly timeoutMs: number,
  ) {
    this.#defaults();
  }

  #defaults(): void {
    const defaults: Record<string, string> = {
      server_version: SERVER_VERSION,
      server_version_num: "150008",
      server_encoding: "UTF8",
      client_encoding: "UTF8",
      datestyle: "ISO, MDY",
      timezone: "UTC",
      integer_datetimes: "on",
      standard_conforming_strings: "on",
      application_name: this.#startName,
      default_transaction_read_only: "on",
      transaction_read_only: "on",
      default_transaction_isolation: "repeatable read",
      transaction_isolation: "repeatable read",
      intervalstyle: "postgres",
      is_superuser: "off",
      session_authorization: this.user,
      extra_float_digits: "1",
      search_path: this.#defaultSchema(),
      statement_timeout: shownTimeout(this.timeoutMs),
      max_identifier_length: "63",
      lc_collate: "C",
      lc_ctype: "C",
      bytea_output: "hex",
    };
    for (const [name, value] of Object.entries(defaults)) this.#values.set(name, value);
    this.#record = undefined;
  }

  /** `public`, or the token's first schema when it may not read `public`. */
  #defaultSchema(): string {
    const visible = this.visibleSchemas;
    if (visible === undefined || visible.includes(DEFAULT_SCHEMA)) return DEFAULT_SCHEMA;
    return visible[0] ?? DEFAULT_SCHEMA;
  }

  /** A setting's value, for SHOW; 42704 for one it does not know. */
  get(name: string): string {
    const value = this.#values.get(name.toLowerCase());
    if (value === undefined) {
      throw new WireError("42704", `unrecognized configuration parameter "${name}"`);
    }
    return value;
  }

  /** Every setting by lower-case name, for a request; kept until a setting changes. */
  get record(): Readonly<Record<string, string>> {
    return this.#record ??= Object.freeze(Object.fromEntries(this.#values));
  }

  /** Every setting, for `SHOW ALL`. */
  all(): [string, string][] {
    return [...this.#values].sort(([a], [b]) => a < b ? -1 : 1);
  }

  /** The schema an unqualified table name is looked for in. */
  get defaultSchema(): string {
    return this.#values.get("search_path")!;
  }

  /** The query timeout in milliseconds. */
  get timeout(): number {
    return parseTimeout(this.#values.get("statement_timeout")!) || this.timeoutMs;
  }

  /** The settings reported at start-up, as `[name, value]`. */
  reported(): [string, string][] {
    return REPORTED.map((name) => [name, this.#values.get(name.toLowerCase())!]);
  }

  /**
   * Sets `name` to `value` (a start-up parameter or a `SET`), checked; answers the reported
   * setting that changed, if one did. A start-up parameter the listener does not take is
   * ignored; a `SET` of it fails with 42501.
   */
  set(name: string, value: string | undefined, startup = false): [string, string] | undefined {
    const key = name.toLowerCase();
    const given = value === undefined ? undefined : value.trim();
    const check = (ok: boolean, why: string) => {
      if (!ok) throw new WireError("22023", `invalid value for parameter "${name}": ${why}`);
    };
    switch (key) {
      case "application_name": {
        // As written: PostgreSQL keeps the spaces at its ends, and makes a tab a "?".
        const name = value === undefined ? undefined : applicationName(value);
        if (startup && name !== undefined) this.#startName = name;
        return this.#put(key, name);
      }
      case "client_encoding":
        if (given !== undefined) {
          check(/^(utf-?8|unicode)$/i.test(given), `"${given}": only UTF8 is spoken`);
        }
        return this.#put(key, given === undefined ? undefined : "UTF8");
      case "datestyle":
        if (given !== undefined) {
          check(/^iso\b/i.test(given) || /^(mdy|dmy|ymd)$/i.test(given), `"${given}"`);
        }
        return this.#put(key, given === undefined ? undefined : "ISO, MDY");
      case "timezone":
        if (given !== undefined) {
          // A client's own zone at start-up (pgJDBC sends the JVM's) is answered with UTC.
          if (startup) return undefined;
          check(UTC.has(given.toLowerCase()), `"${given}": values are given in UTC`);
        }
        return this.#put(key, given === undefined ? undefined : "UTC");
      case "extra_float_digits":
        if (given !== undefined) {
          check(/^-?\d+$/.test(given) && Math.abs(Number(given)) <= 15, `"${given}"`);
        }
        break;
      case "search_path":
        return this.#put(key, given === undefined ? undefined : this.#searchPath(given));
      case "statement_timeout":
        if (given !== undefined) {
          const ms = parseTimeout(given);
          check(ms !== undefined, `"${given}" is not a duration`);
          if (ms! > this.timeoutMs || ms === 0) {
            throw new WireError(
              "42501",
              `statement_timeout may be at most the service's ${this.timeoutMs}ms`,
            );
          }
          return this.#put(key, shownTimeout(ms!));
        }
        break;
      case "intervalstyle":
        if (given !== undefined) check(given.toLowerCase() === "postgres", `"${given}"`);
        break;
      case "default_transaction_read_only":
      case "transaction_read_only":
        if (given !== undefined) {
          check(/^(on|true|1|yes)$/i.test(given), "the session is read-only");
        }
        return undefined;
      case "default_transaction_isolation":
      case "transaction_isolation":
        return undefined;
      case "bytea_output":
        if (given !== undefined) check(given.toLowerCase() === "hex", `"${given}"`);
        break;
      default:
        if (startup) return undefined;
        throw new WireError("42501", `permission denied to set parameter "${name}"`);
    }
    return this.#put(key, given);
  }

  /** Puts a value, or the default back for undefined. */
  #put(key: string, value: string | undefined): [string, string] | undefined {
    if (value === undefined) {
      const kept = new Map(this.#values);
      this.#defaults();
      const restored = this.#values.get(key);
      for (const [k, v] of kept) if (k !== key) this.#values.set(k, v);
      if (restored !== undefined) this.#values.set(key, restored);
    } else this.#values.set(key, value);
    this.#record = undefined;
    const spelled = Settings.#spelled.get(key);
    return spelled === undefined ? undefined : [spelled, this.#values.get(key)!];
  }

  /** Resets every setting (`RESET ALL`, `DISCARD ALL`); the application name to its start. */
  resetAll(): [string, string][] {
    const before = new Map(this.#values);
    this.#defaults();
    return REPORTED.filter((name) =>
      before.get(name.toLowerCase()) !== this.#values.get(name.toLowerCase())
    ).map((name) => [name, this.#values.get(name.toLowerCase())!]);
  }

  /**
   * The first schema of a search path the token may read (`"$user"` and `pg_catalog` passed
   * over); 42501 for one it may not read.
   */
  #searchPath(text: string): string {
    const names = text.split(",").map((part) => {
      const name = part.trim();
      return /^".*"$/.test(name) ? name.slice(1, -1) : name.replace(/^'(.*)'$/, "$1").toLowerCase();
    }).filter((name) => name !== "$user" && name !== "pg_catalog" && name !== "");
    for (const name of names) {
      const key = name.toLowerCase();
      if (
        RESERVED_SCHEMAS.has(key) ||
        (this.visibleSchemas !== undefined && !this.visibleSchemas.includes(key))
      ) {
        throw new WireError("42501", `The token may not read schema "${name}"`);
      }
    }
    return names[0] ?? this.#defaultSchema();
  }
}

/** Units of a duration, largest first, in milliseconds, spelled as PostgreSQL spells them. */
const UNITS = { d: 86_400_000, h: 3_600_000, min: 60_000, s: 1000, ms: 1, us: 0.001 } as const;

/**
 * A duration in milliseconds as PostgreSQL shows it: in the largest unit that holds it whole.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { shownTimeout } from "./settings.ts";
 *
 * assert.equal(shownTimeout(30_000), "30s");
 * assert.equal(shownTimeout(1500), "1500ms");
 * assert.equal(shownTimeout(120_000), "2min");
 * ```
 */
export function shownTimeout(ms: number): string {
  if (ms === 0) return "0";
  const [unit, size] = Object.entries(UNITS).find(([, size]) => size >= 1 && ms % size === 0)!;
  return `${ms / size}${unit}`;
}

/** Most bytes of a name PostgreSQL keeps (`NAMEDATALEN` - 1). */
const NAME_BYTES = 63;

/**
 * `text` as PostgreSQL 15 keeps an application name: cut to {@link NAME_BYTES} bytes of
 * UTF-8 at a character's end, then each byte that is not printable ASCII made `?`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { applicationName } from "./settings.ts";
 *
 * assert.equal(applicationName(" Zoë\tok "), " Zo???ok ");
 * assert.equal(applicationName("é".repeat(40)), "?".repeat(62));
 * assert.equal(applicationName("a".repeat(70)), "a".repeat(63));
 * ```
 */
export function applicationName(text: string): string {
  const encoder = new TextEncoder();
  let kept = "";
  let bytes = 0;
  for (const character of text) {
    bytes += encoder.encode(character).length;
    if (bytes > NAME_BYTES) break;
    kept += character;
  }
  return Array.from(
    encoder.encode(kept),
    (byte) => byte >= 0x20 && byte <= 0x7e ? String.fromCharCode(byte) : "?",
  ).join("");
}

/**
 * Milliseconds of a `statement_timeout` value as PostgreSQL reads one: a number, a fraction
 * too, of milliseconds or of a unit spelled as PostgreSQL spells it (`us`, `ms`, `s`, `min`,
 * `h`, `d`: case matters), rounded to the millisecond.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseTimeout } from "./settings.ts";
 *
 * assert.equal(parseTimeout("1500"), 1500);
 * assert.equal(parseTimeout("'2s'"), 2000);
 * assert.equal(parseTimeout("1 min"), 60000);
 * assert.equal(parseTimeout("1.5s"), 1500);
 * assert.equal(parseTimeout("+30s"), 30000);
 * assert.equal(parseTimeout("1500000us"), 1500);
 * assert.equal(parseTimeout("1S"), undefined);
 * assert.equal(parseTimeout("soon"), undefined);
 * ```
 */
export function parseTimeout(text: string): number | undefined {
  const match = /^'?\s*\+?(\d+(?:\.\d*)?|\.\d+)\s*(us|ms|s|min|h|d)?\s*'?$/.exec(text.trim());
  if (!match) return undefined;
  return Math.round(Number(match[1]) * UNITS[(match[2] ?? "ms") as keyof typeof UNITS]);
}
