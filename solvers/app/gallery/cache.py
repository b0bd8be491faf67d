"""Finished pieces of figure data, keyed by figure, piece name and parameters.

A piece is one JSON file named by a hash of its key; arrays are stored as lists. A re-run after an
interruption finds the finished pieces and computes only the missing ones. Bump ``VERSION`` in a
figure module when its computation changes meaning (the version is part of the key).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import numpy as np


def _plain(x):
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, float) and not np.isfinite(x):
        return repr(x)            # JSON has no inf/nan; kept readable
    return x


def _restore(x):
    if isinstance(x, dict):
        return {k: _restore(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_restore(v) for v in x]
    if x in ("inf", "-inf", "nan"):
        return float(x)
    return x


class Cache:
    def __init__(self, root: Path | None):
        self.root = Path(root) if root is not None else None
        self.hits = self.misses = 0
        self.compute_s = 0.0          # computed in this run
        self.piece_s = 0.0            # measured cost of every piece used (stored with the piece)
        self.cpu_s = 0.0              # CPU seconds (all threads) of the pieces used, where measured
        self.used = {}                # piece id -> its measured seconds (shared pieces: count once)

    def key(self, fig: int, piece: str, params: dict, version: int) -> str:
        text = json.dumps(_plain({"fig": fig, "piece": piece, "params": params, "v": version}),
                          sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:20]

    def get(self, fig: int, piece: str, params: dict, version: int, compute):
        """The stored piece, or ``compute()`` stored atomically and returned."""
        path = None
        if self.root is not None:
            folder = f"fig{fig:02d}" if isinstance(fig, int) else str(fig)
            path = self.root / folder / f"{piece}-{self.key(fig, piece, params, version)}.json"
            if path.exists():
                self.hits += 1
                stored = json.loads(path.read_text())
                self.piece_s += float(stored.get("seconds", 0.0))
                self.cpu_s += float(stored.get("cpu_seconds", 0.0))
                self.used[f"{folder}/{path.stem}"] = float(stored.get("seconds", 0.0))
                return _restore(stored["data"])
        t0, c0 = time.perf_counter(), time.process_time()
        data = _plain(compute())
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        self.cpu_s += cpu
        self.compute_s += dt
        self.piece_s += dt
        if path is not None:
            self.used[f"{path.parent.name}/{path.stem}"] = dt
        self.misses += 1
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps({"fig": fig, "piece": piece, "params": _plain(params),
                                       "seconds": dt, "cpu_seconds": cpu, "data": data}))
            os.replace(tmp, path)
        return _restore(data)
