"""A layered drawing of a directed graph: the Sugiyama framework (Sugiyama, Tagawa and Toda
1981), with layering and ordering after Gansner, Koutsofios, North and Vo (1993) and
coordinates after Brandes and Köpf (2001).

The stages: reverse the edges a depth-first search finds closing a cycle; put each node on
a layer, every edge pointing down (longest path, then each node with more edges out than in
moved down to just above its nearest successor); break each edge spanning several layers
into a chain of dummy nodes, one per layer; order each layer to reduce crossings (weighted
median sweeps, alternately down and up, with adjacent exchanges, keeping the best order
seen); give each node an x (four vertical alignments by medians, each compacted to the
left or right, balanced by the average of the two median candidates) and its layer's y.

Plain Python over integer node numbers, with no sets or dicts iterated in an order that
could vary: the same graph always gives the same numbers.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from math import inf

Point = tuple[float, float]
ITERATIONS = 12  # ordering sweeps at most (Gansner et al. use 24)
PATIENCE = 4  # sweeps without a better order before stopping
# Layer-to-layer pieces of edges (each edge counts the layers it spans) above which a graph is
# laid out simply (`dense`): a crafted ledger's dense graph (every todo depending on every
# earlier one) makes tens of thousands of bends, and the full layout's work grows faster than
# their number. The largest task graph of the benchmark root has ~400.
SEGMENTS_MAX = 4000


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


def dense(count: int, edges: Sequence[tuple[int, int]]) -> bool:
    """Whether `lay_out` lays this graph out simply: its nodes on their layers in the order
    given, each edge one straight piece, no crossing reduced (more than SEGMENTS_MAX pieces
    of edges between layers)."""
    _, ups, rank = _layered(count, edges)
    return _segments(ups, rank) > SEGMENTS_MAX


def _layered(
    count: int, edges: Sequence[tuple[int, int]]
) -> tuple[list[bool], list[tuple[int, int]], list[int]]:
    """Which edges are reversed, the edges pointing down, and each node's layer."""
    flipped = _acyclic(count, edges)
    ups = [(b, a) if f else (a, b) for (a, b), f in zip(edges, flipped, strict=True)]
    return flipped, ups, _ranks(count, ups)


def _segments(ups: list[tuple[int, int]], rank: list[int]) -> int:
    return sum(rank[b] - rank[a] for a, b in ups)


def _simply(
    count: int,
    edges: Sequence[tuple[int, int]],
    rank: list[int],
    *,
    width: float,
    gap: float,
    layer_gap: float,
) -> tuple[list[Point], list[list[Point]]]:
    """The layout of a dense graph (`dense`), in time linear in its size: each layer's nodes
    in the order given, centred under the widest layer; each edge straight from its
    source's centre to its target's."""
    layers: list[list[int]] = [[] for _ in range(max(rank) + 1)]
    for v in range(count):
        layers[rank[v]].append(v)
    widest = max(len(layer) for layer in layers)
    step = width + gap
    positions: list[Point] = [(0.0, 0.0)] * count
    for r, layer in enumerate(layers):
        left = width / 2 + (widest - len(layer)) * step / 2
        for i, v in enumerate(layer):
            positions[v] = (left + i * step, r * layer_gap)
    return positions, [[positions[a], positions[b]] for a, b in edges]


def _acyclic(count: int, edges: Sequence[tuple[int, int]]) -> list[bool]:
    """Which edges to reverse: those a depth-first search (from nodes in order, edges in
    order) meets pointing back to a node still on its path."""
    out: list[list[tuple[int, int]]] = [[] for _ in range(count)]
    for i, (a, b) in enumerate(edges):
        out[a].append((b, i))
    state = [0] * count  # 0 unseen, 1 on the path, 2 done
    flipped = [False] * len(edges)
    for start in range(count):
        if state[start]:
            continue
        state[start] = 1
        path = [(start, iter(out[start]))]
        while path:
            v, rest = path[-1]
            for w, i in rest:
                if state[w] == 1:
                    flipped[i] = True
                elif state[w] == 0:
                    state[w] = 1
                    path.append((w, iter(out[w])))
                    break
            else:
                state[v] = 2
                path.pop()
    return flipped


