// One palette for canvas charts and HTML bars, chosen to stay apart for common colour-vision
// deficiencies (Okabe–Ito).

import type { Role } from '../api/types';
import type { PhaseName } from '../lib/drill';
import type { MarkerCategory } from '../lib/timeline';

export const ROLE_COLOR: Record<Role, string> = {
  leader: '#d55e00',
  follower: '#0072b2',
  follower_out_of_isr: '#56b4e9',
  not_a_replica: '#999999',
  sole_replica: '#cc79a7',
  below_min_isr: '#e69f00',
  isolated_leader: '#d55e00',
  isolated_follower: '#0072b2',
  throttled_leader: '#f0e442',
  throttled_follower: '#009e73',
};

export const PHASE_COLOR: Record<PhaseName, string> = {
  before_fault: '#bbbbbb',
  detection: '#e69f00',
  election: '#cc79a7',
  discovery: '#56b4e9',
  resume: '#009e73',
  unexplained: '#dddddd',
};

export const MARKER_COLOR: Record<MarkerCategory, string> = {
  fault: '#d00000',
  fenced: '#e69f00',
  leader: '#cc79a7',
  client: '#0072b2',
  recovery: '#009e73',
  isr: '#8c6bb1',
  broker: '#666666',
  probe: '#b8860b',
};

export const ACK_COLOR = '#1f4e79';
export const RECEIVE_COLOR = '#5e9c76';
export const GAP_FILL = 'rgba(213, 94, 0, 0.14)';
