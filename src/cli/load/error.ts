/**
 * The load command's own failures, told apart from the service's answers.
 *
 * @module
 */

/** A local failure: a file that cannot be read, a service that cannot be reached. */
export class LoadError extends Error {
  constructor(message: string, readonly hint?: string) {
    super(message);
    this.name = "LoadError";
  }
}
