/**
 * The most this process's memory grew, above what it was before, while `work` ran: `process.memoryUsage()`
 * sampled every 10 ms (and once at the end), in bytes. RSS counts everything (heap, buffers, PGlite's memory);
 * external and arrayBuffers are where inflated bytes land.
 */
export async function peakGrowth(
  work: () => Promise<unknown>,
): Promise<{ rss: number; external: number; arrayBuffers: number }> {
  const before = process.memoryUsage();
  const peak = { rss: 0, external: 0, arrayBuffers: 0 };
  const sample = () => {
    const now = process.memoryUsage();
    peak.rss = Math.max(peak.rss, now.rss - before.rss);
    peak.external = Math.max(peak.external, now.external - before.external);
    peak.arrayBuffers = Math.max(peak.arrayBuffers, now.arrayBuffers - before.arrayBuffers);
  };
  const timer = setInterval(sample, 10);
  try {
    await work();
  } finally {
    clearInterval(timer);
    sample();
  }
  return peak;
}
