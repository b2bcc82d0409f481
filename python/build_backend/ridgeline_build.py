"""A PEP 517 build backend for ridgeline's Python module, using only the standard library.

build_wheel configures the project with CMake (Release, the Python module only, for the
interpreter running pip), builds the `_ridgeline` target and zips the package as a wheel.
The build directory is build/pip-<python tag> in the checkout, so a second install
rebuilds only what changed. Set RIDGELINE_CMAKE_ARGS to pass more CMake arguments, or
RIDGELINE_BUILD_DIR to package the module of an existing build directory (configured for the
same interpreter) instead of configuring one: `make install-check` packages the dev build.
"""

import base64
import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
import tarfile
import zipfile

NAME = "ridgeline"
VERSION = "0.1.0"
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUMMARY = "Where does the time go, and what bounds it? Roofline analysis of large-model training and serving."


def _tags():
    impl = f"cp{sys.version_info.major}{sys.version_info.minor}"
    abi = impl + getattr(sys, "abiflags", "")
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return impl, abi, plat


def _say(message):
    """A line on stderr: `pip install -v .` shows it (pip hides a backend's output otherwise)."""
    print(f"ridgeline: {message}", file=sys.stderr, flush=True)


def _build_module():
    impl, _, _ = _tags()
    existing = os.environ.get("RIDGELINE_BUILD_DIR")
    _say("building the C++ library and its Python module (_ridgeline) with CMake, Release: about 5 minutes the "
         "first time on 2 cores, less when build/pip-* holds an earlier build; `pip install -v .` shows each step")
    if existing:
        build = os.path.abspath(existing)
        subprocess.run(["cmake", "--build", build, "--target", "_ridgeline"], check=True, stdout=sys.stderr)
        return os.path.join(build, "python", NAME)
    build = os.path.join(SRC, "build", f"pip-{impl}")
    generator = ["-G", "Ninja"] if _which("ninja") else []
    configure = ["cmake", "-S", SRC, "-B", build, *generator, "-DCMAKE_BUILD_TYPE=Release",
                 "-DRIDGELINE_ENABLE_TESTS=OFF", "-DRIDGELINE_ENABLE_BENCH=OFF", "-DRIDGELINE_ENABLE_PYTHON=ON",
                 f"-DPython_EXECUTABLE={sys.executable}", *shlex.split(os.environ.get("RIDGELINE_CMAKE_ARGS", ""))]
    subprocess.run(configure, check=True, stdout=sys.stderr)
    subprocess.run(["cmake", "--build", build, "--target", "_ridgeline", "--parallel", str(os.cpu_count() or 2)],
                   check=True, stdout=sys.stderr)
    return os.path.join(build, "python", NAME)


def _which(program):
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if os.access(os.path.join(d, program), os.X_OK):
            return True
    return False


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\nSummary: {SUMMARY}\n"
            "Requires-Python: >=3.9\n")


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    import time
    impl, abi, plat = _tags()
    start = time.monotonic()
    package = _build_module()
    _say(f"module built in {time.monotonic() - start:.0f} s ({package}); packing the wheel")
    dist_info = f"{NAME}-{VERSION}.dist-info"
    files = []
    for name in sorted(os.listdir(package)):
        if name.endswith((".py", ".pyi", ".so")) or name == "py.typed":
            with open(os.path.join(package, name), "rb") as f:
                files.append((f"{NAME}/{name}", f.read()))
    files.append((f"{dist_info}/METADATA", _metadata().encode()))
    files.append((f"{dist_info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: ridgeline_build\nRoot-Is-Purelib: false\n"
                                          f"Tag: {impl}-{abi}-{plat}\n").encode()))
    files.append((f"{dist_info}/entry_points.txt", b"[console_scripts]\nridgeline = ridgeline:main\n"))
    files.append((f"{dist_info}/top_level.txt", f"{NAME}\n".encode()))
    record = [_record_line(p, d) for p, d in files] + [f"{dist_info}/RECORD,,"]
    files.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    wheel = f"{NAME}-{VERSION}-{impl}-{abi}-{plat}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            info = zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if path.endswith(".so") else 0o644) << 16
            z.writestr(info, data, zipfile.ZIP_DEFLATED)
    return wheel


def build_sdist(sdist_directory, config_settings=None):
    """The tracked sources (git ls-files), or the tree without build outputs."""
    base = f"{NAME}-{VERSION}"
    try:
        names = subprocess.run(["git", "-C", SRC, "ls-files"], check=True, capture_output=True, text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        names = []
        for root, dirs, fs in os.walk(SRC):
            dirs[:] = [d for d in dirs if d not in (".git", "build")]
            names += [os.path.relpath(os.path.join(root, f), SRC) for f in fs]
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz") as t:
        for n in sorted(names):
            t.add(os.path.join(SRC, n), arcname=f"{base}/{n}", recursive=False)
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        import io
        t.addfile(info, io.BytesIO(data))
    return base + ".tar.gz"
