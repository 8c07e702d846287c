import { statSync } from 'node:fs';
import { eq } from 'drizzle-orm';
import type { Page } from 'playwright-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { connections } from '../../src/db/schema/index.ts';
import type { App } from '../../src/http/types.ts';
import {
  acmeProvider,
  acmeRegionalProvider,
  acmeTeamProvider,
  type FakeOAuthProvider,
  providersDirEnv,
  startFakeOAuthProvider,
} from '../fakes/oauth-provider.ts';
import { createUser, type TestHarness, type TestUser } from '../harness.ts';
import { artifactPath, browserSuite, keepScreenshot, runBrowser, submitSignIn, type TestBrowser } from './browser.ts';

/** What the page's own scripts see; the test compiles without the DOM library. */
interface LoadedImage {
  complete: boolean;
  naturalWidth: number;
}

/**
 * A person in a real browser on the connections page: signs in, searches the catalog, connects the fake
 * OAuth provider (its authorize step, our callback, back to the page), refreshes, sees a revoked connection
 * offer Reconnect, reconnects, disconnects; and finishes a provider that asks for a field after OAuth.
 */
describe.skipIf(!runBrowser)('connections page in a real browser (chromium)', () => {
  let h: TestHarness;
  let fake: FakeOAuthProvider;
  let app: App;
  let base: string;
  let browser: TestBrowser;
  /** Messages the browser logged (a CSP violation is one). */
  const logged: string[] = [];

  browserSuite((s) => ({ h, app, base, browser } = s), {
    llm: false,
    viewport: { width: 900, height: 1000 },
    start: async () => {
      fake = await startFakeOAuthProvider();
      return providersDirEnv(
        [acmeProvider, acmeTeamProvider, acmeRegionalProvider].map((p) => ({ fake, definition: p(fake.url) })),
      );
    },
    stop: async () => fake?.close(),
  });

  beforeEach(() => {
    fake.reset();
    logged.length = 0;
  });

  const rowsOf = (accountId: string) =>
    h.database.db.select().from(connections).where(eq(connections.accountId, accountId));

  async function signedInPage(user: TestUser): Promise<Page> {
    await browser.context.clearCookies();
    const page = await browser.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') logged.push(m.text());
    });
    await page.goto(`${base}/account/connections`);
    // Signed out: sign-in first, then back to the page.
    expect(new URL(page.url()).pathname).toBe('/signin');
    await submitSignIn(page, user);
    await page.getByRole('heading', { name: 'Connections', exact: true }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/account/connections');
    return page;
  }

  it('searches, connects, refreshes, reconnects a revoked connection and disconnects', async () => {
    const user = await createUser(app, { name: 'Grace Hopper' });
    const page = await signedInPage(user);
    await page.getByText('No connections yet.').waitFor();

    // Search and category: a GET form.
    await page.getByLabel('Search', { exact: true }).fill('acme');
    await page.getByLabel('Category').selectOption({ label: 'Testing' });
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.waitForURL((u) => u.searchParams.get('q') === 'acme');
    expect(new URL(page.url()).searchParams.get('category')).toBe('testing');
    const listed = await page
      .locator('li[data-provider-id]')
      .evaluateAll((els) =>
        els.map((el) => (el as unknown as { getAttribute(n: string): string }).getAttribute('data-provider-id')),
      );
    expect(listed).toEqual(['acme', 'acme-regional', 'acme-team']);
    await page.getByText(/^3 of \d+ services match\./).waitFor();
    // The logo is served by the service and allowed by the page's CSP.
    const logo = page.locator('li[data-provider-id="acme"] img.logo');
    await expect
      .poll(() =>
        logo.evaluate((el) => (el as unknown as LoadedImage).complete && (el as unknown as LoadedImage).naturalWidth),
      )
      .toBeGreaterThan(0);

    // Connect: the fake provider's authorize step approves; the callback brings the browser back.
    await page.locator('li[data-provider-id="acme"]').getByRole('button', { name: 'Connect Acme' }).click();
    await page.waitForURL((u) => u.pathname === '/account/connections' && u.searchParams.has('connectionId'));
    const connectionId = new URL(page.url()).searchParams.get('connectionId') ?? '';
    expect(connectionId).toMatch(/^conn_/);
    expect(fake.counts.authorize).toBe(1);
    expect(fake.counts.token).toBe(1);
    await page.getByRole('status').filter({ hasText: 'Connected Acme as Ada Lovelace.' }).waitFor();
    const item = page.locator(`li[data-connection-id="${connectionId}"]`);
    expect(await item.locator('.badge').textContent()).toBe('active');
    expect(await item.textContent()).toContain('Ada Lovelace (ada@acme.test)');
    const [stored] = await rowsOf(user.account.id);
    expect(stored).toMatchObject({ id: connectionId, providerId: 'acme', status: 'active', providerUserId: 'u-1001' });
    const shot = artifactPath('connections');
    await page.screenshot({ path: shot, fullPage: true });
    expect(statSync(shot).size).toBeGreaterThan(10_000);
    await keepScreenshot(page, 'connections-top'); // the first screen, for docs/providers.md

    // Refresh: a new token, shown as the result.
    await item.getByRole('button', { name: /^Refresh/ }).click();
    await page.getByText(/^Refreshed Acme \(Ada Lovelace\): active; the new token is valid until/).waitFor();
    expect(fake.counts.refresh).toBe(1);
    const [refreshed] = await rowsOf(user.account.id);
    expect(refreshed?.accessTokenEnc).not.toBe(stored?.accessTokenEnc);
    expect(refreshed?.status).toBe('active');

    // The provider kills the grant: the next refresh makes it revoked, and the page offers Reconnect.
    fake.revokeEverything();
    await page
      .locator(`li[data-connection-id="${connectionId}"]`)
      .getByRole('button', { name: /^Refresh/ })
      .click();
    await page.getByText('Refreshing Acme (Ada Lovelace) failed: the connection is revoked').waitFor();
    const revoked = page.locator(`li[data-connection-id="${connectionId}"]`);
    expect(await revoked.locator('.badge').textContent()).toBe('revoked');
    expect(await revoked.getByRole('button', { name: /^Refresh/ }).count()).toBe(0);
    expect(await rowsOf(user.account.id)).toMatchObject([{ id: connectionId, status: 'revoked', canRefresh: false }]);
    await keepScreenshot(page, 'connections-revoked');

    await revoked.getByRole('button', { name: /^Reconnect/ }).click();
    await page.waitForURL((u) => u.searchParams.get('connectionId') === connectionId);
    expect(await page.locator(`li[data-connection-id="${connectionId}"] .badge`).textContent()).toBe('active');
    expect(await rowsOf(user.account.id)).toMatchObject([{ id: connectionId, status: 'active', canRefresh: true }]);

    // Disconnect asks first.
    await page
      .locator(`li[data-connection-id="${connectionId}"]`)
      .getByRole('link', { name: /^Disconnect/ })
      .click();
    await page.getByRole('heading', { name: 'Disconnect Acme?' }).waitFor();
    expect(await rowsOf(user.account.id)).toHaveLength(1);
    await page.getByRole('button', { name: 'Disconnect' }).click();
    await page.getByText('Disconnected Acme (Ada Lovelace).').waitFor();
    await page.getByText('No connections yet.').waitFor();
    expect(await rowsOf(user.account.id)).toEqual([]);
    await app.deps.background.drain();
    expect(fake.counts.revoke).toBeGreaterThan(0);

    expect(logged.filter((m) => /Content Security Policy|Refused/.test(m))).toEqual([]);
    await page.close();
  });

  it('asks for the field a provider needs before OAuth in the Connect form', async () => {
    const user = await createUser(app);
    const page = await signedInPage(user);
    const row = page.locator('li[data-provider-id="acme-regional"]');
    await row.getByLabel('Workspace').fill('north');
    await keepScreenshot(row, 'connections-fields');
    await row.getByRole('button', { name: 'Connect Acme Regional' }).click();
    await page.getByText('Connected Acme Regional as Ada Lovelace.').waitFor();
    expect(fake.counts.authorize).toBe(1);
    expect(await rowsOf(user.account.id)).toMatchObject([
      { providerId: 'acme-regional', status: 'active', vars: { workspace: 'north' } },
    ]);
    expect(logged.filter((m) => /Content Security Policy|Refused/.test(m))).toEqual([]);
    await page.close();
  });

  it('finishes a provider that asks for a field after OAuth', async () => {
    const user = await createUser(app);
    const page = await signedInPage(user);
    await page.locator('li[data-provider-id="acme-team"]').getByRole('button', { name: 'Connect Acme Team' }).click();
    await page.getByRole('heading', { name: 'Finish connecting Acme Team' }).waitFor();
    expect(new URL(page.url()).pathname).toMatch(/^\/account\/connections\/pending\/pcn_/);

    await page.getByLabel('Workspace').fill('Not Valid!');
    await page.getByRole('button', { name: 'Finish connecting' }).click();
    await page.getByText('must match [a-z0-9-]{2,30}').waitFor();
    expect(await rowsOf(user.account.id)).toEqual([]);

    await page.getByLabel('Workspace').fill('research');
    await page.getByRole('button', { name: 'Finish connecting' }).click();
    await page.getByText('Connected Acme Team as Ada Lovelace.').waitFor();
    expect(await rowsOf(user.account.id)).toMatchObject([
      { providerId: 'acme-team', status: 'active', vars: { workspace: 'research' } },
    ]);
    expect(logged.filter((m) => /Content Security Policy|Refused/.test(m))).toEqual([]);
    await page.close();
  });
});
