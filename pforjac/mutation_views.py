"""Views: whatever numpy returns as a view of `t` (`t[1:]`, `t.T`, `np.swapaxes`, `np.flip`,
the pieces of `np.split`, a reshape, ...) sees an assignment into `t` made after it was
taken, and an assignment into the view writes into `t`, exactly as with numpy's views.

pforjac values never alias, so this is done by value. Each view-making call is repeated
on index proxies (pforjac.view_positions): numpy itself says whether the result is a view
and which flat positions of the tensor it was first taken from (its root) it covers.
Where it is a view, the result is linked to that root:
- an assignment into the root rebinds each live view whose positions it wrote to the
  root's new value at those positions (a gather; a basic key or a reshape where the view
  is one of the root);
- an assignment into a view writes its new value into the root at its positions (an
  `index_update`), and the root's other views that overlap follow.
Chains of views link to the root directly; a complex tensor's real and imaginary parts
are views too. Every step is a pforjac op, so derivatives, pfor, the compiled path and
sparsity detection follow. A result numpy gives as a copy links to nothing (its proxy
takes the memory order of numpy's copy, pforjac.view_layouts); a read-only view
(`np.diagonal`, `np.broadcast_to`) refuses assignment, as numpy does.
"""
from __future__ import annotations

import weakref

import numpy as np

from . import ops, view_layouts
from .ops import indexing as ix
from .rebinding import rebind
from .tensor import Tensor
from .updates import updated
from .view_positions import (Opaque, _plain, bounds, c_positions, index_value, linkable,
                             memory_order, new_proxy, offsets, owner, part_of)

__all__ = ["ALL", "base_of", "followers", "after_write", "check_writable", "link_call",
           "install"]

ALL = "all"       # an assignment into every element


class _Family:
    """On a root (a tensor views were taken from): its index proxy (in the memory order of
    its array; C order for a value a trace has not computed), its live views. The proxy is
    made when first asked for (a write, or a view numpy must place): reads are common."""
    __slots__ = ("_proxy", "_shape", "_dtype", "order", "_buffer", "views")

    def __init__(self, t: Tensor, order: tuple | None = None):
        self.order, self._shape, self._dtype = order, tuple(t.shape), t.dtype
        self._proxy = self._buffer = None
        self.views = []

    @property
    def proxy(self) -> np.ndarray:
        if self._proxy is None:
            self._proxy = new_proxy(self._shape, self._dtype, self.order)
            self._buffer = owner(self._proxy)
        return self._proxy

    @property
    def buffer(self) -> np.ndarray:
        return self._buffer if self._buffer is not None else owner(self.proxy)