def _ranks(count: int, edges: list[tuple[int, int]]) -> list[int]:
    """A layer per node, every edge pointing to a lower one: the longest path from a source,
    then, from the bottom up, each node with more edges out than in moved down to just
    above its nearest successor (shorter edges; nothing else moves)."""
    succ: list[list[int]] = [[] for _ in range(count)]
    into = [0] * count
    for a, b in edges:
        succ[a].append(b)
        into[b] += 1
    outs = [len(s) for s in succ]
    rank = [0] * count
    waiting = list(into)
    topo = [v for v in range(count) if not waiting[v]]
    for v in topo:  # grows as it goes: Kahn's algorithm
        for w in succ[v]:
            rank[w] = max(rank[w], rank[v] + 1)
            waiting[w] -= 1
            if not waiting[w]:
                topo.append(w)
    for v in reversed(topo):
        if outs[v] > into[v]:
            rank[v] = min(rank[w] for w in succ[v]) - 1
    least = min(rank) if rank else 0
    return [r - least for r in rank]


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
    pos = _positions(layers, total)
    best = [list(layer) for layer in layers]
    fewest = _crossings(layers, below, pos)
    stale = 0
    median = [0.0] * total  # scratch for `_by_median`
    for sweep in range(ITERATIONS):
        if not fewest:
            break
        if sweep % 2 == 0:
            for r in range(1, len(layers)):
                _by_median(layers[r], above, pos, median)
        else:
            for r in range(len(layers) - 2, -1, -1):
                _by_median(layers[r], below, pos, median)
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


def _by_median(
    layer: list[int], nbrs: list[list[int]], pos: list[int], median: list[float]
) -> bool:
    """Sort `layer` by the weighted median of each node's neighbours' positions on the
    adjacent layer (Gansner et al.), and say whether that changed it; a node with no
    neighbour there keeps its place. Ties keep their order (a stable sort of the nodes in
    layer order). `median` is scratch space, one slot per node."""
    at = pos.__getitem__
    movers: list[int] = []
    for v in layer:
        ends = nbrs[v]
        n = len(ends)
        if n == 1:
            median[v] = pos[ends[0]]
        elif n == 2:  # the mean of two: no need to sort them
            median[v] = (pos[ends[0]] + pos[ends[1]]) / 2
        elif n:
            median[v] = _weighted_median(sorted(map(at, ends)))
        else:
            continue
        movers.append(v)
    movers.sort(key=median.__getitem__)
    if len(movers) < len(layer):  # the nodes without a neighbour there stay put
        rest = iter(movers)
        movers = [next(rest) if nbrs[v] else v for v in layer]
    if movers == layer:
        return False
    layer[:] = movers
    for i, v in enumerate(layer):
        pos[v] = i
    return True


def _weighted_median(p: list[int]) -> float:
    """The median of three or more sorted positions, weighted towards the side where they
    lie closer together when there are two middle ones."""
    n = len(p)
    m = n // 2
    if n % 2:
        return p[m]
    left, right = p[m - 1] - p[0], p[-1] - p[m]
    if left + right:
        return (p[m - 1] * right + p[m] * left) / (left + right)
    return (p[m - 1] + p[m]) / 2


