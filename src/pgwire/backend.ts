/**
 * Backend messages of the PostgreSQL protocol that carry more than a tag: an error or a
 * notice, a result's RowDescription, a DataRow in the formats Bind asked for.
 *
 * @module
 */

import { WIRE_TYPES, type WireColumn } from "../service/wire.ts";
import { WireError } from "./errors.ts";
import type { MessageWriter } from "./messages.ts";
import { binaryValue, hasBinary } from "./values.ts";

/** An ErrorResponse for `error`. */
export function errorResponse(out: MessageWriter, error: WireError): void {
  out.begin("E")
    .byte(83).cstring(error.severity) // S
    .byte(86).cstring(error.severity) // V
    .byte(67).cstring(error.code) // C
    .byte(77).cstring(error.message) // M
    .byte(0).end();
}

/** A NoticeResponse: a WARNING with `code`. */
export function notice(out: MessageWriter, message: string, code: string): void {
  out.begin("N")
    .byte(83).cstring("WARNING")
    .byte(86).cstring("WARNING")
    .byte(67).cstring(code)
    .byte(77).cstring(message)
    .byte(0).end();
}

/** A RowDescription for `columns` in `formats`, or NoData for none. */
export function rowDescription(
  out: MessageWriter,
  columns: readonly WireColumn[],
  formats: readonly number[],
): void {
  if (columns.length === 0) {
    out.begin("n").end();
    return;
  }
  out.begin("T").int16(columns.length);
  columns.forEach((column, i) => {
    const format = formatOf(formats, i);
    if (format === 1 && !hasBinary(column.oid)) {
      throw new WireError("0A000", `binary format is not supported for type ${column.oid}`);
    }
    out.cstring(column.name).int32(0).int16(0).int32(column.oid)
      .int16(typeSize(column.oid)).int32(column.typmod).int16(format);
  });
  out.end();
}

/** A DataRow of `row`'s texts, each in text or, where `formats` says, binary. */
export function dataRow(
  out: MessageWriter,
  columns: readonly WireColumn[],
  row: readonly (string | null)[],
  formats: readonly number[],
): void {
  out.begin("D").int16(row.length);
  for (let i = 0; i < row.length; i++) {
    const value = row[i]!;
    if (value !== null && formatOf(formats, i) === 1) {
      const bytes = binaryValue(columns[i]!.oid, value);
      if (bytes === undefined) {
        throw new WireError(
          "0A000",
          `binary format is not supported for type ${columns[i]!.oid}`,
        );
      }
      out.value(bytes);
    } else out.text(value);
  }
  out.end();
}

/** The format of column `i` by Bind's result formats. */
function formatOf(formats: readonly number[], i: number): number {
  return formats.length === 0 ? 0 : formats.length === 1 ? formats[0]! : formats[i] ?? 0;
}

/** `typlen` of a type, -1 when unknown. */
function typeSize(oid: number): number {
  return WIRE_SIZES.get(oid) ?? -1;
}

const WIRE_SIZES = new Map([...WIRE_TYPES].map(([oid, type]) => [oid, type.size]));
