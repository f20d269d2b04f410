#!/bin/sh
# The engine's default OCI runtime (dockerd --add-runtime): runc, after removing CAP_SYS_RESOURCE from the
# container's capability lists (`create --bundle`: its config.json) and from an exec'd process's
# (`exec --process FILE`: `docker exec --privileged`, which kind runs on its nodes). The development
# machines' bounding set lacks it, and runc fails every privileged container or exec with "unable to apply
# caps: operation not permitted" otherwise (docker 20.10 ignores --cap-drop for privileged containers).
# Nothing else in the spec changes.
set -eu
bundle=
process=
prev=
for a in "$@"; do
  case "$prev" in --bundle | -b) bundle=$a ;; --process | -p) process=$a ;; esac
  case "$a" in --bundle=*) bundle=${a#--bundle=} ;; --process=*) process=${a#--process=} ;; esac
  prev=$a
done
# strip FILE KEY: drops CAP_SYS_RESOURCE from every capability list under KEY ("process" in a
# config.json, the top level in an exec process file).
strip() {
  grep -q CAP_SYS_RESOURCE "$1" || return 0
  py=/usr/bin/python3
  [ -x "$py" ] || py=python3
  "$py" - "$1" "$2" <<'PY'
import json, sys
path, key = sys.argv[1], sys.argv[2]
with open(path) as f:
    spec = json.load(f)
proc = spec.get(key, {}) if key else spec
caps = proc.get("capabilities", {}) or {}
for kind, names in caps.items():
    if isinstance(names, list):
        caps[kind] = [c for c in names if c != "CAP_SYS_RESOURCE"]
with open(path, "w") as f:
    json.dump(spec, f)
PY
}
if [ -n "$bundle" ] && [ -f "$bundle/config.json" ]; then strip "$bundle/config.json" process; fi
if [ -n "$process" ] && [ -f "$process" ]; then strip "$process" ""; fi
exec runc "$@"
