// Time helpers. kfaild gives instants as epoch microseconds (`*_us`); charts want seconds.

export const US_PER_S = 1_000_000;
export const US_PER_MS = 1_000;

/** RFC 3339 in UTC with microseconds, as kfaild's `from` / `to` parameters take it. */
export function rfc3339FromUs(us: number): string {
  const whole = Math.floor(us / US_PER_S);
  const micros = us - whole * US_PER_S;
  const iso = new Date(whole * 1000).toISOString(); // 2026-11-30T04:38:30.000Z
  return `${iso.slice(0, 19)}.${String(micros).padStart(6, '0')}Z`;
}

/** Seconds of `tUs` after `originUs` (negative before it). */
export function relativeSeconds(tUs: number, originUs: number): number {
  return (tUs - originUs) / US_PER_S;
}

/** A duration for people: "9.40 s", "120 ms", "2 min 05 s"; "—" when unknown. */
export function formatDuration(us: number | null | undefined): string {
  if (us === null || us === undefined || !Number.isFinite(us)) return '—';
  const abs = Math.abs(us);
  const sign = us < 0 ? '−' : '';
  if (abs < US_PER_MS) return `${sign}${Math.round(abs)} µs`;
  if (abs < US_PER_S) return `${sign}${Math.round(abs / US_PER_MS)} ms`;
  if (abs < 120 * US_PER_S) return `${sign}${(abs / US_PER_S).toFixed(2)} s`;
  const totalS = Math.round(abs / US_PER_S);
  if (totalS < 3600) {
    return `${sign}${Math.floor(totalS / 60)} min ${String(totalS % 60).padStart(2, '0')} s`;
  }
  const h = Math.floor(totalS / 3600);
  const m = Math.floor((totalS % 3600) / 60);
  return `${sign}${h} h ${String(m).padStart(2, '0')} min`;
}

/** Seconds relative to the fault, signed: "+8.27 s", "−0.50 s", "0.00 s". */
export function formatRelative(s: number | null | undefined, digits = 2): string {
  if (s === null || s === undefined || !Number.isFinite(s)) return '—';
  const r = Number(s.toFixed(digits));
  if (r === 0) return `${(0).toFixed(digits)} s`;
  return `${r > 0 ? '+' : '−'}${Math.abs(r).toFixed(digits)} s`;
}

/** "12 s ago", "5 min ago", "3 h ago", "2 d ago"; "in 4 min" for the future. */
export function formatAgo(us: number | null | undefined, nowUs: number): string {
  if (us === null || us === undefined) return '—';
  const d = (nowUs - us) / US_PER_S;
  const future = d < 0;
  const a = Math.abs(d);
  let text: string;
  if (a < 60) text = `${Math.round(a)} s`;
  else if (a < 3600) text = `${Math.round(a / 60)} min`;
  else if (a < 86400) text = `${Math.round(a / 3600)} h`;
  else text = `${Math.round(a / 86400)} d`;
  return future ? `in ${text}` : `${text} ago`;
}

/** Local wall-clock time with milliseconds: "2026-11-30 05:38:30.123". */
export function formatTimestamp(us: number | null | undefined): string {
  if (us === null || us === undefined) return '—';
  const d = new Date(Math.floor(us / 1000));
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return (
    `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
    `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`
  );
}

export type Period = '1h' | '24h' | '7d' | '30d' | '90d' | 'all';
export const PERIODS: Period[] = ['1h', '24h', '7d', '30d', '90d', 'all'];

/** The start of a period ending at `nowUs`; null for "all". */
export function periodStartUs(period: Period, nowUs: number): number | null {
  const hour = 3600 * US_PER_S;
  switch (period) {
    case '1h':
      return nowUs - hour;
    case '24h':
      return nowUs - 24 * hour;
    case '7d':
      return nowUs - 7 * 24 * hour;
    case '30d':
      return nowUs - 30 * 24 * hour;
    case '90d':
      return nowUs - 90 * 24 * hour;
    case 'all':
      return null;
  }
}

export function nowUs(): number {
  return Date.now() * US_PER_MS;
}
