// SPDX-License-Identifier: AGPL-3.0-or-later
// A message after a save or a refusal: the problems it lists, and Reload
// for a change that lost to another one.
export function Notice({ notice, onReload, onDismiss }) {
  return (
    <div role={notice.kind === 'error' ? 'alert' : 'status'} class={`notice ${notice.kind}`}>
      {notice.text}
      {notice.list && (
        <ul>
          {notice.list.map((e, i) => (
            <li key={i}>{`${e.file}: ${e.path}: ${e.message}`}</li>
          ))}
        </ul>
      )}
      {notice.kind === 'error' && (
        <button type="button" onClick={onReload}>
          Reload
        </button>
      )}
      <button type="button" aria-label="Dismiss" onClick={onDismiss}>
        ×
      </button>
    </div>
  );
}
