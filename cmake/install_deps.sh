#!/usr/bin/env bash
# Installs the Debian packages TileLab builds with, only those missing (idempotent, fast when all present).
set -euo pipefail

# Extra package names on the command line replace the default list (e.g. clang for the fuzz target).
PACKAGES=(
  cmake ninja-build g++ pkg-config
  libimgui-dev libglfw3-dev liblua5.4-dev libcairo2-dev libsqlite3-dev
  nlohmann-json3-dev libcli11-dev libstb-dev
  googletest libgtest-dev libbenchmark-dev
  xvfb xauth fonts-dejavu-core
  python3-venv python3-dev
)

if (($# > 0)); then PACKAGES=("$@"); fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "tilelab setup: missing packages (${missing[*]}) and not root; install them or run as root" >&2
    exit 1
  fi
fi
echo "tilelab setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

if ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "tilelab setup: the CUDA toolkit (>= 12.8) is required for building; install it under /usr/local/cuda" >&2
  exit 1
fi
