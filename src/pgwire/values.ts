/**
 * Values between the wire and the store. The store gives each value as PostgreSQL's text of
 * it; a client that asks for binary gets it encoded here from that text, by the column's type
 * oid (PostgreSQL's `*send` formats). Parameters are read in parameters.ts.
 *
 * @module
 */

import { WIRE_TYPES, wireOid } from "../service/wire.ts";

const encoder = new TextEncoder();

export const OID = {
  bool: wireOid("bool"),
  bytea: wireOid("bytea"),
  int8: wireOid("int8"),
  int2: wireOid("int2"),
  int4: wireOid("int4"),
  oid: wireOid("oid"),
  float4: wireOid("float4"),
  float8: wireOid("float8"),
  numeric: wireOid("numeric"),
  date: wireOid("date"),
  time: wireOid("time"),
  timetz: wireOid("timetz"),
  timestamp: wireOid("timestamp"),
  timestamptz: wireOid("timestamptz"),
  interval: wireOid("interval"),
  uuid: wireOid("uuid"),
  json: wireOid("json"),
  jsonb: wireOid("jsonb"),
  text: wireOid("text"),
  varchar: wireOid("varchar"),
  bpchar: wireOid("bpchar"),
  name: wireOid("name"),
  char: wireOid("char"),
  unknown: wireOid("unknown"),
};

/** Types whose binary form is their UTF-8 text. */
export const TEXTUAL = new Set([
  OID.text,
  OID.varchar,
  OID.bpchar,
  OID.name,
  OID.json,
  OID.unknown,
]);

export const DAY_MICROS = 86_400_000_000n;
export const INT64_MAX = 0x7fffffffffffffffn;
export const INT64_MIN = -0x8000000000000000n;

/** Whether values of the type `oid` can be sent in binary. */
export function hasBinary(oid: number): boolean {
  const type = WIRE_TYPES.get(oid);
  if (type === undefined) return false;
  return type.element === 0 ? BINARY.has(oid) : BINARY.has(type.element);
}

function fixed(size: number, write: (view: DataView) => void): Uint8Array {
  const bytes = new Uint8Array(size);
  write(new DataView(bytes.buffer));
  return bytes;
}

/** Days from 2000-01-01 of a `YYYY-MM-DD` date, perhaps ` BC`. */
function days(text: string): number {
  const [, y, m, d, bc] = /^(\d+)-(\d\d)-(\d\d)( BC)?$/.exec(text) ?? [];
  if (y === undefined) throw new RangeError(`"${text}" is not a date`);
  const year = bc ? 1 - Number(y) : Number(y);
  const date = new Date(0);
  date.setUTCFullYear(year, Number(m) - 1, Number(d));
  date.setUTCHours(0, 0, 0, 0);
  return Math.round((date.getTime() - 946_684_800_000) / 86_400_000);
}

