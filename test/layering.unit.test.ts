import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { cruise, type ICruiseOptions, type IViolation } from 'dependency-cruiser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The layering rules of `.dependency-cruiser.cjs` (run by `npm run lint`), each broken on purpose in a small tree
 * of files and expected reported. The rules come from the config itself and nothing is filtered, so a rule that
 * stops matching fails here.
 */

const ROOT = resolve(import.meta.dirname, '..');
const config = createRequire(import.meta.url)(join(ROOT, '.dependency-cruiser.cjs')) as {
  forbidden: NonNullable<ICruiseOptions['ruleSet']>['forbidden'];
  options: ICruiseOptions;
};

let dir = '';

/** Writes `files` (path from the tree's root to source) into a fresh tree and returns every reported violation. */
async function violations(files: Record<string, string>): Promise<string[]> {
  rmSync(join(dir, 'src'), { recursive: true, force: true });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  const { tsConfig: _tsConfig, ...options } = config.options;
  const result = await cruise(['src'], {
    ...options,
    baseDir: dir,
    validate: true,
    ruleSet: { forbidden: config.forbidden },
  });
  if (typeof result.output === 'string') throw new Error('expected a cruise result');
  return result.output.summary.violations.map(describeViolation).sort();
}

function describeViolation(v: IViolation): string {
  const to = v.to.replace(/^.*node_modules\//, 'node_modules/');
  return `${v.rule.name}: ${v.from} -> ${to}`;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'layering-'));
  // Packages (drizzle-orm, fastify) resolve as they do in the project.
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A well-layered area: routes -> service -> repo -> db, reached from outside through its index. */
const AREA = {
  'src/db/client.ts': 'export type Db = { query(sql: string): unknown };\n',
  'src/db/schema/things.ts':
    "import { pgTable, text } from 'drizzle-orm/pg-core';\nexport const things = pgTable('things', { id: text('id') });\n",
  'src/db/values.ts': "export const THING_KINDS = ['a', 'b'] as const;\n",
  'src/lib/errors.ts': 'export class AppError extends Error {}\n',
  'src/modules/things/repo.ts':
    "import { eq } from 'drizzle-orm';\nimport type { Db } from '../../db/client.ts';\nimport { things } from '../../db/schema/things.ts';\nexport const find = (db: Db, id: string) => [db, eq(things.id, id)];\n",
  'src/modules/things/service.ts':
    "import type { Db } from '../../db/client.ts';\nimport { AppError } from '../../lib/errors.ts';\nimport * as repo from './repo.ts';\nexport const getThing = (db: Db, id: string) => repo.find(db, id) ?? new AppError();\n",
  'src/modules/things/schema.ts':
    "import { THING_KINDS } from '../../db/values.ts';\nexport const kinds = THING_KINDS;\n",
  'src/modules/things/routes.ts':
    "import type { FastifyInstance } from 'fastify';\nimport { getThing } from './service.ts';\nexport const routes = (app: FastifyInstance) => [app, getThing];\n",
  'src/modules/things/index.ts':
    "export { routes as thingRoutes } from './routes.ts';\nexport { getThing } from './service.ts';\n",
  'src/modules/others/service.ts': "import { getThing } from '../things/index.ts';\nexport const other = getThing;\n",
  'src/modules/others/index.ts': "export { other } from './service.ts';\n",
  'src/app.ts':
    "import Fastify from 'fastify';\nimport { thingRoutes } from './modules/things/index.ts';\nexport const app = thingRoutes(Fastify());\n",
  'src/web/things-routes.ts': "import { getThing } from '../modules/things/index.ts';\nexport const page = getThing;\n",
};

