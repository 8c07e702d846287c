import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/http/types.ts';
import { knowledgeJobs } from '../../src/modules/knowledge/jobs.ts';
import type { FakeLlm } from '../fakes/llm-upstream.ts';
import { call, createUser, type TestHarness } from '../harness.ts';
import { browserSuite, keepScreenshot, launchBrowser, runBrowser, submitSignIn, type TestBrowser } from './browser.ts';

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
    // Links show the linked page's title, not its slug.
    await page.locator('article').getByRole('link', { name: 'Acme Corp', exact: true }).first().click();
    await page.getByRole('heading', { name: 'Acme Corp', level: 1 }).waitFor();
    expect(await page.locator('#backlinks-h + ul').textContent()).toBe('Jane Roe');
    expect(await page.locator('#history-h ~ table tbody tr').count()).toBe(1);
    await keepScreenshot(page, 'knowledge-page', { fullPage: true });

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
    await keepScreenshot(page, 'knowledge', { fullPage: true });

    // Another account's base is a 404 page.
    const other = await createUser(app);
    const theirs = (await call(app, 'GET', '/api/v1/knowledge/bases', { token: other.sessionToken })).json().data[0].id;
    const res = await page.goto(`${base}/account/knowledge/${theirs}`);
    expect(res?.status()).toBe(404);
    expect(await page.getByRole('alert').textContent()).toBe(`Knowledge base ${theirs} not found`);
    // No CSP violation or script error; the refused form (422) and the other account's base (404) log their status.
    expect(errors.filter((e) => !e.startsWith('Failed to load resource'))).toEqual([]);
  });

  it('uploads a file, sees it compile without reloading, retries and deletes a failed source, at 390 px', async () => {
    const user = await createUser(app);
    await browser.context.clearCookies();
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(`${base}/account/knowledge`);
    await submitSignIn(page, user);
    await page.getByRole('heading', { name: 'Knowledge', exact: true }).waitFor();
    const kbId = (await call(app, 'GET', '/api/v1/knowledge/bases', { token: user.sessionToken })).json().data[0]
      .id as string;
    const sourceIds = async () =>
      (await call(app, 'GET', `/api/v1/knowledge/bases/${kbId}/sources`, { token: user.sessionToken })).json().data as {
        id: string;
        name: string;
        status: string;
      }[];
    const compile = (sourceId: string) =>
      knowledgeJobs['knowledge.compile'].run(
        app.deps,
        { sourceId },
        { jobId: 'job_browser', attempt: 1, signal: new AbortController().signal, log: pino({ level: 'silent' }) },
      );

    // A file that is no document is refused (422) with the reason, the name kept.
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    await page.getByLabel('Title').fill('my picture');
    await page.getByLabel(/^File/).setInputFiles({ name: 'pic.png', mimeType: 'image/png', buffer: png });
    const refused = page.waitForResponse((r) => r.url().endsWith('/sources/file'));
    await page.getByRole('button', { name: 'Upload' }).click();
    expect((await refused).status()).toBe(422);
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toBe(
      'The file was not added: A file source must be a PDF, DOCX, CSV, TXT or MD document',
    );
    expect(await page.getByLabel('Title').inputValue()).toBe('my picture');
    expect(await sourceIds()).toEqual([]);

    // A file past the size a source may be, or a document past a DOCUMENT_MAX_* bound, is a 413 with the form.
    const csrf = (await page.locator('input[name=csrf]').first().getAttribute('value')) ?? '';
    const upload = (name: string, buffer: Buffer) =>
      page.request.post(`${base}/account/knowledge/${kbId}/sources/file`, {
        multipart: { csrf, name: '', file: { name, mimeType: 'text/plain', buffer } },
        maxRedirects: 0,
      });
    const huge = await upload('huge.txt', Buffer.alloc(1_600_000, 'a'));
    expect(huge.status()).toBe(413);
    expect(await huge.text()).toContain('The file was not added: it is larger than the 1499 KB a file source may be.');
    const bomb = await upload('rows.csv', Buffer.from('a\n'.repeat(100_001)));
    expect(bomb.status()).toBe(413);
    expect(await bomb.text()).toContain('Upload a file');
    expect(await bomb.text()).toContain('The file was not added: ');
    const forged = await page.request.post(`${base}/account/knowledge/${kbId}/sources/file`, {
      multipart: { csrf: 'forged', file: { name: 'a.txt', mimeType: 'text/plain', buffer: Buffer.from('hi') } },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(403);
    // A malformed upload is answered, never with a 5xx.
    const malformed: [string, string][] = [
      ['multipart/form-data', 'no boundary'],
      ['multipart/form-data; boundary=x', 'garbage'],
      [
        'multipart/form-data; boundary=x',
        `--x\r\ncontent-disposition: form-data; name="csrf"\r\n\r\n${csrf}\r\n--x\r\n`,
      ],
      [
        'multipart/form-data; boundary=x',
        `--x\r\ncontent-disposition: form-data; name="csrf"\r\n\r\n${csrf}\r\n--x\r\ncontent-disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhalf a fi`,
      ],
    ];
    for (const [type, data] of malformed) {
      const res = await page.request.post(`${base}/account/knowledge/${kbId}/sources/file`, {
        headers: { 'content-type': type },
        data,
        maxRedirects: 0,
      });
      expect(res.status(), data).toBeGreaterThanOrEqual(400);
      expect(res.status(), data).toBeLessThan(500);
    }
    expect(await sourceIds()).toEqual([]);

    // A markdown file, named after the file: it appears as pending.
    await page.getByLabel('Title').fill('');
    await page.getByLabel(/^File/).setInputFiles({
      name: 'globex.md',
      mimeType: 'text/markdown',
      buffer: Buffer.from('# Globex\n\nGlobex sells widgets to Initech.\n'),
    });
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByRole('status').textContent()).toBe('Source added: it is compiled in the background.');
    const row = page.getByRole('row', { name: /globex\.md/ });
    expect(await row.locator('.badge').textContent()).toBe('pending');
    const [uploaded] = await sourceIds();
    expect(uploaded).toMatchObject({ name: 'globex.md', status: 'pending' });

    // The compiler runs; the badge turns to compiled without the page reloading.
    await page.evaluate('window.sameDocument = true');
    llm.enqueue({
      content: JSON.stringify({
        pages: [
          { name: 'Globex', pageType: 'entity', summary: 'Widget seller.', facts: ['Sells widgets to [[Initech]].'] },
          { name: 'Initech', pageType: 'entity', summary: 'Buys widgets.', facts: ['Buys from [[Globex]].'] },
        ],
      }),
    });
    await compile(uploaded?.id ?? '');
    await row.locator('.badge', { hasText: 'compiled' }).waitFor();
    await page.locator('#busy', { hasText: 'Compiled: 2 pages in this base.' }).waitFor();
    expect(await page.evaluate('window.sameDocument')).toBe(true);
    expect(await page.locator('#busy').textContent()).toBe('Compiled: 2 pages in this base. Reload to see them.');
    await page.locator('#busy').getByRole('link', { name: 'Reload' }).click();
    await page.getByRole('heading', { name: 'Entities' }).waitFor();
    expect(await page.locator('#index-h ~ ul a').allTextContents()).toEqual(['Globex', 'Initech']);

    // A source whose compilation fails can be retried, and deleted after a confirmation.
    await page.getByLabel('Name', { exact: true }).fill('broken notes');
    await page.getByLabel('Text').fill('Notes the model cannot read.');
    await page.getByRole('button', { name: 'Add source' }).click();
    await page.getByRole('status').waitFor();
    const broken = (await sourceIds()).find((s) => s.name === 'broken notes');
    llm.enqueue({ content: 'no JSON at all' });
    await compile(broken?.id ?? '');
    const brokenRow = page.getByRole('row', { name: /broken notes/ });
    await brokenRow.locator('.badge', { hasText: 'failed' }).waitFor();
    expect(await brokenRow.locator('.source-error').textContent()).toBe('The model answered no JSON object');
    await page.reload();
    await brokenRow.getByRole('button', { name: 'Retry' }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByRole('status').textContent()).toBe('Source queued: it is compiled again in the background.');
    expect(await brokenRow.locator('.badge').textContent()).toBe('pending');
    expect((await sourceIds()).find((s) => s.name === 'broken notes')?.status).toBe('pending');
    llm.enqueue({ content: 'still no JSON' });
    await compile(broken?.id ?? '');
    await page.reload();
    // A failed source's actions fit a phone's screen.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await keepScreenshot(brokenRow, 'knowledge-failed-390');
    await page.setViewportSize({ width: 900, height: 1100 });
    await brokenRow.getByRole('link', { name: 'Delete' }).click();
    await page.getByRole('heading', { name: 'Delete the source broken notes?' }).waitFor();
    await page.getByRole('button', { name: 'Delete source' }).click();
    await page.getByRole('status').waitFor();
    expect(await page.getByRole('status').textContent()).toBe('Source deleted.');
    expect(await brokenRow.count()).toBe(0);
    expect((await sourceIds()).map((s) => s.name)).toEqual(['globex.md']);

    // A wikilink shows its page's title; one to a missing page shows its target as written.
    await call(app, 'PUT', `/api/v1/knowledge/bases/${kbId}/pages/initech`, {
      token: user.sessionToken,
      body: { content: 'Buys from [[globex]]; see [[Hooli]] and [[Globex|the seller]].' },
    });
    await page.goto(`${base}/account/knowledge/${kbId}/pages/initech`);
    expect(await page.locator('article .wiki a').allTextContents()).toEqual(['Globex', 'Hooli', 'the seller']);
    await keepScreenshot(page, 'knowledge-upload', { fullPage: true });

    // On a phone the page, the forms and the sources table fit without sideways scrolling.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/account/knowledge/${kbId}`);
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await keepScreenshot(page, 'knowledge-390', { fullPage: true });
    // Without JavaScript the upload works too, and the note says to reload.
    const noScript = await launchBrowser({ width: 900, height: 1100 }, { javaScript: false });
    try {
      const plain = await noScript.newPage();
      await plain.goto(`${base}/account/knowledge`);
      await submitSignIn(plain, user);
      await plain.getByLabel(/^File/).setInputFiles({
        name: 'plain.txt',
        mimeType: 'text/plain',
        buffer: Buffer.from('Plain notes.'),
      });
      await plain.getByRole('button', { name: 'Upload' }).click();
      await plain.getByRole('status').waitFor();
      expect(
        await plain
          .getByRole('row', { name: /plain\.txt/ })
          .locator('.badge')
          .textContent(),
      ).toBe('pending');
      expect(await plain.locator('#busy').textContent()).toBe('Compiling… reload to see the status move.');
    } finally {
      await noScript.close();
    }
    // Only the refused upload (422) logs its status.
    expect(errors.filter((e) => !e.startsWith('Failed to load resource'))).toEqual([]);
  });
});
