import { WebSocket } from 'undici';
import { freePort } from '../test/server-process.ts';
import { type BenchResult, signupWithPat, sleep, startBenchServer, startChild, stopChild } from './lib.ts';
import { chatBody, gatewayEnv, load } from './llm-gateway.ts';

/**
 * Memory the LLM gateway allocates per request, beside the bare relay (bench/bare-proxy.ts) under the same load:
 * the instant upstream, 50 concurrent JSON requests (streamed ones with BENCH_MODE=stream), on the database the
 * run selects (PostgreSQL with BENCH_DATABASE_URL). V8's sampling heap profiler, read through the inspector,
 * counts what is allocated while the measurement runs, objects the garbage collector already took included: the
 * figure that decides how often the young generation is collected, and unlike CPU time it barely moves with the
 * machine's load (two runs agree within 0.5%). The gateway's largest allocation sites are listed under the
 * table. BENCH_DURATION_MS (default 3000) is the measurement. Then the heap a request in flight holds
 * (liveHeapPerRequest), with IN_FLIGHT requests waiting on the 200 ms upstream, in all and by kind of object.
 */
const SITES = 12;
const STREAM = process.env.BENCH_MODE === 'stream';
/** Requests in flight when the live heap is read, and when: in the measurement, after load's warm-up. */
const IN_FLIGHT = 200;
const LIVE_AT_MS = 2500;

interface Allocations {
  bytes: number;
  bySite: Map<string, number>;
}

/** The parts of V8's heap snapshot format read here. */
interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** A session with the inspector of the process listening on `port`: commands sent, their results awaited. */
async function inspector(port: number) {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{
    webSocketDebuggerUrl: string;
  }>;
  const url = targets[0]?.webSocketDebuggerUrl;
  if (!url) throw new Error(`no inspector target on port ${port}`);
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.addEventListener('open', resolve, { once: true });
    ws.addEventListener('error', reject, { once: true });
  });
  let id = 0;
  const waiting = new Map<number, (result: unknown) => void>();
  const chunks: string[] = [];
  ws.addEventListener('message', (e) => {
    const msg = JSON.parse(String(e.data)) as { id?: number; result?: unknown; method?: string; params?: unknown };
    if (msg.id !== undefined) waiting.get(msg.id)?.(msg.result);
    else if (msg.method === 'HeapProfiler.addHeapSnapshotChunk') chunks.push((msg.params as { chunk: string }).chunk);
  });
  return {
    /** A heap snapshot (after a full collection), parsed. */
    async snapshot(): Promise<HeapSnapshot> {
      chunks.length = 0;
      await this.send('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
      return JSON.parse(chunks.join('')) as HeapSnapshot;
    },
    send: (method: string, params: object = {}) =>
      new Promise<unknown>((resolve) => {
        waiting.set(++id, resolve);
        ws.send(JSON.stringify({ id, method, params }));
      }),
    close: () => ws.close(),
  };
}

