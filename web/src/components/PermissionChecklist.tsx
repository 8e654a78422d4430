import { PERMISSIONS, type Can } from '../permissions.ts';

interface PermissionChecklistProps {
  value: string[];
  onChange: (value: string[]) => void;
  /** What the caller holds: nobody may grant a permission they lack. */
  can: Can;
  error?: string | undefined;
}

export function PermissionChecklist({ value, onChange, can, error }: PermissionChecklistProps) {
  const toggle = (name: string, on: boolean) =>
    onChange(on ? [...new Set([...value, name])] : value.filter((item) => item !== name));
  return (
    <div className="permissions">
      {PERMISSIONS.map((group) => (
        <fieldset key={group.group}>
          <legend>{group.group}</legend>
          {group.items.map((item) => {
            const allowed = can(item.name);
            return (
              <label
                key={item.name}
                className="check"
                title={allowed ? undefined : 'You do not hold this permission yourself'}
              >
                <input
                  type="checkbox"
                  name="permissions"
                  value={item.name}
                  checked={value.includes(item.name)}
                  disabled={!allowed}
                  onChange={(event) => toggle(item.name, event.target.checked)}
                />
                <span>
                  {item.label} <code className="muted small">{item.name}</code>
                </span>
              </label>
            );
          })}
        </fieldset>
      ))}
      {error === undefined ? null : (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}
