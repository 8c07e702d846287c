import dc from 'node:diagnostics_channel';
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { GCProfiler } from 'node:v8';

/**
 * Loaded into a process under load (`node --import bench/probe.mjs`, BENCH_PROBE_FILE set) by
 * `npm run bench -- gateway-tail`: what a request waits for inside it. On each SIGUSR2 it appends one JSON line
 * to BENCH_PROBE_FILE with what it saw since the last one, and starts again:
 * - `sendWait`: from undici creating an upstream request to writing its headers (ms, p50 and p99): undici sends a
 *   request on an idle kept-alive connection only in the event loop's check phase, after the turn's other work;
 * - `sendQueue`: how many other upstream requests were created while one waited to be written (p50, p99): the
 *   requests of the same clump whose admission it waited for (a `node:http` relay writes each on the next tick);
 * - `loopDelay`: how late a 1 ms timer ran (ms, p99 and max);
 * - `gc`: pauses (count, total and longest, ms);
 * - `young`: young-generation collections (scavenges): how many, the bytes they kept in the young generation
 *   (survivors, copied) and the bytes they promoted to the old one (its growth across each), summed. What a
 *   scavenge copies is what it costs; what it promotes costs again in the next full collection.
 * Diagnostics only: nothing of the service loads it.
 */
const out = process.env.BENCH_PROBE_FILE;
const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
let pauses = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) pauses.push(entry.duration);
}).observe({ entryTypes: ['gc'] });
let gcProfiler = new GCProfiler();
gcProfiler.start();
const created = new WeakMap();
let waits = [];
let ahead = [];
let creates = 0;
dc.subscribe('undici:request:create', ({ request }) => created.set(request, { at: performance.now(), n: creates++ }));
dc.subscribe('undici:client:sendHeaders', ({ request }) => {
  const made = created.get(request);
  if (made === undefined) return;
  waits.push(performance.now() - made.at);
  ahead.push(creates - made.n - 1);
});

/** A space's bytes in use in a GCProfiler reading. */
const used = (reading, space) => reading.heapSpaceStatistics.find((s) => s.spaceName === space)?.spaceUsedSize ?? 0;

/** The scavenges since the profiler started: count, survivors and promoted bytes, summed. */
function young(profiler) {
  const sum = { scavenges: 0, survived: 0, promoted: 0 };
  for (const gc of profiler.stop().statistics) {
    if (gc.gcType !== 'Scavenge') continue;
    sum.scavenges++;
    sum.survived += used(gc.afterGC, 'new_space');
    sum.promoted += Math.max(0, used(gc.afterGC, 'old_space') - used(gc.beforeGC, 'old_space'));
  }
  return sum;
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
process.on('SIGUSR2', () => {
  waits.sort((a, b) => a - b);
  ahead.sort((a, b) => a - b);
  const line = {
    sendWait: { p50: pct(waits, 50), p99: pct(waits, 99), n: waits.length },
    sendQueue: { p50: pct(ahead, 50), p99: pct(ahead, 99) },
    loopDelay: { p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 },
    gc: { count: pauses.length, total: pauses.reduce((a, b) => a + b, 0), longest: Math.max(0, ...pauses) },
    young: young(gcProfiler),
  };
  gcProfiler = new GCProfiler();
  gcProfiler.start();
  if (out) appendFileSync(out, `${JSON.stringify(line)}\n`);
  waits = [];
  ahead = [];
  pauses = [];
  delay.reset();
});
