// SPDX-License-Identifier: AGPL-3.0-or-later
// The action editors: Save Action, Get Session Values (its extractions)
// and Filters, each with the property picker, errors beside the field at
// fault, and Reset, Close and Save.
import { useEffect, useRef, useState } from 'preact/hooks';
import * as P from './pointer.js';
import * as M from './model.js';
import { Notice } from './notice.jsx';

let ids = 0;
const useId = (prefix) => useState(() => `${prefix}-${++ids}`)[0];
const clone = (v) => JSON.parse(JSON.stringify(v));

// Errors of endpoints.json at exactly this JSON pointer.
function errorsAt(errors, path) {
  return errors.filter((e) => e.file === 'endpoints.json' && e.path === path);
}

function FieldErrors({ errors, path, id }) {
  const here = errorsAt(errors, path);
  if (!here.length) return null;
  return (
    <ul class="field-errors" id={id} role="alert">
      {here.map((e, i) => (
        <li key={i}>{e.message}</li>
      ))}
    </ul>
  );
}

function Text({ label, path, value, onInput, errors, picker, inputRef, wide }) {
  const id = useId('f');
  const bad = errorsAt(errors, path).length > 0;
  return (
    <div class={`field${wide ? ' wide' : ''}`} data-path={path}>
      <label for={id}>{label}</label>
      <div class="with-picker">
        <input
          id={id}
          ref={inputRef}
          value={value ?? ''}
          aria-invalid={bad ? 'true' : undefined}
          aria-describedby={bad ? id + '-err' : undefined}
          onInput={(e) => onInput(e.target.value)}
        />
        {picker}
      </div>
      <FieldErrors errors={errors} path={path} id={id + '-err'} />
    </div>
  );
}

function Select({ label, path, value, options, onChange, errors, placeholder = '—' }) {
  const id = useId('s');
  const bad = errorsAt(errors, path).length > 0;
  return (
    <div class="field" data-path={path}>
      <label for={id}>{label}</label>
      <select id={id} aria-invalid={bad ? 'true' : undefined} value={value ?? ''} onChange={(e) => onChange(e.target.value || undefined)}>
        <option value="">{placeholder}</option>
        {options.map((o) => (
          <option key={o} value={o}>
            {o}
          </option>
        ))}
      </select>
      <FieldErrors errors={errors} path={path} id={id + '-err'} />
    </div>
  );
}

function Toggle({ label, path, checked, onChange, errors }) {
  const id = useId('t');
  return (
    <div class="field toggle" data-path={path}>
      <input id={id} type="checkbox" role="switch" checked={!!checked} onChange={(e) => onChange(e.target.checked)} />
      <label for={id}>{label}</label>
      <FieldErrors errors={errors} path={path} id={id + '-err'} />
    </div>
  );
}

// The property picker: the model's properties and the Session Values that
// reach this action, as the gateway's scope rules give them.
export function Picker({ label, model, values, onPick }) {
  const [open, setOpen] = useState(false);
  const [session, setSession] = useState(null);
  const id = useId('picker');
  const show = async () => {
    setOpen(true);
    setSession(null);
    setSession(await values());
  };
  const pick = (text) => {
    setOpen(false);
    onPick(text);
  };
  return (
    <div
      class="picker"
      onKeyDown={(e) => {
        if (e.key === 'Escape' && open) {
          e.preventDefault();
          setOpen(false);
        }
      }}
    >
      <button type="button" aria-haspopup="dialog" aria-expanded={open} aria-label={`Insert a property into ${label}`} onClick={() => (open ? setOpen(false) : show())}>
        {'{…}'}
      </button>
      {open && (
        <div class="picker-pop" role="dialog" aria-label={`Properties for ${label}`} id={id}>
          <div role="group" aria-labelledby={id + '-p'}>
            <h4 id={id + '-p'}>Properties</h4>
            <ul>
              {(model?.properties || []).map((p) => (
                <li key={p.name}>
                  <button type="button" onClick={() => pick(`{${p.name}}`)}>
                    {p.name} <span class="muted">{p.dataType}</span>
                  </button>
                </li>
              ))}
            </ul>
          </div>
          <div role="group" aria-labelledby={id + '-s'}>
            <h4 id={id + '-s'}>Session Values</h4>
            {session === null && <p class="muted">Loading…</p>}
            {session && !session.length && <p class="muted">No earlier action sets a session value here.</p>}
            <ul>
              {(session || []).map((v) => (
                <li key={v.insert}>
                  <button type="button" onClick={() => pick(v.insert)} title={`set by ${v.setBy}, ${v.place}`}>
                    {v.insert} <span class="muted">from {v.setBy}</span>
                  </button>
                </li>
              ))}
            </ul>
          </div>
          <button type="button" onClick={() => setOpen(false)}>
            Close the list
          </button>
        </div>
      )}
    </div>
  );
}

