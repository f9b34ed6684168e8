#!/usr/bin/env python3
"""Runs the fenced code blocks of the READMEs, so that an example that rots
fails the tests instead of its first reader.

    run_blocks.py --lang LANG[,LANG...] [options] FILE...

Every FILE (README.md, bindings/*/README.md) is read whole and every block in
it is checked, whatever --lang says: each has a language this runner knows,
or `text` (a tree, a table: not code), or is marked not runnable, with a
reason, on the line before it:

    <!-- readme-test: skip (why it cannot run here) -->

Then the blocks of the languages asked for run in file order, those of one
section (## heading) of a FILE in one fresh temporary directory outside the
repository (a block may be saved under a name for the blocks after it), each
one as written:

    c       saved as block-N.c, compiled with `cc -std=c11 -Wall -Werror` and
            `pkg-config --cflags --libs bitt` (the installed library), run
    cmake   saved as CMakeLists.txt, configured (find_package finds the
            prefix) and built in a directory of its own
    sh      run by bash -euo pipefail
    console a transcript: its `$ ` lines (with their `\` continuations) run in
            order in one bash; each must end with status 0 or 1 (1 is
            "absent" or "not granted" for the bitt tool), not 2 (an error) or
            64 (a usage error). The output shown is not compared: times and
            the store's contents differ from run to run.
    python  run by --python (an interpreter with the package installed)
    js      run by node: as an ES module (.mjs) when a line starts with
            `import` or `export`, else as CommonJS; `bitt` resolves to the
            installed package of --node-modules
    go      main.go of a module of its own (a subdirectory), requiring
            github.com/bitt-dev/bitt/bindings/go v0.0.0 replaced by
            --go-module; built with `go build`, run in the section's directory
    text    not run

Words after the language in the info string (```c app.c postgres):
    NAME      also save the block under NAME (app.c, main.go, CMakeLists.txt)
    postgres  the block needs a PostgreSQL server: every quoted postgres://
              URL in it becomes $BITT_TEST_POSTGRES_URL, on a schema of its
              own; without that variable the block is not run (said so)
    redis     the same with $BITT_TEST_REDIS_URL, under a prefix of its own
A quoted postgres:// or redis:// URL in a block not marked so is an error:
it would need a server the runner does not know about.

In every block, /path/to/bitt is the repository and /path/to/prefix the
installed prefix (--prefix), as a reader puts their own. Blocks run as in a
shell of someone who installed bitt into --prefix: its bin/ on PATH,
PKG_CONFIG_PATH and CMAKE_PREFIX_PATH naming it, no LD_LIBRARY_PATH (the
programs must find libbitt by themselves), no BITT_STORE. Each block must end
by itself within --timeout seconds (a consumer loop breaks).

Exit status: 0 when every block asked for ran and passed, 1 otherwise.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LANGS = ("c", "cmake", "sh", "console", "python", "js", "go")
SERVERS = {
    "postgres": ("BITT_TEST_POSTGRES_URL", r"postgres(?:ql)?://", "schema"),
    "redis": ("BITT_TEST_REDIS_URL", r"redis://", "prefix"),
}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*(.*)$")
SKIP = re.compile(r"^\s*<!--\s*readme-test:\s*skip\b\s*(.*?)\s*-->\s*$")
DIRECTIVE = re.compile(r"^\s*<!--\s*readme-test:")
GO_MODULE = "github.com/bitt-dev/bitt/bindings/go"


class Block:
    def __init__(self, path, line, section, lang, words, text, skip):
        self.path, self.line, self.section, self.lang, self.text, self.skip = path, line, section, lang, text, skip
        self.servers = [w for w in words if w in SERVERS]
        self.names = [w for w in words if w not in SERVERS]

    def where(self):
        return f"{os.path.relpath(self.path, REPO)}:{self.line}"


def parse(path):
    """The blocks of one Markdown file, and the errors of its markers."""
    blocks, errors = [], []
    rel = os.path.relpath(path, REPO)
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    section = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if re.match(r"^#{1,2} ", lines[i]):
                section += 1
            if DIRECTIVE.match(lines[i]) and not SKIP.match(lines[i]):
                errors.append(f"{rel}:{i + 1}: unknown readme-test directive: {lines[i].strip()}")
            elif SKIP.match(lines[i]) and not (i + 1 < len(lines) and FENCE.match(lines[i + 1])):
                # A marker anywhere else would leave the block it meant to run.
                errors.append(f"{rel}:{i + 1}: a readme-test skip stands on the line just before its block")
            i += 1
            continue
        indent, fence, info = len(m.group(1)), m.group(2), m.group(3).split()
        start = i + 1
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*" + re.escape(fence[0]) + "{%d,}\\s*$" % len(fence), lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        if i == len(lines):
            errors.append(f"{rel}:{start}: the block never ends")
        i += 1
        prev = start - 2
        skip = None
        if prev >= 0:
            s = SKIP.match(lines[prev])
            if s:
                skip = s.group(1).strip("() ")
                if not skip:
                    errors.append(f"{rel}:{prev + 1}: a skip needs its reason")
        lang = info[0] if info else ""
        b = Block(path, start, section, lang, info[1:], "\n".join(body) + "\n", skip)
        if skip is None and lang not in LANGS + ("text",):
            errors.append(f"{b.where()}: a block in {lang or 'no language'}: give it one of "
                          f"{', '.join(LANGS)}, or text, or a readme-test skip with the reason")
        for name in b.names:
            if "/" in name or name.startswith(".") or "=" in name:
                errors.append(f"{b.where()}: '{name}' is not a file name for the block")
        if skip is None and lang in LANGS:
            for server, (_, scheme, _) in SERVERS.items():
                quoted = re.search(r"""(['"`])%s""" % scheme, b.text)
                if quoted and server not in b.servers:
                    errors.append(f"{b.where()}: names a {server} URL: say ```{lang} {server}")
                if server in b.servers and not quoted:
                    errors.append(f"{b.where()}: marked {server} but names no quoted {server} URL")
        if skip is None and lang == "console" and not console_commands(b.text):
            errors.append(f"{b.where()}: a console block without a `$ ` command")
        blocks.append(b)
    return blocks, errors


def with_option(url, key, value):
    return f"{url}{'&' if '?' in url else '?'}{key}={value}"


def substitute(block, prefix, n):
    """The block's text as it runs here, or None with the reason it cannot."""
    text = block.text.replace("/path/to/bitt", REPO)
    if prefix:
        text = text.replace("/path/to/prefix", prefix)
    for server in block.servers:
        env, scheme, key = SERVERS[server]
        url = os.environ.get(env)
        if not url:
            return None, f"needs {server}: {env} is not set"
        # A schema or prefix of its own: runs never see each other's rows.
        own = with_option(url, key, f"readme_{os.getpid()}_{n}")
        text = re.sub(r"""(['"`])(%s[^'"`\s]*)\1""" % scheme, lambda m: m.group(1) + own + m.group(1), text)
    return text, None


def console_commands(text):
    """The commands of a transcript: its `$ ` lines, continuations joined."""
    cmds, cur = [], None
    for line in text.split("\n"):
        if cur is not None:
            cur.append(line)
        elif line.startswith("$ "):
            cur = [line[2:]]
        else:
            continue
        if not line.endswith("\\"):
            cmds.append("\n".join(cur))
            cur = None
    return cmds


def console_script(text):
    out = []
    for cmd in console_commands(text):
        out.append(f"{cmd}\n_rc=$?\nif [ $_rc -gt 1 ]; then\n"
                   f"  echo \"readme-test: exit status $_rc: \"{shlex.quote(cmd)} >&2; exit 1\nfi\n")
    return "set -o pipefail\n" + "".join(out)


def esm(text):
    return re.search(r"^(import|export)\b", text, re.M) is not None


def commands(block, text, n, args, work):
    """Writes the block's files into work; the commands that run it there."""
    def write(name, content=text):
        with open(os.path.join(work, name), "w") as f:
            f.write(content)

    for name in block.names:
        write(name)
    if block.lang == "c":
        write(f"block-{n}.c")
        cc = f"cc -std=c11 -Wall -Werror -o block-{n} block-{n}.c $(pkg-config --cflags --libs bitt)"
        return [["sh", "-c", cc], [f"./block-{n}"]]
    if block.lang == "cmake":
        write("CMakeLists.txt")
        return [["cmake", "-S", ".", "-B", f"_cmake-{n}"], ["cmake", "--build", f"_cmake-{n}"]]
    if block.lang == "sh":
        write(f"block-{n}.sh")
        return [["bash", "-euo", "pipefail", f"block-{n}.sh"]]
    if block.lang == "console":
        write(f"block-{n}.sh", console_script(text))
        return [["bash", f"block-{n}.sh"]]
    if block.lang == "python":
        write(f"block-{n}.py")
        return [[args.python, f"block-{n}.py"]]
    if block.lang == "js":
        name = f"block-{n}.{'mjs' if esm(text) else 'cjs'}"
        write(name)
        return [["node", name]]
    if block.lang == "go":
        mod = f"_go-{n}"
        os.makedirs(os.path.join(work, mod))
        write(os.path.join(mod, "go.mod"), f"module readme.test/block{n}\n\ngo 1.23\n\n"
              f"require {GO_MODULE} v0.0.0\n\nreplace {GO_MODULE} => {args.go_module}\n")
        write(os.path.join(mod, "main.go"))
        # Run from the section's directory, where its files (app.db) are.
        return [["go", "build", "-C", mod, "-o", "app", "."], [f"./{mod}/app"]]
    raise AssertionError(block.lang)


def run_block(block, cmds, work, env, timeout):
    """(passed, what to print)"""
    t0 = time.monotonic()
    log = []
    for cmd in cmds:
        left = timeout - (time.monotonic() - t0)
        try:
            p = subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, errors="replace", timeout=max(left, 1))
        except subprocess.TimeoutExpired as e:
            out = e.output.decode(errors="replace") if isinstance(e.output, bytes) else (e.output or "")
            log.append(f"$ {' '.join(cmd)}\n{out}\ndid not end within {timeout:g} s (a loop must be bounded)")
            return False, "\n".join(log)
        log.append(f"$ {' '.join(cmd)}\n{p.stdout}")
        if p.returncode != 0:
            log.append(f"exit status {p.returncode}")
            return False, "\n".join(log)
    return True, f"{time.monotonic() - t0:.1f} s"


def environment(args):
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    env.pop("BITT_STORE", None)
    if args.prefix:
        env["PATH"] = os.path.join(args.prefix, "bin") + os.pathsep + env.get("PATH", "")
        env["PKG_CONFIG_PATH"] = os.path.join(args.prefix, "lib", "pkgconfig")
        env["CMAKE_PREFIX_PATH"] = args.prefix
    return env


def run_file(path, blocks, args, env, results):
    """Runs the blocks asked for; those of one section (## heading) share a
    fresh directory, as a reader works through one example."""
    dirs = {}
    failed = set()
    for n, block in enumerate(blocks, 1):
        if block.lang not in args.lang:
            continue
        if block.skip is not None:
            results.append(("skip", block, block.skip))
            continue
        text, why = substitute(block, args.prefix, n)
        if text is None:
            results.append(("not run", block, why))
            continue
        if block.section not in dirs:
            work = dirs[block.section] = tempfile.mkdtemp(prefix="bitt-readme-")
            if args.node_modules:
                os.symlink(args.node_modules, os.path.join(work, "node_modules"))
        work = dirs[block.section]
        ok, note = run_block(block, commands(block, text, n, args, work), work, env, args.timeout)
        results.append(("ok" if ok else "FAIL", block, note))
        if not ok:
            failed.add(work)
    for work in dirs.values():
        if work in failed:
            print(f"run_blocks: {os.path.relpath(path, REPO)}: kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lang", required=True, help="comma list of: " + ", ".join(LANGS))
    ap.add_argument("--prefix", help="where bitt is installed (cmake --install): c, cmake, sh, console, go")
    ap.add_argument("--python", help="a Python with the bitt package: python")
    ap.add_argument("--node-modules", help="a node_modules holding the installed bitt package: js")
    ap.add_argument("--go-module", default=os.path.join(REPO, "bindings", "go"), help="the Go module: go")
    ap.add_argument("--timeout", type=float, default=180, help="seconds a block may take (180)")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    args.lang = args.lang.split(",")
    unknown = [l for l in args.lang if l not in LANGS]
    if unknown:
        ap.error(f"unknown language {unknown[0]}")
    needs = {"prefix": {"c", "cmake", "sh", "console", "go"}, "python": {"python"}, "node_modules": {"js"}}
    for opt, langs in needs.items():
        if langs & set(args.lang) and not getattr(args, opt):
            ap.error(f"--{opt.replace('_', '-')} is needed for {', '.join(sorted(langs & set(args.lang)))}")
    for opt in ("prefix", "node_modules", "go_module"):
        if getattr(args, opt):
            setattr(args, opt, os.path.abspath(getattr(args, opt)))
    if args.python and os.sep in args.python:
        args.python = os.path.abspath(args.python)

    parsed, errors = [], []
    for path in args.files:
        blocks, errs = parse(os.path.abspath(path))
        parsed.append((os.path.abspath(path), blocks))
        errors += errs
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    env = environment(args)
    results = []
    for path, blocks in parsed:
        run_file(path, blocks, args, env, results)
    for status, block, note in results:
        first, _, rest = note.partition("\n")
        print(f"{status:7} {block.where()} {block.lang}: {first}")
        if rest:
            print("        " + rest.replace("\n", "\n        "))
    ran = sum(1 for r in results if r[0] == "ok")
    bad = sum(1 for r in results if r[0] == "FAIL")
    print(f"README blocks ({','.join(args.lang)}): {ran} passed, {bad} failed, "
          f"{len(results) - ran - bad} not run")
    if not results:
        print("run_blocks: no block of these languages in these files", file=sys.stderr)
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
