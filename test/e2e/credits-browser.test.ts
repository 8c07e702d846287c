import { describe, expect, it } from 'vitest';
import { creditTransactions } from '../../src/db/schema/index.ts';
import { newId } from '../../src/lib/ids.ts';
import { createUser, type TestHarness } from '../harness.ts';
import { browserSuite, keepScreenshot, runBrowser, submitSignIn, type TestBrowser } from './browser.ts';

/**
 * A person sees what their credits went on: the dashboard charts 30 days of usage by kind (an SVG drawn by the
 * server, no script), and the credits page lists the whole history, filtered and a page at a time; both fit a
 * phone.
 */
describe.skipIf(!runBrowser)('credit usage and history (chromium)', () => {
  let h: TestHarness;
  let base: string;
  let browser: TestBrowser;
  browserSuite((s) => ({ h, base, browser } = s), { viewport: { width: 1100, height: 1200 }, llm: false });

  it('the chart shows each kind; the history filters by kind and pages; no sideways scroll at 390 px', async () => {
    const user = await createUser(h.app, { name: 'Credit User' });
    const today = Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
    // Seconds after the day's start: today's rows stay older than the welcome grant at any hour of the run (at hours
    // after midnight they were newer than it before 06:00 UTC).
    const at = (daysAgo: number, second: number) => new Date(today - daysAgo * 86_400_000 + second * 1000);
    const row = (type: string, amount: number, createdAt: Date, description: string) => ({
      id: newId('creditTransaction'),
      accountId: user.account.id,
      type,
      amount,
      balanceAfter: 0,
      description,
      createdAt,
    });
    const kinds = [
      ['llm', 'Chat completion (fake-model)'],
      ['agent', 'Agent Helper'],
      ['mcp', 'MCP use-agent'],
      ['task', 'Task Morning digest'],
      ['sandbox', 'Custom tool weather (python, 2 s)'],
      ['knowledge', 'Knowledge compilation'],
    ] as const;
    await h.database.db
      .insert(creditTransactions)
      .values(
        Array.from({ length: 29 }, (_, d) =>
          kinds
            .filter((_, k) => (d + k) % 3 !== 0)
            .map(([type, description], k) => row(type, -(40 + ((d * 7 + k * 13) % 90)), at(d, 1 + k), description)),
        ).flat(),
      );

    const page = await browser.newPage(20_000);
    await page.goto(`${base}/account`);
    await submitSignIn(page, user);
    await page.getByRole('heading', { name: 'Credit usage, last 30 days' }).waitFor();
    const chart = page.getByRole('img', { name: 'Credits spent per day, last 30 days' });
    expect(await chart.isVisible()).toBe(true);
    expect(await page.locator('#usage-chart rect').count()).toBe(29 * 4);
    expect(await page.locator('ul.legend li').allTextContents()).toEqual([
      'LLM gateway',
      'Agent chat',
      'MCP use-agent',
      'Scheduled task run',
      'Sandbox and custom tools',
      'Knowledge compilation',
    ]);
    // The newest rows, each named in words.
    expect(await page.locator('#credit-history tbody tr td:nth-child(2)').first().textContent()).toBe(
      'Credit grantWelcome credits',
    );
    await keepScreenshot(page, 'credits-dashboard', { fullPage: true });

    await page.getByRole('link', { name: 'All credit history, with filters' }).click();
    await page.getByRole('heading', { name: 'Credit history' }).waitFor();
    expect(await page.locator('#history-count').textContent()).toBe(`${29 * 4 + 1} movements; page 1 of 5.`);
    await page.getByLabel('Kind').selectOption('task');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('movements match').waitFor();
    expect(new URL(page.url()).searchParams.get('kind')).toBe('task');
    const taskRows = await page.locator('#credit-history tbody tr td:nth-child(2)').allTextContents();
    expect(taskRows.length).toBeGreaterThan(0);
    expect(new Set(taskRows)).toEqual(new Set(['Scheduled task runTask Morning digest']));
    await page.getByRole('link', { name: 'Clear' }).click();
    await page.getByRole('link', { name: 'Older' }).click();
    await page.getByText('page 2 of 5.').waitFor();
    expect(await page.locator('#credit-history tbody tr').count()).toBe(25);
    await keepScreenshot(page, 'credits-history', { fullPage: true });

    const phone = await browser.context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    for (const [path, name] of [
      ['/account', 'credits-dashboard-phone'],
      ['/account/credits', 'credits-history-phone'],
    ] as const) {
      await phone.goto(`${base}${path}`);
      await phone.locator('#usage-chart').waitFor();
      expect(await phone.evaluate('document.documentElement.scrollWidth'), path).toBeLessThanOrEqual(390);
      const box = await phone.locator('#usage-chart').boundingBox();
      expect(box?.width ?? 0).toBeGreaterThan(250);
      await keepScreenshot(phone, name, { fullPage: true });
      await keepScreenshot(phone.locator('section[aria-labelledby="usage-h"]'), `${name}-chart`);
    }
  });
});
