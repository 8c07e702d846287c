import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { Agent, type Dispatcher, getGlobalDispatcher, setGlobalDispatcher } from 'undici';

/**
 * Makes every host under `suffix` (`acme.test`) resolve to 127.0.0.1 for this process's `fetch`, so a fake
 * provider on loopback can be reached at per-connection hosts (`zeta.acme.test:<port>`) and tell them apart
 * by the Host header. Other hosts resolve as usual. Answers a function restoring the previous dispatcher.
 */
export function resolveToLoopback(suffix: string): () => Promise<void> {
  const previous: Dispatcher = getGlobalDispatcher();
  const agent = new Agent({
    connect: {
      lookup: (host, options, callback) => {
        if (host !== suffix && !host.endsWith(`.${suffix}`)) return dnsLookup(host, options, callback);
        const address: LookupAddress = { address: '127.0.0.1', family: 4 };
        if (options.all) return (callback as (e: null, a: LookupAddress[]) => void)(null, [address]);
        return (callback as (e: null, a: string, f: number) => void)(null, address.address, address.family);
      },
    },
  });
  setGlobalDispatcher(agent);
  return async () => {
    setGlobalDispatcher(previous);
    await agent.close();
  };
}
