import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ALL_SCOPES, type Scope } from '../src/auth/scopes.ts';
import { call, createUser, type TestHarness, type TestUser } from './harness.ts';

/**
 * The guard tests every route gets: 401 without a token, 401 with an unknown one, 403 with a token lacking
 * the route's scope (the message names it), and 404 for another account's resource.
 */
export interface GuardedRoute {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  /** Any one of these lets the caller in; empty means any valid bearer. */
  scopes: Scope[];
  body?: unknown;
  /** A URL naming a resource of `other` (another account): the caller must get 404. */
  otherAccountUrl?: (other: TestUser) => Promise<string> | string;
  /** A valid body for the 404 case, when the route reads one. */
  validBody?: unknown;
}

export function guardTests(harness: () => TestHarness, routes: GuardedRoute[]): void {
  describe('guards', () => {
    for (const route of routes) {
      const name = `${route.method} ${route.url}`;
      it(`${name}: 401 UnauthorizedError without a token or with an unknown one`, async () => {
        const { app } = harness();
        const none = await call(app, route.method, route.url, { body: route.body });
        expect(none.statusCode).toBe(401);
        expect(none.json()).toMatchObject({ error: 'UnauthorizedError', statusCode: 401 });
        expect(none.headers['x-request-id']).toBeTruthy();
        const unknown = await call(app, route.method, route.url, {
          body: route.body,
          token: `pat_${randomBytes(32).toString('base64url')}`,
        });
        expect(unknown.statusCode).toBe(401);
        expect(unknown.json()).toMatchObject({ error: 'UnauthorizedError', statusCode: 401 });
      });

      const other = ALL_SCOPES.find((s) => route.scopes.length > 0 && !route.scopes.includes(s));
      if (other) {
        it(`${name}: 403 ForbiddenError without ${route.scopes.join(' or ')}`, async () => {
          const { app } = harness();
          const u = await createUser(app);
          const res = await call(app, route.method, route.url, { body: route.body, token: await u.pat([other]) });
          expect(res.statusCode).toBe(403);
          expect(res.json()).toEqual({
            error: 'ForbiddenError',
            message: `Missing required scope: ${route.scopes.join(' or ')}`,
            statusCode: 403,
          });
        });
      }

      const otherUrl = route.otherAccountUrl;
      if (otherUrl) {
        it(`${name}: 404 NotFoundError for another account's resource`, async () => {
          const { app } = harness();
          const [me, them] = [await createUser(app), await createUser(app)];
          const res = await call(app, route.method, await otherUrl(them), {
            body: route.validBody ?? route.body,
            token: me.sessionToken,
          });
          expect(res.statusCode).toBe(404);
          expect(res.json()).toMatchObject({ error: 'NotFoundError', statusCode: 404 });
        });
      }
    }
  });
}
