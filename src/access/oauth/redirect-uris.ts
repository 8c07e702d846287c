/** Redirect URIs: https, or http on a loopback host (native apps may also use their own scheme); no fragment. */
export function redirectUriProblem(uri: string, opts: { allowCustomScheme: boolean }): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `${uri} is not a URL`;
  }
  if (url.hash || uri.includes('#')) return `${uri} must not contain a fragment`;
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:') {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)) return undefined;
    return `${uri} must use https (http is allowed on a loopback host only)`;
  }
  if (
    opts.allowCustomScheme &&
    /^[a-z][a-z0-9+.-]*:$/.test(url.protocol) &&
    !['javascript:', 'data:', 'file:', 'vbscript:'].includes(url.protocol)
  ) {
    return undefined;
  }
  return `${uri} must use https (http is allowed on a loopback host only)`;
}
