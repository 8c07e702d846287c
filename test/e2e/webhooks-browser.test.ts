import { describe, expect, it } from 'vitest';
import { activity, webhookDeliveries } from '../../src/db/schema/index.ts';
import type { App } from '../../src/http/types.ts';
import { newId } from '../../src/lib/ids.ts';
import { createUser, type TestHarness } from '../harness.ts';
import { browserSuite, keepScreenshot, launchBrowser, runBrowser, submitSignIn } from './browser.ts';

/** The page's width and the window's: a page wider than its window scrolls sideways. */
const WIDTHS = '[document.documentElement.scrollWidth, window.innerWidth]';

/**
 * A person on the webhooks page in a real browser, at a desktop width and on a phone (390 px): a URL the SSRF
 * guard refuses says why, a registered endpoint shows its signing secret once and is listed, its page shows its
 * deliveries; the activity page shows a failed call; neither page scrolls sideways.
 */
describe.skipIf(!runBrowser)('webhooks and activity pages in a real browser (chromium)', () => {
  let h: TestHarness;
  let app: App;
  let base: string;
  browserSuite((s) => ({ h, app, base } = s), {
    viewport: false,
    llm: false,
    start: async () => ({ SSRF_ALLOW_HOSTS: '127.0.0.1:9' }),
  });

  for (const [label, viewport] of [
    ['desktop', { width: 1280, height: 900 }],
    ['phone', { width: 390, height: 844 }],
  ] as const) {
    it(`registers a webhook, sees its secret once and its row, opens its deliveries and the activity (${label})`, async () => {
      const browser = await launchBrowser(viewport);
      try {
        const user = await createUser(app);
        const page = await browser.newPage(20_000);
        const errors: string[] = [];
        page.on('console', (m) => {
          // A refused form answers 422 by design: the browser reports that status, which is no fault of the page.
          if (m.type() === 'error' && !m.text().includes('status of 422')) errors.push(m.text());
        });
        const fits = async (what: string) => {
          const [scroll, inner] = (await page.evaluate(WIDTHS)) as [number, number];
          expect(inner, what).toBe(viewport.width);
          expect(scroll, `${what} at ${viewport.width} px`).toBeLessThanOrEqual(inner);
        };

        await page.goto(`${base}/account/webhooks`);
        expect(new URL(page.url()).pathname).toBe('/signin');
        await submitSignIn(page, user);
        await page.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
        expect(await page.getByText('No webhooks yet: register one below.').isVisible()).toBe(true);
        await fits('the empty webhooks page');

        // A private address: the service's reason is shown and the form keeps what was typed.
        await page.getByLabel('URL').fill('http://10.0.0.1/hook');
        await page.getByRole('checkbox', { name: /connection\.revoked/ }).check();
        await page.getByRole('button', { name: 'Register webhook' }).click();
        await page.getByRole('alert').waitFor();
        expect(await page.getByRole('alert').textContent()).toMatch(/^The webhook URL may not be used: /);
        expect(await page.getByLabel('URL').inputValue()).toBe('http://10.0.0.1/hook');
        expect(await page.getByRole('checkbox', { name: /connection\.revoked/ }).isChecked()).toBe(true);

        const url = 'http://127.0.0.1:9/hooks/switchboard/a-rather-long-path-that-a-phone-has-to-wrap-somewhere';
        await page.getByLabel('URL').fill(url);
        await page.getByRole('checkbox', { name: /task_run\.finished/ }).check();
        await page.getByRole('button', { name: 'Register webhook' }).click();
        await page.getByRole('status').waitFor();
        const secret = await page.getByLabel('Signing secret').inputValue();
        expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]{32}$/);
        expect(await page.getByRole('status').textContent()).toContain('it is not shown again');
        const row = page.locator('#webhooks li');
        expect(await row.count()).toBe(1);
        expect(await row.textContent()).toContain(url);
        expect(await row.textContent()).toContain('connection.revoked, task_run.finished');
        expect(await row.textContent()).toContain('no deliveries yet');
        await fits('the webhooks page with the secret');
        await keepScreenshot(page, `webhooks-created-${label}`, { fullPage: true });

        // Once: a reload lists the endpoint without its secret.
        await page.reload();
        await page.locator('#webhooks li').waitFor();
        expect(await page.getByLabel('Signing secret').count()).toBe(0);
        expect(await page.content()).not.toContain(secret);

        // Its page lists its deliveries, a failing one with its answer and reason.
        const webhookId = (await row.getAttribute('data-webhook-id')) ?? '';
        await h.database.db.insert(webhookDeliveries).values({
          id: newId('webhookDelivery'),
          accountId: user.account.id,
          endpointId: webhookId,
          eventType: 'task_run.finished',
          body: '{}',
          attempts: 3,
          responseStatus: 503,
          lastError: 'The endpoint answered HTTP 503: upstream-service-unavailable-please-retry-later-with-backoff',
          nextAttemptAt: new Date(Date.now() + 1_800_000),
        });
        await page.getByRole('link', { name: url }).click();
        await page.locator('#deliveries tbody tr').waitFor();
        const cells = await page.locator('#deliveries tbody tr td').allTextContents();
        expect(cells.slice(1, 5)).toEqual(['task_run.finished', 'Pending', '3', '503']);
        expect(cells[6]).toContain('upstream-service-unavailable');
        await fits("the webhook's deliveries");

        // The activity page, with a failed call whose arguments are long.
        await h.database.db.insert(activity).values({
          id: newId('activity'),
          accountId: user.account.id,
          kind: 'tool-call',
          via: 'agent-chat',
          actorKind: 'session',
          mode: 'write',
          status: 'error',
          tool: 'acme_create_item_with_a_rather_long_name',
          argsSummary: `{"title":"${'x'.repeat(180)}"}`,
          error: 'Acme refused the request (422): title is too long',
          durationMs: 42,
        });
        await page.getByRole('navigation', { name: 'Account' }).getByRole('link', { name: 'Activity' }).click();
        await page.getByRole('heading', { name: 'Activity', exact: true }).waitFor();
        expect(await page.locator('#activity-count').textContent()).toBe('1 entry; page 1 of 1.');
        expect(await page.getByRole('note').textContent()).toBe(
          'Error: Acme refused the request (422): title is too long',
        );
        await fits('the activity page');
        await keepScreenshot(page, `activity-${label}`, { fullPage: true });
        expect(errors, errors.join('\n')).toEqual([]);
      } finally {
        await browser.close();
      }
    });
  }
});
