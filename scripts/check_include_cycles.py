#!/usr/bin/env python3
"""Fails when the modules of a source directory depend on each other in a
cycle (docs/api-conventions.md, Modules and headers).

A module is a basename: core/src/registry.c and core/src/registry.h are the
module "registry". Module A depends on module B when A.c or A.h includes
"B.h" (a quoted include of a header in the same directory). Each directory
given is checked on its own.

usage: check_include_cycles.py [--allow DIR:MODULE,MODULE...]... DIR...
Prints every cycle found (with the includes that form it) and exits 1, or
prints nothing and exits 0. --allow names a cycle that is known and not yet
broken (exactly its modules); it is not an error, but an allowed cycle that
no longer exists is, so that the list only shrinks.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def module_graph(directory):
    """{module: {dependency: [(file, header), ...]}} of `directory`."""
    names = sorted(os.listdir(directory))
    headers = {n for n in names if n.endswith('.h')}
    graph = {}
    for name in names:
        base, ext = os.path.splitext(name)
        if ext not in ('.c', '.h'):
            continue
        graph.setdefault(base, {})
        with open(os.path.join(directory, name), encoding='utf-8') as f:
            text = f.read()
        for header in INCLUDE.findall(text):
            target = os.path.splitext(header)[0]
            if header in headers and target != base:
                graph[base].setdefault(target, []).append((name, header))
                graph.setdefault(target, {})
    return graph


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan),
    each sorted, in sorted order."""
    index = {}
    low = {}
    stack = []
    on_stack = set()
    found = []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def parse_args(args):
    """(directories, {directory: set of allowed cycles as frozensets}), or
    None on a usage error."""
    directories = []
    allowed = {}
    i = 0
    while i < len(args):
        if args[i] == '--allow':
            if i + 1 == len(args) or ':' not in args[i + 1]:
                return None
            directory, modules = args[i + 1].rsplit(':', 1)
            cycle = frozenset(m for m in modules.split(',') if m)
            if len(cycle) < 2:
                return None
            allowed.setdefault(directory, set()).add(cycle)
            i += 2
        else:
            directories.append(args[i])
            i += 1
    if not directories or not set(allowed) <= set(directories):
        return None
    return directories, allowed


def main(argv):
    parsed = parse_args(argv[1:])
    if parsed is None:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    directories, allowed = parsed
    failed = False
    for directory in directories:
        if not os.path.isdir(directory):
            print(f'{directory}: not a directory', file=sys.stderr)
            return 2
        graph = module_graph(directory)
        found = cycles(graph)
        for cycle in sorted(allowed.get(directory, set()), key=sorted):
            if sorted(cycle) not in found:
                failed = True
                print(f'{directory}: the allowed cycle {",".join(sorted(cycle))} no longer '
                      'exists: remove its --allow')
        for component in found:
            if frozenset(component) in allowed.get(directory, set()):
                continue
            failed = True
            members = set(component)
            print(f'{directory}: modules depend on each other in a cycle: '
                  + ', '.join(component))
            for module in component:
                for dep in sorted(graph[module]):
                    if dep in members:
                        for name, header in graph[module][dep]:
                            print(f'  {os.path.join(directory, name)} includes "{header}"')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
