/**
 * The layering rules (docs/architecture.md), checked by `npm run lint` (`depcruise src`).
 * test/layering.unit.test.ts breaks each rule on purpose and expects it reported.
 *
 * Words used below:
 * - an area: `src/modules/<area>/`; its front door is `src/modules/<area>/index.ts`.
 * - infrastructure: `src/lib`, `src/db`, `src/http`, `src/jobs`, `src/llm-upstreams`, `src/code-runner`, `src/agent`,
 *   `src/access` but its OAuth server (`src/access/oauth/`, which signs in accounts and lists their knowledge bases).
 * - a transport: a `routes.ts` file, `src/web/`, `src/mcp/`.
 * - the database: drizzle-orm, `src/db/` (but `src/db/values.ts`, plain constant lists), and the repos
 *   (`repo.ts`, `*.repo.ts`): the only files allowed to import drizzle-orm or `src/db`.
 * - the composition root: `src/app.ts`, `src/main.ts`, `src/cli.ts`, `src/runtime.ts`, `src/composition.ts`:
 *   it wires every part together, so only the front-door rule applies to it.
 */
const AREA = '^src/modules/([^/]+)/';
const FRONT_DOOR = '^src/modules/[^/]+/index\\.ts$';
const INFRASTRUCTURE = '^src/(lib|db|http|jobs|llm-upstreams|code-runner|agent)/|^src/access/(?!oauth/)';
const TRANSPORT = ['^src/(web|mcp)/', '(^|[/.-])routes\\.ts$'];
const COMPOSITION_ROOT = '^src/(app|main|cli|runtime|composition)\\.ts$';
const REPO = '(^|[/.-])repo\\.ts$';
const DRIZZLE = '(^|/)node_modules/drizzle-orm/';
const DB = '^src/db/';
const DB_VALUES = '^src/db/values\\.ts$';
const FASTIFY = '(^|/)node_modules/(fastify|@fastify/[^/]+|fastify-[^/]+)/';
/** Type-only imports vanish at run time: they never open a way to the database. */
const RUNTIME = ['type-only'];

module.exports = {
  forbidden: [
    {
      name: 'front-door-between-areas',
      comment: "An area imports another area only through that area's index.ts (never its repo, service or routes).",
      severity: 'error',
      from: { path: AREA },
      to: { path: '^src/modules/[^/]+/', pathNot: ['^src/modules/$1/', FRONT_DOOR] },
    },
    {
      name: 'front-door-from-outside',
      comment: "Outside src/modules/, an area is reached only through its index.ts.",
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/modules/' },
      to: { path: '^src/modules/', pathNot: FRONT_DOOR },
    },
    {
      name: 'infrastructure-imports-no-area',
      comment: 'Infrastructure knows no feature area: areas plug into it (registries, injected functions).',
      severity: 'error',
      from: { path: INFRASTRUCTURE },
      to: { path: '^src/modules/' },
    },
    {
      name: 'lib-imports-only-lib',
      comment: 'src/lib holds shared helpers: it imports only src/lib (and node or npm packages).',
      severity: 'error',
      from: { path: '^src/lib/' },
      to: { path: '^src/', pathNot: '^src/lib/' },
    },
    {
      name: 'transport-never-reaches-database',
      comment: 'Routes, pages and the MCP endpoint call services; they never import a repo, src/db or drizzle.',
      severity: 'error',
      from: { path: TRANSPORT },
      to: { path: [DRIZZLE, DB, REPO], pathNot: DB_VALUES, dependencyTypesNot: RUNTIME },
    },
    {
      name: 'database-only-in-repos',
      comment: 'Only repos (and src/db) import drizzle-orm or src/db: what "the database" means for the other rules.',
      severity: 'error',
      from: { path: '^src/', pathNot: [REPO, DB, COMPOSITION_ROOT] },
      to: { path: [DRIZZLE, DB], pathNot: DB_VALUES, dependencyTypesNot: RUNTIME },
    },
    {
      name: 'front-door-hands-out-no-repo',
      comment: "An area's index.ts imports or re-exports nothing from a repo: other parts get services, never rows.",
      severity: 'error',
      from: { path: FRONT_DOOR },
      to: { path: REPO },
    },
    {
      name: 'no-cycle-between-areas',
      comment: 'Areas depend on each other one way: a cycle through two areas is refused.',
      severity: 'error',
      from: { path: AREA },
      to: { circular: true, via: { path: '^src/modules/', pathNot: '^src/modules/$1/' } },
    },
    {
      name: 'service-never-imports-fastify',
      comment: 'Only transports and src/http know fastify; services take plain values and a Logger.',
      severity: 'error',
      from: { path: '^src/', pathNot: [...TRANSPORT, '^src/http/', '^src/access/guard\\.ts$', COMPOSITION_ROOT] },
      to: { path: FASTIFY },
    },
    {
      name: 'layers-call-downward',
      comment: 'Below the transports, nothing imports a transport or the composition root.',
      severity: 'error',
      from: { path: '^src/', pathNot: [...TRANSPORT, COMPOSITION_ROOT, FRONT_DOOR] },
      to: { path: [...TRANSPORT, COMPOSITION_ROOT], dependencyTypesNot: RUNTIME },
    },
    {
      name: 'repo-never-calls-service',
      comment: 'A repo reads and writes rows; it calls no service.',
      severity: 'error',
      from: { path: REPO },
      to: { path: '(^|[/.-])service\\.ts$' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['\\.test\\.ts$', 'test-support\\.ts$', '^src/db/migrations/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
