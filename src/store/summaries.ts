/**
 * What a records summary answers (`GET …/summary`): per column its figures, and with `bins`
 * and `top` its histogram and most frequent values. Part of the Store interface (store.ts).
 *
 * @module
 */

/** One column's figures in a {@link RecordsSummary}; null where they do not apply. */
export interface ColumnSummary {
  readonly name: string;
  readonly type: string;
  /** Values that are not null. */
  readonly count: number;
  readonly nulls: number;
  /** An estimate (HyperLogLog) of the distinct values that are not null. */
  readonly approx_distinct: number;
  /** The least and greatest values, as records show them; null for no value or no order. */
  readonly min: unknown;
  readonly max: unknown;
  /** For numbers: mean, sample standard deviation and approximate quartiles. */
  readonly avg: number | null;
  readonly std: number | null;
  readonly q25: number | null;
  readonly q50: number | null;
  readonly q75: number | null;
  /** With `bins`: the histogram of a number, date or timestamp column; null for others. */
  readonly histogram?: HistogramBin[] | null;
  /** With `top`: the most frequent values of a text, boolean or UUID column; null for others. */
  readonly top?: TopValue[] | null;
}

/** A bin of a histogram: the values from `from` up to `to` (included in the last bin only). */
export interface HistogramBin {
  /** Numbers for number columns, ISO 8601 text for dates and timestamps. */
  readonly from: number | string;
  readonly to: number | string;
  readonly count: number;
}

/** A value and how many rows hold it. */
export interface TopValue {
  readonly value: unknown;
  readonly count: number;
}

/** Largest `bins` of a summary's histograms, and `top` of its lists of values. */
export const MAX_BINS = 1000;
export const MAX_TOP = 1000;

/** The distributions a summary is asked for besides its figures. */
export interface SummaryOptions {
  /** Bins of each histogram; 0 for none. */
  readonly bins: number;
  /** Values of each top list; 0 for none. */
  readonly top: number;
}

/** Figures of the records some filters let through. */
export interface RecordsSummary {
  readonly table: string;
  readonly rows: number;
  readonly columns: ColumnSummary[];
}
