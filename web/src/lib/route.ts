// Hash routes: #/ · #/last · #/drills · #/drills/<id> · #/stats · #/schedules, each with optional
// query parameters (#/drills?cluster=lab&state=done). Hash routing needs no server fallback.

export type Route =
  | { page: 'overview'; params: URLSearchParams }
  | { page: 'last'; params: URLSearchParams }
  | { page: 'drills'; params: URLSearchParams }
  | { page: 'drill'; id: number; params: URLSearchParams }
  | { page: 'stats'; params: URLSearchParams }
  | { page: 'schedules'; params: URLSearchParams }
  | { page: 'notfound'; path: string; params: URLSearchParams };

export function parseHash(hash: string): Route {
  let h = hash.startsWith('#') ? hash.slice(1) : hash;
  if (!h.startsWith('/')) h = `/${h}`;
  const q = h.indexOf('?');
  const path = (q >= 0 ? h.slice(0, q) : h).replace(/\/+$/, '') || '/';
  const params = new URLSearchParams(q >= 0 ? h.slice(q + 1) : '');
  const seg = path.split('/').filter(Boolean);
  if (seg.length === 0) return { page: 'overview', params };
  if (seg.length === 1) {
    switch (seg[0]) {
      case 'last':
        return { page: 'last', params };
      case 'drills':
        return { page: 'drills', params };
      case 'stats':
        return { page: 'stats', params };
      case 'schedules':
        return { page: 'schedules', params };
    }
  }
  if (seg.length === 2 && seg[0] === 'drills' && /^[0-9]{1,15}$/.test(seg[1]!)) {
    return { page: 'drill', id: Number(seg[1]), params };
  }
  return { page: 'notfound', path, params };
}

/** Builds "#/path?k=v", leaving out empty parameters. */
export function buildHash(path: string, params: Record<string, string | number | null | undefined> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined || v === '') continue;
    q.set(k, String(v));
  }
  const s = q.toString();
  return `#${path}${s ? `?${s}` : ''}`;
}

export function drillHash(id: number): string {
  return `#/drills/${id}`;
}
