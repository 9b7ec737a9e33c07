import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (`scripts/setup.sh` installs it); `SWITCHBOARD_CHROMIUM_PATH` names another. */
export const CHROMIUM = process.env.SWITCHBOARD_CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Headless Chromium driven by playwright-core, as the browser tests use it. Fails with a message saying
 * how to install it when it is missing (a browser test must not pass by not running).
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}. The browser tests need Debian's chromium: run "npm run setup" ` +
        '(scripts/setup.sh installs it) or "apt-get install -y chromium", or set SWITCHBOARD_CHROMIUM_PATH.',
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
}
