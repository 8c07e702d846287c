import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { App } from '../http/types.ts';
import { sourceFile } from '../lib/paths.ts';

/** A same-origin script a page loads: a real file under src/web/assets/, linted like the rest. */
export interface PageScript {
  /** Where pages load it: the version in the query changes with the file, so browsers may keep it a day. */
  path: string;
  body: string;
}

function pageScript(name: string): PageScript {
  const body = readFileSync(sourceFile('web', 'assets', name), 'utf8');
  return { path: `/assets/${name}?v=${createHash('sha256').update(body).digest('hex').slice(0, 12)}`, body };
}

/** Copy buttons (`<button data-copy="ID" hidden>`). */
export const COPY_SCRIPT = pageScript('copy.js');

/** Puts the browser's own time zone in a new form's zone field (`<input data-browser-zone>`) while untouched. */
export const TIMEZONE_SCRIPT = pageScript('timezone.js');

/** Compilation progress on the knowledge page (`table[data-status-url]`, `#busy`). */
export const KNOWLEDGE_SCRIPT = pageScript('knowledge.js');

/** A submitted `<form data-busy="…">` says it is at work (its `[data-busy-status]`) and cannot be sent twice. */
export const BUSY_SCRIPT = pageScript('busy.js');

/** Serves the page scripts at their paths (the version query is ignored: one file each). */
export async function assetRoutes(app: App): Promise<void> {
  for (const script of [COPY_SCRIPT, TIMEZONE_SCRIPT, KNOWLEDGE_SCRIPT, BUSY_SCRIPT]) {
    app.get(
      script.path.split('?')[0] ?? '',
      { schema: { hide: true }, config: { auth: 'public' } },
      async (_req, reply) =>
        reply
          .type('application/javascript; charset=utf-8')
          .header('cache-control', 'public, max-age=86400')
          .header('x-content-type-options', 'nosniff')
          .send(script.body),
    );
  }
}
