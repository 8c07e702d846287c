import { createServer } from 'node:net';
import { eq } from 'drizzle-orm';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { connections } from '../../src/db/schema/index.ts';
import type { App } from '../../src/http/types.ts';
import { type ApiKeyFake, apiKeyProvidersEnv, keyholeProvider, startApiKeyFake } from '../fakes/api-key-provider.ts';
import { createUser, type TestHarness, type TestUser } from '../harness.ts';
import { browserSuite, keepScreenshot, runBrowser, submitSignIn, type TestBrowser } from './browser.ts';

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as { port: number };
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/**
 * A person connects a service with a token in a real browser, on a fresh install (no OAuth client set):
 * Connect opens the token form, a token the provider refuses shows the form again with its answer, the right
 * one lands on the connections page; a provider that cannot be reached says so. At desktop width and 390 px.
 */
describe.skipIf(!runBrowser)('token connections in a real browser (chromium)', () => {
  let h: TestHarness;
  let fake: ApiKeyFake;
  let app: App;
  let base: string;
  let browser: TestBrowser;
  const TOKEN = 'kh_live_7c1e0d9b8a6f5e4d3c2b1a09';

  browserSuite((s) => ({ h, app, base, browser } = s), {
    llm: false,
    viewport: { width: 1100, height: 900 },
    start: async () => {
      fake = await startApiKeyFake();
      const down = keyholeProvider(`http://127.0.0.1:${await closedPort()}`);
      return apiKeyProvidersEnv([keyholeProvider(fake.url), { ...down, id: 'keyhole-down', label: 'Keyhole Down' }]);
    },
    stop: async () => fake?.close(),
  });

  async function signedInPage(user: TestUser, width: number): Promise<Page> {
    await browser.context.clearCookies();
    const page = await browser.newPage();
    await page.setViewportSize({ width, height: 900 });
    await page.goto(`${base}/account/connections?q=keyhole`);
    await submitSignIn(page, user);
    await page.getByRole('heading', { name: 'Connections', exact: true }).waitFor();
    return page;
  }

  /** Nothing wider than the window: no sideways scrolling. */
  const fits = (page: Page) =>
    page.evaluate('document.documentElement.scrollWidth <= document.documentElement.clientWidth');

  for (const width of [1100, 390]) {
    it(`connects Keyhole with a token at ${width} px: refused, then accepted`, async () => {
      fake.tokens.set(TOKEN, { email: 'ada@example.com', id: 'kh-ada', name: 'Ada Lovelace' });
      const user = await createUser(app, { name: 'Ada Lovelace' });
      const page = await signedInPage(user, width);
      const row = page.locator('li[data-provider-id="keyhole"]');
      await row.getByText('Connects with your API token from Keyhole.').waitFor();
      await row.getByRole('link', { name: 'Connect Keyhole' }).click();

      await page.getByRole('heading', { name: 'Connect Keyhole' }).waitFor();
      expect(new URL(page.url()).pathname).toBe('/account/connections/token/keyhole');
      const docs = page.getByRole('link', { name: 'Get your API token on keyhole.example' });
      expect(await docs.getAttribute('href')).toBe('https://keyhole.example/settings/tokens');
      expect(await docs.getAttribute('target')).toBe('_blank');
      expect(await page.getByLabel('API token').getAttribute('type')).toBe('password');
      expect(await fits(page)).toBe(true);
      await page.getByLabel('Workspace').fill('acme');
      await page.getByLabel('E-mail address').fill('ada@example.com');
      await page.getByLabel('API token').fill('kh_live_wrong_token_123456');
      await page.getByRole('button', { name: 'Connect Keyhole' }).click();

      // Refused: the form again with Keyhole's answer, the fields kept, the token not.
      const problem = page.locator('#error-token');
      await problem.waitFor();
      expect(await problem.textContent()).toBe(
        'The token was refused by Keyhole (401: Token invalid or revoked for this e-mail).',
      );
      expect(await page.getByLabel('Workspace').inputValue()).toBe('acme');
      expect(await page.getByLabel('API token').inputValue()).toBe('');
      expect(await page.getByLabel('API token').getAttribute('aria-invalid')).toBe('true');
      await keepScreenshot(page, `token-form-refused-${width}`, { fullPage: true });
      expect(await fits(page)).toBe(true);

      await page.getByLabel('API token').fill(TOKEN);
      await page.getByRole('button', { name: 'Connect Keyhole' }).click();
      await page.getByText('Connected Keyhole as Ada Lovelace.').waitFor();
      expect(new URL(page.url()).pathname).toBe('/account/connections');
      const mine = page.locator('li[data-connection-id]');
      expect(await mine.count()).toBe(1);
      expect(await mine.locator('.badge').textContent()).toBe('active');
      await mine.getByText(/^Connected \d{4}-\d{2}-\d{2} with a token$/).waitFor();
      await keepScreenshot(page, `token-connected-${width}`);
      const rows = await h.database.db.select().from(connections).where(eq(connections.accountId, user.account.id));
      expect(rows).toHaveLength(1);
      expect(rows[0]?.authType).toBe('api_key');
      expect(rows[0]?.accessTokenEnc).not.toContain(TOKEN);

      // Revoked at Keyhole: Reconnect opens the token form again.
      await h.database.db
        .update(connections)
        .set({ status: 'revoked' })
        .where(eq(connections.accountId, user.account.id));
      await page.reload();
      await mine.getByRole('link', { name: /^Reconnect/ }).click();
      await page.getByRole('heading', { name: 'Connect Keyhole' }).waitFor();
      await page.close();
    });
  }

  it('a provider that cannot be reached: the form says so and nothing is connected', async () => {
    const user = await createUser(app, { name: 'Grace Hopper' });
    const page = await signedInPage(user, 390);
    await page.goto(`${base}/account/connections/token/keyhole-down`);
    await page.getByLabel('Workspace').fill('acme');
    await page.getByLabel('E-mail address').fill('grace@example.com');
    await page.getByLabel('API token').fill(TOKEN);
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Connect Keyhole Down' }).click(),
    ]);
    expect(answer.status()).toBe(502);
    await page.locator('#form-error').waitFor();
    expect(await page.locator('#form-error').textContent()).toBe(
      'Keyhole Down could not be reached. Nothing was connected; try again in a moment.',
    );
    expect(await h.database.db.select().from(connections).where(eq(connections.accountId, user.account.id))).toEqual(
      [],
    );
    await page.close();
  });
});
