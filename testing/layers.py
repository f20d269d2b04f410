#!/usr/bin/env python3
"""Layer checks for one crate's src/ (issue 20): import cycles between files, imports a layer rule
forbids, product files of 400 lines or more, functions over 80 lines, files without a `//!` first line.

    python3 testing/layers.py proxy/src

Layer rules are written where the code lives: `//! Never imports: crate::a, crate::b::c.` (it may go
on over further `//!` lines up to its full stop) in a file's leading doc comment forbids that file,
and every file of the module it declares (a folder's mod.rs or the file beside the folder), to
import those modules or anything under them, re-exports included. A rule naming a module that does
not exist is itself a finding (a misspelt rule checks nothing).

Edges come from `use` trees and inline paths starting with crate::, super::, self:: or a child module
the file declares. Re-exports (`pub use`, `pub(crate) use`) are not edges of the re-exporting file:
paths are resolved through them to the defining file. Test code (tests.rs, `#[cfg(test)]` items) is
skipped. Functions are measured from `fn` to the closing brace at the same indent (rustfmt layout).
Exits 1 when anything is found. A regex reader, not a parser: macros and cfg'd paths can hide edges."""
import os
import re
import sys

root = sys.argv[1]
files = {}
for d, _, fs in os.walk(root):
    for f in fs:
        p = os.path.join(d, f)
        parts = os.path.relpath(p, root)[:-3].split(os.sep)
        if not f.endswith('.rs') or 'tests' in parts or parts == ['main']:
            continue
        files[tuple(parts[:-1] if parts[-1] in ('mod', 'lib') else parts)] = p
if not files:
    sys.exit(f'no Rust files under {root}: a misspelt crate path checks nothing')


def without_tests(src):
    item = r'#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?(?:mod|fn|use|impl|struct|const)[^;{]*([;{])'
    while m := re.search(item, src):
        j, depth = m.end(), int(m.group(1) == '{')
        while depth and j < len(src):
            depth += {'{': 1, '}': -1}.get(src[j], 0)
            j += 1
        src = src[:m.start()] + '\n' * src.count('\n', m.start(), j) + src[j:]
    return src


def use_paths(tree, prefix=()):
    tree = re.sub(r'\s*(::|\{|\}|,)\s*', r'\1', tree.strip())
    if m := re.match(r'^([\w:]*?)(?:::)?\{(.*)\}$', tree, re.S):
        base, depth, cur = prefix + tuple(x for x in m.group(1).split('::') if x), 0, ''
        for ch in m.group(2) + ',':
            if ch == ',' and depth == 0:
                yield from use_paths(cur, base) if cur.strip() else ()
                cur = ''
                continue
            depth += {'{': 1, '}': -1}.get(ch, 0)
            cur += ch
    else:
        yield prefix + tuple(x for x in re.split(r'\s+as\s+', tree)[0].split('::') if x)


def absolute(me, kids, path):
    if path[0] == 'crate':
        return path[1:]
    if path[0] == 'super':
        ups = len(path) - len(tuple(p for p in path if p != 'super'))
        return me[:len(me) - ups] + path[ups:]
    if path[0] == 'self':
        return me + path[1:]
    return me + path if path[0] in kids else None


srcs = {m: without_tests(re.sub(r'//[^\n]*', '', re.sub(r'"(?:[^"\\]|\\.)*"', '""', open(p).read())))
        for m, p in files.items()}
kids = {m: set(re.findall(r'^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;', s, re.M)) for m, s in srcs.items()}
reexport = r'\bpub(?:\([^)]*\))?\s+use\s+([^;]+);'
aliases = {m: {full[-1]: full for u in re.findall(reexport, s) for pth in use_paths(u)
               if (full := absolute(m, kids[m], pth)) and pth[-1] != '*'} for m, s in srcs.items()}


def resolve(path, hops=0):
    for n in range(len(path), -1, -1):
        if (f := path[:n]) in files:
            if n < len(path) and path[n] in aliases.get(f, {}) and hops < 10:
                return resolve(aliases[f][path[n]] + path[n + 1:], hops + 1)
            return f


edges, reexported = {}, {}
for m, s in srcs.items():
    reexported[m] = {t for u in re.findall(reexport, s) for p in use_paths(u)
                     if (full := absolute(m, kids[m], p)) is not None and (t := resolve(full)) is not None and t != m}
    body = re.sub(reexport, '', s)
    paths = [p for u in re.findall(r'\buse\s+([^;]+);', body) for p in use_paths(u)]
    paths += [tuple(x.split('::')) for x in
              re.findall(r'\b((?:crate|super|self)(?:::\w+)+)', re.sub(r'\buse\s+[^;]+;', '', body))]
    edges[m] = {t for p in paths if (full := absolute(m, kids[m], p)) is not None
                and (t := resolve(full)) is not None and t != m}

index, low, stack, cycles = {}, {}, [], []
sys.setrecursionlimit(10000)


def visit(v):  # Tarjan's strongly connected components
    index[v] = low[v] = len(index)
    stack.append(v)
    for w in edges[v]:
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in stack:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = stack[stack.index(v):]
        del stack[stack.index(v):]
        if len(comp) > 1:
            cycles.append(comp)


for v in edges:
    if v not in index:
        visit(v)
name = '/'.join
findings = 0
for comp in cycles:
    findings += 1
    print('CYCLE', ', '.join(sorted(name(m) or '(root)' for m in comp)))
    for a in comp:
        print('     ', *(f'{name(a)} -> {name(b)}' for b in edges[a] if b in comp))
for m, p in sorted(files.items()):  # declared layer rules (see the module docs)
    head = re.match(r'(?:[ \t]*//![^\n]*\n)*', open(p).read()).group(0)
    for rule in re.findall(r'^[ \t]*//![ \t]*Never imports:((?:[^.\n]|\n[ \t]*//!)*)', head, re.M):
        rule = re.sub(r'\n[ \t]*//!', ' ', rule)
        for target in (t.strip().rstrip('.') for t in rule.split(',') if t.strip()):
            banned = tuple(target.split('::'))[1:] if target.startswith('crate::') else None
            if not banned or not any(f[:len(banned)] == banned for f in files):
                findings += 1
                print('RULE ', os.path.relpath(p, root), f'names no module of this crate: {target!r}')
                continue
            for a in sorted(f for f in files if f[:len(m)] == m):
                for b in sorted(edges[a] | reexported[a]):
                    if b[:len(banned)] == banned:
                        findings += 1
                        print('LAYER', f'{name(a)} -> {name(b)}', f'({os.path.relpath(p, root)}: never imports {target})')
for m, p in sorted(files.items()):
    lines = open(p).read().split('\n')[:-1]
    rel = os.path.relpath(p, root)
    if not lines or not lines[0].startswith('//!'):
        findings += 1
        print('NODOC', rel)
    if len(lines) >= 400:
        findings += 1
        print('FILE ', rel, len(lines), 'lines')
    text = without_tests('\n'.join(lines))
    for f in re.finditer(r'^( *)(?:pub(?:\([^)]*\))? +)?(?:const +)?(?:async +)?fn +(\w+)[^;{]*\{\s*$', text, re.M):
        end = re.compile('^' + f.group(1) + '}$', re.M).search(text, f.end())
        n = text.count('\n', f.start(), end.start() if end else len(text)) + 1
        if n > 80:
            findings += 1
            print('FN   ', f'{rel}:{text.count(chr(10), 0, f.start()) + 1}', f.group(2), n, 'lines')
print(f'{len(files)} files, {len(cycles)} cycles, {findings} findings')
sys.exit(1 if findings else 0)
