/**
 * A wanted column of a table update next to the column it continues: what both engines work
 * out for each column before an update runs.
 *
 * @module
 */

import type { PlannedColumn } from "../../catalog/definition.ts";
import type { Column } from "../../catalog/model.ts";

/** A wanted column next to the column it continues. */
export interface ColumnChange {
  readonly planned: PlannedColumn;
  /** The existing column, or undefined for a new one. */
  readonly source?: Column;
  /** The canonical type, as the engine names it. */
  readonly type: string;
  /**
   * The default to write in DDL, as the engine renders it; a new serial column's is made
   * when it is added.
   */
  readonly defaultSql: string | null;
  /** NOT NULL, or part of the primary key (which implies it). */
  readonly notNull: boolean;
  readonly renamed: boolean;
  readonly retyped: boolean;
  readonly defaultChanged: boolean;
  readonly notNullChanged: boolean;
}
