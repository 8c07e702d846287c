import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, expect } from 'vitest';
import type { App } from '../src/http/types.ts';
import { createHarness, createUser, type TestHarness, type TestUser } from './harness.ts';

/**
 * A browser without JavaScript over `app.inject`, for the page tests: keeps cookies, submits forms
 * (url-encoded, repeated names for lists), follows nothing by itself.
 */
export class PageClient {
  readonly jar = new Map<string, string>();
  /** `remoteAddress`: the client address every request comes from (default 127.0.0.1). */
  constructor(
    readonly app: App,
    readonly opts: { remoteAddress?: string } = {},
  ) {}

  private get from(): { remoteAddress?: string } {
    return this.opts.remoteAddress ? { remoteAddress: this.opts.remoteAddress } : {};
  }

  private keep(res: LightMyRequestResponse): void {
    for (const c of res.cookies as { name: string; value: string; maxAge?: number; expires?: Date }[]) {
      if (c.value === '' || c.maxAge === 0 || (c.expires && c.expires.getTime() < Date.now())) this.jar.delete(c.name);
      else this.jar.set(c.name, c.value);
    }
  }

  get cookie(): string {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async get(url: string): Promise<LightMyRequestResponse> {
    const res = await this.app.inject({ method: 'GET', url, headers: { cookie: this.cookie }, ...this.from });
    this.keep(res);
    return res;
  }

  async post(
    url: string,
    form: Record<string, string | string[]>,
    headers: Record<string, string> = {},
  ): Promise<LightMyRequestResponse> {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) for (const one of [v].flat()) body.append(k, one);
    const res = await this.app.inject({
      method: 'POST',
      url,
      headers: { cookie: this.cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
      payload: body.toString(),
      ...this.from,
    });
    this.keep(res);
    return res;
  }

  /**
   * Submits a form that answers post-redirect-get: the POST must be a 303, and the page it sends the browser
   * to is loaded (where the flash shows).
   */
  async submit(
    url: string,
    form: Record<string, string | string[]>,
    headers: Record<string, string> = {},
  ): Promise<LightMyRequestResponse> {
    const posted = await this.post(url, form, headers);
    const location = posted.headers.location;
    if (posted.statusCode !== 303 || typeof location !== 'string') {
      throw new Error(`POST ${url}: expected a 303 redirect, got ${posted.statusCode}: ${posted.body.slice(0, 200)}`);
    }
    return this.get(location);
  }

  /** Signs in through the sign-in form; answers the form's answer (303 on success). */
  async signIn(email: string, password: string): Promise<LightMyRequestResponse> {
    const page = await this.get('/signin');
    return this.post('/signin', { csrf: csrfOf(page.body), email, password });
  }
}

/** The CSRF token of the first form on a page. */
export const csrfOf = (page: string): string => /name="csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';

/**
 * A suite of page tests: a harness with `env` for the suite (`bind` receives it once started), and `signedIn`,
 * a fresh user's browser signed in (the sign-in answered 303), with the CSRF token of `csrfPage` when given.
 */
export function pageSuite(
  env: Record<string, string>,
  bind: (h: TestHarness) => void,
): { signedIn(csrfPage?: string): Promise<{ u: TestUser; browser: PageClient; csrf: string }> } {
  let h: TestHarness | undefined;
  beforeAll(async () => {
    h = await createHarness(env);
    bind(h);
  });
  afterAll(() => h?.close());
  return {
    async signedIn(csrfPage) {
      if (!h) throw new Error('the page suite did not start');
      const u = await createUser(h.app);
      const browser = new PageClient(h.app);
      expect((await browser.signIn(u.account.email, u.password)).statusCode).toBe(303);
      return { u, browser, csrf: csrfPage ? csrfOf((await browser.get(csrfPage)).body) : '' };
    },
  };
}
