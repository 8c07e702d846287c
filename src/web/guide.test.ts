import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type TestHarness } from '../../test/harness.ts';
import { buildApp } from '../app.ts';
import type { App } from '../http/types.ts';

describe('the documentation site at /guide/', () => {
  let h: TestHarness;
  let built: App;
  let unbuilt: App;
  let limited: App;
  const site = mkdtempSync(join(tmpdir(), 'guide-'));
  const INDEX = '<!DOCTYPE html><html><body><h1>Switchboard documentation</h1></body></html>';
  beforeAll(async () => {
    mkdirSync(join(site, 'assets'));
    writeFileSync(join(site, 'index.html'), INDEX);
    writeFileSync(join(site, 'getting-started.html'), '<h1>Getting started</h1>');
    writeFileSync(join(site, 'assets', 'app.Bx1.js'), 'console.log(1)');
    writeFileSync(join(tmpdir(), 'guide-outside.txt'), 'secret');
    h = await createHarness();
    const make = async (guideDir: string, config = h.config) => {
      const app = await buildApp({ config, database: h.database, keyRing: h.keyRing, guideDir });
      await app.ready();
      return app;
    };
    built = await make(site);
    unbuilt = await make(join(site, 'not-built'));
    // A tight global limit: a page's dozen assets must not run into it.
    limited = await make(site, { ...h.config, rateLimits: { ...h.config.rateLimits, enabled: true, global: 3 } });
  });
  afterAll(async () => {
    await built.close();
    await unbuilt.close();
    await limited.close();
    await h.close();
    rmSync(site, { recursive: true, force: true });
    rmSync(join(tmpdir(), 'guide-outside.txt'), { force: true });
  });

  it('serves the built index, pages and assets when the site was built', async () => {
    const index = await built.inject({ method: 'GET', url: '/guide/' });
    expect(index.statusCode).toBe(200);
    expect(index.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(index.headers['cache-control']).toBe('no-cache');
    expect(index.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(index.body).toBe(INDEX);

    expect((await built.inject({ method: 'GET', url: '/guide/index.html' })).body).toBe(INDEX);
    const bare = await built.inject({ method: 'GET', url: '/guide' });
    expect(bare.statusCode).toBe(301);
    expect(bare.headers.location).toBe('/guide/');

    for (const url of ['/guide/getting-started.html', '/guide/getting-started']) {
      const page = await built.inject({ method: 'GET', url });
      expect(page.statusCode, url).toBe(200);
      expect(page.body).toBe('<h1>Getting started</h1>');
    }
    const asset = await built.inject({ method: 'GET', url: '/guide/assets/app.Bx1.js' });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(asset.body).toBe('console.log(1)');
    // Static files are not rate limited (as provider logos): a page and its assets load whatever the limit.
    for (let i = 0; i < 6; i++) {
      expect((await limited.inject({ method: 'GET', url: '/guide/assets/app.Bx1.js' })).statusCode).toBe(200);
    }
  });

  it('answers 404 for a page that is not there, and never reads outside the site', async () => {
    for (const url of [
      '/guide/nope.html',
      '/guide/..%2Fguide-outside.txt',
      '/guide/%2E%2E/guide-outside.txt',
      '/guide/assets/..%2F..%2Fguide-outside.txt',
      '/guide/%00',
    ]) {
      const res = await built.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
      expect(res.body).not.toContain('secret');
    }
    expect((await built.inject({ method: 'GET', url: '/guide/%E0%A4%A' })).statusCode).toBe(400); // bad encoding
  });

  it('answers 404 at /guide/ when the site was not built (JSON for API clients, a page for browsers)', async () => {
    const api = await unbuilt.inject({ method: 'GET', url: '/guide/' });
    expect(api.statusCode).toBe(404);
    expect(api.json()).toEqual({ error: 'NotFoundError', message: 'Route GET /guide/ not found', statusCode: 404 });
    const page = await unbuilt.inject({ method: 'GET', url: '/guide/', headers: { accept: 'text/html' } });
    expect(page.statusCode).toBe(404);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
  });

  it('leaves /docs to the API reference', async () => {
    const docs = await built.inject({ method: 'GET', url: '/docs/' });
    expect(docs.statusCode).toBe(200);
    expect(docs.body).toContain('swagger');
  });
});