// Inserts text at the caret of the input behind ref.
function inserter(ref, value, set) {
  return (text) => {
    const el = ref.current;
    const v = value ?? '';
    const at = el && el.selectionStart != null ? el.selectionStart : v.length;
    const end = el && el.selectionEnd != null ? el.selectionEnd : at;
    set(v.slice(0, at) + text + v.slice(end));
  };
}

function Dialog({ title, path, errors, placed, children, onReset, onClose, onSave, notice, onReload, onDismiss }) {
  const id = useId('dlg');
  const [busy, setBusy] = useState(false);
  const box = useRef();
  // The first field takes the focus; Escape closes (the picker's list first).
  useEffect(() => box.current?.querySelector('input, select, button')?.focus(), []);
  const others = errors.filter((e) => !(e.file === 'endpoints.json' && placed.includes(e.path)));
  return (
    <>
    <div class="backdrop" onClick={onClose} />
    <div
      class="dialog editor"
      role="dialog"
      aria-modal="true"
      aria-labelledby={id}
      data-path={path}
      ref={box}
      onKeyDown={(e) => {
        if (e.key === 'Escape' && !e.defaultPrevented) onClose();
      }}
    >
      <h2 id={id}>{title}</h2>
      {notice && !notice.list && <Notice notice={notice} onReload={onReload} onDismiss={onDismiss} />}
      {others.length > 0 && (
        <ul class="field-errors" role="alert" aria-label="Other problems">
          {others.map((e, i) => (
            <li key={i}>{`${e.file}: ${e.path}: ${e.message}`}</li>
          ))}
        </ul>
      )}
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          await onSave();
          setBusy(false);
        }}
      >
        {children}
        <div class="buttons">
          <button type="button" onClick={onReset}>
            Reset
          </button>
          <button type="button" onClick={onClose}>
            Close
          </button>
          <button type="submit" class="primary" disabled={busy}>
            Save
          </button>
        </div>
      </form>
    </div>
    </>
  );
}

const topLevel = (path) => /\/save\/actions\/\d+$/.test(path);

function sessionSource(props) {
  return async () => {
    const fresh = await props.checkDraft(props.value);
    return M.sessionValues(fresh || props.scopes, props.endpoint.name, props.path);
  };
}

