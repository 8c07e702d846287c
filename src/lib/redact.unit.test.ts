import { describe, expect, it } from 'vitest';
import { REDACTED, redactSecrets, redactUrl } from './redact.ts';

describe('redactSecrets', () => {
  const secrets = {
    pat: 'pat_AbCdEfGhIjKlMnOpQrStUvWxYz012345-_ab',
    session: 'sess_AbCdEfGhIjKlMnOpQrStUvWxYz012345',
    jwt: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlX2hlcmU',
    github: 'ghp_0123456789abcdefghijABCDEFGHIJ',
    githubPat: 'github_pat_11ABCDEFG0123456789_abcdefghijklmnop',
    slack: 'xoxb-123456789012-abcdefghijkl',
    google: 'ya29.a0AfH6SMBxxxxxxxxxxxxxxxxxxxxxxx',
    openai: 'sk-proj-abcdefghijklmnopqrstuvwxyz',
    anthropic: 'sk-ant-abcdefghijklmnopqrstuvwxyz0123',
    aws: 'AKIAIOSFODNN7EXAMPLE',
    bearer: 'Bearer abcdefghijklmnopqrstuvwxyz',
  };

  for (const [kind, secret] of Object.entries(secrets)) {
    it(`replaces a ${kind} token, in text and in a URL query`, () => {
      expect(redactSecrets(`before ${secret} after`)).toBe(`before ${REDACTED} after`);
      if (kind === 'bearer') return; // a header value, never a query parameter
      expect(redactSecrets(`/callback?token=${secret}&x=1`)).toBe(`/callback?token=${REDACTED}&x=1`);
    });
  }

  it('replaces every occurrence, several kinds in one text', () => {
    const text = Object.values(secrets).join(' | ');
    const out = redactSecrets(text);
    for (const secret of Object.values(secrets)) expect(out).not.toContain(secret.slice(-10));
    expect(out.split(REDACTED)).toHaveLength(Object.keys(secrets).length + 1);
  });

  it('keeps ordinary text, short prefixes and identifiers alone', () => {
    for (const text of [
      'The meeting is at 10:00 in room 4.',
      'pat_short and sess_ are words here',
      'acc_AbCdEfGhIjKlMnOpQrStUv tok_AbCdEfGhIjKlMnOpQrStUv req_AbCdEfGhIjKlMnOpQrStUv',
      'Bearer token',
      'task-123 sk-1',
    ]) {
      expect(redactSecrets(text)).toBe(text);
    }
  });
});

describe('redactUrl', () => {
  it('replaces the values of code, state and other credential parameters, whatever they look like', () => {
    expect(redactUrl('/api/v1/connections/callback?code=abc123&state=ost_xyz&x=1')).toBe(
      `/api/v1/connections/callback?code=${REDACTED}&state=${REDACTED}&x=1`,
    );
    expect(redactUrl('/oauth/authorize?client_id=app_1&STATE=s&code_challenge=ch&redirect_uri=https%3A%2F%2Fa')).toBe(
      `/oauth/authorize?client_id=app_1&STATE=${REDACTED}&code_challenge=ch&redirect_uri=https%3A%2F%2Fa`,
    );
    expect(redactUrl('/cb?%63ode=zz&refresh_token=r&client_secret=s&flag')).toBe(
      `/cb?%63ode=${REDACTED}&refresh_token=${REDACTED}&client_secret=${REDACTED}&flag`,
    );
    expect(redactUrl('/healthz')).toBe('/healthz');
    expect(redactUrl('/x?q=%E0%A4%A&code=1')).toBe(`/x?q=%E0%A4%A&code=${REDACTED}`);
    expect(redactUrl('/x?q=pat_AbCdEfGhIjKlMnOpQrStUvWxYz012345')).toBe(`/x?q=${REDACTED}`);
  });
});
