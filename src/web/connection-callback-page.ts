import { html, layout } from './html.ts';

/** A browser on the providers' callback URL with a state this service never issued (a stale or copied link). */
export function staleCallbackPage(): string {
  return layout(
    'Connection link',
    html`<div class="card"><h1>This connection link does not work</h1>
      <p>The link the service sent you back with is not one this server started, or it was cut short. Nothing was
      connected. Go to <a href="/account/connections">your connections</a> and connect the service again.</p></div>`,
  );
}
