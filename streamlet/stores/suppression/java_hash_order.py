"""The order a Java `HashSet<Bytes>` iterates its keys in, for a suppression buffer's changelog.

Kafka Streams' suppression buffer remembers the keys it changed since the last commit in a
`HashSet<Bytes>` and, at commit, writes one changelog record per key in that set's iteration order.
To write the same records in the same order, streamlet keeps its changed keys in insertion order and,
once per flush, replays those insertions into a model of the JDK's `HashMap` (a `HashSet` is one):

- a key's hash is `Arrays.hashCode` of its bytes (`Bytes.hashCode`), spread as `h ^ (h >>> 16)`;
  its bucket is `hash & (capacity - 1)`;
- the table is allocated with 16 buckets at the first insertion and doubles when the number of keys
  exceeds three quarters of it; `clear()` empties it but keeps its size, so the capacity a flush
  starts with is the one the previous flushes left;
- a new key goes at the end of its bucket's chain, and doubling splits each chain into two keeping
  their order;
- a chain reaching 9 keys doubles the table instead while it has fewer than 64 buckets, and from 64
  buckets becomes a red-black tree ordered by hash (signed), then by the keys' unsigned byte order.
  Its chain then changes order: a new key goes right after its parent in the tree, and the root is
  moved to the front after each insertion. A doubling splits a tree into two chains, each a plain chain
  again at 6 keys or fewer, else a new tree (or the same tree, when all its keys stay together);
- iteration walks the buckets in index order, each chain from its head.

Only the first insertion of a key counts (adding a key the set holds changes nothing).
"""

from __future__ import annotations

from collections.abc import Iterable

_TREEIFY_THRESHOLD = 8
_UNTREEIFY_THRESHOLD = 6
_MIN_TREEIFY_CAPACITY = 64
_INITIAL_CAPACITY = 16


def java_bytes_hash(key: bytes) -> int:
    """`HashMap.hash(Bytes.wrap(key))`: `Arrays.hashCode` of the (signed) bytes, spread with its upper 16 bits,
    as a signed 32-bit int."""
    h = 1
    for b in key:
        h = (31 * h + (b - 256 if b > 127 else b)) & 0xFFFFFFFF
    h ^= h >> 16
    return h - 0x100000000 if h > 0x7FFFFFFF else h


class _Node:
    __slots__ = ("hash", "key", "left", "parent", "red", "right")

    def __init__(self, key: bytes, hash_: int) -> None:
        self.key = key
        self.hash = hash_
        self.left: _Node | None = None
        self.right: _Node | None = None
        self.parent: _Node | None = None
        self.red = False


def _before(x: _Node, p: _Node) -> bool:
    """Whether `x` goes left of `p`: by hash, then by unsigned bytes (`Bytes.compareTo`); keys are distinct."""
    return x.hash < p.hash if x.hash != p.hash else x.key < p.key


def _rotate_left(root: _Node, p: _Node) -> _Node:
    r = p.right
    if r is not None:
        rl = p.right = r.left
        if rl is not None:
            rl.parent = p
        pp = r.parent = p.parent
        if pp is None:
            root = r
            r.red = False
        elif pp.left is p:
            pp.left = r
        else:
            pp.right = r
        r.left = p
        p.parent = r
    return root


def _rotate_right(root: _Node, p: _Node) -> _Node:
    left = p.left
    if left is not None:
        lr = p.left = left.right
        if lr is not None:
            lr.parent = p
        pp = left.parent = p.parent
        if pp is None:
            root = left
            left.red = False
        elif pp.right is p:
            pp.right = left
        else:
            pp.left = left
        left.right = p
        p.parent = left
    return root


def _balance_insertion(root: _Node, x: _Node) -> _Node:
    x.red = True
    while True:
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        xpp = xp.parent
        if not xp.red or xpp is None:
            return root
        xppl = xpp.left
        if xp is xppl:
            xppr = xpp.right
            if xppr is not None and xppr.red:
                xppr.red = xp.red = False
                xpp.red = True
                x = xpp
                continue
            if x is xp.right:
                x = xp
                root = _rotate_left(root, x)
                xp = x.parent
                xpp = None if xp is None else xp.parent
            if xp is not None:
                xp.red = False
                if xpp is not None:
                    xpp.red = True
                    root = _rotate_right(root, xpp)
        else:
            if xppl is not None and xppl.red:
                xppl.red = xp.red = False
                xpp.red = True
                x = xpp
                continue
            if x is xp.left:
                x = xp
                root = _rotate_right(root, x)
                xp = x.parent
                xpp = None if xp is None else xp.parent
            if xp is not None:
                xp.red = False
                if xpp is not None:
                    xpp.red = True
                    root = _rotate_left(root, xpp)


