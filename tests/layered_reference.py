"""The layered layout's ordering and coordinates as first written (`loopx.render.layered`
before issue 19 made them cheaper): plain loops, kept only as the reference the fast ones
must match exactly (`tests/test_layered.py`). Layering is the module's own."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from loopx.render.layered import (
    ITERATIONS,
    PATIENCE,
    SEGMENTS_MAX,
    Point,
    _layered,
    _segments,
    _simply,
)


def lay_out(
    count: int,
    edges: Sequence[tuple[int, int]],
    *,
    width: float,
    dummy_width: float,
    gap: float,
    layer_gap: float,
) -> tuple[list[Point], list[list[Point]]]:
    """Centres of nodes 0..count-1 (x from 0, y of layer k = k * layer_gap), and for each
    edge (no loops) its route: its source's centre, a point per layer crossed, its target's
    centre. Nodes are `width` wide, the bends of long edges `dummy_width`; neighbours on a
    layer keep `gap` between them."""
    flipped, ups, rank = _layered(count, edges)
    if _segments(ups, rank) > SEGMENTS_MAX:
        return _simply(count, edges, rank, width=width, gap=gap, layer_gap=layer_gap)
    chains: list[list[int]] = []
    for a, b in ups:
        chain = [a]
        for r in range(rank[a] + 1, rank[b]):
            chain.append(len(rank))
            rank.append(r)
        chain.append(b)
        chains.append(chain)
    total = len(rank)
    above: list[list[int]] = [[] for _ in range(total)]
    below: list[list[int]] = [[] for _ in range(total)]
    for chain in chains:
        for u, v in zip(chain, chain[1:], strict=False):
            below[u].append(v)
            above[v].append(u)
    layers = _order(count, rank, above, below)
    sizes = [width if v < count else dummy_width for v in range(total)]
    xs = _coordinates(layers, above, below, sizes, gap, count)
    least = min(xs[v] - sizes[v] / 2 for v in range(total))
    points = [(xs[v] - least, rank[v] * layer_gap) for v in range(total)]
    positions = points[:count]
    routes = []
    for chain, f in zip(chains, flipped, strict=True):
        route = [points[v] for v in chain]
        routes.append(route[::-1] if f else route)
    return positions, routes


def _order(
    count: int, rank: list[int], above: list[list[int]], below: list[list[int]]
) -> list[list[int]]:
    """Each layer's nodes left to right: first as a depth-first search down from the nodes
    in order of (layer, number) reaches them, then improved by median sweeps and adjacent
    exchanges (of the order with the fewest crossings the sweeps found)."""
    total = len(rank)
    layers: list[list[int]] = [[] for _ in range(max(rank) + 1 if rank else 0)]
    seen = [False] * total
    for start in sorted(range(count), key=lambda v: (rank[v], v)):
        if seen[start]:
            continue
        seen[start] = True
        stack = [start]
        while stack:
            v = stack.pop()
            layers[rank[v]].append(v)
            for w in reversed(below[v]):
                if not seen[w]:
                    seen[w] = True
                    stack.append(w)
    pos = [0] * total
    for layer in layers:
        for i, v in enumerate(layer):
            pos[v] = i
    best = [list(layer) for layer in layers]
    fewest = _crossings(layers, below, pos)
    stale = 0
    for sweep in range(ITERATIONS):
        if not fewest:
            break
        if sweep % 2 == 0:
            for r in range(1, len(layers)):
                _by_median(layers[r], above, pos)
        else:
            for r in range(len(layers) - 2, -1, -1):
                _by_median(layers[r], below, pos)
        crossings = _crossings(layers, below, pos)
        if crossings < fewest:
            best, fewest, stale = [list(layer) for layer in layers], crossings, 0
        else:
            stale += 1
            if stale >= PATIENCE:
                break
    if fewest:
        for layer in best:
            for i, v in enumerate(layer):
                pos[v] = i
        _exchange(best, above, below, pos)
    return best


def _by_median(layer: list[int], nbrs: list[list[int]], pos: list[int]) -> None:
    """Sort `layer` by the weighted median of each node's neighbours' positions on the
    adjacent layer (Gansner et al.); a node with no neighbour there keeps its place."""
    keyed: list[tuple[float, int, int]] = []
    slots: list[int] = []
    for i, v in enumerate(layer):
        ends = nbrs[v]
        n = len(ends)
        if n == 1:
            keyed.append((float(pos[ends[0]]), i, v))
            slots.append(i)
            continue
        if not n:
            continue
        p = sorted([pos[u] for u in ends])
        m = n // 2
        if n % 2:
            median = float(p[m])
        elif n == 2:
            median = (p[0] + p[1]) / 2
        else:
            left, right = p[m - 1] - p[0], p[-1] - p[m]
            median = (
                (p[m - 1] * right + p[m] * left) / (left + right)
                if left + right
                else (p[m - 1] + p[m]) / 2
            )
        keyed.append((median, i, v))
        slots.append(i)
    keyed.sort()
    for slot, (_, _, v) in zip(slots, keyed, strict=True):
        layer[slot] = v
    for i, v in enumerate(layer):
        pos[v] = i


def _exchange(
    layers: list[list[int]], above: list[list[int]], below: list[list[int]], pos: list[int]
) -> None:
    """Swap neighbours on a layer while that removes crossings with the layers around it
    (Gansner et al.'s transpose), until no swap helps (a few dozen passes at most); a
    layer is looked at again only when it or a layer next to it changed."""
    dirty = [True] * len(layers)
    for _ in range(32):
        changed = [False] * len(layers)
        for r, layer in enumerate(layers):
            if not dirty[r] or len(layer) < 2:
                continue
            # Only this layer's nodes move while it is worked on: its neighbours' places
            # are fixed, and so are these lists.
            ups = [sorted([pos[u] for u in above[v]]) for v in layer]
            downs = [sorted([pos[u] for u in below[v]]) for v in layer]
            for i in range(len(layer) - 1):
                a_up, b_up, a_down, b_down = ups[i], ups[i + 1], downs[i], downs[i + 1]
                kept = _inversions(a_up, b_up) + _inversions(a_down, b_down)
                swapped = _inversions(b_up, a_up) + _inversions(b_down, a_down)
                if kept > swapped:
                    v, w = layer[i], layer[i + 1]
                    layer[i], layer[i + 1] = w, v
                    pos[v], pos[w] = i + 1, i
                    ups[i], ups[i + 1] = b_up, a_up
                    downs[i], downs[i + 1] = b_down, a_down
                    changed[r] = True
        if not any(changed):
            return
        dirty = [
            changed[r] or (r > 0 and changed[r - 1]) or (r + 1 < len(layers) and changed[r + 1])
            for r in range(len(layers))
        ]


def _inversions(left: list[int], right: list[int]) -> int:
    """Pairs of an edge from the left node and one from the right node that cross: a
    position in `left` greater than one in `right` (both sorted)."""
    if not left or not right:
        return 0
    if len(right) == 1:
        r = right[0]
        return sum(1 for a in left if a > r)
    n, j = 0, 0
    for a in left:  # for each a, the positions in `right` below it
        while j < len(right) and right[j] < a:
            j += 1
        n += j
    return n


def _crossings(layers: list[list[int]], below: list[list[int]], pos: list[int]) -> int:
    """Edge crossings between each pair of adjacent layers: the inversions among the
    lower ends of the edges taken in order of their upper ends (each counted against the
    sorted ends seen before it)."""
    total = 0
    for layer in layers[:-1]:
        seen: list[int] = []
        for u in layer:
            ends = below[u]
            for p in sorted([pos[v] for v in ends]) if len(ends) > 1 else [pos[v] for v in ends]:
                k = bisect_right(seen, p)
                total += len(seen) - k
                seen.insert(k, p)
    return total


def _coordinates(
    layers: list[list[int]],
    above: list[list[int]],
    below: list[list[int]],
    sizes: list[float],
    gap: float,
    count: int,
) -> list[float]:
    """An x per node (Brandes and Köpf): for each of the four combinations of aligning with
    the layer above or below and compacting to the left or right, blocks of nodes aligned
    with a median neighbour, placed as far to their side as the spacing allows; the four
    aligned to the narrowest of them, each node at the average of its two median x."""
    marked = _conflicts(layers, below, count)
    total = len(sizes)
    candidates: list[list[float]] = []
    for downward in (True, False):
        sweep = layers if downward else layers[::-1]
        nbrs = above if downward else below
        for leftward in (True, False):
            ordered = [layer if leftward else layer[::-1] for layer in sweep]
            xs = _compact(ordered, nbrs, marked, sizes, gap, total)
            candidates.append(xs if leftward else [-x for x in xs])
    spans = [(min(xs), max(xs)) for xs in candidates]
    narrowest = min(range(4), key=lambda k: (spans[k][1] - spans[k][0], k))
    lo, hi = spans[narrowest]
    for k in range(4):
        shift = lo - spans[k][0] if k % 2 == 0 else hi - spans[k][1]
        candidates[k] = [x + shift for x in candidates[k]]
    out = []
    for v in range(total):
        a, b, c, d = sorted(xs[v] for xs in candidates)
        out.append((b + c) / 2)
    return out


def _conflicts(layers: list[list[int]], below: list[list[int]], count: int) -> set[tuple[int, int]]:
    """Type 1 conflicts (Brandes and Köpf): the segments, not between two bends of long
    edges, that cross a segment that is; those are never aligned, so long edges stay
    straight."""
    pos = {v: i for layer in layers for i, v in enumerate(layer)}
    marked: set[tuple[int, int]] = set()
    for layer in layers:
        inner = [(pos[u], pos[v]) for u in layer if u >= count for v in below[u] if v >= count]
        if not inner:
            continue
        for u in layer:
            for v in below[u]:
                if u >= count and v >= count:
                    continue
                pu, pv = pos[u], pos[v]
                if any((pu - a) * (pv - b) < 0 for a, b in inner):
                    marked.add((u, v))
    return marked


def _compact(
    layers: list[list[int]],
    nbrs: list[list[int]],
    marked: set[tuple[int, int]],
    sizes: list[float],
    gap: float,
    total: int,
) -> list[float]:
    """One alignment and its compaction, for layers swept top to bottom and ordered left to
    right (the caller mirrors them for the other three): each node joins the block of its
    median neighbour on the layer before (the left median first) unless that crosses an
    alignment already made or a marked segment; then each block is placed as far left as
    the nodes to its left allow."""
    pos = [0] * total
    for layer in layers:
        for i, v in enumerate(layer):
            pos[v] = i
    root = list(range(total))
    align = list(range(total))
    for layer in layers[1:]:
        r = -1
        for v in layer:
            ns = sorted(nbrs[v], key=pos.__getitem__)
            d = len(ns)
            if not d:
                continue
            for m in dict.fromkeys(((d - 1) // 2, d // 2)):
                if align[v] != v:
                    break
                u = ns[m]
                if r < pos[u] and (u, v) not in marked and (v, u) not in marked:
                    align[u] = v
                    root[v] = root[u]
                    align[v] = root[v]
                    r = pos[u]
    # The blocks' constraints: a block sits at least the spacing right of the block of
    # each node just left of one of its nodes. Blocks never cross, so this is acyclic.
    left_of: dict[int, list[tuple[int, float]]] = {}
    for layer in layers:
        for i in range(1, len(layer)):
            w, v = layer[i - 1], layer[i]
            need = (sizes[w] + sizes[v]) / 2 + gap
            left_of.setdefault(root[v], []).append((root[w], need))
    blocks = [v for layer in layers for v in layer if root[v] == v]
    waiting = {b: len(left_of.get(b, ())) for b in blocks}
    right_of: dict[int, list[int]] = {}
    for b in blocks:
        for a, _ in left_of.get(b, ()):
            right_of.setdefault(a, []).append(b)
    x = [0.0] * total
    ready = [b for b in blocks if not waiting[b]]
    for b in ready:  # grows as it goes
        x[b] = max((x[a] + need for a, need in left_of.get(b, ())), default=0.0)
        for c in right_of.get(b, ()):
            waiting[c] -= 1
            if not waiting[c]:
                ready.append(c)
    return [x[root[v]] for v in range(total)]
