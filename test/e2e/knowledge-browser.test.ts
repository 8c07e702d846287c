import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/http/types.ts';
import { knowledgeJobs } from '../../src/modules/knowledge/jobs.ts';
import type { FakeLlm } from '../fakes/llm-upstream.ts';
import { call, createUser, type TestHarness } from '../harness.ts';
import { artifactPath, browserSuite, runBrowser, submitSignIn, type TestBrowser } from './browser.ts';

/**
 * A person on the wiki page in a real browser: adds a source, watches its status move once the compiler ran,
 * browses the index and a tag, reads a page with its backlinks and history, follows a wikilink, searches,
 * runs lint and sees its findings, and sees the link graph; reloading after a form does not send it again.
 */
describe.skipIf(!runBrowser)('knowledge page in a real browser (chromium)', () => {
  let h: TestHarness;
  let llm: FakeLlm;
  let app: App;
  let base: string;
  let browser: TestBrowser;
  browserSuite((s) => ({ h, llm, app, base, browser } = s), { viewport: { width: 900, height: 1100 } });

  it('adds a source, watches it compile, reads, searches, lints and sees the graph', async () => {
    const user = await createUser(app);
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(`${base}/account/knowledge`);
    expect(new URL(page.url()).pathname).toBe('/signin');
    await submitSignIn(page, user);
    await page.getByRole('heading', { name: 'Knowledge', exact: true }).waitFor();
    expect(await page.getByText('No pages yet: add a source below').isVisible()).toBe(true);

    // A refused form keeps what was typed.
    await page.getByLabel('Name').fill('press release');
    await page.getByLabel('…or a web address').fill('ftp://nope');
    await page.getByRole('button', { name: 'Add source' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('url must be an http(s) URL');
    expect(await page.getByLabel('Name').inputValue()).toBe('press release');

    await page.getByLabel('…or a web address').fill('');
    await page.getByLabel('Text').fill('Acme Corp makes anvils. Jane Roe founded Acme Corp.');
    await page.getByRole('button', { name: 'Add source' }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByRole('status').textContent()).toBe('Source added: it is compiled in the background.');
    expect(await page.locator('#busy').isVisible()).toBe(true);
    expect(await page.getByRole('row', { name: /press release/ }).textContent()).toContain('pending');
    // Reloading the page after the redirect does not add the source again.
    await page.reload();
    const kbs = (await call(app, 'GET', '/api/v1/knowledge/bases', { token: user.sessionToken })).json().data;
    const kbId = kbs[0].id as string;
    const sources = await call(app, 'GET', `/api/v1/knowledge/bases/${kbId}/sources`, { token: user.sessionToken });
    expect(sources.json().pagination.total).toBe(1);

    // The compiler runs (as the worker would), with the scripted model.
    llm.enqueue({
      content: JSON.stringify({
        pages: [
          {
            name: 'Acme Corp',
            pageType: 'entity',
            summary: 'Anvil maker.',
            facts: ['Makes anvils.'],
            tags: ['company'],
          },
          {
            name: 'Jane Roe',
            pageType: 'entity',
            summary: 'Founder.',
            facts: ['Founded Acme Corp.'],
            tags: ['person'],
            relationships: [{ target: 'Acme Corp', type: 'founded' }],
          },
        ],
      }),
    });
    await knowledgeJobs['knowledge.compile'].run(
      app.deps,
      { sourceId: sources.json().data[0].id },
      { jobId: 'job_browser', attempt: 1, signal: new AbortController().signal, log: pino({ level: 'silent' }) },
    );
    await page.reload();
    expect(await page.getByRole('row', { name: /press release/ }).textContent()).toContain('compiled');
    expect(await page.locator('#busy').count()).toBe(0);
    await page.getByRole('heading', { name: 'Entities' }).waitFor();
    expect(await page.locator('svg[role=img]').getAttribute('aria-label')).toBe('Link graph of 2 pages and 1 links');

    // A tag narrows the index.
    await page.getByRole('link', { name: 'person', exact: true }).click();
    expect(await page.locator('#index-h ~ ul a').allTextContents()).toEqual(['Jane Roe']);

    // Read a page, follow its wikilink, see backlinks and history.
    await page.getByRole('link', { name: 'Jane Roe', exact: true }).first().click();
    await page.getByRole('heading', { name: 'Jane Roe', level: 1 }).waitFor();
    expect(await page.getByText('founded').first().isVisible()).toBe(true);
    await page.locator('article').getByRole('link', { name: 'acme-corp' }).first().click();
    await page.getByRole('heading', { name: 'Acme Corp', level: 1 }).waitFor();
    expect(await page.locator('#backlinks-h + ul').textContent()).toBe('jane-roe');
    expect(await page.locator('#history-h ~ table tbody tr').count()).toBe(1);
    await page.screenshot({ path: artifactPath('knowledge-page'), fullPage: true });

    // Search, then lint.
    await page.getByRole('link', { name: /My knowledge/ }).click();
    await page.getByLabel('Words').fill('anvils');
    await page.getByRole('button', { name: 'Search' }).click();
    expect(await page.locator('ol.results a').allTextContents()).toEqual(['Acme Corp']);
    expect(await page.locator('ol.results strong').allTextContents()).toEqual(['Anvil', 'anvils']);
    await page.getByRole('button', { name: 'Run lint' }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByRole('status').textContent()).toBe('Health check done: the findings are below.');
    expect(await page.locator('ul.findings li').allTextContents()).toContainEqual(
      expect.stringContaining('Acme Corp is short'.replace('Acme Corp', 'acme-corp')),
    );
    await page.screenshot({ path: artifactPath('knowledge'), fullPage: true });

    // Another account's base is a 404 page.
    const other = await createUser(app);
    const theirs = (await call(app, 'GET', '/api/v1/knowledge/bases', { token: other.sessionToken })).json().data[0].id;
    const res = await page.goto(`${base}/account/knowledge/${theirs}`);
    expect(res?.status()).toBe(404);
    expect(await page.getByRole('alert').textContent()).toBe(`Knowledge base ${theirs} not found`);
    // No CSP violation or script error; the refused form (422) and the other account's base (404) log their status.
    expect(errors.filter((e) => !e.startsWith('Failed to load resource'))).toEqual([]);
  });
});
