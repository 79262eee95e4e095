# Builds the real tools pinned in tools/versions into .tools/<tool>-<version>/, where
# benchkit finds them by itself (benchkit/installed.py, benchkit/gitea/tools.py): the
# arms' tools, and Gitea (`benchkit run --host gitea` starts it; the tests run on it).
# Sourced by scripts/setup (`--arms`, `--host gitea`) and scripts/test-setup, from the
# checkout's root, after `set -euo pipefail`.
# Each tool comes from its source archive in $BENCHKIT_TOOL_ARCHIVES (default:
# the directory shared/tools beside the checkout), checked against its sha256; without the archive,
# a Go tool comes from upstream at its pinned commit (`go install MODULE@COMMIT`).
# A build is kept by version and archive, so a second run costs seconds. A tool that
# cannot be had gets one line saying why, and .tools/<tool>-<version>.absent.

# shellcheck source=../tools/versions
source tools/versions
mkdir -p .tools
archives=${BENCHKIT_TOOL_ARCHIVES:-$(cd .. && pwd)/shared/tools}
failures=()
me=$(basename "$0")

# absent TOOL VERSION WHY: say why a tool is not built, once, and remember it for the tests.
absent() {
  echo "$me: $1 $2 not built: $3" >&2
  echo "$3" > ".tools/$1-$2.absent"
  failures+=("$1 $2: $3")
}

# built TOOL VERSION BINARY [SHA256]: whether this version's build (of this archive) is in place.
built() {
  local dir=".tools/$1-$2"
  [ -x "$dir/$3" ] || return 1
  [ -z "${4:-}" ] || [ "$(cat "$dir/.archive-sha256" 2>/dev/null)" = "$4" ] \
    || [ "$(cat "$dir/.upstream" 2>/dev/null)" = "$4" ] || return 1
  rm -f ".tools/$1-$2.absent"
  echo "$me: $1 $2 already built ($dir/)"
}

# installed TOOL VERSION TMP: move a whole build into place.
installed() {
  rm -rf ".tools/$1-$2" && mv "$3" ".tools/$1-$2"
  rm -f ".tools/$1-$2.absent"
  echo "$me: $1 $2 built (.tools/$1-$2/)"
}

# unpack TOOL VERSION ARCHIVE SHA256 DEST: the archive, checked against its pin,
# unpacked into DEST (it holds one directory named after the tool). Status 2: no archive.
unpack() {
  local file="$archives/$3" actual
  [ -f "$file" ] || return 2
  actual=$(sha256sum "$file" | cut -d' ' -f1)
  if [ "$actual" != "$4" ]; then
    absent "$1" "$2" "$file has sha256 $actual, tools/versions pins $4"
    return 1
  fi
  mkdir -p "$5"
  if ! tar -xzf "$file" -C "$5" 2> ".tools/$1-$2.log"; then
    absent "$1" "$2" "cannot unpack $file: $(tail -n 1 ".tools/$1-$2.log")"
    return 1
  fi
}

