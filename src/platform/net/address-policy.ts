import { isIP, isIPv4, isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * What kind of address an IP is, for the outbound policy. Only `public` addresses are reachable unless private
 * networking is allowed (ALLOW_PRIVATE_NETWORK=true); `metadata` (a cloud's instance metadata service) never is.
 */
export type AddressClass =
  | 'public'
  | 'metadata'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'cgnat'
  | 'link-local'
  | 'unique-local'
  | 'site-local'
  | 'multicast'
  | 'broadcast'
  | 'benchmarking'
  | 'reserved'
  | 'invalid';

// The special-purpose ranges are ipaddr.js's (IANA's registries); these maps only rename its range names. A name the
// library adds in a later version is not listed, so it falls to `reserved`: only `unicast` is ever public.
const IPV4_CLASSES: Record<string, AddressClass> = {
  unicast: 'public',
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'cgnat',
  private: 'private',
};

const IPV6_CLASSES: Record<string, AddressClass> = {
  unspecified: 'unspecified',
  loopback: 'loopback',
  linkLocal: 'link-local',
  uniqueLocal: 'unique-local',
  deprecatedSiteLocal: 'site-local',
  multicast: 'multicast',
  benchmarking: 'benchmarking',
};

/** NAT64's well-known prefix (RFC 6052) carries the IPv4 address in its last 32 bits; 64:ff9b:1::/48 is local use. */
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');
/** The only IPv6 block IANA allocates for global unicast; ipaddr.js calls everything it has no name for `unicast`. */
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');

/**
 * Cloud instance metadata services, which hand out the machine's credentials: AWS (IMDS, ECS and EKS Pod Identity
 * agents), GCP, Azure, OpenStack, DigitalOcean and Oracle at 169.254.169.254, Alibaba at 100.100.100.200, Oracle
 * Classic at 192.0.0.192. They are refused even when private networking is allowed.
 */
const METADATA_V4 = new Set(['169.254.169.254', '169.254.170.2', '169.254.170.23', '100.100.100.200', '192.0.0.192']);
const METADATA_V6 = new Set(['fd00:ec2::254', 'fd00:ec2::23'].map((address) => ipaddr.IPv6.parse(address).parts.join(':')));

const ipv4FromParts = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);

const classifyIPv4 = (address: ipaddr.IPv4): AddressClass => (METADATA_V4.has(address.toString()) ? 'metadata' : (IPV4_CLASSES[address.range()] ?? 'reserved'));

function classifyIPv6(address: ipaddr.IPv6): AddressClass {
  if (METADATA_V6.has(address.parts.join(':'))) return 'metadata'; // the parts leave out a zone id
  const range: string = address.range();
  const [, g1, g2, , , , g6, g7] = address.parts as [number, number, number, number, number, number, number, number];
  switch (range) {
    // Addresses that carry an IPv4 address reach that address: it decides.
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d, IPv4-translated
      return classifyIPv4(ipv4FromParts(g6, g7));
    case 'rfc6052':
      return address.match(NAT64_WELL_KNOWN) ? classifyIPv4(ipv4FromParts(g6, g7)) : 'private';
    case '6to4': // 2002:AABB:CCDD::/48 routes to AA.BB.CC.DD
      return classifyIPv4(ipv4FromParts(g1, g2));
    case 'unicast':
      return address.match(GLOBAL_UNICAST) ? 'public' : 'reserved';
    default:
      return IPV6_CLASSES[range] ?? 'reserved'; // Teredo, documentation, discard, ORCHID, AS112, AMT, segment routing …
  }
}

/**
 * Classifies an IPv4 or IPv6 address (brackets and a zone id such as `%eth0` are accepted). Only the standard
 * spellings are addresses here; `0177.0.0.1`, `0x7f000001` and the like are `invalid` (never public): in URLs the
 * WHATWG parser has already rewritten them to dotted decimal, and resolvers answer in standard form.
 */
export function classifyAddress(address: string): AddressClass {
  let text = address.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  if (!isIP(text)) return 'invalid';
  const parsed = ipaddr.parse(text);
  return parsed.kind() === 'ipv4' ? classifyIPv4(parsed as ipaddr.IPv4) : classifyIPv6(parsed as ipaddr.IPv6);
}

export const isPublicAddress = (address: string): boolean => classifyAddress(address) === 'public';

/** An IP literal as it appears in a URL host (`[::1]` → `::1`), or null when the host is a name. */
export function ipLiteral(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIPv4(bare) || isIPv6(bare) ? bare : null;
}
