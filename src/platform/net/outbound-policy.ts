import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { classifyAddress, ipLiteral, type AddressClass } from './address-policy.js';

/** Why an outbound call was refused or failed; `message` says it in words a person can act on. */
export type FetchFailure =
  | 'INVALID_URL'
  | 'PROTOCOL_NOT_ALLOWED'
  | 'ADDRESS_NOT_ALLOWED'
  | 'DNS_FAILED'
  | 'CONNECTION_FAILED'
  | 'HTTP_STATUS'
  | 'TOO_LARGE'
  | 'TIMEOUT'
  | 'TOO_MANY_REDIRECTS';

export class FetchError extends Error {
  constructor(
    readonly reason: FetchFailure,
    message: string,
    /** The remote's HTTP status for `HTTP_STATUS` (and a redirect loop); null otherwise. */
    readonly status: number | null = null,
    readonly url: string | null = null,
    /** The address that decided an `ADDRESS_NOT_ALLOWED` or `PROTOCOL_NOT_ALLOWED` refusal, when one did. */
    readonly address: { address: string; kind: AddressClass } | null = null,
  ) {
    super(message);
    this.name = 'FetchError';
  }
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type ResolveAddresses = (hostname: string) => Promise<ResolvedAddress[]>;

export interface OutboundPolicySettings {
  /** ALLOW_PRIVATE_NETWORK: non-public addresses may be reached, and over plain http (metadata services never). */
  allowPrivateNetwork: boolean;
  /** Name resolution (default: the system resolver, every address). */
  resolve?: ResolveAddresses;
  /** How an address is classified (default `classifyAddress`); tests let a loopback address play a public host. */
  classify?: (address: string) => AddressClass;
}

export interface DestinationOptions {
  /** Plain http to public hosts as well (default false: http reaches private and loopback hosts only). */
  allowHttp?: boolean;
}

/**
 * The rules every outbound call to an address we did not configure ourselves follows: http(s) only, no credentials in
 * the URL, every address the host resolves to public (any non-public one refuses the host, so a mixed answer cannot
 * reach inside) unless private networking is allowed, never a cloud metadata service, and https unless the host is
 * private (plain http to a public host would carry the data, and keys, in clear over the internet).
 */
export interface OutboundPolicy {
  readonly allowPrivateNetwork: boolean;
  /** Checks a URL and resolves its host; returns the allowed addresses (connect to the first). Throws `FetchError`. */
  check(url: URL, options?: DestinationOptions): Promise<ResolvedAddress[]>;
  /**
   * The same check at connection time, for clients that keep connections (DNS rebinding: the address checked when the
   * URL was saved may have changed since): a `lookup` for `net.connect` that resolves and refuses like `check`. An IP
   * literal host never goes through `lookup`, so it is checked here, at once; throws `FetchError`.
   */
  connectGuard(url: URL, options?: DestinationOptions): { lookup: LookupFunction };
}

const systemResolve: ResolveAddresses = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((entry) => ({ address: entry.address, family: entry.family === 6 ? 6 : 4 }));

const familyOf = (address: string): 4 | 6 => (address.includes(':') ? 6 : 4);

export function createOutboundPolicy(settings: OutboundPolicySettings): OutboundPolicy {
  const { allowPrivateNetwork } = settings;
  const resolve = settings.resolve ?? systemResolve;
  const classify = settings.classify ?? classifyAddress;
  const reachable = (kind: AddressClass) => kind === 'public' || (allowPrivateNetwork && kind !== 'metadata' && kind !== 'invalid');

  /** What can be refused from the URL alone, before any name is resolved. */
  function preflight(url: URL, options: DestinationOptions): void {
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new FetchError('PROTOCOL_NOT_ALLOWED', `Only https URLs can be reached (got "${url.protocol.replace(/:$/, '')}").`, null, url.href);
    }
    if (url.protocol === 'http:' && !options.allowHttp && !allowPrivateNetwork) {
      throw new FetchError('PROTOCOL_NOT_ALLOWED', 'Only https URLs can be reached; plain http is not allowed.', null, url.href);
    }
    if (url.username || url.password) {
      throw new FetchError('INVALID_URL', 'URLs with a user name or password cannot be reached.', null, url.href);
    }
  }

  function judge(url: URL, candidates: ResolvedAddress[], options: DestinationOptions): void {
    if (candidates.length === 0) throw new FetchError('DNS_FAILED', `The host "${url.hostname}" has no address.`, null, url.href);
    for (const { address } of candidates) {
      const kind = classify(address);
      if (!reachable(kind)) {
        const why = kind === 'metadata' ? 'a cloud metadata service is never reachable' : 'only public internet addresses can be reached';
        throw new FetchError('ADDRESS_NOT_ALLOWED', `The address ${address} (${kind}) of "${url.hostname}" is not allowed: ${why}.`, null, url.href, {
          address,
          kind,
        });
      }
    }
    if (url.protocol !== 'http:' || options.allowHttp) return;
    for (const { address } of candidates) {
      const kind = classify(address);
      if (kind === 'public') {
        const host = ipLiteral(url.hostname) ? address : `"${url.hostname}" (${address})`;
        throw new FetchError(
          'PROTOCOL_NOT_ALLOWED',
          `Plain http reaches private and loopback hosts only, and ${host} is a public address: use https.`,
          null,
          url.href,
          {
            address,
            kind,
          },
        );
      }
    }
  }

  async function resolveName(url: URL, hostname: string): Promise<ResolvedAddress[]> {
    try {
      return await resolve(hostname);
    } catch (err) {
      throw new FetchError(
        'DNS_FAILED',
        `The host "${hostname}" could not be found (${(err as NodeJS.ErrnoException).code ?? 'lookup failed'}).`,
        null,
        url.href,
      );
    }
  }

  return {
    allowPrivateNetwork,

    async check(url, options = {}) {
      preflight(url, options);
      const literal = ipLiteral(url.hostname);
      const candidates = literal ? [{ address: literal, family: familyOf(literal) }] : await resolveName(url, url.hostname);
      judge(url, candidates, options);
      return candidates;
    },

    connectGuard(url, options = {}) {
      preflight(url, options);
      const literal = ipLiteral(url.hostname);
      if (literal) judge(url, [{ address: literal, family: familyOf(literal) }], options);
      const lookup = ((hostname: string, lookupOptions: { all?: boolean; family?: number | string }, callback: LookupCallback) => {
        const wanted =
          lookupOptions.family === 6 || lookupOptions.family === 'IPv6' ? 6 : lookupOptions.family === 4 || lookupOptions.family === 'IPv4' ? 4 : 0;
        resolveName(url, hostname).then(
          (candidates) => {
            let usable: ResolvedAddress[];
            try {
              judge(url, candidates, options);
              usable = wanted === 0 ? candidates : candidates.filter((candidate) => candidate.family === wanted);
              if (usable.length === 0) throw new FetchError('DNS_FAILED', `The host "${hostname}" has no IPv${wanted} address.`, null, url.href);
            } catch (err) {
              return callback(err as NodeJS.ErrnoException, '');
            }
            if (lookupOptions.all)
              callback(
                null,
                usable.map(({ address, family }): LookupAddress => ({ address, family })),
              );
            else callback(null, usable[0]!.address, usable[0]!.family);
          },
          (err: unknown) => callback(err as NodeJS.ErrnoException, ''),
        );
      }) as unknown as LookupFunction;
      return { lookup };
    },
  };
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
