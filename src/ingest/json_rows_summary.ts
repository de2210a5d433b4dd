/**
 * The options of a JSON rows pass (`JsonRows` in json_rows.ts) and the summary of what it learned.
 *
 * @module
 */

/** How rows are written: objects keyed by column, or arrays in column order. */
export type RowForm = "objects" | "arrays";

/** What the pass learned. */
export interface RowsSummary {
  /** Number of rows. */
  readonly rows: number;
  /** The form of the rows; null when there are none. */
  readonly form: RowForm | null;
  /**
   * Distinct keys in order of first appearance ("0", "1", … for positional rows). For object
   * rows only the first {@link RowsOptions.keySampleRows} rows are looked at; see
   * {@link RowsSummary.keysComplete}.
   */
  readonly keys: readonly string[];
  /** Whether {@link RowsSummary.keys} covers every row (always so for positional rows). */
  readonly keysComplete: boolean;
  /** For positional rows: the first row (0-based) of each length seen. */
  readonly firstRowOfLength: ReadonlyMap<number, number>;
  /** The envelope's `table` member, parsed; undefined when absent or null. */
  readonly table?: unknown;
  /** Whether the envelope had a `data` array (always true for a bare array). */
  readonly hasData: boolean;
}

/** Options of a pass. */
export interface RowsOptions {
  /** True for `{"table": …, "data": [ … ]}`; false for a bare array of rows. */
  readonly envelope: boolean;
  /** Whether positional (array) rows are allowed. */
  readonly allowArrays: boolean;
  /** Most bytes of envelope members other than `data` (the definition). */
  readonly maxEnvelopeBytes: number;
  /**
   * Object rows whose keys are collected. Past it the pass only follows structure, which is
   * what keeps it near memory speed; the caller checks the rest of the keys another way.
   */
  readonly keySampleRows?: number;
}
