// The dashboard's entry: header, hash router, and a poller that refreshes the visible page.

import './style.css';
import { getToken, onUnauthorized } from './api/client';
import { parseHash, type Route } from './lib/route';
import { askToken } from './ui/dialogs';
import { h, replace } from './ui/dom';
import type { View } from './views/view';
import { OverviewView } from './views/overview';
import { LastDrillView } from './views/last';
import { DrillView } from './views/drill';
import { DrillsView } from './views/drills';
import { StatsView } from './views/stats';
import { SchedulesView } from './views/schedules';

const NAV: [string, string, Route['page'][]][] = [
  ['#/', 'Overview', ['overview']],
  ['#/last', 'Last drill', ['last']],
  ['#/drills', 'Drills', ['drills', 'drill']],
  ['#/stats', 'Statistics', ['stats']],
  ['#/schedules', 'Schedules', ['schedules']],
];

function makeView(route: Route): View {
  switch (route.page) {
    case 'overview':
      return new OverviewView();
    case 'last':
      return new LastDrillView(route.params);
    case 'drill':
      return new DrillView(route.id);
    case 'drills':
      return new DrillsView(route.params);
    case 'stats':
      return new StatsView(route.params);
    case 'schedules':
      return new SchedulesView();
    case 'notfound':
      return {
        el: h('section', null, h('h1', null, 'Not found'), h('p', null, `No page at ${route.path}. `, h('a', { href: '#/' }, 'Overview'))),
        refresh: async () => undefined,
        pollMs: () => null,
      };
  }
}

class App {
  private view: View | null = null;
  private abort: AbortController | null = null;
  private timer: number | null = null;
  private readonly main = h('main', { id: 'main', tabindex: -1 });
  private readonly nav = h('nav', { 'aria-label': 'Pages' });
  private readonly tokenButton = h('button', { class: 'token-button secondary', type: 'button', 'data-testid': 'token-button' });
  private readonly status = h('span', { class: 'poll-status', 'aria-live': 'polite' });

  start(): void {
    const header = h(
      'header',
      { class: 'top' },
      h('a', { class: 'brand', href: '#/' }, 'kfaild'),
      this.nav,
      h('div', { class: 'header-right' }, this.status, this.tokenButton),
    );
    document.body.replaceChildren(header, this.main);
    this.tokenButton.addEventListener('click', () => void askToken());
    document.addEventListener('kfaild:token', () => this.showToken());
    this.showToken();
    onUnauthorized((reason) => askToken(reason));
    window.addEventListener('hashchange', () => this.route());
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden && this.view && this.timer === null) void this.tick();
    });
    this.route();
  }

  private showToken(): void {
    const set = getToken() !== null;
    this.tokenButton.textContent = set ? 'Token ✓' : 'Set token';
    this.tokenButton.title = set ? 'API token set for this tab; click to change' : 'Enter the API token for drills and schedules';
  }

  private route(): void {
    const route = parseHash(location.hash);
    this.abort?.abort();
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.view?.destroy?.();
    replace(
      this.nav,
      NAV.map(([href, label, pages]) => h('a', { href, 'aria-current': pages.includes(route.page) ? 'page' : null }, label)),
    );
    this.view = makeView(route);
    replace(this.main, this.view.el);
    void this.tick();
  }

  private async tick(): Promise<void> {
    this.timer = null;
    const view = this.view;
    if (!view) return;
    const ctrl = new AbortController();
    this.abort = ctrl;
    try {
      await view.refresh(ctrl.signal);
      this.status.textContent = '';
      this.status.classList.remove('stale');
    } catch (e) {
      if (ctrl.signal.aborted) return;
      // Views show their own errors; this line says the page may be stale.
      this.status.textContent = `update failed: ${(e as Error).message}`;
      this.status.classList.add('stale');
    }
    if (ctrl.signal.aborted || view !== this.view) return;
    const ms = view.pollMs();
    // Hidden tabs are not polled; visibilitychange resumes.
    if (ms !== null && !document.hidden) this.timer = window.setTimeout(() => void this.tick(), ms);
  }
}

new App().start();
