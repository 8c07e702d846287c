/**
 * The small JSON path dialect of provider files: `a.b[0].c`, an optional leading `$`, `[]` or `[*]` for
 * every element of an array, and `['odd.key']` for keys holding dots or other symbols (Microsoft Graph's
 * `@odata.nextLink`). Enough to point into a token response or an API answer; no filters, no recursion.
 */

export type PathSegment = { key: string } | { index: number } | { each: true };

const cache = new Map<string, PathSegment[]>();

/** Parses a path; throws an Error saying where it stops making sense. */
export function parsePath(path: string): PathSegment[] {
  const known = cache.get(path);
  if (known) return known;
  const segments: PathSegment[] = [];
  let i = path.startsWith('$') ? 1 : 0;
  let expectKey = i === 0;
  while (i < path.length) {
    const ch = path[i];
    if (ch === '.') {
      if (expectKey) throw new Error(`invalid path "${path}": unexpected "." at ${i}`);
      expectKey = true;
      i++;
      continue;
    }
    if (ch === '[') {
      const close = path.indexOf(']', i);
      if (close < 0) throw new Error(`invalid path "${path}": "[" without "]"`);
      const inner = path.slice(i + 1, close);
      if (inner === '' || inner === '*') segments.push({ each: true });
      else if (/^\d+$/.test(inner)) segments.push({ index: Number(inner) });
      else if (/^'[^']*'$|^"[^"]*"$/.test(inner)) segments.push({ key: inner.slice(1, -1) });
      else throw new Error(`invalid path "${path}": cannot read "[${inner}]"`);
      i = close + 1;
      expectKey = false;
      continue;
    }
    if (!expectKey && segments.length > 0) throw new Error(`invalid path "${path}": expected "." or "[" at ${i}`);
    const m = /^[A-Za-z0-9_$@-]+/.exec(path.slice(i));
    if (!m) throw new Error(`invalid path "${path}": unexpected "${ch}" at ${i}`);
    segments.push({ key: m[0] });
    i += m[0].length;
    expectKey = false;
  }
  if (expectKey && segments.length > 0) throw new Error(`invalid path "${path}": ends with "."`);
  if (segments.length === 0 && path !== '$') throw new Error(`invalid path "${path}": empty`);
  cache.set(path, segments);
  return segments;
}

export function isValidPath(path: string): boolean {
  try {
    parsePath(path);
    return true;
  } catch {
    return false;
  }
}

function walk(value: unknown, segments: PathSegment[], from: number): unknown {
  let current = value;
  for (let i = from; i < segments.length; i++) {
    const seg = segments[i] as PathSegment;
    if ('each' in seg) {
      if (!Array.isArray(current)) return undefined;
      return current.map((item) => walk(item, segments, i + 1)).filter((v) => v !== undefined);
    }
    if ('index' in seg) {
      if (!Array.isArray(current)) return undefined;
      current = current[seg.index];
    } else {
      if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
      if (!Object.hasOwn(current, seg.key)) return undefined;
      current = (current as Record<string, unknown>)[seg.key];
    }
    if (current === undefined) return undefined;
  }
  return current;
}

/**
 * The value at `path`, or undefined. A `[]` segment answers the array of what each element holds. Given a
 * list of paths (provider files allow one where a value may sit in several places), the first that holds
 * a value other than null wins.
 */
export function getPath(value: unknown, path: string | readonly string[]): unknown {
  if (typeof path === 'string') return walk(value, parsePath(path), 0);
  for (const p of path) {
    const v = walk(value, parsePath(p), 0);
    if (v !== undefined && v !== null) return v;
  }
  return undefined;
}

/** Keeps only the given paths of `value`, in the same nesting (`user.login` keeps `{user: {login}}`). */
export function pickPaths(value: unknown, paths: readonly string[]): unknown {
  if (value === null || typeof value !== 'object') return value;
  let out: unknown;
  for (const path of paths) out = mergeInto(out, value, parsePath(path), 0);
  return out ?? (Array.isArray(value) ? [] : {});
}

function mergeInto(target: unknown, source: unknown, segments: PathSegment[], i: number): unknown {
  if (i === segments.length) return source;
  const seg = segments[i] as PathSegment;
  if ('each' in seg || 'index' in seg) {
    if (!Array.isArray(source)) return target;
    const arr: unknown[] = Array.isArray(target) ? target : [];
    const indices = 'each' in seg ? source.map((_, n) => n) : [seg.index];
    for (const n of indices) {
      if (n >= source.length) continue;
      const merged = mergeInto(arr[n], source[n], segments, i + 1);
      // Every element keeps its place, so several paths into one list stay aligned.
      arr[n] = merged === undefined ? (arr[n] ?? null) : merged;
    }
    return arr;
  }
  if (source === null || typeof source !== 'object' || Array.isArray(source) || !Object.hasOwn(source, seg.key)) {
    return target;
  }
  const obj: Record<string, unknown> =
    target && typeof target === 'object' && !Array.isArray(target) ? (target as Record<string, unknown>) : {};
  const merged = mergeInto(obj[seg.key], (source as Record<string, unknown>)[seg.key], segments, i + 1);
  if (merged !== undefined) obj[seg.key] = merged;
  return obj;
}

/** Sets `value` at a path of keys (no arrays), creating objects on the way; used for body cursors. */
export function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const segments = parsePath(path);
  let current: Record<string, unknown> = target;
  segments.forEach((seg, n) => {
    if (!('key' in seg)) throw new Error(`setPath: "${path}" must hold keys only`);
    if (n === segments.length - 1) {
      current[seg.key] = value;
      return;
    }
    const next = current[seg.key];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) current[seg.key] = {};
    current = current[seg.key] as Record<string, unknown>;
  });
}