# build_go_tool TOOL VERSION ARCHIVE SHA256 VERSION_VAR MODULE COMMIT: `go build` from the
# archive, or without it `go install MODULE@COMMIT`, the version set as upstream's
# release builds set it (ldflags).
build_go_tool() {
  local name=$1 version=$2 tmp log=".tools/$1-$2.log" status=0
  built "$name" "$version" "$name" "$4" && return 0
  built "$name" "$version" "$name" "$7" && return 0
  if ! command -v go >/dev/null; then
    absent "$name" "$version" "Go is not installed (no \`go\` on PATH; Debian: apt-get install golang)"
    return 0
  fi
  tmp=$(mktemp -d ".tools/$name-build.XXXXXX")
  unpack "$name" "$version" "$3" "$4" "$tmp/src" || status=$?
  if [ "$status" = 1 ]; then rm -rf "$tmp"; return 0; fi
  if [ "$status" = 2 ]; then
    echo "$me: no source archive $archives/$3: building $name $version from upstream, $6@$7 (log $log)"
    if GOBIN="$PWD/$tmp" GOTOOLCHAIN=local go install -trimpath -ldflags "-X $5=$version" \
         "$6@$7" > "$log" 2>&1; then
      echo "$7" > "$tmp/.upstream"
      installed "$name" "$version" "$tmp"
    else
      rm -rf "$tmp"
      absent "$name" "$version" "no source archive $archives/$3 (set BENCHKIT_TOOL_ARCHIVES to its directory), and \`go install $6@$7\` failed: $(tail -n 2 "$log" | tr '\n' ' ')"
    fi
    return 0
  fi
  echo "$me: building $name $version from $3 (log $log)"
  if (cd "$tmp/src/$name" && GOTOOLCHAIN=local go build -trimpath -ldflags "-X $5=$version" \
        -o "$PWD/../../$name" .) > "$log" 2>&1; then
    rm -rf "$tmp/src"
    echo "$4" > "$tmp/.archive-sha256"
    installed "$name" "$version" "$tmp"
  else
    rm -rf "$tmp"
    absent "$name" "$version" "go build failed: $(tail -n 3 "$log" | tr '\n' ' ')"
  fi
}

build_tea() {
  build_go_tool tea "$TEA_VERSION" "$TEA_ARCHIVE" "$TEA_SHA256" "$TEA_VERSION_VAR" \
    "$TEA_MODULE" "$TEA_COMMIT"
}

build_gitea_mcp() {
  build_go_tool gitea-mcp "$GITEA_MCP_VERSION" "$GITEA_MCP_ARCHIVE" "$GITEA_MCP_SHA256" \
    "$GITEA_MCP_VERSION_VAR" "$GITEA_MCP_MODULE" "$GITEA_MCP_COMMIT"
}

# build_gitea_axi: `npm ci && npm run build` from the archive, dev dependencies pruned,
# then laid out as npm installs a package globally: lib/node_modules/gitea-axi/ (with
# its own node_modules/) and bin/gitea-axi, a symlink to its dist/main.js.
build_gitea_axi() {
  local version=$GITEA_AXI_VERSION tmp src pkg log=".tools/gitea-axi-$GITEA_AXI_VERSION.log" status=0
  built gitea-axi "$version" bin/gitea-axi "$GITEA_AXI_SHA256" && return 0
  if ! command -v npm >/dev/null; then
    absent gitea-axi "$version" "Node.js and npm are not installed (Debian: apt-get install nodejs npm)"
    return 0
  fi
  tmp=$(mktemp -d ".tools/gitea-axi-build.XXXXXX")
  unpack gitea-axi "$version" "$GITEA_AXI_ARCHIVE" "$GITEA_AXI_SHA256" "$tmp/src" || status=$?
  if [ "$status" = 2 ]; then
    absent gitea-axi "$version" "no source archive $archives/$GITEA_AXI_ARCHIVE (set BENCHKIT_TOOL_ARCHIVES to its directory; gitea-axi is on no registry: build commit $GITEA_AXI_COMMIT from its repository with \`npm ci && npm run build && npm install -g .\`)"
  fi
  if [ "$status" != 0 ]; then rm -rf "$tmp"; return 0; fi
  src="$tmp/src/gitea-axi" pkg="$tmp/lib/node_modules/gitea-axi"
  echo "$me: building gitea-axi $version from $GITEA_AXI_ARCHIVE (log $log)"
  if (cd "$src" && npm ci --no-audit --no-fund && npm run build \
        && npm prune --omit=dev --no-audit --no-fund) > "$log" 2>&1; then
    mkdir -p "$pkg" "$tmp/bin"
    cp -r "$src"/package.json "$src"/dist "$src"/skills "$src"/node_modules "$pkg/"
    chmod +x "$pkg/dist/main.js"
    ln -s ../lib/node_modules/gitea-axi/dist/main.js "$tmp/bin/gitea-axi"
    rm -rf "$tmp/src"
    echo "$GITEA_AXI_SHA256" > "$tmp/.archive-sha256"
    installed gitea-axi "$version" "$tmp"
  else
    rm -rf "$tmp"
    absent gitea-axi "$version" "npm build failed: $(tail -n 3 "$log" | tr '\n' ' ')"
  fi
}

