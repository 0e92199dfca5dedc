// The fields that describe a drill (fault, target, options), shared by the "start a drill" form
// and the schedule form. Values are read raw and parsed by lib/form.ts.

import { FORM_FAULTS } from '../api/types';
import { EMPTY_DRILL_FORM, type DrillFormValues, type TargetKind } from '../lib/form';
import { faultLabel } from '../lib/drill';
import { field, h, select } from './dom';

export interface DrillFields {
  el: HTMLElement;
  values(): DrillFormValues;
  /** Offers these broker ids as targets, keeping the current choice when still offered. */
  setBrokers(ids: number[]): void;
}

function num(name: string, value: string, placeholder: string, min = 0): HTMLInputElement {
  return h('input', { type: 'number', name, value, placeholder, min, step: 1, inputmode: 'numeric' });
}

export function drillFields(initial: Partial<DrillFormValues> = {}, idPrefix = 'd'): DrillFields {
  const v = { ...EMPTY_DRILL_FORM, ...initial };
  const fault = select(
    'fault',
    FORM_FAULTS.map((f) => [f, faultLabel(f)]),
    v.fault,
  );
  const targetKind = select(
    'target_kind',
    [
      ['broker', 'a broker'],
      ['leader_of', 'the leader of a partition'],
      ['controller', 'the controller'],
      ['random', 'a random broker'],
    ],
    v.targetKind,
  );
  const broker = h('select', { name: 'broker', 'data-testid': `${idPrefix}-broker` });
  const topic = h('input', { name: 'topic', value: v.topic, placeholder: 'orders', autocomplete: 'off' });
  const partition = num('partition', v.partition, '0');
  const repeats = num('repeats', v.repeats, '1', 1);
  const grace = num('grace_s', v.grace_s, 'default 30');
  const pause = num('pause_s', v.pause_s, 'default 10', 1);
  const baseline = num('baseline_s', v.baseline_s, 'default 5');
  const observeMin = num('observe_min_s', v.observe_min_s, 'default 5');
  const observeTimeout = num('observe_timeout_s', v.observe_timeout_s, 'default 120', 1);
  const recoverTimeout = num('recover_timeout_s', v.recover_timeout_s, 'default 180', 1);
  const preferred = h('input', { type: 'checkbox', name: 'preferred_election', checked: v.preferred_election });
  const allowUnavailable = h('input', { type: 'checkbox', name: 'allow_unavailable', checked: v.allow_unavailable });

  const brokerField = field('Broker', broker);
  const topicField = field('Topic', topic);
  const partitionField = field('Partition', partition);
  const graceField = field('Grace (s)', grace, 'SIGTERM → SIGKILL');
  const pauseField = field('Pause (s)', pause, 'how long the broker stays frozen');

  const sync = () => {
    const tk = targetKind.value as TargetKind;
    brokerField.hidden = tk !== 'broker';
    topicField.hidden = tk !== 'leader_of';
    partitionField.hidden = tk !== 'leader_of';
    graceField.hidden = fault.value !== 'stop' && fault.value !== 'restart';
    pauseField.hidden = fault.value !== 'pause';
  };
  fault.addEventListener('change', sync);
  targetKind.addEventListener('change', sync);

  const el = h(
    'div',
    { class: 'drill-fields' },
    h('div', { class: 'row' }, field('Fault', fault), field('Target', targetKind), brokerField, topicField, partitionField),
    h('div', { class: 'row' }, field('Repeats', repeats), graceField, pauseField),
    h(
      'div',
      { class: 'row checks' },
      h('label', { class: 'check' }, preferred, ' restore preferred leaders afterwards'),
      h('label', { class: 'check' }, allowUnavailable, ' allow taking partitions offline'),
    ),
    h(
      'details',
      { class: 'more' },
      h('summary', null, 'Timing options'),
      h(
        'div',
        { class: 'row' },
        field('Baseline (s)', baseline),
        field('Observe at least (s)', observeMin),
        field('Observe timeout (s)', observeTimeout),
        field('Recover timeout (s)', recoverTimeout),
      ),
    ),
  );
  sync();

  let wanted = v.broker;
  return {
    el,
    values: () => ({
      fault: fault.value,
      targetKind: targetKind.value as TargetKind,
      broker: broker.value,
      topic: topic.value,
      partition: partition.value,
      repeats: repeats.value,
      grace_s: grace.value,
      pause_s: pause.value,
      baseline_s: baseline.value,
      observe_min_s: observeMin.value,
      observe_timeout_s: observeTimeout.value,
      recover_timeout_s: recoverTimeout.value,
      preferred_election: preferred.checked,
      allow_unavailable: allowUnavailable.checked,
    }),
    setBrokers(ids: number[]) {
      const current = broker.value || wanted;
      const key = ids.join(',');
      if (broker.dataset['ids'] === key) return;
      broker.dataset['ids'] = key;
      broker.replaceChildren(
        h('option', { value: '' }, ids.length ? 'choose…' : 'no brokers known'),
        ...ids.map((id) => h('option', { value: String(id), selected: String(id) === current }, `broker ${id}`)),
      );
      if (current && ids.includes(Number(current))) wanted = '';
    },
  };
}
