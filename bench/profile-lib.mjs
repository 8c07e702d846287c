import { readFileSync } from 'node:fs';

/**
 * Reading a benchmark's CPU profile (BENCH_PROFILE, a V8 `.cpuprofile`), shared by bench/cpu-profile.mjs (µs per
 * request by package) and bench/flamegraph.mjs (an SVG flame graph). Plain JavaScript: runs with node.
 */

/** A profile's call tree: each node's frame and parent, and its samples with the time each stands for. */
export function loadProfile(file) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const parents = new Map();
  for (const n of profile.nodes) for (const child of n.children ?? []) parents.set(child, n.id);
  return { profile, frames, parents };
}

/** The frames of a node's stack, outermost first. */
export function stackOf({ frames, parents }, id) {
  const stack = [];
  for (let at = id; at !== undefined; at = parents.get(at)) stack.push(frames.get(at));
  return stack.reverse();
}

/**
 * The busy samples from the process's first upstream call on (undici's `dispatch` on the stack: start-up, its
 * database work and readiness checks left out), idle ones left out: [node id, µs]. Each sample stands for the
 * time since the one before, so a system call's share includes the time the process waited in it for a core.
 */
export function* busySamples(loaded) {
  const { profile, frames, parents } = loaded;
  const inUpstreamCall = (id) => {
    for (let at = id; at !== undefined; at = parents.get(at)) {
      const frame = frames.get(at);
      if (frame.functionName === 'dispatch' && frame.url.includes('/undici/')) return true;
    }
    return false;
  };
  let started = false;
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    started ||= inUpstreamCall(id);
    if (!started || frames.get(id).functionName === '(idle)') continue;
    yield [id, profile.timeDeltas[i] ?? 0];
  }
}

/** Where a frame's own time goes: a package, a Node module, V8's own work, a native function, or "app". */
export function packageOf(frame) {
  const pkg = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(frame.url);
  if (pkg) return pkg[1];
  if (frame.url.startsWith('node:')) return frame.url.startsWith('node:internal/') ? 'node:internal' : frame.url;
  if (!frame.url) return frame.functionName.startsWith('(') ? frame.functionName : `native ${frame.functionName}`;
  return 'app';
}