# --- Gitea -------------------------------------------------------------------------

# gitea_module_agrees: tools/gitea/go.mod requires the pinned Gitea and builds it as a tool.
gitea_module_agrees() {
  grep -Eq "^[[:space:]]*(require[[:space:]]+)?$GITEA_MODULE v$GITEA_VERSION( |$)" tools/gitea/go.mod \
    && grep -Eq "^tool $GITEA_MODULE$" tools/gitea/go.mod
}

# regenerate_gitea_module: a go.mod requiring the pinned Gitea, with Gitea's own replace
# lines copied (they apply only in the main module), then tidied.
regenerate_gitea_module() {
  local modfile
  modfile=$(go mod download -json "$GITEA_MODULE@v$GITEA_VERSION" \
            | python3 -c 'import json, sys; print(json.load(sys.stdin).get("GoMod", ""))')
  [ -n "$modfile" ] || return 1
  {
    echo "// Builds the pinned Gitea (benchkit run --host gitea, the tests). Gitea's go.mod carries replace"
    echo "// directives, which apply only in the main module, so \`go install\` refuses it:"
    echo "// it is built here as a dependency, with those replace lines copied."
    echo "// Generated by scripts/tools.sh from the pin in tools/versions."
    echo "module benchkit.local/tools/gitea"
    echo
    grep -m1 '^go ' "$modfile"
    echo
    grep '^replace ' "$modfile" | sed 's| //.*||'
    echo
    echo "tool $GITEA_MODULE"
    echo
    echo "require $GITEA_MODULE v$GITEA_VERSION"
  } > tools/gitea/go.mod
  rm -f tools/gitea/go.sum
  (cd tools/gitea && go mod tidy)
}

# build_gitea: Gitea as a dependency of tools/gitea, with the templates and options it
# reads from disk (no bindata) beside the binary, moved into place only when whole.
build_gitea() {
  local tmp source log=".tools/gitea-$GITEA_VERSION.log"
  built gitea "$GITEA_VERSION" gitea && return 0
  if ! command -v go >/dev/null; then
    absent gitea "$GITEA_VERSION" "Go is not installed (no \`go\` on PATH; Debian: apt-get install golang)"
    return 0
  fi
  if ! gitea_module_agrees; then
    echo "$me: tools/gitea/go.mod does not pin $GITEA_MODULE v$GITEA_VERSION: regenerating it"
    regenerate_gitea_module || { absent gitea "$GITEA_VERSION" "cannot regenerate tools/gitea/go.mod"; return 0; }
  fi
  tmp=$(mktemp -d .tools/gitea-build.XXXXXX)
  echo "$me: building gitea $GITEA_VERSION (cold: several minutes; log $log)"
  if ! (cd tools/gitea \
        && go build -tags 'sqlite sqlite_unlock_notify' -ldflags "-X main.Version=$GITEA_VERSION" \
             -o "../../$tmp/gitea" "$GITEA_MODULE") > "$log" 2>&1; then
    rm -rf "$tmp"
    absent gitea "$GITEA_VERSION" "go build failed: $(tail -n 3 "$log" | tr '\n' ' ')"
    return 0
  fi
  source=$(cd tools/gitea && go list -m -f '{{.Dir}}' "$GITEA_MODULE")
  cp -r "$source/templates" "$source/options" "$source/public" "$tmp/"
  chmod -R u+w "$tmp"
  installed gitea "$GITEA_VERSION" "$tmp"
}
