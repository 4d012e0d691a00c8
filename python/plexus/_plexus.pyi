"""Types of the extension module plexus._plexus (python/plexus/_plexus.c)."""

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

version: str
abi_version: int

class Runtime:
    """A plx_runtime: the backends found in the search paths."""

    def __init__(self, search_paths: Sequence[str] = ...,
                 backend_options: Sequence[Tuple[str, str, str]] = ...,
                 ignore_environment: bool = ..., skip_default_dir: bool = ...,
                 intra_op_threads: int = ..., log_level: Optional[str] = ...) -> None: ...
    def info(self) -> Dict[str, Any]: ...
    def enable_profiling(self, enabled: bool) -> None: ...
    def trace_event_count(self) -> int: ...
    def clear_trace(self) -> None: ...
    def write_trace(self, path: str) -> None: ...
    def counters(self) -> Dict[str, int]: ...

class Model:
    """A model file loaded on a runtime, static or dynamic."""

    inputs: Optional[List[Tuple[str, str, Tuple[int, ...]]]]
    outputs: Optional[List[Tuple[str, str, Tuple[int, ...]]]]
    assignment: Optional[Dict[str, Any]]
    dynamic: bool
    concurrent: bool
    alignment: int

    def __init__(self, runtime: Runtime, path: str, backends: Optional[Sequence[str]] = ...,
                 allow_fallback: bool = ..., dynamic: bool = ...,
                 shapes: Optional[Mapping[str, Sequence[int]]] = ...,
                 cache_capacity: int = ..., format: Optional[str] = ...) -> None: ...
    def run(self, inputs: Sequence[Tuple[str, Any]],
            alloc: Callable[[str, str, Tuple[int, ...]], Any]) -> List[Tuple[str, Any]]: ...
    def memory_report(self) -> List[Dict[str, Any]]: ...
    def staged_copy_count(self) -> int: ...
    def dynamic_stats(self) -> Optional[Dict[str, Any]]: ...
