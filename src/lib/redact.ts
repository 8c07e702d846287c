/**
 * Redaction of bearer secrets from logs and from any text we hand back (agent output, tool results). Covers
 * our own `pat_`/`sess_` tokens, JWTs, and the token shapes of common providers.
 */
const PATTERNS: RegExp[] = [
  /\b(?:pat|sess)_[A-Za-z0-9_-]{16,}/g, // ours
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, // JWT
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g, // GitHub
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\bxox[abposr]-[A-Za-z0-9-]{10,}/g, // Slack
  /\bya29\.[A-Za-z0-9_-]{20,}/g, // Google access token
  /\b1\/\/[A-Za-z0-9_-]{20,}/g, // Google refresh token
  /\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}/g, // OpenAI / Anthropic keys
  /\bsecret_[A-Za-z0-9]{30,}/g, // Notion
  /\bntn_[A-Za-z0-9]{30,}/g,
  /\blin_(?:api|oauth)_[A-Za-z0-9]{20,}/g, // Linear
  /\bAKIA[0-9A-Z]{16}\b/g, // AWS access key id
  /\bBearer\s+[A-Za-z0-9._~+/-]{16,}=*/g,
];

export const REDACTED = '[REDACTED]';

export function redactSecrets(text: string): string {
  let out = text;
  for (const re of PATTERNS) out = out.replace(re, REDACTED);
  return out;
}

/**
 * Query parameters whose values are credentials whatever they look like: an OAuth authorization `code` and
 * `state` (a provider's callback, our authorization endpoint), tokens and secrets sent in a URL.
 */
const SECRET_QUERY_PARAMS = new Set([
  'code',
  'state',
  'code_verifier',
  'access_token',
  'refresh_token',
  'id_token',
  'token',
  'client_secret',
  // WhatsApp's webhook handshake sends the channel's verify token in the query.
  'hub.verify_token',
]);

/** A request URL for the logs: the values of credential parameters replaced, then `redactSecrets`. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return redactSecrets(url);
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 0) return pair;
      let name = pair.slice(0, eq);
      try {
        name = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        // A malformed escape: compare the name as sent.
      }
      return SECRET_QUERY_PARAMS.has(name.toLowerCase()) ? `${pair.slice(0, eq)}=${REDACTED}` : pair;
    })
    .join('&');
  return redactSecrets(`${url.slice(0, q)}?${query}`);
}