/** What the process listening for the inspector on `port` allocates while `during` runs, by allocation site. */
async function sampleAllocations<T>(
  port: number,
  during: (start: () => Promise<void>) => Promise<T>,
): Promise<{ allocations: Allocations; result: T }> {
  const { send, close } = await inspector(port);
  try {
    await send('HeapProfiler.enable');
    const result = await during(async () => {
      await send('HeapProfiler.startSampling', {
        samplingInterval: 1024,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    });
    const { profile } = (await send('HeapProfiler.stopSampling')) as { profile: { head: ProfileNode } };
    const bySite = new Map<string, number>();
    let bytes = 0;
    const walk = (node: ProfileNode) => {
      const f = node.callFrame;
      const where = f.url.replace(/.*node_modules\//, '').replace(/.*\/dist\//, 'dist/');
      const site = `${f.functionName || '(anonymous)'} ${where}${where ? `:${f.lineNumber + 1}` : ''}`;
      bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
      bytes += node.selfSize;
      for (const child of node.children) walk(child);
    };
    walk(profile.head);
    return { allocations: { bytes, bySite }, result };
  } finally {
    close();
  }
}

/** The heap a request in flight holds, in all and by kind of object (bytes per request). */
interface LiveHeap {
  bytes: number;
  byKind: Map<string, number>;
}

/**
 * The heap a request in flight holds: the heap in use after a full collection (a heap snapshot's, compiled code
 * left out) while IN_FLIGHT requests wait on the 200 ms upstream, less the same once they are done and their
 * connections closed, per request (its client connection included), in all and by kind (an object's
 * constructor, a closure's function, a string, an array...). What every young-generation collection copies while
 * requests wait on their upstream, and what a gateway holding many long streams holds for each.
 */
async function liveHeapPerRequest(port: number, during: () => Promise<unknown>): Promise<LiveHeap> {
  const session = await inspector(port);
  const { send, close } = session;
  // Compiled code is left out: the load compiles some between the two readings, and no request holds it.
  const used = async () => {
    const snap = await session.snapshot();
    const fields = snap.snapshot.meta.node_fields;
    const [types] = snap.snapshot.meta.node_types;
    const type = fields.indexOf('type');
    const name = fields.indexOf('name');
    const size = fields.indexOf('self_size');
    const byKind = new Map<string, number>();
    for (let i = 0; i < snap.nodes.length; i += fields.length) {
      const kind = types[snap.nodes[i + type] as number] as string;
      if (kind === 'code') continue;
      const self = snap.nodes[i + size] as number;
      // Objects and closures by their constructor or function; strings, arrays and the rest by their kind.
      const key =
        kind === 'object' || kind === 'closure'
          ? `${kind} ${String(snap.strings[snap.nodes[i + name] as number]).slice(0, 40) || '(anonymous)'}`
          : kind;
      byKind.set(key, (byKind.get(key) ?? 0) + self);
    }
    return byKind;
  };
  try {
    await send('HeapProfiler.enable');
    const running = during();
    await sleep(LIVE_AT_MS); // after the warm-up, the requests all in flight
    const busy = await used();
    await running;
    await sleep(500);
    const idle = await used();
    const byKind = new Map<string, number>();
    for (const key of new Set([...busy.keys(), ...idle.keys()])) {
      byKind.set(key, ((busy.get(key) ?? 0) - (idle.get(key) ?? 0)) / IN_FLIGHT);
    }
    let bytes = 0;
    for (const held of byKind.values()) bytes += held;
    return { bytes, byKind };
  } finally {
    close();
  }
}

export async function gatewayAllocBenchmark(): Promise<BenchResult> {
  const upstream = await startChild('bench/llm-upstream.js');
  const barePort = await freePort();
  const bare = await startChild('bench/bare-proxy.ts', [upstream.line], [`--inspect=127.0.0.1:${barePort}`]);
  const gwPort = await freePort();
  const server = await startBenchServer(gatewayEnv(upstream.line), [`--inspect=127.0.0.1:${gwPort}`]);
  try {
    const pat = await signupWithPat(server.url, ['llm-all']);
    const body = chatBody('bench-instant', STREAM);
    const perRequest = async (
      port: number,
      pid: number | undefined,
      origin: string,
      path: string,
      headers: Record<string, string>,
    ) => {
      const { allocations, result } = await sampleAllocations(port, (start) =>
        load(origin, path, headers, body, 50, STREAM, pid, start),
      );
      return { bytes: allocations.bytes / result.requests, allocations, requests: result.requests };
    };
    const relay = await perRequest(barePort, bare.child.pid, bare.line, '/chat/completions', {});
    const gw = await perRequest(gwPort, server.child.pid, new URL(server.url).origin, '/api/v1/chat/completions', {
      authorization: `Bearer ${pat}`,
    });
    // The live heap, with the 200 ms upstream so that IN_FLIGHT requests wait on it at once.
    const slowBody = chatBody('bench-slow', STREAM);
    const live = (
      port: number,
      pid: number | undefined,
      origin: string,
      path: string,
      headers: Record<string, string>,
    ) => liveHeapPerRequest(port, () => load(origin, path, headers, slowBody, IN_FLIGHT, STREAM, pid));
    const relayLive = await live(barePort, bare.child.pid, bare.line, '/chat/completions', {});
    const gwLive = await live(gwPort, server.child.pid, new URL(server.url).origin, '/api/v1/chat/completions', {
      authorization: `Bearer ${pat}`,
    });
    const top = [...gw.allocations.bySite]
      .sort((a, b) => b[1] - a[1])
      .slice(0, SITES)
      .map(([site, bytes]) => `${Math.round(bytes / gw.requests).toLocaleString('en-US')} B  ${site}`);
    // What a request in flight holds, by kind: the gateway's largest, each beside the relay's.
    const held = [...gwLive.byKind]
      .sort((a, b) => b[1] - a[1])
      .slice(0, SITES)
      .map(
        ([kind, bytes]) => `${Math.round(bytes)} B (relay ${Math.round(relayLive.byKind.get(kind) ?? 0)} B)  ${kind}`,
      );
    return {
      title: `LLM gateway: memory allocated per request (instant upstream, 50 concurrent, ${STREAM ? 'streams' : 'JSON'}, ${process.env.BENCH_DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`,
      baseline: 'bare relay',
      figures: [
        { name: 'allocated per request', unit: 'KB', value: gw.bytes / 1024, baseline: relay.bytes / 1024 },
        {
          name: `live heap per request in flight (${IN_FLIGHT}, 200 ms upstream)`,
          unit: 'KB',
          value: gwLive.bytes / 1024,
          baseline: relayLive.bytes / 1024,
        },
      ],
      notes: [
        `${gw.requests.toLocaleString('en-US')} gateway and ${relay.requests.toLocaleString('en-US')} relay requests sampled; the gateway's largest allocation sites (bytes per request, the function that allocated):`,
        ...top,
        `what a request in flight holds, by kind (the gateway's largest, bytes per request):`,
        ...held,
      ],
    };
  } finally {
    await server.stop();
    await stopChild(bare.child);
    await stopChild(upstream.child);
  }
}