class _View:
    """On a view: its root (kept alive, as numpy's views keep their base), its proxy (a
    numpy view of the root's proxy), the call that made it, and how to take it again from
    the root (`key`: a basic key into the root; `order`: the view is the root reshaped to
    `proxy.transpose(order).shape`, then transposed back, a reshape or a transpose; `part`:
    "real" or "imag", the view is that part of a complex root's elements)."""
    __slots__ = ("root", "_proxy", "name", "key", "_part", "_order", "_offsets",
                 "_positions", "_span")

    def __init__(self, root: Tensor, proxy: np.ndarray | None, name: str, key=None):
        """`proxy` None: the view is `root[key]` for a basic `key`, its proxy taken from the
        root's when first asked for."""
        self.root, self._proxy, self.name, self.key = root, proxy, name, key
        self._part = False
        self._order = self._offsets = self._positions = self._span = None

    @property
    def proxy(self) -> np.ndarray:
        if self._proxy is None:
            self._proxy = self.root._links.proxy[self.key]
        return self._proxy

    @property
    def buffer(self) -> np.ndarray:
        return self.root._links.buffer

    @property
    def part(self) -> str | None:
        if self._part is False:
            self._part = part_of(self.proxy, self.buffer)
        return self._part

    @property
    def order(self) -> tuple | None:
        if self._order is None:
            plain = self.part is None and self.root._links.order is None
            self._order = (plain and _permutation(self.proxy, self.buffer)) or ()
        return self._order or None

    def offsets(self) -> np.ndarray:
        """Where the view's elements are in the root's proxy (its memory order)."""
        if self._offsets is None:
            self._offsets = offsets(self.proxy, self.buffer)
        return self._offsets

    def positions(self) -> np.ndarray:
        """The view's elements as flat C-order positions of the root."""
        if self._positions is None:
            root = self.root
            self._positions = c_positions(self.offsets(), tuple(root.shape), root._links.order)
        return self._positions

    def span(self):
        if self._span is None:
            self._span = bounds(self.proxy, self.buffer)
        return self._span

    def take(self, root: Tensor) -> Tensor:
        """The view's value from the root's current one."""
        if self.key is not None:
            return _new(ix.getitem(root, self.key), root)
        if self.order is not None:
            inner = ops.reshape(root, self.proxy.transpose(self.order).shape)
            return _new(ops.transpose(inner, tuple(np.argsort(self.order).tolist())), root)
        return self._gathered(root) if self.part is None else \
            getattr(ops, self.part)(self._gathered(root))

    def _gathered(self, root: Tensor) -> Tensor:
        flat = ops.gather(ops.reshape(root, (-1,)), self.positions().reshape(-1))
        return ops.reshape(flat, self.proxy.shape)

    def put(self, root: Tensor, view: Tensor) -> Tensor:
        """The root's value with the view's written at its positions."""
        if self.key is not None:
            return updated(root, self.key, view)
        if self.order is not None:
            inner = ops.transpose(view, self.order)
            return _new(ops.reshape(inner, tuple(root.shape)), root, view)
        if self.part is not None:
            view = self._joined(root, view)
        flat = ix.index_update(ops.reshape(root, (-1,)), ops.reshape(view, (-1,)),
                               (self.positions().reshape(-1),))   # (distinct: writable)
        return ops.reshape(flat, tuple(root.shape))

    def _joined(self, root: Tensor, part: Tensor) -> Tensor:
        """The complex elements with this view's part from `part`, the other from `root`."""
        whole = self._gathered(root)
        re, im = (part, ops.imag(whole)) if self.part == "real" else (ops.real(whole), part)
        return ops.cast(re, root.dtype) + ops.cast(im, root.dtype) * root.dtype.type(1j)


def _permutation(proxy: np.ndarray, buffer: np.ndarray) -> tuple | None:
    """The axis order that makes `proxy` the whole of `buffer` in C order, if there is one
    (the view is then a reshape of the root, transposed)."""
    if proxy.size != buffer.size:
        return None
    order = tuple(int(a) for a in np.argsort([-s for s in proxy.strides], kind="stable"))
    return order if proxy.transpose(order).flags.c_contiguous else None


def _family(t: Tensor, order=False) -> _Family:
    """A new family for `t`, its proxy in the memory order numpy would give its array
    (`order`, if known: a copy numpy made on the proxies)."""
    if order is False:
        order = view_layouts.order_of(t, _node)
    if order is not None and len(order) != t.ndim:
        order = None
    return _Family(t, order)


def _new(x: Tensor, *olds) -> Tensor:
    """`x` as a tensor object none of `olds` is (rebinding needs a new object)."""
    return ix.fresh(x) if any(x is o for o in olds) else x


def _node(t):
    return getattr(t, "_links", None)


def base_of(t: Tensor) -> Tensor | None:
    """The root `t` is a view of (None if it is not one)."""
    node = _node(t)
    return node.root if isinstance(node, _View) else None


def check_writable(t: Tensor, what: str) -> None:
    """Refuses an assignment into a read-only view (`np.diagonal`, `np.broadcast_to`), as
    numpy does, and into one whose elements share memory (`np.broadcast_arrays`: numpy
    warns, and will make it read-only)."""
    node = _node(t)
    if not isinstance(node, _View):
        return
    if any(s == 0 and n > 1 for n, s in zip(node.proxy.shape, node.proxy.strides)):
        raise ValueError(f"{what}: this tensor is the result of {node.name}, a view whose "
                         f"elements share memory (numpy warns that it will be read-only); "
                         f"assign into a copy (.copy()) of it")
    if not node.proxy.flags.writeable:
        raise ValueError(f"{what}: assignment destination is read-only: this tensor is the "
                         f"result of {node.name}, a read-only view in numpy; assign into a "
                         f"copy (.copy()) of it")


