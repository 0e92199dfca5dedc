// Modal dialogs on <dialog>: the API token box and the confirmation of a destructive action.

import { getToken, setToken } from '../api/client';
import { h } from './dom';

function openModal(d: HTMLDialogElement): void {
  document.body.append(d);
  d.showModal();
}

/** Asks for the API token; resolves true when one was saved. `reason` says why it is asked. */
export function askToken(reason = ''): Promise<boolean> {
  return new Promise((resolve) => {
    const input = h('input', {
      type: 'password',
      name: 'token',
      autocomplete: 'off',
      placeholder: 'Bearer token',
      value: getToken() ?? '',
      'data-testid': 'token-input',
      required: true,
    });
    const d = h(
      'dialog',
      { class: 'modal', 'data-testid': 'token-dialog' },
      h(
        'form',
        { method: 'dialog' },
        h('h2', null, 'API token'),
        reason ? h('p', { class: 'notice notice-warn' }, reason) : null,
        h('p', null, 'Starting, aborting and scheduling drills need the token kfaild was configured with. It is kept in this tab only (sessionStorage).'),
        input,
        h(
          'div',
          { class: 'actions' },
          h('button', { value: 'cancel', type: 'submit', formnovalidate: true, class: 'secondary' }, 'Cancel'),
          h('button', { value: 'clear', type: 'submit', formnovalidate: true, class: 'secondary' }, 'Forget'),
          h('button', { value: 'save', type: 'submit', 'data-testid': 'token-save' }, 'Save'),
        ),
      ),
    );
    d.addEventListener('close', () => {
      let saved = false;
      if (d.returnValue === 'save' && input.value.trim()) {
        setToken(input.value.trim());
        saved = true;
      } else if (d.returnValue === 'clear') {
        setToken(null);
      }
      d.remove();
      document.dispatchEvent(new CustomEvent('kfaild:token'));
      resolve(saved);
    });
    openModal(d);
    input.focus();
  });
}

/** A yes/no question; resolves true on the confirming button only. */
export function confirmDialog(title: string, text: string, confirmLabel: string, danger = true): Promise<boolean> {
  return new Promise((resolve) => {
    const d = h(
      'dialog',
      { class: 'modal', 'data-testid': 'confirm-dialog' },
      h(
        'form',
        { method: 'dialog' },
        h('h2', null, title),
        h('p', { 'data-testid': 'confirm-text' }, text),
        h(
          'div',
          { class: 'actions' },
          h('button', { value: 'cancel', type: 'submit', class: 'secondary', 'data-testid': 'confirm-cancel', autofocus: true }, 'Cancel'),
          h('button', { value: 'ok', type: 'submit', class: danger ? 'danger' : '', 'data-testid': 'confirm-ok' }, confirmLabel),
        ),
      ),
    );
    d.addEventListener('close', () => {
      const ok = d.returnValue === 'ok';
      d.remove();
      resolve(ok);
    });
    openModal(d);
  });
}
