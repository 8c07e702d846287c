import { writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { busySamples, loadProfile, packageOf } from './profile-lib.mjs';

/**
 * A benchmark's CPU profile (BENCH_PROFILE) as an SVG flame graph: `node bench/flamegraph.mjs
 * <file.cpuprofile> <out.svg> [requests|-] [title]`. The same samples as bench/cpu-profile.mjs (from the first
 * upstream call on, idle left out): each box is a function on the stack, as wide as the time spent in it and in
 * what it called, its callers below it; colours say whose code it is (the service's own, fastify, undici, zod,
 * the database driver, Node, V8's garbage collector). With `requests` (how many were served from the first
 * upstream call on), each box's tooltip gives µs per request too; `title` heads the graph (default: the profile's
 * file name). Open the SVG in a browser.
 * Plain JavaScript: runs with node.
 */
const [file, out, requestsArg, title = basename(file)] = process.argv.slice(2);
const requests = requestsArg === undefined || requestsArg === '-' ? undefined : Number(requestsArg);
if (!file || !out || (requests !== undefined && !(requests > 0))) {
  console.error('usage: node bench/flamegraph.mjs <file.cpuprofile> <out.svg> [requests|-] [title]');
  process.exit(2);
}
const loaded = loadProfile(file);
const { profile, frames } = loaded;

// Time per node (its own samples), then totals up the tree.
const self = new Map();
let busy = 0;
for (const [id, us] of busySamples(loaded)) {
  self.set(id, (self.get(id) ?? 0) + us);
  busy += us;
}
const children = new Map(profile.nodes.map((n) => [n.id, n.children ?? []]));
const total = new Map();
const sum = (id) => {
  let t = self.get(id) ?? 0;
  for (const child of children.get(id)) t += sum(child);
  total.set(id, t);
  return t;
};
const rootId = profile.nodes[0].id;
sum(rootId);

const WIDTH = 1200;
const ROW = 16;
const MIN_PX = 0.3;
const boxes = [];
let depthMax = 0;
const place = (id, x, depth) => {
  const w = ((total.get(id) ?? 0) / busy) * WIDTH;
  if (w < MIN_PX) return;
  if (depth > 0) boxes.push({ id, x, w, depth });
  depthMax = Math.max(depthMax, depth);
  let at = x;
  const kids = children.get(id).filter((c) => (total.get(c) ?? 0) > 0);
  kids.sort((a, b) => label(frames.get(a)).localeCompare(label(frames.get(b))));
  for (const child of kids) {
    place(child, at, depth + 1);
    at += ((total.get(child) ?? 0) / busy) * WIDTH;
  }
};

function label(frame) {
  return frame.functionName || '(anonymous)';
}

/** A colour per whose code it is. */
function colour(frame) {
  const pkg = packageOf(frame);
  if (pkg === 'app') return '#f29e4c';
  if (pkg === '(garbage collector)') return '#e05d5d';
  if (pkg === '(program)' || pkg === '(root)') return '#c8c8c8';
  if (pkg.startsWith('node:')) return '#a9b4c2';
  if (pkg.startsWith('native ')) return '#e8d56f';
  const fixed = { fastify: '#6fa8dc', undici: '#b48ad6', zod: '#7cc47c', pg: '#4fb3a9', 'drizzle-orm': '#4fb3a9' };
  if (fixed[pkg]) return fixed[pkg];
  let h = 0;
  for (const c of pkg) h = (h * 31 + c.charCodeAt(0)) % 360;
  return `hsl(${h}, 45%, 70%)`;
}

const xml = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
place(rootId, 0, 0);
const height = (depthMax + 1) * ROW + 40;
const svg = [
  `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" font-family="monospace" font-size="11">`,
  `<rect width="100%" height="100%" fill="#fafafa"/>`,
  `<text x="6" y="16" font-size="13">${xml(
    `${title}: ${(busy / 1000).toFixed(0)} ms busy` +
      (requests ? `, ${(busy / requests).toFixed(0)} µs a request` : '') +
      '; hover a box for its figures',
  )}</text>`,
];
for (const { id, x, w, depth } of boxes) {
  const frame = frames.get(id);
  const y = height - depth * ROW - 4;
  const t = total.get(id) ?? 0;
  const where = frame.url
    ? ` ${frame.url.replace(/.*node_modules\//, '').replace(/^file:\/\/.*\//, '')}:${frame.lineNumber + 1}`
    : '';
  const figures =
    `${(t / 1000).toFixed(1)} ms, ${((t / busy) * 100).toFixed(1)}%` +
    (requests ? `, ${(t / requests).toFixed(1)} µs a request` : '');
  const name = label(frame);
  const chars = Math.floor((w - 4) / 6.6);
  const text = chars >= 3 ? (name.length <= chars ? name : `${name.slice(0, chars - 1)}…`) : '';
  svg.push(
    `<g><title>${xml(`${name}${where} (${packageOf(frame)}): ${figures}`)}</title>` +
      `<rect x="${x.toFixed(1)}" y="${y - ROW + 1}" width="${Math.max(0.5, w - 0.5).toFixed(1)}" height="${ROW - 1}" fill="${colour(frame)}"/>` +
      (text ? `<text x="${(x + 2).toFixed(1)}" y="${y - 4}">${xml(text)}</text>` : '') +
      '</g>',
  );
}
svg.push('</svg>');
writeFileSync(out, `${svg.join('\n')}\n`);
console.log(`${out}: ${boxes.length} boxes, ${(busy / 1000).toFixed(0)} ms busy`);
