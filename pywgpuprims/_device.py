"""The one way pywgpuprims compiles, caches and dispatches kernels.

A :class:`Device` owns a wgpu device, a pipeline cache and a bounded pool of scratch buffers.
Primitives record work into a :class:`Batch` (clears, copies, dispatches) and submit it once;
kernels are named by their WGSL path and specialisation, and bound by the names their WGSL
declares, so no primitive touches bind-group layouts or command encoders itself.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import wgpu

from ._errors import DeviceLimitError, ShaderError
from ._shader import parse_bindings, parse_params, preprocess

_BACKENDS = {"vulkan": "Vulkan", "gl": "OpenGL", "opengl": "OpenGL", "metal": "Metal", "d3d12": "D3D12"}
_ADAPTER_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 3, "Unknown": 4}
_WANTED_FEATURES = ("subgroup", "timestamp-query")
_WANTED_LIMITS = (
    "max-storage-buffer-binding-size",
    "max-buffer-size",
    "max-compute-workgroup-storage-size",
    "max-compute-invocations-per-workgroup",
    "max-compute-workgroup-size-x",
    "max-storage-buffers-per-shader-stage",
)
STORAGE_USAGE = (wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
                 | wgpu.BufferUsage.INDIRECT)


def _choose_adapter(backend: str | None, name: str | None):
    backend = backend or os.environ.get("PYWGPUPRIMS_BACKEND") or None
    name = name or os.environ.get("PYWGPUPRIMS_ADAPTER") or None
    adapters = list(wgpu.gpu.enumerate_adapters_sync())
    if backend:
        want = _BACKENDS.get(backend.lower())
        if want is None:
            raise ValueError(f"PYWGPUPRIMS_BACKEND={backend!r}: expected one of vulkan, gl, metal, d3d12")
        adapters = [a for a in adapters if a.info.get("backend_type") == want]
    if name:
        adapters = [a for a in adapters if name.lower() in a.summary.lower()]
    if not adapters:
        found = ", ".join(a.summary for a in wgpu.gpu.enumerate_adapters_sync()) or "none"
        raise RuntimeError(
            f"pywgpuprims: no GPU adapter matches backend={backend!r} name={name!r} (found: {found}). "
            "On a machine without a GPU install lavapipe: apt-get install mesa-vulkan-drivers libvulkan1"
        )
    adapters.sort(key=lambda a: (_ADAPTER_RANK.get(a.info.get("adapter_type", "Unknown"), 4),
                                 a.info.get("backend_type") != "Vulkan"))
    return adapters[0]


@dataclass(frozen=True)
class Binding:
    """A byte range of a buffer to bind (``size=None``: to the end)."""

    buffer: Any
    offset: int = 0
    size: int | None = None


class Kernel:
    """A compiled compute pipeline plus what its WGSL declares (bindings, Params fields)."""

    def __init__(self, device: Device, path: str, entry: str, defines: dict, constants: dict):
        self.device = device
        self.path = path
        self.entry = entry
        self.defines = defines
        self.name = f"{path}:{entry}"
        source = preprocess(path, defines)
        self.source = source
        self.bindings = parse_bindings(source)
        self.params = parse_params(source)
        raw = device.raw
        layout_entries = []
        for num, kind, _ in self.bindings:
            if kind == "uniform":
                ty = {"type": wgpu.BufferBindingType.uniform}
            elif kind == "read":
                ty = {"type": wgpu.BufferBindingType.read_only_storage}
            else:
                ty = {"type": wgpu.BufferBindingType.storage}
            layout_entries.append({"binding": num, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": ty})
        try:
            module = raw.create_shader_module(label=self.name, code=source)
            self.bind_group_layout = raw.create_bind_group_layout(entries=layout_entries)
            pipeline_layout = raw.create_pipeline_layout(bind_group_layouts=[self.bind_group_layout])
            compute = {"module": module, "entry_point": entry}
            if constants:
                compute["constants"] = dict(constants)
            self.pipeline = raw.create_compute_pipeline(label=self.name, layout=pipeline_layout, compute=compute)
        except wgpu.GPUError as exc:
            raise ShaderError(self.name, f"WGSL failed to compile or validate:\n{exc}") from exc

    def pack_params(self, params: dict) -> bytes:
        names = [n for n, _ in self.params]
        unknown = set(params) - set(names)
        missing = set(names) - set(params)
        if unknown or missing:
            raise TypeError(f"{self.name}: params unknown {sorted(unknown)}, missing {sorted(missing)}")
        fmt = {"u32": "I", "i32": "i", "f32": "f"}
        values = []
        for n, t in self.params:
            v = params[n]
            if t == "u32":
                v = int(v) & 0xFFFFFFFF
            values.append(v)
        blob = struct.pack("<" + "".join(fmt[t] for _, t in self.params), *values)
        return blob + b"\0" * (-len(blob) % 16)


@dataclass
class _Dispatch:
    kernel: Kernel
    groups: tuple[int, int, int]
    bindings: dict
    params: bytes | None
    indirect: Binding | None = None


@dataclass
class Batch:
    """Clears, copies and dispatches recorded in order and submitted together.

    Dispatches in one compute pass see each other's writes (WebGPU orders them), so a chain of
    kernels needs no host round trip.
    """

    device: Device
    commands: list = field(default_factory=list)

    def clear(self, buffer, offset: int = 0, size: int | None = None) -> None:
        buffer = getattr(buffer, "buffer", buffer)
        self.commands.append(("clear", buffer, offset, size))

    def copy(self, src, src_offset: int, dst, dst_offset: int, size: int) -> None:
        src, dst = getattr(src, "buffer", src), getattr(dst, "buffer", dst)
        self.commands.append(("copy", src, src_offset, dst, dst_offset, size))

    def dispatch(self, kernel: Kernel, groups, params: dict | None = None, **bindings) -> None:
        """Record ``kernel`` over ``groups`` workgroups (an int is split over x and y as needed)."""
        self.commands.append(("dispatch", _Dispatch(kernel, self.device.grid(groups), bindings,
                                                    kernel.pack_params(params or {}) if kernel.params else None)))

    def dispatch_indirect(self, kernel: Kernel, indirect, offset: int = 0, params: dict | None = None,
                          **bindings) -> None:
        """Record ``kernel`` with its workgroup counts read from ``indirect`` at ``offset`` (GPU-side)."""
        d = _Dispatch(kernel, (0, 0, 0), bindings, kernel.pack_params(params or {}) if kernel.params else None,
                      Binding(getattr(indirect, "buffer", indirect), offset))
        self.commands.append(("dispatch", d))

    def submit(self) -> None:
        self.device._submit(self)
        self.commands = []


class _Timer:
    def __init__(self):
        self.pending: list = []
        self.marks: list[int] = []
        self._ns: int | None = None
        self._each: list[int] = []

    def mark(self) -> None:
        """End a lap: :attr:`laps` gives the GPU time of the batches between marks."""
        self.marks.append(len(self.pending))

    @property
    def ns(self) -> int:
        """Total GPU time of the timed batches, in nanoseconds (available after the block)."""
        if self._ns is None:
            raise RuntimeError("timer still running")
        return self._ns

    @property
    def laps(self) -> list[int]:
        """GPU ns of each lap (see :meth:`mark`)."""
        out, start = [], 0
        for end in self.marks:
            out.append(sum(self._each[start:end]))
            start = end
        return out


class Device:
    """A GPU device for pywgpuprims: adapter, limits, features, kernel cache, scratch pool.

    Examples
    --------
    >>> import pywgpuprims as pp
    >>> dev = pp.device()
    >>> dev.adapter_summary  # doctest: +SKIP
    'NVIDIA H100 80GB HBM3 (DiscreteGPU) via Vulkan'
    """

    def __init__(self, backend: str | None = None, adapter_name: str | None = None, features: tuple = ()):
        self.adapter = _choose_adapter(backend, adapter_name)
        adapter_limits = self.adapter.limits
        self.features = tuple(f for f in (*_WANTED_FEATURES, *features) if f in self.adapter.features)
        wanted = {k: adapter_limits[k] for k in _WANTED_LIMITS if k in adapter_limits}
        self.raw = self.adapter.request_device_sync(
            label="pywgpuprims", required_features=list(self.features), required_limits=wanted
        )
        self.queue = self.raw.queue
        self.limits = dict(self.raw.limits)
        self.info = dict(self.adapter.info)
        self.adapter_summary = self.adapter.summary
        self.backend = self.info.get("backend_type", "?")
        self.has_subgroups = "subgroup" in self.features
        self.has_timestamps = "timestamp-query" in self.features
        # wgpu-py 0.32 spells these keys 'stackgroup_*'; accept either.
        self.subgroup_min_size = int(self.info.get("subgroup_min_size", self.info.get("stackgroup_min_size", 0)) or 0)
        self.subgroup_max_size = int(self.info.get("subgroup_max_size", self.info.get("stackgroup_max_size", 0)) or 0)
        self.max_binding = int(self.limits["max-storage-buffer-binding-size"])
        self.max_buffer = int(self.limits["max-buffer-size"])
        self.max_groups = int(self.limits["max-compute-workgroups-per-dimension"])
        self.storage_align = int(self.limits["min-storage-buffer-offset-alignment"])
        self.uniform_align = int(self.limits["min-uniform-buffer-offset-alignment"])
        self._kernels: dict = {}
        self._lock = threading.RLock()
        self._pool: dict[int, list] = {}
        self._pool_bytes = 0
        self.pool_limit_bytes = 256 << 20
        self._timers: list[_Timer] = []
        self._batch_ns: dict = {}   # GPU ns of the last timing of each batch shape (timing_warm_ms)
        self.lost: str | None = None  # why the device was lost, once it is
        _LostWatcher.watch(self)
        #: Test and benchmark switches, read by primitives (see each primitive's docs).
        self.options: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"<pywgpuprims.Device {self.adapter_summary}>"

    # ---------------------------------------------------------------- kernels
    def kernel(self, path: str, entry: str = "main", defines: dict | None = None,
               constants: dict | None = None) -> Kernel:
        """The compiled kernel for ``path`` with this specialisation (compiled once, then cached)."""
        defines = dict(defines or {})
        constants = dict(constants or {})
        key = (path, entry, tuple(sorted(defines.items())), tuple(sorted(constants.items())))
        with self._lock:
            k = self._kernels.get(key)
            if k is None:
                k = self._kernels[key] = Kernel(self, path, entry, defines, constants)
            return k

    def grid(self, groups) -> tuple[int, int, int]:
        """Split a workgroup count over x and y when it exceeds the per-dimension limit.

        Kernels recover the linear id as ``wid.x + wid.y * nwg.x`` and must ignore ids past the
        count they were asked for (the split can round up).
        """
        if isinstance(groups, tuple):
            return tuple(int(g) for g in groups) + (1,) * (3 - len(groups))  # type: ignore[return-value]
        g = int(groups)
        if g <= self.max_groups:
            return (g, 1, 1)
        y = -(-g // self.max_groups)
        x = -(-g // y)
        if y > self.max_groups:
            raise DeviceLimitError("dispatch", f"{g} workgroups exceed the device's grid")
        return (x, y, 1)

    # ---------------------------------------------------------------- buffers
    def create_buffer(self, nbytes: int, usage=STORAGE_USAGE, label: str = ""):
        """A new buffer of at least ``nbytes`` (rounded up to 16, at least 16)."""
        size = max(16, (int(nbytes) + 15) // 16 * 16)
        if size > self.max_buffer:
            raise DeviceLimitError(label or "buffer", f"{nbytes} bytes exceed the device's largest buffer "
                                   f"({self.max_buffer} bytes)")
        self._check_alive(label or "buffer")
        try:
            return self.raw.create_buffer(size=size, usage=usage, label=label)
        except wgpu.GPUError as exc:
            if "lost" in str(exc).lower():
                self.lost = "reported when creating a buffer"
            raise ShaderError(label or "buffer", f"the GPU refused a buffer of {size} bytes: {exc}") from exc

    def scratch(self, nbytes: int):
        """A storage buffer of at least ``nbytes`` from the scratch pool; give it back with :meth:`release`.

        Reuse is safe as soon as the batch that used it was submitted: the queue runs in order.
        """
        size = max(256, 1 << (int(nbytes) - 1).bit_length())
        with self._lock:
            free = self._pool.get(size)
            if free:
                self._pool_bytes -= size
                return free.pop()
        return self.create_buffer(size, label="scratch")

    def release(self, buffer) -> None:
        size = buffer.size
        with self._lock:
            if size & (size - 1) or self._pool_bytes + size > self.pool_limit_bytes:
                return  # not a pooled size, or the pool is full: let it be freed
            self._pool.setdefault(size, []).append(buffer)
            self._pool_bytes += size

    @contextmanager
    def scratch_buffers(self, *sizes: int) -> Iterator[list]:
        bufs = [self.scratch(s) for s in sizes]
        try:
            yield bufs
        finally:
            for b in bufs:
                self.release(b)

    def write(self, buffer, data, offset: int = 0) -> None:
        self.queue.write_buffer(getattr(buffer, "buffer", buffer), offset, data)

    def read(self, buffer, offset: int = 0, size: int | None = None) -> memoryview:
        self._check_alive("read")
        try:
            return self.queue.read_buffer(getattr(buffer, "buffer", buffer), offset, size)
        except Exception as exc:
            self._check_alive("read")
            raise ShaderError("read", f"reading a result back failed: {exc}") from exc

    # ---------------------------------------------------------------- submission
    def batch(self) -> Batch:
        return Batch(self)

    @contextmanager
    def using(self, **options: Any) -> Iterator[Device]:
        """Set entries of :attr:`options` (tuning and test switches) for the block, then restore
        them all (entries set inside the block too).

        Examples
        --------
        >>> import pywgpuprims as pp
        >>> dev = pp.device()
        >>> with dev.using(scan_method="rts"):
        ...     dev.options["scan_method"]
        'rts'
        >>> "scan_method" in dev.options
        False
        """
        saved = dict(self.options)
        self.options.update(options)
        try:
            yield self
        finally:
            self.options.clear()
            self.options.update(saved)

    @contextmanager
    def timer(self) -> Iterator[_Timer]:
        """Time GPU work: every batch submitted inside the block gets timestamp queries.

        ``t.ns`` (after the block) is the summed GPU time of those batches in nanoseconds.
        """
        if not self.has_timestamps:
            raise RuntimeError(f"{self.adapter_summary} has no timestamp-query feature")
        t = _Timer()
        self._timers.append(t)
        try:
            yield t
        finally:
            self._timers.remove(t)
            for buf, reps, key in t.pending:
                begin, end = struct.unpack("<QQ", bytes(self.read(buf, 0, 16)))
                t._each.append((end - begin) // reps)
                self._batch_ns[key] = t._each[-1]
            t._ns = sum(t._each)

    def _check_alive(self, what: str) -> None:
        if self.lost is not None:
            raise ShaderError(what, f"the GPU device was lost ({self.lost}); make a new one with "
                              "pywgpuprims.set_device(None)")

    def _submit(self, batch: Batch) -> None:
        names = sorted({c[1].kernel.name for c in batch.commands if c[0] == "dispatch"})
        self._check_alive(", ".join(names) or "batch")
        raw = self.raw
        dispatches = [c[1] for c in batch.commands if c[0] == "dispatch" and c[1].params is not None]
        param_buf = None
        stride = max(self.uniform_align, 16)
        if dispatches:
            blob = bytearray()
            for d in dispatches:
                d.param_offset = len(blob)
                blob += d.params + b"\0" * (-len(d.params) % stride)
            param_buf = raw.create_buffer(size=len(blob), usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
            self.queue.write_buffer(param_buf, 0, bytes(blob))
        timer = self._timers[-1] if self._timers else None
        # options["timing_replay"] = K (benchmarks only): a timed batch is recorded K times back to
        # back in one submission and reports the mean, so the GPU runs at a steady clock (host gaps
        # between short submissions let an H100 drop its core clock from 1980 to 345 MHz)
        # (timing_warm = W more replays run untimed first, to bring the clock up)
        reps = max(1, int(self.options.get("timing_replay", 1))) if timer is not None else 1
        warm = max(0, int(self.options.get("timing_warm", 0))) if reps > 1 else 0
        # timing_warm_ms = M: at least M ms of untimed replays, from this batch's last timing (a
        # 0.7 ms batch needs hundreds of replays before the clock is up; a 50 ms one, a few)
        key = tuple((c[1].kernel.name, c[1].groups) for c in batch.commands if c[0] == "dispatch")
        if reps > 1 and self.options.get("timing_warm_ms") and self._batch_ns.get(key):
            warm = max(warm, min(2000, -(-int(self.options["timing_warm_ms"] * 1e6) // self._batch_ns[key])))
        commands = []
        for r in range(warm + reps):
            commands += [("break", r == warm)] + list(batch.commands)  # a pass ends between replays
        query_set = None
        passes = 0
        first_timed = 1
        for i, c in enumerate(commands):
            if c[0] == "break" and c[1]:
                first_timed = passes + 1
            if c[0] == "dispatch" and (i == 0 or commands[i - 1][0] != "dispatch"):
                passes += 1
        if timer is not None and passes:
            query_set = raw.create_query_set(type=wgpu.QueryType.timestamp, count=2)
        enc = raw.create_command_encoder()
        cpass = None
        pass_no = 0
        try:
            for cmd in commands:
                if cmd[0] != "dispatch":
                    if cpass is not None:
                        cpass.end()
                        cpass = None
                    if cmd[0] == "break":
                        continue
                    if cmd[0] == "clear":
                        enc.clear_buffer(cmd[1], cmd[2], cmd[3])
                    else:
                        enc.copy_buffer_to_buffer(*cmd[1:])
                    continue
                d: _Dispatch = cmd[1]
                if cpass is None:
                    pass_no += 1
                    tw = None
                    if query_set is not None and pass_no in (first_timed, passes):  # middle passes: none
                        tw = {"query_set": query_set}
                        if pass_no == first_timed:
                            tw["beginning_of_pass_write_index"] = 0
                        if pass_no == passes:
                            tw["end_of_pass_write_index"] = 1
                    cpass = enc.begin_compute_pass(timestamp_writes=tw) if tw else enc.begin_compute_pass()
                cpass.set_pipeline(d.kernel.pipeline)
                cpass.set_bind_group(0, self._bind_group(d, param_buf))
                if d.indirect is not None:
                    cpass.dispatch_workgroups_indirect(d.indirect.buffer, d.indirect.offset)
                elif min(d.groups) > 0:
                    cpass.dispatch_workgroups(*d.groups)
            if cpass is not None:
                cpass.end()
            if query_set is not None:
                qbuf = raw.create_buffer(size=16, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
                enc.resolve_query_set(query_set, 0, 2, qbuf, 0)
                timer.pending.append((qbuf, reps, key))
            self.queue.submit([enc.finish()])
        except wgpu.GPUError as exc:
            raise ShaderError(", ".join(names) or "batch", f"the GPU rejected the work: {exc}") from exc

    def _bind_group(self, d: _Dispatch, param_buf):
        entries = []
        for num, kind, name in d.kernel.bindings:
            if kind == "uniform" and name == "params":
                entries.append({"binding": num, "resource": {"buffer": param_buf, "offset": d.param_offset,
                                                             "size": len(d.params)}})
                continue
            if name not in d.bindings:
                raise TypeError(f"{d.kernel.name}: binding {name!r} was not given")
            res = d.bindings[name]
            if not isinstance(res, Binding):
                res = Binding(getattr(res, "buffer", res), getattr(res, "byte_offset", 0))
            size = res.size if res.size is not None else res.buffer.size - res.offset
            if kind != "uniform" and size > self.max_binding:
                raise DeviceLimitError(d.kernel.name, f"binding {name!r} of {size} bytes exceeds the device's "
                                       f"largest storage binding ({self.max_binding} bytes)")
            entries.append({"binding": num, "resource": {"buffer": res.buffer, "offset": res.offset, "size": size}})
        extra = set(d.bindings) - {n for _, _, n in d.kernel.bindings}
        if extra:
            raise TypeError(f"{d.kernel.name}: no binding named {sorted(extra)}")
        return self.raw.create_bind_group(layout=d.kernel.bind_group_layout, entries=entries)

    def sync(self) -> None:
        """Wait until the GPU has finished all submitted work."""
        self.read(self._sync_buffer(), 0, 4)

    def _sync_buffer(self):
        if not hasattr(self, "_syncbuf"):
            self._syncbuf = self.create_buffer(16, label="sync")
        return self._syncbuf

    def describe(self) -> str:
        """A multi-line report: adapter, backend, limits and features obtained."""
        lines = [f"adapter:  {self.adapter_summary}", f"backend:  {self.backend}",
                 f"features: {', '.join(self.features) or 'none'} (of wanted {', '.join(_WANTED_FEATURES)})"]
        for k in _WANTED_LIMITS:
            lines.append(f"limit {k}: {self.limits.get(k)}")
        if self.has_subgroups:
            lines.append(f"subgroup size: {self.subgroup_min_size}..{self.subgroup_max_size}")
        return "\n".join(lines)


class _LostWatcher(logging.Handler):
    """wgpu-py reports a lost device only through its logger: note it on our Devices."""

    _installed: _LostWatcher | None = None

    def __init__(self):
        super().__init__(logging.ERROR)
        self.devices: list = []

    @classmethod
    def watch(cls, dev: Device) -> None:
        import weakref

        if cls._installed is None:
            cls._installed = cls()
            logging.getLogger("wgpu").addHandler(cls._installed)
        cls._installed.devices.append(weakref.ref(dev))

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if "device was lost" not in msg.lower():
            return
        for ref in self.devices:
            dev = ref()
            if dev is not None and dev.lost is None:
                dev.lost = msg.strip().splitlines()[0]


_default: Device | None = None
_default_lock = threading.Lock()


def device() -> Device:
    """The default :class:`Device`, made on first use.

    The adapter is chosen by ``PYWGPUPRIMS_BACKEND`` (vulkan, gl, metal, d3d12) and
    ``PYWGPUPRIMS_ADAPTER`` (a substring of the adapter's name) when set; otherwise the
    highest-performance adapter, preferring Vulkan.

    Examples
    --------
    >>> import pywgpuprims as pp
    >>> print(pp.device().describe())  # doctest: +SKIP
    """
    global _default
    with _default_lock:
        if _default is None:
            os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
            _default = Device()
        return _default


def set_device(dev: Device | None) -> None:
    """Make ``dev`` the default device (``None``: choose again on next use).

    Examples
    --------
    >>> import pywgpuprims as pp
    >>> pp.set_device(pp.Device(backend="vulkan"))  # doctest: +SKIP
    >>> pp.set_device(None)  # the next pp.device() chooses again  # doctest: +SKIP
    """
    global _default
    with _default_lock:
        _default = dev
