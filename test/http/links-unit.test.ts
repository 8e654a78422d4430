import { describe, expect, it } from 'vitest';
import { isValidHost, linkTo, pageLinks, type LinkSource } from '../../src/http/links.ts';

describe('isValidHost', () => {
  it.each([
    'localhost',
    'panel.example.com',
    'Panel.Example.COM:8443',
    'aerie_api:8080',
    'xn--bcher-kva.example',
    '10.0.0.7',
    '10.0.0.7:65535',
    '[::1]',
    '[2001:db8::1]:443',
    '[::ffff:10.0.0.1]',
    'a.1b',
  ])('takes %s', (host) => {
    expect(isValidHost(host)).toBe(true);
  });

  it.each([
    '',
    ' ',
    'a b',
    'a%b',
    '[::1',
    '::1',
    '[::g]',
    '[fe80::1%25eth0]',
    'x:99999',
    'x:0',
    'x:',
    'x:8o',
    'x:80:80',
    'user@evil.example',
    'evil.example/path',
    'evil.example?x',
    'evil.example#x',
    'evil.example\\x',
    '.example',
    'a..b',
    'example.',
    '-a.example',
    'a-.example',
    `${'a'.repeat(64)}.example`,
    '999.1.1.1',
    '1.2.3',
    '010.0.0.1',
    'panel.123',
    'panel.0x1f',
    'é.example',
  ])('refuses %j', (host) => {
    expect(isValidHost(host)).toBe(false);
  });
});

describe('pageLinks', () => {
  const source = (overrides: Partial<LinkSource>): LinkSource => ({
    publicUrl: null,
    protocol: 'http',
    host: 'panel.example',
    target: '/api/client/activity?per_page=5&page=2',
    ...overrides,
  });

  it('builds on AERIE_PUBLIC_URL first, then a valid Host, else stays relative', () => {
    const publicUrl = 'https://panel.example.com/aerie';
    expect(pageLinks(source({ publicUrl, host: 'x:99999' }))(3)).toBe(
      'https://panel.example.com/aerie/api/client/activity?per_page=5&page=3',
    );
    expect(pageLinks(source({ protocol: 'HTTPS' }))(3)).toBe(
      'https://panel.example/api/client/activity?per_page=5&page=3',
    );
    for (const [protocol, host] of [
      ['http', ''],
      ['http', undefined],
      ['http', '[::1'],
      ['gopher', 'panel.example'],
      [undefined, 'panel.example'],
    ] as const) {
      expect(pageLinks(source({ protocol, host }))(3), `${protocol}://${host}`).toBe(
        '/api/client/activity?per_page=5&page=3',
      );
    }
  });

  it('replaces the first page parameter, however it is spelled, drops the others, and keeps the rest as sent', () => {
    const link = (target: string) => pageLinks(source({ host: '', target }))(7);
    expect(link('/api/client')).toBe('/api/client?page=7');
    expect(link('/api/client?')).toBe('/api/client?page=7');
    expect(link('/api/client?%70age=2&per_page=1&page=9')).toBe('/api/client?page=7&per_page=1');
    expect(link('/api/client?filter%5Bevent%5D=a%25b&filter[ip]=1&&x=%ff')).toBe(
      '/api/client?filter%5Bevent%5D=a%25b&filter[ip]=1&x=%ff&page=7',
    );
    expect(link('/api/client?x="<a b>"&y=%E0%A4%A')).toBe(
      '/api/client?x=%22%3Ca%20b%3E%22&y=%E0%A4%A&page=7',
    );
  });

  it('links to the routed path: no other authority, no fragment, no protocol-relative path', () => {
    const link = (target: string, host = '') => pageLinks(source({ host, target }))(2);
    expect(link('http://evil.example/api/client?page=1', 'panel.example')).toBe(
      'http://panel.example/api/client?page=2',
    );
    expect(link('HTTPS://evil.example:1/api/client')).toBe('/api/client?page=2');
    expect(link('//evil.example/api/client')).toBe('/evil.example/api/client?page=2');
    expect(link('/\\evil.example/api/client')).toBe('/%5Cevil.example/api/client?page=2');
    expect(link('/api//client/?page=1#frag?page=5')).toBe('/api/client/?page=2');
    expect(link('/api/client/\u0000"x"')).toBe('/api/client/%00%22x%22?page=2');
  });
});

describe('linkTo', () => {
  const path = '/download/backup?token=abc.def';

  it('roots a path on AERIE_PUBLIC_URL with its prefix, whatever the Host', () => {
    for (const host of ['panel.example', 'a@evil.example', 'evil.example/x?', '', 'a b', undefined]) {
      expect(linkTo({ publicUrl: 'https://panel.example.com/aerie', protocol: 'http', host }, path)).toBe(
        'https://panel.example.com/aerie/download/backup?token=abc.def',
      );
    }
  });

  it('roots it on a valid Host, else leaves it relative', () => {
    expect(linkTo({ publicUrl: null, protocol: 'https', host: 'panel.example:8443' }, path)).toBe(
      'https://panel.example:8443/download/backup?token=abc.def',
    );
    for (const host of ['a@evil.example', 'evil.example/x?', '', 'a b', undefined]) {
      expect(linkTo({ publicUrl: null, protocol: 'http', host }, path), String(host)).toBe(path);
    }
  });
});
