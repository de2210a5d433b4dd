/**
 * Parameters from the wire: each comes as text or binary (PostgreSQL's `*recv` formats) and
 * goes to the store as a query parameter by its declared type oid.
 *
 * @module
 */

import { type QueryParam } from "../service/wire.ts";
import { DAY_MICROS, INT64_MAX, INT64_MIN, OID, TEXTUAL } from "./values.ts";

const decoder = new TextDecoder();

/** A parameter whose value its declared type or format cannot be read as: 22P02. */
export class BadParameter extends Error {}

function pad(n: number | bigint | string, width = 2): string {
  return String(n).padStart(width, "0");
}

/** The text of a date `days` from 2000-01-01. */
function dateText(days: number): string {
  const date = new Date(946_684_800_000 + days * 86_400_000);
  const year = date.getUTCFullYear();
  const text = `${pad(year > 0 ? year : 1 - year, 4)}-${pad(date.getUTCMonth() + 1)}-${
    pad(date.getUTCDate())
  }`;
  return year > 0 ? text : `${text} BC`;
}

function timeText(micros: bigint): string {
  const seconds = micros / 1_000_000n;
  const fraction = micros % 1_000_000n;
  return `${pad(seconds / 3600n)}:${pad((seconds / 60n) % 60n)}:${pad(seconds % 60n)}` +
    (fraction ? `.${pad(fraction, 6)}` : "");
}

function timestampText(micros: bigint, zoned: boolean): string {
  if (micros === INT64_MAX) return "infinity";
  if (micros === INT64_MIN) return "-infinity";
  let day = micros / DAY_MICROS;
  let rest = micros % DAY_MICROS;
  if (rest < 0n) {
    rest += DAY_MICROS;
    day -= 1n;
  }
  const text = dateText(Number(day));
  const [date, bc] = text.split(" ");
  return `${date} ${timeText(rest)}${zoned ? "+00" : ""}${bc ? " BC" : ""}`;
}

/** The text of a binary numeric. */
function numericText(view: DataView): string {
  const count = view.getInt16(0);
  const weight = view.getInt16(2);
  const sign = view.getUint16(4);
  const dscale = view.getInt16(6);
  if (sign === 0xc000) return "NaN";
  if (sign === 0xd000) return "Infinity";
  if (sign === 0xf000) return "-Infinity";
  let whole = "";
  let fraction = "";
  for (let i = 0; i <= Math.max(weight, count - 1); i++) {
    const group = i < count ? view.getInt16(8 + i * 2) : 0;
    if (i <= weight) whole += pad(group, 4);
    else fraction += pad(group, 4);
  }
  for (let i = weight + 1; i < 0; i++) fraction = "0000" + fraction;
  whole = whole.replace(/^0+/, "") || "0";
  fraction = fraction.padEnd(dscale, "0").slice(0, dscale);
  return `${sign === 0x4000 ? "-" : ""}${whole}${dscale > 0 ? `.${fraction}` : ""}`;
}

/** The text of a binary parameter of type `oid`. */
function binaryParamText(oid: number, bytes: Uint8Array): string | bigint | number | boolean {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (n: number) => {
    if (bytes.length !== n) throw new BadParameter(`a binary value of ${bytes.length} bytes`);
  };
  switch (oid) {
    case OID.bool:
      need(1);
      return bytes[0] !== 0;
    case OID.int2:
      need(2);
      return BigInt(view.getInt16(0));
    case OID.int4:
      need(4);
      return BigInt(view.getInt32(0));
    case OID.oid:
      need(4);
      return BigInt(view.getUint32(0));
    case OID.int8:
      need(8);
      return view.getBigInt64(0);
    case OID.float4:
      need(4);
      return view.getFloat32(0);
    case OID.float8:
      need(8);
      return view.getFloat64(0);
    case OID.numeric:
      return numericText(view);
    case OID.date:
      need(4);
      return dateText(view.getInt32(0));
    case OID.time:
      need(8);
      return timeText(view.getBigInt64(0));
    case OID.timestamp:
      need(8);
      return timestampText(view.getBigInt64(0), false);
    case OID.timestamptz:
      need(8);
      return timestampText(view.getBigInt64(0), true);
    case OID.uuid: {
      need(16);
      const hex = [...bytes].map((b) => pad(b.toString(16))).join("");
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${
        hex.slice(20)
      }`;
    }
    case OID.bytea:
      return `\\x${[...bytes].map((b) => pad(b.toString(16))).join("")}`;
    case OID.jsonb:
      return decoder.decode(bytes.subarray(1));
    default:
      if (TEXTUAL.has(oid) || oid === 0) return decoder.decode(bytes);
      throw new BadParameter(`binary parameters of type ${oid}, which this server cannot read`);
  }
}

/** Integer types, whose text parameters go to the store as integers. */
const INTEGERS = new Set([OID.int2, OID.int4, OID.int8, OID.oid]);
const FLOATS = new Set([OID.float4, OID.float8]);

/**
 * A parameter as the store binds it, from its bytes in `format` (0 text, 1 binary) and its
 * declared type (0 for none): integers as `bigint`, floats as numbers, booleans as booleans,
 * everything else as its text, which the engine casts where the query puts it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { paramValue } from "./parameters.ts";
 *
 * const text = new TextEncoder().encode("42");
 * assert.equal(paramValue(23, 0, text), 42n);
 * assert.equal(paramValue(0, 0, text), "42");
 * assert.equal(paramValue(20, 1, new Uint8Array([0, 0, 0, 0, 0, 0, 1, 0])), 256n);
 * ```
 */
export function paramValue(oid: number, format: number, bytes: Uint8Array | null): QueryParam {
  if (bytes === null) return null;
  if (format === 1) return binaryParamText(oid, bytes);
  const text = decoder.decode(bytes);
  if (INTEGERS.has(oid)) {
    if (!/^\s*[+-]?\d+\s*$/.test(text)) {
      throw new BadParameter(`invalid input syntax for type integer: "${text}"`);
    }
    return BigInt(text.trim());
  }
  if (FLOATS.has(oid)) {
    const value = Number(text);
    if (Number.isNaN(value) && text.trim() !== "NaN") {
      throw new BadParameter(`invalid input syntax for type double precision: "${text}"`);
    }
    return value;
  }
  if (oid === OID.bool) {
    const word = text.trim().toLowerCase();
    if (["t", "true", "yes", "on", "1", "y"].includes(word)) return true;
    if (["f", "false", "no", "off", "0", "n"].includes(word)) return false;
    throw new BadParameter(`invalid input syntax for type boolean: "${text}"`);
  }
  return text;
}
