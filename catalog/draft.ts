import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CURATED_DIR,
  type CuratedProvider,
  type CuratedTool,
  deref,
  generateTool,
  HTTP_METHODS,
  type OaOperation,
  type OaParameter,
  type OpenApiDocument,
  shortText,
} from './generator.ts';

/**
 * `npm run providers:draft -- <vendor.json> <description file>`: a first curated file from a full description,
 * for a person to read and trim. The vendor file holds the `source` and `provider` blocks of a curated file and
 * `select` ({max, include, exclude}: regular expressions over `METHOD /path`); the draft takes operations tag by
 * tag in turn (so every area of the API gets some), skips deprecated ones, those needing header parameters and
 * those whose body is only a file upload, names each tool from its operationId and describes it from the
 * operation's summary and description. Tools the generator cannot make are left out.
 */

interface VendorFile {
  source: CuratedProvider['source'];
  provider: CuratedProvider['provider'];
  omitParameters?: string[];
  notRequired?: string[];
  select?: { max?: number; include?: string; exclude?: string; headers?: string[] };
  tools?: CuratedTool[];
}

function snake(s: string): string {
  return s
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toLowerCase();
}

function toolName(method: string, path: string, op: OaOperation): string {
  let name = op.operationId ? snake(op.operationId) : '';
  if (!name) name = snake(`${method} ${path.replace(/\{[^}]+\}/g, 'by_id')}`);
  if (!/^[a-z]/.test(name)) name = `op_${name}`;
  return name.slice(0, 64).replace(/_+$/, '');
}

function describe(label: string, method: string, path: string, op: OaOperation): string {
  const summary = shortText(op.summary, 200)?.replace(/\.$/, '');
  const detail = shortText(op.description, 260);
  let text = summary ? `${summary}.` : '';
  if (detail && (!summary || !detail.toLowerCase().startsWith(summary.toLowerCase()))) text += ` ${detail}`;
  text = text.trim();
  if (text.length < 40) text = `${text} (${label}: ${method} ${path})`.trim();
  return text.slice(0, 600);
}

export async function draft(vendor: VendorFile, doc: OpenApiDocument): Promise<CuratedProvider> {
  const sel = vendor.select ?? {};
  const include = sel.include ? new RegExp(sel.include) : undefined;
  const exclude = sel.exclude ? new RegExp(sel.exclude) : undefined;
  const allowedHeaders = new Set((sel.headers ?? []).map((h) => h.toLowerCase()));
  const byTag = new Map<string, CuratedTool[]>();
  const names = new Set((vendor.tools ?? []).map((t) => t.name));
  for (const [path, item] of Object.entries(doc.paths)) {
    const pathParams = ((item as { parameters?: OaParameter[] }).parameters ?? []).map((p) => deref(doc, p));
    for (const m of HTTP_METHODS) {
      const op = (item as Record<string, OaOperation & { deprecated?: boolean; tags?: string[] }>)[m];
      if (!op || op.deprecated) continue;
      const key = `${m.toUpperCase()} ${path}`;
      if (!/^\/\S*$/.test(path) || (include && !include.test(key)) || exclude?.test(key)) continue;
      if ((vendor.tools ?? []).some((t) => t.operation === key)) continue;
      const params = [...pathParams, ...(op.parameters ?? []).map((p) => deref(doc, p))];
      if (params.some((p) => p.in === 'header' && p.required && !allowedHeaders.has(p.name.toLowerCase()))) continue;
      if (params.some((p) => p.in === 'cookie' && p.required)) continue;
      if (op.requestBody && m !== 'get') {
        const content = deref(doc, op.requestBody).content ?? {};
        const usable = Object.keys(content).some(
          (t) => /^application\/(.+\+)?json/.test(t) || t === 'application/x-www-form-urlencoded',
        );
        if (!usable && deref(doc, op.requestBody).required) continue;
      }
      let name = toolName(m.toUpperCase(), path, op);
      while (names.has(name)) name = `${name.slice(0, 60)}_${names.size % 100}`;
      const tool: CuratedTool = {
        operation: key,
        name,
        description: describe(vendor.provider.label, m.toUpperCase(), path, op),
      };
      try {
        generateTool(doc, tool, vendor.omitParameters, vendor.notRequired);
      } catch {
        continue;
      }
      names.add(name);
      const tag = op.tags?.[0] ?? path.split('/')[1] ?? '';
      const list = byTag.get(tag) ?? [];
      list.push(tool);
      byTag.set(tag, list);
    }
  }
  const tools: CuratedTool[] = [...(vendor.tools ?? [])];
  const max = sel.max ?? 40;
  const queues = [...byTag.values()];
  for (let round = 0; tools.length < max && queues.some((q) => q.length > round); round++) {
    for (const q of queues) {
      const t = q[round];
      if (t && tools.length < max) tools.push(t);
    }
  }
  const out: CuratedProvider = { source: vendor.source, provider: vendor.provider, tools };
  if (vendor.omitParameters) out.omitParameters = vendor.omitParameters;
  if (vendor.notRequired) out.notRequired = vendor.notRequired;
  return out;
}

async function main(): Promise<void> {
  const [vendorPath, descriptionPath] = process.argv.slice(2);
  if (!vendorPath || !descriptionPath) throw new Error('usage: providers:draft -- <vendor.json> <description>');
  const vendor = JSON.parse(readFileSync(vendorPath, 'utf8')) as VendorFile;
  const text = readFileSync(descriptionPath, 'utf8');
  const doc = (
    /\.ya?ml$/.test(descriptionPath) ? (await import('yaml')).parse(text) : JSON.parse(text)
  ) as OpenApiDocument;
  const curated = await draft(vendor, doc);
  const target = join(CURATED_DIR, `${vendor.provider.id}.json`);
  writeFileSync(target, `${JSON.stringify(curated, null, 2)}\n`);
  console.log(`${target}: ${curated.tools.length} tools`);
}

await main();
