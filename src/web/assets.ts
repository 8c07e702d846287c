import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { transform } from 'esbuild';
import type { App } from '../http/types.ts';
import { sourceFile } from '../lib/paths.ts';

/**
 * A same-origin script a page loads: a real file under src/web/assets/ (plain JavaScript), or under
 * src/web/client/ (TypeScript, type-checked with the DOM's types by tsconfig.client.json), linted like the rest.
 */
export interface PageScript {
  /** Where pages load it: the version in the query changes with the file, so browsers may keep it a day. */
  path: string;
  /** What is served: the file itself, or the TypeScript compiled to ES2017 (once, at the first request). */
  body(): Promise<string>;
}

const versioned = (name: string, source: string) =>
  `/assets/${name}?v=${createHash('sha256').update(source).digest('hex').slice(0, 12)}`;

function pageScript(name: string): PageScript {
  const body = readFileSync(sourceFile('web', 'assets', name), 'utf8');
  return { path: versioned(name, body), body: async () => body };
}

/** `src/web/client/<file>`, served as `/assets/<name>`: its types stripped by esbuild, in a function scope. */
function clientScript(name: string, file: string): PageScript {
  const source = readFileSync(sourceFile('web', 'client', file), 'utf8');
  let compiled: Promise<string> | undefined;
  return {
    path: versioned(name, source),
    body: () => {
      compiled ??= transform(source, { loader: 'ts', format: 'iife', target: 'es2017' }).then((out) => out.code);
      return compiled;
    },
  };
}

/** Copy buttons (`<button data-copy="ID" hidden>`). */
export const COPY_SCRIPT = pageScript('copy.js');

/** Puts the browser's own time zone in a new form's zone field (`<input data-browser-zone>`) while untouched. */
export const TIMEZONE_SCRIPT = pageScript('timezone.js');

/** Compilation progress on the knowledge page (`table[data-status-url]`, `#busy`). */
export const KNOWLEDGE_SCRIPT = pageScript('knowledge.js');

/** A submitted `<form data-busy="…">` says it is at work (its `[data-busy-status]`) and cannot be sent twice. */
export const BUSY_SCRIPT = pageScript('busy.js');

/** The chat page's script (client/chat.ts): streams an agent's reply in as it is written. */
export const AGENT_CHAT_SCRIPT = clientScript('agent-chat.js', 'chat.ts');

/** Serves the page scripts at their paths (the version query is ignored: one file each). */
export async function assetRoutes(app: App): Promise<void> {
  for (const script of [COPY_SCRIPT, TIMEZONE_SCRIPT, KNOWLEDGE_SCRIPT, BUSY_SCRIPT, AGENT_CHAT_SCRIPT]) {
    app.get(
      script.path.split('?')[0] ?? '',
      { schema: { hide: true }, config: { auth: 'public' } },
      async (_req, reply) =>
        reply
          .type('application/javascript; charset=utf-8')
          .header('cache-control', 'public, max-age=86400')
          .header('x-content-type-options', 'nosniff')
          .send(await script.body()),
    );
  }
}
