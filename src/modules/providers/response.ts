import type { ToolDefinition } from './definition.ts';
import { getPath, parsePath, pickPaths } from './json-path.ts';

/**
 * From a provider's answer to what a tool returns: the list and fields the tool keeps, long strings cut,
 * and the whole held under a size cap. What was cut is always said (`truncated`, `omittedItems`, a marker
 * at the end of a string) so an agent knows to narrow its question instead of trusting a partial answer.
 */

type Shaping = Pick<ToolDefinition, 'response'>;

export interface ShapedList {
  items: unknown[];
  truncated?: true;
  omittedItems?: number;
  [kept: string]: unknown;
}

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v) ?? '', 'utf8');

function cutString(s: string, max: number): string {
  if (s.length <= max) return s;
  return `${s.slice(0, max)}…[truncated ${s.length - max} characters]`;
}

function cutStrings(value: unknown, max: number): unknown {
  if (typeof value === 'string') return cutString(value, max);
  if (Array.isArray(value)) return value.map((v) => cutStrings(v, max));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cutStrings(v, max)]));
  }
  return value;
}

/** Replaces the values at `path` (wildcards allowed) by `fn(value)`, in place. */
function updateAt(value: unknown, path: string, fn: (v: unknown) => unknown): void {
  const segments = parsePath(path);
  const visit = (node: unknown, i: number): void => {
    const seg = segments[i];
    if (!seg || node === null || typeof node !== 'object') return;
    const last = i === segments.length - 1;
    if ('each' in seg || 'index' in seg) {
      if (!Array.isArray(node)) return;
      const indices = 'each' in seg ? node.map((_, n) => n) : [seg.index];
      for (const n of indices) {
        if (n >= node.length) continue;
        if (last) node[n] = fn(node[n]);
        else visit(node[n], i + 1);
      }
      return;
    }
    if (Array.isArray(node) || !Object.hasOwn(node, seg.key)) return;
    const obj = node as Record<string, unknown>;
    if (last) obj[seg.key] = fn(obj[seg.key]);
    else visit(obj[seg.key], i + 1);
  };
  visit(value, 0);
}

function decodeBase64Url(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  const text = Buffer.from(v, 'base64url').toString('utf8');
  // Binary parts (images, archives) are not text: leave them out rather than pass mojibake on.
  return text.includes('\uFFFD') ? '[binary content omitted]' : text;
}

/** Joins the answers of several pages: the lists at `listPath` (or top-level arrays) concatenated. */
export function mergePages(tool: Shaping, pages: readonly unknown[]): unknown {
  if (pages.length <= 1) return pages[0];
  const listPath = tool.response.listPath;
  if (!listPath) {
    return pages.every(Array.isArray) ? (pages as unknown[][]).flat() : pages[pages.length - 1];
  }
  const all = pages.flatMap((p) => {
    const list = getPath(p, listPath);
    return Array.isArray(list) ? list : [];
  });
  // The last page's other fields (cursors, totals) describe where the walk stopped.
  const merged = structuredClone(pages[pages.length - 1]);
  const segments = parsePath(listPath);
  let node: unknown = merged;
  for (const [n, seg] of segments.entries()) {
    if (!node || typeof node !== 'object') return { items: all };
    const key = 'key' in seg ? seg.key : 'index' in seg ? seg.index : undefined;
    if (key === undefined) return { items: all };
    if (n === segments.length - 1) (node as Record<string | number, unknown>)[key] = all;
    else node = (node as Record<string | number, unknown>)[key];
  }
  return merged;
}

/**
 * Shapes a provider answer for the caller: `{items, ...kept}` when the tool names a list (or the answer is
 * an array), else the object
 * (its `fields` only, when given). Caps: `maxItems`, `maxStringLength` per string, `maxBytes` for the
 * whole, dropping trailing items first and, if one item alone is too big, answering a cut JSON preview.
 */
export function shapeToolResponse(tool: Shaping, answer: unknown): unknown {
  const r = tool.response;
  if (typeof answer === 'string' || r.format === 'text') {
    const text = typeof answer === 'string' ? answer : JSON.stringify(answer);
    return cutString(text, Math.min(r.maxBytes, r.maxStringLength * 20));
  }
  let value = answer;
  if (r.decodeBase64.length && value && typeof value === 'object') {
    value = structuredClone(value);
    for (const path of r.decodeBase64) updateAt(value, path, decodeBase64Url);
  }

  let shaped: unknown;
  let omitted = 0;
  // A top-level array (GitHub's lists) is a list without a path.
  if (r.listPath || Array.isArray(value)) {
    const list = r.listPath ? getPath(value, r.listPath) : value;
    let items = Array.isArray(list) ? list : [];
    if (r.maxItems !== undefined && items.length > r.maxItems) {
      omitted = items.length - r.maxItems;
      items = items.slice(0, r.maxItems);
    }
    const fields = r.fields;
    if (fields) items = items.map((item) => pickPaths(item, fields));
    const kept = r.keep.length && !Array.isArray(value) ? (pickPaths(value, r.keep) as Record<string, unknown>) : {};
    shaped = { ...kept, items };
  } else {
    shaped = r.fields ? pickPaths(value, r.fields) : value;
  }
  shaped = cutStrings(shaped, r.maxStringLength);
  return capSize(shaped, omitted, r.maxBytes);
}

function capSize(shaped: unknown, omittedAlready: number, maxBytes: number): unknown {
  const isList = !!shaped && typeof shaped === 'object' && Array.isArray((shaped as ShapedList).items);
  const mark = (list: ShapedList, kept: unknown[], omitted: number): ShapedList =>
    omitted > 0 ? { ...list, items: kept, truncated: true, omittedItems: omitted } : { ...list, items: kept };
  if (isList) {
    const list = shaped as ShapedList;
    const full = mark(list, list.items, omittedAlready);
    if (bytes(full) <= maxBytes) return full;
    // Largest prefix of items that fits, by binary search (each probe serializes once).
    let lo = 0;
    let hi = list.items.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      const probe = mark(list, list.items.slice(0, mid), omittedAlready + list.items.length - mid);
      if (bytes(probe) <= maxBytes) lo = mid;
      else hi = mid - 1;
    }
    if (lo > 0) return mark(list, list.items.slice(0, lo), omittedAlready + list.items.length - lo);
  } else if (bytes(shaped) <= maxBytes) {
    return shaped;
  }
  const json = Buffer.from(JSON.stringify(shaped) ?? '', 'utf8');
  const room = Math.max(0, maxBytes - 200);
  // Cut on a byte budget; a character split at the edge is dropped rather than shown broken.
  const head = json
    .subarray(0, room)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
  return { truncated: true, preview: `${head}…[truncated ${json.length - room} bytes]` };
}
