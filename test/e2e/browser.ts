import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

/** Debian's chromium driven by playwright-core, for the page tests (PITFALLS "Browser tests"). */

export const CHROMIUM = '/usr/bin/chromium';
/** Launched so that it stays off the (closed) network. */
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** Screenshots land here (git-ignored), for a person to look at. */
export const ARTIFACTS = join(process.cwd(), 'test-artifacts');
// In CI `.ci/run` installs chromium: there a missing browser fails the run instead of skipping it.
export const runBrowser = existsSync(CHROMIUM) || !!process.env.CI;

export interface TestBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A fresh profile in a temporary directory, removed on close; `javaScript: false` for the no-script path. */
export async function launchBrowser(
  viewport = { width: 800, height: 900 },
  opts: { javaScript?: boolean } = {},
): Promise<TestBrowser> {
  const userDataDir = mkdtempSync(join(tmpdir(), 'sb-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport,
    javaScriptEnabled: opts.javaScript ?? true,
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/** The path of a screenshot named `name.png` under test-artifacts/ (the directory is made). */
export function artifactPath(name: string): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  return join(ARTIFACTS, `${name}.png`);
}
