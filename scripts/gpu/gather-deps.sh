#!/usr/bin/env bash
# Gathers the Debian libraries yolotrain's build needs, all but libtorch, into one relocatable folder
# for building on a CUDA machine that has PyTorch (and so libtorch) but no Debian packages and no
# network (scripts/gpu/README.md). The package list is computed, not written by hand:
#   runtime: the NEEDED entries of the binaries in BUILD_DIR (a finished CPU build), followed
#            through each library's own NEEDED entries, minus libtorch, glibc, libstdc++ and libgcc;
#   headers: every header under /usr/include that BUILD_DIR's objects were compiled against
#            (ninja's dependency log), minus libtorch's own and the C/C++ runtime's;
#   tools:   protoc, which the build runs (TensorBoard's event messages).
# Usage: scripts/gpu/gather-deps.sh BUILD_DIR OUT_DIR      (needs apt-get download, dpkg, readelf)
set -euo pipefail
build=$(cd "${1:?usage: gather-deps.sh BUILD_DIR OUT_DIR}" && pwd)
out=${2:?usage: gather-deps.sh BUILD_DIR OUT_DIR}
mkdir -p "$out" && out=$(cd "$out" && pwd)
rm -rf "$out/sysroot" "$out/debs" && mkdir -p "$out/debs" "$out/sysroot"

# Packages the CUDA machine has or must not take from Debian: libtorch (PyTorch brings its own, with
# its glog/gflags), glibc, the compiler's runtime and headers.
skip_re='^(libtorch|libc6|libc6-dev|libstdc\+\+|libgcc|linux-libc-dev|libgoogle-glog|libgflags|libgomp1$)'

