/**
 * What an upload may ask of a table that exists. Kept apart from the store, which carries it
 * out, so that the load command can check `--if-exists` without importing any database code.
 *
 * @module
 */

/** What an upload does when its table exists. */
export const IF_EXISTS = ["fail", "replace", "append"] as const;
/** One of {@link IF_EXISTS}. */
export type IfExists = typeof IF_EXISTS[number];
