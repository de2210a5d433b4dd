/**
 * The objects of the API contract, in their request and response forms.
 *
 * @module
 */

/** A column as responses show it. */
export interface Column {
  readonly id: number;
  readonly name: string;
  readonly type: string;
  readonly default: string | null;
  readonly is_nullable: boolean;
}

/** A column as a creation request gives it (no id). */
export interface ColumnSpec {
  readonly name: string;
  readonly type: string;
  readonly default?: string | null;
  readonly is_nullable?: boolean | null;
}

/** A primary key or unique constraint. */
export interface KeyConstraint {
  readonly name: string;
  readonly columns: string[];
}

/** A single-column foreign key. */
export interface ForeignKey {
  readonly name: string;
  readonly column: string;
  readonly reference_table: string;
  readonly reference_column: string;
  readonly reference_schema: string;
}

/** The constraints of a table, response form. */
export interface Constraints {
  readonly primary_key: KeyConstraint | null;
  readonly unique: KeyConstraint[];
  readonly foreign_keys: ForeignKey[];
}

/** Constraints as a request gives them: names optional, null meaning absent. */
export interface ConstraintsSpec {
  readonly primary_key?:
    | { readonly name?: string | null; readonly columns: readonly string[] }
    | null;
  readonly unique?:
    | readonly { readonly name?: string | null; readonly columns: readonly string[] }[]
    | null;
  readonly foreign_keys?:
    | readonly {
      readonly name?: string | null;
      readonly column: string;
      readonly reference_table: string;
      readonly reference_column: string;
      readonly reference_schema?: string | null;
    }[]
    | null;
}

/** A table definition, request form. */
export interface TableDefinition {
  readonly columns?: readonly ColumnSpec[] | null;
  readonly constraints?: ConstraintsSpec | null;
}

/** A table, response form. */
export interface Table {
  readonly name: string;
  readonly schema: string;
  readonly columns: Column[];
  readonly constraints: Constraints;
  /** The template version the table was made from; absent when it was not. */
  readonly template?: TemplateRef;
}

/** Which template, and which version of it, a table was made from. */
export interface TemplateRef {
  readonly name: string;
  readonly version: string;
}

/** A table's address. */
export interface TableRef {
  readonly schema: string;
  readonly name: string;
}