class _TreeBin:
    """A bucket turned into a red-black tree: its tree, and its chain (the iteration order)."""

    __slots__ = ("chain", "root")

    def __init__(self, chain: list[_Node]) -> None:
        """`TreeNode.treeify`: the chain's nodes inserted in chain order, then the root moved to the front."""
        self.chain = chain
        root: _Node | None = None
        for x in chain:
            x.left = x.right = None
            if root is None:
                x.parent = None
                x.red = False
                root = x
                continue
            p = root
            while True:
                left = _before(x, p)
                child = p.left if left else p.right
                if child is None:
                    x.parent = p
                    if left:
                        p.left = x
                    else:
                        p.right = x
                    root = _balance_insertion(root, x)
                    break
                p = child
        assert root is not None
        self.root = root
        self._root_to_front()

    def _root_to_front(self) -> None:
        chain, root = self.chain, self.root
        if chain[0] is not root:
            chain.remove(root)
            chain.insert(0, root)

    def insert(self, x: _Node) -> None:
        """`TreeNode.putTreeVal` of a new key: into the tree, into the chain right after its parent."""
        p = self.root
        while True:
            left = _before(x, p)
            child = p.left if left else p.right
            if child is None:
                x.parent = p
                if left:
                    p.left = x
                else:
                    p.right = x
                self.chain.insert(self.chain.index(p) + 1, x)
                self.root = _balance_insertion(self.root, x)
                self._root_to_front()
                return
            p = child


class JavaHashSetOrder:
    """The iteration order of one long-lived Java `HashSet<Bytes>` that keys are added to and which is cleared
    after each iteration (see the module docstring): `order` takes the keys added since the last call, in the
    order they were first added, and returns them in the set's order, remembering the table's capacity."""

    __slots__ = ("capacity",)

    def __init__(self) -> None:
        self.capacity = 0  # no table yet

    def order(self, keys: Iterable[bytes]) -> list[bytes]:
        nodes = [_Node(key, java_bytes_hash(key)) for key in keys]
        if not nodes:
            return []
        capacity = self.capacity or _INITIAL_CAPACITY
        bins: dict[int, list[_Node] | _TreeBin] = {}
        for size, x in enumerate(nodes, 1):
            index = x.hash & (capacity - 1)
            chain = bins.get(index)
            if chain is None:
                bins[index] = [x]
            elif isinstance(chain, _TreeBin):
                chain.insert(x)
            else:
                chain.append(x)
                if len(chain) > _TREEIFY_THRESHOLD:  # HashMap.treeifyBin
                    if capacity < _MIN_TREEIFY_CAPACITY:
                        bins = _resize(bins, capacity)
                        capacity *= 2
                    else:
                        bins[index] = _TreeBin(chain)
            if size > capacity * 3 // 4:
                bins = _resize(bins, capacity)
                capacity *= 2
        self.capacity = capacity
        ordered: list[bytes] = []
        for index in sorted(bins):
            chain = bins[index]
            ordered += [x.key for x in (chain.chain if isinstance(chain, _TreeBin) else chain)]
        return ordered

    def reset(self) -> None:
        """A new set: no table."""
        self.capacity = 0


def _resize(bins: dict[int, list[_Node] | _TreeBin], capacity: int) -> dict[int, list[_Node] | _TreeBin]:
    """`HashMap.resize` to twice `capacity`: each chain split by the new bit, in order (`TreeNode.split`)."""
    out: dict[int, list[_Node] | _TreeBin] = {}
    for index, chain in bins.items():
        nodes = chain.chain if isinstance(chain, _TreeBin) else chain
        lo = [x for x in nodes if not x.hash & capacity]
        hi = [x for x in nodes if x.hash & capacity]
        if not isinstance(chain, _TreeBin):
            if lo:
                out[index] = lo
            if hi:
                out[index + capacity] = hi
            continue
        for half, other, at in ((lo, hi, index), (hi, lo, index + capacity)):
            if not half:
                continue
            if len(half) <= _UNTREEIFY_THRESHOLD:
                out[at] = half
            elif other:
                out[at] = _TreeBin(half)
            else:
                out[at] = chain  # the whole tree moves as it is
    return out
