import { describe, expect, it } from 'vitest';
import { buildHash, parseHash } from '../src/lib/route';

describe('hash routes', () => {
  it('reads every page, with and without a trailing slash', () => {
    expect(parseHash('').page).toBe('overview');
    expect(parseHash('#/').page).toBe('overview');
    expect(parseHash('#/last').page).toBe('last');
    expect(parseHash('#/drills/').page).toBe('drills');
    expect(parseHash('#/stats').page).toBe('stats');
    expect(parseHash('#/schedules').page).toBe('schedules');
  });

  it('reads a drill id for deep links', () => {
    const r = parseHash('#/drills/12');
    expect(r).toMatchObject({ page: 'drill', id: 12 });
  });

  it('keeps query parameters', () => {
    const r = parseHash('#/drills?cluster=lab&state=done');
    expect(r.page).toBe('drills');
    expect(r.params.get('cluster')).toBe('lab');
    expect(r.params.get('state')).toBe('done');
  });

  it('says not found for unknown paths and bad ids', () => {
    expect(parseHash('#/nope').page).toBe('notfound');
    expect(parseHash('#/drills/abc').page).toBe('notfound');
    expect(parseHash('#/drills/1/2').page).toBe('notfound');
  });

  it('builds hashes without empty parameters', () => {
    expect(buildHash('/drills', { cluster: 'lab', state: '', fault: null })).toBe('#/drills?cluster=lab');
    expect(buildHash('/stats')).toBe('#/stats');
  });
});
