import fs from "node:fs";
import type { Browser, Page } from "playwright-core";

// Debian's Chromium (never a downloaded one), as the browser tests drive it.

export const CHROMIUM = "/usr/bin/chromium";
export const haveChromium = fs.existsSync(CHROMIUM);
/** Headless, and quiet on a closed network: no background connections, no QUIC. */
export const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

/** A page that records any script error or Content-Security-Policy refusal in `problems`; the page must answer 200. */
export async function openPage(browser: Browser, url: string, viewport = { width: 1024, height: 700 }): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport });
  const problems: string[] = [];
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && /Content.Security.Policy/i.test(m.text())) problems.push(`CSP: ${m.text()}`);
  });
  const res = await page.goto(url);
  expect(res?.status()).toBe(200);
  return { page, problems };
}
