#!/usr/bin/env bash
# Installs yolotrain's build and test dependencies from Debian's apt repositories.
# Idempotent: installs only what is missing. Works as root; uses sudo otherwise.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev libyaml-cpp-dev libfmt-dev catch2
  libopencv-core-dev libopencv-imgproc-dev libturbojpeg0-dev libpng-dev
  nlohmann-json3-dev libgloo-dev libssl-dev libdnnl-dev
  libopenblas0-pthread
  libonnx-dev libprotobuf-dev libopencv-dnn-dev
  python3-torch python3-onnx python3-yaml
  protobuf-compiler python3-crc32c
  libcurl4-openssl-dev libpugixml-dev libmicrohttpd-dev
  awscli prometheus prometheus-pushgateway iproute2 strace
)
# awscli: the S3 tests cross-check yolotrain's S3 client with an independent one (Debian's aws,
# /usr/bin/aws), against s3rver (from npm, below). prometheus and prometheus-pushgateway: the
# control endpoint's tests start a real Prometheus that scrapes it and a real Pushgateway it pushes to.
# iproute2: the multi-host test makes two network namespaces (ip netns) joined by a veth pair.
# strace: the preemption test shows that preemption=auto outside a cloud connects nowhere.
# node runs ONNX Runtime (onnxruntime-node, from npm) in the ONNX export tests; Debian's nodejs
# and npm when no node is installed (a node from elsewhere is used as it is).
if ! command -v node >/dev/null; then packages+=(nodejs npm); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# The npm packages the tests run under node, each into tests/<dir>/node_modules at the version its
# package-lock.json pins, with --ignore-scripts: onnxruntime-node's install script only fetches
# optional GPU binaries (from a host this network may not reach); s3rver (an S3 API server) needs
# none. A failure is a warning: those tests then skip, saying why.
#   install_npm_package DIR FILE-THAT-SAYS-INSTALLED WHAT TESTS
install_npm_package() {
  local dir="$root/tests/$1"
  if [ -e "$dir/node_modules/$2" ]; then return 0; fi
  if ! command -v npm >/dev/null; then
    echo "install-deps: WARNING no npm; the $4 tests will skip" >&2
    return 0
  fi
  echo "install-deps: npm ci --ignore-scripts in tests/$1 ($3)"
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) ||
    echo "install-deps: WARNING npm could not install $3; the $4 tests will skip" >&2
}
install_npm_packages() {
  install_npm_package onnxruntime onnxruntime-node onnxruntime-node "ONNX Runtime"
  install_npm_package s3rver s3rver/bin/s3rver.js s3rver S3
}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  install_npm_packages
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
install_npm_packages
