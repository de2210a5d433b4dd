/**
 * The tables this process described last, each with the stamp that tells whether its
 * description still holds (metadata_describe.ts). A request that finds its table here sends
 * its locks, a check of the stamp and its own statement in one round trip, where describing
 * the table first takes one more; a check that fails rolls the request back, and it runs again
 * the long way, describing the table anew.
 *
 * @module
 */

import type { TableRef } from "../../catalog/model.ts";
import { nameKey } from "../../catalog/names.ts";
import type { Described } from "./metadata_describe.ts";

/** Most descriptions kept; the one used least recently goes first. */
const MOST = 1_000;

/** Descriptions by the table's name, as this process last took them. */
export class KnownDescriptions {
  readonly #known = new Map<string, Described>();

  /** The description of the table `ref` names, when one is known. */
  get(ref: TableRef): Described | undefined {
    const key = keyOf(ref);
    const known = this.#known.get(key);
    if (known) {
      // Map keeps insertion order: a use moves it last.
      this.#known.delete(key);
      this.#known.set(key, known);
    }
    return known;
  }

  /** Keeps `described` as what `ref` names. */
  remember(ref: TableRef, described: Described): void {
    const key = keyOf(ref);
    this.#known.delete(key);
    this.#known.set(key, described);
    if (this.#known.size > MOST) this.#known.delete(this.#known.keys().next().value!);
  }

  /** Forgets what `ref` names: its description was found stale. */
  forget(ref: TableRef): void {
    this.#known.delete(keyOf(ref));
  }
}

function keyOf(ref: TableRef): string {
  return `${nameKey(ref.schema)}\n${nameKey(ref.name)}`;
}
