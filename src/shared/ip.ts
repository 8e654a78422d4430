import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** IPv4-mapped IPv6 (`::ffff:10.0.0.1`) is the IPv4 address it carries. */
function unmapped(address: Address): Address {
  return address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()
    ? (address as ipaddr.IPv6).toIPv4Address()
    : address;
}

/** The canonical text of an address (`::ffff:127.0.0.1` → `127.0.0.1`), or the input if it is none. */
export function normalizeIp(text: string): string {
  return ipaddr.isValid(text) ? unmapped(ipaddr.parse(text)).toString() : text;
}

function isPlainAddress(text: string): boolean {
  return ipaddr.IPv4.isValidFourPartDecimal(text) || ipaddr.IPv6.isValid(text);
}

/** A single IPv4/IPv6 address or a CIDR range with a prefix that fits its family. */
export function isIpOrCidr(text: string): boolean {
  const [address, prefix, extra] = text.split('/');
  if (address === undefined || extra !== undefined || !isPlainAddress(address)) return false;
  if (prefix === undefined) return true;
  if (!/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (address.includes(':') ? 128 : 32);
}

/** Whether `ip` is one of `allowed` (addresses or ranges). An empty list allows every address. */
export function ipAllowed(ip: string, allowed: readonly string[]): boolean {
  if (allowed.length === 0) return true;
  if (!ipaddr.isValid(ip)) return false;
  const address = unmapped(ipaddr.parse(ip));
  return allowed.some((entry) => {
    try {
      if (entry.includes('/')) {
        const [range, bits] = ipaddr.parseCIDR(entry);
        const base = unmapped(range);
        if (base.kind() !== range.kind()) {
          // An IPv4-mapped IPv6 range (::ffff:10.0.0.0/104) covers the IPv4 range inside it.
          return address.kind() === 'ipv4' && address.match(base, bits - 96);
        }
        return address.kind() === range.kind() && address.match(range, bits);
      }
      const single = unmapped(ipaddr.parse(entry));
      return single.kind() === address.kind() && single.toString() === address.toString();
    } catch {
      return false;
    }
  });
}
