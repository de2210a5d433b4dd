/**
 * The parts of a large body for a load that runs while the body still arrives, on either
 * engine (docs/decisions.md, "Loading while the body arrives").
 *
 * @module
 */

import { beforeDeadline } from "../../deadline.ts";
import type { RowsSummary } from "../../ingest/json_rows_summary.ts";
import type { ArrivingRows, RowsPart } from "../sources.ts";

/** Longest a load of a body still arriving waits for its next part. */
const PART_WAIT_MS = 2_000;

/**
 * The next part of a body loaded while it arrives. The load holds its table's lock and a
 * transaction meanwhile, so a part that keeps it waiting past {@link PART_WAIT_MS} fails it:
 * the body is then loaded whole once it has all arrived, holding nothing until then, and a
 * client trickling its body cannot hold up DDL on the table.
 */
async function nextPart(parts: AsyncIterator<RowsPart>): Promise<RowsPart> {
  const next = parts.next();
  next.catch(() => {}); // Abandoned when late; the whole-body path meets the same failure.
  const late = () => new Error("The body's next part is late");
  return (await beforeDeadline(next, PART_WAIT_MS, late)).value;
}

/**
 * A body of object rows arriving in more than one part, once its first part has closed: no
 * lock is taken before, so a slow client holds up nothing for a body that turns out to fit
 * in one part. The load maps the rows' keys as the first part shows them, reads
 * {@link ArrivingParts.parts}, then asks {@link ArrivingParts.summary}, which fails when a
 * later part showed keys the first did not.
 */
export class ArrivingParts {
  readonly #first: RowsPart;
  readonly #rest: AsyncIterator<RowsPart>;
  #last: RowsSummary | undefined;

  private constructor(first: RowsPart, rest: AsyncIterator<RowsPart>) {
    this.#first = first;
    this.#rest = rest;
  }

  /** The body's parts once the first has closed; undefined for a body in one part (or none). */
  static async of(rows: ArrivingRows): Promise<ArrivingParts | undefined> {
    const parts = rows.parts()[Symbol.asyncIterator]();
    const first = await parts.next().catch(() => undefined);
    if (!first || first.done || first.value.last) return undefined;
    if (first.value.progress.form !== "objects") return undefined;
    return new ArrivingParts(first.value, parts);
  }

  /** What the first part showed of the rows: their keys, as the load maps them. */
  get sample(): RowsSummary {
    return this.#first.progress;
  }

  /** Every part in order, each asked for once the one before is read; a late one throws. */
  async *parts(): AsyncGenerator<RowsPart> {
    for (let part = this.#first;; part = await nextPart(this.#rest)) {
      yield part;
      if (part.last) return void (this.#last = part.progress);
    }
  }

  /** The whole body's summary, once every part is read; throws when its keys outgrew the sample's. */
  summary(): RowsSummary {
    const last = this.#last;
    if (!last) throw new Error("The body's parts are not all read");
    // Keys only grow; the same count means the mapping saw them all.
    if (!last.keysComplete || last.keys.length !== this.sample.keys.length) {
      throw new Error("Rows use keys the first part did not show");
    }
    return last;
  }
}
