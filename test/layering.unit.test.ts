import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * ARCHITECTURE.md "Layout": layers only call downward (routes -> service -> repo -> db). This reads every
 * source file's imports and fails, naming the file and the import, when
 * - a transport (HTTP routes, web pages, the MCP endpoint, the auth guard) reaches the database: a repo, the
 *   schema, a migration helper or drizzle itself (a type-only import of the `Database` handle is allowed,
 *   since a transport may pass it along without querying);
 * - anything below the transport (services, repos, jobs, the agent, lib) imports fastify or a transport;
 * - a repo imports a service, or lib (the shared helpers) imports a feature area.
 * The composition roots (app, main, cli, runtime) wire every layer together and are exempt.
 */

const ROOT = resolve(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');
const COMPOSITION_ROOTS = new Set(['src/app.ts', 'src/main.ts', 'src/cli.ts', 'src/runtime.ts']);
// Besides routes, http/ and web/: the bearer guard and the MCP endpoint.
const TRANSPORT_FILES = new Set(['src/auth/guard.ts', 'src/mcp/endpoint.ts']);
/** HTML templates and their markdown renderer: plain functions from values to markup (the OAuth server renders them too). */
const isView = (file: string) =>
  file.startsWith('src/web/') && /(^|-)(pages|html|markdown)\.ts$/.test(file.split('/').pop() ?? '');
const FASTIFY = /^(fastify|@fastify\/.*|fastify-.*)$/;

function isTransport(file: string): boolean {
  return (
    TRANSPORT_FILES.has(file) ||
    file.startsWith('src/http/') ||
    (file.startsWith('src/web/') && !isView(file)) ||
    /(^|[./-])routes\.ts$/.test(file.split('/').pop() ?? '')
  );
}

const isRepo = (file: string) => /(^|[./-])repo\.ts$/.test(file.split('/').pop() ?? '');
const isService = (file: string) => /(^|[./-])service\.ts$/.test(file.split('/').pop() ?? '');
const reachesDatabase = (target: string) => target.startsWith('src/db/') || isRepo(target);

interface Import {
  specifier: string;
  /** The project file it names (relative to the repo), for relative specifiers. */
  target?: string;
  typeOnly: boolean;
}

function importsOf(file: string, text: string): Import[] {
  const found: Import[] = [];
  const statement = /^\s*(import|export)\s+(type\s+)?([^;]*?)\s+from\s+'([^']+)'/gms;
  for (const m of text.matchAll(statement)) {
    const names = m[3] ?? '';
    // `import { type A, type B } from` is type-only too.
    const typeOnly = Boolean(m[2]) || /^\{\s*(type\s+\w+\s*,?\s*)+\}$/.test(names.trim());
    found.push(toImport(file, m[4] ?? '', typeOnly));
  }
  for (const m of text.matchAll(/^\s*import\s+'([^']+)'/gm)) found.push(toImport(file, m[1] ?? '', false));
  for (const m of text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) {
    // `typeof import('x')` in a type position is type-only.
    const before = text.slice(Math.max(0, (m.index ?? 0) - 7), m.index ?? 0);
    found.push(toImport(file, m[1] ?? '', before.endsWith('typeof ')));
  }
  return found;
}

function toImport(file: string, specifier: string, typeOnly: boolean): Import {
  if (!specifier.startsWith('.')) return { specifier, typeOnly };
  const target = relative(ROOT, resolve(ROOT, dirname(file), specifier))
    .split('\\')
    .join('/');
  return { specifier, target, typeOnly };
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'migrations' ? [] : sourceFiles(path);
    // Tests and their support files are not layers of the service.
    const source = e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') && !e.name.endsWith('test-support.ts');
    return source ? [relative(ROOT, path)] : [];
  });
}

/** Every broken rule, as `file: import (why)`, over files given as path (from the repo root) to source. */
function layeringViolations(files: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  for (const [file, text] of files) {
    if (COMPOSITION_ROOTS.has(file)) continue;
    for (const imp of importsOf(file, text)) {
      const t = imp.target;
      const say = (why: string) => out.push(`${file}: '${imp.specifier}' (${why})`);
      if (isTransport(file)) {
        if (imp.specifier === 'drizzle-orm' || imp.specifier.startsWith('drizzle-orm/')) {
          say('a transport builds no queries: call a service');
        } else if (t && reachesDatabase(t) && !imp.typeOnly) {
          say('a transport never reaches the database: call a service');
        }
        continue;
      }
      if (FASTIFY.test(imp.specifier)) say('only transports import fastify: take plain values and Logger');
      else if (t && COMPOSITION_ROOTS.has(t) && !imp.typeOnly) say('layers below the wiring never import it');
      else if (t && isTransport(t)) say('layers only call downward: this imports a transport');
      else if (isRepo(file) && t && isService(t)) say('a repo never calls a service');
      else if (
        file.startsWith('src/lib/') &&
        t &&
        /^src\/(modules|agent|mcp|web|http|jobs)\//.test(t) &&
        !imp.typeOnly
      ) {
        say('lib holds shared helpers and imports no feature area');
      }
    }
  }
  return out;
}

describe('layering', () => {
  it('every layer only calls downward', () => {
    const files = new Map(sourceFiles(SRC).map((f) => [f, readFileSync(join(ROOT, f), 'utf8')]));
    expect(files.size).toBeGreaterThan(100);
    expect(layeringViolations(files)).toEqual([]);
  });

  it('names each kind of breach, and lets type-only handles pass', () => {
    const files = new Map([
      ['src/modules/things/routes.ts', "import * as repo from './repo.ts';\nimport { eq } from 'drizzle-orm';"],
      [
        'src/web/things.ts',
        "import type { Database } from '../db/client.ts';\nimport { things } from '../db/schema/index.ts';",
      ],
      [
        'src/modules/things/service.ts',
        "import type { FastifyRequest } from 'fastify';\nimport { thingRoutes } from './routes.ts';",
      ],
      ['src/modules/things/repo.ts', "import { createThing } from './service.ts';"],
      ['src/lib/helper.ts', "import { createThing } from '../modules/things/service.ts';"],
      ['src/agent/runner.ts', "const { app } = await import('../app.ts');"],
      [
        'src/modules/things/jobs.ts',
        "import {\n  type Thing,\n  type Other,\n} from './schema.ts';\nimport * as service from './service.ts';",
      ],
      ['src/app.ts', "import Fastify from 'fastify';\nimport * as repo from './modules/things/repo.ts';"],
    ]);
    expect(layeringViolations(files)).toEqual([
      "src/modules/things/routes.ts: './repo.ts' (a transport never reaches the database: call a service)",
      "src/modules/things/routes.ts: 'drizzle-orm' (a transport builds no queries: call a service)",
      "src/web/things.ts: '../db/schema/index.ts' (a transport never reaches the database: call a service)",
      "src/modules/things/service.ts: 'fastify' (only transports import fastify: take plain values and Logger)",
      "src/modules/things/service.ts: './routes.ts' (layers only call downward: this imports a transport)",
      "src/modules/things/repo.ts: './service.ts' (a repo never calls a service)",
      "src/lib/helper.ts: '../modules/things/service.ts' (lib holds shared helpers and imports no feature area)",
      "src/agent/runner.ts: '../app.ts' (layers below the wiring never import it)",
    ]);
  });
});
