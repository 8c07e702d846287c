import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { describe, expect, it } from 'vitest';
import { ALL_SCOPES, type Scope } from '../src/access/scopes.ts';
import { anthropicErrorType } from '../src/llm-upstreams/anthropic-messages.ts';
import { call, createUser, type TestHarness, type TestUser } from './harness.ts';

/** One part of a multipart/form-data body: a field, or a file when it has a `filename`. */
export interface MultipartPart {
  name: string;
  content: string | Buffer;
  filename?: string;
  contentType?: string;
}

/** A multipart/form-data body as a browser's `FormData` sends it, and the content type naming its boundary. */
export function multipartBody(parts: readonly MultipartPart[]): { payload: Buffer; contentType: string } {
  const boundary = `----sb-guard-${randomBytes(12).toString('hex')}`;
  const pieces: Buffer[] = [];
  for (const part of parts) {
    const file = part.filename !== undefined ? `; filename="${part.filename}"` : '';
    const type = part.contentType ?? (file ? 'application/octet-stream' : undefined);
    pieces.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"${file}\r\n${type ? `Content-Type: ${type}\r\n` : ''}\r\n`,
      ),
      Buffer.from(part.content),
      Buffer.from('\r\n'),
    );
  }
  pieces.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(pieces), contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * The guard tests every route gets (CONVENTIONS.md, "Tests"):
 * - 401 UnauthorizedError without a token, and with an unknown PAT, session or other token;
 * - 403 ForbiddenError with a PAT lacking the route's scope (the message names it), while a PAT holding any
 *   one of the listed scopes gets past the guard, so the scope is proven to be the gate;
 * - for session-only routes, 403 with a PAT holding every scope, while a session gets in;
 * - 404 NotFoundError for another account's resource, while its owner reaches the same URL (so the 404 is
 *   the ownership check, not a mistyped URL), and the resource is untouched by the refused call.
 *
 * Usage, in an area's `service.test.ts`:
 *   guardTests(() => h, [{ method: 'GET', url: '/api/v1/things/thg_x', scopes: ['account'],
 *     ownedUrl: async (owner) => `/api/v1/things/${(await makeThing(owner)).id}` }]);
 * An upload route declares its parts instead of a body:
 *   { method: 'POST', url: '/api/v1/things/thg_x/files', scopes: ['account'],
 *     multipart: [{ name: 'file', filename: 'a.txt', content: 'hello' }], ownedUrl: ... }
 */
export interface GuardedRoute {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** A URL of the route; for routes on one resource any id will do (`/api/v1/things/thg_x`). */
  url: string;
  /** Any one of these lets the caller in; empty means any valid bearer. */
  scopes: Scope[];
  /** Sent with every call; for routes that read a body it should be valid. */
  body?: unknown;
  /**
   * The route reads multipart/form-data (an upload): these parts are sent with every call instead of `body`,
   * and should make a valid request (the owner's own call in the 404 case must succeed).
   */
  multipart?: readonly MultipartPart[];
  /** The route takes a session token only (`auth: 'session'`): a PAT gets 403 whatever its scopes. */
  sessionOnly?: boolean;
  /**
   * The URL of a resource owned by `owner` (create it here if need be). Another account must get 404 there,
   * and the owner (with its session token) an answer below 400.
   */
  ownedUrl?: (owner: TestUser) => Promise<string> | string;
  /** @deprecated the former name of `ownedUrl`. */
  otherAccountUrl?: (owner: TestUser) => Promise<string> | string;
  /** A body for the 404 case when it differs from `body`. */
  validBody?: unknown;
  /**
   * The error body's shape, for the routes an SDK calls (src/http/error-handler.ts): `openai` puts OpenAI's error
   * object in `error`, `anthropic` answers Anthropic's; `message` and `statusCode` stay at the top either way.
   */
  errorShape?: 'openai' | 'anthropic';
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The §7 error body, or the SDK-compatible shape a route answers instead (see `GuardedRoute.errorShape`). */
function errorBody(shape: GuardedRoute['errorShape'], status: number, error: string, message: unknown): object {
  if (shape === 'openai')
    return { error: { message, type: error, param: null, code: null }, message, statusCode: status };
  if (shape === 'anthropic') {
    return { type: 'error', error: { type: anthropicErrorType(status), message }, message, statusCode: status };
  }
  return { error, message, statusCode: status };
}

function expectError(
  res: LightMyRequestResponse,
  status: number,
  error: string,
  message?: string,
  shape?: GuardedRoute['errorShape'],
): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['x-request-id']).toMatch(REQUEST_ID);
  const body = res.json();
  expect(body).toEqual(errorBody(shape, status, error, message ?? expect.any(String)));
}

