# Sourced by the scripts that build (build-package.sh, serve.sh, bench.sh): make sure the Debian
# toolchain and the npm packages are there before the first build step, instead of failing deep in
# CMake or in a bundler. As root it installs what is missing the way scripts/run.sh does
# (scripts/setup.sh, idempotent); otherwise it stops with one line naming scripts/setup.sh.
#   need_toolchain WHO   WHO names the command in the message (e.g. "npm start")
need_toolchain() {
  local who="$1" missing=""
  local tool
  for tool in emcmake em++ cmake ninja wasm-objdump; do
    command -v "$tool" >/dev/null 2>&1 || { missing="$tool"; break; }
  done
  [ -z "$missing" ] && [ ! -f /usr/include/xsimd/xsimd.hpp ] && missing="xsimd headers"
  if [ -n "$missing" ]; then
    if [ "$(id -u)" -eq 0 ]; then
      echo "$who: $missing is missing; installing the toolchain with scripts/setup.sh" >&2
      scripts/setup.sh
    else
      echo "$who: $missing is missing: run scripts/setup.sh as root first (it installs the Debian toolchain)" >&2
      exit 1
    fi
  fi
  # npm packages (esbuild bundles the components; playwright, onnxruntime-web for tests and bench):
  # `npm ci` when node_modules is absent or older than the lock file, as scripts/setup.sh does
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "$who: npm ci" >&2
    npm ci --no-audit --no-fund --ignore-scripts
  fi
}