export function SaveEditor(props) {
  const { value: a, path, errors, onChange, model } = props;
  const placed = [];
  const at = (p) => (placed.push(p), p);
  const set = (fn) => {
    const next = clone(a);
    fn(next);
    onChange(next);
  };
  const pathRef = useRef();
  const req = a.request || {};
  const ops = M.operations(a);
  const values = sessionSource(props);
  const body = (
    <>
      <Text label="Title" path={at(P.join(path, 'title'))} value={a.title} errors={errors} onInput={(v) => set((n) => (n.title = v))} />
      {topLevel(path) && (
        <Toggle label="After Child Configs?" path={at(P.join(path, 'afterChildConfigs'))} checked={a.afterChildConfigs} errors={errors} onChange={(v) => set((n) => (v ? (n.afterChildConfigs = true) : delete n.afterChildConfigs))} />
      )}
      <fieldset>
        <legend>Operations</legend>
        {['Create', 'Update'].map((o) => (
          <Toggle
            key={o}
            label={o}
            path={at(P.join(path, 'operations'))}
            checked={ops.includes(o)}
            errors={o === 'Create' ? errors : []}
            onChange={(on) =>
              set((n) => {
                const now = new Set(M.operations(n));
                on ? now.add(o) : now.delete(o);
                n.operations = ['Create', 'Update'].filter((x) => now.has(x));
              })
            }
          />
        ))}
      </fieldset>
      <Select label="Method" path={at(P.join(path, 'request', 'method'))} value={req.method} options={['GET', 'POST', 'PUT', 'PATCH', 'DELETE']} errors={errors} onChange={(v) => set((n) => ((n.request ||= {}).method = v))} />
      <Text
        label="URL Path"
        wide
        path={at(P.join(path, 'request', 'path'))}
        value={req.path}
        errors={errors}
        inputRef={pathRef}
        onInput={(v) => set((n) => ((n.request ||= {}).path = v))}
        picker={<Picker label="URL Path" model={model} values={values} onPick={inserter(pathRef, req.path, (v) => set((n) => ((n.request ||= {}).path = v)))} />}
      />
      {req.type === 'GraphQL' ? (
        <p class="muted">A GraphQL request: its query and variables are edited in endpoints.json.</p>
      ) : (
        <fieldset>
          <legend>Body Mappings</legend>
          {(req.mappings || []).map((m, i) => (
            <MappingRow key={i} i={i} m={m} path={P.join(path, 'request', 'mappings', i)} at={at} errors={errors} model={model} values={values} set={set} />
          ))}
          <button type="button" onClick={() => set((n) => ((n.request ||= {}).mappings ||= []).push({ connectorProperty: '', value: '' }))}>
            Add Mapping
          </button>
        </fieldset>
      )}
    </>
  );
  return (
    <Dialog title={`Save Action: ${a.title || ''}`} path={path} errors={errors} placed={placed} onReset={props.onReset} onClose={props.onClose} onSave={props.onSave} notice={props.notice} onReload={props.onReload} onDismiss={props.onDismiss}>
      {body}
    </Dialog>
  );
}

function MappingRow({ i, m, path, at, errors, model, values, set }) {
  const ref = useRef();
  const setValue = (v) => set((n) => (n.request.mappings[i].value = v));
  return (
    <div class="row">
      <Text label="Connector Property" path={at(P.join(path, 'connectorProperty'))} value={m.connectorProperty} errors={errors} onInput={(v) => set((n) => (n.request.mappings[i].connectorProperty = v))} />
      <Text
        label="Value"
        path={at(P.join(path, 'value'))}
        value={m.value}
        errors={errors}
        inputRef={ref}
        onInput={setValue}
        picker={<Picker label={`Value of mapping ${i + 1}`} model={model} values={values} onPick={inserter(ref, m.value, setValue)} />}
      />
      <button type="button" aria-label={`Remove mapping ${i + 1}`} onClick={() => set((n) => n.request.mappings.splice(i, 1))}>
        Remove
      </button>
    </div>
  );
}

