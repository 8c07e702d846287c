import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentedRoutes, missingRoutes } from '../../scripts/docs/routes.ts';
import { buildApp } from '../../src/app.ts';
import type { App } from '../../src/http/types.ts';
import { createHarness, type TestHarness } from '../harness.ts';

describe('routes named in README.md and docs/', () => {
  let h: TestHarness;
  let app: App;
  const served: Array<{ method: string; url: string }> = [];
  beforeAll(async () => {
    h = await createHarness();
    app = await buildApp({
      config: h.config,
      database: h.database,
      keyRing: h.keyRing,
      onRoute: (r) => {
        for (const method of [r.method].flat()) served.push({ method, url: r.url });
      },
    });
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    await h.close();
  });

  it('every one exists', () => {
    const documented = documentedRoutes();
    expect(documented.length).toBeGreaterThan(50);
    expect(missingRoutes(documented, served)).toEqual([]);
  });

  it('a route the app does not serve is named, a parameter of any spelling matches', () => {
    const doc = (method: string, path: string) => ({ file: 'docs/x.md', line: 1, method, path });
    expect(
      missingRoutes(
        [
          doc('GET', '/api/v1/agents/{id}'),
          doc('PUT', '/connections/:connectionId/refresh'),
          doc('GET', '/guide/getting-started.html'),
          doc('DELETE', '/api/v1/models'),
          doc('GET', '/api/v1/teleport'),
        ],
        served,
      ),
    ).toEqual(['docs/x.md:1: DELETE /api/v1/models', 'docs/x.md:1: GET /api/v1/teleport']);
  });
});
