// A small hyperscript helper: enough DOM building for this dashboard without a framework.

type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, unknown>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs | null = null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on') && typeof v === 'function') {
        el.addEventListener(k.slice(2), v as EventListener);
      } else if (k === 'class') {
        el.className = String(v);
      } else if (k === 'style' && typeof v === 'object') {
        Object.assign(el.style, v);
      } else if (k === 'value' || k === 'checked' || k === 'selected' || k === 'disabled') {
        (el as unknown as Record<string, unknown>)[k] = v;
      } else {
        el.setAttribute(k, v === true ? '' : String(v));
      }
    }
  }
  append(el, children);
  return el;
}

export function append(el: Element, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces an element's children. */
export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

export function link(href: string, ...children: Child[]): HTMLAnchorElement {
  return h('a', { href }, ...children);
}

/** A <select> from value/label pairs. */
export function select(name: string, options: [string, string][], value: string, attrs: Attrs = {}): HTMLSelectElement {
  return h(
    'select',
    { name, ...attrs },
    options.map(([v, label]) => h('option', { value: v, selected: v === value }, label)),
  );
}

export function field(label: string, control: HTMLElement, hint?: string): HTMLLabelElement {
  return h('label', { class: 'field' }, h('span', { class: 'field-label' }, label), control, hint ? h('small', null, hint) : null);
}

/** An error or notice line; `role=alert` so screen readers announce it. */
export function notice(kind: 'error' | 'info' | 'warn', text: string, attrs: Attrs = {}): HTMLElement {
  return h('div', { class: `notice notice-${kind}`, role: kind === 'error' ? 'alert' : 'status', ...attrs }, text);
}

export function table(head: string[], rows: Child[][], attrs: Attrs = {}): HTMLElement {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      attrs,
      h('thead', null, h('tr', null, head.map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', null, rows.map((r) => h('tr', null, r.map((c) => h('td', null, c))))),
    ),
  );
}

export function badge(text: string, cls: string, attrs: Attrs = {}): HTMLElement {
  return h('span', { class: `badge ${cls}`, ...attrs }, text);
}