function Extraction({ x, i, path, at, errors, files, model, set }) {
  const k = M.kind(x);
  const lists = M.inboundLists(model).map((p) => p.name);
  const target = k === 'basic' ? model : M.listModel(files, model, x.targetList);
  const props = (target?.properties || []).map((p) => p.name);
  const upd = (fn) => set((n) => fn(n.extractions[i]));
  const head = `${x.modelProperty || 'New extraction'} (${k === 'basic' ? 'header value' : k === 'collection' ? 'Map to Children' : 'Multiple Lists'})`;
  return (
    <details open class="extraction" data-path={path}>
      <summary>
        <span>{head}</span>
        <button type="button" aria-label={`Delete extraction ${i + 1}`} onClick={() => set((n) => n.extractions.splice(i, 1))}>
          Delete
        </button>
      </summary>
      <Toggle
        label="Map to Children"
        path={at(P.join(path, 'mapToChildren'))}
        checked={x.mapToChildren}
        errors={errors}
        onChange={(v) =>
          upd((e) => {
            if (v) {
              e.mapToChildren = true;
              delete e.useMultipleLists;
              delete e.connectorLists;
            } else delete e.mapToChildren;
          })
        }
      />
      <Toggle
        label="Use Multiple Lists"
        path={at(P.join(path, 'useMultipleLists'))}
        checked={x.useMultipleLists}
        errors={errors}
        onChange={(v) =>
          upd((e) => {
            if (v) {
              e.useMultipleLists = true;
              e.connectorLists ||= [{ prefix: '', path: '' }];
              delete e.mapToChildren;
              delete e.connectorListProperty;
            } else {
              delete e.useMultipleLists;
              delete e.connectorLists;
            }
          })
        }
      />
      {k !== 'basic' && <Select label="Target List" path={at(P.join(path, 'targetList'))} value={x.targetList} options={lists} errors={errors} onChange={(v) => upd((e) => (e.targetList = v))} />}
      <Select label="Model Property" path={at(P.join(path, 'modelProperty'))} value={x.modelProperty} options={props} errors={errors} onChange={(v) => upd((e) => (e.modelProperty = v))} />
      <Text label="Connector Property" path={at(P.join(path, 'connectorProperty'))} value={x.connectorProperty} errors={errors} onInput={(v) => upd((e) => (e.connectorProperty = v))} />
      {k === 'collection' && (
        <Text label="Connector List Property" path={at(P.join(path, 'connectorListProperty'))} value={x.connectorListProperty} errors={errors} onInput={(v) => upd((e) => (e.connectorListProperty = v))} />
      )}
      {k !== 'basic' && (
        <>
          <Select
            label="Model Match Property"
            path={at(P.join(path, 'modelMatchProperty'))}
            value={x.modelMatchProperty}
            options={props.includes('Id') ? props : ['Id', ...props]}
            placeholder="— (the record's Id)"
            errors={errors}
            onChange={(v) => upd((e) => (v ? (e.modelMatchProperty = v) : delete e.modelMatchProperty))}
          />
          <Text label="Connector Match Property" path={at(P.join(path, 'connectorMatchProperty'))} value={x.connectorMatchProperty} errors={errors} onInput={(v) => upd((e) => (e.connectorMatchProperty = v))} />
        </>
      )}
      {k === 'multiple' && (
        <fieldset data-path={at(P.join(path, 'connectorLists'))}>
          <legend>Connector Lists</legend>
          <FieldErrors errors={errors} path={P.join(path, 'connectorLists')} />
          {(x.connectorLists || []).map((l, j) => (
            <div class="row" key={j}>
              <Text label="Prefix" path={at(P.join(path, 'connectorLists', j, 'prefix'))} value={l.prefix} errors={errors} onInput={(v) => upd((e) => (e.connectorLists[j].prefix = v))} />
              <Text label="Path" wide path={at(P.join(path, 'connectorLists', j, 'path'))} value={l.path} errors={errors} onInput={(v) => upd((e) => (e.connectorLists[j].path = v))} />
              <button type="button" aria-label={`Remove list ${j + 1}`} onClick={() => upd((e) => e.connectorLists.splice(j, 1))}>
                Remove
              </button>
            </div>
          ))}
          <button type="button" onClick={() => upd((e) => (e.connectorLists ||= []).push({ prefix: '', path: '' }))}>
            Add List
          </button>
        </fieldset>
      )}
    </details>
  );
}

