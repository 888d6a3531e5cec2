"""grandalf's Sugiyama layout with its hottest steps written for speed, placing every node
exactly where grandalf's own code does (`tests/test_sugiyama.py` compares the two on many
graphs, float for float).

What changes is only how the same arithmetic is reached: the graph of one connected part
is built without grandalf's quadratic check that it is connected (`render.svg` builds each
part from its own connected component), the alignment conflicts are a set instead of a
list searched per candidate pair, and the vertical alignment and block placement of the
Brandes-Köpf coordinate assignment read each vertex's attributes once instead of through
repeated lookups and method calls. A laid-out graph is the same float for float.
"""

from __future__ import annotations

from bisect import bisect
from sys import getrecursionlimit, setrecursionlimit
from typing import Any

from grandalf.graphs import graph_core
from grandalf.layouts import Layer, SugiyamaLayout
from grandalf.utils.poset import Poset


class Part(graph_core):
    """`graph_core` of vertices and edges known to be one connected part: the same sets,
    edge order and adjacency lists, without the check (a set of every vertex built again
    for each vertex) that they are connected."""

    def __init__(self, vertices: list[Any], edges: list[Any]) -> None:
        self.directed = True
        self.sV = Poset(vertices)
        self.sE = Poset([])
        self.degenerated_edges: set[Any] = set()
        if len(self.sV) == 1:
            v = self.sV[0]
            v.c = self
            for e in v.e:
                e.detach()
            return
        for e in edges:
            x, y = self.sV.get(e.v[0]), self.sV.get(e.v[1])
            if x is None or y is None:
                raise ValueError("unknown Vertex")
            e.v = (x, y)
            if e.deg == 0:
                self.degenerated_edges.add(e)
            e = self.sE.add(e)
            e.attach()
        for v in self.sV:
            v.c = self


class _Layer(Layer):
    """grandalf's `Layer`: its neighbours looked up without an assertion and property call
    each (the cache it fills is the same), and its ordering step (`order`: crossings
    counted, barycentres, a sort, adjacent swaps) with them."""

    def _neighbors(self, v: Any) -> Any:
        layout = self.layout
        try:
            return layout.grx[v].nvs[layout._SugiyamaLayout__dirv]
        except AttributeError:
            return super()._neighbors(v)

    def order(self) -> int:
        sug = self.layout
        sug._edge_inverter()
        g = sug.grx
        dirv = sug._SugiyamaLayout__dirv
        below = self.lower if dirv == +1 else self.upper  # `prevlayer`
        cached = self._neighbors

        def near(v: Any) -> Any:
            try:
                return g[v].nvs[dirv]
            except AttributeError:
                return cached(v)

        c = _crossings([sorted([g[x].pos for x in near(v)]) for v in self])
        if c > 0:
            for v in self:
                gv = g[v]
                if not below:
                    continue  # `_meanvalueattr`: the bar stays
                bars = [g[x].bar for x in near(v)]
                if bars:
                    gv.bar = float(sum(bars)) / len(bars)
            self.sort(key=lambda x: g[x].bar)
            c = self._reduce(g, near)
            step = self._Layer__x
            for i, v in enumerate(self):
                gv = g[v]
                gv.pos = i
                gv.bar = i * step
        sug._edge_inverter()
        self.ccount = c
        return c

    def _reduce(self, g: Any, near: Any) -> int:
        """`_ordering_reduce_crossings`: each adjacent pair swapped when that crosses less."""
        n = len(self)
        total = 0
        for i in range(n - 1):
            vi, vj = self[i], self[i + 1]
            ni = [g[v].bar for v in near(vi)]
            xij = xji = 0
            for nj in [g[v].bar for v in near(vj)]:
                x = len([nx for nx in ni if nx > nj])
                xij += x
                xji += len(ni) - x
            if xji < xij:
                self[i], self[i + 1] = vj, vi
                total += xji
            else:
                total += xij
        return total


def _crossings(ends: list[list[int]]) -> int:
    """`Layer._cc`: the inversions of the neighbours' positions, counted by insertion."""
    s: list[int] = []
    count = 0
    i = 0
    for group in ends:
        for p in group:
            j = bisect(s, p)
            if j < i:
                count += i - j
            s.insert(j, p)
            i += 1
    return count