# -- after an assignment ----------------------------------------------------------------------
def followers(t: Tensor, key=ALL) -> list:
    """The views an assignment `t[key] = ...` (ALL: into all of `t`) changes: those of its
    root that overlap the elements written, `t` itself excepted."""
    node = _node(t)
    if isinstance(node, _View):
        root, skip = node.root, t
    elif isinstance(node, _Family) and node.views:
        root, skip = t, None
    else:
        return []
    region = _Region(node.proxy, node.buffer, key)
    changed = []
    for ref in list(_node(root).views):
        w = ref()
        if w is not None and w is not skip and isinstance(_node(w), _View) and \
                _node(w).root is root and region.meets(_node(w)):
            changed.append(w)
    return changed


def after_write(t: Tensor, changed: list) -> None:
    """After `t` was rebound by an assignment: its new value written into its root (if it
    is a view), and the views it changed (`followers`) taken again from the root."""
    node = _node(t)
    root = t
    if isinstance(node, _View):
        root = node.root
        rebind(root, node.put(root, t))
    for w in changed:
        rebind(w, _node(w).take(root))


class _Region:
    """The positions of a root an assignment `v[key] = ...` into a view (or the root) of
    proxy `proxy` wrote to: a view of the proxy (a basic key), or explicit positions."""
    __slots__ = ("view", "buffer", "explicit", "span", "_mark")

    def __init__(self, proxy: np.ndarray, buffer: np.ndarray, key):
        self.view, self.buffer, self.explicit, self._mark = proxy, buffer, None, None
        if key is not ALL:
            try:
                self._select(proxy, index_value(key))
            except Opaque:                          # a traced mask or index: all of it
                pass
        self.span = bounds(self.view, buffer) if self.explicit is None else \
            (None if self.explicit.size == 0 else
             (int(self.explicit.min()), int(self.explicit.max())))

    def _select(self, proxy: np.ndarray, key) -> None:
        part = proxy[key]
        if owner(part) is not self.buffer:           # advanced indexing: a copy
            self.explicit = offsets(proxy, self.buffer)[key].reshape(-1)
        else:
            self.view = part

    def meets(self, node: _View) -> bool:
        a, b = self.span, node.span()
        if a is None or b is None or a[1] < b[0] or b[1] < a[0]:
            return False
        if self.explicit is None and self.view.size == self.buffer.size:
            return True
        if self.explicit is None:           # two strided views: numpy's exact overlap test
            try:
                return bool(np.shares_memory(self.view, node.proxy, max_work=10_000))
            except np.exceptions.TooHardError:
                pass
        if self._mark is None:
            self._mark = np.zeros(self.buffer.size, bool)
            self._mark[self._positions()] = True
        return bool(self._mark[node.offsets()].any())

    def _positions(self) -> np.ndarray:
        if self.explicit is not None:
            return self.explicit
        return offsets(self.view, self.buffer)


# -- linking the results of view-making calls -------------------------------------------------
def _proxy_of(t: Tensor, roots: dict) -> np.ndarray:
    """`t`'s index proxy (a view's is a view of its root's), its root noted in `roots`."""
    node = _node(t)
    if isinstance(node, _View):
        roots[id(node.buffer)] = node.root
        return node.proxy
    if not linkable(t):
        return new_proxy(tuple(t.shape))            # (owned by nothing: links nothing)
    if node is None:
        node = t._links = _family(t)
    roots[id(node.buffer)] = t
    return node.proxy


def link_call(out, name: str, ask, inputs=(), key=None):
    """`out`, the result of a view-making call on `inputs`, with each Tensor in it that
    numpy's answer for the same call on the proxies (`ask(proxy_of)`) says is a view linked
    to its root; `key`: the call was `inputs[0][key]`."""
    roots: dict = {}
    try:
        answer = ask(lambda t: _proxy_of(t, roots))
    except Opaque:          # an index a trace computes: an index array to numpy (a copy)
        return out
    except (ValueError, TypeError, IndexError):     # numpy refuses what pforjac took:
        return out                                  # not one of numpy's views
    return _pair(out, answer, roots, name, inputs, key)


