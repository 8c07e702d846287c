import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { authorizeInBrowser, Browser, freePort } from '../e2e/oauth-helpers.ts';

/**
 * The conformance suite's authorization-server scenarios (`conformance authorization`) against a running
 * Switchboard. The authorization-code grant prints an authorization URL and waits for a person to sign in and
 * consent; this registers a public client for the suite's callback, then signs in and consents as a person would
 * (forms, no JavaScript) when the URL appears, and delivers the redirect to the suite's callback server.
 * Usage: authorization.ts <baseUrl> <email> <password> <conformance package spec>; exits with the suite's status.
 */
const [base = '', email = '', password = '', suite = ''] = process.argv.slice(2);

const metadata = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as {
  issuer: string;
  authorization_endpoint: string;
  registration_endpoint: string;
};
const port = await freePort();
const callback = `http://127.0.0.1:${port}/callback`;
const registered = await fetch(metadata.registration_endpoint, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    client_name: 'MCP conformance suite',
    redirect_uris: [callback],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
  }),
});
const client = (await registered.json()) as { client_id?: string };
if (!client.client_id) throw new Error(`client registration failed (${registered.status}): ${JSON.stringify(client)}`);

const child = spawn(
  'npx',
  [
    ...['-y', '-p', 'node@22', '-p', suite, '--', 'conformance', 'authorization'],
    ...['--url', metadata.issuer, '--client-id', client.client_id, '--port', String(port)],
    ...['--resource', `${base}/mcp`],
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
let driving: Promise<void> | undefined;
createInterface({ input: child.stdout }).on('line', (line) => {
  process.stdout.write(`${line}\n`);
  if (!line.startsWith(`${metadata.authorization_endpoint}?`) || driving) return;
  driving = (async () => {
    const { redirect } = await authorizeInBrowser(new Browser(base), line, { email, password });
    // The suite starts its callback server as it prints the URL: a few tries while it comes up.
    for (let attempt = 1; ; attempt++) {
      try {
        await fetch(redirect);
        return;
      } catch (err) {
        if (attempt === 20) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  })().catch((err: unknown) => {
    process.stdout.write(`-- sign-in and consent failed: ${err instanceof Error ? err.message : String(err)}\n`);
    child.kill();
  });
});
const status = await new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
await driving;
process.exit(status);
