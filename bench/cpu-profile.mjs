import { busySamples, loadProfile, packageOf } from './profile-lib.mjs';

/**
 * What a CPU profile of a benchmark (BENCH_PROFILE) spent, per request, by package: `node bench/cpu-profile.mjs
 * <file.cpuprofile> <requests> [app file]`. Counted from the process's first upstream call (undici's `dispatch`
 * on the stack: start-up, its database work and readiness checks left out), idle time left out; `requests` is
 * how many it served from then on (a benchmark prints its throughput; count its warm-up too). Each sample stands
 * for the time since the one before, so a system call's share includes the time the process waited in it for a
 * core: on a shared machine it reads high. "app" is the service's own code; the functions of `app file` (default
 * dist/main.js, the bundle `npm start` runs) are listed after the packages. Plain JavaScript: runs with node.
 * bench/flamegraph.mjs draws the same samples as a flame graph.
 */
const [file, requestsArg, appFile = 'dist/main.js'] = process.argv.slice(2);
const requests = Number(requestsArg);
if (!file || !(requests > 0)) {
  console.error('usage: node bench/cpu-profile.mjs <file.cpuprofile> <requests> [app file]');
  process.exit(2);
}
const loaded = loadProfile(file);

const byPackage = new Map();
const byAppFunction = new Map();
let busy = 0;
let samples = 0;
const add = (map, key, us) => map.set(key, (map.get(key) ?? 0) + us);
for (const [id, us] of busySamples(loaded)) {
  const frame = loaded.frames.get(id);
  busy += us;
  samples++;
  add(byPackage, packageOf(frame), us);
  if (frame.url.endsWith(appFile))
    add(byAppFunction, `${frame.functionName || '(anonymous)'}:${frame.lineNumber + 1}`, us);
}
const perRequest = (us) => (us / requests).toFixed(1).padStart(7);
const top = (map, n) => [...map].sort((a, b) => b[1] - a[1]).slice(0, n);
console.log(`${perRequest(busy)} µs per request in all (${samples} samples)`);
for (const [name, count] of top(byPackage, 30)) console.log(`${perRequest(count)}  ${name}`);
console.log(`-- functions of ${appFile}`);
for (const [name, count] of top(byAppFunction, 25)) console.log(`${perRequest(count)}  ${name}`);