def _pair(out, answer, roots: dict, name: str, inputs, key):
    if isinstance(out, (list, tuple)) and isinstance(answer, (list, tuple)) and \
            len(out) == len(answer):
        for o, a in zip(out, answer):
            _pair(o, a, roots, name, inputs, None)
        return out
    if not isinstance(out, Tensor):
        return out
    if any(out is t for t in inputs):       # pforjac's op gave back its input: numpy's
        if id(owner(answer)) in roots:      # copy is a new one
            return out
        out = ix.fresh(out)
    root = roots.get(id(owner(answer)))
    if root is None:                        # a copy: in numpy's memory order
        if isinstance(answer, np.ndarray) and _node(out) is None and linkable(out):
            out._links = _family(out, memory_order(answer))
        return out
    if root is out or answer.size == 0:
        return out
    if tuple(out.shape) != answer.shape:
        return out                  # (not numpy's result: no link can make it numpy's view)
    direct = key is not None and inputs and inputs[0] is root
    return _link(out, root, answer, name, key if direct else None)


def _link(view: Tensor, root: Tensor, proxy: np.ndarray, name: str, key) -> Tensor:
    node = _node(view)
    if isinstance(node, _View) and node.root is root:    # linked by an inner call already
        view._links = _View(root, proxy, name, key)
        return view
    if node is not None or not linkable(view):
        return view
    view._links = _View(root, proxy, name, key)
    views = root._links.views
    if len(views) > 16 and len(views) & (len(views) - 1) == 0:   # now and then: drop the dead
        views[:] = [w for w in views if w() is not None]
    views.append(weakref.ref(view))
    return view



# -- the view-making methods and numpy functions ---------------------------------------------
def _getitem(x, key):
    """`x[key]`, linked where numpy's basic indexing makes a view (a short way through
    link_call: indexing is the most frequent view-making call)."""
    out = ix.getitem(x, key)
    if out is x or not isinstance(out, Tensor) or not linkable(x):
        return out
    node = _node(x)
    if node is None:
        node = x._links = _family(x)
    if type(node) is _Family and _slices_only(key):     # numpy's view, always: no proxy yet
        return _link(out, x, None, "t[...]", key) if out.size else out
    try:
        part = node.proxy[key if type(key) in _PLAIN_KEYS else index_value(key)]
    except Opaque:          # an index a trace computes: an index array to numpy (a copy)
        return out
    if owner(part) is not node.buffer or not part.size:  # (a copy, or empty)
        return out
    if type(node) is _View:
        return _link(out, node.root, part, "t[...]", None)
    return _link(out, x, part, "t[...]", key)


_PLAIN_KEYS = (int, slice)


def _slices_only(key) -> bool:
    """A key of slices with Python int (or None) bounds: basic indexing, a view."""
    if type(key) is slice:
        return _plain(key)
    return type(key) is tuple and all(type(k) is slice and _plain(k) for k in key)


def _asked(args, kwargs, proxy_of, arrays: int):
    """The call's arguments for numpy: the first `arrays` positional ones (and the array
    keywords) as proxies, the others as numpy sees them."""
    def arg(value, is_array):
        if is_array and isinstance(value, Tensor):
            return proxy_of(value)
        return index_value(value)
    return ([arg(a, i < arrays) for i, a in enumerate(args)],
            {k: arg(v, k in _ARRAY_KEYWORDS) for k, v in kwargs.items()})


_ARRAY_KEYWORDS = ("a", "ary", "m", "arr", "x", "array", "v")


def _function(impl, fn):
    """A numpy function's pforjac implementation whose results numpy makes views follow."""
    arrays = 1 << 30 if fn in _SEVERAL_ARRAYS else 1
    name = f"np.{fn.__name__}"

    def view_maker(*args, **kwargs):
        a, k = _in_memory_order(args, kwargs, fn in (np.ravel, np.reshape))
        out = impl(*a, **k)

        def ask(proxy_of):
            a, k = _asked(args, kwargs, proxy_of, arrays)
            if fn in (np.real, np.imag) and a[0].dtype.names:     # a complex tensor's part
                return a[0][fn.__name__]
            return fn(*a, **k)
        tensors = tuple(a for a in args[:arrays] if isinstance(a, Tensor))
        return link_call(out, name, ask, tensors)
    view_maker.__name__, view_maker.__doc__ = getattr(impl, "__name__", fn.__name__), impl.__doc__
    return view_maker