/** Microseconds since midnight of `HH:MM:SS[.ffffff]`. */
function timeMicros(text: string): bigint {
  const [, h, m, s, f = ""] = /^(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?$/.exec(text) ?? [];
  if (h === undefined) throw new RangeError(`"${text}" is not a time`);
  return ((BigInt(h) * 60n + BigInt(m!)) * 60n + BigInt(s!)) * 1_000_000n +
    BigInt(f.padEnd(6, "0"));
}

/** Seconds east of UTC of `+HH[:MM[:SS]]`. */
function offsetSeconds(text: string): number {
  const [, sign, h, m = "0", s = "0"] = /^([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?$/.exec(text) ??
    [];
  if (h === undefined) throw new RangeError(`"${text}" is not a UTC offset`);
  return (sign === "-" ? -1 : 1) * (Number(h) * 3600 + Number(m) * 60 + Number(s));
}

/** Microseconds from 2000-01-01 of a timestamp's text; with a zone, of its UTC instant. */
function timestampMicros(text: string, zoned: boolean): bigint {
  if (text === "infinity") return INT64_MAX;
  if (text === "-infinity") return INT64_MIN;
  const bc = text.endsWith(" BC");
  const body = bc ? text.slice(0, -3) : text;
  const [, date, time, zone] =
    /^(\d+-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)([+-]\d\d(?::?\d\d){0,2})?$/.exec(body) ?? [];
  if (date === undefined) throw new RangeError(`"${text}" is not a timestamp`);
  let micros = BigInt(days(date + (bc ? " BC" : ""))) * DAY_MICROS + timeMicros(time!);
  if (zoned && zone) micros -= BigInt(offsetSeconds(zone)) * 1_000_000n;
  return micros;
}

const INTERVAL_UNITS: Readonly<Record<string, [field: "months" | "days", factor: number]>> = {
  year: ["months", 12],
  years: ["months", 12],
  mon: ["months", 1],
  mons: ["months", 1],
  day: ["days", 1],
  days: ["days", 1],
};

/** An interval in PostgreSQL's `postgres` style as months, days and microseconds. */
function interval(text: string): { months: number; days: number; micros: bigint } {
  const out = { months: 0, days: 0, micros: 0n };
  const parts = text.trim().split(/\s+/);
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const time = /^([+-])?(\d+):(\d\d):(\d\d(?:\.\d+)?)$/.exec(part);
    if (time) {
      const [, sign, h, m, s] = time;
      const [whole, fraction = ""] = s!.split(".");
      const micros = ((BigInt(h!) * 60n + BigInt(m!)) * 60n + BigInt(whole!)) * 1_000_000n +
        BigInt(fraction.padEnd(6, "0").slice(0, 6));
      out.micros += sign === "-" ? -micros : micros;
      continue;
    }
    const unit = INTERVAL_UNITS[parts[i + 1] ?? ""];
    if (!/^[+-]?\d+$/.test(part) || unit === undefined) {
      throw new RangeError(`"${text}" is not an interval`);
    }
    out[unit[0]] += Number(part) * unit[1];
    i++;
  }
  return out;
}

/** The digits of a numeric's text in PostgreSQL's base-10000 binary form. */
function numeric(text: string): Uint8Array {
  const special = { NaN: 0xc000, Infinity: 0xd000, "-Infinity": 0xf000 }[text];
  if (special !== undefined) {
    return fixed(8, (v) => {
      v.setUint16(4, special);
    });
  }
  const match = /^(-?)(\d*)(?:\.(\d*))?$/.exec(text);
  if (!match) throw new RangeError(`"${text}" is not a number`);
  const negative = match[1] === "-";
  const whole = match[2]!.replace(/^0+/, "");
  const fraction = match[3] ?? "";
  const dscale = fraction.length;
  // Whole digits padded on the left, fraction digits on the right, to groups of four.
  const left = whole.padStart(Math.ceil(whole.length / 4) * 4, "0");
  const right = fraction.padEnd(Math.ceil(fraction.length / 4) * 4, "0");
  const groups: number[] = [];
  for (let i = 0; i < left.length; i += 4) groups.push(Number(left.slice(i, i + 4)));
  for (let i = 0; i < right.length; i += 4) groups.push(Number(right.slice(i, i + 4)));
  let weight = left.length / 4 - 1;
  // Leading and trailing zero groups are left out.
  while (groups.length > 0 && groups[0] === 0) {
    groups.shift();
    weight--;
  }
  while (groups.length > 0 && groups[groups.length - 1] === 0) groups.pop();
  if (groups.length === 0) weight = 0;
  return fixed(8 + groups.length * 2, (v) => {
    v.setInt16(0, groups.length);
    v.setInt16(2, weight);
    v.setUint16(4, negative && groups.length > 0 ? 0x4000 : 0);
    v.setInt16(6, dscale);
    groups.forEach((g, i) => v.setInt16(8 + i * 2, g));
  });
}

function hexBytes(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

/** The binary encoders, by type oid, from PostgreSQL's text of a value. */
const BINARY: ReadonlyMap<number, (text: string) => Uint8Array> = new Map<
  number,
  (text: string) => Uint8Array
>([
  [OID.bool, (t) => new Uint8Array([t === "t" || t === "true" ? 1 : 0])],
  [OID.int2, (t) => fixed(2, (v) => v.setInt16(0, Number(t)))],
  [OID.int4, (t) => fixed(4, (v) => v.setInt32(0, Number(t)))],
  [OID.oid, (t) => fixed(4, (v) => v.setUint32(0, Number(t)))],
  [OID.int8, (t) => fixed(8, (v) => v.setBigInt64(0, BigInt(t)))],
  [OID.float4, (t) => fixed(4, (v) => v.setFloat32(0, Number(t)))],
  [OID.float8, (t) => fixed(8, (v) => v.setFloat64(0, Number(t)))],
  [OID.numeric, numeric],
  [OID.bytea, (t) => hexBytes(t.slice(2))],
  [OID.date, (t) =>
    fixed(4, (v) =>
      v.setInt32(
        0,
        t === "infinity" ? 0x7fffffff : t === "-infinity" ? -0x80000000 : days(t),
      ))],
  [OID.time, (t) => fixed(8, (v) => v.setBigInt64(0, timeMicros(t)))],
  [OID.timetz, (t) => {
    const [, time, zone] = /^([\d:.]+)([+-].*)$/.exec(t) ?? [];
    if (time === undefined) throw new RangeError(`"${t}" is not a time with a zone`);
    return fixed(12, (v) => {
      v.setBigInt64(0, timeMicros(time));
      // PostgreSQL counts the zone in seconds west of UTC.
      v.setInt32(8, -offsetSeconds(zone!));
    });
  }],
  [OID.timestamp, (t) => fixed(8, (v) => v.setBigInt64(0, timestampMicros(t, false)))],
  [OID.timestamptz, (t) => fixed(8, (v) => v.setBigInt64(0, timestampMicros(t, true)))],
  [OID.interval, (t) => {
    const { months, days, micros } = interval(t);
    return fixed(16, (v) => {
      v.setBigInt64(0, micros);
      v.setInt32(8, days);
      v.setInt32(12, months);
    });
  }],
  [OID.uuid, (t) => hexBytes(t.replaceAll("-", ""))],
  [OID.jsonb, (t) => {
    const text = encoder.encode(t);
    const bytes = new Uint8Array(text.length + 1);
    bytes[0] = 1;
    bytes.set(text, 1);
    return bytes;
  }],
  ...[...TEXTUAL].map((oid): [number, (text: string) => Uint8Array] => [
    oid,
    (t) => encoder.encode(t),
  ]),
]);

/**
 * The elements of an array's text (`{1,NULL,"a b"}`, `{{1,2},{3,4}}`), as nested lists of
 * element texts (null for NULL).
 */
export function parseArray(text: string): ArrayItems {
  let at = 0;
  const list = (): ArrayItems => {
    if (text[at] !== "{") throw new RangeError(`"${text}" is not an array`);
    at++;
    const items: ArrayItems = [];
    if (text[at] === "}") {
      at++;
      return items;
    }
    while (at < text.length) {
      if (text[at] === "{") items.push(list());
      else if (text[at] === '"') {
        let value = "";
        at++;
        while (text[at] !== '"') {
          if (text[at] === "\\") at++;
          value += text[at++];
        }
        at++;
        items.push(value);
      } else {
        let end = at;
        while (text[end] !== "," && text[end] !== "}") end++;
        const value = text.slice(at, end).trim();
        items.push(value === "NULL" ? null : value);
        at = end;
      }
      if (text[at] === ",") at++;
      else if (text[at] === "}") {
        at++;
        return items;
      }
    }
    throw new RangeError(`"${text}" is not an array`);
  };
  return list();
}

/** Array elements, nested one list per dimension. */
export type ArrayItems = (string | null | ArrayItems)[];

/** Every element of nested lists, in order. */
function flatten(items: ArrayItems): (string | null)[] {
  return items.flatMap((item) => Array.isArray(item) ? flatten(item) : [item]);
}

function arrayBinary(text: string, element: number): Uint8Array {
  const encode = BINARY.get(element)!;
  const items = parseArray(text);
  const dims: number[] = [];
  for (let level: ArrayItems = items;; level = level[0] as ArrayItems) {
    dims.push(level.length);
    if (!Array.isArray(level[0])) break;
  }
  const flat = flatten(items);
  const values = flat.map((v) => v === null ? null : encode(v));
  const size = 12 + (items.length === 0 ? 0 : dims.length * 8) +
    values.reduce((n, v) => n + 4 + (v?.length ?? 0), 0);
  const bytes = new Uint8Array(size);
  const view = new DataView(bytes.buffer);
  view.setInt32(0, items.length === 0 ? 0 : dims.length);
  view.setInt32(4, values.includes(null) ? 1 : 0);
  view.setInt32(8, element);
  let at = 12;
  if (items.length > 0) {
    for (const dim of dims) {
      view.setInt32(at, dim);
      view.setInt32(at + 4, 1);
      at += 8;
    }
  }
  for (const value of values) {
    view.setInt32(at, value === null ? -1 : value.length);
    at += 4;
    if (value) {
      bytes.set(value, at);
      at += value.length;
    }
  }
  return bytes;
}

/**
 * A value's binary form (PostgreSQL's `*send`) from its text, by the type's oid; undefined
 * when the type has none here (the listener then refuses binary for it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { binaryValue } from "./values.ts";
 *
 * assert.deepEqual(binaryValue(23, "258"), new Uint8Array([0, 0, 1, 2]));
 * assert.deepEqual(binaryValue(1700, "-1.5"), new Uint8Array([0, 2, 0, 0, 64, 0, 0, 1, 0, 1, 19, 136]));
 * ```
 */
export function binaryValue(oid: number, text: string): Uint8Array | undefined {
  const direct = BINARY.get(oid);
  if (direct) return direct(text);
  const type = WIRE_TYPES.get(oid);
  if (type && type.element !== 0 && BINARY.has(type.element)) {
    return arrayBinary(text, type.element);
  }
  return undefined;
}
