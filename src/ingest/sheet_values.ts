/**
 * A spreadsheet cell's value as the JSON rows file holds it: text, numbers and booleans as
 * they are, and dates as ISO text, each column's written one way so DuckDB's reader gives
 * the column one type.
 *
 * @module
 */

import type * as SheetJS from "xlsx";

/**
 * How a column's dates are written: with a time of day, with milliseconds, and with the date
 * (false when every one is a time of day alone, which is then a TIME).
 */
export interface Clock {
  readonly time: boolean;
  readonly millis: boolean;
  readonly date: boolean;
}

const NO_DATES: Clock = { time: false, millis: false, date: false };

/** How a workbook tells and counts its dates. */
export interface SheetDates {
  /** How its date serials count: see {@link serialDate}. */
  readonly system: DateSystem;
  /** Whether a number format is a date's (SheetJS's `SSF.is_date`, loaded with SheetJS). */
  isDate(format: string): boolean;
}

/** The milliseconds past midnight of a date cell, or undefined for any other cell. */
function timeOfDay(
  cell: SheetJS.CellObject | undefined,
  dates: SheetDates,
): number | undefined {
  if (cell?.t === "d") {
    return cell.v instanceof Date
      ? cell.v.getTime() - Date.UTC(
        cell.v.getUTCFullYear(),
        cell.v.getUTCMonth(),
        cell.v.getUTCDate(),
      )
      : undefined;
  }
  if (cell?.t !== "n" || typeof cell.z !== "string" || !dates.isDate(cell.z)) return undefined;
  const v = cell.v as number;
  if (!Number.isFinite(v)) return undefined;
  return Math.round((v - Math.floor(v)) * DAY_MS) % DAY_MS;
}

/**
 * For each column index, how its dates are written. A date with a time of day, shown by its
 * format or not (a time a date-only format hides is still the cell's value, as pandas reads
 * it), gives every date of its column a time (midnight for a date alone), so a column mixing
 * dates and date-times is read as timestamps rather than as text; a time with a fraction of a
 * second gives every time of its column milliseconds, for the same reason. A column whose
 * every date is a time of day alone (`h:mm:ss`) gives times, as pandas does.
 */
export function columnClocks(
  cells: readonly (SheetJS.CellObject | undefined)[][],
  dates: SheetDates,
): Clock[] {
  const clocks: Clock[] = [];
  for (const row of cells) {
    if (!row) continue;
    for (let c = 0; c < row.length; c++) {
      const cell = row[c];
      const ms = timeOfDay(cell, dates);
      if (ms === undefined) continue;
      const shown = cell!.t === "d" || showsTime(cell!.z as string);
      // A time of day alone: a format without a day, month or year, and a serial within the
      // first day (a duration of a day or more is not one).
      const timeAlone = cell!.t === "n" && !showsDate(cell!.z as string) &&
        (cell!.v as number) >= 0 && (cell!.v as number) < 1;
      const was = clocks[c] ?? NO_DATES;
      clocks[c] = {
        time: was.time || shown || ms !== 0,
        millis: was.millis || ms % 1000 !== 0,
        date: was.date || !timeAlone,
      };
    }
  }
  return clocks;
}

/**
 * A cell's value as JSON: null when empty or an error. A date comes as its column's `clock`
 * says (see {@link columnClocks}); without one, with its time of day when it has one.
 */
export function cellValue(
  cell: SheetJS.CellObject | undefined,
  dates: SheetDates,
  clock?: Clock,
): unknown {
  if (!cell) return null;
  switch (cell.t) {
    case "s":
      return cell.v === undefined || cell.v === "" ? null : String(cell.v);
    case "b":
      return Boolean(cell.v);
    case "n": {
      const v = cell.v as number;
      if (!Number.isFinite(v)) return null;
      if (typeof cell.z === "string" && dates.isDate(cell.z)) {
        return serialDate(v, dates.system, clock ?? columnClocks([[cell]], dates)[0]!);
      }
      return v;
    }
    case "d":
      return cell.v instanceof Date
        ? timestampText(cell.v.toISOString(), clock?.millis ?? cell.v.getUTCMilliseconds() !== 0)
        : null;
    default:
      // Error cells ("e", such as #DIV/0!) and stubs ("z") hold no value.
      return null;
  }
}

const DAY_MS = 86_400_000;

/** How a workbook's date serials count: see {@link serialDate}. */
type DateSystem = "1900" | "1904" | "ods";

/** Whether a date format shows the time of day (hours or seconds; `m` alone is a month). */
function showsTime(format: string): boolean {
  return /[hs]|AM\/PM|A\/P/i.test(bareFormat(format));
}

/** Whether a date format shows a day, a year or a month's name (`mm` alone may be minutes). */
function showsDate(format: string): boolean {
  return /[dy]|m{3,}/i.test(bareFormat(format));
}

/** A number format without its quoted text, escaped characters and bracketed parts. */
function bareFormat(format: string): string {
  return format.replace(/"[^"]*"|\\.|\[[^\]]*\]/g, "");
}

/** A spreadsheet date serial as ISO text, a date or a date and time as `clock` says. */
function serialDate(serial: number, dates: DateSystem, clock: Clock): string {
  let days = Math.floor(serial);
  const ms = Math.round((serial - days) * DAY_MS);
  // Excel counts a 29 February 1900 that never was; serials before it are a day off, down
  // to 0, its "1900-01-00" (1899-12-31). Negative serials, which Excel cannot write, are
  // counted from 1899-12-30 (as LibreOffice writes them); in ODS SheetJS made them too.
  if ((dates === "1900" && days >= 0 && days < 60) || (dates === "ods" && days < 60)) days += 1;
  const epoch = dates === "1904" ? Date.UTC(1904, 0, 1) : Date.UTC(1899, 11, 30);
  const iso = new Date(epoch + days * DAY_MS + (clock.time ? ms : 0)).toISOString();
  if (!clock.date) return iso.slice(11, clock.millis ? 23 : 19);
  return clock.time ? timestampText(iso, clock.millis) : iso.slice(0, 10);
}

/** `2024-03-01T09:30:00.250Z` as `2024-03-01 09:30:00`, or with `millis` `…:00.250`. */
function timestampText(iso: string, millis: boolean): string {
  return iso.slice(0, millis ? 23 : 19).replace("T", " ");
}
