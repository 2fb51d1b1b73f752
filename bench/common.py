"""Helpers shared by the benchmark scripts in bench/ (standard library only,
so that any of their interpreters can import it)."""

import platform


def cpu_name():
    """The CPU's model name from /proc/cpuinfo (platform.processor() where
    that cannot be read), for a benchmark's header."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()
