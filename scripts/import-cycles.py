#!/usr/bin/env python3
"""Lists the import cycles between the files of a Rust crate's source folder.

    python3 scripts/import-cycles.py host nvfp4
    python3 scripts/import-cycles.py kernel/src

An edge a.rs -> b.rs is any `crate::path` (or, with a crate name, `name::path`) in a.rs, in a
`use` or inline, that resolves to module b (the longest module prefix of the path that is a file
of the folder). `super::` paths are resolved too. A file's own submodules (declared with `mod`)
are its children, not cycles: a parent naming its child and the child naming the parent is
reported, since that is a cycle between two files. Exit status 1 when a cycle exists.
"""
import os
import re
import sys


def modules(root):
    """Module path (tuple) -> file, for every .rs file under root."""
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)[:-3].split(os.sep)
            if rel[-1] in ("mod", "lib", "main"):
                rel = rel[:-1]
            found[tuple(rel)] = path
    return found


def strip_comments(text):
    """Drops comments and string literals (they name paths without importing them)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def expand_use(body):
    """`a::{b, c::{d}}` -> ['a::b', 'a::c::d']."""
    body = body.strip()
    m = re.match(r"^(.*?)\{(.*)\}$", body, flags=re.S)
    if not m:
        return [body]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, current = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        current += ch
    parts.append(current)
    out = []
    for part in parts:
        if part.strip():
            out += [prefix + p for p in expand_use(part)]
    return out


def paths_in(text, own, crate_names):
    text = strip_comments(text)
    found = []
    for body in re.findall(r"\buse\s+([^;]+);", text):
        found += expand_use(body)
    found += re.findall(r"\b(?:crate|super|" + "|".join(crate_names) + r")(?:::\w+)+", text)
    out = []
    for p in found:
        segs = [s.strip() for s in p.replace(" ", "").split("::") if s.strip()]
        if not segs:
            continue
        if segs[0] in ("crate",) + tuple(crate_names):
            out.append(tuple(segs[1:]))
        elif segs[0] == "super":
            base = list(own[:-1])
            while segs and segs[0] == "super":
                segs = segs[1:]
                if segs and segs[0] == "super":
                    base = base[:-1]
            out.append(tuple(base) + tuple(segs))
    return out


def main():
    root = sys.argv[1]
    crate_names = sys.argv[2:]
    mods = modules(root)
    edges = {m: set() for m in mods}
    for mod, path in mods.items():
        for p in paths_in(open(path, encoding="utf-8").read(), mod, crate_names):
            target = None
            for n in range(len(p), 0, -1):
                if p[:n] in mods:
                    target = p[:n]
                    break
            if target is not None and target != mod:
                # A module naming its own descendant is composition, not a dependency back.
                if target[: len(mod)] == mod:
                    continue
                edges[mod].add(target)
    # Strongly connected components (Tarjan).
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(comp)

    sys.setrecursionlimit(10000)
    for v in mods:
        if v not in index:
            visit(v)
    name = lambda m: mods[m]
    if not sccs:
        print(f"{root}: no import cycle between its {len(mods)} files")
        return 0
    for comp in sccs:
        print(f"{root}: cycle among " + ", ".join(sorted(name(m) for m in comp)))
        for m in sorted(comp):
            inside = sorted(name(t) for t in edges[m] if t in comp)
            print(f"  {name(m)} -> {', '.join(inside)}")
    return 1


sys.exit(main())
