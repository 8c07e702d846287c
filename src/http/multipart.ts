import { PayloadTooLargeError } from '../lib/errors.ts';

/**
 * Which limit a multipart upload ran past, from what reading it threw: `file` when the file is larger than the
 * route takes (@fastify/multipart's `FST_REQ_FILE_TOO_LARGE`, or our PayloadTooLargeError), `form` for any other
 * 413 (too many parts, files or fields); undefined when it was not too large (a malformed body, say).
 */
export function uploadTooLarge(err: unknown): 'file' | 'form' | undefined {
  const e = err as { code?: string; statusCode?: number };
  if (e.code === 'FST_REQ_FILE_TOO_LARGE' || err instanceof PayloadTooLargeError) return 'file';
  if (e.statusCode === 413) return 'form';
  return undefined;
}
