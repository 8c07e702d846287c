import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, join, normalize, resolve, sep } from 'node:path';
import type { FastifyReply } from 'fastify';
import type { App } from '../http/types.ts';

/**
 * The documentation site (`npm run docs:build` writes it to docs/.vitepress/dist) at /guide/, when it was built:
 * /docs is the API reference. Read from disk at each request, so a build made while the service runs is served
 * at once, and a checkout without one answers 404. Only files under the site's directory are ever read.
 */
export const GUIDE_PREFIX = '/guide';
export const DEFAULT_GUIDE_DIR = join('docs', '.vitepress', 'dist');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/** VitePress's pages run a few inline scripts of its own (the colour scheme, the page map): our built files only. */
const CSP =
  "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

async function fileAt(root: string, urlPath: string): Promise<string | undefined> {
  let relative: string;
  try {
    relative = decodeURIComponent(urlPath);
  } catch {
    return undefined;
  }
  if (relative.includes('\0')) return undefined;
  const path = normalize(join(root, relative));
  if (path !== root && !path.startsWith(root.endsWith(sep) ? root : root + sep)) return undefined;
  for (const candidate of [path, join(path, 'index.html'), `${path}.html`]) {
    const info = await stat(candidate).catch(() => undefined);
    if (info?.isFile()) return candidate;
  }
  return undefined;
}

export async function guideRoutes(app: App, dir: string = DEFAULT_GUIDE_DIR): Promise<void> {
  const root = resolve(dir);
  // Not rate limited, as the provider logos: a page loads a dozen assets, all static files.
  const opts = { schema: { hide: true }, config: { auth: 'public' as const, rateLimit: false as const } };
  const serve = async (reply: FastifyReply, path: string) => {
    const file = await fileAt(root, path);
    if (!file) return reply.callNotFound(); // an HTML page for browsers, the JSON error body for others
    const hashed = file.includes(`${sep}assets${sep}`);
    return reply
      .type(TYPES[extname(file)] ?? 'application/octet-stream')
      .header('Cache-Control', hashed ? 'public, max-age=31536000, immutable' : 'no-cache')
      .header('X-Content-Type-Options', 'nosniff')
      .header('Content-Security-Policy', CSP)
      .send(createReadStream(file));
  };
  // `/guide` also matches `/guide/` (trailing slashes are ignored): only the bare one moves to the site's root,
  // whose pages link relative to it.
  app.get(GUIDE_PREFIX, opts, async (req, reply) =>
    req.url.split('?')[0] === GUIDE_PREFIX ? reply.redirect(`${GUIDE_PREFIX}/`, 301) : serve(reply, ''),
  );
  app.get<{ Params: { '*': string } }>(`${GUIDE_PREFIX}/*`, opts, async (req, reply) =>
    serve(reply, req.params['*'] ?? ''),
  );
}