def _in_memory_order(args: tuple, kwargs: dict, reads_in_order: bool) -> tuple:
    """np.ravel / np.reshape's (or the methods') arguments with numpy's memory-layout
    orders ("A", "K") made explicit for the tensor, the first argument (pforjac's ops read
    in C or F order)."""
    if not reads_in_order or not args or not isinstance(args[0], Tensor) or \
            not linkable(args[0]):
        return args, kwargs
    at = next((k for k in range(1, len(args)) if isinstance(args[k], str)), None)
    order = args[at] if at is not None else kwargs.get("order", "C")
    t, order = view_layouts.memory_reading(args[0], order, _proxy_of(args[0], {}))
    if at is not None:
        return (t,) + args[1:at] + (order,) + args[at + 1:], kwargs
    return (t,) + args[1:], ({**kwargs, "order": order} if "order" in kwargs else kwargs)


def _method(name: str, method):
    """A Tensor method whose result numpy's same-named ndarray method makes a view follow."""
    def view_maker(self, *args, **kwargs):
        a, k = _in_memory_order((self,) + args, kwargs, name == "reshape")
        out = method(*a, **k)

        def ask(proxy_of):
            a, k = _asked(args, kwargs, proxy_of, 0)
            return getattr(proxy_of(self), name)(*a, **k)
        return link_call(out, f"Tensor.{name}", ask, (self,))
    view_maker.__name__, view_maker.__doc__ = name, method.__doc__
    return view_maker


def _property(name: str, prop: property) -> property:
    def get(self):
        return link_call(prop.fget(self), f"Tensor.{name}",
                         lambda proxy_of: getattr(proxy_of(self), name), (self,))
    return property(get, doc=prop.__doc__)


# numpy functions whose results may be views (numpy's answer on the proxies decides)
_NUMPY_VIEWS = (np.reshape, np.ravel, np.transpose, np.swapaxes, np.moveaxis, np.rollaxis,
                np.squeeze, np.expand_dims, np.atleast_1d, np.atleast_2d, np.atleast_3d,
                np.flip, np.fliplr, np.flipud, np.rot90, np.split, np.array_split, np.hsplit,
                np.vsplit, np.dsplit, np.diagonal, np.diag, np.broadcast_to, np.broadcast_arrays,
                np.matrix_transpose, np.permute_dims, np.unstack, np.linalg.matrix_transpose,
                np.linalg.diagonal, np.real, np.imag)


_SEVERAL_ARRAYS = (np.atleast_1d, np.atleast_2d, np.atleast_3d, np.broadcast_arrays)


def _getstate(t: Tensor):
    """Pickling: a view's links stay behind; the tensor is its value."""
    import copyreg
    names = [n for n in copyreg._slotnames(type(t)) if n != "_links"]
    return None, {n: getattr(t, n) for n in names if hasattr(t, n)}


def _c_copy(self, order="C"):
    """ndarray.copy: a new tensor in C order by default, which later reshapes read (np.copy
    keeps its input's order, as the copy's array does: pforjac.view_layouts)."""
    from .numpy_dispatch import FUNCTIONS
    out = FUNCTIONS[np.copy](self, order)
    if isinstance(out, Tensor) and linkable(out) and _node(out) is None and order == "C":
        out._links = _family(out, None)
    return out


def install() -> None:
    """Wraps the view-making methods and numpy functions of Tensor to link their results."""
    from .numpy_dispatch import FUNCTIONS
    Tensor.copy = _c_copy
    flatten = Tensor.flatten
    Tensor.flatten = lambda self, order="C": flatten(*_in_memory_order((self, order), {}, True)[0])
    Tensor.__getstate__ = _getstate
    Tensor.__getitem__ = _getitem
    for name in ("T", "mT"):
        setattr(Tensor, name, _property(name, Tensor.__dict__[name]))
    for name in ("transpose", "reshape", "swapaxes", "squeeze"):
        setattr(Tensor, name, _method(name, Tensor.__dict__[name]))
    for fn in _NUMPY_VIEWS:
        if fn in FUNCTIONS:
            FUNCTIONS[fn] = _function(FUNCTIONS[fn], fn)
