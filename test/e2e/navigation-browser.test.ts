import { describe, expect, it } from 'vitest';
import { browserSuite, keepScreenshot, runBrowser, type TestBrowser } from './browser.ts';

/** The pages the navigation links to, by the link's name. */
const NAV = [
  ['Dashboard', '/account'],
  ['Connections', '/account/connections'],
  ['Agents', '/account/agents'],
  ['Tasks', '/account/tasks'],
  ['Knowledge', '/account/knowledge'],
  ['Channels', '/account/channels'],
  ['Tools', '/account/tools'],
  ['Skills', '/account/skills'],
  ['Authorized apps', '/account/apps'],
  ['Access tokens', '/account/tokens'],
  ['Credits', '/account/credits'],
  ['Activity', '/account/activity'],
  ['Webhooks', '/account/webhooks'],
] as const;

/**
 * A new user signs up in a real browser and lands on a dashboard that says what to do next; the brand leads
 * back to it; every page is one click away in the navigation, and on a phone (390 px) the navigation keeps to
 * one line and no page scrolls sideways.
 */
describe.skipIf(!runBrowser)('navigation and phones (chromium)', () => {
  let base: string;
  let browser: TestBrowser;
  browserSuite((s) => ({ base, browser } = s), { viewport: { width: 390, height: 844 } });

  // Loads every page of the navigation in turn: past the 30 s default on a machine running other suites.
  it('sign-up lands on the dashboard; every nav page answers at 390 px without sideways scrolling', {
    timeout: 90_000,
  }, async () => {
    const page = await browser.newPage(20_000);
    await page.goto(`${base}/signup`);
    await page.getByLabel('Name').fill('Nav User');
    await page.getByLabel('E-mail').fill(`nav-${Date.now()}@example.test`);
    await page.getByLabel('Password').fill('a long enough password');
    await page.getByRole('button', { name: /Create/ }).click();
    await page.getByRole('heading', { name: 'Next steps' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/account');
    const steps = page.locator('ol.steps li');
    expect(await steps.count()).toBe(3);
    expect(await page.getByRole('link', { name: 'Connect a service' }).getAttribute('href')).toBe(
      '/account/connections',
    );
    expect(await page.getByRole('link', { name: 'Make a token and connect an MCP client' }).getAttribute('href')).toBe(
      '/account/tokens#mcp',
    );
    expect(await page.getByRole('link', { name: 'Try the chat' }).getAttribute('href')).toBe('/account/agents');
    await keepScreenshot(page, 'dashboard-phone', { fullPage: true });

    const nav = page.getByRole('navigation', { name: 'Account' });
    for (const [name, path] of NAV) {
      await nav.getByRole('link', { name, exact: true }).click();
      await page.waitForURL(`${base}${path}`);
      expect(await page.evaluate('document.documentElement.scrollWidth'), path).toBeLessThanOrEqual(390);
      // One line: every item of the navigation centred on the same row (it scrolls sideways inside itself).
      const rows = await page.evaluate(
        `new Set([...document.querySelectorAll('nav[aria-label="Account"] li')].map((li) => { const r = li.getBoundingClientRect(); return Math.round((r.top + r.bottom) / 2); })).size`,
      );
      expect(rows, path).toBe(1);
      await page.getByRole('link', { name: 'Switchboard', exact: true }).click();
      await page.waitForURL(`${base}/account`);
      await page.goto(`${base}${path}`);
    }
    await keepScreenshot(page, 'nav-phone-tokens');
  });
});