def _exchange(
    layers: list[list[int]], above: list[list[int]], below: list[list[int]], pos: list[int]
) -> None:
    """Swap neighbours on a layer while that removes crossings with the layers around it
    (Gansner et al.'s transpose), until no swap helps (a few dozen passes at most); a
    layer is looked at again only when it or a layer next to it changed."""
    at = pos.__getitem__
    dirty = [True] * len(layers)
    for _ in range(32):
        changed = [False] * len(layers)
        for r, layer in enumerate(layers):
            if not dirty[r] or len(layer) < 2:
                continue
            # Only this layer's nodes move while it is worked on: its neighbours' places
            # are fixed, and so are these lists.
            ups = [sorted(map(at, above[v])) for v in layer]
            downs = [sorted(map(at, below[v])) for v in layer]
            for i in range(len(layer) - 1):
                a_up, b_up, a_down, b_down = ups[i], ups[i + 1], downs[i], downs[i + 1]
                if _gain(a_up, b_up) + _gain(a_down, b_down) > 0:
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


def _gain(left: list[int], right: list[int]) -> int:
    """How many crossings swapping two neighbours removes between their layer and one next
    to it, where the left one has edges to the sorted places `left` and the right one to
    `right`: the pairs of a place in `left` greater than one in `right`, less the pairs of
    one smaller."""
    if not left or not right:
        return 0
    if len(left) == 1 and len(right) == 1:
        a, b = left[0], right[0]
        return (a > b) - (a < b)
    n = -len(left) * len(right)
    for a in left:  # +2 for each place in `right` below a, +1 for each equal to it
        n += bisect_left(right, a) + bisect_right(right, a)
    return n


def _crossings(layers: list[list[int]], below: list[list[int]], pos: list[int]) -> int:
    """Edge crossings between each pair of adjacent layers: the inversions among the
    lower ends of the edges taken in order of their upper ends (each counted against the
    sorted ends seen before it: those greater than it)."""
    at = pos.__getitem__
    total = 0
    for layer in layers[:-1]:
        seen: list[int] = []
        insert = seen.insert
        n = 0  # len(seen)
        for u in layer:
            ends = below[u]
            if len(ends) == 1:
                p = pos[ends[0]]
                k = bisect_right(seen, p)
                total += n - k
                insert(k, p)
                n += 1
            else:
                for p in sorted(map(at, ends)):
                    k = bisect_right(seen, p)
                    total += n - k
                    insert(k, p)
                    n += 1
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
    total = len(sizes)
    pos = _positions(layers, total)
    marked = _conflicts(layers, below, count, pos)
    # Each node's neighbours on its layer, and the spacing between them (the same both
    # ways round): the constraints of every compaction, to the left or mirrored.
    after, before = [-1] * total, [-1] * total
    space_after, space_before = [0.0] * total, [0.0] * total
    for layer in layers:
        for w, v in zip(layer, layer[1:], strict=False):
            after[w], before[v] = v, w
            space_after[w] = space_before[v] = (sizes[w] + sizes[v]) / 2 + gap
    candidates: list[list[float]] = []
    for downward in (True, False):
        sweep = layers if downward else layers[::-1]
        tries = _median_neighbours(above if downward else below, pos, marked)
        candidates.append(_compact(sweep, tries, after, space_after, total))
        mirrored = [layer[::-1] for layer in sweep]
        xs = _compact(mirrored, [t[::-1] for t in tries], before, space_before, total)
        candidates.append([-x for x in xs])
    spans = [(min(xs), max(xs)) for xs in candidates]
    narrowest = min(range(4), key=lambda k: (spans[k][1] - spans[k][0], k))
    lo, hi = spans[narrowest]
    for k in range(4):
        shift = lo - spans[k][0] if k % 2 == 0 else hi - spans[k][1]
        candidates[k] = [x + shift for x in candidates[k]]
    return [(b + c) / 2 for _, b, c, _ in map(sorted, zip(*candidates, strict=True))]


def _positions(layers: list[list[int]], total: int) -> list[int]:
    """Each node's place on its layer, counted from the left."""
    pos = [0] * total
    for layer in layers:
        for i, v in enumerate(layer):
            pos[v] = i
    return pos


