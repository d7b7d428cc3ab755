// SPDX-License-Identifier: AGPL-3.0-or-later
// The Test panel: runs an endpoint's save tree for a record given here,
// as a dry run (requests built and shown, nothing sent) or for real, and
// shows the trace: each action, its request, status, time and the
// session values it produced.
import { useState } from 'preact/hooks';
import * as api from './api.js';

function sampleValues(model) {
  const out = {};
  for (const p of model?.properties || []) {
    if (p.reference?.direction === 'Inbound') continue;
    out[p.name] = p.form?.defaultValue ?? null;
  }
  return out;
}

function JsonArea({ id, label, value, onInput, problem }) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <textarea id={id} rows={6} spellcheck={false} value={value} aria-invalid={problem ? 'true' : undefined} onInput={(e) => onInput(e.target.value)} />
      {problem && (
        <ul class="field-errors" role="alert">
          <li>{problem}</li>
        </ul>
      )}
    </div>
  );
}

// The trace's actions, child saves flattened under their list.
function rows(actions, depth = 0, out = []) {
  for (const a of actions || []) {
    if (a.type === 'ChildSaves') {
      out.push({ depth, head: `Child Saves: ${a.list} by ${a.endpoint}`, status: a.status, durationMs: a.durationMs });
      for (const s of a.saves || []) {
        out.push({ depth: depth + 1, head: `record ${s.id}`, status: s.status });
        rows(s.actions, depth + 2, out);
      }
      continue;
    }
    out.push({ depth, head: `${a.step}. ${a.title}`, ...a });
  }
  return out;
}

export function TestPanel({ endpoint, model }) {
  const [op, setOp] = useState('Update');
  const [id, setId] = useState('test-1');
  const [values, setValues] = useState(() => JSON.stringify(sampleValues(model), null, 2));
  const [children, setChildren] = useState(() =>
    JSON.stringify(Object.fromEntries((endpoint.childConfigs || []).map((c) => [c.list, []])), null, 2),
  );
  const [answers, setAnswers] = useState('[]');
  const [dry, setDry] = useState(true);
  const [problems, setProblems] = useState({});
  const [result, setResult] = useState(null);
  const [busy, setBusy] = useState(false);

  const parse = (text, name, bad) => {
    try {
      return JSON.parse(text);
    } catch (e) {
      bad[name] = `not JSON: ${e.message}`;
      return undefined;
    }
  };
  const run = async (e) => {
    e.preventDefault();
    const bad = {};
    const body = {
      endpoint: endpoint.name,
      operation: op,
      dryRun: dry,
      record: { id, values: parse(values, 'values', bad) },
      children: parse(children, 'children', bad),
      answers: parse(answers, 'answers', bad),
    };
    setProblems(bad);
    if (Object.keys(bad).length) return;
    setBusy(true);
    const r = await api.test(body);
    setBusy(false);
    setResult(r.status === 200 ? r.data : { error: r.data.error || `the run failed (${r.status})` });
  };
  return (
    <section aria-labelledby="test-h" class="test-panel">
      <h3 id="test-h">Test</h3>
      <form onSubmit={run}>
        <div class="row">
          <div class="field">
            <label for="test-op">Operation</label>
            <select id="test-op" value={op} onChange={(e) => setOp(e.target.value)}>
              <option>Update</option>
              <option>Create</option>
            </select>
          </div>
          <div class="field">
            <label for="test-id">Record Id</label>
            <input id="test-id" value={id} onInput={(e) => setId(e.target.value)} />
          </div>
          <div class="field toggle">
            <input id="test-dry" type="checkbox" role="switch" checked={dry} onChange={(e) => setDry(e.target.checked)} />
            <label for="test-dry">Dry Run (build the requests, send nothing)</label>
          </div>
        </div>
        <JsonArea id="test-values" label="Record Values (JSON)" value={values} onInput={setValues} problem={problems.values} />
        <JsonArea id="test-children" label="Child Records (JSON, by list)" value={children} onInput={setChildren} problem={problems.children} />
        {dry && <JsonArea id="test-answers" label="Sample Answers (JSON array, one per call in order)" value={answers} onInput={setAnswers} problem={problems.answers} />}
        <div class="buttons">
          <button type="submit" class="primary" disabled={busy}>
            {dry ? 'Run Dry' : 'Run For Real'}
          </button>
        </div>
      </form>
      {result?.error && (
        <p role="alert" class="error">
          {result.error}
        </p>
      )}
      {result?.trace && (
        <div class="trace" aria-label="Trace">
          <p role="status" class={result.succeeded ? 'ok' : 'error'}>
            {result.dryRun ? 'Dry run: ' : ''}
            {result.succeeded ? 'succeeded' : `failed at ${result.trace.failedAction}: ${result.trace.reason}`}
          </p>
          <table>
            <thead>
              <tr>
                <th>Action</th>
                <th>Status</th>
                <th>Time</th>
                <th>Request</th>
                <th>Session Values</th>
              </tr>
            </thead>
            <tbody>
              {rows(result.trace.actions).map((r, i) => (
                <tr key={i}>
                  <td style={{ paddingLeft: `${0.5 + r.depth * 1.2}rem` }}>{r.head}</td>
                  <td>
                    {r.status}
                    {r.reason && <div class="muted">{r.reason}</div>}
                    {(r.warnings || []).map((w, j) => (
                      <div class="muted" key={j}>
                        {w}
                      </div>
                    ))}
                  </td>
                  <td>{r.durationMs !== undefined ? `${r.durationMs} ms` : ''}</td>
                  <td>{r.upstream ? `${r.upstream.method} ${r.upstream.url} → ${r.upstream.status ?? '—'}` : ''}</td>
                  <td>
                    <code>{r.sessionValues ? JSON.stringify(r.sessionValues) : ''}</code>
                    {r.matched && <div class="muted">{Object.entries(r.matched).map(([k, m]) => `${k}: ${m.records} of ${m.listRecords} records matched`).join('; ')}</div>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <h4>Requests {result.dryRun ? '(built, not sent)' : '(sent)'}</h4>
          <ol class="requests">
            {result.requests.map((q, i) => (
              <li key={i}>
                <code>
                  {q.method} {q.url}
                </code>
                {Object.entries(q.headers).map(([k, v]) => (
                  <div key={k}>
                    <code>
                      {k}: {v}
                    </code>
                  </div>
                ))}
                {q.body != null && <pre>{q.body}</pre>}
              </li>
            ))}
          </ol>
        </div>
      )}
    </section>
  );
}
