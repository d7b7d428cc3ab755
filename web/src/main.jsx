// SPDX-License-Identifier: AGPL-3.0-or-later
// The gateway's administration page: Data Models, Endpoints with their On
// Save trees and the Get Session Values editor, Saved Queries and
// connectors. Every change is saved through the API, which checks it as
// --check-config does and refuses a save made from an older version.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import * as api from './api.js';
import * as P from './pointer.js';
import * as M from './model.js';
import { SaveEditor, GsvEditor, FilterEditor } from './editors.jsx';
import { TestPanel } from './test.jsx';
import { Notice } from './notice.jsx';
import './style.css';

const clone = (v) => JSON.parse(JSON.stringify(v));

function SignIn({ info, problem, onToken }) {
  const [value, setValue] = useState('');
  return (
    <main class="signin">
      <h1>datagate administration</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          onToken(value.trim());
        }}
      >
        <label for="token">Bearer token</label>
        <input id="token" type="password" autocomplete="off" value={value} onInput={(e) => setValue(e.target.value)} />
        <button type="submit">Sign in</button>
      </form>
      {problem && <p role="alert" class="error">{problem}</p>}
      {info?.oauth?.enabled ? (
        <p>
          Sign in with an access token from your identity provider, <strong>{info.oauth.issuer}</strong>, for a
          user whose role grants administration.
        </p>
      ) : (
        <p>Use the bearer token of a configured user whose role grants administration.</p>
      )}
    </main>
  );
}