needed() { readelf -d "$1" 2>/dev/null | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p'; }
cache=$(ldconfig -p)
resolve() { awk -v n="$1" '$1 == n && /x86-64/ {print $NF; exit}' <<<"$cache"; }
owner() {  # the package holding a file; with merged /usr a package may list it under /lib
  local real; real=$(readlink -f "$1")
  { dpkg -S "$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null || true; } | head -1 | cut -d: -f1
}

declare -A seen=() pkgs=() direct=()
queue=()
while IFS= read -r bin; do
  for lib in $(needed "$bin"); do direct[$lib]=1; queue+=("$lib"); done
done < <(find "$build" -type f -executable \( -name '*.so*' -o ! -name '*.*' \) ! -path '*/CMakeFiles/*'
         readlink -f "$(command -v protoc)")   # protoc, which the build runs: its libprotoc by its own name
while ((${#queue[@]})); do
  lib=${queue[0]}; queue=("${queue[@]:1}")
  [[ -n ${seen[$lib]:-} || $lib == libyolotrain* || $lib == libtorch* || $lib == libc10* ]] && continue
  seen[$lib]=1
  path=$(resolve "$lib"); [[ -z $path ]] && continue
  pkg=$(owner "$path"); [[ -z $pkg || $pkg =~ $skip_re ]] && continue
  # libblas.so.3 / liblapack.so.3 are alternatives: take the reference ones (1 MB) where this machine
  # points them at OpenBLAS (43 MB); only OpenCV's core links them, for nothing the build uses.
  [[ $pkg == libopenblas* ]] && pkg=libblas3 && pkgs[liblapack3]=1
  pkgs[$pkg]=1
  for dep in $(needed "$path"); do queue+=("$dep"); done
done
# Headers: the packages owning the headers the build read.
while IFS= read -r pkg; do [[ $pkg =~ $skip_re ]] || pkgs[$pkg]=1
done < <(ninja -C "$build" -t deps 2>/dev/null | awk '$1 ~ /^\/usr\/include\// {print $1}' | sort -u |
         xargs -r dpkg -S 2>/dev/null | cut -d: -f1 | tr ',' '\n' | sed 's/ //g' | sort -u)
# The development symlinks (libfoo.so) of what the binaries link directly.
for lib in "${!direct[@]}"; do
  path=$(resolve "$lib"); [[ -z $path ]] && continue
  dev=$(owner "${path%%.so*}.so")
  [[ -n $dev && ! $dev =~ $skip_re ]] && pkgs[$dev]=1
done
pkgs[protobuf-compiler]=1                          # protoc itself (its libraries: above)
pkgs[zlib1g-dev]=1                                 # find_package(PNG) asks for zlib too
# Multi-arch names carry ":amd64" in dpkg -S; apt-get download takes the plain name.
mapfile -t list < <(printf '%s\n' "${!pkgs[@]}" | sed 's/:amd64$//' | sort -u)
(cd "$out/debs" && apt-get download "${list[@]}" >/dev/null)
for d in "$out"/debs/*.deb; do dpkg -x "$d" "$out/sysroot"; done
# Files the CMake configs gathered name but other packages hold (ONNX's names libonnxifi's): add those.
extra=()
while IFS= read -r f; do
  [[ -e $out/sysroot/usr/${f#lib/} || -e $out/sysroot/usr/$f ]] && continue
  p=$(owner "/usr/$f"); [[ -n $p && -z ${pkgs[$p]:-} && -z ${pkgs[$p:amd64]:-} ]] && extra+=("${p%:amd64}") && pkgs[$p]=1
done < <(grep -rhoE '\$\{_IMPORT_PREFIX\}/lib[^" ]*' "$out/sysroot" --include='*.cmake' | sed 's|${_IMPORT_PREFIX}/||' | sort -u)
if ((${#extra[@]})); then
  (cd "$out/debs" && apt-get download "${extra[@]}" >/dev/null)
  for d in "$out"/debs/*.deb; do dpkg -x "$d" "$out/sysroot"; done
  list+=("${extra[@]}")
fi
rm -rf "$out/debs" "$out/sysroot/usr/share/doc" "$out/sysroot/usr/share/man" "$out/sysroot/usr/share/lintian"
# Static archives a shared build never uses, but those a CMake config names: find_package fails
# when a file its targets name is missing (pugixml, ONNX).
keep=$(grep -rhoE '[A-Za-z0-9_+-]+\.a"' "$out/sysroot" --include='*.cmake' | tr -d '"' | sort -u | tr '\n' ' ')
while IFS= read -r a; do
  [[ " $keep " == *" $(basename "$a") "* || $(basename "$a") == libCatch2*.a ]] || rm -f "$a"
done < <(find "$out/sysroot" -name '*.a')
printf '%s\n' "${list[@]}" >"$out/packages.txt"
# One compressed file to carry (the device takes 64 MiB a call); scripts/gpu/check.sh unpacks it.
tar -C "$out" -I 'xz -T0' -cf "$out/sysroot.tar.xz" sysroot
cat >"$out/env.sh" <<'ENV'
# source me on the build machine: points CMake, pkg-config, the compiler and the loader at sysroot/
d=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=$d/sysroot/usr/lib/x86_64-linux-gnu
export YT_DEPS_PREFIX=$d/sysroot/usr
export LD_LIBRARY_PATH=$lib:$lib/blas:$lib/lapack:$d/sysroot/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_PATH=$lib/pkgconfig:$d/sysroot/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_SYSROOT_DIR=$d/sysroot   # the .pc files say prefix=/usr
export CPATH=$d/sysroot/usr/include:$d/sysroot/usr/include/x86_64-linux-gnu${CPATH:+:$CPATH}  # + multiarch: opensslconf.h
export PATH=$d/sysroot/usr/bin:$PATH        # protoc
ENV
echo "gathered ${#list[@]} packages into $out/sysroot ($(du -sh "$out/sysroot" | cut -f1)," \
     "$(du -h "$out/sysroot.tar.xz" | cut -f1) as sysroot.tar.xz); the list: $out/packages.txt"