class Sugiyama(SugiyamaLayout):
    """`SugiyamaLayout`, the same layout reached faster (see the module docstring)."""

    conflicts: Any  # the (upper, lower) pairs not to align: a list, then a set

    def setrank(self, v: Any) -> None:
        assert self.dag
        r = max([self.grx[x].rank for x in v.N(-1)] + [-1]) + 1
        self.grx[v].rank = r
        try:
            self.layers[r].append(v)
        except IndexError:
            assert r == len(self.layers)
            self.layers.append(_Layer([v]))

    def _detect_alignment_conflicts(self) -> None:
        super()._detect_alignment_conflicts()
        self.conflicts = set(self.conflicts)  # only ever asked whether it holds a pair

    def _coord_vertical_alignment(self) -> None:
        dirh, dirv = self.dirh, self.dirv
        g = self.grx
        conflicts = self.conflicts
        for layer in self.layers[::-dirv]:
            prev = layer.prevlayer()
            if not prev:
                continue
            r = None
            for vk in layer[::dirh]:
                pos = sorted([g[x].pos for x in layer._neighbors(vk)])
                if not pos:
                    continue
                if dirh == -1:
                    pos.reverse()
                i, j = divmod(len(pos) - 1, 2)
                gk = g[vk]
                for m in (pos[i],) if j == 0 else (pos[i], pos[i + j]):
                    if gk.align is not vk:
                        continue
                    um = prev[m]
                    vpair = (vk, um) if dirv == 1 else (um, vk)
                    if vpair not in conflicts and (r is None or dirh * r < dirh * m):
                        gu = g[um]
                        gu.align = vk
                        gk.root = gu.root
                        gk.align = gk.root
                        r = m

    def _coord_horizontal_compact(self) -> None:
        limit = getrecursionlimit()
        n = len(self.layers) + 10
        if n > limit:
            setrecursionlimit(n)
        dirh, dirv = self.dirh, self.dirv
        g = self.grx
        layers = self.layers[::-dirv]
        place = _Placer(self)
        for layer in layers:
            for v in layer[::dirh]:
                if g[v].root is v:
                    place(v)
        setrecursionlimit(limit)
        if dirh == -1:  # mirror all nodes if right-aligned
            for layer in layers:
                for v in layer:
                    x = g[v].X
                    if x:
                        g[v].X = -x
        inf = float("infinity")
        k = self.dirvh
        for layer in layers:
            for v in layer[::dirh]:
                gv = g[v]
                root = g[gv.root]
                gv.x[k] = root.X
                s = g[root.sink].shift
                if s < inf:
                    gv.x[k] += dirh * s
        for layer in self.layers:  # reinit root/align/sink/shift/X
            for v in layer:
                gv = g[v]
                gv.root = gv.align = gv.sink = v
                gv.shift = inf
                gv.X = None


class _Placer:
    """The block placement of `_coord_horizontal_compact` (grandalf's `__place_block`),
    with the layout's attributes read once."""

    def __init__(self, sug: Sugiyama) -> None:
        self.g = sug.grx
        self.layers = sug.layers
        self.dirh = sug.dirh
        self.xspace = sug.xspace

    def __call__(self, v: Any) -> None:
        g = self.g
        gv = g[v]
        if gv.X is not None:
            return
        gv.X = 0.0
        layers, dirh, xspace = self.layers, self.dirh, self.xspace
        w = v
        while True:
            gw = g[w]
            j = gw.pos - dirh  # predecessor in rank must be placed
            layer = layers[gw.rank]
            if 0 <= j < len(layer):
                wprec = layer[j]
                delta = xspace + (wprec.view.w + w.view.w) / 2.0
                u = g[wprec].root
                self(u)
                gu = g[u]
                if gv.sink is v:
                    gv.sink = gu.sink
                if gv.sink != gu.sink:
                    s = gu.sink
                    newshift = gv.X - (gu.X + delta)
                    g[s].shift = min(g[s].shift, newshift)
                else:
                    gv.X = max(gv.X, (gu.X + delta))
            w = gw.align
            if w is v:
                break
