#!/usr/bin/env python3
"""Compiles every source of yolotrain with -fsyntax-only against libtorch 2.x headers.

Debian 12 builds against libtorch 1.13.1; users have libtorch 2.x (Debian 13's 2.6, pytorch.org's).
This checks the code against Debian 13's CUDA-enabled libtorch 2.6 headers (trixie contrib's
libtorch-cuda-dev, 2.4 MB, unpacked with dpkg -x, never installed), so a version difference shows
here before it reaches a GPU machine. Where CUDA's headers are at hand (/usr/local/cuda/include, or
CUDA_INCLUDE: the CUDA toolkit, whose runtime, cuBLAS, cuSPARSE, cuSOLVER and NCCL headers libtorch's
CUDA headers include), the CUDA code is checked too (YOLOTRAIN_WITH_CUDA=1, USE_C10D_NCCL, USE_CUDA);
otherwise the CPU paths only, and it says so. Debian's own CUDA headers (non-free nvidia-cuda-dev)
are a 934 MB download, too much for each CI run; nccl.h comes from libnccl-dev (114 MB) only when
the toolkit lacks it.

Usage: scripts/torch2_syntax_check.py [--jobs N] [--only SUBSTRING,...] [--no-cache]
Downloads into ~/.cache/yolotrain/torch2 (YT_TORCH2_CACHE) once; configures build-torch2-check/.
About 8 s a file on one core: 210 files take ~15 min on 2 cores. Each file's result is kept in
YT_TORCH2_CACHE/results under the SHA-256 of its preprocessed input (the compiler's -E output with
its line markers), the command line and the compiler's version: an identical input gives an identical result, so only the
files whose own text, headers or flags changed are compiled again (-E takes ~1 s a file); a cold
cache, or --no-cache, checks everything. fresh-debian.sh keeps the cache beside its other caches.
"""
import argparse
import concurrent.futures as cf
import functools
import hashlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def fetch_headers(cache: Path, packages: list) -> Path:
    """trixie's `packages` unpacked under cache/root (once)."""
    root = cache / "root"
    marks = {"libtorch-cuda-dev": "usr/include/torch/csrc/api/include/torch/version.h",
             "libnccl-dev": "usr/include/nccl.h"}
    packages = [p for p in packages if not (root / marks[p]).exists()]
    if not packages:
        return root
    lists, archives, debs = cache / "lists", cache / "archives", cache / "debs"
    for d in (lists / "partial", archives / "partial", debs):
        d.mkdir(parents=True, exist_ok=True)
    sources = cache / "sources.list"
    sources.write_text("deb http://deb.debian.org/debian trixie main contrib\n")
    opts = [f"-oDir::Etc::SourceList={sources}", "-oDir::Etc::SourceParts=/dev/null",
            f"-oDir::State::Lists={lists}", f"-oDir::Cache={cache}", f"-oDir::Cache::Archives={archives}"]
    run(["apt-get", *opts, "update", "-qq"])
    run(["apt-get", *opts, "download", *packages], cwd=debs, stdout=subprocess.DEVNULL)
    for deb in debs.glob("*.deb"):
        run(["dpkg", "-x", str(deb), str(root)])
    return root


def compile_commands(build: Path) -> list:
    run(["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
         "-DYOLOTRAIN_UNITY_BUILD=OFF", "-DYOLOTRAIN_BUILD_BENCH=ON"], stdout=subprocess.DEVNULL)
    # Generated headers (TensorBoard's protobuf messages) the sources include.
    targets = subprocess.run(["ninja", "-C", str(build), "-t", "targets", "all"], capture_output=True, text=True).stdout
    generated = sorted({t.split(":")[0] for t in targets.splitlines() if t.split(":")[0].endswith(".pb.h")})
    if generated:
        run(["ninja", "-C", str(build), *generated], stdout=subprocess.DEVNULL)
    return json.loads((build / "compile_commands.json").read_text())


@functools.lru_cache(maxsize=None)
def compiler_version(compiler: str) -> bytes:
    return subprocess.run([compiler, "--version"], capture_output=True).stdout


