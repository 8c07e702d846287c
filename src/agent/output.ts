import { redactSecrets } from '../lib/redact.ts';

/** SPEC §4: use-agent output is truncated to 50 KB. */
export const OUTPUT_LIMIT_BYTES = 50 * 1024;

/** Text that leaves the agent: secrets redacted, then cut to `limit` bytes with a marker saying so. */
export function sanitizeOutput(text: string, limit = OUTPUT_LIMIT_BYTES): { text: string; truncated: boolean } {
  const clean = redactSecrets(text);
  const bytes = Buffer.byteLength(clean, 'utf8');
  if (bytes <= limit) return { text: clean, truncated: false };
  const marker = `\n\n[Output truncated: ${bytes} bytes exceeded the ${limit}-byte limit]`;
  const room = limit - Buffer.byteLength(marker, 'utf8');
  // Cut on a character boundary: decoding a cut buffer drops a split trailing character.
  const head = Buffer.from(clean, 'utf8')
    .subarray(0, room)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return { text: head + marker, truncated: true };
}
