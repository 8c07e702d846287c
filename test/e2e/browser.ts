import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import type { App } from '../../src/http/types.ts';
import { type FakeLlm, startFakeLlm } from '../fakes/llm-upstream.ts';
import { createHarness, FAKE_MODELS, type TestHarness, type TestUser } from '../harness.ts';
import { listeningApp } from './oauth-helpers.ts';

/**
 * Debian's chromium headless shell driven by playwright-core, for the page tests (PITFALLS "Browser tests"): the
 * same Blink as the browser without its windowing, what playwright itself runs for headless chromium. The whole
 * browser (`/usr/bin/chromium`) drew the same pages with about 1.6 times the CPU.
 */
export const CHROMIUM = '/usr/lib/chromium/chromium-headless-shell';
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
// In CI `.ci/run` installs the shell (Debian's chromium-headless-shell): there a missing browser fails the run instead of skipping it.
export const runBrowser = existsSync(CHROMIUM) || !!process.env.CI;

export interface TestBrowser {
  context: BrowserContext;
  /** A new tab whose waits give up after `timeout` ms. */
  newPage(timeout?: number): Promise<Page>;
  close(): Promise<void>;
}

/**
 * One chromium a test worker, launched by the first file that asks: a launch costs about 1.4 CPU-s, a context in a
 * running browser about 0.5 (the page tests run one after another in one worker, test/run-once.ts). Playwright
 * closes it when the worker exits; launched again if it went away.
 */
let sharedBrowser: Promise<Browser> | undefined;
function workerBrowser(): Promise<Browser> {
  sharedBrowser ??= chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS }).then((browser) => {
    browser.on('disconnected', () => {
      sharedBrowser = undefined;
    });
    return browser;
  });
  return sharedBrowser;
}

/**
 * A fresh context, as separate from the others as a fresh profile (cookies, storage, cache, permissions), in the
 * worker's browser; `javaScript: false` for the no-script path.
 */
export async function launchBrowser(
  viewport = { width: 800, height: 900 },
  opts: { javaScript?: boolean; timezoneId?: string } = {},
): Promise<TestBrowser> {
  const context = await (await workerBrowser()).newContext({
    viewport,
    javaScriptEnabled: opts.javaScript ?? true,
    ...(opts.timezoneId ? { timezoneId: opts.timezoneId } : {}),
  });
  return {
    context,
    async newPage(timeout = 15_000) {
      const page = await context.newPage();
      page.setDefaultTimeout(timeout);
      return page;
    },
    async close() {
      await context.close();
    },
  };
}

/**
 * The screenshots the documentation shows, by name: with `DOCS_SCREENSHOTS=1` the tests that take them write them
 * to docs/screens/ instead of test-artifacts/, so the pictures in the docs are of the pages as they are.
 */
export const DOC_SCREENS = new Set(['credits-dashboard', 'connections-top', 'agents-chat', 'channels-telegram']);
export const DOC_SCREENS_DIR = join(process.cwd(), 'docs', 'screens');

/** Whether the screenshot `name` is written for the docs: one they show, with `DOCS_SCREENSHOTS=1`. */
function forDocs(name: string): boolean {
  return process.env.DOCS_SCREENSHOTS === '1' && DOC_SCREENS.has(name);
}

/** The path of a screenshot named `name.png` under test-artifacts/ (or docs/screens/, above; the directory is made). */
export function artifactPath(name: string): string {
  const dir = forDocs(name) ? DOC_SCREENS_DIR : ARTIFACTS;
  mkdirSync(dir, { recursive: true });
  return join(dir, `${name}.png`);
}

/**
 * A screenshot for a person to look at, under test-artifacts/, with `TEST_SCREENSHOTS=1` (or one the docs show,
 * with `DOCS_SCREENSHOTS=1`); otherwise none: a full-page screenshot costs chromium most of a CPU second, and no
 * assertion reads these (a test that checks what was drawn takes its own, with `artifactPath`).
 */
export async function keepScreenshot(target: Page | Locator, name: string, opts: { fullPage?: boolean } = {}) {
  if (process.env.TEST_SCREENSHOTS !== '1' && !forDocs(name)) return;
  const path = artifactPath(name);
  await ('goto' in target
    ? target.screenshot({ path, fullPage: opts.fullPage ?? false })
    : target.screenshot({ path }));
}

/** Fills in and sends the sign-in form the page shows. */
export async function submitSignIn(page: Page, user: TestUser): Promise<void> {
  await page.getByLabel('E-mail').fill(user.account.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** A browser for the enclosing describe: launched before its tests, closed after them. */
export function suiteBrowser(
  bind: (browser: TestBrowser) => void,
  viewport?: { width: number; height: number },
  opts: { javaScript?: boolean; timezoneId?: string } = {},
): void {
  let browser: TestBrowser | undefined;
  beforeAll(async () => {
    browser = await launchBrowser(viewport, opts);
    bind(browser);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });
}

export interface BrowserSuite {
  h: TestHarness;
  /** The app listening on loopback at `base`, where the browser goes. */
  app: App;
  base: string;
  /** The scripted LLM upstream (absent with `llm: false`). */
  llm: FakeLlm;
  /** Absent with `viewport: false`. */
  browser: TestBrowser;
}

export interface BrowserSuiteOptions {
  /** Starts the other servers the pages talk to, after the fake LLM; returns the harness's settings for them. */
  start?: () => Promise<Record<string, string>>;
  /** Closes what `start` started, last (after the browser, whose kept-alive connections would hold a server). */
  stop?: () => Promise<unknown>;
  /** Settings for the listening app only (on top of the harness's). */
  appEnv?: Record<string, string>;
  /** The browser's window; `false` launches none (the describes launch their own with `suiteBrowser`). */
  viewport?: { width: number; height: number } | false;
  /** `false`: no fake LLM, and the app gets no LLM settings. */
  llm?: false;
}

/**
 * The set-up the page tests share: the fake LLM upstream (its one model at FAKE_MODELS) and the fakes `start`
 * makes, a harness and an app listening on loopback pointed at them, and a fresh browser; all started before
 * the suite and closed after it, the browser first. `bind` receives them once started
 * (`browserSuite((s) => ({ h, llm, app, base, browser } = s))`).
 */
export function browserSuite(bind: (suite: BrowserSuite) => void, opts: BrowserSuiteOptions = {}): void {
  let llm: FakeLlm | undefined;
  let h: TestHarness | undefined;
  let browser: TestBrowser | undefined;
  beforeAll(async () => {
    if (opts.llm !== false) llm = await startFakeLlm();
    const env = {
      ...(llm ? { LLM_BASE_URL: llm.url, LLM_MODELS: FAKE_MODELS } : {}),
      ...(await opts.start?.()),
    };
    h = await createHarness(env);
    const { app, base } = await listeningApp(h, opts.appEnv);
    if (opts.viewport !== false) browser = await launchBrowser(opts.viewport);
    // The absent ones are declared present: a suite that turned them off does not use them.
    bind({ h, app, base, llm: llm as FakeLlm, browser: browser as TestBrowser });
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await h?.close();
    await llm?.close();
    await opts.stop?.();
  });
}