describe('layering rules', () => {
  it('pass a well-layered tree', async () => {
    expect(await violations(AREA)).toEqual([]);
  });

  it('refuse a route reaching the database, directly or through a file that is not a repo', async () => {
    expect(
      await violations({
        ...AREA,
        'src/modules/things/routes.ts':
          "import { eq } from 'drizzle-orm';\nimport { find } from './repo.ts';\nimport { query } from './query.ts';\nexport const r = [eq, find, query];\n",
        'src/modules/things/query.ts': "import { sql } from 'drizzle-orm';\nexport const query = sql`select 1`;\n",
      }),
    ).toEqual([
      'database-only-in-repos: src/modules/things/query.ts -> node_modules/drizzle-orm/index.js',
      'database-only-in-repos: src/modules/things/routes.ts -> node_modules/drizzle-orm/index.js',
      'transport-never-reaches-database: src/modules/things/routes.ts -> node_modules/drizzle-orm/index.js',
      'transport-never-reaches-database: src/modules/things/routes.ts -> src/modules/things/repo.ts',
    ]);
  });

  it('refuse a page or the MCP server importing a repo or the schema', async () => {
    expect(
      await violations({
        ...AREA,
        'src/web/things-routes.ts':
          "import { find } from '../modules/things/repo.ts';\nimport { things } from '../db/schema/things.ts';\nexport const page = [find, things];\n",
        'src/mcp/server.ts': "import * as repo from '../modules/things/repo.ts';\nexport const server = repo;\n",
      }),
    ).toEqual([
      'database-only-in-repos: src/web/things-routes.ts -> src/db/schema/things.ts',
      'front-door-from-outside: src/mcp/server.ts -> src/modules/things/repo.ts',
      'front-door-from-outside: src/web/things-routes.ts -> src/modules/things/repo.ts',
      'transport-never-reaches-database: src/mcp/server.ts -> src/modules/things/repo.ts',
      'transport-never-reaches-database: src/web/things-routes.ts -> src/db/schema/things.ts',
      'transport-never-reaches-database: src/web/things-routes.ts -> src/modules/things/repo.ts',
    ]);
  });

  it('let a transport hold a type-only handle on the database', async () => {
    expect(
      await violations({
        ...AREA,
        'src/web/things-routes.ts':
          "import type { Db } from '../db/client.ts';\nimport { getThing } from '../modules/things/index.ts';\nexport const page = (db: Db) => getThing(db, 'x');\n",
      }),
    ).toEqual([]);
  });

  it('refuse a service importing drizzle or fastify', async () => {
    expect(
      await violations({
        ...AREA,
        'src/modules/things/service.ts':
          "import { eq } from 'drizzle-orm';\nimport type { FastifyRequest } from 'fastify';\nexport const getThing = (req: FastifyRequest) => eq;\n",
      }),
    ).toEqual([
      'database-only-in-repos: src/modules/things/service.ts -> node_modules/drizzle-orm/index.js',
      'service-never-imports-fastify: src/modules/things/service.ts -> node_modules/fastify/fastify.js',
    ]);
  });

  it('refuse lib, agent, llm-upstreams, db, jobs, http, code-runner and access (but its OAuth server) importing an area, even through its front door', async () => {
    const breach = "import { getThing } from '../modules/things/index.ts';\nexport const x = getThing;\n";
    expect(
      await violations({
        ...AREA,
        'src/lib/helper.ts': breach,
        'src/agent/runtime.ts': breach,
        'src/llm-upstreams/gateway.ts': breach,
        'src/db/seed.ts': breach,
        'src/jobs/catalog.ts': breach,
        'src/http/metrics.ts': breach,
        'src/code-runner/bridge.ts': breach,
        'src/access/guard.ts': breach,
        'src/access/oauth/provider.ts': breach,
      }),
    ).toEqual([
      'infrastructure-imports-no-area: src/access/guard.ts -> src/modules/things/index.ts',
      'infrastructure-imports-no-area: src/agent/runtime.ts -> src/modules/things/index.ts',
      'infrastructure-imports-no-area: src/code-runner/bridge.ts -> src/modules/things/index.ts',
      'infrastructure-imports-no-area: src/db/seed.ts -> src/modules/things/index.ts',
      'infrastructure-imports-no-area: src/http/metrics.ts -> src/modules/things/index.ts',
      'infrastructure-imports-no-area: src/jobs/catalog.ts -> src/modules/things/index.ts',
      'infrastructure-imports-no-area: src/lib/helper.ts -> src/modules/things/index.ts',
      'infrastructure-imports-no-area: src/llm-upstreams/gateway.ts -> src/modules/things/index.ts',
      'lib-imports-only-lib: src/lib/helper.ts -> src/modules/things/index.ts',
    ]);
  });

  it('refuse lib importing anything of the project outside lib, types included', async () => {
    expect(
      await violations({
        ...AREA,
        'src/config.ts': 'export type Config = { port: number };\n',
        'src/lib/context.ts':
          "import type { Config } from '../config.ts';\nimport type { Db } from '../db/client.ts';\nexport type Deps = { config: Config; db: Db };\n",
      }),
    ).toEqual([
      'lib-imports-only-lib: src/lib/context.ts -> src/config.ts',
      'lib-imports-only-lib: src/lib/context.ts -> src/db/client.ts',
    ]);
  });

  it("refuse reaching past another area's front door, from an area or from outside", async () => {
    expect(
      await violations({
        ...AREA,
        'src/modules/others/service.ts':
          "import { getThing } from '../things/service.ts';\nimport { kinds } from '../things/schema.ts';\nexport const other = [getThing, kinds];\n",
        'src/web/things-routes.ts':
          "import { getThing } from '../modules/things/service.ts';\nexport const page = getThing;\n",
        'src/app.ts': "import { routes } from './modules/things/routes.ts';\nexport const app = routes;\n",
      }),
    ).toEqual([
      'front-door-between-areas: src/modules/others/service.ts -> src/modules/things/schema.ts',
      'front-door-between-areas: src/modules/others/service.ts -> src/modules/things/service.ts',
      'front-door-from-outside: src/app.ts -> src/modules/things/routes.ts',
      'front-door-from-outside: src/web/things-routes.ts -> src/modules/things/service.ts',
    ]);
  });

  it("refuse a front door handing out its repo's functions or types", async () => {
    expect(
      await violations({
        ...AREA,
        'src/modules/things/index.ts':
          "export { routes as thingRoutes } from './routes.ts';\nexport { getThing } from './service.ts';\nexport { find } from './repo.ts';\n",
        'src/modules/others/index.ts': "export { other } from './service.ts';\nexport type { Row } from './repo.ts';\n",
        'src/modules/others/repo.ts': 'export type Row = { id: string };\n',
      }),
    ).toEqual([
      'front-door-hands-out-no-repo: src/modules/others/index.ts -> src/modules/others/repo.ts',
      'front-door-hands-out-no-repo: src/modules/things/index.ts -> src/modules/things/repo.ts',
    ]);
  });

  it('refuse a cycle between two areas, but not one within an area', async () => {
    const found = await violations({
      ...AREA,
      'src/modules/things/service.ts':
        "import { other } from '../others/index.ts';\nimport { helper } from './helper.ts';\nexport const getThing = () => [other, helper];\n",
      'src/modules/things/helper.ts':
        "import { getThing } from './service.ts';\nexport const helper = () => getThing;\n",
    });
    // dependency-cruiser names each cycle once, from whichever of its modules it reached first.
    expect(found.length).toBeGreaterThan(0);
    expect(found.every((v) => v.startsWith('no-cycle-between-areas: '))).toBe(true);
    expect(found.some((v) => v.includes('helper.ts'))).toBe(false);
    const within = await violations({
      ...AREA,
      'src/modules/things/service.ts': "import { helper } from './helper.ts';\nexport const getThing = () => helper;\n",
      'src/modules/things/helper.ts':
        "import { getThing } from './service.ts';\nexport const helper = () => getThing;\n",
    });
    expect(within).toEqual([]);
  });

  it('refuse importing a transport or the composition root from below, and a repo calling a service', async () => {
    expect(
      await violations({
        ...AREA,
        'src/modules/things/service.ts': "import { routes } from './routes.ts';\nexport const getThing = routes;\n",
        'src/modules/things/repo.ts':
          "import { getThing } from './service.ts';\nimport { app } from '../../app.ts';\nexport const find = [getThing, app];\n",
      }),
    ).toEqual(
      expect.arrayContaining([
        'layers-call-downward: src/modules/things/repo.ts -> src/app.ts',
        'layers-call-downward: src/modules/things/service.ts -> src/modules/things/routes.ts',
        'repo-never-calls-service: src/modules/things/repo.ts -> src/modules/things/service.ts',
      ]),
    );
  });
});
