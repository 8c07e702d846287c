import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/http/types.ts';
import { TOKEN_PLACEHOLDER } from '../../src/web/mcp-client-pages.ts';
import { createUser } from '../harness.ts';
import { browserSuite, keepScreenshot, runBrowser, submitSignIn, type TestBrowser } from './browser.ts';

/** The browser's clipboard, read in the page (the test compiles without the DOM library). */
const READ_CLIPBOARD = 'navigator.clipboard.readText()';

/**
 * A person connects an MCP client from the tokens page: one click makes a token with the MCP scopes, the
 * configurations show it filled in with this server's URL, a Copy button puts one on the clipboard, and the MCP
 * SDK client configured from what was copied lists the tools.
 */
describe.skipIf(!runBrowser)('connect an MCP client from the tokens page (chromium)', () => {
  let app: App;
  let base: string;
  let browser: TestBrowser;
  browserSuite((s) => ({ app, base, browser } = s), { viewport: { width: 1000, height: 1200 }, llm: false });

  it('one click makes an MCP token; the copied Cursor configuration connects; the page fits a phone', async () => {
    const user = await createUser(app);
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    const page = await browser.newPage(20_000);
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(`${base}/account/tokens`);
    await submitSignIn(page, user);
    await page.goto(`${base}/account/tokens`);
    await page.getByRole('heading', { name: 'Connect an MCP client' }).waitFor();
    expect(await page.locator('#mcp-url').textContent()).toBe(`${base}/mcp`);
    // Before a token is made, the configurations hold the placeholder.
    expect(await page.locator('#mcp-cursor').textContent()).toContain(TOKEN_PLACEHOLDER);

    await page.getByRole('button', { name: 'Create an MCP token' }).click();
    await page.getByText('The configurations below hold your new token').waitFor();
    for (const id of ['claude-desktop', 'claude-code', 'cursor', 'vscode', 'windsurf']) {
      expect(await page.locator(`#mcp-${id}`).textContent(), id).toContain(`${base}/mcp`);
    }
    await page.getByRole('button', { name: 'Copy the Cursor configuration' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    const copied = JSON.parse(String(await page.evaluate(READ_CLIPBOARD)));
    const server = copied.mcpServers.switchboard as { url: string; headers: { Authorization: string } };
    expect(server.url).toBe(`${base}/mcp`);
    expect(server.headers.Authorization).toMatch(/^Bearer pat_/);
    await keepScreenshot(page, 'tokens-mcp-clients', { fullPage: true });

    // The token is listed with exactly the MCP scopes, and the copied configuration works with a real client.
    expect(await page.locator('table').textContent()).toContain('universal-mcp-read, universal-mcp-read-write');
    const client = new Client({ name: 'cursor-like', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.headers } }),
    );
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name).sort()).toEqual(['list-connections', 'use-agent']);
    await client.close();

    // A reload shows the page without the token (shown once).
    await page.reload();
    expect(await page.locator('#mcp-cursor').textContent()).toContain(TOKEN_PLACEHOLDER);
    expect(errors).toEqual([]);

    const phone = await browser.context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(`${base}/account/tokens`);
    expect(await phone.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await keepScreenshot(phone, 'tokens-mcp-clients-phone', { fullPage: true });
  });
});