def cached_result(cmd: list, cwd: str, results: Path):
    """The result kept for this command's preprocessed input, and the file it is (to be) kept in."""
    pre = subprocess.run([*cmd, "-E"], cwd=cwd, capture_output=True)
    if pre.returncode != 0:  # a missing header: no key; the check itself says why
        return None, None
    key = hashlib.sha256(compiler_version(cmd[0]) + b"\0" + "\0".join(cmd).encode() + b"\0" +
                         pre.stdout).hexdigest()
    kept = results / f"{key}.json"
    return (json.loads(kept.read_text()) if kept.exists() else None), kept


def check(entry: dict, headers: Path, cuda_include: str, results) -> tuple:
    args, skip = [], False
    for a in shlex.split(entry["command"]):
        if skip or a == "-o":
            skip = not skip
            continue
        if not a.startswith("-DYOLOTRAIN_WITH_CUDA"):
            args.append(a)
    first = ["-isystem", str(headers / "usr/include/torch/csrc/api/include"), "-isystem", str(headers / "usr/include")]
    if cuda_include:
        first += ["-isystem", cuda_include, "-DYOLOTRAIN_WITH_CUDA=1", "-DUSE_C10D_NCCL", "-DUSE_CUDA"]
    else:
        first += ["-DYOLOTRAIN_WITH_CUDA=0"]
    cmd = [args[0], *first, *args[1:]]
    known, kept = cached_result(cmd, entry["directory"], results) if results else (None, None)
    if known is not None:
        return entry["file"], known["rc"], known["stderr"], True
    r = subprocess.run([*cmd, "-fsyntax-only"], cwd=entry["directory"], capture_output=True, text=True)
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        tmp = kept.with_suffix(f".{os.getpid()}.part")
        tmp.write_text(json.dumps({"file": entry["file"], "rc": r.returncode, "stderr": r.stderr}))
        tmp.replace(kept)
    return entry["file"], r.returncode, r.stderr, False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", default="", help="check only files whose path holds one of these (comma-separated)")
    ap.add_argument("--no-cache", action="store_true", help="compile every file, neither reading nor keeping results")
    a = ap.parse_args()
    cache = Path(os.environ.get("YT_TORCH2_CACHE", Path.home() / ".cache/yolotrain/torch2"))
    cuda_include = os.environ.get("CUDA_INCLUDE", "/usr/local/cuda/include")
    if not Path(cuda_include, "cuda_runtime_api.h").exists():
        print(f"no CUDA runtime headers at {cuda_include}: the CPU paths only (set CUDA_INCLUDE)")
        cuda_include = ""
    nccl = cuda_include and Path(cuda_include, "nccl.h").exists()
    headers = fetch_headers(cache, ["libtorch-cuda-dev"] + ([] if nccl or not cuda_include else ["libnccl-dev"]))
    version = (headers / "usr/include/torch/csrc/api/include/torch/version.h").read_text()
    parts = {l.split()[1]: l.split()[2] for l in version.splitlines() if l.startswith("#define TORCH_VERSION_")}
    print(f"libtorch headers {parts.get('TORCH_VERSION_MAJOR')}.{parts.get('TORCH_VERSION_MINOR')}."
          f"{parts.get('TORCH_VERSION_PATCH')} at {headers}")
    if cuda_include:
        print(f"CUDA headers at {cuda_include}" + ("" if nccl else f", nccl.h from libnccl-dev at {headers}"))
    entries = compile_commands(ROOT / "build-torch2-check")
    if a.only:
        entries = [e for e in entries if any(s in e["file"] for s in a.only.split(","))]
    failed = reused = 0
    results = None if a.no_cache else cache / "results"
    with cf.ThreadPoolExecutor(a.jobs) as pool:
        for path, rc, err, hit in pool.map(lambda e: check(e, headers, cuda_include, results), entries):
            reused += hit
            if rc:
                failed += 1
                print(f"FAILED {os.path.relpath(path, ROOT)}")
                print("\n".join([l for l in err.splitlines() if "error" in l][:10]))
    print(f"{len(entries) - failed} passed, {failed} failed (-fsyntax-only against libtorch 2.x"
          f"{' with CUDA' if cuda_include else ''}; {reused} of them unchanged since a kept result)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
