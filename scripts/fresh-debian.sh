#!/usr/bin/env bash
# Runs the README's two commands on a brand-new Debian (12 "bookworm" by default, 13 "trixie" with
# --release trixie): a debootstrap chroot made for this run, holding a clean clone of the committed HEAD and ../shared beside it as CI has it. Nothing
# installed by hand on this machine can leak in, so a missing step in scripts/install-deps.sh (a
# package, a node module, a python module) fails here instead of on a new user's machine.
#
#   bash scripts/fresh-debian.sh                      # test command, then the main command (1 epoch)
#   bash scripts/fresh-debian.sh 'bash scripts/demo.sh'           # any command, run in the clone
#   bash scripts/fresh-debian.sh --release trixie ...  # the same on a brand-new Debian 13
#   FRESH_KEEP=1 bash scripts/fresh-debian.sh ...     # leave the tree in $FRESH_ROOT to look at
#   FRESH_CUDA_HEADERS=/usr/local/cuda/include ...     # that folder read-only at /opt/cuda/include in
#                            the root, CUDA_INCLUDE naming it (scripts/torch2_syntax_check.py's CUDA
#                            check; the README's commands never use it)
#
# Needs root (debootstrap, chroot, mounts) and Debian's package registry. The base system
# (debootstrap --variant=minbase, about a minute) is made once per release and kept as a tarball in
# $FRESH_CACHE (default /var/tmp/yolotrain-fresh); every run unpacks it anew into $FRESH_ROOT
# (default /var/tmp/yolotrain-fresh-root-<release>).
# Repeat runs are faster through caches that cannot change the result: apt's downloaded .deb files
# (apt checks each against the signed index), ccache's directory (a hit is a byte-identical
# compile of identical input) and torch2_syntax_check.py's cache (its results keyed by each file's
# preprocessed input) are bind-mounted from $FRESH_CACHE, one of each per release. FRESH_NO_CACHE=1 uses
# none of them.
# Exit status: the command's; 125 when no fresh root can be made here (.ci/run then runs the
# commands directly, saying so).
set -euo pipefail
project=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
shared=$(cd "$project/../shared" 2>/dev/null && pwd) || shared=""
release=bookworm
if [ "${1:-}" = --release ]; then
  release=${2:?"--release needs a Debian release name (bookworm, trixie)"}
  shift 2
fi
case $release in
  bookworm | trixie) ;;
  *) echo "fresh-debian: --release $release: yolotrain supports bookworm (Debian 12) and trixie (Debian 13)" >&2
     exit 2 ;;
