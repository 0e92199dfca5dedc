import { describe, expect, it } from 'vitest';
import type { ClusterDetail } from '../src/api/types';
import { objectiveVerdict } from '../src/lib/drill';
import { clusterProfiles, drillProfiles, profileStateRows, profileTable, profileVerdicts, runProfiles, settingsLines } from '../src/lib/profiles';
import { drill, twoProfileDrill } from './fixtures';

describe('profiles', () => {
  it('a run with one profile shows no profiles', () => {
    const d = drill(1);
    expect(runProfiles(d.runs[0]!)).toEqual([]);
    expect(profileTable(d.runs[0]!)).toBeNull();
    expect(drillProfiles(d)).toEqual([]);
    expect(profileVerdicts(d)).toEqual([]);
  });

  it('puts the profiles side by side per partition, the primary first', () => {
    const d = twoProfileDrill(2);
    expect(drillProfiles(d)).toEqual(['librdkafka', 'java']);
    const t = profileTable(d.runs[0]!)!;
    expect(t.views.map((v) => [v.profile, v.client, v.primary])).toEqual([
      ['librdkafka', null, true],
      ['java', 'java', false],
    ]);
    expect(t.rows.map((r) => [r.key, r.role])).toEqual([
      ['orders-0', 'leader'],
      ['orders-1', 'follower'],
      ['orders-2', 'follower'],
    ]);
    const [lib, java] = t.rows[0]!.cells;
    expect(lib).toMatchObject({ ack: '9.41 s', ack_us: 9_410_000, discovery: '200 ms', mechanism: '—' });
    expect(java).toMatchObject({ ack: '10.61 s', ack_us: 10_610_000, discovery: '1.40 s', mechanism: 'fencing (session timeout), ended by fenced' });
    expect(settingsLines(t.views[1]!.settings)).toEqual(['metadata.max.age.ms=300000']);
  });

  it("shows a profile's problem instead of its figures", () => {
    const d = twoProfileDrill(3);
    const run = d.runs[0]!;
    run.profiles = [{ profile: 'java', client: 'java', problem: 'no samples in the stream of profile java' }];
    const t = profileTable(run)!;
    expect(t.views[1]).toMatchObject({ profile: 'java', analysis: null, problem: 'no samples in the stream of profile java' });
    expect(t.rows.every((r) => r.cells[1] === null)).toBe(true);
  });

  it('gives one verdict per profile and names the profile of a failing check', () => {
    const d = twoProfileDrill(4);
    expect(profileVerdicts(d)).toEqual([
      { profile: 'librdkafka', verdict: 'pass' },
      { profile: 'java', verdict: 'fail' },
    ]);
    expect(objectiveVerdict(d).failed).toEqual(['max_ack_stall_s on orders-0 (leader), profile java: 10.61 s, limit 10 s (max_ack_stall_s)']);
  });

  it("lists the cluster's profiles, none with one", () => {
    const base = { profiles: [] } as unknown as ClusterDetail;
    expect(profileStateRows(base)).toEqual([]);
    expect(clusterProfiles(base)).toEqual([]);
    const probe = { profile: 'x', client: 'librdkafka', phase: 'probing', problem: null, run_id: '0000000000000001', ticks: 1, held_ticks: 0, client_settings: { acks: 'all' }, partitions: [] };
    const c = { profiles: [probe, { ...probe, profile: 'java', client: 'java', phase: 'setting_up', problem: 'the JVM did not start' }] } as unknown as ClusterDetail;
    expect(clusterProfiles(c)).toEqual(['x', 'java']);
    expect(profileStateRows(c).map((r) => [r.profile, r.client, r.phase, r.problem, r.primary])).toEqual([
      ['x', 'librdkafka', 'probing', null, true],
      ['java', 'java', 'setting_up', 'the JVM did not start', false],
    ]);
  });
});
