import { isIPv4, isIPv6 } from 'node:net';

/**
 * What kind of address an IP is, for the outbound-fetch policy. Only `public` addresses are reachable
 * unless private networking is allowed (ALLOW_PRIVATE_NETWORK=true).
 */
export type AddressClass =
  | 'public'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'cgnat'
  | 'link-local'
  | 'unique-local'
  | 'site-local'
  | 'multicast'
  | 'broadcast'
  | 'documentation'
  | 'benchmarking'
  | 'reserved'
  | 'invalid';

interface Range4 {
  base: number;
  bits: number;
  kind: AddressClass;
}

const v4 = (cidr: string, kind: AddressClass): Range4 => {
  const [base, bits] = cidr.split('/') as [string, string];
  return { base: parseIPv4(base)!, bits: Number(bits), kind };
};

/** IANA special-purpose IPv4 ranges (RFC 6890 and successors); the most specific entries come first. */
const IPV4_RANGES: Range4[] = [
  v4('255.255.255.255/32', 'broadcast'),
  v4('0.0.0.0/8', 'unspecified'),
  v4('10.0.0.0/8', 'private'),
  v4('100.64.0.0/10', 'cgnat'),
  v4('127.0.0.0/8', 'loopback'),
  v4('169.254.0.0/16', 'link-local'),
  v4('172.16.0.0/12', 'private'),
  v4('192.0.0.0/24', 'reserved'),
  v4('192.0.2.0/24', 'documentation'),
  v4('192.31.196.0/24', 'reserved'),
  v4('192.52.193.0/24', 'reserved'),
  v4('192.88.99.0/24', 'reserved'),
  v4('192.168.0.0/16', 'private'),
  v4('192.175.48.0/24', 'reserved'),
  v4('198.18.0.0/15', 'benchmarking'),
  v4('198.51.100.0/24', 'documentation'),
  v4('203.0.113.0/24', 'documentation'),
  v4('224.0.0.0/4', 'multicast'),
  v4('240.0.0.0/4', 'reserved'),
];

function parseIPv4(text: string): number | null {
  if (!isIPv4(text)) return null;
  return text.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

function classifyIPv4(value: number): AddressClass {
  for (const range of IPV4_RANGES) {
    const size = 2 ** (32 - range.bits);
    if (value >= range.base && value < range.base + size) return range.kind;
  }
  return 'public';
}

/** Expands an IPv6 address (with an optional trailing dotted IPv4 part) into its 16 bytes. */
function parseIPv6(text: string): Uint8Array | null {
  if (!isIPv6(text)) return null;
  let head = text;
  const tailBytes: number[] = [];
  const lastColon = head.lastIndexOf(':');
  const tail = head.slice(lastColon + 1);
  if (tail.includes('.')) {
    const value = parseIPv4(tail);
    if (value === null) return null;
    tailBytes.push((value >>> 24) & 255, (value >>> 16) & 255, (value >>> 8) & 255, value & 255);
    head = head.slice(0, lastColon + 1) + '0:0';
  }
  const [left, right] = head.includes('::') ? (head.split('::') as [string, string]) : [head, null];
  const leftGroups = left ? left.split(':') : [];
  const rightGroups = right === null ? [] : right ? right.split(':') : [];
  const missing = 8 - leftGroups.length - rightGroups.length;
  const groups = [...leftGroups, ...Array<string>(right === null ? 0 : missing).fill('0'), ...rightGroups];
  if (groups.length !== 8) return null;
  const bytes = new Uint8Array(16);
  groups.forEach((group, i) => {
    const value = parseInt(group, 16);
    bytes[i * 2] = value >> 8;
    bytes[i * 2 + 1] = value & 255;
  });
  if (tailBytes.length) bytes.set(tailBytes, 12);
  return bytes;
}

const startsWith = (bytes: Uint8Array, prefix: number[], bits: number): boolean => {
  for (let bit = 0; bit < bits; bit++) {
    const byte = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    if ((bytes[byte]! & mask) !== ((prefix[byte] ?? 0) & mask)) return false;
  }
  return true;
};

const embeddedIPv4 = (bytes: Uint8Array, offset: number): number =>
  ((bytes[offset]! << 24) >>> 0) + (bytes[offset + 1]! << 16) + (bytes[offset + 2]! << 8) + bytes[offset + 3]!;

function classifyIPv6(bytes: Uint8Array): AddressClass {
  const allZeroUntil = (end: number) => bytes.subarray(0, end).every((b) => b === 0);
  if (allZeroUntil(16)) return 'unspecified'; // ::
  if (allZeroUntil(15) && bytes[15] === 1) return 'loopback'; // ::1
  // IPv4-mapped ::ffff:a.b.c.d and the IPv4-translated ::ffff:0:a.b.c.d: the embedded IPv4 address decides.
  if (allZeroUntil(10) && bytes[10] === 0xff && bytes[11] === 0xff) return classifyIPv4(embeddedIPv4(bytes, 12));
  if (allZeroUntil(8) && bytes[8] === 0xff && bytes[9] === 0xff && bytes[10] === 0 && bytes[11] === 0) {
    return classifyIPv4(embeddedIPv4(bytes, 12));
  }
  // NAT64 well-known prefix 64:ff9b::/96 reaches the embedded IPv4 address.
  if (startsWith(bytes, [0x00, 0x64, 0xff, 0x9b], 96)) return classifyIPv4(embeddedIPv4(bytes, 12));
  if (startsWith(bytes, [0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48)) return 'private'; // local-use NAT64
  // Deprecated IPv4-compatible ::a.b.c.d and everything else in ::/8.
  if (bytes[0] === 0) return 'reserved';
  if (startsWith(bytes, [0x01, 0x00], 64)) return 'reserved'; // discard-only 100::/64
  if (startsWith(bytes, [0x20, 0x01, 0x0d, 0xb8], 32)) return 'documentation'; // 2001:db8::/32
  if (startsWith(bytes, [0x20, 0x01, 0x00, 0x00], 23)) return 'reserved'; // IETF protocol assignments incl. Teredo
  if (startsWith(bytes, [0x20, 0x02], 16)) return classifyIPv4(embeddedIPv4(bytes, 2)); // 6to4 carries an IPv4 address
  if (startsWith(bytes, [0x3f, 0xff], 20)) return 'documentation'; // 3fff::/20
  if (startsWith(bytes, [0xfc], 7)) return 'unique-local'; // fc00::/7
  if (startsWith(bytes, [0xfe, 0x80], 10)) return 'link-local'; // fe80::/10
  if (startsWith(bytes, [0xfe, 0xc0], 10)) return 'site-local'; // fec0::/10 (deprecated)
  if (bytes[0] === 0xff) return 'multicast'; // ff00::/8
  // Only global unicast (2000::/3) is routed on the internet; the rest is unassigned.
  if (!startsWith(bytes, [0x20], 3)) return 'reserved';
  return 'public';
}

/** Classifies an IPv4 or IPv6 address (brackets and a zone id such as `%eth0` are accepted). */
export function classifyAddress(address: string): AddressClass {
  let text = address.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  const ipv4 = parseIPv4(text);
  if (ipv4 !== null) return classifyIPv4(ipv4);
  const ipv6 = parseIPv6(text);
  if (ipv6 !== null) return classifyIPv6(ipv6);
  return 'invalid';
}

export const isPublicAddress = (address: string): boolean => classifyAddress(address) === 'public';

/** An IP literal as it appears in a URL host (`[::1]` → `::1`), or null when the host is a name. */
export function ipLiteral(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIPv4(bare) || isIPv6(bare) ? bare : null;
}