function Models({ files }) {
  return (
    <section aria-labelledby="models-h">
      <h2 id="models-h">Data Models</h2>
      {M.models(files).map((m) => (
        <details key={m.name} class="card">
          <summary>
            <strong>{m.name}</strong> <span class="muted">{m.description}</span>
          </summary>
          <table>
            <thead>
              <tr>
                <th>Property</th>
                <th>Type</th>
                <th>Reference</th>
                <th>Form</th>
              </tr>
            </thead>
            <tbody>
              {(m.properties || []).map((p) => (
                <tr key={p.name}>
                  <td>{p.name}</td>
                  <td>{p.dataType}</td>
                  <td>
                    {p.reference
                      ? `${p.reference.direction} ${p.reference.target || p.reference.targetEntityType || ''}`
                      : ''}
                  </td>
                  <td>
                    {p.form
                      ? [
                          p.form.control,
                          p.form.label && `“${p.form.label}”`,
                          p.form.required && 'required',
                          p.form.defaultValue !== undefined && `default ${p.form.defaultValue}`,
                          p.form.sequence !== undefined && `#${p.form.sequence}`,
                          p.form.group && `group ${p.form.group}`,
                        ]
                          .filter(Boolean)
                          .join(', ')
                      : ''}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </details>
      ))}
    </section>
  );
}

function ReadOnlyList({ title, items, columns }) {
  return (
    <section aria-label={title}>
      <h2>{title}</h2>
      <p class="muted">Read-only here; edit the file in the configuration directory.</p>
      <table>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c[0]}>{c[0]}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {items.map((it) => (
            <tr key={it.id || it.name}>
              {columns.map((c) => (
                <td key={c[0]}>{c[1](it)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function ActionMenu({ label, items }) {
  const [open, setOpen] = useState(false);
  return (
    <div class="menu">
      <button
        type="button"
        aria-haspopup="menu"
        aria-expanded={open}
        aria-label={`Actions of ${label}`}
        onClick={() => setOpen(!open)}
        onKeyDown={(e) => e.key === 'Escape' && setOpen(false)}
      >
        ⋯
      </button>
      {open && (
        <ul role="menu" onKeyDown={(e) => e.key === 'Escape' && setOpen(false)}>
          {items.map(([name, fn]) => (
            <li role="none" key={name}>
              <button
                type="button"
                role="menuitem"
                onClick={() => {
                  setOpen(false);
                  fn();
                }}
              >
                {name}
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function describeFilter(f) {
  if (!f?.conditions?.length) return null;
  const join = f.match === 'Any' ? ' OR ' : ' AND ';
  return f.conditions.map((c) => `${c.property} ${c.operator}${c.value !== undefined ? ' ' + c.value : ''}`).join(join);
}

function ActionCard({ step, ops }) {
  const a = step.action;
  const filter = describeFilter(a.filter);
  const kind = M.isGsv(a) ? 'Get Session Values' : 'Save Action';
  return (
    <li class={`action depth${step.depth}`} data-path={step.path}>
      <div class="card action-card">
        <div>
          <div class="kind">{kind}</div>
          <div class="title">{a.title || '(untitled)'}</div>
          {!M.isGsv(a) && (
            <div class="request">
              <code>
                {a.request?.method || ''} {a.request?.type === 'GraphQL' ? 'GraphQL ' : ''}
                {a.request?.path || ''}
              </code>
            </div>
          )}
          {M.isGsv(a) && (
            <div class="muted">
              sets {(a.extractions || []).map((x) => x.modelProperty).filter(Boolean).join(', ') || 'nothing yet'}
            </div>
          )}
          <div class="ops">
            {M.operations(a).map((o) => (
              <span class="chip" key={o}>
                {o}
              </span>
            ))}
            {filter && <span class="chip filter">only when {filter}</span>}
          </div>
        </div>
        <ActionMenu label={a.title || kind} items={ops} />
      </div>
    </li>
  );
}

function ChoosePanel({ onChoose, onClose, allowSave }) {
  return (
    <>
    <div class="backdrop" onClick={onClose} />
    <div role="dialog" aria-modal="true" aria-labelledby="choose-h" class="dialog" onKeyDown={(e) => e.key === 'Escape' && onClose()}>
      <h2 id="choose-h">Choose API Call Action</h2>
      <ul class="choices">
        {allowSave && (
          <li>
            <button type="button" autoFocus onClick={() => onChoose('save')}>
              Save Action
            </button>
          </li>
        )}
        <li>
          <button type="button" autoFocus={!allowSave} onClick={() => onChoose('gsv')}>
            Get Session Values Action
          </button>
        </li>
      </ul>
      <button type="button" onClick={onClose}>
        Close
      </button>
    </div>
    </>
  );
}

function OnSave({ endpoint, base, doc, onChange, onEdit, onAdd }) {
  const { root, pre, post } = M.steps(endpoint, base);
  const ops = (step) => {
    const a = step.action;
    const items = [['Add Action', () => onAdd(step)], ['Edit', () => onEdit(step, 'edit')]];
    if (step.depth > 0) {
      items.push(['Filters', () => onEdit(step, 'filter')]);
      items.push(['Move Up', () => onChange(move(doc, step, -1), `Moved '${a.title}' up`)]);
      items.push(['Move Down', () => onChange(move(doc, step, +1), `Moved '${a.title}' down`)]);
      items.push([
        'Delete',
        () => {
          if (confirm(`Delete the action '${a.title}'?`)) {
            const next = clone(doc);
            P.remove(next, step.path);
            onChange(next, `Deleted '${a.title}'`);
          }
        },
      ]);
    }
    return items;
  };
  return (
    <section aria-labelledby="onsave-h" class="onsave">
      <h3 id="onsave-h">On Save</h3>
      <ol class="tree">
        {root && <ActionCard step={root} ops={ops(root)} />}
        {pre.map((s) => (
          <ActionCard key={s.path} step={s} ops={ops(s)} />
        ))}
        <li class="separator" role="separator" aria-label="Child Saves">
          <span>Child Saves</span>
        </li>
        {(endpoint.childConfigs || []).map((c, i) => (
          <li class="child" key={i}>
            <div class="card child-card">
              each <strong>{c.list}</strong> record saved by endpoint <strong>{c.endpoint}</strong>
              {c.addEndpoint && <span class="muted"> · added lines by {c.addEndpoint}</span>}
              {c.removeEndpoint && <span class="muted"> · removed lines by {c.removeEndpoint}</span>}
              {c.removeValues && <span class="muted"> · removed lines sent with {JSON.stringify(c.removeValues)}</span>}
            </div>
          </li>
        ))}
        {!(endpoint.childConfigs || []).length && <li class="muted child">no child saves</li>}
        {post.map((s) => (
          <ActionCard key={s.path} step={s} ops={ops(s)} />
        ))}
      </ol>
    </section>
  );
}

// Swaps the action with its neighbour of the same phase in its array.
function move(doc, step, dir) {
  const next = clone(doc);
  const [up, key] = P.parent(step.path);
  const list = P.get(next, up);
  const i = Number(key);
  const phase = !!list[i].afterChildConfigs;
  let j = i + dir;
  while (j >= 0 && j < list.length && !!list[j].afterChildConfigs !== phase) j += dir;
  if (j < 0 || j >= list.length) return null;
  [list[i], list[j]] = [list[j], list[i]];
  return next;
}

function newAction(kind) {
  if (kind === 'save')
    return { type: 'EndpointSave', title: 'New Save Action', request: { method: 'POST', path: '/' } };
  return {
    type: 'GetSessionValues',
    title: 'Get Session Values',
    extractions: [],
  };
}

function Endpoints(props) {
  const { files, doc, version, scopes, selected, onSelect, save, errors, setErrors, checkDraft, setNotice } = props;
  const list = doc.endpoints || [];
  const [editor, setEditor] = useState(null);
  // An editor holds the file as it was opened: a new version closes it, so
  // that nothing is saved over a change made meanwhile.
  useEffect(() => setEditor(null), [version]);
  useEffect(() => props.setEditing(!!editor), [!!editor]);
  const [choose, setChoose] = useState(null);
  const [tab, setTab] = useState('Data Source');
  const i = Math.max(0, list.findIndex((e) => e.name === selected));
  const endpoint = list[i];
  const base = P.join('', 'endpoints', i);
  const model = M.modelByName(files, endpoint?.dataModel);

  const openEditor = (step, mode, draftDoc) => {
    const d = draftDoc || doc;
    const action = P.get(d, step.path);
    setErrors([]);
    setEditor({ path: step.path, mode, original: clone(action), value: clone(action), doc: d });
  };
  const add = (step, kind) => {
    const next = clone(doc);
    const a = newAction(kind);
    let listPath, index;
    if (step.depth === 0) {
      listPath = P.join(step.path, 'actions');
      index = 0;
    } else if (kind === 'gsv' && step.depth === 1 && !M.isGsv(step.action)) {
      listPath = P.join(step.path, 'actions');
      index = (step.action.actions || []).length;
    } else {
      const [up, key] = P.parent(step.path);
      listPath = up;
      index = Number(key) + 1;
      if (step.depth === 1 && step.action.afterChildConfigs) a.afterChildConfigs = true;
    }
    if (!P.get(next, listPath)) P.set(next, listPath, []);
    P.get(next, listPath).splice(index, 0, a);
    setChoose(null);
    openEditor({ path: P.join(listPath, index), action: a }, 'edit', next);
  };
  if (!endpoint) return <p>No endpoints are configured.</p>;
  const Editor = editor?.mode === 'filter' ? FilterEditor : M.isGsv(editor?.value) ? GsvEditor : SaveEditor;
  return (
    <section aria-labelledby="endpoints-h" class="endpoints">
      <h2 id="endpoints-h">Endpoints</h2>
      <div class="split">
        <nav aria-label="Endpoints">
          <ul class="list">
            {list.map((e) => (
              <li key={e.name}>
                <button type="button" aria-current={e === endpoint ? 'true' : undefined} onClick={() => onSelect(e.name)}>
                  {e.name}
                </button>
              </li>
            ))}
          </ul>
        </nav>
        <div class="detail">
          <h3 class="ep-title">
            {endpoint.name} <span class="muted">saves {endpoint.dataModel} records</span>
          </h3>
          <p class="muted">{endpoint.description}</p>
          <div role="tablist" aria-label="Endpoint tabs" class="tabs">
            {['Data Source', 'Endpoint Settings', 'Filters', 'Variables', 'Tests'].map((t) => (
              <button
                role="tab"
                type="button"
                key={t}
                aria-selected={t === tab}
                disabled={t !== 'Data Source' && t !== 'Tests'}
                onClick={() => setTab(t)}
              >
                {t}
              </button>
            ))}
          </div>
          {tab === 'Tests' && <TestPanel key={endpoint.name} endpoint={endpoint} model={model} />}
          {tab === 'Data Source' && (
          <div class="datasource">
            <nav aria-label="Events" class="events">
              <button type="button" aria-current="true">
                On Save
              </button>
            </nav>
            <OnSave
              endpoint={endpoint}
              base={base}
              doc={doc}
              onChange={async (next, what) => {
                if (next) await save(next, what);
                else setNotice({ kind: 'error', text: 'There is nothing to move it past in its phase.' });
              }}
              onEdit={(step, mode) => openEditor(step, mode)}
              onAdd={(step) => setChoose(step)}
            />
          </div>
          )}
        </div>
      </div>
      {choose && (
        <ChoosePanel
          allowSave={choose.depth !== 2}
          onChoose={(k) => add(choose, k)}
          onClose={() => setChoose(null)}
        />
      )}
      {editor && (
        <Editor
          key={editor.path + editor.mode}
          files={files}
          model={model}
          endpoint={endpoint}
          path={editor.path}
          value={editor.value}
          original={editor.original}
          errors={errors}
          notice={props.notice}
          onReload={props.reload}
          onDismiss={() => setNotice(null)}
          scopes={scopes}
          checkDraft={(value) => {
            const d = clone(editor.doc);
            P.set(d, editor.path, value);
            return checkDraft(d);
          }}
          onChange={(v) => setEditor({ ...editor, value: v })}
          onReset={() => setEditor({ ...editor, value: clone(editor.original) })}
          onClose={() => {
            setErrors([]);
            setEditor(null);
          }}
          onSave={async () => {
            const d = clone(editor.doc);
            P.set(d, editor.path, editor.value);
            if (await save(d, `Saved '${editor.value.title}'`)) setEditor(null);
          }}
        />
      )}
    </section>
  );
}

function App() {
  const [info, setInfo] = useState(null);
  const [state, setState] = useState({ status: 'loading' });
  const [section, setSection] = useState('endpoints');
  const [selected, setSelected] = useState(null);
  const [errors, setErrors] = useState([]);
  const [notice, setNotice] = useState(null);
  const [editing, setEditing] = useState(false);

  const load = async () => {
    const r = await api.config();
    if (r.status === 401) return setState({ status: 'signin', problem: api.token() ? r.data.error : null });
    if (r.status === 403) return setState({ status: 'signin', problem: r.data.error });
    if (r.status !== 200) return setState({ status: 'failed', problem: r.data.error });
    setState({ status: 'ready', config: r.data });
  };
  useEffect(() => {
    api.info().then((r) => setInfo(r.data));
    load();
  }, []);
  const reload = () => {
    setNotice(null);
    load();
  };

  if (state.status === 'loading') return <p class="loading">Loading…</p>;
  if (state.status === 'signin' || state.status === 'failed')
    return (
      <SignIn
        info={info}
        problem={state.problem}
        onToken={(t) => {
          api.setToken(t);
          load();
        }}
      />
    );
  const { config } = state;
  const files = config.files;
  const doc = files['endpoints.json'] || { endpoints: [] };

  // Saves endpoints.json as changed; true when written.
  const save = async (next, what) => {
    setNotice(null);
    const r = await api.save({ 'endpoints.json': next }, config.version);
    if (r.status === 200) {
      setErrors([]);
      setState({
        status: 'ready',
        config: { ...config, version: r.data.version, scopes: r.data.scopes, files: { ...files, 'endpoints.json': next } },
      });
      setNotice({ kind: 'ok', text: `${what}. Saved and reloaded.` });
      return true;
    }
    if (r.status === 422) {
      setErrors(r.data.errors || []);
      setNotice({ kind: 'error', text: `${r.data.error}:`, list: r.data.errors || [] });
    } else {
      setNotice({ kind: 'error', text: r.data.error || `the save failed (${r.status})` });
    }
    return false;
  };
  const checkDraft = async (d) => {
    const r = await api.check({ 'endpoints.json': d });
    return r.status === 200 && r.data.ok ? r.data.scopes : null;
  };

  const sections = [
    ['models', 'Data Models'],
    ['endpoints', 'Endpoints'],
    ['queries', 'Saved Queries'],
    ['connectors', 'Connectors'],
  ];
  return (
    <div class="app">
      <header>
        <h1>datagate administration</h1>
        <span class="muted version">configuration version {config.version.slice(0, 8)}</span>
        <button
          type="button"
          onClick={() => {
            api.setToken('');
            setState({ status: 'signin' });
          }}
        >
          Sign out
        </button>
      </header>
      <nav aria-label="Sections" class="sections">
        {sections.map(([k, label]) => (
          <button type="button" key={k} aria-current={section === k ? 'page' : undefined} onClick={() => setSection(k)}>
            {label}
          </button>
        ))}
      </nav>
      {notice && !editing && <Notice notice={notice} onReload={reload} onDismiss={() => setNotice(null)} />}
      {!config.ok && (
        <div role="alert" class="banner error">
          The configuration on disk does not load:
          <ul>
            {config.errors.map((e, i) => (
              <li key={i}>{`${e.file}: ${e.path}: ${e.message}`}</li>
            ))}
          </ul>
        </div>
      )}
      <main>
        {section === 'models' && <Models files={files} />}
        {section === 'endpoints' && (
          <Endpoints
            files={files}
            doc={doc}
            version={config.version}
            scopes={config.scopes}
            selected={selected}
            onSelect={setSelected}
            save={save}
            errors={errors}
            setErrors={setErrors}
            checkDraft={checkDraft}
            setNotice={setNotice}
            notice={notice}
            reload={reload}
            setEditing={setEditing}
          />
        )}
        {section === 'queries' && (
          <ReadOnlyList
            title="Saved Queries"
            items={files['saved_queries.json']?.savedQueries || []}
            columns={[
              ['Name', (q) => q.name],
              ['Connector', (q) => q.connector],
              ['Model', (q) => q.dataModel || ''],
              ['Request', (q) => `${q.request?.method || ''} ${q.request?.path || ''}`],
              ['Inputs', (q) => (q.inputs || []).map((x) => x.name).join(', ')],
            ]}
          />
        )}
        {section === 'connectors' && (
          <ReadOnlyList
            title="Connectors"
            items={files['connectors.json']?.connectors || []}
            columns={[
              ['Name', (c) => c.name],
              ['Base URL', (c) => c.baseUrl],
              ['Authentication', (c) => c.auth?.type || 'none'],
              ['Description', (c) => c.description || ''],
            ]}
          />
        )}
      </main>
    </div>
  );
}

render(<App />, document.getElementById('app'));