export function GsvEditor(props) {
  const { value: a, path, errors, onChange, files, model } = props;
  const placed = [];
  const at = (p) => (placed.push(p), p);
  const set = (fn) => {
    const next = clone(a);
    fn(next);
    onChange(next);
  };
  const body = (
    <>
      <Text label="Title" path={at(P.join(path, 'title'))} value={a.title} errors={errors} onInput={(v) => set((n) => (n.title = v))} />
      {topLevel(path) && (
        <Toggle label="After Child Configs?" path={at(P.join(path, 'afterChildConfigs'))} checked={a.afterChildConfigs} errors={errors} onChange={(v) => set((n) => (v ? (n.afterChildConfigs = true) : delete n.afterChildConfigs))} />
      )}
      <div data-path={at(P.join(path, 'extractions'))}>
        <FieldErrors errors={errors} path={P.join(path, 'extractions')} />
        {(a.extractions || []).map((x, i) => (
          <Extraction key={i} x={x} i={i} path={P.join(path, 'extractions', i)} at={at} errors={errors} files={files} model={model} set={set} />
        ))}
      </div>
      <button type="button" onClick={() => set((n) => (n.extractions ||= []).push({ modelProperty: '', connectorProperty: '' }))}>
        Add Extraction
      </button>
    </>
  );
  return (
    <Dialog title={`Get Session Values: ${a.title || ''}`} path={path} errors={errors} placed={placed} onReset={props.onReset} onClose={props.onClose} onSave={props.onSave} notice={props.notice} onReload={props.onReload} onDismiss={props.onDismiss}>
      {body}
    </Dialog>
  );
}

const OPERATORS = ['=', '!=', '>', '<', 'isBlank', 'notBlank', 'regex'];

export function FilterEditor(props) {
  const { value: a, path, errors, onChange, model } = props;
  const placed = [];
  const at = (p) => (placed.push(p), p);
  const set = (fn) => {
    const next = clone(a);
    fn(next);
    if (next.filter && !next.filter.conditions?.length) delete next.filter;
    onChange(next);
  };
  const f = a.filter || { match: 'All', conditions: [] };
  const fp = P.join(path, 'filter');
  const props_ = (model?.properties || []).map((p) => p.name);
  const body = (
    <>
      <p class="muted">When the filter does not hold, the action is skipped and the tree goes on.</p>
      <Select label="Match" path={at(P.join(fp, 'match'))} value={f.match || 'All'} options={['All', 'Any']} errors={errors} onChange={(v) => set((n) => ((n.filter ||= { conditions: [] }).match = v || 'All'))} />
      {(f.conditions || []).map((c, i) => {
        const cp = P.join(fp, 'conditions', i);
        const blank = c.operator === 'isBlank' || c.operator === 'notBlank';
        return (
          <div class="row" key={i}>
            <Select label="Property" path={at(P.join(cp, 'property'))} value={c.property} options={props_} errors={errors} onChange={(v) => set((n) => (n.filter.conditions[i].property = v))} />
            <Select label="Operator" path={at(P.join(cp, 'operator'))} value={c.operator} options={OPERATORS} errors={errors} onChange={(v) => set((n) => (n.filter.conditions[i].operator = v))} />
            {!blank && <Text label="Value" path={at(P.join(cp, 'value'))} value={c.value} errors={errors} onInput={(v) => set((n) => (n.filter.conditions[i].value = v))} />}
            <button type="button" aria-label={`Remove condition ${i + 1}`} onClick={() => set((n) => n.filter.conditions.splice(i, 1))}>
              Remove
            </button>
          </div>
        );
      })}
      <button type="button" onClick={() => set((n) => ((n.filter ||= { match: 'All', conditions: [] }).conditions ||= []).push({ property: props_[0], operator: '=', value: '' }))}>
        Add Condition
      </button>
    </>
  );
  return (
    <Dialog title={`Filters: ${a.title || ''}`} path={path} errors={errors} placed={placed} onReset={props.onReset} onClose={props.onClose} onSave={props.onSave} notice={props.notice} onReload={props.onReload} onDismiss={props.onDismiss}>
      {body}
    </Dialog>
  );
}