def _conflicts(
    layers: list[list[int]], below: list[list[int]], count: int, pos: list[int]
) -> set[tuple[int, int]]:
    """Type 1 conflicts (Brandes and Köpf): the segments, not between two bends of long
    edges, that cross a segment that is; those are never aligned, so long edges stay
    straight. A segment from place pu to place pv crosses one from a to b when a < pu and
    b > pv or the other way round, so the inner segments, sorted by a, are looked up by
    the greatest b left of pu and the least b right of it."""
    marked: set[tuple[int, int]] = set()
    for layer in layers:
        inner = sorted(
            (pos[u], pos[v]) for u in layer if u >= count for v in below[u] if v >= count
        )
        if not inner:
            continue
        starts = [a for a, _ in inner]
        most = [-1]  # most[k]: the greatest b of the first k inner segments
        for _, b in inner:
            most.append(max(most[-1], b))
        least = [len(pos)] * (len(inner) + 1)  # least[k]: the least b from the k-th on
        for k in range(len(inner) - 1, -1, -1):
            least[k] = min(least[k + 1], inner[k][1])
        for u in layer:
            for v in below[u]:
                if u >= count and v >= count:
                    continue
                pu, pv = pos[u], pos[v]
                if most[bisect_left(starts, pu)] > pv or least[bisect_right(starts, pu)] < pv:
                    marked.add((u, v))
    return marked


def _median_neighbours(
    nbrs: list[list[int]], pos: list[int], marked: set[tuple[int, int]]
) -> list[tuple[int, ...]]:
    """For each node, the neighbours it may align with, in the order an alignment to the
    left tries them: its left median neighbour, then its right one if that is another
    (reversed, the order for an alignment to the right), without the marked segments."""
    tries: list[tuple[int, ...]] = []
    for v, ends in enumerate(nbrs):
        d = len(ends)
        if d == 1:
            medians: tuple[int, ...] = (ends[0],)
        elif d:
            ends = sorted(ends, key=pos.__getitem__)
            lo, hi = (d - 1) // 2, d // 2
            medians = (ends[lo],) if lo == hi else (ends[lo], ends[hi])
        else:
            medians = ()
        if marked:
            medians = tuple(u for u in medians if (u, v) not in marked and (v, u) not in marked)
        tries.append(medians)
    return tries


def _compact(
    layers: list[list[int]],
    tries: list[tuple[int, ...]],
    right: list[int],
    space: list[float],
    total: int,
) -> list[float]:
    """One alignment and its compaction, for layers swept top to bottom and ordered left to
    right (the caller mirrors them for the other three; `right`: each node's neighbour to
    the right in that order, or -1, `space` the spacing to it): each node joins the block
    of the first of its median neighbours on the layer before (`tries`) whose alignment
    would not cross one already made; then each block is placed as far left as the nodes
    to its left allow."""
    pos = _positions(layers, total)
    root = list(range(total))
    ring = list(range(total))  # each block's nodes top to bottom, the last back to the root
    for layer in layers[1:]:
        r = -1
        for v in layer:
            for u in tries[v]:
                if r < pos[u]:
                    ring[u] = v
                    root[v] = ring[v] = root[u]
                    r = pos[u]
                    break
    # A block sits at least the spacing right of the block of each node just left of one
    # of its nodes. Blocks never cross, so these constraints are acyclic: a block is placed
    # once every block left of it is (its x the greatest they ask for, 0 when none do), and
    # then pushes the blocks right of it.
    waiting = [0] * total
    for layer in layers:
        for v in layer[1:]:
            waiting[root[v]] += 1
    ready = [v for layer in layers for v in layer if root[v] == v and not waiting[v]]
    x = [0.0 if not n else -inf for n in waiting]  # -inf: the greatest of none yet
    for b in ready:  # grows as it goes
        w = b
        while True:  # each node of the block, pushing the block right of it
            v = right[w]
            if v >= 0:
                c = root[v]
                pushed = x[b] + space[w]
                if pushed > x[c]:
                    x[c] = pushed
                waiting[c] -= 1
                if not waiting[c]:
                    ready.append(c)
            w = ring[w]
            if w == b:
                break
    return [x[r] for r in root]