/** The guard let the call through: whatever the handler answered, it was not the guard's refusal. */
function expectPastGuard(res: LightMyRequestResponse): void {
  expect([401, 403], `${res.statusCode} ${res.body}`).not.toContain(res.statusCode);
}

export function guardTests(harness: () => TestHarness, routes: GuardedRoute[]): void {
  describe('guards', () => {
    for (const route of routes) {
      const name = `${route.method} ${route.url}`;
      const refused = (res: LightMyRequestResponse, status: number, error: string, message?: string) =>
        expectError(res, status, error, message, route.errorShape);
      // A multipart body is encoded afresh for each call (a fresh boundary), with its content type.
      const encoded = () => {
        if (!route.multipart) return {};
        const { payload, contentType } = multipartBody(route.multipart);
        return { body: payload, headers: { 'content-type': contentType } };
      };
      const send = (token: string | undefined, url = route.url, body = route.body) =>
        call(harness().app, route.method, url, { body, ...encoded(), ...(token ? { token } : {}) });

      it(`${name}: 401 UnauthorizedError without a token`, async () => {
        refused(
          await send(undefined),
          401,
          'UnauthorizedError',
          'Missing bearer token (Authorization: Bearer <token>)',
        );
        const multipart = encoded();
        const basic = await call(harness().app, route.method, route.url, {
          body: route.body,
          ...multipart,
          headers: { ...multipart.headers, authorization: 'Basic dXNlcjpwYXNz' },
        });
        refused(basic, 401, 'UnauthorizedError');
      });

      it(`${name}: 401 UnauthorizedError with an unknown token`, async () => {
        const random = randomBytes(32).toString('base64url');
        refused(await send(`pat_${random}`), 401, 'UnauthorizedError', 'Invalid or revoked personal access token');
        refused(await send(`sess_${random}`), 401, 'UnauthorizedError', 'Invalid session token');
        refused(await send(random), 401, 'UnauthorizedError', 'Invalid bearer token');
      });

      if (route.sessionOnly) {
        it(`${name}: 403 ForbiddenError with a PAT, even one holding every scope; a session gets in`, async () => {
          const u = await createUser(harness().app);
          refused(
            await send(await u.pat([...ALL_SCOPES])),
            403,
            'ForbiddenError',
            'This endpoint requires a session token (sign in), not an access token',
          );
          expectPastGuard(await send(u.sessionToken));
        });
      }

      const lacking = ALL_SCOPES.filter((s) => !route.scopes.includes(s));
      if (route.scopes.length > 0 && !route.sessionOnly) {
        it(`${name}: 403 ForbiddenError without ${route.scopes.join(' or ')}; any one of them gets in`, async () => {
          const u = await createUser(harness().app);
          refused(
            await send(await u.pat(lacking)),
            403,
            'ForbiddenError',
            `Missing required scope: ${route.scopes.join(' or ')}`,
          );
          for (const scope of route.scopes) expectPastGuard(await send(await u.pat([scope])));
        });
      } else if (!route.sessionOnly) {
        it(`${name}: any valid bearer gets in, whatever its scopes`, async () => {
          const u = await createUser(harness().app);
          const someScope = lacking[ALL_SCOPES.length - 1] ?? 'email';
          expectPastGuard(await send(await u.pat([someScope])));
        });
      }

      const ownedUrl = route.ownedUrl ?? route.otherAccountUrl;
      if (ownedUrl) {
        it(`${name}: 404 NotFoundError for another account's resource`, async () => {
          const { app } = harness();
          const [me, owner] = [await createUser(app), await createUser(app)];
          const url = await ownedUrl(owner);
          const body = route.validBody ?? route.body;
          const res = await send(me.sessionToken, url, body);
          refused(res, 404, 'NotFoundError');
          // The not-found handler also answers NotFoundError: make sure this was the route's own answer.
          expect(res.json().message).not.toMatch(/^Route /);
          const own = await send(owner.sessionToken, url, body);
          expect(own.statusCode, `the owner's own call: ${own.body}`).toBeLessThan(400);
        });
      }
    }
  });
}
