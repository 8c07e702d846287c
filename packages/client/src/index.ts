import createFetchClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, operations, paths } from './schema.js';

export type { components, operations, paths };

/** The service's named shapes: `Schemas['Agent']`, `Schemas['Error']`. */
export type Schemas = components['schemas'];

/** openapi-fetch's client over every route of the API: `client.POST('/api/v1/agents', { body })`. */
export type SwitchboardClient = Client<paths>;

export interface SwitchboardClientOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** Where the service is served (`https://switchboard.example.com`); paths carry their `/api/v1` prefix. */
  baseUrl: string;
  /** A session token, personal access token (`pat_...`) or OAuth access token, sent as `Authorization: Bearer`. */
  token?: string;
}

/**
 * A typed client for a Switchboard service. With `token`, every request carries it, unless the request sets its
 * own `Authorization` header. Everything else (`fetch`, `headers`, middleware) is openapi-fetch's.
 */
export function createClient({ token, ...options }: SwitchboardClientOptions): SwitchboardClient {
  const client = createFetchClient<paths>(options);
  if (token) {
    client.use({
      onRequest({ request }) {
        if (!request.headers.has('authorization')) request.headers.set('authorization', `Bearer ${token}`);
        return request;
      },
    });
  }
  return client;
}
