/**
 * Test support for the web UI: Debian's Chromium driven by playwright-core, with the network
 * unplugged but for the service, and sign-in.
 *
 * @module
 */

// deno-lint-ignore no-import-prefix -- a tool of tests, kept out of the import map (deno.dev.lock)
import { type Browser, chromium, type Page } from "npm:playwright-core@^1.65.1";

export const CHROMIUM = "/usr/bin/chromium";

/** Why the browser tests cannot run here, or undefined when they can. */
export async function browserMissing(): Promise<string | undefined> {
  try {
    await Deno.stat(CHROMIUM);
    return undefined;
  } catch {
    const reason = `${CHROMIUM} is not installed (apt-get install chromium; .ci/run does)`;
    // CI installs it, so there a missing browser is a failure, not a skip.
    if (Deno.env.get("REQUIRE_BROWSER")) throw new Error(reason);
    return reason;
  }
}

/**
 * Chromium with no way out but the loopback: every name resolves to nothing except
 * 127.0.0.1, so a page that needed anything from elsewhere would fail to load it.
 */
export async function launchOffline(): Promise<Browser> {
  return await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ],
  });
}

/** What a page did that a test must see: requests elsewhere, script errors, dialogs. */
export interface Watch {
  readonly elsewhere: string[];
  readonly problems: string[];
  readonly dialogs: string[];
  /**
   * Set while a test tool works in the page (axe-core's checks break the page's style policy
   * themselves): its console lines are not the page's.
   */
  quiet: boolean;
}

/** Aborts and records every request that leaves `origin`; records errors and dialogs. */
export async function watch(page: Page, origin: string): Promise<Watch> {
  const seen: Watch = { elsewhere: [], problems: [], dialogs: [], quiet: false };
  await page.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.origin === origin || url.protocol === "data:" || url.protocol === "blob:") {
      return route.continue();
    }
    seen.elsewhere.push(url.href);
    return route.abort();
  });
  page.on("pageerror", (error) => seen.problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    // A refused call is logged by the browser as a failed resource; the UI shows those itself.
    if (seen.quiet) return;
    if (message.type() === "error" && !/status of (4|5)\d\d/.test(message.text())) {
      seen.problems.push(`console: ${message.text()}`);
    }
  });
  page.on("dialog", (dialog) => {
    seen.dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    dialog.dismiss().catch(() => {});
  });
  return seen;
}

/** Signs in on the page at `base` with `token` and waits for the tables screen. */
export async function signIn(page: Page, base: string, token: string): Promise<void> {
  await page.goto(`${base}/ui`);
  await page.locator("#token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Tables", level: 1 }).waitFor({ timeout: 30_000 });
}
