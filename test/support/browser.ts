/**
 * A real browser for tests: Debian's Chromium (`apt-get install -y chromium`; .ci/run installs it)
 * driven by playwright-core, headless, with every background service of the browser off so the
 * only requests are the page's own.
 */
import { type Browser, chromium } from "playwright-core";

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}
