"""Graph walks over the ids that IR objects use (task ids, actor ids), shared by the compiler's Plan verifier and the
runtime's hang diagnosis. Not networkx: importing it cost 0.3 s of a fresh process's first call (issue 13)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def find_cycle(successors: Mapping[int, Iterable[int]]) -> list[int]:
    """The nodes of one cycle, in order, each followed by the next (empty when the graph is acyclic): an iterative
    depth-first search from each node in the mapping's order. A successor that is not a key of ``successors`` is
    outside the graph and ignored."""
    state = dict.fromkeys(successors, 0)  # 0 unseen, 1 on the current path, 2 done
    for root in successors:
        if state[root]:
            continue
        path, stack = [root], [iter(successors[root])]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif nxt not in state:
                continue
            elif state[nxt] == 1:
                return path[path.index(nxt):]
            elif state[nxt] == 0:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(successors[nxt]))
    return []
