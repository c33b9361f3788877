"""`python -m tilelab ARGS...` (and the `tilelab` command pip installs): the TileLab CLI shipped in the package."""
import os
import sys

from tilelab import _worker_path


def main():
    exe = _worker_path()
    if not exe:
        sys.exit("tilelab: the tilelab executable is not in this package (set TILELAB_WORKER to one)")
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    main()
