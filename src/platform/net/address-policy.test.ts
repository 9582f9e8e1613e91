import { describe, expect, it } from 'vitest';
import { classifyAddress, ipLiteral, isPublicAddress, type AddressClass } from './address-policy.js';
import { isCredentialParam, stripUrlCredentials } from './url-credentials.js';

describe('classifyAddress', () => {
  it.each<[string, AddressClass]>([
    // IPv4
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['100.63.255.255', 'public'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.254', 'cgnat'],
    ['100.128.0.0', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['169.254.169.254', 'metadata'], // cloud instance metadata: refused even with private networking allowed
    ['169.254.170.2', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['169.254.169.253', 'link-local'],
    ['172.15.255.255', 'public'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.0', 'public'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.1', 'reserved'], // documentation (ipaddr.js files TEST-NET and benchmarking under reserved)
    ['192.88.99.1', 'reserved'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'reserved'],
    ['198.19.255.255', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['8.8.8.8', 'public'],
    ['1.1.1.1', 'public'],
    ['93.184.216.34', 'public'],
    // IPv6
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['[::1]', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:169.254.1.1', 'link-local'],
    ['fd00:ec2::254', 'metadata'],
    ['fd00:ec2:0::254%eth0', 'metadata'],
    ['::ffff:8.8.8.8', 'public'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    // IPv4-compatible (deprecated): written dotted, ipaddr.js reads it as IPv4-mapped, so the IPv4 address decides;
    // in hex (how URLs and resolvers print it) it is an unrouted ::/96 address
    ['::127.0.0.1', 'loopback'],
    ['::7f00:1', 'reserved'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::808:808', 'public'],
    ['64:ff9b:1::1', 'private'],
    ['100::1', 'reserved'],
    ['2001:db8::1', 'reserved'], // documentation
    ['2001:0:4136:e378::1', 'reserved'],
    ['2002:7f00:1::1', 'loopback'],
    ['2002:c0a8:101::1', 'private'],
    ['2002:808:808::1', 'public'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456:789a::1', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['ff05::2', 'multicast'],
    ['4000::1', 'reserved'],
    ['2606:4700:4700::1111', 'public'],
    ['2001:4860:4860::8888', 'public'],
    // embedded IPv4 decides: mapped, translated, NAT64 and 6to4
    ['::ffff:a00:1', 'private'],
    ['::ffff:0:7f00:1', 'loopback'],
    ['64:ff9b::a00:1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['64:ff9b::a9fe:101', 'link-local'],
    ['64:ff9b::6440:1', 'cgnat'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:a00:1::', 'private'],
    ['2002:a9fe:a9fe::1', 'metadata'],
    ['2002:e000:1::', 'multicast'],
    ['2002:ffff:ffff::', 'broadcast'],
    // other special-purpose IPv6 blocks and the space outside 2000::/3
    ['2001:2::1', 'benchmarking'],
    ['2001:10::1', 'reserved'],
    ['3fff::1', 'reserved'],
    ['5f00::1', 'reserved'],
    ['::2', 'reserved'],
    // the odd IPv4 spellings are not addresses here (the URL parser has rewritten them before they get here)
    ['0177.0.0.1', 'invalid'],
    ['0x7f.0.0.1', 'invalid'],
    ['2130706433', 'invalid'],
    ['127.1', 'invalid'],
    // not addresses
    ['localhost', 'invalid'],
    ['256.1.1.1', 'invalid'],
    ['', 'invalid'],
  ])('%s is %s', (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
    expect(isPublicAddress(address)).toBe(kind === 'public');
  });

  it('recognises IP literals in URL hosts and leaves names alone', () => {
    expect(ipLiteral('[::1]')).toBe('::1');
    expect(ipLiteral('127.0.0.1')).toBe('127.0.0.1');
    expect(ipLiteral('example.com')).toBeNull();
    // The WHATWG URL parser normalises the odd spellings of an IPv4 address before we classify them.
    for (const odd of ['http://2130706433/', 'http://0x7f000001/', 'http://0x7f.0.0.1/', 'http://127.1/', 'http://0177.0.0.1/', 'http://0177.0.0x1/']) {
      expect(classifyAddress(new URL(odd).hostname)).toBe('loopback');
    }
  });
});

describe('stripUrlCredentials', () => {
  it('removes signatures, keys, tokens, user info and the fragment, and keeps the rest', () => {
    const url =
      'https://user:pw@cdn.example.com/out/1.png?X-Amz-Algorithm=AWS4&X-Amz-Credential=abc&X-Amz-Signature=def&X-Amz-Security-Token=t&width=512&Expires=1&Key-Pair-Id=k&api_key=s&my_token=x#frag';
    expect(stripUrlCredentials(url)).toBe('https://cdn.example.com/out/1.png?width=512');
    expect(stripUrlCredentials('https://blob.example.net/c/v.mp4?sv=2024&se=2025&sig=abc&sp=r&sr=b')).toBe('https://blob.example.net/c/v.mp4');
    expect(stripUrlCredentials('https://storage.example.com/o.wav?X-Goog-Signature=1&GoogleAccessId=2&alt=media')).toBe(
      'https://storage.example.com/o.wav?alt=media',
    );
    expect(stripUrlCredentials('https://example.com/a.png')).toBe('https://example.com/a.png');
  });

  it('returns null for a value that is not a URL, or a data: URL', () => {
    expect(stripUrlCredentials('not a url')).toBeNull();
    expect(stripUrlCredentials('data:image/png;base64,AAAA')).toBeNull();
  });

  it('treats credential-looking names as credentials', () => {
    for (const name of ['Signature', 'accessToken', 'client_secret', 'x-api-key', 'AccessKeyId']) expect(isCredentialParam(name)).toBe(true);
    for (const name of ['width', 'format', 'alt', 'v']) expect(isCredentialParam(name)).toBe(false);
  });
});
