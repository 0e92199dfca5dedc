import { describe, expect, it } from 'vitest';
import { confirmText, EMPTY_DRILL_FORM, looksLikeCron, parseDrillForm, parseScheduleForm } from '../src/lib/form';

const form = (o: Partial<typeof EMPTY_DRILL_FORM>) => ({ ...EMPTY_DRILL_FORM, ...o });

describe('drill form', () => {
  it('builds a kill of broker 1 with the options given', () => {
    const r = parseDrillForm(form({ broker: '1', repeats: '3' }));
    expect(r).toEqual({
      ok: true,
      value: { fault: 'kill', target: { broker: 1 }, options: { repeats: 3, preferred_election: true, allow_unavailable: false } },
    });
  });

  it('sends pause_s only for a pause and grace_s only for a stop or restart', () => {
    const p = parseDrillForm(form({ fault: 'pause', broker: '2', pause_s: '10', grace_s: '30' }));
    expect(p.ok && p.value.options).toMatchObject({ pause_s: 10 });
    expect(p.ok && 'grace_s' in p.value.options!).toBe(false);
    const s = parseDrillForm(form({ fault: 'stop', broker: '2', pause_s: '10', grace_s: '30' }));
    expect(s.ok && s.value.options).toMatchObject({ grace_s: 30 });
    expect(s.ok && 'pause_s' in s.value.options!).toBe(false);
  });

  it('builds every kind of target', () => {
    const l = parseDrillForm(form({ targetKind: 'leader_of', topic: 'orders', partition: '2' }));
    expect(l.ok && l.value.target).toEqual({ leader_of: { topic: 'orders', partition: 2 } });
    const c = parseDrillForm(form({ targetKind: 'controller' }));
    expect(c.ok && c.value.target).toEqual({ controller: true });
    const r = parseDrillForm(form({ targetKind: 'random' }));
    expect(r.ok && r.value.target).toEqual({ random: true });
  });

  it('refuses what the server would refuse, saying which field', () => {
    expect(parseDrillForm(form({ broker: '' }))).toEqual({ ok: false, error: 'choose the broker to target' });
    expect(parseDrillForm(form({ broker: '1', repeats: '0' }))).toEqual({ ok: false, error: 'repeats must be between 1 and 100' });
    expect(parseDrillForm(form({ broker: 'x' }))).toEqual({ ok: false, error: 'broker must be a whole number' });
    expect(parseDrillForm(form({ fault: 'nuke', broker: '1' }))).toEqual({ ok: false, error: 'unknown fault "nuke"' });
    expect(parseDrillForm(form({ targetKind: 'leader_of', topic: 'a b' })).ok).toBe(false);
  });

  it('confirms naming the broker and the cluster', () => {
    const r = parseDrillForm(form({ broker: '1' }));
    expect(r.ok && confirmText(r.value, 'lab')).toBe('SIGKILL broker 1 of cluster "lab"?');
    const p = parseDrillForm(form({ fault: 'pause', broker: '3', pause_s: '10', repeats: '2', allow_unavailable: true }));
    expect(p.ok && confirmText(p.value, 'lab')).toBe(
      'Pause (SIGSTOP) broker 3 of cluster "lab" for 10 s 2 times? Partitions may go offline: allow_unavailable is set.',
    );
  });
});

describe('schedule form', () => {
  it('builds a schedule with its drill', () => {
    const r = parseScheduleForm({ cluster: 'lab', name: 'nightly kill', cron: '0  3 * * *', jitter_s: '60', enabled: true }, form({ broker: '1' }));
    expect(r.ok && r.value).toMatchObject({ cluster: 'lab', name: 'nightly kill', cron: '0 3 * * *', jitter_s: 60, enabled: true, drill: { fault: 'kill' } });
  });

  it('checks the cron expression loosely', () => {
    expect(looksLikeCron('*/15 * * * 1-5')).toBe(true);
    expect(looksLikeCron('0 3 * *')).toBe(false);
    expect(looksLikeCron('@daily')).toBe(true);
    expect(looksLikeCron('0 0 ? * MON')).toBe(false);
    expect(parseScheduleForm({ cluster: 'lab', name: 'x', cron: 'daily', jitter_s: '', enabled: true }, form({ broker: '1' })).ok).toBe(false);
  });
});
