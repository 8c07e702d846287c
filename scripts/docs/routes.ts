import { docFiles, REPO_ROOT, readDoc } from './markdown.ts';

/**
 * The routes README.md and docs/ name (`GET /api/v1/models`, `POST .../execute` is left out: it is not whole),
 * checked against the routes the app registers. The docs list only the routes a reader needs; the full list is
 * the OpenAPI document at /openapi.json.
 */

export interface DocumentedRoute {
  file: string;
  line: number;
  method: string;
  path: string;
}

const METHOD_PATH = /(?<!["\w])(GET|POST|PUT|PATCH|DELETE)\s+(\/[^\s`'"),;]*)/g;

export function documentedRoutes(root = REPO_ROOT): DocumentedRoute[] {
  const found: DocumentedRoute[] = [];
  for (const file of docFiles(root)) {
    if (file.endsWith('gateway-speed.md')) continue; // a dated measurement log, quoted as it was
    readDoc(file, root)
      .split('\n')
      .forEach((text, i) => {
        for (const m of text.matchAll(METHOD_PATH)) {
          const path = (m[2] ?? '').split('?')[0]?.replace(/[.:]+$/, '') ?? '';
          if (/\.\.\.|…|[<>[\]]/.test(path)) continue; // abbreviated or a placeholder
          found.push({ file, line: i + 1, method: m[1] ?? '', path });
        }
      });
  }
  return found;
}

/** A path's shape: parameters (`:id`, `{id}`) as `:`, no trailing slash. */
const shape = (path: string) =>
  path
    .replace(/\/+$/, '')
    .split('/')
    .map((s) => (s.startsWith(':') || /^\{.*\}$/.test(s) ? ':' : s))
    .join('/');

/** The documented routes no registered route serves: `file:line: METHOD path`. */
export function missingRoutes(documented: DocumentedRoute[], served: Array<{ method: string; url: string }>): string[] {
  const exact = new Set(served.map((r) => `${r.method} ${shape(r.url)}`));
  const wildcards = served
    .filter((r) => r.url.endsWith('*'))
    .map((r) => ({ method: r.method, prefix: r.url.slice(0, -1) }));
  const serves = (method: string, path: string) =>
    exact.has(`${method} ${shape(path)}`) ||
    wildcards.some((w) => w.method === method && `${path}/`.startsWith(w.prefix));
  return documented
    .filter((d) => !serves(d.method, d.path) && !serves(d.method, `/api/v1${d.path}`))
    .map((d) => `${d.file}:${d.line}: ${d.method} ${d.path}`);
}