esac
cache=${FRESH_CACHE:-/var/tmp/yolotrain-fresh}
root=${FRESH_ROOT:-/var/tmp/yolotrain-fresh-root-$release}
mirror=${FRESH_MIRROR:-http://deb.debian.org/debian}
default_cmd='bash scripts/test.sh && bash scripts/demo.sh data=shapes epochs=1 imgsz=160 batch=16 name=shapes'
cmd=${1:-$default_cmd}
say() { echo "fresh-debian ($release): $*"; }

[ "$(id -u)" -eq 0 ] || { say "needs root (debootstrap, chroot, mounts)" >&2; exit 125; }
mkdir -p "$cache"

make_base() {
  local base=$cache/$release-base.tar tmp
  [ -s "$base" ] && return 0
  if ! command -v debootstrap >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null 2>&1 ||
      { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null; }
  fi
  tmp=$(mktemp -d "$cache/base.XXXXXX")
  say "making the base system once (debootstrap --variant=minbase $release, about a minute)"
  if ! debootstrap --variant=minbase --include=git,ca-certificates "$release" "$tmp" "$mirror" >"$tmp.log" 2>&1; then
    tail -5 "$tmp.log" >&2; say "debootstrap failed (log $tmp.log)" >&2; rm -rf "$tmp"; return 1
  fi
  tar -C "$tmp" -cf "$base.part" . && mv "$base.part" "$base" && rm -rf "$tmp" "$tmp.log"
}

unmount_all() {
  # Deepest first; lazily, so a process still holding a file does not keep the tree mounted.
  local m
  for m in $(awk -v r="$root/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
}

cleanup() {
  unmount_all
  [ -n "${FRESH_KEEP:-}" ] && return 0
  # Never delete through a mount that is still there: the caches are bind mounts of this disk.
  if grep -q " $root/" /proc/mounts; then say "left $root in place: something is still mounted under it" >&2; return 0; fi
  rm -rf --one-file-system "$root"
}

bind() {  # bind <host dir> <dir in root>
  mkdir -p "$root$2" && mount --bind "$1" "$root$2"
}

# The new root: the base unpacked anew, the kernel's file systems, the caches, the clone and
# ../shared. Every step checked (set -e does not apply inside a function called with ||).
setup_root() {
  unmount_all
  if grep -q " $root/" /proc/mounts; then
    say "something is still mounted under $root; unmount it first (see /proc/mounts)" >&2; return 1
  fi
  rm -rf --one-file-system "$root" && mkdir -p "$root/srv" &&
    tar -C "$root" -xf "$cache/$release-base.tar" || return 1
  cp /etc/resolv.conf "$root/etc/resolv.conf" || return 1
  # /etc/hosts as Debian's installer (or a container runtime) writes it: bookworm's debootstrap
  # leaves none, and without it "localhost" resolves only by DNS (these are the lines netbase's
  # postinst writes where none is, as trixie's install-deps pulls it in).
  if [ ! -e "$root/etc/hosts" ]; then
    printf '%s\n' '127.0.0.1	localhost' '::1		localhost ip6-localhost ip6-loopback' \
      'ff02::1		ip6-allnodes' 'ff02::2		ip6-allrouters' >"$root/etc/hosts" || return 1
  fi
  # The network's trust, as its name servers: certificate authorities this machine added (a TLS
  # proxy in front of the registries, say) are added to the new root's store too.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" &&
      chroot "$root" update-ca-certificates >/dev/null 2>&1 || return 1
  fi
  mount -t proc proc "$root/proc" && mount -t sysfs sys "$root/sys" || return 1
  # /dev with its submounts (pts, shm), as a slave: mounts made inside never reach the host's /dev.
  mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev" || return 1
  if [ -z "${FRESH_NO_CACHE:-}" ]; then
    local apt=$cache/apt-archives-$release ccache=$cache/ccache-$release torch2=$cache/torch2-$release
    mkdir -p "$apt/partial" "$ccache" "$torch2" || return 1
    bind "$apt" /var/cache/apt/archives && bind "$ccache" /var/cache/ccache || return 1
    # torch2_syntax_check.py's headers and its results by preprocessed input (same input, same result).
    bind "$torch2" /var/cache/yolotrain-torch2 || return 1
    # Keep the downloaded packages for the next run (a chroot-like root deletes them otherwise).
    rm -f "$root/etc/apt/apt.conf.d/docker-clean"
    echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >"$root/etc/apt/apt.conf.d/01keep-debs"
  fi
  if [ -n "${FRESH_CUDA_HEADERS:-}" ]; then
    bind "$(readlink -f "$FRESH_CUDA_HEADERS")" /opt/cuda/include && mount -o remount,bind,ro "$root/opt/cuda/include" ||
      return 1
  fi
  git clone -q "$project" "$root/srv/project" || return 1
  # ../shared copied (71 MB), writable as CI has it (a labels cache is written beside a dataset).
  if [ -n "$shared" ]; then
    cp -a "$shared" "$root/srv/shared" || return 1
  else
    say "no ../shared beside the project: the tests that need it skip"
  fi
}

trap cleanup EXIT
make_base || exit 125
setup_root || { say "could not make the fresh root in $root" >&2; exit 125; }

say "running in a new $release at HEAD $(git -C "$project" rev-parse --short HEAD): $cmd"
start=$(date +%s)
cache_env=()
[ -n "${FRESH_NO_CACHE:-}" ] || cache_env=(YT_TORCH2_CACHE=/var/cache/yolotrain-torch2)
set +e
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  LANG=C.UTF-8 CI=true CCACHE_DIR=/var/cache/ccache NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
  "${cache_env[@]}" \
  ${FRESH_CUDA_HEADERS:+CUDA_INCLUDE=/opt/cuda/include} /bin/bash -c "cd /srv/project && $cmd"
rc=$?
set -e
say "exit $rc after $(($(date +%s) - start)) s"
exit $rc
